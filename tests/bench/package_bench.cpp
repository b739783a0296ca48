// Package benchmark: builds a whole-chip application (1472 tiles, ~450 MB of
// weights by default), writes it with write_package and reads it back with
// read_package_file, and reports throughput and peak memory.
//
// Not a test: nothing here asserts on timing. Run it from a Release build:
//
//   build-release/tests/bench/tessera_bench_package [--weights-mb 450] [--random] …
//
// MB are 10^6 bytes throughout; throughput is uncompressed (model) bytes per
// second, by wall time (the write's includes its fsync) and by CPU time (user +
// system, which a busy machine disturbs less). Peak memory is the resident set
// (VmHWM): the write is measured in this process after resetting the
// high-water mark (/proc/self/clear_refs), the read in a forked child that
// starts after the model has been freed, so neither phase's number includes
// the other's.

#include <fcntl.h>
#include <malloc.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "schema/digest.hpp"
#include "schema/model.hpp"
#include "schema/reader.hpp"
#include "schema/writer.hpp"
#include "support/error.hpp"
#include "target/memory_map.hpp"
#include "target/topology.hpp"

namespace {

using namespace tessera;
using namespace tessera::schema;
using Clock = std::chrono::steady_clock;

constexpr double kMB = 1e6;

// ---- Options -------------------------------------------------------------------

struct Options {
  std::filesystem::path output;
  double weights_mb = 450;
  int tiles = target::kTileCount;
  int zstd_level = kDefaultZstdLevel;
  bool compress = true;
  bool random = false;
  bool keep = false;
};

constexpr std::string_view kUsage = R"(usage: tessera_bench_package [options]

Builds a whole-chip package, writes and reads it, and reports MB/s and peak memory.

  --output PATH      package path (default: a file in the temporary directory)
  --weights-mb N     total weight bytes in MB (10^6 bytes; default 450)
  --tiles N          tiles, logical 0..N-1 on their C600 physical ids (default 1472)
  --zstd-level L     zstd level for the writer (default 3)
  --no-compress      store every blob raw
  --random           incompressible random weights instead of FP16-like ones
  --keep             keep the package file afterwards
  --help             this text
)";

Options parse_options(int argc, char** argv) {
  Options options;
  const auto value = [&](int& i, std::string_view flag) -> std::string {
    if (i + 1 >= argc) throw UsageError(fmt::format("{} needs a value", flag));
    return argv[++i];
  };
  const auto number = [](const std::string& text, std::string_view flag) {
    std::size_t used = 0;
    double parsed = 0;
    try {
      parsed = std::stod(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != text.size() || !std::isfinite(parsed)) {
      throw UsageError(fmt::format("{}: '{}' is not a number", flag, text));
    }
    return parsed;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      fmt::print("{}", kUsage);
      std::exit(0);
    } else if (arg == "--output") {
      options.output = value(i, arg);
    } else if (arg == "--weights-mb") {
      options.weights_mb = number(value(i, arg), arg);
      if (options.weights_mb <= 0) throw UsageError("--weights-mb must be positive");
    } else if (arg == "--tiles") {
      const double tiles = number(value(i, arg), arg);
      if (tiles < 1 || tiles > target::kTileCount || tiles != std::floor(tiles)) {
        throw UsageError(
            fmt::format("--tiles must be a whole number in 1..{}", target::kTileCount));
      }
      options.tiles = static_cast<int>(tiles);
    } else if (arg == "--zstd-level") {
      const double level = number(value(i, arg), arg);
      if (level != std::floor(level) || level < -7 || level > 22) {
        throw UsageError("--zstd-level must be a whole number in -7..22");
      }
      options.zstd_level = static_cast<int>(level);
    } else if (arg == "--no-compress") {
      options.compress = false;
    } else if (arg == "--random") {
      options.random = true;
    } else if (arg == "--keep") {
      options.keep = true;
    } else {
      throw UsageError(fmt::format("unknown argument '{}' (try --help)", arg));
    }
  }
  if (options.output.empty()) {
    options.output =
        std::filesystem::temp_directory_path() / fmt::format("tessera_bench_{}.ipuexe", ::getpid());
  }
  return options;
}

// ---- Memory and time -----------------------------------------------------------

