#pragma once
// What the quantizer learns from calibration inputs about each encoder
// linear's input: per input column its mean and mean square (for bias
// correction and LayerNorm equalization), its largest magnitude (for the
// f8 precision's activation scale), and the block-diagonal part of
// H = Σ x xᵀ over every calibration token — one 64 × 64 block per 64-wide
// slice of input columns, the slices GPTQ works in (the F143 grid's K
// blocks). The full H of fc2 alone would be 4304² doubles; its diagonal
// blocks are 68 · 64².
//
// Gathered by running the FP32 reference over the calibration images a few
// at a time (LinearInputObserver), sums in double.

#include <cstdint>
#include <span>
#include <vector>

#include "models/siglip/reference.hpp"
#include "models/siglip/weights.hpp"

namespace tessera::models::siglip::quantizer {

// GPTQ's slice width: the F143 block's extent along K.
inline constexpr std::uint32_t kSliceWidth = 64;

struct InputStatistics {
  std::uint32_t columns = 0;
  std::uint64_t tokens = 0;
  std::vector<double> sum;          // [columns]: Σ x
  std::vector<double> sum_squares;  // [columns]: Σ x²
  std::vector<float> max_abs;       // [columns]: max |x|
  // Block b covers columns [64b, min(columns, 64b + 64)); it is w × w,
  // row-major, with w that slice's width: Σ x_i x_j over every token.
  std::vector<std::vector<double>> hessian_blocks;

  InputStatistics() = default;
  explicit InputStatistics(std::uint32_t columns);
  std::uint32_t slice_count() const noexcept { return (columns + kSliceWidth - 1) / kSliceWidth; }
  std::uint32_t slice_begin(std::uint32_t b) const noexcept { return b * kSliceWidth; }
  std::uint32_t slice_width(std::uint32_t b) const noexcept;
  double mean(std::uint32_t c) const noexcept;
  double mean_square(std::uint32_t c) const noexcept;
  // The largest |x| of any column.
  float largest() const noexcept;
  // Adds rows × columns inputs, row-major.
  void add(std::span<const float> x, std::size_t rows);
};

// The four inputs of one encoder layer's linears.
struct LayerStatistics {
  InputStatistics qkv;       // layer_norm1's output → q_proj, k_proj, v_proj
  InputStatistics out_proj;  // the heads' outputs   → out_proj
  InputStatistics fc1;       // layer_norm2's output → mlp.fc1
  InputStatistics fc2;       // gelu(fc1)            → mlp.fc2
};

struct CalibrationStatistics {
  std::uint32_t images = 0;
  std::vector<LayerStatistics> layers;
};

// Runs the reference on `pixels` ([images, C, S, S] float32) in chunks of
// `chunk_images` and gathers every encoder linear's input statistics.
CalibrationStatistics collect_statistics(const SiglipVisionWeights& weights,
                                         std::span<const float> pixels, std::uint32_t images,
                                         std::uint32_t chunk_images = 4,
                                         const Progress& progress = {});

// The calibration images' hidden states kept between layers, so that each
// layer's statistics can be gathered from the model as it is after the
// layers before it were rewritten (the prior art's --sequential-layers):
// statistics(i) runs layer i over the states as they are, advance(i) then
// moves them through layer i — call it after layer i was quantized. Costs
// about two forward passes in all; holds images · T · H floats.
class LayerByLayerCalibration {
 public:
  LayerByLayerCalibration(const SiglipVisionWeights& weights, std::span<const float> pixels,
                          std::uint32_t images, std::uint32_t chunk_images = 4);
  LayerStatistics statistics(const SiglipVisionWeights& weights, std::size_t layer) const;
  void advance(const SiglipVisionWeights& weights, std::size_t layer);
  std::uint32_t images() const noexcept { return images_; }

 private:
  std::uint32_t images_ = 0;
  struct Chunk {
    std::uint32_t images = 0;
    std::vector<float> hidden;
  };
  std::vector<Chunk> chunks_;
};

}  // namespace tessera::models::siglip::quantizer
