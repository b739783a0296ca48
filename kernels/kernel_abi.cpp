#include "kernels/kernel_abi.hpp"

namespace tessera::kernels {

std::uint32_t KernelMemory::read_u32(unsigned operand_register, std::uint32_t address) {
  std::array<std::uint8_t, 4> bytes{};
  read(operand_register, address, bytes);
  return static_cast<std::uint32_t>(bytes[0]) | static_cast<std::uint32_t>(bytes[1]) << 8 |
         static_cast<std::uint32_t>(bytes[2]) << 16 | static_cast<std::uint32_t>(bytes[3]) << 24;
}

void KernelMemory::write_u32(unsigned operand_register, std::uint32_t address,
                             std::uint32_t value) {
  const std::array<std::uint8_t, 4> bytes{
      static_cast<std::uint8_t>(value), static_cast<std::uint8_t>(value >> 8),
      static_cast<std::uint8_t>(value >> 16), static_cast<std::uint8_t>(value >> 24)};
  write(operand_register, address, bytes);
}

}  // namespace tessera::kernels
