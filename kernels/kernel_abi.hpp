#pragma once
// The register ABI every kernel and runtime helper shares, and the interface
// a host model uses to reach tile memory (reference: kernels-siglip-f143.md §0).
//
// A supervisor `call` into a kernel passes the output pointer in $m2, input
// pointers from $m3 on, then scalar arguments; it returns through $m10.
// Decision 2 of ARCHITECTURE.md: the simulator runs the kernel's host model at
// the call boundary instead of its device code. Decision 3: the model reaches
// memory only through KernelMemory, naming the operand register each access
// belongs to, so that the simulator can check it against the allocation the
// package's debug section assigns to that operand at that call site.

#include <array>
#include <cstdint>
#include <span>

namespace tessera::kernels {

inline constexpr unsigned kOutputRegister = 2;
inline constexpr unsigned kFirstInputRegister = 3;
inline constexpr unsigned kLastArgumentRegister = 9;
inline constexpr unsigned kReturnRegister = 10;
inline constexpr unsigned kWorkerCount = 6;

// Tile memory as a kernel model sees it. Every access names the operand
// register whose pointer it derives from; the implementation checks it and
// throws (the simulator's KernelOverrun fault) when it strays.
class KernelMemory {
 public:
  virtual ~KernelMemory() = default;
  virtual void read(unsigned operand_register, std::uint32_t address,
                    std::span<std::uint8_t> bytes) = 0;
  virtual void write(unsigned operand_register, std::uint32_t address,
                     std::span<const std::uint8_t> bytes) = 0;

  std::uint32_t read_u32(unsigned operand_register, std::uint32_t address);
  void write_u32(unsigned operand_register, std::uint32_t address, std::uint32_t value);
};

// One call of a model: the supervisor registers at the call, memory, the
// tile's cycle counter at the call, and the cycles the call takes (the model
// sets them from its cost function).
struct KernelCall {
  std::array<std::uint32_t, 16> registers{};
  KernelMemory& memory;
  std::uint64_t start_cycle = 0;
  std::uint64_t cycles = 0;

  std::uint32_t reg(unsigned index) const { return registers.at(index); }
};

}  // namespace tessera::kernels
