#include "models/siglip/graph.hpp"

#include <cmath>
#include <cstring>
#include <functional>

#include <fmt/format.h>

#include "kernels/f143.hpp"
#include "kernels/gemm.hpp"
#include "kernels/half.hpp"
#include "kernels/weight_panels.hpp"
#include "models/parallel.hpp"
#include "support/checked.hpp"
#include "support/error.hpp"

namespace tessera::models::siglip {
namespace {

using compiler::DType;
using compiler::Graph;
using compiler::Shape;
using compiler::TensorType;
using compiler::ValueId;

// [rows, cols] row-major → [cols, rows]: a torch Linear's [out, in] weight as
// the matmul's right operand [in, out].
std::vector<float> transposed(const FloatTensor& t) {
  const std::uint64_t rows = t.shape.at(0), cols = t.shape.at(1);
  std::vector<float> out(t.values.size());
  for (std::uint64_t r = 0; r < rows; ++r) {
    for (std::uint64_t c = 0; c < cols; ++c) out[c * rows + r] = t.values[r * cols + c];
  }
  return out;
}

// Rows [first, first + count) of a [rows, cols] tensor.
FloatTensor rows_of(const FloatTensor& t, std::uint64_t first, std::uint64_t count) {
  const std::uint64_t cols = t.shape.size() > 1 ? t.shape[1] : 1;
  FloatTensor out;
  out.shape = t.shape.size() > 1 ? std::vector<std::uint64_t>{count, cols}
                                 : std::vector<std::uint64_t>{count};
  out.values.assign(t.values.begin() + static_cast<std::ptrdiff_t>(first * cols),
                    t.values.begin() + static_cast<std::ptrdiff_t>((first + count) * cols));
  return out;
}

using Values = std::function<std::vector<float>(const SiglipVisionWeights&)>;

// One parameter of the graph: its name, its shape (a layer's, for the
// encoder's sequence values, which are [L, shape…]), and how its values come
// from the checkpoint's tensors. The one table both the graph builder and
// the weight packer read, so a name, a shape and a packing cannot disagree.
struct ParameterSpec {
  std::string name;
  Shape shape;
  Values values;
  // For the encoder's linear weights, the checkpoint tensors entry `layer`
  // comes from, side by side along N (one, or q, k and v fused): the
  // quantizer rewrites exactly these, and its recorded block scales are
  // found by each tensor's name (for_each_tensor's). At f143 and f8 these,
  // and only these, are F143 (f143_encoded).
  using Sources = std::function<std::vector<const FloatTensor*>(const SiglipVisionWeights&, std::size_t layer)>;
  Sources sources = nullptr;
};

// Whether an encoder layer's q, k and v projections are one GEMM, [H, 3H]
// with the three outputs side by side: the LayerNorm's output is then read
// once, not three times, and one plan fills the chip with three times the
// work (so400m f143, modelled: 102,010 cycles against 3 × 47,650). Only
// when H is a whole number of F143 scale blocks, so no 64 × 64 block of the
// fused weight holds two projections' columns — a quantized model's
// recorded scales then carry over as they are (pack_f143).
bool fuses_qkv(const SiglipVisionConfig& c) { return c.hidden_size % kernels::f143::kBlockColumns == 0; }

// [rows, cols_i] row-major matrices side by side: [rows, Σ cols_i] — the
// fused weight's values, and its codes and block scales from a record's.
template <typename T>
std::vector<T> side_by_side(const std::vector<std::vector<T>>& parts, std::uint64_t rows) {
  std::vector<T> out;
  for (std::uint64_t r = 0; r < rows; ++r) {
    for (const std::vector<T>& part : parts) {
      const std::uint64_t cols = part.size() / rows;
      out.insert(out.end(), part.begin() + static_cast<std::ptrdiff_t>(r * cols),
                 part.begin() + static_cast<std::ptrdiff_t>((r + 1) * cols));
    }
  }
  return out;
}

std::vector<ParameterSpec> layer_specs(const SiglipVisionConfig& c) {
  const std::uint32_t h = c.hidden_size, i = c.intermediate_size;
  using L = SiglipEncoderLayer;
  const auto layer_values = [](std::function<std::vector<float>(const L&)> one) -> Values {
    return [one](const SiglipVisionWeights& w) {
      std::vector<float> all;
      for (const L& layer : w.layers) {
        const std::vector<float> v = one(layer);
        all.insert(all.end(), v.begin(), v.end());
      }
      return all;
    };
  };
  using Get = std::function<const Linear&(const L&)>;
  // One linear layer of the encoder ([in, out_each]), or several side by
  // side along N.
  const auto linear = [&](const std::string& name, std::uint32_t in, std::uint32_t out_each, std::vector<Get> gets) {
    const std::uint32_t out = out_each * static_cast<std::uint32_t>(gets.size());
    const std::uint32_t rows = in;
    return std::vector<ParameterSpec>{
        {name + ".weight", {in, out}, layer_values([gets, rows](const L& l) {
           std::vector<std::vector<float>> parts;
           for (const Get& get : gets) parts.push_back(transposed(get(l).weight));
           return side_by_side(parts, rows);
         }),
         [gets](const SiglipVisionWeights& w, std::size_t layer) {
           std::vector<const FloatTensor*> tensors;
           for (const Get& get : gets) tensors.push_back(&get(w.layers.at(layer)).weight);
           return tensors;
         }},
        {name + ".bias", {out}, layer_values([gets](const L& l) {
           std::vector<float> bias;
           for (const Get& get : gets) bias.insert(bias.end(), get(l).bias.values.begin(), get(l).bias.values.end());
           return bias;
         })}};
  };
  const Get q = [](const L& l) -> const Linear& { return l.self_attn.q_proj; };
  const Get k = [](const L& l) -> const Linear& { return l.self_attn.k_proj; };
  const Get v = [](const L& l) -> const Linear& { return l.self_attn.v_proj; };
  std::vector<ParameterSpec> specs = {
      {"encoder.layer_norm1.weight", {h}, layer_values([](const L& l) { return l.layer_norm1.weight.values; })},
      {"encoder.layer_norm1.bias", {h}, layer_values([](const L& l) { return l.layer_norm1.bias.values; })}};
  std::vector<std::pair<std::string, std::vector<Get>>> attention;
  if (fuses_qkv(c)) {
    attention.push_back({"encoder.qkv_proj", {q, k, v}});
  } else {
    attention.insert(attention.end(), {{"encoder.q_proj", {q}}, {"encoder.k_proj", {k}}, {"encoder.v_proj", {v}}});
  }
  attention.push_back({"encoder.out_proj", {[](const L& l) -> const Linear& { return l.self_attn.out_proj; }}});
  for (auto&& [name, gets] : attention) {
    for (auto& spec : linear(name, h, h, gets)) specs.push_back(std::move(spec));
  }
  specs.push_back({"encoder.layer_norm2.weight", {h}, layer_values([](const L& l) { return l.layer_norm2.weight.values; })});
  specs.push_back({"encoder.layer_norm2.bias", {h}, layer_values([](const L& l) { return l.layer_norm2.bias.values; })});
  for (auto& spec : linear("encoder.fc1", h, i, {[](const L& l) -> const Linear& { return l.mlp.fc1; }})) {
    specs.push_back(std::move(spec));
  }
  for (auto& spec : linear("encoder.fc2", i, h, {[](const L& l) -> const Linear& { return l.mlp.fc2; }})) {
    specs.push_back(std::move(spec));
  }
  return specs;
}

// Everything outside the encoder: embeddings, post-LayerNorm, the head.
std::vector<ParameterSpec> outer_specs(const SiglipVisionConfig& c) {
  const std::uint32_t h = c.hidden_size, i = c.intermediate_size;
  // C·P·P, bounded by parameter_count only through H · C·P·P: checked.
  const auto inner = checked_cast<std::uint32_t>(c.patch_inner(), "the patch embedding's C·P·P");
  using W = SiglipVisionWeights;
  std::vector<ParameterSpec> specs = {
      // The conv weight [H, C, P, P] is the GEMM weight [C·P·P, H].
      {"embeddings.patch_embedding.weight", {inner, h},
       [inner, h](const W& w) {
         FloatTensor flat{{h, inner}, w.embeddings.patch_embedding.weight.values};
         return transposed(flat);
       }},
      {"embeddings.patch_embedding.bias", {h}, [](const W& w) { return w.embeddings.patch_embedding.bias.values; }},
      {"embeddings.position_embedding", {c.num_patches(), h}, [](const W& w) { return w.embeddings.position_embedding.weight.values; }},
      {"post_layernorm.weight", {h}, [](const W& w) { return w.post_layernorm.weight.values; }},
      {"post_layernorm.bias", {h}, [](const W& w) { return w.post_layernorm.bias.values; }},
  };
  if (!c.vision_use_head) return specs;
  const auto in_proj = [h](std::uint64_t part) {
    return [h, part](const W& w) { return transposed(rows_of(w.head->attention.in_proj_weight, part * h, h)); };
  };
  const auto in_bias = [h](std::uint64_t part) {
    return [h, part](const W& w) { return rows_of(w.head->attention.in_proj_bias, part * h, h).values; };
  };
  std::vector<ParameterSpec> head = {
      {"head.probe", {1, h}, [](const W& w) { return w.head->probe.values; }},
      {"head.q_proj.weight", {h, h}, in_proj(0)}, {"head.q_proj.bias", {h}, in_bias(0)},
      {"head.k_proj.weight", {h, h}, in_proj(1)}, {"head.k_proj.bias", {h}, in_bias(1)},
      {"head.v_proj.weight", {h, h}, in_proj(2)}, {"head.v_proj.bias", {h}, in_bias(2)},
      {"head.out_proj.weight", {h, h}, [](const W& w) { return transposed(w.head->attention.out_proj.weight); }},
      {"head.out_proj.bias", {h}, [](const W& w) { return w.head->attention.out_proj.bias.values; }},
      {"head.layernorm.weight", {h}, [](const W& w) { return w.head->layernorm.weight.values; }},
      {"head.layernorm.bias", {h}, [](const W& w) { return w.head->layernorm.bias.values; }},
      {"head.fc1.weight", {h, i}, [](const W& w) { return transposed(w.head->mlp.fc1.weight); }},
      {"head.fc1.bias", {i}, [](const W& w) { return w.head->mlp.fc1.bias.values; }},
      {"head.fc2.weight", {i, h}, [](const W& w) { return transposed(w.head->mlp.fc2.weight); }},
      {"head.fc2.bias", {h}, [](const W& w) { return w.head->mlp.fc2.bias.values; }},
  };
  specs.insert(specs.end(), head.begin(), head.end());
  return specs;
}

DType dtype_of(GraphPrecision precision) {
  return precision == GraphPrecision::kF32 ? DType::kF32 : DType::kF16;
}

// Whether the precision has block-scaled F143 weights (f143 and f8).
bool f143_weights(GraphPrecision precision) {
  return precision == GraphPrecision::kF143 || precision == GraphPrecision::kF8;
}

// Whether `spec` is F143 codes with one scale per 64 × 64 block
// (kernels::f143::BlockScales): two parameters "<name>.codes" u8 and
// "<name>.scales" i32 that the graph joins with block_scale. At f143 and f8
// that is the encoder layers' linear weights — the quantizer's set (spec.
// source), 96 % of so400m's parameters. The patch embedding and the pooling
// head stay f16: F143 nearest on them cost so400m's pooled cosine as much as
// on all 27 layers together (encoder alone 0.99580, with the patch
// embedding 0.99506, with the head 0.99487, all three 0.99416 — the FP32
// reference with F143-rounded weights, models/README.md), for 3.7 % of the
// parameters.
bool f143_encoded(const ParameterSpec& spec, GraphPrecision precision) {
  return spec.sources != nullptr && f143_weights(precision);
}

std::string codes_name(const std::string& weight) { return weight + ".codes"; }
std::string scales_name(const std::string& weight) { return weight + ".scales"; }

// ⌈extent / block⌉: the F143 scale blocks along an axis (kernels/f143.hpp).
std::uint32_t scale_blocks(std::uint32_t extent, std::uint32_t block) {
  return (extent + block - 1) / block;
}

// The inner extent of the weight panels an F143 weight's codes come in
// (block_scale's panels): at f8 32, the native FP8 GEMM's passes (f8
// converts the encoder projections' inputs to F143); at f143 16, the
// expanded GEMM's. The one owner of the codes' layout: the builder declares
// it, vision_weight_bytes sums it and pack_f143 packs it.
unsigned code_panels(GraphPrecision precision) {
  return precision == GraphPrecision::kF8 ? 32 : 16;
}

// The graph parameters one spec becomes, with `leading` axes before its
// shape: the spec's own, or for an f143_encoded weight its codes (u8, packed
// in weight panels of code_panels: kernels/weight_panels.hpp) and its block
// scales (i32, one per 64 × 64 block). The one owner of the parameters'
// types: the builder declares these and vision_weight_bytes sums them.
std::vector<std::pair<std::string, TensorType>> parameter_types(const ParameterSpec& spec,
                                                                 const Shape& leading,
                                                                 GraphPrecision precision) {
  Shape shape = leading;
  shape.insert(shape.end(), spec.shape.begin(), spec.shape.end());
  if (!f143_encoded(spec, precision)) {
    return {{spec.name, TensorType{{dtype_of(precision)}, shape}}};
  }
  Shape scales = leading;
  scales.push_back(scale_blocks(spec.shape[0], kernels::f143::kBlockRows));
  scales.push_back(scale_blocks(spec.shape[1], kernels::f143::kBlockColumns));
  Shape panels = leading;
  panels.push_back(scale_blocks(spec.shape[1], kernels::amp::kPanelColumns));
  panels.push_back(scale_blocks(spec.shape[0], code_panels(precision)));
  panels.push_back(kernels::amp::kPanelColumns);
  panels.push_back(code_panels(precision));
  return {{codes_name(spec.name), TensorType{{DType::kU8}, panels}},
          {scales_name(spec.name), TensorType{{DType::kI32}, scales}}};
}

// The builder's state: the graph, the precision, the parameters by name.
class Builder {
 public:
  Builder(const SiglipVisionConfig& config, std::uint32_t batch, GraphPrecision precision,
          const ActivationScales* activations)
      : c_(config),
        batch_(batch),
        precision_(precision),
        dtype_(dtype_of(precision)),
        activations_(activations) {
    const std::vector<ParameterSpec> specs = layer_specs(config);
    for (std::size_t k = 0; k < specs.size(); ++k) layer_slots_[specs[k].name] = k;
  }

