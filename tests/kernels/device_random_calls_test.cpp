// Random valid calls of every registry kernel — drawn from the generators
// every kernel test shares (call_generators.hpp) with fixed seeds — through
// the model and through the device source, bit for bit. The kernels whose
// sources compute their own exp or tanh agree with the models only within
// the documented bounds; device_bounds_test and device_attention_test check
// those, so they are left out here (kApproximate), as are the cycle sample
// and the profile sample, whose values are the simulator's counter
// (SampleCyclesStoresTheCounterInOneWord, ProfileSampleRecordsTheCounterAt…).
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <fmt/format.h>

#include <map>
#include <optional>
#include <random>
#include <set>

#include "kernels/registry.hpp"
#include "target/memory_map.hpp"
#include "tests/kernels/call_generators.hpp"
#include "tests/kernels/device_harness.hpp"

namespace tessera::kernels::testing {
namespace {

const std::set<std::string_view> kApproximate = {"tessera_softmax_rows_f32",
                                                 "tessera_softmax_rows_f16",
                                                 "tessera_gelu_f32",
                                                 "tessera_gelu_f16",
                                                 "tessera_gelu_c16_to_a16_f16",
                                                 "tessera_layer_norm_rows_f32",
                                                 "tessera_attention_softmax_f16",
                                                 "tessera_attention_merge_middle_f16",
                                                 "tessera_attention_merge_final_f16",
                                                 "tessera_attention_combine_middle_f32",
                                                 "tessera_attention_combine_final_f32",
                                                 "tessera_sample_cycles",
                                                 "tessera_profile_sample"};

constexpr std::uint64_t kMaxCallBytes = 96 * 1024;
constexpr unsigned kPerKernel = 6;
constexpr unsigned kTableRegister = 4;  // the element moves' table

// A bump allocator over one address range.
struct Arena {
  std::uint32_t next, end;
  std::optional<std::uint32_t> take(std::uint64_t bytes) {
    if (next + bytes > end) return std::nullopt;
    const std::uint32_t at = next;
    next = static_cast<std::uint32_t>((next + bytes + 63) / 64 * 64 + 64);
    return at;
  }
};

// Places the generated call's operands: a pointer the generator put in the
// interleaved operand window, interleaved or standard memory stays in that
// region (the GEMMs' memory ABI); operands sharing a pointer share a buffer
// of their largest footprint. Every buffer gets bytes: the table as
// generated, moderate f16 halves with specials for float kernels, random
// bytes otherwise.
std::optional<std::pair<Registers, std::vector<Buffer>>> place(const KernelSpec& spec,
                                                               const CallCase& c,
                                                               std::mt19937& rng) {
  Arena standard{0x60000, target::kInterleavedRegion.begin};
  Arena window{target::kInterleavedOperandWindow.begin, target::kInterleavedOperandWindow.end};
  Arena interleaved{target::kInterleavedOperandWindow.end, target::kSramEnd};
  Registers registers = c.registers;
  std::map<std::uint32_t, std::pair<std::uint32_t, std::vector<unsigned>>>
      regions;  // pointer → size, regs
  for (const OperandSpec& operand : spec.operands) {
    auto& region = regions[c.registers[operand.reg]];
    region.first =
        std::max(region.first, static_cast<std::uint32_t>(operand.footprint(c.registers)));
    region.second.push_back(operand.reg);
  }
  std::vector<Buffer> buffers;
  for (const auto& [pointer, region] : regions) {
    std::optional<std::uint32_t> at;
    if (target::kInterleavedOperandWindow.contains(pointer))
      at = window.take(region.first);
    else if (target::kInterleavedRegion.contains(pointer))
      at = interleaved.take(region.first);
    else
      at = standard.take(region.first);
    if (!at) return std::nullopt;
    for (const unsigned reg : region.second) registers[reg] = *at;
    std::vector<std::uint8_t> bytes(region.first);
    const bool table = !c.table.empty() && std::find(region.second.begin(), region.second.end(),
                                                     kTableRegister) != region.second.end();
    if (table) {
      std::copy_n(c.table.begin(), std::min(c.table.size(), bytes.size()), bytes.begin());
    } else {
      static constexpr std::uint16_t kSpecials[] = {0x0000, 0x8000, 0x0001, 0x83FF, 0x7BFF,
                                                    0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0xFE01};
      for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>(rng());
      for (std::size_t i = 0; i + 1 < bytes.size(); i += 2) {
        auto h = static_cast<std::uint16_t>((rng() & 1) << 15 | (10 + rng() % 11) << 10 |
                                            (rng() & 0x3FF));
        if (rng() % 8 == 0) h = kSpecials[rng() % std::size(kSpecials)];
        std::memcpy(&bytes[i], &h, 2);
      }
    }
    buffers.push_back(
        Buffer{fmt::format("$m{}", region.second.front()), *at, region.first, std::move(bytes)});
  }
  return std::pair{registers, buffers};
}

TEST(DeviceKernels, RandomValidCallsOfEveryExactKernel) {
  const std::vector<rc::Gen<CallCase>> families = {
      rc::gen::exec([] { return any_case(); }),
      rc::gen::exec([] { return pointwise_case(); }),
      rc::gen::exec([] { return layout_case(); }),
      rc::gen::exec([] { return f143_case(); }),
      rc::gen::exec([] { return layer_norm_case(); }),
      rc::gen::exec([] { return row_normalisation_case(); }),
      rc::gen::exec([] { return integer_and_helper_case(); })};
  const KernelRegistry& registry = KernelRegistry::standard();
  std::map<std::string_view, unsigned> done;
  std::mt19937 rng(2026);
  for (unsigned draw = 0; draw < 40'000; ++draw) {
    const CallCase c = families[draw % families.size()](rc::Random(draw + 1)).value();
    const KernelSpec* spec = registry.find(c.kernel);
    ASSERT_NE(spec, nullptr) << c.kernel;
    if (kApproximate.contains(spec->name) || done[spec->name] >= kPerKernel) continue;
    std::uint64_t total = 0;
    for (const OperandSpec& operand : spec->operands) total += operand.footprint(c.registers);
    if (total > kMaxCallBytes) continue;
    auto placed = place(*spec, c, rng);
    if (!placed || spec->precondition(placed->first)) continue;
    SCOPED_TRACE(fmt::format("draw {}", draw));
    expect_device_matches_model(spec->name, placed->first, placed->second);
    if (::testing::Test::HasFailure()) return;  // one failing call is enough to read
    ++done[spec->name];
  }
  // Every exact kernel the generators know was called.
  for (const KernelSpec& spec : registry.all()) {
    if (kApproximate.contains(spec.name)) continue;
    EXPECT_GE(done[spec.name], 1u) << spec.name << " was never drawn";
  }
}

}  // namespace
}  // namespace tessera::kernels::testing
