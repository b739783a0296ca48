// The lowering of layer_norm and softmax (operations.hpp).
#include <fmt/format.h>

#include "compiler/lower/lower.hpp"
#include "compiler/lower/operations.hpp"

namespace tessera::compiler::lower {

void lower_normalisation(LoweringContext&, OpId, const std::string& described) {
  throw LoweringError(fmt::format("{}: not lowered yet", described));
}

}  // namespace tessera::compiler::lower
