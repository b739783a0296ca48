// The GEMM device sources against the models: operands packed and placed by
// gemm_testing.hpp (A in standard memory, C in the interleaved window, the
// expanded family's weights in interleaved memory), C prefilled for the init
// variant too (both sides start from the same bytes). The models define the
// summation order (kernels/README.md "GEMM"), which the portable part
// follows, so the comparison is bit for bit.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "kernels/gemm.hpp"
#include "tests/kernels/device_harness.hpp"
#include "tests/kernels/gemm_testing.hpp"

namespace tessera::kernels::testing {
namespace {

// Element bits of a family's operand: mostly finite moderate values, with
// specials (NaN, ±Inf, subnormals, ±0, the largest finite) at `special_rate`.
std::uint32_t gemm_element(Patterns& p, unsigned bytes, bool is_output, double special_rate) {
  const bool special = p.below(1000) < static_cast<std::uint32_t>(special_rate * 1000);
  // F143: the NaN code or ±240; else magnitudes up to 2^2 (exponent fields ≤ 9).
  if (bytes == 1) {
    if (special) return p.below(2) == 0 ? 0x80u : 0x7Fu | (p.below(2) << 7);
    return (p.below(2) << 7) | (p.below(10) << 3) | p.below(8);
  }
  if (bytes == 2) return special ? p.f16() : p.f16_finite(is_output ? 8.0f : 2.0f);
  return special ? p.f32() : p.f32_finite(2.0f);
}

void gemm_case(Patterns& p, GemmFamily family, GemmVariant variant, std::uint32_t rows,
               std::uint32_t inner, std::uint32_t columns, std::int32_t scale,
               double special_rate) {
  GemmOperands call;
  call.family = family;
  call.variant = variant;
  call.rows = rows;
  call.inner = inner;
  call.columns = columns;
  call.scale = scale;
  const GemmFormat f = gemm_format(family);
  for (std::uint32_t i = 0; i < rows * inner; ++i)
    call.left.push_back(gemm_element(p, f.left_bytes, false, special_rate));
  for (std::uint32_t i = 0; i < inner * columns; ++i)
    call.weights.push_back(gemm_element(p, f.weight_bytes, false, special_rate));
  if (variant == GemmVariant::kAccumulate) {
    for (std::uint32_t i = 0; i < rows * columns; ++i)
      call.partials.push_back(gemm_element(p, f.output_bytes, true, special_rate));
  }
  std::vector<Buffer> buffers = call.buffers();
  for (Buffer& buffer : buffers) {
    if (buffer.contents.size() != buffer.size) buffer.contents = p.bytes(buffer.size);
  }
  SCOPED_TRACE(fmt::format("{} {}: {} rows × K {} × N {}, ISCL {}", f.name,
                           variant == GemmVariant::kInit ? "init" : "accumulate", rows, inner,
                           columns, scale));
  expect_device_matches_model(call.kernel(), call.registers(), buffers);
}

constexpr GemmFamily kFamilies[] = {GemmFamily::kF32, GemmFamily::kF16,
                                    GemmFamily::kF16ExpandedF143, GemmFamily::kF143};
constexpr GemmVariant kVariants[] = {GemmVariant::kInit, GemmVariant::kAccumulate};

std::vector<std::uint32_t> widths(GemmFamily family) {
  if (family == GemmFamily::kF32) return {64};
  if (family == GemmFamily::kF16) return {16, 32, 80, 96, 128};
  return {32, 64, 128};
}

TEST(DeviceKernels, GemmEdgeShapes) {
  Patterns p(90);
  for (GemmFamily family : kFamilies) {
    const unsigned pass = gemm_format(family).pass;
    for (GemmVariant variant : kVariants) {
      for (std::uint32_t columns : widths(family)) {
        for (std::uint32_t passes : {1u, 3u}) {
          for (std::uint32_t rows : {0u, 12u, 13u, 19u}) {
            gemm_case(p, family, variant, rows, passes * pass, columns, 3, 0.0);
          }
        }
      }
    }
  }
}

TEST(DeviceKernels, GemmSpecialValues) {
  Patterns p(91);
  for (GemmFamily family : kFamilies) {
    const unsigned pass = gemm_format(family).pass;
    for (GemmVariant variant : kVariants) {
      for (double rate : {0.01, 0.1}) {
        gemm_case(p, family, variant, 13, 2 * pass, widths(family).back(), -2, rate);
      }
    }
  }
}

// The largest shard of each width at K = 64, and F143 across product scales.
TEST(DeviceKernels, GemmLargestShardsAndScales) {
  Patterns p(92);
  for (GemmFamily family : kFamilies) {
    for (std::uint32_t columns : widths(family)) {
      const std::uint32_t rows = gemm_maximum_rows(family, 64, columns);
      gemm_case(p, family, GemmVariant::kAccumulate, rows, 64, columns, 0, 0.0);
    }
  }
  for (std::int32_t scale : {-32, -20, -1, 0, 7, 31}) {
    gemm_case(p, GemmFamily::kF143, GemmVariant::kInit, 12, 64, 32, scale, 0.0);
  }
}

}  // namespace
}  // namespace tessera::kernels::testing
