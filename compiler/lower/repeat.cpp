#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "compiler/lower/operations.hpp"

namespace tessera::compiler::lower {
namespace {

// The end of an iteration: every carried state takes its yield, all at
// once. A yield that is another carried value (`[a, a]`, a swap) reads that
// state, so its copy comes before the state is overwritten; a cycle of such
// reads (a permutation) first saves one state in a temporary.
void copy_yields(LoweringContext& context, const Block& body, const std::vector<const Storage*>& state,
                 std::uint32_t provenance, OpId id) {
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
      context.copy_value(*source[*next], *state[*next], context.graph().type(body.yields[*next]), provenance,
                 fmt::format("op {} yield {}", id.index, *next));
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

}  // namespace

// A repeat: the carried values live in loop-state buffers (which are also
// the repeat's results), initialised before the loop; the body reads its
// arguments from them (carried) or from the outer values (invariant), and
// each iteration ends by copying the yields into the state. The body's
// steps sit once between a loop begin and a loop end.
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
    const Storage& held = context.allocate(result, graph.type(result), format_value(result), provenance);
    context.copy_value(context.storage(op.inputs[j]), held, graph.type(result), provenance,
               fmt::format("op {} entry", id.index));
    state.push_back(&held);
  }
  for (std::size_t j = 0; j < body.arguments.size(); ++j) {
    context.alias(body.arguments[j], j < carried ? *state[j] : context.storage(op.inputs[j]));
  }
  const std::size_t begin = program.steps.size();
  Step open;
  open.kind = StepKind::kLoopBegin;
  open.count = attributes.count;
  open.provenance = provenance;
  program.steps.push_back(std::move(open));
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
