#pragma once
// What a device kernel source sees: its registers, tile memory, its worker
// index, and the entry that connects the registry's call ABI to the code.
//
// The call ABI (kernels/kernel_abi.hpp, kernels/README.md): the supervisor
// `call`s the kernel's symbol with $m2 = output pointer, $m3… inputs, then
// scalars, $m10 = return address, $m11 = supervisor stack. Every kernel here
// is written as a *worker body*: a function of (registers, tile memory,
// worker index 0…5) that does worker w's share of the call. How the body is
// entered depends on where the source is built:
//
// - popc --target ipu21 (`__IPU__` defined): TESSERA_DEVICE_KERNEL emits the
//   supervisor entry symbol in assembly — it stores $m2…$m9 as an 8-word
//   frame on the supervisor stack, `runall`s the worker entry on the six
//   contexts with that frame as the vertex base, `sync`s the tile's workers
//   and returns through $m10 — and a C++ worker entry that reads the frame
//   back into `Registers` and calls the body with its context id. Tile
//   memory is the tile's own address space: a pointer is the register.
// - the host's g++ (no `__IPU__`): the same macro defines the *portable
//   entry* `void NAME(const Registers&, TileMemory&)`, which runs the body
//   for workers 0…5 in turn — the device's six contexts one after another,
//   each on its own share exactly as on the device — over a host image of
//   tile memory. Every array a body asks for is checked against that image
//   (address, size, alignment) and every index into it against the array,
//   so tests/kernels/device_kernels_test.cpp can run the algorithm against
//   the host model and a stray access is a test failure, not memory damage.
//
// A worker's stack is 0x100 bytes on the device (the prior art's runtime):
// bodies keep nothing row- or table-sized on it.
//
// Nothing here has been compiled by popc or run on silicon: the assembly
// entry and the intrinsics follow Graphcore's public codelet sources and the
// prior art's notes (docs/reference/kernels-siglip-f143.md §0) [INF].

#include <cstdint>

#ifndef __IPU__
#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#endif

namespace tessera::device {

inline constexpr unsigned kWorkers = 6;

// $m0…$m15 at the call; only $m2…$m9 (the argument registers) are defined.
struct Registers {
  std::uint32_t m[16] = {};
  std::uint32_t operator[](unsigned index) const { return m[index]; }
};

#ifndef __IPU__
// A device source's access outside the host image, misaligned, or past its
// own array: the portable build's stand-in for a memory fault on silicon.
class DeviceFault : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
#endif

// `count` elements of T at a tile address. Indexing is checked in the host
// build (a body that runs past what it asked for faults) and is a plain
// pointer access on the device.
template <typename T>
class Array {
 public:
  Array() = default;
  Array(T* data, std::uint32_t count) : data_(data), count_(count) {}

  T& operator[](std::uint32_t index) const {
#ifndef __IPU__
    if (index >= count_) {
      throw DeviceFault("index " + std::to_string(index) + " past an array of " +
                        std::to_string(count_) + " elements");
    }
#endif
    return data_[index];
  }
  std::uint32_t size() const { return count_; }
  T* data() const { return data_; }
  Array sub(std::uint32_t first, std::uint32_t count) const {
#ifndef __IPU__
    if (first > count_ || count > count_ - first) {
      throw DeviceFault("subarray [" + std::to_string(first) + ", +" + std::to_string(count) +
                        ") past an array of " + std::to_string(count_) + " elements");
    }
#endif
    return Array(data_ + first, count);
  }

