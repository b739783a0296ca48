#pragma once
// A portable emulation of exactly the IPU vector types and intrinsics the
// device sources' fast paths use (kernels/device/ipu_fast_paths.hpp), so the
// `TESSERA_DEVICE_FAST_PATHS` branches build with g++ and run against the
// host models. Force-included (-include) with -DTESSERA_DEVICE_EMULATE_IPU;
// test-only, never part of a device build.
//
// What each stands for (popc's <ipu_vector_math> / <ipu_memory_intrinsics>,
// as Graphcore's public codelets use them):
//   float2            two f32 lanes, 8 bytes; + and * lane-wise (f32v2add,
//                     f32v2mul): IEEE binary32, round to nearest even;
//   half2, half4      two / four f16 lanes, 4 / 8 bytes; +, − and * lane-wise
//                     (f16v2add, f16v4add, f16v4sub, f16v2mul, f16v4mul): the correctly
//                     rounded binary16 result — computed here in f32, which
//                     is exact for a product of two f16 and correctly rounded
//                     for a sum or difference (f32's 24 bits ≥ 2·11 + 2, so rounding to f32
//                     and then to f16 is one rounding), then narrowed by the
//                     compiler's own f32 → _Float16 conversion (round to
//                     nearest even): independent of both the host models'
//                     and the device sources' conversions;
//   uint2             two u32 lanes, 8 bytes (ld64/st64 payloads);
//   ipu::load_postinc(&p, n)       *p, then p += n elements (ld64step …);
//   ipu::store_postinc(&p, v, n)   *p = v, then p += n elements;
//   ipu21::f16v2exp, ipu21::f16v2tanh   (kernels/device/ipu_f16_functions.hpp)
//                     each lane the f16 nearest the exact function (below);
//   ipu21:: matrix-unit instructions    (kernels/device/ipu_amp.hpp): a
//                     model of the AMP, in ipu_amp_emulation.hpp.
// Loads and stores go through memcpy: the host image is raw bytes.
// Lane NaN payloads are whatever the host makes; the sources canonicalise.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#define TESSERA_IPU_EMULATION 1

namespace tessera::ipu_emulation {

// How many emulated vector loads and stores ran: ipu_emulation_test.cpp
// checks that the fast paths really are the code the tests ran.
inline std::uint64_t vector_loads = 0;
inline std::uint64_t vector_stores = 0;

// The tile memory a call's sources asked for (device_abi.hpp's TileMemory::
// array reports each range through the hook a CallScope installs; an entry
// of a source built with the emulation holds one while it runs): every
// emulated load must lie inside a granted range, every store inside a
// writable one, or the emulation refuses it — the raw-pointer fast paths get
// the check Array gives the portable part. Outside a call (the emulation's
// own tests) nothing is checked.
struct GrantedRange {
  const std::uint8_t* first;
  std::size_t bytes;
  bool writable;
};
inline std::vector<GrantedRange> granted;
inline bool in_call = false;

inline void grant(const void* data, std::size_t bytes, bool writable) {
  granted.push_back(GrantedRange{static_cast<const std::uint8_t*>(data), bytes, writable});
}
// One call of an entry (device_abi.hpp's and supervised_entry.hpp's host
// entries hold one while they run): installs `grant` as the hook.
struct CallScope {
  using Hook = void (*)(const void*, std::size_t, bool);
  explicit CallScope(Hook& hook) : hook_(hook) {
    granted.clear();
    in_call = true;
    hook_ = &grant;
  }
  ~CallScope() {
    in_call = false;
    hook_ = nullptr;
  }
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;

