// The attention device sources against the models. Packs, unpack, f32 → f16
// and the initial and single merges are bit for bit. The softmax's P and the
// middle and final merges use the source's own exp (device_math.hpp, within
// 4u32 relative of e^x, as the model's exp_f32), so they are compared within
// what two such exps can differ by, derived per element below; every other
// byte of their outputs bit for bit. In device_kernels_emulated_tests the
// softmax's P comes from the emulated f16v2exp (the f16 nearest e^t,
// ipu_emulation.hpp) instead: the same one-step comparison holds.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "tests/kernels/device_harness.hpp"
#include "tests/kernels/kernel_runner.hpp"

namespace tessera::kernels::testing {
namespace {

constexpr std::uint32_t kScale = 0x3DF15A9Bu;  // ≈ 1/√72 as f32 bits

std::uint32_t round16(std::uint32_t n) { return (n + 15) / 16 * 16; }

std::vector<std::uint8_t> f16_block(Patterns& p, std::size_t n, float scale, bool specials) {
  std::vector<std::uint16_t> v(n);
  for (auto& x : v) x = specials && p.below(50) == 0 ? p.f16() : p.f16_finite(scale);
  return bytes_of(v);
}

// ---- Packs and unpack.

struct PackShape {
  std::uint32_t block_rows, shard_rows, source_start, destination_start, copy, d, head;
};

TEST(DeviceKernels, AttentionPacks) {
  Patterns p(100);
  const std::vector<PackShape> query = {{1, 13, 0, 0, 1, 72, 0},  {6, 13, 7, 0, 6, 72, 1},
                                        {9, 13, 4, 2, 7, 64, 1},  {12, 13, 1, 0, 12, 72, 0},
                                        {13, 13, 0, 0, 13, 8, 3}, {13, 13, 0, 5, 0, 72, 1}};
  const std::vector<PackShape> key = {{1, 13, 12, 0, 1, 72, 1},
                                      {16, 13, 0, 3, 13, 72, 0},
                                      {91, 13, 0, 78, 13, 64, 1},
                                      {92, 13, 5, 87, 5, 72, 1},
                                      {92, 92, 0, 0, 92, 72, 0}};
  for (auto [kernel, shapes, is_query] :
       {std::tuple{std::string_view("tessera_attention_pack_query_f16"), query, true},
        std::tuple{std::string_view("tessera_attention_pack_key_f16"), key, false},
        std::tuple{std::string_view("tessera_attention_pack_value_f16"), key, false}}) {
    for (const PackShape& s : shapes) {
      const std::uint32_t hidden = 2 * s.d + 16, w = round16(hidden);
      const std::uint32_t padded_rows =
          is_query ? std::max(s.block_rows, 12u) : round16(s.block_rows);
      const std::uint32_t padded_head = round16(s.d);
      SCOPED_TRACE(fmt::format("{}: block rows {}, shard rows {}, rows {}→{} ×{}, d {}, head {}",
                               kernel, s.block_rows, s.shard_rows, s.source_start,
                               s.destination_start, s.copy, s.d, s.head));
      expect_device_matches_model(
          KernelCase{kernel,
                     {input(2, "block", 2, p.bytes(2 * padded_rows * padded_head)),
                      input(3, "shard", 2, f16_block(p, s.shard_rows * w, 4.0f, true))},
                     {{4, s.shard_rows},
                      {5, s.head * s.d},
                      {6, s.source_start | s.destination_start << 16},
                      {7, s.copy},
                      {8, s.block_rows},
                      {9, s.d}}});
    }
  }
}

TEST(DeviceKernels, AttentionUnpack) {
  Patterns p(101);
  for (const PackShape& s : std::vector<PackShape>{{0, 13, 0, 0, 13, 72, 1},
                                                   {0, 13, 0, 5, 8, 72, 0},
                                                   {0, 61, 3, 0, 9, 64, 2},
                                                   {0, 7, 0, 0, 0, 72, 1},
                                                   {0, 12, 11, 11, 1, 8, 5}}) {
    const std::uint32_t hidden = (s.head + 1) * s.d + 16, w = round16(hidden);
    SCOPED_TRACE(fmt::format("shard rows {}, rows {}→{} ×{}, d {}, head {}", s.shard_rows,
                             s.source_start, s.destination_start, s.copy, s.d, s.head));
    expect_device_matches_model(KernelCase{
        "tessera_attention_unpack_head_f16",
        {input(2, "shard", 2, p.bytes(2 * s.shard_rows * w)),
         input(3, "head output", 2, f16_block(p, (s.source_start + s.copy) * s.d, 4.0f, true))},
        {{4, s.shard_rows},
         {5, s.head * s.d},
         {6, s.source_start | s.destination_start << 16},
         {7, s.copy},
         {8, s.d}}});
  }
}

TEST(DeviceKernels, AttentionF32ToF16) {
  Patterns p(102);
  for (std::uint32_t n : {0u, 1u, 2u, 5u, 12u, 13u, 1001u, 9 * 72u}) {
    expect_device_matches_model(
        KernelCase{"tessera_attention_f32_to_f16",
                   {input(2, "out", 2, p.bytes(2 * n)), input(3, "in", 4, p.f32s(n))},
                   {{4, n}}});
  }
}

// ---- Softmax: P within one f16 step of the model's (each is an f16
// rounding of a value within 4u32·e^t of e^t, so they can straddle one
// rounding boundary at most), the state's maximum bit for bit (no exp), its
// sum within the P steps it adds up (2^−10 of it) plus the f32 additions.

std::uint16_t u16(const std::vector<std::uint8_t>& b, std::size_t i) {
  std::uint16_t v;
  std::memcpy(&v, &b[2 * i], 2);
  return v;
}
float f32_at(const std::vector<std::uint8_t>& b, std::size_t byte) {
  float v;
  std::memcpy(&v, &b[byte], 4);
  return v;
}

void softmax_case(Patterns& p, std::uint32_t rows, std::uint32_t keys, bool specials) {
  const std::uint32_t columns = round16(keys);
  const std::uint32_t weights_bytes = 2 * rows * columns + 8 * rows;
  const std::vector<Buffer> buffers = {
      Buffer{"block weights", kBufferBase, weights_bytes, p.bytes(weights_bytes)},
      Buffer{"scores", kBufferBase + 0x10000, 2 * rows * columns,
             f16_block(p, rows * columns, 30.0f, specials)}};
  Registers r{};
  r[2] = kBufferBase;
  r[3] = kBufferBase + 0x10000;
  r[4] = rows;
  r[5] = keys;
  r[6] = kScale;
  SCOPED_TRACE(
      fmt::format("softmax: {} rows, {} keys{}", rows, keys, specials ? ", specials" : ""));
  KernelRun model("tessera_attention_softmax_f16", r, buffers);
  ASSERT_TRUE(model.halted()) << model.fault_text();
  const DeviceResult device = run_device("tessera_attention_softmax_f16", r, buffers);
  ASSERT_EQ(device.fault, "");
  EXPECT_TRUE(device.stray_writes.empty());
  const auto m = model.read(kBufferBase, weights_bytes);
  const auto& d = device.buffers.at(0);
  EXPECT_EQ(model.read(r[3], 2 * rows * columns), device.buffers.at(1));
  std::size_t failures = 0;
  for (std::size_t i = 0; i < std::size_t{rows} * columns; ++i) {
    const std::uint16_t a = u16(m, i), b = u16(d, i);
    const bool same_sign = (a & 0x8000) == (b & 0x8000);
    const bool close = a == b || (same_sign && (a & 0x7FFF) < 0x7C00 && (b & 0x7FFF) < 0x7C00 &&
                                  std::abs(int{a} - int{b}) <= 1);
    if (!close && ++failures <= 5)
      ADD_FAILURE() << fmt::format("P[{}]: model 0x{:04x}, device 0x{:04x}", i, a, b);
  }
  for (std::uint32_t row = 0; row < rows; ++row) {
    const std::size_t state = 2 * std::size_t{rows} * columns;
    EXPECT_EQ(std::memcmp(&m[state + 4 * row], &d[state + 4 * row], 4), 0) << "max of row " << row;
    const float lm = f32_at(m, state + 4 * (rows + row)), ld = f32_at(d, state + 4 * (rows + row));
    if (std::isnan(lm) || std::isnan(ld)) {
      EXPECT_EQ(std::memcmp(&m[state + 4 * (rows + row)], &d[state + 4 * (rows + row)], 4), 0);
    } else {
      EXPECT_LE(std::fabs(double{lm} - double{ld}),
                (0x1p-10 + keys * 0x1p-23) * std::fabs(double{lm}))
          << "sum of row " << row;
    }
  }
  EXPECT_EQ(failures, 0u);
}

TEST(DeviceKernels, AttentionSoftmax) {
  Patterns p(103);
  for (std::uint32_t rows : {0u, 12u, 13u, 61u}) {
    for (std::uint32_t keys : {1u, 16u, 91u, 92u, 128u}) softmax_case(p, rows, keys, false);
  }
  softmax_case(p, 13, 92, true);
}

// ---- Merges.

void merge_case(Patterns& p, std::string_view stage, std::uint32_t rows, std::uint32_t keys,
                std::uint32_t d, bool specials) {
  const std::uint32_t columns = round16(keys), padded_head = round16(d);
  const std::string kernel = fmt::format("tessera_attention_merge_{}_f16", stage);
  std::vector<float> accumulator(std::size_t{rows} * (d + 2));
  for (std::size_t i = 0; i < std::size_t{rows} * d; ++i) {
    const std::uint32_t bits = p.f32_finite(3.0f);
    std::memcpy(&accumulator[i], &bits, 4);
  }
  std::vector<std::uint8_t> weights = p.bytes(2 * rows * columns + 8 * rows);
  for (std::uint32_t row = 0; row < rows; ++row) {
    const float block_max = static_cast<float>(p.below(2000)) / 100.0f - 10.0f;
    const float block_sum = 1.0f + static_cast<float>(p.below(9000)) / 100.0f;
    const float running_max = static_cast<float>(p.below(2000)) / 100.0f - 10.0f;
    const float running_sum = 1.0f + static_cast<float>(p.below(9000)) / 100.0f;
    std::memcpy(&weights[2 * rows * columns + 4 * row], &block_max, 4);
    std::memcpy(&weights[2 * rows * columns + 4 * (rows + row)], &block_sum, 4);
    accumulator[std::size_t{rows} * d + row] = running_max;
    accumulator[std::size_t{rows} * d + rows + row] = running_sum;
  }
  if (specials && rows > 0) {
    accumulator[0] = std::numeric_limits<float>::quiet_NaN();
    accumulator[std::size_t{rows} * d] =
        std::numeric_limits<float>::infinity();  // a running max of +Inf
  }
  const std::vector<Buffer> buffers = {
      Buffer{"accumulator", kBufferBase, static_cast<std::uint32_t>(4 * accumulator.size()),
             bytes_of(accumulator)},
      Buffer{"block values", kBufferBase + 0x10000, 2 * rows * padded_head,
             f16_block(p, rows * padded_head, 4.0f, specials)},
      Buffer{"block weights", kBufferBase + 0x18000, static_cast<std::uint32_t>(weights.size()),
             weights}};
  Registers r{};
  r[2] = kBufferBase;
  r[3] = kBufferBase + 0x10000;
  r[4] = kBufferBase + 0x18000;
  r[5] = rows;
  r[6] = keys;
  r[7] = d;
  SCOPED_TRACE(fmt::format("{}: {} rows, {} keys, d {}{}", kernel, rows, keys, d,
                           specials ? ", specials" : ""));
  if (stage == "initial" || stage == "single") {
    expect_device_matches_model(kernel, r, buffers);
    return;
  }
  // O' = O·α + V·β (then ·1/l'): α and β from two exps within 4u32 each, so
  // O' may differ by about 8u32·(|O|α + |V|β) (·1/l'), and l' by as much of
  // l·α + l_b·β. The model's own α, β (exact in FP64 here) size it.
  KernelRun model(kernel, r, buffers);
  ASSERT_TRUE(model.halted()) << model.fault_text();
  const DeviceResult device = run_device(kernel, r, buffers);
  ASSERT_EQ(device.fault, "");
  EXPECT_TRUE(device.stray_writes.empty());
  const auto mb = model.read(kBufferBase, static_cast<std::uint32_t>(4 * accumulator.size()));
  const auto& db = device.buffers.at(0);
  std::size_t failures = 0;
  for (std::uint32_t row = 0; row < rows; ++row) {
    const double m = accumulator[std::size_t{rows} * d + row];
    const double l = accumulator[std::size_t{rows} * d + rows + row];
    const double bm = f32_at(weights, 2 * rows * columns + 4 * row);
    const double bl = f32_at(weights, 2 * rows * columns + 4 * (rows + row));
    const double merged = std::max(m, bm);
    const double alpha = std::exp(m - merged), beta = std::exp(bm - merged);
    const double l_new = l * alpha + bl * beta;
    const double final_scale = stage == "final" ? 1 / l_new : 1;
    auto check = [&](std::size_t index, double magnitude) {
      const float a = f32_at(mb, 4 * index), b = f32_at(db, 4 * index);
      if (std::memcmp(&mb[4 * index], &db[4 * index], 4) == 0) return;
      const bool close = std::isfinite(a) && std::isfinite(b) &&
                         std::fabs(double{a} - double{b}) <= 0x1p-20 * magnitude + 0x1p-140;
      if (!close && ++failures <= 5)
        ADD_FAILURE() << fmt::format("element {}: model {}, device {}", index, a, b);
    };
    // |V| ≤ 4 (f16_block's finite values), or any f16 with specials.
    const double largest_value = specials ? 65504.0 : 4.0;
    for (std::uint32_t c = 0; c < d; ++c) {
      const double o = std::fabs(double{accumulator[std::size_t{row} * d + c]});
      check(std::size_t{row} * d + c, (o * alpha + largest_value * beta) * final_scale);
    }
    EXPECT_EQ(std::memcmp(&mb[4 * (std::size_t{rows} * d + row)],
                          &db[4 * (std::size_t{rows} * d + row)], 4),
              0)
        << "running max of row " << row;
    check(std::size_t{rows} * d + rows + row, l_new);
  }
  EXPECT_EQ(failures, 0u);
}

TEST(DeviceKernels, AttentionMerges) {
  Patterns p(104);
  for (std::string_view stage : {"initial", "middle", "final", "single"}) {
    for (std::uint32_t rows : {0u, 12u, 13u, 61u}) {
      for (auto [keys, d] : {std::pair{92u, 72u}, std::pair{16u, 64u}, std::pair{1u, 8u}}) {
        merge_case(p, stage, rows, keys, d, false);
      }
    }
    merge_case(p, stage, 13, 92, 72, true);
  }
}

// ---- Combines: the middle and final updates with another part's f32 O,
// within the same exp-sized bound as the merges.

void combine_case(Patterns& p, bool final, std::uint32_t rows, std::uint32_t d) {
  const std::string kernel = final ? "tessera_attention_combine_final_f32" : "tessera_attention_combine_middle_f32";
  std::vector<float> accumulator(std::size_t{rows} * (d + 2)), part(accumulator.size());
  for (auto* a : {&accumulator, &part}) {
    for (std::size_t i = 0; i < std::size_t{rows} * d; ++i) {
      const std::uint32_t bits = p.f32_finite(3.0f);
      std::memcpy(&(*a)[i], &bits, 4);
    }
    for (std::uint32_t row = 0; row < rows; ++row) {
      (*a)[std::size_t{rows} * d + row] = static_cast<float>(p.below(2000)) / 100.0f - 10.0f;
      (*a)[std::size_t{rows} * d + rows + row] = 1.0f + static_cast<float>(p.below(9000)) / 100.0f;
    }
  }
  const auto bytes = static_cast<std::uint32_t>(4 * accumulator.size());
  const std::vector<Buffer> buffers = {Buffer{"accumulator", kBufferBase, bytes, bytes_of(accumulator)},
                                       Buffer{"part", kBufferBase + 0x10000, bytes, bytes_of(part)}};
  Registers r{};
  r[2] = kBufferBase;
  r[3] = kBufferBase + 0x10000;
  r[4] = rows;
  r[5] = d;
  SCOPED_TRACE(fmt::format("{}: {} rows, d {}", kernel, rows, d));
  KernelRun model(kernel, r, buffers);
  ASSERT_TRUE(model.halted()) << model.fault_text();
  const DeviceResult device = run_device(kernel, r, buffers);
  ASSERT_EQ(device.fault, "");
  EXPECT_TRUE(device.stray_writes.empty());
  const auto mb = model.read(kBufferBase, bytes);
  const auto& db = device.buffers.at(0);
  std::size_t failures = 0;
  for (std::uint32_t row = 0; row < rows; ++row) {
    const double m = accumulator[std::size_t{rows} * d + row], l = accumulator[std::size_t{rows} * d + rows + row];
    const double pm = part[std::size_t{rows} * d + row], pl = part[std::size_t{rows} * d + rows + row];
    const double merged = std::max(m, pm);
    const double alpha = std::exp(m - merged), beta = std::exp(pm - merged);
    const double l_new = l * alpha + pl * beta;
    const double scale = final ? 1 / l_new : 1;
    auto check = [&](std::size_t index, double magnitude) {
      if (std::memcmp(&mb[4 * index], &db[4 * index], 4) == 0) return;
      const float a = f32_at(mb, 4 * index), b = f32_at(db, 4 * index);
      const bool close = std::isfinite(a) && std::isfinite(b) &&
                         std::fabs(double{a} - double{b}) <= 0x1p-20 * magnitude + 0x1p-140;
      if (!close && ++failures <= 5) ADD_FAILURE() << fmt::format("element {}: model {}, device {}", index, a, b);
    };
    for (std::uint32_t c = 0; c < d; ++c) {
      const std::size_t at = std::size_t{row} * d + c;
      check(at, (std::fabs(double{accumulator[at]}) * alpha + std::fabs(double{part[at]}) * beta) * scale);
    }
    EXPECT_EQ(std::memcmp(&mb[4 * (std::size_t{rows} * d + row)], &db[4 * (std::size_t{rows} * d + row)], 4), 0)
        << "running max of row " << row;
    check(std::size_t{rows} * d + rows + row, l_new);
  }
  EXPECT_EQ(failures, 0u);
}

TEST(DeviceKernels, AttentionCombines) {
  Patterns p(105);
  for (const bool final : {false, true}) {
    for (std::uint32_t rows : {0u, 1u, 12u, 13u, 46u}) {
      for (std::uint32_t d : {72u, 64u, 8u}) combine_case(p, final, rows, d);
    }
  }
}

}  // namespace
}  // namespace tessera::kernels::testing
