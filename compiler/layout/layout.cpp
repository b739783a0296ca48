#include "compiler/layout/layout.hpp"

#include <bit>
#include <limits>

#include <fmt/format.h>

#include "support/checked.hpp"
#include "target/topology.hpp"

namespace tessera::compiler {
namespace {

// replicas · Π partitions, saturating at 2^64 − 1 (only compared with the tile count).
std::uint64_t saturated_tile_product(const Layout& layout) {
  std::uint64_t tiles = layout.replicas;
  for (const AxisTiling& entry : layout.tiling) {
    if (__builtin_mul_overflow(tiles, std::uint64_t{entry.partitions}, &tiles)) {
      return std::numeric_limits<std::uint64_t>::max();
    }
  }
  return tiles;
}

}  // namespace

std::string_view element_order_name(ElementOrder order) noexcept {
  switch (order) {
    case ElementOrder::kRowMajor:
      return "row_major";
  }
  return "?";
}

std::string_view memory_class_name(MemoryClass memory_class) noexcept {
  switch (memory_class) {
    case MemoryClass::kStandard:
      return "standard";
    case MemoryClass::kInterleaved:
      return "interleaved";
  }
  return "?";
}

Layout single_tile_layout(ElementType precision) {
  Layout layout;
  layout.precision = precision;
  return layout;
}

Layout split_layout(ElementType precision, std::uint32_t axis, std::uint32_t partitions) {
  Layout layout;
  layout.precision = precision;
  layout.tiling.push_back(AxisTiling{axis, partitions, 1, 1});
  return layout;
}

std::optional<std::string> layout_problem(const Layout& layout, std::size_t rank) {
  if (auto problem = element_type_problem(layout.precision)) return problem;
  if (layout.order != ElementOrder::kRowMajor) {
    return fmt::format("element order {} is not supported", static_cast<unsigned>(layout.order));
  }
  if (layout.memory_class != MemoryClass::kStandard &&
      layout.memory_class != MemoryClass::kInterleaved) {
    return fmt::format("memory class {} is unknown", static_cast<unsigned>(layout.memory_class));
  }
  if (layout.alignment == 0 || !std::has_single_bit(layout.alignment)) {
    return fmt::format("alignment {} is not a power of two", layout.alignment);
  }
  if (layout.replicas == 0) return "replicas must be at least 1";
  std::vector<bool> split(rank, false);
  for (std::size_t i = 0; i < layout.tiling.size(); ++i) {
    const AxisTiling& entry = layout.tiling[i];
    if (entry.axis >= rank) {
      return fmt::format("tiling[{}]: axis {} is not an axis of a rank-{} tensor", i, entry.axis,
                         rank);
    }
    if (split[entry.axis]) return fmt::format("tiling[{}]: axis {} is tiled twice", i, entry.axis);
    split[entry.axis] = true;
    if (entry.partitions == 0 || entry.block_size == 0 || entry.padding_multiple == 0) {
      return fmt::format(
          "tiling[{}]: partitions, block size and padding multiple must be at "
          "least 1 (have {}, {}, {})",
          i, entry.partitions, entry.block_size, entry.padding_multiple);
    }
  }
  const std::uint64_t tiles = saturated_tile_product(layout);
  if (tiles > static_cast<std::uint64_t>(target::kTileCount)) {
    return fmt::format("needs {} tiles, more than the chip's {}", tiles, target::kTileCount);
  }
  return std::nullopt;
}

std::uint32_t tile_count(const Layout& layout) {
  const std::uint64_t tiles = saturated_tile_product(layout);
  if (tiles == 0 || tiles > static_cast<std::uint64_t>(target::kTileCount)) {
    throw LayoutError(fmt::format("{}: occupies {} tiles; a layout takes 1 to {}",
                                  format_layout(layout), tiles, target::kTileCount));
  }
  return static_cast<std::uint32_t>(tiles);
}

std::string format_layout(const Layout& layout) {
  std::string text =
      fmt::format("{} {}", format_element_type(layout.precision), element_order_name(layout.order));
  for (const AxisTiling& entry : layout.tiling) {
    text += fmt::format(" split(axis {}: {} × block {}, pad {})", entry.axis, entry.partitions,
                        entry.block_size, entry.padding_multiple);
  }
  text += fmt::format(" replicas {} {} align {}", layout.replicas,
                      memory_class_name(layout.memory_class), layout.alignment);
  return text;
}

}  // namespace tessera::compiler
