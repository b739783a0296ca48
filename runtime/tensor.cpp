#include "runtime/tensor.hpp"

#include <algorithm>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "support/checked.hpp"
#include "support/error.hpp"

namespace tessera::runtime {

std::uint64_t element_count(std::span<const std::uint64_t> shape) {
  // A zero dimension makes the product 0 however large the others are, so
  // the result does not depend on which dimension comes first.
  if (std::ranges::find(shape, std::uint64_t{0}) != shape.end()) return 0;
  std::uint64_t count = 1;
  for (const auto dimension : shape) {
    count = checked_mul<std::uint64_t>(count, dimension, "shape product");
  }
  return count;
}

std::uint64_t tensor_bytes(schema::DType dtype, std::span<const std::uint64_t> shape) {
  return checked_mul<std::uint64_t>(element_count(shape), schema::dtype_size(dtype),
                                    "tensor byte size");
}

std::string describe_shape(schema::DType dtype, std::span<const std::uint64_t> shape) {
  return fmt::format("{}[{}]", schema::dtype_name(dtype), fmt::join(shape, ", "));
}

std::string describe_shape(schema::DType dtype, std::span<const std::uint32_t> shape) {
  return fmt::format("{}[{}]", schema::dtype_name(dtype), fmt::join(shape, ", "));
}

std::string describe_shape(const schema::Binding& binding) {
  return describe_shape(binding.dtype, std::span<const std::uint32_t>(binding.shape));
}

TensorShape binding_shape(const schema::Binding& binding) {
  return TensorShape(binding.shape.begin(), binding.shape.end());
}

HostTensor::HostTensor(schema::DType dtype, TensorShape shape)
    : dtype_(dtype), shape_(std::move(shape)) {
  bytes_.resize(checked_cast<std::size_t>(tensor_bytes(dtype_, shape_), "tensor byte size"));
}

HostTensor::HostTensor(schema::DType dtype, TensorShape shape, std::vector<std::uint8_t> bytes)
    : dtype_(dtype), shape_(std::move(shape)), bytes_(std::move(bytes)) {
  const std::uint64_t expected = tensor_bytes(dtype_, shape_);
  if (bytes_.size() != expected) {
    throw UsageError(
        fmt::format("{} needs {} bytes, got {}", describe_shape(), expected, bytes_.size()));
  }
}

std::uint64_t HostTensor::element_count() const noexcept {
  // The product was checked when the tensor was built; with a zero dimension
  // it is 0 even if a partial product wraps on the way.
  std::uint64_t count = 1;
  for (const auto dimension : shape_) count *= dimension;
  return count;
}

std::string HostTensor::describe_shape() const { return runtime::describe_shape(dtype_, shape_); }

void check_matches(const HostTensor& tensor, const schema::Binding& binding,
                   std::string_view what) {
  check_matches(tensor.dtype(), tensor.shape(), binding, what);
}

void check_matches(schema::DType dtype, std::span<const std::uint64_t> shape,
                   const schema::Binding& binding, std::string_view what) {
  const bool same_shape = std::ranges::equal(
      shape, binding.shape, [](std::uint64_t a, std::uint32_t b) { return a == b; });
  if (dtype == binding.dtype && same_shape) return;
  std::string message = fmt::format("{} '{}': expected {}, got {}", what, binding.name,
                                    describe_shape(binding), describe_shape(dtype, shape));
  if (binding.dtype == schema::DType::kF8F143 && dtype != binding.dtype) {
    // NumPy has no such dtype; users reach for the nearest float instead.
    message += " (f8f143 data is stored as its raw bytes in a uint8 '|u1' .npy)";
  }
  throw InputError(std::move(message));
}

}  // namespace tessera::runtime
