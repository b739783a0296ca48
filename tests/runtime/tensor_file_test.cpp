// Tensor files on disk: .npy and .bin chosen by extension, checked against
// the binding they are read for, and written atomically.
#include "runtime/tensor_file.hpp"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/error.hpp"
#include "tests/testing/scratch.hpp"

namespace tessera::runtime {
namespace {

using schema::DType;
using testing::ScratchDirectory;

constexpr DType kAllDtypes[] = {DType::kF32,    DType::kF16, DType::kU32,
                                DType::kF8F143, DType::kI32, DType::kU8};

schema::Binding binding(std::string name, DType dtype, std::vector<std::uint32_t> shape) {
  schema::Binding result;
  result.name = std::move(name);
  result.dtype = dtype;
  result.shape = std::move(shape);
  return result;
}

schema::Binding binding_for(const HostTensor& tensor, std::string name = "x") {
  return binding(std::move(name), tensor.dtype(),
                 std::vector<std::uint32_t>(tensor.shape().begin(), tensor.shape().end()));
}

// A tensor whose bytes are all different from their neighbours.
HostTensor patterned(DType dtype, TensorShape shape) {
  HostTensor tensor(dtype, std::move(shape));
  std::uint8_t value = 1;
  for (auto& byte : tensor.mutable_bytes()) byte = value = static_cast<std::uint8_t>(value * 7 + 3);
  return tensor;
}

std::vector<std::uint8_t> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

// The text of the error `read` throws as E; "accepted" when it throws nothing.
template <typename E, typename F>
std::string error_text(F&& read) {
  try {
    read();
  } catch (const E& error) {
    return error.what();
  }
  return "accepted";
}

TEST(TensorFile, FormatComesFromTheExtension) {
  EXPECT_EQ(tensor_file_format("a/b.npy"), TensorFileFormat::kNpy);
  EXPECT_EQ(tensor_file_format("b.bin"), TensorFileFormat::kBin);
  EXPECT_EQ(error_text<UsageError>([] { tensor_file_format("x.txt"); }),
            "x.txt: unknown tensor file extension '.txt'; accepted: .npy (NumPy array), .bin "
            "(raw bytes)");
  EXPECT_EQ(error_text<UsageError>([] { tensor_file_format("x"); }),
            "x: unknown tensor file extension (none); accepted: .npy (NumPy array), .bin (raw "
            "bytes)");
  EXPECT_THROW(tensor_file_format("x.NPY"), UsageError);
  EXPECT_THROW(tensor_file_format("x.npz"), UsageError);
}

TEST(TensorFile, EveryDtypeAndShapeRoundTripsThroughBothFormats) {
  const ScratchDirectory scratch;
  for (const DType dtype : kAllDtypes) {
    for (const auto& shape :
         {TensorShape{}, TensorShape{0}, TensorShape{1}, TensorShape{3, 5, 7}}) {
      const HostTensor tensor = patterned(dtype, shape);
      for (const char* extension : {".npy", ".bin"}) {
        SCOPED_TRACE(tensor.describe_shape() + extension);
        const std::string path = scratch.path(std::string("t") + extension);
        write_tensor_file(path, tensor);
        EXPECT_EQ(read_tensor_file(path, binding_for(tensor)), tensor);
        EXPECT_FALSE(std::filesystem::exists(path + ".partial"));
      }
    }
  }
}

TEST(TensorFile, NpyFileHoldsExactlyTheEncodedBytes) {
  const ScratchDirectory scratch;
  const HostTensor tensor = patterned(DType::kF16, {4, 3});
  write_tensor_file(scratch.path("t.npy"), tensor);
  EXPECT_EQ(file_bytes(scratch.path("t.npy")), encode_npy(tensor));
  EXPECT_EQ(read_npy_file(scratch.path("t.npy")), tensor);
}

TEST(TensorFile, BinFileHoldsTheBytesAlone) {
  const ScratchDirectory scratch;
  const HostTensor tensor = patterned(DType::kI32, {2, 2});
  write_tensor_file(scratch.path("t.bin"), tensor);
  const auto bytes = file_bytes(scratch.path("t.bin"));
  EXPECT_EQ(bytes, std::vector<std::uint8_t>(tensor.bytes().begin(), tensor.bytes().end()));
}

TEST(TensorFile, F8F143TravelsAsAUint8Npy) {
  const ScratchDirectory scratch;
  const HostTensor quantized = patterned(DType::kF8F143, {2, 8});
  const std::string path = scratch.path("q.npy");
  write_tensor_file(path, quantized);
  // Without a binding it is what numpy sees: uint8.
  const HostTensor as_u8 = read_npy_file(path);
  EXPECT_EQ(as_u8.dtype(), DType::kU8);
  EXPECT_EQ(as_u8.shape(), quantized.shape());
  EXPECT_TRUE(std::ranges::equal(as_u8.bytes(), quantized.bytes()));
  // A uint8 .npy (as numpy would write it) read for an f8f143 binding.
  write_tensor_file(path, as_u8);
  EXPECT_EQ(read_tensor_file(path, binding("q", DType::kF8F143, {2, 8})), quantized);
  // And for a u8 binding it stays u8.
  EXPECT_EQ(read_tensor_file(path, binding("q", DType::kU8, {2, 8})), as_u8);
}

TEST(TensorFile, F8F143BindingRefusesAFloatNpy) {
  const ScratchDirectory scratch;
  const std::string path = scratch.path("q.npy");
  write_tensor_file(path, HostTensor(DType::kF16, {4}));
  EXPECT_EQ(error_text<InputError>(
                [&] { read_tensor_file(path, binding("q", DType::kF8F143, {4}), "weight"); }),
            path +
                ": weight 'q': expected f8f143[4], got f16[4] (f8f143 data is stored as its raw "
                "bytes in a uint8 '|u1' .npy)");
}

TEST(TensorFile, NpyDtypeMismatchNamesFileAndBinding) {
  const ScratchDirectory scratch;
  const std::string path = scratch.path("x.npy");
  write_tensor_file(path, HostTensor(DType::kF32, {4, 8}));
  EXPECT_EQ(error_text<InputError>([&] {
              read_tensor_file(path, binding("x", DType::kF16, {4, 8}), "input");
            }),
            path + ": input 'x': expected f16[4, 8], got f32[4, 8]");
}

TEST(TensorFile, NpyShapeMismatchNamesFileAndBinding) {
  const ScratchDirectory scratch;
  const std::string path = scratch.path("x.npy");
  write_tensor_file(path, HostTensor(DType::kF16, {8, 4}));
  EXPECT_EQ(error_text<InputError>([&] {
              read_tensor_file(path, binding("x", DType::kF16, {4, 8}));
            }),
            path + ": binding 'x': expected f16[4, 8], got f16[8, 4]");
  // The same element count in another rank is still another shape.
  write_tensor_file(path, HostTensor(DType::kF16, {32}));
  EXPECT_THROW(read_tensor_file(path, binding("x", DType::kF16, {4, 8})), InputError);
}

TEST(TensorFile, ADefectiveFileIsReportedAsSuchWhateverTheBinding) {
  // A header for a million elements with the data cut off: the file is wrong
  // before it is the wrong file, and nothing is allocated for the million.
  const ScratchDirectory scratch;
  const std::string path = scratch.path("x.npy");
  auto bytes = encode_npy(HostTensor(DType::kF16, {1000000}));
  bytes.erase(bytes.end() - 2000000, bytes.end());
  write_bytes(path, bytes);
  const std::string expected = path +
                               ": the data is 0 bytes but the header's f16[1000000] needs 2000000 "
                               "(2000000 bytes missing)";
  EXPECT_EQ(error_text<InputError>([&] { read_tensor_file(path, binding("x", DType::kF16, {4})); }),
            expected);
  EXPECT_EQ(
      error_text<InputError>([&] { read_tensor_file(path, binding("x", DType::kF16, {1000000})); }),
      expected);
}

TEST(TensorFile, TruncatedAndTrailingDataNameTheFileAndBothSizes) {
  const ScratchDirectory scratch;
  const std::string path = scratch.path("x.npy");
  const HostTensor tensor = patterned(DType::kF32, {2, 3});
  auto bytes = encode_npy(tensor);
  bytes.pop_back();
  write_bytes(path, bytes);
  EXPECT_EQ(error_text<InputError>([&] { read_tensor_file(path, binding_for(tensor)); }),
            path + ": the data is 23 bytes but the header's f32[2, 3] needs 24 (1 byte missing)");
  bytes.push_back(0);
  bytes.push_back(0);
  write_bytes(path, bytes);
  EXPECT_EQ(error_text<InputError>([&] { read_npy_file(path); }),
            path + ": the data is 25 bytes but the header's f32[2, 3] needs 24 (1 byte too many)");
}

TEST(TensorFile, BadMagicAndShortHeaderNameTheFile) {
  const ScratchDirectory scratch;
  const std::string path = scratch.path("x.npy");
  write_bytes(path, {'P', 'K', 3, 4, 0, 0, 0, 0});
  EXPECT_EQ(error_text<InputError>([&] { read_npy_file(path); }),
            path +
                ": not a .npy file: it starts with 'PK\\x03\\x04\\x00\\x00', not the magic "
                "string '\\x93NUMPY'");
  auto bytes = encode_npy(HostTensor(DType::kU8, {3}));
  bytes[8] = 0xF0;
  write_bytes(path, bytes);
  EXPECT_EQ(error_text<InputError>([&] { read_npy_file(path); }),
            path +
                ": the header length 240 runs past the end of the file (121 bytes follow the "
                "10-byte prefix)");
}

TEST(TensorFile, BinOfTheWrongSizeNamesBothSizes) {
  const ScratchDirectory scratch;
  const std::string path = scratch.path("x.bin");
  write_bytes(path, std::vector<std::uint8_t>(20));
  EXPECT_EQ(error_text<InputError>([&] {
              read_tensor_file(path, binding("x", DType::kF32, {2, 3}), "input");
            }),
            path + ": the file is 20 bytes but input 'x' (f32[2, 3]) needs 24");
  write_bytes(path, std::vector<std::uint8_t>(28));
  EXPECT_THROW(read_tensor_file(path, binding("x", DType::kF32, {2, 3})), InputError);
  write_bytes(path, std::vector<std::uint8_t>(24));
  EXPECT_EQ(read_tensor_file(path, binding("x", DType::kF32, {2, 3})),
            HostTensor(DType::kF32, {2, 3}));
}

TEST(TensorFile, BinForABindingTooLargeToAddressIsAnArithmeticError) {
  const ScratchDirectory scratch;
  const std::string path = scratch.path("x.bin");
  write_bytes(path, {});
  EXPECT_THROW(read_tensor_file(path, binding("x", DType::kF32, {0xFFFFFFFF, 0xFFFFFFFF, 2})),
               ArithmeticError);
}

TEST(TensorFile, UnknownExtensionIsAUsageErrorAndWritesNothing) {
  const ScratchDirectory scratch;
  const std::string path = scratch.path("x.txt");
  EXPECT_THROW(read_tensor_file(path, binding("x", DType::kU8, {1})), UsageError);
  EXPECT_THROW(write_tensor_file(path, HostTensor(DType::kU8, {1})), UsageError);
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".partial"));
}

