#pragma once
// The exchange scheduler's input: one phase's logical transfers, with their
// addresses already resolved by placement.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "schema/model.hpp"
#include "target/topology.hpp"

namespace tessera::compiler::exchange {

using target::PhysicalTile;

// `words` 32-bit words from `source_address` on `source` to every destination
// (a multicast when there are several). Addresses are byte addresses and must
// be word-aligned. A transfer may exceed the 4148 words one message can carry:
// the scheduler cuts it into messages. A destination tile may be listed more
// than once (with different addresses); each listing becomes its own message.
struct LogicalTransfer {
  PhysicalTile source;
  std::uint32_t source_address = 0;
  std::uint32_t words = 0;
  std::vector<schema::TransferDestination> destinations;
  std::uint32_t provenance = schema::kNoProvenance;
};

// `after` must not start sending before every word of `before` has been
// written. Orders between transfers that share bytes on a tile (a relay, a
// buffer reused within the phase) are found by the scheduler itself; these
// are extra ones the caller wants.
struct TransferOrder {
  std::size_t before = 0;
  std::size_t after = 0;
};

struct PhaseTransfers {
  std::vector<LogicalTransfer> transfers;
  std::vector<TransferOrder> orders;
};

}  // namespace tessera::compiler::exchange
