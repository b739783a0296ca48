// A Session whose start fails part-way must unwind cleanly: every host page
// it attached is detached (in reverse order) before its memory is unmapped,
// and nothing on the way out throws from a destructor — the process goes on.
// The failures are injected by a transport that forwards to the simulator.
#include <gtest/gtest.h>

#include <optional>

#include "backends/sim/sim_transport.hpp"
#include "runtime/session.hpp"
#include "tests/runtime/ring_package.hpp"

namespace tessera::runtime {
namespace {

using target::PhysicalTile;

// The simulator, with a record of host-buffer traffic and failures on demand.
class FailingTransport final : public Transport {
 public:
  std::vector<std::uint32_t> attached;
  std::vector<std::uint32_t> detached;
  // attach() of this page index throws (after the earlier ones succeeded).
  std::optional<std::uint32_t> fail_attach_of;
  // wait_mark_zero() reports a timeout instead of waiting.
  bool fail_waits = false;

  std::string description() const override { return "failing " + sim_.description(); }
  const target::Topology& topology() const override { return sim_.topology(); }
  void reset() override { sim_.reset(); }
  void write_config(std::uint32_t offset, std::uint32_t value) override {
    sim_.write_config(offset, value);
  }
  std::uint32_t read_config(std::uint32_t offset) override { return sim_.read_config(offset); }
  void load(const schema::Application& application) override { sim_.load(application); }
  void start() override { sim_.start(); }
  void attach(std::uint32_t index, HostBuffer& buffer) override {
    if (fail_attach_of == index) throw IoError("BUFFER_ATTACH failed: Cannot allocate memory");
    sim_.attach(index, buffer);
    attached.push_back(index);
  }
  void detach(std::uint32_t index) override {
    sim_.detach(index);
    detached.push_back(index);
  }
  void detach_all() override { sim_.detach_all(); }
  void write_mark(HspMark mark, std::uint16_t credits) override { sim_.write_mark(mark, credits); }
  std::uint16_t read_mark(HspMark mark) override { return sim_.read_mark(mark); }
  WaitOutcome wait_mark_zero(HspMark mark, std::chrono::milliseconds timeout) override {
    return fail_waits ? WaitOutcome::kTimedOut : sim_.wait_mark_zero(mark, timeout);
  }
  WaitOutcome wait_halted(std::chrono::milliseconds timeout) override {
    return sim_.wait_halted(timeout);
  }
  void idle(std::chrono::microseconds duration) override { sim_.idle(duration); }
  TileState tile_state(PhysicalTile tile) override { return sim_.tile_state(tile); }
  void read_sram(PhysicalTile tile, std::uint32_t address, std::span<std::uint8_t> bytes) override {
    sim_.read_sram(tile, address, bytes);
  }
  void write_sram(PhysicalTile tile, std::uint32_t address,
                  std::span<const std::uint8_t> bytes) override {
    sim_.write_sram(tile, address, bytes);
  }
  std::vector<DeviceFault> faults() override { return sim_.faults(); }

 private:
  backends::SimTransport sim_;
};

schema::Application ring() {
  return testing::ring_package(testing::RingSpec{{PhysicalTile(5), PhysicalTile(260)}, 64});
}

TEST(SessionStart, AFailedStartupRendezvousDetachesEveryPageItAttached) {
  FailingTransport transport;
  transport.fail_waits = true;
  EXPECT_THROW(Session(transport, ring()), TimeoutError);
  ASSERT_EQ(transport.attached.size(), 2u);
  // Reverse attach order, before the page memory went away.
  EXPECT_EQ(transport.detached,
            std::vector<std::uint32_t>(transport.attached.rbegin(), transport.attached.rend()));
}

TEST(SessionStart, AFailedAttachDetachesThePagesAttachedBeforeIt) {
  FailingTransport transport;
  const schema::Application app = ring();
  ASSERT_EQ(app.host_exchange.attach_order.size(), 2u);
  transport.fail_attach_of = app.host_exchange.attach_order[1];
  EXPECT_THROW(Session(transport, app), IoError);
  EXPECT_EQ(transport.attached, std::vector<std::uint32_t>{app.host_exchange.attach_order[0]});
  EXPECT_EQ(transport.detached, transport.attached);
}

// The tiles were started but never ran when the start failed: tearing the
// transport down afterwards (the simulated chip with its spawned processes)
// must not throw from a destructor, which would terminate the process.
TEST(SessionStart, TheTransportOutlivesAFailedStartAndCanBeDestroyed) {
  {
    FailingTransport transport;
    transport.fail_attach_of = ring().host_exchange.attach_order[0];
    EXPECT_THROW(Session(transport, ring()), IoError);
  }
  // And the next session in this process runs normally.
  backends::SimTransport transport;
  Session session(transport, ring());
  const std::vector<std::uint8_t> x(2 * 64 * 4, 1);
  EXPECT_EQ(session.call("run", {{"x", x}}).at("y").size(), x.size());
  session.finish();
}

// Issue 15 item 10: a timeout of 1e10 s or more wrapped the deadline and
// one under 1 ms became 0; the session takes only its documented range.
TEST(SessionStart, TimeoutsOutsideTheirRangeAreRefusedBeforeTheDeviceIsTouched) {
  for (const auto timeout :
       {std::chrono::milliseconds(0), kMaxWaitTimeout + std::chrono::milliseconds(1),
        std::chrono::milliseconds::max(), std::chrono::milliseconds::min()}) {
    FailingTransport transport;
    SessionOptions options;
    options.rendezvous_timeout = timeout;
    EXPECT_THROW(Session(transport, ring(), options), UsageError) << timeout.count();
    options.rendezvous_timeout = kMinWaitTimeout;
    options.halt_timeout = timeout;
    EXPECT_THROW(Session(transport, ring(), options), UsageError) << timeout.count();
    EXPECT_TRUE(transport.attached.empty());
  }
}

}  // namespace
}  // namespace tessera::runtime
