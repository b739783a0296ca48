#pragma once
// One simulated tile: its SRAM, its supervisor context, and the interpreter
// that executes the supervisor code fetched from that SRAM through target/'s
// decoder (ARCHITECTURE.md decision 1). Kernel calls run host models through
// checked memory (decisions 2 and 3). A tile runs loosely timed: run() keeps
// executing and adding to the tile's own cycle count until it reaches an
// interaction (a sync, a halt, a trap, a fault) or its budget; the chip
// decides what happens next (decision 5).

#include <array>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "kernels/registry.hpp"
#include "kernels/rounding.hpp"
#include "sim/call_site.hpp"
#include "sim/exchange_record.hpp"
#include "sim/fault.hpp"
#include "sim/options.hpp"
#include "sim/sram.hpp"
#include "sim/tile_debug.hpp"
#include "target/isa.hpp"
#include "target/memory_map.hpp"
#include "target/topology.hpp"

namespace tessera::sim {

namespace isa = target::isa;

enum class TileStatus : std::uint8_t {
  kIdle,     // nothing loaded or not started
  kRunning,
  kWaiting,  // at a sync, waiting for its release
  kTrapped,  // stopped by `trap` (PBRK); the debugger may resume it
  kHalted,   // branched to address 0: done
  kFaulted,
};

std::string_view tile_status_name(TileStatus status) noexcept;

// Exception types of the status CSR (reference §3).
enum class ExceptionType : std::uint8_t {
  kNone = 0,
  kPbrk0 = 2,
  kPbrk1 = 3,
  kInvalidAddress = 8,
  kInvalidInstruction = 12,
};

// Where a run() stopped.
struct RunOutcome {
  // kRowDone: the tile's exchange row returned; it waits for the phase's
  // words to move before it may read them.
  enum class Kind : std::uint8_t { kSync, kSans, kHalted, kTrapped, kFaulted, kBudget, kRowDone };
  Kind kind = Kind::kBudget;
  std::uint32_t zone = 0;  // the sync zone (kSync) or the sans class (kSans)
};

// What a tile ran, for the cycle profile (recorded with options.trace only):
// each kernel call and each exchange row, on the tile's own cycle count.
// Names point into the registry and the package's provenance table, which
// outlive the run's records (both stay until the next load).
struct TileActivity {
  enum class Kind : std::uint8_t { kKernel, kExchangeRow };
  Kind kind = Kind::kKernel;
  std::uint64_t start = 0;
  std::uint64_t end = 0;
  const std::string* kernel = nullptr;              // kKernel
  std::uint32_t provenance = schema::kNoProvenance;  // kKernel: the call site's
  std::uint64_t phase = 0;                           // kExchangeRow: its round
};

// A store to a loop's counter word (TileDebugIndex::loops), for the cycle
// profile (recorded with options.trace only): from `cycle` on the tile runs
// iteration count − value of loop `loop`, or is outside it when the value is
// not in [1, count].
struct LoopCounterWrite {
  std::uint64_t cycle = 0;
  std::uint32_t loop = 0;  // index into TileDebugIndex::loops()
  std::uint32_t value = 0;
};

// Cycle accounting per tile (the run report).
struct TileCycles {
  std::uint64_t busy = 0;       // executing instructions and kernel models
  std::uint64_t sync_wait = 0;  // from arriving at a sync to its release
};

class Tile {
 public:
  Tile(target::PhysicalTile id, const SimOptions& options, const kernels::KernelRegistry& registry);

  target::PhysicalTile id() const noexcept { return id_; }
  TileSram& sram() noexcept { return sram_; }
  const TileSram& sram() const noexcept { return sram_; }

  // Loading: clears the tile, writes segment bytes, records executable
  // ranges (kernel models may not touch them) and the debug records.
  void reset();
  void load_segment(std::uint32_t address, std::span<const std::uint8_t> bytes, bool executable);
  void set_debug(TileDebugIndex debug);
  void start(std::uint32_t entry_point, std::uint64_t cycle);

  // Executes until an interaction or until the tile's cycle count reaches
  // `budget_end`.
  RunOutcome run(std::uint64_t budget_end);

