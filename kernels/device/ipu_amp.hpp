#pragma once
// The IPU21 matrix unit (AMP) as the GEMM's fast path uses it: a handful of
// intrinsic-like functions in namespace ipu21, each one instruction.
//
// - popc (`__IPU__`): defined here, as builtins where popc has them and inline
//   assembly otherwise (the AMP instructions and the paced loads/stores have
//   no builtin in Graphcore's public sources; poplibs writes them in asm).
// - the host with TESSERA_DEVICE_EMULATE_IPU: the same names come from the
//   test-only emulation (tests/kernels/ipu_emulation/ipu_amp_emulation.hpp,
//   force-included), a C++ model of exactly these instructions, so the
//   GEMM's AMP loop runs on the host against the host models.
// - the host otherwise: nothing (the portable GEMM is built instead).
//
// What each stands for. Sources: [SDK] Graphcore's poplibs (the IPU21 AMP
// convolutions lib/poplin/codelets/asm/conv_partial_1x1_half_float_8_and_
// half_half_h16.S, conv_partial_1x1_float_float_16.S, the supervisor
// conv_partial_1x1_supervisor.S and the F8 C++ codelets with their
// ampLoadWeights), and LLVM Colossus's CSR table ($CWEI_n_m = CWEI index
// 4n + m, $FP_INFMT = 49, $FP_ISCL = 51, $CCCSLOAD = 80); [INF] marks what
// those sources do not state.
//
// Supervisor (the weights are shared by the tile's six workers):
//   put_weight_address(p)   put $CCCSLOAD, p — where the next putcs loads read
//   ld64putcs<i>()          CWEI[i] ← 8 bytes at $CCCSLOAD; $CCCSLOAD += 8
//   ld128putcs<i>()         CWEI[i], CWEI[i+1] ← 16 bytes; $CCCSLOAD += 16
//                           (the source must be interleaved memory)
//   set_fp8_formats(f)      put $FP_INFMT, f (which FP8 format each operand is)
//   set_product_scale(s)    put $FP_ISCL, s & 0x3F (the FP8 product scale 2^s)
// CWEI is 64 64-bit registers; $CWEI_n_m (index 4n + m) holds phase m's
// weights of one engine, the engine of output lane c being n = 0, 1, 8, 9,
// 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15 for c = 0…15 — the registers
// poplibs loads for "conv unit u, out channel j" (c = 4u + j) [SDK].
//
// Worker (each context has its own accumulator state):
//   clear_accumulators()    uput $FP_CLR, ZAACC: every accumulator +0
//   f16v4hihov4amp<q>(x, p) phase q (0..3) of a 16 × 16 f16 product:
//                           x = 4 f16 inputs (K 4q … 4q+3 of a row), p = 4
//                           f16 partials pushed in, returns 4 f16 outputs
//   f8v8hihov4amp<q>(x, p)  the same with 8 F143 inputs (K 8q … 8q+7) and the
//                           weights F143, products scaled by 2^ISCL
//   f32sisov2amp<q>(x, p)   phase q (0..7) of a 16 × 8 f32 product: one f32
//                           input (K q), 2 f32 partials in, 2 f32 outputs
// The pipeline the three share (from poplibs' priming and drain sequences,
// which this tree reproduces nowhere else [INF]): a P0 op first moves the
// finished accumulators to the output register and starts the accumulators
// from the partials pushed during the previous P phases; each op then
// returns output lanes q of that register, adds its inputs' products to all
// 16 accumulators, and pushes its partials in. So a row's partials go in
// one block of phases, its inputs the next, its outputs come out the block
// after — and the inputs of row r meet row r's partials.
//
// Paced memory (A and C streamed by one tri-packed address):
//   tapack(in, partials, out)         the address of three streams (21 bits each)
//   ld2x64pace<step_in, step_p>(a, x, p)  x ← 8 bytes of the input stream, p ← 8
//                                     bytes of the partials stream; each
//                                     pointer then steps 8 bytes or stays
//   st64pace(a, v)                    8 bytes to the output stream, which steps

#include <cstdint>

#include "kernels/device/ipu_fast_paths.hpp"

#if TESSERA_DEVICE_FAST_PATHS && defined(__IPU__)
#include <arch/gc_tile_defines.h>
#include <ipu_builtins.h>

namespace ipu21 {

using PacedAddress = uint2;  // tapack's three packed addresses, in an $m pair

inline void put_weight_address(const void* panel) {
  // A tile address is 32 bits; uintptr_t keeps the host syntax check happy too.
  __builtin_ipu_put(static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(panel)),
                    CSR_S_CCCSLOAD__INDEX);
}
template <unsigned kIndex>
inline void ld64putcs() {
  __builtin_ipu_ld64putcs(kIndex);
}
template <unsigned kIndex>
inline void ld128putcs() {
  __builtin_ipu_ld128putcs(kIndex);
}
inline void set_fp8_formats(unsigned formats) {
  __builtin_ipu_put(formats, CSR_S_FP_INFMT__INDEX);
}
inline void set_product_scale(int scale) {
  __builtin_ipu_put(static_cast<unsigned>(scale) & 0x3Fu, CSR_S_FP_ISCL__INDEX);
}

