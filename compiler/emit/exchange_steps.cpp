// Step 3 of linking: every exchange step's transfers at their addresses →
// the scheduler's rows, once with probe row addresses (for the sizes code
// placement needs) and once where the rows were placed; the report's phases
// and the debug section's planned phases and loops.
#include <exception>

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

exchange::PhaseSchedule Linker::schedule_step(std::size_t i, bool final) {
  const Step& step = program_.steps[i];
  exchange::PhaseTransfers phase;
  phase.transfers.reserve(step.transfers.size());
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
  // the same times wherever the rows go. (Each step's node of schedules_ is
  // only touched by its own step, and no node is added meanwhile.)
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
  }
  return schedule;
}

void Linker::schedule_exchanges(bool final) {
  std::vector<std::size_t> steps;  // the exchange steps, in program order
  for (std::size_t i = 0; i < program_.steps.size(); ++i) {
    if (program_.steps[i].kind == StepKind::kExchange) steps.push_back(i);
  }
  // The largest phases first, so that no thread is left with one at the end
  // while the others idle; each result and error lands in its step's slot.
  std::vector<std::size_t> by_size(steps.size());
  for (std::size_t k = 0; k < steps.size(); ++k) by_size[k] = k;
  std::stable_sort(by_size.begin(), by_size.end(), [&](std::size_t a, std::size_t b) {
    return program_.steps[steps[a]].transfers.size() > program_.steps[steps[b]].transfers.size();
  });
  std::vector<exchange::PhaseSchedule> schedules(steps.size());
  std::vector<std::exception_ptr> failures(steps.size());
  pool_.for_each(steps.size(), [&](std::size_t item) {
    const std::size_t k = by_size[item];
    try {
      schedules[k] = schedule_step(steps[k], final);
    } catch (...) {
      failures[k] = std::current_exception();
    }
  });
  // The first failing phase in program order is the error, as if they had
  // been scheduled one after another.
  for (const std::exception_ptr& failure : failures) {
    if (failure) std::rethrow_exception(failure);
  }

  for (std::size_t k = 0; k < steps.size(); ++k) {
    const std::size_t i = steps[k];
    const Step& step = program_.steps[i];
    exchange::PhaseSchedule& schedule = schedules[k];
    if (final) {
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
