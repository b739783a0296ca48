#pragma once
// The kernel registry: for every kernel and runtime helper, by its symbol
// name, the one description of its ABI — which registers are memory operands,
// whether they are read or written, how many bytes each may touch (the only
// source of footprints: the compiler asserts them, the simulator checks the
// model's real accesses against the allocations), its preconditions, and its
// host model.

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/kernel_abi.hpp"

namespace tessera::kernels {

using Registers = std::array<std::uint32_t, 16>;

enum class KernelKind : std::uint8_t { kKernel, kRuntimeHelper };

struct OperandSpec {
  unsigned reg = kOutputRegister;
  Access access = Access::kRead;
  std::string_view role;  // "destination", "source", …
  // Bytes the kernel may touch from the operand's pointer, given the call's registers.
  std::function<std::uint64_t(const Registers&)> footprint;
};

struct KernelSpec {
  std::string name;
  KernelKind kind = KernelKind::kKernel;
  std::vector<OperandSpec> operands;
  // What the call's registers must satisfy; the reason when they do not.
  std::function<std::optional<std::string>(const Registers&)> precondition;
  // The host model: reads and writes through call.memory, sets call.cycles.
  std::function<void(KernelCall&)> model;
};

class KernelRegistry {
 public:
  // Every kernel and runtime helper Tessera ships.
  static const KernelRegistry& standard();

  void add(KernelSpec spec);
  const KernelSpec* find(std::string_view name) const noexcept;
  std::span<const KernelSpec> all() const noexcept { return specs_; }

 private:
  std::vector<KernelSpec> specs_;
};

// The runtime helpers the emitted code calls (kernels/runtime_helpers.cpp).
inline constexpr std::string_view kWorkerBarrier = "tessera_worker_barrier";
inline constexpr std::string_view kSampleCycles = "tessera_sample_cycles";
inline constexpr std::string_view kCopyWords = "tessera_copy_words";
inline constexpr std::string_view kFillWords = "tessera_fill_words";
// Appends one record to a tile's profile sample buffer: $m2 the buffer, $m3
// the record's site word, $m4 the buffer's capacity in records, $m5 the
// value's source, $m6 the value when $m5 says so (kernels/README.md).
inline constexpr std::string_view kProfileSample = "tessera_profile_sample";
inline constexpr std::uint32_t kSampleTheCounter = 0;   // $m5: the tile's cycle counter
inline constexpr std::uint32_t kSampleTheRegister = 1;  // $m5: $m6
// The buffer's layout in words, as schema/profile_samples.hpp describes it
// (which this layer cannot include; the compiler, which sees both, asserts
// they agree): the header (records written, records dropped), then records
// of (site, value).
inline constexpr std::uint32_t kProfileSampleHeaderWords = 2;
inline constexpr std::uint32_t kProfileSampleRecordWords = 2;

void add_runtime_helpers(KernelRegistry& registry);

// Element-wise kernels (kernels/elementwise.cpp).
inline constexpr std::string_view kAddU32 = "tessera_add_u32";

void add_elementwise_kernels(KernelRegistry& registry);

// Floating-point adds (kernels/float_add.cpp).
inline constexpr std::string_view kAddF32 = "tessera_add_f32";
inline constexpr std::string_view kAddF16 = "tessera_add_f16";
inline constexpr std::string_view kAddRowBroadcastF32 = "tessera_add_row_broadcast_f32";
inline constexpr std::string_view kAddRowBroadcastF16 = "tessera_add_row_broadcast_f16";

void add_float_add_kernels(KernelRegistry& registry);

// Sum-reduction of gathered partials (kernels/reduction.cpp).
inline constexpr std::string_view kSumF32 = "tessera_sum_f32";
inline constexpr std::string_view kSumF16 = "tessera_sum_f16";

void add_reduction_kernels(KernelRegistry& registry);

// Table-driven element moves: transposes, slices, gathers, staging-buffer
// assembly (kernels/move_elements.cpp).
inline constexpr std::string_view kMoveElementsB32 = "tessera_move_elements_b32";
inline constexpr std::string_view kMoveElementsB16 = "tessera_move_elements_b16";
inline constexpr std::string_view kMoveElementsB8 = "tessera_move_elements_b8";

void add_move_kernels(KernelRegistry& registry);

}  // namespace tessera::kernels
