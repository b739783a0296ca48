#include "backends/sim/sim_transport.hpp"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "schema/digest.hpp"
#include "support/checked.hpp"
#include "support/error.hpp"
#include "target/config_space.hpp"
#include "target/memory_map.hpp"

namespace tessera::backends {
namespace {

using runtime::ContextState;
using runtime::WaitOutcome;

bool is_hsp_mark(std::uint32_t offset) {
  return offset == target::kHspGs1Control || offset == target::kHspGs2Control;
}

void check_config_offset(std::uint32_t offset) {
  if (offset % 4 != 0 || offset >= target::kConfigSpaceSize) {
    throw UsageError(fmt::format(
        "configuration offset {:#x} is not a 4-aligned register inside the {:#x}-byte space",
        offset, target::kConfigSpaceSize));
  }
  if (is_hsp_mark(offset)) {
    throw UsageError(fmt::format("configuration offset {:#x} is an HSP mark; use write_mark()",
                                 offset));
  }
}

void check_sram_range(target::PhysicalTile tile, std::uint32_t address, std::size_t size) {
  const auto end = checked_add<std::uint64_t>(address, size, "SRAM range");
  if (address < target::kSram.begin || end > target::kSram.end) {
    throw UsageError(fmt::format("{}: bytes [{:#x}, {:#x}) are outside tile SRAM {}", tile,
                                 address, end, target::kSram));
  }
}

std::string status_detail(const sim::Tile& tile) {
  switch (tile.status()) {
    case sim::TileStatus::kWaiting:
      return fmt::format("waits at sync {} since cycle {}", tile.waiting_zone(),
                         tile.wait_started());
    case sim::TileStatus::kIdle: return "not started";
    default: return std::string(sim::tile_status_name(tile.status()));
  }
}

}  // namespace

SimTransport::SimTransport(target::Topology topology, SimTransportOptions options)
    : options_(options), chip_(std::move(topology), options.sim) {}

SimTransport::~SimTransport() = default;

std::string SimTransport::description() const {
  return fmt::format("simulator ({} tiles)", chip_.topology().size());
}

void SimTransport::reset() {
  chip_.reset();
  may_move_ = false;
  reached_ = 0;
  config_.clear();
  build_digest_.clear();
}

void SimTransport::write_config(std::uint32_t offset, std::uint32_t value) {
  check_config_offset(offset);
  config_[offset] = value;
}

std::uint32_t SimTransport::read_config(std::uint32_t offset) {
  check_config_offset(offset);
  const auto found = config_.find(offset);
  return found == config_.end() ? 0 : found->second;
}

void SimTransport::load(const schema::Application& application) {
  chip_.load(application);
  reached_ = 0;
  may_move_ = false;
  const schema::Sha256 digest = schema::build_digest(application);
  build_digest_.assign(digest.begin(), digest.end());
}

void SimTransport::start() {
  chip_.start();
  reached_ = 0;
  may_move_ = true;
}

void SimTransport::attach(std::uint32_t index, runtime::HostBuffer& buffer) {
  const runtime::DeviceMemory memory = buffer.device_memory();
  chip_.attach_host_buffer(index, {memory.address, memory.size});
}

void SimTransport::detach(std::uint32_t index) { chip_.detach_host_buffer(index); }

void SimTransport::detach_all() { chip_.detach_all_host_buffers(); }

void SimTransport::write_mark(runtime::HspMark mark, std::uint16_t credits) {
  chip_.write_hsp_mark(runtime::hsp_mark_offset(mark), credits);
  may_move_ = chip_.started() && !all_halted();
}

std::uint16_t SimTransport::read_mark(runtime::HspMark mark) {
  return chip_.read_hsp_mark(runtime::hsp_mark_offset(mark));
}

template <class Done>
WaitOutcome SimTransport::advance_until(Done done, std::chrono::milliseconds timeout,
                                        bool halting_is_done) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  if (!chip_.started()) return done() ? WaitOutcome::kReached : WaitOutcome::kStalled;
  // A fault stops the model (unless it keeps going): no condition can
  // hold any more, even one that held in the slice where it happened.
  auto faulted = [&] { return !options_.sim.keep_going && !chip_.faults().empty(); };
  while (true) {
    if (faulted()) return WaitOutcome::kFaulted;
    if (done()) return WaitOutcome::kReached;
    if (reached_ >= options_.max_cycles) return WaitOutcome::kTimedOut;
    if (!may_move_) {
      // Nothing was scheduled when the last run ended and the host has not
      // acted since: running would not move anything.
      return all_halted() ? (halting_is_done ? WaitOutcome::kReached : WaitOutcome::kHalted)
                          : WaitOutcome::kStalled;
    }
    if (std::chrono::steady_clock::now() >= deadline) return WaitOutcome::kTimedOut;
    const sim::RunResult result = run_slice(options_.wait_slice_cycles);
    if (faulted()) return WaitOutcome::kFaulted;
    if (done()) return WaitOutcome::kReached;
    switch (result.reason) {
      case sim::StopReason::kAllHalted:
        return halting_is_done ? WaitOutcome::kReached : WaitOutcome::kHalted;
      case sim::StopReason::kFault: return WaitOutcome::kFaulted;
      case sim::StopReason::kTrapped: return WaitOutcome::kStopped;
      case sim::StopReason::kDeadlock: return WaitOutcome::kStalled;
      case sim::StopReason::kHostSync:
      case sim::StopReason::kCycleLimit:
        // A slice ended; the device may still move unless nothing is scheduled.
        if (!may_move_) return WaitOutcome::kStalled;
        break;
    }
  }
}

