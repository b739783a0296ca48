// The IPU emulation the fast paths are tested with (ipu_emulation/): its f16
// lane arithmetic against the host models' (kernels/float_arith.hpp, an
// independent implementation: integer rounding, not _Float16), and a check
// that the emulated build's kernels really run their fast paths — so
// device_kernels_emulated_tests tests what it says it tests.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "kernels/float_arith.hpp"
#include "tests/kernels/device_harness.hpp"

#ifndef TESSERA_IPU_EMULATION
#include "ipu_emulation.hpp"
#endif

namespace tessera::kernels::testing {
namespace {

bool is_nan(std::uint16_t h) { return (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0; }

// Every f16 left operand against 64 partners (specials and random), through half4 lanes.
TEST(IpuEmulation, F16LanesAreTheModelsCorrectlyRoundedSumsAndProducts) {
  Patterns p(21);
  std::size_t checked = 0;
  for (std::uint32_t left = 0; left < 65536; left += 4) {
    half4 a, b;
    for (unsigned lane = 0; lane < 4; ++lane) {
      a.bits[lane] = static_cast<std::uint16_t>(left + lane);
      b.bits[lane] = p.f16();
    }
    const half4 sum = a + b;
    const half4 product = a * b;
    for (unsigned lane = 0; lane < 4; ++lane) {
      const std::uint16_t want_sum = add_f16_bits(a.bits[lane], b.bits[lane]);
      const std::uint16_t want_product = mul_f16_bits(a.bits[lane], b.bits[lane]);
      // NaN payloads are the host's: the sources canonicalise, so only NaN-ness must agree.
      if (is_nan(want_sum)) {
        EXPECT_TRUE(is_nan(sum.bits[lane]));
      } else {
        ASSERT_EQ(sum.bits[lane], want_sum) << std::hex << a.bits[lane] << " + " << b.bits[lane];
      }
      if (is_nan(want_product)) {
        EXPECT_TRUE(is_nan(product.bits[lane]));
      } else {
        ASSERT_EQ(product.bits[lane], want_product)
            << std::hex << a.bits[lane] << " * " << b.bits[lane];
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 65536u);
}

TEST(IpuEmulation, PostIncrementingLoadsAndStoresAdvanceByElements) {
  const std::uint32_t words[4] = {1, 2, 3, 4};
  const auto* from = reinterpret_cast<const uint2*>(words);
  const uint2 first = ipu::load_postinc(&from, 1);
  const uint2 second = ipu::load_postinc(&from, 1);
  EXPECT_EQ(first[0], 1u);
  EXPECT_EQ(first[1], 2u);
  EXPECT_EQ(second[0], 3u);
  std::uint32_t out[4] = {};
  auto* to = reinterpret_cast<uint2*>(out);
  ipu::store_postinc(&to, second, 1);
  ipu::store_postinc(&to, first, 1);
  EXPECT_EQ(out[0], 3u);
  EXPECT_EQ(out[3], 2u);
}

// Each kernel with a fast path, on operands large enough that every worker's
// share holds whole aligned groups: the emulated vector loads and stores ran.
TEST(IpuEmulation, TheEmulatedBuildRunsTheFastPaths) {
  Patterns p(22);
  struct Kernel {
    std::string_view symbol;
    unsigned element_bytes;
  };
  for (const Kernel& k : {Kernel{"tessera_add_f32", 4}, Kernel{"tessera_mul_f32", 4},
                          Kernel{"tessera_add_f16", 2}, Kernel{"tessera_mul_f16", 2}}) {
    SCOPED_TRACE(std::string(k.symbol));
    const std::uint64_t loads = ipu_emulation::vector_loads;
    const std::uint32_t n = 960;
    const auto values = [&] { return k.element_bytes == 4 ? p.f32s(n) : p.f16s(n); };
    const KernelCase c{k.symbol,
                       {input(2, "out", k.element_bytes, values()),
                        input(3, "left", k.element_bytes, values()),
                        input(4, "right", k.element_bytes, values())},
                       {{5, n}}};
    expect_device_matches_model(c);
    EXPECT_GT(ipu_emulation::vector_loads, loads);
  }
  for (const auto& [symbol, element_bytes] :
       {std::pair<std::string_view, unsigned>{"tessera_add_row_broadcast_f32", 4},
        std::pair<std::string_view, unsigned>{"tessera_add_row_broadcast_f16", 2}}) {
    SCOPED_TRACE(std::string(symbol));
    const std::uint64_t loads = ipu_emulation::vector_loads;
    const std::uint32_t rows = 24, cols = 40;
    const auto values = [&](std::uint32_t count) {
      return element_bytes == 4 ? p.f32s(count) : p.f16s(count);
    };
    expect_device_matches_model(KernelCase{symbol,
                                           {input(2, "out", element_bytes, values(rows * cols)),
                                            input(3, "a", element_bytes, values(rows * cols)),
                                            input(4, "row", element_bytes, values(cols))},
                                           {{5, rows}, {6, cols}}});
    EXPECT_GT(ipu_emulation::vector_loads, loads);
  }
  {
    // LayerNorm, plain and fused, 7 rows of 4 whole panels (A16: 2 bytes × 16 per panel row).
    const std::uint64_t loads = ipu_emulation::vector_loads;
    const std::uint32_t rows = 7, columns = 64;
    std::vector<std::uint16_t> affine(2 * columns);
    for (auto& v : affine) v = p.f16_finite(2.0f);
    std::vector<std::uint16_t> source(rows * columns), right(rows * columns);
    for (auto& v : source) v = p.f16_finite(30.0f);
    for (auto& v : right) v = p.f16_finite(3.0f);
    expect_device_matches_model(KernelCase{"tessera_layer_norm_f16",
                                           {input(2, "normalised", 2, p.bytes(2 * rows * columns)),
                                            input(3, "source", 2, bytes_of(source)),
                                            input(4, "affine", 2, bytes_of(affine))},
                                           {{5, rows}, {6, columns}, {7, 1074}}});
    const std::uint64_t plain = ipu_emulation::vector_loads;
    EXPECT_GT(plain, loads);
    expect_device_matches_model(KernelCase{"tessera_add_layer_norm_f16",
                                           {input(2, "normalised", 2, p.bytes(2 * rows * columns)),
                                            input(3, "residual", 2, bytes_of(source)),
                                            input(4, "right", 2, bytes_of(right)),
                                            input(5, "affine", 2, bytes_of(affine))},
                                           {{6, rows}, {7, columns}, {8, 1074}}});
    EXPECT_GT(ipu_emulation::vector_loads, plain);
  }
  const std::uint64_t stores = ipu_emulation::vector_stores;
  expect_device_matches_model(KernelCase{"tessera_copy_words",
                                         {input(2, "destination", 4, p.bytes(4 * 600)),
                                          input(3, "source", 4, p.bytes(4 * 600))},
                                         {{4, 600}}});
  EXPECT_GT(ipu_emulation::vector_stores, stores);
  const std::uint64_t fills = ipu_emulation::vector_stores;
  expect_device_matches_model(KernelCase{"tessera_fill_words",
                                         {input(2, "destination", 4, p.bytes(4 * 600))},
                                         {{3, 0xDEADBEEF}, {4, 600}}});
  EXPECT_GT(ipu_emulation::vector_stores, fills);
}

}  // namespace
}  // namespace tessera::kernels::testing
