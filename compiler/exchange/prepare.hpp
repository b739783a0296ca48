#pragma once
// The first step of scheduling a phase: check the logical transfers, cut them
// into messages a row can carry (≤ 4148 words, each destination tile once),
// and find the orders between messages that share bytes on a tile.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "compiler/exchange/transfers.hpp"

namespace tessera::compiler::exchange {

// One future message, before it has a time.
struct Piece {
  std::size_t transfer = 0;
  std::uint32_t first_word = 0;
  PhysicalTile source;
  std::uint32_t source_address = 0;
  std::uint32_t words = 0;
  std::vector<schema::TransferDestination> destinations;  // distinct tiles, by tile
};

struct PieceOrder {
  std::size_t before = 0;
  std::size_t after = 0;
  std::optional<PhysicalTile> tile;  // empty: an order the caller asked for
};

struct PreparedPhase {
  std::vector<Piece> pieces;       // in transfer order
  std::vector<PieceOrder> orders;  // sorted, no duplicates
};

// ExchangeScheduleError naming the transfer (index, tiles, addresses) and
// what is wrong: no words, no destinations, a tile off the chip, a
// destination on the source tile, an unaligned address, a range outside SRAM,
// an order naming a transfer that does not exist.
PreparedPhase prepare_phase(const PhaseTransfers& phase);

}  // namespace tessera::compiler::exchange
