#include "runtime/profile/html_report.hpp"

#include <algorithm>
#include <iterator>
#include <map>

#include <fmt/format.h>

#include "runtime/profile/exchange_phases.hpp"
#include "runtime/profile/json.hpp"
#include "runtime/profile/memory.hpp"
#include "runtime/profile/query.hpp"
#include "runtime/profile/report_template.hpp"
#include "support/atomic_file.hpp"
#include "support/error.hpp"
#include "target/memory_map.hpp"

namespace tessera::profile {
namespace {

constexpr std::string_view kPlaceholder = "__TESSERA_PROFILE_JSON__";

// The samples, as `"tiles":[{"tile":T,"samples":[kind,kernel,operation,
// offset,cycles,...]},...]`, written straight to text: a so400m run has 37 M
// samples, which as a JSON tree would take gigabytes. Only numbers: nothing
// here needs escaping. With a quantum (timeline_quantum), each tile's
// consecutive samples are merged into cells of at least that many cycles,
// each named by its longest step.
void append_tiles(const Timeline& timeline, std::uint64_t quantum, std::string& out) {
  const schema::Profile& profile = timeline.profile();
  out += "\"tiles\":[";
  std::size_t next = 0;
  const auto& samples = timeline.samples();
  const auto emit = [&](bool first, const Sample& named, std::uint64_t offset,
                        std::uint64_t cycles) {
    const schema::StepLabel& label = profile.label(timeline.step(named));
    fmt::format_to(std::back_inserter(out), "{}{},{},{},{},{}", first ? "" : ",",
                   static_cast<int>(label.kind), label.kernel, label.operation, offset, cycles);
  };
  for (std::size_t t = 0; t < profile.tiles.size(); ++t) {
    if (t > 0) out += ',';
    fmt::format_to(std::back_inserter(out), "{{\"tile\":{},\"samples\":[", profile.tiles[t].tile.value);
    bool first = true;
    const Sample* longest = nullptr;  // of the open cell
    std::uint64_t cell_start = 0, cell_end = 0;
    for (; next < samples.size() && samples[next].tile_index == t; ++next) {
      const Sample& sample = samples[next];
      if (quantum == 0) {
        emit(first, sample, sample.offset, sample.cycles);
        first = false;
        continue;
      }
      if (longest == nullptr) {
        longest = &sample;
        cell_start = sample.offset;
      } else if (sample.cycles > longest->cycles) {
        longest = &sample;
      }
      cell_end = std::max(cell_end, sample.end());
      if (cell_end - cell_start >= quantum) {
        emit(first, *longest, cell_start, cell_end - cell_start);
        first = false;
        longest = nullptr;
      }
    }
    if (longest != nullptr) emit(first, *longest, cell_start, cell_end - cell_start);
    out += "]}";
  }
  out += ']';
}

// The flame graph's tree, kind → operation → kernel with the cycles of each
// leaf, summed per label and then by name (the page would need every sample,
// and a merged timeline cell is not one step).
nlohmann::json flame_json(const Timeline& timeline) {
  const schema::Profile& profile = timeline.profile();
  std::vector<std::uint64_t> by_label(profile.labels.size(), 0);
  for (const Sample& sample : timeline.samples()) by_label[timeline.step(sample).label] += sample.cycles;
  std::map<std::string, std::map<std::string, std::map<std::string, std::uint64_t>>> tree;
  for (std::size_t l = 0; l < by_label.size(); ++l) {
    if (by_label[l] == 0) continue;
    const schema::StepLabel& label = profile.labels[l];
    const std::string& operation = profile.name(label.operation);
    const std::string& kernel = profile.name(label.kernel);
    tree[std::string(schema::step_kind_name(label.kind))]
        [operation.empty() ? "(no operation)" : operation][kernel.empty() ? "(no kernel)" : kernel] +=
        by_label[l];
  }
  nlohmann::json kinds = nlohmann::json::array();
  for (const auto& [kind, operations] : tree) {
    nlohmann::json ops = nlohmann::json::array();
    for (const auto& [operation, kernels] : operations) {
      nlohmann::json leaves = nlohmann::json::array();
      for (const auto& [kernel, cycles] : kernels) leaves.push_back({kernel, cycles});
      ops.push_back({operation, leaves});
    }
    kinds.push_back({kind, ops});
  }
  return kinds;  // [[kind, [[operation, [[kernel, cycles], ...]], ...]], ...]
}

}  // namespace

std::uint64_t timeline_quantum(const Timeline& timeline, std::size_t budget) {
  const std::size_t samples = timeline.samples().size();
  if (samples <= budget) return 0;
  // Cells of total / (budget / tiles) cycles: at most budget / tiles + 1 a tile.
  const std::uint64_t tiles = std::max<std::uint64_t>(timeline.tiles().size(), 1);
  const std::uint64_t per_tile = std::max<std::uint64_t>(budget / tiles, 1);
  return std::max<std::uint64_t>((timeline.total_cycles() + per_tile - 1) / per_tile, 1);
}

nlohmann::json report_payload(const ReportInputs& inputs) {
  const Timeline& timeline = *inputs.timeline;
  const schema::Profile& profile = timeline.profile();
  const Summary summary = summarize(timeline);
  nlohmann::json kinds = nlohmann::json::array();
  for (int k = 0; k <= static_cast<int>(schema::StepKind::kHost); ++k) {
    kinds.push_back(schema::step_kind_name(static_cast<schema::StepKind>(k)));
  }
  nlohmann::json memory = nullptr;
  if (inputs.package != nullptr) {
    memory = nlohmann::json::array();
    for (const auto& tile : memory_use(inputs.package->debug)) {
      memory.push_back(tile_memory_json(tile));
    }
  }
  return {{"header",
           {{"profile", inputs.profile_path},
            {"package", inputs.package_path},
            {"summary", summary_json(timeline, summary)}}},
          {"kinds", kinds},
          {"flame", flame_json(timeline)},
          {"timelineQuantum", timeline_quantum(timeline, inputs.sample_budget)},
          // The profile's own name table: samples name their kernel and
          // operation by its indices.
          {"strings", profile.names},
          {"operations", groups_json(GroupBy::kOperation,
                                     group_samples(timeline, GroupBy::kOperation))["groups"]},
          {"memory", memory},
          {"sramBytes", target::kSramSize},
          {"exchangePhases", exchange_phases_json(exchange_phases(timeline, inputs.package))}};
}

std::string report_payload_text(const ReportInputs& inputs) {
  std::string text = script_safe_json(report_payload(inputs));
  text.pop_back();  // the object's '}'
  text += ',';
  append_tiles(*inputs.timeline, timeline_quantum(*inputs.timeline, inputs.sample_budget), text);
  text += '}';
  return text;
}

std::string script_safe_json(const nlohmann::json& payload) {
  const std::string text = payload.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string safe;
  safe.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '<':
        safe += "\\u003c";
        break;
      case '>':
        safe += "\\u003e";
        break;
      case '&':
        safe += "\\u0026";
        break;
      default:
        safe += c;
    }
  }
  return safe;
}

std::string html_report(const ReportInputs& inputs) {
  const std::string_view page = report_template();
  const auto at = page.find(kPlaceholder);
  if (at == std::string_view::npos) throw Error("report.html has no payload placeholder");
  std::string html;
  const std::string payload = report_payload_text(inputs);
  html.reserve(page.size() + payload.size());
  html.append(page.substr(0, at));
  html.append(payload);
  html.append(page.substr(at + kPlaceholder.size()));
  return html;
}

void write_html_report(const std::filesystem::path& path, const ReportInputs& inputs) {
  const std::string html = html_report(inputs);
  write_file_atomically(path, {reinterpret_cast<const std::uint8_t*>(html.data()), html.size()});
}

}  // namespace tessera::profile
