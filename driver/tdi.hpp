#pragma once
// The tile debug interface (TDI) window of the configuration BAR
// (driver-host-protocol.md §6, ipu21-target.md §3): context status, run
// breaks, instruction injection, and what is built from them — SRAM reads and
// writes, register reads, exception classification.

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "target/topology.hpp"

namespace tessera::driver {

class Device;

inline constexpr unsigned kTdiContexts = 7;  // supervisor (0) and workers 1..6

// The 2-bit state of a context in CONTEXT_STATUS (§6.1).
enum class TdiContextState : std::uint8_t {
  kInactive = 0,  // also reported for WAEX (§6.6)
  kRunning = 1,
  kExceptedDebug = 2,
  kExcepted = 3,
};
std::string_view tdi_context_state_name(TdiContextState state) noexcept;

// A decoded CONTEXT_STATUS word.
struct ContextStatus {
  std::uint32_t raw = 0;
  TdiContextState state(unsigned context) const noexcept {
    return static_cast<TdiContextState>((raw >> (2 * context)) & 3u);
  }
  // TEXCH_RERR cause in bits 27..29.
  std::uint32_t ererr() const noexcept;
};

// $SSR/$WSR ETYPE (bits 4..7; §6.5).
enum class ExceptionType : std::uint8_t {
  kNone, kRbrk, kPbrk0, kPbrk1, kBos, kFp, kConflict, kExconf,
  kInvalidAddr, kInvalidOp, kInvalidPc, kDbrk, kInvalidInstr, kExerr, kMemerr, kIbrk,
};
constexpr ExceptionType exception_type_of(std::uint32_t status_csr) noexcept {
  return static_cast<ExceptionType>((status_csr >> 4) & 0xFu);
}
// "TEXCPT_INVALID_ADDR".
std::string_view exception_type_name(ExceptionType type) noexcept;
// RBRK, PBRK0/1, BOS, DBRK and IBRK.
bool is_debug_exception(ExceptionType type) noexcept;
// "TEXCH_RERR_ADDR" for the 3-bit ERERR cause.
std::string_view exchange_error_name(std::uint32_t ererr) noexcept;

// The instruction words injected through TDI (§6.3), built with target/'s
// encoders (tests check them against the reference's constants).
namespace tdi_words {
std::uint32_t get_pc_m0();
std::uint32_t get_status_m0();
std::uint32_t get_debug_data(unsigned m);  // get $mN, $DBG_DATA
std::uint32_t put_debug_data(unsigned m);  // put $DBG_DATA, $mN
std::uint32_t load_m0_from_m1();           // ld32 $m0, [$m1]
std::uint32_t store_m0_at_m1();            // st32 $m0, [$m1]
}  // namespace tdi_words

class Tdi {
 public:
  explicit Tdi(Device& device) : device_(&device) {}

  std::uint32_t read_register(target::PhysicalTile tile, std::uint32_t reg);
  void write_register(target::PhysicalTile tile, std::uint32_t reg, std::uint32_t value);

  ContextStatus context_status(target::PhysicalTile tile);
  // {INCOMING_DCOUNT, EXCHANGE_CONTROL}.
  std::pair<std::uint32_t, std::uint32_t> exchange_state(target::PhysicalTile tile);
  void clear_exception(target::PhysicalTile tile, unsigned context);

  // §6.2: STATUS_CLEAR = 6, OWNER = context, INSTRUCTION = word; spin until
  // BUSY clears (timeouts().tdi); DeviceError if the error bits are set.
  void inject(target::PhysicalTile tile, unsigned context, std::uint32_t word);

  // SRAM words (4-aligned, inside 0x4C000..0xE7FFC). From the supervisor
  // (context 0, stopped for the duration), or from a worker context ≥ 1 that
  // is inactive (§6.4). m0/m1 of that context are saved and restored.
  std::uint32_t read_word(target::PhysicalTile tile, unsigned context, std::uint32_t address);
  std::vector<std::uint32_t> read_words(target::PhysicalTile tile, unsigned context,
                                        std::uint32_t address, std::size_t count);
  void write_word(target::PhysicalTile tile, unsigned context, std::uint32_t address,
                  std::uint32_t value);

  // The context's PC and $SSR/$WSR, m0 saved and restored. The context must
  // be stopped (state 2 or 3) or, for workers, inactive.
  std::uint32_t read_pc(target::PhysicalTile tile, unsigned context);
  std::uint32_t read_status(target::PhysicalTile tile, unsigned context);
  std::uint32_t read_m(target::PhysicalTile tile, unsigned context, unsigned m);

  // A worker context in state 0, if any.
  std::optional<unsigned> inactive_worker(target::PhysicalTile tile);

 private:
  class Stop;
  std::uint32_t read_m_stopped(target::PhysicalTile tile, unsigned context, unsigned m);
  std::uint32_t read_through_m0(target::PhysicalTile tile, unsigned context, std::uint32_t get_word);
  void write_m_stopped(target::PhysicalTile tile, unsigned context, unsigned m, std::uint32_t value);
  void check_context(target::PhysicalTile tile, unsigned context) const;

  Device* device_;
};

}  // namespace tessera::driver
