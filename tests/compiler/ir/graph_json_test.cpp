// The JSON graph format (docs/GRAPH_FORMAT.md): a golden canonical file,
// strictness (one row per kind of defect, each with its JSON path), and the
// round-trip properties read(write(g)) == g and write(read(text)) canonical.

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "compiler/ir/graph_json.hpp"
#include "compiler/ir/printer.hpp"
#include "compiler/ir/verifier.hpp"
#include "random_graph.hpp"

namespace tessera::compiler {
namespace {

// The example of docs/GRAPH_FORMAT.md, in canonical form.
constexpr std::string_view kCanonical = R"({
  "format": "tessera.graph",
  "operations": [
    {
      "dtype": "f32",
      "name": "x",
      "op": "host_input",
      "result": "%0",
      "shape": [4, 8]
    },
    {
      "dtype": "f32",
      "name": "bias",
      "op": "parameter",
      "result": "%1",
      "shape": [8]
    },
    {
      "body": {
        "arguments": ["%2", "%3"],
        "operations": [
          {
            "inputs": ["%2", "%3"],
            "op": "add",
            "result": "%4"
          }
        ],
        "yield": ["%4"]
      },
      "carried": ["%0"],
      "count": 12,
      "invariant": ["%1"],
      "op": "repeat",
      "results": ["%5"]
    },
    {
      "axes": [0],
      "inputs": ["%5"],
      "op": "reduce_sum",
      "result": "%6"
    },
    {
      "inputs": ["%6"],
      "name": "y",
      "op": "host_output"
    }
  ],
  "version": 1
}
)";

Graph example() {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {4, 8});
  const ValueId bias = g.parameter("bias", DType::kF32, {8});
  const auto h = g.repeat(12, {x}, {bias},
                          [](Graph& b, std::span<const ValueId> c, std::span<const ValueId> i) {
                            return std::vector<ValueId>{b.add(c[0], i[0])};
                          });
  g.host_output("y", g.reduce_sum(h[0], {0}));
  return g;
}

TEST(GraphJson, WritesTheCanonicalForm) {
  EXPECT_EQ(write_graph_json(example()), kCanonical);
  EXPECT_TRUE(read_graph_json(kCanonical) == example());
}

TEST(GraphJson, ReadsAnyLabelsAndKeyOrder) {
  // Labels are the file's own names; writing renames them to %<id>.
  constexpr std::string_view text = R"({"version": 1, "format": "tessera.graph", "operations": [
    {"op": "host_input", "name": "x", "dtype": "f32", "shape": [4, 8], "result": "input"},
    {"op": "parameter", "name": "bias", "dtype": "f32", "shape": [8], "result": "b"},
    {"op": "repeat", "count": 12, "carried": ["input"], "invariant": ["b"], "results": ["h"],
     "body": {"arguments": ["acc", "bb"], "yield": ["next"],
              "operations": [{"op": "add", "inputs": ["acc", "bb"], "result": "next"}]}},
    {"op": "reduce_sum", "inputs": ["h"], "axes": [0], "keep_dims": false, "result": "s"},
    {"op": "host_output", "name": "y", "inputs": ["s"]}]})";
  const Graph g = read_graph_json(text);
  EXPECT_TRUE(g == example());
  EXPECT_EQ(write_graph_json(g), kCanonical);
}

TEST(GraphJson, EveryOperationAndF8Scale) {
  Graph g;
  const ValueId x = g.host_input("x", TensorType{{DType::kF8F143, -5}, {2, 3}});
  const ValueId a = g.parameter("a", DType::kF16, {1, 3});
  const ValueId c = g.concat({x, g.copy(x)}, 0);
  const ValueId s = g.slice(c, {1, 0}, {3, 3});
  const ValueId t = g.transpose(g.reshape(s, {3, 2}), {1, 0});
  g.host_output("t", g.broadcast_to(t, {4, 2, 3}));
  g.host_output("r", g.reduce_sum(g.add(a, a), {0, 1}, true));
  const std::string text = write_graph_json(g);
  EXPECT_NE(text.find("\"scale\": -5"), std::string::npos);
  EXPECT_NE(text.find("\"keep_dims\": true"), std::string::npos);
  EXPECT_TRUE(read_graph_json(text) == g);
}