// A "VmRSS:" style field of /proc/self/status in bytes, or -1.
std::int64_t status_bytes(std::string_view field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with(field)) return std::stoll(line.substr(field.size())) * 1024;
  }
  return -1;
}
std::int64_t rss_bytes() { return status_bytes("VmRSS:"); }
std::int64_t hwm_bytes() { return status_bytes("VmHWM:"); }

// Resets VmHWM to the current RSS (Linux ≥ 4.0). False when the kernel refuses.
bool reset_hwm() {
  const int fd = ::open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, "5", 1) == 1;
  ::close(fd);
  return ok;
}

// ru_maxrss of this process, in bytes (it never resets).
std::int64_t maxrss_bytes(int who = RUSAGE_SELF) {
  rusage usage{};
  ::getrusage(who, &usage);
  return std::int64_t{usage.ru_maxrss} * 1024;
}

// User + system CPU seconds this process has used. Wall time on a shared
// machine includes waiting for the CPU; this does not.
double cpu_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string mb(double bytes) { return fmt::format("{:.1f} MB", bytes / kMB); }

// ---- The application ---------------------------------------------------------

// IEEE binary16 bits of `value`, rounded to nearest even.
std::uint16_t to_fp16(float value) {
  const auto bits = std::bit_cast<std::uint32_t>(value);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude >= 0x7F800000u) {  // inf, nan
    return static_cast<std::uint16_t>(sign | 0x7C00u | (magnitude > 0x7F800000u ? 0x200u : 0u));
  }
  if (magnitude >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);  // overflow
  if (magnitude < 0x38800000u) {  // subnormal or zero in binary16
    const float scaled = std::bit_cast<float>(magnitude) * 16777216.0f;  // · 2^24
    return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(std::nearbyint(scaled)));
  }
  const std::uint32_t rebiased = magnitude - 0x38000000u;  // exponent 127 → 15
  const std::uint32_t rounded = rebiased + 0xFFFu + ((rebiased >> 13) & 1u);
  return static_cast<std::uint16_t>(sign | (rounded >> 13));
}

// Weights of one tile: FP16 encodings of N(0, 0.02²) values, or random bytes.
std::vector<std::uint8_t> tile_weights(std::size_t bytes, std::uint32_t seed, bool random) {
  std::vector<std::uint8_t> out(bytes);
  std::mt19937 engine(seed);
  if (random) {
    for (std::size_t i = 0; i < bytes; i += 4) {
      const auto word = static_cast<std::uint32_t>(engine());
      for (std::size_t b = 0; b < 4 && i + b < bytes; ++b) {
        out[i + b] = static_cast<std::uint8_t>(word >> (8 * b));
      }
    }
    return out;
  }
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (std::size_t i = 0; i + 1 < bytes; i += 2) {
    const std::uint16_t half = to_fp16(normal(engine));
    out[i] = static_cast<std::uint8_t>(half);
    out[i + 1] = static_cast<std::uint8_t>(half >> 8);
  }
  return out;
}

// A linked runtime's worth of instruction-like words: a few dozen opcodes with
// varied operand fields.
std::vector<std::uint8_t> runtime_code(std::size_t bytes) {
  std::mt19937 engine(0x7E55E2A);
  std::vector<std::uint8_t> out(bytes);
  for (std::size_t i = 0; i + 4 <= bytes; i += 4) {
    const auto opcode = static_cast<std::uint32_t>(engine() % 48) << 24;
    const auto operands = static_cast<std::uint32_t>(engine()) & 0x00F0FFFFu;
    const std::uint32_t word = opcode | operands;
    for (std::size_t b = 0; b < 4; ++b) out[i + b] = static_cast<std::uint8_t>(word >> (8 * b));
  }
  return out;
}

struct Layout {
  std::uint32_t code_bytes = 8 * 1024;
  std::uint32_t activations = target::kDataBase;  // zero-filled, inputs then outputs
  std::uint32_t activation_bytes = 0x2000;
  std::uint32_t input_bytes = 0x800;   // [tiles, 1024] f16
  std::uint32_t output_bytes = 0x400;  // [tiles, 512] f16
  std::uint32_t weights = 0;
  std::uint32_t weight_bytes = 0;
};

