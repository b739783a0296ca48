#include "kernels/element_io.hpp"

#include <vector>

namespace tessera::kernels {

void read_elements(KernelMemory& memory, unsigned operand_register, std::uint64_t address,
                   unsigned element_bytes, std::span<std::uint32_t> elements) {
  std::vector<std::uint8_t> bytes(elements.size() * element_bytes);
  if (bytes.empty()) return;
  memory.read(operand_register, static_cast<std::uint32_t>(address), bytes);
  for (std::size_t i = 0; i < elements.size(); ++i) {
    std::uint32_t value = 0;
    for (unsigned b = 0; b < element_bytes; ++b) {
      value |= std::uint32_t{bytes[i * element_bytes + b]} << (8 * b);
    }
    elements[i] = value;
  }
}

void write_elements(KernelMemory& memory, unsigned operand_register, std::uint64_t address,
                    unsigned element_bytes, std::span<const std::uint32_t> elements) {
  std::vector<std::uint8_t> bytes(elements.size() * element_bytes);
  if (bytes.empty()) return;
  for (std::size_t i = 0; i < elements.size(); ++i) {
    for (unsigned b = 0; b < element_bytes; ++b) {
      bytes[i * element_bytes + b] = static_cast<std::uint8_t>(elements[i] >> (8 * b));
    }
  }
  memory.write(operand_register, static_cast<std::uint32_t>(address), bytes);
}

}  // namespace tessera::kernels
