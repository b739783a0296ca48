#include "compiler/lower/head_views.hpp"

#include <algorithm>

namespace tessera::compiler::lower {
namespace {

const std::vector<std::uint32_t> kHeadsFirst{0, 2, 1, 3};

// The operation defining `value`, when it is one of `kind`.
const Operation* defined_by(const Graph& graph, ValueId value, OpKind kind) {
  const std::optional<OpId> op = graph.value(value).op;
  if (!op || graph.operation(*op).kind != kind) return nullptr;
  return &graph.operation(*op);
}

bool heads_first(const Operation& transpose) {
  return std::get<TransposeAttributes>(transpose.attributes).permutation == kHeadsFirst;
}

// rows [B, S, heads·d] are heads [B, S, heads, d] merged.
bool merges(const Shape& rows, const Shape& heads) {
  return heads.size() == 4 && rows.size() == 3 && rows[0] == heads[0] && rows[1] == heads[1] &&
         rows[2] == std::uint64_t{heads[2]} * heads[3];
}

}  // namespace

std::optional<HeadView> split_heads_view(const Graph& graph, ValueId input) {
  const Operation* transpose = defined_by(graph, input, OpKind::kTranspose);
  if (transpose == nullptr || !heads_first(*transpose)) return std::nullopt;
  const std::optional<OpId> reader = sole_reader(graph, input);
  if (!reader || graph.operation(*reader).kind != OpKind::kAttention) return std::nullopt;
  const ValueId split = transpose->inputs[0];
  const Operation* reshape = defined_by(graph, split, OpKind::kReshape);
  if (reshape == nullptr || !sole_reader(graph, split)) return std::nullopt;
  const ValueId x = reshape->inputs[0];
  const Shape& heads = graph.type(split).shape;
  if (!merges(graph.type(x).shape, heads)) return std::nullopt;
  HeadView view{x, 0, heads[3], {}};
  // A slice of the last axis that only the reshape reads: address what it cuts.
  if (const Operation* slice = defined_by(graph, x, OpKind::kSlice); slice != nullptr && sole_reader(graph, x)) {
    const auto& bounds = std::get<SliceAttributes>(slice->attributes);
    const Shape& whole = graph.type(slice->inputs[0]).shape;
    if (whole.size() == 3 && bounds.begin[0] == 0 && bounds.begin[1] == 0 && bounds.end[0] == whole[0] &&
        bounds.end[1] == whole[1]) {
      view.value = slice->inputs[0];
      view.column0 = bounds.begin[2];
      view.ops.push_back(*graph.value(x).op);
    }
  }
  view.ops.push_back(*graph.value(split).op);
  view.ops.push_back(*graph.value(input).op);
  return view;
}

std::optional<HeadView> merged_heads_view(const Graph& graph, OpId attention) {
  const ValueId o = graph.operation(attention).results[0];
  const std::optional<OpId> t = sole_reader(graph, o);
  if (!t || graph.operation(*t).kind != OpKind::kTranspose || !heads_first(graph.operation(*t))) return std::nullopt;
  const ValueId transposed = graph.operation(*t).results[0];
  const std::optional<OpId> m = sole_reader(graph, transposed);
  if (!m || graph.operation(*m).kind != OpKind::kReshape) return std::nullopt;
  const Shape& heads = graph.type(transposed).shape;  // [B, S, heads, d]
  const ValueId merged = graph.operation(*m).results[0];
  const Shape& rows = graph.type(merged).shape;
  if (!merges(rows, heads)) return std::nullopt;
  return HeadView{merged, 0, heads[3], {*t, *m}};
}

bool in_head_view(const Graph& graph, OpId op) {
  const Operation& self = graph.operation(op);
  if (self.kind != OpKind::kSlice && self.kind != OpKind::kReshape && self.kind != OpKind::kTranspose) return false;
  const auto contains = [op](const std::optional<HeadView>& view) {
    return view && std::find(view->ops.begin(), view->ops.end(), op) != view->ops.end();
  };
  // A split: forward through sole readers (slice, reshape, transpose) to an attention.
  ValueId value = self.results[0];
  for (int step = 0; step < 3; ++step) {
    const std::optional<OpId> reader = sole_reader(graph, value);
    if (!reader) break;
    const Operation& next = graph.operation(*reader);
    if (next.kind == OpKind::kAttention) return contains(split_heads_view(graph, value));
    if (next.results.empty()) break;  // a host output
    value = next.results[0];
  }
  // A merge: back through a transpose to the attention whose result it is.
  std::optional<OpId> before = graph.value(self.inputs[0]).op;
  if (before && self.kind == OpKind::kReshape && graph.operation(*before).kind == OpKind::kTranspose) {
    before = graph.value(graph.operation(*before).inputs[0]).op;
  }
  if (!before || graph.operation(*before).kind != OpKind::kAttention) return false;
  return contains(merged_heads_view(graph, *before));
}

}  // namespace tessera::compiler::lower
