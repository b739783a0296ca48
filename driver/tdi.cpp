#include "driver/tdi.hpp"

#include <chrono>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "driver/device.hpp"
#include "driver/errors.hpp"
#include "driver/registers.hpp"
#include "target/config_space.hpp"
#include "target/isa.hpp"
#include "target/memory_map.hpp"

namespace tessera::driver {

namespace isa = target::isa;

std::string_view tdi_context_state_name(TdiContextState state) noexcept {
  switch (state) {
    case TdiContextState::kInactive: return "inactive";
    case TdiContextState::kRunning: return "running";
    case TdiContextState::kExceptedDebug: return "excepted (debug)";
    case TdiContextState::kExcepted: return "excepted";
  }
  return "?";
}

std::uint32_t ContextStatus::ererr() const noexcept {
  return (raw >> reg::tdi::kErerrShift) & reg::tdi::kErerrMask;
}

std::string_view exception_type_name(ExceptionType type) noexcept {
  static constexpr std::string_view kNames[16] = {
      "TEXCPT_NONE",         "TEXCPT_RBRK",        "TEXCPT_PBRK0",      "TEXCPT_PBRK1",
      "TEXCPT_BOS",          "TEXCPT_FP",          "TEXCPT_CONFLICT",   "TEXCPT_EXCONF",
      "TEXCPT_INVALID_ADDR", "TEXCPT_INVALID_OP",  "TEXCPT_INVALID_PC", "TEXCPT_DBRK",
      "TEXCPT_INVALID_INSTR", "TEXCPT_EXERR",      "TEXCPT_MEMERR",     "TEXCPT_IBRK",
  };
  return kNames[static_cast<unsigned>(type) & 0xF];
}

bool is_debug_exception(ExceptionType type) noexcept {
  switch (type) {
    case ExceptionType::kRbrk:
    case ExceptionType::kPbrk0:
    case ExceptionType::kPbrk1:
    case ExceptionType::kBos:
    case ExceptionType::kDbrk:
    case ExceptionType::kIbrk: return true;
    default: return false;
  }
}

std::string_view exchange_error_name(std::uint32_t ererr) noexcept {
  static constexpr std::string_view kNames[8] = {
      "TEXCH_RERR_NONE",    "TEXCH_RERR_CLASH_INSTR", "TEXCH_RERR_CLASH_IFETCH",
      "TEXCH_RERR_ADDR",    "TEXCH_RERR_WORKERS",     "TEXCH_RERR_DBRK",
      "TEXCH_RERR_CONF",    "TEXCH_RERR_MODI",
  };
  return kNames[ererr & 7];
}

namespace tdi_words {
namespace {
isa::Reg m_reg(unsigned m) {
  if (m > 15) throw UsageError(fmt::format("$m{} is not a register", m));
  return static_cast<isa::Reg>(m);
}
std::uint32_t one_word(const isa::Instruction& instruction) {
  return isa::encode(instruction).words[0];
}
}  // namespace
std::uint32_t get_pc_m0() { return one_word(isa::Get{isa::Reg::m0, isa::Csr::kPc}); }
std::uint32_t get_status_m0() { return one_word(isa::Get{isa::Reg::m0, isa::Csr::kStatus}); }
std::uint32_t get_debug_data(unsigned m) {
  return one_word(isa::Get{m_reg(m), isa::Csr::kDebugData});
}
std::uint32_t put_debug_data(unsigned m) {
  return one_word(isa::Put{isa::Csr::kDebugData, m_reg(m)});
}
// The address is $m15 + $m1 = $m1; this operand order is the word the
// reference injects (0x01F01000).
std::uint32_t load_m0_from_m1() {
  return one_word(isa::Ld32{isa::Reg::m0, isa::kZeroReg, isa::Reg::m1, 0});
}
std::uint32_t store_m0_at_m1() {
  return one_word(isa::St32{isa::Reg::m0, isa::Reg::m1, isa::kZeroReg, 0});
}
}  // namespace tdi_words

// Stops a context for the duration of an operation (§6.2).
class Tdi::Stop {
 public:
  Stop(Tdi& tdi, target::PhysicalTile tile, unsigned context, bool accept_inactive)
      : tdi_(tdi), tile_(tile), context_(context) {
    original_ = tdi.read_register(tile, reg::tdi::kRunBreak);
    const TdiContextState state = tdi.context_status(tile).state(context);
    if (state == TdiContextState::kExceptedDebug || state == TdiContextState::kExcepted ||
        (state == TdiContextState::kInactive && accept_inactive)) {
      return;
    }
    const std::uint32_t bit = 1u << context;
    if ((original_ & bit) == 0) {
      tdi.write_register(tile, reg::tdi::kRunBreak, original_ | bit);
      stopped_ = true;
    }
    const auto deadline = std::chrono::steady_clock::now() + tdi.device_->timeouts().tdi;
    while (true) {
      const TdiContextState now = tdi.context_status(tile).state(context);
      if (now == TdiContextState::kExceptedDebug || now == TdiContextState::kExcepted) return;
      if (std::chrono::steady_clock::now() >= deadline) {
        release();
        throw DeviceTimeout(fmt::format("{}: {} context {} did not stop within {} ms (state {})",
                                        tdi.device_->path(), tile, context,
                                        tdi.device_->timeouts().tdi.count(),
                                        tdi_context_state_name(now)));
      }
    }
  }
  ~Stop() {
    try {
      release();
    } catch (const Error& error) {
      spdlog::warn("{}: resuming {} context {}: {}", tdi_.device_->path(), tile_, context_,
                   error.what());
    }
  }
  Stop(const Stop&) = delete;
  Stop& operator=(const Stop&) = delete;

