#include "compiler/lower/gemm_epilogue.hpp"

#include <algorithm>

namespace tessera::compiler::lower {
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
