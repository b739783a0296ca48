#pragma once
// Layout: how a tensor is stored across tiles (prior art §1.2, HEAD's
// TensorFormat + TensorTiling). It says
//   * the precision (element type, with the f8-f143 scale);
//   * the element order inside a shard (row-major for now; the block orders
//     GEMM needs — AMP left/output, block-major — will be further enum values);
//   * the axis tiling: which axes are split over how many partitions, in
//     whole blocks of `block_size` elements, after padding the axis up to a
//     multiple of `padding_multiple`; plus `replicas` whole copies (broadcast);
//   * the memory class: standard or interleaved (region 1) memory.
//
// A Layout is only a description. resolve() (resolve.hpp) is the single place
// that turns it and a shape into padded shapes, shard extents, allocation
// sizes and host byte ranges (ARCHITECTURE.md decision 7); nothing else may
// compute those facts.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/tensor_type.hpp"
#include "support/error.hpp"

namespace tessera::compiler {

// A layout that cannot hold the tensor: an axis out of range, a zero
// partition count, more tiles than the chip has.
class LayoutError : public Error {
 public:
  using Error::Error;
};

enum class ElementOrder : std::uint8_t { kRowMajor };
enum class MemoryClass : std::uint8_t { kStandard, kInterleaved };

std::string_view element_order_name(ElementOrder order) noexcept;
std::string_view memory_class_name(MemoryClass memory_class) noexcept;

// One split axis. The axis is padded to P = ⌈extent / padding_multiple⌉ ·
// padding_multiple elements and cut into B = ⌈P / block_size⌉ blocks (the last
// one short when block_size does not divide P). Partition i of p takes ⌊B/p⌋
// blocks, plus one if i < B mod p, in order. With B < p the last partitions
// are empty; a partition lying wholly in the padding holds no logical data.
// An entry with partitions = 1 pads an axis without splitting it.
struct AxisTiling {
  std::uint32_t axis = 0;
  std::uint32_t partitions = 1;
  std::uint64_t block_size = 1;
  std::uint64_t padding_multiple = 1;
  friend bool operator==(const AxisTiling&, const AxisTiling&) = default;
};

struct Layout {
  ElementType precision;
  ElementOrder order = ElementOrder::kRowMajor;
  // At most one entry per axis. Their order is the tile packing order: the
  // replica index varies fastest, then the first entry's partition, then the
  // next (prior art's default packing).
  std::vector<AxisTiling> tiling;
  std::uint32_t replicas = 1;
  MemoryClass memory_class = MemoryClass::kStandard;
  // Every per-tile allocation is a multiple of this many bytes and starts at
  // such an address (a power of two). 8 bytes: the 64-bit exchange and host
  // packet granule (target/memory_map.hpp kPairedAlignment).
  std::uint32_t alignment = 8;
  friend bool operator==(const Layout&, const Layout&) = default;
};

// A layout that keeps the whole tensor on one tile.
Layout single_tile_layout(ElementType precision);
// A layout that splits `axis` over `partitions` tiles, element by element.
Layout split_layout(ElementType precision, std::uint32_t axis, std::uint32_t partitions);

// Why `layout` cannot lay out a tensor of rank `rank`, or nullopt.
std::optional<std::string> layout_problem(const Layout& layout, std::size_t rank);

// Tiles the layout occupies: replicas · Π partitions. LayoutError when that
// exceeds the chip's tile count.
std::uint32_t tile_count(const Layout& layout);

// "f32 row_major split(axis 0: 7 × block 1, pad 1) replicas 1 standard align 8".
std::string format_layout(const Layout& layout);

}  // namespace tessera::compiler
