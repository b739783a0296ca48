#include "compiler/exchange/tile_actions.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "target/host_exchange.hpp"

namespace tessera::compiler::exchange {

using target::ReceiveControl;

std::vector<TileActions> tile_actions(std::span<const Message> messages) {
  struct Receive {
    const ScheduledReceive* receive;
    PhysicalTile source;
  };
  std::map<PhysicalTile, TileActions> tiles;
  std::map<PhysicalTile, std::vector<Receive>> receives;
  const auto tile = [&](PhysicalTile id) -> TileActions& {
    TileActions& actions = tiles[id];
    actions.tile = id;
    return actions;
  };
  for (const Message& message : messages) {
    TileActions& sender = tile(message.source);
    sender.sends.push_back(
        SendAction{message.send_start, message.source_address / 4, message.words, message.sctl});
    sender.horizon = std::max(sender.horizon, sender.sends.back().end());
    for (const ScheduledReceive& receive : message.receives) {
      TileActions& receiver = tile(receive.tile);
      receiver.horizon = std::max(receiver.horizon, receive.timing.horizon);
      receives[receive.tile].push_back({&receive, message.source});
    }
  }
  for (auto& [id, list] : receives) {
    std::sort(list.begin(), list.end(), [](const Receive& a, const Receive& b) {
      return a.receive->timing.source_select < b.receive->timing.source_select;
    });
    auto& controls = tiles[id].controls;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const target::Word32Timing& timing = list[i].receive->timing;
      controls.push_back({timing.source_select, ReceiveControl::Register::kXpic, 0,
                          list[i].source.value});
      controls.push_back(
          {timing.pointer, ReceiveControl::Register::kPic, 0, list[i].receive->address / 4});
      const bool cut_over =
          i + 1 < list.size() && list[i + 1].receive->timing.source_select == timing.teardown;
      if (!cut_over) {
        controls.push_back(
            {timing.teardown, ReceiveControl::Register::kXpic, 0, target::kNeutralMux});
      }
    }
  }
  std::vector<TileActions> result;
  for (auto& [id, actions] : tiles) {
    std::sort(actions.sends.begin(), actions.sends.end(),
              [](const auto& a, const auto& b) { return a.start < b.start; });
    std::sort(actions.controls.begin(), actions.controls.end(), [](const auto& a, const auto& b) {
      return std::tuple(a.event, a.target) < std::tuple(b.event, b.target);
    });
    result.push_back(std::move(actions));
  }
  return result;
}

}  // namespace tessera::compiler::exchange
