#pragma once
// The cycle samples a package built with profiling records on the device,
// and how they become a profile's steps (docs/PROFILES.md "On the C600").
// This header owns the sample buffer's layout: the compiler that emits the
// sample sites and every backend that reads the buffers use it.
//
// A tile's debug section names its buffer: an allocation called
// kSampleBufferName. Its main program appends one record at every sample
// site, and the host reads the buffer after the run. The buffer, in
// little-endian 32-bit words:
//
//   word 0        records written (the program's append cursor, in records)
//   word 1        records dropped: appends that found the buffer full
//   word 2 + 2r   record r's site, then its value
//
// A site's bits 31..29 say what it marks (SiteKind), bits 28..0 its argument:
//
//   0..4 (StepKind)   a step of that kind begins; argument: its provenance
//                     (kNoSiteArgument: none); value: the tile's cycle counter
//   5 kernel call     a kernel call begins; argument: its index in the tile's
//                     TileDebug::call_sites (kernel, provenance); value: the counter
//   6 end             the tile's last step ends; value: the counter
//   7 loop            a loop's counter word was written; argument: the loop's
//                     index in TileDebug::loops; value: the word (count − i in
//                     iteration i, 0 outside the loop)
//
// A step lasts from its record to the next step or end record,
// (next − this) mod 2^32: the counter is 32 bits and wraps. The counters of
// two tiles do not share an origin (the profile's origin is perTile).

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "schema/model.hpp"
#include "schema/profile.hpp"

namespace tessera::schema {

inline constexpr std::string_view kSampleBufferName = "profile samples";
inline constexpr std::uint32_t kSampleHeaderWords = 2;
inline constexpr std::uint32_t kSampleRecordWords = 2;
inline constexpr std::uint32_t kNoSiteArgument = 0x1FFFFFFF;

// The bytes of a buffer of `records` records, header included.
constexpr std::uint64_t sample_buffer_bytes(std::uint32_t records) {
  return 4 * (kSampleHeaderWords + std::uint64_t{kSampleRecordWords} * records);
}

enum class SiteKind : std::uint8_t {
  // 0..4 are the StepKind values.
  kKernelCall = 5,
  kEnd = 6,
  kLoop = 7,
};

constexpr std::uint32_t sample_site(std::uint32_t kind, std::uint32_t argument) {
  return kind << 29 | (argument & kNoSiteArgument);
}
constexpr std::uint32_t sample_site(StepKind kind, std::uint32_t argument = kNoSiteArgument) {
  return sample_site(static_cast<std::uint32_t>(kind), argument);
}
constexpr std::uint32_t sample_site(SiteKind kind, std::uint32_t argument = 0) {
  return sample_site(static_cast<std::uint32_t>(kind), argument);
}

// The tile's sample buffer, or nullptr when its package was built without profiling.
const Allocation* sample_buffer(const TileDebug& debug);

// Which iterations of which loops run, as a step's layer names them: "NAME
// iteration I" per loop the tile is inside (values[l] in [1, count]), outer
// first, joined by " / "; "" outside every loop. NAME is the loop's
// provenance, or "loop L" when it has none. The simulator's profile and the
// device samples' name layers with it.
std::string loop_iterations_label(std::span<const CodeLoop> loops,
                                  std::span<const std::uint32_t> values,
                                  const std::function<const std::string&(std::uint32_t)>& provenance);

// The steps of one tile's buffer (`words`, as read from the device, header
// first), appended to `profile` as that tile, its names interned. Returns
// the records the buffer dropped. A step whose end was not recorded (a full
// buffer, or a run read before its end) is left out. Throws PackageError
// naming the tile and the record when the buffer does not fit its layout or
// names a site the debug section does not have.
std::uint64_t append_sampled_tile(Profile& profile, ProfileInterner& names, const TileDebug& debug,
                                  const std::vector<std::string>& provenance,
                                  std::span<const std::uint32_t> words);

}  // namespace tessera::schema