 private:
  Hook& hook_;
};
// Throws (the harness reports it as the source's fault) when [at, at + bytes)
// is not inside one granted range (ipu_amp_emulation.hpp).
inline void check_access(const void* at, std::size_t bytes, bool write);

template <typename Lane, unsigned N>
struct Vector {
  Lane lanes[N];
  Lane& operator[](unsigned i) { return lanes[i]; }
  const Lane& operator[](unsigned i) const { return lanes[i]; }
};

inline float half_to_float(std::uint16_t bits) {
  _Float16 h;
  std::memcpy(&h, &bits, 2);
  return static_cast<float>(h);  // exact
}
inline std::uint16_t float_to_half(float value) {
  const _Float16 h = static_cast<_Float16>(value);  // round to nearest even
  std::uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}

// f16 lanes held as their bits; arithmetic as stated above.
template <unsigned N>
struct HalfVector {
  std::uint16_t bits[N];
  template <typename F>
  friend HalfVector lanewise(const HalfVector& a, const HalfVector& b, F f) {
    HalfVector out;
    for (unsigned i = 0; i < N; ++i) {
      out.bits[i] = float_to_half(f(half_to_float(a.bits[i]), half_to_float(b.bits[i])));
    }
    return out;
  }
  friend HalfVector operator+(const HalfVector& a, const HalfVector& b) {
    return lanewise(a, b, [](float x, float y) { return x + y; });
  }
  friend HalfVector operator-(const HalfVector& a, const HalfVector& b) {
    return lanewise(a, b, [](float x, float y) { return x - y; });
  }
  friend HalfVector operator*(const HalfVector& a, const HalfVector& b) {
    return lanewise(a, b, [](float x, float y) { return x * y; });
  }
};

struct Float2 : Vector<float, 2> {
  friend Float2 operator+(const Float2& a, const Float2& b) {
    return Float2{{{a[0] + b[0], a[1] + b[1]}}};
  }
  friend Float2 operator*(const Float2& a, const Float2& b) {
    return Float2{{{a[0] * b[0], a[1] * b[1]}}};
  }
};

}  // namespace tessera::ipu_emulation

using float2 = ::tessera::ipu_emulation::Float2;
using half2 = ::tessera::ipu_emulation::HalfVector<2>;
using half4 = ::tessera::ipu_emulation::HalfVector<4>;
using uint2 = ::tessera::ipu_emulation::Vector<unsigned, 2>;
static_assert(sizeof(float2) == 8 && sizeof(half2) == 4 && sizeof(half4) == 8 &&
              sizeof(uint2) == 8);

namespace ipu {
template <typename T>
T load_postinc(const T** pointer, int stride) {
  ::tessera::ipu_emulation::check_access(*pointer, sizeof(T), false);
  T value;
  std::memcpy(&value, *pointer, sizeof(T));
  *pointer += stride;
  ++::tessera::ipu_emulation::vector_loads;
  return value;
}
template <typename T>
void store_postinc(T** pointer, T value, int stride) {
  ::tessera::ipu_emulation::check_access(*pointer, sizeof(T), true);
  std::memcpy(*pointer, &value, sizeof(T));
  *pointer += stride;
  ++::tessera::ipu_emulation::vector_stores;
}
}  // namespace ipu

// The f16 transcendentals (kernels/device/ipu_f16_functions.hpp): each lane
// the f16 nearest the exact e^x / tanh x of the lane's value — computed in
// FP64 by the host's libm (within an ulp of FP64, 2^-42 of an f16 step) and
// narrowed once by the compiler's FP64 → _Float16 conversion (round to
// nearest even). That is the accuracy the kernels' bounds assume of the
// instructions [INF: Graphcore does not document it]; NaN stays NaN (any
// payload: the sources canonicalise), e^x overflows to +Inf.
namespace tessera::ipu_emulation {
inline std::uint64_t f16_function_lanes = 0;

template <typename F>
half2 each_lane(half2 x, F f) {
  half2 out;
  for (unsigned i = 0; i < 2; ++i) {
    const _Float16 value =
        static_cast<_Float16>(f(static_cast<double>(half_to_float(x.bits[i]))));
    std::memcpy(&out.bits[i], &value, 2);
  }
  f16_function_lanes += 2;
  return out;
}
}  // namespace tessera::ipu_emulation

namespace ipu21 {
inline half2 f16v2exp(half2 x) {
  return ::tessera::ipu_emulation::each_lane(x, [](double v) { return std::exp(v); });
}
inline half2 f16v2tanh(half2 x) {
  return ::tessera::ipu_emulation::each_lane(x, [](double v) { return std::tanh(v); });
}
}  // namespace ipu21

// The matrix unit (the GEMM fast path): its own header, the same rules.
#include "ipu_amp_emulation.hpp"
