#pragma once
// Which layout the compiler gives a tensor (the one place that decides it).
//
// Every value is split along axis 0 in blocks of whole rows, over as many of
// the first `tiles` logical tiles as it has blocks — but no more tiles than
// leave each at least `min_shard_bytes` (one tile when the tensor is smaller). A block is the fewest
// rows (1, 2 or 4) whose bytes are a whole number of words, so every shard
// boundary falls on a word of the row-major host tensor: host transfers and
// exchange transfers of whole shards move whole words (an odd f16 or f8 tail
// exists only at the very end, inside the allocation's alignment padding).
// A scalar lies on tile 0. Data lives in interleaved memory (region 1),
// leaving region 0 to code and exchange rows, so a row never shares a memory
// element with the data it moves (reference §2.2).

#include <cstdint>

#include "compiler/ir/tensor_type.hpp"
#include "compiler/layout/layout.hpp"

namespace tessera::compiler::lower {

Layout default_layout(const TensorType& type, std::uint32_t tiles, std::uint64_t min_shard_bytes = 0);

}  // namespace tessera::compiler::lower
