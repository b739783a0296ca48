#pragma once
// Stand-in for popc's <arch/gc_tile_defines.h> (see ../ipu_stubs.hpp): the
// names the device sources use, with placeholder values (the real ones are
// the SDK's; a syntax check needs only that they are integer constants).
#define CSR_S_CCCSLOAD__INDEX 80
#define CSR_S_FP_INFMT__INDEX 49
#define CSR_S_FP_ISCL__INDEX 51
#define CSR_W_FP_CLR__INDEX 1
#define CSR_W_FP_CLR__ZAACC__MASK 1
#define CSR_W_FP_CLR__ZAACC__SHIFT 3
#define TEXCH_SYNCZONE_LOCAL 2
#define TAMP_F16V4_E4_P0 0
#define TAMP_F16V4_E4_P1 1
#define TAMP_F16V4_E4_P2 2
#define TAMP_F16V4_E4_P3 3
#define TAMP_F32_E4_P0 0
#define TAMP_F32_E4_P1 1
#define TAMP_F32_E4_P2 2
#define TAMP_F32_E4_P3 3
#define TAMP_F32_E4_P4 4
#define TAMP_F32_E4_P5 5
#define TAMP_F32_E4_P6 6
#define TAMP_F32_E4_P7 7
