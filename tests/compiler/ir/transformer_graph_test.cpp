// Issue 18's operations through the whole IR: the builder names the operation
// in every refusal and leaves the graph unchanged, the verifier re-checks
// stored results, the printer's golden text, the JSON golden (exactly the
// issue's spellings), strictness, and repeat's `sequence`.

#include <set>

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include "compiler/ir/graph.hpp"
#include "compiler/ir/graph_json.hpp"
#include "compiler/ir/printer.hpp"
#include "compiler/ir/verifier.hpp"
#include "random_graph.hpp"

namespace tessera::compiler {
namespace {

TensorType f16(Shape shape) { return {{DType::kF16, 0}, std::move(shape)}; }
TensorType f32(Shape shape) { return {{DType::kF32, 0}, std::move(shape)}; }

// Every new operation once, in the SigLIP encoder's vocabulary.
Graph transformer_graph() {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF16, {2, 13, 72});
  const ValueId codes = g.parameter("fc1.codes", DType::kU8, {72, 129});
  const ValueId scales = g.parameter("fc1.scales", DType::kI32, {2, 3});
  const ValueId gamma = g.parameter("ln.gamma", DType::kF16, {72});
  const ValueId beta = g.parameter("ln.beta", DType::kF16, {72});
  const ValueId normed = g.layer_norm(x, gamma, beta, 1e-6);
  const ValueId weight = g.block_scale(codes, scales);
  const ValueId hidden = g.gelu(g.matmul(normed, weight));
  g.host_output("mlp", g.convert(hidden, DType::kF32));
  const ValueId q = g.reshape(x, {1, 2, 13, 72});
  g.host_output("attention", g.attention(q, q, q, 0.125));
  g.host_output("p", g.softmax(g.mul(x, x), 2));
  g.host_output("q8", g.convert(x, ElementType{DType::kF8F143, -2}));
  return g;
}

constexpr std::string_view kTransformerText = R"(graph {
  %0 = host_input "x" : f16[2, 13, 72]  // op 0
  %1 = parameter "fc1.codes" : u8[72, 129]  // op 1
  %2 = parameter "fc1.scales" : i32[2, 3]  // op 2
  %3 = parameter "ln.gamma" : f16[72]  // op 3
  %4 = parameter "ln.beta" : f16[72]  // op 4
  %5 = layer_norm %0, %3, %4 epsilon 1e-06 : f16[2, 13, 72]  // op 5
  %6 = block_scale %1, %2 : f8f143(64x64 blocks)[72, 129]  // op 6
  %7 = matmul %5, %6 : f16[2, 13, 129]  // op 7
  %8 = gelu %7 approximation tanh : f16[2, 13, 129]  // op 8
  %9 = convert %8 : f32[2, 13, 129]  // op 9
  host_output "mlp" %9  // op 10
  %10 = reshape %0 : f16[1, 2, 13, 72]  // op 11
  %11 = attention %10, %10, %10 scale 0.125 : f16[1, 2, 13, 72]  // op 12
  host_output "attention" %11  // op 13
  %12 = mul %0, %0 : f16[2, 13, 72]  // op 14
  %13 = softmax %12 axis 2 : f16[2, 13, 72]  // op 15
  host_output "p" %13  // op 16
  %14 = convert %0 : f8f143(2^-2)[2, 13, 72]  // op 17
  host_output "q8" %14  // op 18
}
)";

TEST(TransformerGraph, BuildsVerifiesAndPrints) {
  const Graph g = transformer_graph();
  EXPECT_EQ(verification_problems(g), std::vector<std::string>{});
  EXPECT_EQ(print_graph(g), kTransformerText);
}

TEST(TransformerGraph, JsonUsesTheIssuesSpellings) {
  const Graph g = transformer_graph();
  const std::string text = write_graph_json(g);
  for (const char* expected :
       {R"("op": "matmul")", R"("op": "mul")", R"("op": "gelu")", R"("approximation": "tanh")",
        R"("op": "layer_norm")", R"("epsilon": 1e-06)", R"("op": "softmax")", R"("axis": 2)",
        R"("op": "attention")", R"("scale": 0.125)", R"("op": "convert")", R"("op": "block_scale")",
        R"("dtype": "f8f143")", R"("scale": -2)"}) {
    EXPECT_NE(text.find(expected), std::string::npos) << expected << "\n" << text;
  }
  const Graph back = read_graph_json(text);
  EXPECT_TRUE(back == g);
  EXPECT_EQ(write_graph_json(back), text);
}

