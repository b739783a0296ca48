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

inline constexpr unsigned kRegisterCount = 16;

// The inline grant path (decision 11; issue 16: span checking < 10 % of a
// call of >= 4 KiB). A memory may give an operand register a window of tile
// bytes in which every span with the window's grants passes every check it
// makes, already made once for the whole window; read/write/read_write then
// grant a span inside it with a few inline compares, without the virtual
// acquire(), and ask acquire() for everything else (which checks, grants or
// faults as always). So a window changes what a span costs, never what is
// granted or how a stray span faults. kSparse spans never take a window:
// the memory keeps a record of them for the notes.
struct SpanWindow {
  static constexpr std::uint8_t kReads = 1;        // spans that read
  static constexpr std::uint8_t kWrites = 2;       // spans that write
  static constexpr std::uint8_t kWholeReads = 4;   // kWhole reads (no never-written test due)
  static constexpr std::uint8_t kWholeWrites = 8;  // kWhole writes (nothing to mark written)
  static constexpr std::uint8_t kSparse = 16;      // never granted: kSparse spans

  // What a span of `access` and `use` needs from a window.
  static constexpr std::uint8_t needs(Access access, SpanUse use) noexcept {
    const bool reads = access != Access::kWrite, writes = access != Access::kRead;
    const auto access_bits =
        static_cast<std::uint8_t>((reads ? kReads : 0) | (writes ? kWrites : 0));
    if (use == SpanUse::kSparse) return static_cast<std::uint8_t>(access_bits | kSparse);
    return static_cast<std::uint8_t>(access_bits | (reads ? kWholeReads : 0) |
                                     (writes ? kWholeWrites : 0));
  }

  // Tile bytes [begin, end); grants 0: no window.
  std::uint32_t begin = 0;
  std::uint32_t end = 0;
  std::uint8_t grants = 0;
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
  // when that check is on) and wrote. Both lie inside a kSparse span already
  // granted through `reg`.
  virtual void note_read(unsigned reg, std::uint64_t address, std::uint64_t size) = 0;
  virtual void note_written(unsigned reg, std::uint64_t address, std::uint64_t size) = 0;
  // Whether note_read does anything (the simulator's never-written check is
  // on, or the memory records reads): a model may skip working out its read
  // notes when not. Write notes are always due.
  bool notes_reads() const noexcept { return notes_reads_; }

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

 protected:
  // The windows, one per register (kRegisterCount, valid until the call
  // returns), and the host address of tile address `origin`, where a window's
  // bytes are. Until set, no register has a window.
  void set_windows(const SpanWindow* windows, std::uint8_t* host, std::uint32_t origin) noexcept {
    windows_ = windows;
    host_ = host;
    origin_ = origin;
  }
  void set_notes_reads(bool notes_reads) noexcept { notes_reads_ = notes_reads; }

 private:
  static constexpr std::array<SpanWindow, kRegisterCount> kNoWindows{};

  template <typename T>
  KernelSpan<T> typed(unsigned reg, std::uint64_t address, std::uint64_t count, Access access,
                      SpanUse use) {
    std::uint64_t size = 0;
    // A size past 2^64 is past SRAM too: present it as the largest size, which
    // the check refuses.
    if (__builtin_mul_overflow(count, sizeof(T), &size)) size = ~std::uint64_t{0};
    const std::uint8_t needs = SpanWindow::needs(access, use);
    if (reg < kRegisterCount) [[likely]] {
      const SpanWindow& window = windows_[reg];
      if ((window.grants & needs) == needs && address >= window.begin && address <= window.end &&
          size <= window.end - address && address % alignof(T) == 0) [[likely]] {
        return KernelSpan<T>(reinterpret_cast<T*>(host_ + (address - origin_)),  // NOLINT
                             static_cast<std::size_t>(count), reg, address);
      }
    }
    const std::span<std::uint8_t> bytes = acquire(reg, address, size, access, use, alignof(T));
    // The storage is raw tile memory (an implicit-lifetime array of T).
    return KernelSpan<T>(reinterpret_cast<T*>(bytes.data()),  // NOLINT
                         static_cast<std::size_t>(count), reg, address);
  }

  const SpanWindow* windows_ = kNoWindows.data();
  std::uint8_t* host_ = nullptr;
  std::uint32_t origin_ = 0;
  bool notes_reads_ = true;
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
