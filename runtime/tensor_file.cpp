#include "runtime/tensor_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "support/atomic_file.hpp"
#include "support/checked.hpp"
#include "support/error.hpp"

namespace tessera::runtime {
namespace {

using schema::DType;

// ---- The .npy format (numpy/lib/format.py) -------------------------------------

constexpr std::string_view kMagic = "\x93NUMPY";
// Magic, major and minor version: the bytes before the header length.
constexpr std::uint64_t kVersionEnd = kMagic.size() + 2;
// numpy pads the prefix and header to a multiple of this (ARRAY_ALIGN).
constexpr std::uint64_t kArrayAlign = 64;
// numpy leaves room after the dict for the first axis to grow to this many
// digits (GROWTH_AXIS_MAX_DIGITS, since numpy 1.24), so that an array can be
// appended to in place. We write the same bytes numpy does.
constexpr std::uint64_t kGrowthAxisMaxDigits = 21;

struct Descr {
  std::string_view text;
  DType dtype;
};

// The descrs we read; the first one for a dtype is the one we write.
constexpr std::array kDescrs = {
    Descr{"<f4", DType::kF32}, Descr{"<f2", DType::kF16}, Descr{"<u4", DType::kU32},
    Descr{"<i4", DType::kI32}, Descr{"|u1", DType::kU8},  Descr{"u1", DType::kU8},
    Descr{"<u1", DType::kU8},
};

constexpr std::string_view kSupportedDescrs =
    "'<f4' (f32), '<f2' (f16), '<u4' (u32), '<i4' (i32), '|u1' (u8, or f8f143 bytes)";

std::string_view npy_descr(DType dtype) {
  // numpy has no 8-bit float of this kind: f8f143 travels as its raw bytes.
  const DType stored = dtype == DType::kF8F143 ? DType::kU8 : dtype;
  for (const auto& descr : kDescrs) {
    if (descr.dtype == stored) return descr.text;
  }
  throw UsageError(fmt::format("dtype {} has no .npy descr", schema::dtype_name(dtype)));
}

// Text from a file, quoted for a message: printable ASCII as is, other bytes
// as \xNN, long text cut short.
std::string printable(std::string_view text) {
  constexpr std::size_t kMaxShown = 48;
  std::string out = "'";
  for (std::size_t i = 0; i < text.size() && i < kMaxShown; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7F && c != '\\' && c != '\'') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  if (text.size() > kMaxShown) out += "...";
  out += "'";
  return out;
}

DType parse_descr(std::string_view descr) {
  for (const auto& known : kDescrs) {
    if (known.text == descr) return known.dtype;
  }
  if (descr.starts_with('>')) {
    throw InputError("descr", fmt::format("big-endian dtype {} is not supported; save the array "
                                          "little-endian (e.g. array.astype('<{}'))",
                                          printable(descr), descr.substr(1)));
  }
  throw InputError("descr", fmt::format("unsupported dtype {}; supported: {}", printable(descr),
                                        kSupportedDescrs));
}

struct NpyHeader {
  DType dtype = DType::kU8;
  TensorShape shape;
};

// The header is the repr() of a Python dict, e.g.
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// Only that much of Python's literal syntax is accepted: quoted strings
// without escapes, True/False, tuples of non-negative decimal integers.
class HeaderParser {
 public:
  // Python 2 wrote long integers as "3L" in headers of version 1.0 and 2.0;
  // numpy still reads them there, and so do we.
  HeaderParser(std::string_view text, bool accept_long_suffix)
      : text_(text), accept_long_suffix_(accept_long_suffix) {}

