#include "models/siglip/quantizer/statistics.hpp"

#include <cblas.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "models/parallel.hpp"
#include "support/checked.hpp"
#include "support/error.hpp"

namespace tessera::models::siglip::quantizer {
namespace {

class Observer final : public LinearInputObserver {
 public:
  explicit Observer(CalibrationStatistics& statistics) : statistics_(statistics) {}
  void observe(std::size_t layer, LinearInput site, std::span<const float> x, std::size_t rows,
               std::size_t cols) override {
    LayerStatistics& l = statistics_.layers.at(layer);
    InputStatistics& s = site == LinearInput::kQkv       ? l.qkv
                         : site == LinearInput::kOutProj ? l.out_proj
                         : site == LinearInput::kFc1     ? l.fc1
                                                         : l.fc2;
    if (cols != s.columns) throw UsageError("calibration: an input has the wrong width");
    s.add(x, rows);
  }

 private:
  CalibrationStatistics& statistics_;
};

}  // namespace

InputStatistics::InputStatistics(std::uint32_t width)
    : columns(width), sum(width, 0.0), sum_squares(width, 0.0), max_abs(width, 0.0F) {
  hessian_blocks.resize(slice_count());
  for (std::uint32_t b = 0; b < slice_count(); ++b) {
    hessian_blocks[b].assign(std::size_t{slice_width(b)} * slice_width(b), 0.0);
  }
}

std::uint32_t InputStatistics::slice_width(std::uint32_t b) const noexcept {
  return std::min(kSliceWidth, columns - slice_begin(b));
}

double InputStatistics::mean(std::uint32_t c) const noexcept {
  return tokens == 0 ? 0.0 : sum[c] / static_cast<double>(tokens);
}

float InputStatistics::largest() const noexcept {
  float largest = 0.0F;
  for (const float value : max_abs) largest = std::max(largest, value);
  return largest;
}

double InputStatistics::mean_square(std::uint32_t c) const noexcept {
  return tokens == 0 ? 0.0 : sum_squares[c] / static_cast<double>(tokens);
}

void InputStatistics::add(std::span<const float> x, std::size_t rows) {
  if (x.size() != rows * columns) throw UsageError("InputStatistics::add: x is not rows × columns");
  tokens = checked_add<std::uint64_t>(tokens, rows, "calibration tokens");
  for (std::size_t r = 0; r < rows; ++r) {
    const float* row = x.data() + r * columns;
    for (std::uint32_t c = 0; c < columns; ++c) {
      sum[c] += double{row[c]};
      sum_squares[c] += double{row[c]} * double{row[c]};
      max_abs[c] = std::max(max_abs[c], std::fabs(row[c]));
    }
  }
  // Each slice's block is its own sum: the slices go to threads whole, so
  // the result does not depend on the thread count.
  parallel_for(slice_count(), 1, [&](std::size_t begin, std::size_t end) {
    std::vector<double> slice;
    for (auto b = static_cast<std::uint32_t>(begin); b < end; ++b) {
      const std::uint32_t c0 = slice_begin(b), w = slice_width(b);
      slice.resize(rows * w);
      for (std::size_t r = 0; r < rows; ++r) {
        for (std::uint32_t j = 0; j < w; ++j) slice[r * w + j] = double{x[r * columns + c0 + j]};
      }
      std::vector<double>& h = hessian_blocks[b];
      // H (upper triangle) += sliceᵀ · slice, then mirrored.
      cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, static_cast<int>(w),
                  checked_cast<int>(rows, "calibration rows"), 1.0, slice.data(),
                  static_cast<int>(w), 1.0, h.data(), static_cast<int>(w));
      for (std::uint32_t i = 0; i < w; ++i) {
        for (std::uint32_t j = 0; j < i; ++j) h[std::size_t{i} * w + j] = h[std::size_t{j} * w + i];
      }
    }
  });
}

namespace {

void check_calibration(const SiglipVisionConfig& c, std::span<const float> pixels,
                       std::uint32_t images) {
  const std::size_t per_image = std::size_t{c.num_channels} * c.image_size * c.image_size;
  if (images == 0 || pixels.size() != images * per_image) {
    throw UsageError(fmt::format("calibration pixels: {} values are not {} images of [{}, {}, {}]",
                                 pixels.size(), images, c.num_channels, c.image_size,
                                 c.image_size));
  }
}

LayerStatistics empty_statistics(const SiglipVisionConfig& c) {
  return {InputStatistics(c.hidden_size), InputStatistics(c.hidden_size),
          InputStatistics(c.hidden_size), InputStatistics(c.intermediate_size)};
}

}  // namespace

LayerByLayerCalibration::LayerByLayerCalibration(const SiglipVisionWeights& weights,
                                                 std::span<const float> pixels,
                                                 std::uint32_t images, std::uint32_t chunk_images)
    : images_(images) {
  const auto& c = weights.config;
  check_calibration(c, pixels, images);
  const std::size_t per_image = std::size_t{c.num_channels} * c.image_size * c.image_size;
  chunk_images = std::max<std::uint32_t>(chunk_images, 1);
  for (std::uint32_t first = 0; first < images; first += chunk_images) {
    const std::uint32_t count = std::min(chunk_images, images - first);
    chunks_.push_back(
        {count, reference_embeddings(
                    weights, pixels.subspan(first * per_image, count * per_image), count)});
  }
}

LayerStatistics LayerByLayerCalibration::statistics(const SiglipVisionWeights& weights,
                                                    std::size_t layer) const {
  CalibrationStatistics gathered;
  gathered.images = images_;
  for (std::size_t i = 0; i < weights.layers.size(); ++i) {
    gathered.layers.push_back(i == layer ? empty_statistics(weights.config) : LayerStatistics{});
  }
  Observer observer(gathered);
  for (const Chunk& chunk : chunks_) {
    std::vector<float> hidden = chunk.hidden;  // the states stay where they are
    reference_encoder_layer(weights, layer, chunk.images, hidden, &observer);
  }
  return std::move(gathered.layers[layer]);
}

void LayerByLayerCalibration::advance(const SiglipVisionWeights& weights, std::size_t layer) {
  for (Chunk& chunk : chunks_) reference_encoder_layer(weights, layer, chunk.images, chunk.hidden);
}

CalibrationStatistics collect_statistics(const SiglipVisionWeights& weights,
                                         std::span<const float> pixels, std::uint32_t images,
                                         std::uint32_t chunk_images, const Progress& progress) {
  const auto& c = weights.config;
  const std::size_t per_image = std::size_t{c.num_channels} * c.image_size * c.image_size;
  check_calibration(c, pixels, images);
  CalibrationStatistics statistics;
  statistics.images = images;
  for (std::size_t i = 0; i < weights.layers.size(); ++i) {
    statistics.layers.push_back(empty_statistics(c));
  }
  Observer observer(statistics);
  chunk_images = std::max<std::uint32_t>(chunk_images, 1);
  for (std::uint32_t first = 0; first < images; first += chunk_images) {
    const std::uint32_t count = std::min(chunk_images, images - first);
    if (progress) {
      progress(fmt::format("calibration images {}-{} of {}", first + 1, first + count, images));
    }
    run_reference(weights, pixels.subspan(first * per_image, count * per_image), count, &observer);
  }
  return statistics;
}

}  // namespace tessera::models::siglip::quantizer