 private:
  void release() {
    if (!stopped_) return;
    stopped_ = false;
    tdi_.write_register(tile_, reg::tdi::kRunBreak, original_);
    tdi_.write_register(tile_, reg::tdi::kExceptionClear, 1u << context_);
  }

  Tdi& tdi_;
  target::PhysicalTile tile_;
  unsigned context_;
  std::uint32_t original_ = 0;
  bool stopped_ = false;
};

void Tdi::check_context(target::PhysicalTile tile, unsigned context) const {
  if (!target::on_chip(tile)) {
    throw UsageError(fmt::format("{}: {} is not a tile of the C600", device_->path(), tile));
  }
  if (context >= kTdiContexts) {
    throw UsageError(fmt::format("{}: context {} does not exist (0..6)", device_->path(), context));
  }
}

std::uint32_t Tdi::read_register(target::PhysicalTile tile, std::uint32_t reg) {
  check_context(tile, 0);
  return device_->read_config(target::tdi_register_offset(tile, reg));
}

void Tdi::write_register(target::PhysicalTile tile, std::uint32_t reg, std::uint32_t value) {
  check_context(tile, 0);
  device_->write_config(target::tdi_register_offset(tile, reg), value);
}

ContextStatus Tdi::context_status(target::PhysicalTile tile) {
  return ContextStatus{read_register(tile, reg::tdi::kContextStatus)};
}

std::pair<std::uint32_t, std::uint32_t> Tdi::exchange_state(target::PhysicalTile tile) {
  return {read_register(tile, reg::tdi::kIncomingDcount),
          read_register(tile, reg::tdi::kExchangeControl)};
}

void Tdi::clear_exception(target::PhysicalTile tile, unsigned context) {
  check_context(tile, context);
  write_register(tile, reg::tdi::kExceptionClear, 1u << context);
}

void Tdi::inject(target::PhysicalTile tile, unsigned context, std::uint32_t word) {
  check_context(tile, context);
  write_register(tile, reg::tdi::kStatusClear, reg::tdi::kStatusClearValue);
  write_register(tile, reg::tdi::kInstructionOwner, context);
  write_register(tile, reg::tdi::kInstruction, word);
  const auto deadline = std::chrono::steady_clock::now() + device_->timeouts().tdi;
  std::uint32_t status = 0;
  while (true) {
    status = read_register(tile, reg::tdi::kStatus);
    if ((status & reg::tdi::kStatusBusy) == 0) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      throw DeviceTimeout(fmt::format("{}: {} context {}: injected {:#010x} still busy after {} ms",
                                      device_->path(), tile, context, word,
                                      device_->timeouts().tdi.count()));
    }
  }
  if ((status & reg::tdi::kStatusErrorMask) != 0) {
    throw DeviceError(fmt::format("{}: {} context {}: injected {:#010x} failed: TDI status {:#x}",
                                  device_->path(), tile, context, word, status));
  }
}

