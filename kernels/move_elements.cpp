// Element moves driven by an index table: every local data movement the
// compiler plans (transposes, slices, gathers, assembling sub-word elements
// received into a staging buffer) is one call of these.
//
// tessera_move_elements_{b32,b16,b8}: for each pair (dst, src) of the table,
// in table order, out[dst] = in[src] — s = 4, 2, 1 bytes copied exactly.
//   $m2 out, $m3 in, $m4 table, $m5 pairs (n), $m6 out elements, $m7 in elements.
//   The table is n pairs of little-endian u32 words: destination element
//   index, then source element index.
//
// Pointers are word-aligned; out shares no byte with in or the table (a later
// pair would otherwise read what an earlier one wrote, or a rewritten index).
// Destination elements no pair names keep their bytes. A destination named
// twice holds the later pair's element in the model, but the device splits
// the pairs over six concurrent workers, so the order holds there only within
// one worker's share: the compiler names each destination at most once [INF].
// An element write touches only its own s bytes [INF] (kernels/README.md, next
// to the f16 odd-count assumption).
// Zero pairs is legal and touches nothing.
//
// An index past its region's element count is not a precondition failure:
// the model makes the access where the index puts it, outside the operand's
// footprint, and the checked memory faults. An element address past 2^32 is
// never wrapped back into the address space (it could land inside the
// region): the access is presented at the top of the address space, which no
// tile's SRAM reaches, so it faults as well.
#include <algorithm>
#include <array>
#include <vector>

#include "kernels/costs.hpp"
#include "kernels/element_io.hpp"
#include "kernels/operand_checks.hpp"
#include "kernels/registry.hpp"

namespace tessera::kernels {
namespace {

constexpr unsigned kOut = kOutputRegister;  // $m2
constexpr unsigned kIn = 3;                 // $m3
constexpr unsigned kTable = 4;              // $m4
constexpr unsigned kPairs = 5;              // $m5
constexpr unsigned kOutElements = 6;        // $m6
constexpr unsigned kInElements = 7;         // $m7

constexpr std::uint64_t kPairBytes = 8;
constexpr std::uint64_t kAddressSpace = std::uint64_t{1} << 32;

template <unsigned S>
std::uint64_t out_bytes(const Registers& r) {
  return std::uint64_t{r[kOutElements]} * S;
}

template <unsigned S>
std::uint64_t in_bytes(const Registers& r) {
  return std::uint64_t{r[kInElements]} * S;
}

std::uint64_t table_bytes(const Registers& r) { return std::uint64_t{r[kPairs]} * kPairBytes; }

// Where element `index` of the region at `base` lies, without wrapping.
template <unsigned S>
std::uint32_t element_address(std::uint32_t base, std::uint32_t index) {
  const std::uint64_t address = base + std::uint64_t{index} * S;
  return static_cast<std::uint32_t>(std::min(address, kAddressSpace - S));
}

template <unsigned S>
void move_elements(KernelCall& call) {
  const std::uint64_t pairs = call.reg(kPairs);
  const std::uint32_t out = call.reg(kOut);
  const std::uint32_t in = call.reg(kIn);
  std::vector<std::uint32_t> table;
  std::array<std::uint8_t, S> element{};
  for (std::uint64_t done = 0; done < pairs; done += kModelChunkElements) {
    const std::uint64_t chunk = std::min(kModelChunkElements, pairs - done);
    table.resize(2 * chunk);
    read_elements(call.memory, kTable, call.reg(kTable) + done * kPairBytes, 4, table);
    for (std::size_t p = 0; p < chunk; ++p) {
      call.memory.read(kIn, element_address<S>(in, table[2 * p + 1]), element);
      call.memory.write(kOut, element_address<S>(out, table[2 * p]), element);
    }
  }
  call.cycles = move_elements_cycles(pairs, S);
}

template <unsigned S>
KernelSpec move(std::string_view name) {
  return KernelSpec{std::string(name),
                    KernelKind::kKernel,
                    {OperandSpec{kOut, Access::kWrite, "destination", out_bytes<S>},
                     OperandSpec{kIn, Access::kRead, "source", in_bytes<S>},
                     OperandSpec{kTable, Access::kRead, "table", table_bytes}},
                    [](const Registers& r) -> Violation {
                      const OperandExtent out{kOut, "destination", out_bytes<S>(r)};
                      const OperandExtent in{kIn, "source", in_bytes<S>(r)};
                      const OperandExtent table{kTable, "table", table_bytes(r)};
                      if (auto v = misaligned(r, {kOut, kIn, kTable}, 4)) return v;
                      for (const auto& operand : {out, in, table}) {
                        if (auto v = beyond_address_space(r, operand)) return v;
                      }
                      if (auto v = overlaps(r, out, in)) return v;
                      return overlaps(r, out, table);
                    },
                    move_elements<S>};
}

}  // namespace

void add_move_kernels(KernelRegistry& registry) {
  registry.add(move<4>(kMoveElementsB32));
  registry.add(move<2>(kMoveElementsB16));
  registry.add(move<1>(kMoveElementsB8));
}

}  // namespace tessera::kernels
