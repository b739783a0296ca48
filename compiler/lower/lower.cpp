#include "compiler/lower/lower.hpp"

#include <fmt/format.h>

#include "compiler/lower/context.hpp"
#include "compiler/lower/head_views.hpp"
#include "compiler/lower/operations.hpp"

namespace tessera::compiler::lower {
namespace {

// The walk over the graph: the host calls, then every top-level operation in
// order, each by its family's lowering (operations.hpp).
class Lowerer final : public LoweringContext {
 public:
  Lowerer(const Graph& graph, const LowerOptions& options, Program& program)
      : LoweringContext(graph,
                        LayoutPolicy(options.tiles, options.min_shard_bytes, sequence_inputs(graph)),
                        program, options.gemm_a_homes, options.attention) {}

  void run() {
    const auto parameters = graph_.top_level(OpKind::kParameter);
    if (!parameters.empty()) {
      HostCall load{std::string(kLoadParametersCall), {}, {}};
      for (const OpId op : parameters) load.inputs.push_back(binding_name(op));
      program_.calls.push_back(load);
      program_.steps.push_back(
          Step{StepKind::kHostInputs, program_.calls.size() - 1, {}, {}, schema::kNoProvenance});
    }
    HostCall run{std::string(kRunCall), {}, {}};
    for (const OpId op : graph_.top_level(OpKind::kHostInput)) run.inputs.push_back(binding_name(op));
    for (const OpId op : graph_.top_level(OpKind::kHostOutput)) run.outputs.push_back(binding_name(op));
    program_.calls.push_back(run);
    const std::size_t run_call = program_.calls.size() - 1;
    // A host step is no graph operation's (a profile sample names none).
    program_.steps.push_back(Step{StepKind::kHostInputs, run_call, {}, {}, schema::kNoProvenance});
    for (const OpId op : graph_.top().operations) lower(op);
    program_.steps.push_back(Step{StepKind::kHostOutputs, run_call, {}, {}, schema::kNoProvenance});
  }

  void lower(OpId id) override {
    if (lowered_already(id)) return;
    const Operation& op = graph_.operation(id);
    const std::string described = graph_.describe(id);
    switch (op.kind) {
      case OpKind::kHostInput:
      case OpKind::kParameter: return lower_binding(id, op);
      case OpKind::kHostOutput: {
        const ValueId value = op.inputs[0];
        program_.outputs.push_back(HostBinding{binding_name(id), graph_.type(value), slices(storage(value))});
        return;
      }
      case OpKind::kRepeat: return lower_repeat(*this, id, described);
      case OpKind::kAdd: return lower_add(*this, id, described);
      case OpKind::kReduceSum: return lower_reduce_sum(*this, id, described);
      case OpKind::kMul:
      case OpKind::kGelu:
      case OpKind::kConvert: return lower_pointwise(*this, id, described);
      case OpKind::kLayerNorm:
      case OpKind::kSoftmax: return lower_normalisation(*this, id, described);
      case OpKind::kMatmul:
      case OpKind::kBlockScale: return lower_matmul(*this, id, described);
      case OpKind::kAttention: return lower_attention(*this, id, described);
      default:
        // A head split or merge around an attention is lowered with it (head_views.hpp).
        if (in_head_view(graph_, id)) return;
        return lower_data_movement(*this, id, described);
    }
  }

 private:
  std::string binding_name(OpId op) const {
    return std::get<BindingAttributes>(graph_.operation(op).attributes).name;
  }

  void lower_binding(OpId id, const Operation& op) {
    const std::string name = binding_name(id);
    const std::uint32_t provenance = program_.add_provenance(
        fmt::format("{} {}", op.kind == OpKind::kHostInput ? "host input" : "parameter", name));
    const Storage& held = allocate(op.results[0], graph_.type(op.results[0]), name, provenance, true);
    HostBinding binding{name, graph_.type(op.results[0]), slices(held)};
    (op.kind == OpKind::kHostInput ? program_.inputs : program_.weights).push_back(std::move(binding));
  }
};

}  // namespace

Program lower_graph(const Graph& graph, const LowerOptions& options) {
  if (options.tiles == 0 || options.tiles > static_cast<std::uint32_t>(target::kTileCount)) {
    throw LoweringError(
        fmt::format("the tile count must be 1 … {}, not {}", target::kTileCount, options.tiles));
  }
  Program program;
  Lowerer(graph, options, program).run();
  return program;
}

}  // namespace tessera::compiler::lower