TEST(TransformerGraph, ReadsHandWrittenJson) {
  // Any JSON number for epsilon and scale; labels of the author's choosing.
  constexpr std::string_view text = R"({"format": "tessera.graph", "version": 1, "operations": [
    {"op": "host_input", "name": "q", "dtype": "f32", "shape": [1, 2, 13, 72], "result": "q"},
    {"op": "host_input", "name": "kv", "dtype": "f32", "shape": [1, 2, 129, 72], "result": "kv"},
    {"op": "attention", "inputs": ["q", "kv", "kv"], "scale": 1, "result": "a"},
    {"op": "softmax", "inputs": ["a"], "axis": 3, "result": "s"},
    {"op": "parameter", "name": "g", "dtype": "f32", "shape": [72], "result": "g"},
    {"op": "layer_norm", "inputs": ["s", "g", "g"], "epsilon": 0.5, "result": "n"},
    {"op": "convert", "inputs": ["n"], "dtype": "f8f143", "scale": 3, "result": "c"},
    {"op": "convert", "inputs": ["c"], "dtype": "f16", "result": "h"},
    {"op": "host_output", "name": "y", "inputs": ["h"]}]})";
  const Graph g = read_graph_json(text);
  EXPECT_EQ(g.type(ValueId{7}), f16({1, 2, 13, 72}));
  const auto& attention = std::get<AttentionAttributes>(g.operation(OpId{2}).attributes);
  EXPECT_EQ(attention.scale, 1.0);
  EXPECT_TRUE(read_graph_json(write_graph_json(g)) == g);
}

// Codes packed by the host in weight panels (block_scale panels): the codes
// are [⌈N/16⌉, ⌈K/m⌉, 16, m], the result the [K, N] the matrix names.
TEST(TransformerGraph, BlockScaleOfPanelCodes) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF16, {13, 72});
  const ValueId codes = g.parameter("codes", DType::kU8, {9, 5, 16, 16});
  const ValueId scales = g.parameter("scales", DType::kI32, {2, 3});
  const ValueId weight = g.block_scale_panels(codes, scales, 16, {72, 129});
  EXPECT_EQ(g.type(weight), (TensorType{kBlockScaledF8, {72, 129}}));
  g.host_output("y", g.matmul(x, weight));
  EXPECT_EQ(verification_problems(g), std::vector<std::string>{});
  EXPECT_NE(print_graph(g).find("block_scale %1, %2 panels 16 matrix [72, 129] : f8f143(64x64 blocks)[72, 129]"),
            std::string::npos)
      << print_graph(g);
  const std::string text = write_graph_json(g);
  EXPECT_NE(text.find(R"("panels": 16)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("matrix": [72, 129])"), std::string::npos) << text;
  const Graph back = read_graph_json(text);
  EXPECT_TRUE(back == g);
  // 32-deep panels (the native FP8 GEMM's B32×16), with leading axes.
  Graph h;
  const ValueId c32 = h.parameter("c", DType::kU8, {3, 9, 3, 16, 32});
  const ValueId s32 = h.parameter("s", DType::kI32, {3, 2, 3});
  EXPECT_EQ(h.type(h.block_scale_panels(c32, s32, 32, {72, 129})), (TensorType{kBlockScaledF8, {3, 72, 129}}));
}

