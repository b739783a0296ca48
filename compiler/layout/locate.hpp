#pragma once
// ElementLocator: where one element of a tensor lies in a resolved layout —
// which shard (replica 0) and at which byte of that shard's allocation. The
// data-movement lowering asks it for every element or row it moves; it derives
// everything from the ResolvedLayout (resolve.hpp), so shard boundaries and
// strides have one owner.

#include <cstdint>
#include <vector>

#include "compiler/layout/resolve.hpp"

namespace tessera::compiler {

struct ElementPlace {
  std::size_t shard = 0;     // index into ResolvedLayout::shards (a replica-0 shard)
  std::uint64_t offset = 0;  // bytes from the start of the tile's allocation
  friend bool operator==(const ElementPlace&, const ElementPlace&) = default;
};

class ElementLocator {
 public:
  // Keeps a reference: `resolved` must outlive the locator. Not for use by
  // several threads at once (it remembers the last partition it found).
  explicit ElementLocator(const ResolvedLayout& resolved);

  // The element with row-major index `flat_index` of the logical tensor.
  // std::out_of_range past the last element.
  ElementPlace locate(std::uint64_t flat_index) const;
  // The same for a multi-index (one coordinate per axis, each in range).
  ElementPlace locate(std::span<const std::uint64_t> index) const;

  // The same, and how many elements from there along the last axis
  // (index, index + 1 on the last axis, …) lie one after another in that
  // shard: the rest of the shard's row. 1 for a scalar.
  struct Run {
    ElementPlace place;
    std::uint64_t elements = 0;
  };
  Run locate_run(std::span<const std::uint64_t> index) const;

  std::uint32_t element_bytes() const noexcept { return element_bytes_; }

 private:
  const ResolvedLayout& resolved_;
  std::uint32_t element_bytes_ = 0;
  std::uint64_t element_count_ = 0;
  // Per tiling entry: its axis and the first padded coordinate of every partition.
  struct TiledAxis {
    std::uint32_t axis = 0;
    std::vector<std::uint64_t> starts;
    // The partition the last lookup found: element walks mostly stay in it.
    mutable std::uint64_t last = 0;
  };
  std::vector<TiledAxis> tiled_;
  std::vector<std::uint64_t> cell_strides_;  // per tiling entry, in grid cells
};

}  // namespace tessera::compiler
