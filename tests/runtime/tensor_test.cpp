// HostTensor: byte counts checked at construction, shape descriptions, and
// matching a tensor against a binding.
#include "runtime/tensor.hpp"

#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

#include "support/error.hpp"

namespace tessera::runtime {
namespace {

using schema::DType;

constexpr auto kMax64 = std::numeric_limits<std::uint64_t>::max();

schema::Binding binding(std::string name, DType dtype, std::vector<std::uint32_t> shape) {
  schema::Binding result;
  result.name = std::move(name);
  result.dtype = dtype;
  result.shape = std::move(shape);
  return result;
}

TEST(HostTensor, ZeroFilledHasTheBytesOfItsShape) {
  const HostTensor tensor(DType::kF16, {2, 3});
  EXPECT_EQ(tensor.dtype(), DType::kF16);
  EXPECT_EQ(tensor.shape(), (TensorShape{2, 3}));
  EXPECT_EQ(tensor.element_count(), 6u);
  EXPECT_EQ(tensor.byte_size(), 12u);
  EXPECT_EQ(tensor.bytes().size(), 12u);
  for (const auto byte : tensor.bytes()) EXPECT_EQ(byte, 0);
}

TEST(HostTensor, ScalarHasOneElement) {
  const HostTensor tensor(DType::kI32, {}, {1, 2, 3, 4});
  EXPECT_EQ(tensor.element_count(), 1u);
  EXPECT_EQ(tensor.describe_shape(), "i32[]");
}

TEST(HostTensor, AZeroDimensionMeansNoBytesWhateverTheOthers) {
  // The other dimensions' product alone would overflow 64 bits.
  const HostTensor tensor(DType::kF32, {std::uint64_t{1} << 40, std::uint64_t{1} << 40, 0});
  EXPECT_EQ(tensor.element_count(), 0u);
  EXPECT_EQ(tensor.byte_size(), 0u);
}

TEST(HostTensor, WrongByteCountIsAUsageError) {
  try {
    const HostTensor tensor(DType::kF32, {2, 3}, std::vector<std::uint8_t>(20));
    FAIL() << "expected UsageError";
  } catch (const UsageError& error) {
    EXPECT_STREQ(error.what(), "f32[2, 3] needs 24 bytes, got 20");
  }
  EXPECT_THROW(HostTensor(DType::kU8, {4}, std::vector<std::uint8_t>(5)), UsageError);
}

TEST(HostTensor, ShapeWhoseByteSizeOverflowsIsAnArithmeticError) {
  EXPECT_THROW(HostTensor(DType::kU8, {kMax64, 2}), ArithmeticError);
  // The element count fits; times the dtype size it does not.
  EXPECT_THROW(HostTensor(DType::kF32, {kMax64 / 2}), ArithmeticError);
  EXPECT_THROW(tensor_bytes(DType::kF16, {{std::uint64_t{1} << 63}}), ArithmeticError);
}

TEST(HostTensor, BytesAreWritableInPlace) {
  HostTensor tensor(DType::kU8, {3});
  tensor.mutable_bytes()[1] = 7;
  EXPECT_EQ(tensor, HostTensor(DType::kU8, {3}, {0, 7, 0}));
  EXPECT_EQ(std::move(tensor).take_bytes(), (std::vector<std::uint8_t>{0, 7, 0}));
}

TEST(HostTensor, EqualityComparesDtypeShapeAndBytes) {
  const HostTensor a(DType::kU8, {2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(a, HostTensor(DType::kU8, {2, 2}, {1, 2, 3, 4}));
  EXPECT_NE(a, HostTensor(DType::kF8F143, {2, 2}, {1, 2, 3, 4}));
  EXPECT_NE(a, HostTensor(DType::kU8, {4}, {1, 2, 3, 4}));
  EXPECT_NE(a, HostTensor(DType::kU8, {2, 2}, {1, 2, 3, 5}));
}

TEST(DescribeShape, NamesDtypeAndDimensions) {
  EXPECT_EQ(HostTensor(DType::kF16, {2, 3}).describe_shape(), "f16[2, 3]");
  EXPECT_EQ(HostTensor(DType::kF8F143, {0}).describe_shape(), "f8f143[0]");
  EXPECT_EQ(describe_shape(binding("x", DType::kU32, {4, 8, 1})), "u32[4, 8, 1]");
  EXPECT_EQ(describe_shape(DType::kF32, std::span<const std::uint64_t>{}), "f32[]");
}

TEST(CheckMatches, AcceptsTheBindingsDtypeAndShape) {
  EXPECT_NO_THROW(
      check_matches(HostTensor(DType::kF16, {4, 8}), binding("x", DType::kF16, {4, 8}), "input"));
  EXPECT_NO_THROW(
      check_matches(HostTensor(DType::kF32, {}), binding("s", DType::kF32, {}), "input"));
}

TEST(CheckMatches, DtypeMismatchNamesTheBinding) {
  try {
    check_matches(HostTensor(DType::kF32, {4, 8}), binding("x", DType::kF16, {4, 8}), "input");
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_STREQ(error.what(), "input 'x': expected f16[4, 8], got f32[4, 8]");
  }
}

TEST(CheckMatches, ShapeMismatchNamesTheBinding) {
  try {
    check_matches(HostTensor(DType::kF16, {8, 4}), binding("w", DType::kF16, {4, 8}), "weight");
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_STREQ(error.what(), "weight 'w': expected f16[4, 8], got f16[8, 4]");
  }
  // Rank differs, element count the same.
  EXPECT_THROW(
      check_matches(HostTensor(DType::kF16, {32}), binding("w", DType::kF16, {4, 8}), "weight"),
      InputError);
  EXPECT_THROW(check_matches(HostTensor(DType::kF16, {4, 8, 1}), binding("w", DType::kF16, {4, 8}),
                             "weight"),
               InputError);
}

TEST(CheckMatches, DimensionsBeyond32BitsNeverMatch) {
  // A binding's dimensions are 32-bit; a tensor's wider one must not be truncated to match.
  EXPECT_THROW(check_matches(HostTensor(DType::kU8, {(std::uint64_t{1} << 32) + 4, 0}),
                             binding("x", DType::kU8, {4, 0}), "input"),
               InputError);
}

TEST(CheckMatches, IsStrictAboutF8F143AndSaysHowItIsStored) {
  try {
    check_matches(HostTensor(DType::kU8, {4}), binding("q", DType::kF8F143, {4}), "weight");
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_STREQ(error.what(),
                 "weight 'q': expected f8f143[4], got u8[4] (f8f143 data is stored as its raw "
                 "bytes in a uint8 '|u1' .npy)");
  }
}

}  // namespace
}  // namespace tessera::runtime
