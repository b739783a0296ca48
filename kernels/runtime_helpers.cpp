// The runtime helpers emitted code calls: worker barrier, cycle sample,
// profile sample, word copy and word fill. Each is a real model over checked memory spans, with
// its footprints and cost; zero-length copies and fills are no-ops and touch
// nothing (the prior art's do-while loops ran ~2^32 times on zero,
// review-findings.md #3).
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

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

// The profile sample buffer (registry.hpp): its header, then `capacity`
// records.
constexpr unsigned kSampleBuffer = kOutputRegister;  // $m2
constexpr unsigned kSampleSite = 3;                  // $m3
constexpr unsigned kSampleCapacity = 4;              // $m4, in records
constexpr unsigned kSampleSource = 5;                // $m5: kSampleTheCounter or kSampleTheRegister
constexpr unsigned kSampleValue = 6;                 // $m6
constexpr std::uint64_t kSampleHeaderBytes = 4 * kProfileSampleHeaderWords;
constexpr std::uint64_t kSampleRecordBytes = 4 * kProfileSampleRecordWords;

std::uint64_t sample_buffer_bytes(const Registers& r) {
  return kSampleHeaderBytes + kSampleRecordBytes * r[kSampleCapacity];
}

// Worker 0 reads $COUNT_L at its first issue in the handoff (as for the
// cycle sample) and appends (site, value) at the buffer's count, or, when
// the buffer is full, counts a dropped record (saturating, so a count never
// wraps back to a small number). The buffer is the call's whole footprint,
// but a call touches only the header and one record: a sparse span with
// exactly those bytes noted, so the never-written check sees the header read.
KernelSpec profile_sample() {
  return KernelSpec{
      std::string(kProfileSample),
      KernelKind::kRuntimeHelper,
      {OperandSpec{kSampleBuffer, Access::kReadWrite, "sample buffer", sample_buffer_bytes}},
      [](const Registers& r) -> Violation {
        if (auto v = word_aligned(r, {kSampleBuffer})) return v;
        if (r[kSampleSource] != kSampleTheCounter && r[kSampleSource] != kSampleTheRegister) {
          return fmt::format("$m5 = {}: the value's source is {} (the cycle counter) or {} ($m6)",
                             r[kSampleSource], kSampleTheCounter, kSampleTheRegister);
        }
        return beyond_address_space(r, {kSampleBuffer, "sample buffer", sample_buffer_bytes(r)});
      },
      [](KernelCall& call) {
        const std::uint64_t at = call.start_cycle + kCycleSampleReadCycles;
        const std::uint32_t value = call.reg(kSampleSource) == kSampleTheRegister
                                        ? call.reg(kSampleValue)
                                        : static_cast<std::uint32_t>(at);
        const std::uint64_t base = call.reg(kSampleBuffer);
        const std::uint32_t capacity = call.reg(kSampleCapacity);
        const auto buffer = call.memory.read_write<std::uint32_t>(
            kSampleBuffer, base, sample_buffer_bytes(call.registers) / 4, SpanUse::kSparse);
        call.memory.note_read(kSampleBuffer, base, 4);
        const std::uint32_t count = buffer.at(0);
        if (count < capacity) {
          const std::size_t record =
              kProfileSampleHeaderWords + std::size_t{kProfileSampleRecordWords} * count;
          buffer.at(record) = call.reg(kSampleSite);
          buffer.at(record + 1) = value;
          buffer.at(0) = count + 1;
          call.memory.note_written(kSampleBuffer,
                                   base + kSampleHeaderBytes + kSampleRecordBytes * count,
                                   kSampleRecordBytes);
          call.memory.note_written(kSampleBuffer, base, 4);
        } else {
          call.memory.note_read(kSampleBuffer, base + 4, 4);
          if (buffer.at(1) != 0xFFFFFFFFu) {
            buffer.at(1) += 1;
            call.memory.note_written(kSampleBuffer, base + 4, 4);
          }
        }
        call.cycles = kProfileSampleCycles;
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
  registry.add(profile_sample());
  registry.add(copy_words());
  registry.add(fill_words());
}

}  // namespace tessera::kernels
