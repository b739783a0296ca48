// The .npy codec in memory: golden bytes as numpy writes them, the header
// forms numpy and older writers produce, and every way a header can be wrong.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "runtime/tensor_file.hpp"
#include "support/error.hpp"

namespace tessera::runtime {
namespace {

using schema::DType;
using namespace std::string_literals;
using namespace std::string_view_literals;

std::vector<std::uint8_t> bytes_of(std::string_view text) { return {text.begin(), text.end()}; }

std::vector<std::uint8_t> concat(std::initializer_list<std::string_view> parts) {
  std::vector<std::uint8_t> out;
  for (const auto part : parts) out.insert(out.end(), part.begin(), part.end());
  return out;
}

// A .npy file with the header text exactly as given (no padding added).
std::vector<std::uint8_t> raw_npy(std::uint8_t major, std::uint8_t minor, std::string_view header,
                                  std::string_view data) {
  std::string out = "\x93NUMPY"s;
  out += static_cast<char>(major);
  out += static_cast<char>(minor);
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  for (std::size_t i = 0; i < length_bytes; ++i) {
    out += static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  }
  out += header;
  out += data;
  return bytes_of(out);
}

// A .npy file laid out as numpy does: the dict padded with spaces and a
// newline so that the data starts at a multiple of 64. Written independently
// of the code under test.
std::vector<std::uint8_t> npy(std::string_view dict, std::string_view data,
                              std::uint8_t major = 1) {
  const std::size_t prefix = major == 1 ? 10 : 12;
  std::string header(dict);
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  return raw_npy(major, 0, header, data);
}

// The error decode_npy throws, as text; "accepted" when it throws nothing.
template <typename E = InputError>
std::string decode_error(const std::vector<std::uint8_t>& bytes) {
  try {
    (void)decode_npy(bytes);
  } catch (const E& error) {
    return error.what();
  }
  return "accepted";
}

::testing::AssertionResult decode_fails_with(const std::vector<std::uint8_t>& bytes,
                                             const std::string& fragment) {
  const std::string error = decode_error(bytes);
  if (error.find(fragment) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "expected an InputError containing \"" << fragment << "\", got: " << error;
}

#define EXPECT_DECODE_ERROR(bytes, fragment) EXPECT_TRUE(decode_fails_with(bytes, fragment))

// ---- Golden vectors ----------------------------------------------------------------
// Each is the output of numpy 1.24.2 (Debian 12's python3-numpy), e.g.
// numpy.lib.format.write_array(f, numpy.arange(6, dtype='<f4').reshape(2, 3)):
// a 10-byte prefix (header length 0x76), the dict with keys sorted and ", "
// after each value, 20 spaces numpy leaves for the first axis to grow
// (GROWTH_AXIS_MAX_DIGITS 21 minus its digits), spaces padding to byte 127, a
// newline, then the data from byte 128.

const std::vector<std::uint8_t> kF32Golden = concat(
    {"\x93NUMPY\x01\x00\x76\x00"sv, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"sv,
     std::string(58, ' '), "\n"sv,
     // 0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f
     "\x00\x00\x00\x00"
     "\x00\x00\x80\x3f"
     "\x00\x00\x00\x40"
     "\x00\x00\x40\x40"
     "\x00\x00\x80\x40"
     "\x00\x00\xa0\x40"sv});

HostTensor f32_golden_tensor() {
  return HostTensor(DType::kF32, {2, 3},
                    {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x40,
                     0x00, 0x00, 0x40, 0x40, 0x00, 0x00, 0x80, 0x40, 0x00, 0x00, 0xa0, 0x40});
}

// numpy.array([1.0, -2.0, 0.5, 65504.0], dtype='<f2')
const std::vector<std::uint8_t> kF16Golden = concat(
    {"\x93NUMPY\x01\x00\x76\x00"sv, "{'descr': '<f2', 'fortran_order': False, 'shape': (4,), }"sv,
     std::string(60, ' '), "\n"sv,
     // 0x3c00 1.0, 0xc000 -2.0, 0x3800 0.5, 0x7bff 65504 (the largest f16)
     "\x00\x3c"
     "\x00\xc0"
     "\x00\x38"
     "\xff\x7b"sv});

HostTensor f16_golden_tensor() {
  return HostTensor(DType::kF16, {4}, {0x00, 0x3c, 0x00, 0xc0, 0x00, 0x38, 0xff, 0x7b});
}

// numpy.array(7, dtype='<u4'): a scalar has no axis to grow, so no spare spaces.
const std::vector<std::uint8_t> kU32ScalarGolden = concat(
    {"\x93NUMPY\x01\x00\x76\x00"sv, "{'descr': '<u4', 'fortran_order': False, 'shape': (), }"sv,
     std::string(62, ' '), "\n"sv, "\x07\x00\x00\x00"sv});

// numpy.zeros((0,), dtype='u1')
const std::vector<std::uint8_t> kU8EmptyGolden = concat(
    {"\x93NUMPY\x01\x00\x76\x00"sv, "{'descr': '|u1', 'fortran_order': False, 'shape': (0,), }"sv,
     std::string(60, ' '), "\n"sv});

// write_array(f, numpy.array([[1, -1]], dtype='<i4'), version=(2, 0)): a
// 32-bit header length, so 12 bytes of prefix.
const std::vector<std::uint8_t> kI32Version2Golden = concat(
    {"\x93NUMPY\x02\x00\x74\x00\x00\x00"sv,
     "{'descr': '<i4', 'fortran_order': False, 'shape': (1, 2), }"sv, std::string(56, ' '), "\n"sv,
     "\x01\x00\x00\x00"
     "\xff\xff\xff\xff"sv});

HostTensor i32_golden_tensor() {
  return HostTensor(DType::kI32, {1, 2}, {0x01, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff});
}

TEST(NpyGolden, F32MatrixIsWrittenAsNumpyWritesIt) {
  ASSERT_EQ(kF32Golden.size(), 152u);
  EXPECT_EQ(encode_npy(f32_golden_tensor()), kF32Golden);
  EXPECT_EQ(decode_npy(kF32Golden), f32_golden_tensor());
}

TEST(NpyGolden, F16VectorIsWrittenAsNumpyWritesIt) {
  ASSERT_EQ(kF16Golden.size(), 136u);
  EXPECT_EQ(encode_npy(f16_golden_tensor()), kF16Golden);
  EXPECT_EQ(decode_npy(kF16Golden), f16_golden_tensor());
}

TEST(NpyGolden, ScalarAndEmptyVector) {
  const HostTensor scalar(DType::kU32, {}, {7, 0, 0, 0});
  EXPECT_EQ(encode_npy(scalar), kU32ScalarGolden);
  EXPECT_EQ(decode_npy(kU32ScalarGolden), scalar);
  const HostTensor empty(DType::kU8, {0});
  EXPECT_EQ(encode_npy(empty), kU8EmptyGolden);
  EXPECT_EQ(decode_npy(kU8EmptyGolden), empty);
}

TEST(NpyGolden, F8F143IsWrittenAsUint8Bytes) {
  const HostTensor quantized(DType::kF8F143, {0}, {});
  EXPECT_EQ(encode_npy(quantized), kU8EmptyGolden);
}

TEST(NpyGolden, Version2IsRead) { EXPECT_EQ(decode_npy(kI32Version2Golden), i32_golden_tensor()); }

TEST(NpyGolden, Version3IsRead) {
  // numpy writes 3.0 (a UTF-8 header) only when the header needs it; it is
  // 2.0 with a different version byte.
  std::vector<std::uint8_t> bytes = kI32Version2Golden;
  bytes[6] = 3;
  EXPECT_EQ(decode_npy(bytes), i32_golden_tensor());
}

TEST(NpyGolden, LongHeaderIsWrittenAsVersion2) {
  // 22000 dimensions of 1: "(1, 1, …)" takes 66000 bytes, past 1.0's 16-bit
  // header length, so numpy (and we) fall back to 2.0.
  const HostTensor tensor(DType::kU8, TensorShape(22000, 1), {42});
  const auto bytes = encode_npy(tensor);
  ASSERT_GT(bytes.size(), 12u);
  EXPECT_EQ(bytes[6], 2);
  EXPECT_EQ(bytes[7], 0);
  const std::uint64_t header_length = bytes[8] | std::uint64_t{bytes[9]} << 8 |
                                      std::uint64_t{bytes[10]} << 16 |
                                      std::uint64_t{bytes[11]} << 24;
  EXPECT_EQ((12 + header_length) % 64, 0u);
  EXPECT_EQ(bytes.size(), 12 + header_length + 1);
  EXPECT_EQ(bytes[static_cast<std::size_t>(12 + header_length - 1)], '\n');
  EXPECT_EQ(decode_npy(bytes), tensor);
}

TEST(NpyGolden, HeaderIsPaddedToAMultipleOf64WithSpacesAndANewline) {
  for (const auto& shape : {TensorShape{}, TensorShape{0}, TensorShape{1}, TensorShape{3, 5, 7},
                            TensorShape{0, 18446744073709551615u}}) {
    const auto bytes = encode_npy(HostTensor(DType::kU8, shape));
    const std::size_t data_offset = bytes.size() - HostTensor(DType::kU8, shape).byte_size();
    EXPECT_EQ(data_offset % 64, 0u);
    EXPECT_EQ(bytes[data_offset - 1], '\n');
    EXPECT_EQ(bytes[data_offset - 2], ' ');
    EXPECT_EQ(static_cast<std::size_t>(bytes[8] | bytes[9] << 8), data_offset - 10);
  }
}

// ---- Header forms other writers produce --------------------------------------------

TEST(NpyHeader, KeysInAnyOrderWithoutTrailingCommaAndDoubleQuotes) {
  const auto bytes = npy(R"({"shape": (3,), 'fortran_order': False, 'descr': "<u4"})",
                         "\1\0\0\0\2\0\0\0\3\0\0\0"sv);
  EXPECT_EQ(decode_npy(bytes), HostTensor(DType::kU32, {3}, {1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0}));
}

TEST(NpyHeader, OldNumpy16ByteAlignmentWithoutSpareSpace) {
  // numpy before 1.24 aligned to 16 bytes and left no room to grow:
  // 10 + 70 = 80 bytes.
  std::string header = "{'descr': '<f2', 'fortran_order': False, 'shape': (4,), }";
  header += std::string(69 - header.size(), ' ') + "\n";
  const auto bytes = raw_npy(1, 0, header, "\x00\x3c\x00\xc0\x00\x38\xff\x7b"sv);
  EXPECT_EQ(decode_npy(bytes), f16_golden_tensor());
}

TEST(NpyHeader, WhitespaceAnywhereBetweenTokensAndNoNewline) {
  const auto bytes =
      raw_npy(1, 0, "\t{ 'descr' :'|u1',\n'fortran_order':False ,'shape':( 2 , 1 , ) }  ", "ab"sv);
  EXPECT_EQ(decode_npy(bytes), HostTensor(DType::kU8, {2, 1}, {'a', 'b'}));
}

TEST(NpyHeader, Uint8HasThreeSpellings) {
  for (const auto descr : {"|u1"sv, "u1"sv, "<u1"sv}) {
    const auto bytes = npy(
        "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': (1,), }", "z"sv);
    EXPECT_EQ(decode_npy(bytes), HostTensor(DType::kU8, {1}, {'z'})) << descr;
  }
}

TEST(NpyHeader, EveryDtypeHasItsDescr) {
  const std::pair<std::string_view, DType> table[] = {
      {"<f4", DType::kF32}, {"<f2", DType::kF16}, {"<u4", DType::kU32},
      {"<i4", DType::kI32}, {"|u1", DType::kU8},
  };
  for (const auto& [descr, dtype] : table) {
    const auto bytes = encode_npy(HostTensor(dtype, {0}));
    const std::string text(bytes.begin(), bytes.end());
    EXPECT_NE(text.find("'descr': '" + std::string(descr) + "'"), std::string::npos) << descr;
    EXPECT_EQ(decode_npy(bytes).dtype(), dtype);
  }
}

TEST(NpyHeader, Python2LongSuffixIsReadInVersions1And2Only) {
  // Python 2 numpy wrote shapes such as (2L, 3L); numpy still reads them from
  // 1.0 and 2.0 files (format.py's _filter_header).
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }";
  const auto data = std::string_view(reinterpret_cast<const char*>(kF32Golden.data()) + 128, 24);
  EXPECT_EQ(decode_npy(npy(dict, data, 1)), f32_golden_tensor());
  EXPECT_EQ(decode_npy(npy(dict, data, 2)), f32_golden_tensor());
  EXPECT_DECODE_ERROR(npy(dict, data, 3), "expected a dimension");
}

// ---- Malformed files ---------------------------------------------------------------

constexpr std::string_view kGoodDict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
constexpr std::string_view kEightBytes = "\0\0\0\0\0\0\0\0"sv;

TEST(NpyErrors, BadMagic) {
  std::vector<std::uint8_t> bytes = npy(kGoodDict, kEightBytes);
  bytes[1] = 'n';
  EXPECT_DECODE_ERROR(bytes, "not a .npy file: it starts with '\\x93nUMPY', not the magic string");
  EXPECT_DECODE_ERROR(bytes_of("PK\x03\x04 a zip archive"), "not a .npy file");
  EXPECT_DECODE_ERROR(std::vector<std::uint8_t>{}, "not a .npy file: it is empty");
  EXPECT_DECODE_ERROR(bytes_of("\x93NUM"), "not a .npy file");
}

TEST(NpyErrors, TruncatedPrefix) {
  EXPECT_DECODE_ERROR(bytes_of("\x93NUMPY\x01"sv), "ends inside the format version");
  EXPECT_DECODE_ERROR(bytes_of("\x93NUMPY\x01\x00\x76"sv), "ends inside the header length");
  EXPECT_DECODE_ERROR(bytes_of("\x93NUMPY\x02\x00\x76\x00\x00"sv), "ends inside the header length");
}

TEST(NpyErrors, UnsupportedVersion) {
  for (const auto& [major, minor] : {std::pair{0, 0}, std::pair{1, 1}, std::pair{4, 0}}) {
    std::vector<std::uint8_t> bytes = npy(kGoodDict, kEightBytes);
    bytes[6] = static_cast<std::uint8_t>(major);
    bytes[7] = static_cast<std::uint8_t>(minor);
    EXPECT_DECODE_ERROR(bytes, fmt::format("unsupported .npy format version {}.{} (supported: "
                                           "1.0, 2.0, 3.0)",
                                           major, minor));
  }
}

TEST(NpyErrors, HeaderLengthPastTheEnd) {
  std::vector<std::uint8_t> bytes = npy(kGoodDict, kEightBytes);  // 128 + 8 bytes
  bytes[8] = 0x7F;  // header length 0x7F: 1 byte of header past the 126 that follow
  bytes[9] = 0;
  EXPECT_DECODE_ERROR(bytes,
                      "the header length 127 runs past the end of the file (126 bytes follow "
                      "the 10-byte prefix)");
  bytes[8] = 0xFF;
  bytes[9] = 0xFF;
  EXPECT_DECODE_ERROR(bytes, "the header length 65535 runs past the end");
  // A 32-bit length near its maximum: nothing is allocated for it.
  std::vector<std::uint8_t> v2 = npy(kGoodDict, kEightBytes, 2);
  v2[8] = v2[9] = v2[10] = v2[11] = 0xFF;
  EXPECT_DECODE_ERROR(v2, "the header length 4294967295 runs past the end");
}

TEST(NpyErrors, FortranOrderIsRefusedClearly) {
  const auto bytes = npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", kEightBytes);
  EXPECT_EQ(decode_error(bytes),
            "fortran_order: the array is stored in Fortran (column-major) order; only C order is "
            "supported (save numpy.ascontiguousarray(array))");
}

TEST(NpyErrors, BigEndianIsRefusedNamingTheDescr) {
  const auto bytes = npy("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", kEightBytes);
  EXPECT_EQ(decode_error(bytes),
            "descr: big-endian dtype '>f4' is not supported; save the array little-endian (e.g. "
            "array.astype('<f4'))");
}

TEST(NpyErrors, UnknownDescrIsRefusedNamingIt) {
  const auto bytes = npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", kEightBytes);
  EXPECT_EQ(decode_error(bytes),
            "descr: unsupported dtype '<f8'; supported: '<f4' (f32), '<f2' (f16), '<u4' (u32), "
            "'<i4' (i32), '|u1' (u8, or f8f143 bytes)");
  // int64, numpy's default integer, and bool: common, and not ours.
  EXPECT_DECODE_ERROR(npy("{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }", kEightBytes),
                      "unsupported dtype '<i8'");
  EXPECT_DECODE_ERROR(npy("{'descr': '|b1', 'fortran_order': False, 'shape': (8,), }", kEightBytes),
                      "unsupported dtype '|b1'");
  // Bytes that are not text are shown escaped.
  EXPECT_DECODE_ERROR(
      npy("{'descr': '\xff\x01', 'fortran_order': False, 'shape': (8,), }", kEightBytes),
      "unsupported dtype '\\xff\\x01'");
}

TEST(NpyErrors, StructuredDtypeIsRefused) {
  EXPECT_DECODE_ERROR(
      npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", kEightBytes),
      "descr is a list (a structured dtype)");
}

TEST(NpyErrors, KeysMustBeExactlyTheThree) {
  EXPECT_DECODE_ERROR(npy("{'descr': '<f4', 'shape': (2,), }", kEightBytes),
                      "header: the key 'fortran_order' is missing");
  EXPECT_DECODE_ERROR(npy("{'fortran_order': False, 'shape': (2,), }", kEightBytes),
                      "the key 'descr' is missing");
  EXPECT_DECODE_ERROR(npy("{'descr': '<f4', 'fortran_order': False, }", kEightBytes),
                      "the key 'shape' is missing");
  EXPECT_DECODE_ERROR(
      npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}", kEightBytes),
      "header: at byte 56: unknown key 'extra'; a .npy header has exactly 'descr', "
      "'fortran_order' and 'shape'");
  EXPECT_DECODE_ERROR(
      npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'descr': '<f4'}", kEightBytes),
      "the key 'descr' appears twice");
  EXPECT_DECODE_ERROR(npy("{}", ""), "the key 'descr' is missing");
}

