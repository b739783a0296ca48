#include "compiler/ir/tensor_type.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "support/checked.hpp"

namespace tessera::compiler {

std::optional<std::string> element_type_problem(const ElementType& element) {
  switch (element.dtype) {
    case DType::kF32:
    case DType::kF16:
    case DType::kU32:
    case DType::kF8F143:
    case DType::kI32:
    case DType::kU8:
      break;
    default:
      return fmt::format("unknown dtype {}", static_cast<unsigned>(element.dtype));
  }
  if (element.scaling != F8Scaling::kTensor && element.scaling != F8Scaling::kBlock64) {
    return fmt::format("unknown f8 scaling {}", static_cast<unsigned>(element.scaling));
  }
  if (element.dtype == DType::kF8F143) {
    if (element.block_scaled() && element.scale != 0) {
      return fmt::format("a block-scaled f8f143 has no tensor-wide scale, but scale is {}",
                         element.scale);
    }
    if (element.scale < kMinF8Scale || element.scale > kMaxF8Scale) {
      return fmt::format("f8f143 scale {} is outside [{}, {}]", element.scale, kMinF8Scale,
                         kMaxF8Scale);
    }
  } else if (element.scale != 0) {
    return fmt::format("{} has no scale, but scale is {}", schema::dtype_name(element.dtype),
                       element.scale);
  } else if (element.block_scaled()) {
    return fmt::format("only f8f143 is block-scaled, not {}", schema::dtype_name(element.dtype));
  }
  return std::nullopt;
}

std::optional<std::string> shape_problem(std::span<const std::uint32_t> shape) {
  if (shape.size() > kMaxRank) {
    return fmt::format("shape {} has rank {}, more than {}", format_shape(shape), shape.size(),
                       kMaxRank);
  }
  for (std::size_t axis = 0; axis < shape.size(); ++axis) {
    if (shape[axis] == 0) {
      return fmt::format("shape {} has a zero extent on axis {}", format_shape(shape), axis);
    }
  }
  try {
    (void)element_count(shape);
  } catch (const ArithmeticError&) {
    return fmt::format("shape {} has more than 2^64 elements", format_shape(shape));
  }
  return std::nullopt;
}

std::optional<std::string> tensor_type_problem(const TensorType& type) {
  if (auto problem = element_type_problem(type.element)) return problem;
  if (auto problem = shape_problem(type.shape)) return problem;
  try {
    (void)byte_size(type);
  } catch (const ArithmeticError&) {
    return fmt::format("{} has more than 2^64 bytes", format_type(type));
  }
  return std::nullopt;
}

std::uint64_t element_count(std::span<const std::uint32_t> shape) {
  std::uint64_t count = 1;
  for (const std::uint32_t extent : shape) {
    count = checked_mul<std::uint64_t>(count, extent, "shape product");
  }
  return count;
}

std::uint64_t byte_size(const TensorType& type) {
  return checked_mul<std::uint64_t>(element_count(type.shape), schema::dtype_size(type.dtype()),
                                    "tensor bytes");
}

std::string format_shape(std::span<const std::uint32_t> shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

std::string format_element_type(const ElementType& element) {
  if (element.dtype == DType::kF8F143) {
    if (element.block_scaled()) {
      return fmt::format("f8f143({}x{} blocks)", kernels::f143::kBlockRows,
                         kernels::f143::kBlockColumns);
    }
    return fmt::format("f8f143(2^{})", element.scale);
  }
  return std::string(schema::dtype_name(element.dtype));
}

std::string format_type(const TensorType& type) {
  return format_element_type(type.element) + format_shape(type.shape);
}

}  // namespace tessera::compiler
