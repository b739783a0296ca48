// The AMP layouts and the column-pair permutation (kernels/amp_layout.hpp):
// the permutation against the reference's table, each direction undoing the
// other, and every layout a bijection onto its block.
#include "kernels/amp_layout.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace tessera::kernels::amp {
namespace {

// kernels-siglip-f143.md §0.1: L = [0,4,1,5,2,6,3,7]; σ(c) = 2·L(c/2) + c%2.
TEST(AmpLayout, ThePairPermutationIsTheReferencesTable) {
  const unsigned expected[] = {0, 4, 1, 5, 2, 6, 3, 7};
  for (unsigned p = 0; p < 8; ++p) EXPECT_EQ(logical_pair(p), expected[p]) << p;
  const unsigned columns[] = {0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15};
  for (unsigned c = 0; c < 16; ++c) {
    EXPECT_EQ(logical_column(c), columns[c]) << c;
    EXPECT_EQ(kLogicalColumnOfPhysical[c], columns[c]) << c;
  }
}

TEST(AmpLayout, EachDirectionUndoesTheOther) {
  for (unsigned p = 0; p < 8; ++p) {
    EXPECT_EQ(physical_pair(logical_pair(p)), p);
    EXPECT_EQ(logical_pair(physical_pair(p)), p);
  }
  for (unsigned c = 0; c < 16; ++c) {
    EXPECT_EQ(physical_column(logical_column(c)), c);
    EXPECT_EQ(logical_column(physical_column(c)), c);
    EXPECT_EQ(kPhysicalColumnOfLogical[kLogicalColumnOfPhysical[c]], c);
  }
}

// Every (row, column) of a block lands on a distinct offset inside it.
template <typename Offset>
void expect_bijection(std::uint64_t rows, std::uint64_t columns, Offset offset) {
  std::vector<int> hits(rows * columns, 0);
  for (std::uint64_t r = 0; r < rows; ++r) {
    for (std::uint64_t c = 0; c < columns; ++c) {
      const std::uint64_t at = offset(r, c);
      ASSERT_LT(at, hits.size()) << r << ", " << c;
      ++hits[at];
    }
  }
  for (const int hit : hits) ASSERT_EQ(hit, 1);
}

TEST(AmpLayout, EveryLayoutIsABijectionOntoItsBlock) {
  for (const unsigned bytes : {4u, 2u, 1u}) {
    const unsigned m = inner_panel(bytes);
    for (const std::uint64_t rows : {1u, 12u, 13u, 129u}) {
      for (const std::uint64_t k : {m * 1u, m * 4u}) {
        expect_bijection(rows, k, [&](auto r, auto kk) { return left_offset(r, kk, rows, m); });
      }
    }
    for (const std::uint64_t k : {m * 1u, m * 5u}) {
      for (const std::uint64_t n : {16u, 32u, 128u}) {
        expect_bijection(k, n, [&](auto kk, auto nn) { return weight_offset(kk, nn, k, m); });
        EXPECT_EQ(weight_elements(k, n) * bytes, k * n * bytes);
        EXPECT_EQ(kPanelColumns * m * bytes, kPanelBytes) << "a B panel is 512 bytes";
      }
    }
  }
  for (const std::uint64_t rows : {1u, 12u, 129u}) {
    for (const std::uint64_t n : {16u, 64u}) {
      expect_bijection(rows, n, [&](auto r, auto nn) { return output_offset(r, nn, rows); });
    }
  }
}

// B and C share σ: the dot product of A's row r with load channel c of panel
// j is logical output column 16·j + σ(c) — so a brute-force "AMP" over the
// physical layouts computes the logical product.
TEST(AmpLayout, TheAmpFunctionalModelOverThePhysicalLayoutsIsTheLogicalProduct) {
  const std::uint64_t rows = 3, k = 32, n = 32;
  const unsigned m = 16;
  std::vector<long> a(rows * k), b(k * n), a_packed(rows * k), b_packed(k * n), c_packed(rows * n);
  for (std::uint64_t i = 0; i < a.size(); ++i) a[i] = static_cast<long>(i % 7) - 3;
  for (std::uint64_t i = 0; i < b.size(); ++i) b[i] = static_cast<long>(i % 5) - 2;
  for (std::uint64_t r = 0; r < rows; ++r) {
    for (std::uint64_t kk = 0; kk < k; ++kk) a_packed[left_offset(r, kk, rows, m)] = a[r * k + kk];
  }
  for (std::uint64_t kk = 0; kk < k; ++kk) {
    for (std::uint64_t nn = 0; nn < n; ++nn) b_packed[weight_offset(kk, nn, k, m)] = b[kk * n + nn];
  }
  // The AMP: for each column panel j, inner panel i, row r and channel c,
  // C_phys[j][r][c] += Σ_{t<m} A_panel_i[r][t] · B_panel(j,i)[c][t].
  for (std::uint64_t j = 0; j < n / 16; ++j) {
    for (std::uint64_t i = 0; i < k / m; ++i) {
      const std::uint64_t b_panel = (j * (k / m) + i) * 16 * m;
      for (std::uint64_t r = 0; r < rows; ++r) {
        for (std::uint64_t c = 0; c < 16; ++c) {
          long sum = 0;
          for (std::uint64_t t = 0; t < m; ++t) {
            sum += a_packed[i * rows * m + r * m + t] * b_packed[b_panel + c * m + t];
          }
          c_packed[j * rows * 16 + r * 16 + c] += sum;
        }
      }
    }
  }
  for (std::uint64_t r = 0; r < rows; ++r) {
    for (std::uint64_t nn = 0; nn < n; ++nn) {
      long expected = 0;
      for (std::uint64_t kk = 0; kk < k; ++kk) expected += a[r * k + kk] * b[kk * n + nn];
      EXPECT_EQ(c_packed[output_offset(r, nn, rows)], expected) << r << ", " << nn;
    }
  }
}

}  // namespace
}  // namespace tessera::kernels::amp