  Graph build() {
    const std::uint32_t b = batch_, h = c_.hidden_size, t = c_.num_patches();
    const std::uint32_t g = c_.patches_per_side(), p = c_.patch_size, ch = c_.num_channels;
    for (const ParameterSpec& spec : outer_specs(c_)) parameters_[spec.name] = parameter(spec, {});
    std::vector<ValueId> sequence;
    for (const ParameterSpec& spec : layer_specs(c_)) sequence.push_back(parameter(spec, {c_.num_hidden_layers}));

    ValueId pixels = g_.host_input(std::string(kPixelValues), DType::kF32, {b, ch, c_.image_size, c_.image_size});
    if (dtype_ != DType::kF32) pixels = g_.convert(pixels, dtype_);
    // The conv's stride-P windows: pixels past the last whole patch are unused.
    if (g * p != c_.image_size) pixels = g_.slice(pixels, {0, 0, 0, 0}, {b, ch, g * p, g * p});
    ValueId patches = g_.reshape(pixels, {b, ch, g, p, g, p});
    patches = g_.transpose(patches, {0, 2, 4, 1, 3, 5});
    patches = g_.reshape(patches, {b * t, ch * p * p});
    ValueId x = g_.add(g_.matmul(patches, param("embeddings.patch_embedding.weight")),
                       param("embeddings.patch_embedding.bias"));
    x = g_.add(g_.reshape(x, {b, t, h}), param("embeddings.position_embedding"));

    const std::vector<ValueId> layers = g_.repeat(
        c_.num_hidden_layers, {x}, sequence, {},
        [&](Graph& body, std::span<const ValueId> carried, std::span<const ValueId> w,
            std::span<const ValueId>) {
          return std::vector<ValueId>{encoder_layer(body, carried[0], w)};
        });
    const ValueId last = g_.layer_norm(layers[0], param("post_layernorm.weight"),
                                       param("post_layernorm.bias"), c_.layer_norm_eps);
    g_.host_output(std::string(kLastHiddenState), to_f32(g_, last));
    if (c_.vision_use_head) g_.host_output(std::string(kPoolerOutput), to_f32(g_, head(last)));
    return std::move(g_);
  }