struct Defect {
  const char* what;
  std::string text;
  const char* message;  // a substring of what()
};

// A document around `operations`.
std::string document(const std::string& operations) {
  return R"({"format": "tessera.graph", "version": 1, "operations": [)" + operations + "]}";
}

constexpr const char* kX =
    R"({"op": "host_input", "name": "x", "dtype": "f32", "shape": [4, 8], "result": "x"})";
constexpr const char* kOut = R"({"op": "host_output", "name": "y", "inputs": ["x"]})";

std::string ops(std::initializer_list<std::string> list) {
  std::string joined;
  for (const auto& op : list) joined += (joined.empty() ? "" : ", ") + op;
  return document(joined);
}

TEST(GraphJson, RejectsDefectsWithTheirPath) {
  const std::vector<Defect> rows = {
      {"not JSON", "{", "not valid JSON"},
      {"not an object", "[]", "expected an object, found an array"},
      {"missing key", R"({"version": 1, "operations": []})", "missing key \"format\""},
      {"unknown top key", R"({"format": "tessera.graph", "version": 1, "operations": [], "x": 1})",
       "x: unknown key"},
      {"duplicate key", R"({"format": "tessera.graph", "format": "tessera.graph", "version": 1,
        "operations": []})",
       "duplicate key \"format\""},
      {"wrong format", R"({"format": "onnx", "version": 1, "operations": []})",
       "format: is \"onnx\", not \"tessera.graph\""},
      {"wrong version", R"({"format": "tessera.graph", "version": 2, "operations": []})",
       "version: 2 is not a version"},
      {"version as string", R"({"format": "tessera.graph", "version": "1", "operations": []})",
       "version: expected an unsigned integer, found a string"},
      {"no outputs", ops({kX}), "the graph has no host output"},
      {"unknown op", ops({R"({"op": "conv2d"})"}),
       "operations[0].op: \"conv2d\" is not an operation"},
      {"op not an object", ops({"3"}), "operations[0]: expected an object, found an unsigned"},
      {"unknown op key",
       ops({R"({"op": "host_input", "name": "x", "dtype": "f32", "shape": [4], "result": "x",
                "layout": "tiles"})"}),
       "operations[0].layout: unknown key"},
      {"missing op key",
       ops({R"({"op": "host_input", "name": "x", "dtype": "f32", "result": "x"})"}),
       "operations[0]: missing key \"shape\""},
      {"negative extent",
       ops({R"({"op": "host_input", "name": "x", "dtype": "f32", "shape": [4, -1], "result": "x"})"}),
       "operations[0].shape[1]: expected an unsigned integer, found a negative integer"},
      {"fractional extent",
       ops({R"({"op": "host_input", "name": "x", "dtype": "f32", "shape": [1.5], "result": "x"})"}),
       "operations[0].shape[0]: expected an unsigned integer, found a non-integer number"},
      {"extent over 32 bits",
       ops({R"({"op": "host_input", "name": "x", "dtype": "f32", "shape": [4294967296],
                "result": "x"})"}),
       "operations[0].shape[0]: 4294967296 is larger than 4294967295"},
      {"huge number", ops({R"({"op": "host_input", "name": "x", "dtype": "f32",
                "shape": [100000000000000000000000], "result": "x"})"}),
       "operations[0].shape[0]: expected an unsigned integer, found a non-integer number"},
      {"shape product overflows", ops({R"({"op": "host_input", "name": "x", "dtype": "f32",
                "shape": [4294967295, 4294967295, 2], "result": "x"})"}),
       "operations[0].shape: shape [4294967295, 4294967295, 2] has more than 2^64 elements"},
      {"zero extent",
       ops({R"({"op": "host_input", "name": "x", "dtype": "f32", "shape": [0], "result": "x"})"}),
       "operations[0].shape: shape [0] has a zero extent on axis 0"},
      {"rank too high",
       ops({R"({"op": "host_input", "name": "x", "dtype": "f32", "shape": [1,1,1,1,1,1,1,1,1],
                "result": "x"})"}),
       "operations[0].shape: has 9 entries, more than 8"},
      {"unknown dtype",
       ops({R"({"op": "host_input", "name": "x", "dtype": "bf16", "shape": [1], "result": "x"})"}),
       "operations[0].dtype: \"bf16\" is not a dtype"},
      {"f8 without scale",
       ops({R"({"op": "host_input", "name": "x", "dtype": "f8f143", "shape": [1], "result": "x"})"}),
       "operations[0]: an f8f143 tensor needs its \"scale\""},
      {"f8 scale out of range",
       ops({R"({"op": "host_input", "name": "x", "dtype": "f8f143", "scale": -33, "shape": [1],
                "result": "x"})"}),
       "operations[0].scale: -33 is outside [-32, 31]"},
      {"scale on f32",
       ops({R"({"op": "host_input", "name": "x", "dtype": "f32", "scale": 0, "shape": [1],
                "result": "x"})"}),
       "operations[0].scale: only f8f143 tensors have a scale, not f32"},
      {"undefined label", ops({kX, R"({"op": "copy", "inputs": ["nope"], "result": "c"})"}),
       "operations[1].inputs[0]: \"nope\" names no value defined before this point"},
      {"use before definition", ops({R"({"op": "copy", "inputs": ["x"], "result": "c"})", kX}),
       "operations[0].inputs[0]: \"x\" names no value defined before this point"},
      {"label defined twice", ops({kX, R"({"op": "copy", "inputs": ["x"], "result": "x"})"}),
       "operations[1].result: the label \"x\" is already defined"},
      {"empty label", ops({kX, R"({"op": "copy", "inputs": ["x"], "result": ""})"}),
       "operations[1].result: a label has 1 to 256 characters"},
      {"input count", ops({kX, R"({"op": "add", "inputs": ["x"], "result": "s"})"}),
       "operations[1].inputs: add takes 2 inputs, not 1"},
      {"builder refusal",
       ops({kX, R"({"op": "parameter", "name": "v", "dtype": "f32", "shape": [3], "result": "v"})",
            R"({"op": "add", "inputs": ["x", "v"], "result": "s"})"}),
       "operations[2]: op 2 (add %0, %1): shapes [4, 8] and [3] do not broadcast"},
      {"duplicate binding name",
       ops({kX, R"({"op": "host_output", "name": "x", "inputs": ["x"]})"}),
       "operations[1]: op 1 (host_output \"x\" %0): the name \"x\" is already used"},
      {"keep_dims not a boolean",
       ops({kX, R"({"op": "reduce_sum", "inputs": ["x"], "axes": [0], "keep_dims": 1,
                    "result": "s"})"}),
       "operations[1].keep_dims: expected a boolean, found an unsigned integer"},
      {"slice bounds as strings",
       ops({kX, R"({"op": "slice", "inputs": ["x"], "begin": ["0", 0], "end": [4, 8],
                    "result": "s"})"}),
       "operations[1].begin[0]: expected an unsigned integer, found a string"},
      {"repeat result count",
       ops({kX, R"({"op": "repeat", "count": 2, "carried": ["x"], "invariant": [], "results": [],
                    "body": {"arguments": ["a"], "operations": [], "yield": ["a"]}})"}),
       "operations[1].results: names 0 results for 1 carried values"},
      {"repeat argument count",
       ops({kX, R"({"op": "repeat", "count": 2, "carried": ["x"], "invariant": [], "results": ["r"],
                    "body": {"arguments": [], "operations": [], "yield": []}})"}),
       "operations[1].body.arguments: names 0 arguments for 1 carried and 0 invariant values"},
      {"repeat body uses an outer value",
       ops({kX, R"({"op": "repeat", "count": 2, "carried": ["x"], "invariant": [], "results": ["r"],
                    "body": {"arguments": ["a"], "yield": ["s"], "operations": [
                      {"op": "add", "inputs": ["a", "x"], "result": "s"}]}})"}),
       "operations[1].body.operations[0]: op 2 (add %1, %0): %0 is defined in the top level"},
      {"repeat yields an unknown label",
       ops({kX, R"({"op": "repeat", "count": 2, "carried": ["x"], "invariant": [], "results": ["r"],
                    "body": {"arguments": ["a"], "operations": [], "yield": ["b"]}})"}),
       "operations[1].body.yield[0]: \"b\" names no value defined before this point"},
      {"repeat count zero",
       ops({kX, R"({"op": "repeat", "count": 0, "carried": ["x"], "invariant": [], "results": ["r"],
                    "body": {"arguments": ["a"], "operations": [], "yield": ["a"]}})"}),
       "operations[1]: op 1 (repeat %0): repeats at least once (count 0)"},
  };
  for (const Defect& row : rows) {
    SCOPED_TRACE(row.what);
    try {
      (void)read_graph_json(row.text);
      ADD_FAILURE() << "accepted";
    } catch (const GraphFormatError& error) {
      EXPECT_NE(std::string(error.what()).find(row.message), std::string::npos) << error.what();
    }
  }
}

