#pragma once
// RapidCheck generators of valid kernel calls: registers that meet a
// kernel's precondition (and, for the element moves, the index table served
// at $m4). One owner for every test that needs a random valid call of any
// kernel: the footprint properties (footprint_test, rowwise_footprint_test)
// and the thread-count test (thread_count_test).
//
// Each generator is called inside a property (it dereferences generators);
// wrap it in rc::gen::exec to use it as an rc::Gen. Pointer registers hold
// symbolic addresses, not a layout: a test that runs the call on a tile
// places the operands itself (in the same memory region, for the GEMM's
// standard / interleaved requirements).

#include <rapidcheck.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "kernels/registry.hpp"

namespace tessera::kernels::testing {

struct CallCase {
  std::string_view kernel;
  Registers registers{};
  std::vector<std::uint8_t> table;  // served at $m4 (the element moves)
  bool touches_nothing =
      false;  // zero pairs or rows: footprints are bounds the call does not reach
};

// The adds, the sums, the element moves, the GEMMs and the attention pieces.
CallCase any_case();
// Mul, convert, bias add and GeLU.
CallCase pointwise_case();
// Relayout, reblock, rearrange and unpack.
CallCase layout_case();
// F143 quantise and expand.
CallCase f143_case();
// LayerNorm and the fused residual-add + LayerNorm.
CallCase layer_norm_case();
// Row-major softmax (f32, f16) and the f32 row LayerNorm.
CallCase row_normalisation_case();
// The integer add and the runtime helpers (barrier, cycle sample, word copy
// and fill).
CallCase integer_and_helper_case();

}  // namespace tessera::kernels::testing
