// The whole hardware path without an SDK or a device (issue 21 item 6):
// `tessera compile --sdk` with the fake popc (tests/compiler/elf/fake_sdk)
// builds the device sources through the kernel cache, links them into every
// tile and marks the package hardware-loadable; `tessera run --backend c600`
// loads it on the fake C600 (tests/driver/fake_device.hpp) and runs its host
// call through the driver; the simulator runs it with the same results as the
// emulated package. The commands run in-process, as `tessera` would run them.
//
// The fake device runs no tile code (its script stands in for the program's
// host syncs), so on the fake what is checked is the load — every tile, in
// whole batches, the linked kernel bytes in device memory where the calls go
// — and the host protocol; the numbers are checked on the simulator.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/transport_options.hpp"
#include "runtime/tensor.hpp"
#include "runtime/tensor_file.hpp"
#include "schema/profile.hpp"
#include "schema/profile_samples.hpp"
#include "schema/reader.hpp"
#include "support/error.hpp"
#include "support/little_endian.hpp"
#include "target/host_exchange.hpp"
#include "target/isa.hpp"
#include "tests/backends/c600/fixture.hpp"
#include "tests/testing/scratch.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using runtime::HostTensor;
namespace isa = target::isa;

// y = x transposed, s = the column sums of x.
constexpr const char* kGraph = R"({
  "format": "tessera.graph", "version": 1,
  "operations": [
    {"op": "host_input", "name": "x", "dtype": "f32", "shape": [6, 4], "result": "x"},
    {"op": "transpose", "inputs": ["x"], "permutation": [1, 0], "result": "t"},
    {"op": "reduce_sum", "inputs": ["x"], "axes": [0], "result": "s"},
    {"op": "host_output", "name": "y", "inputs": ["t"]},
    {"op": "host_output", "name": "s", "inputs": ["s"]}
  ]
})";

struct Ran {
  int status = 0;
  std::string out;
};

