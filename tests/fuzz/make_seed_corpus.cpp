// Writes the seed corpus for tessera_fuzz_package_reader into a directory:
//   - the sample application (tests/testing/sample_package.hpp), compressed
//     and raw;
//   - deterministic variants of it (fixed-seed std::mt19937): more tiles,
//     blobs of other sizes and compressibility, more pages, provenance and
//     loadability, each compressed and raw;
//   - packages written without validation that break one rule each.
// Every valid seed is read back and every broken one must be rejected, so a
// corpus that no longer matches the reader fails here rather than silently
// seeding the fuzzer with junk.
//
// Usage: tessera_fuzz_seed_corpus <directory>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "schema/package_error.hpp"
#include "schema/reader.hpp"
#include "schema/writer.hpp"
#include "target/memory_map.hpp"
#include "target/topology.hpp"
#include "tests/testing/sample_package.hpp"

namespace {

using namespace tessera::schema;
using tessera::target::PhysicalTile;

constexpr unsigned kVariants = 8;
constexpr std::uint32_t kSeed = 20240601;
// Where sample_application() puts each tile's data segment.
constexpr std::uint32_t kDataAddress = 0x60000;

std::uint32_t uniform(std::mt19937& rng, std::uint32_t low, std::uint32_t high) {
  return std::uniform_int_distribution<std::uint32_t>(low, high)(rng);
}

// Incompressible (random) or compressible (a short repeated pattern) bytes.
std::vector<std::uint8_t> blob_bytes(std::mt19937& rng, std::size_t size) {
  std::vector<std::uint8_t> bytes(size);
  if (uniform(rng, 0, 1) == 0) {
    for (auto& byte : bytes) byte = static_cast<std::uint8_t>(uniform(rng, 0, 255));
  } else {
    const std::size_t period = uniform(rng, 1, 8);
    for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::uint8_t>(i % period);
  }
  return bytes;
}

// A data segment of `size` file bytes at kDataAddress.
Segment data_segment(Application& app, std::mt19937& rng, std::uint32_t size) {
  const std::uint32_t blob = app.blobs.add(blob_bytes(rng, size));
  const std::uint32_t memory_size = std::max<std::uint32_t>(512, (size + 15) & ~15u);
  return Segment{kDataAddress, memory_size, blob, 0, size, kSegmentRead | kSegmentWrite};
}

// The sample application with sizes and counts varied; always valid.
Application variant(std::mt19937& rng, unsigned index) {
  Application app = tessera::testing::sample_application();
  app.compiler_version = fmt::format("tessera-seed {}", index);
  // New data blobs for the sample's tiles (the sample's own become unused
  // and canonical() drops them).
  for (auto& tile : app.tiles) tile.segments[1] = data_segment(app, rng, uniform(rng, 1, 3000));
  // Extra tiles, each with the shared code segment and its own data.
  std::set<std::uint16_t> used = {0, 5};
  const unsigned extra_tiles = uniform(rng, 0, 4);
  for (unsigned t = 0; t < extra_tiles; ++t) {
    std::uint16_t id = 0;
    do {
      id = static_cast<std::uint16_t>(uniform(rng, 1, tessera::target::kTileCount - 1));
    } while (!used.insert(id).second);
    TileImage tile = app.tiles[0];
    tile.tile = PhysicalTile(id);
    tile.segments[1] = data_segment(app, rng, uniform(rng, 1, 600));
    app.tiles.push_back(tile);
  }
  // Host pages beyond the sample's two, attached in order.
  const unsigned extra_pages = uniform(rng, 0, 3);
  for (unsigned p = 0; p < extra_pages; ++p) {
    const auto page = static_cast<std::uint32_t>(app.host_exchange.pages.size());
    app.host_exchange.pages.push_back(HostPage{page, std::uint64_t{uniform(rng, 1, 16)} * 4096});
    app.host_exchange.attach_order.push_back(page);
  }
  const unsigned extra_provenance = uniform(rng, 0, 5);
  for (unsigned p = 0; p < extra_provenance; ++p) {
    app.debug.provenance.push_back(fmt::format("graph: op %{}", uniform(rng, 0, 999)));
  }
  if (uniform(rng, 0, 1) == 1) {
    app.hardware_loadable = true;
    app.not_loadable_reason.clear();
  }
  return app;
}

Application with(const std::function<void(Application&)>& edit) {
  Application app = tessera::testing::sample_application();
  edit(app);
  return app;
}

TileImage& tile5(Application& app) { return app.tiles[1]; }
TileDebug& debug5(Application& app) { return app.debug.tiles[0]; }

struct Broken {
  const char* name;
  std::function<void(Application&)> edit;
};

// One rule broken each (a subset of tests/schema/validation_test.cpp).
const std::vector<Broken>& broken_rules() {
  // clang-format off
  static const std::vector<Broken> rules = {
      {"tile-off-chip", [](auto& a) { tile5(a).tile = PhysicalTile(1472); }},
      {"tiles-unsorted", [](auto& a) { tile5(a).tile = PhysicalTile(0); }},
      {"segment-flags", [](auto& a) { tile5(a).segments[1].flags |= 8; }},
      {"segment-wraps", [](auto& a) { tile5(a).segments[1].address = 0xFFFFFF00; }},
      {"blob-index", [](auto& a) { tile5(a).segments[1].blob = 9; }},
      {"blob-window-wraps",
       [](auto& a) {
         tile5(a).segments[1].blob_offset = 0xFFFFFFFFFFFFFFFF;
         tile5(a).segments[1].file_size = 1;
       }},
      {"entry-point", [](auto& a) { tile5(a).entry_point = 0x60000; }},
      {"shape-overflows", [](auto& a) { a.inputs[0].shape = {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFF}; }},
      {"output-overlap", [](auto& a) { a.outputs[0].slices[1].file_offset = 8; }},
      {"page-twice", [](auto& a) { a.host_exchange.pages[1].index = 0; }},
      {"batch-ends", [](auto& a) { a.host_exchange.calls[0].input_batch_ends = {1, 1}; }},
      {"call-binding-side", [](auto& a) { a.host_exchange.calls[0].input_bindings = {"logits"}; }},
      {"call-payload", [](auto& a) { a.host_exchange.calls[0].inputs[0].file_offset = 1; }},
      {"config-hsp-mark", [](auto& a) { a.device_config_writes[0].offset = 0x302C; }},
      {"operand-register", [](auto& a) { debug5(a).call_sites[0].operands[0].reg = 10; }},
      {"footprint", [](auto& a) { debug5(a).call_sites[0].operands[0].footprint = 33; }},
      {"provenance-index", [](auto& a) { debug5(a).allocations[0].provenance = 2; }},
      {"transfer-words", [](auto& a) { a.debug.exchange_phases[0].transfers[0].words = 0; }},
  };
  // clang-format on
  return rules;
}

void write_file(const std::filesystem::path& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) throw tessera::IoError(fmt::format("{}: cannot write", path.string()));
}

