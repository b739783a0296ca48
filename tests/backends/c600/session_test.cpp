// runtime::Session over the c600 transport and the fake device: the same
// protocol code the simulator runs, driving the driver's loader, host buffer
// attachment and GS2 handshakes. The fake runs no tile code, so its script
// stands in for the ring package's device program: the H2D and D2H copies of
// each batch, and the ring's compute, at the syncs where the real program
// does them.
#include <gtest/gtest.h>

#include "backends/c600/c600_transport.hpp"
#include "runtime/session.hpp"
#include "schema/host_layout.hpp"
#include "support/little_endian.hpp"
#include "tests/backends/c600/fixture.hpp"
#include "tests/runtime/ring_package.hpp"

namespace tessera::backends::c600 {
namespace {

using runtime::testing::ring_package;
using runtime::testing::ring_reference;
using runtime::testing::RingSpec;
using target::PhysicalTile;
using testing::FakeDevice;

// ring_package's layout (tests/runtime/ring_package.cpp).
constexpr std::uint32_t kX = 0x60000;
constexpr std::uint32_t kZ = 0x68000;
constexpr std::uint32_t kSlot = 4096;

TEST(C600Session, RunsTheHostCallProtocolThroughTheDriver) {
  // Physical tiles 0..63: one whole loader batch, every XREQ owner included.
  RingSpec ring;
  for (std::uint16_t t = 0; t < 64; ++t) ring.compute_tiles.push_back(PhysicalTile(t));
  ring.words_per_tile = 2048;  // 8 KiB: two batches each way
  schema::Application app = ring_package(ring);
  app.hardware_loadable = true;  // the fake runs no kernels; it only needs the protocol
  app.not_loadable_reason.clear();

  testing::ScratchDirectory scratch;
  FakeDevice fake;
  const auto transport = open_c600(testing::fake_options(scratch), fake);
  const std::uint64_t data_base = schema::host_page_base(app.host_exchange, 1);
  const std::size_t tiles = ring.compute_tiles.size();
  const std::uint32_t share = ring.words_per_tile * 4;

  fake.expect_sync(target::kHspGs2Control, "startup");
  for (std::uint32_t b = 0; b < 2; ++b) {
    fake.expect_sync(target::kHspGs2Control, "input entry");
    fake.expect_sync(target::kHspGs2Control, "input completion", [=](FakeDevice& device) {
      for (std::uint16_t i = 0; i < tiles; ++i) device.h2d(i, kX + kSlot * b, data_base + kSlot * i, kSlot);
    });
  }
  for (std::uint32_t b = 0; b < 2; ++b) {
    fake.expect_sync(target::kHspGs2Control, "output entry", [=](FakeDevice& device) {
      if (b != 0) return;
      // The program's compute and ring exchange: z[i] = 2 · x[i − 1].
      for (std::uint16_t i = 0; i < tiles; ++i) {
        const auto from = static_cast<std::uint16_t>((i + tiles - 1) % tiles);
        auto words = device.sram(from, kX, share);
        for (std::size_t k = 0; k < words.size(); k += 4) {
          store_u32_le(load_u32_le(words.data() + k) * 2u, words.data() + k);
        }
        device.write_sram(i, kZ, words);
      }
    });
    fake.expect_sync(target::kHspGs2Control, "output completion", [=](FakeDevice& device) {
      for (std::uint16_t i = 0; i < tiles; ++i) device.d2h(i, kZ + kSlot * b, data_base + kSlot * i, kSlot);
    });
  }

  std::vector<std::uint32_t> x(tiles * ring.words_per_tile);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<std::uint32_t>(i * 40503u + 17u);
  runtime::Session session(*transport, app);
  const auto outputs = session.call("run", {{"x", words_to_bytes(x)}});
  session.finish();

  EXPECT_TRUE(fake.violations().empty()) << fake.violations().front();
  EXPECT_EQ(fake.pending_syncs(), 0u);
  EXPECT_EQ(fake.credits_consumed(target::kHspGs2Control), 9u);
  EXPECT_EQ(session.rendezvous_count(), 9u);
  const auto& y = outputs.at("y");
  std::vector<std::uint32_t> words(y.size() / 4);
  for (std::size_t i = 0; i < words.size(); ++i) words[i] = load_u32_le(y.data() + 4 * i);
  EXPECT_EQ(words, ring_reference(ring, x));
}

}  // namespace
}  // namespace tessera::backends::c600
