// Device sources of the table-driven element moves (host models and ABI:
// kernels/move_elements.cpp):
//   tessera_move_elements_{b32,b16,b8}: $m2 out, $m3 in, $m4 table, $m5 n
//   pairs, $m6 out elements, $m7 in elements; for each (dst, src) pair,
//   out[dst] = in[src], s bytes copied exactly.
// The pairs are split balanced contiguous over the workers, each in table
// order. An index past $m6 or $m7 is the array's fault (the host build
// refuses it; the device makes the access where the index puts it — the
// precondition sees registers, not the table). Destinations no pair names
// keep their bytes; the compiler names each destination at most once, so
// the workers' order does not matter [INF].
// [INF] An element store touches only its own s bytes (kernels/README.md):
// on silicon a b16 or b8 store is a read-modify-write of its word unless
// the ISA's sub-word store is used; this is the open assumption.
#include "kernels/device/device_abi.hpp"

namespace tessera::device {
namespace {

template <typename Bits>
void move_elements(const Registers& r, TileMemory& memory, unsigned worker) {
  const Share share = balanced_share(r[5], worker);
  if (share.count == 0) return;
  const auto table = memory.array<const std::uint32_t>(r[4] + 8 * share.first, 2 * share.count);
  const auto in = memory.array<const Bits>(r[3], r[7]);
  const auto out = memory.array<Bits>(r[2], r[6]);
  for (std::uint32_t p = 0; p < share.count; ++p) out[table[2 * p]] = in[table[2 * p + 1]];
}

}  // namespace
}  // namespace tessera::device

TESSERA_DEVICE_KERNEL(tessera_move_elements_b32, ::tessera::device::move_elements<std::uint32_t>)
TESSERA_DEVICE_KERNEL(tessera_move_elements_b16, ::tessera::device::move_elements<std::uint16_t>)
TESSERA_DEVICE_KERNEL(tessera_move_elements_b8, ::tessera::device::move_elements<std::uint8_t>)