  NpyHeader parse() {
    skip_space();
    expect('{', "the header to start with '{'");
    std::optional<std::string> descr;
    std::optional<bool> fortran_order;
    std::optional<TensorShape> shape;
    skip_space();
    while (!consume('}')) {
      const std::size_t key_at = pos_;
      if (!at_quote()) fail("expected a quoted key or '}'");
      const std::string key = parse_string();
      skip_space();
      expect(':', fmt::format("':' after the key {}", printable(key)));
      skip_space();
      const auto check_unique = [&](bool seen) {
        if (seen) fail_at(key_at, fmt::format("the key {} appears twice", printable(key)));
      };
      if (key == "descr") {
        check_unique(descr.has_value());
        if (peek() == '[') {
          fail("descr is a list (a structured dtype); only plain dtypes are supported");
        }
        if (!at_quote()) fail("descr must be a quoted dtype string");
        descr = parse_string();
      } else if (key == "fortran_order") {
        check_unique(fortran_order.has_value());
        fortran_order = parse_bool();
      } else if (key == "shape") {
        check_unique(shape.has_value());
        shape = parse_shape();
      } else {
        fail_at(key_at, fmt::format("unknown key {}; a .npy header has exactly 'descr', "
                                    "'fortran_order' and 'shape'",
                                    printable(key)));
      }
      skip_space();
      if (consume(',')) {
        skip_space();
        continue;
      }
      expect('}', "',' or '}' after a value");
      break;
    }
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text after the header dictionary");

    for (const auto& [present, name] : {std::pair{descr.has_value(), "descr"},
                                        std::pair{fortran_order.has_value(), "fortran_order"},
                                        std::pair{shape.has_value(), "shape"}}) {
      if (!present) throw InputError("header", fmt::format("the key '{}' is missing", name));
    }
    if (*fortran_order) {
      throw InputError("fortran_order",
                       "the array is stored in Fortran (column-major) order; only C order is "
                       "supported (save numpy.ascontiguousarray(array))");
    }
    return NpyHeader{parse_descr(*descr), std::move(*shape)};
  }

 private:
  [[noreturn]] void fail_at(std::size_t at, std::string message) const {
    throw InputError("header", fmt::format("at byte {}: {}", at, message));
  }
  [[noreturn]] void fail(std::string message) const { fail_at(pos_, std::move(message)); }

  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool at_end() const { return pos_ >= text_.size(); }
  bool at_quote() const { return peek() == '\'' || peek() == '"'; }

  void skip_space() {
    while (!at_end() &&
           std::string_view(" \t\r\n\f\v").find(text_[pos_]) != std::string_view::npos) {
      ++pos_;
    }
  }
  bool consume(char c) {
    if (at_end() || text_[pos_] != c) return false;
    ++pos_;
    return true;
  }
  void expect(char c, std::string_view expected) {
    if (!consume(c)) {
      fail(fmt::format("expected {}, found {}", expected,
                       at_end() ? std::string("the end") : printable(text_.substr(pos_, 1))));
    }
  }

  std::string parse_string() {
    const char quote = text_[pos_++];
    const std::size_t start = pos_;
    while (!at_end() && text_[pos_] != quote) {
      if (text_[pos_] == '\\') fail("escapes in strings are not supported");
      if (text_[pos_] == '\n') fail("unterminated string");
      ++pos_;
    }
    if (at_end()) fail_at(start - 1, "unterminated string");
    std::string value(text_.substr(start, pos_ - start));
    ++pos_;
    return value;
  }

  bool parse_bool() {
    for (const auto& [word, value] :
         {std::pair{std::string_view("True"), true}, std::pair{std::string_view("False"), false}}) {
      if (text_.substr(pos_).starts_with(word) && !is_identifier_char(pos_ + word.size())) {
        pos_ += word.size();
        return value;
      }
    }
    fail("fortran_order must be True or False");
  }

  bool is_identifier_char(std::size_t at) const {
    if (at >= text_.size()) return false;
    const char c = text_[at];
    return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  }

  TensorShape parse_shape() {
    if (peek() == '[') fail("shape must be a tuple such as (2, 3), not a list");
    expect('(', "a tuple for shape");
    TensorShape shape;
    skip_space();
    if (consume(')')) return shape;
    bool comma = false;
    while (true) {
      shape.push_back(parse_dimension());
      skip_space();
      if (consume(')')) break;
      expect(',', "',' or ')' in shape");
      comma = true;
      skip_space();
      if (consume(')')) break;
    }
    if (!comma) {
      // "(4)" is the integer 4 in Python, not a tuple.
      fail(fmt::format("shape ({}) is not a tuple; a one-dimensional shape is written ({},)",
                       shape[0], shape[0]));
    }
    return shape;
  }

