// The SafeTensors reader against files built byte by byte here (not by our
// writer): every rule of the format, each broken one an error naming the
// tensor, before any tensor byte is read.
#include "models/safetensors.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "support/error.hpp"
#include "tests/testing/scratch.hpp"

namespace tessera::models {
namespace {

std::vector<std::uint8_t> file_bytes(const std::string& header, std::size_t data_bytes,
                                     std::uint64_t declared_length = ~std::uint64_t{0}) {
  const std::uint64_t length =
      declared_length == ~std::uint64_t{0} ? header.size() : declared_length;
  std::vector<std::uint8_t> bytes;
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<std::uint8_t>(length >> (8 * i)));
  bytes.insert(bytes.end(), header.begin(), header.end());
  for (std::size_t i = 0; i < data_bytes; ++i) bytes.push_back(static_cast<std::uint8_t>(i));
  return bytes;
}

std::string error_of(const std::vector<std::uint8_t>& bytes) {
  try {
    (void)parse_safetensors_header(bytes);
  } catch (const InputError& error) {
    return error.what();
  }
  return "no error";
}

constexpr const char* kTwoTensors =
    R"({"__metadata__": {"format": "pt"},)"
    R"( "b.weight": {"dtype": "F16", "shape": [2, 3], "data_offsets": [16, 28]},)"
    R"( "a.weight": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})";

TEST(SafeTensors, ReadsAValidHeaderWhateverTheKeyOrder) {
  const auto header = parse_safetensors_header(file_bytes(std::string(kTwoTensors) + "    ", 28));
  ASSERT_EQ(header.tensors.size(), 2u);
  const auto& a = header.tensors.at("a.weight");
  EXPECT_EQ(a.dtype, SafeTensorsDType::kF32);
  EXPECT_EQ(a.shape, (std::vector<std::uint64_t>{4}));
  EXPECT_EQ(a.begin, 0u);
  EXPECT_EQ(a.end, 16u);
  EXPECT_EQ(header.tensors.at("b.weight").dtype, SafeTensorsDType::kF16);
  EXPECT_EQ(header.metadata.at("format"), "pt");
  EXPECT_EQ(header.data_offset, 8 + std::string(kTwoTensors).size() + 4);
}

TEST(SafeTensors, AcceptsEmptyTensorsAndOtherDtypes) {
  EXPECT_EQ(
      error_of(file_bytes(R"({"e": {"dtype": "I64", "shape": [0, 5], "data_offsets": [0, 0]},)"
                          R"( "x": {"dtype": "U8", "shape": [], "data_offsets": [0, 1]}})",
                          1)),
      "no error");
}

TEST(SafeTensors, EveryBrokenRuleIsAnErrorNamingWhatIsWrong) {
  const std::string valid_tensor = R"("t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]})";
  struct Case {
    std::vector<std::uint8_t> bytes;
    const char* expected;
  };
  const Case cases[] = {
      {{1, 2, 3}, "the file is 3 bytes, too short for the 8-byte header length"},
      {file_bytes("{}", 0, 200), "the header length 200 runs past the end of the file (2 bytes"},
      {file_bytes("{}", 0, 100'000'001), "the header length 100000001 exceeds the limit"},
      {file_bytes("[1]", 0), "header: does not start with '{'"},
      {file_bytes("{\"t\": ", 0), "header: is not valid JSON"},
      {file_bytes("{" + valid_tensor + ", " + valid_tensor + "}", 8),
       "header: the key 't' appears twice"},
      {file_bytes(R"({"t": {"dtype": "F32", "shape": [[[2]]], "data_offsets": [0, 8]}})", 8),
       "nests deeper than 3 levels"},
      {file_bytes(R"({"t": {"dtype": "F99", "shape": [2], "data_offsets": [0, 8]}})", 8),
       "t: dtype: unknown dtype 'F99'"},
      {file_bytes(R"({"t": {"dtype": "F32", "shape": [2, -1], "data_offsets": [0, 8]}})", 8),
       "t: shape: dimension -1 is not a non-negative integer"},
      {file_bytes(R"({"t": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", 8),
       "t: data_offsets: [0, 8] hold 8 bytes, but F32 [3] needs 12"},
      {file_bytes(R"({"t": {"dtype": "F16", "shape": [2], "data_offsets": [0, 8]}})", 8),
       "t: data_offsets: [0, 8] hold 8 bytes, but F16 [2] needs 4"},
      {file_bytes(R"({"t": {"dtype": "F32", "shape": [4294967296, 4294967296], )"
                  R"("data_offsets": [0, 8]}})",
                  8),
       "t: shape size in bytes"},
      {file_bytes(R"({"t": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}})", 8),
       "t: data_offsets: [8, 0] ends before it begins"},
      {file_bytes(R"({"t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", 5),
       "t: data_offsets [0, 8] run past the end of the data (5 bytes): the file is truncated"},
      {file_bytes(R"({"t": {"dtype": "F32", "shape": [2]}})", 8),
       "t: the key 'data_offsets' is missing"},
      {file_bytes(R"({"t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8], "x": 1}})", 8),
       "t: unknown key 'x'"},
      {file_bytes(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
                  R"( "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
                  12),
       "b: data_offsets [4, 12] overlap a's [0, 8]"},
      {file_bytes(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
                  R"( "b": {"dtype": "F32", "shape": [2], "data_offsets": [12, 20]}})",
                  20),
       "b: data_offsets [12, 20] leave bytes [8, 12) of the data unused"},
      {file_bytes("{" + valid_tensor + "}", 12),
       "4 bytes after the last tensor's data are not part of any tensor"},
      {file_bytes(R"({"__metadata__": {"format": 1}})", 0),
       "__metadata__.format: must be a string"},
  };
  for (const auto& c : cases) {
    const std::string message = error_of(c.bytes);
    EXPECT_NE(message.find(c.expected), std::string::npos)
        << "expected '" << c.expected << "', got '" << message << "'";
  }
}

