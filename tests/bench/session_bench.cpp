// How fast the host-call protocol moves data on the simulator: the ring
// package (tests/runtime/ring_package.hpp) on every tile of the C600, through
// runtime::Session — H2D in 4 KiB batches, a kernel call and a ring exchange
// per tile, D2H — timed per phase of the session's life.
//
//   tessera_bench_session [WORDS_PER_TILE (default 4096)] [REPEATS (default 3)]
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>

#include <fmt/format.h>

#include "backends/sim/sim_transport.hpp"
#include "runtime/session.hpp"
#include "support/little_endian.hpp"
#include "tests/runtime/ring_package.hpp"

int main(int argc, char** argv) {
  using namespace tessera;
  using Clock = std::chrono::steady_clock;
  const std::uint32_t words = argc > 1 ? static_cast<std::uint32_t>(std::stoul(argv[1])) : 4096;
  const int repeats = argc > 2 ? std::stoi(argv[2]) : 3;
  runtime::testing::RingSpec spec;
  for (std::uint16_t i = 0; i < target::kTileCount; ++i) {
    spec.compute_tiles.push_back(target::c600_physical(target::LogicalTile(i)));
  }
  spec.words_per_tile = words;
  const auto built = Clock::now();
  const schema::Application app = runtime::testing::ring_package(spec);
  const double build_s = std::chrono::duration<double>(Clock::now() - built).count();
  std::vector<std::uint32_t> x(spec.compute_tiles.size() * words);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<std::uint32_t>(i * 2654435761u);
  const auto bytes = words_to_bytes(x);
  const double megabytes = static_cast<double>(bytes.size()) / 1e6;
  fmt::print("ring package: {} tiles x {} words ({:.1f} MB each way), built in {:.3f} s\n",
             spec.compute_tiles.size(), words, megabytes, build_s);
  for (int r = 0; r < repeats; ++r) {
    backends::SimTransport transport;
    const auto t0 = Clock::now();
    runtime::Session session(transport, app);
    const auto t1 = Clock::now();
    const auto out = session.call("run", {{"x", bytes}});
    const auto t2 = Clock::now();
    session.finish();
    const auto t3 = Clock::now();
    if (out.at("y") != words_to_bytes(runtime::testing::ring_reference(spec, x))) {
      std::cerr << "wrong result\n";
      return 1;
    }
    const double load = std::chrono::duration<double>(t1 - t0).count();
    const double call = std::chrono::duration<double>(t2 - t1).count();
    const double finish = std::chrono::duration<double>(t3 - t2).count();
    fmt::print("run {}: load+start {:.3f} s, call {:.3f} s ({:.1f} MB/s host data in+out, {} "
               "rendezvous), finish {:.3f} s; {} simulated cycles\n",
               r, load, call, 2 * megabytes / call, session.rendezvous_count(), finish,
               transport.chip().now());
  }
  return 0;
}
