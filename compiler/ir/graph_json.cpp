#include "compiler/ir/graph_json.hpp"

#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/ir/shape_inference.hpp"
#include "compiler/ir/verifier.hpp"
#include "support/utf8.hpp"

namespace tessera::compiler {
namespace {

using Json = nlohmann::json;

constexpr std::size_t kMaxLabelLength = 256;

[[noreturn]] void fail(const std::string& path, std::string message) {
  throw GraphFormatError(path, std::move(message));
}

std::string json_type_name(const Json& value) {
  if (value.is_number_unsigned()) return "an unsigned integer";
  if (value.is_number_integer()) return "a negative integer";
  if (value.is_number_float()) return "a non-integer number";
  if (value.is_object()) return "an object";
  if (value.is_array()) return "an array";
  if (value.is_null()) return "null";
  return std::string("a ") + value.type_name();
}

// ---- Reading --------------------------------------------------------------------------

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const DType dtype :
       {DType::kF32, DType::kF16, DType::kU32, DType::kF8F143, DType::kI32, DType::kU8}) {
    if (schema::dtype_name(dtype) == name) return dtype;
  }
  return std::nullopt;
}

class Reader {
 public:
  Graph read(const Json& document) {
    const auto& fields = object(document, "", {"format", "version", "operations"}, {});
    const std::string format = string(fields.at("format"), "format");
    if (format != kGraphFormatName) {
      fail("format", fmt::format("is \"{}\", not \"{}\"", format, kGraphFormatName));
    }
    const std::uint64_t version = unsigned_integer(fields.at("version"), "version");
    if (version != kGraphFormatVersion) {
      fail("version",
           fmt::format("{} is not a version this reader knows ({})", version, kGraphFormatVersion));
    }
    read_operations(fields.at("operations"), "operations", 0);
    try {
      verify(graph_);
    } catch (const GraphError& error) {
      throw GraphFormatError(error.what());  // e.g. no host output
    }
    return std::move(graph_);
  }

 private:
  // The object's members after checking that it is an object holding every
  // required key, no unknown key (duplicates were refused while parsing).
  static const Json& object(const Json& value, const std::string& path,
                            std::initializer_list<std::string_view> required,
                            std::initializer_list<std::string_view> optional) {
    if (!value.is_object()) fail(path, "expected an object, found " + json_type_name(value));
    for (const auto& [key, member] : value.items()) {
      const auto is_key = [&key](std::string_view known) { return known == key; };
      if (std::none_of(required.begin(), required.end(), is_key) &&
          std::none_of(optional.begin(), optional.end(), is_key)) {
        fail(join(path, key), "unknown key");
      }
    }
    for (const std::string_view key : required) {
      if (!value.contains(key)) fail(path, fmt::format("missing key \"{}\"", key));
    }
    return value;
  }

  static std::string join(const std::string& path, std::string_view key) {
    return path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
  }
  static std::string index(const std::string& path, std::size_t i) {
    return fmt::format("{}[{}]", path, i);
  }

  static const Json& array(const Json& value, const std::string& path, std::size_t max_size) {
    if (!value.is_array()) fail(path, "expected an array, found " + json_type_name(value));
    if (value.size() > max_size) {
      fail(path, fmt::format("has {} entries, more than {}", value.size(), max_size));
    }
    return value;
  }

  static std::string string(const Json& value, const std::string& path) {
    if (!value.is_string()) fail(path, "expected a string, found " + json_type_name(value));
    return value.get<std::string>();
  }

  static std::uint64_t unsigned_integer(
      const Json& value, const std::string& path,
      std::uint64_t max = std::numeric_limits<std::uint64_t>::max()) {
    if (!value.is_number_unsigned()) {
      fail(path, "expected an unsigned integer, found " + json_type_name(value));
    }
    const auto number = value.get<std::uint64_t>();
    if (number > max) fail(path, fmt::format("{} is larger than {}", number, max));
    return number;
  }

  static std::uint32_t u32(const Json& value, const std::string& path) {
    return static_cast<std::uint32_t>(
        unsigned_integer(value, path, std::numeric_limits<std::uint32_t>::max()));
  }

  static std::vector<std::uint32_t> u32_list(const Json& value, const std::string& path,
                                             std::size_t max_size) {
    std::vector<std::uint32_t> list;
    const Json& items = array(value, path, max_size);
    for (std::size_t i = 0; i < items.size(); ++i) list.push_back(u32(items[i], index(path, i)));
    return list;
  }

