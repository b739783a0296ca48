#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "sim/chip.hpp"

#include <systemc>

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/sync_zones.hpp"
#include "support/thread_pool.hpp"
#include "target/config_space.hpp"
#include "target/memory_map.hpp"

namespace tessera::sim {
namespace {

// The one elaborated module every chip's processes live under.
struct TopModule : sc_core::sc_module {
  explicit TopModule(sc_core::sc_module_name name) : sc_core::sc_module(name) {}
};

void ensure_systemc() {
  static TopModule* top = [] {
    // The library prints a banner on stdout unless told not to.
    ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
    return new TopModule("tessera");
  }();
  (void)top;
}

// One tile cycle is one nanosecond of SystemC time.
sc_core::sc_time cycles(std::uint64_t n) { return sc_core::sc_time(static_cast<double>(n), sc_core::SC_NS); }

std::uint64_t systemc_now() {
  static const sc_core::sc_time::value_type kNs = sc_core::sc_time(1, sc_core::SC_NS).value();
  return sc_core::sc_time_stamp().value() / kNs;
}

Chip* g_active_chip = nullptr;

}  // namespace

// A spawned SystemC process's record, shared with the process's function, so
// that a process SystemC cannot kill yet (kill_processes) outlives the chip
// harmlessly: with `chip` cleared it returns at once and is never triggered
// again.
struct ChipProcess {
  Chip* chip = nullptr;
  sc_core::sc_process_handle handle;
};

struct Chip::TileProcess : ChipProcess {
  sc_core::sc_event release;
};

// The process that runs the tiles woken at one instant together, on the
// host thread pool (decision 11).
struct Chip::BatchProcess : ChipProcess {
  sc_core::sc_event ready;
};

namespace {

// SystemC refuses to kill a process before the kernel first ran (E572,
// thrown as an sc_report), which is where a chip is destroyed when a session
// fails between start() and its first wait. Such a process is disarmed
// instead; after the kernel has run, kill() is allowed.
void disarm(ChipProcess& process) noexcept {
  process.chip = nullptr;
  const bool killable = sc_core::sc_get_status() != sc_core::SC_ELABORATION;
  if (killable && process.handle.valid() && !process.handle.terminated()) {
    try {
      process.handle.kill();
    } catch (const sc_core::sc_report&) {
      // Disarmed above; a process the kernel keeps does nothing.
    }
  }
  // The process's function holds this record; dropping the handle breaks
  // the cycle, so the kernel can free a killed process and the record.
  process.handle = sc_core::sc_process_handle();
}

}  // namespace

std::string_view stop_reason_name(StopReason reason) noexcept {
  switch (reason) {
    case StopReason::kAllHalted: return "all tiles halted";
    case StopReason::kHostSync: return "a tile waits at a host sync";
    case StopReason::kTrapped: return "a tile trapped";
    case StopReason::kFault: return "fault";
    case StopReason::kDeadlock: return "deadlock";
    case StopReason::kCycleLimit: return "cycle limit";
  }
  return "?";
}

Chip::Chip(target::Topology topology, SimOptions options, const kernels::KernelRegistry& registry)
    : topology_(std::move(topology)), options_(options), registry_(registry) {
  if (g_active_chip != nullptr) {
    throw Error("a simulated chip already exists in this process (SystemC has one kernel)");
  }
  if (options_.quantum_cycles == 0) throw UsageError("the quantum must be at least one cycle");
  ensure_systemc();
  pool_ = std::make_unique<ThreadPool>(options_.threads);
  for (const auto physical : topology_.physical_tiles()) {
    tiles_.push_back(std::make_unique<Tile>(physical, options_, registry_));
  }
  loaded_.assign(tiles_.size(), false);
  entry_points_.assign(tiles_.size(), target::kEntryPoint);
  g_active_chip = this;
}

Chip::~Chip() {
  kill_processes();
  g_active_chip = nullptr;
}

std::size_t Chip::index_of(target::PhysicalTile tile) const {
  const auto logical = topology_.logical(tile);
  if (!logical) throw UsageError(fmt::format("{} is not a tile of this chip", tile));
  return logical->value;
}

Tile& Chip::tile(target::PhysicalTile tile) { return *tiles_[index_of(tile)]; }
const Tile& Chip::tile(target::PhysicalTile tile) const { return *tiles_[index_of(tile)]; }

void Chip::kill_processes() noexcept {
  for (auto& process : processes_) {
    if (process) disarm(*process);
  }
  processes_.clear();
  if (batch_) disarm(*batch_);
  batch_.reset();
  ready_.clear();
}

void Chip::reset() {
  kill_processes();
  for (auto& tile : tiles_) tile->reset();
  loaded_.assign(tiles_.size(), false);
  entry_points_.assign(tiles_.size(), target::kEntryPoint);
  started_.clear();
  faults_.clear();
  spans_.clear();
  stop_requested_ = false;
  fault_horizon_.reset();
  hsp_marks_ = {};
  host_stats_ = {};
  host_memory_.detach_all();
  planned_runs_.clear();
  planned_phases_ = {};
  phase_participants_.clear();
  phase_pending_.clear();
  exchange_stats_ = {};
}

void Chip::load(const schema::Application& application) {
  reset();
  for (const auto& image : application.tiles) {
    const std::size_t index = index_of(image.tile);
    for (const auto& segment : image.segments) {
      const auto bytes = schema::segment_bytes(application, segment);
      tiles_[index]->load_segment(segment.address, bytes,
                                  (segment.flags & schema::kSegmentExecute) != 0);
    }
    entry_points_[index] = image.entry_point;
    loaded_[index] = true;
  }
  // One provenance table for every tile's index (a model's can be large).
  const auto provenance =
      std::make_shared<const std::vector<std::string>>(application.debug.provenance);
  for (const auto& debug : application.debug.tiles) {
    tiles_[index_of(debug.tile)]->set_debug(TileDebugIndex(debug, provenance));
  }
  planned_runs_.clear();
  planned_phases_ = schema::PhasePlan(application.debug);
}

void Chip::load_segment(target::PhysicalTile tile, std::uint32_t address,
                        std::span<const std::uint8_t> bytes, bool executable) {
  const std::size_t index = index_of(tile);
  const auto range = target::AddressRange::from_size(
      address, static_cast<std::uint32_t>(bytes.size()), "segment");
  if (!target::in_sram(range)) {
    throw UsageError(fmt::format("segment {} is outside tile memory {}", range, target::kSram));
  }
  tiles_[index]->load_segment(address, bytes, executable);
  loaded_[index] = true;
}

void Chip::set_debug(target::PhysicalTile tile, const schema::TileDebug& debug,
                     const std::vector<std::string>& provenance) {
  tiles_[index_of(tile)]->set_debug(TileDebugIndex(debug, provenance));
}

void Chip::start(std::optional<std::vector<target::PhysicalTile>> tiles,
                 std::optional<std::uint32_t> entry_point) {
  kill_processes();
  faults_.clear();
  spans_.clear();
  stop_requested_ = false;
  fault_horizon_.reset();
  started_.clear();
  for (auto& tile : tiles_) tile->clear_activities();
  if (tiles) {
    for (const auto tile : *tiles) started_.push_back(index_of(tile));
  } else {
    for (std::size_t i = 0; i < tiles_.size(); ++i) {
      if (loaded_[i]) started_.push_back(i);
    }
  }
  if (started_.empty()) throw UsageError("no tile to start: load a package first");
  origin_ns_ = systemc_now();
  phase_participants_.clear();
  phase_pending_.clear();
  exchange_stats_ = {};
  internal_sync_.reset(tiles_.size(), started_.size(), options_.device_sync_cycles);
  host_sync_.reset(tiles_.size(), started_.size(), options_.host_sync_cycles, [this] {
    std::uint16_t& credits = hsp_marks_[options_.host_sync_mark == target::kHspGs1Control ? 0 : 1];
    if (credits == 0) return false;
    --credits;
    return true;
  });
  segment_start_.assign(tiles_.size(), 0);
  processes_.resize(tiles_.size());
  sc_core::sc_spawn_options spawn;
  spawn.spawn_method();
  auto batch = std::make_shared<BatchProcess>();
  batch->chip = this;
  sc_core::sc_spawn_options batch_spawn;
  batch_spawn.spawn_method();
  batch_spawn.set_sensitivity(&batch->ready);
  batch_spawn.dont_initialize();
  batch->handle = sc_core::sc_spawn(
      [batch] {
        if (batch->chip != nullptr) batch->chip->run_ready_tiles();
      },
      sc_core::sc_gen_unique_name("tiles"), &batch_spawn);
  batch_ = std::move(batch);
  for (const std::size_t index : started_) {
    tiles_[index]->start(entry_point.value_or(entry_points_[index]), 0);
    auto process = std::make_shared<TileProcess>();
    process->chip = this;
    process->handle = sc_core::sc_spawn(
        [process, index] {
          if (process->chip != nullptr) process->chip->on_tile_activation(index);
        },
        sc_core::sc_gen_unique_name("tile"), &spawn);
    processes_[index] = std::move(process);
  }
}

std::uint64_t Chip::now() const { return systemc_now() - origin_ns_; }

void Chip::request_stop() {
  stop_requested_ = true;
  sc_core::sc_pause();
}

void Chip::stop_at_fault(const Fault& fault) {
  faults_.add(fault);
  if (options_.keep_going) return;
  fault_horizon_ = std::min(fault_horizon_.value_or(fault.cycle), fault.cycle);
  stop_if_caught_up();
}

bool Chip::past_fault_horizon(const Tile& tile) const {
  return fault_horizon_ && tile.cycle() > *fault_horizon_;
}

void Chip::stop_if_caught_up() {
  if (!fault_horizon_ || stop_requested_) return;
  for (const std::size_t index : started_) {
    const Tile& tile = *tiles_[index];
    if (tile.status() == TileStatus::kRunning && !past_fault_horizon(tile)) return;
  }
  request_stop();
}

std::uint64_t Chip::delay_until(std::uint64_t cycle) const {
  const std::uint64_t now_cycle = now();
  return cycle > now_cycle ? cycle - now_cycle : 0;
}

// Releases tiles at their release cycles. A release may lie behind the
// kernel's clock (tiles run ahead and behind it); the tile's own cycle count
// is what matters, the event only wakes its process.
void Chip::apply_releases(const std::vector<Release>& releases) {
  for (const auto& release : releases) {
    Tile& tile = *tiles_[release.tile];
    if (tile.status() != TileStatus::kWaiting) continue;  // faulted meanwhile
    const std::uint64_t at = release.cycle;
    if (options_.trace) {
      spans_.push_back({release.tile, "compute", segment_start_[release.tile], tile.wait_started()});
      spans_.push_back({release.tile, "sync wait", tile.wait_started(), at, tile.waiting_zone()});
    }
    segment_start_[release.tile] = at;
    tile.release(at);
    processes_[release.tile]->release.notify(cycles(delay_until(at)));
  }
}

void Chip::open_exchange_phase(std::uint64_t round, const std::vector<Release>& releases,
                               bool host) {
  phase_is_host_ = host;
  host_services_.clear();
  phase_round_ = round;
  phase_participants_.clear();
  for (const auto& release : releases) {
    phase_participants_.push_back(release.tile);
    tiles_[release.tile]->begin_exchange_phase(round);
  }
  std::sort(phase_participants_.begin(), phase_participants_.end());
  phase_pending_ = phase_participants_;
}

void Chip::leave_exchange_phase(std::size_t index) {
  const auto it = std::find(phase_pending_.begin(), phase_pending_.end(), index);
  if (it == phase_pending_.end()) return;
  phase_pending_.erase(it);
  if (auto& record = tiles_[index]->exchange()) record->finish();
  if (phase_pending_.empty()) solve_exchange_phase();
}

void Chip::solve_exchange_phase() {
  std::vector<Tile*> tiles;
  for (auto& tile : tiles_) tiles.push_back(tile.get());
  std::vector<Fault> faults;
  if (phase_is_host_) {
    faults = solve_host_phase(tiles, phase_participants_, phase_round_, host_memory_, host_stats_,
                              host_services_);
  } else {
    const schema::ExchangePhase* planned = planned_phases_.plan(phase_round_);
    ++(planned != nullptr ? exchange_stats_.checked_phases : exchange_stats_.unchecked_phases);
    faults = sim::solve_exchange_phase(tiles, phase_participants_, phase_round_, planned,
                                       exchange_stats_, pool_.get(), &planned_runs_);
  }
  for (const auto& fault : faults) stop_at_fault(fault);
  // Rows that returned go on at their own cycle: the phase cost them their
  // events, not a wait.
  std::vector<Release> releases;
  for (const std::size_t index : phase_participants_) {
    Tile& tile = *tiles_[index];
    if (tile.status() == TileStatus::kWaiting && tile.waiting_zone() == kExchangeWait) {
      releases.push_back({index, tile.wait_started(), phase_round_});
    }
  }
  if (phase_is_host_) release_host_receivers();
  for (const std::size_t index : phase_participants_) tiles_[index]->exchange().reset();
  phase_participants_.clear();
  apply_releases(releases);
}

// Tiles at `sync 0` go on once the host has served them: when their
// INCOMING_DCOUNT matches the words the host returned, after the transfer
// time (4 bytes per cycle); otherwise the sync would never finish.
void Chip::release_host_receivers() {
  std::vector<Release> releases;
  for (const std::size_t index : phase_participants_) {
    Tile& tile = *tiles_[index];
    if (tile.status() != TileStatus::kWaiting || tile.waiting_zone() != 0) continue;
    const HostService service = host_services_[index];
    const std::uint32_t dcount = tile.csr(static_cast<std::uint8_t>(target::isa::Csr::kIncomingDcount));
    if (dcount != service.returned_words) {
      const std::string unheard =
          service.unheard_words == 0
              ? std::string()
              : fmt::format(
                    " that reached it; {} more did not: its INCOMING_MUX is {:#x}, "
                    "not its host endpoint {:#x}",
                    service.unheard_words, service.mux, service.endpoint);
      tile.raise(FaultKind::kDeadlock,
                 fmt::format("host phase {}: sync 0 waits for INCOMING_DCOUNT = {} words, but the "
                             "host returned {}{}",
                             phase_round_, dcount, service.returned_words, unheard));
      stop_at_fault(*tile.fault());
      continue;
    }
    releases.push_back({index, tile.wait_started() + service.cycles, phase_round_});
  }
  apply_releases(releases);
}

// Quantum boundaries are one grid for all tiles (multiples of the quantum),
// so that tiles released together keep yielding at the same instants and
// run together again; a tile that overshoots a boundary (a long kernel call)
// resumes at the last boundary it passed. Both decide only when the host
// runs a tile: its results depend on its own cycle count alone.
std::uint64_t Chip::budget_end(const Tile& tile) const {
  const std::uint64_t quantum = options_.quantum_cycles;
  std::uint64_t end = std::min((tile.cycle() / quantum + 1) * quantum, limit_);
  // An instruction issued at the fault horizon may still fault at it (a fetch).
  if (fault_horizon_) end = std::min(end, *fault_horizon_ + 1);
  return end;
}

void Chip::reschedule(std::size_t index) {
  const std::uint64_t quantum = options_.quantum_cycles;
  processes_[index]->release.notify(
      cycles(delay_until(tiles_[index]->cycle() / quantum * quantum)));
}

void Chip::on_tile_activation(std::size_t index) {
  Tile& tile = *tiles_[index];
  TileProcess& process = *processes_[index];
  sc_core::next_trigger(process.release);
  if (tile.status() != TileStatus::kRunning) return;
  if (stop_requested_ || tile.cycle() >= limit_ || past_fault_horizon(tile)) {
    if (past_fault_horizon(tile)) stop_if_caught_up();
    // Wait at the tile's own time; the next run() continues from here.
    // Past the limit or the fault horizon, wait at least a cycle so the
    // kernel can reach it.
    std::uint64_t delay = delay_until(tile.cycle());
    if (!stop_requested_ && delay == 0) delay = 1;
    sc_core::next_trigger(cycles(delay));
    return;
  }
  // Run with every other tile woken at this instant: the batch process runs
  // after this evaluation phase, when all of them are queued.
  ready_.push_back(index);
  batch_->ready.notify(sc_core::SC_ZERO_TIME);
}

// Between two interactions tiles share nothing, so the woken tiles run on the
// host pool at once; their outcomes (syncs, faults, phases) are then handled
// one by one in tile order, which keeps results, cycles, faults and traces
// the same whatever the thread count.
void Chip::run_ready_tiles() {
  std::vector<std::size_t> batch = std::move(ready_);
  ready_.clear();
  std::sort(batch.begin(), batch.end());
  std::vector<RunOutcome> outcomes(batch.size());
  pool_->for_each(batch.size(), [&](std::size_t i) {
    Tile& tile = *tiles_[batch[i]];
    outcomes[i] = tile.run(budget_end(tile));
  });
  for (std::size_t i = 0; i < batch.size(); ++i) continue_tile(batch[i], outcomes[i]);
}

// What a tile does after its run returned: it waits (at a sync, for its
// phase, for the host) or is run again at its own time.
void Chip::continue_tile(std::size_t index, const RunOutcome& outcome) {
  Tile& tile = *tiles_[index];
  const bool host_receive = outcome.kind == RunOutcome::Kind::kSync && outcome.zone == 0;
  if (outcome.kind != RunOutcome::Kind::kBudget && outcome.kind != RunOutcome::Kind::kRowDone &&
      !host_receive) {
    leave_exchange_phase(index);  // a tile that syncs, halts or stops has left its phase
  }
  switch (outcome.kind) {
    case RunOutcome::Kind::kBudget:
      reschedule(index);
      return;
    case RunOutcome::Kind::kRowDone:
      tile.begin_wait(kExchangeWait);
      leave_exchange_phase(index);
      return;
    case RunOutcome::Kind::kSans:
      if (outcome.zone == 0) {
        const auto releases = internal_sync_.skip(index);
        if (!releases.empty()) open_exchange_phase(releases.front().round, releases);
        apply_releases(releases);
      }
      if (outcome.zone == 1) {
        const auto releases = host_sync_.leave(index);
        if (!releases.empty()) open_exchange_phase(releases.front().round, releases, true);
        apply_releases(releases);
      }
      reschedule(index);
      return;
    case RunOutcome::Kind::kSync:
      if (outcome.zone == 1) {
        tile.begin_wait(1);
        tile.release(tile.cycle() + options_.local_sync_cycles);
        reschedule(index);
        return;
      }
      if (outcome.zone == 3) {
        tile.begin_wait(3);
        const auto releases = internal_sync_.arrive(index, tile.cycle());
        if (!releases.empty()) open_exchange_phase(releases.front().round, releases);
        apply_releases(releases);
        return;
      }
      if (is_host_zone(outcome.zone)) {
        // Released when every tile is there and the host has granted the
        // round; the run goes on until nothing else can happen, so that
        // every tile reaches its host sync before the host is asked to act.
        tile.begin_wait(outcome.zone);
        const auto releases = host_sync_.arrive(index, tile.cycle());
        if (!releases.empty()) open_exchange_phase(releases.front().round, releases, true);
        apply_releases(releases);
        return;
      }
      if (outcome.zone == 0) {
        // Wait for the host to serve this tile's packets (its phase's solve).
        if (phase_is_host_ && tile.exchange()) {
          tile.begin_wait(0);
          leave_exchange_phase(index);
          return;
        }
        tile.raise(FaultKind::kNotModelled, "sync 0 (host receive) outside a host phase");
      } else {
        tile.raise(FaultKind::kNotModelled, fmt::format("sync {}: not a known sync zone", outcome.zone));
      }
      [[fallthrough]];
    case RunOutcome::Kind::kFaulted:
      leave_exchange_phase(index);  // its row is over, even when it faulted at a sync 0
      stop_at_fault(*tile.fault());
      return;
    case RunOutcome::Kind::kTrapped:
      request_stop();
      return;
    case RunOutcome::Kind::kHalted:
      if (options_.trace) spans_.push_back({index, "compute", segment_start_[index], tile.cycle()});
      return;
  }
}

RunResult Chip::run(std::uint64_t max_cycles) {
  if (started_.empty()) throw UsageError("run() before start()");
  limit_ = max_cycles;
  stop_requested_ = false;
  fault_horizon_.reset();
  const std::size_t faults_before = faults_.all().size();
  if (now() < limit_) {
    if (max_cycles == ~std::uint64_t{0}) {
      sc_core::sc_start();
    } else {
      // Exit on starvation so that a run waiting for the host or deadlocked
      // returns at once instead of idling to the limit.
      sc_core::sc_start(cycles(limit_ - now()), sc_core::SC_EXIT_ON_STARVATION);
    }
  }
  RunResult result;
  result.cycle = now();
  // Tiles run ahead of the kernel's clock: the run reached the latest of them.
  for (const std::size_t index : started_) {
    result.cycle = std::max(result.cycle, tiles_[index]->cycle());
  }
  std::size_t halted = 0, trapped = 0, host = 0, waiting = 0, faulted = 0;
  for (const std::size_t index : started_) {
    const Tile& tile = *tiles_[index];
    switch (tile.status()) {
      case TileStatus::kHalted: ++halted; break;
      case TileStatus::kTrapped: ++trapped; break;
      case TileStatus::kFaulted: ++faulted; break;
      case TileStatus::kWaiting:
        (is_host_zone(tile.waiting_zone()) ? host : waiting)++;
        break;
      default: break;
    }
  }
  if (faults_.all().size() > faults_before && !options_.keep_going) {
    result.reason = StopReason::kFault;
  } else if (trapped > 0) {
    result.reason = StopReason::kTrapped;
  } else if (host > 0 && (sc_core::sc_pending_activity() || host_sync_.waiting_for_grant())) {
    // The host's grant (an HSP credit) or more simulated time moves it on.
    result.reason = StopReason::kHostSync;
  } else if (halted + faulted == started_.size()) {
    result.reason = faulted > 0 ? StopReason::kFault : StopReason::kAllHalted;
  } else if (!sc_core::sc_pending_activity() && waiting + host > 0) {
    // Tiles wait for tiles that will never come, whatever the host grants.
    diagnose_deadlock();
    result.reason = StopReason::kDeadlock;
  } else {
    // Every running tile has reached the limit (the kernel stops early when
    // the next activity lies beyond it).
    result.reason = StopReason::kCycleLimit;
    result.cycle = std::max(result.cycle, limit_);
  }
  return result;
}

void Chip::pass_time(std::uint64_t cycles_to_pass) {
  if (started_.empty() || cycles_to_pass == 0) return;
  limit_ = now() + cycles_to_pass;
  stop_requested_ = false;
  fault_horizon_.reset();
  sc_core::sc_start(cycles(cycles_to_pass), sc_core::SC_RUN_TO_TIME);
}

void Chip::diagnose_deadlock() {
  std::string where;
  for (const std::size_t index : started_) {
    const Tile& tile = *tiles_[index];
    if (!where.empty()) where += "; ";
    if (tile.status() == TileStatus::kWaiting && tile.waiting_zone() == kExchangeWait) {
      where += fmt::format("{} waits for the other rows of exchange phase {} (cycle {})", tile.id(),
                           phase_round_, tile.wait_started());
    } else if (tile.status() == TileStatus::kWaiting) {
      where += fmt::format("{} waits at sync {} (pc {:#x}, cycle {}", tile.id(), tile.waiting_zone(),
                           tile.pc() - 4, tile.wait_started());
      if (tile.waiting_zone() == 3) {
        const std::uint64_t round = internal_sync_.round_of(index) - 1;
        where += fmt::format(", round {}: {} of {} tiles present", round,
                             internal_sync_.present(round), started_.size());
      } else if (is_host_zone(tile.waiting_zone())) {
        const std::uint64_t round = host_sync_.round_of(index) - 1;
        where += fmt::format(", host round {}: {} of {} tiles present", round,
                             host_sync_.present(round), started_.size());
      }
      where += ")";
    } else {
      where += fmt::format("{} {} (pc {:#x}, cycle {})", tile.id(),
                           tile_status_name(tile.status()), tile.pc(), tile.cycle());
    }
  }
  Fault fault;
  fault.kind = FaultKind::kDeadlock;
  for (const std::size_t index : started_) fault.cycle = std::max(fault.cycle, tiles_[index]->cycle());
  fault.message = "no tile can make progress: " + where;
  faults_.add(std::move(fault));
}

namespace {

std::size_t hsp_index(std::uint32_t offset) {
  if (!target::is_hsp_mark_register(offset)) {
    throw UsageError(fmt::format("{:#x} is not an HSP mark register (GS1 {:#x}, GS2 {:#x})", offset,
                                 target::kHspGs1Control, target::kHspGs2Control));
  }
  return offset == target::kHspGs1Control ? 0 : 1;
}

}  // namespace

void Chip::write_hsp_mark(std::uint32_t offset, std::uint16_t value) {
  hsp_marks_[hsp_index(offset)] = value;
  if (started_.empty()) return;
  const auto releases = host_sync_.retry(now());
  if (!releases.empty()) open_exchange_phase(releases.front().round, releases, true);
  apply_releases(releases);
}

std::uint16_t Chip::read_hsp_mark(std::uint32_t offset) const { return hsp_marks_[hsp_index(offset)]; }

void Chip::attach_host_buffer(std::uint32_t index, std::span<std::uint8_t> bytes) {
  host_memory_.attach(index, bytes);
}

void Chip::detach_host_buffer(std::uint32_t index) { host_memory_.detach(index); }

void Chip::detach_all_host_buffers() { host_memory_.detach_all(); }

std::vector<target::PhysicalTile> Chip::tiles_waiting_at_host_sync() const {
  std::vector<target::PhysicalTile> waiting;
  for (const std::size_t index : started_) {
    const Tile& tile = *tiles_[index];
    if (tile.status() == TileStatus::kWaiting && is_host_zone(tile.waiting_zone())) {
      waiting.push_back(tile.id());
    }
  }
  return waiting;
}

void Chip::resume(target::PhysicalTile physical) {
  const std::size_t index = index_of(physical);
  Tile& tile = *tiles_[index];
  if (tile.status() != TileStatus::kTrapped) {
    throw UsageError(fmt::format("{} is {}, not trapped", physical, tile_status_name(tile.status())));
  }
  const std::uint64_t at = std::max(tile.cycle(), now());
  tile.resume(at);
  processes_[index]->release.notify(cycles(delay_until(at)));
}

RunReport Chip::report() const {
  RunReport report;
  for (const std::size_t index : started_) {
    report.total_cycles = std::max(report.total_cycles, tiles_[index]->cycle());
  }
  std::vector<std::size_t> order = started_;
  std::sort(order.begin(), order.end(),
            [&](auto a, auto b) { return tiles_[a]->id() < tiles_[b]->id(); });
  for (const std::size_t index : order) {
    const Tile& tile = *tiles_[index];
    TileReport entry;
    entry.tile = tile.id();
    entry.status = tile.status();
    entry.end_cycle = tile.cycle();
    entry.busy = tile.cycles().busy;
    entry.sync_wait = tile.cycles().sync_wait;
    const std::uint64_t accounted = entry.busy + entry.sync_wait;
    entry.idle = report.total_cycles > accounted ? report.total_cycles - accounted : 0;
    report.tiles.push_back(entry);
  }
  for (const auto& tile : tiles_) report.sram_bytes_touched += tile->sram().touched_bytes();
  return report;
}

nlohmann::json RunReport::to_json() const {
  nlohmann::json tiles_json = nlohmann::json::array();
  for (const auto& tile : tiles) {
    tiles_json.push_back({{"tile", tile.tile.value},
                          {"status", tile_status_name(tile.status)},
                          {"endCycle", tile.end_cycle},
                          {"busy", tile.busy},
                          {"syncWait", tile.sync_wait},
                          {"idle", tile.idle}});
  }
  return {{"totalCycles", total_cycles}, {"sramBytesTouched", sram_bytes_touched},
          {"tiles", tiles_json}};
}

std::string RunReport::to_text() const {
  std::string text = fmt::format("total cycles  {}\n", total_cycles);
  if (tiles.empty()) return text;
  std::uint64_t busy_sum = 0, wait_sum = 0, busy_max = 0;
  for (const auto& tile : tiles) {
    busy_sum += tile.busy;
    wait_sum += tile.sync_wait;
    busy_max = std::max(busy_max, tile.busy);
  }
  const double n = static_cast<double>(tiles.size());
  text += fmt::format("tiles         {}\n", tiles.size());
  text += fmt::format("busy          mean {:.0f}, max {}\n", static_cast<double>(busy_sum) / n, busy_max);
  text += fmt::format("sync wait     mean {:.0f}\n", static_cast<double>(wait_sum) / n);
  text += fmt::format("sram touched  {} bytes\n", sram_bytes_touched);
  if (tiles.size() <= 16) {
    text += "tile    status   end       busy      sync wait idle\n";
    for (const auto& t : tiles) {
      text += fmt::format("{:<7} {:<8} {:<9} {:<9} {:<9} {}\n", fmt::format("{}", t.tile),
                          tile_status_name(t.status), t.end_cycle, t.busy, t.sync_wait, t.idle);
    }
  }
  return text;
}

nlohmann::json Chip::trace() const {
  // Chrome trace event format: complete events ("X") with microsecond
  // timestamps; one thread per tile.
  const double kCyclesPerMicrosecond = static_cast<double>(options_.clock_hz) / 1e6;
  nlohmann::json events = nlohmann::json::array();
  for (const auto& span : spans_) {
    if (span.end < span.start) continue;
    events.push_back({{"name", span.name},
                      {"ph", "X"},
                      {"pid", 0},
                      {"tid", tiles_[span.tile]->id().value},
                      {"ts", static_cast<double>(span.start) / kCyclesPerMicrosecond},
                      {"dur", static_cast<double>(span.end - span.start) / kCyclesPerMicrosecond}});
  }
  for (const std::size_t index : started_) {
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", 0},
                      {"tid", tiles_[index]->id().value},
                      {"args", {{"name", fmt::format("{}", tiles_[index]->id())}}}});
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ns"}};
}

bool Chip::starved() const { return !sc_core::sc_pending_activity(); }

}  // namespace tessera::sim