Layout plan_layout(const Options& options) {
  Layout layout;
  const double per_tile = options.weights_mb * kMB / options.tiles;
  // Whole 8-byte words (FP16 elements, paired loads).
  const double words = std::floor(per_tile / 8);
  const double room = target::kLoadLimit - target::kLinkerRegion2.begin;
  if (words < 1 || words * 8 > room) {
    throw UsageError(
        fmt::format("{} MB over {} tiles is {:.0f} bytes per tile; a tile can load "
                    "8..{:.0f} bytes of weights",
                    options.weights_mb, options.tiles, per_tile, room));
  }
  layout.weight_bytes = static_cast<std::uint32_t>(words * 8);
  // Weights live in the interleaved region when they fit below the load
  // limit, otherwise from the second linker region on.
  layout.weights = layout.weight_bytes <= target::kLoadLimit - target::kInterleavedRegion.begin
                       ? target::kInterleavedRegion.begin
                       : target::kLinkerRegion2.begin;
  return layout;
}

Application build_application(const Options& options, const Layout& layout) {
  const auto tiles = static_cast<std::uint32_t>(options.tiles);
  const std::uint32_t weight_elements = layout.weight_bytes / 2;

  Application app;
  app.compiler_version = "tessera-bench 0.0.0";
  const std::uint32_t code = app.blobs.add(runtime_code(layout.code_bytes));
  app.debug.provenance = {"runtime", "graph: matmul %weights x %tokens", "graph: cast %logits"};

  Binding inputs{"tokens", DType::kF16, {tiles, layout.input_bytes / 2}, {}};
  Binding outputs{"logits", DType::kF16, {tiles, layout.output_bytes / 2}, {}};
  Binding weights{"weights", DType::kF16, {tiles, weight_elements}, {}};
  const std::uint32_t input_address = layout.activations;
  const std::uint32_t output_address = layout.activations + layout.input_bytes;
  const std::uint32_t kernel = target::kLoadBase + 0x400;

  for (std::uint32_t logical = 0; logical < tiles; ++logical) {
    const auto tile =
        target::c600_physical(target::LogicalTile(static_cast<std::uint16_t>(logical)));
    const std::uint32_t blob =
        app.blobs.add(tile_weights(layout.weight_bytes, 0x5EED0000u + logical, options.random));

    TileImage image;
    image.tile = tile;
    image.entry_point = target::kEntryPoint;
    image.segments = {
        Segment{target::kLoadBase, layout.code_bytes, code, 0, layout.code_bytes,
                kSegmentRead | kSegmentExecute},
        // Activations: no file bytes, zero-filled at load.
        Segment{layout.activations, layout.activation_bytes, code, 0, 0,
                kSegmentRead | kSegmentWrite},
        Segment{layout.weights, layout.weight_bytes, blob, 0, layout.weight_bytes, kSegmentRead},
    };
    app.tiles.push_back(std::move(image));

    inputs.slices.push_back(RegionSlice{
        tile, input_address, std::uint64_t{logical} * layout.input_bytes, layout.input_bytes});
    outputs.slices.push_back(RegionSlice{
        tile, output_address, std::uint64_t{logical} * layout.output_bytes, layout.output_bytes});
    weights.slices.push_back(RegionSlice{
        tile, layout.weights, std::uint64_t{logical} * layout.weight_bytes, layout.weight_bytes});

    TileDebug debug;
    debug.tile = tile;
    debug.symbols = {
        Symbol{"__tessera_start", target::kLoadBase, 0x100, SymbolKind::kRuntimeHelper},
        Symbol{"__tessera_sync", target::kLoadBase + 0x100, 0x300, SymbolKind::kRuntimeHelper},
        Symbol{"gemm_f16", kernel, 0x1000, SymbolKind::kKernel},
        Symbol{"cast_f16", kernel + 0x1000, 0x800, SymbolKind::kKernel},
        Symbol{"weights", layout.weights, layout.weight_bytes, SymbolKind::kData},
    };
    debug.allocations = {
        Allocation{0, "weights", fmt::format("%weights.{}", logical), layout.weights,
                   layout.weight_bytes, 0, kLiveToEnd, AllocationKind::kTensor, 1},
        Allocation{1, "tokens", fmt::format("%tokens.{}", logical), input_address,
                   layout.input_bytes, 0, 2, AllocationKind::kTensor, 1},
        Allocation{2, "logits", fmt::format("%logits.{}", logical), output_address,
                   layout.output_bytes, 1, kLiveToEnd, AllocationKind::kTensor, 2},
        Allocation{3, "runtime", "", target::kLoadBase, 0x400, 0, kLiveToEnd,
                   AllocationKind::kRuntime, 0},
    };
    debug.call_sites = {
        CallSite{target::kLoadBase + 0x40,
                 "gemm_f16",
                 {CallOperand{2, 2, output_address, layout.output_bytes, true},
                  CallOperand{3, 0, layout.weights, layout.weight_bytes, false},
                  CallOperand{4, 1, input_address, layout.input_bytes, false}},
                 1},
        CallSite{target::kLoadBase + 0x48,
                 "cast_f16",
                 {CallOperand{2, 2, output_address, layout.output_bytes, true}},
                 2},
    };
    app.debug.tiles.push_back(std::move(debug));
  }
  app.inputs.push_back(std::move(inputs));
  app.outputs.push_back(std::move(outputs));
  app.weights.push_back(std::move(weights));
  app.host_exchange.pages = {HostPage{0, 1 << 20}};
  app.host_exchange.attach_order = {0};
  app.entry_points.push_back(EntryPoint{"main", 0, 0});
  return app;
}

