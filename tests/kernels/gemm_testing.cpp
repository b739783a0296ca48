#include "tests/kernels/gemm_testing.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>

#include "kernels/amp_layout.hpp"
#include "kernels/f143.hpp"
#include "kernels/half.hpp"

namespace tessera::kernels::testing {
namespace {

void put(std::vector<std::uint8_t>& bytes, std::uint64_t element, unsigned size,
         std::uint32_t bits) {
  for (unsigned b = 0; b < size; ++b) {
    bytes.at(element * size + b) = static_cast<std::uint8_t>(bits >> (8 * b));
  }
}

std::uint32_t get(const std::vector<std::uint8_t>& bytes, std::uint64_t element, unsigned size) {
  std::uint32_t bits = 0;
  for (unsigned b = 0; b < size; ++b)
    bits |= std::uint32_t{bytes.at(element * size + b)} << (8 * b);
  return bits;
}

// The CPU reference (gemm_reference). Per output element: start from +0
// (init) or the partial; add the products in K order in f32, one rounding per add (f32
// products rounded first; f16 and F143 products are exact); hiho families
// round the sum to f16 after every pass of 16 (f16) or 32 (F143) and carry
// on from that f16. Any NaN result is the canonical quiet NaN.

bool hiho_family(GemmFamily family) { return family != GemmFamily::kF32; }

float value(GemmFamily family, std::uint32_t bits) {
  switch (family) {
    case GemmFamily::kF32:
      return std::bit_cast<float>(bits);
    case GemmFamily::kF16:
    case GemmFamily::kF16ExpandedF143:
      return f16_to_f32(static_cast<std::uint16_t>(bits));
    case GemmFamily::kF143:
      return f143::decode(static_cast<std::uint8_t>(bits), 0);
  }
  return 0.0F;
}

std::uint32_t weights_address(GemmFamily family) {
  return gemm_format(family).interleaved_weights ? kGemmExpandedWeightsAt : kGemmWeightsAt;
}

}  // namespace

std::string_view GemmOperands::kernel() const {
  const bool init = variant == GemmVariant::kInit;
  switch (family) {
    case GemmFamily::kF32:
      return init ? kGemmF32Init : kGemmF32Accumulate;
    case GemmFamily::kF16:
      return init ? kGemmF16Init : kGemmF16Accumulate;
    case GemmFamily::kF16ExpandedF143:
      return init ? kGemmF16ExpandedF143Init : kGemmF16ExpandedF143Accumulate;
    case GemmFamily::kF143:
      return init ? kGemmF143Init : kGemmF143Accumulate;
  }
  return {};
}

Registers GemmOperands::registers() const {
  Registers r{};
  r[kGemmOutputRegister] = kGemmOutAt;
  r[kGemmLeftRegister] = kGemmLeftAt;
  r[kGemmWeightRegister] = weights_address(family);
  r[kGemmRowsRegister] = rows;
  r[kGemmInnerRegister] = inner;
  r[kGemmColumnsRegister] = columns;
  r[kGemmScaleRegister] = static_cast<std::uint32_t>(scale);
  return r;
}

std::vector<Buffer> GemmOperands::buffers(unsigned short_reg) const {
  const GemmFormat f = gemm_format(family);
  const unsigned m = f.pass;
  std::vector<std::uint8_t> a(std::size_t{rows} * inner * f.left_bytes + f.left_tail_bytes, 0xA5);
  for (std::uint32_t r = 0; r < rows; ++r) {
    for (std::uint32_t k = 0; k < inner; ++k) {
      put(a, amp::left_offset(r, k, rows, m), f.left_bytes, left.at(std::size_t{r} * inner + k));
    }
  }
  std::vector<std::uint8_t> b(std::size_t{inner} * columns * f.weight_bytes);
  for (std::uint32_t k = 0; k < inner; ++k) {
    for (std::uint32_t n = 0; n < columns; ++n) {
      put(b, amp::weight_offset(k, n, inner, m), f.weight_bytes,
          weights.at(std::size_t{k} * columns + n));
    }
  }
  std::vector<std::uint8_t> c;
  if (variant == GemmVariant::kAccumulate) {
    c.resize(std::size_t{rows} * columns * f.output_bytes);
    for (std::uint32_t r = 0; r < rows; ++r) {
      for (std::uint32_t n = 0; n < columns; ++n) {
        put(c, amp::output_offset(r, n, rows), f.output_bytes,
            partials.at(std::size_t{r} * columns + n));
      }
    }
  }
  const auto size = [&](unsigned reg, std::size_t bytes, unsigned shortfall) {
    return static_cast<std::uint32_t>(bytes - (short_reg == reg ? shortfall : 0));
  };
  const std::size_t out_bytes = std::size_t{rows} * columns * f.output_bytes;
  std::vector<Buffer> result = {
      Buffer{"left", kGemmLeftAt, size(kGemmLeftRegister, a.size(), 1), a},
      Buffer{"weights", weights_address(family),
             size(kGemmWeightRegister, b.size(), f.weight_bytes), b},
      Buffer{"output", kGemmOutAt, size(kGemmOutputRegister, out_bytes, f.output_bytes), c}};
  // What lies past a shortened allocation is no longer its bytes.
  for (Buffer& buffer : result) {
    if (buffer.contents.size() > buffer.size) buffer.contents.resize(buffer.size);
  }
  return result;
}

std::vector<std::uint32_t> gemm_reference(const GemmOperands& c) {
  const unsigned pass = c.family == GemmFamily::kF143 ? 32 : 16;
  const float product_scale = std::ldexp(1.0F, c.scale);  // f143 only; exact
  std::vector<std::uint32_t> out(std::size_t{c.rows} * c.columns);
  for (std::uint32_t r = 0; r < c.rows; ++r) {
    for (std::uint32_t n = 0; n < c.columns; ++n) {
      const std::size_t at = std::size_t{r} * c.columns + n;
      const bool init = c.variant == GemmVariant::kInit;
      if (!hiho_family(c.family)) {
        float acc = init ? 0.0F : std::bit_cast<float>(c.partials[at]);
        for (std::uint32_t k = 0; k < c.inner; ++k) {
          const float product = value(c.family, c.left[std::size_t{r} * c.inner + k]) *
                                value(c.family, c.weights[std::size_t{k} * c.columns + n]);
          acc = acc + product;
        }
        out[at] = std::isnan(acc) ? 0x7FC00000u : std::bit_cast<std::uint32_t>(acc);
        continue;
      }
      float acc = init ? 0.0F : f16_to_f32(static_cast<std::uint16_t>(c.partials[at]));
      std::uint16_t partial = 0;
      for (std::uint32_t k0 = 0; k0 < c.inner; k0 += pass) {
        for (std::uint32_t k = k0; k < std::min(k0 + pass, c.inner); ++k) {
          float product = value(c.family, c.left[std::size_t{r} * c.inner + k]) *
                          value(c.family, c.weights[std::size_t{k} * c.columns + n]);
          if (c.family == GemmFamily::kF143) product = product * product_scale;
          acc = acc + product;
        }
        partial = f32_to_f16(acc);
        acc = f16_to_f32(partial);
      }
      out[at] = f16_is_nan(partial) ? 0x7E00u : partial;
    }
  }
  return out;
}


double hiho_bound(std::uint32_t inner, unsigned pass, double sum_of_magnitudes) {
  const double passes = static_cast<double>(inner / pass);
  const double u = std::ldexp(1.0, -11);
  const double d = static_cast<double>(pass) * std::ldexp(1.0, -24);
  const double theta = (1 + u) * (1 + d / (1 - d));
  return (std::pow(theta, passes) - 1) * sum_of_magnitudes +
         passes * std::pow(theta, passes) * std::ldexp(1.0, -25);
}

GemmOperands zero_gemm(GemmFamily family, GemmVariant variant, std::uint32_t rows,
                       std::uint32_t inner, std::uint32_t columns) {
  GemmOperands call;
  call.family = family;
  call.variant = variant;
  call.rows = rows;
  call.inner = inner;
  call.columns = columns;
  call.left.assign(std::size_t{rows} * inner, 0);
  call.weights.assign(std::size_t{inner} * columns, 0);
  if (variant == GemmVariant::kAccumulate) call.partials.assign(std::size_t{rows} * columns, 0);
  return call;
}

std::vector<std::uint32_t> run_gemm(const GemmOperands& call, sim::SimOptions options) {
  KernelRun run(call.kernel(), call.registers(), call.buffers(), options);
  EXPECT_TRUE(run.halted()) << call.kernel() << ": " << run.fault_text();
  const GemmFormat f = gemm_format(call.family);
  const auto bytes =
      run.read(kGemmOutAt,
               static_cast<std::uint32_t>(std::size_t{call.rows} * call.columns * f.output_bytes));
  std::vector<std::uint32_t> out(std::size_t{call.rows} * call.columns);
  for (std::uint32_t r = 0; r < call.rows; ++r) {
    for (std::uint32_t n = 0; n < call.columns; ++n) {
      out[std::size_t{r} * call.columns + n] =
          get(bytes, amp::output_offset(r, n, call.rows), f.output_bytes);
    }
  }
  return out;
}

}  // namespace tessera::kernels::testing
