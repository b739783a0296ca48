#include "compiler/exchange/scheduler.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "compiler/exchange/list_scheduler.hpp"
#include "compiler/exchange/phase_memo.hpp"
#include "compiler/exchange/prepare.hpp"
#include "compiler/exchange/row_emitter.hpp"
#include "compiler/exchange/tile_actions.hpp"
#include "compiler/exchange/validator.hpp"
#include "target/memory_map.hpp"

namespace tessera::compiler::exchange {
namespace {

void check_row_address(std::uint32_t address, const std::string& what) {
  if (!target::is_aligned(address, 8) || !target::kExecutableRange.contains(address)) {
    throw UsageError(fmt::format(
        "{} {:#x} must be 8-aligned (sendpicp) and in executable memory {}", what, address,
        target::kExecutableRange));
  }
}

void check_row_addresses(const ScheduleOptions& options) {
  check_row_address(options.row_address, "the exchange row address");
  for (const auto& [tile, address] : options.row_addresses) {
    check_row_address(address, fmt::format("the exchange row address of {}", tile));
  }
}

// Each participating tile's row at its address, the phase's horizon, and the
// rule that no row shares a memory element with its tile's data (checked by
// validate_schedule when the options validate: once is enough).
void emit_rows(PhaseSchedule& schedule, const ScheduleOptions& options) {
  schedule.rows.clear();
  schedule.horizon = 0;
  for (const TileActions& actions : schedule.tiles) {
    const std::uint32_t address = options.row_address_of(actions.tile);
    schedule.rows.push_back({actions.tile, address, emit_row(actions, address), actions.horizon});
    schedule.horizon = std::max(schedule.horizon, actions.horizon);
  }
  if (!options.validate) check_row_elements(schedule);
}

ExchangeCost cost_of(const PhaseSchedule& schedule) {
  ExchangeCost cost;
  cost.horizon = schedule.horizon;
  std::map<PhysicalTile, std::pair<std::uint64_t, std::uint64_t>> words;  // sent, received
  for (const Message& message : schedule.messages) {
    cost.words_sent += message.words;
    words[message.source].first += message.words;
    for (const ScheduledReceive& receive : message.receives) {
      cost.words_received += message.words;
      words[receive.tile].second += message.words;
    }
  }
  for (const auto& [tile, counts] : words) {
    cost.lower_bound = std::max({cost.lower_bound, counts.first, counts.second});
  }
  return cost;
}

}  // namespace

PhaseSchedule schedule_phase(const PhaseTransfers& phase, const ScheduleOptions& options,
                             PhaseMemo* memo) {
  check_row_addresses(options);
  const PreparedPhase prepared = prepare_phase(phase);
  PieceTimes times = memo != nullptr ? memo->schedule(prepared) : schedule_pieces(prepared);
  const std::vector<Event>& starts = times.starts;

  PhaseSchedule schedule;
  for (std::size_t i = 0; i < prepared.pieces.size(); ++i) {
    const Piece& piece = prepared.pieces[i];
    Message message{piece.transfer, piece.first_word, piece.source, piece.source_address,
                    piece.words, 0, starts[i], {}};
    std::vector<PhysicalTile> receivers;
    for (const auto& destination : piece.destinations) {
      receivers.push_back(destination.tile);
      message.receives.push_back(ScheduledReceive{
          destination.tile, destination.address,
          target::word32_transfer(piece.source, destination.tile, starts[i], piece.words)});
    }
    message.sctl = target::word32_sctl(piece.source, receivers);
    schedule.messages.push_back(std::move(message));
  }
  for (const PieceOrder& order : prepared.orders) {
    schedule.orders.push_back({order.before, order.after, order.tile});
  }
  schedule.tiles = tile_actions(schedule.messages);
  emit_rows(schedule, options);
  for (std::size_t t = 0; t < phase.transfers.size(); ++t) {
    const LogicalTransfer& transfer = phase.transfers[t];
    schedule.planned.push_back(schema::PlannedTransfer{transfer.source, transfer.source_address,
                                                       transfer.words, transfer.destinations,
                                                       transfer.provenance});
  }
  schedule.cost = cost_of(schedule);
  schedule.work = times.work;
  if (options.validate) validate_schedule(schedule);
  return schedule;
}

PhaseSchedule place_rows(PhaseSchedule schedule, const ScheduleOptions& options) {
  check_row_addresses(options);
  emit_rows(schedule, options);
  if (options.validate) validate_schedule(schedule);
  return schedule;
}

}  // namespace tessera::compiler::exchange