 private:
  ValueId param(const std::string& name) const { return parameters_.at(name); }

  // The spec's parameter with `leading` axes before its shape: a plain one,
  // or an f143_encoded weight's panel codes and block scales joined by
  // block_scale.
  ValueId parameter(const ParameterSpec& spec, const Shape& leading) {
    auto types = parameter_types(spec, leading, precision_);
    if (types.size() == 1) return g_.parameter(std::move(types[0].first), std::move(types[0].second));
    const ValueId codes = g_.parameter(std::move(types[0].first), std::move(types[0].second));
    return g_.block_scale_panels(codes, g_.parameter(std::move(types[1].first), std::move(types[1].second)),
                                 code_panels(precision_), spec.shape);
  }

  ValueId to_f32(Graph& graph, ValueId v) const {
    return dtype_ == DType::kF32 ? v : graph.convert(v, DType::kF32);
  }

  // x [B, S, H] → [B, heads, S, D]
  ValueId split_heads(Graph& graph, ValueId x, std::uint32_t rows) const {
    const std::uint32_t heads = c_.num_attention_heads, d = c_.head_dim();
    return graph.transpose(graph.reshape(x, {batch_, rows, heads, d}), {0, 2, 1, 3});
  }
  // [B, heads, S, D] → [B, S, H]
  ValueId merge_heads(Graph& graph, ValueId x, std::uint32_t rows) const {
    return graph.reshape(graph.transpose(x, {0, 2, 1, 3}), {batch_, rows, c_.hidden_size});
  }

