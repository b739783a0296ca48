#include "compiler/ir/operation.hpp"

#include <array>
#include <utility>

namespace tessera::compiler {
namespace {

// One table for both directions, so a name cannot be printed one way and parsed another.
constexpr std::array<std::pair<OpKind, std::string_view>, 20> kOpKindNames{{
    {OpKind::kHostInput, "host_input"},
    {OpKind::kParameter, "parameter"},
    {OpKind::kHostOutput, "host_output"},
    {OpKind::kCopy, "copy"},
    {OpKind::kSlice, "slice"},
    {OpKind::kConcat, "concat"},
    {OpKind::kReshape, "reshape"},
    {OpKind::kTranspose, "transpose"},
    {OpKind::kBroadcastTo, "broadcast_to"},
    {OpKind::kAdd, "add"},
    {OpKind::kReduceSum, "reduce_sum"},
    {OpKind::kRepeat, "repeat"},
    {OpKind::kMatmul, "matmul"},
    {OpKind::kMul, "mul"},
    {OpKind::kGelu, "gelu"},
    {OpKind::kLayerNorm, "layer_norm"},
    {OpKind::kSoftmax, "softmax"},
    {OpKind::kAttention, "attention"},
    {OpKind::kConvert, "convert"},
    {OpKind::kBlockScale, "block_scale"},
}};
static_assert(kOpKindNames.size() == static_cast<std::size_t>(kLastOpKind) + 1);

}  // namespace

std::string_view op_kind_name(OpKind kind) noexcept {
  for (const auto& [entry, name] : kOpKindNames) {
    if (entry == kind) return name;
  }
  return "?";
}

std::optional<OpKind> op_kind_from_name(std::string_view name) noexcept {
  for (const auto& [kind, entry] : kOpKindNames) {
    if (entry == name) return kind;
  }
  return std::nullopt;
}

std::string_view gelu_approximation_name(GeluApproximation approximation) noexcept {
  return approximation == GeluApproximation::kTanh ? "tanh" : "?";
}

std::optional<GeluApproximation> gelu_approximation_from_name(std::string_view name) noexcept {
  if (name == "tanh") return GeluApproximation::kTanh;
  return std::nullopt;
}

}  // namespace tessera::compiler
