#include "models/safetensors.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "kernels/half.hpp"
#include "models/strict_json.hpp"
#include "support/atomic_file.hpp"
#include "support/checked.hpp"
#include "support/error.hpp"

namespace tessera::models {
namespace {

using nlohmann::json;

struct DTypeEntry {
  SafeTensorsDType dtype;
  std::string_view name;
  std::uint64_t size;
};

// The format's dtype table (safetensors' `Dtype`), one row per dtype.
constexpr std::array kDTypes = {
    DTypeEntry{SafeTensorsDType::kBool, "BOOL", 1},
    DTypeEntry{SafeTensorsDType::kU8, "U8", 1},
    DTypeEntry{SafeTensorsDType::kI8, "I8", 1},
    DTypeEntry{SafeTensorsDType::kF8E5M2, "F8_E5M2", 1},
    DTypeEntry{SafeTensorsDType::kF8E4M3, "F8_E4M3", 1},
    DTypeEntry{SafeTensorsDType::kI16, "I16", 2},
    DTypeEntry{SafeTensorsDType::kU16, "U16", 2},
    DTypeEntry{SafeTensorsDType::kF16, "F16", 2},
    DTypeEntry{SafeTensorsDType::kBF16, "BF16", 2},
    DTypeEntry{SafeTensorsDType::kI32, "I32", 4},
    DTypeEntry{SafeTensorsDType::kU32, "U32", 4},
    DTypeEntry{SafeTensorsDType::kF32, "F32", 4},
    DTypeEntry{SafeTensorsDType::kF64, "F64", 8},
    DTypeEntry{SafeTensorsDType::kI64, "I64", 8},
    DTypeEntry{SafeTensorsDType::kU64, "U64", 8},
};

const DTypeEntry& entry(SafeTensorsDType dtype) noexcept {
  return kDTypes[static_cast<std::size_t>(dtype)];
}

// A header is three levels deep at most (the root object, a tensor's object,
// its shape); anything deeper is refused while parsing, before it can cost
// memory or stack.
constexpr int kMaxHeaderDepth = 3;

// The little-endian u64 that starts the file: the header's length in bytes.
std::uint64_t header_length(std::span<const std::uint8_t> head) {
  std::uint64_t length = 0;
  for (int i = 0; i < 8; ++i) length |= std::uint64_t{head[static_cast<std::size_t>(i)]} << (8 * i);
  return length;
}

// The header: a strict JSON object (strict_json.hpp: no key twice, no deep
// nesting).
json parse_header_json(std::span<const std::uint8_t> text) {
  if (text.empty() || text[0] != '{') {
    throw InputError("header", "does not start with '{'");
  }
  return with_context("header", [&] {
    return parse_strict_json(
        std::string_view(reinterpret_cast<const char*>(text.data()), text.size()), kMaxHeaderDepth);
  });
}

SafeTensorsDType parse_dtype(const json& value) {
  if (!value.is_string()) throw InputError("dtype", "must be a string");
  const auto& name = value.get_ref<const std::string&>();
  for (const auto& known : kDTypes) {
    if (known.name == name) return known.dtype;
  }
  throw InputError("dtype", fmt::format("unknown dtype '{}'", name));
}

std::vector<std::uint64_t> parse_shape(const json& value) {
  if (!value.is_array()) throw InputError("shape", "must be an array of dimensions");
  std::vector<std::uint64_t> shape;
  for (const auto& dimension : value) {
    if (!dimension.is_number_unsigned()) {
      throw InputError("shape",
                       fmt::format("dimension {} is not a non-negative integer", dimension.dump()));
    }
    shape.push_back(dimension.get<std::uint64_t>());
  }
  return shape;
}

SafeTensorInfo parse_tensor(const std::string& name, const json& value) {
  if (!value.is_object()) throw InputError("must be an object with dtype, shape and data_offsets");
  for (const auto& [key, ignored] : value.items()) {
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      throw InputError(
          fmt::format("unknown key '{}' (a tensor has dtype, shape and data_offsets)", key));
    }
  }
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!value.contains(key)) throw InputError(fmt::format("the key '{}' is missing", key));
  }
  SafeTensorInfo info;
  info.name = name;
  info.dtype = parse_dtype(value["dtype"]);
  info.shape = parse_shape(value["shape"]);
  const json& offsets = value["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned()) {
    throw InputError("data_offsets", "must be [begin, end], two non-negative integers");
  }
  info.begin = offsets[0].get<std::uint64_t>();
  info.end = offsets[1].get<std::uint64_t>();
  if (info.end < info.begin) {
    throw InputError("data_offsets",
                     fmt::format("[{}, {}] ends before it begins", info.begin, info.end));
  }
  std::uint64_t bytes = dtype_size(info.dtype);
  for (const std::uint64_t dimension : info.shape) {
    bytes = checked_mul(bytes, dimension, "shape size in bytes");
  }
  if (info.end - info.begin != bytes) {
    throw InputError("data_offsets",
                     fmt::format("[{}, {}] hold {} bytes, but {} {} needs {}", info.begin, info.end,
                                 info.end - info.begin, dtype_name(info.dtype),
                                 fmt::format("[{}]", fmt::join(info.shape, ", ")), bytes));
  }
  return info;
}

