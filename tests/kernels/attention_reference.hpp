#pragma once
// The attention tests' CPU references and data plumbing, written from the
// semantics in kernels/README.md ("Attention") without the models' code:
// logical row-major matrices of f16 bits, packed into and out of the AMP
// layouts with kernels/amp_layout.hpp (the one owner of those layouts),
// converted with kernels/half.hpp, exponentials by exp_f32
// (kernels/activation_math.hpp: the definition of the device's exp, tested on
// its own against FP64).

#include <cstdint>
#include <vector>

#include "kernels/attention.hpp"

namespace tessera::kernels::testing {

// Row-major f16 bits.
struct F16Matrix {
  std::uint32_t rows = 0;
  std::uint32_t cols = 0;
  std::vector<std::uint16_t> bits;

  F16Matrix() = default;
  F16Matrix(std::uint32_t r, std::uint32_t c, std::uint16_t fill = 0)
      : rows(r), cols(c), bits(std::size_t{r} * c, fill) {}
  std::uint16_t& at(std::uint32_t r, std::uint32_t c) { return bits.at(std::size_t{r} * cols + c); }
  std::uint16_t at(std::uint32_t r, std::uint32_t c) const {
    return bits.at(std::size_t{r} * cols + c);
  }
  bool operator==(const F16Matrix&) const = default;
};

// ---- Layouts (cols a multiple of 16 for A16 and C16; B16×16 is K × N with
// both multiples of 16)
std::vector<std::uint8_t> to_a16(const F16Matrix& m);
F16Matrix from_a16(const std::vector<std::uint8_t>& bytes, std::uint32_t rows, std::uint32_t cols);
std::vector<std::uint8_t> to_c16(const F16Matrix& m);
F16Matrix from_c16(const std::vector<std::uint8_t>& bytes, std::uint32_t rows, std::uint32_t cols);
// B16×16 of a K × N matrix (row k = inner).
std::vector<std::uint8_t> to_b16(const F16Matrix& m);
F16Matrix from_b16(const std::vector<std::uint8_t>& bytes, std::uint32_t inner,
                   std::uint32_t columns);

std::vector<std::uint8_t> f32_bytes(const std::vector<float>& values);
std::vector<float> f32_values(const std::vector<std::uint8_t>& bytes);
std::vector<std::uint8_t> f16_bytes(const std::vector<std::uint16_t>& values);
std::vector<std::uint16_t> f16_values(const std::vector<std::uint8_t>& bytes);

// ---- A pack call and its reference

struct PackCall {
  AttentionPack pack = AttentionPack::kQuery;
  F16Matrix shard;  // shard rows × hidden columns (a multiple of 16)
  std::uint32_t column = 0;
  std::uint32_t source_start = 0;
  std::uint32_t destination_start = 0;
  std::uint32_t copy = 0;
  std::uint32_t block_rows = 0;
  std::uint32_t head_dim = 0;

  std::string_view kernel() const;
  Registers registers(std::uint32_t out, std::uint32_t source) const;
};

// The destination block as a logical matrix — Q: R × D (query row, head
// column); K, V: C × D (key row, head column) — after the call, from its
// contents before.
F16Matrix reference_pack(const PackCall& call, F16Matrix before);
// The block's bytes in the kernel's layout: Q A16; K B16×16 with B[c][n] =
// K[n][c] (D × C); V B16×16 with B[n][c] = V[n][c] (C × D).
std::vector<std::uint8_t> block_bytes(AttentionPack pack, const F16Matrix& block);
F16Matrix block_from_bytes(AttentionPack pack, const std::vector<std::uint8_t>& bytes,
                           std::uint32_t padded_rows, std::uint32_t padded_head);

// ---- Softmax, merge, conversion, unpack

struct BlockWeights {
  F16Matrix p;  // R × C
  std::vector<float> max, sum;
};
// scores: R × C logical.
BlockWeights reference_softmax(const F16Matrix& scores, std::uint32_t key_rows, float scale);

struct Accumulator {
  std::uint32_t rows = 0, head_dim = 0;
  std::vector<float> o, max, sum;  // o: rows × head_dim
  std::vector<std::uint8_t> bytes() const;
  static Accumulator from_bytes(const std::vector<std::uint8_t>& bytes, std::uint32_t rows,
                                std::uint32_t head_dim);
};
// values: R × D logical (the PV product).
Accumulator reference_merge(AttentionMergeStage stage, const Accumulator& before,
                            const F16Matrix& values, const std::vector<float>& block_max,
                            const std::vector<float>& block_sum, std::uint32_t head_dim);

// A key split's part folded into `before` (final: then divided by the sum).
Accumulator reference_combine(bool final, const Accumulator& before, const Accumulator& part);

std::vector<std::uint16_t> reference_f32_to_f16(const std::vector<float>& values);

// The shard after unpacking rows [source_start, source_start + copy) of a
// row-major rows × head_dim f16 source into shard rows [destination_start, …)
// at columns [column, column + head_dim).
F16Matrix reference_unpack(F16Matrix shard, const std::vector<std::uint16_t>& source,
                           std::uint32_t column, std::uint32_t source_start,
                           std::uint32_t destination_start, std::uint32_t copy,
                           std::uint32_t head_dim);

std::string_view merge_kernel(AttentionMergeStage stage);

// Bits compare, except that two NaNs of any payload are equal for f32.
bool same_f32(float a, float b);

}  // namespace tessera::kernels::testing