  std::uint64_t parse_dimension() {
    if (peek() == '-') fail("a dimension is negative");
    if (peek() < '0' || peek() > '9') fail("expected a dimension (a decimal integer)");
    std::uint64_t value = 0;
    while (peek() >= '0' && peek() <= '9') {
      value =
          checked_add<std::uint64_t>(checked_mul<std::uint64_t>(value, 10, "shape dimension"),
                                     static_cast<std::uint64_t>(peek() - '0'), "shape dimension");
      ++pos_;
    }
    if (accept_long_suffix_ && peek() == 'L') ++pos_;
    if (is_identifier_char(pos_)) fail("expected a dimension (a decimal integer)");
    return value;
  }

  std::string_view text_;
  bool accept_long_suffix_;
  std::size_t pos_ = 0;
};

// Where a .npy file's parts lie, from its prefix and header.
struct NpyLayout {
  NpyHeader header;
  std::uint64_t data_offset = 0;
  std::uint64_t data_bytes = 0;
};

// Reads bytes [offset, offset + out.size()) of the source, which the caller
// has checked lie inside it.
using ReadAt = std::function<void(std::uint64_t offset, std::span<std::uint8_t> out)>;

NpyLayout parse_npy_layout(std::uint64_t size, const ReadAt& read_at) {
  std::array<std::uint8_t, kVersionEnd + 4> prefix{};
  const auto read_prefix = [&](std::uint64_t end) {
    read_at(0, std::span(prefix).first(static_cast<std::size_t>(end)));
  };
  if (size == 0) throw InputError("not a .npy file: it is empty");
  const std::uint64_t magic_available = std::min<std::uint64_t>(size, kMagic.size());
  read_prefix(magic_available);
  const std::string_view magic(reinterpret_cast<const char*>(prefix.data()),
                               static_cast<std::size_t>(magic_available));
  if (magic != kMagic) {
    throw InputError(fmt::format("not a .npy file: it starts with {}, not the magic string {}",
                                 printable(magic), printable(kMagic)));
  }
  if (size < kVersionEnd) throw InputError("the file ends inside the format version");
  read_prefix(kVersionEnd);
  const unsigned major = prefix[kMagic.size()];
  const unsigned minor = prefix[kMagic.size() + 1];
  if (major < 1 || major > 3 || minor != 0) {
    throw InputError(fmt::format("unsupported .npy format version {}.{} (supported: 1.0, 2.0, 3.0)",
                                 major, minor));
  }
  // Version 1.0 has a 16-bit header length, 2.0 and 3.0 a 32-bit one
  // (3.0 differs from 2.0 only in allowing UTF-8 in the header).
  const std::uint64_t length_bytes = major == 1 ? 2 : 4;
  const std::uint64_t header_offset = kVersionEnd + length_bytes;
  if (size < header_offset) throw InputError("the file ends inside the header length");
  read_prefix(header_offset);
  std::uint64_t header_length = 0;
  for (std::uint64_t i = 0; i < length_bytes; ++i) {
    header_length |= std::uint64_t{prefix[kVersionEnd + i]} << (8 * i);
  }
  const std::uint64_t after_prefix = checked_sub(size, header_offset, "file size");
  if (header_length > after_prefix) {
    throw InputError(fmt::format(
        "the header length {} runs past the end of the file ({} bytes follow the {}-byte "
        "prefix)",
        header_length, after_prefix, header_offset));
  }

  // Bounded by the file's size, checked above.
  std::string text(static_cast<std::size_t>(header_length), '\0');
  read_at(header_offset, std::span(reinterpret_cast<std::uint8_t*>(text.data()), text.size()));

  NpyLayout layout;
  layout.header = HeaderParser(text, major <= 2).parse();
  layout.data_offset = checked_add(header_offset, header_length, "data offset");
  layout.data_bytes = tensor_bytes(layout.header.dtype, layout.header.shape);
  const std::uint64_t available = checked_sub(size, layout.data_offset, "data size");
  if (available != layout.data_bytes) {
    const bool trailing = available > layout.data_bytes;
    const std::uint64_t difference =
        trailing ? available - layout.data_bytes : layout.data_bytes - available;
    throw InputError(fmt::format(
        "the data is {} bytes but the header's {} needs {} ({} {} {})", available,
        describe_shape(layout.header.dtype, layout.header.shape), layout.data_bytes, difference,
        difference == 1 ? "byte" : "bytes", trailing ? "too many" : "missing"));
  }
  return layout;
}

std::string npy_dict(const HostTensor& tensor) {
  const auto& shape = tensor.shape();
  // Python's repr of a tuple: (), (4,), (2, 3).
  std::string shape_text = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) shape_text += ", ";
    shape_text += std::to_string(shape[i]);
  }
  if (shape.size() == 1) shape_text += ",";
  shape_text += ")";
  // Keys sorted, each followed by ", ", as numpy's _write_array_header does.
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
                                 npy_descr(tensor.dtype()), shape_text);
  if (!shape.empty()) {
    const std::uint64_t digits = std::to_string(shape[0]).size();
    if (digits < kGrowthAxisMaxDigits) {
      dict.append(static_cast<std::size_t>(kGrowthAxisMaxDigits - digits), ' ');
    }
  }
  return dict;
}