  // ---- State, as a debugger sees it --------------------------------------------
  TileStatus status() const noexcept { return status_; }
  std::uint32_t pc() const noexcept { return pc_; }
  std::uint32_t reg(unsigned index) const { return registers_.at(index); }
  void set_reg(unsigned index, std::uint32_t value);
  void set_pc(std::uint32_t pc) noexcept { pc_ = pc; }
  std::uint32_t csr(std::uint8_t index) const noexcept;
  ExceptionType exception() const noexcept { return exception_; }
  std::uint64_t cycle() const noexcept { return cycle_; }
  const TileCycles& cycles() const noexcept { return cycles_; }
  const std::optional<Fault>& fault() const noexcept { return fault_; }
  const TileDebugIndex& debug() const noexcept { return debug_; }
  const std::vector<TileActivity>& activities() const noexcept { return activities_; }
  const std::vector<LoopCounterWrite>& loop_counter_writes() const noexcept {
    return loop_counter_writes_;
  }
  void clear_activities() noexcept {
    activities_.clear();
    loop_counter_writes_.clear();
  }

  // Faults the tile from outside (the chip's sync handling, the fabric), at
  // the instruction it executed last (the sync it waits at, its row's br).
  void raise(FaultKind kind, std::string message);

  // Exchange phases: the chip opens one when the tile leaves a device-wide
  // sync; exchange instructions are recorded on its event clock.
  void begin_exchange_phase(std::uint64_t phase);
  std::optional<ExchangeRecord>& exchange() noexcept { return exchange_; }
  // The receive state that persists between phases: the source select (the
  // INCOMING_MUX register) and the incoming memory pointer (word address).
  std::uint32_t incoming_mux() const noexcept { return csrs_[kIncomingMuxIndex]; }
  void set_incoming_mux(std::uint32_t value) noexcept { csrs_[kIncomingMuxIndex] = value; }
  std::uint32_t incoming_pointer() const noexcept { return incoming_pointer_; }
  void set_incoming_pointer(std::uint32_t value) noexcept { incoming_pointer_ = value; }
  bool in_code(std::uint32_t address, std::uint32_t size) const noexcept;
  // Whether [address, address + size) may touch the code: false only when it
  // lies wholly before or after every code range (the span check's fast
  // path; in_code decides otherwise).
  bool may_touch_code(std::uint64_t address, std::uint64_t end) const noexcept {
    return end > code_bounds_.begin && address < code_bounds_.end;
  }
  // Changes (to a value no tile ever had) whenever the code ranges change or
  // SRAM pages are given back: what ResolvedCallSite::Operand::prepared
  // remembers is valid only within one epoch.
  std::uint64_t span_epoch() const noexcept { return span_epoch_; }

  // Sync bookkeeping (driven by the chip's SyncController).
  void begin_wait(std::uint32_t zone) noexcept;
  void release(std::uint64_t at_cycle) noexcept;
  std::uint32_t waiting_zone() const noexcept { return waiting_zone_; }
  std::uint64_t wait_started() const noexcept { return wait_started_; }

  // Resumes a trapped tile at its pc, at `at_cycle` (it re-traps if the trap
  // is still there).
  void resume(std::uint64_t at_cycle);

 private:
  struct CachedInstruction {
    std::uint32_t pc = 0xFFFFFFFF;
    std::uint32_t word0 = 0;
    std::uint32_t word1 = 0;
    std::uint8_t size = 0;
    std::uint8_t alignment = 4;  // the table's: where the instruction may sit
    isa::Instruction instruction;
  };
  // An exchange row this tile ran up to its closing br: what it did then,
  // which running it again from the same code does again (a row's
  // instructions read no register and no memory, and the outgoing stream
  // starts afresh in every phase), so it is replayed while its code is the
  // same (phases in the model's loops run the same rows again and again).
  struct RecordedRow {
    std::vector<std::uint32_t> words;  // the code from the row's first instruction to its br
    target::OutgoingStream stream;     // before the br
    std::vector<target::SendWindow> sends;
    std::vector<target::ReceiveControl> controls;
    std::uint64_t cycles = 0;  // from the first instruction's issue to the br's
    std::uint32_t last_pc = 0;  // the instruction before the br
  };
  static constexpr std::size_t kDecodeCacheSize = 512;
  static constexpr auto kIncomingMuxIndex = static_cast<std::uint8_t>(isa::Csr::kIncomingMux);

