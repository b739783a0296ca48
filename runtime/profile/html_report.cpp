#include "runtime/profile/html_report.hpp"

#include <map>
#include <unordered_map>

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

// Names repeat across thousands of samples: each is sent once.
class Strings {
 public:
  std::uint32_t id(const std::string& text) {
    const auto [it, added] = ids_.try_emplace(text, static_cast<std::uint32_t>(texts_.size()));
    if (added) texts_.push_back(text);
    return it->second;
  }
  const std::vector<std::string>& texts() const noexcept { return texts_; }

 private:
  std::unordered_map<std::string, std::uint32_t> ids_;
  std::vector<std::string> texts_;
};

}  // namespace

nlohmann::json report_payload(const ReportInputs& inputs) {
  const Timeline& timeline = *inputs.timeline;
  const schema::Profile& profile = timeline.profile();
  const Summary summary = summarize(timeline);
  Strings strings;
  strings.id("");
  nlohmann::json tiles = nlohmann::json::array();
  for (std::size_t t = 0; t < profile.tiles.size(); ++t) {
    tiles.push_back({{"tile", profile.tiles[t].tile.value}, {"samples", nlohmann::json::array()}});
  }
  // A sample is [kind, kernel, operation, offset, cycles], names by id.
  for (const Sample& sample : timeline.samples()) {
    const auto& step = timeline.step(sample);
    auto& out = tiles[sample.tile_index]["samples"];
    out.push_back(static_cast<int>(step.kind));
    out.push_back(strings.id(step.kernel));
    out.push_back(strings.id(step.operation));
    out.push_back(sample.offset);
    out.push_back(sample.cycles);
  }
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
          {"strings", strings.texts()},
          {"tiles", tiles},
          {"operations", groups_json(GroupBy::kOperation,
                                     group_samples(timeline, GroupBy::kOperation))["groups"]},
          {"memory", memory},
          {"sramBytes", target::kSramSize},
          {"exchangePhases", exchange_phases_json(exchange_phases(timeline, inputs.package))}};
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
  const std::string payload = script_safe_json(report_payload(inputs));
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
