// Device sources of the AMP GEMM family (host models and ABI: kernels/gemm.hpp,
// gemm.cpp, gemm_core.cpp; semantics and error bound: kernels/README.md "GEMM";
// layouts: kernels/amp_layout.hpp, the one owner):
//   tessera_gemm_{f32,f16,f16_expanded_f143,f143}_{init,accumulate}:
//   $m2 C (C16), $m3 A (A_m), $m4 B (B_m×16), $m5 rows, $m6 K (padded, a
//   multiple of the pass m), $m7 N, $m8 ISCL (F143 only, signed).
//
// The portable part (no fast paths) is the algorithm the models define, per
// output element: the accumulator starts at +0 (init) or C's partial
// (accumulate, widened exactly), adds the products a·b in K order with one
// f32 rounding each (f32: each product rounded to f32 first; f16 and F143:
// products are exact in f32), and — the "hiho" families — rounds to f16
// (nearest even) after every pass of m = 16 (f16) or 32 (F143) K values,
// going on from that f16; F143 products are decode(a)·decode(b)·2^ISCL. NaN
// results are canonical. Rows go to the workers balanced contiguous (the
// model's partition). rows = 0 touches nothing.
//
// The fast path (TESSERA_DEVICE_FAST_PATHS: popc, or the host's emulation)
// is the matrix unit, through ipu_amp.hpp's instructions — the prior art's
// gemm_f16_64_amp.S structure (docs/reference/kernels-siglip-f143.md §1.1)
// written in C++:
// - the supervisor (supervised_entry.hpp), for each 16-column group g and
//   each pass p of m K values: waits for the workers, points $CCCSLOAD at B
//   panel (g, p) (512 bytes) and loads it into CWEI — 64 ld64putcs, or 32
//   ld128putcs for the expanded family's interleaved weights — in the fixed
//   order (ipu21::cwei_index_of_panel_word), then runs the six workers on
//   one Step: A's pass-p panel, C's group-g panel, whether to read C's
//   partials (every pass but the init variant's first) and whether this is
//   the last pass. F143 first sets $FP_INFMT = 3 and $FP_ISCL = ISCL.
// - each worker, on its balanced contiguous rows of those panels (A row r
//   at r·m elements, C row r at 16·r), streams them through its AMP context
//   with one tri-packed address (A in, C's partials in, C out): 4 AMP ops
//   per row for f16 and F143 (8 for f32), each fed by one paced load of an
//   A word and a partials word, the outputs stored by paced stores. A row's
//   partials go in one block of ops before its inputs, and its outputs come
//   out the block after (ipu_amp.hpp's pipeline), so the loop is a prologue
//   (the first row's partials), a steady state and a drain (zero inputs).
//   The last partials load holds its pointer, so no load reads past the
//   worker's rows; the init variant's first pass reads no partials. The last
//   pass makes every NaN lane canonical before storing it.
// [INF] The AMP's summation order inside a pass and its internal precision
// are unpublished: the emulation the tests run assumes the models' order
// (K order, f32 adds), under which the fast path gives the models' bits;
// with any other order of the same roundings per pass it stays within the
// hiho bound (tested with a tree order). Stochastic rounding (ESR) is not
// set: round to nearest even, the models' default.
#include "kernels/amp_layout.hpp"
#include "kernels/device/device_abi.hpp"
#include "kernels/device/device_float.hpp"
#include "kernels/device/device_math.hpp"
#include "kernels/device/supervised_entry.hpp"

#if TESSERA_DEVICE_FAST_PATHS
#include <type_traits>
#include <utility>

#include "kernels/device/canonical_lanes.hpp"
#include "kernels/device/ipu_amp.hpp"
#endif

