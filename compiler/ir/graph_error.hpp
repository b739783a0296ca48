#pragma once
// The error a graph builder or the verifier throws when a graph is wrong: an
// operation whose operands do not fit it, a name used twice, a value used
// outside the region that defines it. The message names the operation and
// its values ("op 7 (add %3, %5): shapes [4, 8] and [3] do not broadcast"),
// never just "invalid graph" (review finding #8: caller errors are typed
// errors, not panics).

#include "support/error.hpp"

namespace tessera::compiler {

class GraphError : public Error {
 public:
  using Error::Error;
};

}  // namespace tessera::compiler
