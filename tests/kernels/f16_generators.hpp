#pragma once
// RapidCheck generators of f16 patterns weighted towards the special values:
// signed zeros, subnormals, the largest finite values, infinities and NaNs.

#include <rapidcheck.h>

#include <cstdint>

namespace tessera::kernels::testing {

inline rc::Gen<std::uint16_t> f16_special() {
  return rc::gen::element<std::uint16_t>(0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x83FF, 0x0400,
                                         0x3C00, 0xBC00, 0x7BFF, 0xFBFF, 0x7BFE, 0x7C00, 0xFC00,
                                         0x7E00, 0xFE00, 0x7C01, 0x7D55);
}

inline rc::Gen<std::uint16_t> f16_pattern() {
  return rc::gen::weightedOneOf<std::uint16_t>(
      {{1, f16_special()}, {3, rc::gen::arbitrary<std::uint16_t>()}});
}

inline rc::Gen<std::uint32_t> f32_pattern() {
  return rc::gen::weightedOneOf<std::uint32_t>(
      {{1, rc::gen::element<std::uint32_t>(0x00000000u, 0x80000000u, 0x00000001u, 0x807FFFFFu,
                                           0x3F800000u, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x7F800000u,
                                           0xFF800000u, 0x7FC00000u, 0x7F800001u)},
       {3, rc::gen::arbitrary<std::uint32_t>()}});
}

}  // namespace tessera::kernels::testing