TEST(TransformerGraph, BlockScaleOfPanelCodesRefusesWhatDoesNotFit) {
  Graph g;
  const ValueId codes = g.parameter("codes", DType::kU8, {9, 5, 16, 16});
  const ValueId scales = g.parameter("scales", DType::kI32, {2, 3});
  const auto refused = [&](std::uint32_t panels, Shape matrix, std::string_view message) {
    try {
      g.block_scale_panels(codes, scales, panels, std::move(matrix));
      ADD_FAILURE() << "accepted";
    } catch (const GraphError& error) {
      EXPECT_NE(std::string(error.what()).find(message), std::string::npos) << error.what();
    }
  };
  refused(8, {72, 129}, "panels of 8 inner values: the weight panels hold 16 or 32");
  refused(16, {72, 128}, "a [72, 128] matrix in panels of 16 × 16 is codes [8, 5, 16, 16], not [9, 5, 16, 16]");
  refused(16, {72}, "matrix [72] is not a [K, N] of positive extents");
  refused(32, {72, 129}, "is codes [9, 3, 16, 32]");
  // The JSON keys go together.
  EXPECT_THROW(read_graph_json(R"({"format": "tessera.graph", "version": 1, "operations": [
    {"op": "parameter", "name": "c", "dtype": "u8", "shape": [9, 5, 16, 16], "result": "c"},
    {"op": "parameter", "name": "s", "dtype": "i32", "shape": [2, 3], "result": "s"},
    {"op": "block_scale", "inputs": ["c", "s"], "panels": 16, "result": "w"},
    {"op": "host_output", "name": "y", "inputs": ["s"]}]})"),
               GraphFormatError);
}

struct Defect {
  const char* what;
  std::string operations;
  const char* message;
};

std::string document(const std::string& operations) {
  return R"({"format": "tessera.graph", "version": 1, "operations": [
    {"op": "host_input", "name": "x", "dtype": "f32", "shape": [4, 8], "result": "x"},)" +
         operations + R"(, {"op": "host_output", "name": "out", "inputs": ["x"]}]})";
}

TEST(TransformerGraph, JsonDefectsNameTheirPath) {
  const std::vector<Defect> rows = {
      {"matmul one input", R"({"op": "matmul", "inputs": ["x"], "result": "y"})",
       "operations[1].inputs: matmul takes 2 inputs, not 1"},
      {"matmul 1-D",
       R"({"op": "reshape", "inputs": ["x"], "shape": [32], "result": "v"},
          {"op": "matmul", "inputs": ["x", "v"], "result": "y"})",
       "operations[2]: op 2 (matmul %0, %1): operand b is f32[32]: matmul takes operands of rank "
       "≥ 2"},
      {"gelu without approximation", R"({"op": "gelu", "inputs": ["x"], "result": "y"})",
       "operations[1]: missing key \"approximation\""},
      {"gelu erf", R"({"op": "gelu", "inputs": ["x"], "approximation": "erf", "result": "y"})",
       "operations[1].approximation: \"erf\" is not an approximation gelu has (only \"tanh\")"},
      {"epsilon as a string",
       R"({"op": "layer_norm", "inputs": ["x", "x", "x"], "epsilon": "1e-6", "result": "y"})",
       "operations[1].epsilon: expected a number, found a string"},
      {"epsilon zero",
       R"({"op": "reshape", "inputs": ["x"], "shape": [32], "result": "v"},
          {"op": "slice", "inputs": ["v"], "begin": [0], "end": [8], "result": "g"},
          {"op": "layer_norm", "inputs": ["x", "g", "g"], "epsilon": 0, "result": "y"})",
       "operations[3]: op 3 (layer_norm %0, %2, %2): epsilon must be a finite number > 0, not 0"},
      {"epsilon overflowing a double",
       R"({"op": "layer_norm", "inputs": ["x", "x", "x"], "epsilon": 1e999, "result": "y"})",
       "number overflow parsing '1e999'"},
      {"softmax axis 0", R"({"op": "softmax", "inputs": ["x"], "axis": 0, "result": "y"})",
       "operations[1]: op 1 (softmax %0): softmax runs along the last axis only (axis 1 of f32[4, "
       "8]), not axis 0"},
      {"softmax negative axis", R"({"op": "softmax", "inputs": ["x"], "axis": -1, "result": "y"})",
       "operations[1].axis: expected an unsigned integer, found a negative integer"},
      {"attention without scale",
       R"({"op": "attention", "inputs": ["x", "x", "x"], "result": "y"})",
       "operations[1]: missing key \"scale\""},
      {"attention rank 2",
       R"({"op": "attention", "inputs": ["x", "x", "x"], "scale": 0.5, "result": "y"})",
       "op 1 (attention %0, %0, %0): q is f32[4, 8]: q is [B, H, S, D]"},
      {"convert without dtype", R"({"op": "convert", "inputs": ["x"], "result": "y"})",
       "operations[1]: missing key \"dtype\""},
      {"convert to f8 without scale",
       R"({"op": "convert", "inputs": ["x"], "dtype": "f8f143", "result": "y"})",
       "operations[1]: an f8f143 tensor needs its \"scale\""},
      {"convert scale on f16",
       R"({"op": "convert", "inputs": ["x"], "dtype": "f16", "scale": 1, "result": "y"})",
       "operations[1].scale: only f8f143 tensors have a scale, not f16"},
      {"convert identity", R"({"op": "convert", "inputs": ["x"], "dtype": "f32", "result": "y"})",
       "op 1 (convert %0): converts f32 ↔ f16, f16/f32 → f8f143(2^s) and f8f143 → f16/f32, not "
       "f32 → f32"},
      {"block_scale of f32", R"({"op": "block_scale", "inputs": ["x", "x"], "result": "y"})",
       "op 1 (block_scale %0, %0): codes are u8 [..., K, N]"},
      {"unknown key on matmul",
       R"({"op": "matmul", "inputs": ["x", "x"], "result": "y", "transpose_b": true})",
       "operations[1].transpose_b: unknown key"},
      {"sequence not a list",
       R"({"op": "repeat", "count": 4, "carried": ["x"], "sequence": "x", "invariant": [],
           "results": ["r"], "body": {"arguments": ["a", "s"], "operations": [], "yield": ["a"]}})",
       "operations[1].sequence: expected an array, found a string"},
      {"sequence of the wrong length",
       R"({"op": "repeat", "count": 3, "carried": ["x"], "sequence": ["x"], "invariant": [],
           "results": ["r"], "body": {"arguments": ["a", "s"], "operations": [], "yield": ["a"]}})",
       "operations[1]: op 1 (repeat %0, %0): sequence value 0 is f32[4, 8], but a sequence has one "
       "entry per iteration along axis 0 (3 of them)"},
      {"sequence arguments counted",
       R"({"op": "repeat", "count": 4, "carried": ["x"], "sequence": ["x"], "invariant": ["x"],
           "results": ["r"], "body": {"arguments": ["a", "s"], "operations": [], "yield": ["a"]}})",
       "operations[1].body.arguments: names 2 arguments for 1 carried, 1 sequence and 1 invariant "
       "values"},
  };
  for (const Defect& row : rows) {
    SCOPED_TRACE(row.what);
    try {
      (void)read_graph_json(document(row.operations));
      ADD_FAILURE() << "accepted";
    } catch (const GraphFormatError& error) {
      EXPECT_NE(std::string(error.what()).find(row.message), std::string::npos) << error.what();
    }
  }
}

