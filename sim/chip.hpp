#pragma once
// The simulated IPU21: tiles from a topology, the internal sync, the fault
// log, and the co-simulation API through which a host program drives it.
//
// SystemC elaborates once per process, so the chip owns no SystemC modules:
// one process-wide top module is elaborated on first use, and each started
// tile runs as a dynamically spawned SystemC method process that executes
// supervisor code with temporal decoupling and meets the kernel's global
// time only at interactions (syncs, the quantum, stops). A Chip can be built,
// loaded, run, reset and destroyed any number of times in one process; only
// one may exist at a time.
//
// The host drives the simulation (it does not run inside SystemC): load(),
// start(), then run() advances simulated time until a stop condition holds.

#include <cstdint>
#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "kernels/registry.hpp"
#include "schema/model.hpp"
#include "schema/phase_plan.hpp"
#include "schema/profile.hpp"
#include "sim/exchange_fabric.hpp"
#include "sim/host_link.hpp"
#include "sim/fault.hpp"
#include "sim/options.hpp"
#include "sim/sync_controller.hpp"
#include "sim/tile.hpp"
#include "support/thread_pool.hpp"
#include "target/topology.hpp"

namespace tessera::sim {

enum class StopReason : std::uint8_t {
  kAllHalted,   // every started tile branched to 0
  kHostSync,    // tiles wait at a host sync (zone 7 or 15) for the host's credit
  kTrapped,     // a tile stopped at `trap`
  kFault,       // a fault stopped the run (the earliest in simulated time, unless keep_going)
  kDeadlock,    // no tile can make progress
  kCycleLimit,  // the cycle limit passed
};

std::string_view stop_reason_name(StopReason reason) noexcept;

struct RunResult {
  StopReason reason = StopReason::kAllHalted;
  std::uint64_t cycle = 0;  // simulated cycles since start()
};

// Per-tile and total cycles of a run.
struct TileReport {
  target::PhysicalTile tile;
  TileStatus status = TileStatus::kIdle;
  std::uint64_t end_cycle = 0;  // where the tile stopped (halt, trap, fault, wait)
  std::uint64_t busy = 0;
  std::uint64_t sync_wait = 0;
  std::uint64_t idle = 0;  // total − busy − sync wait
};

struct RunReport {
  std::uint64_t total_cycles = 0;  // the latest tile's end
  std::vector<TileReport> tiles;   // started tiles, by physical id
  std::uint64_t sram_bytes_touched = 0;
  nlohmann::json to_json() const;
  std::string to_text() const;
};

class Chip {
 public:
  explicit Chip(target::Topology topology, SimOptions options = {},
                const kernels::KernelRegistry& registry = kernels::KernelRegistry::standard());
  ~Chip();
  Chip(const Chip&) = delete;
  Chip& operator=(const Chip&) = delete;

  const target::Topology& topology() const noexcept { return topology_; }
  const SimOptions& options() const noexcept { return options_; }

  // Resets the chip (cheap: tiles free their SRAM pages) and loads every tile
  // image of the package; a package tile outside the topology is an error.
  void load(const schema::Application& application);
  // Loads one segment by hand (tests, debuggers): bytes into a tile's SRAM.
  void load_segment(target::PhysicalTile tile, std::uint32_t address,
                    std::span<const std::uint8_t> bytes, bool executable);
  void set_debug(target::PhysicalTile tile, const schema::TileDebug& debug,
                 const std::vector<std::string>& provenance = {});
  // Starts the given tiles (by default every tile the package loaded) at
  // `entry_point` (default: the package's entry point, or target::kEntryPoint).
  void start(std::optional<std::vector<target::PhysicalTile>> tiles = std::nullopt,
             std::optional<std::uint32_t> entry_point = std::nullopt);
  // Back to the state after construction: nothing loaded, nothing running.
  void reset();

  // Advances simulated time until a stop condition holds or `max_cycles`
  // (since start) pass.
  RunResult run(std::uint64_t max_cycles = ~std::uint64_t{0});
  // Lets `cycles` of simulated time pass even when nothing is scheduled (the
  // host's own delay): tiles that can run, run; a host sync granted later is
  // released later.
  void pass_time(std::uint64_t cycles);

  // HSP marks (target::kHspGs1Control, kHspGs2Control): the host writes a
  // credit count; each host sync round takes one credit of
  // options().host_sync_mark and waits while it is 0. Reads give what is left.
  void write_hsp_mark(std::uint32_t offset, std::uint16_t value);
  std::uint16_t read_hsp_mark(std::uint32_t offset) const;
  // Host buffers the host link reads (H2D) and writes (D2H); they form one
  // host address space in ascending index order [INF]. The caller keeps the
  // memory alive while attached.
  void attach_host_buffer(std::uint32_t index, std::span<std::uint8_t> bytes);
  void detach_host_buffer(std::uint32_t index);
  void detach_all_host_buffers();
  const HostStats& host_stats() const noexcept { return host_stats_; }
  // Debugger: resumes a trapped tile (it re-traps while the trap is there).
  void resume(target::PhysicalTile tile);

