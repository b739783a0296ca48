#pragma once
// One tile's debug records from the package, indexed for the questions the
// simulator asks while running: is this call target a kernel, which
// allocation does this operand belong to, which allocation holds this byte.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "schema/model.hpp"

namespace tessera::sim {

class TileDebugIndex {
 public:
  using Provenance = std::shared_ptr<const std::vector<std::string>>;

  TileDebugIndex() = default;
  // `provenance` is the package's table, shared by every tile's index.
  TileDebugIndex(const schema::TileDebug& debug, Provenance provenance);
  TileDebugIndex(const schema::TileDebug& debug, const std::vector<std::string>& provenance);

  // The symbol starting exactly at `address`, if any.
  const schema::Symbol* symbol_at(std::uint32_t address) const;
  const std::map<std::uint32_t, schema::Symbol>& symbols() const noexcept { return symbols_; }
  const schema::CallSite* call_site_at(std::uint32_t pc) const;
  // Every call site, by pc (in no order).
  const std::unordered_map<std::uint32_t, schema::CallSite>& call_sites() const noexcept {
    return call_sites_;
  }
  const schema::Allocation* allocation(std::uint32_t id) const;
  // The allocation containing `address` (the lowest-addressed one, when
  // allocations share bytes at different live ranges).
  const schema::Allocation* allocation_containing(std::uint32_t address) const;
  // A provenance string, or "" for kNoProvenance.
  const std::string& provenance(std::uint32_t index) const;
  // The main program's loops (their counter words), in program order.
  const std::vector<schema::CodeLoop>& loops() const noexcept { return loops_; }

 private:
  std::map<std::uint32_t, schema::Symbol> symbols_;
  std::unordered_map<std::uint32_t, schema::CallSite> call_sites_;
  std::map<std::uint32_t, schema::Allocation> allocations_by_id_;
  std::multimap<std::uint32_t, std::uint32_t> allocation_ids_by_address_;
  Provenance provenance_;
  std::vector<schema::CodeLoop> loops_;
};

}  // namespace tessera::sim