// Expects `call` to throw a GraphError whose message starts by naming
// `op` and contains `reason`, and to leave the graph unchanged.
template <typename F>
void expect_refused(Graph& graph, F&& call, const std::string& op, const std::string& reason) {
  const Graph before = graph;
  try {
    call();
    ADD_FAILURE() << "accepted; expected: " << reason;
  } catch (const GraphError& error) {
    const std::string message = error.what();
    EXPECT_EQ(message.rfind(op + ": ", 0), 0u) << message;
    EXPECT_NE(message.find(reason), std::string::npos) << message;
  }
  EXPECT_TRUE(graph == before) << "a refused call changed the graph";
}

TEST(TransformerGraph, BuilderRefusalsNameTheOperation) {
  Graph g;
  const ValueId a = g.host_input("a", DType::kF16, {12, 13});  // %0
  const ValueId v = g.host_input("v", DType::kF16, {13});      // %1
  const ValueId w = g.host_input("w", DType::kF32, {13, 71});  // %2
  const ValueId u = g.host_input("u", DType::kU8, {13, 71});   // %3
  expect_refused(
      g, [&] { g.matmul(a, a); }, "op 4 (matmul %0, %0)", "the inner extents differ");
  expect_refused(
      g, [&] { g.matmul(a, v); }, "op 4 (matmul %0, %1)", "operand b is f16[13]");
  expect_refused(
      g, [&] { g.matmul(a, w); }, "op 4 (matmul %0, %2)", "not f16·f32");
  expect_refused(
      g, [&] { g.mul(a, w); }, "op 4 (mul %0, %2)", "not f16 and f32");
  expect_refused(
      g, [&] { g.gelu(u); }, "op 4 (gelu %3)", "applies to f32 or f16, not u8");
  expect_refused(
      g, [&] { g.layer_norm(a, v, a, 1e-6); }, "op 4 (layer_norm %0, %1, %0)",
      "beta is f16[12, 13], but x f16[12, 13] needs f16[13]");
  expect_refused(
      g, [&] { g.layer_norm(a, v, v, 0.0); }, "op 4 (layer_norm %0, %1, %1)",
      "epsilon must be a finite number > 0");
  expect_refused(
      g, [&] { g.softmax(a, 0); }, "op 4 (softmax %0)", "the last axis only");
  expect_refused(
      g, [&] { g.attention(a, a, a, 0.1); }, "op 4 (attention %0, %0, %0)", "q is f16[12, 13]");
  expect_refused(
      g, [&] { g.convert(u, DType::kF16); }, "op 4 (convert %3)", "not u8 → f16");
  expect_refused(
      g, [&] { g.block_scale(u, u); }, "op 4 (block_scale %3, %3)",
      "so the scales must be i32[1, 2], not u8[13, 71]");
  const ValueId scales = g.host_input("s", DType::kI32, {1, 2});  // %4
  const ValueId blocks = g.block_scale(u, scales);                // %5
  expect_refused(
      g,
      [&] {
        g.transpose(blocks, {1, 0});
      },
      "op 6 (transpose %5)", "a block-scaled value feeds only matmul (as b), convert and repeat");
  expect_refused(
      g, [&] { g.host_output("b", blocks); }, "op 6 (host_output \"b\" %5)", "convert it first");
  EXPECT_EQ(g.type(g.matmul(a, blocks)), f16({12, 71}));
}

