#pragma once
// The type of a graph value: element type (with the f8-f143 scaling) and shape.
//
// Shapes are row-major extents of at most kMaxRank axes, each at least 1: a
// tensor with a zero extent has no use on the chip and would make every
// layout degenerate, so it is rejected where a shape is made. Rank 0 is a
// scalar (one element). Element and byte counts are computed with checked
// 64-bit arithmetic; a shape whose count overflows is rejected as well.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kernels/f143.hpp"
#include "schema/model.hpp"

namespace tessera::compiler {

using schema::DType;
using Shape = std::vector<std::uint32_t>;

inline constexpr std::size_t kMaxRank = 8;

// f8-f143 values are decode(bits) · 2^scale, the scale a power-of-two
// exponent in the range the hardware's 6-bit scale fields hold
// (kernels-siglip-f143.md §3; kernels/f143.hpp owns the codec and the range).
inline constexpr std::int32_t kMinF8Scale = kernels::f143::kMinScale;
inline constexpr std::int32_t kMaxF8Scale = kernels::f143::kMaxScale;

// How an f8-f143 tensor is scaled:
//  - kTensor: one scale for the whole tensor, ElementType::scale (the
//    activations, and every f8 host input or parameter);
//  - kBlock64: one scale per 64 × 64 block of the last two axes [..., K, N]
//    (element (k, n) means decode(code)·2^scales[k/64][n/64], the prior
//    art's weight grid, exactly kernels::f143::BlockScales). Such a value is
//    made only by the block_scale operation, which pairs the codes with
//    their scales; ElementType::scale is 0.
enum class F8Scaling : std::uint8_t { kTensor, kBlock64 };

// An element type: the dtype and, for f8-f143 only, its scaling (and the
// tensor-wide scale exponent; zero for every other dtype and for block
// scales).
struct ElementType {
  DType dtype = DType::kF32;
  std::int32_t scale = 0;
  F8Scaling scaling = F8Scaling::kTensor;

  bool block_scaled() const noexcept { return scaling == F8Scaling::kBlock64; }
  friend bool operator==(const ElementType&, const ElementType&) = default;
};

// f8-f143 with one scale per 64 × 64 block of the last two axes.
inline constexpr ElementType kBlockScaledF8{DType::kF8F143, 0, F8Scaling::kBlock64};

struct TensorType {
  ElementType element;
  Shape shape;

  DType dtype() const noexcept { return element.dtype; }
  friend bool operator==(const TensorType&, const TensorType&) = default;
};

// Why `element` is not a valid element type, or nullopt.
std::optional<std::string> element_type_problem(const ElementType& element);
// Why `shape` is not a valid shape (rank, zero extent, element count
// overflowing 64 bits), or nullopt.
std::optional<std::string> shape_problem(std::span<const std::uint32_t> shape);
// Why `type` is not a valid tensor type (either of the above, or its byte
// size overflowing 64 bits), or nullopt.
std::optional<std::string> tensor_type_problem(const TensorType& type);

// Product of the extents; ArithmeticError when it overflows 64 bits.
std::uint64_t element_count(std::span<const std::uint32_t> shape);
// element_count · dtype size; ArithmeticError on overflow. A block-scaled
// value counts its codes only (its scales are the block_scale's other input).
std::uint64_t byte_size(const TensorType& type);

// "[4, 8]", "[]" for a scalar.
std::string format_shape(std::span<const std::uint32_t> shape);
// "f32", "f8f143(2^-3)", "f8f143(64x64 blocks)".
std::string format_element_type(const ElementType& element);
// "f32[4, 8]".
std::string format_type(const TensorType& type);

}  // namespace tessera::compiler