  void add_code_range(target::AddressRange code);
  const CachedInstruction& decode_at(std::uint32_t pc, std::uint32_t word0);
  // Records a store to a loop's counter word (traced runs only).
  void note_loop_counter(std::uint32_t address, std::uint32_t value);
  RunOutcome fail(FaultKind kind, std::string message, std::string provenance = {});
  std::optional<RunOutcome> execute(const isa::Instruction& instruction);
  std::optional<RunOutcome> call(const isa::Call& instruction);
  // The call site at `pc` resolved for `kernel` (ResolvedCallSite::resolve
  // at its first call, or when the code there now calls another kernel).
  ResolvedCallSite& resolved_call_site(std::uint32_t pc, const kernels::KernelSpec& kernel);
  std::optional<RunOutcome> branch_to(std::uint32_t target);
  static bool fetchable(std::uint32_t pc) noexcept;
  bool data_address_ok(std::uint32_t address) const noexcept;
  void write_register(isa::Reg reg, std::uint32_t value) noexcept;
  std::uint32_t read_register(isa::Reg reg) const noexcept;
  bool in_row(const isa::Instruction& instruction) const noexcept;
  std::optional<RunOutcome> exchange_step(const isa::Instruction& instruction, std::uint32_t pc,
                                          std::uint32_t bytes, std::uint64_t issued_at);
  // Runs the row whose first instruction is at `pc` up to its br from its
  // record, when there is one for the same code and the budget would not
  // stop the row before its br; false otherwise (the interpreter runs it).
  bool replay_row(std::uint32_t pc, std::uint64_t issued_at);
  void record_row(std::uint32_t br_pc, std::uint64_t br_issued_at);

  friend class CheckedKernelMemory;

  target::PhysicalTile id_;
  const SimOptions& options_;
  const kernels::KernelRegistry& registry_;
  TileSram sram_;
  TileDebugIndex debug_;
  // Call targets the debug section names as kernels or runtime helpers, with
  // their host models (null: the registry has none), found once per load and
  // sorted by address; the call sites the debug section records, sorted by
  // pc, each resolved at its first call (ResolvedCallSite::kernel is null
  // until then); and call sites it does not record, resolved the same way.
  // Every kernel call looks up its target and its site: flat sorted arrays
  // of the tile's own keep that to a few cache lines, where hash maps cost a
  // division and a scattered node each (most of a small call's host time).
  std::vector<std::pair<std::uint32_t, const kernels::KernelSpec*>> models_;
  std::vector<std::uint32_t> call_site_pcs_;
  std::vector<ResolvedCallSite> call_sites_;  // by call_site_pcs_'s order
  std::unordered_map<std::uint32_t, ResolvedCallSite> unrecorded_call_sites_;
  // The executable segments' bytes: sorted, disjoint, touching ranges merged.
  std::vector<target::AddressRange> code_ranges_;
  std::size_t code_segments_ = 0;  // executable segments loaded
  // From the lowest code range's begin to the highest one's end (empty,
  // touching nothing, without code).
  target::AddressRange code_bounds_;
  std::uint64_t span_epoch_;

  TileStatus status_ = TileStatus::kIdle;
  std::array<std::uint32_t, 16> registers_{};
  std::array<std::uint32_t, 256> csrs_{};
  std::uint32_t pc_ = 0;
  std::uint32_t last_pc_ = 0;  // the instruction executed last (where a raised fault points)
  ExceptionType exception_ = ExceptionType::kNone;
  std::uint64_t cycle_ = 0;
  TileCycles cycles_;
  std::optional<Fault> fault_;
  std::uint32_t waiting_zone_ = 0;
  std::uint64_t wait_started_ = 0;
  std::vector<CachedInstruction> decode_cache_;
  std::optional<ExchangeRecord> exchange_;
  std::uint32_t incoming_pointer_ = 0;
  // The six worker PRNG streams stochastic rounding draws from: this tile's
  // own, seeded at reset and carried across kernel calls as on the device
  // (kernels/rounding.hpp), so no tile's results depend on another's.
  kernels::TilePrng prng_;
  std::vector<TileActivity> activities_;
  std::vector<LoopCounterWrite> loop_counter_writes_;
  std::uint64_t row_started_ = 0;  // the cycle the current exchange row's first instruction issued
  std::uint32_t row_last_pc_ = 0;  // the current row's instruction executed last
  bool row_replayed_ = false;      // the current row came from rows_
  // Whether the current row ran its instructions one after the other from
  // its first, and where the next one would be.
  bool row_contiguous_ = false;
  std::uint32_t row_next_pc_ = 0;
  std::uint64_t budget_end_ = 0;   // the current run()'s
  std::unordered_map<std::uint32_t, RecordedRow> rows_;  // by the row's first pc
};

}  // namespace tessera::sim
