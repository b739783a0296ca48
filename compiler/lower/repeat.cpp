#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "compiler/lower/operations.hpp"
#include "kernels/registry.hpp"
#include "support/checked.hpp"

namespace tessera::compiler::lower {
namespace {

// The end of an iteration: every carried state takes its yield, all at
// once. A yield that is another carried value (`[a, a]`, a swap) reads that
// state, so its copy comes before the state is overwritten; a cycle of such
// reads (a permutation) first saves one state in a temporary.
void copy_yields(LoweringContext& context, const Block& body,
                 const std::vector<const Storage*>& state, std::uint32_t provenance, OpId id) {
  const std::size_t carried = state.size();
  std::vector<const Storage*> source(carried, nullptr);    // where each state's next value is
  std::vector<std::optional<std::size_t>> reads(carried);  // the state that value is, if any
  for (std::size_t j = 0; j < carried; ++j) {
    const ValueId yielded = body.yields[j];
    if (yielded == body.arguments[j]) continue;  // unchanged
    source[j] = &context.storage(yielded);
    for (std::size_t a = 0; a < carried; ++a) {
      if (yielded == body.arguments[a]) reads[j] = a;
    }
  }
  const auto read_by_another = [&](std::size_t j) {
    for (std::size_t k = 0; k < carried; ++k) {
      if (k != j && source[k] != nullptr && reads[k] == j) return true;
    }
    return false;
  };
  const auto pending = [&] {
    return std::any_of(source.begin(), source.end(),
                       [](const Storage* from) { return from != nullptr; });
  };
  while (pending()) {
    std::optional<std::size_t> next;
    for (std::size_t j = 0; j < carried && !next; ++j) {
      if (source[j] != nullptr && !read_by_another(j)) next = j;
    }
    if (next) {
      context.copy_value(*source[*next], *state[*next], context.graph().type(body.yields[*next]),
                         provenance, fmt::format("op {} yield {}", id.index, *next));
      source[*next] = nullptr;
      continue;
    }
    // Every pending state is read by another one: a cycle. Save the first.
    std::size_t j = 0;
    while (source[j] == nullptr) ++j;
    const Storage& saved =
        context.scratch_like(*state[j], fmt::format("carried {} saved (op {})", j, id.index),
                             format_value(body.arguments[j]), provenance);
    context.copy_value(*state[j], saved, context.graph().type(body.arguments[j]), provenance,
                       fmt::format("op {} save {}", id.index, j));
    for (std::size_t k = 0; k < carried; ++k) {
      if (source[k] != nullptr && reads[k] == j) {
        source[k] = &saved;
        reads[k].reset();
      }
    }
  }
}

// Sequence input `input` in entry-major storage (layout_policy.hpp): its own
// when the policy placed it so, else a copy made before the loop (a sequence
// with sub-word entries, a loop's argument, an entry of an outer sequence).
const Storage& entry_major(LoweringContext& context, ValueId input, std::uint32_t provenance,
                           OpId id, const std::string& described) {
  const TensorType& type = context.graph().type(input);
  const std::optional<TensorPlacement> placement = context.layouts().sequence(type);
  if (!placement) {
    throw LoweringError(fmt::format(
        "{}: sequence {} {}: entries of sub-word scalars are not lowered yet (their stride is not "
        "whole words)",
        described, format_value(input), format_type(type)));
  }
  const Storage& held = context.storage(input);
  if (held.resolved.layout == placement->layout) return held;
  const Storage& copy = context.scratch_at(
      type, *placement, fmt::format("{} entry-major (op {})", format_value(input), id.index),
      format_value(input), provenance);
  context.copy_value(held, copy, type, provenance, fmt::format("op {} sequence", id.index));
  return copy;
}

// The start of every iteration: on each tile, that tile's part of entry i of
// each sequence is copied into the entry's buffer — one tessera_copy_words
// whose source pointer moves on by the entry stride every iteration (the
// emitted code computes it; PointerOperand), so the body's steps, its
// exchange rows among them, read the entry at fixed addresses.
void copy_entries(LoweringContext& context,
                  const std::vector<std::pair<const Storage*, const Storage*>>& entries,
                  std::uint32_t count, std::size_t loop, std::uint32_t provenance,
                  const std::string& described) {
  std::map<LogicalTile, std::vector<KernelRun>> runs;
  for (const auto& [sequence, entry] : entries) {
    for (std::size_t k = 0; k < sequence->resolved.shards.size(); ++k) {
      const Shard& from = sequence->resolved.shards[k];
      const Shard& to = entry->resolved.shards.at(k);
      // resolve() owns both: the sequence's shard is `count` entry shards,
      // each at least the entry's, padded to whole words.
      const std::uint64_t stride = from.bytes / count;
      if (to.tile != from.tile || from.bytes % count != 0 || stride % 4 != 0 || stride < to.bytes) {
        throw LoweringError(
            fmt::format("{}: internal: sequence shard {} ({} bytes on L{}) does not "
                        "hold {} entries of {} bytes on their tile",
                        described, k, from.bytes, from.tile.value, count, to.bytes));
      }
      const auto words = checked_cast<std::uint32_t>((to.bytes + 3) / 4, "entry words");
      runs[to.tile].push_back(KernelRun{
          std::string(kernels::kCopyWords),
          {{2, entry->buffer, checked_cast<std::uint32_t>(to.offset, "entry offset")},
           {3, sequence->buffer, checked_cast<std::uint32_t>(from.offset, "sequence offset"),
            checked_cast<std::uint32_t>(stride, "entry stride"), loop}},
          {{4, words}},
          provenance});
    }
  }
  if (!runs.empty()) {
    context.program().steps.push_back(Step{StepKind::kCompute, 0, {}, std::move(runs), provenance});
  }
}

}  // namespace

// A repeat: the carried values live in loop-state buffers (which are also
// the repeat's results), initialised before the loop; the body reads its
// arguments from them (carried), from entry buffers that each iteration
// fills from its sequences (copy_entries), or from the outer values
// (invariant), and each iteration ends by copying the yields into the
// state. The body's steps sit once between a loop begin and a loop end.
//
// Entry i is copied rather than read in place so that everything the body
// does — exchange rows above all, whose addresses are fixed in the row
// code — sees one address for its argument whatever the iteration; the
// price is one local word copy of the tile's part of each entry per
// iteration and one entry's memory.
void lower_repeat(LoweringContext& context, OpId id, const std::string& described) {
  const Graph& graph = context.graph();
  Program& program = context.program();
  const Operation& op = graph.operation(id);
  const auto& attributes = std::get<RepeatAttributes>(op.attributes);
  const Block& body = graph.block(attributes.body);
  const std::size_t carried = attributes.carried;
  const std::uint32_t provenance = program.add_provenance(described);
  std::vector<const Storage*> state;
  for (std::size_t j = 0; j < carried; ++j) {
    const ValueId result = op.results[j];
    const Storage& held =
        context.allocate(result, graph.type(result), format_value(result), provenance);
    context.copy_value(context.storage(op.inputs[j]), held, graph.type(result), provenance,
                       fmt::format("op {} entry", id.index));
    state.push_back(&held);
  }
  // Each sequence entry-major, and its entry's buffer on the same tiles.
  const std::size_t sequences_end = carried + attributes.sequence;
  std::vector<std::pair<const Storage*, const Storage*>> entries;
  for (std::size_t j = carried; j < sequences_end; ++j) {
    if (graph.type(op.inputs[j]).element.block_scaled()) {
      // Block-scaled weights: entries of their codes and of their scales
      // (the block_scale's inputs), bound to the body's argument.
      const std::optional<OpId> producer = graph.value(op.inputs[j]).op;
      if (!producer || graph.operation(*producer).kind != OpKind::kBlockScale) {
        throw LoweringError(fmt::format(
            "{}: sequence {} is block-scaled but no block_scale's result (an outer loop's entry): "
            "not lowered yet",
            described, format_value(op.inputs[j])));
      }
      LoweringContext::BlockScaled held;
      held.panels = std::get<BlockScaleAttributes>(graph.operation(*producer).attributes).panels;
      for (const std::size_t part : {std::size_t{0}, std::size_t{1}}) {
        const ValueId input = graph.operation(*producer).inputs[part];
        const Storage& sequence = entry_major(context, input, provenance, id, described);
        TensorPlacement at{sequence.resolved.layout, {}};
        for (const Shard& shard : sequence.resolved.shards) at.tiles.push_back(shard.tile);
        const TensorType& type = graph.type(input);
        const Storage& entry = context.scratch_at(
            entry_type(type), context.layouts().entry(type, at),
            fmt::format("{} entry of {} (op {})", part == 0 ? "codes" : "scales", format_value(input), id.index),
            format_value(input), provenance);
        entries.emplace_back(&sequence, &entry);
        (part == 0 ? held.codes : held.scales) = &entry;
      }
      // The entry has no storage of its own: only a matmul's weights read it.
      for (const OpId inner : body.operations) {
        const Operation& user = graph.operation(inner);
        for (std::size_t k = 0; k < user.inputs.size(); ++k) {
          if (user.inputs[k] != body.arguments[j] || (user.kind == OpKind::kMatmul && k == 1)) continue;
          throw LoweringError(fmt::format(
              "{}: its block-scaled sequence entry {} is input {} of {}: lowered only as a matmul's "
              "weights (its second input) yet",
              described, format_value(body.arguments[j]), k, graph.describe(inner)));
        }
      }
      context.bind_block_scaled(body.arguments[j], held);
      continue;
    }
    const Storage& sequence = entry_major(context, op.inputs[j], provenance, id, described);
    TensorPlacement at{sequence.resolved.layout, {}};
    for (const Shard& shard : sequence.resolved.shards) at.tiles.push_back(shard.tile);
    const ValueId argument = body.arguments[j];
    const Storage& entry = context.allocate_at(
        argument, graph.type(argument), context.layouts().entry(graph.type(op.inputs[j]), at),
        fmt::format("{} entry of {}", format_value(argument), format_value(op.inputs[j])),
        provenance);
    entries.emplace_back(&sequence, &entry);
  }
  for (std::size_t j = 0; j < body.arguments.size(); ++j) {
    if (j >= carried && j < sequences_end) continue;
    context.alias(body.arguments[j], j < carried ? *state[j] : context.storage(op.inputs[j]));
  }
  const std::size_t begin = program.steps.size();
  Step open;
  open.kind = StepKind::kLoopBegin;
  open.count = attributes.count;
  open.provenance = provenance;
  program.steps.push_back(std::move(open));
  copy_entries(context, entries, attributes.count, begin, provenance, described);
  for (const OpId inner : body.operations) context.lower(inner);
  copy_yields(context, body, state, provenance, id);
  Step close;
  close.kind = StepKind::kLoopEnd;
  close.partner = begin;
  close.provenance = provenance;
  program.steps[begin].partner = program.steps.size();
  program.steps.push_back(std::move(close));
}

}  // namespace tessera::compiler::lower