  static Shape shape(const Json& value, const std::string& path) {
    Shape result = u32_list(value, path, kMaxRank);
    if (auto problem = shape_problem(result)) fail(path, *problem);
    return result;
  }

  // A JSON number (integer or not) that is finite as a double.
  static double number(const Json& value, const std::string& path) {
    if (!value.is_number()) fail(path, "expected a number, found " + json_type_name(value));
    const auto number = value.get<double>();
    if (!std::isfinite(number)) fail(path, "is not a finite number");
    return number;
  }

  // `dtype` and, for f8f143, its `scale` (tensor-wide: block-scaled values
  // are never declared, block_scale makes them).
  static ElementType element_type(const Json& op, const std::string& path) {
    ElementType element;
    const std::string name = string(op.at("dtype"), join(path, "dtype"));
    const auto dtype = dtype_from_name(name);
    if (!dtype) {
      fail(join(path, "dtype"),
           fmt::format("\"{}\" is not a dtype (f32, f16, u32, f8f143, i32, u8)", name));
    }
    element.dtype = *dtype;
    if (*dtype == DType::kF8F143) {
      if (!op.contains("scale")) fail(path, "an f8f143 tensor needs its \"scale\"");
      const Json& scale = op.at("scale");
      const std::string scale_path = join(path, "scale");
      if (!scale.is_number_integer()) {
        fail(scale_path, "expected an integer, found " + json_type_name(scale));
      }
      const bool in_range = scale.is_number_unsigned()
                                ? scale.get<std::uint64_t>() <= std::uint64_t{kMaxF8Scale}
                                : scale.get<std::int64_t>() >= kMinF8Scale;
      if (!in_range) {
        fail(scale_path,
             fmt::format("{} is outside [{}, {}]", scale.dump(), kMinF8Scale, kMaxF8Scale));
      }
      element.scale = scale.get<std::int32_t>();
    } else if (op.contains("scale")) {
      fail(join(path, "scale"), fmt::format("only f8f143 tensors have a scale, not {}", name));
    }
    return element;
  }

  static TensorType tensor_type(const Json& op, const std::string& path) {
    return TensorType{element_type(op, path), shape(op.at("shape"), join(path, "shape"))};
  }

  // Labels are the file's names for values; each is defined once in the
  // whole file (values are SSA and ids are global) and used after that.
  void define(const Json& label, const std::string& path, ValueId value) {
    const std::string name = string(label, path);
    // nlohmann's parser has checked that the text is UTF-8.
    if (name.empty() || utf8_code_points(name) > kMaxLabelLength) {
      fail(path, fmt::format("a label has 1 to {} characters", kMaxLabelLength));
    }
    if (!labels_.emplace(name, value).second) {
      fail(path, fmt::format("the label \"{}\" is already defined", name));
    }
  }

  ValueId use(const Json& label, const std::string& path) const {
    const std::string name = string(label, path);
    const auto found = labels_.find(name);
    if (found == labels_.end()) {
      fail(path, fmt::format("\"{}\" names no value defined before this point", name));
    }
    return found->second;
  }

  std::vector<ValueId> uses(
      const Json& labels, const std::string& path,
      std::size_t max_size = std::numeric_limits<std::uint32_t>::max()) const {
    std::vector<ValueId> values;
    const Json& items = array(labels, path, max_size);
    for (std::size_t i = 0; i < items.size(); ++i) values.push_back(use(items[i], index(path, i)));
    return values;
  }

  void read_operations(const Json& value, const std::string& path, unsigned nesting) {
    const Json& operations = array(value, path, std::numeric_limits<std::uint32_t>::max());
    for (std::size_t i = 0; i < operations.size(); ++i) {
      read_operation(operations[i], index(path, i), nesting);
    }
  }

  // Runs one builder call; its GraphError becomes a format error at `path`.
  template <typename F>
  static auto build(const std::string& path, F&& call) {
    try {
      return call();
    } catch (const GraphError& error) {
      fail(path, error.what());
    }
  }

