#pragma once
// The lowering of each family of operations, one file each (lower.hpp lists
// the rules). Every function appends the operation's steps to the context's
// program and allocates its results.

#include <cstdint>
#include <string>

#include "compiler/lower/context.hpp"
#include "compiler/lower/lower.hpp"

namespace tessera::compiler::lower {

// `input` as a broadcast operand of a result of `type` stored in `out`: a
// broadcast operand spread over several tiles would send each of its words
// as a message of its own to every result element that reads it (one result
// tile receives a [H] bias cut one word per tile T times over for a [1, T, H]
// result, each word a receive in its exchange row), and to every result
// tile. Gathered on the result's first tile in a phase of its own, the
// broadcast reads whole runs from one tile (local copies there, equal runs
// merged into a few multicasts elsewhere). An operand that only gains
// leading axes of 1 (a [T, H] position embedding added to [1, T, H]) reads
// each element once: it is read where it is, since gathering it would put
// the whole tensor on one tile. So is an operand larger than
// kMaxGatheredBroadcastBytes (a [T, H] position embedding added to [B, T, H]:
// its rows are whole runs where they lie, and 1.7 MB fits no tile). Anything
// else is read where it is too.
inline constexpr std::uint64_t kMaxGatheredBroadcastBytes = 64 * 1024;

// Whether a broadcast operand lies in pieces so small that reading it where
// it lies makes many small messages into every result tile (a [C] parameter
// cut a word per tile): some shard holds fewer than kMinBroadcastRunBytes.
// Only such operands are gathered first (gathered_broadcast, layer_norm's
// γ and β): one in a few shards of whole runs — SigLIP's biases and
// LayerNorm parameters at --min-shard-bytes 1024 — is multicast from where
// it lies, a run per shard to each result tile, in the operation's own
// phase; gathering it would cost a phase of its own (so400m: 8 phases per
// layer, ~11 k cycles).
inline constexpr std::uint64_t kMinBroadcastRunBytes = 256;
bool lies_in_small_pieces(const Storage& held);
const Storage& gathered_broadcast(LoweringContext& context, ValueId input, const TensorType& type,
                                  const Storage& out, OpId id, std::uint32_t provenance);

// copy, slice, concat, reshape, transpose, broadcast_to (data_movement.cpp)
void lower_data_movement(LoweringContext& context, OpId id, const std::string& described);
// add, reduce_sum (arithmetic.cpp)
void lower_add(LoweringContext& context, OpId id, const std::string& described);
// add's and mul's shared lowering: each operand brought into the result's
// layout (a spread broadcast operand gathered first), then the f32 or f16
// kernel per shard; `name` is the op's, for the dtype error.
void lower_binary_elementwise(LoweringContext& context, OpId id, const std::string& described,
                              std::string_view name, std::string_view f32_kernel,
                              std::string_view f16_kernel);
void lower_reduce_sum(LoweringContext& context, OpId id, const std::string& described);
// repeat (repeat.cpp)
void lower_repeat(LoweringContext& context, OpId id, const std::string& described);
// mul, gelu, convert (pointwise.cpp)
void lower_pointwise(LoweringContext& context, OpId id, const std::string& described);
// layer_norm, softmax (normalisation.cpp)
void lower_normalisation(LoweringContext& context, OpId id, const std::string& described);
// matmul, block_scale (matmul.cpp)
void lower_matmul(LoweringContext& context, OpId id, const std::string& described);
// attention (attention.cpp)
void lower_attention(LoweringContext& context, OpId id, const std::string& described);

}  // namespace tessera::compiler::lower
