#pragma once
// The IPU's f16 transcendental instructions the f16 kernels' fast paths use,
// two lanes at a time (namespace ipu21):
//   f16v2exp(x)    e^x of each f16 lane      (__builtin_ipu_f16v2exp [SDK])
//   f16v2tanh(x)   tanh of each f16 lane     (__builtin_ipu_tanh on half2 [SDK])
// ([SDK]: LLVM Colossus's builtin tests; the prior art's softmax and f16
// GeLU used these instructions, kernels-siglip-f143.md §1.4 and §2.)
//
// - popc (`__IPU__`): the builtins.
// - the host with TESSERA_DEVICE_EMULATE_IPU: the test-only emulation
//   (tests/kernels/ipu_emulation/ipu_emulation.hpp), which computes each lane
//   as the f16 nearest the exact function of the lane's value.
//
// Why these kernels and no others. Graphcore does not document the
// instructions' accuracy [INF]. The kernels that use them are the ones whose
// semantics is already an f16 function of an f16 argument — the attention
// softmax's P = exp_f16(t), t an f16 (kernels/README.md "Attention
// numerics"), and the f16 GeLUs' tanh_f16 — which the host models define as
// the f32 function of the value rounded once to f16, i.e. a model of these
// very instructions; their documented bounds (P within one f16 step,
// docs/GRAPH_FORMAT.md's GeLU bound) hold for any instruction within one f16
// step of the exact value, which is the assumption the emulation states.
// The f32 kernels (row softmax, f32 GeLU, f32 row LayerNorm, the attention
// merges) keep device_math.hpp's exp and tanh under __IPU__: their
// semantics is an f32 function within 2 ulp, which an f16 instruction
// cannot meet and an f32 one is not documented to meet.

#include "kernels/device/ipu_fast_paths.hpp"

#if TESSERA_DEVICE_FAST_PATHS && defined(__IPU__)
#include <ipu_builtins.h>

namespace ipu21 {
inline half2 f16v2exp(half2 x) { return __builtin_ipu_f16v2exp(x); }
inline half2 f16v2tanh(half2 x) { return __builtin_ipu_tanh(x); }
}  // namespace ipu21
#elif TESSERA_DEVICE_FAST_PATHS
#ifndef TESSERA_IPU_EMULATION
#error "the f16 functions on the host need tests/kernels/ipu_emulation/ipu_emulation.hpp"
#endif
#endif