TEST(TransformerGraph, VerifierRecheckStoredResults) {
  Graph g = transformer_graph();
  EXPECT_TRUE(verification_problems(g).empty());
  g.value_for_edit(ValueId{7}).type = f16({2, 13, 128});
  const auto problems = verification_problems(g);
  ASSERT_FALSE(problems.empty());
  EXPECT_EQ(problems[0],
            "op 7 (matmul %5, %6): result 0 (%7) is f16[2, 13, 128], but the operation makes "
            "f16[2, 13, 129]");
  Graph h = transformer_graph();
  std::get<LayerNormAttributes>(h.operation_for_edit(OpId{5}).attributes).epsilon = -1;
  EXPECT_EQ(verification_problems(h)[0],
            "op 5 (layer_norm %0, %3, %4): epsilon must be a finite number > 0, not -1");
}

// 27 layers' weights entering one loop body: iteration i reads entry i.
Graph sequence_graph() {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {4, 8});
  const ValueId weights = g.parameter("layers.weight", DType::kF32, {27, 8, 8});
  const ValueId bias = g.parameter("bias", DType::kF32, {8});
  const auto h =
      g.repeat(27, {x}, {weights}, {bias},
               [](Graph& body, std::span<const ValueId> carried, std::span<const ValueId> sequence,
                  std::span<const ValueId> invariant) {
                 const ValueId y = body.matmul(carried[0], sequence[0]);
                 return std::vector<ValueId>{body.add(y, invariant[0])};
               });
  g.host_output("y", h[0]);
  return g;
}

TEST(TransformerGraph, RepeatSequenceArgumentsSitBetweenCarriedAndInvariant) {
  const Graph g = sequence_graph();
  verify(g);
  const Operation& repeat = g.operation(OpId{3});
  const auto& attributes = std::get<RepeatAttributes>(repeat.attributes);
  EXPECT_EQ(attributes.carried, 1u);
  EXPECT_EQ(attributes.sequence, 1u);
  EXPECT_EQ(repeat.inputs, (std::vector<ValueId>{ValueId{0}, ValueId{1}, ValueId{2}}));
  const Block& body = g.block(attributes.body);
  ASSERT_EQ(body.arguments.size(), 3u);
  EXPECT_EQ(g.type(body.arguments[0]), f32({4, 8}));
  EXPECT_EQ(g.type(body.arguments[1]), f32({8, 8}));  // one layer's weight
  EXPECT_EQ(g.type(body.arguments[2]), f32({8}));
  EXPECT_EQ(print_graph(g), R"(graph {
  %0 = host_input "x" : f32[4, 8]  // op 0
  %1 = parameter "layers.weight" : f32[27, 8, 8]  // op 1
  %2 = parameter "bias" : f32[8]  // op 2
  %8 = repeat 27 carried %0 sequence %1 invariant %2 {  // op 3
  ^(%3: f32[4, 8], %4: f32[8, 8], %5: f32[8]):
    %6 = matmul %3, %4 : f32[4, 8]  // op 4
    %7 = add %6, %5 : f32[4, 8]  // op 5
    yield %7
  } : f32[4, 8]
  host_output "y" %8  // op 6
}
)");
}