// ---- Reading in a child process ----------------------------------------------

struct ReadResult {
  double seconds = 0;
  double cpu = 0;
  std::int64_t baseline = 0;  // RSS when the read started
  std::int64_t peak = 0;      // VmHWM after it
  std::int64_t maxrss = 0;    // ru_maxrss of the child
  bool hwm_reset = false;
  std::uint64_t tiles = 0;
  std::uint64_t blob_bytes = 0;
  bool digest_matches = false;
  char error[512] = {};
};

ReadResult read_in_child(const std::filesystem::path& path, const Sha256& written_digest) {
  int fds[2];
  if (::pipe(fds) != 0) throw IoError(fmt::format("pipe: {}", std::strerror(errno)));
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child < 0) throw IoError(fmt::format("fork: {}", std::strerror(errno)));
  if (child == 0) {
    ::close(fds[0]);
    ReadResult result;
    try {
      result.hwm_reset = reset_hwm();
      result.baseline = rss_bytes();
      const double cpu_start = cpu_seconds();
      const auto start = Clock::now();
      const Application app = read_package_file(path);
      result.seconds = seconds_since(start);
      result.cpu = cpu_seconds() - cpu_start;
      result.peak = hwm_bytes();
      result.maxrss = maxrss_bytes();
      result.tiles = app.tiles.size();
      result.blob_bytes = app.blobs.total_bytes();
      result.digest_matches = build_digest(app) == written_digest;
    } catch (const std::exception& error) {
      std::snprintf(result.error, sizeof result.error, "%s", error.what());
    }
    const bool sent =
        ::write(fds[1], &result, sizeof result) == static_cast<ssize_t>(sizeof result);
    ::close(fds[1]);
    ::_exit(sent ? 0 : 1);
  }
  ::close(fds[1]);
  ReadResult result;
  const auto got = ::read(fds[0], &result, sizeof result);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  if (got != static_cast<ssize_t>(sizeof result) || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    throw Error(fmt::format("the read child failed (status {:#x})", status));
  }
  if (result.error[0] != '\0') throw Error(fmt::format("read: {}", result.error));
  return result;
}

// ---- Main ----------------------------------------------------------------------

