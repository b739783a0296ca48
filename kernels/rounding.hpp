#pragma once
// Rounding of kernel results to f16 and to F143 under the two modes a call
// may ask for (KernelCall::rounding): round to nearest, ties to even — the
// default and the only bit-exact mode — and stochastic rounding, which the
// device does with ESR set in $FP_ICTL (kernels-siglip-f143.md §0, §2).
//
// Stochastic rounding of a value v between two neighbouring results lo < hi
// (in magnitude) gives hi with probability (v − lo)/(hi − lo) and lo
// otherwise, so its expectation is v. The random bits come from one
// generator per (tile, worker), the device's arrangement (§1.5: the runtime
// seeds each worker's PRNG with ((tile + 1) << 3) | worker, runs 16 warm-up
// draws, and the stream carries on across calls). The generator here is not
// the IPU's PRNG (its algorithm is not public), so stochastic results are
// deterministic and statistically right but NOT bit-identical to silicon.
//
// Where the state lives: TilePrng holds a tile's six worker streams. The
// simulator gives every sim::Tile its own TilePrng, seeded when the tile is
// reset and carried across every kernel call on that tile (KernelCall::prng);
// nothing is global, so results do not depend on the order in which host
// threads run tiles. Inside a call, each kernel assigns elements to workers by
// its documented partition and takes one draw per rounding step, in that
// worker's element order (kernels/README.md, "Rounding").
//
// Edge rules shared by both modes (f16, [INF] where the IPU is not
// documented): NaN and ±Inf convert as half.hpp says; a value whose magnitude
// is at least 2^16 is ±Inf; between 65504 and 2^16 stochastic rounding picks
// 65504 or Inf (the next encoding past 65504), as round-to-nearest picks Inf
// from 65520 up; f32 subnormals (< 2^−126) round to a signed zero. For F143
// the codec's rules hold (kernels/f143.hpp): NaN → 0x80, saturation at ±240,
// underflow to +0.

#include <array>
#include <cstdint>

#include "kernels/kernel_abi.hpp"

namespace tessera::kernels {

// One worker's stream of 64-bit random values: SplitMix64 (Steele, Lea and
// Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014)
// started at the device's seed value. Cheap, stateless apart from a counter,
// and statistically sound for rounding decisions.
class RandomStream {
 public:
  RandomStream() = default;
  explicit RandomStream(std::uint64_t seed) noexcept : state_(seed) {}

  std::uint64_t next() noexcept {
    state_ += kGamma;
    std::uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Skips `draws` values, as if next() had been called that many times.
  void skip(std::uint64_t draws) noexcept { state_ += draws * kGamma; }

  bool operator==(const RandomStream&) const = default;

 private:
  static constexpr std::uint64_t kGamma = 0x9E3779B97F4A7C15ULL;
  std::uint64_t state_ = 0;
};

// A tile's six worker streams (the state of stochastic rounding).
class TilePrng {
 public:
  // The device's seeding: worker w of physical tile t starts from
  // ((t + 1) << 3) | w and skips the 16 warm-up draws.
  static constexpr unsigned kWarmUpDraws = 16;
  static constexpr std::uint64_t seed(std::uint32_t tile, unsigned worker) noexcept {
    return ((std::uint64_t{tile} + 1) << 3) | worker;
  }

  TilePrng() : TilePrng(0) {}
  explicit TilePrng(std::uint32_t tile) noexcept {
    for (unsigned w = 0; w < kWorkerCount; ++w) {
      workers_[w] = RandomStream(seed(tile, w));
      workers_[w].skip(kWarmUpDraws);
    }
  }
  RandomStream& worker(unsigned w) { return workers_.at(w); }

  bool operator==(const TilePrng&) const = default;

 private:
  std::array<RandomStream, kWorkerCount> workers_{};
};

// f32 → f16 under each mode. Round to nearest is half.hpp's f32_bits_to_f16;
// the stochastic one consumes `random` (64 uniform bits) and is exactly
// unbiased for every finite value of magnitude ≥ 2^−65 (below, an f16
// subnormal step is more than 2^64 f32 steps and the bias is < 2^−64 of it).
std::uint16_t round_f16_stochastic(std::uint32_t f32_bits, std::uint64_t random) noexcept;

// x at `scale` → F143 code, stochastically (round to nearest is
// f143::encode). Exactly unbiased for 2^−51 ≤ |x|·2^−scale < 240. The
// scale must be valid (std::invalid_argument otherwise).
std::uint8_t round_f143_stochastic(float x, int scale, std::uint64_t random);

// Rounding of one worker's f32 results to f16 under the call's mode: every
// rounding step takes one draw from the worker's stream when stochastic (so
// the number of draws does not depend on the data), none otherwise. The f16
// operations compute in f32 from f16 operands and round once; a NaN result is
// the canonical quiet NaN 0x7E00 (float_arith.hpp's rule).
class F16Rounding {
 public:
  F16Rounding(Rounding mode, RandomStream* stream) noexcept : mode_(mode), stream_(stream) {}

  bool stochastic() const noexcept { return mode_ == Rounding::kStochastic; }
  // Rounds an f32 value (NaN payloads as half.hpp).
  std::uint16_t round(std::uint32_t f32_bits) noexcept;
  // Rounds an arithmetic result (any NaN → 0x7E00).
  std::uint16_t round_result(float value) noexcept;

  std::uint16_t add(std::uint16_t a, std::uint16_t b) noexcept;
  std::uint16_t sub(std::uint16_t a, std::uint16_t b) noexcept;
  std::uint16_t mul(std::uint16_t a, std::uint16_t b) noexcept;

 private:
  Rounding mode_;
  RandomStream* stream_;
};

// Worker w's stream for a call that rounds stochastically (nullptr when it
// rounds to nearest). A stochastic call without the tile's streams is a
// harness bug: std::logic_error.
RandomStream* worker_stream(KernelCall& call, unsigned worker);

}  // namespace tessera::kernels