namespace tessera::device {
namespace {

namespace amp = ::tessera::kernels::amp;

// F143 code → its value · 2^scale, exact in f32 (≤ 4 significant bits,
// exponents in [−45, 35]); the NaN code 0x80 → NaN.
float f143_value(std::uint8_t code, int scale) {
  if (code == 0x80) return f32_from_bits(kF32CanonicalNan);
  const std::uint32_t e = (code >> 3) & 0xFu;
  const std::uint32_t q = e == 0 ? (code & 0x7u) : 8 + (code & 0x7u);
  const int k = (e == 0 ? -10 : static_cast<int>(e) - 11) + scale;
  const float magnitude = static_cast<float>(q) * exact_power_of_two(k);
  return (code & 0x80u) != 0 ? -magnitude : magnitude;
}

struct F32Family {
  using Left = std::uint32_t;
  using Weight = std::uint32_t;
  using Output = std::uint32_t;
  static constexpr std::uint32_t kPass = 8;
  static constexpr bool kHiho = false;
  static float left(Left a, int) { return f32_from_bits(a); }
  static float weight(Weight b, int) { return f32_from_bits(b); }
  static float partial(Output c) { return f32_from_bits(c); }
};
struct F16Family {
  using Left = std::uint16_t;
  using Weight = std::uint16_t;
  using Output = std::uint16_t;
  static constexpr std::uint32_t kPass = 16;
  static constexpr bool kHiho = true;
  static float left(Left a, int) { return f32_from_bits(widen_f16(a)); }
  static float weight(Weight b, int) { return f32_from_bits(widen_f16(b)); }
  static float partial(Output c) { return f32_from_bits(widen_f16(c)); }
};
// The f16 arithmetic on the interleaved weights an expand wrote: only the
// device's weight stream (ld128putcs) differs.
struct F16ExpandedFamily : F16Family {};
struct F143Family {
  using Left = std::uint8_t;
  using Weight = std::uint8_t;
  using Output = std::uint16_t;
  static constexpr std::uint32_t kPass = 32;
  static constexpr bool kHiho = true;
  static float left(Left a, int) { return f143_value(a, 0); }
  static float weight(Weight b, int iscl) { return f143_value(b, iscl); }
  static float partial(Output c) { return f32_from_bits(widen_f16(c)); }
};

template <typename F, bool kInit>
void gemm(const Registers& r, TileMemory& memory, unsigned worker) {
  const std::uint32_t rows = r[5], inner = r[6], columns = r[7];
  const Share mine = balanced_share(rows, worker);
  if (mine.count == 0) return;
  const int iscl = static_cast<std::int32_t>(r[8]);
  const auto a = memory.array<const typename F::Left>(r[3], rows * inner);
  const auto b = memory.array<const typename F::Weight>(r[4], inner * columns);
  const auto c = memory.array<typename F::Output>(r[2], rows * columns);
  const std::uint32_t passes = inner / F::kPass;
  for (std::uint32_t row = mine.first; row < mine.first + mine.count; ++row) {
    for (std::uint32_t n = 0; n < columns; ++n) {
      const auto at = static_cast<std::uint32_t>(amp::output_offset(row, n, rows));
      float acc = kInit ? 0.0f : F::partial(c[at]);
      for (std::uint32_t p = 0; p < passes; ++p) {
        for (std::uint32_t k = p * F::kPass; k < (p + 1) * F::kPass; ++k) {
          const float x =
              F::left(a[static_cast<std::uint32_t>(amp::left_offset(row, k, rows, F::kPass))], 0);
          const float y = F::weight(
              b[static_cast<std::uint32_t>(amp::weight_offset(k, n, inner, F::kPass))], iscl);
          const float product = x * y;  // f32: rounded; f16, F143: exact
          acc = acc + product;
        }
        if constexpr (F::kHiho) {
          const std::uint16_t partial = narrow_f32(canonical_f32(acc));
          if (p + 1 == passes) {
            c[at] = partial;
          } else {
            acc = f32_from_bits(widen_f16(partial));
          }
        }
      }
      if constexpr (!F::kHiho) c[at] = canonical_f32(acc);
    }
  }
}

#if TESSERA_DEVICE_FAST_PATHS
// ---- The AMP fast path.

// One family's use of the matrix unit: its op, how many phases a row takes,
// what one paced load of A brings and which input an op of phase q takes.
struct F16Amp {
  static constexpr unsigned kPhases = 4;
  using Load = half4;   // one A word: K 4q … 4q+3 of the row
  using Lanes = half4;  // 4 partials in, 4 outputs out
  using LaneBits = std::uint16_t;
  static constexpr bool steps_input(unsigned) { return true; }
  template <unsigned Q>
  static Lanes op(const Load& a, const Lanes& partials) {
    return ipu21::f16v4hihov4amp<Q>(a, partials);
  }
};
struct F143Amp {
  static constexpr unsigned kPhases = 4;
  using Load = half4;  // one A word: eight F143 codes, K 8q … 8q+7
  using Lanes = half4;
  using LaneBits = std::uint16_t;
  static constexpr bool steps_input(unsigned) { return true; }
  template <unsigned Q>
  static Lanes op(const Load& a, const Lanes& partials) {
    return ipu21::f8v8hihov4amp<Q>(a, partials);
  }
};
struct F32Amp {
  static constexpr unsigned kPhases = 8;
  using Load = float2;   // one A word: K q and q + 1 of the row (q even)
  using Lanes = float2;  // 2 partials in, 2 outputs out
  using LaneBits = std::uint32_t;
  // Both ops of a word read it; the second steps past it (poplibs' f32 AMP
  // loop reads each input word twice the same way [SDK]).
  static constexpr bool steps_input(unsigned q) { return q % 2 == 1; }
  template <unsigned Q>
  static Lanes op(const Load& a, const Lanes& partials) {
    return ipu21::f32sisov2amp<Q>(a[Q % 2], partials);
  }
};

template <typename F>
struct AmpOf;
template <>
struct AmpOf<F16Family> {
  using type = F16Amp;
};
template <>
struct AmpOf<F16ExpandedFamily> {
  using type = F16Amp;
};
template <>
struct AmpOf<F143Family> {
  using type = F143Amp;
};
template <>
struct AmpOf<F32Family> {
  using type = F32Amp;
};

// One op of phase Q: what the block feeds it (kInput: the row's A word;
// kPartials: a partials word, kHold: without stepping past it), the op, and
// its outputs stored (kStore). A load the op does not use still reads in
// bounds (a held or current word) and its value is replaced by zeros.
template <typename A, unsigned Q, bool kInput, bool kPartials, bool kHold, bool kStore>
void amp_phase(ipu21::PacedAddress& address, bool canonical) {
  typename A::Load a{};
  typename A::Lanes partials{};
  if constexpr (kInput || kPartials) {
    ipu21::ld2x64pace<kInput && A::steps_input(Q), kPartials && !kHold>(address, a, partials);
    if constexpr (!kInput) a = typename A::Load{};
    if constexpr (!kPartials) partials = typename A::Lanes{};
  }
  const typename A::Lanes out = A::template op<Q>(a, partials);
  if constexpr (kStore) {
    ipu21::st64pace(address, canonical ? canonical_lanes<typename A::LaneBits>(out) : out);
  }
}

// One block: a row's worth of ops, phases 0 … kPhases − 1; kHold holds the
// partials pointer on the block's last load.
template <typename A, bool kInput, bool kPartials, bool kHold, bool kStore>
void amp_block(ipu21::PacedAddress& address, bool canonical) {
  [&]<std::size_t... Q>(std::index_sequence<Q...>) {
    (amp_phase<A, Q, kInput, kPartials, kHold && Q + 1 == A::kPhases, kStore>(address,
                                                                              canonical),
     ...);
  }(std::make_index_sequence<A::kPhases>{});
}

// n ≥ 1 rows through one context: block b feeds row b's partials and row
// b − 1's inputs and stores row b − 2's outputs.
template <typename A, bool kPartials>
void amp_rows(ipu21::PacedAddress& address, std::uint32_t n, bool canonical) {
  ipu21::clear_accumulators();
  constexpr bool kIn = true, kNoIn = false, kPart = true, kNoPart = false;
  constexpr bool kHold = true, kStep = false, kStore = true, kNoStore = false;
  if constexpr (kPartials) {
    if (n == 1) {
      amp_block<A, kNoIn, kPart, kHold, kNoStore>(address, canonical);
      amp_block<A, kIn, kNoPart, kStep, kNoStore>(address, canonical);
      amp_block<A, kNoIn, kNoPart, kStep, kStore>(address, canonical);
      return;
    }
    amp_block<A, kNoIn, kPart, kStep, kNoStore>(address, canonical);  // b = 0
    if (n == 2) {
      amp_block<A, kIn, kPart, kHold, kNoStore>(address, canonical);  // b = 1
    } else {
      amp_block<A, kIn, kPart, kStep, kNoStore>(address, canonical);
      for (std::uint32_t b = 2; b + 1 < n; ++b) {
        amp_block<A, kIn, kPart, kStep, kStore>(address, canonical);
      }
      amp_block<A, kIn, kPart, kHold, kStore>(address, canonical);  // b = n − 1
    }
    amp_block<A, kIn, kNoPart, kStep, kStore>(address, canonical);  // b = n
  } else {
    // Zero partials: the accumulators start from the +0s ZAACC and the
    // zero pushes leave, so the inputs start at once (b = 1 … n).
    amp_block<A, kIn, kNoPart, kStep, kNoStore>(address, canonical);
    for (std::uint32_t b = 2; b <= n; ++b) {
      amp_block<A, kIn, kNoPart, kStep, kStore>(address, canonical);
    }
  }
  amp_block<A, kNoIn, kNoPart, kStep, kStore>(address, canonical);  // b = n + 1: drain
}

template <typename F, bool kInit>
struct GemmProgram {
  using A = typename AmpOf<F>::type;
  static constexpr std::uint32_t kReadPartials = 1, kLastPass = 2;

