// The device kernel sources' portable part (kernels/device/) against the
// host models: the same call — registers, buffers at the same addresses,
// the same bytes — through the registry's model in a simulated tile and
// through the source's portable entry; every operand byte must agree (bit
// for bit where the model defines the result), and the source must write
// nothing outside its operands. Shapes: zero work with wild pointers, one
// element, the worker-partition edges (5, 6, 7, 13 — some workers empty, one
// with an extra element), odd f16/b8 tails, and the largest that fits a
// tile's SRAM beside its operands.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <set>
#include <string>

#include "kernels/costs.hpp"
#include "kernels/half.hpp"
#include "kernels/layer_norm.hpp"
#include "kernels/device/device_kernels.hpp"
#include "kernels/registry.hpp"
#include "target/memory_map.hpp"
#include "tests/kernels/device_harness.hpp"

namespace tessera::kernels::testing {
namespace {

// Element counts: zero work, one, the worker-partition edges, odd tails, and
// a large one.
constexpr std::uint32_t kCounts[] = {0, 1, 2, 5, 6, 7, 13, 61, 1001, 4099};

std::vector<std::uint8_t> values(Patterns& p, unsigned bytes, std::size_t n) {
  if (bytes == 4) return p.f32s(n);
  if (bytes == 2) return p.f16s(n);
  return p.bytes(n);
}

// ---- The framework itself.

TEST(DeviceKernels, EverySourceIsARegistryKernel) {
  std::set<std::string_view> seen;
  for (const auto& kernel : device::device_kernels()) {
    EXPECT_NE(KernelRegistry::standard().find(kernel.symbol), nullptr)
        << kernel.symbol << " has a device source but no registry entry";
    EXPECT_TRUE(seen.insert(kernel.symbol).second) << kernel.symbol << " listed twice";
  }
}

// The registry kernels with no device source yet, exactly: a new source or a
// new registry entry updates this list and kernels/README.md's.
TEST(DeviceKernels, RegistryKernelsWithoutSourceAreTheListedOnes) {
  std::vector<std::string> missing;
  for (const KernelSpec& spec : KernelRegistry::standard().all()) {
    if (device::find_device_kernel(spec.name) == nullptr) missing.push_back(spec.name);
  }
  const std::set<std::string> expected = {
#include "tests/kernels/device_kernels_missing.inc"
  };
  for (const std::string& name : missing) {
    EXPECT_TRUE(expected.contains(name)) << name << " has no device source and is not listed";
  }
  for (const std::string& name : expected) {
    EXPECT_TRUE(std::find(missing.begin(), missing.end(), name) != missing.end())
        << name << " is listed as missing but has a device source (or left the registry)";
  }
}

TEST(DeviceKernels, ImageRefusesAccessOutsideItAndPastAnArray) {
  std::vector<std::uint8_t> bytes(64);
  device::TileMemory memory(0x60000, bytes.data(), bytes.size());
  EXPECT_NO_THROW(memory.array<std::uint32_t>(0x60000, 16));
  EXPECT_THROW(memory.array<std::uint32_t>(0x60000, 17), device::DeviceFault);
  EXPECT_THROW(memory.array<std::uint32_t>(0x5FFFC, 1), device::DeviceFault);
  EXPECT_THROW(memory.array<std::uint32_t>(0x60002, 1), device::DeviceFault);
  EXPECT_NO_THROW(memory.array<std::uint32_t>(0xFFFFFFF0u, 0));  // zero work: any pointer
  const auto words = memory.array<std::uint32_t>(0x60000, 4);
  EXPECT_THROW(words[4], device::DeviceFault);
  EXPECT_THROW(words.sub(2, 3), device::DeviceFault);
}

TEST(DeviceKernels, BalancedShareCoversEveryItemOnce) {
  for (std::uint32_t n : {0u, 1u, 5u, 6u, 7u, 13u, 4099u}) {
    std::uint32_t next = 0;
    for (unsigned w = 0; w < device::kWorkers; ++w) {
      const device::Share share = device::balanced_share(n, w);
      EXPECT_EQ(share.first, next) << n << " items, worker " << w;
      EXPECT_EQ(share.count, n / 6 + (w < n % 6 ? 1u : 0u));
      next += share.count;
    }
    EXPECT_EQ(next, n);
  }
}

TEST(DeviceKernels, WordShareCoversEveryElementOnceInWholeWords) {
  for (std::uint32_t per_word : {2u, 4u}) {
    for (std::uint32_t n : {0u, 1u, 2u, 3u, 5u, 11u, 12u, 13u, 4099u}) {
      std::uint32_t next = 0;
      for (unsigned w = 0; w < device::kWorkers; ++w) {
        const device::Share share = device::word_share(n, per_word, w);
        EXPECT_EQ(share.first, std::min(next, n)) << n << " elements, worker " << w;
        if (share.count != 0) {
          EXPECT_EQ(share.first % per_word, 0u);
        }
        next = share.first + share.count;
      }
      EXPECT_EQ(next, n);
    }
  }
}

// The harness must catch a source that disagrees: the f16 add's entry run on
// an f32 add's call reads the wrong element size, and the comparison fails.
TEST(DeviceKernels, HarnessCatchesADisagreeingSource) {
  Patterns p(7);
  KernelCase c{kAddF32,
               {input(2, "sum", 4, p.f32s(13)), input(3, "left", 4, p.f32s(13)),
                input(4, "right", 4, p.f32s(13))},
               {{5, 13}}};
  const DeviceResult right = run_device(c);
  c.kernel = kAddF16;
  const DeviceResult wrong = run_device(c);
  EXPECT_EQ(right.fault, "");
  EXPECT_EQ(wrong.fault, "");
  EXPECT_NE(right.operands.at(2), wrong.operands.at(2));
  EXPECT_TRUE(wrong.stray_writes.empty());  // wrong, but inside its operand
}

// ---- Runtime helpers.

TEST(DeviceKernels, WorkerBarrierTouchesNothing) {
  expect_device_matches_model(KernelCase{kWorkerBarrier, {}, {}});
}

TEST(DeviceKernels, SampleCyclesStoresTheCounterInOneWord) {
  Patterns p(1);
  const KernelCase c{kSampleCycles, {input(2, "sample", 4, p.bytes(4))}, {}};
  const DeviceResult device = run_device(c, 0x12345678u);
  EXPECT_EQ(device.fault, "");
  EXPECT_TRUE(device.stray_writes.empty());
  EXPECT_EQ(from_bytes(device.operands.at(2), 4), std::vector<std::uint32_t>{0x12345678u});
  // The model's value is the simulator's counter; only the store's place and
  // width are comparable.
  const CaseResult model = run_case(c);
  EXPECT_TRUE(model.halted) << model.fault;
}

// A sample buffer: `count` records written, `dropped` dropped, `capacity`
// record slots of pattern bytes.
std::vector<std::uint8_t> sample_buffer(Patterns& p, std::uint32_t capacity, std::uint32_t count,
                                        std::uint32_t dropped) {
  std::vector<std::uint8_t> bytes = to_bytes({count, dropped}, 4);
  const auto records = p.bytes(8 * std::size_t{capacity});
  bytes.insert(bytes.end(), records.begin(), records.end());
  return bytes;
}

KernelCase profile_sample_case(std::vector<std::uint8_t> buffer, std::uint32_t capacity,
                               std::uint32_t source, std::uint32_t value) {
  return KernelCase{kProfileSample,
                    {input(2, "sample buffer", 4, std::move(buffer))},
                    {{3, 0xA0000017u}, {4, capacity}, {5, source}, {6, value}}};
}

// With the value from $m6 the two agree bit for bit on the whole buffer:
// the append at the count, the last slot, a full buffer counting a drop, a
// saturated drop count, a capacity of 0 (a header only) and a corrupt count
// past the capacity (treated as full, nothing written past it).
TEST(DeviceKernels, ProfileSampleAppendsOrCountsADrop) {
  Patterns p(11);
  struct Case {
    std::uint32_t capacity, count, dropped;
  };
  for (const Case c : {Case{3, 0, 0}, Case{3, 1, 0}, Case{3, 2, 5}, Case{3, 3, 0}, Case{3, 3, 7},
                       Case{3, 3, 0xFFFFFFFFu}, Case{0, 0, 0}, Case{2, 0xFFFFFFF0u, 1}}) {
    SCOPED_TRACE(fmt::format("capacity {}, count {}, dropped {}", c.capacity, c.count, c.dropped));
    const KernelCase call = profile_sample_case(sample_buffer(p, c.capacity, c.count, c.dropped),
                                                c.capacity, kSampleTheRegister, 0x12345678u);
    expect_device_matches_model(call);
    // What the record says, against the layout spelled out here.
    const auto words = from_bytes(run_case(call).operands.at(2), 4);
    if (c.count < c.capacity) {
      EXPECT_EQ(words[0], c.count + 1);
      EXPECT_EQ(words[1], c.dropped);
      EXPECT_EQ(words[2 + 2 * c.count], 0xA0000017u);
      EXPECT_EQ(words[3 + 2 * c.count], 0x12345678u);
    } else {
      EXPECT_EQ(words[0], c.count);
      EXPECT_EQ(words[1], c.dropped == 0xFFFFFFFFu ? c.dropped : c.dropped + 1);
    }
  }
}

// With the counter: the model records the simulated cycle at worker 0's read
// — the call's issue, kCycleSampleReadCycles later — and charges the
// helper's cost; the source given that counter writes the same bytes.
TEST(DeviceKernels, ProfileSampleRecordsTheCounterAtWorkerZerosRead) {
  Patterns p(12);
  const KernelCase call =
      profile_sample_case(sample_buffer(p, 4, 2, 0), 4, kSampleTheCounter, 0xDEADBEEFu);
  KernelRun model(call.kernel, call.registers(), call.buffers());
  ASSERT_TRUE(model.halted()) << model.fault_text();
  // Every supervisor instruction before the kernel starts (the register
  // loads, the call) takes 6 cycles from cycle 0.
  const std::uint64_t call_issued = 6 * ((model.call_pc() - target::kLoadBase) / 4 + 1);
  const auto expected = static_cast<std::uint32_t>(call_issued + kCycleSampleReadCycles);
  const auto bytes = model.read(call.address(2), call.operands[0].size());
  const auto words = from_bytes(bytes, 4);
  EXPECT_EQ(words[0], 3u);
  EXPECT_EQ(words[6], 0xA0000017u);
  EXPECT_EQ(words[7], expected);
  EXPECT_EQ(model.total_cycles() - model.supervisor_cycles(), kProfileSampleCycles);
  const DeviceResult device = run_device(call, expected);
  EXPECT_EQ(device.fault, "");
  EXPECT_TRUE(device.stray_writes.empty());
  EXPECT_EQ(device.operands.at(2), bytes);
}

TEST(DeviceKernels, ProfileSampleRefusesAnUnknownSourceAndAMisalignedBuffer) {
  Registers r{};
  r[2] = kBufferBase;
  r[4] = 4;
  r[5] = 2;
  expect_precondition_failure(kProfileSample, r,
                              "the value's source is 0 (the cycle counter) or 1");
  r[5] = 0;
  r[2] = kBufferBase + 2;
  expect_precondition_failure(kProfileSample, r, "is not word-aligned");
}

TEST(DeviceKernels, CopyWords) {
  Patterns p(2);
  for (std::uint32_t words : kCounts) {
    expect_device_matches_model(KernelCase{
        kCopyWords,
        {input(2, "destination", 4, p.bytes(4 * words)), input(3, "source", 4, p.bytes(4 * words))},
        {{4, words}}});
  }
  // Source and destination the same words.
  expect_device_matches_model(
      KernelCase{kCopyWords,
                 {input(3, "source", 4, p.bytes(4 * 13)), alias(2, "destination", 4, 3)},
                 {{4, 13}}});
  // The largest copy beside its source in the buffers' 0x60000…0xE8000.
  expect_device_matches_model(KernelCase{
      kCopyWords,
      {input(2, "destination", 4, p.bytes(4 * 65536)), input(3, "source", 4, p.bytes(4 * 65536))},
      {{4, 65536}}});
}

TEST(DeviceKernels, FillWords) {
  Patterns p(3);
  for (std::uint32_t words : kCounts) {
    expect_device_matches_model(KernelCase{kFillWords,
                                           {input(2, "destination", 4, p.bytes(4 * words))},
                                           {{3, 0xDEADBEEFu}, {4, words}}});
  }
}

TEST(DeviceKernels, ZeroWorkTouchesNothingWhateverThePointers) {
  // Wild pointers, zero counts: no operand is placed, so any access faults.
  for (std::string_view kernel : {kCopyWords, kFillWords, kAddU32, kAddF32, kAddF16}) {
    // $m4 is the helpers' count and the adds' right pointer; $m5 the adds' count.
    KernelCase c{kernel, {}, {{2, 0xFFFFFF00u}, {3, 0x10u}, {4, 0}, {5, 0}}};
    const DeviceResult device = run_device(c);
    EXPECT_EQ(device.fault, "") << kernel;
    EXPECT_TRUE(device.stray_writes.empty()) << kernel;
  }
}

// ---- Element-wise.

void binary_cases(std::string_view kernel, unsigned s, std::uint32_t seed) {
  Patterns p(seed);
  for (std::uint32_t n : kCounts) {
    SCOPED_TRACE(fmt::format("{} elements", n));
    expect_device_matches_model(
        KernelCase{kernel,
                   {input(2, "out", s, values(p, s, n)), input(3, "left", s, values(p, s, n)),
                    input(4, "right", s, values(p, s, n))},
                   {{5, n}}});
  }
  // In place, either side.
  for (unsigned of : {3u, 4u}) {
    KernelCase c{kernel,
                 {input(3, "left", s, values(p, s, 61)), input(4, "right", s, values(p, s, 61)),
                  alias(2, "out", s, of)},
                 {{5, 61}}};
    expect_device_matches_model(c);
  }
  // The largest that fits beside its two inputs.
  const std::uint32_t largest = 0x80000 / (3 * s) / 64 * 64;
  expect_device_matches_model(KernelCase{
      kernel,
      {input(2, "out", s, values(p, s, largest)), input(3, "left", s, values(p, s, largest)),
       input(4, "right", s, values(p, s, largest))},
      {{5, largest}}});
}

TEST(DeviceKernels, AddU32) { binary_cases(kAddU32, 4, 10); }
TEST(DeviceKernels, AddF32) { binary_cases(kAddF32, 4, 11); }
TEST(DeviceKernels, AddF16) { binary_cases(kAddF16, 2, 12); }
TEST(DeviceKernels, MulF32) { binary_cases("tessera_mul_f32", 4, 13); }
TEST(DeviceKernels, MulF16) { binary_cases("tessera_mul_f16", 2, 14); }

// Every f16 against every f16 special and random partners: the f16 add and
// product on all 65536 left operands.
TEST(DeviceKernels, F16AddAndMulOnEveryLeftOperand) {
  Patterns p(15);
  std::vector<std::uint16_t> left(65536);
  std::iota(left.begin(), left.end(), std::uint16_t{0});
  for (std::string_view kernel : {kAddF16, std::string_view("tessera_mul_f16")}) {
    expect_device_matches_model(
        KernelCase{kernel,
                   {input(2, "out", 2, p.f16s(65536)), input(3, "left", 2, bytes_of(left)),
                    input(4, "right", 2, p.f16s(65536))},
                   {{5, 65536}}});
  }
}

TEST(DeviceKernels, AddRowBroadcast) {
  Patterns p(16);
  for (auto [kernel, s] :
       {std::pair{kAddRowBroadcastF32, 4u}, std::pair{kAddRowBroadcastF16, 2u}}) {
    for (std::uint32_t rows : {0u, 1u, 5u, 6u, 7u, 13u}) {
      for (std::uint32_t cols : {1u, 3u, 16u, 77u}) {
        SCOPED_TRACE(fmt::format("{} rows × {} cols", rows, cols));
        expect_device_matches_model(KernelCase{kernel,
                                               {input(2, "sum", s, values(p, s, rows * cols)),
                                                input(3, "matrix", s, values(p, s, rows * cols)),
                                                input(4, "row", s, values(p, s, cols))},
                                               {{5, rows}, {6, cols}}});
      }
    }
    // In place, and rows with zero columns (rows may be huge then).
    expect_device_matches_model(
        KernelCase{kernel,
                   {input(3, "matrix", s, values(p, s, 7 * 9)), input(4, "row", s, values(p, s, 9)),
                    alias(2, "sum", s, 3)},
                   {{5, 7}, {6, 9}}});
    expect_device_matches_model(KernelCase{
        kernel, {}, {{2, 0x70000}, {3, 0x71000}, {4, 0x72000}, {5, 0xFFFFFFFFu}, {6, 0}}});
  }
}

// ---- Conversions.

TEST(DeviceKernels, ConvertF32ToF16) {
  Patterns p(20);
  for (std::uint32_t n : kCounts) {
    expect_device_matches_model(
        KernelCase{"tessera_convert_f32_to_f16",
                   {input(2, "converted", 2, p.f16s(n)), input(3, "source", 4, p.f32s(n))},
                   {{4, n}}});
  }
  // Every rounding case: each f16 value's neighbourhood in f32 — the value,
  // the midpoints to its neighbours and one f32 ulp either side of them —
  // for every finite f16 magnitude, both signs.
  std::vector<std::uint32_t> probes;
  for (std::uint32_t h = 0; h < 0x7C00; ++h) {
    // f16 h and h+1 as f32 bits, through exact integer scaling.
    auto f32_of = [](std::uint32_t bits) {
      const std::uint32_t e = bits >> 10, m = bits & 0x3FF;
      const float v =
          e == 0 ? static_cast<float>(m) * 0x1p-24f
                 : static_cast<float>(m | 0x400) * std::ldexp(1.0f, static_cast<int>(e) - 25);
      std::uint32_t out;
      std::memcpy(&out, &v, 4);
      return out;
    };
    const std::uint32_t lo = f32_of(h);
    const std::uint32_t hi = h + 1 < 0x7C00 ? f32_of(h + 1) : 0x47800000u;  // 65536 past 65504
    const std::uint32_t mid = lo + (hi - lo) / 2;  // same binade or the next's first: the midpoint
    for (std::uint32_t v : {lo, mid - 1, mid, mid + 1}) {
      probes.push_back(v);
      probes.push_back(v | 0x80000000u);
    }
  }
  for (std::size_t first = 0; first < probes.size(); first += 32768) {
    const std::vector<std::uint32_t> chunk(
        probes.begin() + static_cast<std::ptrdiff_t>(first),
        probes.begin() + static_cast<std::ptrdiff_t>(std::min(probes.size(), first + 32768)));
    expect_device_matches_model(KernelCase{
        "tessera_convert_f32_to_f16",
        {input(2, "converted", 2, p.f16s(chunk.size())), input(3, "source", 4, bytes_of(chunk))},
        {{4, static_cast<std::uint32_t>(chunk.size())}}});
  }
}

TEST(DeviceKernels, ConvertF16ToF32OnEveryF16) {
  Patterns p(21);
  std::vector<std::uint16_t> every(65536);
  std::iota(every.begin(), every.end(), std::uint16_t{0});
  expect_device_matches_model(
      KernelCase{"tessera_convert_f16_to_f32",
                 {input(2, "converted", 4, p.f32s(65536)), input(3, "source", 2, bytes_of(every))},
                 {{4, 65536}}});
  for (std::uint32_t n : kCounts) {
    expect_device_matches_model(
        KernelCase{"tessera_convert_f16_to_f32",
                   {input(2, "converted", 4, p.f32s(n)), input(3, "source", 2, p.f16s(n))},
                   {{4, n}}});
  }
}

// ---- Reductions.

TEST(DeviceKernels, Sum) {
  Patterns p(30);
  for (auto [kernel, s] : {std::pair{kSumF32, 4u}, std::pair{kSumF16, 2u}}) {
    for (std::uint32_t n : {0u, 1u, 5u, 7u, 13u, 33u, 1001u}) {
      for (std::uint32_t k : {1u, 2u, 5u}) {
        SCOPED_TRACE(fmt::format("{}: {} elements, {} partials", kernel, n, k));
        const std::uint32_t stride = (n * s + 3) / 4 * 4 + 8;  // a gap between partials
        expect_device_matches_model(KernelCase{
            kernel,
            {input(2, "sum", s, values(p, s, n)),
             input(3, "partials", s, p.bytes(k == 0 || n == 0 ? 0 : (k - 1) * stride + n * s))},
            {{4, n}, {5, k}, {6, stride}}});
      }
    }
    // Finite partials (the random bits are mostly huge or NaN in f16 sums):
    // rounding at the end, −0 sums, in place over partial 0.
    const std::uint32_t n = 61, k = 4, stride = (n * s + 3) / 4 * 4;
    std::vector<std::uint8_t> partials;
    for (std::uint32_t i = 0; i < ((k - 1) * stride + n * s) / s; ++i) {
      std::uint32_t v = s == 4 ? p.f32_finite(1000.0f) : p.f16_finite(1000.0f);
      if (i % 17 == 0) v = s == 4 ? 0x80000000u : 0x8000u;
      partials.insert(partials.end(), reinterpret_cast<std::uint8_t*>(&v),
                      reinterpret_cast<std::uint8_t*>(&v) + s);
    }
    expect_device_matches_model(
        KernelCase{kernel,
                   {input(3, "partials", s, partials), alias(2, "sum", s, 3)},
                   {{4, n}, {5, k}, {6, stride}}});
  }
}

// ---- Element moves.

TEST(DeviceKernels, MoveElements) {
  Patterns p(40);
  for (auto [kernel, s] : {std::pair{kMoveElementsB32, 4u}, std::pair{kMoveElementsB16, 2u},
                           std::pair{kMoveElementsB8, 1u}}) {
    for (std::uint32_t n : {0u, 1u, 5u, 6u, 7u, 13u, 1001u}) {
      // A partial scatter: n distinct destinations of 2n + 3, any sources of n + 5.
      const std::uint32_t out_elements = 2 * n + 3, in_elements = n + 5;
      std::vector<std::uint32_t> destinations(out_elements);
      std::iota(destinations.begin(), destinations.end(), 0u);
      for (std::uint32_t i = out_elements; i > 1; --i)
        std::swap(destinations[i - 1], destinations[p.below(i)]);
      std::vector<std::uint32_t> table;
      for (std::uint32_t i = 0; i < n; ++i) {
        table.push_back(destinations[i]);
        table.push_back(p.below(in_elements));
      }
      if (n > 0) {  // the last elements of both regions
        table[0] = out_elements - 1;
        table[1] = in_elements - 1;
        for (std::uint32_t i = 1; i < n; ++i) {
          if (table[2 * i] == out_elements - 1) table[2 * i] = destinations[n];
        }
      }
      SCOPED_TRACE(fmt::format("{}: {} pairs", kernel, n));
      expect_device_matches_model(
          KernelCase{kernel,
                     {input(2, "destination", s, p.bytes((out_elements * s + 3) / 4 * 4)),
                      input(3, "source", s, p.bytes((in_elements * s + 3) / 4 * 4)),
                      input(4, "table", 4, bytes_of(table))},
                     {{5, n}, {6, out_elements}, {7, in_elements}}});
    }
  }
}

// An index past its region faults on both sides.
TEST(DeviceKernels, MoveIndexPastTheRegionFaultsLikeTheModel) {
  Patterns p(41);
  const std::vector<std::uint32_t> table = {0, 1, 8, 0};  // destination 8 of 8
  const KernelCase c{kMoveElementsB32,
                     {input(2, "destination", 4, p.bytes(32)), input(3, "source", 4, p.bytes(8)),
                      input(4, "table", 4, bytes_of(table))},
                     {{5, 2}, {6, 8}, {7, 2}}};
  EXPECT_FALSE(run_case(c).halted);
  EXPECT_NE(run_device(c).fault, "");
}

// ---- F143.

// Every f16 input at every scale the 6-bit field holds.
TEST(DeviceKernels, QuantizeF16ToF143EveryInputEveryScale) {
  Patterns p(50);
  std::vector<std::uint16_t> every(65536);
  std::iota(every.begin(), every.end(), std::uint16_t{0});
  for (int scale = -32; scale <= 31; ++scale) {
    SCOPED_TRACE(fmt::format("scale {}", scale));
    expect_device_matches_model(
        KernelCase{"tessera_quantize_f16_to_f143",
                   {input(2, "codes", 1, p.bytes(65536)), input(3, "source", 2, bytes_of(every))},
                   {{4, 65536}, {5, static_cast<std::uint32_t>(scale)}}});
  }
  for (std::uint32_t n : {0u, 4u, 8u, 20u, 24u, 28u, 52u}) {
    expect_device_matches_model(
        KernelCase{"tessera_quantize_f16_to_f143",
                   {input(2, "codes", 1, p.bytes(n)), input(3, "source", 2, p.f16s(n))},
                   {{4, n}, {5, static_cast<std::uint32_t>(-3)}}});
  }
}

// Every code at every scale, sixteen times over: one 64 × 64 scale block.
TEST(DeviceKernels, ExpandF143ToF16EveryCodeEveryScale) {
  Patterns p(51);
  std::vector<std::uint8_t> codes(4096);
  for (std::size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<std::uint8_t>(i * 7);
  for (int scale = -32; scale <= 31; ++scale) {
    SCOPED_TRACE(fmt::format("scale {}", scale));
    expect_device_matches_model(
        KernelCase{"tessera_expand_f143_to_f16",
                   {input(2, "expanded", 2, p.bytes(2 * 4096)), input(3, "codes", 1, codes)},
                   {{4, 4096}, {5, static_cast<std::uint32_t>(scale)}}});
  }
  for (std::uint32_t n : {0u, 4u, 8u, 20u, 24u, 28u}) {
    expect_device_matches_model(
        KernelCase{"tessera_expand_f143_to_f16",
                   {input(2, "expanded", 2, p.bytes(2 * n)), input(3, "codes", 1, p.bytes(n))},
                   {{4, n}, {5, 2}}});
  }
}

TEST(DeviceKernels, QuantizeA16ToA32F143) {
  Patterns p(52);
  for (std::uint32_t rows : {0u, 1u, 5u, 6u, 7u, 13u, 61u}) {
    for (std::uint32_t columns : {0u, 1u, 15u, 16u, 17u, 31u, 32u, 33u, 72u, 100u}) {
      for (int scale : {-5, 0, 4}) {
        SCOPED_TRACE(fmt::format("{} rows × {} columns, scale {}", rows, columns, scale));
        const std::uint32_t w16 = (columns + 15) / 16 * 16, w32 = (columns + 31) / 32 * 32;
        expect_device_matches_model(KernelCase{
            "tessera_quantize_a16_to_a32_f143",
            {input(2, "codes", 1, p.bytes(rows * w32)), input(3, "source", 2, p.f16s(rows * w16))},
            {{4, rows}, {5, columns}, {6, static_cast<std::uint32_t>(scale)}}});
      }
    }
  }
}

// ---- C16 bias add and the AMP row moves.

std::uint32_t panel_width(std::uint32_t columns) { return (columns + 15) / 16 * 16; }

TEST(DeviceKernels, AddBiasC16) {
  Patterns p(70);
  for (auto [kernel, s] : {std::pair{std::string_view("tessera_add_bias_c16_f16"), 2u},
                           std::pair{std::string_view("tessera_add_bias_c16_f32"), 4u}}) {
    for (std::uint32_t rows : {0u, 1u, 5u, 6u, 7u, 13u, 61u}) {
      for (std::uint32_t columns : {1u, 15u, 16u, 17u, 72u, 100u}) {
        const std::uint32_t w = panel_width(columns);
        SCOPED_TRACE(fmt::format("{}: {} rows × {} columns", kernel, rows, columns));
        expect_device_matches_model(
            KernelCase{kernel,
                       {input(2, "sum", s, values(p, s, rows * w)),
                        input(3, "matrix", s, values(p, s, rows * w)),
                        input(4, "bias", s, values(p, s, rows == 0 ? 0 : w))},
                       {{5, rows}, {6, columns}}});
      }
    }
    expect_device_matches_model(
        KernelCase{kernel,
                   {input(3, "matrix", s, values(p, s, 13 * 80)),
                    input(4, "bias", s, values(p, s, 80)), alias(2, "sum", s, 3)},
                   {{5, 13}, {6, 72}}});
  }
}

TEST(DeviceKernels, RelayoutC16ToA16) {
  Patterns p(71);
  for (std::uint32_t rows : {0u, 1u, 5u, 6u, 7u, 13u, 129u}) {
    for (std::uint32_t columns : {0u, 1u, 15u, 16u, 17u, 72u, 100u}) {
      const std::uint32_t bytes = 2 * rows * panel_width(columns);
      expect_device_matches_model(KernelCase{
          "tessera_relayout_c16_to_a16_f16",
          {input(2, "destination", 2, p.bytes(bytes)), input(3, "source", 2, p.bytes(bytes))},
          {{4, rows}, {5, columns}}});
    }
  }
}

TEST(DeviceKernels, Reblock) {
  Patterns p(72);
  struct Shape {
    std::uint32_t source_rows, destination_rows, source_start, destination_start, copy;
  };
  for (std::string_view kernel :
       {"tessera_reblock_a16_to_a16_f16", "tessera_reblock_c16_to_a16_f16"}) {
    for (const Shape& m :
         {Shape{13, 20, 0, 0, 13}, Shape{13, 20, 5, 11, 7}, Shape{12, 12, 0, 0, 12},
          Shape{61, 7, 60, 6, 1}, Shape{13, 20, 3, 4, 0}, Shape{1, 1, 0, 0, 1}}) {
      for (std::uint32_t columns : {0u, 1u, 16u, 17u, 72u}) {
        const std::uint32_t panels = (columns + 15) / 16;
        auto extent = [&](std::uint32_t shard_rows, std::uint32_t start) {
          return m.copy == 0 || panels == 0 ? 0u
                                            : 32 * ((panels - 1) * shard_rows + start + m.copy);
        };
        SCOPED_TRACE(fmt::format("{}: rows {}→{} from {} to {}, {} rows, {} columns", kernel,
                                 m.source_rows, m.destination_rows, m.source_start,
                                 m.destination_start, m.copy, columns));
        expect_device_matches_model(KernelCase{
            kernel,
            {input(2, "destination", 2, p.bytes(extent(m.destination_rows, m.destination_start))),
             input(3, "source", 2, p.bytes(extent(m.source_rows, m.source_start)))},
            {{4, m.source_rows},
             {5, m.destination_rows},
             {6, m.source_start},
             {7, m.destination_start},
             {8, m.copy},
             {9, columns}}});
      }
    }
  }
}

// ---- Row-major ↔ AMP.

TEST(DeviceKernels, RearrangeAndUnpack) {
  Patterns p(73);
  struct Shape {
    std::uint32_t rows, columns, padded_rows, padded_columns, row_block;
  };
  const std::vector<Shape> shapes = {
      {0, 0, 0, 0, 16},     {0, 5, 16, 16, 16},   {1, 1, 16, 16, 16},   {5, 7, 16, 16, 16},
      {13, 33, 16, 48, 16}, {16, 16, 16, 16, 16}, {20, 17, 32, 32, 16}, {61, 72, 64, 80, 32},
      {64, 64, 64, 64, 64}, {3, 0, 16, 16, 16},
      // Attention's key blocks (even columns: the word paths), an odd
      // number of rows among them (block-major pairs a row with padding).
      {45, 72, 48, 80, 48}, {46, 72, 48, 80, 48}, {2, 2, 16, 16, 16}};
  for (std::string_view layout : {"left", "transposed_right", "block_major", "output"}) {
    for (const Shape& s : shapes) {
      const std::uint32_t block = s.padded_rows * s.padded_columns, logical = s.rows * s.columns;
      SCOPED_TRACE(fmt::format("{}: {} × {} in {} × {}, row block {}", layout, s.rows, s.columns,
                               s.padded_rows, s.padded_columns, s.row_block));
      const std::vector<std::pair<unsigned, std::uint32_t>> registers = {
          {4, s.rows}, {5, s.columns}, {6, s.padded_rows}, {7, s.padded_columns}, {8, s.row_block}};
      const std::string rearrange = fmt::format("tessera_rearrange_{}_f16", layout);
      const std::string unpack = fmt::format("tessera_unpack_{}_f16", layout);
      expect_device_matches_model(KernelCase{
          rearrange,
          {input(2, "block", 2, p.bytes(2 * block)), input(3, "matrix", 2, p.f16s(logical))},
          registers});
      expect_device_matches_model(
          KernelCase{unpack,
                     {input(2, "matrix", 2, p.bytes(2 * logical)),
                      input(3, "block", 2, p.f16s(logical == 0 ? 0 : block))},
                     registers});
    }
  }
}

// ---- A16 LayerNorm: the model's operation sequence with IEEE √ and ÷, so
// bit for bit (on silicon rsqrt's accuracy is the open question [INF]).

std::vector<std::uint8_t> a16_values(Patterns& p, std::uint32_t rows, std::uint32_t columns,
                                     float scale, bool specials) {
  const std::uint32_t w = panel_width(columns);
  std::vector<std::uint16_t> x(rows * w);
  for (auto& v : x) v = specials && p.below(40) == 0 ? p.f16() : p.f16_finite(scale);
  return bytes_of(x);
}

TEST(DeviceKernels, LayerNormF16) {
  Patterns p(80);
  for (std::uint32_t rows : {0u, 1u, 5u, 6u, 7u, 13u, 61u}) {
    for (std::uint32_t columns : {1u, 3u, 16u, 17u, 72u, 100u}) {
      for (bool specials : {false, true}) {
        SCOPED_TRACE(
            fmt::format("{} rows × {} columns{}", rows, columns, specials ? ", specials" : ""));
        const std::uint32_t bytes = 2 * rows * panel_width(columns);
        std::vector<std::uint16_t> affine(2 * columns);
        for (auto& v : affine) v = p.f16_finite(2.0f);
        const auto affine_bytes = rows == 0 ? std::vector<std::uint8_t>{} : bytes_of(affine);
        expect_device_matches_model(
            KernelCase{"tessera_layer_norm_f16",
                       {input(2, "normalised", 2, p.bytes(bytes)),
                        input(3, "source", 2, a16_values(p, rows, columns, 30.0f, specials)),
                        input(4, "affine", 2, affine_bytes)},
                       {{5, rows}, {6, columns}, {7, 1074}}});
        expect_device_matches_model(
            KernelCase{"tessera_add_layer_norm_f16",
                       {input(2, "normalised", 2, p.bytes(bytes)),
                        input(3, "residual", 2, a16_values(p, rows, columns, 30.0f, specials)),
                        input(4, "right", 2, a16_values(p, rows, columns, 3.0f, specials)),
                        input(5, "affine", 2, affine_bytes)},
                       {{6, rows}, {7, columns}, {8, 1074}}});
      }
    }
  }
  // In place; a large ε; the largest SigLIP shape (1152 columns) on 13 rows.
  std::vector<std::uint16_t> affine(2 * 1152);
  for (auto& v : affine) v = p.f16_finite(2.0f);
  expect_device_matches_model(
      KernelCase{"tessera_layer_norm_f16",
                 {input(3, "source", 2, a16_values(p, 13, 72, 5.0f, false)),
                  input(4, "affine", 2,
                        bytes_of(std::vector<std::uint16_t>(affine.begin(), affine.begin() + 144))),
                  alias(2, "normalised", 2, 3)},
                 {{5, 13}, {6, 72}, {7, 1u << 29}}});
  expect_device_matches_model(
      KernelCase{"tessera_add_layer_norm_f16",
                 {input(2, "normalised", 2, p.bytes(2 * 13 * 1152)),
                  input(3, "residual", 2, a16_values(p, 13, 1152, 30.0f, false)),
                  input(4, "right", 2, a16_values(p, 13, 1152, 3.0f, false)),
                  input(5, "affine", 2, bytes_of(affine))},
                 {{6, 13}, {7, 1152}, {8, 1074}}});
}

// Row-major rows: whole rows per worker (six or more, or odd lengths) and
// parts of every row (fewer rows of an even length, SigLIP's one row of 1152).
TEST(DeviceKernels, LayerNormRowsF16) {
  Patterns p(81);
  for (std::uint32_t rows : {0u, 1u, 2u, 5u, 6u, 7u, 13u}) {
    for (std::uint32_t columns : {1u, 2u, 3u, 16u, 17u, 72u, 100u, 1152u}) {
      for (bool specials : {false, true}) {
        SCOPED_TRACE(
            fmt::format("{} rows × {} columns{}", rows, columns, specials ? ", specials" : ""));
        std::vector<std::uint16_t> x(rows * columns), affine(2 * columns);
        for (auto& v : x) v = specials && p.below(40) == 0 ? p.f16() : p.f16_finite(30.0f);
        for (auto& v : affine) v = p.f16_finite(2.0f);
        expect_device_matches_model(
            KernelCase{"tessera_layer_norm_rows_f16",
                       {input(2, "normalised", 2, p.bytes(2 * rows * columns)),
                        input(3, "source", 2, bytes_of(x)),
                        input(4, "affine", 2, rows == 0 ? std::vector<std::uint8_t>{} : bytes_of(affine))},
                       {{5, rows}, {6, columns}, {7, 1074}}});
      }
    }
  }
  // Large values cancelling between the row's ends, small ones between, until
  // the statistics' sums round differently in column shares than over the
  // whole row (the model's two summations, kernels/layer_norm.hpp), so a
  // device that summed the whole row would not match the model's bits.
  std::vector<std::uint16_t> x(1152, 0), affine(2 * 1152, 0);
  for (std::uint32_t c = 0; c < 1152; ++c) affine[c] = f32_to_f16(1.0F);
  const auto tells_apart = [&] {
    std::vector<float> wide(1152), gamma(1152, 1.0F), beta(1152, 0.0F);
    for (std::uint32_t c = 0; c < 1152; ++c) wide[c] = f16_to_f32(x[c]);
    std::vector<std::uint16_t> whole(1152), shares(1152);
    layer_norm_f16_row(wide.data(), 1152, gamma.data(), beta.data(), epsilon_value(1074),
                       whole.data());
    layer_norm_f16_row_in_shares(wide.data(), 1152, gamma.data(), beta.data(), epsilon_value(1074),
                                 shares.data(), 6);
    return whole != shares;
  };
  for (std::uint32_t attempt = 0; attempt < 100; ++attempt) {
    for (std::uint32_t i = 0; i < 400; ++i) {
      x[i] = f32_to_f16(static_cast<float>(32 * (500 + p.below(1400))));
      x[752 + i] = static_cast<std::uint16_t>(x[i] ^ 0x8000u);
    }
    for (std::uint32_t c = 400; c < 752; ++c) x[c] = p.f16_finite(0.1F);
    if (tells_apart()) break;
  }
  ASSERT_TRUE(tells_apart());
  for (const std::uint32_t rows : {1u, 6u}) {
    SCOPED_TRACE(fmt::format("{} cancelling rows", rows));
    std::vector<std::uint16_t> block;
    for (std::uint32_t r = 0; r < rows; ++r) block.insert(block.end(), x.begin(), x.end());
    expect_device_matches_model(KernelCase{
        "tessera_layer_norm_rows_f16",
        {input(2, "normalised", 2, p.bytes(2 * rows * 1152)),
         input(3, "source", 2, bytes_of(block)), input(4, "affine", 2, bytes_of(affine))},
        {{5, rows}, {6, 1152}, {7, 1074}}});
  }
}

}  // namespace
}  // namespace tessera::kernels::testing
