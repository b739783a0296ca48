// TileTimeline (exchange/tile_timeline.hpp): the list scheduler asks a
// message's tiles for a start in any order, round and round, and keeps a
// tile's answer while its version stands (list_scheduler.cpp,
// earliest_start). That gives the schedule it would give asking every tile
// every round only if each answer is the least start ≥ the one asked that
// the tile allows. Checked here by brute force on random timelines: every
// start from the one asked up to the answer gets that same answer (so none
// before it is allowed, and the answer itself is), answers grow with the
// start asked, and forget_before changes neither an answer at or after the
// floor nor the version, which only sends and receives move.

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "compiler/exchange/tile_timeline.hpp"
#include "target/exchange_timing.hpp"
#include "target/memory_map.hpp"
#include "target/topology.hpp"

namespace tessera::compiler::exchange {
namespace {

using target::Event;
using target::PhysicalTile;

// The receive shape of `words` words from `source` to `destination`, as the
// list scheduler makes it, landing at `address`.
ReceiveShape receive_shape(PhysicalTile source, PhysicalTile destination, std::uint32_t words,
                           std::uint32_t address) {
  const Event start = target::earliest_send_start(source, destination);
  const auto t = target::word32_transfer(source, destination, start, words);
  return {t.source_select - start, t.pointer - start, t.teardown - start, t.horizon - start,
          target::elements_of({address, address + 4 * words})};
}

TEST(TileTimeline, AnswersAreTheLeastAllowedStartAndKeptWhileTheVersionStands) {
  std::mt19937 random(18);
  const PhysicalTile self(5);
  for (int trial = 0; trial < 40; ++trial) {
    TileTimeline timeline;
    std::uint64_t version = timeline.version();
    Event at = 100;
    for (int k = 0; k < 12; ++k) {
      const auto words = static_cast<std::uint32_t>(1 + random() % 8);
      const auto address = static_cast<std::uint32_t>(0x50000 + 0x4000 * (random() % 6));
      at += static_cast<Event>(random() % 12);
      if (random() % 2 == 0) {
        const target::ElementSet elements = target::elements_of({address, address + 4 * words});
        at = timeline.first_send_start(at, words, elements);
        timeline.add_send(at, words, elements);
      } else {
        const PhysicalTile other(static_cast<std::uint16_t>(random() % 1472));
        if (other == self) continue;
        const ReceiveShape shape = receive_shape(other, self, words, address);
        at = timeline.first_receive_start(at, shape);
        timeline.add_receive(at, shape);
      }
      EXPECT_EQ(timeline.version(), ++version);
    }
    const auto words = static_cast<std::uint32_t>(1 + random() % 4);
    const auto address = static_cast<std::uint32_t>(0x50000 + 0x4000 * (random() % 6));
    const ReceiveShape shape =
        receive_shape(PhysicalTile(static_cast<std::uint16_t>(600 + trial)), self, words, address);
    const target::ElementSet read = target::elements_of({address, address + 4 * words});
    std::vector<Event> sends, receives;
    for (Event s = 90; s < at + 40; ++s) {
      sends.push_back(timeline.first_send_start(s, words, read));
      receives.push_back(timeline.first_receive_start(s, shape));
    }
    for (std::size_t i = 0; i < sends.size(); ++i) {
      const Event s = 90 + static_cast<Event>(i);
      ASSERT_GE(sends[i], s);
      ASSERT_GE(receives[i], s);
      for (Event x = s; x <= sends[i] && x < at + 40; ++x) {
        ASSERT_EQ(sends[static_cast<std::size_t>(x - 90)], sends[i]) << "send asked at " << s << ", " << x;
      }
      for (Event x = s; x <= receives[i] && x < at + 40; ++x) {
        ASSERT_EQ(receives[static_cast<std::size_t>(x - 90)], receives[i]) << "receive asked at " << s << ", " << x;
      }
    }
    // Forgetting the past changes no answer from the floor on, nor the version.
    const Event floor = 90 + static_cast<Event>(random() % static_cast<std::uint32_t>(at - 90));
    // The scheduler's margin: a receive's select can come before its start.
    timeline.forget_before(floor - std::max<Event>(0, -shape.select));
    EXPECT_EQ(timeline.version(), version);
    for (Event s = floor; s < at + 40; ++s) {
      EXPECT_EQ(timeline.first_send_start(s, words, read), sends[static_cast<std::size_t>(s - 90)]);
      EXPECT_EQ(timeline.first_receive_start(s, shape), receives[static_cast<std::size_t>(s - 90)]);
    }
  }
}

// The scheduler asks a tile to forget before every search, at a floor that
// creeps forward, and adds messages between (forget_before skips floors
// that moved less than its stride). A timeline that forgets so and one that
// never forgets answer every question at or after the floor alike.
TEST(TileTimeline, ForgettingAtEverySearchChangesNoAnswer) {
  std::mt19937 random(19);
  const PhysicalTile self(7);
  for (int trial = 0; trial < 20; ++trial) {
    TileTimeline forgetting, keeping;
    Event at = 200;
    for (int k = 0; k < 300; ++k) {
      const auto words = static_cast<std::uint32_t>(1 + random() % 8);
      const auto address = static_cast<std::uint32_t>(0x50000 + 0x4000 * (random() % 6));
      at += static_cast<Event>(random() % 6);
      const PhysicalTile other(static_cast<std::uint16_t>(random() % 1472));
      if (other == self) continue;
      const ReceiveShape shape = receive_shape(other, self, words, address);
      const target::ElementSet elements = target::elements_of({address, address + 4 * words});
      // The sweep's floor is `at`; a receive's select can lie before it, by
      // at most the scheduler's reach back over all its messages.
      constexpr Event kReachBack = 100;
      ASSERT_LE(-shape.select, kReachBack);
      forgetting.forget_before(at - kReachBack);
      if (random() % 2 == 0) {
        const Event start = keeping.first_send_start(at, words, elements);
        ASSERT_EQ(forgetting.first_send_start(at, words, elements), start) << "step " << k;
        keeping.add_send(start, words, elements);
        forgetting.add_send(start, words, elements);
      } else {
        const Event start = keeping.first_receive_start(at, shape);
        ASSERT_EQ(forgetting.first_receive_start(at, shape), start) << "step " << k;
        keeping.add_receive(start, shape);
        forgetting.add_receive(start, shape);
      }
    }
  }
}

// The rules themselves (tile_timeline.hpp), checked start by start against
// the sends and receives a timeline was given: an oracle written from the
// rules, not from the bitmaps. Messages of 1 to 100 words, so both the
// one-word answers (windows of at most 64 events) and the stepwise ones are
// checked.
struct PlacedSend {
  Event start, words;
  target::ElementSet elements;
};
struct PlacedReceive {
  Event start;
  ReceiveShape shape;
};

bool overlaps(Event a, Event a_end, Event b, Event b_end) { return a < b_end && b < a_end; }

bool send_allowed(const std::vector<PlacedSend>& sends, const std::vector<PlacedReceive>& receives,
                  Event s, Event words, target::ElementSet elements) {
  for (const PlacedSend& send : sends) {
    if (overlaps(s, s + words, send.start, send.start + send.words)) return false;  // rule 1
  }
  for (const PlacedReceive& receive : receives) {
    const ReceiveShape& r = receive.shape;
    for (const Event control : {receive.start + r.select, receive.start + r.pointer,
                                receive.start + r.teardown}) {
      if (control == s || control == s + 1) return false;  // rule 2
    }
    if (elements.intersects(r.elements) &&
        overlaps(s, s + words, receive.start + r.pointer, receive.start + r.horizon)) {
      return false;  // §2.2
    }
  }
  return true;
}

bool receive_allowed(const std::vector<PlacedSend>& sends,
                     const std::vector<PlacedReceive>& receives, Event s, const ReceiveShape& r) {
  const Event select = s + r.select, pointer = s + r.pointer, teardown = s + r.teardown;
  for (const PlacedSend& send : sends) {
    for (const Event control : {select, pointer, teardown}) {
      if (control == send.start || control == send.start + 1) return false;  // rule 2
    }
    if (r.elements.intersects(send.elements) &&
        overlaps(pointer, s + r.horizon, send.start, send.start + send.words)) {
      return false;  // §2.2
    }
  }
  for (const PlacedReceive& receive : receives) {
    const Event other_select = receive.start + receive.shape.select,
                other_pointer = receive.start + receive.shape.pointer,
                other_teardown = receive.start + receive.shape.teardown;
    if (overlaps(select, teardown, other_select, other_teardown)) return false;  // rule 3
    // Rule 4: a select meets no select or pointer, a pointer no control, a
    // teardown no pointer or teardown (a teardown and a select may meet).
    if (select == other_select || select == other_pointer) return false;
    if (pointer == other_select || pointer == other_pointer || pointer == other_teardown) {
      return false;
    }
    if (teardown == other_pointer || teardown == other_teardown) return false;
  }
  return true;
}

TEST(TileTimeline, AnswersAreTheFirstStartsTheRulesAllow) {
  std::mt19937 random(20);
  const PhysicalTile self(9);
  for (int trial = 0; trial < 60; ++trial) {
    TileTimeline timeline;
    std::vector<PlacedSend> sends;
    std::vector<PlacedReceive> receives;
    const auto random_words = [&] {
      return static_cast<std::uint32_t>(random() % 4 == 0 ? 1 + random() % 100 : 1 + random() % 12);
    };
    const auto random_address = [&] {
      return static_cast<std::uint32_t>(0x50000 + 0x4000 * (random() % 6));
    };
    // From 100 on, past every pair's earliest send start, as the scheduler
    // asks (no control falls before event 1).
    Event at = 100;
    for (int k = 0; k < 25; ++k) {
      const std::uint32_t words = random_words();
      const std::uint32_t address = random_address();
      at += static_cast<Event>(random() % 30);
      if (random() % 2 == 0) {
        const target::ElementSet elements = target::elements_of({address, address + 4 * words});
        const Event start = timeline.first_send_start(at, words, elements);
        timeline.add_send(start, words, elements);
        sends.push_back({start, words, elements});
      } else {
        const PhysicalTile other(static_cast<std::uint16_t>(random() % 1472));
        if (other == self) continue;
        const ReceiveShape shape = receive_shape(other, self, words, address);
        const Event start = timeline.first_receive_start(at, shape);
        timeline.add_receive(start, shape);
        receives.push_back({start, shape});
      }
    }
    for (int question = 0; question < 40; ++question) {
      const std::uint32_t words = random_words();
      const std::uint32_t address = random_address();
      const Event asked = 100 + static_cast<Event>(random() % static_cast<std::uint32_t>(at - 50));
      const target::ElementSet read = target::elements_of({address, address + 4 * words});
      Event expected = asked;
      while (!send_allowed(sends, receives, expected, words, read)) ++expected;
      ASSERT_EQ(timeline.first_send_start(asked, words, read), expected)
          << "trial " << trial << ": a send of " << words << " words asked at " << asked;
      const PhysicalTile other(static_cast<std::uint16_t>(random() % 1472));
      if (other == self) continue;
      const ReceiveShape shape = receive_shape(other, self, words, address);
      expected = asked;
      while (!receive_allowed(sends, receives, expected, shape)) ++expected;
      ASSERT_EQ(timeline.first_receive_start(asked, shape), expected)
          << "trial " << trial << ": a receive of " << words << " words asked at " << asked;
    }
  }
}

}  // namespace
}  // namespace tessera::compiler::exchange
