#pragma once
// The linker's shared state (internal to compiler/emit): link.cpp runs the
// six steps of link.hpp in order, and each step is defined in its own file,
// named in its section below. Only emit/*.cpp include this header.

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "compiler/elf/linker.hpp"
#include "compiler/emit/code.hpp"
#include "compiler/emit/link.hpp"
#include "compiler/emit/phase_rounds.hpp"
#include "compiler/exchange/phase_memo.hpp"
#include "compiler/exchange/scheduler.hpp"
#include "compiler/host_io.hpp"
#include "compiler/placement.hpp"
#include "kernels/registry.hpp"
#include "schema/profile_samples.hpp"
#include "support/checked.hpp"
#include "support/little_endian.hpp"
#include "support/thread_pool.hpp"
#include "target/host_exchange.hpp"
#include "target/loader_batch.hpp"
#include "target/memory_map.hpp"

namespace tessera::compiler::emit::linking {

using isa::Reg;
using lower::BufferId;
using lower::LogicalTile;
using lower::Step;
using lower::StepKind;
using target::PhysicalTile;

// Where rows and host programs are put while their sizes are found: any
// 8-aligned executable address gives the same code (the row emitter pads
// relative to the row's own address), and the probe's rows are checked
// against their tile's data elements like placed ones. So it is the start of
// region 0's runtime-and-kernels range, an element no data ever takes: data
// lives in region 1, and weights that outgrow it take region 0 only above
// the code, from 0x80000 down — as far as 0x60000 for so400m at f8, which
// a probe there collided with.
inline constexpr std::uint32_t kProbeCode = target::kLinkerRegion1.begin;
static_assert(kProbeCode % 8 == 0 && target::kLinkerRegion1.end <= target::kLinkerRegion2.begin);
inline constexpr std::uint32_t kStubBytes = 8;  // br $m10; nop
// Loop code only; never live across other code.
inline constexpr isa::Reg kLoopCount = isa::Reg::m12;
inline constexpr isa::Reg kLoopCounter = isa::Reg::m13;
inline constexpr std::uint32_t kMaxAddImmediate = 0x7FFF;  // add's signed 16-bit immediate

inline PhysicalTile physical(LogicalTile tile) { return target::c600_physical(tile); }

// Bytes of encoded code (sendpicp and a few others take two words), counted
// without encoding it: placement sizes every row and program before it is
// placed, and emission encodes it once, where it lands.
inline std::uint32_t code_bytes(const Code& code) {
  std::uint64_t words = 0;
  for (const auto& instruction : code) words += isa::word_count(instruction);
  return checked_cast<std::uint32_t>(4 * words, "code bytes");
}
// The main program holds one-word instructions only (setzi, call, sync,
// ld32, st32, add, brz, bri, br), so its pcs are counted without encoding.
inline std::uint32_t main_bytes(const Code& code) {
  return checked_cast<std::uint32_t>(code.size() * 4, "main bytes");
}

inline std::string format_range(std::uint32_t address, std::uint64_t bytes) {
  return fmt::format("[{:#x}, +{})", address, bytes);
}

// A pointer that moves on by `stride` bytes every iteration of a loop
// (lower::PointerOperand with a stride): one word of tile memory holds it,
// set to the start at the loop's begin and advanced at its end.
struct Cursor {
  BufferId buffer = 0;
  std::uint32_t offset = 0;
  std::uint32_t stride = 0;
  friend auto operator<=>(const Cursor&, const Cursor&) = default;
};

// A tile's code pieces and where placement put them.
struct TileCode {
  std::uint32_t main = kProbeCode;
  std::map<std::size_t, std::uint32_t> host_code;     // by batch index
  std::map<std::size_t, std::uint32_t> host_packets;  // by batch index, active batches only
  std::map<std::size_t, std::uint32_t> rows;          // by step index
  // By kernel name: each call's target — its host-model stub, or its linked
  // device entry when the kernel is in `linked`.
  std::map<std::string, std::uint32_t> stubs;
  std::map<std::size_t, std::uint32_t> loop_counters;              // by loop-begin step
  std::map<std::size_t, std::map<Cursor, std::uint32_t>> cursors;  // by loop-begin step
  // With device code (LinkOptions::device): the kernels linked for this
  // tile and their image, placed in the tile's "device kernels" allocation.
  std::set<std::string> linked;
  std::shared_ptr<const elf::LinkedImage> device;
  // With profile samples: the tile's sample buffer (placed with the code;
  // a probe allocation of the largest capacity while sizes are found) and
  // its capacity in records.
  std::optional<schema::Allocation> samples;
  std::uint32_t sample_capacity = 0;
};

// One kernel set's device code, linked at a probe address (device_link.cpp):
// the objects that define it, and the extent and alignment the code
// placement reserves for it (sizes never depend on where it lands).
struct DeviceLink {
  std::vector<elf::ObjectFile> objects;
  std::vector<std::string> kernels;    // the entries linked, in name order
  std::uint32_t extent = 0;            // first section's start to last section's end
  std::uint32_t alignment = 8;         // the largest section alignment, at least 8
  std::vector<std::uint32_t> offsets;  // each placed section's offset from the first
};

struct MainCode {
  Code code;
  std::vector<schema::CallSite> sites;
  // With profile samples: the records one run of the program appends, how
  // many times the code being emitted runs (the product of the enclosing
  // loops' counts), the sample call sites, and the step record last emitted
  // while no kernel call record followed it (a host step's batches share one).
  std::uint64_t records = 0;
  std::uint64_t runs = 1;
  std::size_t sample_sites = 0;
  std::optional<std::uint32_t> open_step;
};

// A register loaded from a word of tile memory instead of a constant: a
// moving pointer from its cursor word, with its value in the loop's last
// iteration (registers[] holds the first), or a loaded scalar
// (KernelRun::loaded) from its word (`last` unused: it is no operand).
struct MovingPointer {
  std::uint32_t cursor = 0;
  std::uint32_t last = 0;
  std::int32_t add = 0;  // a loaded scalar's addend (lower::LoadedScalar::add)
};

class Linker {
 public:
  Linker(const lower::Program& program, const LinkOptions& options, LinkReport& report)
      : program_(program),
        options_(options),
        report_(report),
        pool_(options.threads == 0 ? default_link_threads() : options.threads) {}