bool SimTransport::all_halted() const {
  const sim::RunReport report = chip_.report();
  return std::all_of(report.tiles.begin(), report.tiles.end(), [](const sim::TileReport& tile) {
    return tile.status == sim::TileStatus::kHalted;
  });
}

sim::RunResult SimTransport::run_slice(std::uint64_t cycles) {
  // Tiles run ahead of the kernel's clock, so progress is the latest cycle a
  // run reached, not the kernel's time.
  const std::uint64_t from = std::max(reached_, chip_.now());
  const std::uint64_t end = from + std::min(cycles, options_.max_cycles - std::min(from, options_.max_cycles));
  const sim::RunResult result = chip_.run(end);
  reached_ = std::max(reached_, result.cycle);
  may_move_ = !chip_.starved();
  return result;
}

WaitOutcome SimTransport::wait_mark_zero(runtime::HspMark mark,
                                         std::chrono::milliseconds timeout) {
  return advance_until([&] { return read_mark(mark) == 0; }, timeout, false);
}

WaitOutcome SimTransport::wait_halted(std::chrono::milliseconds timeout) {
  return advance_until([] { return false; }, timeout, true);
}

void SimTransport::idle(std::chrono::microseconds duration) {
  if (!chip_.started() || duration.count() <= 0) return;
  const auto cycles = checked_mul<std::uint64_t>(static_cast<std::uint64_t>(duration.count()),
                                                 options_.sim.clock_hz / 1'000'000, "host delay");
  // The device's clock runs on while the host waits, whether or not anything
  // is scheduled; what the device does meanwhile is seen by the next wait.
  const std::uint64_t from = std::max(reached_, chip_.now());
  const std::uint64_t budget = options_.max_cycles - std::min(from, options_.max_cycles);
  chip_.pass_time(std::min(cycles, budget));
  reached_ = std::max(reached_, chip_.now());
  if (may_move_) may_move_ = !chip_.starved();
}

runtime::TileState SimTransport::tile_state(target::PhysicalTile id) {
  const sim::Tile& tile = chip_.tile(id);
  runtime::TileState state;
  state.tile = id;
  state.pc = tile.pc();
  state.detail = status_detail(tile);
  // Kernel models run to completion inside the supervisor's call, so the
  // workers are inactive whenever the host can look.
  ContextState supervisor = ContextState::kInactive;
  switch (tile.status()) {
    case sim::TileStatus::kRunning:
    case sim::TileStatus::kWaiting: supervisor = ContextState::kRunning; break;
    case sim::TileStatus::kTrapped: supervisor = ContextState::kDebugException; break;
    case sim::TileStatus::kFaulted: supervisor = ContextState::kException; break;
    case sim::TileStatus::kIdle:
    case sim::TileStatus::kHalted: break;
  }
  state.contexts[0] = supervisor;
  return state;
}

void SimTransport::read_sram(target::PhysicalTile tile, std::uint32_t address,
                             std::span<std::uint8_t> bytes) {
  check_sram_range(tile, address, bytes.size());
  chip_.tile(tile).sram().read(address, bytes);
}

void SimTransport::write_sram(target::PhysicalTile tile, std::uint32_t address,
                              std::span<const std::uint8_t> bytes) {
  check_sram_range(tile, address, bytes.size());
  chip_.tile(tile).sram().write(address, bytes);
}

std::vector<runtime::DeviceFault> SimTransport::faults() {
  std::vector<runtime::DeviceFault> faults;
  for (const sim::Fault& fault : chip_.faults().all()) {
    faults.push_back(runtime::DeviceFault{fault.tile, fault.context, fault.pc, fault.cycle,
                                          std::string(sim::fault_kind_name(fault.kind)),
                                          fault.message, fault.provenance});
  }
  return faults;
}

std::optional<schema::Profile> SimTransport::profile() {
  if (!options_.sim.trace || !chip_.started()) return std::nullopt;
  schema::Profile profile = chip_.profile();
  profile.build_digest = build_digest_;
  return profile;
}

}  // namespace tessera::backends