Ran run(const cli::Command& command, const std::vector<std::string>& args) {
  std::ostringstream out, err;
  cli::Streams io{out, err};
  Ran ran;
  ran.status = command.run(args, io);
  ran.out = out.str();
  return ran;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::size_t lines(const fs::path& path) {
  std::ifstream in(path);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

class HardwarePackage : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("FAKE_POPC_HELPER", TESSERA_FAKE_POPC_HELPER, 1);
    ::setenv("FAKE_POPC_LOG", scratch_.path("popc.log").c_str(), 1);
    ::setenv("TESSERA_KERNEL_CACHE", scratch_.path("cache").c_str(), 1);
    ::unsetenv("TESSERA_POPLAR_SDK");
    ::unsetenv("TESSERA_DEVICE_SOURCES");
    std::ofstream(graph_) << kGraph;
    std::vector<float> x(24);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.75f * static_cast<float>(i) - 5.0f;
    x_ = x;
    std::vector<std::uint8_t> bytes(96);
    std::memcpy(bytes.data(), x.data(), bytes.size());
    runtime::write_tensor_file(x_npy_, HostTensor(schema::DType::kF32, {6, 4}, bytes));
  }
  void TearDown() override {
    cli::set_c600_opener_for_testing({});
    for (const char* name : {"FAKE_POPC_LOG", "TESSERA_KERNEL_CACHE", "TESSERA_POPLAR_SDK",
                             "TESSERA_DEVICE_SOURCES"}) {
      ::unsetenv(name);
    }
  }

  Ran compile(const std::string& package, std::vector<std::string> extra = {}) {
    std::vector<std::string> args{graph_, "-o", package, "--tiles", "6"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run(cli::compile_command(), args);
  }
  std::vector<float> read_f32(const std::string& path) {
    const HostTensor tensor = runtime::read_npy_file(path);
    std::vector<float> values(tensor.byte_size() / 4);
    std::memcpy(values.data(), tensor.bytes().data(), tensor.byte_size());
    return values;
  }

  testing::ScratchDirectory scratch_;
  std::string graph_ = scratch_.path("graph.json");
  std::string x_npy_ = scratch_.path("x.npy");
  std::vector<float> x_;
  const std::string sdk_ = TESSERA_FAKE_SDK;
};

TEST_F(HardwarePackage, CompileWithTheSdkBuildsEachSourceOnceLinksAndIsLoadable) {
  const std::string emulated = scratch_.path("emulated.ipuexe");
  const std::string linked = scratch_.path("linked.ipuexe");
  const std::string again = scratch_.path("again.ipuexe");
  ASSERT_EQ(compile(emulated).status, 0);
  EXPECT_FALSE(fs::exists(scratch_.path("popc.log")));  // no SDK named: popc never runs
  const Ran first = compile(linked, {"--sdk", sdk_});
  ASSERT_EQ(first.status, 0);
  // The graph calls the element moves, the sum and the staging copies: three
  // sources, each compiled once.
  EXPECT_NE(first.out.find("device kernels: 3 sources (3 built by popc, 0 from the cache); "
                           "hardware-loadable"),
            std::string::npos)
      << first.out;
  EXPECT_EQ(lines(scratch_.path("popc.log")), 3u);
  // Again, through the environment variable: all from the cache, same bytes.
  ::setenv("TESSERA_POPLAR_SDK", sdk_.c_str(), 1);
  const Ran second = compile(again);
  ASSERT_EQ(second.status, 0);
  EXPECT_NE(second.out.find("3 sources (0 built by popc, 3 from the cache); hardware-loadable"),
            std::string::npos)
      << second.out;
  EXPECT_EQ(lines(scratch_.path("popc.log")), 3u);
  EXPECT_EQ(read_file(linked), read_file(again));

  const schema::Application no_sdk = schema::read_package_file(emulated);
  const schema::Application app = schema::read_package_file(linked);
  EXPECT_FALSE(no_sdk.hardware_loadable);
  EXPECT_NE(no_sdk.not_loadable_reason.find("kernels are emulated only"), std::string::npos);
  EXPECT_TRUE(app.hardware_loadable);
  EXPECT_EQ(app.tiles.size() % 64, 0u);

  // The sum's calls go to its linked entry, holding what the fake popc wrote
  // for kernels/device/reduction.cpp: the source's length first, and a word
  // the linker relocated to the source's .rodata (its length again).
  const auto source_bytes = static_cast<std::uint32_t>(
      fs::file_size(fs::path(TESSERA_SOURCE_DIR) / "kernels/device/reduction.cpp"));
  std::size_t sums = 0;
  for (const auto& debug : app.debug.tiles) {
    for (const auto& symbol : debug.symbols) {
      if (symbol.name != "tessera_sum_f32") continue;
      ++sums;
      const auto& image = *std::find_if(app.tiles.begin(), app.tiles.end(),
                                        [&](const auto& t) { return t.tile == debug.tile; });
      std::map<std::uint32_t, std::uint32_t> words;  // address → word, over every segment
      for (const auto& segment : image.segments) {
        const auto bytes = schema::segment_bytes(app, segment);
        for (std::size_t i = 0; i + 4 <= bytes.size(); i += 4) {
          words[segment.address + static_cast<std::uint32_t>(i)] = load_u32_le(bytes.data() + i);
        }
      }
      EXPECT_EQ(words.at(symbol.address), source_bytes);
      EXPECT_EQ(words.at(words.at(symbol.address + 8)), source_bytes);
    }
  }
  EXPECT_GT(sums, 0u);

  // Every device object carries the same COMDAT helper (fake_popc_object.cpp):
  // on each tile all entries, whichever source they come from, point at one
  // copy of it, and some tile links entries of more than one source.
  std::size_t tiles_with_two_sources = 0;
  for (const auto& debug : app.debug.tiles) {
    const auto& image = *std::find_if(app.tiles.begin(), app.tiles.end(),
                                      [&](const auto& t) { return t.tile == debug.tile; });
    std::map<std::uint32_t, std::uint32_t> words;
    for (const auto& segment : image.segments) {
      const auto bytes = schema::segment_bytes(app, segment);
      for (std::size_t i = 0; i + 4 <= bytes.size(); i += 4) {
        words[segment.address + static_cast<std::uint32_t>(i)] = load_u32_le(bytes.data() + i);
      }
    }
    std::set<std::uint32_t> helpers, sources;
    for (const auto& symbol : debug.symbols) {
      if (!words.contains(symbol.address + 12)) continue;
      const std::uint32_t helper = words.at(symbol.address + 12);
      if (!words.contains(helper) || words.at(helper) != 0x504C4548u) continue;  // not an entry
      helpers.insert(helper);
      sources.insert(words.at(symbol.address));
    }
    EXPECT_LE(helpers.size(), 1u) << debug.tile;
    tiles_with_two_sources += sources.size() >= 2;
  }
  EXPECT_GT(tiles_with_two_sources, 0u);
}

TEST_F(HardwarePackage, TheLinkedPackageSimulatesLikeTheEmulatedOne) {
  const std::string emulated = scratch_.path("emulated.ipuexe");
  const std::string linked = scratch_.path("linked.ipuexe");
  ASSERT_EQ(compile(emulated).status, 0);
  ASSERT_EQ(compile(linked, {"--sdk", sdk_}).status, 0);
  for (const auto& [package, tag] : {std::pair{emulated, "e"}, std::pair{linked, "l"}}) {
    const std::string y = scratch_.path(std::string(tag) + "y.npy");
    const std::string s = scratch_.path(std::string(tag) + "s.npy");
    ASSERT_EQ(run(cli::run_command(),
                  {package, "-i", "x=" + x_npy_, "-o", "y=" + y, "-o", "s=" + s, "--threads", "1"})
                  .status,
              0);
  }
  EXPECT_EQ(read_file(scratch_.path("ey.npy")), read_file(scratch_.path("ly.npy")));
  EXPECT_EQ(read_file(scratch_.path("es.npy")), read_file(scratch_.path("ls.npy")));
  // And against the CPU: the transpose and the column sums in row order.
  const auto y = read_f32(scratch_.path("ly.npy"));
  const auto s = read_f32(scratch_.path("ls.npy"));
  for (std::size_t i = 0; i < 4; ++i) {
    for (std::size_t j = 0; j < 6; ++j) EXPECT_EQ(y[i * 6 + j], x_[j * 4 + i]);
    float sum = x_[i];
    for (std::size_t r = 1; r < 6; ++r) sum += x_[r * 4 + i];
    EXPECT_EQ(s[i], sum);
  }
}

TEST_F(HardwarePackage, RunOnTheFakeC600LoadsEveryTileWithItsLinkedKernels) {
  const std::string linked = scratch_.path("linked.ipuexe");
  const std::string emulated = scratch_.path("emulated.ipuexe");
  ASSERT_EQ(compile(linked, {"--sdk", sdk_}).status, 0);
  ASSERT_EQ(compile(emulated).status, 0);
  const schema::Application app = schema::read_package_file(linked);

  testing::FakeDevice fake;
  const backends::c600::C600Options options = testing::fake_options(scratch_);
  cli::set_c600_opener_for_testing([&](const backends::c600::C600Options& given) {
    EXPECT_EQ(given.device, options.device);
    EXPECT_EQ(given.bootloader, options.bootloader);
    return backends::c600::open_c600(options, fake);
  });
  const std::vector<std::string> c600{"--backend",    "c600",
                                      "--device",     options.device,
                                      "--bootloader", options.bootloader.string(),
                                      "--ipucfg",     options.ipucfg.string(),
                                      "--timeout",    "10"};

  // The emulated package is refused before anything is loaded.
  std::vector<std::string> refused{emulated, "-i", "x=" + x_npy_};
  refused.insert(refused.end(), c600.begin(), c600.end());
  try {
    run(cli::run_command(), refused);
    ADD_FAILURE() << "the emulated package was not refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not hardware-loadable: kernels are emulated only"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(fake.batches_loaded(), 0u);

  // The program's host syncs, as the fake's script: the startup rendezvous,
  // then an entry and a completion per host batch of each call.
  fake.expect_sync(target::kHspGs2Control, "startup");
  for (const auto& call : app.host_exchange.calls) {
    for (std::size_t b = 0; b < call.input_batch_ends.size() + call.output_batch_ends.size(); ++b) {
      fake.expect_sync(target::kHspGs2Control, "batch entry");
      fake.expect_sync(target::kHspGs2Control, "batch completion");
    }
  }
  std::vector<std::string> args{linked,
                                "-i",
                                "x=" + x_npy_,
                                "-o",
                                "y=" + scratch_.path("y.npy"),
                                "-o",
                                "s=" + scratch_.path("s.npy")};
  args.insert(args.end(), c600.begin(), c600.end());
  const Ran ran = run(cli::run_command(), args);
  EXPECT_EQ(ran.status, 0);
  EXPECT_TRUE(fake.violations().empty()) << fake.violations().front();
  EXPECT_EQ(fake.pending_syncs(), 0u);
  EXPECT_TRUE(fs::exists(scratch_.path("y.npy")));

  // Every tile of the package, in whole batches.
  EXPECT_EQ(fake.batches_loaded(), app.tiles.size() / 64);
  EXPECT_EQ(fake.loaded_tiles().size(), app.tiles.size());
  // Every segment of every tile, byte for byte in the fake's SRAM (the
  // run scripted no H2D copy, so nothing overwrote it).
  for (const auto& image : app.tiles) {
    for (const auto& segment : image.segments) {
      EXPECT_EQ(fake.sram(image.tile.value, segment.address, segment.memory_size),
                schema::segment_bytes(app, segment))
          << image.tile << " at " << segment.address;
    }
  }
  // In device memory, where each call goes: the linked kernel's bytes (the
  // package's own), not a stub; and the call instruction targets it.
  std::size_t checked = 0;
  for (const auto& debug : app.debug.tiles) {
    for (const auto& site : debug.call_sites) {
      const std::uint32_t call = fake.sram_word(debug.tile.value, site.pc);
      const auto decoded = isa::decode(std::span<const std::uint32_t>(&call, 1)).instruction;
      ASSERT_TRUE(std::holds_alternative<isa::Call>(decoded));
      const std::uint32_t target = std::get<isa::Call>(decoded).target;
      const auto symbol = std::find_if(debug.symbols.begin(), debug.symbols.end(),
                                       [&](const auto& s) { return s.address == target; });
      ASSERT_NE(symbol, debug.symbols.end());
      EXPECT_EQ(symbol->name, site.kernel);
      // The fake popc's entry: the source's length, its index, a relocated
      // pointer to the source's .rodata, which holds the length again.
      const std::uint32_t length = fake.sram_word(debug.tile.value, target);
      EXPECT_GT(length, 100u);
      EXPECT_EQ(fake.sram_word(debug.tile.value, fake.sram_word(debug.tile.value, target + 8)),
                length);
      ++checked;
    }
  }
  EXPECT_GT(checked, 0u);
}

// Built with --sdk and --profile-samples: the sample helper is linked like
// any kernel (its device source, kernels/device/runtime_helpers.cpp), every
// tile has a sample buffer, and `tessera run --backend c600 --profile FILE`
// writes the profile the buffers hold. The fake runs no code: its script
// writes each tile's buffer at the last rendezvous (a host step of 50 cycles
// from 2^32 − 20, through the wrap), as the program would.
TEST_F(HardwarePackage, AProfilingPackageLinksTheSampleHelperAndRunsWithAProfile) {
  const std::string linked = scratch_.path("profiled.ipuexe");
  const Ran compiled = compile(linked, {"--sdk", sdk_, "--profile-samples"});
  ASSERT_EQ(compiled.status, 0);
  EXPECT_NE(compiled.out.find("; hardware-loadable"), std::string::npos) << compiled.out;
  const schema::Application app = schema::read_package_file(linked);
  EXPECT_TRUE(app.hardware_loadable) << app.not_loadable_reason;
  const auto helper_source = static_cast<std::uint32_t>(
      fs::file_size(fs::path(TESSERA_SOURCE_DIR) / "kernels/device/runtime_helpers.cpp"));
  std::size_t sample_calls = 0, linked_helpers = 0;
  for (const auto& debug : app.debug.tiles) {
    ASSERT_NE(schema::sample_buffer(debug), nullptr) << debug.tile;
    const auto image = std::find_if(app.tiles.begin(), app.tiles.end(),
                                    [&](const auto& t) { return t.tile == debug.tile; });
    for (const auto& symbol : debug.symbols) {
      if (symbol.name != "tessera_profile_sample") continue;
      // The fake popc's entry for the source: its length first.
      for (const auto& segment : image->segments) {
        if (segment.address > symbol.address ||
            symbol.address + 4 > segment.address + segment.memory_size) {
          continue;
        }
        const auto bytes = schema::segment_bytes(app, segment);
        EXPECT_EQ(load_u32_le(bytes.data() + (symbol.address - segment.address)), helper_source);
        ++linked_helpers;
      }
    }
    for (const auto& site : debug.call_sites) {
      sample_calls += site.kernel == "tessera_profile_sample";
    }
  }
  EXPECT_GE(sample_calls, 2 * app.tiles.size());  // at least the startup and end records
  EXPECT_EQ(linked_helpers, app.tiles.size());     // every tile's calls go to the linked entry

  testing::FakeDevice fake;
  const backends::c600::C600Options options = testing::fake_options(scratch_);
  cli::set_c600_opener_for_testing(
      [&](const backends::c600::C600Options&) { return backends::c600::open_c600(options, fake); });
  fake.expect_sync(target::kHspGs2Control, "startup");
  std::size_t batches = 0;
  for (const auto& call : app.host_exchange.calls) {
    batches += call.input_batch_ends.size() + call.output_batch_ends.size();
  }
  constexpr std::uint32_t kStart = 0xFFFFFFFFu - 19;
  const testing::FakeDevice::Action program = [&](testing::FakeDevice& device) {
    // Two records: a host step (site kind 4, no operation), the end (kind 6).
    const std::uint32_t words[] = {2, 0, 0x9FFFFFFFu, kStart, 0xC0000000u, kStart + 50};
    std::vector<std::uint8_t> bytes(sizeof words);
    for (std::size_t i = 0; i < 6; ++i) store_u32_le(words[i], bytes.data() + 4 * i);
    for (const auto& debug : app.debug.tiles) {
      device.write_sram(debug.tile.value, schema::sample_buffer(debug)->address, bytes);
    }
  };
  for (std::size_t b = 0; b < batches; ++b) {
    fake.expect_sync(target::kHspGs2Control, "batch entry");
    fake.expect_sync(target::kHspGs2Control, "batch completion",
                     b + 1 < batches ? testing::FakeDevice::Action{} : program);
  }
  const std::string profile = scratch_.path("run.profile");
  const Ran ran = run(cli::run_command(),
                      {linked, "-i", "x=" + x_npy_, "--backend", "c600", "--device", options.device,
                       "--bootloader", options.bootloader.string(), "--ipucfg",
                       options.ipucfg.string(), "--timeout", "10", "--profile", profile});
  EXPECT_EQ(ran.status, 0);
  EXPECT_TRUE(fake.violations().empty()) << fake.violations().front();
  const schema::Profile read = schema::read_profile_file(profile);
  EXPECT_EQ(read.origin, schema::ClockOrigin::kPerTile);
  ASSERT_EQ(read.tiles.size(), app.tiles.size());
  for (const auto& tile : read.tiles) {
    ASSERT_EQ(tile.steps.size(), 1u) << tile.tile;
    EXPECT_EQ(read.kind(tile.steps[0]), schema::StepKind::kHost);
    EXPECT_EQ(tile.steps[0].start_cycle, kStart);
    EXPECT_EQ(tile.steps[0].cycles(), 50u);
  }
}

TEST_F(HardwarePackage, ATinySiglipTowerLinksEveryKernelItCallsAndSimulatesTheSame) {
  // Every kernel family the tower uses (GEMMs, attention, LayerNorm, GeLU,
  // the rearranges, F143 expansion) has a device source the build finds.
  const std::string config = scratch_.path("tiny.json");
  std::ofstream(config) << R"({
    "model_type": "siglip_vision_model", "hidden_size": 64, "intermediate_size": 128,
    "num_hidden_layers": 2, "num_attention_heads": 2, "image_size": 32, "patch_size": 8})";
  const std::string model = scratch_.path("tiny");
  ASSERT_EQ(run(cli::siglip_command(), {"random-weights", "--config", config, "-o", model}).status,
            0);
  for (const char* precision : {"f16", "f143"}) {
    SCOPED_TRACE(precision);
    const std::string package = scratch_.path(std::string("tower-") + precision + ".ipuexe");
    const Ran compiled =
        run(cli::siglip_command(), {"compile", "--model", model, "--precision", precision,
                                    "--tiles", "64", "--sdk", sdk_, "-o", package});
    ASSERT_EQ(compiled.status, 0);
    EXPECT_NE(compiled.out.find("; hardware-loadable"), std::string::npos) << compiled.out;
    const schema::Application app = schema::read_package_file(package);
    EXPECT_TRUE(app.hardware_loadable) << app.not_loadable_reason;
    EXPECT_EQ(app.tiles.size() % 64, 0u);
    std::set<std::string> kernels;
    for (const auto& debug : app.debug.tiles) {
      for (const auto& site : debug.call_sites) kernels.insert(site.kernel);
    }
    EXPECT_TRUE(kernels.contains("tessera_gemm_f16_init") ||
                kernels.contains("tessera_gemm_f16_expanded_f143_init"));
    EXPECT_TRUE(kernels.contains("tessera_attention_softmax_f16"));
  }
  // Linked, the tower simulates to the same bytes as emulated.
  std::vector<float> pixels(3 * 32 * 32);
  for (std::size_t i = 0; i < pixels.size(); ++i) {
    pixels[i] = static_cast<float>(
        0.7 * std::sin(0.11 * static_cast<double>(i % 1024) + static_cast<double>(i / 1024)));
  }
  std::vector<std::uint8_t> bytes(pixels.size() * 4);
  std::memcpy(bytes.data(), pixels.data(), bytes.size());
  const std::string pixels_npy = scratch_.path("pixels.npy");
  runtime::write_tensor_file(pixels_npy, HostTensor(schema::DType::kF32, {1, 3, 32, 32}, bytes));
  const std::vector<std::string> tower{"run",      "--model",   model, "--precision",
                                       "f143",     "--tiles",   "64",  "--pixels",
                                       pixels_npy, "--threads", "1"};
  std::vector<std::string> emulated = tower, linked = tower;
  emulated.insert(emulated.end(), {"-o", scratch_.path("emulated.npy")});
  linked.insert(linked.end(), {"-o", scratch_.path("linked.npy"), "--sdk", sdk_});
  ASSERT_EQ(run(cli::siglip_command(), emulated).status, 0);
  ASSERT_EQ(run(cli::siglip_command(), linked).status, 0);
  EXPECT_EQ(read_file(scratch_.path("emulated.npy")), read_file(scratch_.path("linked.npy")));
  EXPECT_EQ(runtime::read_npy_file(scratch_.path("linked.npy")).shape(),
            (std::vector<std::uint64_t>{1, 64}));
}

TEST_F(HardwarePackage, ToolFailuresAndAMissingSdkAreClearErrors) {
  const std::string package = scratch_.path("p.ipuexe");
  try {
    compile(package, {"--sdk", scratch_.path("no-sdk")});
    ADD_FAILURE() << "no error for a missing SDK";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no-sdk: no popc"), std::string::npos) << e.what();
  }
  // A device source popc refuses: the error carries popc's stderr.
  const fs::path tree = scratch_.path("tree");
  fs::create_directories(tree / "kernels/device");
  std::ofstream(tree / "kernels/device/all.cpp")
      << "TESSERA_DEVICE_KERNEL(tessera_copy_words, b)\n"
         "TESSERA_DEVICE_KERNEL(tessera_move_elements_b32, b)\n"
         "TESSERA_DEVICE_KERNEL(tessera_sum_f32, b)\n"
         "#error this target has no f32 unit\n";
  ::setenv("TESSERA_DEVICE_SOURCES", tree.c_str(), 1);
  try {
    compile(package, {"--sdk", sdk_});
    ADD_FAILURE() << "no error for a popc failure";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("all.cpp:4: error: this target has no f32 unit"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(package));
}

}  // namespace
}  // namespace tessera
