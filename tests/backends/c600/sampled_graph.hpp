#pragma once
// A graph compiled with profile samples (compiler::CompileOptions::
// profile_samples) and run on the simulator: several operations, a repeat
// of three iterations around an add and two transposes (exchange in each),
// a reduction after it. What the run leaves in every tile's sample buffer
// is what a C600 would leave there (the helper's host model writes the
// simulated cycle at worker 0's read), so reading the buffers back and
// decoding them is the C600 backend's path.

#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <vector>

#include "backends/c600/device_profile.hpp"
#include "backends/sim/sim_transport.hpp"
#include "compiler/compile.hpp"
#include "compiler/ir/graph_json.hpp"
#include "runtime/session.hpp"
#include "schema/profile_samples.hpp"
#include "target/clock.hpp"

namespace tessera::testing {

inline constexpr const char* kSampledGraph = R"({
  "format": "tessera.graph", "version": 1,
  "operations": [
    {"op": "host_input", "name": "x", "dtype": "f32", "shape": [16, 8], "result": "x"},
    {"op": "repeat", "count": 3, "carried": ["x"], "invariant": [], "results": ["h"],
     "body": {"arguments": ["a"],
              "operations": [
                {"op": "add", "inputs": ["a", "a"], "result": "d"},
                {"op": "transpose", "inputs": ["d"], "permutation": [1, 0], "result": "t"},
                {"op": "transpose", "inputs": ["t"], "permutation": [1, 0], "result": "u"}],
              "yield": ["u"]}},
    {"op": "reduce_sum", "inputs": ["h"], "axes": [0], "result": "s"},
    {"op": "host_output", "name": "y", "inputs": ["h"]},
    {"op": "host_output", "name": "s", "inputs": ["s"]}
  ]
})";
inline constexpr std::uint32_t kSampledGraphTiles = 8;
inline constexpr std::uint32_t kSampledGraphIterations = 3;

// x = 0.5 i, f32[16, 8].
inline std::vector<std::uint8_t> sampled_graph_input() {
  std::vector<std::uint8_t> bytes(16 * 8 * 4);
  for (std::size_t i = 0; i < 128; ++i) {
    const float value = 0.5f * static_cast<float>(i);
    std::memcpy(bytes.data() + 4 * i, &value, 4);
  }
  return bytes;
}

// Device code that defines no kernel: the package is laid out for loading
// (whole 64-tile batches, the supervisor stack set) with every call still a
// host-model stub.
class NoDeviceCode final : public compiler::emit::DeviceCode {
 public:
  const compiler::elf::ObjectFile* object(std::string_view) override { return nullptr; }
};

// With `whole_batches`, laid out for the C600's loader (the fake runs no
// kernels, so the caller may mark it hardware-loadable).
inline schema::Application compile_sampled_graph(std::optional<std::uint32_t> records,
                                                 bool whole_batches = false) {
  NoDeviceCode no_device;
  compiler::CompileOptions options;
  options.tiles = kSampledGraphTiles;
  options.profile_samples = records;
  if (whole_batches) options.device = &no_device;
  return compiler::compile(compiler::read_graph_json(kSampledGraph), options).application;
}

// A tile's sample buffer words (header first, every record slot), as the
// transport reads them.
inline std::vector<std::uint32_t> sample_buffer_words(runtime::Transport& transport,
                                                      const schema::TileDebug& debug) {
  const schema::Allocation* buffer = schema::sample_buffer(debug);
  if (buffer == nullptr) return {};
  std::vector<std::uint8_t> bytes(buffer->size);
  transport.read_sram(debug.tile, buffer->address, bytes);
  std::vector<std::uint32_t> words(bytes.size() / 4);
  std::memcpy(words.data(), bytes.data(), 4 * words.size());
  return words;
}

struct SampledRun {
  schema::Application app;
  runtime::BindingBytes outputs;
  std::uint64_t cycles = 0;                  // until every tile halted
  std::optional<schema::Profile> simulated;  // the simulator's own profile of the run
  std::optional<schema::Profile> decoded;    // the buffers, decoded as the C600 backend does
  std::map<std::uint16_t, std::vector<std::uint32_t>> buffers;  // by physical tile
};

inline SampledRun run_sampled(schema::Application app) {
  SampledRun run;
  run.app = std::move(app);
  backends::SimTransportOptions options;
  options.sim.trace = true;  // the simulator's own profile
  backends::SimTransport transport(target::Topology::c600(), options);
  runtime::Session session(transport, run.app);
  const auto x = sampled_graph_input();
  run.outputs = session.call("run", {{"x", x}});
  session.finish();
  run.cycles = transport.chip().now();
  run.simulated = transport.profile();
  if (const auto sampled = backends::c600::sampled_package(run.app)) {
    run.decoded = backends::c600::read_device_profile(
        *sampled,
        [&](target::PhysicalTile tile, std::uint32_t address, std::span<std::uint8_t> bytes) {
          transport.read_sram(tile, address, bytes);
        },
        target::kC600ClockHz);
  }
  for (const auto& debug : run.app.debug.tiles) {
    auto words = sample_buffer_words(transport, debug);
    if (!words.empty()) run.buffers[debug.tile.value] = std::move(words);
  }
  return run;
}

}  // namespace tessera::testing