std::uint32_t Tdi::read_m_stopped(target::PhysicalTile tile, unsigned context, unsigned m) {
  inject(tile, context, tdi_words::put_debug_data(m));
  return read_register(tile, reg::tdi::kData);
}

void Tdi::write_m_stopped(target::PhysicalTile tile, unsigned context, unsigned m,
                          std::uint32_t value) {
  write_register(tile, reg::tdi::kData, value);
  inject(tile, context, tdi_words::get_debug_data(m));
}

namespace {
void check_sram_word(const Device& device, target::PhysicalTile tile, std::uint32_t address) {
  if (address % 4 != 0 || address < target::kSramBase || address > target::kSramEnd - 4) {
    throw UsageError(fmt::format("{}: {} address {:#x} is not a 4-aligned SRAM word in [{:#x}, {:#x}]",
                                 device.path(), tile, address, target::kSramBase,
                                 target::kSramEnd - 4));
  }
}
}  // namespace

std::vector<std::uint32_t> Tdi::read_words(target::PhysicalTile tile, unsigned context,
                                           std::uint32_t address, std::size_t count) {
  check_context(tile, context);
  std::vector<std::uint32_t> words;
  if (count == 0) return words;
  check_sram_word(*device_, tile, address);
  check_sram_word(*device_, tile, static_cast<std::uint32_t>(address + (count - 1) * 4));
  words.reserve(count);
  Stop stop(*this, tile, context, context != 0);
  const std::uint32_t m0 = read_m_stopped(tile, context, 0);
  const std::uint32_t m1 = read_m_stopped(tile, context, 1);
  for (std::size_t i = 0; i < count; ++i) {
    write_m_stopped(tile, context, 1, static_cast<std::uint32_t>(address + i * 4));
    inject(tile, context, tdi_words::load_m0_from_m1());
    words.push_back(read_m_stopped(tile, context, 0));
  }
  write_m_stopped(tile, context, 1, m1);
  write_m_stopped(tile, context, 0, m0);
  return words;
}

std::uint32_t Tdi::read_word(target::PhysicalTile tile, unsigned context, std::uint32_t address) {
  return read_words(tile, context, address, 1)[0];
}

void Tdi::write_word(target::PhysicalTile tile, unsigned context, std::uint32_t address,
                     std::uint32_t value) {
  check_context(tile, context);
  check_sram_word(*device_, tile, address);
  Stop stop(*this, tile, context, context != 0);
  const std::uint32_t m0 = read_m_stopped(tile, context, 0);
  const std::uint32_t m1 = read_m_stopped(tile, context, 1);
  write_m_stopped(tile, context, 1, address);
  write_m_stopped(tile, context, 0, value);
  inject(tile, context, tdi_words::store_m0_at_m1());
  write_m_stopped(tile, context, 1, m1);
  write_m_stopped(tile, context, 0, m0);
}

std::uint32_t Tdi::read_m(target::PhysicalTile tile, unsigned context, unsigned m) {
  check_context(tile, context);
  Stop stop(*this, tile, context, context != 0);
  return read_m_stopped(tile, context, m);
}

// A register `get_word` copies into $m0, read with the context stopped and
// its $m0 restored afterwards.
std::uint32_t Tdi::read_through_m0(target::PhysicalTile tile, unsigned context,
                                   std::uint32_t get_word) {
  check_context(tile, context);
  Stop stop(*this, tile, context, context != 0);
  const std::uint32_t m0 = read_m_stopped(tile, context, 0);
  inject(tile, context, get_word);
  const std::uint32_t value = read_m_stopped(tile, context, 0);
  write_m_stopped(tile, context, 0, m0);
  return value;
}

std::uint32_t Tdi::read_pc(target::PhysicalTile tile, unsigned context) {
  return read_through_m0(tile, context, tdi_words::get_pc_m0());
}

std::uint32_t Tdi::read_status(target::PhysicalTile tile, unsigned context) {
  return read_through_m0(tile, context, tdi_words::get_status_m0());
}

std::optional<unsigned> Tdi::inactive_worker(target::PhysicalTile tile) {
  const ContextStatus status = context_status(tile);
  for (unsigned context = 1; context < kTdiContexts; ++context) {
    if (status.state(context) == TdiContextState::kInactive) return context;
  }
  return std::nullopt;
}

}  // namespace tessera::driver
