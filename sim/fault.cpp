#include "sim/fault.hpp"

#include <algorithm>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace tessera::sim {

std::string_view fault_kind_name(FaultKind kind) noexcept {
  switch (kind) {
    case FaultKind::kInvalidInstruction: return "InvalidInstruction";
    case FaultKind::kInvalidAddress: return "InvalidAddress";
    case FaultKind::kKernelOverrun: return "KernelOverrun";
    case FaultKind::kUninitializedRead: return "UninitializedRead";
    case FaultKind::kKernelPrecondition: return "KernelPrecondition";
    case FaultKind::kNotModelled: return "NotModelled";
    case FaultKind::kDeadlock: return "Deadlock";
    case FaultKind::kExchangeConflict: return "ExchangeConflict";
    case FaultKind::kExchangeAddress: return "ExchangeAddress";
    case FaultKind::kExchangeMismatch: return "ExchangeMismatch";
    case FaultKind::kExchangeTiming: return "ExchangeTiming";
  }
  return "?";
}

std::string describe(const Fault& fault) {
  std::string where;
  if (fault.tile) {
    where = fmt::format(" on {} ({})", *fault.tile,
                        fault.context == 0 ? std::string("supervisor")
                                           : fmt::format("worker {}", fault.context));
  }
  if (fault.pc) where += fmt::format(" at pc {:#x}", *fault.pc);
  std::string text = fmt::format("{}{}, cycle {}: {}", fault_kind_name(fault.kind), where,
                                 fault.cycle, fault.message);
  if (!fault.provenance.empty()) text += fmt::format(" [{}]", fault.provenance);
  return text;
}

nlohmann::json to_json(const Fault& fault) {
  nlohmann::json record = {{"kind", fault_kind_name(fault.kind)},
                           {"context", fault.context},
                           {"cycle", fault.cycle},
                           {"message", fault.message}};
  record["tile"] = fault.tile ? nlohmann::json(fault.tile->value) : nlohmann::json(nullptr);
  record["pc"] = fault.pc ? nlohmann::json(*fault.pc) : nlohmann::json(nullptr);
  if (!fault.provenance.empty()) record["provenance"] = fault.provenance;
  return record;
}

void FaultLog::add(Fault fault) {
  const auto when = [](const Fault& f) {
    return std::pair(f.cycle, f.tile ? std::uint32_t{f.tile->value} : 0x10000u);
  };
  const auto at =
      std::upper_bound(faults_.begin(), faults_.end(), fault,
                       [&](const Fault& a, const Fault& b) { return when(a) < when(b); });
  faults_.insert(at, std::move(fault));
}

nlohmann::json FaultLog::to_json() const {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& fault : faults_) list.push_back(sim::to_json(fault));
  return list;
}

}  // namespace tessera::sim
