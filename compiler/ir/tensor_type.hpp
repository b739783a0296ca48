#pragma once
// The type of a graph value: element type (with the f8-f143 scale) and shape.
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

#include "schema/model.hpp"

namespace tessera::compiler {

using schema::DType;
using Shape = std::vector<std::uint32_t>;

inline constexpr std::size_t kMaxRank = 8;

// f8-f143 values are decode(bits) · 2^scale with one scale per tensor, in the
// range the hardware's 6-bit scale fields hold (kernels-siglip-f143.md).
inline constexpr std::int32_t kMinF8Scale = -32;
inline constexpr std::int32_t kMaxF8Scale = 31;

// An element type: the dtype and, for f8-f143 only, the tensor-wide scale
// exponent (zero for every other dtype).
struct ElementType {
  DType dtype = DType::kF32;
  std::int32_t scale = 0;

  friend bool operator==(const ElementType&, const ElementType&) = default;
};

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
// element_count · dtype size; ArithmeticError on overflow.
std::uint64_t byte_size(const TensorType& type);

// "[4, 8]", "[]" for a scalar.
std::string format_shape(std::span<const std::uint32_t> shape);
// "f32", "f8f143(2^-3)".
std::string format_element_type(const ElementType& element);
// "f32[4, 8]".
std::string format_type(const TensorType& type);

}  // namespace tessera::compiler