  struct alignas(8) Step {
    const typename F::Left* left;  // A's pass panel, row 0
    typename F::Output* out;       // C's group panel, row 0
    std::uint32_t rows;
    std::uint32_t flags;
  };

  static void configure(int iscl) {
    if constexpr (std::is_same_v<F, F143Family>) {
      ipu21::set_fp8_formats(3);  // both operands F143 (kernels-siglip-f143.md §0) [INF]
      ipu21::set_product_scale(iscl);
    }
  }

  static void load_weights() {
    if constexpr (std::is_same_v<F, F16ExpandedFamily>) {
      [&]<std::size_t... W>(std::index_sequence<W...>) {
        (ipu21::ld128putcs<ipu21::cwei_index_of_panel_word(2 * W)>(), ...);
      }(std::make_index_sequence<32>{});
    } else {
      [&]<std::size_t... W>(std::index_sequence<W...>) {
        (ipu21::ld64putcs<ipu21::cwei_index_of_panel_word(W)>(), ...);
      }(std::make_index_sequence<64>{});
    }
  }

  template <typename Workers>
  static void supervise(const Registers& r, TileMemory& memory, Workers& workers) {
    const std::uint32_t rows = r[5], inner = r[6], columns = r[7];
    if (rows == 0) return;  // zero work touches nothing
    const auto a = memory.array<const typename F::Left>(r[3], rows * inner);
    const auto b = memory.array<const typename F::Weight>(r[4], inner * columns);
    const auto c = memory.array<typename F::Output>(r[2], rows * columns);
    configure(static_cast<std::int32_t>(r[8]));
    const std::uint32_t passes = inner / F::kPass;
    constexpr std::uint32_t kPanelElements = 512 / sizeof(typename F::Weight);
    Step step{};
    for (std::uint32_t g = 0; g < columns / 16; ++g) {
      for (std::uint32_t p = 0; p < passes; ++p) {
        workers.wait();  // CWEI and the Step are the running workers' until they exit
        ipu21::put_weight_address(b.data() + (g * passes + p) * kPanelElements);
        load_weights();
        step.left = a.data() + p * rows * F::kPass;
        step.out = c.data() + g * rows * 16;
        step.rows = rows;
        step.flags = (kInit && p == 0 ? 0 : kReadPartials) | (p + 1 == passes ? kLastPass : 0);
        workers.run(step);
      }
    }
    workers.wait();
  }

