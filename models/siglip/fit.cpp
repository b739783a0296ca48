#include "models/siglip/fit.hpp"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "compiler/placement.hpp"
#include "compiler/plan/attention_plan.hpp"
#include "target/topology.hpp"

namespace tessera::models::siglip {
namespace {

std::uint64_t placeable_bytes(compiler::MemoryPlacement region) {
  std::uint64_t total = 0;
  for (const target::AddressRange& range : compiler::placeable_ranges(region))
    total += range.size();
  return total;
}

// Most faithful first: what precision_that_fits offers. f8 (f143's weights,
// F143 activations) is last: its weights take at least f143's bytes.
constexpr std::array kByFidelity = {GraphPrecision::kF32, GraphPrecision::kF16,
                                    GraphPrecision::kF143, GraphPrecision::kF8};

}  // namespace

WeightMemory weight_memory(std::uint32_t tiles) {
  if (tiles == 0 || tiles > static_cast<std::uint32_t>(target::kTileCount)) {
    throw UsageError(
        fmt::format("the tile count must be 1 … {}, not {}", target::kTileCount, tiles));
  }
  WeightMemory memory;
  memory.tiles = tiles;
  memory.tile_bytes = placeable_bytes(compiler::MemoryPlacement::kAnywhere);
  memory.code_reserve = placeable_bytes(compiler::MemoryPlacement::kStandard);
  memory.activation_reserve = kActivationReservePerTile;
  return memory;
}

std::uint64_t layer_reserve_per_tile(std::uint32_t batch) {
  // Batches 1–4 as found (fit.hpp), then kLayerReservePerExtraImage per image.
  constexpr std::array<std::uint64_t, 4> kFound = {
      kLayerReservePerTile, kLayerReservePerTile + 32 * 1024, kLayerReservePerTile + 80 * 1024,
      kLayerReservePerTile + 64 * 1024};
  if (batch == 0) return kFound[0];
  if (batch <= kFound.size()) return kFound[batch - 1];
  return kFound.back() + (batch - kFound.size()) * kLayerReservePerExtraImage;
}

std::uint64_t attention_working_memory(const SiglipVisionConfig& config, GraphPrecision precision,
                                       std::uint32_t tiles, std::uint32_t batch) {
  const WeightMemory memory = weight_memory(tiles);
  const std::uint64_t weights = vision_weight_bytes(config, precision);
  const std::uint64_t share = weights / tiles + (weights % tiles != 0 ? 1 : 0);
  const std::uint64_t held = share + layer_reserve_per_tile(batch);
  if (memory.tile_bytes <= held) {
    throw InputError(fmt::format(
        "batch {} does not fit on {} tiles at {}: of the {} bytes a tile offers, the weights take "
        "{} and the batch's code and layer values are reserved {}, which leaves attention "
        "nothing; compile a smaller batch",
        batch, tiles, precision_name(precision), memory.tile_bytes, share,
        layer_reserve_per_tile(batch)));
  }
  return std::min(memory.tile_bytes - held, compiler::plan::kWorkingMemoryBudget);
}

std::optional<GraphPrecision> precision_that_fits(const SiglipVisionConfig& config,
                                                  std::uint32_t tiles) {
  const std::uint64_t free_bytes = weight_memory(tiles).free_bytes();
  for (const GraphPrecision precision : kByFidelity) {
    if (vision_weight_bytes(config, precision) <= free_bytes) return precision;
  }
  return std::nullopt;
}

void require_weights_fit(const SiglipVisionConfig& config, GraphPrecision precision,
                         std::uint32_t tiles) {
  const WeightMemory memory = weight_memory(tiles);
  const std::uint64_t needed = vision_weight_bytes(config, precision);
  if (needed <= memory.free_bytes()) return;
  const std::optional<GraphPrecision> would_fit = precision_that_fits(config, tiles);
  const std::string advice =
      would_fit ? fmt::format("--precision {} would fit ({} bytes)", precision_name(*would_fit),
                              vision_weight_bytes(config, *would_fit))
                : fmt::format("no precision fits (f143, the smallest, needs {} bytes)",
                              vision_weight_bytes(config, GraphPrecision::kF143));
  throw WeightsDoNotFit(
      fmt::format("the weights at {} need {} bytes, but {} tiles have {} bytes of SRAM free for "
                  "weights ({} per tile after code, exchange rows and activations): {}",
                  precision_name(precision), needed, memory.tiles, memory.free_bytes(),
                  memory.per_tile(), advice),
      needed, memory.free_bytes(), would_fit);
}

}  // namespace tessera::models::siglip