  double scale() const { return 1.0 / std::sqrt(static_cast<double>(c_.head_dim())); }

  ValueId linear(Graph& graph, ValueId x, ValueId weight, ValueId bias) const {
    return graph.add(graph.matmul(x, weight), bias);
  }

  ValueId mlp(Graph& graph, ValueId x, ValueId w1, ValueId b1, ValueId w2, ValueId b2) const {
    return linear(graph, graph.gelu(linear(graph, x, w1, b1)), w2, b2);
  }

  // An encoder layer's inputs to its projections: as they are, or at f8
  // converted to F143 at the projection's activation scale — once per
  // (input, scale), so q, k and v, whose input is the same LayerNorm's
  // output (and whose recorded scales are then equal), share one convert.
  class ProjectionInputs {
   public:
    ProjectionInputs(Graph& body, GraphPrecision precision, const ActivationScales* activations)
        : body_(body), precision_(precision), activations_(activations) {}
    ValueId operator()(ValueId x, Projection projection) {
      if (precision_ != GraphPrecision::kF8) return x;
      const int scale = (*activations_)[projection];
      const auto [it, added] = converted_.try_emplace({x, scale}, ValueId{});
      if (added) it->second = body_.convert(x, compiler::ElementType{DType::kF8F143, scale});
      return it->second;
    }

