// The GEMM device sources against the models: operands packed and placed by
// gemm_testing.hpp (A in standard memory, C in the interleaved window, the
// expanded family's weights in interleaved memory), C prefilled for the init
// variant too (both sides start from the same bytes). The models define the
// summation order (kernels/README.md "GEMM"), which the portable part
// follows, so the comparison is bit for bit. In device_kernels_emulated_tests
// the same cases run the AMP fast path against the IPU emulation
// (ipu_emulation/ipu_amp_emulation.hpp), which assumes that order: bit for
// bit again; under another order inside the AMP (the emulation's tree order)
// the fast path stays within the hiho bound of the exact product.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <random>

#include "kernels/amp_layout.hpp"
#include "kernels/gemm.hpp"
#include "kernels/half.hpp"
#include "tests/kernels/device_harness.hpp"
#include "tests/kernels/gemm_testing.hpp"

#ifdef TESSERA_DEVICE_EMULATE_IPU
#include "ipu_emulation.hpp"
#endif

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

// The registry's edge shapes (kernels/README.md "GEMM"): the 12-row minimum,
// 13 (6k+1: workers with 3 and 2 rows), 71 and 129 (the f16 limit at K = N =
// 64) where the (K, N) allows them; K of one pass up to five; the family's
// widths; both variants.
TEST(DeviceKernels, GemmRegistryEdgeShapes) {
  Patterns p(93);
  for (GemmFamily family : kFamilies) {
    const unsigned pass = gemm_format(family).pass;
    const std::vector<std::uint32_t> columns_of =
        family == GemmFamily::kF32 ? std::vector<std::uint32_t>{64}
                                   : std::vector<std::uint32_t>{32, 64, 128};
    for (GemmVariant variant : kVariants) {
      for (std::uint32_t columns : columns_of) {
        for (std::uint32_t passes : {1u, 2u, 4u, 5u}) {
          const std::uint32_t inner = passes * pass;
          for (std::uint32_t rows : {12u, 13u, 71u, 129u}) {
            if (rows > gemm_maximum_rows(family, inner, columns)) continue;
            gemm_case(p, family, variant, rows, inner, columns, -5, 0.005);
          }
        }
      }
    }
  }
}

// Fewer rows than the registry's 12 (its precondition refuses rows 1…11, so
// these run the source directly, against the CPU reference): workers with
// one row or none — the AMP loop's shortest pipelines, which no legal call
// gives a worker.
TEST(DeviceKernels, GemmWorkersWithOneRowOrNone) {
  Patterns p(94);
  for (GemmFamily family : kFamilies) {
    const GemmFormat f = gemm_format(family);
    for (GemmVariant variant : kVariants) {
      for (std::uint32_t rows : {1u, 5u, 6u, 7u, 11u}) {
        const std::uint32_t columns = family == GemmFamily::kF32 ? 64 : 32;
        GemmOperands call = zero_gemm(family, variant, rows, 2 * f.pass, columns);
        call.scale = 4;
        for (auto& a : call.left) a = gemm_element(p, f.left_bytes, false, 0.0);
        for (auto& b : call.weights) b = gemm_element(p, f.weight_bytes, false, 0.0);
        for (auto& c : call.partials) c = gemm_element(p, f.output_bytes, true, 0.0);
        std::vector<Buffer> buffers = call.buffers();
        for (Buffer& buffer : buffers) {
          if (buffer.contents.size() != buffer.size) buffer.contents = p.bytes(buffer.size);
        }
        SCOPED_TRACE(fmt::format("{} {}: {} rows", f.name,
                                 variant == GemmVariant::kInit ? "init" : "accumulate", rows));
        const DeviceResult device = run_device(call.kernel(), call.registers(), buffers);
        ASSERT_EQ(device.fault, "");
        EXPECT_TRUE(device.stray_writes.empty());
        const std::vector<std::uint32_t> want = gemm_reference(call);
        const std::vector<std::uint8_t>& out = device.buffers.at(2);
        for (std::uint32_t r = 0; r < rows; ++r) {
          for (std::uint32_t n = 0; n < columns; ++n) {
            const std::uint64_t at = amp::output_offset(r, n, rows) * f.output_bytes;
            std::uint32_t bits = 0;
            for (unsigned b = 0; b < f.output_bytes; ++b) {
              bits |= std::uint32_t{out[at + b]} << (8 * b);
            }
            ASSERT_EQ(bits, want[std::size_t{r} * columns + n]) << "(" << r << ", " << n << ")";
          }
        }
      }
    }
  }
}

