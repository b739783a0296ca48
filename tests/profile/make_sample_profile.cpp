// Writes a synthetic cycle profile shaped like a transformer encoder's run:
// per layer and operation, every tile syncs, exchanges and runs a kernel,
// with counters that start near 2^32 and wrap. The browser test opens its
// report (names with '<', '>' and '&' included), and it measures how the
// report copes with a SigLIP-sized run (27 layers on 1472 tiles).
//
//   make_sample_profile OUT TILES LAYERS
#include <cstdio>
#include <cstdlib>
#include <string>

#include "schema/profile.hpp"
#include "target/topology.hpp"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: make_sample_profile OUT TILES LAYERS\n");
    return 2;
  }
  const unsigned tiles = static_cast<unsigned>(std::strtoul(argv[2], nullptr, 10));
  const unsigned layers = static_cast<unsigned>(std::strtoul(argv[3], nullptr, 10));
  if (tiles == 0 || tiles > tessera::target::kTileCount) {
    std::fprintf(stderr, "make_sample_profile: TILES must be 1..1472\n");
    return 2;
  }
  const char* const kOperations[] = {"layer_norm1", "self_attn.q_proj", "self_attn.k_proj",
                                     "self_attn.v_proj", "self_attn.attention",
                                     "self_attn.out_proj", "layer_norm2", "mlp.fc1", "mlp.gelu",
                                     "mlp.fc2"};
  using tessera::schema::StepKind;
  tessera::schema::Profile profile;
  profile.clock_hz = 1'500'000'000;
  tessera::schema::ProfileInterner names(profile);
  for (unsigned t = 0; t < tiles; ++t) {
    tessera::schema::TileProfile tile{tessera::target::PhysicalTile(static_cast<std::uint16_t>(t)), {}};
    std::uint32_t at = 0xFFFFFFFFu - 10;  // 2^32 − 11: the first steps wrap
    const auto add = [&](StepKind kind, std::string kernel, std::string operation,
                         std::uint32_t cycles) {
      const std::uint32_t start = at;
      at += cycles;
      tile.steps.push_back(names.step({kind, std::move(kernel), std::move(operation), "", {}},
                                      start, at));
    };
    add(StepKind::kHost, "", "host input pixel_values", 400 + t % 7);
    for (unsigned l = 0; l < layers; ++l) {
      for (unsigned o = 0; o < std::size(kOperations); ++o) {
        const std::string name =
            "vision_model.encoder.layers." + std::to_string(l) + "." + kOperations[o];
        const std::uint32_t work = 200 + (t * 7919u + l * 31u + o * 101u) % 600;
        add(StepKind::kExchange, "", name, 40 + (t + o) % 50);
        add(StepKind::kCompute, o % 3 == 0 ? "tessera_gemm_f16" : "tessera_add_f32", name, work);
        add(StepKind::kSynchronization, "", name, 900 - work);
      }
    }
    // A name that would break out of the page's script element if the
    // payload were not escaped.
    add(StepKind::kCompute, "k<&>", "</script><img id=injected src=x onerror=alert(1)> & <b>", 50);
    profile.tiles.push_back(std::move(tile));
  }
  tessera::schema::write_profile(argv[1], profile);
  return 0;
}
