#pragma once
// SafeTensors, the file format Hugging Face checkpoints ship their tensors in
// (github.com/huggingface/safetensors, "Format"):
//
//   8 bytes     N, the header's length (little-endian u64)
//   N bytes     a JSON object: for each tensor name {"dtype", "shape",
//               "data_offsets": [begin, end]}, plus an optional
//               "__metadata__" object of strings; it may end in spaces
//   the rest    the data: tensor bytes, row-major, little-endian, at their
//               offsets from the start of this section
//
// The reader checks the whole header before a tensor byte is touched, with
// the format's own rules: no duplicate keys, a known dtype, end − begin equal
// to product(shape) · dtype size, every tensor inside the data, and the
// tensors, sorted by offset, tiling the data exactly — no overlap, no hole,
// nothing after the last one (so a file cannot be two formats at once). All
// arithmetic on the header's numbers is checked (support/checked.hpp) and
// the header's length is capped, as the safetensors crate caps it. Every
// defect is an InputError naming the file and the tensor.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "models/input_file.hpp"

namespace tessera::models {

// The format's dtypes, all of them: a file may hold tensors we never read,
// and their sizes still have to be checked.
enum class SafeTensorsDType : std::uint8_t {
  kBool,
  kU8,
  kI8,
  kF8E5M2,
  kF8E4M3,
  kI16,
  kU16,
  kF16,
  kBF16,
  kI32,
  kU32,
  kF32,
  kF64,
  kI64,
  kU64,
};

// "F32", as the header spells it.
std::string_view dtype_name(SafeTensorsDType dtype) noexcept;
std::uint64_t dtype_size(SafeTensorsDType dtype) noexcept;
// F32, F16 and BF16: what the models read and write.
bool is_float_dtype(SafeTensorsDType dtype) noexcept;

// The safetensors crate refuses headers above 100 MB; so do we.
inline constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

struct SafeTensorInfo {
  std::string name;
  SafeTensorsDType dtype = SafeTensorsDType::kF32;
  std::vector<std::uint64_t> shape;
  std::uint64_t begin = 0;  // data_offsets, from the start of the data section
  std::uint64_t end = 0;
};

struct SafeTensorsHeader {
  std::map<std::string, SafeTensorInfo, std::less<>> tensors;
  std::map<std::string, std::string> metadata;
  std::uint64_t data_offset = 0;  // 8 + N: where the data section starts in the file
};

// Parses and validates the header of a whole file's bytes (nothing is read
// past the header). InputError (ArithmeticError for overflowing numbers),
// with the tensor's name as the innermost context.
SafeTensorsHeader parse_safetensors_header(std::span<const std::uint8_t> file);

// A validated .safetensors file, read tensor by tensor (input_file.hpp).
class SafeTensorsFile {
 public:
  // Opens the file and validates its header; errors carry the path as context.
  explicit SafeTensorsFile(const std::filesystem::path& path);

  const std::filesystem::path& path() const noexcept { return file_.path(); }
  // Where the data section starts in the file (8 + the header's length).
  std::uint64_t data_offset() const noexcept { return header_.data_offset; }
  const std::map<std::string, SafeTensorInfo, std::less<>>& tensors() const noexcept {
    return header_.tensors;
  }
  const std::map<std::string, std::string>& metadata() const noexcept { return header_.metadata; }
  // nullptr when the file has no such tensor.
  const SafeTensorInfo* find(std::string_view name) const;
  // The tensor's bytes, read from the file (its offsets were validated
  // against the file when it was opened; IoError if the file has shrunk).
  std::vector<std::uint8_t> read(const SafeTensorInfo& tensor) const;

 private:
  InputFile file_;
  SafeTensorsHeader header_;
};

// Elements of a float dtype widened to f32, exactly. `out` holds one float
// per element; UsageError for any other dtype or a size mismatch.
void convert_to_f32(SafeTensorsDType dtype, std::span<const std::uint8_t> bytes,
                    std::span<float> out);
// f32 values as F32, F16 or BF16 bytes (round to nearest, ties to even).
std::vector<std::uint8_t> convert_from_f32(SafeTensorsDType dtype, std::span<const float> values);

// One tensor to write; `bytes` must be exactly product(shape) · dtype size.
struct SafeTensorsEntry {
  std::string name;
  SafeTensorsDType dtype = SafeTensorsDType::kF32;
  std::vector<std::uint64_t> shape;
  std::span<const std::uint8_t> bytes;
};

// Writes a .safetensors file as the safetensors library does: tensors in the
// order given, the header padded with spaces so the data starts 8-aligned.
// Atomic (support/atomic_file.hpp).
void write_safetensors(const std::filesystem::path& path, std::span<const SafeTensorsEntry> tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace tessera::models
