#include "compiler/lower/gemm_epilogue.hpp"

#include <algorithm>

namespace tessera::compiler::lower {
namespace {

// The one operation of `value`'s block that reads it, when nothing else
// does (another reader, a second read by the same operation, a yield).
std::optional<OpId> sole_reader(const Graph& graph, ValueId value) {
  const Block& block = graph.block(graph.value(value).block);
  if (std::find(block.yields.begin(), block.yields.end(), value) != block.yields.end()) return std::nullopt;
  std::optional<OpId> reader;
  for (const OpId id : block.operations) {
    const auto& inputs = graph.operation(id).inputs;
    const auto reads = std::count(inputs.begin(), inputs.end(), value);
    if (reads == 0) continue;
    if (reads > 1 || reader.has_value()) return std::nullopt;
    reader = id;
  }
  return reader;
}

}  // namespace

std::optional<GemmEpilogue> gemm_epilogue(const Graph& graph, OpId matmul) {
  const Operation& op = graph.operation(matmul);
  if (op.kind != OpKind::kMatmul) return std::nullopt;
  const ValueId product = op.results[0];
  const TensorType& type = graph.type(product);
  if (type.element != ElementType{DType::kF16, 0}) return std::nullopt;
  const std::optional<OpId> add = sole_reader(graph, product);
  if (!add || graph.operation(*add).kind != OpKind::kAdd) return std::nullopt;
  const Operation& sum = graph.operation(*add);
  const ValueId bias = sum.inputs[0] == product ? sum.inputs[1] : sum.inputs[0];
  const TensorType& bias_type = graph.type(bias);
  if (bias_type.element != type.element || bias_type.shape != Shape{type.shape.back()} ||
      graph.type(sum.results[0]) != type) {
    return std::nullopt;
  }
  GemmEpilogue epilogue{*add, bias, std::nullopt, sum.results[0]};
  if (const std::optional<OpId> gelu = sole_reader(graph, sum.results[0]);
      gelu && graph.operation(*gelu).kind == OpKind::kGelu && graph.type(graph.operation(*gelu).results[0]) == type) {
    epilogue.gelu = *gelu;
    epilogue.result = graph.operation(*gelu).results[0];
  }
  return epilogue;
}

}  // namespace tessera::compiler::lower
