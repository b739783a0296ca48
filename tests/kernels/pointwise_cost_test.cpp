// The published per-kernel figures (kernels-siglip-f143.md §5 and the prior
// art's HEAD cost model, crates/ipu-codegen/src/cost.rs) reproduced by the
// cost functions of kernels/pointwise_costs.hpp within ±10 %, one row per
// figure with its source; and the [INF] costs' shape (zero work pays the
// launch; more work never costs less).
#include "kernels/pointwise_costs.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace tessera::kernels {
namespace {

struct Figure {
  const char* what;  // the figure and its source
  double published;  // cycles (or cycles per element)
  double modelled;
};

double per_element(std::uint64_t (*cost)(std::uint64_t), std::uint64_t elements) {
  return static_cast<double>(cost(2 * elements) - cost(elements)) / static_cast<double>(elements);
}

TEST(PointwiseCosts, ReproduceThePublishedFiguresWithinTenPercent) {
  const Figure figures[] = {
      // §5 "Local copy call: 288 cycles (6 workers, including rendezvous)";
      // HEAD IPU21_TARGET_COSTS.local_copy_call_cycles. A one-row, one-panel
      // reblock is such a call.
      {"copy call (reblock of one 32-byte row)", 288,
       static_cast<double>(panel_copy_cycles(1, 16))},
      // §5 / HEAD local_copy_bytes_per_cycle = 8: a copy's bytes per cycle.
      {"copy rate, bytes per cycle (12 x 1152 relayout)", 8,
       12.0 * 1152 * 2 /
           static_cast<double>(panel_copy_cycles(12, 1152) - panel_copy_cycles(0, 1152))},
      // §5 "AMP-left: about 4 cycles per element (640-element attention shard ≈ 2,364 cycles)".
      {"AMP-left pack of a 640-element shard", 2364,
       static_cast<double>(rearrange_left_cycles(640))},
      {"AMP-left pack, cycles per element", 4, per_element(rearrange_left_cycles, 4096)},
      // §5 "Contiguous panel: 3 cycles per element" (HEAD: TransposedRight).
      {"contiguous panel (transposed right) per element", 3,
       per_element(rearrange_transposed_right_cycles, 4096)},
      {"contiguous panel, one 64 x 16 panel pair", 11 + 3 * 1024.0,
       static_cast<double>(rearrange_transposed_right_cycles(1024))},
      // §5 "Block-major: 4,096 + 4 cycles per element".
      {"block-major pack of a 64 x 64 block", 4096 + 4 * 4096.0,
       static_cast<double>(rearrange_block_major_cycles(4096))},
      {"block-major per element", 4, per_element(rearrange_block_major_cycles, 4096)},
      // §5 "Indexed f16 transforms and unpack: 10 cycles per element".
      {"unpack per element", 10, per_element(unpack_cycles, 4096)},
      {"unpack of a 12 x 64 C16 block", 11 + 10 * 768.0, static_cast<double>(unpack_cycles(768))},
      {"indexed transform (row-major -> C16) per element", 10,
       per_element(rearrange_output_cycles, 4096)},
  };
  for (const Figure& f : figures) {
    const double error = (f.modelled - f.published) / f.published;
    EXPECT_LE(std::fabs(error), 0.10) << f.what << ": published " << f.published << ", modelled "
                                      << f.modelled << " (" << 100 * error << " %)";
  }
}

TEST(PointwiseCosts, ZeroWorkPaysTheLaunchAndMoreWorkNeverCostsLess) {
  EXPECT_EQ(mul_cycles(0, 2), kSixWorkerCallCycles);
  EXPECT_EQ(convert_cycles(0), kSixWorkerCallCycles);
  EXPECT_EQ(gelu_cycles(0), kSixWorkerCallCycles);
  EXPECT_EQ(bias_add_cycles(0, 64, 2), kSixWorkerCallCycles);
  EXPECT_EQ(layer_norm_cycles(0, 1152, true), kSixWorkerCallCycles);
  EXPECT_EQ(rearrange_block_major_cycles(0), kKernelLaunchCycles);
  EXPECT_EQ(unpack_cycles(0), kKernelLaunchCycles);
  for (std::uint64_t n = 0; n < 300; ++n) {
    EXPECT_LE(gelu_cycles(n), gelu_cycles(n + 1));
    EXPECT_LE(convert_cycles(n), convert_cycles(n + 1));
    EXPECT_LE(f143_convert_cycles(n), f143_convert_cycles(n + 1));
    EXPECT_LE(layer_norm_cycles(n, 64, false), layer_norm_cycles(n + 1, 64, false));
    EXPECT_LE(layer_norm_cycles(12, n, false), layer_norm_cycles(12, n + 1, true));
    EXPECT_LE(bias_add_cycles(n, 64, 2), bias_add_cycles(n + 1, 64, 2));
    EXPECT_LE(quantize_a16_to_a32_cycles(n, 64), quantize_a16_to_a32_cycles(n + 1, 64));
    EXPECT_LE(gelu_relayout_cycles(n, 64), gelu_relayout_cycles(n + 1, 64));
  }
  // An A16 or C16 unpack of an even number of columns moves words (a so400m
  // projection's 57 × 32 C block: 912 words, 152 on worker 0, two issues
  // each); odd columns take the indexed transform of the padded block.
  EXPECT_EQ(unpack_amp_cycles(57, 32, 64 * 32), kSixWorkerCallCycles + 6 * 2 * 152);
  EXPECT_EQ(unpack_amp_cycles(5, 7, 16 * 16), unpack_cycles(256));
  EXPECT_EQ(unpack_amp_cycles(0, 8, 256), unpack_cycles(0));
  for (std::uint64_t words = 0; words < 300; ++words) {
    EXPECT_LE(unpack_pairs_cycles(words), unpack_pairs_cycles(words + 1));
  }
  // A SigLIP LayerNorm row shard (13 × 1152): 3 rows on worker 0, 7·576 + 40
  // instructions each for the fused kernel.
  EXPECT_EQ(layer_norm_cycles(13, 1152, true), kSixWorkerCallCycles + 6 * 3 * (7 * 576 + 40));
}

}  // namespace
}  // namespace tessera::kernels
