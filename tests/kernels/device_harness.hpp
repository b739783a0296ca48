#pragma once
// Runs a device kernel source's portable entry (kernels/device/) on the same
// call the host model runs in the simulator, and compares them.
//
// The model side is the registry's model through a simulated call
// (run_case: a one-tile chip, every span checked against the call site's
// allocations). The device side is the source's portable entry on a host
// image of tile memory holding the same buffers at the same addresses, every
// other byte a known pattern: after the call each operand's bytes are
// compared, and every byte outside the operands must still hold the pattern,
// so a device source that writes where the model does not fails.

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "tests/kernels/kernel_case.hpp"

namespace tessera::kernels::testing {

struct DeviceResult {
  std::string fault;  // the DeviceFault's message; "" when the entry returned
  std::map<unsigned, std::vector<std::uint8_t>> operands;  // by register (KernelCase runs)
  std::vector<std::vector<std::uint8_t>> buffers;          // by buffer, in the order given
  std::vector<std::string> stray_writes;  // image bytes outside every buffer that changed
};

// Runs `kernel`'s portable entry with `registers` on an image holding
// `buffers` (every buffer must have its contents). Fails the test (and
// returns an empty result) when the symbol has no device source.
DeviceResult run_device(std::string_view kernel, const Registers& registers,
                        const std::vector<Buffer>& buffers, std::uint32_t cycle_counter = 0);
// The same for a KernelCase (operands placed as run_case places them).
DeviceResult run_device(const KernelCase& c, std::uint32_t cycle_counter = 0);

// The model (simulated) and the device source agree on every operand byte,
// and the device source writes nothing else. Every operand must have
// contents (an output starts from known bytes on both sides).
void expect_device_matches_model(const KernelCase& c);

// As above, but the operand `reg` (elements of `element_bytes`) need only
// agree within `close(model element, device element, index)`; every other
// operand bit for bit.
using CloseEnough =
    std::function<bool(std::uint32_t model, std::uint32_t device, std::size_t index)>;
void expect_device_close_to_model(const KernelCase& c, unsigned reg, unsigned element_bytes,
                                  const CloseEnough& close);

// The same with buffers at explicit addresses (the GEMMs' memory ABI wants
// interleaved memory and separate memory elements): the buffer at
// `approximate_address` is compared with `close`, every other bit for bit.
void expect_device_close_to_model(std::string_view kernel, const Registers& registers,
                                  const std::vector<Buffer>& buffers,
                                  std::uint32_t approximate_address, unsigned element_bytes,
                                  const CloseEnough& close);
void expect_device_matches_model(std::string_view kernel, const Registers& registers,
                                 const std::vector<Buffer>& buffers);

// Deterministic test data weighted towards special values: signed zeros,
// subnormals, the largest finite values, infinities, quiet and signalling
// NaNs with payloads.
class Patterns {
 public:
  explicit Patterns(std::uint32_t seed) : engine_(seed) {}
  std::uint32_t f32();
  std::uint16_t f16();
  // A finite value uniform-ish in [−scale, scale] (f32 bits).
  std::uint32_t f32_finite(float scale);
  std::uint16_t f16_finite(float scale);
  std::uint32_t below(std::uint32_t n);  // uniform in [0, n)
  std::vector<std::uint8_t> bytes(std::size_t n);
  std::vector<std::uint8_t> f32s(std::size_t n);
  std::vector<std::uint8_t> f16s(std::size_t n);

 private:
  std::mt19937 engine_;
};

}  // namespace tessera::kernels::testing
