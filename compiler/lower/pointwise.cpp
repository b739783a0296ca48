// The lowering of mul, gelu and convert (operations.hpp).
#include <fmt/format.h>

#include "compiler/lower/lower.hpp"
#include "compiler/lower/operations.hpp"

namespace tessera::compiler::lower {

void lower_pointwise(LoweringContext&, OpId, const std::string& described) {
  throw LoweringError(fmt::format("{}: not lowered yet", described));
}

}  // namespace tessera::compiler::lower
