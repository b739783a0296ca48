#pragma once
// Element access for the kernels' host models: little-endian 1-, 2- or
// 4-byte elements moved through the checked KernelMemory in bounded chunks
// (never a buffer sized by an untrusted register: the first stray chunk
// faults before a large one is allocated).

#include <cstdint>
#include <span>

#include "kernels/kernel_abi.hpp"

namespace tessera::kernels {

inline constexpr std::uint64_t kModelChunkElements = 1024;

// Reads elements.size() elements of `element_bytes` from `address` (which the
// precondition has kept, with the elements, inside the 32-bit address space).
void read_elements(KernelMemory& memory, unsigned operand_register, std::uint64_t address,
                   unsigned element_bytes, std::span<std::uint32_t> elements);
void write_elements(KernelMemory& memory, unsigned operand_register, std::uint64_t address,
                    unsigned element_bytes, std::span<const std::uint32_t> elements);

}  // namespace tessera::kernels
