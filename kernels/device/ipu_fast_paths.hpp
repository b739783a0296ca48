#pragma once
// Where a device source's IPU fast paths get their vector types and memory
// intrinsics, and whether they are built (TESSERA_DEVICE_FAST_PATHS):
//
// - popc (`__IPU__`): the SDK's <ipu_vector_math> (float2, half2, half4,
//   uint2 and their lane-wise arithmetic: f32v2add/f32v2mul,
//   f16v2add/f16v4add, f16v2mul/f16v4mul) and <ipu_memory_intrinsics>
//   (ipu::load_postinc / ipu::store_postinc: a 32- or 64-bit load or store
//   with the pointer advanced by `stride` elements, ld64step/st64step);
// - the host with TESSERA_DEVICE_EMULATE_IPU: the test-only emulation of
//   exactly those types and intrinsics (tests/kernels/ipu_emulation/,
//   force-included), so the fast paths compile with g++ and run against the
//   host models (tests/kernels/CMakeLists.txt, device_kernels_emulated_tests);
// - the host otherwise: no fast paths, the portable part only.
// The AMP (ipu_amp.hpp) and the f16 transcendentals (ipu_f16_functions.hpp)
// follow the same three-way rule.
//
// The emulation states what the sources assume of the hardware — f16 lanes
// are correctly rounded IEEE binary16 (round to nearest even), f32 lanes
// IEEE binary32 — which only silicon can confirm [INF]; the sources make NaN
// lanes canonical themselves, so NaN payload rules are not assumed.

#if defined(__IPU__)
#include <ipu_memory_intrinsics>
#include <ipu_vector_math>
#define TESSERA_DEVICE_FAST_PATHS 1
#elif defined(TESSERA_DEVICE_EMULATE_IPU)
#ifndef TESSERA_IPU_EMULATION
#error "TESSERA_DEVICE_EMULATE_IPU needs tests/kernels/ipu_emulation/ipu_emulation.hpp force-included"
#endif
#define TESSERA_DEVICE_FAST_PATHS 1
#else
#define TESSERA_DEVICE_FAST_PATHS 0
#endif
