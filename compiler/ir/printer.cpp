#include "compiler/ir/printer.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tessera::compiler {
namespace {

class Printer {
 public:
  explicit Printer(const Graph& graph) : graph_(graph) {}

  std::string run() {
    out_ = "graph {\n";
    if (graph_.block_count() > 0) print_block(kTopBlock, 1);
    out_ += "}\n";
    return std::move(out_);
  }

 private:
  std::string type_of(ValueId id) const {
    if (id.index >= graph_.value_count()) return "<no such value>";
    return format_type(graph_.type(id));
  }

  static std::string values(const std::vector<ValueId>& ids) {
    std::string text;
    for (std::size_t i = 0; i < ids.size(); ++i) text += (i ? ", " : "") + format_value(ids[i]);
    return text;
  }

  void print_block(BlockId id, int depth) {
    if (id.index >= graph_.block_count() || depth > 64) {
      line(depth, fmt::format("<block {} cannot be printed>", id.index));
      return;
    }
    const Block& block = graph_.block(id);
    for (const OpId op : block.operations) print_operation(op, depth);
  }

  void line(int depth, std::string_view text) {
    out_.append(static_cast<std::size_t>(depth) * 2, ' ');
    out_ += text;
    out_ += '\n';
  }

  // The attribute text between the inputs and the type.
  static std::string attribute_text(const Operation& op) {
    return std::visit(
        [&](const auto& attributes) -> std::string {
          using T = std::decay_t<decltype(attributes)>;
          if constexpr (std::is_same_v<T, SliceAttributes>) {
            return fmt::format(" begin {} end {}", format_shape(attributes.begin),
                               format_shape(attributes.end));
          } else if constexpr (std::is_same_v<T, ConcatAttributes>) {
            return fmt::format(" axis {}", attributes.axis);
          } else if constexpr (std::is_same_v<T, TransposeAttributes>) {
            return fmt::format(" permutation {}", format_shape(attributes.permutation));
          } else if constexpr (std::is_same_v<T, ReduceAttributes>) {
            return fmt::format(" axes {}{}", format_shape(attributes.axes),
                               attributes.keep_dims ? " keep_dims" : "");
          } else if constexpr (std::is_same_v<T, GeluAttributes>) {
            return fmt::format(" approximation {}",
                               gelu_approximation_name(attributes.approximation));
          } else if constexpr (std::is_same_v<T, LayerNormAttributes>) {
            return fmt::format(" epsilon {}", attributes.epsilon);
          } else if constexpr (std::is_same_v<T, SoftmaxAttributes>) {
            return fmt::format(" axis {}", attributes.axis);
          } else if constexpr (std::is_same_v<T, AttentionAttributes>) {
            return fmt::format(" scale {}", attributes.scale);
          } else if constexpr (std::is_same_v<T, BlockScaleAttributes>) {
            return attributes.panels == 0 ? std::string()
                                          : fmt::format(" panels {} matrix {}", attributes.panels,
                                                        format_shape(attributes.matrix));
          } else if constexpr (std::is_same_v<T, ShapeAttributes>) {
            // reshape and broadcast_to: the target is the result type.
            return op.results.empty() ? fmt::format(" to {}", format_shape(attributes.shape)) : "";
          } else {
            return "";
          }
        },
        op.attributes);
  }

  void print_operation(OpId id, int depth) {
    if (id.index >= graph_.operation_count()) {
      line(depth, fmt::format("<op {} does not exist>", id.index));
      return;
    }
    const Operation& op = graph_.operation(id);
    std::string text;
    if (!op.results.empty()) text = values(op.results) + " = ";
    text += op_kind_name(op.kind);
    if (const auto* binding = std::get_if<BindingAttributes>(&op.attributes)) {
      text += fmt::format(" \"{}\"", binding->name);
    }
    const auto* repeat = std::get_if<RepeatAttributes>(&op.attributes);
    if (repeat != nullptr && op.kind == OpKind::kRepeat) {
      // Malformed attributes print what they can (counts clamped to the inputs).
      const std::size_t carried = std::min<std::size_t>(repeat->carried, op.inputs.size());
      const std::size_t sequence_end =
          std::min<std::size_t>(carried + repeat->sequence, op.inputs.size());
      const auto at = [&op](std::size_t i) {
        return op.inputs.begin() + static_cast<std::ptrdiff_t>(i);
      };
      text += fmt::format(" {} carried {}", repeat->count, values({at(0), at(carried)}));
      if (carried < sequence_end) text += " sequence " + values({at(carried), at(sequence_end)});
      if (sequence_end < op.inputs.size()) {
        text += " invariant " + values({at(sequence_end), op.inputs.end()});
      }
      line(depth, fmt::format("{} {{  // op {}", text, id.index));
      print_body(*repeat, depth);
      std::string types;
      for (std::size_t i = 0; i < op.results.size(); ++i) {
        types += (i ? ", " : "") + type_of(op.results[i]);
      }
      line(depth, "} : " + types);
      return;
    }
    if (!op.inputs.empty()) text += " " + values(op.inputs);
    text += attribute_text(op);
    if (!op.results.empty()) {
      text += " :";
      for (std::size_t i = 0; i < op.results.size(); ++i) {
        text += (i ? ", " : " ") + type_of(op.results[i]);
      }
    }
    line(depth, fmt::format("{}  // op {}", text, id.index));
  }

  void print_body(const RepeatAttributes& repeat, int depth) {
    if (repeat.body.index >= graph_.block_count() || repeat.body == kTopBlock) {
      line(depth, fmt::format("<body block {} cannot be printed>", repeat.body.index));
      return;
    }
    const Block& body = graph_.block(repeat.body);
    std::string arguments;
    for (std::size_t i = 0; i < body.arguments.size(); ++i) {
      arguments += fmt::format("{}{}: {}", i ? ", " : "", format_value(body.arguments[i]),
                               type_of(body.arguments[i]));
    }
    line(depth, fmt::format("^({}):", arguments));
    print_block(repeat.body, depth + 1);
    line(depth + 1, "yield " + values(body.yields));
  }

  const Graph& graph_;
  std::string out_;
};

}  // namespace

std::string print_graph(const Graph& graph) { return Printer(graph).run(); }

}  // namespace tessera::compiler
