// Properties of tensor files: random tensors round-trip exactly, and a
// damaged .npy file either reads or throws a tessera::Error — never anything
// else, never a crash.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "runtime/tensor_file.hpp"
#include "support/error.hpp"
#include "tests/testing/scratch.hpp"

namespace tessera::runtime {
namespace {

using schema::DType;

rc::Gen<DType> arbitrary_dtype() {
  return rc::gen::element(DType::kF32, DType::kF16, DType::kU32, DType::kF8F143, DType::kI32,
                          DType::kU8);
}

// Mostly small tensors with random bytes; sometimes an empty one whose other
// dimensions are anything up to 2^64 - 1 (long digits in the header).
rc::Gen<HostTensor> arbitrary_tensor() {
  return rc::gen::exec([] {
    const DType dtype = *arbitrary_dtype();
    const auto rank = *rc::gen::inRange<std::size_t>(0, 5);
    TensorShape shape;
    if (*rc::gen::inRange(0, 8) == 0) {
      shape = *rc::gen::container<TensorShape>(rank, rc::gen::arbitrary<std::uint64_t>());
      shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(
                                       *rc::gen::inRange<std::size_t>(0, shape.size() + 1)),
                   0);
    } else {
      shape = *rc::gen::container<TensorShape>(rank, rc::gen::inRange<std::uint64_t>(0, 7));
    }
    auto bytes = *rc::gen::container<std::vector<std::uint8_t>>(
        static_cast<std::size_t>(tensor_bytes(dtype, shape)), rc::gen::arbitrary<std::uint8_t>());
    return HostTensor(dtype, std::move(shape), std::move(bytes));
  });
}

// What decode_npy gives back for a tensor: the same, but f8f143 is uint8 in a .npy.
HostTensor as_stored(const HostTensor& tensor) {
  if (tensor.dtype() != DType::kF8F143) return tensor;
  return HostTensor(DType::kU8, tensor.shape(),
                    std::vector<std::uint8_t>(tensor.bytes().begin(), tensor.bytes().end()));
}

schema::Binding binding_for(const HostTensor& tensor) {
  schema::Binding binding;
  binding.name = "x";
  binding.dtype = tensor.dtype();
  binding.shape.assign(tensor.shape().begin(), tensor.shape().end());
  return binding;
}

bool fits_a_binding(const HostTensor& tensor) {
  return std::ranges::all_of(tensor.shape(), [](std::uint64_t d) { return d <= 0xFFFFFFFF; });
}

// Decodes damaged bytes: fine if it reads, fine if it throws a tessera::Error.
// Anything else escapes and fails the property.
bool decodes_or_throws_error(const std::vector<std::uint8_t>& bytes) {
  try {
    (void)decode_npy(bytes);
    return true;
  } catch (const Error&) {
    return false;
  }
}

RC_GTEST_PROP(TensorFileProperties, NpyRoundTripsExactlyInMemory, ()) {
  const HostTensor tensor = *arbitrary_tensor();
  const auto bytes = encode_npy(tensor);
  RC_ASSERT(decode_npy(bytes) == as_stored(tensor));
  RC_ASSERT(encode_npy(decode_npy(bytes)) == encode_npy(as_stored(tensor)));
}

RC_GTEST_PROP(TensorFileProperties, FilesRoundTripExactlyForTheirBinding, ()) {
  const HostTensor tensor = *arbitrary_tensor();
  RC_PRE(fits_a_binding(tensor));
  const testing::ScratchDirectory scratch;
  for (const char* name : {"t.npy", "t.bin"}) {
    write_tensor_file(scratch.path(name), tensor);
    RC_ASSERT(read_tensor_file(scratch.path(name), binding_for(tensor)) == tensor);
  }
  RC_ASSERT(read_npy_file(scratch.path("t.npy")) == as_stored(tensor));
}

RC_GTEST_PROP(TensorFileProperties, AnySingleByteCorruptionReadsOrThrowsError, ()) {
  const HostTensor tensor = *arbitrary_tensor();
  auto bytes = encode_npy(tensor);
  const auto at = *rc::gen::inRange<std::size_t>(0, bytes.size());
  const auto value = *rc::gen::distinctFrom(bytes[at]);
  bytes[at] = value;
  const bool read = decodes_or_throws_error(bytes);
  RC_TAG(read ? "still reads" : "refused");
  // Damage to the data alone changes the values, never the acceptance.
  if (at >= bytes.size() - tensor.byte_size()) RC_ASSERT(read);
}

RC_GTEST_PROP(TensorFileProperties, AnyTruncationThrowsError, ()) {
  const HostTensor tensor = *arbitrary_tensor();
  auto bytes = encode_npy(tensor);
  bytes.resize(*rc::gen::inRange<std::size_t>(0, bytes.size()));
  RC_ASSERT(!decodes_or_throws_error(bytes));
}

RC_GTEST_PROP(TensorFileProperties, DamagedFilesReadOrThrowError, ()) {
  // The same through the file reader, which reads the parts it needs from
  // disk instead of holding the whole file.
  const HostTensor tensor = *arbitrary_tensor();
  RC_PRE(fits_a_binding(tensor));
  auto bytes = encode_npy(tensor);
  if (*rc::gen::arbitrary<bool>()) {
    bytes.resize(*rc::gen::inRange<std::size_t>(0, bytes.size()));
  } else {
    const auto at = *rc::gen::inRange<std::size_t>(0, bytes.size());
    bytes[at] = *rc::gen::distinctFrom(bytes[at]);
  }
  const testing::ScratchDirectory scratch;
  const std::string path = scratch.path("t.npy");
  {
    std::FILE* file = std::fopen(path.c_str(), "wb");
    RC_ASSERT(file != nullptr);
    RC_ASSERT(std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size());
    RC_ASSERT(std::fclose(file) == 0);
  }
  try {
    (void)read_tensor_file(path, binding_for(tensor));
  } catch (const Error&) {
  }
  try {
    (void)read_npy_file(path);
  } catch (const Error&) {
  }
}

}  // namespace
}  // namespace tessera::runtime
