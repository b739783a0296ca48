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
// An index past its region's element count is not a precondition failure
// (preconditions see registers, not the table): the model refuses it when it
// reads the pair, as a KernelOverrun naming the operand — whatever padding the
// operand's allocation has past its $m6 or $m7 elements.
#include <type_traits>

#include "kernels/costs.hpp"
#include "kernels/operand_checks.hpp"
#include "kernels/registry.hpp"
#include "kernels/touched_elements.hpp"

namespace tessera::kernels {
namespace {

constexpr unsigned kOut = kOutputRegister;  // $m2
constexpr unsigned kIn = 3;                 // $m3
constexpr unsigned kTable = 4;              // $m4
constexpr unsigned kPairs = 5;              // $m5
constexpr unsigned kOutElements = 6;        // $m6
constexpr unsigned kInElements = 7;         // $m7

constexpr std::uint64_t kPairBytes = 8;

template <unsigned S>
std::uint64_t out_bytes(const Registers& r) {
  return std::uint64_t{r[kOutElements]} * S;
}

template <unsigned S>
std::uint64_t in_bytes(const Registers& r) {
  return std::uint64_t{r[kInElements]} * S;
}

std::uint64_t table_bytes(const Registers& r) { return std::uint64_t{r[kPairs]} * kPairBytes; }

// The unsigned type of an S-byte element.
template <unsigned S>
using ElementBits = std::conditional_t<S == 4, std::uint32_t,
                                       std::conditional_t<S == 2, std::uint16_t, std::uint8_t>>;

template <unsigned S>
void move_elements(KernelCall& call) {
  using Bits = ElementBits<S>;
  const std::uint64_t pairs = call.reg(kPairs);
  if (pairs != 0) {
    KernelMemory& memory = call.memory;
    const auto table = memory.read<std::uint32_t>(kTable, call.reg(kTable), 2 * pairs);
    const auto in = memory.read<Bits>(kIn, call.reg(kIn), call.reg(kInElements), SpanUse::kSparse);
    const auto out =
        memory.write<Bits>(kOut, call.reg(kOut), call.reg(kOutElements), SpanUse::kSparse);
    // The elements read and written, for the simulator's record of what was
    // ever written (and --check-uninitialized). Sized from the registers only
    // now that both spans were granted (so by SRAM, not by a wild count).
    TouchedElements read(in.size()), written(out.size());
    for (std::size_t p = 0; p < pairs; ++p) {
      const std::uint32_t destination = table[2 * p];
      const std::uint32_t source = table[2 * p + 1];
      out.at(destination) = in.at(source);
      read.mark(source);
      written.mark(destination);
    }
    read.for_each_run([&](std::uint64_t first, std::uint64_t n) {
      memory.note_read(kIn, in.address() + first * S, n * S);
    });
    written.for_each_run([&](std::uint64_t first, std::uint64_t n) {
      memory.note_written(kOut, out.address() + first * S, n * S);
    });
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
