#pragma once
// The lowering of each family of operations, one file each (lower.hpp lists
// the rules). Every function appends the operation's steps to the context's
// program and allocates its results.

#include <string>

#include "compiler/lower/context.hpp"
#include "compiler/lower/lower.hpp"

namespace tessera::compiler::lower {

// copy, slice, concat, reshape, transpose, broadcast_to (data_movement.cpp)
void lower_data_movement(LoweringContext& context, OpId id, const std::string& described);
// add, reduce_sum (arithmetic.cpp)
void lower_add(LoweringContext& context, OpId id, const std::string& described);
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
