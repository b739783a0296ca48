#include "backends/c600/device_profile.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "schema/digest.hpp"
#include "schema/package_error.hpp"
#include "schema/profile_samples.hpp"
#include "support/checked.hpp"
#include "support/little_endian.hpp"

namespace tessera::backends::c600 {

std::optional<SampledPackage> sampled_package(const schema::Application& application) {
  SampledPackage package;
  for (const auto& tile : application.debug.tiles) {
    if (schema::sample_buffer(tile) != nullptr) package.tiles.push_back(tile);
  }
  if (package.tiles.empty()) return std::nullopt;
  std::sort(package.tiles.begin(), package.tiles.end(),
            [](const auto& a, const auto& b) { return a.tile < b.tile; });
  const auto digest = schema::build_digest(application);
  package.build_digest.assign(digest.begin(), digest.end());
  package.provenance = application.debug.provenance;
  return package;
}

namespace {

std::vector<std::uint32_t> read_words(const SramReader& read_sram, target::PhysicalTile tile,
                                      std::uint32_t address, std::size_t words) {
  std::vector<std::uint8_t> bytes(checked_mul<std::size_t>(words, 4, "a sample buffer read"));
  read_sram(tile, address, bytes);
  std::vector<std::uint32_t> out(words);
  for (std::size_t i = 0; i < words; ++i) out[i] = load_u32_le(bytes.data() + 4 * i);
  return out;
}

}  // namespace

schema::Profile read_device_profile(const SampledPackage& package, const SramReader& read_sram,
                                    std::uint64_t clock_hz) {
  schema::Profile profile;
  profile.clock_hz = clock_hz;
  profile.origin = schema::ClockOrigin::kPerTile;  // each tile's counter has its own origin
  profile.build_digest = package.build_digest;
  schema::ProfileInterner names(profile);
  for (const auto& debug : package.tiles) {
    const schema::Allocation& buffer = *schema::sample_buffer(debug);
    const std::string where = fmt::format("{} sample buffer at {:#x}", debug.tile, buffer.address);
    const std::uint64_t capacity =
        buffer.size / 4 < schema::kSampleHeaderWords
            ? 0
            : (buffer.size / 4 - schema::kSampleHeaderWords) / schema::kSampleRecordWords;
    if (buffer.size / 4 < schema::kSampleHeaderWords) {
      throw schema::PackageError(where, fmt::format("{} bytes cannot hold its header", buffer.size));
    }
    const auto header =
        read_words(read_sram, debug.tile, buffer.address, schema::kSampleHeaderWords);
    if (header[0] > capacity) {
      throw schema::PackageError(
          where, fmt::format("says {} records were written; it holds {}", header[0], capacity));
    }
    const std::size_t words =
        schema::kSampleHeaderWords + std::size_t{schema::kSampleRecordWords} * header[0];
    const auto buffer_words = read_words(read_sram, debug.tile, buffer.address, words);
    profile.dropped_samples = checked_add<std::uint64_t>(
        profile.dropped_samples,
        schema::append_sampled_tile(profile, names, debug, package.provenance, buffer_words),
        "the profile's dropped samples");
  }
  schema::validate(profile);
  return profile;
}

}  // namespace tessera::backends::c600