// Writes a valid application compressed and raw, checking that both read back.
unsigned write_valid(const std::filesystem::path& directory, const std::string& name,
                     const Application& app) {
  const Application expected = canonical(app);
  for (const bool compress : {true, false}) {
    const auto bytes = serialize_package(app, WriteOptions{.compress = compress});
    if (!(read_package(bytes) == expected)) {
      throw tessera::Error(fmt::format("{}: the package does not read back", name));
    }
    write_file(directory / fmt::format("{}{}.ipuexe", name, compress ? "" : "-raw"), bytes);
  }
  return 2;
}

int run(const std::filesystem::path& directory) {
  std::filesystem::create_directories(directory);
  unsigned written = write_valid(directory, "sample", tessera::testing::sample_application());
  std::mt19937 rng(kSeed);
  for (unsigned v = 0; v < kVariants; ++v) {
    written += write_valid(directory, fmt::format("variant-{}", v), variant(rng, v));
  }
  for (const Broken& rule : broken_rules()) {
    const auto bytes = serialize_unchecked_for_testing(with(rule.edit));
    try {
      (void)read_package(bytes);
      throw tessera::Error(fmt::format("broken-{}: the reader accepted it", rule.name));
    } catch (const PackageError&) {
      // As intended.
    }
    write_file(directory / fmt::format("broken-{}.ipuexe", rule.name), bytes);
    ++written;
  }
  std::printf("%u seed packages in %s\n", written, directory.string().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <directory>\n",
                 argc > 0 ? argv[0] : "tessera_fuzz_seed_corpus");
    return 2;
  }
  try {
    return run(argv[1]);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "tessera_fuzz_seed_corpus: %s\n", error.what());
    return 1;
  }
}
