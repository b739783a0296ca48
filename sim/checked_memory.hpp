#pragma once
// The memory a kernel model sees during one call (ARCHITECTURE.md decisions 3
// and 11). A model asks for the spans its own loop bounds will touch; each
// span is checked once, when it is granted: it must lie inside SRAM, outside
// the tile's code, inside the allocation the package's debug section assigns
// to that operand at this call site, and agree with the operand's declared
// access (an input is not written; an output is read only when the kernel's
// ABI says so). The first span that strays throws KernelFault carrying a
// KernelOverrun fault that names tile, kernel, call pc, operand, the bytes
// asked for, the allocation the operand owns and the allocation actually hit;
// a model that indexes past a span it was granted (kernels::SpanOverrun) is
// reported the same way.
//
// Never-written bytes: a kWhole read span is checked when it is granted
// (--check-uninitialized), and kWhole write spans count as written when the
// model returns, so the order in which a model asks for aliased spans does
// not matter. kSparse spans are tracked through note_read / note_written.
//
// Cost (issue 16: checking < 10 % of a call of >= 4 KiB): a span inside its
// operand's allocation, with an access the ABI grants, aligned, through an
// operand the call site has prepared in this epoch (the whole allocation
// clear of code with its pages present; ResolvedCallSite::Operand) passes
// every check. A kWhole span of it that needs no never-written test and no
// marking is granted inline, in the model, through the operand's window
// (kernels::SpanWindow: a few compares, no virtual call, no record); any
// other such span by a handful of compares in acquire, recorded for the
// notes and the commit. A kWhole span of an allocation written throughout is
// neither tested for never-written bytes nor marked again. Every other span
// takes the checks one by one, in the order that picks the fault's reason,
// so faults and their messages are the same whichever path a span takes.

#include <cstdint>
#include <span>

#include <boost/container/small_vector.hpp>

#include "kernels/kernel_abi.hpp"
#include "kernels/registry.hpp"
#include "schema/model.hpp"
#include "sim/call_site.hpp"
#include "sim/fault.hpp"

namespace tessera::sim {

class Tile;

// A fault raised inside a kernel model; the tile turns it into its fault.
class KernelFault : public std::exception {
 public:
  explicit KernelFault(Fault fault) : fault_(std::move(fault)) {}
  const Fault& fault() const noexcept { return fault_; }
  const char* what() const noexcept override { return fault_.message.c_str(); }

 private:
  Fault fault_;
};

class CheckedKernelMemory final : public kernels::KernelMemory {
 public:
  // `site.site` may be null when the package has no record for this call;
  // every memory access then faults, since no operand has a known allocation.
  CheckedKernelMemory(Tile& tile, const ResolvedCallSite& site, std::uint64_t cycle);

  std::span<std::uint8_t> acquire(unsigned reg, std::uint64_t address, std::uint64_t size,
                                  kernels::Access access, kernels::SpanUse use,
                                  unsigned alignment) override;
  void note_read(unsigned reg, std::uint64_t address, std::uint64_t size) override;
  void note_written(unsigned reg, std::uint64_t address, std::uint64_t size) override;

  // After the model returned: the kWhole write spans become written bytes.
  // (Spans granted inline leave no record and need no commit.)
  void commit() {
    if (!granted_.empty()) commit_granted();
  }
  // The fault for a model that indexed past a span it was granted.
  Fault span_overrun(const kernels::SpanOverrun& overrun) const;

 private:
  struct Granted {
    unsigned reg;
    std::uint32_t address;
    std::uint32_t size;
    bool whole_write;  // a kWhole write span: marked written at commit
    bool sparse;       // a kSparse span: the notes must lie inside one
  };
  void commit_granted();
  // The window of a prepared operand (ResolvedCallSite::windows).
  void open_window(unsigned reg, const ResolvedCallSite::Operand& operand) const;
  // The operand's allocation at this call site, after the access checks.
  const schema::Allocation* check(unsigned reg, std::uint64_t address, std::uint64_t size,
                                  kernels::Access access) const;
  // acquire beyond its fast path: the first span through an operand in an
  // epoch, a span that may touch code or whose pages are not all present, a
  // never-written check, and every span that fails a check.
  std::span<std::uint8_t> acquire_checked(unsigned reg, std::uint64_t address, std::uint64_t size,
                                          kernels::Access access, kernels::SpanUse use,
                                          unsigned alignment);
  // check, then the alignment: every check one by one, for a span the fast
  // path in acquire_checked did not pass.
  const schema::Allocation* slow_check(unsigned reg, std::uint64_t address, std::uint64_t size,
                                       kernels::Access access, unsigned alignment) const;
  bool inside_granted(unsigned reg, std::uint64_t address, std::uint64_t size) const noexcept;
  void check_written(unsigned reg, std::uint64_t address, std::uint64_t size,
                     const schema::Allocation* owned) const;
  Fault make_fault(std::string message, FaultKind kind = FaultKind::kKernelOverrun) const;
  [[noreturn]] void overrun(std::string message, FaultKind kind = FaultKind::kKernelOverrun) const;
  std::string describe_allocation(const schema::Allocation* allocation) const;

  Tile& tile_;
  const ResolvedCallSite& site_;
  std::uint64_t cycle_;
  bool check_uninitialized_;
  // Every span, for the kSparse notes and (the kWhole write spans) for the
  // commit: a call has a handful, kept inline (no allocation per call).
  boost::container::small_vector<Granted, 16> granted_;
};

}  // namespace tessera::sim