  void read_operation(const Json& op, const std::string& path, unsigned nesting) {
    if (!op.is_object()) fail(path, "expected an object, found " + json_type_name(op));
    if (!op.contains("op")) fail(path, "missing key \"op\"");
    const std::string name = string(op.at("op"), join(path, "op"));
    const auto kind = op_kind_from_name(name);
    if (!kind) fail(join(path, "op"), fmt::format("\"{}\" is not an operation", name));
    const auto input = [&](std::size_t count) {
      std::vector<ValueId> inputs = uses(op.at("inputs"), join(path, "inputs"), count);
      if (inputs.size() != count) {
        fail(join(path, "inputs"), fmt::format("{} takes {} input{}, not {}", name, count,
                                               count == 1 ? "" : "s", inputs.size()));
      }
      return inputs;
    };
    const auto result = [&](ValueId value) {
      define(op.at("result"), join(path, "result"), value);
    };

    switch (*kind) {
      case OpKind::kHostInput:
      case OpKind::kParameter: {
        object(op, path, {"op", "name", "dtype", "shape", "result"}, {"scale"});
        const std::string binding = string(op.at("name"), join(path, "name"));
        TensorType type = tensor_type(op, path);
        result(build(path, [&] {
          return *kind == OpKind::kHostInput ? graph_.host_input(binding, std::move(type))
                                             : graph_.parameter(binding, std::move(type));
        }));
        return;
      }
      case OpKind::kHostOutput: {
        object(op, path, {"op", "name", "inputs"}, {});
        const std::string binding = string(op.at("name"), join(path, "name"));
        const ValueId value = input(1)[0];
        build(path, [&] { return graph_.host_output(binding, value); });
        return;
      }
      case OpKind::kCopy:
      case OpKind::kAdd: {
        object(op, path, {"op", "inputs", "result"}, {});
        const auto inputs = input(*kind == OpKind::kAdd ? 2 : 1);
        result(build(path, [&] {
          return *kind == OpKind::kAdd ? graph_.add(inputs[0], inputs[1]) : graph_.copy(inputs[0]);
        }));
        return;
      }
      case OpKind::kSlice: {
        object(op, path, {"op", "inputs", "begin", "end", "result"}, {});
        const ValueId value = input(1)[0];
        auto begin = u32_list(op.at("begin"), join(path, "begin"), kMaxRank);
        auto end = u32_list(op.at("end"), join(path, "end"), kMaxRank);
        result(build(path, [&] { return graph_.slice(value, std::move(begin), std::move(end)); }));
        return;
      }
      case OpKind::kConcat: {
        object(op, path, {"op", "inputs", "axis", "result"}, {});
        const auto inputs = uses(op.at("inputs"), join(path, "inputs"));
        const std::uint32_t axis = u32(op.at("axis"), join(path, "axis"));
        result(build(path, [&] { return graph_.concat(inputs, axis); }));
        return;
      }
      case OpKind::kReshape:
      case OpKind::kBroadcastTo: {
        object(op, path, {"op", "inputs", "shape", "result"}, {});
        const ValueId value = input(1)[0];
        Shape target = shape(op.at("shape"), join(path, "shape"));
        result(build(path, [&] {
          return *kind == OpKind::kReshape ? graph_.reshape(value, std::move(target))
                                           : graph_.broadcast_to(value, std::move(target));
        }));
        return;
      }
      case OpKind::kTranspose: {
        object(op, path, {"op", "inputs", "permutation", "result"}, {});
        const ValueId value = input(1)[0];
        auto permutation = u32_list(op.at("permutation"), join(path, "permutation"), kMaxRank);
        result(build(path, [&] { return graph_.transpose(value, std::move(permutation)); }));
        return;
      }
      case OpKind::kReduceSum: {
        object(op, path, {"op", "inputs", "axes", "result"}, {"keep_dims"});
        const ValueId value = input(1)[0];
        auto axes = u32_list(op.at("axes"), join(path, "axes"), kMaxRank);
        bool keep_dims = false;
        if (op.contains("keep_dims")) {
          const Json& flag = op.at("keep_dims");
          if (!flag.is_boolean()) {
            fail(join(path, "keep_dims"), "expected a boolean, found " + json_type_name(flag));
          }
          keep_dims = flag.get<bool>();
        }
        result(build(path, [&] { return graph_.reduce_sum(value, std::move(axes), keep_dims); }));
        return;
      }
      case OpKind::kRepeat:
        read_repeat(op, path, nesting);
        return;
      case OpKind::kMatmul:
      case OpKind::kMul: {
        object(op, path, {"op", "inputs", "result"}, {});
        const auto inputs = input(2);
        result(build(path, [&] {
          return *kind == OpKind::kMatmul ? graph_.matmul(inputs[0], inputs[1]) : graph_.mul(inputs[0], inputs[1]);
        }));
        return;
      }
      case OpKind::kBlockScale: {
        object(op, path, {"op", "inputs", "result"}, {"panels", "matrix"});
        const auto inputs = input(2);
        if (op.contains("panels") != op.contains("matrix")) {
          fail(path, fmt::format("missing key \"{}\": \"panels\" and \"matrix\" go together",
                                 op.contains("panels") ? "matrix" : "panels"));
        }
        if (!op.contains("panels")) {
          result(build(path, [&] { return graph_.block_scale(inputs[0], inputs[1]); }));
          return;
        }
        const std::uint32_t panels = u32(op.at("panels"), join(path, "panels"));
        Shape matrix = shape(op.at("matrix"), join(path, "matrix"));
        result(build(path, [&] { return graph_.block_scale_panels(inputs[0], inputs[1], panels, std::move(matrix)); }));
        return;
      }
      case OpKind::kGelu: {
        object(op, path, {"op", "inputs", "approximation", "result"}, {});
        const ValueId value = input(1)[0];
        const std::string name_path = join(path, "approximation");
        const std::string approximation = string(op.at("approximation"), name_path);
        const auto known = gelu_approximation_from_name(approximation);
        if (!known) {
          fail(name_path, fmt::format("\"{}\" is not an approximation gelu has (only \"tanh\")",
                                      approximation));
        }
        result(build(path, [&] { return graph_.gelu(value, *known); }));
        return;
      }
      case OpKind::kLayerNorm: {
        object(op, path, {"op", "inputs", "epsilon", "result"}, {});
        const auto inputs = input(3);
        const double epsilon = number(op.at("epsilon"), join(path, "epsilon"));
        result(build(path,
                     [&] { return graph_.layer_norm(inputs[0], inputs[1], inputs[2], epsilon); }));
        return;
      }
      case OpKind::kSoftmax: {
        object(op, path, {"op", "inputs", "axis", "result"}, {});
        const ValueId value = input(1)[0];
        const std::uint32_t axis = u32(op.at("axis"), join(path, "axis"));
        result(build(path, [&] { return graph_.softmax(value, axis); }));
        return;
      }
      case OpKind::kAttention: {
        object(op, path, {"op", "inputs", "scale", "result"}, {});
        const auto inputs = input(3);
        const double scale = number(op.at("scale"), join(path, "scale"));
        result(
            build(path, [&] { return graph_.attention(inputs[0], inputs[1], inputs[2], scale); }));
        return;
      }
      case OpKind::kConvert: {
        object(op, path, {"op", "inputs", "dtype", "result"}, {"scale"});
        const ValueId value = input(1)[0];
        const ElementType to = element_type(op, path);
        result(build(path, [&] { return graph_.convert(value, to); }));
        return;
      }
    }
  }

