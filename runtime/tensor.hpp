#pragma once
// A tensor value on the host: what a caller hands the runtime for an input
// binding and gets back for an output. Row-major, little-endian element bytes,
// exactly product(shape) · dtype_size of them; the constructors refuse any
// other count, so every HostTensor is self-consistent.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "schema/model.hpp"

namespace tessera::runtime {

using TensorShape = std::vector<std::uint64_t>;

// product(shape), or ArithmeticError when it overflows 64 bits. An empty shape
// (a scalar) has one element; a shape with a zero dimension has none, whatever
// the other dimensions are.
std::uint64_t element_count(std::span<const std::uint64_t> shape);

// product(shape) · dtype_size(dtype), or ArithmeticError when it overflows.
std::uint64_t tensor_bytes(schema::DType dtype, std::span<const std::uint64_t> shape);

// "f16[2, 3]"; a scalar is "f32[]".
std::string describe_shape(schema::DType dtype, std::span<const std::uint64_t> shape);
std::string describe_shape(schema::DType dtype, std::span<const std::uint32_t> shape);
// The binding's dtype and shape, e.g. "f16[4, 8]".
std::string describe_shape(const schema::Binding& binding);

// A binding's shape widened to a TensorShape.
TensorShape binding_shape(const schema::Binding& binding);

class HostTensor {
 public:
  // A zero-filled tensor. Throws ArithmeticError when its byte size overflows.
  HostTensor(schema::DType dtype, TensorShape shape);
  // A tensor holding `bytes`. Throws UsageError unless bytes.size() is exactly
  // tensor_bytes(dtype, shape), ArithmeticError when that overflows.
  HostTensor(schema::DType dtype, TensorShape shape, std::vector<std::uint8_t> bytes);

  schema::DType dtype() const noexcept { return dtype_; }
  const TensorShape& shape() const noexcept { return shape_; }
  // product(shape); cannot overflow (checked at construction).
  std::uint64_t element_count() const noexcept;
  std::uint64_t byte_size() const noexcept { return bytes_.size(); }

  std::span<const std::uint8_t> bytes() const noexcept { return bytes_; }
  // The element bytes, writable in place (their count is fixed).
  std::span<std::uint8_t> mutable_bytes() noexcept { return bytes_; }
  // Moves the bytes out, leaving the tensor empty of bytes: only destroy or
  // assign it afterwards.
  std::vector<std::uint8_t> take_bytes() && { return std::move(bytes_); }

  // "f16[2, 3]".
  std::string describe_shape() const;

  friend bool operator==(const HostTensor&, const HostTensor&) = default;

 private:
  schema::DType dtype_;
  TensorShape shape_;
  std::vector<std::uint8_t> bytes_;
};

// Throws InputError "<what> '<binding name>': expected f16[4, 8], got f32[4, 8]"
// unless the tensor has exactly the binding's dtype and shape. `what` says
// which kind of binding it is ("input", "weight", …). The comparison is
// strict: a u8 tensor does not match an f8f143 binding (read_tensor_file is
// where a uint8 .npy becomes an f8f143 tensor; the message for an f8f143
// binding says so).
void check_matches(const HostTensor& tensor, const schema::Binding& binding, std::string_view what);
// The same for a dtype and shape not yet in a tensor (a file's header).
void check_matches(schema::DType dtype, std::span<const std::uint64_t> shape,
                   const schema::Binding& binding, std::string_view what);

}  // namespace tessera::runtime
