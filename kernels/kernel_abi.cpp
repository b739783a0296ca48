#include "kernels/kernel_abi.hpp"

#include "support/little_endian.hpp"

namespace tessera::kernels {

std::uint32_t KernelMemory::read_u32(unsigned operand_register, std::uint32_t address) {
  std::array<std::uint8_t, 4> bytes{};
  read(operand_register, address, bytes);
  return load_u32_le(bytes.data());
}

void KernelMemory::write_u32(unsigned operand_register, std::uint32_t address,
                             std::uint32_t value) {
  std::array<std::uint8_t, 4> bytes{};
  store_u32_le(value, bytes.data());
  write(operand_register, address, bytes);
}

}  // namespace tessera::kernels