  static void work(const Step& step, unsigned worker) {
    const Share mine = balanced_share(step.rows, worker);
    if (mine.count == 0) return;
    typename F::Output* out = step.out + mine.first * 16;
    ipu21::PacedAddress address = ipu21::tapack(step.left + mine.first * F::kPass, out, out);
    const bool canonical = (step.flags & kLastPass) != 0;
    if ((step.flags & kReadPartials) != 0) {
      amp_rows<A, true>(address, mine.count, canonical);
    } else {
      amp_rows<A, false>(address, mine.count, canonical);
    }
  }
};

using GemmF32Init = GemmProgram<F32Family, true>;
using GemmF32Accumulate = GemmProgram<F32Family, false>;
using GemmF16Init = GemmProgram<F16Family, true>;
using GemmF16Accumulate = GemmProgram<F16Family, false>;
using GemmF16ExpandedInit = GemmProgram<F16ExpandedFamily, true>;
using GemmF16ExpandedAccumulate = GemmProgram<F16ExpandedFamily, false>;
using GemmF143Init = GemmProgram<F143Family, true>;
using GemmF143Accumulate = GemmProgram<F143Family, false>;
#endif

}  // namespace
}  // namespace tessera::device

// The portable bodies (builds without fast paths).
namespace tessera::device {
namespace {
constexpr auto* kPortableF32Init = &gemm<F32Family, true>;
constexpr auto* kPortableF32Accumulate = &gemm<F32Family, false>;
constexpr auto* kPortableF16Init = &gemm<F16Family, true>;
constexpr auto* kPortableF16Accumulate = &gemm<F16Family, false>;
constexpr auto* kPortableF143Init = &gemm<F143Family, true>;
constexpr auto* kPortableF143Accumulate = &gemm<F143Family, false>;
}  // namespace
}  // namespace tessera::device

