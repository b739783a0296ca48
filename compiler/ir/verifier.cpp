#include "compiler/ir/verifier.hpp"

#include <map>

#include <fmt/format.h>

#include "compiler/ir/shape_inference.hpp"

namespace tessera::compiler {
namespace {

class Verifier {
 public:
  explicit Verifier(const Graph& graph)
      : graph_(graph),
        definitions_(graph.value_count(), 0),
        defined_(graph.value_count(), false),
        placements_(graph.operation_count(), 0),
        visited_(graph.block_count(), false) {}

  std::vector<std::string> run() {
    if (graph_.block_count() == 0) return {"the graph has no top-level block"};
    check_definitions();
    const Block& top = graph_.top();
    if (top.owner || !top.arguments.empty() || !top.yields.empty()) {
      problem("the top-level block has an owner, arguments or yields");
    }
    walk_block(kTopBlock);
    check_coverage();
    bool has_output = false;
    for (const OpId op : top.operations) {
      has_output = has_output || (valid(op) && graph_.operation(op).kind == OpKind::kHostOutput);
    }
    if (!has_output) {
      problem("the graph has no host output, so it computes nothing anyone can see");
    }
    return std::move(problems_);
  }

 private:
  void problem(std::string text) { problems_.push_back(std::move(text)); }

  bool valid(ValueId id) const { return id.index < graph_.value_count(); }
  bool valid(OpId id) const { return id.index < graph_.operation_count(); }
  bool valid(BlockId id) const { return id.index < graph_.block_count(); }

  // Each value must be named as defined by exactly one result or argument
  // slot, and its own record must point back at that slot.
  void check_definitions() {
    for (std::uint32_t b = 0; b < graph_.block_count(); ++b) {
      const Block& block = graph_.block(BlockId{b});
      for (std::uint32_t i = 0; i < block.arguments.size(); ++i) {
        note_definition(block.arguments[i], BlockId{b}, std::nullopt, i,
                        fmt::format("argument {} of block {}", i, b));
      }
    }
    for (std::uint32_t o = 0; o < graph_.operation_count(); ++o) {
      const Operation& op = graph_.operation(OpId{o});
      for (std::uint32_t i = 0; i < op.results.size(); ++i) {
        note_definition(op.results[i], op.block, OpId{o}, i,
                        fmt::format("result {} of {}", i, graph_.describe(OpId{o})));
      }
    }
    for (std::uint32_t v = 0; v < definitions_.size(); ++v) {
      if (definitions_[v] == 0) problem(fmt::format("%{} is defined by nothing", v));
    }
  }

  void note_definition(ValueId id, BlockId block, std::optional<OpId> op, std::uint32_t position,
                       const std::string& slot) {
    if (!valid(id)) {
      problem(fmt::format("{} is {}, which is not a value of the graph", slot, format_value(id)));
      return;
    }
    if (++definitions_[id.index] > 1) {
      problem(fmt::format("{} is defined more than once (again as {})", format_value(id), slot));
    }
    const Value& value = graph_.value(id);
    if (value.block != block || value.op != op || value.position != position) {
      problem(fmt::format("{} is {}, but its record says otherwise", format_value(id), slot));
    }
    if (auto why = tensor_type_problem(value.type)) {
      problem(fmt::format("{} ({}): {}", format_value(id), slot, *why));
    }
  }

  void walk_block(BlockId id) {
    if (visited_[id.index]) {
      problem(fmt::format("block {} is the body of more than one repeat, or of itself", id.index));
      return;
    }
    visited_[id.index] = true;
    const Block& block = graph_.block(id);
    for (const ValueId argument : block.arguments) {
      if (valid(argument)) defined_[argument.index] = true;
    }
    for (const OpId op : block.operations) {
      if (!valid(op)) {
        problem(fmt::format("block {} lists op {}, which is not an operation of the graph",
                            id.index, op.index));
        continue;
      }
      if (++placements_[op.index] > 1) {
        problem(fmt::format("{} is listed in more than one place", graph_.describe(op)));
        continue;
      }
      walk_operation(id, op);
    }
  }

  void walk_operation(BlockId block, OpId id) {
    const Operation& op = graph_.operation(id);
    const std::string where = graph_.describe(id);
    if (op.block != block) {
      problem(fmt::format("{}: listed in block {} but records block {}", where, block.index,
                          op.block.index));
    }
    // Uses: each input defined earlier in this block (blocks are isolated).
    bool inputs_ok = true;
    std::vector<TensorType> input_types;
    for (std::size_t i = 0; i < op.inputs.size(); ++i) {
      const ValueId input = op.inputs[i];
      if (!valid(input)) {
        problem(fmt::format("{}: input {} is {}, which is not a value of the graph", where, i,
                            format_value(input)));
        inputs_ok = false;
        continue;
      }
      const Value& value = graph_.value(input);
      if (value.block != block) {
        problem(fmt::format("{}: {} is defined in block {}, outside block {} where it is used",
                            where, format_value(input), value.block.index, block.index));
        inputs_ok = false;
      } else if (!defined_[input.index]) {
        problem(fmt::format("{}: {} is used before it is defined", where, format_value(input)));
        inputs_ok = false;
      }
      input_types.push_back(value.type);
    }
    const bool binding = op.kind == OpKind::kHostInput || op.kind == OpKind::kParameter ||
                         op.kind == OpKind::kHostOutput;
    if (binding) check_binding(block, id, op, where);

    if (inputs_ok) check_result_types(op, input_types, where);
    for (const ValueId result : op.results) {
      if (valid(result)) defined_[result.index] = true;
    }
    if (op.kind == OpKind::kRepeat) check_repeat(id, op, input_types, inputs_ok, where);
  }

