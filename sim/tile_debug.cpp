#include "sim/tile_debug.hpp"

namespace tessera::sim {

TileDebugIndex::TileDebugIndex(const schema::TileDebug& debug,
                               const std::vector<std::string>& provenance)
    : TileDebugIndex(debug, std::make_shared<const std::vector<std::string>>(provenance)) {}

TileDebugIndex::TileDebugIndex(const schema::TileDebug& debug, Provenance provenance)
    : provenance_(std::move(provenance)), loops_(debug.loops) {
  for (const auto& symbol : debug.symbols) symbols_.emplace(symbol.address, symbol);
  for (const auto& site : debug.call_sites) call_sites_.emplace(site.pc, site);
  for (const auto& allocation : debug.allocations) {
    allocations_by_id_.emplace(allocation.id, allocation);
    allocation_ids_by_address_.emplace(allocation.address, allocation.id);
  }
}

const schema::Symbol* TileDebugIndex::symbol_at(std::uint32_t address) const {
  const auto it = symbols_.find(address);
  return it == symbols_.end() ? nullptr : &it->second;
}

const schema::CallSite* TileDebugIndex::call_site_at(std::uint32_t pc) const {
  const auto it = call_sites_.find(pc);
  return it == call_sites_.end() ? nullptr : &it->second;
}

const schema::Allocation* TileDebugIndex::allocation(std::uint32_t id) const {
  const auto it = allocations_by_id_.find(id);
  return it == allocations_by_id_.end() ? nullptr : &it->second;
}

const schema::Allocation* TileDebugIndex::allocation_containing(std::uint32_t address) const {
  for (const auto& [start, id] : allocation_ids_by_address_) {
    if (start > address) break;
    const schema::Allocation& candidate = allocations_by_id_.at(id);
    if (address < std::uint64_t{candidate.address} + candidate.size) return &candidate;
  }
  return nullptr;
}

const std::string& TileDebugIndex::provenance(std::uint32_t index) const {
  static const std::string kNone;
  return provenance_ != nullptr && index < provenance_->size() ? (*provenance_)[index] : kNone;
}

}  // namespace tessera::sim