TESSERA_DEVICE_SUPERVISED_KERNEL(tessera_gemm_f32_init, ::tessera::device::GemmF32Init,
                                 ::tessera::device::kPortableF32Init)
TESSERA_DEVICE_SUPERVISED_KERNEL(tessera_gemm_f32_accumulate, ::tessera::device::GemmF32Accumulate,
                                 ::tessera::device::kPortableF32Accumulate)
TESSERA_DEVICE_SUPERVISED_KERNEL(tessera_gemm_f16_init, ::tessera::device::GemmF16Init,
                                 ::tessera::device::kPortableF16Init)
TESSERA_DEVICE_SUPERVISED_KERNEL(tessera_gemm_f16_accumulate, ::tessera::device::GemmF16Accumulate,
                                 ::tessera::device::kPortableF16Accumulate)
// The expanded family's portable body is the f16 one: only the device's
// weight stream differs.
TESSERA_DEVICE_SUPERVISED_KERNEL(tessera_gemm_f16_expanded_f143_init,
                                 ::tessera::device::GemmF16ExpandedInit,
                                 ::tessera::device::kPortableF16Init)
TESSERA_DEVICE_SUPERVISED_KERNEL(tessera_gemm_f16_expanded_f143_accumulate,
                                 ::tessera::device::GemmF16ExpandedAccumulate,
                                 ::tessera::device::kPortableF16Accumulate)
TESSERA_DEVICE_SUPERVISED_KERNEL(tessera_gemm_f143_init, ::tessera::device::GemmF143Init,
                                 ::tessera::device::kPortableF143Init)
TESSERA_DEVICE_SUPERVISED_KERNEL(tessera_gemm_f143_accumulate,
                                 ::tessera::device::GemmF143Accumulate,
                                 ::tessera::device::kPortableF143Accumulate)
