#pragma once
// Random SigLIP vision towers, so that tests and the demo need no download.
//
// Deterministic: each tensor's values come from its own stream, seeded by
// the seed and the tensor's name (so they do not depend on the order tensors
// are made in, nor on the standard library: std::normal_distribution is
// implementation-defined, this is not). The scales are those of a trained
// tower in spirit — activations stay O(1) through every layer:
//   weight matrices (patch embedding, projections, MLPs, in_proj)
//                       N(0, 1/fan_in)
//   biases              N(0, 0.02²)
//   position embedding  N(0, 1/H)        (transformers' initialisation)
//   LayerNorm           weight N(1, 0.1²), bias N(0, 0.02²)
//   head.probe          N(0, 1)

#include <cstdint>

#include "models/siglip/weights.hpp"

namespace tessera::models::siglip {

SiglipVisionWeights random_weights(const SiglipVisionConfig& config, std::uint64_t seed);

// A deterministic stream of standard normal values (splitmix64 and
// Box–Muller in double), for random weights and for tests' inputs.
class NormalStream {
 public:
  explicit NormalStream(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next_u64() noexcept;
  // Uniform in (0, 1).
  double uniform() noexcept;
  double normal() noexcept;

 private:
  std::uint64_t state_;
  double spare_ = 0.0;
  bool has_spare_ = false;
};

// FNV-1a of a name, for per-tensor seeds.
std::uint64_t name_hash(std::string_view name) noexcept;

}  // namespace tessera::models::siglip