   private:
    Graph& body_;
    GraphPrecision precision_;
    const ActivationScales* activations_;
    std::map<std::pair<ValueId, int>, ValueId> converted_;
  };

  // One pre-LN encoder layer (transformers' SiglipEncoderLayer).
  ValueId encoder_layer(Graph& body, ValueId h, std::span<const ValueId> w) const {
    const std::uint32_t t = c_.num_patches();
    const double eps = c_.layer_norm_eps;
    const auto at = [&](const std::string& name) { return w[layer_slots_.at("encoder." + name)]; };
    const auto project = [&](ValueId input, const std::string& name) {
      return linear(body, input, at(name + ".weight"), at(name + ".bias"));
    };
    ProjectionInputs in(body, precision_, activations_);
    const ValueId x = body.layer_norm(h, at("layer_norm1.weight"), at("layer_norm1.bias"), eps);
    ValueId q, k, v;
    if (fuses_qkv(c_)) {
      // [B, T, 3H]: each row's q, k and v lie on the row's tile, so the
      // slices are local copies.
      const ValueId qkv = project(in(x, Projection::kQ), "qkv_proj");
      const std::uint32_t hidden = c_.hidden_size;
      const auto third = [&](std::uint32_t part) {
        return split_heads(body, body.slice(qkv, {0, 0, part * hidden}, {batch_, t, (part + 1) * hidden}), t);
      };
      q = third(0), k = third(1), v = third(2);
    } else {
      q = split_heads(body, project(in(x, Projection::kQ), "q_proj"), t);
      k = split_heads(body, project(in(x, Projection::kK), "k_proj"), t);
      v = split_heads(body, project(in(x, Projection::kV), "v_proj"), t);
    }
    const ValueId attended = merge_heads(body, body.attention(q, k, v, scale()), t);
    h = body.add(h, project(in(attended, Projection::kOut), "out_proj"));
    const ValueId y = body.layer_norm(h, at("layer_norm2.weight"), at("layer_norm2.bias"), eps);
    const ValueId up = body.gelu(project(in(y, Projection::kFc1), "fc1"));
    return body.add(h, project(in(up, Projection::kFc2), "fc2"));
  }