 private:
  T* data_ = nullptr;
  std::uint32_t count_ = 0;
};

#ifndef __IPU__
// Told of every range TileMemory::array hands out (writable unless T is
// const) while an emulated call runs: the IPU emulation's fast paths load
// and store through raw pointers, and the emulation checks each access
// against these ranges (tests/kernels/ipu_emulation/), as Array checks the
// portable part's indices. Null otherwise. Set only by the entries of
// sources built with the emulation, so TileMemory is the same in every
// translation unit.
using GrantedHook = void (*)(const void* data, std::size_t bytes, bool writable);
inline GrantedHook granted_hook = nullptr;
#endif

// Tile memory by byte address.
class TileMemory {
 public:
#ifdef __IPU__
  template <typename T>
  Array<T> array(std::uint32_t address, std::uint32_t count) const {
    return Array<T>(reinterpret_cast<T*>(address), count);  // NOLINT: tile addresses are pointers
  }
  // The tile's cycle counter, low 32 bits (worker 0 samples it).
  std::uint32_t cycle_counter() const { return __builtin_ipu_get_scount_l(); }
#else
  // The host image holds tile addresses [base, base + size) at `bytes`.
  TileMemory(std::uint32_t base, std::uint8_t* bytes, std::size_t size)
      : base_(base), bytes_(bytes), size_(size) {}

  template <typename T>
  Array<T> array(std::uint32_t address, std::uint32_t count) const {
    if (count == 0) return Array<T>();  // zero work touches nothing, whatever the pointer
    const std::uint64_t size = std::uint64_t{count} * sizeof(T);
    if (address < base_ || address - base_ > size_ || size > size_ - (address - base_)) {
      throw DeviceFault("access [0x" + hex(address) + ", +" + std::to_string(size) +
                        ") outside the tile image");
    }
    if (address % alignof(T) != 0) {
      throw DeviceFault("access at 0x" + hex(address) + " misaligned for " +
                        std::to_string(alignof(T)) + "-byte elements");
    }
    // The image is raw tile memory (an implicit-lifetime array of T).
    T* data = reinterpret_cast<T*>(bytes_ + (address - base_));  // NOLINT
    if (granted_hook != nullptr) granted_hook(data, size, !std::is_const_v<T>);
    return Array<T>(data, count);
  }

  // The value the host says the tile's cycle counter holds when a worker
  // samples it (the simulator's is the model's business, not the source's).
  std::uint32_t cycle_counter() const { return cycle_counter_; }
  void set_cycle_counter(std::uint32_t value) { cycle_counter_ = value; }

 private:
  static std::string hex(std::uint32_t value) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string text(8, '0');
    for (int i = 7; i >= 0; --i, value >>= 4)
      text[static_cast<std::size_t>(i)] = kDigits[value & 15];
    return text;
  }

  std::uint32_t base_;
  std::uint8_t* bytes_;
  std::size_t size_;
  std::uint32_t cycle_counter_ = 0;
#endif
};

// Worker w's share of n items split balanced contiguous (the partition of
// kernels/costs.hpp's worker_share, reference §0): ⌊n/6⌋ + (w < n mod 6)
// items from w·⌊n/6⌋ + min(w, n mod 6).
struct Share {
  std::uint32_t first = 0;
  std::uint32_t count = 0;
};
inline Share balanced_share(std::uint32_t n, unsigned worker) {
  const std::uint32_t q = n / kWorkers;
  const std::uint32_t r = n % kWorkers;
  const std::uint32_t w = worker;
  return Share{w * q + (w < r ? w : r), q + (w < r ? 1u : 0u)};
}

// Worker w's share of n sub-word elements split in whole words of
// `per_word` elements (2 for f16, 4 for bytes), balanced contiguous over the
// words: no two workers store into one word, so the split is safe whether a
// sub-word store touches only its own bytes or rewrites its word [INF:
// kernels/README.md's open assumption]. The last share ends at n.
inline Share word_share(std::uint32_t n, std::uint32_t per_word, unsigned worker) {
  const std::uint32_t words = n / per_word + (n % per_word != 0 ? 1u : 0u);
  const Share share = balanced_share(words, worker);
  const std::uint32_t first = share.first * per_word;
  if (first >= n) return Share{n, 0};
  const std::uint32_t end = (share.first + share.count) * per_word;
  return Share{first, (end < n ? end : n) - first};
}

}  // namespace tessera::device