  schema::Application run();  // link.cpp

 private:
  // ---- 1. lifetimes and data placement (data_placement.cpp)
  const lower::HostBinding& binding(const std::string& name) const;
  template <class F>
  void for_each_use(const Step& step, F&& use) const;
  void find_lifetimes();
  void find_tiles();
  void place_data();
  std::map<LogicalTile, std::vector<std::pair<BufferId, BufferId>>> buffers_kept_apart() const;
  std::vector<schema::Allocation> place_tile_data(PhysicalTile tile, std::vector<AllocationRequest> requests,
                                                  const std::vector<bool>& weight);
  const schema::Allocation& allocation(BufferId buffer, LogicalTile tile) const;
  std::uint32_t address(const lower::Location& location) const;

  // ---- 2. bindings and host I/O (host_bindings.cpp)
  schema::Binding make_binding(const lower::HostBinding& b) const;
  void make_bindings();
  void plan_host();
  // The staging buffer the host I/O lowering copies through (one per tile, in
  // the reserved exchange window): H2D data lands there, D2H data of several
  // allocations is gathered there.
  schema::Allocation h2d_staging(std::uint32_t id) const;
  static bool in_staging(std::uint32_t address);

  // ---- 3. exchange (exchange_steps.cpp)
  // "exchange row (phase 12)": named by the round that first opens its phase.
  std::string row_name(std::size_t step) const;
  static bool same_transfers(const exchange::PhaseSchedule& schedule,
                             const exchange::PhaseTransfers& phase);
  // One exchange step's schedule: scheduled at the probe address (not
  // `final`), or, `final`, its probe schedule placed where code placement put
  // the rows (taken out of schedules_). Writes none of the linker's state
  // but that step's schedules_ entry, so the pool runs several at once.
  exchange::PhaseSchedule schedule_step(std::size_t step, bool final);
  void schedule_exchanges(bool final);

  // ---- 4. code: each tile's main program (main_code.cpp)
  // The kernels a tile calls, in name order (its stubs).
  std::set<std::string> kernels_of(PhysicalTile tile) const;
  std::string not_loadable_reason() const;
  // (loop, cursor) of every moving pointer of `tile`'s kernel runs.
  std::set<std::pair<std::size_t, Cursor>> cursors_of(PhysicalTile tile) const;
  // A cursor's first iteration's address.
  std::uint32_t pointer_address(const Cursor& cursor, LogicalTile tile) const;
  // A copy between the staging buffer and the data allocation live at step
  // `step` that holds the other end: the copy helper's call, footprints
  // asserted like any kernel's.
  void emit_staging_copy(MainCode& main, PhysicalTile tile, std::size_t step,
                         const StagingCopy& copy, const schema::Allocation& staging) const;
  // The tile's whole main program, for the code addresses in code_[tile].
  MainCode emit_main(PhysicalTile tile, std::uint32_t staging_id) const;
  std::uint32_t staging_id(PhysicalTile tile) const;

  // ---- 4. code: placement in region 0 (code_placement.cpp)
  // (step, bytes) of every row `tile` has, in step order.
  std::vector<std::pair<std::size_t, std::uint32_t>> rows_of(PhysicalTile tile) const;
  void place_code();

