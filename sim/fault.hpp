#pragma once
// Faults the simulator raises: structured records (kind, tile, context, pc,
// cycle, message, provenance), printed readably and exported as JSON.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "support/error.hpp"
#include "target/topology.hpp"

namespace tessera::sim {

enum class FaultKind : std::uint8_t {
  kInvalidInstruction,  // INVALID_INSTR: a word no instruction matches, or never-written code
  kInvalidAddress,      // INVALID_ADDR: a fetch, load or store outside its memory
  kKernelOverrun,       // a kernel model touched memory outside its operand's allocation
  kUninitializedRead,   // a kernel model read bytes nothing ever wrote (--check-uninitialized)
  kKernelPrecondition,  // a kernel was called with registers its ABI forbids
  kNotModelled,         // an instruction or feature the simulator does not model yet
  kDeadlock,            // no tile can make progress
  kExchangeConflict,    // TEXCPT_CONFLICT: exchange data in the element of the executing row
  kExchangeAddress,     // ERERR ADDR: a send or receive outside SRAM, or a receive into code
  kExchangeMismatch,    // the words delivered differ from the package's planned transfers
  kExchangeTiming,      // a row the timing model refuses: an instruction with no place in a
                        // row, a message over the limit, a row that returns before its words land
};

std::string_view fault_kind_name(FaultKind kind) noexcept;

struct Fault {
  FaultKind kind = FaultKind::kInvalidInstruction;
  std::optional<target::PhysicalTile> tile;
  unsigned context = 0;  // 0 = supervisor, 1..6 = workers
  std::optional<std::uint32_t> pc;
  std::uint64_t cycle = 0;
  std::string message;
  std::string provenance;  // the graph operation behind the code, when known
};

// "KernelOverrun on p5 (supervisor) at pc 0x4c018, cycle 120: <message> [graph: matmul %3]"
std::string describe(const Fault& fault);
nlohmann::json to_json(const Fault& fault);

// The faults of a run in simulated-time order, ties by tile id (a fault
// without a tile last at its cycle): the order the chip raises them in,
// whatever order the simulator's tiles, each running ahead by up to a
// quantum, found them in.
class FaultLog {
 public:
  void add(Fault fault);
  const std::vector<Fault>& all() const noexcept { return faults_; }
  bool empty() const noexcept { return faults_.empty(); }
  void clear() noexcept { faults_.clear(); }
  nlohmann::json to_json() const;

 private:
  std::vector<Fault> faults_;
};

// Thrown by the co-simulation API when a run stops on a fault and the caller
// asked for exceptions; carries the fault.
class FaultError : public Error {
 public:
  explicit FaultError(Fault fault) : Error(describe(fault)), fault_(std::move(fault)) {}
  const Fault& fault() const noexcept { return fault_; }

 private:
  Fault fault_;
};

}  // namespace tessera::sim
