// Exchange rows as a tile executes them: what may stand inside a row, where
// its instructions must sit, which memory its code (closing `br` included)
// occupies, and that a row may not return before the words it receives have
// landed.
#include <gtest/gtest.h>

#include "sim/chip.hpp"
#include "target/host_exchange.hpp"
#include "tests/sim/phase.hpp"
#include "tests/sim/program.hpp"
#include "tests/sim/rows.hpp"

namespace tessera::sim {
namespace {

using namespace testing;
using target::Event;
using target::PhysicalTile;
using Kind = RowAction::Kind;

PhysicalTile p(std::uint16_t id) { return PhysicalTile(id); }

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(ExchangeRow, AStoreInsideARowIsRefused) {
  // The row sends four words, then stores over the first of them before it
  // returns. Sends read their words at their send events, so the store must
  // not change what arrives; the simulator does not replay non-exchange
  // instructions on the event clock and refuses them inside a row, as
  // target::row_timeline does for the compiler.
  Phase phase({p(0), p(53)});
  const Event start = target::earliest_send_start(p(0), p(53));
  const auto timing = target::word32_transfer(p(0), p(53), start, 4);
  const std::vector<isa::Instruction> row{
      isa::Setzi{Reg::m1, kSource},  // before the row begins: allowed
      isa::Setzi{Reg::m2, 0xBAD},
      isa::Delay{static_cast<std::uint32_t>(start)},
      isa::Send{4, kSource / 4, static_cast<std::uint32_t>(target::direction(p(0), p(53)))},
      isa::St32{Reg::m2, Reg::m1, Reg::m15, 0},
      isa::Br{Reg::m10}};
  phase.row(p(0), row);
  phase.row(p(53), build_row(receive_actions(timing, 0, kDestination / 4), timing.horizon, kRow));
  phase.source(p(0), 4);
  phase.guarded_destination(p(53), kDestination, 4);
  ASSERT_EQ(phase.run().reason, StopReason::kFault);
  const Fault& fault = phase.chip().faults().all().at(0);
  EXPECT_EQ(fault.kind, FaultKind::kExchangeTiming);
  EXPECT_EQ(fault.tile, p(0));
  EXPECT_EQ(fault.pc, kRow + 16) << "the st32";
  EXPECT_TRUE(
      contains(fault.message, "'st32 $m2, $m1, $m15, 0' is not an exchange-row instruction"))
      << fault.message;
}

}  // namespace
}  // namespace tessera::sim
