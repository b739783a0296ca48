// The footprint property (tests/kernels/footprint_check.hpp) for the
// element-wise, activation, layout, F143 and LayerNorm kernels: for random
// registers meeting each kernel's precondition, under either rounding mode,
// the model touches only inside each operand's footprint and reaches its end.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "kernels/f143_kernels.hpp"
#include "kernels/layer_norm.hpp"
#include "kernels/layout_kernels.hpp"
#include "kernels/pointwise_kernels.hpp"
#include "kernels/registry.hpp"
#include "tests/kernels/footprint_check.hpp"

namespace tessera::kernels {
namespace {

constexpr std::uint32_t kOut = 0x100000;
constexpr std::uint32_t kIn = 0x200000;
constexpr std::uint32_t kThird = 0x300000;
constexpr std::uint32_t kFourth = 0x400000;

rc::Gen<std::uint32_t> rows() {
  return rc::gen::weightedOneOf<std::uint32_t>(
      {{1, rc::gen::element<std::uint32_t>(0, 1, 6, 7, 11, 12, 13, 61)},
       {1, rc::gen::inRange(0u, 140u)}});
}
rc::Gen<std::uint32_t> columns() {
  return rc::gen::weightedOneOf<std::uint32_t>(
      {{1, rc::gen::element<std::uint32_t>(0, 1, 15, 16, 17, 64)},
       {1, rc::gen::inRange(0u, 200u)}});
}
rc::Gen<std::uint32_t> count() {
  return rc::gen::weightedOneOf<std::uint32_t>(
      {{1, rc::gen::element<std::uint32_t>(0, 1, 5, 6, 7, 100)}, {2, rc::gen::inRange(0u, 2500u)}});
}

struct Case {
  std::string_view kernel;
  Registers registers{};
};

Case pointwise_case() {
  Case c;
  Registers& r = c.registers;
  r[2] = kOut;
  const bool in_place = *rc::gen::arbitrary<bool>();
  switch (*rc::gen::inRange(0, 4)) {
    case 0:  // mul
      c.kernel = *rc::gen::element(kMulF32, kMulF16);
      r[3] = in_place ? kOut : kIn;
      r[4] = kThird;
      r[5] = *count();
      break;
    case 1:  // convert
      c.kernel = *rc::gen::element(kConvertF32ToF16, kConvertF16ToF32);
      r[3] = kIn;
      r[4] = *count();
      break;
    case 2:  // bias add
      c.kernel = *rc::gen::element(kAddBiasC16F16, kAddBiasC16F32);
      r[3] = in_place ? kOut : kIn;
      r[4] = kThird;
      r[5] = *rows();
      r[6] = *columns();
      break;
    default:  // GeLU
      c.kernel = *rc::gen::element(kGeluF16, kGeluF32, kGeluC16ToA16F16);
      r[3] = in_place && c.kernel != kGeluC16ToA16F16 ? kOut : kIn;
      if (c.kernel == kGeluC16ToA16F16) {
        r[4] = *rows();
        r[5] = *columns();
      } else {
        r[4] = *count();
      }
      break;
  }
  return c;
}

Case layout_case() {
  Case c;
  Registers& r = c.registers;
  r[2] = kOut;
  r[3] = kIn;
  switch (*rc::gen::inRange(0, 3)) {
    case 0:  // relayout
      c.kernel = kRelayoutC16ToA16F16;
      r[4] = *rows();
      r[5] = *columns();
      break;
    case 1: {  // reblock
      c.kernel = *rc::gen::element(kReblockA16ToA16F16, kReblockC16ToA16F16);
      r[4] = *rows();
      r[5] = *rows();
      r[8] = *rc::gen::inRange(0u, std::min(r[4], r[5]) + 1);
      r[6] = *rc::gen::inRange(0u, r[4] - r[8] + 1);
      r[7] = *rc::gen::inRange(0u, r[5] - r[8] + 1);
      r[9] = *columns();
      break;
    }
    default: {  // rearrange / unpack
      const std::size_t layout = *rc::gen::inRange<std::size_t>(0, 4);
      const bool pack = *rc::gen::arbitrary<bool>();
      const std::string_view rearranges[] = {kRearrangeLeftF16, kRearrangeTransposedRightF16,
                                             kRearrangeBlockMajorF16, kRearrangeOutputF16};
      const std::string_view unpacks[] = {kUnpackLeftF16, kUnpackTransposedRightF16,
                                          kUnpackBlockMajorF16, kUnpackOutputF16};
      c.kernel = pack ? rearranges[layout] : unpacks[layout];
      r[4] = *rows();
      r[5] = *columns();
      r[6] = r[4] + *rc::gen::inRange(0u, 20u);
      r[7] = (r[5] + 15) / 16 * 16 + 16 * *rc::gen::inRange(0u, 2u);
      r[8] = 16 * *rc::gen::inRange(1u, 5u);
      if (layout == 1) r[6] = (r[6] + 15) / 16 * 16;
      if (layout == 2) r[6] = (r[6] + r[8] - 1) / r[8] * r[8];
      break;
    }
  }
  return c;
}

Case f143_case() {
  Case c;
  Registers& r = c.registers;
  r[2] = kOut;
  r[3] = kIn;
  const auto scale = static_cast<std::uint32_t>(*rc::gen::inRange(-32, 32));
  switch (*rc::gen::inRange(0, 3)) {
    case 0:
      c.kernel = kQuantizeF16ToF143;
      r[4] = 4 * *rc::gen::inRange(0u, 700u);
      r[5] = scale;
      break;
    case 1:
      c.kernel = kExpandF143ToF16;
      r[4] = 4 * *rc::gen::inRange(0u, 1025u);
      r[5] = scale;
      break;
    default:
      c.kernel = kQuantizeA16ToA32F143;
      r[4] = *rows();
      r[5] = *columns();
      r[6] = scale;
      break;
  }
  return c;
}

Case layer_norm_case() {
  Case c;
  Registers& r = c.registers;
  r[2] = kOut;
  if (*rc::gen::arbitrary<bool>()) {
    c.kernel = kLayerNormF16;
    r[3] = *rc::gen::arbitrary<bool>() ? kOut : kIn;
    r[4] = kThird;
    r[5] = *rows();
    r[6] = *columns();
    r[7] = 1074;
  } else {
    c.kernel = kAddLayerNormF16;
    r[3] = kIn;
    r[4] = kThird;
    r[5] = kFourth;
    r[6] = *rows();
    r[7] = *columns();
    r[8] = 1074;
  }
  return c;
}

void check(const Case& c) {
  const KernelSpec* spec = KernelRegistry::standard().find(c.kernel);
  RC_ASSERT(spec != nullptr);
  RC_ASSERT(!spec->precondition(c.registers).has_value());
  const Rounding rounding = *rc::gen::element(Rounding::kNearestEven, Rounding::kStochastic);
  testing::check_footprints(*spec, c.registers, {}, false, rounding);
}

RC_GTEST_PROP(RowwiseFootprint, PointwiseKernelsTouchExactlyUpToTheirFootprints, ()) {
  check(pointwise_case());
}

}  // namespace
}  // namespace tessera::kernels

namespace tessera::kernels {
namespace {

RC_GTEST_PROP(RowwiseFootprint, LayoutKernelsTouchExactlyUpToTheirFootprints, ()) {
  check(layout_case());
}

}  // namespace
}  // namespace tessera::kernels

namespace tessera::kernels {
namespace {

RC_GTEST_PROP(RowwiseFootprint, F143KernelsTouchExactlyUpToTheirFootprints, ()) {
  check(f143_case());
}

}  // namespace
}  // namespace tessera::kernels

namespace tessera::kernels {
namespace {

RC_GTEST_PROP(RowwiseFootprint, LayerNormKernelsTouchExactlyUpToTheirFootprints, ()) {
  check(layer_norm_case());
}

}  // namespace
}  // namespace tessera::kernels