// TESSERA_DEVICE_KERNEL(symbol, body): the registry symbol `symbol` runs
// `body(const Registers&, TileMemory&, unsigned worker)` on six workers.
#ifdef __IPU__
// The supervisor entry: the frame is $m2…$m9 in register order (32 bytes,
// 8-aligned as runall requires), so the worker sees `Registers::m[2 + i]` at
// frame word i. The worker entry returns true (exitz: success, H3).
#define TESSERA_DEVICE_STRINGIFY_(x) #x
#define TESSERA_DEVICE_STRINGIFY(x) TESSERA_DEVICE_STRINGIFY_(x)
#define TESSERA_DEVICE_KERNEL(symbol, body)                                                 \
  extern "C" __attribute__((target("worker")))                                              \
  __attribute__((colossus_vertex)) bool symbol##_worker() {                                 \
    const auto* frame = static_cast<const std::uint32_t*>(__builtin_ipu_get_vertex_base()); \
    ::tessera::device::Registers registers;                                                 \
    for (unsigned i = 0; i < 8; ++i) registers.m[2 + i] = frame[i];                         \
    ::tessera::device::TileMemory memory;                                                   \
    body(registers, memory, __builtin_ipu_get_worker_id());                                 \
    return true;                                                                            \
  }                                                                                         \
  asm(".section .text." TESSERA_DEVICE_STRINGIFY(symbol) ",\"ax\",@progbits\n"              \
      ".globl " TESSERA_DEVICE_STRINGIFY(symbol) "\n"                                       \
      ".type " TESSERA_DEVICE_STRINGIFY(symbol) ", @function\n"                             \
      ".align 8\n"                                                                          \
      ".supervisor\n" TESSERA_DEVICE_STRINGIFY(symbol) ":\n"                                \
      "  add $m11, $m11, -32\n"                                                             \
      "  st32 $m2, $m11, $mzero, 0\n"                                                       \
      "  st32 $m3, $m11, $mzero, 1\n"                                                       \
      "  st32 $m4, $m11, $mzero, 2\n"                                                       \
      "  st32 $m5, $m11, $mzero, 3\n"                                                       \
      "  st32 $m6, $m11, $mzero, 4\n"                                                       \
      "  st32 $m7, $m11, $mzero, 5\n"                                                       \
      "  st32 $m8, $m11, $mzero, 6\n"                                                       \
      "  st32 $m9, $m11, $mzero, 7\n"                                                       \
      "  setzi $m1, " TESSERA_DEVICE_STRINGIFY(symbol) "_worker\n"                         \
      "  runall $m1, $m11, 0\n"                                                             \
      "  sync 2\n" /* TEXCH_SYNCZONE_LOCAL (= 2): all six workers have exited */           \
      "  add $m11, $m11, 32\n"                                                              \
      "  br $m10\n"                                                                         \
      ".size " TESSERA_DEVICE_STRINGIFY(symbol) ", .-" TESSERA_DEVICE_STRINGIFY(symbol) "\n" \
      ".section .text\n");
#else
// A call starts with no ranges granted (the emulation's record, above).
#ifdef TESSERA_IPU_EMULATION
#define TESSERA_DEVICE_EMULATION_CALL_SCOPE() \
  ::tessera::ipu_emulation::CallScope emulated_call(::tessera::device::granted_hook)
#else
#define TESSERA_DEVICE_EMULATION_CALL_SCOPE() static_cast<void>(0)
#endif
// The body sees only $m2…$m9, as the device's frame carries only those: any
// other register reads 0 here (and garbage on silicon).
#define TESSERA_DEVICE_KERNEL(symbol, body)                                                      \
  namespace tessera::device::entry {                                                             \
  void symbol(const ::tessera::device::Registers& call, ::tessera::device::TileMemory& memory) { \
    ::tessera::device::Registers registers;                                                      \
    for (unsigned i = 2; i <= 9; ++i) registers.m[i] = call.m[i];                                \
    TESSERA_DEVICE_EMULATION_CALL_SCOPE();                                                       \
    for (unsigned worker = 0; worker < ::tessera::device::kWorkers; ++worker) {                  \
      body(registers, memory, worker);                                                           \
    }                                                                                            \
  }                                                                                              \
  }
#endif
