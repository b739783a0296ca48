#include "runtime/profile/html_report.hpp"

#include <iterator>

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
// offset,cycles,...]},...]`, written straight to text: a so400m run has ~50 M
// samples, which as a JSON tree would take gigabytes. Only numbers: nothing
// here needs escaping.
void append_tiles(const Timeline& timeline, std::string& out) {
  const schema::Profile& profile = timeline.profile();
  out += "\"tiles\":[";
  std::size_t next = 0;
  const auto& samples = timeline.samples();
  for (std::size_t t = 0; t < profile.tiles.size(); ++t) {
    if (t > 0) out += ',';
    fmt::format_to(std::back_inserter(out), "{{\"tile\":{},\"samples\":[", profile.tiles[t].tile.value);
    for (bool first = true; next < samples.size() && samples[next].tile_index == t; ++next) {
      const Sample& sample = samples[next];
      const schema::StepLabel& label = profile.label(timeline.step(sample));
      fmt::format_to(std::back_inserter(out), "{}{},{},{},{},{}", first ? "" : ",",
                     static_cast<int>(label.kind), label.kernel, label.operation, sample.offset,
                     sample.cycles);
      first = false;
    }
    out += "]}";
  }
  out += ']';
}

}  // namespace

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
  append_tiles(*inputs.timeline, text);
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
