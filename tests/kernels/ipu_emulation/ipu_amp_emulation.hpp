#pragma once
// A portable model of exactly the IPU21 matrix-unit (AMP) instructions the
// GEMM's fast path uses (kernels/device/ipu_amp.hpp, namespace ipu21), so
// that fast path builds with g++ and runs against the host models.
// Included by ipu_emulation.hpp; test-only, never part of a device build.
//
// The model, and what each part rests on ([SDK] Graphcore's poplibs and
// LLVM Colossus's register table, as cited in ipu_amp.hpp; [INF] this
// emulation's assumption, which only silicon can confirm):
//
// - CWEI: 64 64-bit registers, written by ld64putcs / ld128putcs from
//   $CCCSLOAD (which steps 8 / 16 bytes) [SDK]. Output lane c (0…15) of the
//   16-lane engine array reads $CWEI_n_m, index 4n + m, with n =
//   kCweiRowOfLane[c] and m the op's phase — poplibs' "conv unit u, out
//   channel j, phase m" loads, c = 4u + j [SDK]. Inside a register the
//   lanes are little-endian: f16 lane j (bits 16j…) is input j of the phase
//   [INF], F143 byte j is input j [INF]; an f32 op of phase q reads word
//   q / 2, lane q % 2 [INF: poplibs feeds the low f32 of an input pair on
//   even phases and the high on odd ones].
// - Per worker context, three 16-lane registers: `pushed` (the partials
//   pushed in, oldest lane first), `acc` (the accumulators) and `out` (the
//   last finished row). An op of phase q: (1) if q = 0, out ← acc rounded to
//   the output format and acc ← pushed; (2) it returns out's lanes
//   q·w … q·w + w − 1 (w = 4 f16 or 2 f32 outputs per op); (3) it adds its
//   inputs' products to every accumulator; (4) it pushes its w partials in.
//   This is the data flow poplibs' priming, steady-state and drain sequences
//   rely on (a row's partials, inputs and outputs one block of phases
//   apart, partials pushed by ops of any phase) [SDK for the flow, INF for
//   the model of it]. clear_accumulators (ZAACC) zeroes all three [INF:
//   poplibs' zero-partials path relies on it for `pushed`].
// - Arithmetic [INF]: accumulators are f32; every product is formed in f32
//   (exact for f16·f16 and F143·F143·2^ISCL, rounded to nearest even for
//   f32·f32) and added with one f32 round-to-nearest-even add each, in K
//   order — the host models' documented order (kernels/README.md "GEMM").
//   `amp_order = kPairwise` instead sums each op's products as a tree before
//   adding them (another order with the same roundings per pass, which the
//   hiho error bound covers). hiho outputs are the accumulator rounded to
//   f16, nearest even (the compiler's _Float16 conversion); partials are
//   widened exactly. F143 codes decode as kernels-siglip-f143.md §3 states
//   (0x80 NaN; (8 + m)·2^(e−11), m·2^−10 for e = 0) — written here again,
//   independently of f143.hpp and the device source's codec — and a product
//   is scaled by 2^ISCL, ISCL the 6-bit signed $FP_ISCL; f8v8hihov4amp
//   needs $FP_INFMT = 3 (both operands F143, the prior art's value).
// - Protocol: a CWEI load or a runall while the last runall's workers may
//   still run (no wait since) is refused, as is a return with workers
//   running; the AMP ops need a worker context, the putcs loads the
//   supervisor. Refusals throw EmulationFault.
// Loads and stores go through memcpy: the host image is raw bytes.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#define TESSERA_IPU_AMP_EMULATION 1

