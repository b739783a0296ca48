#pragma once
// Linking: the lowered program (lower/program.hpp) → a package.
//
//   1. lifetimes: every buffer lives from the first step that uses it to the
//      last; placement (placement.hpp) gives each tile's buffers addresses in
//      interleaved memory, reusing memory across disjoint lifetimes;
//   2. host I/O: bindings → slices → host_io's batches and per-tile programs;
//   3. exchange: each exchange step's transfers, with addresses → the
//      scheduler's rows (exchange/scheduler.hpp);
//   4. code: per tile the main program (startup rendezvous, host batches,
//      exchange phases as `sync 3; call row; sync 3`, kernel calls with the
//      register ABI, halt), its host programs and packets, rows and kernel
//      stubs, placed in region 0 by the same allocator; the entry trampoline
//      branches to main;
//   5. before emitting a kernel call, its every operand's footprint (from the
//      kernel registry) must lie inside the operand's allocation
//      (review-findings #1) — else a LinkError naming kernel, operand,
//      footprint and allocation;
//   6. the debug section: symbols, allocations, call sites, planned transfers
//      of each exchange phase once with the loops they repeat in
//      (phase_rounds.hpp), provenance.
// Everything iterates ordered containers, so linking is deterministic; the
// exchange phases (3) and the tiles' main programs and images (4, 6) run on a
// thread pool (LinkOptions::threads), collected in program or tile order, so
// the package does not depend on the thread count. Each
// step is defined in its own file (emit/linker.hpp, the linker's shared
// state, names them); link.cpp runs them in order.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/lower/program.hpp"
#include "schema/model.hpp"
#include "support/error.hpp"

namespace tessera::compiler::elf {
struct ObjectFile;
}

namespace tessera::compiler::emit {

class LinkError : public Error {
 public:
  using Error::Error;
};

// What linking found, for `tessera compile --report` and the benchmarks.
struct LinkReport {
  struct Phase {
    // The internal-sync round that first opens it (none after a loop whose
    // rounds overflow 64 bits).
    std::optional<std::uint64_t> round;
    std::string provenance;
    std::size_t transfers = 0;
    std::uint64_t horizon = 0;      // events
    std::uint64_t lower_bound = 0;  // the busiest tile's words
    std::uint64_t words_sent = 0;
  };
  std::size_t package_tiles = 0;
  std::size_t host_batches = 0;
  std::size_t kernel_calls = 0;
  std::vector<Phase> phases;
  std::uint32_t max_data_bytes = 0;  // the largest per-tile data high-water mark
  std::uint32_t max_code_bytes = 0;
  // With profile samples (LinkOptions::profile_samples): the most records one
  // tile's run appends, the largest buffer's capacity in records, and the
  // tiles whose run appends more than their buffer holds (they drop the rest).
  struct Samples {
    std::uint64_t max_records = 0;
    std::uint32_t max_capacity = 0;
    std::size_t tiles_dropping = 0;
  };
  std::optional<Samples> samples;
};

// Profile samples (docs/PROFILES.md "On the C600"): each tile's buffer holds
// the records its run appends, at most this many unless told otherwise, and
// never more than kMaxProfileSampleRecords (8 bytes a record: 32 KiB and 512 KiB).
inline constexpr std::uint32_t kDefaultProfileSampleRecords = 4096;
inline constexpr std::uint32_t kMaxProfileSampleRecords = 65536;

// Host threads linking may use (LinkOptions::threads); more only cost memory:
// each thread holds the phase it schedules.
inline constexpr unsigned kMaxLinkThreads = 16;

// What LinkOptions::threads = 0 means: the machine's cores (1 when it does
// not say), at most kMaxLinkThreads.
unsigned default_link_threads() noexcept;

// Device code for the kernels (issue 21): where a build with an SDK gets
// each kernel's popc-built object (compiler/elf/device_sources.hpp). The
// linker asks once per kernel name; objects are owned by the provider and
// live as long as it does.
class DeviceCode {
 public:
  virtual ~DeviceCode() = default;
  // The object whose sections define `kernel`'s device entry (built on
  // first use; one object may define several kernels), or nullptr when no
  // device source defines it. A tool failure throws (KernelBuildError).
  virtual const elf::ObjectFile* object(std::string_view kernel) = 0;
};

struct LinkOptions {
  std::string compiler_version = "tessera compiler";
  bool validate_exchange = true;
  // Host threads that schedule, place and validate the exchange phases and
  // size and emit the tiles' code (1 … kMaxLinkThreads; 0:
  // default_link_threads()). The items are independent and collected in
  // program or tile order, so the package's bytes, and the error reported
  // (the first in that order), do not depend on it.
  unsigned threads = 0;
  // Without device code (the default) every kernel call targets a host-model
  // stub and the package is emulated only; the package's bytes do not depend
  // on anything below. With it, the package covers whole 64-tile loader
  // batches (tiles with no work run the sync-only program), each tile's
  // kernels are linked into its code (elf/linker.hpp) and every call
  // targets the linked entry; the package is hardware-loadable when every
  // kernel it calls has device code.
  DeviceCode* device = nullptr;
  // Profile samples: each tile gets a sample buffer (schema/profile_samples.hpp)
  // of at most this many records (1 … kMaxProfileSampleRecords), and its main
  // program appends a record at each step's start, each kernel call, each
  // loop counter store and its end, through kernels::kProfileSample.
  // nullopt: none, and the package is what it is without them.
  std::optional<std::uint32_t> profile_samples;
};

schema::Application link_program(const lower::Program& program, const LinkOptions& options,
                                 LinkReport* report = nullptr);

}  // namespace tessera::compiler::emit
