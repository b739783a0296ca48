// Step 3 of linking: every exchange step's transfers at their addresses →
// the scheduler's rows, once with probe row addresses (for the sizes code
// placement needs) and once where the rows were placed; the report's phases
// and the debug section's planned phases and loops.
#include "compiler/emit/linker.hpp"
#include "support/checked.hpp"
#include "target/exchange_timing.hpp"

namespace tessera::compiler::emit::linking {

// "exchange row (phase 12)": named by the round that first opens its phase.
std::string Linker::row_name(std::size_t step) const {
  const auto round = rounds_.first_round.find(step);
  return round == rounds_.first_round.end() ? fmt::format("exchange row (step {})", step)
                                            : fmt::format("exchange row (phase {})", round->second);
}

namespace {

// A phase's planned transfers as the debug section records them: each cut
// into pieces of at most target::kMaxTransferWords, what one message
// carries (schema's rule for the record). The scheduler cuts a longer
// transfer into messages the same way; the simulator checks the plan word
// by word, so where the cuts fall changes nothing it compares.
std::vector<schema::PlannedTransfer> recorded_transfers(
    const std::vector<schema::PlannedTransfer>& planned) {
  std::vector<schema::PlannedTransfer> recorded;
  recorded.reserve(planned.size());
  for (const schema::PlannedTransfer& transfer : planned) {
    for (std::uint32_t first = 0; first < transfer.words; first += target::kMaxTransferWords) {
      schema::PlannedTransfer piece = transfer;
      piece.words = std::min(transfer.words - first, target::kMaxTransferWords);
      const std::uint32_t bytes = checked_mul(first, std::uint32_t{4}, "planned transfer offset");
      piece.source_address = checked_add(transfer.source_address, bytes, "planned source address");
      for (schema::TransferDestination& destination : piece.destinations) {
        destination.address = checked_add(destination.address, bytes, "planned destination address");
      }
      recorded.push_back(std::move(piece));
    }
  }
  return recorded;
}

}  // namespace

bool Linker::same_transfers(const exchange::PhaseSchedule& schedule,
                            const exchange::PhaseTransfers& phase) {
  if (schedule.planned.size() != phase.transfers.size()) return false;
  for (std::size_t t = 0; t < phase.transfers.size(); ++t) {
    const exchange::LogicalTransfer& transfer = phase.transfers[t];
    const schema::PlannedTransfer& planned = schedule.planned[t];
    if (planned.source_tile != transfer.source ||
        planned.source_address != transfer.source_address || planned.words != transfer.words ||
        planned.destinations != transfer.destinations) {
      return false;
    }
  }
  return true;
}

void Linker::schedule_exchanges(bool final) {
  for (std::size_t i = 0; i < program_.steps.size(); ++i) {
    const Step& step = program_.steps[i];
    if (step.kind != StepKind::kExchange) continue;
    exchange::PhaseTransfers phase;
    for (const auto& transfer : step.transfers) {
      exchange::LogicalTransfer logical;
      logical.source = physical(transfer.source.tile);
      logical.source_address = address(transfer.source);
      logical.words = transfer.words;
      logical.provenance = transfer.provenance;
      for (const auto& destination : transfer.destinations) {
        logical.destinations.push_back({physical(destination.tile), address(destination)});
      }
      phase.transfers.push_back(std::move(logical));
    }
    exchange::ScheduleOptions options;
    options.row_address = kProbeCode;
    options.validate = final && options_.validate_exchange;
    if (final) {
      for (const auto& [tile, code] : code_) {
        const auto row = code.rows.find(i);
        if (row != code.rows.end()) options.row_addresses[tile] = row->second;
      }
    }
    // The final pass places the probe's schedule: the same transfers give
    // the same times wherever the rows go.
    const auto probe = schedules_.find(i);
    const bool same = final && probe != schedules_.end() && same_transfers(probe->second, phase);
    exchange::PhaseSchedule schedule = same
                                           ? exchange::place_rows(std::move(probe->second), options)
                                           : exchange::schedule_phase(phase, options, &phase_memo_);
    if (final) {
      for (const auto& row : schedule.rows) {
        if (code_bytes(row.instructions) != probe_rows_.at({row.tile, i})) {
          throw LinkError(
              fmt::format("internal: the row of {} in exchange step {} changed size "
                          "when placed",
                          row.tile, i));
        }
      }
      const auto round = rounds_.first_round.find(i);
      report_.phases.push_back(LinkReport::Phase{
          round == rounds_.first_round.end() ? std::nullopt : std::optional(round->second),
          step.provenance < program_.provenance.size() ? program_.provenance[step.provenance] : "",
          step.transfers.size(), static_cast<std::uint64_t>(schedule.horizon),
          schedule.cost.lower_bound, schedule.cost.words_sent});
    } else {
      for (const auto& row : schedule.rows)
        probe_rows_[{row.tile, i}] = code_bytes(row.instructions);
    }
    schedules_[i] = std::move(schedule);
  }
  if (final) {
    // Each phase once, at its first round; loops say where they repeat.
    for (const std::size_t step : rounds_.planned_steps) {
      app_.debug.exchange_phases.push_back(schema::ExchangePhase{
          checked_cast<std::uint32_t>(rounds_.first_round.at(step), "phase id"),
          recorded_transfers(schedules_.at(step).planned)});
    }
    app_.debug.phase_loops = rounds_.loops;
    app_.debug.planned_rounds = rounds_.planned_rounds;
  }
}

}  // namespace tessera::compiler::emit::linking
