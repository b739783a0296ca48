#include "sim/tile.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>

#include <fmt/format.h>

#include "sim/checked_memory.hpp"
#include "target/assembly.hpp"
#include "target/host_exchange.hpp"

namespace tessera::sim {
namespace {

// Span epochs are unique across tiles (and chips), so a call-site record
// prepared on one tile is never taken as prepared on another.
std::uint64_t next_span_epoch() noexcept {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

using Continue = std::optional<RunOutcome>;  // nullopt: keep executing

}  // namespace

std::string_view tile_status_name(TileStatus status) noexcept {
  switch (status) {
    case TileStatus::kIdle:
      return "idle";
    case TileStatus::kRunning:
      return "running";
    case TileStatus::kWaiting:
      return "waiting";
    case TileStatus::kTrapped:
      return "trapped";
    case TileStatus::kHalted:
      return "halted";
    case TileStatus::kFaulted:
      return "faulted";
  }
  return "?";
}

Tile::Tile(target::PhysicalTile id, const SimOptions& options,
           const kernels::KernelRegistry& registry)
    : id_(id),
      options_(options),
      registry_(registry),
      sram_(options.poison),
      span_epoch_(next_span_epoch()),
      prng_(id.value) {}

void Tile::reset() {
  sram_.clear();
  sram_.set_poison(options_.poison);
  debug_ = {};
  models_.clear();
  call_site_pcs_.clear();
  call_sites_.clear();
  unrecorded_call_sites_.clear();
  code_ranges_.clear();
  code_segments_ = 0;
  code_bounds_ = {};
  span_epoch_ = next_span_epoch();
  status_ = TileStatus::kIdle;
  registers_ = {};
  csrs_ = {};
  pc_ = 0;
  last_pc_ = 0;
  exception_ = ExceptionType::kNone;
  cycle_ = 0;
  cycles_ = {};
  fault_.reset();
  activities_.clear();
  loop_counter_writes_.clear();
  waiting_zone_ = 0;
  decode_cache_.clear();
  rows_.clear();
  exchange_.reset();
  incoming_pointer_ = 0;
  prng_ = kernels::TilePrng(id_.value);
  // The runtime's startup sets the mux neutral before any exchange [HW]; a
  // reset tile starts that way so that it receives nothing by accident.
  csrs_[static_cast<std::uint8_t>(isa::Csr::kIncomingMux)] = target::kNeutralMux;
}

void Tile::set_debug(TileDebugIndex debug) {
  debug_ = std::move(debug);
  models_.clear();
  for (const auto& [address, symbol] : debug_.symbols()) {  // by address
    if (symbol.kind == schema::SymbolKind::kKernel ||
        symbol.kind == schema::SymbolKind::kRuntimeHelper) {
      models_.emplace_back(address, registry_.find(symbol.name));
    }
  }
  call_site_pcs_.clear();
  for (const auto& [pc, site] : debug_.call_sites()) call_site_pcs_.push_back(pc);
  std::sort(call_site_pcs_.begin(), call_site_pcs_.end());
  call_sites_.assign(call_site_pcs_.size(), ResolvedCallSite{});
  unrecorded_call_sites_.clear();
}

ResolvedCallSite& Tile::resolved_call_site(std::uint32_t pc, const kernels::KernelSpec& kernel) {
  const auto recorded = std::lower_bound(call_site_pcs_.begin(), call_site_pcs_.end(), pc);
  const auto index = static_cast<std::size_t>(recorded - call_site_pcs_.begin());
  ResolvedCallSite& site = recorded != call_site_pcs_.end() && *recorded == pc
                               ? call_sites_[index]
                               : unrecorded_call_sites_[pc];
  if (site.kernel != &kernel) {
    site = ResolvedCallSite::resolve(kernel, debug_.call_site_at(pc), pc, debug_);
  }
  return site;
}

void Tile::begin_exchange_phase(std::uint64_t phase) {
  exchange_.emplace();
  exchange_->phase = phase;
}

void Tile::load_segment(std::uint32_t address, std::span<const std::uint8_t> bytes,
                        bool executable) {
  sram_.write(address, bytes);
  if (executable) {
    const target::AddressRange code{address, address + static_cast<std::uint32_t>(bytes.size())};
    add_code_range(code);
    span_epoch_ = next_span_epoch();
    code_bounds_ = ++code_segments_ == 1
                       ? code
                       : target::AddressRange{std::min(code_bounds_.begin, code.begin),
                                              std::max(code_bounds_.end, code.end)};
  }
  decode_cache_.clear();
}

void Tile::start(std::uint32_t entry_point, std::uint64_t cycle) {
  pc_ = entry_point;
  last_pc_ = entry_point;
  cycle_ = cycle;
  status_ = TileStatus::kRunning;
}

void Tile::set_reg(unsigned index, std::uint32_t value) {
  if (index >= registers_.size()) throw std::out_of_range("register index");
  if (index != 15) registers_[index] = value;  // $m15 reads as zero
}

std::uint32_t Tile::csr(std::uint8_t index) const noexcept {
  if (index == static_cast<std::uint8_t>(isa::Csr::kPc)) return pc_;
  if (index == static_cast<std::uint8_t>(isa::Csr::kStatus)) {
    return static_cast<std::uint32_t>(exception_) << 4;
  }
  return csrs_[index];
}

void Tile::begin_wait(std::uint32_t zone) noexcept {
  status_ = TileStatus::kWaiting;
  waiting_zone_ = zone;
  wait_started_ = cycle_;
}

void Tile::release(std::uint64_t at_cycle) noexcept {
  cycles_.sync_wait += at_cycle - wait_started_;
  cycle_ = at_cycle;
  status_ = TileStatus::kRunning;
}

void Tile::raise(FaultKind kind, std::string message) {
  // A fault found outside the interpreter (at a sync, by the fabric) names
  // the instruction the tile stopped at, not the one after it, as for a
  // fault the interpreter raises.
  pc_ = last_pc_;
  (void)fail(kind, std::move(message));
}

void Tile::resume(std::uint64_t at_cycle) {
  if (status_ != TileStatus::kTrapped) return;
  exception_ = ExceptionType::kNone;
  status_ = TileStatus::kRunning;
  cycle_ = std::max(cycle_, at_cycle);
}

// The code ranges are kept sorted and disjoint, touching ranges merged (a
// tile has hundreds of code segments, and the fabric asks once per run of
// words it delivers): the union is the same, so a span overlaps it exactly
// when it overlaps one of the segments.
void Tile::add_code_range(target::AddressRange code) {
  if (code.empty()) return;  // overlaps nothing
  // The first range that ends at or after the new one begins: it and those
  // after it that begin at or before the new one's end merge with it.
  auto first = std::lower_bound(code_ranges_.begin(), code_ranges_.end(), code.begin,
                                [](const target::AddressRange& range, std::uint32_t begin) {
                                  return range.end < begin;
                                });
  auto last = first;
  while (last != code_ranges_.end() && last->begin <= code.end) {
    code.begin = std::min(code.begin, last->begin);
    code.end = std::max(code.end, last->end);
    ++last;
  }
  first = code_ranges_.erase(first, last);
  code_ranges_.insert(first, code);
}

bool Tile::in_code(std::uint32_t address, std::uint32_t size) const noexcept {
  const target::AddressRange touched{address, address + size};
  if (touched.empty()) return false;
  // The first range that ends after the span begins is the only one that
  // can overlap it without beginning after it ends.
  const auto range = std::upper_bound(code_ranges_.begin(), code_ranges_.end(), touched.begin,
                                      [](std::uint32_t begin, const target::AddressRange& r) {
                                        return begin < r.end;
                                      });
  return range != code_ranges_.end() && range->overlaps(touched);
}

std::uint32_t Tile::read_register(isa::Reg reg) const noexcept {
  return registers_[static_cast<std::size_t>(reg)];
}

void Tile::write_register(isa::Reg reg, std::uint32_t value) noexcept {
  if (reg != isa::kZeroReg) registers_[static_cast<std::size_t>(reg)] = value;
}

bool Tile::fetchable(std::uint32_t pc) noexcept {
  // A program may branch anywhere, even to 0xFFFFFFFC: the fetch range is
  // computed without wrapping past 2^32.
  const std::uint64_t end = std::uint64_t{pc} + 4;
  return pc % 4 == 0 && pc >= target::kExecutableRange.begin && end <= target::kExecutableRange.end;
}

bool Tile::data_address_ok(std::uint32_t address) const noexcept {
  return address % 4 == 0 && address >= target::kSramBase && address <= target::kSramEnd - 4;
}

RunOutcome Tile::fail(FaultKind kind, std::string message, std::string provenance) {
  Fault fault;
  fault.kind = kind;
  fault.tile = id_;
  fault.pc = pc_;
  fault.cycle = cycle_;
  fault.message = std::move(message);
  fault.provenance = std::move(provenance);
  fault_ = std::move(fault);
  status_ = TileStatus::kFaulted;
  exception_ = kind == FaultKind::kInvalidAddress ? ExceptionType::kInvalidAddress
                                                  : ExceptionType::kInvalidInstruction;
  return RunOutcome{RunOutcome::Kind::kFaulted};
}

const Tile::CachedInstruction& Tile::decode_at(std::uint32_t pc, std::uint32_t word0) {
  if (decode_cache_.empty()) decode_cache_.resize(kDecodeCacheSize);
  CachedInstruction& entry = decode_cache_[(pc >> 2) % kDecodeCacheSize];
  // A hit needs the same address and the same words: code that was
  // overwritten (a patched row) decodes afresh.
  if (entry.pc == pc && entry.word0 == word0 &&
      (entry.size == 1 ||
       (target::is_executable({pc + 4, pc + 8}) && entry.word1 == sram_.read_u32(pc + 4)))) {
    return entry;
  }
  std::array<std::uint32_t, 2> words{word0, 0};
  std::size_t available = 1;
  if (target::is_executable({pc + 4, pc + 8})) {
    words[1] = sram_.read_u32(pc + 4);
    available = 2;
  }
  const isa::Decoded decoded = isa::decode(std::span(words.data(), available));
  entry.pc = pc;
  entry.word0 = word0;
  entry.word1 = words[1];
  entry.size = static_cast<std::uint8_t>(decoded.words);
  entry.alignment = static_cast<std::uint8_t>(isa::alignment_of(decoded.instruction));
  entry.instruction = decoded.instruction;
  return entry;
}

RunOutcome Tile::run(std::uint64_t budget_end) {
  if (status_ != TileStatus::kRunning) return RunOutcome{RunOutcome::Kind::kBudget};
  budget_end_ = budget_end;
  while (cycle_ < budget_end) {
    if (!fetchable(pc_)) {
      return fail(FaultKind::kInvalidAddress,
                  fmt::format("instruction fetch from {:#x}, outside executable memory {}", pc_,
                              target::kExecutableRange));
    }
    bool written = false;
    const std::uint32_t word0 = sram_.read_u32(pc_, &written);
    if (!written) {
      return fail(FaultKind::kInvalidInstruction,
                  fmt::format("instruction fetch from {:#x}, which nothing ever wrote", pc_));
    }
    const CachedInstruction& fetched = decode_at(pc_, word0);
    if (pc_ % fetched.alignment != 0) {
      return fail(FaultKind::kInvalidAddress, *isa::misplacement(fetched.instruction, pc_));
    }
    const std::uint32_t size = fetched.size;
    const isa::Instruction instruction = fetched.instruction;
    const std::uint64_t before = cycle_;
    cycle_ += options_.supervisor_instruction_cycles;
    const std::uint32_t pc = pc_;
    last_pc_ = pc;
    pc_ += 4 * size;
    Continue outcome = in_row(instruction) ? exchange_step(instruction, pc, 4 * size, before)
                                           : execute(instruction);
    if (outcome) {
      if (outcome->kind == RunOutcome::Kind::kFaulted ||
          outcome->kind == RunOutcome::Kind::kTrapped ||
          outcome->kind == RunOutcome::Kind::kHalted) {
        // Report the instruction that faulted, trapped or halted, as the
        // hardware's PC does.
        pc_ = pc;
        if (fault_) fault_->pc = pc;
      }
      cycles_.busy += cycle_ - before;
      return *outcome;
    }
    cycles_.busy += cycle_ - before;
  }
  return RunOutcome{RunOutcome::Kind::kBudget};
}

// A row begins at the first exchange instruction after the phase-entry sync
// (a `br` before it is the call's return, not the row's end) and ends at its
// `br`. Everything in between goes to the outgoing stream, which refuses an
// instruction with no place in a row: the fabric replays sends and controls
// on the event clock, not stores or branches, so one inside a row would
// change what the row sends without the model seeing when. A sync leaves the
// phase (the chip handles it) and an unknown word stays INVALID_INSTR.
bool Tile::in_row(const isa::Instruction& instruction) const noexcept {
  if (!exchange_ || exchange_->done || std::holds_alternative<isa::Sync>(instruction) ||
      std::holds_alternative<isa::Unknown>(instruction)) {
    return false;
  }
  return exchange_->started || (target::exchange_advance(instruction).has_value() &&
                                !std::holds_alternative<isa::Br>(instruction));
}

// One instruction of an exchange row: the outgoing stream decides when it
// sends and which receive controls it applies; it costs its events (one
// event is one cycle) instead of a supervisor issue slot.
Continue Tile::exchange_step(const isa::Instruction& instruction, std::uint32_t pc,
                             std::uint32_t bytes, std::uint64_t issued_at) {
  ExchangeRecord& record = *exchange_;
  if (!record.started && replay_row(pc, issued_at)) return std::nullopt;
  if (!record.started) {
    record.started = true;
    record.incoming_base = csrs_[static_cast<std::uint8_t>(isa::Csr::kIncomingBase)];
    record.outgoing_base = csrs_[static_cast<std::uint8_t>(isa::Csr::kOutgoingBase)];
    row_started_ = issued_at;
    row_replayed_ = false;
    row_contiguous_ = true;
    row_next_pc_ = pc;
  }
  // A debugger may move the pc inside a row: such a row is not recorded.
  row_contiguous_ = row_contiguous_ && pc == row_next_pc_;
  row_next_pc_ = pc + bytes;
  // The closing br is row code too: its fetch lookahead reaches 64 bytes past
  // it (the compiler's element rule counts it the same way).
  if (std::holds_alternative<isa::Br>(instruction) && !row_replayed_) record_row(pc, issued_at);
  record.note_instruction(pc, bytes);
  if (std::holds_alternative<isa::Br>(instruction)) {
    Continue outcome = execute(instruction);
    (void)record.stream.step(instruction);
    record.finish();
    if (options_.trace) {
      activities_.push_back({TileActivity::Kind::kExchangeRow, row_started_, cycle_, nullptr,
                             schema::kNoProvenance, record.phase});
    }
    return outcome ? outcome : Continue{RunOutcome{RunOutcome::Kind::kRowDone}};
  }
  target::RowStep step;
  try {
    step = record.stream.step(instruction);
  } catch (const target::ExchangeTimingError& error) {
    return fail(FaultKind::kExchangeTiming,
                fmt::format("exchange phase {}: {}, inside the row that began at {:#x}",
                            record.phase, error.message(), record.row_code->begin));
  }
  if (step.send) record.sends.push_back(*step.send);
  for (const auto& control : step.controls) {
    if (control) record.controls.push_back(*control);
  }
  cycle_ = issued_at + static_cast<std::uint64_t>(step.advance);
  row_last_pc_ = pc;
  return std::nullopt;
}

// At the row's br, before it runs: the row so far, for replay_row (a row
// replayed is recorded already).
void Tile::record_row(std::uint32_t br_pc, std::uint64_t br_issued_at) {
  const ExchangeRecord& record = *exchange_;
  if (!row_contiguous_ || !record.row_code || record.row_code->end != br_pc) return;
  const std::uint32_t begin = record.row_code->begin;
  RecordedRow row;
  row.words.resize((br_pc - begin) / 4);
  for (std::size_t i = 0; i < row.words.size(); ++i) {
    row.words[i] = sram_.read_u32(begin + static_cast<std::uint32_t>(4 * i));
  }
  row.stream = record.stream;
  row.sends = record.sends;
  row.controls = record.controls;
  row.cycles = br_issued_at - row_started_;
  row.last_pc = row_last_pc_;
  rows_.insert_or_assign(begin, std::move(row));
}

// The row's first instruction, fetched and issued at `issued_at`: the
// instructions up to the br replayed from the row's record, when there is one
// for the same code and the interpreter would issue them all within the
// budget (the br it then runs itself).
bool Tile::replay_row(std::uint32_t pc, std::uint64_t issued_at) {
  const auto found = rows_.find(pc);
  if (found == rows_.end()) return false;
  const RecordedRow& row = found->second;
  if (issued_at + row.cycles >= budget_end_) return false;
  const auto bytes = static_cast<std::uint32_t>(4 * row.words.size());
  if (!sram_.present(pc, bytes) || !sram_.initialized(pc, bytes) ||
      std::memcmp(sram_.present_bytes(pc, bytes).data(), row.words.data(), bytes) != 0) {
    return false;
  }
  ExchangeRecord& record = *exchange_;
  record.started = true;
  record.incoming_base = csrs_[static_cast<std::uint8_t>(isa::Csr::kIncomingBase)];
  record.outgoing_base = csrs_[static_cast<std::uint8_t>(isa::Csr::kOutgoingBase)];
  row_started_ = issued_at;
  record.row_code = target::AddressRange{pc, pc + bytes};
  record.stream = row.stream;
  record.sends = row.sends;
  record.controls = row.controls;
  row_last_pc_ = row.last_pc;
  row_replayed_ = true;
  last_pc_ = row.last_pc;
  pc_ = pc + bytes;
  cycle_ = issued_at + row.cycles;
  return true;
}

Continue Tile::branch_to(std::uint32_t target) {
  if (target == 0) {  // completion: the supervisor halts [HW, mechanism INF]
    status_ = TileStatus::kHalted;
    return RunOutcome{RunOutcome::Kind::kHalted};
  }
  pc_ = target;  // a bad target faults at its fetch, as on the hardware
  return std::nullopt;
}

Continue Tile::call(const isa::Call& instruction) {
  const std::uint32_t call_pc = pc_ - 4;
  const std::uint32_t return_address = pc_;
  write_register(instruction.link, return_address);
  const auto model = std::lower_bound(
      models_.begin(), models_.end(), instruction.target,
      [](const auto& entry, std::uint32_t target) { return entry.first < target; });
  if (model == models_.end() || model->first != instruction.target) {
    return branch_to(instruction.target);
  }

  // The call site's record is looked up when a fault needs its provenance or
  // the site is resolved, not on every call.
  const auto provenance = [&] {
    const schema::CallSite* site = debug_.call_site_at(call_pc);
    return site != nullptr ? debug_.provenance(site->provenance) : std::string();
  };
  const kernels::KernelSpec* kernel = model->second;
  if (kernel == nullptr) {
    pc_ = call_pc;
    return fail(FaultKind::kNotModelled,
                fmt::format("call to kernel '{}', which has no host model",
                            debug_.symbol_at(instruction.target)->name),
                provenance());
  }
  if (auto violation = kernel->precondition ? kernel->precondition(registers_) : std::nullopt) {
    pc_ = call_pc;
    return fail(FaultKind::kKernelPrecondition,
                fmt::format("kernel '{}' called with {}", kernel->name, *violation), provenance());
  }
  // A call site always calls the same target (the target is in the
  // instruction), so its resolution is kept for the next call.
  CheckedKernelMemory memory(*this, resolved_call_site(call_pc, *kernel), cycle_);
  kernels::KernelCall kernel_call{registers_, memory, cycle_, 0, id_.value, options_.rounding};
  kernel_call.prng = &prng_;
  std::optional<Fault> fault;
  try {
    kernel->model(kernel_call);
    memory.commit();
  } catch (const KernelFault& error) {
    fault = error.fault();
  } catch (const kernels::SpanOverrun& error) {
    fault = memory.span_overrun(error);
  }
  if (fault) {
    fault_ = std::move(fault);
    status_ = TileStatus::kFaulted;
    exception_ = ExceptionType::kInvalidAddress;
    return RunOutcome{RunOutcome::Kind::kFaulted};
  }
  if (options_.trace) {
    // Only a traced run pays for the call site's record (its provenance).
    const schema::CallSite* site = debug_.call_site_at(call_pc);
    activities_.push_back({TileActivity::Kind::kKernel, cycle_, cycle_ + kernel_call.cycles,
                           &kernel->name, site != nullptr ? site->provenance : schema::kNoProvenance,
                           0});
  }
  cycle_ += kernel_call.cycles;
  // The kernel returns through its link register, like the device code's
  // closing `br $m10`.
  return branch_to(read_register(instruction.link));
}

void Tile::note_loop_counter(std::uint32_t address, std::uint32_t value) {
  const auto& loops = debug_.loops();
  for (std::uint32_t l = 0; l < loops.size(); ++l) {
    if (loops[l].counter == address) loop_counter_writes_.push_back({cycle_, l, value});
  }
}

Continue Tile::execute(const isa::Instruction& instruction) {
  using isa::Reg;
  return std::visit(
      Overloaded{
          [&](const isa::Nop&) -> Continue { return std::nullopt; },
          [&](const isa::Setzi& i) -> Continue {
            write_register(i.dst, i.value);
            return std::nullopt;
          },
          [&](const isa::Add& i) -> Continue {
            write_register(i.dst, read_register(i.src) + static_cast<std::uint32_t>(i.immediate));
            return std::nullopt;
          },
          [&](const isa::And& i) -> Continue {
            write_register(i.dst, read_register(i.src) & i.immediate);
            return std::nullopt;
          },
          [&](const isa::Shl& i) -> Continue {
            write_register(i.dst, i.amount >= 32 ? 0u : read_register(i.src) << i.amount);
            return std::nullopt;
          },
          [&](const isa::Ld32& i) -> Continue {
            const std::uint32_t address =
                read_register(i.base) + read_register(i.delta) + 4 * i.offset_words;
            if (!data_address_ok(address)) {
              return fail(FaultKind::kInvalidAddress,
                          fmt::format("ld32 from {:#x}: not a word-aligned SRAM address", address));
            }
            write_register(i.dst, sram_.read_u32(address));
            return std::nullopt;
          },
          [&](const isa::St32& i) -> Continue {
            const std::uint32_t address =
                read_register(i.base) + read_register(i.delta) + 4 * i.offset_words;
            if (!data_address_ok(address)) {
              return fail(FaultKind::kInvalidAddress,
                          fmt::format("st32 to {:#x}: not a word-aligned SRAM address", address));
            }
            sram_.write_u32(address, read_register(i.src));
            if (options_.trace) note_loop_counter(address, read_register(i.src));
            return std::nullopt;
          },
          [&](const isa::Get& i) -> Continue {
            // Reading $PC gives the address of the `get` itself [INF]; a
            // debugger's view of the PC is the next instruction.
            write_register(
                i.dst, i.csr == isa::Csr::kPc ? pc_ - 4 : csr(static_cast<std::uint8_t>(i.csr)));
            return std::nullopt;
          },
          [&](const isa::Put& i) -> Continue {
            csrs_[static_cast<std::uint8_t>(i.csr)] = read_register(i.src);
            return std::nullopt;
          },
          [&](const isa::Call& i) -> Continue { return call(i); },
          [&](const isa::Br& i) -> Continue { return branch_to(read_register(i.target)); },
          [&](const isa::Bri& i) -> Continue { return branch_to(i.target); },
          [&](const isa::Brz& i) -> Continue {
            return read_register(i.condition) == 0 ? branch_to(i.target) : std::nullopt;
          },
          [&](const isa::Sync& i) -> Continue {
            return RunOutcome{RunOutcome::Kind::kSync, i.zone};
          },
          [&](const isa::Sans& i) -> Continue {
            // sans 0: skip the next internal sync; sans 1: the next host sync [INF].
            if (i.zone > 1) {
              return fail(FaultKind::kNotModelled,
                          fmt::format("sans {}: only sans 0 and sans 1 are known", i.zone));
            }
            return RunOutcome{RunOutcome::Kind::kSans, i.zone};
          },
          [&](const isa::Trap& i) -> Continue {
            if (i.code > 1) {
              return fail(FaultKind::kNotModelled,
                          fmt::format("trap {}: only trap 0 and trap 1 are known", i.code));
            }
            exception_ = i.code == 0 ? ExceptionType::kPbrk0 : ExceptionType::kPbrk1;
            status_ = TileStatus::kTrapped;
            return RunOutcome{RunOutcome::Kind::kTrapped};
          },
          [&](const isa::Delay& i) -> Continue {
            // Outside an exchange row `delay` stalls the supervisor; the
            // instruction's own issue slot is one of the cycles.
            cycle_ += i.events -
                      std::min<std::uint64_t>(i.events, options_.supervisor_instruction_cycles);
            return std::nullopt;
          },
          [&](const isa::Unknown& i) -> Continue {
            return fail(FaultKind::kInvalidInstruction,
                        fmt::format("{:#010x} is not an instruction", i.word));
          },
          [&](const auto& exchange) -> Continue {
            return fail(FaultKind::kNotModelled,
                        fmt::format("'{}' outside an exchange phase: exchange instructions are "
                                    "modelled only in the row a tile runs after leaving a "
                                    "device-wide sync",
                                    isa::disassemble(isa::Instruction{exchange})));
          },
      },
      instruction);
}

}  // namespace tessera::sim
