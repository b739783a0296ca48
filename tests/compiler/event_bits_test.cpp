// EventBits / EventBitmaps (exchange/event_bits.hpp) against a plain array of
// booleans: random windows added (from event 0, across word boundaries, long
// ones, before what was forgotten), then every question asked at every event
// of the range — first_outside, first_member, first_gap for several lengths —
// on one set, on one set of several interleaved ones, and on the union of a
// few sets as the element windows read them; and forget_before changes no
// answer at or after its floor.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <random>
#include <vector>

#include "compiler/exchange/event_bits.hpp"

namespace tessera::compiler::exchange {
namespace {

constexpr Event kRange = 1500;  // events the oracle knows; none is added past kRange − 200

// The oracle: which events are in the set.
struct Oracle {
  std::vector<bool> in = std::vector<bool>(kRange + 5000, false);
  void add(Event begin, Event end) {
    for (Event e = std::max<Event>(begin, 0); e < end; ++e) in[static_cast<std::size_t>(e)] = true;
  }
  bool has(Event e) const { return e >= 0 && in[static_cast<std::size_t>(e)]; }
  Event first_outside(Event e) const {
    while (has(e)) ++e;
    return e;
  }
  Event first_member(Event e) const {
    for (; e < static_cast<Event>(in.size()); ++e) {
      if (has(e)) return e;
    }
    return kNoEvent;
  }
  Event first_gap(Event begin, Event length) const {
    for (Event b = begin;; ++b) {
      bool clear = true;
      for (Event e = b; e < b + length && clear; ++e) clear = !has(e);
      if (clear) return b;
    }
  }
};

// A union of sets read word by word, as TileTimeline's element windows read them.
struct Union {
  std::vector<const EventBits*> sets;
  std::uint64_t word(std::int64_t index) const {
    std::uint64_t word = 0;
    for (const EventBits* set : sets) word |= set->word(index);
    return word;
  }
  std::int64_t end_word() const {
    std::int64_t end = 0;
    for (const EventBits* set : sets) end = std::max(end, set->end_word());
    return end;
  }
};

template <class Bits>
void expect_same_answers(const Bits& bits, const Oracle& oracle, Event from, int trial) {
  for (Event e = from; e < kRange; ++e) {
    ASSERT_EQ(first_outside(bits, e), oracle.first_outside(e)) << "trial " << trial << " event " << e;
    ASSERT_EQ(first_member(bits, e), oracle.first_member(e)) << "trial " << trial << " event " << e;
    for (const Event length : {1, 2, 3, 5, 8, 33, 47, 63, 64, 65, 130}) {
      ASSERT_EQ(first_gap(bits, e, length), oracle.first_gap(e, length))
          << "trial " << trial << " event " << e << " length " << length;
    }
  }
}

// Random windows: mostly short (controls, one-word receives), some long
// (4148-word sends cross many words).
std::pair<Event, Event> random_window(std::mt19937& random) {
  const Event begin = static_cast<Event>(random() % (kRange - 200)) - 2;
  const Event length = random() % 8 == 0 ? static_cast<Event>(random() % 300)
                                         : static_cast<Event>(random() % 10);
  return {begin, begin + length};
}

TEST(EventBits, AnswersAsAnArrayOfEventsWould) {
  std::mt19937 random(61);
  for (int trial = 0; trial < 12; ++trial) {
    EventBits bits;
    Oracle oracle;
    const int windows = 1 + static_cast<int>(random() % 120);
    for (int w = 0; w < windows; ++w) {
      const auto [begin, end] = random_window(random);
      bits.add(begin, end);
      oracle.add(begin, end);
    }
    expect_same_answers(bits, oracle, -3, trial);
    // Forgetting changes no answer from the floor on; adding after it (even
    // just before the words it dropped) still does what the oracle does.
    const Event floor = static_cast<Event>(random() % kRange);
    bits.forget_before(floor);
    expect_same_answers(bits, oracle, floor, trial);
    const Event back = std::max<Event>(0, floor - 70);
    bits.add(back, back + 3);
    oracle.add(back, back + 3);
    expect_same_answers(bits, oracle, back, trial);
  }
}

TEST(EventBits, InterleavedSetsAndUnionsAnswerAsTheirOwnArrays) {
  std::mt19937 random(62);
  for (int trial = 0; trial < 6; ++trial) {
    EventBitmaps<6> maps;
    std::array<EventBits, 3> sets;
    std::array<Oracle, 6> map_oracles;
    std::array<Oracle, 3> set_oracles;
    Oracle all;  // the union of the three sets
    for (int w = 0; w < 200; ++w) {
      const auto [begin, end] = random_window(random);
      const auto which = static_cast<std::size_t>(random() % 6);
      maps.add(which, begin, end);
      map_oracles[which].add(begin, end);
      if (which < 3) {
        sets[which].add(begin, end);
        set_oracles[which].add(begin, end);
        all.add(begin, end);
      }
    }
    for (std::size_t set = 0; set < 6; ++set) {
      expect_same_answers(maps[set], map_oracles[set], 0, trial);
    }
    expect_same_answers(Union{{&sets[0], &sets[1], &sets[2]}}, all, 0, trial);
  }
}

}  // namespace
}  // namespace tessera::compiler::exchange