std::map<std::string, std::string> parse_metadata(const json& value) {
  if (!value.is_object()) throw InputError("__metadata__", "must be an object of strings");
  std::map<std::string, std::string> metadata;
  for (const auto& [key, text] : value.items()) {
    if (!text.is_string()) throw InputError("__metadata__." + key, "must be a string");
    metadata.emplace(key, text.get<std::string>());
  }
  return metadata;
}

}  // namespace

std::string_view dtype_name(SafeTensorsDType dtype) noexcept { return entry(dtype).name; }
std::uint64_t dtype_size(SafeTensorsDType dtype) noexcept { return entry(dtype).size; }
bool is_float_dtype(SafeTensorsDType dtype) noexcept {
  return dtype == SafeTensorsDType::kF32 || dtype == SafeTensorsDType::kF16 ||
         dtype == SafeTensorsDType::kBF16;
}

namespace {

// The header from the file's first bytes `head` (at least its 8-byte length
// and, when that length fits the file, the whole header) and the file's size.
SafeTensorsHeader parse_header(std::span<const std::uint8_t> head, std::uint64_t file_size) {
  if (file_size < 8) {
    throw InputError(
        fmt::format("the file is {} bytes, too short for the 8-byte header length", file_size));
  }
  const std::uint64_t length = header_length(head);
  if (length > kMaxHeaderBytes) {
    throw InputError(
        fmt::format("the header length {} exceeds the limit of {} bytes", length, kMaxHeaderBytes));
  }
  const std::uint64_t after_length = file_size - 8;
  if (length > after_length) {
    throw InputError(fmt::format(
        "the header length {} runs past the end of the file ({} bytes follow the length): the "
        "file is truncated",
        length, after_length));
  }
  SafeTensorsHeader header;
  header.data_offset = 8 + length;
  const std::uint64_t data_size = after_length - length;
  const json root = parse_header_json(head.subspan(8, static_cast<std::size_t>(length)));
  if (!root.is_object()) throw InputError("header", "is not a JSON object");

  for (const auto& [name, value] : root.items()) {
    if (name == "__metadata__") {
      header.metadata = parse_metadata(value);
      continue;
    }
    SafeTensorInfo info = with_context(name, [&] { return parse_tensor(name, value); });
    if (info.end > data_size) {
      throw InputError(name, fmt::format("data_offsets [{}, {}] run past the end of the data ({} "
                                         "bytes): the file is truncated",
                                         info.begin, info.end, data_size));
    }
    header.tensors.emplace(name, std::move(info));
  }

  // Sorted by offset, the tensors must tile the data exactly.
  std::vector<const SafeTensorInfo*> order;
  for (const auto& [name, info] : header.tensors) order.push_back(&info);
  std::sort(order.begin(), order.end(), [](const SafeTensorInfo* a, const SafeTensorInfo* b) {
    return std::pair(a->begin, a->end) < std::pair(b->begin, b->end);
  });
  std::uint64_t covered = 0;
  const SafeTensorInfo* previous = nullptr;
  for (const SafeTensorInfo* info : order) {
    if (info->begin < covered) {
      throw InputError(info->name,
                       fmt::format("data_offsets [{}, {}] overlap {}'s [{}, {}]", info->begin,
                                   info->end, previous->name, previous->begin, previous->end));
    }
    if (info->begin > covered) {
      throw InputError(info->name,
                       fmt::format("data_offsets [{}, {}] leave bytes [{}, {}) of the data "
                                   "unused (the tensors must tile the data without holes)",
                                   info->begin, info->end, covered, info->begin));
    }
    covered = info->end;
    previous = info;
  }
  if (covered != data_size) {
    throw InputError(fmt::format("{} bytes after the last tensor's data are not part of any tensor",
                                 data_size - covered));
  }
  return header;
}

}  // namespace

SafeTensorsHeader parse_safetensors_header(std::span<const std::uint8_t> file) {
  return parse_header(file, file.size());
}

SafeTensorsFile::SafeTensorsFile(const std::filesystem::path& path) : file_(path) {
  header_ = with_context(path.string(), [&] {
    // Read the header only when its length fits the file; otherwise the first
    // bytes are enough for parse_header's error.
    std::vector<std::uint8_t> head = file_.read(0, std::min<std::uint64_t>(file_.size(), 8));
    if (head.size() == 8) {
      const std::uint64_t length = header_length(head);
      if (length <= kMaxHeaderBytes && length <= file_.size() - 8) head = file_.read(0, 8 + length);
    }
    return parse_header(head, file_.size());
  });
}