  // The attention-pooling head (SiglipMultiheadAttentionPoolingHead). The
  // probe is one query row for every image; it is replicated to the GEMM's
  // row minimum so its projection is a GEMM the kernels can run, and row 0
  // of the result is the pooled output (every row is the same).
  ValueId head(ValueId hidden) {
    const std::uint32_t h = c_.hidden_size, t = c_.num_patches();
    const std::uint32_t rows = kernels::kGemmMinimumRows;
    const std::uint32_t heads = c_.num_attention_heads, d = c_.head_dim();
    const ValueId probe = g_.broadcast_to(param("head.probe"), {rows, h});
    ValueId q = linear(g_, probe, param("head.q_proj.weight"), param("head.q_proj.bias"));
    q = g_.transpose(g_.reshape(q, {1, rows, heads, d}), {0, 2, 1, 3});
    q = g_.broadcast_to(q, {batch_, heads, rows, d});
    const ValueId k = split_heads(g_, linear(g_, hidden, param("head.k_proj.weight"), param("head.k_proj.bias")), t);
    const ValueId v = split_heads(g_, linear(g_, hidden, param("head.v_proj.weight"), param("head.v_proj.bias")), t);
    const ValueId attended = merge_heads(g_, g_.attention(q, k, v, scale()), rows);
    const ValueId out = linear(g_, attended, param("head.out_proj.weight"), param("head.out_proj.bias"));
    const ValueId normed = g_.layer_norm(out, param("head.layernorm.weight"), param("head.layernorm.bias"),
                                         c_.layer_norm_eps);
    const ValueId pooled = g_.add(out, mlp(g_, normed, param("head.fc1.weight"), param("head.fc1.bias"),
                                          param("head.fc2.weight"), param("head.fc2.bias")));
    return g_.reshape(g_.slice(pooled, {0, 0, 0}, {batch_, 1, h}), {batch_, h});
  }

