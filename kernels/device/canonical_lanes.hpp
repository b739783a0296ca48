#pragma once
// A fast path's vector with its NaN lanes made canonical (0x7E00 /
// 0x7FC00000, the models' rule): no fast path relies on the hardware's NaN
// payloads [INF: unknown on the IPU], so each passes its results through
// here before storing them. One owner for every family's fast path.

#include <cstdint>

#include "kernels/device/device_float.hpp"
#include "kernels/device/ipu_fast_paths.hpp"

#if TESSERA_DEVICE_FAST_PATHS
namespace tessera::device {

inline std::uint16_t canonical_lane(std::uint16_t bits) {
  return (bits & 0x7C00u) == 0x7C00u && (bits & 0x03FFu) != 0 ? kF16CanonicalNan : bits;
}
inline std::uint32_t canonical_lane(std::uint32_t bits) {
  return (bits & 0x7F800000u) == 0x7F800000u && (bits & 0x007FFFFFu) != 0 ? kF32CanonicalNan
                                                                             : bits;
}

// `Bits` is the lane type: std::uint16_t for f16 lanes, std::uint32_t for f32.
template <typename Bits, typename Vector>
Vector canonical_lanes(const Vector& value) {
  constexpr unsigned kLanes = sizeof(Vector) / sizeof(Bits);
  Bits lanes[kLanes];
  __builtin_memcpy(lanes, &value, sizeof value);
  for (unsigned i = 0; i < kLanes; ++i) lanes[i] = canonical_lane(lanes[i]);
  Vector out;
  __builtin_memcpy(&out, lanes, sizeof out);
  return out;
}

}  // namespace tessera::device
#endif