  void read_repeat(const Json& op, const std::string& path, unsigned nesting) {
    object(op, path, {"op", "count", "carried", "invariant", "results", "body"}, {"sequence"});
    if (nesting >= kMaxRepeatNesting) {
      fail(path, fmt::format("repeats are nested more than {} deep", kMaxRepeatNesting));
    }
    const std::uint32_t count = u32(op.at("count"), join(path, "count"));
    const auto carried = uses(op.at("carried"), join(path, "carried"));
    const auto sequence = op.contains("sequence") ? uses(op.at("sequence"), join(path, "sequence"))
                                                  : std::vector<ValueId>{};
    const auto invariant = uses(op.at("invariant"), join(path, "invariant"));
    const Json& results = array(op.at("results"), join(path, "results"), carried.size());
    if (results.size() != carried.size()) {
      fail(join(path, "results"),
           fmt::format("names {} results for {} carried values", results.size(), carried.size()));
    }
    const std::string body_path = join(path, "body");
    const Json& body = object(op.at("body"), body_path, {"arguments", "operations", "yield"}, {});

    const auto read_body = [&](Graph&, std::span<const ValueId> carried_arguments,
                               std::span<const ValueId> sequence_arguments,
                               std::span<const ValueId> invariant_arguments) {
      const std::string arguments_path = join(body_path, "arguments");
      std::vector<ValueId> all(carried_arguments.begin(), carried_arguments.end());
      all.insert(all.end(), sequence_arguments.begin(), sequence_arguments.end());
      all.insert(all.end(), invariant_arguments.begin(), invariant_arguments.end());
      const Json& arguments = array(body.at("arguments"), arguments_path, all.size());
      if (arguments.size() != all.size()) {
        fail(arguments_path,
             sequence_arguments.empty()
                 ? fmt::format("names {} arguments for {} carried and {} invariant values",
                               arguments.size(), carried_arguments.size(),
                               invariant_arguments.size())
                 : fmt::format("names {} arguments for {} carried, {} sequence and {} invariant "
                               "values",
                               arguments.size(), carried_arguments.size(),
                               sequence_arguments.size(), invariant_arguments.size()));
      }
      for (std::size_t i = 0; i < all.size(); ++i) {
        define(arguments[i], index(arguments_path, i), all[i]);
      }
      read_operations(body.at("operations"), join(body_path, "operations"), nesting + 1);
      return uses(body.at("yield"), join(body_path, "yield"));
    };
    const auto values =
        build(path, [&] { return graph_.repeat(count, carried, sequence, invariant, read_body); });
    for (std::size_t i = 0; i < values.size(); ++i) {
      define(results[i], index(join(path, "results"), i), values[i]);
    }
  }

