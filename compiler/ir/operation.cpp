#include "compiler/ir/operation.hpp"

#include <array>
#include <utility>

namespace tessera::compiler {
namespace {

// One table for both directions, so a name cannot be printed one way and parsed another.
constexpr std::array<std::pair<OpKind, std::string_view>, 12> kOpKindNames{{
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

}  // namespace tessera::compiler
