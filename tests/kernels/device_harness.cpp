#include "tests/kernels/device_harness.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "kernels/device/device_kernels.hpp"
#include "tests/kernels/kernel_runner.hpp"

namespace tessera::kernels::testing {
namespace {

// The image spans the buffers with a margin either side for stray writes.
constexpr std::uint32_t kMargin = 256;

std::uint8_t pattern_byte(std::uint32_t address) {
  return static_cast<std::uint8_t>((address * 0x9E3779B1u) >> 24);
}

std::vector<std::uint8_t> expect_contents(const CaseOperand& operand) {
  EXPECT_EQ(operand.contents.size(), operand.size())
      << "operand $m" << operand.reg << " (" << operand.name
      << ") needs contents: both sides must start from the same bytes";
  return operand.contents;
}

}  // namespace

DeviceResult run_device(std::string_view kernel_name, const Registers& r,
                        const std::vector<Buffer>& buffers, std::uint32_t cycle_counter) {
  DeviceResult result;
  const device::DeviceKernel* kernel = device::find_device_kernel(kernel_name);
  if (kernel == nullptr) {
    ADD_FAILURE() << kernel_name << " has no device source";
    return result;
  }
  std::uint32_t first = kBufferBase, end = kBufferBase;
  for (const Buffer& buffer : buffers) {
    first = std::min(first, buffer.address);
    end = std::max(end, buffer.address + buffer.size);
  }
  const std::uint32_t base = first - kMargin;
  std::vector<std::uint8_t> image(end + kMargin - base);
  for (std::uint32_t i = 0; i < image.size(); ++i) image[i] = pattern_byte(base + i);
  for (const Buffer& buffer : buffers) {
    EXPECT_EQ(buffer.contents.size(), buffer.size)
        << "buffer " << buffer.name << " needs contents: both sides must start from the same bytes";
    std::copy(buffer.contents.begin(), buffer.contents.end(),
              image.begin() + (buffer.address - base));
  }
  device::Registers registers;
  std::copy(r.begin(), r.end(), registers.m);
  device::TileMemory memory(base, image.data(), image.size());
  memory.set_cycle_counter(cycle_counter);
  try {
    kernel->entry(registers, memory);
  } catch (const device::DeviceFault& fault) {
    result.fault = fault.what();
  } catch (const std::runtime_error& fault) {
    // The IPU emulation's refusals (ipu_emulation/ipu_amp_emulation.hpp):
    // a fast path that breaks the AMP's protocol.
    result.fault = std::string("emulation: ") + fault.what();
  }
  std::vector<bool> inside(image.size(), false);
  for (const Buffer& buffer : buffers) {
    const std::uint32_t at = buffer.address - base;
    std::fill(inside.begin() + at, inside.begin() + at + buffer.size, true);
    result.buffers.emplace_back(image.begin() + at, image.begin() + at + buffer.size);
  }
  for (std::uint32_t i = 0; i < image.size(); ++i) {
    if (!inside[i] && image[i] != pattern_byte(base + i) && result.stray_writes.size() < 8) {
      result.stray_writes.push_back(fmt::format("0x{:05x}", base + i));
    }
  }
  return result;
}

DeviceResult run_device(const KernelCase& c, std::uint32_t cycle_counter) {
  for (const CaseOperand& operand : c.operands) {
    if (!operand.alias_of) expect_contents(operand);
  }
  const std::vector<Buffer> buffers = c.buffers();
  DeviceResult result = run_device(c.kernel, c.registers(), buffers, cycle_counter);
  if (result.buffers.size() != buffers.size()) return result;
  // An alias has no bytes of its own (as run_case reads it): the operand it
  // aliases is compared.
  for (const CaseOperand& operand : c.operands) {
    if (operand.alias_of) {
      result.operands[operand.reg] = {};
      continue;
    }
    for (std::size_t i = 0; i < buffers.size(); ++i) {
      if (buffers[i].address == c.address(operand.reg))
        result.operands[operand.reg] = result.buffers[i];
    }
  }
  return result;
}

namespace {

struct Approximate {
  std::uint32_t address;
  unsigned element_bytes;
  const CloseEnough* close;
};

void compare(std::string_view kernel, const Registers& registers,
             const std::vector<Buffer>& buffers, const Approximate* approximate) {
  SCOPED_TRACE(std::string(kernel));
  const KernelSpec* spec = KernelRegistry::standard().find(kernel);
  ASSERT_NE(spec, nullptr) << kernel << " is not in the registry";
  const auto violation = spec->precondition(registers);
  ASSERT_FALSE(violation.has_value()) << "the call breaks the precondition: " << *violation;
  KernelRun model(kernel, registers, buffers);
  ASSERT_TRUE(model.halted()) << "the model faulted: " << model.fault_text();
  const DeviceResult device = run_device(kernel, registers, buffers);
  ASSERT_EQ(device.fault, "") << "the device source faulted";
  ASSERT_EQ(device.buffers.size(), buffers.size());
  EXPECT_TRUE(device.stray_writes.empty())
      << "the device source wrote outside its operands, at "
      << fmt::format("{}", fmt::join(device.stray_writes, ", "));
  for (std::size_t b = 0; b < buffers.size(); ++b) {
    const auto model_bytes = model.read(buffers[b].address, buffers[b].size);
    const auto& device_bytes = device.buffers[b];
    if (approximate != nullptr && approximate->address == buffers[b].address) {
      const unsigned element_bytes = approximate->element_bytes;
      std::size_t failures = 0;
      for (std::size_t i = 0; i + element_bytes <= model_bytes.size(); i += element_bytes) {
        std::uint32_t m = 0, d = 0;
        std::memcpy(&m, &model_bytes[i], element_bytes);
        std::memcpy(&d, &device_bytes[i], element_bytes);
        if (!(*approximate->close)(m, d, i / element_bytes) && ++failures <= 5) {
          ADD_FAILURE() << fmt::format("{} element {}: model 0x{:x}, device 0x{:x}",
                                       buffers[b].name, i / element_bytes, m, d);
        }
      }
      EXPECT_EQ(failures, 0u) << buffers[b].name << " elements outside the bound";
      continue;
    }
    if (model_bytes == device_bytes) continue;
    const auto mismatch =
        std::mismatch(model_bytes.begin(), model_bytes.end(), device_bytes.begin());
    const auto at = static_cast<std::size_t>(mismatch.first - model_bytes.begin());
    ADD_FAILURE() << fmt::format("{} differs first at byte {}: model 0x{:02x}, device 0x{:02x}",
                                 buffers[b].name, at, model_bytes[at], device_bytes[at]);
  }
}

}  // namespace

void expect_device_matches_model(std::string_view kernel, const Registers& registers,
                                 const std::vector<Buffer>& buffers) {
  compare(kernel, registers, buffers, nullptr);
}

void expect_device_close_to_model(std::string_view kernel, const Registers& registers,
                                  const std::vector<Buffer>& buffers,
                                  std::uint32_t approximate_address, unsigned element_bytes,
                                  const CloseEnough& close) {
  const Approximate approximate{approximate_address, element_bytes, &close};
  compare(kernel, registers, buffers, &approximate);
}

void expect_device_matches_model(const KernelCase& c) {
  for (const CaseOperand& operand : c.operands) {
    if (!operand.alias_of) expect_contents(operand);
  }
  compare(c.kernel, c.registers(), c.buffers(), nullptr);
}

void expect_device_close_to_model(const KernelCase& c, unsigned reg, unsigned element_bytes,
                                  const CloseEnough& close) {
  for (const CaseOperand& operand : c.operands) {
    if (!operand.alias_of) expect_contents(operand);
  }
  const Approximate approximate{c.address(reg), element_bytes, &close};
  compare(c.kernel, c.registers(), c.buffers(), &approximate);
}

std::uint32_t Patterns::below(std::uint32_t n) {
  return std::uniform_int_distribution<std::uint32_t>(0, n - 1)(engine_);
}

std::uint32_t Patterns::f32() {
  static constexpr std::uint32_t kSpecial[] = {
      0x00000000u, 0x80000000u, 0x00000001u, 0x807FFFFFu, 0x00800000u, 0x3F800000u, 0x7F7FFFFFu,
      0xFF7FFFFFu, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00001u, 0x7F800001u, 0x7F802000u,
      0x477FEFFFu, 0x477FF000u, 0x33000000u, 0x33000001u, 0x387FE000u, 0x387FF000u};
  if (below(4) == 0) return kSpecial[below(std::size(kSpecial))];
  return std::uniform_int_distribution<std::uint32_t>()(engine_);
}

std::uint16_t Patterns::f16() {
  static constexpr std::uint16_t kSpecial[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x83FF,
                                               0x0400, 0x3C00, 0xBC00, 0x7BFF, 0xFBFF, 0x7BFE,
                                               0x7C00, 0xFC00, 0x7E00, 0xFE00, 0x7C01, 0x7D55};
  if (below(4) == 0) return kSpecial[below(std::size(kSpecial))];
  return static_cast<std::uint16_t>(below(65536));
}

std::uint32_t Patterns::f32_finite(float scale) {
  const float x = std::uniform_real_distribution<float>(-scale, scale)(engine_);
  std::uint32_t bits;
  std::memcpy(&bits, &x, 4);
  return bits;
}

std::uint16_t Patterns::f16_finite(float scale) {
  // Through the f32 value: truncating to f16 bits by hand keeps the harness
  // free of the models' conversions.
  for (;;) {
    const std::uint16_t h = static_cast<std::uint16_t>(below(65536));
    const std::uint32_t exponent = (h >> 10) & 0x1F;
    if (exponent == 0x1F) continue;
    const float magnitude = exponent == 0 ? static_cast<float>(h & 0x3FF) * 0x1p-24f
                                          : static_cast<float>((h & 0x3FF) | 0x400) *
                                                std::ldexp(1.0f, static_cast<int>(exponent) - 25);
    if (magnitude <= scale) return h;
  }
}

std::vector<std::uint8_t> Patterns::bytes(std::size_t n) {
  std::vector<std::uint8_t> out(n);
  for (auto& b : out) b = static_cast<std::uint8_t>(below(256));
  return out;
}

std::vector<std::uint8_t> Patterns::f32s(std::size_t n) {
  std::vector<std::uint32_t> values(n);
  for (auto& v : values) v = f32();
  return bytes_of(values);
}

std::vector<std::uint8_t> Patterns::f16s(std::size_t n) {
  std::vector<std::uint16_t> values(n);
  for (auto& v : values) v = f16();
  return bytes_of(values);
}

}  // namespace tessera::kernels::testing