int run(const Options& options) {
  const Layout layout = plan_layout(options);
  fmt::print("tessera_bench_package: {} tiles, {} B weights per tile at {:#x}, {} weights, {}\n",
             options.tiles, layout.weight_bytes, layout.weights,
             options.random ? "random (incompressible)" : "FP16 N(0, 0.02)",
             options.compress ? fmt::format("zstd level {}", options.zstd_level)
                              : std::string("no compression"));
  fmt::print("package: {}\n", options.output.string());
  const std::int64_t start_rss = rss_bytes();

  // Build.
  auto start = Clock::now();
  std::optional<Application> app = build_application(options, layout);
  const double build_seconds = seconds_since(start);
  const double uncompressed = static_cast<double>(app->blobs.total_bytes());
  const std::int64_t model_rss = rss_bytes();
  fmt::print("built    {:8.2f} s   {} of blobs in {} blobs; RSS {}\n", build_seconds,
             mb(uncompressed), app->blobs.size(), mb(static_cast<double>(model_rss)));

  // Write, in this process: the model is part of what writing needs.
  const bool write_hwm_reset = reset_hwm();
  const std::int64_t write_baseline = rss_bytes();
  const double write_cpu_start = cpu_seconds();
  start = Clock::now();
  const Sha256 digest =
      write_package(*app, options.output,
                    WriteOptions{.zstd_level = options.zstd_level, .compress = options.compress});
  const double write_seconds = seconds_since(start);
  const double write_cpu = cpu_seconds() - write_cpu_start;
  const std::int64_t write_peak = hwm_bytes();
  const double file_size = static_cast<double>(std::filesystem::file_size(options.output));
  fmt::print("written  {:8.2f} s   {:.1f} MB/s; file {}, ratio {:.3f}; peak RSS {}\n",
             write_seconds, uncompressed / kMB / write_seconds, mb(file_size),
             uncompressed / file_size, mb(static_cast<double>(write_peak)));

  // Free the model and give the pages back, so the read child starts small.
  app.reset();
  ::malloc_trim(0);

  const ReadResult read = read_in_child(options.output, digest);
  fmt::print("read     {:8.2f} s   {:.1f} MB/s; peak RSS {} (started at {})\n", read.seconds,
             uncompressed / kMB / read.seconds, mb(static_cast<double>(read.peak)),
             mb(static_cast<double>(read.baseline)));
  if (read.tiles != static_cast<std::uint64_t>(options.tiles) ||
      static_cast<double>(read.blob_bytes) != uncompressed || !read.digest_matches) {
    throw Error(fmt::format("read back {} tiles, {} blob bytes, digest {}: not what was written",
                            read.tiles, read.blob_bytes,
                            read.digest_matches ? "equal" : "differs"));
  }
  if (!options.keep) std::filesystem::remove(options.output);

  const auto row = [](std::string_view what, std::string_view value) {
    fmt::print("  {:<38} {}\n", what, value);
  };
  const auto times = [&](std::int64_t bytes) {
    return fmt::format("{:>10}  ({:.2f} × uncompressed)", mb(static_cast<double>(bytes)),
                       static_cast<double>(bytes) / uncompressed);
  };
  fmt::print("\nSummary ({} tiles, {}, {}; MB = 10^6 bytes)\n", options.tiles,
             options.random ? "random weights" : "FP16 weights",
             options.compress ? fmt::format("zstd {}", options.zstd_level) : std::string("raw"));
  row("uncompressed blob bytes", fmt::format("{:>10}", mb(uncompressed)));
  row("file size", fmt::format("{:>10}", mb(file_size)));
  row("compression ratio (uncompressed/file)", fmt::format("{:>10.3f}", uncompressed / file_size));
  row("build time", fmt::format("{:>10.2f} s", build_seconds));
  row("write time (wall / CPU)", fmt::format("{:>10.2f} s / {:.2f} s", write_seconds, write_cpu));
  row("write throughput (wall / CPU)",
      fmt::format("{:>10.1f} MB/s / {:.1f} MB/s", uncompressed / kMB / write_seconds,
                  uncompressed / kMB / write_cpu));
  row("read time (wall / CPU)", fmt::format("{:>10.2f} s / {:.2f} s", read.seconds, read.cpu));
  row("read throughput (wall / CPU)",
      fmt::format("{:>10.1f} MB/s / {:.1f} MB/s", uncompressed / kMB / read.seconds,
                  uncompressed / kMB / read.cpu));
  row("RSS at start", times(start_rss));
  row("RSS with the model built", times(model_rss));
  row(write_hwm_reset ? "write: peak RSS" : "write: peak RSS (incl. build; no reset)",
      times(write_peak));
  row("write: peak above the model", times(write_peak - write_baseline));
  row(read.hwm_reset ? "read: peak RSS (child)" : "read: peak RSS (child; no reset)",
      times(read.peak));
  row("read: peak above its start", times(read.peak - read.baseline));
  row("process ru_maxrss (build + write)", times(maxrss_bytes()));
  row("read child ru_maxrss", times(read.maxrss));
  if (options.keep) fmt::print("kept {}\n", options.output.string());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse_options(argc, argv));
  } catch (const UsageError& error) {
    fmt::print(stderr, "tessera_bench_package: {}\n", error.what());
    return 2;
  } catch (const std::exception& error) {
    fmt::print(stderr, "tessera_bench_package: {}\n", error.what());
    return 1;
  }
}
