#pragma once
// The footprint property (ARCHITECTURE.md decision 3: two independent
// sources) as a check any kernel's cases can use: run the model on memory
// that records every span it asks for, then assert that every byte it touches
// through an operand lies inside that operand's footprint, that the last byte
// it touches is the footprint's last byte (or nothing, when the case touches
// nothing), and that it touches only its memory operands, with their declared
// access. A model's touches are the spans it asks for (decision 11).

#include <rapidcheck.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "kernels/registry.hpp"
#include "kernels/rounding.hpp"

namespace tessera::kernels::testing {

// Any address reads as a byte derived from it, except the bytes of a served
// table; records every span a model asks for (what it may touch) and every
// sparse read or write it notes inside one.
class RecordingMemory final : public KernelMemory {
 public:
  struct Touch {
    unsigned reg;
    std::uint64_t begin;
    std::uint64_t end;
    bool write;
  };
  RecordingMemory(std::uint32_t table_address, std::vector<std::uint8_t> table)
      : table_address_(table_address), table_(std::move(table)) {}
  std::span<std::uint8_t> acquire(unsigned reg, std::uint64_t address, std::uint64_t size,
                                  Access access, SpanUse, unsigned) override {
    if (size == 0) return {};
    touches.push_back({reg, address, address + size, access != Access::kRead});
    auto& bytes = spans_.emplace_back(size);
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      const std::uint64_t offset = address + i - std::uint64_t{table_address_};
      bytes[i] = address + i >= table_address_ && offset < table_.size()
                     ? table_[offset]
                     : static_cast<std::uint8_t>((address + i) * 2654435761u >> 13);
    }
    return bytes;
  }
  void note_read(unsigned reg, std::uint64_t address, std::uint64_t size) override {
    notes.push_back({reg, address, address + size, false});
  }
  void note_written(unsigned reg, std::uint64_t address, std::uint64_t size) override {
    notes.push_back({reg, address, address + size, true});
  }
  std::vector<Touch> touches;
  std::vector<Touch> notes;

 private:
  std::uint32_t table_address_;
  std::vector<std::uint8_t> table_;
  std::deque<std::vector<std::uint8_t>> spans_;  // stable addresses
};

// Runs `spec`'s model on `registers` (the bytes of `table` served at $m4),
// rounding as `rounding` says, and asserts the footprint property.
inline void check_footprints(const KernelSpec& spec, const Registers& registers,
                             const std::vector<std::uint8_t>& table, bool touches_nothing,
                             Rounding rounding = Rounding::kNearestEven) {
  RecordingMemory memory(registers[4], table);
  TilePrng prng(3);
  KernelCall call{registers, memory, 0, 0, 3, rounding};
  call.prng = &prng;
  spec.model(call);
  for (const OperandSpec& operand : spec.operands) {
    const std::uint64_t begin = registers[operand.reg];
    const std::uint64_t footprint = operand.footprint(registers);
    std::uint64_t highest = begin;
    for (const auto& touch : memory.touches) {
      if (touch.reg != operand.reg) continue;
      RC_ASSERT(touch.begin >= begin);
      RC_ASSERT(touch.end <= begin + footprint);
      RC_ASSERT(touch.write == (operand.access != Access::kRead));
      highest = std::max(highest, touch.end);
    }
    RC_ASSERT(highest == (touches_nothing ? begin : begin + footprint));
  }
  if (touches_nothing) RC_ASSERT(memory.touches.empty());
  // Sparse reads and writes lie inside a span of their operand, of their kind.
  for (const auto& note : memory.notes) {
    RC_ASSERT(std::any_of(memory.touches.begin(), memory.touches.end(), [&](const auto& touch) {
      return touch.reg == note.reg && touch.begin <= note.begin && note.end <= touch.end &&
             (touch.write || !note.write);
    }));
  }
  for (const auto& touch : memory.touches) {
    RC_ASSERT(std::any_of(spec.operands.begin(), spec.operands.end(),
                          [&](const OperandSpec& o) { return o.reg == touch.reg; }));
  }
}

}  // namespace tessera::kernels::testing
