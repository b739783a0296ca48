#include "conformance/graph_cases.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <ostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/compile.hpp"
#include "runtime/session.hpp"
#include "schema/writer.hpp"
#include "support/error.hpp"

namespace tessera::conformance {
namespace {

using compiler::DType;
using compiler::Graph;
using compiler::OpKind;
using compiler::ValueId;

// x with its rows rotated up by `shift`: row r of the result is row
// (r + shift) mod rows of x. Two slices and a concat, each materialised in the
// default layout, so with one row per tile every moved row is a transfer
// between two tiles.
ValueId rotate_rows(Graph& g, ValueId x, std::uint32_t shift) {
  const std::vector<std::uint32_t> end(g.type(x).shape.begin(), g.type(x).shape.end());
  std::vector<std::uint32_t> split = end;
  std::vector<std::uint32_t> start(end.size(), 0);
  split[0] = shift;
  start[0] = shift;
  const ValueId tail = g.slice(x, start, end);
  const ValueId head = g.slice(x, std::vector<std::uint32_t>(end.size(), 0), split);
  return g.concat({tail, head}, 0);
}

// The two rows of f32[2, words] swap tiles: row 1 goes L1 → L0 (the slice),
// then row 0 goes L0 → L1 (the concat), `words` words each.
GraphCase point_to_point(std::uint32_t words) {
  return GraphCase{
      fmt::format("PointToPoint{}Words", words),
      fmt::format("f32[2, {0}] rows swapped: {0} words L1 → L0, then {0} words L0 → L1", words),
      2,
      [words] {
        Graph g;
        const ValueId x = g.host_input("x", DType::kF32, {2, words});
        g.host_output("y", rotate_rows(g, x, 1));
        return g;
      },
      GraphInputs::kAnyBits,
      words};
}

// f16 rows of an odd number of elements: blocks of two rows (whole words),
// so the swap moves 2-row blocks of `columns` words between L0 and L1.
GraphCase point_to_point_f16(std::uint32_t columns) {
  return GraphCase{
      fmt::format("PointToPointF16Rows{}", columns),
      fmt::format("f16[4, {0}] (2-row blocks of {0} words) swapped between L0 and L1", columns),
      2,
      [columns] {
        Graph g;
        const ValueId x = g.host_input("x", DType::kF16, {4, columns});
        g.host_output("y", rotate_rows(g, x, 2));
        return g;
      },
      GraphInputs::kAnyBits,
      100 + columns};
}

// broadcast_to f32[1, words] → [receivers + 1, words]: L0 keeps row 0 and
// sends the same words to L1 … L<receivers> in one multicast.
GraphCase multicast(std::uint32_t receivers, std::uint32_t words) {
  return GraphCase{
      fmt::format("Multicast1To{}Tiles{}Words", receivers, words),
      fmt::format("broadcast_to f32[1, {0}] → [{1}, {0}]: {0} words L0 → L1…L{2} at once", words,
                  receivers + 1, receivers),
      receivers + 1,
      [receivers, words] {
        Graph g;
        const ValueId x = g.host_input("x", DType::kF32, {1, words});
        g.host_output("y", g.broadcast_to(x, {receivers + 1, words}));
        return g;
      },
      GraphInputs::kAnyBits,
      200 + receivers};
}

// Three successive rotations of f32[3, words] by one row: every row goes
// round L0, L1, L2, each hop sending on what the previous op received
// (a relay; RAW orders across phases). Every hop is an output.
GraphCase relay_chain(std::uint32_t words) {
  return GraphCase{fmt::format("RelayChain3Tiles{}Words", words),
                   fmt::format("f32[3, {0}] rotated by one row three times: each row relayed "
                               "A → B → C → A, {0} words per hop",
                               words),
                   3,
                   [words] {
                     Graph g;
                     ValueId h = g.host_input("x", DType::kF32, {3, words});
                     for (int hop = 1; hop <= 3; ++hop) {
                       h = rotate_rows(g, h, 1);
                       g.host_output(fmt::format("hop{}", hop), h);
                     }
                     return g;
                   },
                   GraphInputs::kAnyBits,
                   300 + words};
}

// f32[1472, 1024] rotated by 737 rows: every tile sends its 4 KiB row to
// another tile (the simulator's and the scheduler's all-tile permutation).
GraphCase all_tile_permutation() {
  return GraphCase{
      "AllTilePermutation1472Tiles",
      "f32[1472, 1024] rows rotated by 737: every tile sends 4 KiB to another, 1472 tiles",
      1472,
      [] {
        Graph g;
        const ValueId x = g.host_input("x", DType::kF32, {1472, 1024});
        g.host_output("y", rotate_rows(g, x, 737));
        return g;
      },
      GraphInputs::kAnyBits,
      1472};
}

// dtype[64, columns] summed over axis 0 by a two-level tree: reshape to
// [8, 8, columns] (64 tiles' rows gathered on 8), sum each group of 8, then
// sum the 8 group sums (gathered on the result's tiles). Both levels are
// outputs; the sums' rounding depends on their order.
GraphCase tree_reduction(DType dtype, std::uint32_t columns) {
  const std::string type_name(schema::dtype_name(dtype));
  std::string upper = type_name;
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return GraphCase{
      fmt::format("TreeReduction{}64x{}", upper, columns),
      fmt::format("{0}[64, {1}] summed over axis 0 in two levels: reshape [8, 8, {1}], "
                  "64 tiles → 8 group sums → the total",
                  type_name, columns),
      64,
      [dtype, columns] {
        Graph g;
        const ValueId x = g.host_input("x", dtype, {64, columns});
        const ValueId groups = g.reduce_sum(g.reshape(x, {8, 8, columns}), {1});
        g.host_output("groups", groups);
        g.host_output("total", g.reduce_sum(groups, {0}));
        return g;
      },
      GraphInputs::kFiniteValues,
      400 + columns};
}

std::vector<GraphCase> make_cases() {
  std::vector<GraphCase> cases;
  // The sizes of tests/sim/exchange_test.cpp, tests/sim/exchange_latency_test.cpp
  // and tests/compiler/exchange_scheduler_test.cpp (5000: cut into two
  // messages of at most 4148 words), plus 2, 15 and 17 around 16.
  for (const std::uint32_t words :
       {1u, 2u, 15u, 16u, 17u, 52u, 64u, 65u, 100u, 512u, 1024u, 4148u, 5000u}) {
    cases.push_back(point_to_point(words));
  }
  cases.push_back(point_to_point_f16(33));
  cases.push_back(multicast(4, 1));
  cases.push_back(multicast(4, 1024));
  cases.push_back(multicast(64, 256));
  cases.push_back(relay_chain(1024));
  cases.push_back(all_tile_permutation());
  cases.push_back(tree_reduction(DType::kF32, 256));
  cases.push_back(tree_reduction(DType::kF16, 256));
  return cases;
}

// splitmix64: a fixed, platform-independent stream.
struct Stream {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
};

// A finite value of mixed sign and magnitude: sign, exponent within ±`spread`
// of 1.0, random significand — so partial sums round differently in a
// different order.
std::uint32_t finite_f32_bits(Stream& s) {
  const std::uint64_t r = s.next();
  const std::uint32_t sign = static_cast<std::uint32_t>(r & 1) << 31;
  const auto exponent = static_cast<std::uint32_t>(127 - 8 + static_cast<int>((r >> 1) % 17));
  const auto significand = static_cast<std::uint32_t>((r >> 8) & 0x7FFFFF);
  return sign | exponent << 23 | significand;
}

std::uint16_t finite_f16_bits(Stream& s) {
  const std::uint64_t r = s.next();
  const auto sign = static_cast<std::uint16_t>((r & 1) << 15);
  // Exponent field 11 … 19 (2^-4 … 2^4): 64 of them sum far below f16's max.
  const auto exponent = static_cast<std::uint16_t>(11 + (r >> 1) % 9);
  const auto significand = static_cast<std::uint16_t>((r >> 8) & 0x3FF);
  return static_cast<std::uint16_t>(sign | exponent << 10 | significand);
}

// kModelValues: |x| < 2, exponent 2^-6 … 2^0.
std::uint32_t model_f32_bits(Stream& s) {
  const std::uint64_t r = s.next();
  const std::uint32_t sign = static_cast<std::uint32_t>(r & 1) << 31;
  const auto exponent = static_cast<std::uint32_t>(127 - 6 + static_cast<int>((r >> 1) % 7));
  return sign | exponent << 23 | static_cast<std::uint32_t>((r >> 8) & 0x7FFFFF);
}

std::uint16_t model_f16_bits(Stream& s) {
  const std::uint64_t r = s.next();
  const auto sign = static_cast<std::uint16_t>((r & 1) << 15);
  const auto exponent = static_cast<std::uint16_t>(15 - 6 + (r >> 1) % 7);
  return static_cast<std::uint16_t>(sign | exponent << 10 | ((r >> 8) & 0x3FF));
}

std::vector<std::uint8_t> model_bytes(const compiler::TensorType& type, Stream& stream) {
  std::vector<std::uint8_t> bytes(compiler::byte_size(type));
  switch (type.dtype()) {
    case DType::kF32:
      for (std::size_t i = 0; i + 4 <= bytes.size(); i += 4) {
        const std::uint32_t bits = model_f32_bits(stream);
        std::memcpy(bytes.data() + i, &bits, 4);
      }
      break;
    case DType::kF16:
      for (std::size_t i = 0; i + 2 <= bytes.size(); i += 2) {
        const std::uint16_t bits = model_f16_bits(stream);
        std::memcpy(bytes.data() + i, &bits, 2);
      }
      break;
    case DType::kI32:
      for (std::size_t i = 0; i + 4 <= bytes.size(); i += 4) {
        const auto scale = static_cast<std::int32_t>(-8 + static_cast<int>(stream.next() % 5));
        std::memcpy(bytes.data() + i, &scale, 4);
      }
      break;
    default:  // u8 codes (and any other byte type): any byte but the F143 NaN
      for (auto& b : bytes) {
        b = static_cast<std::uint8_t>(stream.next());
        if (b == 0x80) b = 0;
      }
      break;
  }
  return bytes;
}

std::vector<std::uint8_t> binding_bytes(const compiler::TensorType& type, GraphInputs inputs,
                                        Stream& stream) {
  if (inputs == GraphInputs::kModelValues) return model_bytes(type, stream);
  std::vector<std::uint8_t> bytes(compiler::byte_size(type));
  if (inputs == GraphInputs::kAnyBits ||
      (type.dtype() != DType::kF32 && type.dtype() != DType::kF16)) {
    for (std::size_t i = 0; i < bytes.size(); i += 8) {
      const std::uint64_t word = stream.next();
      std::memcpy(bytes.data() + i, &word, std::min<std::size_t>(8, bytes.size() - i));
    }
    return bytes;
  }
  if (type.dtype() == DType::kF32) {
    for (std::size_t i = 0; i + 4 <= bytes.size(); i += 4) {
      const std::uint32_t bits = finite_f32_bits(stream);
      std::memcpy(bytes.data() + i, &bits, 4);  // the host is little-endian (support/)
    }
  } else {
    for (std::size_t i = 0; i + 2 <= bytes.size(); i += 2) {
      const std::uint16_t bits = finite_f16_bits(stream);
      std::memcpy(bytes.data() + i, &bits, 2);
    }
  }
  return bytes;
}

std::string binding_name(const Graph& graph, compiler::OpId op) {
  return std::get<compiler::BindingAttributes>(graph.operation(op).attributes).name;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

const std::vector<GraphCase>& graph_cases() {
  static const std::vector<GraphCase> cases = make_cases();
  return cases;
}

const GraphCase& graph_case(const std::string& name) {
  for (const auto& c : graph_cases()) {
    if (c.name == name) return c;
  }
  throw UsageError(fmt::format("no conformance graph case named '{}'", name));
}

void PrintTo(const GraphCase& graph_case, std::ostream* os) {
  *os << graph_case.name << " (" << graph_case.tiles << " tiles)";
}

TensorBytes graph_case_bindings(const Graph& graph, GraphInputs inputs, std::uint64_t seed) {
  TensorBytes bindings;
  Stream stream{seed};
  for (const OpKind kind : {OpKind::kParameter, OpKind::kHostInput}) {
    for (const compiler::OpId op : graph.top_level(kind)) {
      const auto& type = graph.type(graph.operation(op).results.at(0));
      bindings.emplace(binding_name(graph, op), binding_bytes(type, inputs, stream));
    }
  }
  return bindings;
}

std::string first_difference(const std::string& binding, const compiler::TensorType& type,
                             const std::vector<std::uint8_t>& expected,
                             const std::vector<std::uint8_t>& actual) {
  if (expected.size() != actual.size()) {
    return fmt::format("{}: expected {} bytes, got {}", binding, expected.size(), actual.size());
  }
  const std::size_t size = schema::dtype_size(type.dtype());
  const auto mismatch = std::mismatch(expected.begin(), expected.end(), actual.begin());
  if (mismatch.first == expected.end()) return {};
  const std::size_t element = static_cast<std::size_t>(mismatch.first - expected.begin()) / size;
  // The element's index, last axis fastest.
  std::vector<std::uint64_t> index(type.shape.size());
  std::uint64_t rest = element;
  for (std::size_t axis = type.shape.size(); axis-- > 0;) {
    index[axis] = rest % type.shape[axis];
    rest /= type.shape[axis];
  }
  auto hex = [&](const std::vector<std::uint8_t>& bytes) {
    std::uint64_t value = 0;
    for (std::size_t b = size; b-- > 0;) value = value << 8 | bytes[element * size + b];
    return fmt::format("{:#0{}x}", value, 2 + 2 * size);
  };
  std::size_t differing = 0;
  for (std::size_t e = 0; e < expected.size() / size; ++e) {
    differing += std::memcmp(expected.data() + e * size, actual.data() + e * size, size) != 0;
  }
  return fmt::format("{}[{}] (element {} of {}, {}): expected {}, got {}; {} elements differ",
                     binding, fmt::join(index, ", "), element, expected.size() / size,
                     schema::dtype_name(type.dtype()), hex(expected), hex(actual), differing);
}

TensorBytes run_package(runtime::Transport& transport, const schema::Application& application,
                        const TensorBytes& bindings) {
  TensorBytes outputs;
  runtime::Session session(transport, application);
  for (const auto& call : application.host_exchange.calls) {
    runtime::BindingViews inputs;
    for (const auto& name : call.input_bindings) inputs.emplace(name, bindings.at(name));
    for (auto& [name, bytes] : session.call(call.name, inputs)) outputs[name] = std::move(bytes);
  }
  session.finish();
  return outputs;
}

GraphCaseRun run_graph_case(runtime::Transport& transport, const GraphCase& graph_case) {
  GraphCaseRun result;
  const Graph graph = graph_case.build();
  auto start = std::chrono::steady_clock::now();
  const compiler::CompileResult compiled = compiler::compile(graph, {.tiles = graph_case.tiles});
  result.compile_seconds = seconds_since(start);
  result.compiled_bytes = schema::serialize_package(compiled.application).size();

  const TensorBytes bindings = graph_case_bindings(graph, graph_case.inputs, graph_case.seed);
  const TensorBytes expected = testing::evaluate_graph(graph, bindings);

  start = std::chrono::steady_clock::now();
  result.outputs = run_package(transport, compiled.application, bindings);
  result.run_seconds = seconds_since(start);
  for (const auto& fault : transport.faults()) ADD_FAILURE() << runtime::describe(fault);

  for (const compiler::OpId op : graph.top_level(OpKind::kHostOutput)) {
    const std::string name = binding_name(graph, op);
    const auto found = result.outputs.find(name);
    if (found == result.outputs.end()) {
      ADD_FAILURE() << graph_case.name << ": the device returned no output '" << name << "'";
      continue;
    }
    const std::string difference = first_difference(
        name, graph.type(graph.operation(op).inputs.at(0)), expected.at(name), found->second);
    EXPECT_TRUE(difference.empty()) << graph_case.name << " (" << graph_case.tiles << " tiles) on "
                                    << transport.description() << ": " << difference;
  }
  EXPECT_EQ(result.outputs.size(), expected.size()) << graph_case.name;
  return result;
}

std::string expect_graph_case_refused(runtime::Transport& transport, const GraphCase& graph_case) {
  const Graph graph = graph_case.build();
  const compiler::CompileResult compiled = compiler::compile(graph, {.tiles = graph_case.tiles});
  EXPECT_FALSE(compiled.application.hardware_loadable)
      << graph_case.name << ": compiled packages are hardware-loadable now; run the case "
      << "with run_graph_case instead";
  try {
    runtime::Session session(transport, compiled.application);
    ADD_FAILURE() << graph_case.name << ": " << transport.description()
                  << " accepted a package that is not hardware-loadable";
    return {};
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("not hardware-loadable"), std::string::npos) << message;
    EXPECT_NE(message.find("emulated"), std::string::npos) << message;
    return message;
  }
}

}  // namespace tessera::conformance
