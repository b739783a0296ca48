#pragma once
// Re-checks a whole graph, trusting nothing the builder did: the tables are
// consistent (every value defined exactly once, every operation in exactly
// one block, every body owned by exactly one repeat); every operation's
// results have the types shape_inference.hpp gives its inputs; every use is
// defined earlier in the same block (SSA dominance in isolated regions);
// repeat bodies take arguments matching the repeat's inputs and yield values
// matching the carried ones; binding operations sit at the top level with
// unique names; and the graph has at least one host output.
//
// Passes that edit a graph through the *_for_edit accessors call this
// afterwards, and the JSON reader calls it on what it read.

#include <string>
#include <vector>

#include "compiler/ir/graph.hpp"

namespace tessera::compiler {

// Every problem found, in walk order, each naming the operation or value
// ("op 7 (add %3, %5): shapes [4, 8] and [3] do not broadcast"). Empty when
// the graph is valid.
std::vector<std::string> verification_problems(const Graph& graph);

// Throws GraphError with the first problem (and how many more there are).
void verify(const Graph& graph);

}  // namespace tessera::compiler