const SafeTensorInfo* SafeTensorsFile::find(std::string_view name) const {
  const auto it = header_.tensors.find(name);
  return it == header_.tensors.end() ? nullptr : &it->second;
}

std::vector<std::uint8_t> SafeTensorsFile::read(const SafeTensorInfo& tensor) const {
  // Offsets were checked against the file's size when the header was parsed;
  // a file that shrank since is the read's error, naming the file.
  return file_.read(header_.data_offset + tensor.begin, tensor.end - tensor.begin);
}

void convert_to_f32(SafeTensorsDType dtype, std::span<const std::uint8_t> bytes,
                    std::span<float> out) {
  if (!is_float_dtype(dtype)) {
    throw UsageError(fmt::format("cannot read {} elements as f32", dtype_name(dtype)));
  }
  if (bytes.size() != out.size() * dtype_size(dtype)) {
    throw UsageError("convert_to_f32: the byte count does not match the element count");
  }
  const std::uint8_t* p = bytes.data();
  switch (dtype) {
    case SafeTensorsDType::kF32:
      std::memcpy(out.data(), p, bytes.size());  // little-endian host
      break;
    case SafeTensorsDType::kF16:
      for (std::size_t i = 0; i < out.size(); ++i) {
        const auto h = static_cast<std::uint16_t>(p[2 * i] | p[2 * i + 1] << 8);
        out[i] = std::bit_cast<float>(kernels::f16_to_f32_bits(h));
      }
      break;
    default:  // BF16: the top half of an f32
      for (std::size_t i = 0; i < out.size(); ++i) {
        const auto h = static_cast<std::uint32_t>(p[2 * i] | p[2 * i + 1] << 8);
        out[i] = std::bit_cast<float>(h << 16);
      }
      break;
  }
}

std::vector<std::uint8_t> convert_from_f32(SafeTensorsDType dtype, std::span<const float> values) {
  if (!is_float_dtype(dtype)) {
    throw UsageError(fmt::format("cannot write f32 values as {}", dtype_name(dtype)));
  }
  std::vector<std::uint8_t> bytes(values.size() * dtype_size(dtype));
  if (dtype == SafeTensorsDType::kF32) {
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return bytes;
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    const auto bits = std::bit_cast<std::uint32_t>(values[i]);
    std::uint16_t half = 0;
    if (dtype == SafeTensorsDType::kF16) {
      half = kernels::f32_bits_to_f16(bits);
    } else if ((bits & 0x7FFFFFFFu) > 0x7F800000u) {
      half = static_cast<std::uint16_t>((bits >> 16) | 0x0040u);  // a NaN stays a quiet NaN
    } else {
      // Round to nearest, ties to even, on the 16 bits dropped.
      const std::uint32_t rounded = bits + 0x7FFFu + ((bits >> 16) & 1u);
      half = static_cast<std::uint16_t>(rounded >> 16);
    }
    bytes[2 * i] = static_cast<std::uint8_t>(half);
    bytes[2 * i + 1] = static_cast<std::uint8_t>(half >> 8);
  }
  return bytes;
}

void write_safetensors(const std::filesystem::path& path, std::span<const SafeTensorsEntry> tensors,
                       const std::map<std::string, std::string>& metadata) {
  // nlohmann's objects sort their keys; the data goes in the order given,
  // which the offsets record.
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::uint64_t offset = 0;
  for (const auto& tensor : tensors) {
    std::uint64_t bytes = dtype_size(tensor.dtype);
    for (const std::uint64_t dimension : tensor.shape) bytes = checked_mul(bytes, dimension);
    if (bytes != tensor.bytes.size()) {
      throw UsageError(fmt::format("write_safetensors: {} has {} bytes, its shape needs {}",
                                   tensor.name, tensor.bytes.size(), bytes));
    }
    if (header.contains(tensor.name)) {
      throw UsageError(fmt::format("write_safetensors: {} is given twice", tensor.name));
    }
    const std::uint64_t end = checked_add(offset, bytes);
    header[tensor.name] = {{"dtype", dtype_name(tensor.dtype)},
                           {"shape", tensor.shape},
                           {"data_offsets", {offset, end}}};
    offset = end;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::array<std::uint8_t, 8> length{};
  for (std::size_t i = 0; i < 8; ++i) {
    length[i] = static_cast<std::uint8_t>(std::uint64_t{text.size()} >> (8 * i));
  }
  AtomicFile file(path);
  file.write(length);
  file.write({reinterpret_cast<const std::uint8_t*>(text.data()), text.size()});
  for (const auto& tensor : tensors) file.write(tensor.bytes);
  file.commit();
}

}  // namespace tessera::models
