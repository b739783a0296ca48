// The runtime helpers emitted code calls: worker barrier, cycle sample, word
// copy and word fill. Each is a real model over checked memory spans, with
// its footprints and cost; zero-length copies and fills are no-ops and touch
// nothing (the prior art's do-while loops ran ~2^32 times on zero,
// review-findings.md #3).
#include <algorithm>
#include <cstring>

#include "kernels/costs.hpp"
#include "kernels/operand_checks.hpp"
#include "kernels/registry.hpp"

namespace tessera::kernels {
namespace {

constexpr unsigned kDestination = kOutputRegister;  // $m2
constexpr unsigned kSource = 3;                     // $m3
constexpr unsigned kCount = 4;                      // $m4

Violation word_aligned(const Registers& r, std::initializer_list<unsigned> regs) {
  return misaligned(r, regs, 4);
}

std::uint64_t count_bytes(const Registers& r) { return std::uint64_t{r[kCount]} * 4; }

KernelSpec worker_barrier() {
  return KernelSpec{std::string(kWorkerBarrier),
                    KernelKind::kRuntimeHelper,
                    {},
                    [](const Registers&) { return std::optional<std::string>(); },
                    [](KernelCall& call) { call.cycles = kWorkerBarrierCycles; }};
}

// Worker 0 stores the tile's cycle counter ($COUNT_L, low 32 bits) inside a
// runall/sync handoff: the sample is the counter at its first issue after the
// runall, and the supervisor goes on after the whole handoff (costs.hpp).
KernelSpec sample_cycles() {
  return KernelSpec{
      std::string(kSampleCycles),
      KernelKind::kRuntimeHelper,
      {OperandSpec{kDestination, Access::kWrite, "sample", [](const Registers&) { return 4u; }}},
      [](const Registers& r) { return word_aligned(r, {kDestination}); },
      [](KernelCall& call) {
        const std::uint64_t at = call.start_cycle + kCycleSampleReadCycles;
        call.memory.write<std::uint32_t>(kDestination, call.reg(kDestination), 1)[0] =
            static_cast<std::uint32_t>(at);
        call.cycles = kWorkerBarrierCycles;
      }};
}

// Six workers copy balanced contiguous shares at once, so a copy whose
// source and destination overlap has no single result on the device (a
// sequential model would smear the source forwards): they are the same words
// or disjoint.
KernelSpec copy_words() {
  return KernelSpec{
      std::string(kCopyWords),
      KernelKind::kRuntimeHelper,
      {OperandSpec{kDestination, Access::kWrite, "destination", count_bytes},
       OperandSpec{kSource, Access::kRead, "source", count_bytes}},
      [](const Registers& r) -> Violation {
        const OperandExtent destination{kDestination, "destination", count_bytes(r)};
        const OperandExtent source{kSource, "source", count_bytes(r)};
        if (auto v = word_aligned(r, {kDestination, kSource})) return v;
        // One by one rather than a loop over {destination, source}: the
        // helper behind every local copy, and copying the extents into a
        // list costs more than the checks.
        if (auto v = beyond_address_space(r, destination)) return v;
        if (auto v = beyond_address_space(r, source)) return v;
        return overlaps_unless_aliased(r, destination, source);
      },
      [](KernelCall& call) {
        const std::uint32_t words = call.reg(kCount);
        if (words != 0) {
          const auto source = call.memory.read<std::uint32_t>(kSource, call.reg(kSource), words);
          const auto destination =
              call.memory.write<std::uint32_t>(kDestination, call.reg(kDestination), words);
          // memmove: an exactly aliased copy is a copy onto itself.
          std::memmove(destination.data(), source.data(), destination.size_bytes());
        }
        call.cycles =
            words == 0 ? kKernelLaunchCycles : local_copy_cycles(std::uint64_t{words} * 4);
      }};
}

KernelSpec fill_words() {
  return KernelSpec{std::string(kFillWords),
                    KernelKind::kRuntimeHelper,
                    {OperandSpec{kDestination, Access::kWrite, "destination", count_bytes}},
                    [](const Registers& r) -> Violation {
                      if (auto v = word_aligned(r, {kDestination})) return v;
                      return beyond_address_space(r, {kDestination, "destination", count_bytes(r)});
                    },
                    [](KernelCall& call) {
                      const std::uint32_t words = call.reg(kCount);
                      if (words != 0) {
                        const auto destination = call.memory.write<std::uint32_t>(
                            kDestination, call.reg(kDestination), words);
                        std::fill(destination.begin(), destination.end(), call.reg(kSource));
                      }
                      call.cycles = words == 0 ? kKernelLaunchCycles
                                               : local_copy_cycles(std::uint64_t{words} * 4);
                    }};
}

}  // namespace

void add_runtime_helpers(KernelRegistry& registry) {
  registry.add(worker_barrier());
  registry.add(sample_cycles());
  registry.add(copy_words());
  registry.add(fill_words());
}

}  // namespace tessera::kernels