  // ---- 4. code: device kernels, linked per tile (device_link.cpp)
  // Whether the build's device code defines `kernel` (false without device code).
  bool has_device_code(const std::string& kernel) const;
  // The probe link of the kernels of `kernels` that have device code;
  // nullptr when none has. Memoised by kernel set.
  std::shared_ptr<const DeviceLink> device_link(const std::set<std::string>& kernels);
  // That link placed at `address` (an allocation of its extent and
  // alignment). Memoised by kernel set and address.
  std::shared_ptr<const elf::LinkedImage> place_device_link(const std::set<std::string>& kernels,
                                                            const DeviceLink& link,
                                                            std::uint32_t address);
  // Every call of every tile targets linked device code.
  bool every_call_linked() const;
  // The package's tiles padded to whole loader batches (physical 0 … 64k − 1).
  void pad_to_loader_batches();

  // ---- 4. code: profile samples (profile_samples.cpp)
  bool profiling() const noexcept { return options_.profile_samples.has_value(); }
  // One record of `site` (schema/profile_samples.hpp) through the sample
  // helper, its call site named by `provenance`; the value is the tile's
  // cycle counter, or with `value_word` the word at that address (a loop's
  // counter). Nothing without profile samples.
  void emit_sample(MainCode& main, PhysicalTile tile, std::uint32_t site, std::uint32_t provenance,
                   std::optional<std::uint32_t> value_word = std::nullopt) const;
  // A record that a step of `kind` begins, for `provenance`; with
  // `once`, none when the same record is the open step's already.
  void emit_step_sample(MainCode& main, PhysicalTile tile, schema::StepKind kind,
                        std::uint32_t provenance, bool once = false) const;
  // The sample buffer's request in the code placement, sized for the
  // `records` a tile's main program appends (at most LinkOptions::profile_samples).
  std::uint32_t sample_capacity(std::uint64_t records) const;

  // ---- 5. one kernel call and its footprint assertion (footprint.cpp)
  // One kernel call: registers, the footprint assertion (for a moving
  // pointer in its first and its last iteration: the footprint moves
  // monotonically between them), the call.
  void emit_call(
      MainCode& main, PhysicalTile tile, const std::string& kernel,
      const std::vector<std::pair<unsigned, const schema::Allocation*>>& operand_allocations,
      const kernels::Registers& registers, std::uint32_t stub, std::uint32_t provenance,
      const std::map<unsigned, MovingPointer>& moving = {},
      const std::vector<std::pair<unsigned, std::uint32_t>>& scalars = {}) const;

  // ---- 6. images and the debug section (debug_section.cpp)
  // One tile's image and debug record, its segments' bytes in a blob store
  // of its own; emit_tiles adds those to the package's store in tile order,
  // so the blobs are numbered as emitting tile after tile numbers them.
  struct TileEmission {
    schema::TileImage image;
    schema::TileDebug debug;
    schema::BlobStore blobs;
    std::size_t kernel_calls = 0;
  };
  // Reads the linker's state only: the pool emits several tiles at once.
  TileEmission emit_tile(PhysicalTile tile) const;
  void emit_tiles();

  const lower::Program& program_;
  const LinkOptions& options_;
  LinkReport& report_;
  schema::Application app_;

  std::vector<std::uint32_t> live_from_, live_until_;
  std::vector<PhysicalTile> tiles_;
  std::map<PhysicalTile, LogicalTile> logical_;
  // By data_key(buffer, tile); only looked up, never walked.
  std::unordered_map<std::uint64_t, schema::Allocation> data_;
  static std::uint64_t data_key(BufferId buffer, PhysicalTile tile) {
    return std::uint64_t{buffer} << 16 | tile.value;
  }
  std::map<PhysicalTile, std::vector<schema::Allocation>> allocations_;       // data, by tile
  // Where region 0's code ends on tiles whose weights took its top
  // (place_tile_data); absent: region 0 is all code.
  std::map<PhysicalTile, std::uint32_t> code_end_;
  std::map<PhysicalTile, std::vector<schema::Allocation>> code_allocations_;  // code, by tile
  HostPlan host_;
  // (call, input) → batches
  std::map<std::pair<std::size_t, bool>, std::vector<std::size_t>> batches_of_;
  // (tile, step) → bytes
  std::map<std::pair<PhysicalTile, std::size_t>, std::uint32_t> probe_rows_;
  std::map<std::size_t, exchange::PhaseSchedule> schedules_;  // by step
  // Phases of one shape (a layer's q, k and v GEMMs) are timed once.
  exchange::PhaseMemo phase_memo_;
  // Runs the exchange phases and the tiles' code sizing and emission (LinkOptions::threads).
  ThreadPool pool_;
  PhaseRounds rounds_;
  std::map<PhysicalTile, TileCode> code_;
  std::map<PhysicalTile, std::vector<std::size_t>> idle_batches_;
  std::map<std::set<std::string>, std::shared_ptr<const DeviceLink>> device_links_;
  std::map<std::pair<std::set<std::string>, std::uint32_t>, std::shared_ptr<const elf::LinkedImage>>
      device_images_;
};

}  // namespace tessera::compiler::emit::linking