#ifdef TESSERA_DEVICE_EMULATE_IPU
// Exact in FP64 (f16 products are exact and K ≤ 688 terms of ≤ 2^32 fit).
double f16_value(std::uint32_t bits) {
  return static_cast<double>(f16_to_f32(static_cast<std::uint16_t>(bits)));
}

// The emulated AMP summing each op's products as a tree before adding them
// (another order inside a pass, same roundings per pass): the fast path is no
// longer the model's bits, but stays within the hiho bound of the exact
// product, as any order must.
TEST(DeviceKernels, GemmAmpInAnotherOrderStaysWithinTheHihoBound) {
  struct Order {
    Order() { ipu_emulation::amp_order = ipu_emulation::AmpOrder::kPairwise; }
    ~Order() { ipu_emulation::amp_order = ipu_emulation::AmpOrder::kKOrder; }
  } order;
  std::mt19937_64 rng(0xA3B0);
  std::size_t differ = 0;
  for (const std::uint32_t inner : {16u, 64u, 256u}) {
    for (const GemmVariant variant : kVariants) {
      std::normal_distribution<float> activation(0.0F, 0.5F);
      std::normal_distribution<float> weight(0.0F, 1.0F / std::sqrt(static_cast<float>(inner)));
      GemmOperands call = zero_gemm(GemmFamily::kF16, variant, 13, inner, 32);
      for (auto& a : call.left) a = f32_to_f16(activation(rng));
      for (auto& b : call.weights) b = f32_to_f16(weight(rng));
      for (auto& c : call.partials) c = f32_to_f16(activation(rng));
      std::vector<Buffer> buffers = call.buffers();
      for (Buffer& buffer : buffers) {
        if (buffer.contents.size() != buffer.size) buffer.contents.assign(buffer.size, 0x5A);
      }
      const std::vector<std::uint32_t> model = run_gemm(call);
      const DeviceResult device = run_device(call.kernel(), call.registers(), buffers);
      ASSERT_EQ(device.fault, "");
      const std::vector<std::uint8_t>& out = device.buffers.at(2);
      for (std::uint32_t r = 0; r < call.rows; ++r) {
        for (std::uint32_t n = 0; n < call.columns; ++n) {
          const std::size_t at = std::size_t{r} * call.columns + n;
          const std::uint64_t offset = 2 * amp::output_offset(r, n, call.rows);
          const std::uint32_t bits = out[offset] | std::uint32_t{out[offset + 1]} << 8;
          double exact = 0, magnitude = 0;
          if (variant == GemmVariant::kAccumulate) {
            exact = f16_value(call.partials[at]);
            magnitude = std::fabs(exact);
          }
          for (std::uint32_t k = 0; k < inner; ++k) {
            const double product = f16_value(call.left[r * inner + k]) *
                                   f16_value(call.weights[std::size_t{k} * call.columns + n]);
            exact += product;
            magnitude += std::fabs(product);
          }
          const double bound =
              hiho_bound(inner, 16, magnitude) + inner * std::ldexp(1.0, -52) * magnitude;
          ASSERT_LE(std::fabs(f16_value(bits) - exact), bound)
              << "K " << inner << " (" << r << ", " << n << ")";
          differ += bits != model[at];
        }
      }
    }
  }
  // The order is not the model's: somewhere the bits differ.
  EXPECT_GT(differ, 0u);
}
#endif

}  // namespace
}  // namespace tessera::kernels::testing
