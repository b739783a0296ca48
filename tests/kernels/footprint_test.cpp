// The registry's footprint functions against what the host models really
// touch (ARCHITECTURE.md decision 3: two independent sources). For random
// registers that meet a kernel's precondition, every byte the model touches
// through an operand lies inside that operand's footprint, the last byte it
// touches is the footprint's last byte, and it touches nothing when the
// footprint is zero — so a footprint formula can be neither too small (an
// overrun the compiler would not see) nor too large (wasted SRAM).
//
// A model's touches are the spans it asks for (ARCHITECTURE.md decision 11).
// The element moves ask for their whole regions and note the elements their
// table names inside them; their cases serve a generated table (in-range
// indices that name both regions' last elements whenever there is a pair),
// and zero pairs touch nothing.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "kernels/registry.hpp"
#include "tests/kernels/call_generators.hpp"
#include "tests/kernels/footprint_check.hpp"

namespace tessera::kernels {
namespace {

using testing::CallCase;
using testing::check_footprints;

void check(const CallCase& c) {
  const KernelSpec* spec = KernelRegistry::standard().find(c.kernel);
  RC_ASSERT(spec != nullptr);
  RC_ASSERT(!spec->precondition(c.registers).has_value());
  check_footprints(*spec, c.registers, c.table, c.touches_nothing);
}

RC_GTEST_PROP(Footprint, ModelTouchesExactlyUpToTheFootprint, ()) { check(testing::any_case()); }

RC_GTEST_PROP(Footprint, IntegerAddAndRuntimeHelpersTouchExactlyUpToTheirFootprints, ()) {
  check(testing::integer_and_helper_case());
}

}  // namespace
}  // namespace tessera::kernels
