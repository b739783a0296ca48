// libFuzzer target: the package reader on arbitrary bytes. The reader's
// contract (schema/reader.hpp) is that no input aborts the process and that
// every defect is a PackageError; so this catches PackageError and nothing
// else. Any other exception escapes LLVMFuzzerTestOneInput, terminates the
// process and is reported as a crash, as are sanitizer findings, timeouts and
// allocations above libFuzzer's -malloc_limit_mb.
//
// Build and run: `make fuzz`, or see docs/CONTRIBUTING.md "Fuzzing the package
// reader". Reproduce a crash: ./tessera_fuzz_package_reader crash-<sha1>.

#include <cstddef>
#include <cstdint>
#include <span>

#include "schema/package_error.hpp"
#include "schema/reader.hpp"

namespace {

// Limits far below the defaults, so that small inputs also reach the
// limit checks (package size, traversal, nesting, per-blob and total blob caps).
tessera::schema::ReadLimits tight_limits() {
  tessera::schema::ReadLimits limits;
  limits.max_package_bytes = 2048;
  limits.traversal_limit_words = 512;
  limits.nesting_limit = 6;
  limits.max_blob_bytes = 300;
  limits.max_total_blob_bytes = 1000;
  return limits;
}

// Inputs up to this size are also read with tight_limits().
constexpr std::size_t kTightLimitInputBytes = 4096;

void read(std::span<const std::uint8_t> bytes, const tessera::schema::ReadLimits& limits) {
  try {
    (void)tessera::schema::read_package(bytes, limits);
  } catch (const tessera::schema::PackageError&) {
    // The documented outcome for a malformed package.
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> bytes(data, size);
  read(bytes, {});
  if (size <= kTightLimitInputBytes) read(bytes, tight_limits());
  return 0;
}