  void check_binding(BlockId block, OpId id, const Operation& op, const std::string& where) {
    if (block != kTopBlock) {
      problem(fmt::format("{}: host bindings live only at the top level", where));
    }
    const auto* attributes = std::get_if<BindingAttributes>(&op.attributes);
    if (attributes == nullptr) return;  // reported by the type check
    const auto [it, inserted] = names_.emplace(attributes->name, id);
    if (!inserted) {
      problem(fmt::format("{}: the name \"{}\" is already used by {}", where, attributes->name,
                          graph_.describe(it->second)));
    }
  }

  void check_result_types(const Operation& op, const std::vector<TensorType>& input_types,
                          const std::string& where) {
    std::vector<TensorType> expected;
    try {
      expected = infer_result_types(op.kind, input_types, op.attributes);
    } catch (const Error& error) {
      problem(fmt::format("{}: {}", where, error.message()));
      return;
    }
    if (expected.size() != op.results.size()) {
      problem(fmt::format("{}: has {} results, but {} takes {}", where, op.results.size(),
                          op_kind_name(op.kind), expected.size()));
      return;
    }
    for (std::size_t i = 0; i < expected.size(); ++i) {
      if (!valid(op.results[i])) continue;  // reported with the definitions
      const TensorType& actual = graph_.type(op.results[i]);
      if (actual != expected[i]) {
        problem(fmt::format("{}: result {} ({}) is {}, but the operation makes {}", where, i,
                            format_value(op.results[i]), format_type(actual),
                            format_type(expected[i])));
      }
    }
  }

  void check_repeat(OpId id, const Operation& op, const std::vector<TensorType>& input_types,
                    bool inputs_ok, const std::string& where) {
    const auto* attributes = std::get_if<RepeatAttributes>(&op.attributes);
    if (attributes == nullptr) return;  // reported by the type check
    if (!valid(attributes->body) || attributes->body == kTopBlock) {
      problem(fmt::format("{}: its body, block {}, is not a block it can own", where,
                          attributes->body.index));
      return;
    }
    const Block& body = graph_.block(attributes->body);
    if (body.owner != id) {
      problem(fmt::format("{}: its body, block {}, names another owner", where,
                          attributes->body.index));
    }
    if (body.arguments.size() != op.inputs.size()) {
      problem(fmt::format("{}: the body has {} arguments for {} inputs", where,
                          body.arguments.size(), op.inputs.size()));
    } else if (inputs_ok) {
      std::vector<TensorType> expected;
      try {
        expected = repeat_body_argument_types(input_types, *attributes);
      } catch (const Error&) {
        expected.clear();  // reported by the type check
      }
      for (std::size_t i = 0; i < body.arguments.size() && i < expected.size(); ++i) {
        if (!valid(body.arguments[i])) continue;
        const TensorType& argument = graph_.type(body.arguments[i]);
        const bool sequence =
            i >= attributes->carried && i < attributes->carried + attributes->sequence;
        if (argument != expected[i] && sequence) {
          problem(
              fmt::format("{}: body argument {} ({}) is {}, but the entries of sequence input "
                          "{} ({}) are {}",
                          where, i, format_value(body.arguments[i]), format_type(argument), i,
                          format_type(input_types[i]), format_type(expected[i])));
        } else if (argument != expected[i]) {
          problem(fmt::format("{}: body argument {} ({}) is {}, but input {} is {}", where, i,
                              format_value(body.arguments[i]), format_type(argument), i,
                              format_type(input_types[i])));
        }
      }
    }
    walk_block(attributes->body);
    if (body.yields.size() != attributes->carried) {
      problem(fmt::format("{}: the body yields {} values for {} carried values", where,
                          body.yields.size(), attributes->carried));
      return;
    }
    for (std::size_t i = 0; i < body.yields.size(); ++i) {
      const ValueId yielded = body.yields[i];
      if (!valid(yielded)) {
        problem(fmt::format("{}: yield {} is {}, which is not a value of the graph", where, i,
                            format_value(yielded)));
        continue;
      }
      const Value& value = graph_.value(yielded);
      if (value.block != attributes->body || !defined_[yielded.index]) {
        problem(fmt::format("{}: yield {} ({}) is not defined in the body", where, i,
                            format_value(yielded)));
      } else if (inputs_ok && i < input_types.size() && value.type != input_types[i]) {
        problem(fmt::format("{}: yield {} ({}) is {}, but carried value {} is {}", where, i,
                            format_value(yielded), format_type(value.type), i,
                            format_type(input_types[i])));
      }
    }
  }

  void check_coverage() {
    for (std::uint32_t o = 0; o < placements_.size(); ++o) {
      if (placements_[o] == 0) {
        problem(fmt::format("{} is in no block reachable from the top level",
                            graph_.describe(OpId{o})));
      }
    }
    for (std::uint32_t b = 0; b < visited_.size(); ++b) {
      if (!visited_[b]) problem(fmt::format("block {} is the body of no repeat", b));
    }
  }

  const Graph& graph_;
  std::vector<unsigned> definitions_;
  std::vector<bool> defined_;
  std::vector<unsigned> placements_;
  std::vector<bool> visited_;
  std::map<std::string, OpId> names_;
  std::vector<std::string> problems_;
};

}  // namespace

std::vector<std::string> verification_problems(const Graph& graph) { return Verifier(graph).run(); }

void verify(const Graph& graph) {
  const std::vector<std::string> problems = verification_problems(graph);
  if (problems.empty()) return;
  std::string message = problems.front();
  if (problems.size() > 1) {
    message += fmt::format(" (and {} more problem{})", problems.size() - 1,
                           problems.size() == 2 ? "" : "s");
  }
  throw GraphError(std::move(message));
}

}  // namespace tessera::compiler
