#include "tests/testing/graph_reference.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <set>
#include <span>

#include <fmt/format.h>

#include "compiler/ir/verifier.hpp"
#include "kernels/amp_layout.hpp"
#include "kernels/f143.hpp"
#include "kernels/float_arith.hpp"
#include "support/error.hpp"
#include "tests/testing/graph_bounds.hpp"

namespace tessera::testing {
namespace {

using compiler::Block;
using compiler::BlockId;
using compiler::DType;
using compiler::Graph;
using compiler::OpKind;
using compiler::Operation;
using compiler::Shape;
using compiler::TensorType;
using compiler::ValueId;

using Bound = ElementBound::Kind;

struct Tensor {
  TensorType type;
  std::vector<std::uint8_t> bytes;
  // A block-scaled value's scales: one kernels::f143::BlockScales (the owner
  // of the 64 × 64 grid) per [K, N] matrix, in row-major order of the leading axes.
  std::vector<kernels::f143::BlockScales> scales;
  // One per element; empty when every element is exact.
  std::vector<ElementBound> bounds;
};

bool all_exact(const Tensor& tensor) {
  return std::all_of(tensor.bounds.begin(), tensor.bounds.end(),
                     [](const ElementBound& b) { return b.kind == Bound::kExact; });
}

std::size_t element_bytes(const TensorType& type) { return schema::dtype_size(type.dtype()); }

// Row-major element strides.
std::vector<std::uint64_t> strides_of(const Shape& shape) {
  std::vector<std::uint64_t> strides(shape.size(), 1);
  for (std::size_t axis = shape.size(); axis-- > 1;) {
    strides[axis - 1] = strides[axis] * shape[axis];
  }
  return strides;
}

// Steps `index` to the next row-major index of `shape`; false after the last.
bool next_index(std::vector<std::uint32_t>& index, const Shape& shape) {
  for (std::size_t axis = shape.size(); axis-- > 0;) {
    if (++index[axis] < shape[axis]) return true;
    index[axis] = 0;
  }
  return false;
}

// Calls visit(index) for every index of `shape` in row-major order (once, with
// the empty index, for a scalar).
template <typename Visit>
void for_each_index(const Shape& shape, Visit visit) {
  std::vector<std::uint32_t> index(shape.size(), 0);
  do {
    visit(index);
  } while (next_index(index, shape));
}

// The element of an input of shape `input` that NumPy broadcasting reads for
// the result index `index` (the input's axes align with the result's last).
std::uint64_t broadcast_source(const Shape& input, const std::vector<std::uint64_t>& strides,
                               const std::vector<std::uint32_t>& index) {
  const std::size_t lead = index.size() - input.size();
  std::uint64_t element = 0;
  for (std::size_t axis = 0; axis < input.size(); ++axis) {
    if (input[axis] != 1) element += index[lead + axis] * strides[axis];
  }
  return element;
}

std::uint32_t load_bits(const Tensor& tensor, std::uint64_t element) {
  const std::size_t size = element_bytes(tensor.type);
  std::uint32_t bits = 0;
  for (std::size_t b = 0; b < size; ++b) {
    bits |= std::uint32_t{tensor.bytes[element * size + b]} << (8 * b);
  }
  return bits;
}

void store_bits(Tensor& tensor, std::uint64_t element, std::uint32_t bits) {
  const std::size_t size = element_bytes(tensor.type);
  for (std::size_t b = 0; b < size; ++b) {
    tensor.bytes[element * size + b] = static_cast<std::uint8_t>(bits >> (8 * b));
  }
}

Tensor empty_tensor(const TensorType& type) {
  return Tensor{type, std::vector<std::uint8_t>(compiler::byte_size(type)), {}, {}};
}

// Data movement: result element at row-major `index` is element `source(index)`
// of `from(index)`, whole bytes copied.
template <typename Source>
Tensor gather(const TensorType& type, Source source) {
  Tensor result = empty_tensor(type);
  const std::size_t size = element_bytes(type);
  std::uint64_t element = 0;
  std::vector<ElementBound> bounds;
  bool bounded = false;
  for_each_index(type.shape, [&](const std::vector<std::uint32_t>& index) {
    const auto [input, input_element] = source(index);
    std::memcpy(&result.bytes[element * size], &input->bytes[input_element * size], size);
    bounds.push_back(input->bounds.empty() ? ElementBound{} : input->bounds[input_element]);
    bounded = bounded || !input->bounds.empty();
    ++element;
  });
  if (bounded) result.bounds = std::move(bounds);
  return result;
}

Tensor slice(const Tensor& input, const compiler::SliceAttributes& slice,
             const TensorType& type) {
  const auto strides = strides_of(input.type.shape);
  return gather(type, [&](const std::vector<std::uint32_t>& index) {
    std::uint64_t element = 0;
    for (std::size_t axis = 0; axis < index.size(); ++axis) {
      element += (slice.begin[axis] + index[axis]) * strides[axis];
    }
    return std::pair{&input, element};
  });
}

Tensor concat(const std::vector<const Tensor*>& inputs, std::uint32_t axis,
              const TensorType& type) {
  std::vector<std::vector<std::uint64_t>> strides;
  for (const Tensor* input : inputs) strides.push_back(strides_of(input->type.shape));
  return gather(type, [&](const std::vector<std::uint32_t>& index) {
    std::uint32_t offset = index[axis];
    std::size_t part = 0;
    while (offset >= inputs[part]->type.shape[axis]) offset -= inputs[part++]->type.shape[axis];
    std::uint64_t element = 0;
    for (std::size_t a = 0; a < index.size(); ++a) {
      element += (a == axis ? offset : index[a]) * strides[part][a];
    }
    return std::pair{inputs[part], element};
  });
}

Tensor transpose(const Tensor& input, const std::vector<std::uint32_t>& permutation,
                 const TensorType& type) {
  const auto strides = strides_of(input.type.shape);
  return gather(type, [&](const std::vector<std::uint32_t>& index) {
    // Result axis i is input axis permutation[i].
    std::uint64_t element = 0;
    for (std::size_t i = 0; i < index.size(); ++i) element += index[i] * strides[permutation[i]];
    return std::pair{&input, element};
  });
}

Tensor broadcast_to(const Tensor& input, const TensorType& type) {
  const auto strides = strides_of(input.type.shape);
  return gather(type, [&](const std::vector<std::uint32_t>& index) {
    return std::pair{&input, broadcast_source(input.type.shape, strides, index)};
  });
}

template <typename E>
Tensor add(const Tensor& a, const Tensor& b, const TensorType& type) {
  Tensor result = empty_tensor(type);
  const auto a_strides = strides_of(a.type.shape);
  const auto b_strides = strides_of(b.type.shape);
  std::uint64_t element = 0;
  for_each_index(type.shape, [&](const std::vector<std::uint32_t>& index) {
    const std::uint32_t x = load_bits(a, broadcast_source(a.type.shape, a_strides, index));
    const std::uint32_t y = load_bits(b, broadcast_source(b.type.shape, b_strides, index));
    using Bits = typename E::Bits;
    store_bits(result, element++, E::add(static_cast<Bits>(x), static_cast<Bits>(y)));
  });
  return result;
}

// tessera_sum's arithmetic (kernels/reduction.cpp): widen, accumulate in f32
// from the first element, narrow once.
template <typename E>
Tensor reduce_sum(const Tensor& input, const std::vector<std::uint32_t>& axes,
                  const TensorType& type) {
  const Shape& shape = input.type.shape;
  const auto strides = strides_of(shape);
  Shape kept_shape, reduced_shape;
  std::vector<std::uint64_t> kept_strides, reduced_strides;
  for (std::uint32_t axis = 0; axis < shape.size(); ++axis) {
    const bool reduced = std::binary_search(axes.begin(), axes.end(), axis);
    (reduced ? reduced_shape : kept_shape).push_back(shape[axis]);
    (reduced ? reduced_strides : kept_strides).push_back(strides[axis]);
  }
  Tensor result = empty_tensor(type);
  std::uint64_t element = 0;
  // Kept indices in row-major order are the result's order, keep_dims or not.
  for_each_index(kept_shape, [&](const std::vector<std::uint32_t>& kept) {
    std::uint64_t base = 0;
    for (std::size_t i = 0; i < kept.size(); ++i) base += kept[i] * kept_strides[i];
    std::optional<std::uint32_t> accumulator;
    for_each_index(reduced_shape, [&](const std::vector<std::uint32_t>& reduced) {
      std::uint64_t source = base;
      for (std::size_t i = 0; i < reduced.size(); ++i) source += reduced[i] * reduced_strides[i];
      const std::uint32_t value =
          E::widen(static_cast<typename E::Bits>(load_bits(input, source)));
      accumulator = accumulator ? kernels::add_f32_bits(*accumulator, value) : value;
    });
    store_bits(result, element++, E::narrow(*accumulator));
  });
  return result;
}

// ---- Issue 18's operations -------------------------------------------------------

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// `value` (finite) rounded to f32 to odd: toward zero, with the last bit set
// when anything was dropped. Rounding that to f16 to nearest even gives the f16
// nearest to `value` itself (24 ≥ 11 + 2 bits), so kernels/half.hpp stays the
// one rounding to f16, and no double rounding creeps in.
float f32_rounded_to_odd(double value) {
  float f = static_cast<float>(value);
  if (static_cast<double>(f) == value || std::isinf(f)) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(value)) f = std::nextafter(f, 0.0f);
  return std::bit_cast<float>(std::bit_cast<std::uint32_t>(f) | 1u);
}

std::uint16_t f16_from_double(double value) {
  if (std::isnan(value)) return kernels::kF16QuietNan;
  return kernels::f32_to_f16(f32_rounded_to_odd(value));
}

// The nearest value of `dtype` (f16 or f32) to `value`, as element bits.
std::uint32_t float_bits_from_double(DType dtype, double value) {
  if (dtype == DType::kF16) return f16_from_double(value);
  if (std::isnan(value)) return kernels::kF32QuietNan;
  return std::bit_cast<std::uint32_t>(static_cast<float>(value));  // IEEE: rounded once
}

// An element's value as f32 bits, for the float and F143 dtypes: f32 as is,
// f16 widened exactly, F143 decoded at its scale (the block's for a
// block-scaled value of [..., K, N]).
std::uint32_t f32_bits_of(const Tensor& tensor, std::uint64_t element) {
  const std::uint32_t bits = load_bits(tensor, element);
  switch (tensor.type.dtype()) {
    case DType::kF32:
      return bits;
    case DType::kF16:
      return kernels::f16_to_f32_bits(static_cast<std::uint16_t>(bits));
    case DType::kF8F143: {
      int scale = tensor.type.element.scale;
      if (tensor.type.element.block_scaled()) {
        const Shape& shape = tensor.type.shape;
        const std::uint64_t k = shape[shape.size() - 2], n = shape[shape.size() - 1];
        const auto row = static_cast<std::uint32_t>(element / n % k);
        const auto column = static_cast<std::uint32_t>(element % n);
        scale = tensor.scales[element / (k * n)].scale_at(row, column);
      }
      return std::bit_cast<std::uint32_t>(
          kernels::f143::decode(static_cast<std::uint8_t>(bits), scale));
    }
    default:
      throw Error(fmt::format("{} has no float value", compiler::format_type(tensor.type)));
  }
}

// The exact operand values a plan-dependent op works on: f32 and f16 as they
// are, F143 as its f16 expansion (convert's rule: the decoded f32 rounded once).
std::vector<double> operand_values(const Tensor& tensor) {
  const std::uint64_t count = compiler::element_count(tensor.type.shape);
  std::vector<double> values(count);
  for (std::uint64_t e = 0; e < count; ++e) {
    const std::uint32_t f32 = f32_bits_of(tensor, e);
    values[e] = static_cast<double>(tensor.type.dtype() == DType::kF8F143
                                        ? kernels::f16_to_f32(kernels::f32_bits_to_f16(f32))
                                        : std::bit_cast<float>(f32));
  }
  return values;
}

template <typename Combine>
Tensor elementwise(const Tensor& a, const Tensor& b, const TensorType& type, Combine combine) {
  Tensor result = empty_tensor(type);
  const auto a_strides = strides_of(a.type.shape);
  const auto b_strides = strides_of(b.type.shape);
  std::uint64_t element = 0;
  for_each_index(type.shape, [&](const std::vector<std::uint32_t>& index) {
    const std::uint32_t x = load_bits(a, broadcast_source(a.type.shape, a_strides, index));
    const std::uint32_t y = load_bits(b, broadcast_source(b.type.shape, b_strides, index));
    store_bits(result, element++, combine(x, y));
  });
  return result;
}

Tensor mul(const Tensor& a, const Tensor& b, const TensorType& type) {
  if (type.dtype() == DType::kF16) {
    return elementwise(a, b, type, [](std::uint32_t x, std::uint32_t y) -> std::uint32_t {
      return kernels::mul_f16_bits(static_cast<std::uint16_t>(x), static_cast<std::uint16_t>(y));
    });
  }
  return elementwise(a, b, type, kernels::mul_f32_bits);
}

Tensor convert(const Tensor& input, const TensorType& type) {
  Tensor result = empty_tensor(type);
  const std::uint64_t count = compiler::element_count(type.shape);
  for (std::uint64_t e = 0; e < count; ++e) {
    const std::uint32_t f32 = f32_bits_of(input, e);
    switch (type.dtype()) {
      case DType::kF32:
        store_bits(result, e, f32);
        break;
      case DType::kF16:
        store_bits(result, e, kernels::f32_bits_to_f16(f32));
        break;
      default:  // f8f143 at a tensor-wide scale: the codec's rounding
        store_bits(result, e, kernels::f143::encode(std::bit_cast<float>(f32), type.element.scale));
        break;
    }
  }
  // An f16 → f32 convert is exact, so its input's bounds hold for its result.
  if (input.type.dtype() == DType::kF16 && type.dtype() == DType::kF32) {
    result.bounds = input.bounds;
  }
  return result;
}

// Panel codes (BlockScaleAttributes::panels = m) as the row-major [..., K, N]
// codes they pack: logical (k, n) is at kernels::amp::weight_offset(k, n, K
// padded to m, m) of its matrix's panels. A padding code other than 0 is
// refused, as an out-of-range scale is: the device multiplies K padding.
std::vector<std::uint8_t> unpanel(const Tensor& codes, const compiler::BlockScaleAttributes& packing) {
  const std::uint32_t m = packing.panels, k = packing.matrix[0], n = packing.matrix[1];
  const std::uint64_t inner = kernels::amp::padded_inner(k, m);
  const std::uint64_t per_panels = kernels::amp::padded_columns(n) * inner;
  const std::uint64_t matrices = codes.bytes.size() / per_panels;
  std::vector<std::uint8_t> row_major(matrices * k * n);
  std::vector<bool> used(per_panels);
  for (std::uint64_t p = 0; p < matrices; ++p) {
    for (std::uint32_t r = 0; r < k; ++r) {
      for (std::uint32_t c = 0; c < n; ++c) {
        const std::uint64_t at = kernels::amp::weight_offset(r, c, inner, m);
        row_major[(p * k + r) * n + c] = codes.bytes[p * per_panels + at];
        if (p == 0) used[at] = true;
      }
    }
    for (std::uint64_t at = 0; at < per_panels; ++at) {
      if (!used[at] && codes.bytes[p * per_panels + at] != 0) {
        throw UsageError(fmt::format("panel codes element {} is padding of a [{}, {}] matrix but {:#04x}, not 0",
                                     p * per_panels + at, k, n, codes.bytes[p * per_panels + at]));
      }
    }
  }
  return row_major;
}

Tensor block_scale(const Tensor& codes, const Tensor& scales, const TensorType& type,
                   const compiler::BlockScaleAttributes& packing) {
  Tensor result{type, packing.panels == 0 ? codes.bytes : unpanel(codes, packing), {}, {}};
  const Shape& shape = type.shape;
  const std::uint32_t k = shape[shape.size() - 2], n = shape[shape.size() - 1];
  const std::uint64_t count = compiler::element_count(scales.type.shape);
  const std::uint64_t matrices = compiler::element_count(shape) / (std::uint64_t{k} * n);
  const std::uint64_t per_matrix = count / matrices;
  std::vector<std::int8_t> matrix;
  for (std::uint64_t e = 0; e < count; ++e) {
    const auto scale = static_cast<std::int32_t>(load_bits(scales, e));
    if (!kernels::f143::valid_scale(scale)) {
      throw UsageError(fmt::format("scales element {} is {}, outside the F143 scale range [{}, {}]",
                                   e, scale, kernels::f143::kMinScale, kernels::f143::kMaxScale));
    }
    matrix.push_back(static_cast<std::int8_t>(scale));
    if (matrix.size() == per_matrix) {
      result.scales.emplace_back(k, n, std::move(matrix));
      matrix.clear();
    }
  }
  return result;
}

// An element of a plan-dependent op: the reference value rounded to the
// dtype, and its bound. `nan` when the element depends on a NaN input (every
// plan propagates it), `infinite` when on an infinity (not bounded).
void store_bounded(Tensor& result, std::uint64_t element, double value, double device_bound,
                   bool nan, bool infinite) {
  const DType dtype = result.type.dtype();
  const std::uint32_t bits = float_bits_from_double(dtype, value);
  store_bits(result, element, bits);
  if (result.bounds.empty()) {
    result.bounds.resize(compiler::element_count(result.type.shape));
  }
  ElementBound& bound = result.bounds[element];
  if (nan) {
    bound = {Bound::kNan, 0};
  } else if (infinite || !std::isfinite(device_bound)) {
    bound = {Bound::kUnconstrained, 0};
  } else {
    const bounds::Precision p = bounds::precision_of(dtype);
    const double reference = dtype == DType::kF16
                                 ? kernels::f16_to_f32(static_cast<std::uint16_t>(bits))
                                 : std::bit_cast<float>(bits);
    bound = {Bound::kWithin,
             device_bound * (1 + 0x1p-20) + p.u * std::fabs(reference) + p.eta};
  }
}

// f16-product sums are computed exactly: every finite f16 is an integer
// times 2^-24 (below 2^40), so each product is an integer (< 2^80) times 2^-48
// and K of them fit 128 bits. The sum becomes a double rounded to odd (exact
// up to 2^53, else its top 53 bits with the dropped ones as a sticky last
// bit), whose f16 rounding is the f16 nearest to the exact sum.
__extension__ typedef __int128 Int128;
__extension__ typedef unsigned __int128 UInt128;

double odd_double_of(Int128 sum, int exponent) {
  const auto magnitude = static_cast<UInt128>(sum < 0 ? -sum : sum);
  int bits = 0;
  for (UInt128 m = magnitude; m != 0; m >>= 1) ++bits;
  const int shift = std::max(bits - 53, 0);
  UInt128 top = magnitude >> shift;
  if ((top << shift) != magnitude) top |= 1;
  const double value = std::ldexp(static_cast<double>(top), shift + exponent);
  return sum < 0 ? -value : value;
}

// One matrix of a matmul operand, rows of `length` contiguous (b transposed
// so that its columns are), with which rows hold a NaN or an infinity.
struct MatmulRows {
  std::vector<double> values;
  std::vector<std::int64_t> units;  // values·2^24, for finite f16 values
  std::vector<bool> nan, infinite;
};

MatmulRows matmul_rows(const std::vector<double>& all, std::uint64_t base, std::uint64_t rows,
                       std::uint64_t length, std::uint64_t row_stride, std::uint64_t step,
                       bool f16) {
  MatmulRows out;
  out.values.resize(rows * length);
  out.nan.assign(rows, false);
  out.infinite.assign(rows, false);
  for (std::uint64_t r = 0; r < rows; ++r) {
    for (std::uint64_t t = 0; t < length; ++t) {
      const double v = all[base + r * row_stride + t * step];
      out.values[r * length + t] = v;
      out.nan[r] = out.nan[r] || std::isnan(v);
      out.infinite[r] = out.infinite[r] || std::isinf(v);
    }
  }
  if (f16) {
    out.units.resize(out.values.size());
    for (std::size_t e = 0; e < out.values.size(); ++e) {
      out.units[e] = std::isfinite(out.values[e])
                         ? static_cast<std::int64_t>(std::ldexp(out.values[e], 24))
                         : 0;
    }
  }
  return out;
}

Tensor matmul(const Tensor& a, const Tensor& b, const TensorType& type) {
  const Shape& sa = a.type.shape;
  const Shape& sb = b.type.shape;
  const std::uint64_t m = sa[sa.size() - 2], k = sa[sa.size() - 1], n = sb[sb.size() - 1];
  const Shape lead_a(sa.begin(), sa.end() - 2), lead_b(sb.begin(), sb.end() - 2);
  const Shape lead(type.shape.begin(), type.shape.end() - 2);
  const auto strides_a = strides_of(lead_a), strides_b = strides_of(lead_b);
  const std::vector<double> x = operand_values(a), y = operand_values(b);
  const DType dtype = type.dtype();
  const bool f16 = dtype == DType::kF16;
  Tensor result = empty_tensor(type);
  std::uint64_t element = 0;
  for_each_index(lead, [&](const std::vector<std::uint32_t>& index) {
    const MatmulRows rows = matmul_rows(x, broadcast_source(lead_a, strides_a, index) * m * k, m,
                                        k, k, 1, f16);
    const MatmulRows columns = matmul_rows(y, broadcast_source(lead_b, strides_b, index) * k * n,
                                           n, k, 1, n, f16);
    for (std::uint64_t i = 0; i < m; ++i) {
      for (std::uint64_t j = 0; j < n; ++j) {
        const bool nan = rows.nan[i] || columns.nan[j];
        const bool infinite = rows.infinite[i] || columns.infinite[j];
        double sum = 0, magnitude = 0;
        if (f16 && !nan && !infinite) {
          const std::int64_t* p = &rows.units[i * k];
          const std::int64_t* q = &columns.units[j * k];
          Int128 exact = 0, absolute = 0;
          for (std::uint64_t t = 0; t < k; ++t) {
            const Int128 product = static_cast<Int128>(p[t]) * q[t];
            exact += product;
            absolute += product < 0 ? -product : product;
          }
          sum = odd_double_of(exact, -48);
          magnitude = odd_double_of(absolute, -48);
        } else {
          const double* p = &rows.values[i * k];
          const double* q = &columns.values[j * k];
          for (std::uint64_t t = 0; t < k; ++t) {
            sum += p[t] * q[t];
            magnitude += std::fabs(p[t] * q[t]);
          }
        }
        store_bounded(result, element++, sum, bounds::matmul_error_bound(dtype, k, magnitude), nan,
                      infinite);
      }
    }
  });
  return result;
}

double gelu_value(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

Tensor gelu(const Tensor& input, const TensorType& type) {
  const std::vector<double> x = operand_values(input);
  Tensor result = empty_tensor(type);
  for (std::uint64_t e = 0; e < x.size(); ++e) {
    const bool infinite = std::isinf(x[e]);
    store_bounded(result, e, gelu_value(x[e]),
                  infinite ? 0 : bounds::gelu_error_bound(type.dtype(), x[e]), std::isnan(x[e]),
                  infinite);
  }
  return result;
}

// What a row of inputs holds: a NaN, an infinity.
struct RowFacts {
  bool nan = false;
  bool infinite = false;
};

RowFacts facts_of(std::span<const double> values) {
  RowFacts facts;
  for (const double v : values) {
    facts.nan = facts.nan || std::isnan(v);
    facts.infinite = facts.infinite || std::isinf(v);
  }
  return facts;
}

// softmax of finite x in f64: exp(x − max) / Σ.
std::vector<double> softmax_row(std::span<const double> x) {
  const double m = *std::max_element(x.begin(), x.end());
  std::vector<double> y(x.size());
  double sum = 0;
  for (std::size_t j = 0; j < x.size(); ++j) sum += y[j] = std::exp(x[j] - m);
  for (double& v : y) v /= sum;
  return y;
}

Tensor softmax(const Tensor& input, const TensorType& type) {
  const std::vector<double> x = operand_values(input);
  const std::size_t n = type.shape.back();
  Tensor result = empty_tensor(type);
  std::vector<double> bound(n);
  for (std::size_t row = 0; row < x.size() / n; ++row) {
    const std::span<const double> values(&x[row * n], n);
    const RowFacts facts = facts_of(values);
    std::vector<double> y(n, kNan);
    if (!facts.nan && !facts.infinite) {
      y = softmax_row(values);
      bounds::softmax_error_bounds(type.dtype(), values, {}, bound);
    }
    for (std::size_t j = 0; j < n; ++j) {
      store_bounded(result, row * n + j, y[j], bound[j], facts.nan, facts.infinite);
    }
  }
  return result;
}

Tensor layer_norm(const Tensor& input, const Tensor& gamma_tensor, const Tensor& beta_tensor,
                  double epsilon, const TensorType& type) {
  const std::vector<double> x = operand_values(input);
  const std::vector<double> gamma = operand_values(gamma_tensor);
  const std::vector<double> beta = operand_values(beta_tensor);
  const std::size_t c = type.shape.back();
  Tensor result = empty_tensor(type);
  std::vector<double> bound(c);
  for (std::size_t row = 0; row < x.size() / c; ++row) {
    const std::span<const double> values(&x[row * c], c);
    const RowFacts facts = facts_of(values);
    double mean = 0, variance = 0;
    for (const double v : values) mean += v;
    mean /= static_cast<double>(c);
    for (const double v : values) variance += (v - mean) * (v - mean);
    variance /= static_cast<double>(c);
    const double rstd = 1 / std::sqrt(variance + epsilon);
    const RowFacts affine = facts_of(gamma), shift = facts_of(beta);
    if (!facts.nan && !facts.infinite && !affine.infinite && !shift.infinite) {
      bounds::layer_norm_error_bounds(type.dtype(), values, gamma, beta, epsilon, bound);
    }
    for (std::size_t i = 0; i < c; ++i) {
      const double y = (values[i] - mean) * rstd * gamma[i] + beta[i];
      const bool nan = facts.nan || std::isnan(gamma[i]) || std::isnan(beta[i]);
      const bool infinite = facts.infinite || affine.infinite || shift.infinite;
      store_bounded(result, row * c + i, y, bound[i], nan, infinite);
    }
  }
  return result;
}

Tensor attention(const Tensor& q_tensor, const Tensor& k_tensor, const Tensor& v_tensor,
                 double scale, const TensorType& type) {
  const std::vector<double> q = operand_values(q_tensor);
  const std::vector<double> k = operand_values(k_tensor);
  const std::vector<double> v = operand_values(v_tensor);
  const std::uint64_t heads = std::uint64_t{type.shape[0]} * type.shape[1];
  const std::uint64_t queries = type.shape[2], depth = type.shape[3];
  const std::uint64_t keys = k_tensor.type.shape[2];
  Tensor result = empty_tensor(type);
  std::vector<double> bound(depth), scores(keys);
  for (std::uint64_t h = 0; h < heads; ++h) {
    const std::span<const double> kh(&k[h * keys * depth], keys * depth);
    const std::span<const double> vh(&v[h * keys * depth], keys * depth);
    const RowFacts key_facts = facts_of(kh), value_facts = facts_of(vh);
    for (std::uint64_t i = 0; i < queries; ++i) {
      const std::span<const double> qi(&q[(h * queries + i) * depth], depth);
      const RowFacts query_facts = facts_of(qi);
      const bool all_nan = query_facts.nan || key_facts.nan;
      const bool infinite = query_facts.infinite || key_facts.infinite || value_facts.infinite;
      std::vector<double> probability(keys, kNan);
      if (!all_nan && !infinite) {
        for (std::uint64_t j = 0; j < keys; ++j) {
          double dot = 0;
          for (std::uint64_t d = 0; d < depth; ++d) dot += qi[d] * kh[j * depth + d];
          scores[j] = scale * dot;
        }
        probability = softmax_row(scores);
        if (!value_facts.nan) {
          bounds::attention_error_bounds(type.dtype(), qi, kh, vh, static_cast<std::uint32_t>(keys),
                                         scale, bound);
        }
      }
      for (std::uint64_t d = 0; d < depth; ++d) {
        double out = 0;
        bool nan = all_nan;
        for (std::uint64_t j = 0; j < keys; ++j) {
          out += probability[j] * vh[j * depth + d];
          nan = nan || std::isnan(vh[j * depth + d]);
        }
        // A NaN value in another column leaves this one alone, but the bound
        // was not computed: not bounded.
        const bool unbounded = infinite || (value_facts.nan && !nan);
        store_bounded(result, (h * queries + i) * depth + d, out, bound[d], nan, unbounded);
      }
    }
  }
  return result;
}

// Entry `iteration` of a sequence value (axis 0), with its block scales.
template <typename T>
std::vector<T> entry_of(const std::vector<T>& all, std::size_t entries, std::uint32_t iteration) {
  const std::size_t size = all.size() / entries;
  const auto begin = all.begin() + static_cast<std::ptrdiff_t>(iteration * size);
  return std::vector<T>(begin, begin + static_cast<std::ptrdiff_t>(size));
}

Tensor sequence_entry(const Tensor& sequence, const TensorType& type, std::uint32_t iteration) {
  const std::size_t entries = sequence.type.shape[0];
  Tensor entry{type, entry_of(sequence.bytes, entries, iteration), {}, {}};
  if (!sequence.scales.empty()) entry.scales = entry_of(sequence.scales, entries, iteration);
  if (!sequence.bounds.empty()) entry.bounds = entry_of(sequence.bounds, entries, iteration);
  return entry;
}

// ---- Bounds through add, mul and the f32 → f16 convert ------------------------------
//
// A bounded input element (device within E of the reference value r) gives a
// bounded result: with s the reference result before its rounding and s' the
// device's, |fl(s') − fl(s)| ≤ |s' − s| + u·(|s| + |s'|) + 2·eta, where
//   add      |s' − s| ≤ E_a + E_b,
//   mul      |s' − s| ≤ E_a·|b| + E_b·|a| + E_a·E_b,
//   convert  |s' − s| ≤ E (to f16; the input f32).

ElementBound bound_at(const Tensor& tensor, std::uint64_t element) {
  return tensor.bounds.empty() ? ElementBound{} : tensor.bounds[element];
}

double float_value(const Tensor& tensor, std::uint64_t element) {
  return static_cast<double>(std::bit_cast<float>(f32_bits_of(tensor, element)));
}

// The result element's bound from its inputs' bounds and |s' − s| ≤ spread.
ElementBound propagated(std::span<const ElementBound> inputs, DType dtype, double exact_result,
                        double spread) {
  bool exact = true;
  for (const ElementBound& input : inputs) {
    if (input.kind == Bound::kNan) return {Bound::kNan, 0};
  }
  for (const ElementBound& input : inputs) {
    if (input.kind == Bound::kUnconstrained) return {Bound::kUnconstrained, 0};
    exact = exact && input.kind == Bound::kExact;
  }
  if (exact) return {};
  const bounds::Precision p = bounds::precision_of(dtype);
  const double magnitude = std::fabs(exact_result);
  const double error = spread + p.u * (2 * magnitude + spread) + 2 * p.eta;
  if (!std::isfinite(error) || magnitude + error > p.max_finite) return {Bound::kUnconstrained, 0};
  return {Bound::kWithin, error * (1 + 0x1p-40)};
}

// add or mul of a and b into `result` (their broadcast shape).
std::vector<ElementBound> elementwise_bounds(const Tensor& a, const Tensor& b, const Tensor& result,
                                             bool product) {
  std::vector<ElementBound> out;
  const auto a_strides = strides_of(a.type.shape);
  const auto b_strides = strides_of(b.type.shape);
  for_each_index(result.type.shape, [&](const std::vector<std::uint32_t>& index) {
    const std::uint64_t i = broadcast_source(a.type.shape, a_strides, index);
    const std::uint64_t j = broadcast_source(b.type.shape, b_strides, index);
    const ElementBound inputs[] = {bound_at(a, i), bound_at(b, j)};
    const double x = float_value(a, i), y = float_value(b, j);
    const double ex = inputs[0].max_error, ey = inputs[1].max_error;
    out.push_back(product
                      ? propagated(inputs, result.type.dtype(), x * y,
                                   ex * std::fabs(y) + ey * std::fabs(x) + ex * ey)
                      : propagated(inputs, result.type.dtype(), x + y, ex + ey));
  });
  return out;
}

class Evaluator {
 public:
  Evaluator(const Graph& graph, const TensorBytes& bindings)
      : graph_(graph), bindings_(bindings), values_(graph.value_count()) {}

  ReferenceResult run() {
    check_binding_names();
    evaluate_block(compiler::kTopBlock);
    return std::move(result_);
  }

 private:
  void check_binding_names() const {
    std::set<std::string> declared;
    for (const OpKind kind : {OpKind::kHostInput, OpKind::kParameter}) {
      for (const compiler::OpId id : graph_.top_level(kind)) {
        declared.insert(std::get<compiler::BindingAttributes>(graph_.operation(id).attributes).name);
      }
    }
    for (const auto& [name, bytes] : bindings_) {
      if (!declared.contains(name)) {
        throw UsageError(fmt::format("binding \"{}\" names no host input or parameter of the graph",
                                     name));
      }
    }
  }

  const Tensor& input(const Operation& op, std::size_t i) const { return *values_[op.inputs[i].index]; }

  void evaluate_block(BlockId id) {
    for (const compiler::OpId op_id : graph_.block(id).operations) {
      try {
        evaluate(graph_.operation(op_id));
      } catch (Error& error) {
        error.add_context(fmt::format("evaluating {}", graph_.describe(op_id)));
        throw;
      }
    }
  }

  void evaluate(const Operation& op) {
    const TensorType* type = op.results.empty() ? nullptr : &graph_.type(op.results[0]);
    switch (op.kind) {
      case OpKind::kHostInput:
      case OpKind::kParameter:
        return define(op, bound(std::get<compiler::BindingAttributes>(op.attributes)));
      case OpKind::kHostOutput: {
        const std::string& name = std::get<compiler::BindingAttributes>(op.attributes).name;
        const Tensor& value = input(op, 0);
        result_.outputs[name] = value.bytes;
        result_.bounds[name] = value.bounds.empty()
                                   ? std::vector<ElementBound>(
                                         compiler::element_count(value.type.shape))
                                   : value.bounds;
        return;
      }
      case OpKind::kCopy:
        return define(op, input(op, 0));
      case OpKind::kReshape:
        return define(op, Tensor{*type, input(op, 0).bytes, {}, input(op, 0).bounds});
      case OpKind::kSlice:
        return define(op, slice(input(op, 0), std::get<compiler::SliceAttributes>(op.attributes),
                                *type));
      case OpKind::kConcat: {
        std::vector<const Tensor*> inputs;
        for (std::size_t i = 0; i < op.inputs.size(); ++i) inputs.push_back(&input(op, i));
        return define(op, concat(inputs, std::get<compiler::ConcatAttributes>(op.attributes).axis,
                                 *type));
      }
      case OpKind::kTranspose:
        return define(op, transpose(input(op, 0),
                                    std::get<compiler::TransposeAttributes>(op.attributes).permutation,
                                    *type));
      case OpKind::kBroadcastTo:
        return define(op, broadcast_to(input(op, 0), *type));
      case OpKind::kAdd:
        return define_computed(op, type->dtype() == DType::kF16
                              ? add<kernels::F16Element>(input(op, 0), input(op, 1), *type)
                              : add<kernels::F32Element>(input(op, 0), input(op, 1), *type));
      case OpKind::kReduceSum: {
        const auto& axes = std::get<compiler::ReduceAttributes>(op.attributes).axes;
        return define_computed(op, type->dtype() == DType::kF16
                              ? reduce_sum<kernels::F16Element>(input(op, 0), axes, *type)
                              : reduce_sum<kernels::F32Element>(input(op, 0), axes, *type));
      }
      case OpKind::kRepeat:
        return repeat(op);
      case OpKind::kMul:
        return define_computed(op, mul(input(op, 0), input(op, 1), *type));
      case OpKind::kConvert: {
        Tensor result = convert(input(op, 0), *type);
        if (!result.bounds.empty()) return define(op, std::move(result));  // exact widening
        return define_computed(op, std::move(result));
      }
      case OpKind::kBlockScale:
        return define_computed(op, block_scale(input(op, 0), input(op, 1), *type,
                                               std::get<compiler::BlockScaleAttributes>(op.attributes)));
      case OpKind::kMatmul:
        return define_computed(op, matmul(input(op, 0), input(op, 1), *type));
      case OpKind::kGelu:
        return define_computed(op, gelu(input(op, 0), *type));
      case OpKind::kSoftmax:
        return define_computed(op, softmax(input(op, 0), *type));
      case OpKind::kLayerNorm:
        return define_computed(
            op, layer_norm(input(op, 0), input(op, 1), input(op, 2),
                           std::get<compiler::LayerNormAttributes>(op.attributes).epsilon, *type));
      case OpKind::kAttention:
        return define_computed(
            op, attention(input(op, 0), input(op, 1), input(op, 2),
                          std::get<compiler::AttentionAttributes>(op.attributes).scale, *type));
    }
    throw Error(fmt::format("unknown operation kind {}", static_cast<unsigned>(op.kind)));
  }

  void define(const Operation& op, Tensor tensor) { values_[op.results[0].index] = std::move(tensor); }

  // A computed (not moved) result: its elements' bounds are its op's own
  // when every input is exact; add, mul and an f32 → f16 convert carry their
  // inputs' bounds through (see propagated); any other op of a bounded input
  // is not bounded.
  void define_computed(const Operation& op, Tensor tensor) {
    bool inputs_exact = true;
    for (std::size_t i = 0; i < op.inputs.size(); ++i) {
      inputs_exact = inputs_exact && all_exact(input(op, i));
    }
    if (inputs_exact) return define(op, std::move(tensor));
    const std::uint64_t count = compiler::element_count(tensor.type.shape);
    if (op.kind == OpKind::kAdd || op.kind == OpKind::kMul) {
      tensor.bounds =
          elementwise_bounds(input(op, 0), input(op, 1), tensor, op.kind == OpKind::kMul);
    } else if (op.kind == OpKind::kConvert && tensor.type.dtype() == DType::kF16 &&
               input(op, 0).type.dtype() == DType::kF32) {
      tensor.bounds.clear();
      for (std::uint64_t e = 0; e < count; ++e) {
        const ElementBound source = bound_at(input(op, 0), e);
        tensor.bounds.push_back(propagated({&source, 1}, DType::kF16, float_value(input(op, 0), e),
                                           source.max_error));
      }
    } else {
      tensor.bounds.assign(count, ElementBound{Bound::kUnconstrained, 0});
    }
    define(op, std::move(tensor));
  }

  Tensor bound(const compiler::BindingAttributes& binding) const {
    const auto found = bindings_.find(binding.name);
    const std::uint64_t size = compiler::byte_size(binding.type);
    if (found == bindings_.end()) {
      throw UsageError(fmt::format("binding \"{}\" ({}, {} bytes) is missing", binding.name,
                                   compiler::format_type(binding.type), size));
    }
    if (found->second.size() != size) {
      throw UsageError(fmt::format("binding \"{}\" ({}) has {} bytes, not {}", binding.name,
                                   compiler::format_type(binding.type), found->second.size(),
                                   size));
    }
    return Tensor{binding.type, found->second, {}, {}};
  }

  void repeat(const Operation& op) {
    const auto& attributes = std::get<compiler::RepeatAttributes>(op.attributes);
    const Block& body = graph_.block(attributes.body);
    std::vector<Tensor> carried;
    for (std::size_t i = 0; i < attributes.carried; ++i) carried.push_back(input(op, i));
    const std::size_t sequences_end = attributes.carried + attributes.sequence;
    for (std::size_t i = sequences_end; i < op.inputs.size(); ++i) {
      values_[body.arguments[i].index] = input(op, i);
    }
    for (std::uint32_t iteration = 0; iteration < attributes.count; ++iteration) {
      for (std::size_t i = 0; i < carried.size(); ++i) {
        values_[body.arguments[i].index] = std::move(carried[i]);
      }
      for (std::size_t i = attributes.carried; i < sequences_end; ++i) {
        const ValueId argument = body.arguments[i];
        values_[argument.index] = sequence_entry(input(op, i), graph_.type(argument), iteration);
      }
      evaluate_block(attributes.body);
      for (std::size_t i = 0; i < carried.size(); ++i) carried[i] = *values_[body.yields[i].index];
    }
    for (std::size_t i = 0; i < carried.size(); ++i) {
      values_[op.results[i].index] = std::move(carried[i]);
    }
  }

  const Graph& graph_;
  const TensorBytes& bindings_;
  std::vector<std::optional<Tensor>> values_;  // by value id
  ReferenceResult result_;
};

}  // namespace

TensorBytes evaluate_graph(const compiler::Graph& graph, const TensorBytes& bindings) {
  return evaluate_graph_with_bounds(graph, bindings).outputs;
}

ReferenceResult evaluate_graph_with_bounds(const compiler::Graph& graph,
                                           const TensorBytes& bindings) {
  compiler::verify(graph);
  return Evaluator(graph, bindings).run();
}

std::optional<std::string> check_within_bounds(const compiler::TensorType& type,
                                               const std::vector<std::uint8_t>& device,
                                               const std::vector<std::uint8_t>& reference,
                                               const std::vector<ElementBound>& bounds) {
  const std::uint64_t count = compiler::element_count(type.shape);
  const std::size_t size = schema::dtype_size(type.dtype());
  if (device.size() != count * size || reference.size() != count * size ||
      bounds.size() != count) {
    return fmt::format("sizes differ: {} device bytes, {} reference bytes, {} bounds for {}",
                       device.size(), reference.size(), bounds.size(), compiler::format_type(type));
  }
  const Tensor d{type, device, {}, {}}, r{type, reference, {}, {}};
  const auto value = [&](const Tensor& t, std::uint64_t e) {
    const std::uint32_t bits = load_bits(t, e);
    return type.dtype() == DType::kF16
               ? static_cast<double>(kernels::f16_to_f32(static_cast<std::uint16_t>(bits)))
               : static_cast<double>(std::bit_cast<float>(bits));
  };
  for (std::uint64_t e = 0; e < count; ++e) {
    const ElementBound& bound = bounds[e];
    const std::uint32_t device_bits = load_bits(d, e), reference_bits = load_bits(r, e);
    switch (bound.kind) {
      case Bound::kExact:
        if (device_bits != reference_bits) {
          return fmt::format("element {}: bits {:#x}, reference {:#x} (exact)", e, device_bits,
                             reference_bits);
        }
        break;
      case Bound::kNan:
        if (!std::isnan(value(d, e))) {
          return fmt::format("element {}: {}, but it depends on a NaN input", e, value(d, e));
        }
        break;
      case Bound::kWithin: {
        const double x = value(d, e), y = value(r, e);
        if (!(std::fabs(x - y) <= bound.max_error)) {
          return fmt::format("element {}: {}, reference {}, |difference| {} > bound {}", e, x, y,
                             std::fabs(x - y), bound.max_error);
        }
        break;
      }
      case Bound::kUnconstrained:
        break;
    }
  }
  return std::nullopt;
}

}  // namespace tessera::testing
