#include "compiler/compile.hpp"

#include <fmt/format.h>

#include "compiler/ir/verifier.hpp"
#include "compiler/lower/lower.hpp"
#include "schema/profile_samples.hpp"
#include "schema/validate.hpp"
#include "support/version.hpp"

namespace tessera::compiler {

CompileResult compile(const Graph& graph, const CompileOptions& options) {
  if (options.profile_samples &&
      (*options.profile_samples < 1 || *options.profile_samples > emit::kMaxProfileSampleRecords)) {
    throw UsageError(fmt::format("profile samples: {} records per tile is outside 1..{}",
                                 *options.profile_samples, emit::kMaxProfileSampleRecords));
  }
  if (options.threads > emit::kMaxLinkThreads) {
    throw UsageError(fmt::format("compile threads: {} is outside 1..{} (0: the machine's cores)",
                                 options.threads, emit::kMaxLinkThreads));
  }
  verify(graph);
  const lower::Program program = lower::lower_graph(graph, lower::LowerOptions{options.tiles, options.min_shard_bytes, options.gemm_a_homes,
                                                                  options.attention});
  CompileResult result;
  result.lowered_steps = program.steps.size();
  result.plans = program.plans;
  emit::LinkOptions link;
  // Names this build, so `tessera inspect` says which compiler made a
  // package whichever command (compile, siglip compile, a test) drove it.
  link.compiler_version = fmt::format("tessera compiler {} (git {})", version(), git_revision());
  link.validate_exchange = options.validate_exchange;
  link.threads = options.threads;
  link.device = options.device;
  link.profile_samples = options.profile_samples;
  // The canonical form is what the writer stores and what runtime::Session
  // runs; it must be a valid package (schema's rules), or the bug is the
  // compiler's and should surface here, not when the package is run.
  result.application = schema::canonical(emit::link_program(program, link, &result.report));
  schema::validate(result.application);
  return result;
}

std::string format_report(const CompileResult& result) {
  const emit::LinkReport& report = result.report;
  std::string text = fmt::format(
      "{} lowered steps on {} package tiles: {} host batches, {} exchange phases, {} kernel calls\n"
      "largest per-tile data {} bytes (region 1), code {} bytes (region 0)\n",
      result.lowered_steps, report.package_tiles, report.host_batches, report.phases.size(),
      report.kernel_calls, report.max_data_bytes, report.max_code_bytes);
  if (report.samples) {
    text += fmt::format(
        "profile samples: up to {} records a tile's run appends, buffers of up to {} records "
        "({} bytes); {} tiles append more than their buffer holds and drop the rest\n",
        report.samples->max_records, report.samples->max_capacity,
        schema::sample_buffer_bytes(report.samples->max_capacity), report.samples->tiles_dropping);
  }
  for (const auto& plan : result.plans) text += fmt::format("  plan: {}\n", plan);
  for (const auto& phase : report.phases) {
    text += fmt::format(
        "  phase {:>4}: {:>6} transfers, {:>8} words, horizon {:>7} events, bound {:>7}"
        " ({:.2f}×)  {}\n",
        phase.round ? std::to_string(*phase.round) : "-", phase.transfers, phase.words_sent,
        phase.horizon, phase.lower_bound,
        phase.lower_bound == 0
            ? 0.0
            : static_cast<double>(phase.horizon) / static_cast<double>(phase.lower_bound),
        phase.provenance);
  }
  return text;
}

}  // namespace tessera::compiler