TEST(NpyErrors, HeaderSyntax) {
  const std::pair<std::string_view, std::string_view> table[] = {
      {"", "expected the header to start with '{', found the end"},
      {"['descr']", "expected the header to start with '{'"},
      {"{'descr' '<f4'}", "expected ':' after the key 'descr'"},
      {"{'descr': '<f4' 'shape': (2,)}", "expected ',' or '}' after a value"},
      {"{'descr': '<f4',, }", "expected a quoted key or '}'"},
      {"{descr: '<f4'}", "expected a quoted key or '}'"},
      {"{'descr': <f4}", "descr must be a quoted dtype string"},
      {"{'descr': '<f4", "unterminated string"},
      {"{'descr': '<f\\x34'}", "escapes in strings are not supported"},
      {"{'fortran_order': false}", "fortran_order must be True or False"},
      {"{'fortran_order': 0}", "fortran_order must be True or False"},
      {"{'fortran_order': Falsehood}", "fortran_order must be True or False"},
      {"{'shape': [2, 3]}", "shape must be a tuple such as (2, 3), not a list"},
      {"{'shape': 6}", "expected a tuple for shape"},
      {"{'shape': (4)}", "shape (4) is not a tuple; a one-dimensional shape is written (4,)"},
      {"{'shape': (2, -3)}", "a dimension is negative"},
      {"{'shape': (2.0,)}", "expected ',' or ')' in shape"},
      {"{'shape': (0x10,)}", "expected a dimension (a decimal integer)"},
      {"{'shape': (2,,)}", "expected a dimension"},
      {"{'shape': (2, 3}", "expected ',' or ')' in shape"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } x",
       "unexpected text after the header dictionary"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\0"sv,
       "unexpected text after the header dictionary"},
  };
  for (const auto& [dict, fragment] : table) {
    EXPECT_DECODE_ERROR(npy(dict, kEightBytes), std::string(fragment)) << dict;
  }
}

