#pragma once
// From timed messages to what each tile's row must do: its sends, and the
// receive controls of every message it receives (source select at X, pointer
// at P, neutral teardown at X + n — left out when the next receive's source
// select falls on that event: the select cuts over).

#include <span>
#include <vector>

#include "compiler/exchange/schedule.hpp"

namespace tessera::compiler::exchange {

// One TileActions per tile that sends or receives, by tile.
std::vector<TileActions> tile_actions(std::span<const Message> messages);

}  // namespace tessera::compiler::exchange
