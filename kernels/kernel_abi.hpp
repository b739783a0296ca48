#pragma once
// The register ABI every kernel and runtime helper shares, and the interface
// a host model uses to reach tile memory (reference: kernels-siglip-f143.md §0).
//
// A supervisor `call` into a kernel passes the output pointer in $m2, input
// pointers from $m3 on, then scalar arguments; it returns through $m10.
// Decision 2 of ARCHITECTURE.md: the simulator runs the kernel's host model at
// the call boundary instead of its device code. Decisions 3 and 11: the model
// reaches memory only through KernelMemory, asking once per call and operand
// for the byte ranges its own loop bounds will touch; each range is checked
// against the allocation the package's debug section assigns to that operand
// at that call site before the model sees it, and the model then works on the
// returned span with plain arithmetic.

#include <array>
#include <cstdint>
#include <span>

#include "kernels/kernel_span.hpp"

namespace tessera::kernels {

inline constexpr unsigned kOutputRegister = 2;
inline constexpr unsigned kFirstInputRegister = 3;
inline constexpr unsigned kLastArgumentRegister = 9;
inline constexpr unsigned kReturnRegister = 10;
inline constexpr unsigned kWorkerCount = 6;

// What an operand's ABI lets the kernel do with its bytes.
enum class Access : std::uint8_t { kRead, kWrite, kReadWrite };

// How a model uses a span it asks for.
enum class SpanUse : std::uint8_t {
  // The model reads every byte of a read span and writes every byte of a
  // write span: the span is checked for never-written bytes when it is read
  // (--check-uninitialized) and counts as written when granted.
  kWhole,
  // The model touches only some bytes of the span (a table-driven move): it
  // reports what it read and wrote with note_read / note_written.
  kSparse,
};

// Tile memory as a kernel model sees it during one call.
class KernelMemory {
 public:
  virtual ~KernelMemory() = default;

  // The bytes [address, address + size) through operand register `reg`,
  // checked once (inside SRAM, outside code, inside the operand's
  // allocation, as its ABI allows `access`, `alignment`-aligned); throws the
  // simulator's fault when they are not the operand's to touch. A zero size
  // touches nothing and is not checked. The span is valid until the call
  // returns.
  virtual std::span<std::uint8_t> acquire(unsigned reg, std::uint64_t address, std::uint64_t size,
                                          Access access, SpanUse use, unsigned alignment) = 0;
  // For kSparse spans: bytes the model read (checked for never-written bytes
  // when that check is on) and wrote. Both lie inside a span already granted
  // through `reg`.
  virtual void note_read(unsigned reg, std::uint64_t address, std::uint64_t size) = 0;
  virtual void note_written(unsigned reg, std::uint64_t address, std::uint64_t size) = 0;

  // Typed views: `count` elements of T from `address`.
  template <typename T>
  KernelSpan<const T> read(unsigned reg, std::uint64_t address, std::uint64_t count,
                           SpanUse use = SpanUse::kWhole) {
    return typed<const T>(reg, address, count, Access::kRead, use);
  }
  template <typename T>
  KernelSpan<T> write(unsigned reg, std::uint64_t address, std::uint64_t count,
                      SpanUse use = SpanUse::kWhole) {
    return typed<T>(reg, address, count, Access::kWrite, use);
  }
  template <typename T>
  KernelSpan<T> read_write(unsigned reg, std::uint64_t address, std::uint64_t count,
                           SpanUse use = SpanUse::kWhole) {
    return typed<T>(reg, address, count, Access::kReadWrite, use);
  }

 private:
  template <typename T>
  KernelSpan<T> typed(unsigned reg, std::uint64_t address, std::uint64_t count, Access access,
                      SpanUse use) {
    std::uint64_t size = 0;
    // A size past 2^64 is past SRAM too: present it as the largest size, which
    // the check refuses.
    if (__builtin_mul_overflow(count, sizeof(T), &size)) size = ~std::uint64_t{0};
    const std::span<std::uint8_t> bytes = acquire(reg, address, size, access, use, alignof(T));
    // The storage is raw tile memory (an implicit-lifetime array of T).
    return KernelSpan<T>(reinterpret_cast<T*>(bytes.data()),  // NOLINT
                         static_cast<std::size_t>(count), reg, address);
  }
};

// How kernels that round (f16 results, F143 quantisation) round: to nearest,
// ties to even — the default, and the only bit-exact mode — or
// stochastically, as the device does with ESR set in $FP_ICTL, from a
// deterministic per-(tile, worker) generator that is not the IPU's own
// (so not bit-identical to silicon).
enum class Rounding : std::uint8_t { kNearestEven, kStochastic };

// The tile's per-worker random streams for stochastic rounding
// (kernels/rounding.hpp); the simulator's Tile owns them.
class TilePrng;

// One call of a model: the supervisor registers at the call, memory, the
// tile's cycle counter at the call, and the cycles the call takes (the model
// sets them from its cost function); the tile it runs on, the rounding
// mode the simulation asks for, and the tile's random streams, which carry
// on from one call to the next (needed only when rounding stochastically).
struct KernelCall {
  std::array<std::uint32_t, 16> registers{};
  KernelMemory& memory;
  std::uint64_t start_cycle = 0;
  std::uint64_t cycles = 0;
  std::uint32_t tile = 0;  // physical tile id
  Rounding rounding = Rounding::kNearestEven;
  TilePrng* prng = nullptr;

  std::uint32_t reg(unsigned index) const { return registers.at(index); }
};

}  // namespace tessera::kernels
