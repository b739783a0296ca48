// The IPU emulation the fast paths are tested with (ipu_emulation/): its f16
// lane arithmetic against the host models' (kernels/float_arith.hpp, an
// independent implementation: integer rounding, not _Float16), and a check
// that the emulated build's kernels really run their fast paths — so
// device_kernels_emulated_tests tests what it says it tests.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <numeric>

#include "kernels/activation_math.hpp"
#include "kernels/float_arith.hpp"
#include "kernels/gemm.hpp"
#include "kernels/half.hpp"
#include "tests/kernels/device_harness.hpp"
#include "tests/kernels/gemm_testing.hpp"

#ifndef TESSERA_IPU_EMULATION
#include "ipu_emulation.hpp"
#endif
#include "kernels/device/ipu_amp.hpp"

namespace tessera::kernels::testing {
namespace {

bool is_nan(std::uint16_t h) { return (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0; }

// Every f16 left operand against 64 partners (specials and random), through half4 lanes.
TEST(IpuEmulation, F16LanesAreTheModelsCorrectlyRoundedSumsAndProducts) {
  Patterns p(21);
  std::size_t checked = 0;
  for (std::uint32_t left = 0; left < 65536; left += 4) {
    half4 a, b;
    for (unsigned lane = 0; lane < 4; ++lane) {
      a.bits[lane] = static_cast<std::uint16_t>(left + lane);
      b.bits[lane] = p.f16();
    }
    const half4 sum = a + b;
    const half4 product = a * b;
    for (unsigned lane = 0; lane < 4; ++lane) {
      const std::uint16_t want_sum = add_f16_bits(a.bits[lane], b.bits[lane]);
      const std::uint16_t want_product = mul_f16_bits(a.bits[lane], b.bits[lane]);
      // NaN payloads are the host's: the sources canonicalise, so only NaN-ness must agree.
      if (is_nan(want_sum)) {
        EXPECT_TRUE(is_nan(sum.bits[lane]));
      } else {
        ASSERT_EQ(sum.bits[lane], want_sum) << std::hex << a.bits[lane] << " + " << b.bits[lane];
      }
      if (is_nan(want_product)) {
        EXPECT_TRUE(is_nan(product.bits[lane]));
      } else {
        ASSERT_EQ(product.bits[lane], want_product)
            << std::hex << a.bits[lane] << " * " << b.bits[lane];
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 65536u);
}

// The steps from a to b along the f16 number line (ordinal distance).
int f16_steps(std::uint16_t a, std::uint16_t b) {
  const auto ordinal = [](std::uint16_t h) {
    return (h & 0x8000u) != 0 ? -static_cast<int>(h & 0x7FFFu) : static_cast<int>(h);
  };
  return std::abs(ordinal(a) - ordinal(b));
}

// The emulated f16v2exp / f16v2tanh on every f16 against the host models'
// exp_f16 / tanh_f16 (the f32 function rounded once, activation_math.hpp):
// within one f16 step everywhere — the instructions' assumed accuracy, under
// which the kernels' bounds hold — and equal almost everywhere.
TEST(IpuEmulation, F16ExpAndTanhLanesAreWithinOneStepOfTheModels) {
  F16Rounding nearest(Rounding::kNearestEven, nullptr);
  std::size_t exp_equal = 0, tanh_equal = 0, exp_numbers = 0, tanh_numbers = 0, checked = 0;
  for (std::uint32_t x = 0; x < 65536; x += 2) {
    half2 in;
    in.bits[0] = static_cast<std::uint16_t>(x);
    in.bits[1] = static_cast<std::uint16_t>(x + 1);
    const half2 e = ipu21::f16v2exp(in);
    const half2 t = ipu21::f16v2tanh(in);
    for (unsigned lane = 0; lane < 2; ++lane) {
      const std::uint16_t h = in.bits[lane];
      const std::uint16_t want_e = exp_f16_nearest_table()[h];
      const std::uint16_t want_t = tanh_f16(h, nearest);
      if (is_nan(want_e)) {
        EXPECT_TRUE(is_nan(e.bits[lane])) << std::hex << h;
      } else {
        ASSERT_LE(f16_steps(e.bits[lane], want_e), 1) << std::hex << "exp " << h;
        exp_equal += e.bits[lane] == want_e;
        ++exp_numbers;
      }
      if (is_nan(want_t)) {
        EXPECT_TRUE(is_nan(t.bits[lane])) << std::hex << h;
      } else {
        ASSERT_LE(f16_steps(t.bits[lane], want_t), 1) << std::hex << "tanh " << h;
        tanh_equal += t.bits[lane] == want_t;
        ++tanh_numbers;
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 65536u);
  EXPECT_EQ(exp_numbers, 65536u - 2046u);  // every f16 but the NaNs
  EXPECT_GE(exp_equal, exp_numbers - exp_numbers / 1000);
  EXPECT_GE(tanh_equal, tanh_numbers - tanh_numbers / 1000);
}

TEST(IpuEmulation, PostIncrementingLoadsAndStoresAdvanceByElements) {
  const std::uint32_t words[4] = {1, 2, 3, 4};
  const auto* from = reinterpret_cast<const uint2*>(words);
  const uint2 first = ipu::load_postinc(&from, 1);
  const uint2 second = ipu::load_postinc(&from, 1);
  EXPECT_EQ(first[0], 1u);
  EXPECT_EQ(first[1], 2u);
  EXPECT_EQ(second[0], 3u);
  std::uint32_t out[4] = {};
  auto* to = reinterpret_cast<uint2*>(out);
  ipu::store_postinc(&to, second, 1);
  ipu::store_postinc(&to, first, 1);
  EXPECT_EQ(out[0], 3u);
  EXPECT_EQ(out[3], 2u);
}

// Inside a call, an emulated load or store must fall in an array the source
// asked TileMemory for, a store in a writable one (the raw-pointer fast
// paths' counterpart of Array's index check).
TEST(IpuEmulation, LoadsAndStoresOutsideTheGrantedArraysAreRefused) {
  std::uint32_t words[8] = {};
  ipu_emulation::CallScope::Hook hook = nullptr;
  {
    ipu_emulation::CallScope call(hook);
    ASSERT_NE(hook, nullptr);
    hook(words, 4 * sizeof(std::uint32_t), false);      // words 0…3, read-only
    hook(words + 4, 2 * sizeof(std::uint32_t), true);   // words 4, 5, writable
    const auto* from = reinterpret_cast<const uint2*>(words);
    ipu::load_postinc(&from, 1);
    ipu::load_postinc(&from, 1);
    EXPECT_NO_THROW(ipu::load_postinc(&from, 1));       // words 4, 5
    EXPECT_THROW(ipu::load_postinc(&from, 1), ipu_emulation::EmulationFault);  // 6, 7
    auto* to = reinterpret_cast<uint2*>(words);
    EXPECT_THROW(ipu::store_postinc(&to, uint2{}, 1), ipu_emulation::EmulationFault);
    to = reinterpret_cast<uint2*>(words + 4);
    EXPECT_NO_THROW(ipu::store_postinc(&to, uint2{}, 1));
    auto address = ipu21::tapack(words, words + 6, words + 4);
    half4 a, p;
    EXPECT_THROW((ipu21::ld2x64pace<true, true>(address, a, p)), ipu_emulation::EmulationFault);
  }
  EXPECT_EQ(hook, nullptr);  // the call is over: nothing is checked
  const auto* from = reinterpret_cast<const uint2*>(words + 6);
  EXPECT_NO_THROW(ipu::load_postinc(&from, 1));
}

// Each kernel with a fast path, on operands large enough that every worker's
// share holds whole aligned groups: the emulated vector loads and stores ran.
TEST(IpuEmulation, TheEmulatedBuildRunsTheFastPaths) {
  Patterns p(22);
  struct Kernel {
    std::string_view symbol;
    unsigned element_bytes;
  };
  for (const Kernel& k : {Kernel{"tessera_add_f32", 4}, Kernel{"tessera_mul_f32", 4},
                          Kernel{"tessera_add_f16", 2}, Kernel{"tessera_mul_f16", 2}}) {
    SCOPED_TRACE(std::string(k.symbol));
    const std::uint64_t loads = ipu_emulation::vector_loads;
    const std::uint32_t n = 960;
    const auto values = [&] { return k.element_bytes == 4 ? p.f32s(n) : p.f16s(n); };
    const KernelCase c{k.symbol,
                       {input(2, "out", k.element_bytes, values()),
                        input(3, "left", k.element_bytes, values()),
                        input(4, "right", k.element_bytes, values())},
                       {{5, n}}};
    expect_device_matches_model(c);
    EXPECT_GT(ipu_emulation::vector_loads, loads);
  }
  for (const auto& [symbol, element_bytes] :
       {std::pair<std::string_view, unsigned>{"tessera_add_row_broadcast_f32", 4},
        std::pair<std::string_view, unsigned>{"tessera_add_row_broadcast_f16", 2}}) {
    SCOPED_TRACE(std::string(symbol));
    const std::uint64_t loads = ipu_emulation::vector_loads;
    const std::uint32_t rows = 24, cols = 40;
    const auto values = [&](std::uint32_t count) {
      return element_bytes == 4 ? p.f32s(count) : p.f16s(count);
    };
    expect_device_matches_model(KernelCase{symbol,
                                           {input(2, "out", element_bytes, values(rows * cols)),
                                            input(3, "a", element_bytes, values(rows * cols)),
                                            input(4, "row", element_bytes, values(cols))},
                                           {{5, rows}, {6, cols}}});
    EXPECT_GT(ipu_emulation::vector_loads, loads);
  }
  {
    // LayerNorm, plain and fused, 7 rows of 4 whole panels (A16: 2 bytes × 16 per panel row).
    const std::uint64_t loads = ipu_emulation::vector_loads;
    const std::uint32_t rows = 7, columns = 64;
    std::vector<std::uint16_t> affine(2 * columns);
    for (auto& v : affine) v = p.f16_finite(2.0f);
    std::vector<std::uint16_t> source(rows * columns), right(rows * columns);
    for (auto& v : source) v = p.f16_finite(30.0f);
    for (auto& v : right) v = p.f16_finite(3.0f);
    expect_device_matches_model(KernelCase{"tessera_layer_norm_f16",
                                           {input(2, "normalised", 2, p.bytes(2 * rows * columns)),
                                            input(3, "source", 2, bytes_of(source)),
                                            input(4, "affine", 2, bytes_of(affine))},
                                           {{5, rows}, {6, columns}, {7, 1074}}});
    const std::uint64_t plain = ipu_emulation::vector_loads;
    EXPECT_GT(plain, loads);
    expect_device_matches_model(KernelCase{"tessera_add_layer_norm_f16",
                                           {input(2, "normalised", 2, p.bytes(2 * rows * columns)),
                                            input(3, "residual", 2, bytes_of(source)),
                                            input(4, "right", 2, bytes_of(right)),
                                            input(5, "affine", 2, bytes_of(affine))},
                                           {{6, rows}, {7, columns}, {8, 1074}}});
    EXPECT_GT(ipu_emulation::vector_loads, plain);
  }
  {
    // The f16 GeLUs and the attention softmax call the f16 functions (their
    // results are compared within bounds in device_bounds_test and
    // device_attention_test; here only that the fast paths ran).
    std::uint64_t lanes = ipu_emulation::f16_function_lanes;
    const std::uint32_t n = 600;
    run_device(KernelCase{"tessera_gelu_f16",
                          {input(2, "out", 2, p.f16s(n)), input(3, "in", 2, p.f16s(n))},
                          {{4, n}}});
    EXPECT_GE(ipu_emulation::f16_function_lanes - lanes, n - 12);
    lanes = ipu_emulation::f16_function_lanes;
    const std::uint32_t rows = 13, columns = 48;
    run_device(KernelCase{"tessera_gelu_c16_to_a16_f16",
                          {input(2, "out", 2, p.f16s(rows * columns)),
                           input(3, "in", 2, p.f16s(rows * columns))},
                          {{4, rows}, {5, columns}}});
    EXPECT_EQ(ipu_emulation::f16_function_lanes - lanes, rows * columns);
    // The softmax: 13 rows of 91 real keys, 45 pairs each through f16v2exp.
    lanes = ipu_emulation::f16_function_lanes;
    const std::uint32_t keys = 91, padded = 96;
    Registers r{};
    r[2] = kBufferBase;
    r[3] = kBufferBase + 0x10000;
    r[4] = rows;
    r[5] = keys;
    r[6] = 0x3DF15A9Bu;  // ≈ 1/√72
    std::vector<std::uint16_t> scores(rows * padded);
    for (auto& v : scores) v = p.f16_finite(30.0F);
    const std::uint32_t weights_bytes = 2 * rows * padded + 8 * rows;
    const DeviceResult softmax = run_device(
        "tessera_attention_softmax_f16", r,
        {Buffer{"block weights", r[2], weights_bytes, p.bytes(weights_bytes)},
         Buffer{"scores", r[3], 2 * rows * padded, bytes_of(scores)}});
    EXPECT_EQ(softmax.fault, "");
    EXPECT_EQ(ipu_emulation::f16_function_lanes - lanes, rows * (keys - 1));
  }
  const std::uint64_t stores = ipu_emulation::vector_stores;
  expect_device_matches_model(KernelCase{"tessera_copy_words",
                                         {input(2, "destination", 4, p.bytes(4 * 600)),
                                          input(3, "source", 4, p.bytes(4 * 600))},
                                         {{4, 600}}});
  EXPECT_GT(ipu_emulation::vector_stores, stores);
  const std::uint64_t fills = ipu_emulation::vector_stores;
  expect_device_matches_model(KernelCase{"tessera_fill_words",
                                         {input(2, "destination", 4, p.bytes(4 * 600))},
                                         {{3, 0xDEADBEEF}, {4, 600}}});
  EXPECT_GT(ipu_emulation::vector_stores, fills);
}

// ---- The matrix unit (ipu_amp_emulation.hpp).

// A worker program for the tests below: runs `body` in worker 0's context.
struct OneWorker {
  struct Step {
    void (*body)();
  };
  static void work(const Step& step, unsigned worker) {
    if (worker == 0) step.body();
  }
};
void in_worker(void (*body)()) {
  ipu21::EmulatedWorkers<OneWorker> workers;
  workers.run(OneWorker::Step{body});
  workers.wait();
}

// One 16 × 16 f16 weight panel as the B16×16 layout stores it: load channel
// c holds 16 inner values (4 words of 4), here w(k, c) = (c + 1)·2^-4 + k·2^-8.
std::uint16_t panel_weight(unsigned k, unsigned c) {
  return f32_to_f16(static_cast<float>(c + 1) / 16.0F + static_cast<float>(k) / 256.0F);
}
std::uint16_t row_input(unsigned row, unsigned k) {
  return f32_to_f16(static_cast<float>(row + 1) - static_cast<float>(k) / 8.0F);
}
std::uint16_t row_partial(unsigned row, unsigned c) {
  return f32_to_f16(static_cast<float>(c) * 0.25F - static_cast<float>(row));
}

std::vector<std::uint16_t> panel() {
  std::vector<std::uint16_t> halves(256);
  for (unsigned c = 0; c < 16; ++c) {
    for (unsigned k = 0; k < 16; ++k) halves[16 * c + k] = panel_weight(k, c);
  }
  return halves;
}

half4 quarter(std::uint16_t (*f)(unsigned, unsigned), unsigned row, unsigned q) {
  half4 v;
  for (unsigned j = 0; j < 4; ++j) v.bits[j] = f(row, 4 * q + j);
  return v;
}

std::vector<std::uint16_t> amp_outputs;

// Rows 0 and 1 through the pipeline: a block of partials, the inputs with
// the next row's partials, … and the drain — the device loop's shape.
void two_rows() {
  ipu21::clear_accumulators();
  const half4 zero{};
  amp_outputs.clear();
  const auto keep = [](const half4& v) {
    for (unsigned j = 0; j < 4; ++j) amp_outputs.push_back(v.bits[j]);
  };
  ipu21::f16v4hihov4amp<0>(zero, quarter(row_partial, 0, 0));
  ipu21::f16v4hihov4amp<1>(zero, quarter(row_partial, 0, 1));
  ipu21::f16v4hihov4amp<2>(zero, quarter(row_partial, 0, 2));
  ipu21::f16v4hihov4amp<3>(zero, quarter(row_partial, 0, 3));
  ipu21::f16v4hihov4amp<0>(quarter(row_input, 0, 0), quarter(row_partial, 1, 0));
  ipu21::f16v4hihov4amp<1>(quarter(row_input, 0, 1), quarter(row_partial, 1, 1));
  ipu21::f16v4hihov4amp<2>(quarter(row_input, 0, 2), quarter(row_partial, 1, 2));
  ipu21::f16v4hihov4amp<3>(quarter(row_input, 0, 3), quarter(row_partial, 1, 3));
  keep(ipu21::f16v4hihov4amp<0>(quarter(row_input, 1, 0), zero));
  keep(ipu21::f16v4hihov4amp<1>(quarter(row_input, 1, 1), zero));
  keep(ipu21::f16v4hihov4amp<2>(quarter(row_input, 1, 2), zero));
  keep(ipu21::f16v4hihov4amp<3>(quarter(row_input, 1, 3), zero));
  keep(ipu21::f16v4hihov4amp<0>(zero, zero));
  keep(ipu21::f16v4hihov4amp<1>(zero, zero));
  keep(ipu21::f16v4hihov4amp<2>(zero, zero));
  keep(ipu21::f16v4hihov4amp<3>(zero, zero));
}

// With the panel loaded in the prior art's CWEI order, output lane c of a
// row is partial(c) + Σ_k input(k)·w(k, c) in f32, K order, rounded once to
// f16 (the model's arithmetic), and the rows come out a block after their
// inputs: the emulation is the pipeline ipu_amp.hpp describes.
TEST(IpuEmulation, AmpRowsComeOutAsDotProductsWithLoadChannelC) {
  const std::vector<std::uint16_t> weights = panel();
  ipu21::put_weight_address(weights.data());
  [&]<std::size_t... W>(std::index_sequence<W...>) {
    (ipu21::ld64putcs<ipu21::cwei_index_of_panel_word(W)>(), ...);
  }(std::make_index_sequence<64>{});
  in_worker(&two_rows);
  ASSERT_EQ(amp_outputs.size(), 32u);
  for (unsigned row = 0; row < 2; ++row) {
    for (unsigned c = 0; c < 16; ++c) {
      float acc = f16_to_f32(row_partial(row, c));
      for (unsigned k = 0; k < 16; ++k) {
        acc += f16_to_f32(row_input(row, k)) * f16_to_f32(panel_weight(k, c));
      }
      EXPECT_EQ(amp_outputs[16 * row + c], f32_to_f16(acc)) << "row " << row << " lane " << c;
    }
  }
}

// A panel loaded in plain order (CWEI 0…63) would put load channel 2's
// weights in the engine of lane 8: the lanes would not be channels.
TEST(IpuEmulation, AmpLanesNeedThePriorArtsCweiOrder) {
  const std::vector<std::uint16_t> weights = panel();
  ipu21::put_weight_address(weights.data());
  [&]<std::size_t... W>(std::index_sequence<W...>) {
    (ipu21::ld64putcs<W>(), ...);
  }(std::make_index_sequence<64>{});
  in_worker(&two_rows);
  float acc = f16_to_f32(row_partial(0, 2));
  for (unsigned k = 0; k < 16; ++k) {
    acc += f16_to_f32(row_input(0, k)) * f16_to_f32(panel_weight(k, 2));
  }
  EXPECT_NE(amp_outputs.at(2), f32_to_f16(acc));
}

void load_one() { ipu21::ld64putcs<0>(); }

// The protocol the GEMM's supervisor must keep: CWEI is the workers' while
// they may run; putcs loads are the supervisor's.
TEST(IpuEmulation, AmpRefusesCweiLoadsWhileWorkersMayRunAndFromAWorker) {
  const std::vector<std::uint16_t> weights = panel();
  ipu21::put_weight_address(weights.data());
  ipu21::EmulatedWorkers<OneWorker> workers;
  workers.run(OneWorker::Step{+[] {}});
  EXPECT_THROW(ipu21::ld64putcs<0>(), ipu_emulation::EmulationFault);
  EXPECT_THROW(workers.run(OneWorker::Step{+[] {}}), ipu_emulation::EmulationFault);
  EXPECT_THROW(ipu21::supervisor_returns(), ipu_emulation::EmulationFault);
  workers.run(OneWorker::Step{+[] {}});
  workers.wait();
  ipu21::ld64putcs<0>();  // after the wait
  EXPECT_THROW(in_worker(&load_one), ipu_emulation::EmulationFault);
  EXPECT_THROW(ipu21::clear_accumulators(), ipu_emulation::EmulationFault);  // not in a worker
}

// Each GEMM family through a simulated-model comparison, and the AMP ran:
// every pass of every 16-column group loaded one whole panel into CWEI (64
// registers) and stored every output word of C once (4 f16 or 8 f32 words
// per row), through AMP ops.
TEST(IpuEmulation, TheEmulatedBuildRunsTheGemmsOnTheAmp) {
  Patterns p(23);
  for (const GemmFamily family : {GemmFamily::kF32, GemmFamily::kF16,
                                  GemmFamily::kF16ExpandedF143, GemmFamily::kF143}) {
    const GemmFormat f = gemm_format(family);
    SCOPED_TRACE(std::string(f.name));
    const std::uint32_t rows = 13, inner = 3 * f.pass, columns = 64;
    GemmOperands call = zero_gemm(family, GemmVariant::kAccumulate, rows, inner, columns);
    // Finite operands: F143 codes below 0x78 (|x| < 128), f16 and f32 in ±2.
    const auto element = [&](unsigned bytes) -> std::uint32_t {
      if (bytes == 1) return p.below(0x78);
      return bytes == 2 ? p.f16_finite(2.0F) : p.f32_finite(2.0F);
    };
    for (auto& a : call.left) a = element(f.left_bytes);
    for (auto& b : call.weights) b = element(f.weight_bytes);
    for (auto& c : call.partials) c = f.output_bytes == 2 ? p.f16_finite(8.0F) : p.f32_finite(8.0F);
    const std::uint64_t ops = ipu_emulation::amp_ops, loads = ipu_emulation::weight_loads,
                        stores = ipu_emulation::paced_stores;
    expect_device_matches_model(call.kernel(), call.registers(), call.buffers());
    const std::uint64_t steps = (columns / 16) * (inner / f.pass);
    EXPECT_EQ(ipu_emulation::weight_loads - loads, 64 * steps);
    EXPECT_EQ(ipu_emulation::paced_stores - stores, steps * rows * (f.output_bytes == 4 ? 8 : 4));
    EXPECT_GT(ipu_emulation::amp_ops - ops, ipu_emulation::paced_stores - stores);
  }
}

}  // namespace
}  // namespace tessera::kernels::testing
