#pragma once
// The JSON graph format (docs/GRAPH_FORMAT.md): what `tessera compile
// GRAPH.json` reads. It is a replay of the builder calls in graph.hpp, one
// JSON object per operation, so the C++ API stays the primary definition and
// the file can express exactly what the builder can.
//
// Reading is strict, because the file is untrusted input: an unknown or
// duplicate key, a missing key, a value of the wrong JSON type, a number out
// of range, a reference to a label not yet defined, a shape whose product
// overflows, or any operation the builder rejects is a GraphFormatError whose
// context is the JSON path ("operations[3].body.operations[1].inputs[0]").
//
// Writing is canonical: keys sorted, value labels renamed to "%<value id>",
// optional keys at their default omitted, one fixed indentation. So
// write(read(text)) is the canonical form of `text`, and read(write(g)) == g
// for every graph the builder made.

#include <filesystem>
#include <string>
#include <string_view>

#include "compiler/ir/graph.hpp"
#include "support/error.hpp"

namespace tessera::compiler {

class GraphFormatError : public InputError {
 public:
  using InputError::InputError;
};

inline constexpr std::string_view kGraphFormatName = "tessera.graph";
inline constexpr unsigned kGraphFormatVersion = 1;
// Repeats nested deeper than this are rejected (bounded recursion on untrusted input).
inline constexpr unsigned kMaxRepeatNesting = 32;

// Parses, checks and builds; the result has passed verify().
Graph read_graph_json(std::string_view text);
// The same for a file; IoError when it cannot be read, and the file name as context.
Graph read_graph_json_file(const std::filesystem::path& path);

// The canonical text (ends with a newline).
std::string write_graph_json(const Graph& graph);

}  // namespace tessera::compiler