namespace tessera::ipu_emulation {

class EmulationFault : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An in-place call grants the same bytes read-only and writable: a store
// needs one writable range around it.
inline void check_access(const void* at, std::size_t bytes, bool write) {
  if (!in_call) return;
  const auto* first = static_cast<const std::uint8_t*>(at);
  bool inside = false;
  for (const GrantedRange& range : granted) {
    if (first >= range.first && bytes <= range.bytes &&
        static_cast<std::size_t>(first - range.first) <= range.bytes - bytes) {
      if (!write || range.writable) return;
      inside = true;
    }
  }
  throw EmulationFault(
      std::string("a ") + std::to_string(bytes) + "-byte " + (write ? "store" : "load") +
      (inside ? " into a read-only array" : " outside every array the source asked for"));
}

// How an op adds its products (a test knob; kKOrder is the assumed one).
enum class AmpOrder { kKOrder, kPairwise };
inline AmpOrder amp_order = AmpOrder::kKOrder;

// What ran: ipu_emulation_test.cpp checks the GEMM fast path is the code
// the tests ran.
inline std::uint64_t amp_ops = 0;
inline std::uint64_t weight_loads = 0;  // CWEI registers written
inline std::uint64_t paced_loads = 0;
inline std::uint64_t paced_stores = 0;
inline std::uint64_t worker_runs = 0;

inline constexpr unsigned kCweiRowOfLane[16] = {0, 1, 8, 9, 2, 3, 10, 11,
                                                4, 5, 12, 13, 6, 7, 14, 15};

struct AmpContext {
  float pushed[16] = {};
  float acc[16] = {};
  float out[16] = {};
};

struct AmpUnit {
  std::uint64_t cwei[64] = {};
  const std::uint8_t* weight_address = nullptr;
  unsigned fp8_formats = 0;
  unsigned product_scale = 0;  // the 6-bit field
  AmpContext contexts[6];
  int context = -1;  // the worker running, −1 for the supervisor
  bool workers_running = false;
};
inline AmpUnit amp_unit;

inline AmpContext& worker_context(const char* op) {
  if (amp_unit.context < 0) throw EmulationFault(std::string(op) + " outside a worker");
  return amp_unit.contexts[amp_unit.context];
}

inline void supervisor_only(const char* op) {
  if (amp_unit.context >= 0) throw EmulationFault(std::string(op) + " in a worker");
}

inline void load_cwei(unsigned index, unsigned registers) {
  supervisor_only("a putcs load");
  if (amp_unit.workers_running) {
    throw EmulationFault("CWEI loaded while the last runall's workers may still read it");
  }
  if (amp_unit.weight_address == nullptr) throw EmulationFault("putcs load before $CCCSLOAD");
  for (unsigned i = 0; i < registers; ++i) {
    check_access(amp_unit.weight_address, 8, false);
    std::memcpy(&amp_unit.cwei[index + i], amp_unit.weight_address, 8);
    amp_unit.weight_address += 8;
  }
  weight_loads += registers;
}

inline float f143_value(std::uint8_t code) {
  if (code == 0x80) return std::numeric_limits<float>::quiet_NaN();
  const int e = (code >> 3) & 0xF;
  const int m = code & 0x7;
  const float magnitude = e == 0 ? std::ldexp(static_cast<float>(m), -10)
                                 : std::ldexp(static_cast<float>(8 + m), e - 11);
  return (code & 0x80) != 0 ? -magnitude : magnitude;
}

inline int product_scale() {
  const int field = static_cast<int>(amp_unit.product_scale & 0x3Fu);
  return field >= 32 ? field - 64 : field;
}

// Adds `count` products to `acc` in the configured order.
inline float add_products(float acc, const float* products, unsigned count) {
  if (amp_order == AmpOrder::kKOrder || count == 1) {
    for (unsigned j = 0; j < count; ++j) acc = acc + products[j];
    return acc;
  }
  float level[8];
  for (unsigned j = 0; j < count; ++j) level[j] = products[j];
  for (unsigned width = count; width > 1; width /= 2) {
    for (unsigned j = 0; j < width / 2; ++j) level[j] = level[2 * j] + level[2 * j + 1];
  }
  return acc + level[0];
}

// Steps (1) and (2) of an op of `phase`: the P0 boundary, then the output
// lanes. `hiho`: outputs are the accumulators rounded to f16.
inline void boundary(AmpContext& x, unsigned phase, bool hiho) {
  ++amp_ops;
  if (phase != 0) return;
  for (unsigned c = 0; c < 16; ++c) {
    x.out[c] = hiho ? half_to_float(float_to_half(x.acc[c])) : x.acc[c];
    x.acc[c] = x.pushed[c];
  }
}

// Step (4): `width` partials pushed in, oldest lane first.
inline void push(AmpContext& x, const float* partials, unsigned width) {
  for (unsigned c = 0; c + width < 16; ++c) x.pushed[c] = x.pushed[c + width];
  for (unsigned j = 0; j < width; ++j) x.pushed[16 - width + j] = partials[j];
}

}  // namespace tessera::ipu_emulation

