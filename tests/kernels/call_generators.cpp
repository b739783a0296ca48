// The generators of valid kernel calls (tests/kernels/call_generators.hpp).
// Pointer registers are symbolic: distinct operands get addresses far apart,
// an in-place call repeats one; the GEMM's are real addresses of the region
// its precondition asks for (A in standard memory, C at the interleaved
// operand window, the expanded family's weights in interleaved memory).
#include "tests/kernels/call_generators.hpp"

#include <algorithm>
#include <utility>

#include "kernels/attention.hpp"
#include "kernels/f143_kernels.hpp"
#include "kernels/gemm.hpp"
#include "kernels/layer_norm.hpp"
#include "kernels/row_normalisation.hpp"
#include "kernels/layout_kernels.hpp"
#include "kernels/pointwise_kernels.hpp"

namespace tessera::kernels::testing {
namespace {

constexpr std::uint32_t kOut = 0x100000;
constexpr std::uint32_t kIn = 0x200000;
constexpr std::uint32_t kThird = 0x300000;
constexpr std::uint32_t kFourth = 0x400000;

rc::Gen<std::uint32_t> rows() {
  return rc::gen::weightedOneOf<std::uint32_t>(
      {{1, rc::gen::element<std::uint32_t>(0, 1, 6, 7, 11, 12, 13, 61)},
       {1, rc::gen::inRange(0u, 140u)}});
}
rc::Gen<std::uint32_t> columns() {
  return rc::gen::weightedOneOf<std::uint32_t>(
      {{1, rc::gen::element<std::uint32_t>(0, 1, 15, 16, 17, 64)},
       {1, rc::gen::inRange(0u, 200u)}});
}
rc::Gen<std::uint32_t> small_count() {
  return rc::gen::weightedOneOf<std::uint32_t>(
      {{1, rc::gen::element<std::uint32_t>(0, 1, 5, 6, 7, 100)}, {2, rc::gen::inRange(0u, 2500u)}});
}

}  // namespace

CallCase any_case() {
  CallCase c;
  const bool in_place = *rc::gen::arbitrary<bool>();
  c.registers[2] = kOut;
  switch (*rc::gen::inRange(0, 6)) {
    case 0: {  // add
      const bool f16 = *rc::gen::arbitrary<bool>();
      c.kernel = f16 ? kAddF16 : kAddF32;
      c.registers[3] = in_place ? kOut : kIn;
      c.registers[4] = kThird;
      c.registers[5] = *small_count();
      break;
    }
    case 1: {  // row broadcast
      const bool f16 = *rc::gen::arbitrary<bool>();
      c.kernel = f16 ? kAddRowBroadcastF16 : kAddRowBroadcastF32;
      c.registers[3] = in_place ? kOut : kIn;
      c.registers[4] = kThird;
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
      c.registers[3] = kIn;
      c.registers[4] = kThird;
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
      c.registers[3] = kIn;
      c.registers[4] = kThird;
      switch (*rc::gen::inRange(0, 6)) {
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
        case 5:  // a key split's part folded in: $m3 the part, $m4 rows, $m5 d
          c.kernel = *rc::gen::element(kAttentionCombineMiddle, kAttentionCombineFinal);
          c.registers[kCombineRows] = rows;
          c.registers[kCombineHeadDim] = head_dim;
          c.touches_nothing = rows == 0;
          break;
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
      c.registers[3] = in_place ? kOut : kIn;
      c.registers[4] = count;
      c.registers[5] = *rc::gen::inRange(1u, 6u);
      c.registers[6] = partial_bytes + 4 * *rc::gen::inRange(0u, 4u);
      break;
    }
  }
  return c;
}

CallCase pointwise_case() {
  CallCase c;
  Registers& r = c.registers;
  r[2] = kOut;
  const bool in_place = *rc::gen::arbitrary<bool>();
  switch (*rc::gen::inRange(0, 4)) {
    case 0:  // mul
      c.kernel = *rc::gen::element(kMulF32, kMulF16);
      r[3] = in_place ? kOut : kIn;
      r[4] = kThird;
      r[5] = *small_count();
      break;
    case 1:  // convert
      c.kernel = *rc::gen::element(kConvertF32ToF16, kConvertF16ToF32);
      r[3] = kIn;
      r[4] = *small_count();
      break;
    case 2:  // bias add
      c.kernel = *rc::gen::element(kAddBiasC16F16, kAddBiasC16F32);
      r[3] = in_place ? kOut : kIn;
      r[4] = kThird;
      r[5] = *rows();
      r[6] = *columns();
      break;
    default:  // GeLU
      c.kernel = *rc::gen::element(kGeluF16, kGeluF32, kGeluC16ToA16F16);
      r[3] = in_place && c.kernel != kGeluC16ToA16F16 ? kOut : kIn;
      if (c.kernel == kGeluC16ToA16F16) {
        r[4] = *rows();
        r[5] = *columns();
      } else {
        r[4] = *small_count();
      }
      break;
  }
  return c;
}

CallCase layout_case() {
  CallCase c;
  Registers& r = c.registers;
  r[2] = kOut;
  r[3] = kIn;
  switch (*rc::gen::inRange(0, 3)) {
    case 0:  // relayout
      c.kernel = kRelayoutC16ToA16F16;
      r[4] = *rows();
      r[5] = *columns();
      break;
    case 1: {  // reblock
      c.kernel = *rc::gen::element(kReblockA16ToA16F16, kReblockC16ToA16F16);
      r[4] = *rows();
      r[5] = *rows();
      r[8] = *rc::gen::inRange(0u, std::min(r[4], r[5]) + 1);
      r[6] = *rc::gen::inRange(0u, r[4] - r[8] + 1);
      r[7] = *rc::gen::inRange(0u, r[5] - r[8] + 1);
      r[9] = *columns();
      break;
    }
    default: {  // rearrange / unpack
      const std::size_t layout = *rc::gen::inRange<std::size_t>(0, 4);
      const bool pack = *rc::gen::arbitrary<bool>();
      const std::string_view rearranges[] = {kRearrangeLeftF16, kRearrangeTransposedRightF16,
                                             kRearrangeBlockMajorF16, kRearrangeOutputF16};
      const std::string_view unpacks[] = {kUnpackLeftF16, kUnpackTransposedRightF16,
                                          kUnpackBlockMajorF16, kUnpackOutputF16};
      c.kernel = pack ? rearranges[layout] : unpacks[layout];
      r[4] = *rows();
      r[5] = *columns();
      r[6] = r[4] + *rc::gen::inRange(0u, 20u);
      r[7] = (r[5] + 15) / 16 * 16 + 16 * *rc::gen::inRange(0u, 2u);
      r[8] = 16 * *rc::gen::inRange(1u, 5u);
      if (layout == 1) r[6] = (r[6] + 15) / 16 * 16;
      if (layout == 2) r[6] = (r[6] + r[8] - 1) / r[8] * r[8];
      break;
    }
  }
  return c;
}

CallCase f143_case() {
  CallCase c;
  Registers& r = c.registers;
  r[2] = kOut;
  r[3] = kIn;
  const auto scale = static_cast<std::uint32_t>(*rc::gen::inRange(-32, 32));
  switch (*rc::gen::inRange(0, 3)) {
    case 0:
      c.kernel = kQuantizeF16ToF143;
      r[4] = 4 * *rc::gen::inRange(0u, 700u);
      r[5] = scale;
      break;
    case 1:
      c.kernel = kExpandF143ToF16;
      r[4] = 4 * *rc::gen::inRange(0u, 1025u);
      r[5] = scale;
      break;
    default:
      c.kernel = kQuantizeA16ToA32F143;
      r[4] = *rows();
      r[5] = *columns();
      r[6] = scale;
      break;
  }
  return c;
}

CallCase layer_norm_case() {
  CallCase c;
  Registers& r = c.registers;
  r[2] = kOut;
  if (*rc::gen::arbitrary<bool>()) {
    c.kernel = kLayerNormF16;
    r[3] = *rc::gen::arbitrary<bool>() ? kOut : kIn;
    r[4] = kThird;
    r[5] = *rows();
    r[6] = *columns();
    r[7] = 1074;
  } else {
    c.kernel = kAddLayerNormF16;
    r[3] = kIn;
    r[4] = kThird;
    r[5] = kFourth;
    r[6] = *rows();
    r[7] = *columns();
    r[8] = 1074;
  }
  return c;
}

CallCase row_normalisation_case() {
  CallCase c;
  Registers& r = c.registers;
  r[2] = kOut;
  r[3] = *rc::gen::arbitrary<bool>() ? kOut : kIn;  // in place or not
  if (*rc::gen::arbitrary<bool>()) {
    c.kernel = *rc::gen::element(kSoftmaxRowsF32, kSoftmaxRowsF16);
    r[4] = *rows();
    r[5] = *columns();
  } else {
    // The f16 form's output shares no byte with its input.
    c.kernel = *rc::gen::element(kLayerNormRowsF32, kLayerNormRowsF16);
    if (c.kernel == kLayerNormRowsF16) r[3] = kIn;
    r[4] = kThird;
    r[5] = *rows();
    r[6] = *columns();
    r[7] = 1074;
  }
  return c;
}

CallCase integer_and_helper_case() {
  CallCase c;
  Registers& r = c.registers;
  const std::uint32_t words = *small_count();
  switch (*rc::gen::inRange(0, 6)) {
    case 0:  // add_u32: the output may alias an input
      c.kernel = kAddU32;
      r[2] = kOut;
      r[3] = *rc::gen::arbitrary<bool>() ? kOut : kIn;
      r[4] = kThird;
      r[5] = words;
      c.touches_nothing = words == 0;
      break;
    case 1:  // word copy: the same words or disjoint
      c.kernel = kCopyWords;
      r[2] = kOut;
      r[3] = *rc::gen::arbitrary<bool>() ? kOut : kIn;
      r[4] = words;
      c.touches_nothing = words == 0;
      break;
    case 2:  // word fill: $m3 is the value
      c.kernel = kFillWords;
      r[2] = kOut;
      r[3] = *rc::gen::arbitrary<std::uint32_t>();
      r[4] = words;
      c.touches_nothing = words == 0;
      break;
    case 3:
      c.kernel = kSampleCycles;
      r[2] = kOut;
      break;
    case 4:  // profile sample: a buffer of `words` records (0: the header only)
      c.kernel = kProfileSample;
      r[2] = kOut;
      r[3] = *rc::gen::arbitrary<std::uint32_t>();
      r[4] = words;
      r[5] = *rc::gen::element(kSampleTheCounter, kSampleTheRegister);
      r[6] = *rc::gen::arbitrary<std::uint32_t>();
      break;
    default:  // no operands at all
      c.kernel = kWorkerBarrier;
      break;
  }
  return c;
}

}  // namespace tessera::kernels::testing
