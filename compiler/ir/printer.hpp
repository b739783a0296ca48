#pragma once
// The graph as text, for `tessera compile --report`, error reports and test
// failures. The form is stable (the same graph always prints the same text)
// but is not a file format: the JSON form (graph_json.hpp) is the one to read.
//
//   graph {
//     %0 = host_input "x" : f32[4, 8]  // op 0
//     %1 = parameter "w" : f32[8]  // op 1
//     %2 = add %0, %1 : f32[4, 8]  // op 2
//     %6 = repeat 12 carried %2 invariant %1 {  // op 3
//     ^(%3: f32[4, 8], %4: f32[8]):
//       %5 = add %3, %4 : f32[4, 8]  // op 4
//       yield %5
//     } : f32[4, 8]
//     host_output "y" %6  // op 5
//   }

#include <string>

#include "compiler/ir/graph.hpp"

namespace tessera::compiler {

// The whole graph. Prints malformed graphs too (ids that point nowhere print
// as such), since it is used to show what the verifier rejected.
std::string print_graph(const Graph& graph);

}  // namespace tessera::compiler