// Item 18 of issue 15: a label has 1 to 256 characters — code points, not
// bytes (a label of 256 "é" is 512 bytes of UTF-8).
TEST(GraphJson, LabelLengthsAreCountedInCharacters) {
  const auto graph_with_label = [](const std::string& label) {
    return R"({"format": "tessera.graph", "version": 1, "operations": [
      {"op": "host_input", "name": "x", "dtype": "f32", "shape": [2], "result": ")" +
           label + R"("},
      {"op": "host_output", "name": "y", "inputs": [")" +
           label + R"("]}]})";
  };
  std::string two_byte, four_byte;
  for (int i = 0; i < 256; ++i) two_byte += "\xc3\xa9";           // é: 2 bytes each
  for (int i = 0; i < 256; ++i) four_byte += "\xf0\x9f\x98\x80";  // U+1F600: 4 bytes each
  EXPECT_NO_THROW((void)read_graph_json(graph_with_label(two_byte)));
  EXPECT_NO_THROW((void)read_graph_json(graph_with_label(four_byte)));
  try {
    (void)read_graph_json(graph_with_label(two_byte + "e"));
    ADD_FAILURE() << "accepted a label of 257 characters";
  } catch (const GraphFormatError& error) {
    EXPECT_NE(
        std::string(error.what()).find("operations[0].result: a label has 1 to 256 characters"),
        std::string::npos)
        << error.what();
  }
}