  Graph graph_;
  std::map<std::string, ValueId, std::less<>> labels_;
};

// Refuses duplicate keys while parsing: nlohmann keeps the last silently,
// and a strict reader must not pick one of two meanings.
class DuplicateKeyCheck {
 public:
  bool operator()(int depth, Json::parse_event_t event, Json& parsed) {
    (void)depth;
    switch (event) {
      case Json::parse_event_t::object_start:
        keys_.emplace_back();
        break;
      case Json::parse_event_t::object_end:
        if (!keys_.empty()) keys_.pop_back();
        break;
      case Json::parse_event_t::key:
        if (!keys_.empty() && !keys_.back().insert(parsed.get<std::string>()).second) {
          throw GraphFormatError(
              fmt::format("duplicate key \"{}\" in an object", parsed.get<std::string>()));
        }
        break;
      default:
        break;
    }
    return true;
  }

 private:
  std::vector<std::set<std::string>> keys_;
};

// ---- Writing --------------------------------------------------------------------------

std::string label(ValueId id) { return format_value(id); }

Json labels(std::span<const ValueId> ids) {
  Json list = Json::array();
  for (const ValueId id : ids) list.push_back(label(id));
  return list;
}

Json operations_json(const Graph& graph, const Block& block);

Json operation_json(const Graph& graph, OpId id) {
  const Operation& op = graph.operation(id);
  Json out = Json::object();
  out["op"] = std::string(op_kind_name(op.kind));
  if (op.kind != OpKind::kRepeat && op.kind != OpKind::kHostInput &&
      op.kind != OpKind::kParameter) {
    out["inputs"] = labels(op.inputs);
  }
  if (op.kind != OpKind::kRepeat && op.results.size() == 1) out["result"] = label(op.results[0]);
  std::visit(
      [&](const auto& attributes) {
        using T = std::decay_t<decltype(attributes)>;
        if constexpr (std::is_same_v<T, BindingAttributes>) {
          out["name"] = attributes.name;
          if (op.kind != OpKind::kHostOutput) {
            out["dtype"] = std::string(schema::dtype_name(attributes.type.dtype()));
            if (attributes.type.dtype() == DType::kF8F143)
              out["scale"] = attributes.type.element.scale;
            out["shape"] = attributes.type.shape;
          }
        } else if constexpr (std::is_same_v<T, SliceAttributes>) {
          out["begin"] = attributes.begin;
          out["end"] = attributes.end;
        } else if constexpr (std::is_same_v<T, ConcatAttributes>) {
          out["axis"] = attributes.axis;
        } else if constexpr (std::is_same_v<T, ShapeAttributes>) {
          out["shape"] = attributes.shape;
        } else if constexpr (std::is_same_v<T, TransposeAttributes>) {
          out["permutation"] = attributes.permutation;
        } else if constexpr (std::is_same_v<T, ReduceAttributes>) {
          out["axes"] = attributes.axes;
          if (attributes.keep_dims) out["keep_dims"] = true;
        } else if constexpr (std::is_same_v<T, GeluAttributes>) {
          out["approximation"] = std::string(gelu_approximation_name(attributes.approximation));
        } else if constexpr (std::is_same_v<T, LayerNormAttributes>) {
          out["epsilon"] = attributes.epsilon;
        } else if constexpr (std::is_same_v<T, SoftmaxAttributes>) {
          out["axis"] = attributes.axis;
        } else if constexpr (std::is_same_v<T, AttentionAttributes>) {
          out["scale"] = attributes.scale;
        } else if constexpr (std::is_same_v<T, ConvertAttributes>) {
          out["dtype"] = std::string(schema::dtype_name(attributes.to.dtype));
          if (attributes.to.dtype == DType::kF8F143) out["scale"] = attributes.to.scale;
        } else if constexpr (std::is_same_v<T, BlockScaleAttributes>) {
          if (attributes.panels != 0) {
            out["panels"] = attributes.panels;
            out["matrix"] = attributes.matrix;
          }
        } else if constexpr (std::is_same_v<T, RepeatAttributes>) {
          const std::span<const ValueId> inputs(op.inputs);
          out["count"] = attributes.count;
          out["carried"] = labels(inputs.first(attributes.carried));
          if (attributes.sequence > 0) {
            out["sequence"] = labels(inputs.subspan(attributes.carried, attributes.sequence));
          }
          out["invariant"] = labels(inputs.subspan(attributes.carried + attributes.sequence));
          out["results"] = labels(op.results);
          const Block& body = graph.block(attributes.body);
          out["body"] = Json{{"arguments", labels(body.arguments)},
                             {"operations", operations_json(graph, body)},
                             {"yield", labels(body.yields)}};
        }
      },
      op.attributes);
  return out;
}

