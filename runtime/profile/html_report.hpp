#pragma once
// `tessera profile --html`: one self-contained HTML file (report.html with
// the profile's data embedded as JSON; no network access when opened).

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/profile/timeline.hpp"
#include "schema/model.hpp"

namespace tessera::profile {

// A page draws at most about this many timeline samples: beyond it (a
// so400m run has 37 M steps) each tile's steps are merged into cells of
// timeline_quantum() cycles, each named by its longest step, so the file
// stays tens of MB. 0: every step is its own sample.
inline constexpr std::size_t kReportSampleBudget = 2'000'000;
std::uint64_t timeline_quantum(const Timeline& timeline, std::size_t budget);

struct ReportInputs {
  const Timeline* timeline = nullptr;
  const schema::Application* package = nullptr;  // optional: memory map, names
  std::string profile_path;
  std::string package_path;
  std::size_t sample_budget = kReportSampleBudget;
};

// The data the page draws but its samples: the header, the profile's names,
// the operator table, the memory map and the exchange phases (docs/PROFILES.md).
nlohmann::json report_payload(const ReportInputs& inputs);
// All of it as script-safe JSON text (below), with every sample in "tiles",
// written without a JSON tree (a so400m run has 37 M samples).
std::string report_payload_text(const ReportInputs& inputs);

// JSON text that is safe inside a <script> element: '<', '>' and '&' become
// \u003c, \u003e and \u0026 (only strings can hold them, so the JSON means
// the same), so no name can close the element or open a comment.
std::string script_safe_json(const nlohmann::json& payload);

// report.html with the payload in place of its placeholder.
std::string html_report(const ReportInputs& inputs);
void write_html_report(const std::filesystem::path& path, const ReportInputs& inputs);

}  // namespace tessera::profile