  const SiglipVisionConfig& c_;
  std::uint32_t batch_;
  GraphPrecision precision_;
  DType dtype_;
  const ActivationScales* activations_;
  Graph g_;
  std::map<std::string, ValueId> parameters_;
  std::map<std::string, std::size_t> layer_slots_;  // a layer tensor's place in the body's sequence
};

std::vector<std::uint8_t> encode(const std::vector<float>& values, GraphPrecision precision) {
  std::vector<std::uint8_t> bytes;
  if (precision == GraphPrecision::kF32) {
    bytes.resize(values.size() * 4);
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return bytes;
  }
  bytes.resize(values.size() * 2);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::uint16_t half = kernels::f32_to_f16(values[i]);
    std::memcpy(bytes.data() + 2 * i, &half, 2);
  }
  return bytes;
}

void append_scales(const kernels::f143::BlockScales& block_scales, std::vector<std::uint8_t>& out) {
  for (const std::int8_t scale : block_scales.scales()) {
    const std::int32_t wide = scale;
    std::uint8_t bytes[4];
    std::memcpy(bytes, &wide, 4);
    out.insert(out.end(), bytes, bytes + 4);
  }
}

// What pack needs besides the weights: the quantizer's record, and the
// checkpoint name of every tensor (for_each_tensor's) to look it up by.
struct Packing {
  GraphPrecision precision;
  const RecordedF143* recorded = nullptr;
  std::map<const FloatTensor*, std::string> names;
};

// A GEMM weight, `entries` of [K, N] one after the other, as F143 codes in
// weight panels (kernels/weight_panels.hpp, code_panels deep) and i32 block
// scales. An entry the quantizer rewrote takes its recorded scales
// and the codes read_quantization encoded at them (exactly the quantizer's:
// its weights lie on that grid); any other has its scales chosen from its
// own values by the one F143 rule, kernels::f143::BlockScales::choose.
void pack_f143(const ParameterSpec& spec, const std::vector<float>& values, std::uint64_t entries,
               const SiglipVisionWeights& weights, const Packing& packing,
               std::map<std::string, std::vector<std::uint8_t>>& packed) {
  const std::uint32_t k = spec.shape[0], n = spec.shape[1];
  const std::size_t entry = std::size_t{k} * n;
  std::vector<std::uint8_t>& codes = packed[codes_name(spec.name)];
  std::vector<std::uint8_t>& scales = packed[scales_name(spec.name)];
  if (packing.recorded != nullptr && spec.sources) {
    for (std::uint64_t e = 0; e < entries; ++e) {
      // The entry's tensors side by side: each one's codes and scales, row
      // by row (fuses_qkv: its N is whole scale blocks, so no block mixes two).
      const std::vector<const FloatTensor*> sources = spec.sources(weights, e);
      const std::uint32_t each = n / static_cast<std::uint32_t>(sources.size());
      std::vector<std::vector<std::uint8_t>> part_codes, part_scales;
      for (const FloatTensor* source : sources) {
        const std::string& name = packing.names.at(source);
        const auto it = packing.recorded->find(name);
        if (it == packing.recorded->end()) {
          throw InputError(name, "has no block scales in the quantization record: every weight the "
                                 "quantizer rewrites must have them");
        }
        const quantizer::F143Weight& recorded = it->second;
        if (recorded.scales.inner() != k || recorded.scales.columns() != each ||
            recorded.codes.size() != std::size_t{k} * each) {
          throw InputError(name, fmt::format("its recorded F143 weight is [{}, {}] with {} codes, "
                                             "the graph's [K, N] is [{}, {}]",
                                             recorded.scales.inner(), recorded.scales.columns(),
                                             recorded.codes.size(), k, each));
        }
        part_codes.push_back(recorded.codes);
        append_scales(recorded.scales, part_scales.emplace_back());
      }
      const auto panels = kernels::amp::to_weight_panels<std::uint8_t>(side_by_side(part_codes, k), k, n,
                                                                       code_panels(packing.precision));
      codes.insert(codes.end(), panels.begin(), panels.end());
      const std::vector<std::uint8_t> joined = side_by_side(part_scales, scale_blocks(k, kernels::f143::kBlockRows));
      scales.insert(scales.end(), joined.begin(), joined.end());
    }
    return;
  }
  // `siglip run --package` packs the weights on every run, and encoding a
  // whole tower's GEMM weights on one core took a tenth of so400m's run.
  // Each entry's scales and codes depend on its own values alone, so the
  // entries (the layers) are encoded on every core and then appended in
  // order: the bytes are the same whatever the thread count.
  struct Encoded {
    std::vector<std::uint8_t> codes;
    std::vector<std::uint8_t> scales;
  };
  std::vector<Encoded> encoded(static_cast<std::size_t>(entries));
  parallel_for(encoded.size(), 1, [&](std::size_t begin, std::size_t end) {
    for (std::size_t e = begin; e < end; ++e) {
      const std::span<const float> one(values.data() + e * entry, entry);
      const auto block_scales = kernels::f143::BlockScales::choose(one, k, n);
      encoded[e].codes = kernels::amp::to_weight_panels<std::uint8_t>(
          kernels::f143::encode(one, block_scales), k, n, code_panels(packing.precision));
      append_scales(block_scales, encoded[e].scales);
    }
  });
  for (const Encoded& one : encoded) {
    codes.insert(codes.end(), one.codes.begin(), one.codes.end());
    scales.insert(scales.end(), one.scales.begin(), one.scales.end());
  }
}

void pack(const ParameterSpec& spec, std::uint64_t entries, const SiglipVisionWeights& weights,
          const Packing& packing, std::map<std::string, std::vector<std::uint8_t>>& packed) {
  const std::vector<float> values = spec.values(weights);
  if (f143_encoded(spec, packing.precision)) {
    pack_f143(spec, values, entries, weights, packing, packed);
  } else {
    packed[spec.name] = encode(values, packing.precision);
  }
}

std::uint64_t add_bytes(std::uint64_t total, const ParameterSpec& spec, const Shape& leading,
                        GraphPrecision precision) {
  for (const auto& [name, type] : parameter_types(spec, leading, precision)) {
    total = checked_add(total, compiler::byte_size(type), "the weights' bytes");
  }
  return total;
}

}  // namespace