// Everything before the data: magic, version, header length and the padded
// header, exactly as numpy's _wrap_header_guess_version builds them.
std::vector<std::uint8_t> npy_prefix(const HostTensor& tensor) {
  const std::string dict = npy_dict(tensor);
  const std::uint64_t text_length = std::uint64_t{dict.size()} + 1;  // and the newline
  const auto padding = [&](std::uint64_t length_bytes) {
    // numpy pads a whole ARRAY_ALIGN when the length is already aligned.
    return kArrayAlign - (kVersionEnd + length_bytes + text_length) % kArrayAlign;
  };
  std::uint8_t major = 1;
  std::uint64_t length_bytes = 2;
  std::uint64_t header_length = text_length + padding(length_bytes);
  if (header_length > 0xFFFF) {
    major = 2;
    length_bytes = 4;
    header_length = checked_add(text_length, padding(length_bytes), "npy header length");
    if (header_length > 0xFFFFFFFF) {
      throw UsageError(fmt::format("the .npy header of {} is too long ({} bytes)",
                                   tensor.describe_shape(), header_length));
    }
  }
  std::vector<std::uint8_t> prefix(kMagic.begin(), kMagic.end());
  prefix.push_back(major);
  prefix.push_back(0);
  for (std::uint64_t i = 0; i < length_bytes; ++i) {
    prefix.push_back(static_cast<std::uint8_t>(header_length >> (8 * i)));
  }
  prefix.insert(prefix.end(), dict.begin(), dict.end());
  prefix.resize(static_cast<std::size_t>(kVersionEnd + length_bytes + header_length - 1), ' ');
  prefix.push_back('\n');
  return prefix;
}

// ---- Files ------------------------------------------------------------------------

std::string os_error(std::string_view doing) {
  return fmt::format("{}: {}", doing, std::strerror(errno));
}

class InputFile {
 public:
  explicit InputFile(const std::filesystem::path& path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw IoError(os_error("cannot open"));
    struct stat status {};
    if (::fstat(fd_, &status) != 0) {
      const std::string message = os_error("cannot stat");
      ::close(fd_);
      throw IoError(message);
    }
    if (!S_ISREG(status.st_mode)) {
      ::close(fd_);
      throw IoError("not a regular file");
    }
    size_ = static_cast<std::uint64_t>(status.st_size);
  }
  ~InputFile() { ::close(fd_); }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  std::uint64_t size() const noexcept { return size_; }

  void read_at(std::uint64_t offset, std::span<std::uint8_t> out) const {
    std::size_t done = 0;
    while (done < out.size()) {
      const ::ssize_t got = ::pread(fd_, out.data() + done, out.size() - done,
                                    checked_cast<::off_t>(offset + done, "file offset"));
      if (got < 0) {
        if (errno == EINTR) continue;
        throw IoError(os_error("cannot read"));
      }
      if (got == 0) throw IoError("the file became shorter while it was read");
      done += static_cast<std::size_t>(got);
    }
  }