TEST(NpyErrors, DimensionBeyond64BitsIsAnArithmeticError) {
  const auto bytes =
      npy("{'descr': '<f4', 'fortran_order': False, 'shape': (18446744073709551616,), }", "");
  EXPECT_DECODE_ERROR(bytes, "shape dimension");
  EXPECT_NE(decode_error<ArithmeticError>(bytes), "accepted");
}

TEST(NpyErrors, ShapeWhoseByteSizeOverflowsIsAnArithmeticError) {
  const auto bytes =
      npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", "");
  EXPECT_NE(decode_error<ArithmeticError>(bytes), "accepted");
  const auto bytes_times_4 =
      npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904,), }", "");
  EXPECT_DECODE_ERROR(bytes_times_4, "tensor byte size");
}

TEST(NpyErrors, TruncatedDataNamesBothSizes) {
  std::vector<std::uint8_t> bytes = kF32Golden;
  bytes.resize(bytes.size() - 4);
  EXPECT_EQ(decode_error(bytes),
            "the data is 20 bytes but the header's f32[2, 3] needs 24 (4 bytes missing)");
  bytes.resize(128);
  EXPECT_DECODE_ERROR(bytes, "the data is 0 bytes but the header's f32[2, 3] needs 24");
}

TEST(NpyErrors, TrailingDataNamesBothSizes) {
  std::vector<std::uint8_t> bytes = kF32Golden;
  bytes.push_back(0);
  EXPECT_EQ(decode_error(bytes),
            "the data is 25 bytes but the header's f32[2, 3] needs 24 (1 byte too many)");
  // Two arrays concatenated are not one.
  bytes = kF32Golden;
  bytes.insert(bytes.end(), kF32Golden.begin(), kF32Golden.end());
  EXPECT_DECODE_ERROR(bytes, "(152 bytes too many)");
}

}  // namespace
}  // namespace tessera::runtime
