#pragma once
// runtime::Transport: the device at the level of the hardware's own primitives
// (ARCHITECTURE.md decision 6). The host-call protocol (pages, page slots,
// batches, phases, marks) is written once, in runtime::Session, on top of
// these primitives; each backend implements them with the same semantics:
//
//   backends/sim   the SystemC model, in-process (the default);
//   backends/c600  a C600 through the Linux kernel driver (driver/).
//
// Semantics every backend honours (driver-host-protocol.md §4, §5, §8):
//   * HSP marks hold 16-bit credit counts. The host writes a count; every
//     device sync that involves the host takes one credit and blocks while
//     the count is 0. Reading gives what is left, so 0 after a write means
//     the device consumed every credit released so far. The device makes no
//     progress past a host sync without a credit.
//   * Host buffers attached under an index form one host address space,
//     concatenated in ascending index order in 4 KiB pages [INF]. D2H data is
//     in host memory before the sync that completes the transfer releases;
//     H2D reads see every host write made before the credit that released
//     them.
//   * "Halted" means every context of every started tile is inactive: the
//     supervisors branched to 0 (TDI state 0) and no worker runs.
//
// Threading contract (review-findings.md #10): a Transport is owned by one
// thread at a time. Its methods are not safe to call concurrently, with one
// exception: read_mark() and tile_state() may be called from one other
// thread (a watchdog) while the owner waits, on backends that say so in
// concurrent_reads(). A backend owns its device exclusively for the
// Transport's lifetime (c600: an interprocess lock per device; sim: one
// simulated chip per process).

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "support/host_buffer.hpp"
#include "schema/model.hpp"
#include "schema/profile.hpp"
#include "target/config_space.hpp"
#include "target/topology.hpp"

namespace tessera::runtime {

// Host memory lives in support/ (the C600 loader needs it too).
using tessera::DeviceMemory;
using tessera::HostBuffer;

// The two host-synchronisation-point marks: GS1 serves the loader and GS2
// every runtime rendezvous (driver-host-protocol.md §5.5).
enum class HspMark : std::uint8_t { kGs1, kGs2 };

constexpr std::uint32_t hsp_mark_offset(HspMark mark) noexcept {
  return mark == HspMark::kGs1 ? target::kHspGs1Control : target::kHspGs2Control;
}
std::string_view hsp_mark_name(HspMark mark) noexcept;

// A context's state as the TDI CONTEXT_STATUS field reports it (§6.1).
enum class ContextState : std::uint8_t {
  kInactive = 0,         // halted, never started, or waiting on a worker exit
  kRunning = 1,          // includes waiting at a sync
  kDebugException = 2,   // stopped at a breakpoint (trap, run break)
  kException = 3,        // a non-debug exception (a fault)
};
std::string_view context_state_name(ContextState state) noexcept;

inline constexpr std::size_t kContexts = 7;  // the supervisor and six workers

// What a debug read tells about one tile.
struct TileState {
  target::PhysicalTile tile;
  std::array<ContextState, kContexts> contexts{};  // [0] supervisor, [1..6] workers
  std::uint32_t pc = 0;                            // the supervisor's
  // What the backend knows beyond the TDI fields, for people ("waits at a
  // host sync (zone 7) since cycle 1200"); empty when nothing.
  std::string detail;

  bool halted() const noexcept;  // every context inactive
};

// A fault or non-debug exception the device raised.
struct DeviceFault {
  std::optional<target::PhysicalTile> tile;
  unsigned context = 0;
  std::optional<std::uint32_t> pc;
  std::optional<std::uint64_t> cycle;  // when the backend knows it
  std::string kind;                    // "KernelOverrun", "TEXCPT_INVALID_ADDR", …
  std::string message;
  std::string provenance;  // the graph operation behind the code, when known
};
// "KernelOverrun on p5 (supervisor) at pc 0x4c018: <message> [graph: add %3]"
std::string describe(const DeviceFault& fault);

enum class WaitOutcome : std::uint8_t {
  kReached,   // the condition holds
  kHalted,    // every context halted before it held (wait_mark_zero only)
  kFaulted,   // a fault stopped the device
  kStopped,   // a context stopped at a breakpoint
  kStalled,   // nothing can make progress (the simulator knows; hardware times out)
  kTimedOut,  // the time limit passed
};
std::string_view wait_outcome_name(WaitOutcome outcome) noexcept;

class Transport {
 public:
  virtual ~Transport() = default;
  Transport() = default;
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // "simulator (1472 tiles)", "C600 at /dev/ipu0".
  virtual std::string description() const = 0;
  virtual const target::Topology& topology() const = 0;
  // Whether read_mark() and tile_state() may run on a second thread.
  virtual bool concurrent_reads() const noexcept { return false; }

  // --- Device ---------------------------------------------------------------
  // Back to the state after opening: nothing loaded or running, every host
  // buffer detached, marks 0, configuration at its reset values.
  virtual void reset() = 0;
  // The 512 KiB device configuration space (4-aligned offsets). HSP marks
  // are written through write_mark(), not here.
  virtual void write_config(std::uint32_t offset, std::uint32_t value) = 0;
  virtual std::uint32_t read_config(std::uint32_t offset) = 0;
  // Loads every tile image of the package. A backend that cannot run the
  // package refuses it with an Error saying why (c600: not hardware-loadable).
  virtual void load(const schema::Application& application) = 0;
  // Starts every loaded tile's supervisor at its entry point.
  virtual void start() = 0;

  // --- Host buffers -----------------------------------------------------------
  // The buffer must stay alive and attached until detach() or reset().
  virtual void attach(std::uint32_t index, HostBuffer& buffer) = 0;
  virtual void detach(std::uint32_t index) = 0;
  virtual void detach_all() = 0;

  // --- HSP marks and waiting ------------------------------------------------
  virtual void write_mark(HspMark mark, std::uint16_t credits) = 0;
  virtual std::uint16_t read_mark(HspMark mark) = 0;
  // Until the mark reads 0 (every credit consumed) or something else ends
  // the wait first.
  virtual WaitOutcome wait_mark_zero(HspMark mark, std::chrono::milliseconds timeout) = 0;
  // Until every context of every started tile is inactive.
  virtual WaitOutcome wait_halted(std::chrono::milliseconds timeout) = 0;
  // Lets `duration` pass without host action (the host's own delay). The
  // simulator runs the device for that long in simulated time, so a device
  // that wrongly proceeds without credits is caught.
  virtual void idle(std::chrono::microseconds duration) = 0;

  // --- Debug ------------------------------------------------------------------
  virtual TileState tile_state(target::PhysicalTile tile) = 0;
  virtual void read_sram(target::PhysicalTile tile, std::uint32_t address,
                         std::span<std::uint8_t> bytes) = 0;
  virtual void write_sram(target::PhysicalTile tile, std::uint32_t address,
                          std::span<const std::uint8_t> bytes) = 0;
  // Every fault or non-debug exception since load().
  virtual std::vector<DeviceFault> faults() = 0;

  // --- Observability ----------------------------------------------------------
  // The cycle profile of the run so far, when the backend records one.
  virtual std::optional<schema::Profile> profile() { return std::nullopt; }
};

}  // namespace tessera::runtime
