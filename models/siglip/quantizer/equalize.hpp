#pragma once
// LayerNorm equalization (the prior art's --equalize-layernorm; norm1 → q,
// k, v and norm2 → fc1 only): a per-column factor s moved from a LayerNorm's
// output into its consumers' weights, γ /= s, β /= s, W[:, c] *= s, which
// leaves the model's function unchanged and reshapes the weights the F143
// grid sees. Candidates, for α ∈ {0, ¼, ½, ¾, 1}:
//   s_c = rms(x_c)^α / rms(W[:, c])^(1−α),
// normalised by √(min s · max s) and clamped to [1/16, 16]; the chosen one
// minimises the calibration-weighted projection error
//   Σ_W Σ_{o,c} (W s − Q(W s))²_{oc} · E[x_c²] / s_c²
// with Q nearest at the scales chosen for W s. Unlike the prior art, s = 1
// (no equalization) is a candidate too, so equalizing never makes this
// objective worse. A column whose input or weights are all zero keeps s = 1.
// The factors are f32: what is folded is exactly what was evaluated.

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "models/siglip/quantizer/statistics.hpp"
#include "models/siglip/weights.hpp"

namespace tessera::models::siglip::quantizer {

inline constexpr float kMinEqualization = 1.0F / 16.0F;
inline constexpr float kMaxEqualization = 16.0F;

struct Equalization {
  std::optional<double> alpha;  // nullopt: s = 1 was best
  std::vector<float> factors;   // s, one per column
  double objective = 0.0;           // of the chosen factors
  double identity_objective = 0.0;  // of s = 1
};

// Chooses the factors for a LayerNorm whose output `input` feeds `consumers`
// (each [out, columns]).
Equalization choose_equalization(std::span<const Linear* const> consumers,
                                 const InputStatistics& input);

// Folds the factors: the LayerNorm's γ and β divided, the consumers' columns
// multiplied, and `input`'s statistics rescaled to the new LayerNorm output.
void apply_equalization(const std::vector<float>& factors, LayerNorm& norm,
                        std::span<Linear* const> consumers, InputStatistics& input);

}  // namespace tessera::models::siglip::quantizer