Graph build_vision_graph(const SiglipVisionConfig& config, std::uint32_t batch,
                         GraphPrecision precision, const ActivationScales* activations) {
  if (batch == 0) throw UsageError("the batch must be at least 1 image");
  if (precision == GraphPrecision::kF8) {
    if (activations == nullptr) {
      throw UsageError("the f8 graph needs the activation scale of each encoder projection");
    }
    // Fused, q, k and v read one input converted at one scale: the
    // quantizer records equal scales for them (their input is the same).
    const auto q = (*activations)[Projection::kQ];
    if (fuses_qkv(config) &&
        ((*activations)[Projection::kK] != q || (*activations)[Projection::kV] != q)) {
      throw UsageError(fmt::format(
          "the activation scales of q, k and v are {}, {} and {}: one GEMM computes them from one "
          "input, converted at one scale",
          q, (*activations)[Projection::kK], (*activations)[Projection::kV]));
    }
    for (std::size_t p = 0; p < kProjections; ++p) {
      const int scale = activations->scales[p];
      if (!kernels::f143::valid_scale(scale)) {
        throw UsageError(
            fmt::format("the activation scale of {} is {}, outside the F143 range [{}, {}]",
                        projection_module(static_cast<Projection>(p)), scale,
                        kernels::f143::kMinScale, kernels::f143::kMaxScale));
      }
    }
  }
  return Builder(config, batch, precision, precision == GraphPrecision::kF8 ? activations : nullptr)
      .build();
}

std::map<std::string, std::vector<std::uint8_t>> pack_vision_weights(
    const SiglipVisionWeights& weights, GraphPrecision precision, const RecordedF143* recorded) {
  Packing packing{precision, f143_weights(precision) ? recorded : nullptr, {}};
  if (packing.recorded != nullptr) {
    for_each_tensor(weights, [&](const std::string& name, const FloatTensor& tensor) {
      packing.names.emplace(&tensor, name);
    });
  }
  std::map<std::string, std::vector<std::uint8_t>> packed;
  for (const ParameterSpec& spec : outer_specs(weights.config)) pack(spec, 1, weights, packing, packed);
  for (const ParameterSpec& spec : layer_specs(weights.config)) {
    pack(spec, weights.config.num_hidden_layers, weights, packing, packed);
  }
  return packed;
}

std::uint64_t vision_weight_bytes(const SiglipVisionConfig& config, GraphPrecision precision) {
  (void)parameter_count(config);  // validates the config and bounds its sizes
  std::uint64_t total = 0;
  for (const ParameterSpec& spec : outer_specs(config)) total = add_bytes(total, spec, {}, precision);
  for (const ParameterSpec& spec : layer_specs(config)) {
    total = add_bytes(total, spec, {config.num_hidden_layers}, precision);
  }
  return total;
}

std::string_view precision_name(GraphPrecision precision) {
  switch (precision) {
    case GraphPrecision::kF32: return "f32";
    case GraphPrecision::kF16: return "f16";
    case GraphPrecision::kF143: return "f143";
    case GraphPrecision::kF8:
      return "f8";
  }
  return "?";
}

std::string_view projection_module(Projection projection) {
  return quantizer::kQuantizedModules.at(static_cast<std::size_t>(projection));
}

}  // namespace tessera::models::siglip
