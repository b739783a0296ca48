#pragma once
// Whether a SigLIP tower's weights fit in the chip's SRAM at a precision
// (issue 19 item 4), decided from config.json alone — before any weight is
// read and before the compiler starts — so that a model too large for its
// precision is one clear line (bytes needed, bytes free, the precision that
// would fit) rather than a placement failure deep in the compiler.
//
// Bytes needed: vision_weight_bytes (graph.hpp), the sum of the graph's own
// parameter types. Bytes free, per tile the compile spreads the model over
// (CompileOptions::tiles):
//
//   what placement offers a tile       compiler::placeable_ranges(kAnywhere):
//                                      the loadable SRAM minus the ranges
//                                      target/memory_map.hpp reserves
//                                      (588,696 B: 163,816 in region 0 and
//                                      424,880 in region 1)
//   − code and exchange rows           all of region 0's placeable memory
//                                      (placeable_ranges(kStandard)): the
//                                      only memory instructions can be
//                                      fetched from, where the compiler must
//                                      put code and exchange rows, and which
//                                      the tiny towers already fill to
//                                      100 KB of code on their busiest tile
//   − activations                      kActivationReservePerTile of region 1
//   = 359,344 B per tile, 528,954,368 B (≈ 529 MB) on all 1472 tiles.
//
// The reserve makes this a necessary condition, not a sufficient one: a model
// admitted here can still fail placement (at a large batch, or when the
// compiler's shards load one tile more than the average), and then the
// compiler's placement error names the tile.

#include <cstdint>
#include <optional>
#include <string>

#include "models/siglip/config.hpp"
#include "models/siglip/graph.hpp"
#include "support/error.hpp"

namespace tessera::models::siglip {

// Per tile, held back from the weights for activations: the residual stream,
// an MLP's intermediate, a layer's attention, the expanded f16 copy of an
// F143 weight block. 64 KiB × 1472 tiles is 96 MB, several times so400m's
// batch-1 working set (one [729, 4304] f16 MLP intermediate is 6.3 MB, one
// layer's [16, 729, 729] f16 attention scores 17 MB).
inline constexpr std::uint64_t kActivationReservePerTile = 64 * 1024;

// The SRAM free for weights on `tiles` tiles (UsageError outside
// 1 … target::kTileCount, the compiler's range).
struct WeightMemory {
  std::uint32_t tiles = 0;
  std::uint64_t tile_bytes = 0;          // what placement offers one tile
  // Region 0, per tile: all of it, since a tile's code size is known only
  // after lowering. The linker may still place host-bound weights in region
  // 0 above the code (compiler/emit/data_placement.cpp), so this check errs
  // on the safe side: a model it admits has at least this much room.
  std::uint64_t code_reserve = 0;
  std::uint64_t activation_reserve = 0;  // kActivationReservePerTile
  std::uint64_t per_tile() const noexcept { return tile_bytes - code_reserve - activation_reserve; }
  std::uint64_t free_bytes() const noexcept { return per_tile() * tiles; }
};
WeightMemory weight_memory(std::uint32_t tiles);

// Per tile, held back from attention's working set besides the weights, at
// batch 1: code and exchange rows (so400m at f143: 21 KB of rows and 12 KB
// of main on the average tile, the fullest tile's code 51 KB), host programs
// (8 KB), the GEMMs' A block (a 32 KiB constant) and the layer's other
// values live through the attention (the residual stream, q, k, v), with
// room for placement's element granularity.
inline constexpr std::uint64_t kLayerReservePerTile = 128 * 1024;

// Held back besides as the batch grows: the code grows with the GEMMs' waves
// (so400m at f143, the fullest tile's code and exchange rows: 51 KB at batch
// 1, 60 KB at batch 2, 90 KB at batch 4) and the layer's values with the
// tokens, and a tile whose data outgrows region 1 spills weights into region
// 0, below which that code must fit. For batches 1–4 the reserves are the
// ones so400m was found to place with (layer_reserve_per_tile: 128, 160, 208
// and 192 KiB): batch 2 not with 154,780 or 138,396 bytes of attention
// buffers but with 122,012; batch 3 with 72,860 but not 56,476 (nor, before
// placement kept send and receive buffers apart, with 89,244 … 122,012);
// batch 4 not with 122,012, 105,628 or 56,476 but with 89,244 — a smaller
// budget means more attention waves, so more code, and batch 3's plans have
// more code than batch 4's.
// Beyond batch 4, this much per image more.
inline constexpr std::uint64_t kLayerReservePerExtraImage = 32 * 1024;

// The per-tile reserve at `batch`: 128, 160, 208 and 192 KiB at batches 1–4
// (kLayerReservePerTile at 1), then kLayerReservePerExtraImage more per image.
std::uint64_t layer_reserve_per_tile(std::uint32_t batch);

// What one tile's attention buffers may take
// (compiler::plan::AttentionPlanOptions::working_memory) at `batch`: what
// placement offers a tile, less the weights' share of it (their bytes over
// `tiles`, rounded up) and layer_reserve_per_tile, at most the planner's own
// kWorkingMemoryBudget; an InputError naming the batch when nothing is
// left. so400m at f143 on 1472 tiles: 154,780 bytes at batch 1,
// which keeps batch 1's blocking (148 KB) and refuses the 228 KB one that
// left 60 tiles holding more than their memory at batch 2; 122,012 at batch
// 2, 72,860 at batch 3, 89,244 at batch 4, nothing at batch 7. (UsageError outside
// 1 … target::kTileCount tiles.)
std::uint64_t attention_working_memory(const SiglipVisionConfig& config, GraphPrecision precision,
                                       std::uint32_t tiles, std::uint32_t batch);

// The weights do not fit at the chosen precision. An InputError (the CLI
// exits 1) whose message names both byte counts and the precision that
// would fit, or says that none does.
class WeightsDoNotFit : public InputError {
 public:
  WeightsDoNotFit(std::string message, std::uint64_t needed, std::uint64_t free_bytes,
                  std::optional<GraphPrecision> would_fit)
      : InputError(std::move(message)), needed_(needed), free_(free_bytes), would_fit_(would_fit) {}
  std::uint64_t needed() const noexcept { return needed_; }
  std::uint64_t free_bytes() const noexcept { return free_; }
  std::optional<GraphPrecision> would_fit() const noexcept { return would_fit_; }

 private:
  std::uint64_t needed_;
  std::uint64_t free_;
  std::optional<GraphPrecision> would_fit_;
};

// The most faithful precision whose weights fit on `tiles` tiles — f32, then
// f16, then f143, then f8 (whose weights take at least f143's bytes) — or
// nullopt when none does.
std::optional<GraphPrecision> precision_that_fits(const SiglipVisionConfig& config,
                                                  std::uint32_t tiles);

// Throws WeightsDoNotFit when the weights at `precision` need more than
// weight_memory(tiles).free_bytes(); InputError for an invalid config.
void require_weights_fit(const SiglipVisionConfig& config, GraphPrecision precision,
                         std::uint32_t tiles);

}  // namespace tessera::models::siglip
