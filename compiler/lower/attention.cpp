// The lowering of attention (operations.hpp).
#include <fmt/format.h>

#include "compiler/lower/lower.hpp"
#include "compiler/lower/operations.hpp"

namespace tessera::compiler::lower {

void lower_attention(LoweringContext&, OpId, const std::string& described) {
  throw LoweringError(fmt::format("{}: not lowered yet", described));
}

}  // namespace tessera::compiler::lower