TEST(TransformerGraph, RepeatSequenceInJson) {
  const Graph g = sequence_graph();
  const std::string text = write_graph_json(g);
  EXPECT_NE(text.find(R"("sequence": ["%1"])"), std::string::npos) << text;
  EXPECT_TRUE(read_graph_json(text) == g);
  // Without sequences the key is omitted (its default, []).
  Graph plain;
  const ValueId x = plain.host_input("x", DType::kF32, {2});
  plain.host_output("y", plain.repeat(2, {x}, {}, [](Graph&, auto carried, auto) {
    return std::vector<ValueId>{carried[0]};
  })[0]);
  EXPECT_EQ(write_graph_json(plain).find("sequence"), std::string::npos);
  // An explicit empty sequence reads as the default.
  constexpr std::string_view explicit_empty = R"({"format": "tessera.graph", "version": 1,
    "operations": [
      {"op": "host_input", "name": "x", "dtype": "f32", "shape": [2], "result": "x"},
      {"op": "repeat", "count": 2, "carried": ["x"], "sequence": [], "invariant": [],
       "results": ["r"], "body": {"arguments": ["a"], "operations": [], "yield": ["a"]}},
      {"op": "host_output", "name": "y", "inputs": ["r"]}]})";
  EXPECT_TRUE(read_graph_json(explicit_empty) == plain);
}

TEST(TransformerGraph, RepeatSequenceErrors) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {4, 8});
  const ValueId weights = g.parameter("w", DType::kF32, {26, 8, 8});
  const auto identity = [](Graph&, std::span<const ValueId> carried, std::span<const ValueId>,
                           std::span<const ValueId>) { return std::vector<ValueId>{carried[0]}; };
  expect_refused(
      g, [&] { g.repeat(27, {x}, {weights}, {}, identity); }, "op 2 (repeat %0, %1)",
      "sequence value 0 is f32[26, 8, 8], but a sequence has one entry per iteration "
      "along axis 0 (27 of them)");
  // The verifier: a body argument that is the whole sequence, not one entry.
  Graph h = sequence_graph();
  const BlockId body = std::get<RepeatAttributes>(h.operation(OpId{3}).attributes).body;
  h.value_for_edit(h.block(body).arguments[1]).type = f32({27, 8, 8});
  bool found = false;
  for (const std::string& problem : verification_problems(h)) {
    found = found || problem ==
                         "op 3 (repeat %0, %1, %2): body argument 1 (%4) is f32[27, 8, 8], "
                         "but the entries of sequence input 1 (f32[27, 8, 8]) are f32[8, 8]";
  }
  EXPECT_TRUE(found) << print_graph(h);
}

// The JSON round-trip property (graph_json_test.cpp) draws from
// testing::random_graph(); it must reach every new operation and sequences.
TEST(TransformerGraph, RandomGraphsReachEveryNewOperation) {
  std::set<OpKind> seen;
  bool sequence = false;
  const auto result = rc::check([&] {
    const Graph g = testing::random_graph();
    for (std::uint32_t i = 0; i < g.operation_count(); ++i) {
      const Operation& op = g.operation(OpId{i});
      seen.insert(op.kind);
      const auto* repeat = std::get_if<RepeatAttributes>(&op.attributes);
      sequence = sequence || (repeat != nullptr && repeat->sequence > 0);
    }
  });
  EXPECT_TRUE(result);
  for (const OpKind kind :
       {OpKind::kMatmul, OpKind::kMul, OpKind::kGelu, OpKind::kLayerNorm, OpKind::kSoftmax,
        OpKind::kAttention, OpKind::kConvert, OpKind::kBlockScale}) {
    EXPECT_TRUE(seen.contains(kind)) << op_kind_name(kind);
  }
  EXPECT_TRUE(sequence);
}

}  // namespace
}  // namespace tessera::compiler
