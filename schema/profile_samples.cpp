#include "schema/profile_samples.hpp"

#include <optional>

#include <fmt/format.h>

#include "schema/wire_read.hpp"

namespace tessera::schema {

const Allocation* sample_buffer(const TileDebug& debug) {
  for (const auto& allocation : debug.allocations) {
    if (allocation.name == kSampleBufferName) return &allocation;
  }
  return nullptr;
}

std::string loop_iterations_label(
    std::span<const CodeLoop> loops, std::span<const std::uint32_t> values,
    const std::function<const std::string&(std::uint32_t)>& provenance) {
  std::string label;
  for (std::size_t l = 0; l < loops.size() && l < values.size(); ++l) {
    const std::uint32_t value = values[l];
    if (value == 0 || value > loops[l].count) continue;  // not inside this loop
    const std::string& name = provenance(loops[l].provenance);
    if (!label.empty()) label += " / ";
    label += fmt::format("{} iteration {}", name.empty() ? fmt::format("loop {}", l) : name,
                         loops[l].count - value);
  }
  return label;
}

std::uint64_t append_sampled_tile(Profile& profile, ProfileInterner& names, const TileDebug& debug,
                                  const std::vector<std::string>& provenance,
                                  std::span<const std::uint32_t> words) {
  const std::string where = fmt::format("{} sample buffer", debug.tile);
  if (words.size() < kSampleHeaderWords) {
    wire_read::fail(where, fmt::format("{} words, fewer than its {}-word header", words.size(),
                                       kSampleHeaderWords));
  }
  const std::uint64_t capacity = (words.size() - kSampleHeaderWords) / kSampleRecordWords;
  const std::uint32_t count = words[0];
  if (count > capacity) {
    wire_read::fail(where, fmt::format("says {} records were written; it holds {}", count,
                                       capacity));
  }
  static const std::string kNone;
  const auto provenance_name = [&](std::uint32_t index) -> const std::string& {
    return index < provenance.size() ? provenance[index] : kNone;
  };
  std::vector<std::uint32_t> loop_values(debug.loops.size(), 0);
  std::uint32_t layer = 0;  // "": outside every loop
  struct Open {
    StepLabel label;
    std::uint32_t start;
  };
  std::optional<Open> open;
  TileProfile tile{debug.tile, {}};
  const auto close = [&](std::uint32_t end) {
    if (open && end != open->start) {
      tile.steps.push_back({names.label(open->label), open->start, end});
    }
    open.reset();
  };
  for (std::uint32_t r = 0; r < count; ++r) {
    const std::uint32_t site = words[kSampleHeaderWords + kSampleRecordWords * r];
    const std::uint32_t value = words[kSampleHeaderWords + kSampleRecordWords * r + 1];
    const std::uint32_t kind = site >> 29, argument = site & kNoSiteArgument;
    const std::string record = fmt::format("{} record {} (site {:#010x})", where, r, site);
    if (kind == static_cast<std::uint32_t>(SiteKind::kLoop)) {
      if (argument >= debug.loops.size()) {
        wire_read::fail(record, fmt::format("names loop {}; the tile has {}", argument,
                                            debug.loops.size()));
      }
      loop_values[argument] = value;
      layer = names.name(loop_iterations_label(debug.loops, loop_values, provenance_name));
      continue;
    }
    close(value);
    if (kind == static_cast<std::uint32_t>(SiteKind::kEnd)) continue;
    StepLabel label;
    label.layer = layer;
    if (kind == static_cast<std::uint32_t>(SiteKind::kKernelCall)) {
      if (argument >= debug.call_sites.size()) {
        wire_read::fail(record, fmt::format("names call site {}; the tile has {}", argument,
                                            debug.call_sites.size()));
      }
      const CallSite& call = debug.call_sites[argument];
      label.kind = StepKind::kCompute;
      label.kernel = names.name(call.kernel);
      label.operation = names.name(provenance_name(call.provenance));
    } else {
      if (kind > static_cast<std::uint32_t>(StepKind::kHost)) {
        wire_read::fail(record, fmt::format("kind {} is not a site kind", kind));
      }
      if (argument != kNoSiteArgument && argument >= provenance.size()) {
        wire_read::fail(record, fmt::format("names provenance {}; the package has {}", argument,
                                            provenance.size()));
      }
      label.kind = static_cast<StepKind>(kind);
      label.operation = names.name(argument == kNoSiteArgument ? kNone : provenance[argument]);
    }
    open = Open{std::move(label), value};
  }
  profile.tiles.push_back(std::move(tile));
  return words[1];
}

}  // namespace tessera::schema
