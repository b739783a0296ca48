// The registry's footprint functions against what the host models really
// touch (ARCHITECTURE.md decision 3: two independent sources). For random
// registers that meet a kernel's precondition, every byte the model touches
// through an operand lies inside that operand's footprint, the last byte it
// touches is the footprint's last byte, and it touches nothing when the
// footprint is zero — so a footprint formula can be neither too small (an
// overrun the compiler would not see) nor too large (wasted SRAM).
//
// A model's touches are the spans it asks for (ARCHITECTURE.md decision 11).
// The element moves ask for their whole regions and note the elements their
// table names inside them; their cases serve a generated table (in-range
// indices that name both regions' last elements whenever there is a pair),
// and zero pairs touch nothing.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <utility>
#include <vector>

#include "kernels/attention.hpp"
#include "kernels/gemm.hpp"
#include "kernels/registry.hpp"
#include "tests/kernels/footprint_check.hpp"

namespace tessera::kernels {
namespace {

using testing::check_footprints;

struct Case {
  std::string_view kernel;
  Registers registers{};
  std::vector<std::uint8_t> table;  // served at $m4 (the element moves)
  bool touches_nothing = false;     // zero pairs: footprints are bounds the call does not reach
};

constexpr std::uint32_t kOutAddress = 0x100000;
constexpr std::uint32_t kLeftAddress = 0x200000;
constexpr std::uint32_t kRightAddress = 0x300000;

rc::Gen<std::uint32_t> small_count() {
  return rc::gen::weightedOneOf<std::uint32_t>(
      {{1, rc::gen::element<std::uint32_t>(0, 1, 5, 6, 7, 100)}, {2, rc::gen::inRange(0u, 2500u)}});
}

Case any_case() {
  Case c;
  const bool in_place = *rc::gen::arbitrary<bool>();
  c.registers[2] = kOutAddress;
  switch (*rc::gen::inRange(0, 6)) {
    case 0: {  // add
      const bool f16 = *rc::gen::arbitrary<bool>();
      c.kernel = f16 ? kAddF16 : kAddF32;
      c.registers[3] = in_place ? kOutAddress : kLeftAddress;
      c.registers[4] = kRightAddress;
      c.registers[5] = *small_count();
      break;
    }
    case 1: {  // row broadcast
      const bool f16 = *rc::gen::arbitrary<bool>();
      c.kernel = f16 ? kAddRowBroadcastF16 : kAddRowBroadcastF32;
      c.registers[3] = in_place ? kOutAddress : kLeftAddress;
      c.registers[4] = kRightAddress;
      c.registers[5] = *rc::gen::inRange(0u, 40u);
      c.registers[6] = *rc::gen::inRange(0u, 70u);
      break;
    }
    case 3: {  // element moves
      const unsigned s = *rc::gen::element(4u, 2u, 1u);
      c.kernel = s == 4 ? kMoveElementsB32 : s == 2 ? kMoveElementsB16 : kMoveElementsB8;
      const std::uint32_t out_elements = *rc::gen::inRange(1u, 3000u);
      const std::uint32_t in_elements = *rc::gen::inRange(1u, 3000u);
      const std::uint32_t pairs = *small_count();
      std::vector<std::uint8_t> table;
      const auto word = [&](std::uint32_t value) {
        for (unsigned b = 0; b < 4; ++b) {
          table.push_back(static_cast<std::uint8_t>(value >> (8 * b)));
        }
      };
      const std::uint32_t last_pair = pairs == 0 ? 0 : *rc::gen::inRange(0u, pairs);
      for (std::uint32_t p = 0; p < pairs; ++p) {
        word(p == last_pair ? out_elements - 1 : *rc::gen::inRange(0u, out_elements));
        word(p == pairs - 1 ? in_elements - 1 : *rc::gen::inRange(0u, in_elements));
      }
      c.registers[3] = kLeftAddress;
      c.registers[4] = kRightAddress;
      c.registers[5] = pairs;
      c.registers[6] = out_elements;
      c.registers[7] = in_elements;
      c.table = std::move(table);
      c.touches_nothing = pairs == 0;
      break;
    }
    case 4: {  // GEMM: A in standard memory, C at the interleaved window, the
               // expanded family's weights in interleaved memory
      const auto family = *rc::gen::element(GemmFamily::kF32, GemmFamily::kF16,
                                            GemmFamily::kF16ExpandedF143, GemmFamily::kF143);
      const bool init = *rc::gen::arbitrary<bool>();
      const GemmFormat f = gemm_format(family);
      static constexpr std::string_view kNames[4][2] = {
          {kGemmF32Init, kGemmF32Accumulate},
          {kGemmF16Init, kGemmF16Accumulate},
          {kGemmF16ExpandedF143Init, kGemmF16ExpandedF143Accumulate},
          {kGemmF143Init, kGemmF143Accumulate}};
      c.kernel = kNames[static_cast<unsigned>(family)][init ? 0 : 1];
      const std::uint32_t columns =
          family == GemmFamily::kF32 ? 64u : *rc::gen::element(32u, 64u, 128u);
      const std::uint32_t inner = f.pass * *rc::gen::inRange(1u, 5u);
      const std::uint32_t maximum = gemm_maximum_rows(family, inner, columns);
      c.registers[kGemmOutputRegister] = 0x80000;
      c.registers[kGemmLeftRegister] = 0x60000;
      c.registers[kGemmWeightRegister] = f.interleaved_weights ? 0x90000 : 0x68000;
      c.registers[kGemmRowsRegister] = *rc::gen::weightedOneOf<std::uint32_t>(
          {{1, rc::gen::element<std::uint32_t>(0, kGemmMinimumRows, 13, 19, maximum)},
           {3, rc::gen::inRange(kGemmMinimumRows, maximum + 1)}});
      c.registers[kGemmInnerRegister] = inner;
      c.registers[kGemmColumnsRegister] = columns;
      c.registers[kGemmScaleRegister] = static_cast<std::uint32_t>(*rc::gen::inRange(-32, 32));
      c.touches_nothing = c.registers[kGemmRowsRegister] == 0;
      break;
    }
    case 5: {  // attention: the packs, softmax, merges, f32 → f16, unpack
      const std::uint32_t head_dim = 4 * *rc::gen::inRange(1u, 33u);
      const std::uint32_t key_rows = *rc::gen::inRange(1u, 129u);
      const std::uint32_t rows = *rc::gen::weightedOneOf<std::uint32_t>(
          {{1, rc::gen::element<std::uint32_t>(0, 1, 6, 7, 12, 13)},
           {3, rc::gen::inRange(1u, 130u)}});
      c.registers[3] = kLeftAddress;
      c.registers[4] = kRightAddress;
      switch (*rc::gen::inRange(0, 5)) {
        case 0: {  // packs: some rows of a shard's head slice into a block
          const auto pack =
              *rc::gen::element(AttentionPack::kQuery, AttentionPack::kKey, AttentionPack::kValue);
          c.kernel = pack == AttentionPack::kQuery ? kAttentionPackQuery
                     : pack == AttentionPack::kKey ? kAttentionPackKey
                                                   : kAttentionPackValue;
          const std::uint32_t block_rows = pack == AttentionPack::kQuery ? rows : key_rows;
          const std::uint32_t copy = block_rows == 0 ? 0 : *rc::gen::inRange(0u, block_rows + 1);
          const std::uint32_t source_start = *rc::gen::inRange(0u, 30u);
          c.registers[kPackSourceRows] = source_start + copy + *rc::gen::inRange(0u, 5u);
          c.registers[kPackSourceColumn] = 4 * *rc::gen::inRange(0u, 300u);
          c.registers[kPackRowStarts] =
              row_starts(source_start, *rc::gen::inRange(0u, block_rows - copy + 1));
          c.registers[kPackCopyRows] = copy;
          c.registers[kPackBlockRows] = block_rows;
          c.registers[kPackHeadDim] = head_dim;
          c.touches_nothing = copy == 0;
          break;
        }
        case 1:
          c.kernel = kAttentionSoftmax;
          c.registers[kSoftmaxRows] = rows;
          c.registers[kSoftmaxKeyRows] = key_rows;
          c.registers[kSoftmaxScale] = 0x3DF15F4A;  // ≈ 1/√72
          c.touches_nothing = rows == 0;
          break;
        case 2: {
          static constexpr std::string_view kMerges[] = {
              kAttentionMergeInitial, kAttentionMergeMiddle, kAttentionMergeFinal,
              kAttentionMergeSingle};
          c.kernel = kMerges[*rc::gen::inRange(0, 4)];
          c.registers[kMergeWeights] = 0x400000;
          c.registers[kMergeRows] = rows;
          c.registers[kMergeKeyRows] = key_rows;
          c.registers[kMergeHeadDim] = head_dim;
          c.touches_nothing = rows == 0;
          break;
        }
        case 3:
          c.kernel = kAttentionF32ToF16;
          c.registers[kConvertCount] = *small_count();
          c.touches_nothing = c.registers[kConvertCount] == 0;
          break;
        default: {
          c.kernel = kAttentionUnpack;
          const std::uint32_t destination_start = *rc::gen::inRange(0u, 10u);
          c.registers[kUnpackOutRows] = destination_start + rows + *rc::gen::inRange(0u, 5u);
          c.registers[kUnpackOutColumn] = 4 * *rc::gen::inRange(0u, 300u);
          c.registers[kUnpackRowStarts] = row_starts(*rc::gen::inRange(0u, 10u), destination_start);
          c.registers[kUnpackCopyRows] = rows;
          c.registers[kUnpackHeadDim] = head_dim;
          c.touches_nothing = rows == 0;
          break;
        }
      }
      break;
    }
    default: {  // sum
      const bool f16 = *rc::gen::arbitrary<bool>();
      c.kernel = f16 ? kSumF16 : kSumF32;
      const std::uint32_t count = *small_count();
      const std::uint32_t partial_bytes = (count * (f16 ? 2 : 4) + 3) / 4 * 4;
      c.registers[3] = in_place ? kOutAddress : kLeftAddress;
      c.registers[4] = count;
      c.registers[5] = *rc::gen::inRange(1u, 6u);
      c.registers[6] = partial_bytes + 4 * *rc::gen::inRange(0u, 4u);
      break;
    }
  }
  return c;
}

RC_GTEST_PROP(Footprint, ModelTouchesExactlyUpToTheFootprint, ()) {
  const Case c = any_case();
  const KernelSpec* spec = KernelRegistry::standard().find(c.kernel);
  RC_ASSERT(spec != nullptr);
  RC_ASSERT(!spec->precondition(c.registers).has_value());
  check_footprints(*spec, c.registers, c.table, c.touches_nothing);
}

}  // namespace
}  // namespace tessera::kernels
