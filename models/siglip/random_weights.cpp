#include "models/siglip/random_weights.hpp"

#include <cmath>
#include <numbers>

namespace tessera::models::siglip {

std::uint64_t NormalStream::next_u64() noexcept {
  // splitmix64 (Steele, Lea, Flood 2014).
  std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

double NormalStream::uniform() noexcept {
  // 53 random bits, offset by half a unit so 0 never comes out.
  return (static_cast<double>(next_u64() >> 11) + 0.5) * 0x1.0p-53;
}

double NormalStream::normal() noexcept {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  const double radius = std::sqrt(-2.0 * std::log(uniform()));
  const double angle = 2.0 * std::numbers::pi * uniform();
  spare_ = radius * std::sin(angle);
  has_spare_ = true;
  return radius * std::cos(angle);
}

std::uint64_t name_hash(std::string_view name) noexcept {
  std::uint64_t hash = 0xCBF29CE484222325ULL;
  for (const char c : name) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001B3ULL;
  }
  return hash;
}

SiglipVisionWeights random_weights(const SiglipVisionConfig& config, std::uint64_t seed) {
  SiglipVisionWeights weights = make_weights(config);
  for_each_tensor(weights, [&](const std::string& name, FloatTensor& tensor) {
    NormalStream stream(seed ^ name_hash(name));
    const bool is_norm = name.find("norm") != std::string::npos;
    const bool is_bias = name.ends_with("bias");
    double mean = 0.0, std = 0.02;
    if (is_norm && !is_bias) {
      mean = 1.0;
      std = 0.1;
    } else if (name.ends_with("position_embedding.weight")) {
      std = 1.0 / std::sqrt(static_cast<double>(config.hidden_size));
    } else if (name.ends_with("probe")) {
      std = 1.0;
    } else if (!is_bias) {
      // A matrix [out, in, ...]: fan_in is everything after the first axis.
      double fan_in = 1.0;
      for (std::size_t i = 1; i < tensor.shape.size(); ++i) {
        fan_in *= static_cast<double>(tensor.shape[i]);
      }
      std = 1.0 / std::sqrt(fan_in);
    }
    for (float& value : tensor.values) value = static_cast<float>(mean + std * stream.normal());
  });
  return weights;
}

}  // namespace tessera::models::siglip