namespace ipu21 {

namespace emulation = ::tessera::ipu_emulation;

struct PacedAddress {
  const std::uint8_t* in;
  const std::uint8_t* partials;
  std::uint8_t* out;
};

inline void put_weight_address(const void* panel) {
  emulation::supervisor_only("put $CCCSLOAD");
  emulation::amp_unit.weight_address = static_cast<const std::uint8_t*>(panel);
}
template <unsigned kIndex>
void ld64putcs() {
  static_assert(kIndex < 64);
  emulation::load_cwei(kIndex, 1);
}
template <unsigned kIndex>
void ld128putcs() {
  static_assert(kIndex % 2 == 0 && kIndex < 64);
  emulation::load_cwei(kIndex, 2);
}
inline void set_fp8_formats(unsigned formats) {
  emulation::supervisor_only("put $FP_INFMT");
  emulation::amp_unit.fp8_formats = formats;
}
inline void set_product_scale(int scale) {
  emulation::supervisor_only("put $FP_ISCL");
  emulation::amp_unit.product_scale = static_cast<unsigned>(scale) & 0x3Fu;
}

inline void clear_accumulators() {
  emulation::worker_context("ZAACC") = emulation::AmpContext{};
}

template <unsigned kPhase>
half4 f16v4hihov4amp(half4 input, half4 partials) {
  static_assert(kPhase < 4);
  auto& x = emulation::worker_context("f16v4hihov4amp");
  emulation::boundary(x, kPhase, true);
  half4 out;
  for (unsigned j = 0; j < 4; ++j) out.bits[j] = emulation::float_to_half(x.out[4 * kPhase + j]);
  for (unsigned c = 0; c < 16; ++c) {
    const std::uint64_t word = emulation::amp_unit.cwei[4 * emulation::kCweiRowOfLane[c] + kPhase];
    float products[4];
    for (unsigned j = 0; j < 4; ++j) {
      const float w = emulation::half_to_float(static_cast<std::uint16_t>(word >> (16 * j)));
      products[j] = emulation::half_to_float(input.bits[j]) * w;  // exact in f32
    }
    x.acc[c] = emulation::add_products(x.acc[c], products, 4);
  }
  float pushed[4];
  for (unsigned j = 0; j < 4; ++j) pushed[j] = emulation::half_to_float(partials.bits[j]);
  emulation::push(x, pushed, 4);
  return out;
}

template <unsigned kPhase>
half4 f8v8hihov4amp(half4 codes, half4 partials) {
  static_assert(kPhase < 4);
  auto& x = emulation::worker_context("f8v8hihov4amp");
  if (emulation::amp_unit.fp8_formats != 3) {
    throw emulation::EmulationFault("f8v8hihov4amp with $FP_INFMT " +
                                    std::to_string(emulation::amp_unit.fp8_formats) +
                                    ": the emulation models F143 operands (3) only");
  }
  emulation::boundary(x, kPhase, true);
  half4 out;
  for (unsigned j = 0; j < 4; ++j) out.bits[j] = emulation::float_to_half(x.out[4 * kPhase + j]);
  std::uint8_t in[8];
  std::memcpy(in, &codes, 8);
  const int scale = emulation::product_scale();
  for (unsigned c = 0; c < 16; ++c) {
    const std::uint64_t word = emulation::amp_unit.cwei[4 * emulation::kCweiRowOfLane[c] + kPhase];
    float products[8];
    for (unsigned j = 0; j < 8; ++j) {
      const float w = emulation::f143_value(static_cast<std::uint8_t>(word >> (8 * j)));
      products[j] = std::ldexp(emulation::f143_value(in[j]) * w, scale);  // exact in f32
    }
    x.acc[c] = emulation::add_products(x.acc[c], products, 8);
  }
  float pushed[4];
  for (unsigned j = 0; j < 4; ++j) pushed[j] = emulation::half_to_float(partials.bits[j]);
  emulation::push(x, pushed, 4);
  return out;
}

template <unsigned kPhase>
float2 f32sisov2amp(float input, float2 partials) {
  static_assert(kPhase < 8);
  auto& x = emulation::worker_context("f32sisov2amp");
  emulation::boundary(x, kPhase, false);
  float2 out;
  out[0] = x.out[2 * kPhase];
  out[1] = x.out[2 * kPhase + 1];
  for (unsigned c = 0; c < 16; ++c) {
    const std::uint64_t word =
        emulation::amp_unit.cwei[4 * emulation::kCweiRowOfLane[c] + kPhase / 2];
    const auto bits = static_cast<std::uint32_t>(word >> (32 * (kPhase % 2)));
    float w;
    std::memcpy(&w, &bits, 4);
    const float product = input * w;  // rounded to f32
    x.acc[c] = emulation::add_products(x.acc[c], &product, 1);
  }
  const float pushed[2] = {partials[0], partials[1]};
  emulation::push(x, pushed, 2);
  return out;
}

inline PacedAddress tapack(const void* in, const void* partials, void* out) {
  return PacedAddress{static_cast<const std::uint8_t*>(in),
                      static_cast<const std::uint8_t*>(partials),
                      static_cast<std::uint8_t*>(out)};
}
template <bool kStepInput, bool kStepPartials, typename Input, typename Partials>
void ld2x64pace(PacedAddress& address, Input& input, Partials& partials) {
  static_assert(sizeof(Input) == 8 && sizeof(Partials) == 8);
  emulation::check_access(address.in, 8, false);
  emulation::check_access(address.partials, 8, false);
  std::memcpy(&input, address.in, 8);
  std::memcpy(&partials, address.partials, 8);
  if (kStepInput) address.in += 8;
  if (kStepPartials) address.partials += 8;
  ++emulation::paced_loads;
}
template <typename Value>
void st64pace(PacedAddress& address, Value value) {
  static_assert(sizeof(Value) == 8);
  emulation::check_access(address.out, 8, true);
  std::memcpy(address.out, &value, 8);
  address.out += 8;
  ++emulation::paced_stores;
}

// The six workers of one runall, run in turn, each in its own context.
template <typename Program>
struct EmulatedWorkers {
  void wait() { emulation::amp_unit.workers_running = false; }
  void run(const typename Program::Step& step) {
    if (emulation::amp_unit.workers_running) {
      throw emulation::EmulationFault("runall while the last runall's workers may still run");
    }
    emulation::amp_unit.workers_running = true;
    ++emulation::worker_runs;
    for (int worker = 0; worker < 6; ++worker) {
      emulation::amp_unit.context = worker;
      try {
        Program::work(step, static_cast<unsigned>(worker));
      } catch (...) {
        emulation::amp_unit.context = -1;
        emulation::amp_unit.workers_running = false;
        throw;
      }
    }
    emulation::amp_unit.context = -1;
  }
};

// A supervisor that faulted (a DeviceFault from its memory) stops here.
inline void supervisor_aborts() {
  emulation::amp_unit.workers_running = false;
  emulation::amp_unit.context = -1;
}

inline void supervisor_returns() {
  if (emulation::amp_unit.workers_running) {
    emulation::amp_unit.workers_running = false;
    throw emulation::EmulationFault("the supervisor returned while workers may still run");
  }
}

}  // namespace ipu21