TEST(GraphJson, BoundsRepeatNesting) {
  std::string body = R"({"arguments": ["a0"], "operations": [], "yield": ["a0"]})";
  for (unsigned depth = 1; depth <= kMaxRepeatNesting + 1; ++depth) {
    const std::string outer = fmt::format("a{}", depth);
    body = fmt::format(
        R"({{"arguments": ["{0}"], "yield": ["r{0}"], "operations": [{{"op": "repeat",
            "count": 1, "carried": ["{0}"], "invariant": [], "results": ["r{0}"], "body": {1}}}]}})",
        outer, body);
  }
  const std::string text = ops({kX,
                                R"({"op": "repeat", "count": 1, "carried": ["x"],
      "invariant": [], "results": ["top"], "body": )" +
                                    body + "}",
                                kOut});
  try {
    (void)read_graph_json(text);
    ADD_FAILURE() << "accepted";
  } catch (const GraphFormatError& error) {
    EXPECT_NE(std::string(error.what()).find("nested more than 32 deep"), std::string::npos)
        << std::string(error.what()).substr(0, 300);
  }
}

TEST(GraphJson, SurvivesDeeplyNestedJson) {
  // Nesting the parser must walk (not a repeat the reader recurses into).
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_THROW(
      read_graph_json(R"({"format": "tessera.graph", "version": 1, "operations": )" + deep + "}"),
      GraphFormatError);
}

