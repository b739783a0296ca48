#include "compiler/emit/code.hpp"

#include <utility>

#include "support/checked.hpp"
#include "support/little_endian.hpp"

namespace tessera::compiler::emit {

std::vector<std::uint8_t> assemble(const Code& code) {
  std::vector<std::uint32_t> words;
  for (const auto& instruction : code) isa::encode_into(instruction, words);
  return words_to_bytes(words);
}

Code load_constant(isa::Reg reg, std::uint32_t value) {
  Code code;
  load_constant(code, reg, value);
  return code;
}

void load_constant(Code& code, isa::Reg reg, std::uint32_t value) {
  // `setzi $m14, 0` has no encoding (it is nop's word): add to $mzero instead.
  if (reg == isa::Reg::m14 && value == 0) {
    code.push_back(isa::Add{reg, isa::kZeroReg, 0});
  } else if (value < (1u << 20)) {
    code.push_back(isa::Setzi{reg, value});
  } else {
    code.push_back(isa::Setzi{reg, value >> 12});
    code.push_back(isa::Shl{reg, reg, 12});
    code.push_back(isa::Add{reg, reg, static_cast<std::int32_t>(value & 0xFFF)});
  }
}

Code halt() { return {isa::Setzi{isa::Reg::m0, 0}, isa::Br{isa::Reg::m0}}; }

void append(Code& code, const Code& more) { code.insert(code.end(), more.begin(), more.end()); }

void add_segment(schema::BlobStore& blobs, schema::TileImage& image, std::uint32_t address,
                 std::vector<std::uint8_t> bytes, bool executable) {
  const auto size = checked_cast<std::uint32_t>(bytes.size(), "segment bytes");
  if (size == 0) return;
  const std::uint32_t blob = blobs.add(std::move(bytes));
  image.segments.push_back(schema::Segment{
      address, size, blob, 0, size,
      schema::kSegmentRead | (executable ? schema::kSegmentExecute : schema::kSegmentWrite)});
}

void add_segment(schema::Application& app, schema::TileImage& image, std::uint32_t address,
                 std::vector<std::uint8_t> bytes, bool executable) {
  add_segment(app.blobs, image, address, std::move(bytes), executable);
}

}  // namespace tessera::compiler::emit
