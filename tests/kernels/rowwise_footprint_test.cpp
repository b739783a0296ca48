// The footprint property (tests/kernels/footprint_check.hpp) for the
// element-wise, activation, layout, F143 and LayerNorm kernels: for random
// registers meeting each kernel's precondition, under either rounding mode,
// the model touches only inside each operand's footprint and reaches its end.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "kernels/registry.hpp"
#include "tests/kernels/call_generators.hpp"
#include "tests/kernels/footprint_check.hpp"

namespace tessera::kernels {
namespace {

void check(const testing::CallCase& c) {
  const KernelSpec* spec = KernelRegistry::standard().find(c.kernel);
  RC_ASSERT(spec != nullptr);
  RC_ASSERT(!spec->precondition(c.registers).has_value());
  const Rounding rounding = *rc::gen::element(Rounding::kNearestEven, Rounding::kStochastic);
  testing::check_footprints(*spec, c.registers, {}, false, rounding);
}

RC_GTEST_PROP(RowwiseFootprint, PointwiseKernelsTouchExactlyUpToTheirFootprints, ()) {
  check(testing::pointwise_case());
}

}  // namespace
}  // namespace tessera::kernels

namespace tessera::kernels {
namespace {

RC_GTEST_PROP(RowwiseFootprint, LayoutKernelsTouchExactlyUpToTheirFootprints, ()) {
  check(testing::layout_case());
}

}  // namespace
}  // namespace tessera::kernels

namespace tessera::kernels {
namespace {

RC_GTEST_PROP(RowwiseFootprint, F143KernelsTouchExactlyUpToTheirFootprints, ()) {
  check(testing::f143_case());
}

}  // namespace
}  // namespace tessera::kernels

namespace tessera::kernels {
namespace {

RC_GTEST_PROP(RowwiseFootprint, LayerNormKernelsTouchExactlyUpToTheirFootprints, ()) {
  check(testing::layer_norm_case());
}

}  // namespace
}  // namespace tessera::kernels

namespace tessera::kernels {
namespace {

RC_GTEST_PROP(RowwiseFootprint, RowNormalisationKernelsTouchExactlyUpToTheirFootprints, ()) {
  check(testing::row_normalisation_case());
}

}  // namespace
}  // namespace tessera::kernels