TEST(TensorFile, MissingFileIsAnIoErrorNamingIt) {
  const ScratchDirectory scratch;
  const std::string path = scratch.path("missing.npy");
  EXPECT_EQ(error_text<IoError>([&] { read_tensor_file(path, binding("x", DType::kU8, {1})); }),
            path + ": cannot open: No such file or directory");
  EXPECT_THROW(read_tensor_file(scratch.path("missing.bin"), binding("x", DType::kU8, {1})),
               IoError);
}

TEST(TensorFile, DirectoryIsNotATensorFile) {
  const ScratchDirectory scratch;
  const std::string path = scratch.path("dir.npy");
  std::filesystem::create_directory(path);
  EXPECT_EQ(error_text<IoError>([&] { read_npy_file(path); }), path + ": not a regular file");
}

TEST(TensorFile, FailedWriteLeavesThePreviousFileIntact) {
  const ScratchDirectory scratch;
  const std::string path = scratch.path("x.npy");
  const HostTensor before = patterned(DType::kU32, {3});
  write_tensor_file(path, before);
  // A directory where the old writer put its temporary file is no longer
  // in the way (support/atomic_file.hpp picks a fresh name)...
  std::filesystem::create_directory(path + ".partial");
  write_tensor_file(path, patterned(DType::kU32, {5}));
  EXPECT_EQ(read_npy_file(path), patterned(DType::kU32, {5}));
  EXPECT_TRUE(std::filesystem::is_directory(path + ".partial"));  // not ours to remove
  // ...and a failed rename keeps what is there: a non-empty directory,
  // which rename cannot replace.
  const std::string blocked = scratch.path("y.bin");
  std::filesystem::create_directories(blocked + "/inside");
  const std::string error =
      error_text<IoError>([&] { write_tensor_file(blocked, HostTensor(DType::kU8, {4})); });
  EXPECT_EQ(error.rfind(blocked + ": cannot rename the temporary file into place: ", 0), 0u)
      << error;
  EXPECT_TRUE(std::filesystem::is_directory(blocked + "/inside"));
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(scratch.path(""))) {
    ++entries;
  }
  EXPECT_EQ(entries, 3u) << "x.npy, x.npy.partial and y.bin, no temporary file";
}

TEST(TensorFile, WriteIntoAMissingDirectoryIsAnIoError) {
  const ScratchDirectory scratch;
  EXPECT_THROW(write_tensor_file(scratch.path("no/such/dir/x.npy"), HostTensor(DType::kU8, {1})),
               IoError);
}

TEST(TensorFile, OverwritingReplacesTheWholeFile) {
  const ScratchDirectory scratch;
  const std::string path = scratch.path("x.bin");
  write_tensor_file(path, HostTensor(DType::kU8, {100}));
  write_tensor_file(path, patterned(DType::kU8, {3}));
  EXPECT_EQ(file_bytes(path).size(), 3u);
}

}  // namespace
}  // namespace tessera::runtime