TEST(GraphJson, ReadsFiles) {
  const auto path = std::filesystem::temp_directory_path() / "tessera_graph_json_test.json";
  {
    std::ofstream file(path);
    file << kCanonical;
  }
  EXPECT_TRUE(read_graph_json_file(path) == example());
  std::filesystem::remove(path);
  EXPECT_THROW(read_graph_json_file(path), IoError);
}

// The example of compiler/README.md, kept compiling and true.
TEST(GraphJson, ReadmeExample) {
  Graph g;
  ValueId x = g.host_input("x", DType::kF32, {4, 8});
  ValueId w = g.parameter("w", DType::kF32, {8});
  g.parameter("q", TensorType{{DType::kF8F143, -3}, {8}});  // f8 with scale 2^-3
  auto h = g.repeat(
      27, /*carried=*/{x}, /*invariant=*/{w},
      [](Graph& body, std::span<const ValueId> carried, std::span<const ValueId> invariant) {
        ValueId next = body.add(carried[0], invariant[0]);  // NumPy broadcasting
        return std::vector<ValueId>{next};                  // one per carried value
      });
  ValueId s = g.reduce_sum(h[0], {0});  // f32[8]; keep_dims as a third argument
  g.host_output("s", s);
  g.host_output("t", g.transpose(g.slice(h[0], {0, 0}, {2, 8}), {1, 0}));
  verify(g);
  EXPECT_EQ(g.type(s).shape, Shape{8});
  EXPECT_FALSE(print_graph(g).empty());
  EXPECT_TRUE(read_graph_json(write_graph_json(g)) == g);
}

TEST(GraphJson, WritesOnlyValidGraphs) {
  Graph g = example();
  g.block_for_edit(kTopBlock).operations.pop_back();  // no host output
  EXPECT_THROW(write_graph_json(g), GraphError);
}

RC_GTEST_PROP(GraphJsonProperty, RoundTripsRandomGraphs, ()) {
  const Graph g = testing::random_graph();
  RC_ASSERT(verification_problems(g).empty());
  const std::string text = write_graph_json(g);
  const Graph back = read_graph_json(text);
  if (!(back == g)) {
    RC_FAIL("read(write(g)) != g\n" + print_graph(g) + "\n" + print_graph(back));
  }
  RC_ASSERT(write_graph_json(back) == text);
  RC_ASSERT(print_graph(back) == print_graph(g));
}

RC_GTEST_PROP(GraphJsonProperty, DamagedFilesFailCleanly, ()) {
  // Untrusted input never crashes the reader: a damaged file either still
  // reads as a valid graph or is refused with a GraphFormatError.
  std::string text = write_graph_json(testing::random_graph());
  const auto edits = *rc::gen::inRange(1, 6);
  for (int i = 0; i < edits; ++i) {
    const auto at = *rc::gen::inRange<std::size_t>(0, text.size());
    switch (*rc::gen::inRange(0, 3)) {
      case 0:
        text.erase(at, 1);
        break;
      case 1:
        text.insert(at, 1, *rc::gen::elementOf(std::string("{}[],:\"0123456789-.e%\\ ")));
        break;
      default:
        text.resize(at);
        break;
    }
    if (text.empty()) break;
  }
  try {
    const Graph g = read_graph_json(text);
    RC_ASSERT(verification_problems(g).empty());
  } catch (const GraphFormatError&) {
    RC_SUCCEED("refused");
  }
}

}  // namespace
}  // namespace tessera::compiler
