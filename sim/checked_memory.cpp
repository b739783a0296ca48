#include "sim/checked_memory.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "sim/tile.hpp"
#include "target/memory_map.hpp"

namespace tessera::sim {
namespace {

using kernels::Access;

const char* verb(Access access) {
  switch (access) {
    case Access::kRead:
      return "reads";
    case Access::kWrite:
      return "writes";
    case Access::kReadWrite:
      return "reads and writes";
  }
  return "?";
}

bool reads(Access access) { return access != Access::kWrite; }
bool writes(Access access) { return access != Access::kRead; }

// Not a multiple of `alignment` (0 and 1 align everything); a power of two,
// as alignof gives, without a division.
bool misaligned_by(std::uint64_t address, unsigned alignment) {
  if (alignment <= 1) return false;
  if ((alignment & (alignment - 1)) == 0) return (address & (alignment - 1)) != 0;
  return address % alignment != 0;
}

}  // namespace

CheckedKernelMemory::CheckedKernelMemory(Tile& tile, const ResolvedCallSite& site,
                                         std::uint64_t cycle)
    : tile_(tile),
      site_(site),
      cycle_(cycle),
      check_uninitialized_(tile.options_.check_uninitialized) {
  // Windows opened in an earlier epoch may cover code loaded since, or
  // pages given back: none stays open.
  if (site.windows_epoch != tile.span_epoch_) [[unlikely]] {
    site.windows = {};
    site.windows_epoch = tile.span_epoch_;
  }
  set_windows(site.windows.data(), tile.sram_.host_data(), target::kSramBase);
  set_notes_reads(check_uninitialized_);  // note_read checks nothing else
}

void CheckedKernelMemory::open_window(unsigned reg, const ResolvedCallSite::Operand& operand) const {
  using kernels::SpanWindow;
  const bool written = operand.written == tile_.span_epoch_;
  std::uint8_t grants = 0;
  if ((operand.allows & ResolvedCallSite::kAllowsRead) != 0) {
    grants |= SpanWindow::kReads;
    if (!check_uninitialized_ || written) grants |= SpanWindow::kWholeReads;
  }
  if ((operand.allows & ResolvedCallSite::kAllowsWrite) != 0) {
    grants |= SpanWindow::kWrites;
    if (written) grants |= SpanWindow::kWholeWrites;
  }
  site_.windows[reg] = {static_cast<std::uint32_t>(operand.begin),
                        static_cast<std::uint32_t>(operand.end), grants};
}

Fault CheckedKernelMemory::make_fault(std::string message, FaultKind kind) const {
  Fault fault;
  fault.kind = kind;
  fault.tile = tile_.id();
  fault.pc = site_.pc;
  fault.cycle = cycle_;
  fault.message =
      fmt::format("kernel '{}' called at {:#x}: {}", site_.kernel->name, site_.pc, message);
  if (site_.site != nullptr) fault.provenance = tile_.debug_.provenance(site_.site->provenance);
  return fault;
}

void CheckedKernelMemory::overrun(std::string message, FaultKind kind) const {
  throw KernelFault(make_fault(std::move(message), kind));
}

std::string CheckedKernelMemory::describe_allocation(const schema::Allocation* allocation) const {
  if (allocation == nullptr) return "no allocation";
  std::string text = fmt::format("allocation #{} '{}'", allocation->id, allocation->name);
  if (!allocation->tensor.empty()) text += fmt::format(" (tensor {})", allocation->tensor);
  text += fmt::format(" [{:#x}, {:#x})", allocation->address,
                      std::uint64_t{allocation->address} + allocation->size);
  const std::string& provenance = tile_.debug_.provenance(allocation->provenance);
  if (!provenance.empty()) text += fmt::format(" from '{}'", provenance);
  return text;
}

const schema::Allocation* CheckedKernelMemory::check(unsigned reg, std::uint64_t address,
                                                     std::uint64_t size, Access access) const {
  // A size that wraps past 2^64 reaches past SRAM as well.
  const std::uint64_t end = address + size < address ? ~std::uint64_t{0} : address + size;
  // Formatted only when a check fails.
  const auto touched = [&] {
    return fmt::format("operand $m{} {} [{:#x}, {:#x}) ({} bytes)", reg, verb(access), address, end,
                       size);
  };
  if (address < target::kSramBase || end > target::kSramEnd) {
    overrun(fmt::format("{} outside SRAM {}", touched(), target::kSram));
  }
  if (tile_.in_code(static_cast<std::uint32_t>(address), static_cast<std::uint32_t>(size))) {
    overrun(fmt::format("{} inside the tile's code", touched()));
  }
  static const ResolvedCallSite::Operand kNotAnOperand;
  const ResolvedCallSite::Operand& operand =
      reg < site_.operands.size() ? site_.operands[reg] : kNotAnOperand;
  const kernels::OperandSpec* spec = operand.spec;
  if (spec == nullptr) {
    overrun(fmt::format("{}, but $m{} is not a memory operand of this kernel", touched(), reg));
  }
  if (writes(access) && spec->access == Access::kRead) {
    overrun(fmt::format("{}, but the kernel's ABI declares $m{} ({}) read-only", touched(), reg,
                        spec->role));
  }
  if (reads(access) && spec->access == Access::kWrite) {
    overrun(fmt::format("{}, but the kernel's ABI declares $m{} ({}) write-only", touched(), reg,
                        spec->role));
  }
  if (site_.site == nullptr) {
    overrun(
        fmt::format("{}, but the package records no call site at {:#x}, so the operand's "
                    "allocation is unknown",
                    touched(), site_.pc));
  }
  if (!operand.recorded) {
    overrun(fmt::format("{}, but the call site records no allocation for $m{}", touched(), reg));
  }
  const schema::Allocation* owned = operand.owned;
  const bool inside = owned != nullptr && address >= owned->address &&
                      end <= std::uint64_t{owned->address} + owned->size;
  if (!inside) {
    // Name the allocation the stray bytes actually hit: the first byte
    // outside the operand's own allocation.
    auto stray = static_cast<std::uint32_t>(address);
    if (owned != nullptr && address >= owned->address && address < owned->address + owned->size) {
      stray = owned->address + owned->size;
    }
    overrun(fmt::format("{} outside its {}; the bytes at {:#x} belong to {}", touched(),
                        describe_allocation(owned), stray,
                        describe_allocation(tile_.debug_.allocation_containing(stray))));
  }
  return owned;
}

void CheckedKernelMemory::check_written(unsigned reg, std::uint64_t address, std::uint64_t size,
                                        const schema::Allocation* owned) const {
  if (!tile_.options_.check_uninitialized ||
      tile_.sram_.initialized(static_cast<std::uint32_t>(address),
                              static_cast<std::uint32_t>(size))) {
    return;
  }
  overrun(fmt::format("operand $m{} reads [{:#x}, {:#x}) ({} bytes) of {}, which includes bytes "
                      "nothing ever wrote",
                      reg, address, address + size, size, describe_allocation(owned)),
          FaultKind::kUninitializedRead);
}

// The fast path: a span inside the operand's allocation (so inside SRAM)
// with an access its ABI grants, aligned, through an operand whose whole
// allocation was found clear of the code with its pages present in this
// epoch, and no never-written check to make. It grants exactly what the
// checks of acquire_checked would grant; anything else takes that path,
// which faults with the reason (or grants all the same). Kept small (the
// rest is out of line) because a model may ask for dozens of spans a call.
// (The spans it grants that need no record were granted inline already,
// through the operand's window, unless the model called acquire itself.)
std::span<std::uint8_t> CheckedKernelMemory::acquire(unsigned reg, std::uint64_t address,
                                                     std::uint64_t size, Access access,
                                                     kernels::SpanUse use, unsigned alignment) {
  if (reg < site_.operands.size() && size != 0) [[likely]] {
    const ResolvedCallSite::Operand& operand = site_.operands[reg];
    const std::uint8_t wanted = (reads(access) ? ResolvedCallSite::kAllowsRead : 0) |
                                (writes(access) ? ResolvedCallSite::kAllowsWrite : 0);
    const std::uint64_t epoch = tile_.span_epoch_;
    const bool whole = use == kernels::SpanUse::kWhole;
    const bool written = operand.written == epoch;
    if ((wanted & ~operand.allows) == 0 && operand.prepared == epoch && address >= operand.begin &&
        address <= operand.end && size <= operand.end - address &&
        !misaligned_by(address, alignment) &&
        !(check_uninitialized_ && whole && reads(access) && !written)) [[likely]] {
      const auto at = static_cast<std::uint32_t>(address);
      const auto bytes = static_cast<std::uint32_t>(size);
      granted_.push_back({reg, at, bytes, whole && writes(access) && !written, !whole});
      return tile_.sram_.present_bytes(at, bytes);
    }
  }
  return acquire_checked(reg, address, size, access, use, alignment);
}

std::span<std::uint8_t> CheckedKernelMemory::acquire_checked(unsigned reg, std::uint64_t address,
                                                             std::uint64_t size, Access access,
                                                             kernels::SpanUse use,
                                                             unsigned alignment) {
  if (size == 0) return {};
  const ResolvedCallSite::Operand* operand =
      reg < site_.operands.size() ? &site_.operands[reg] : nullptr;
  const std::uint8_t wanted = (reads(access) ? ResolvedCallSite::kAllowsRead : 0) |
                              (writes(access) ? ResolvedCallSite::kAllowsWrite : 0);
  bool prepared = false;
  const schema::Allocation* owned = nullptr;
  if (operand != nullptr && (wanted & ~operand->allows) == 0 && address >= operand->begin &&
      address <= operand->end && size <= operand->end - address &&
      !misaligned_by(address, alignment)) {
    // Whether the whole allocation is clear of code with its pages present
    // is found once per epoch, not per span.
    if (operand->prepared != tile_.span_epoch_ &&
        !tile_.may_touch_code(operand->begin, operand->end) &&
        tile_.sram_.present(static_cast<std::uint32_t>(operand->begin),
                            static_cast<std::uint32_t>(operand->end - operand->begin))) {
      operand->prepared = tile_.span_epoch_;
      open_window(reg, *operand);
    }
    prepared = operand->prepared == tile_.span_epoch_;
    if (prepared || !tile_.may_touch_code(address, address + size)) owned = operand->owned;
  }
  // Every check one by one, in the order that picks the fault's reason.
  if (owned == nullptr) owned = slow_check(reg, address, size, access, alignment);
  // Inside SRAM now, so both fit 32 bits.
  const auto at = static_cast<std::uint32_t>(address);
  const auto bytes = static_cast<std::uint32_t>(size);
  // The span passed every check, so it lies inside the operand's allocation.
  const bool written = operand != nullptr && operand->written == tile_.span_epoch_;
  const bool whole_write = use == kernels::SpanUse::kWhole && writes(access) && !written;
  if (use == kernels::SpanUse::kWhole && reads(access) && check_uninitialized_ && !written) {
    check_written(reg, address, size, owned);
  }
  granted_.push_back({reg, at, bytes, whole_write, use == kernels::SpanUse::kSparse});
  return prepared ? tile_.sram_.present_bytes(at, bytes) : tile_.sram_.bytes(at, bytes);
}

const schema::Allocation* CheckedKernelMemory::slow_check(unsigned reg, std::uint64_t address,
                                                          std::uint64_t size, Access access,
                                                          unsigned alignment) const {
  const schema::Allocation* owned = check(reg, address, size, access);
  if (misaligned_by(address, alignment)) {
    overrun(fmt::format("operand $m{} {} [{:#x}, {:#x}) as {}-byte elements, but the span is not "
                        "{}-byte aligned",
                        reg, verb(access), address, address + size, alignment, alignment),
            FaultKind::kKernelPrecondition);
  }
  return owned;
}

bool CheckedKernelMemory::inside_granted(unsigned reg, std::uint64_t address,
                                         std::uint64_t size) const noexcept {
  return std::any_of(granted_.begin(), granted_.end(), [&](const Granted& span) {
    return span.sparse && span.reg == reg && address >= span.address &&
           address + size <= std::uint64_t{span.address} + span.size;
  });
}

void CheckedKernelMemory::note_read(unsigned reg, std::uint64_t address, std::uint64_t size) {
  if (size == 0 || !tile_.options_.check_uninitialized) return;
  if (!inside_granted(reg, address, size)) {
    overrun(
        fmt::format("operand $m{} notes a read of [{:#x}, {:#x}), outside every span it was "
                    "granted",
                    reg, address, address + size));
  }
  check_written(reg, address, size,
                tile_.debug_.allocation_containing(static_cast<std::uint32_t>(address)));
}

void CheckedKernelMemory::note_written(unsigned reg, std::uint64_t address, std::uint64_t size) {
  if (size == 0) return;
  if (!inside_granted(reg, address, size)) {
    overrun(
        fmt::format("operand $m{} notes a write of [{:#x}, {:#x}), outside every span it "
                    "was granted",
                    reg, address, address + size));
  }
  tile_.sram_.mark_written(static_cast<std::uint32_t>(address), static_cast<std::uint32_t>(size));
}

void CheckedKernelMemory::commit_granted() {
  std::uint32_t marked = 0;  // by register
  for (const Granted& span : granted_) {
    if (!span.whole_write) continue;
    tile_.sram_.mark_written(span.address, span.size);
    marked |= 1u << span.reg;
  }
  // An operand whose allocation is now written throughout skips marking and
  // never-written tests from here on (within the epoch).
  for (unsigned reg = 0; marked != 0; ++reg, marked >>= 1) {
    const ResolvedCallSite::Operand& operand = site_.operands[reg];
    if ((marked & 1) == 0 || operand.allows == 0) continue;
    if (tile_.sram_.initialized(static_cast<std::uint32_t>(operand.begin),
                                static_cast<std::uint32_t>(operand.end - operand.begin))) {
      operand.written = tile_.span_epoch_;
      if (operand.prepared == tile_.span_epoch_) open_window(reg, operand);
    }
  }
}

Fault CheckedKernelMemory::span_overrun(const kernels::SpanOverrun& overrun) const {
  const std::uint64_t begin = overrun.touched_address();
  const std::uint64_t end = begin + overrun.touched_bytes();
  const std::uint64_t span_end = overrun.span_address() + overrun.span_bytes();
  return make_fault(fmt::format(
      "operand $m{} touched [{:#x}, {:#x}) ({} bytes), outside the span [{:#x}, {:#x}) the model "
      "was granted; the bytes at {:#x} belong to {}",
      overrun.reg(), begin, end, overrun.touched_bytes(), overrun.span_address(), span_end,
      std::max(begin, span_end),
      describe_allocation(tile_.debug_.allocation_containing(
          static_cast<std::uint32_t>(std::max(begin, span_end))))));
}

}  // namespace tessera::sim