TEST(SafeTensors, WritesWhatItReadsAndConvertsFloatsExactly) {
  tessera::testing::ScratchDirectory scratch;
  const std::vector<float> values = {1.0F, -2.5F, 0.1F, 65504.0F, 3.0e-8F, -0.0F};
  const auto f16 = convert_from_f32(SafeTensorsDType::kF16, values);
  const auto bf16 = convert_from_f32(SafeTensorsDType::kBF16, values);
  const auto f32 = convert_from_f32(SafeTensorsDType::kF32, values);
  const std::vector<SafeTensorsEntry> entries = {
      {"x.f32", SafeTensorsDType::kF32, {2, 3}, f32},
      {"x.f16", SafeTensorsDType::kF16, {6}, f16},
      {"x.bf16", SafeTensorsDType::kBF16, {3, 2}, bf16},
  };
  const std::string path = scratch.path("t.safetensors");
  write_safetensors(path, entries, {{"format", "pt"}});
  const SafeTensorsFile file(path);
  EXPECT_EQ(file.data_offset() % 8, 0u);
  ASSERT_NE(file.find("x.bf16"), nullptr);
  EXPECT_EQ(file.find("x.f32")->begin, 0u);  // in the order given
  EXPECT_EQ(file.find("x.f16")->begin, 24u);
  EXPECT_EQ(file.metadata().at("format"), "pt");
  EXPECT_EQ(file.find("nothing"), nullptr);

  std::vector<float> back(6);
  convert_to_f32(SafeTensorsDType::kF32, file.read(*file.find("x.f32")), back);
  EXPECT_EQ(back, values);
  // f16: 0.1 → 0x2E66 = 0.0999755859375; 3e-8 is 0.503 units of the
  // smallest subnormal 2^−24, so it rounds to one unit.
  convert_to_f32(SafeTensorsDType::kF16, file.read(*file.find("x.f16")), back);
  EXPECT_EQ(back, (std::vector<float>{1.0F, -2.5F, 0.0999755859375F, 65504.0F, 0x1.0p-24F, -0.0F}));
  // bf16 keeps the top 16 bits, rounded: 0.1 (0x3DCCCCCD) → 0x3DCD = 0.10009765625;
  // 65504 (0x477FE000) → 0x4780 = 65536.
  convert_to_f32(SafeTensorsDType::kBF16, file.read(*file.find("x.bf16")), back);
  EXPECT_EQ(back[2], 0.10009765625F);
  EXPECT_EQ(back[3], 65536.0F);
  EXPECT_EQ(back[0], 1.0F);
  EXPECT_EQ(back[1], -2.5F);
  EXPECT_TRUE(std::signbit(back[5]));
}

TEST(SafeTensors, AFileErrorNamesTheFile) {
  tessera::testing::ScratchDirectory scratch;
  const std::string path = scratch.path("broken.safetensors");
  const auto bytes =
      file_bytes(R"({"t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", 4);
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  try {
    SafeTensorsFile file(path);
    FAIL() << "opened a truncated file";
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()),
              path +
                  ": t: data_offsets [0, 8] run past the end of the data (4 bytes): the file is "
                  "truncated");
  }
  EXPECT_THROW(SafeTensorsFile(scratch.path("absent.safetensors")), IoError);
}

// A file another program truncates after we opened it: the read of a tensor
// past the new end is an IoError naming the file (a memory-mapped reader
// would die of SIGBUS here instead).
TEST(SafeTensors, AFileThatShrinksAfterOpeningIsAnErrorNotACrash) {
  tessera::testing::ScratchDirectory scratch;
  const std::vector<float> values(1024, 1.5F);
  const auto f32 = convert_from_f32(SafeTensorsDType::kF32, values);
  const std::vector<SafeTensorsEntry> entries = {{"first", SafeTensorsDType::kF32, {1024}, f32},
                                                 {"second", SafeTensorsDType::kF32, {1024}, f32}};
  const std::string path = scratch.path("shrinks.safetensors");
  write_safetensors(path, entries);
  const SafeTensorsFile file(path);
  std::filesystem::resize_file(path, file.data_offset() + 4096 + 100);
  EXPECT_EQ(file.read(*file.find("first")).size(), 4096u);  // still all there
  try {
    (void)file.read(*file.find("second"));
    FAIL() << "read past the end of a shrunk file";
  } catch (const IoError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find(path + ": ends at byte"), std::string::npos) << message;
    EXPECT_NE(message.find("has shrunk since"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace tessera::models
