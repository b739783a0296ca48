// Host I/O lowering: slots, batches, slices and each tile's step, checked
// against the protocol's rules; a property over random transfer sets. The
// end-to-end check (programs run on the simulator through runtime::Session)
// is tests/runtime/session_test.cpp, whose ring package is lowered here.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <map>
#include <set>

#include "compiler/host_io.hpp"
#include "schema/host_layout.hpp"
#include "target/memory_map.hpp"

namespace tessera::compiler {
namespace {

using target::PhysicalTile;

PhysicalTile p(std::uint16_t id) { return PhysicalTile(id); }

HostCallRequest call_of(std::vector<HostTransfer> inputs, std::vector<HostTransfer> outputs) {
  return HostCallRequest{"run", 0, {"x"}, {"y"}, std::move(inputs), std::move(outputs)};
}

TEST(HostIo, SlotsBatchesAndPhases) {
  // p260 moves 10 KiB in (three pieces), p5 4 KiB; both 4 KiB out.
  const std::vector<PhysicalTile> tiles{p(4), p(5), p(260)};
  const auto plan = plan_host_io(
      std::vector{call_of({{p(260), 0x60000, 0, 10240}, {p(5), 0x60000, 10240, 4096}},
                          {{p(5), 0x70000, 0, 4096}, {p(260), 0x70000, 4096, 4096}})},
      tiles);
  ASSERT_EQ(plan.exchange.pages.size(), 2u);
  EXPECT_EQ(plan.exchange.pages[1].size, 2u * 4096) << "two tiles take part: two slots";
  const schema::HostCall& call = plan.exchange.calls.at(0);
  EXPECT_EQ(call.input_batch_ends, (std::vector<std::uint32_t>{2, 3, 4}));
  EXPECT_EQ(call.output_batch_ends, (std::vector<std::uint32_t>{2}));
  EXPECT_EQ(call.phases, 2u * 4 - 1);
  // Batch 0: p5 (slot 0) then p260 (slot 1), in ascending tile order.
  EXPECT_EQ(call.inputs[0], (schema::HostSlice{1, 0, 10240, 4096}));
  EXPECT_EQ(call.inputs[1], (schema::HostSlice{1, 4096, 0, 4096}));
  EXPECT_EQ(call.inputs[3], (schema::HostSlice{1, 4096, 8192, 2048}));
  ASSERT_EQ(plan.batches.size(), 4u);
  const HostBatch& first = plan.batches[0];
  EXPECT_TRUE(first.input);
  // p4 owns p260's request; p5 owns its own (5 & 0x3d == 5).
  ASSERT_TRUE(first.step(p(4)).requests().has_value());
  EXPECT_EQ(first.step(p(4)).requests()->targets(), (std::vector<PhysicalTile>{p(260)}));
  EXPECT_FALSE(first.step(p(4)).h2d().has_value());
  ASSERT_TRUE(first.step(p(5)).requests().has_value());
  EXPECT_TRUE(first.step(p(5)).h2d().has_value());
  // 0x60000 is outside the packet window: staged, then copied.
  const auto& h2d = *first.step(p(260)).h2d();
  EXPECT_EQ(h2d.tile_address, target::kH2dStaging);
  EXPECT_EQ(h2d.host_offset, schema::host_page_base(plan.exchange, 1) + 4096);
  EXPECT_EQ(first.step(p(260)).copies_after(),
            (std::vector<StagingCopy>{{0x60000, target::kH2dStaging, 1024}}));
  EXPECT_TRUE(first.step(p(260)).copies_before().empty());
  // Batch 2 moves only p260's last piece: p5 is inactive, its owner (itself) too.
  EXPECT_FALSE(plan.batches[2].step(p(5)).active());
  EXPECT_TRUE(plan.batches[2].step(p(4)).active());
  EXPECT_EQ(plan.batches[3].step(p(260)).d2h()->tile_address, 0x70000u);
}

TEST(HostIo, AnAlignedWindowDestinationLandsDirectly) {
  const std::vector<PhysicalTile> tiles{p(0)};
  const auto plan =
      plan_host_io(std::vector{call_of({{p(0), 0x52000, 0, 256}}, {})}, tiles);
  const auto& step = plan.batches.at(0).step(p(0));
  EXPECT_EQ(step.h2d()->tile_address, 0x52000u);
  EXPECT_TRUE(step.copies_after().empty());
}

// Issue 15 item 16: every small binding on a tile got a batch of its own
// (1000 scalars: "cannot place 'host batch 1861'"). Now a tile's pieces fill
// its slot: small pieces share one batch, contiguous ones move as one run,
// scattered ones go through the staging buffer with a copy each.
TEST(HostIo, SmallPiecesOfOneTileShareABatch) {
  const std::vector<PhysicalTile> tiles{p(0)};
  std::vector<HostTransfer> inputs, outputs;
  for (std::uint32_t i = 0; i < 1000; ++i) {
    inputs.push_back({p(0), 0x80000 + 8 * i, 4 * i, 4});  // 8-aligned allocations: not contiguous
    outputs.push_back({p(0), 0x90000 + 8 * i, 4 * i, 4});
  }
  const auto plan = plan_host_io(std::vector{call_of(inputs, outputs)}, tiles);
  const schema::HostCall& call = plan.exchange.calls.at(0);
  EXPECT_EQ(call.input_batch_ends, (std::vector<std::uint32_t>{1000}));
  EXPECT_EQ(call.output_batch_ends, (std::vector<std::uint32_t>{1000}));
  EXPECT_EQ(call.phases, 3u);
  EXPECT_EQ(call.inputs[999], (schema::HostSlice{1, 3996, 3996, 4}));
  ASSERT_EQ(plan.batches.size(), 2u);
  const TileHostStep& in = plan.batches[0].step(p(0));
  EXPECT_EQ(in.h2d()->tile_address, target::kH2dStaging);
  EXPECT_EQ(in.h2d()->size, 4000u);
  ASSERT_EQ(in.copies_after().size(), 1000u);
  EXPECT_EQ(in.copies_after()[7], (StagingCopy{0x80038, target::kH2dStaging + 28, 1}));
  const TileHostStep& out = plan.batches[1].step(p(0));
  EXPECT_EQ(out.d2h()->tile_address, target::kH2dStaging);
  EXPECT_EQ(out.d2h()->size, 4000u);
  ASSERT_EQ(out.copies_before().size(), 1000u);
  EXPECT_EQ(out.copies_before()[7], (StagingCopy{target::kH2dStaging + 28, 0x90038, 1}));
  EXPECT_TRUE(out.copies_after().empty());
}

TEST(HostIo, PiecesContiguousOnTheTileMoveAsOneRun) {
  const std::vector<PhysicalTile> tiles{p(0)};
  // Two bindings back to back in the window, then one elsewhere that fills the slot.
  const auto plan = plan_host_io(
      std::vector{
          call_of({{p(0), 0x52000, 0, 64}, {p(0), 0x52040, 64, 64}, {p(0), 0x60000, 128, 4000}},
                  {{p(0), 0x61000, 0, 64}, {p(0), 0x61040, 64, 64}})},
      tiles);
  ASSERT_EQ(plan.batches.size(), 3u);
  const TileHostStep& first = plan.batches[0].step(p(0));
  EXPECT_EQ(first.h2d()->tile_address, 0x52000u) << "one run inside the window lands directly";
  EXPECT_EQ(first.h2d()->size, 128u);
  EXPECT_TRUE(first.copies_after().empty());
  EXPECT_EQ(plan.batches[1].step(p(0)).copies_after().size(), 1u);
  const TileHostStep& out = plan.batches[2].step(p(0));
  EXPECT_EQ(out.d2h()->tile_address, 0x61000u) << "one run is sent from where it is";
  EXPECT_EQ(out.d2h()->size, 128u);
  EXPECT_TRUE(out.copies_before().empty());
}

TEST(HostIo, ProgramsDoNotChangeSizeWithTheirPacketAddress) {
  const std::vector<PhysicalTile> tiles{p(0), p(2), p(64)};
  const auto plan = plan_host_io(
      std::vector{call_of({{p(2), 0x60000, 0, 4096}, {p(64), 0x60000, 4096, 100}},
                          {{p(0), 0x61000, 0, 1000}})},
      tiles);
  for (const auto& batch : plan.batches) {
    for (const PhysicalTile tile : tiles) {
      const TileHostStep& step = batch.step(tile);
      const auto low = step.program(0x5C000);
      const auto high = step.program(0x7F000);
      EXPECT_EQ(low.instructions.size(), high.instructions.size()) << tile;
      EXPECT_EQ(low.encode().size(), high.encode().size());
      if (step.active()) {
        EXPECT_GT(step.packet_bytes(), 0u);
      }
    }
  }
}

TEST(HostIo, BadRequestsNameTheCallAndTransfer) {
  const std::vector<PhysicalTile> tiles{p(4), p(260)};
  auto expect_error = [&](HostCallRequest request, const std::string& fragment) {
    try {
      plan_host_io(std::vector{request}, tiles);
      FAIL() << "accepted: " << fragment;
    } catch (const HostIoError& error) {
      EXPECT_NE(std::string(error.what()).find(fragment), std::string::npos) << error.what();
    }
  };
  expect_error(call_of({{p(7), 0x60000, 0, 64}}, {}), "host call 'run' inputs[0]: p7 is not a tile");
  expect_error(call_of({{p(70), 0x60000, 0, 64}}, {}), "p70 is not a tile");
  expect_error(call_of({}, {{p(260), 0x60000, 0, 6}}), "outputs[0]: size 6");
  expect_error(call_of({{p(260), 0xE7FF0, 0, 64}}, {}), "not word-aligned tile SRAM");
  // An owner outside the package cannot request service.
  const std::vector<PhysicalTile> alone{p(260)};
  try {
    plan_host_io(std::vector{call_of({{p(260), 0x60000, 0, 64}}, {})}, alone);
    FAIL();
  } catch (const HostIoError& error) {
    EXPECT_NE(std::string(error.what()).find("XREQ owner p4"), std::string::npos) << error.what();
  }
}

// Random transfers over random tiles (with their owners): slices cover each
// transfer's payload bytes exactly once; a batch moves at most one 4 KiB
// slot of pieces per tile, in that tile's slot; every target's owner
// requests it.
RC_GTEST_PROP(HostIo, SlicesPartitionThePayloadAndBatchesRespectTheRules, ()) {
  const auto count = *rc::gen::inRange<std::size_t>(1, 12);
  std::set<PhysicalTile> package;
  std::vector<HostTransfer> inputs;
  std::uint64_t payload = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const PhysicalTile tile(*rc::gen::inRange<std::uint16_t>(0, 1472));
    const std::uint32_t words = *rc::gen::inRange<std::uint32_t>(1, 3000);
    inputs.push_back({tile, 0x60000 + 4 * *rc::gen::inRange<std::uint32_t>(0, 1000), payload, 4 * words});
    payload += 4 * words;
    package.insert(tile);
    package.insert(target::xreq_owner(tile));
  }
  const std::vector<PhysicalTile> tiles(package.begin(), package.end());
  const auto plan = plan_host_io(std::vector{call_of(inputs, {})}, tiles);
  const schema::HostCall& call = plan.exchange.calls.at(0);
  std::vector<int> covered(payload, 0);
  for (const auto& slice : call.inputs) {
    RC_ASSERT(slice.size <= 4096u);
    RC_ASSERT(slice.page_offset % 4096 + slice.size <= 4096u);  // inside one tile's slot
    for (std::uint64_t b = 0; b < slice.size; ++b) ++covered[slice.file_offset + b];
  }
  RC_ASSERT(std::all_of(covered.begin(), covered.end(), [](int n) { return n == 1; }));
  RC_ASSERT(call.phases == 2 * call.input_batch_ends.size() - 1);
  for (const auto& batch : plan.batches) {
    std::set<std::uint64_t> slots;
    for (const auto& [tile, step] : batch.steps) {
      if (const auto& h2d = step.h2d()) {
        RC_ASSERT(slots.insert(h2d->host_offset).second);  // one slot per tile
        const auto& owner = batch.step(target::xreq_owner(tile)).requests();
        RC_ASSERT(owner.has_value());
        RC_ASSERT(owner->contains(tile));
      }
    }
  }
}

}  // namespace
}  // namespace tessera::compiler