inline void clear_accumulators() {
  __builtin_ipu_uput(CSR_W_FP_CLR__ZAACC__MASK << CSR_W_FP_CLR__ZAACC__SHIFT,
                     CSR_W_FP_CLR__INDEX);
}

inline constexpr unsigned kTampF16[4] = {TAMP_F16V4_E4_P0, TAMP_F16V4_E4_P1, TAMP_F16V4_E4_P2,
                                         TAMP_F16V4_E4_P3};
inline constexpr unsigned kTampF32[8] = {TAMP_F32_E4_P0, TAMP_F32_E4_P1, TAMP_F32_E4_P2,
                                         TAMP_F32_E4_P3, TAMP_F32_E4_P4, TAMP_F32_E4_P5,
                                         TAMP_F32_E4_P6, TAMP_F32_E4_P7};

// `volatile`: each op moves the context's hidden accumulator state, so none
// may be dropped or reordered against another.
template <unsigned kPhase>
inline half4 f16v4hihov4amp(half4 input, half4 partials) {
  half4 out;
  asm volatile("f16v4hihov4amp %[out], %[in], %[partials], %[phase]"
               : [out] "=r"(out)
               : [in] "r"(input), [partials] "r"(partials), [phase] "i"(kTampF16[kPhase]));
  return out;
}
// The eight F143 codes travel in a 64-bit $a pair, typed half4 (poplibs
// passes them in $a0:1 likewise).
template <unsigned kPhase>
inline half4 f8v8hihov4amp(half4 codes, half4 partials) {
  half4 out;
  asm volatile("f8v8hihov4amp %[out], %[in], %[partials], %[phase]"
               : [out] "=r"(out)
               : [in] "r"(codes), [partials] "r"(partials), [phase] "i"(kTampF16[kPhase]));
  return out;
}
template <unsigned kPhase>
inline float2 f32sisov2amp(float input, float2 partials) {
  float2 out;
  asm volatile("f32sisov2amp %[out], %[in], %[partials], %[phase]"
               : [out] "=r"(out)
               : [in] "r"(input), [partials] "r"(partials), [phase] "i"(kTampF32[kPhase]));
  return out;
}

inline PacedAddress tapack(const void* in, const void* partials, void* out) {
  return __builtin_ipu_tapack(in, partials, out);
}
// The 4-bit stride select, partials then input (poplibs: "0bxxyy,
// xx=partialsInPtr, yy=inPtr"): 00 steps 8 bytes; 11 takes the stride
// register's third field, which is $mzero's 0.
template <bool kStepInput, bool kStepPartials, typename Input, typename Partials>
inline void ld2x64pace(PacedAddress& address, Input& input, Partials& partials) {
  constexpr unsigned kSelect = (kStepPartials ? 0u : 3u) << 2 | (kStepInput ? 0u : 3u);
  asm volatile("ld2x64pace %[in], %[partials], %[address]+=, $mzero, %[select]"
               : [in] "=r"(input), [partials] "=r"(partials), [address] "+r"(address)
               : [select] "i"(kSelect)
               : "memory");
}
template <typename Value>
inline void st64pace(PacedAddress& address, Value value) {
  asm volatile("st64pace %[value], %[address]+=, $mzero, 0b00"
               : [address] "+r"(address)
               : [value] "r"(value)
               : "memory");
}

}  // namespace ipu21
#elif TESSERA_DEVICE_FAST_PATHS
#ifndef TESSERA_IPU_AMP_EMULATION
#error "the AMP fast path on the host needs tests/kernels/ipu_emulation/ipu_emulation.hpp"
#endif
#endif

#if TESSERA_DEVICE_FAST_PATHS
namespace ipu21 {

// The panel word → CWEI index order of a 512-byte weight panel: load channel
// c's four words (phases 0…3) go to $CWEI_n_0…3 of its engine, the engines
// taken two at a time: CWEI 0–7, 32–39, 8–15, 40–47, 16–23, 48–55, 24–31,
// 56–63 (the prior art's "fixed CWEI destination order", kernels-siglip-
// f143.md §1.1; poplibs' LOAD_WEIGHTS_1X1 for 16 engines [SDK]).
constexpr unsigned cwei_index_of_panel_word(unsigned word) {
  return word % 8 + 8 * (word / 16) + 32 * ((word / 8) % 2);
}

}  // namespace ipu21
#endif