  Tile& tile(target::PhysicalTile tile);
  const Tile& tile(target::PhysicalTile tile) const;
  std::vector<target::PhysicalTile> tiles_waiting_at_host_sync() const;

  const FaultLog& faults() const noexcept { return faults_; }
  const ExchangeStats& exchange_stats() const noexcept { return exchange_stats_; }
  std::uint64_t now() const;  // simulated cycles since start()
  // True when nothing is scheduled: no tile can move until the host acts
  // (writes a mark, resumes a trap) — a run now would return at once.
  bool starved() const;
  bool started() const noexcept { return !started_.empty(); }
  RunReport report() const;
  // Chrome/Perfetto trace JSON of the run (needs options.trace).
  nlohmann::json trace() const;
  // The cycle profile of the run (needs options.trace): per started tile its
  // exchange rows, kernel calls (with the call site's operation), the code
  // between them, and its sync and host waits, on the shared clock since
  // start() (sim/chip_profile.cpp).
  schema::Profile profile() const;

  // Internal: the SystemC side calls these.
  struct TileProcess;
  struct BatchProcess;
  void on_tile_activation(std::size_t index);
  void run_ready_tiles();

 private:
  std::size_t index_of(target::PhysicalTile tile) const;
  std::uint64_t budget_end(const Tile& tile) const;
  void reschedule(std::size_t index);
  void continue_tile(std::size_t index, const RunOutcome& outcome);
  void apply_releases(const std::vector<Release>& releases);
  void request_stop();
  // Which fault stops a run (decision 10): the earliest in simulated time.
  // Tiles run ahead of each other by up to a quantum, so when a fault is
  // found at cycle c a tile behind c may still fault earlier: the others run
  // on up to c (the fault horizon) before the run stops.
  void stop_at_fault(const Fault& fault);
  bool past_fault_horizon(const Tile& tile) const;
  void stop_if_caught_up();
  void kill_processes() noexcept;
  void diagnose_deadlock();
  void open_exchange_phase(std::uint64_t round, const std::vector<Release>& releases,
                           bool host = false);
  void release_host_receivers();
  void leave_exchange_phase(std::size_t index);
  void solve_exchange_phase();
  std::uint64_t delay_until(std::uint64_t cycle) const;

  target::Topology topology_;
  SimOptions options_;
  const kernels::KernelRegistry& registry_;
  std::vector<std::unique_ptr<Tile>> tiles_;  // by logical index
  std::vector<bool> loaded_;
  std::vector<std::uint32_t> entry_points_;
  std::vector<std::size_t> started_;
  std::vector<std::shared_ptr<TileProcess>> processes_;
  std::shared_ptr<BatchProcess> batch_;
  std::vector<std::size_t> ready_;  // tiles woken at this instant, for the batch
  std::unique_ptr<ThreadPool> pool_;
  SyncRounds internal_sync_;
  HostSyncRounds host_sync_;
  HostMemory host_memory_;
  HostStats host_stats_;
  bool phase_is_host_ = false;
  std::map<std::size_t, HostService> host_services_;
  std::array<std::uint16_t, 2> hsp_marks_{};  // GS1, GS2
  FaultLog faults_;
  std::uint64_t origin_ns_ = 0;  // SystemC time of start(), in cycles (1 cycle = 1 ns)
  std::uint64_t limit_ = ~std::uint64_t{0};
  // The open exchange phase: the round that opened it, its participants and
  // those whose rows are not done yet.
  std::uint64_t phase_round_ = 0;
  std::vector<std::size_t> phase_participants_;
  std::vector<std::size_t> phase_pending_;
  schema::PhasePlan planned_phases_;  // the package's planned exchange phases
  PlannedRunsCache planned_runs_;     // their transfers as the fabric compares them
  ExchangeStats exchange_stats_;
  bool stop_requested_ = false;
  // The earliest cycle a fault was found at, when the run stops at faults:
  // every tile runs the instructions it issues up to it, then the run stops.
  std::optional<std::uint64_t> fault_horizon_;

  struct Span {
    std::size_t tile;
    const char* name;
    std::uint64_t start;
    std::uint64_t end;
    std::uint32_t zone = 0;  // a sync wait's zone (the profile tells host from device syncs)
  };
  std::vector<Span> spans_;
  std::vector<std::uint64_t> segment_start_;
};

}  // namespace tessera::sim