 private:
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

NpyLayout read_npy_layout(const InputFile& file) {
  return parse_npy_layout(file.size(), [&](std::uint64_t offset, std::span<std::uint8_t> out) {
    file.read_at(offset, out);
  });
}

std::vector<std::uint8_t> read_data(const InputFile& file, std::uint64_t offset,
                                    std::uint64_t size) {
  std::vector<std::uint8_t> bytes(checked_cast<std::size_t>(size, "data size"));
  file.read_at(offset, bytes);
  return bytes;
}

}  // namespace

TensorFileFormat tensor_file_format(const std::filesystem::path& path) {
  const std::string extension = path.extension().string();
  if (extension == ".npy") return TensorFileFormat::kNpy;
  if (extension == ".bin") return TensorFileFormat::kBin;
  UsageError error(
      fmt::format("unknown tensor file extension {}; accepted: .npy (NumPy array), .bin (raw "
                  "bytes)",
                  extension.empty() ? std::string("(none)") : printable(extension)));
  error.add_context(path.string());
  throw error;
}

HostTensor read_tensor_file(const std::filesystem::path& path, const schema::Binding& expected,
                            std::string_view what) {
  const TensorFileFormat format = tensor_file_format(path);
  return with_context(path.string(), [&] {
    const InputFile file(path);
    if (format == TensorFileFormat::kBin) {
      const std::uint64_t needed = schema::payload_bytes(expected);
      if (file.size() != needed) {
        throw InputError(fmt::format("the file is {} bytes but {} '{}' ({}) needs {}", file.size(),
                                     what, expected.name, describe_shape(expected), needed));
      }
      return HostTensor(expected.dtype, binding_shape(expected), read_data(file, 0, needed));
    }
    NpyLayout layout = read_npy_layout(file);
    DType dtype = layout.header.dtype;
    // numpy has no f8f143: its bytes travel in a uint8 array.
    if (dtype == DType::kU8 && expected.dtype == DType::kF8F143) dtype = DType::kF8F143;
    // Before the data is read: a mismatch costs no allocation.
    check_matches(dtype, layout.header.shape, expected, what);
    return HostTensor(dtype, std::move(layout.header.shape),
                      read_data(file, layout.data_offset, layout.data_bytes));
  });
}

void write_tensor_file(const std::filesystem::path& path, const HostTensor& tensor) {
  const TensorFileFormat format = tensor_file_format(path);
  if (format == TensorFileFormat::kBin) {
    write_file_atomically(path, {tensor.bytes()});  // its errors name the file
  } else {
    const std::vector<std::uint8_t> prefix =
        with_context(path.string(), [&] { return npy_prefix(tensor); });
    write_file_atomically(path, {prefix, tensor.bytes()});
  }
}

HostTensor read_npy_file(const std::filesystem::path& path) {
  return with_context(path.string(), [&] {
    const InputFile file(path);
    NpyLayout layout = read_npy_layout(file);
    return HostTensor(layout.header.dtype, std::move(layout.header.shape),
                      read_data(file, layout.data_offset, layout.data_bytes));
  });
}

HostTensor decode_npy(std::span<const std::uint8_t> bytes) {
  NpyLayout layout =
      parse_npy_layout(bytes.size(), [&](std::uint64_t offset, std::span<std::uint8_t> out) {
        std::copy_n(bytes.begin() + static_cast<std::ptrdiff_t>(offset), out.size(), out.begin());
      });
  const auto data = bytes.subspan(static_cast<std::size_t>(layout.data_offset));
  return HostTensor(layout.header.dtype, std::move(layout.header.shape),
                    std::vector<std::uint8_t>(data.begin(), data.end()));
}

std::vector<std::uint8_t> encode_npy(const HostTensor& tensor) {
  std::vector<std::uint8_t> bytes = npy_prefix(tensor);
  bytes.insert(bytes.end(), tensor.bytes().begin(), tensor.bytes().end());
  return bytes;
}

}  // namespace tessera::runtime
