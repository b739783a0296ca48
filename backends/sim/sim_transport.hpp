#pragma once
// backends/sim: runtime::Transport over the SystemC model, in-process.
//
// Host buffers are the runtime's own memory, which the simulated host link
// reads (H2D) and writes (D2H). Waiting on a mark advances simulated time
// until every credit is consumed, the device halts, faults, stops at a
// breakpoint or stalls (nothing can move until the host acts), or a limit
// passes: the wall-clock timeout of the wait, or the transport's simulated
// cycle limit. The host's own delays (idle()) become simulated time at the
// model's clock, during which the device runs on — so a device that passed a
// host sync without a credit would be caught by the jitter tests.
//
// The configuration space is a plain register file: the simulator models no
// configuration register's effect, it only keeps what was written so the
// session's writes can be read back. HSP marks are not in it (write_mark()).

#include <cstdint>
#include <map>
#include <memory>

#include "runtime/transport.hpp"
#include "sim/chip.hpp"
#include "sim/options.hpp"

namespace tessera::backends {

struct SimTransportOptions {
  sim::SimOptions sim;
  // A run's simulated-cycle budget since start(); a wait past it times out.
  std::uint64_t max_cycles = ~std::uint64_t{0};
  // Simulated cycles between checks of a wait's wall-clock deadline.
  std::uint64_t wait_slice_cycles = 5'000'000;
};

class SimTransport final : public runtime::Transport {
 public:
  explicit SimTransport(target::Topology topology = target::Topology::c600(),
                        SimTransportOptions options = {});
  ~SimTransport() override;

  std::string description() const override;
  const target::Topology& topology() const override { return chip_.topology(); }

  void reset() override;
  void write_config(std::uint32_t offset, std::uint32_t value) override;
  std::uint32_t read_config(std::uint32_t offset) override;
  void load(const schema::Application& application) override;
  void start() override;

  void attach(std::uint32_t index, runtime::HostBuffer& buffer) override;
  void detach(std::uint32_t index) override;
  void detach_all() override;

  void write_mark(runtime::HspMark mark, std::uint16_t credits) override;
  std::uint16_t read_mark(runtime::HspMark mark) override;
  runtime::WaitOutcome wait_mark_zero(runtime::HspMark mark,
                                      std::chrono::milliseconds timeout) override;
  runtime::WaitOutcome wait_halted(std::chrono::milliseconds timeout) override;
  void idle(std::chrono::microseconds duration) override;

  runtime::TileState tile_state(target::PhysicalTile tile) override;
  void read_sram(target::PhysicalTile tile, std::uint32_t address,
                 std::span<std::uint8_t> bytes) override;
  void write_sram(target::PhysicalTile tile, std::uint32_t address,
                  std::span<const std::uint8_t> bytes) override;
  std::vector<runtime::DeviceFault> faults() override;
  std::optional<schema::Profile> profile() override;

  // The model itself, for tools that want more than the transport offers
  // (run reports, Chrome traces, exchange statistics).
  sim::Chip& chip() noexcept { return chip_; }

 private:
  template <class Done>
  runtime::WaitOutcome advance_until(Done done, std::chrono::milliseconds timeout,
                                     bool halting_is_done);
  // Runs the model for up to `cycles` more, within max_cycles.
  sim::RunResult run_slice(std::uint64_t cycles);
  bool all_halted() const;

  SimTransportOptions options_;
  sim::Chip chip_;
  std::map<std::uint32_t, std::uint32_t> config_;
  std::vector<std::uint8_t> build_digest_;
  std::uint64_t reached_ = 0;  // the latest cycle a run reached since start()
  // Whether a run could move anything: after start() and every host action,
  // until a run ends with nothing scheduled.
  bool may_move_ = false;
};

}  // namespace tessera::backends