Json operations_json(const Graph& graph, const Block& block) {
  Json list = Json::array();
  for (const OpId id : block.operations) list.push_back(operation_json(graph, id));
  return list;
}

bool is_scalar(const Json& value) { return !value.is_object() && !value.is_array(); }

// nlohmann's dump(2) would give every shape entry its own line; arrays of
// scalars stay on one line here. Keys are already sorted (Json is std::map based).
void dump(const Json& value, std::size_t indent, std::string& out) {
  const std::string inner(indent + 2, ' ');
  if (value.is_object() && !value.empty()) {
    out += "{\n";
    std::size_t i = 0;
    for (const auto& [key, member] : value.items()) {
      out += inner + Json(key).dump() + ": ";
      dump(member, indent + 2, out);
      out += ++i < value.size() ? ",\n" : "\n";
    }
    out += std::string(indent, ' ') + "}";
  } else if (value.is_array() && !value.empty() &&
             !std::all_of(value.begin(), value.end(), is_scalar)) {
    out += "[\n";
    for (std::size_t i = 0; i < value.size(); ++i) {
      out += inner;
      dump(value[i], indent + 2, out);
      out += i + 1 < value.size() ? ",\n" : "\n";
    }
    out += std::string(indent, ' ') + "]";
  } else if (value.is_array()) {
    out += "[";
    for (std::size_t i = 0; i < value.size(); ++i) out += (i ? ", " : "") + value[i].dump();
    out += "]";
  } else {
    out += value.dump();
  }
}

}  // namespace

Graph read_graph_json(std::string_view text) {
  Json document;
  try {
    document = Json::parse(text.begin(), text.end(), DuplicateKeyCheck{});
  } catch (const Json::parse_error& error) {
    throw GraphFormatError(fmt::format("not valid JSON: byte {}: {}", error.byte, error.what()));
  } catch (const Json::out_of_range& error) {
    // A number too large for a double ("1e999"): nlohmann reports it apart
    // from syntax errors, and it must not escape as a foreign exception.
    throw GraphFormatError(fmt::format("not valid JSON: {}", error.what()));
  }
  return Reader().read(document);
}

Graph read_graph_json_file(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw IoError(fmt::format("cannot open {}", path.string()));
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) throw IoError(fmt::format("cannot read {}", path.string()));
  return with_context(path.string(), [&] { return read_graph_json(text.str()); });
}

std::string write_graph_json(const Graph& graph) {
  verify(graph);
  const Json document{{"format", std::string(kGraphFormatName)},
                      {"version", kGraphFormatVersion},
                      {"operations", operations_json(graph, graph.top())}};
  std::string out;
  dump(document, 0, out);
  out += '\n';
  return out;
}

}  // namespace tessera::compiler
