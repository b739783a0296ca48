#pragma once
// A set of events as a bitmap, one bit per event: the list scheduler's view of
// what one tile already does (its sends, its receive windows, the events where
// a new control may not fall). Adding a window sets its bits; the questions
// the scheduler asks — the first event at or after e outside the set, the
// first window of n events clear of it — are answered a machine word (64
// events) at a time with count-trailing-zeros, so a busy stretch costs one
// step per word, not a search per message that made it. A phase's events
// are bounded by its horizon (every event is a word moved or a control), so
// a tile's bitmap is a few hundred words.
//
// Negative events (none is ever added: sends start at 0 or later and every
// receive control at 1 or later) read as outside the set.
//
// A schedule that sweeps forward in time (the earliest-start one) never asks
// about events before the start it last placed: `forget_before` drops the
// words wholly before that, so memory follows the sweep.

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "target/exchange_timing.hpp"

namespace tessera::compiler::exchange {

using target::Event;

// No event: what first_member answers when the set holds none at or after it.
inline constexpr Event kNoEvent = std::numeric_limits<Event>::max() / 4;

// `Sets` sets of events over one timeline, interleaved: word i (events
// 64·i … 64·i + 63) of every set lies in one block, a cache line when there
// are several sets, so a question that reads several sets near one event
// touches one line.
template <std::size_t Sets>
class EventBitmaps {
  static_assert(Sets >= 1 && Sets <= 8);
  struct alignas(Sets > 1 ? 64 : 8) Block {
    std::array<std::uint64_t, Sets> words{};
  };

 public:
  // Adds [begin, end) to set `set` (nothing when empty).
  void add(std::size_t set, Event begin, Event end) {
    if (begin >= end) return;
    begin = std::max<Event>(begin, 0);
    const std::int64_t first = begin >> 6, last = (end - 1) >> 6;
    reserve(first, last);
    const auto at = [&](std::int64_t word) -> std::uint64_t& {
      return blocks_[static_cast<std::size_t>(word - origin_)].words[set];
    };
    const std::uint64_t head = ~std::uint64_t{0} << (begin & 63);
    const std::uint64_t tail = ~std::uint64_t{0} >> (63 - ((end - 1) & 63));
    if (first == last) {
      at(first) |= head & tail;
      return;
    }
    at(first) |= head;
    for (std::int64_t word = first + 1; word < last; ++word) at(word) = ~std::uint64_t{0};
    at(last) |= tail;
  }

  // Word `index` of set `set` (events 64·index … 64·index + 63).
  std::uint64_t word(std::size_t set, std::int64_t index) const noexcept {
    const std::int64_t offset = index - origin_;
    return offset >= 0 && offset < static_cast<std::int64_t>(blocks_.size())
               ? blocks_[static_cast<std::size_t>(offset)].words[set]
               : 0;
  }
  // One past the last word that can hold an event.
  std::int64_t end_word() const noexcept {
    return origin_ + static_cast<std::int64_t>(blocks_.size());
  }

  // One set, as the questions below read it.
  class Set {
   public:
    Set(const EventBitmaps& maps, std::size_t set) : maps_(&maps), set_(set) {}
    std::uint64_t word(std::int64_t index) const noexcept { return maps_->word(set_, index); }
    std::int64_t end_word() const noexcept { return maps_->end_word(); }

   private:
    const EventBitmaps* maps_;
    std::size_t set_;
  };
  Set operator[](std::size_t set) const { return Set(*this, set); }

  // No question will be asked about events before `floor` again: the words
  // wholly before it go (amortised: erased once they are the larger part).
  void forget_before(Event floor) {
    const std::int64_t dead = (floor >> 6) - origin_;
    const auto size = static_cast<std::int64_t>(blocks_.size());
    if (dead >= 64 && 2 * dead >= size) {
      blocks_.erase(blocks_.begin(),
                    blocks_.begin() + static_cast<std::ptrdiff_t>(std::min(dead, size)));
      origin_ += dead;
    }
  }

 private:
  // Words first … last exist.
  void reserve(std::int64_t first, std::int64_t last) {
    if (blocks_.empty()) {
      origin_ = first;
      blocks_.resize(static_cast<std::size_t>(last - first + 1));
      return;
    }
    if (first < origin_) {  // before what was forgotten: rare, a control's event − 1
      blocks_.insert(blocks_.begin(), static_cast<std::size_t>(origin_ - first), Block{});
      origin_ = first;
    }
    if (last >= end_word()) blocks_.resize(static_cast<std::size_t>(last - origin_ + 1));
  }

  std::vector<Block> blocks_;
  std::int64_t origin_ = 0;  // the word index of blocks_[0]
};

// One set of events on its own.
class EventBits {
 public:
  void add(Event begin, Event end) { bits_.add(0, begin, end); }
  std::uint64_t word(std::int64_t index) const noexcept { return bits_.word(0, index); }
  std::int64_t end_word() const noexcept { return bits_.end_word(); }
  void forget_before(Event floor) { bits_.forget_before(floor); }

 private:
  EventBitmaps<1> bits_;
};

// The questions, over any bitmap that gives words by index (one EventBits,
// or the union of several): `Words` has word(index) and end_word().

// The first event ≥ `event` outside the set.
template <class Words>
Event first_outside(const Words& bits, Event event) {
  std::int64_t index = event >> 6;
  std::uint64_t clear = ~bits.word(index) & (~std::uint64_t{0} << (event & 63));
  while (clear == 0) clear = ~bits.word(++index);
  return index * 64 + std::countr_zero(clear);
}

// The first event ≥ `event` in the set; kNoEvent when there is none.
template <class Words>
Event first_member(const Words& bits, Event event) {
  std::int64_t index = event >> 6;
  const std::int64_t end = bits.end_word();
  if (index >= end) return kNoEvent;
  std::uint64_t set = bits.word(index) & (~std::uint64_t{0} << (event & 63));
  while (set == 0) {
    if (++index >= end) return kNoEvent;
    set = bits.word(index);
  }
  return index * 64 + std::countr_zero(set);
}

// The members among the 64 events from `event`: bit j is event + j.
template <class Words>
std::uint64_t members_from(const Words& bits, Event event) {
  const std::int64_t index = event >> 6;
  const auto shift = static_cast<unsigned>(event & 63);
  const std::uint64_t low = bits.word(index);
  return shift == 0 ? low : (low >> shift) | (bits.word(index + 1) << (64 - shift));
}

// The 64 windows from `event`: bit j says [event + j, event + j + length)
// holds a member (1 ≤ length ≤ 64). The members of 128 events, ORed with
// themselves shifted, each step doubling the window a bit stands for — the
// complement of first_gap's search below, for a caller that combines it
// with other sets' answers in one word.
template <class Words>
std::uint64_t members_within(const Words& bits, Event event, Event length) {
  std::uint64_t low = members_from(bits, event);
  if (length == 1) return low;
  std::uint64_t high = members_from(bits, event + 64);
  for (Event covered = 1; covered < length;) {
    const auto shift = static_cast<unsigned>(std::min(covered, length - covered));
    low |= (low >> shift) | (high << (64 - shift));
    high |= high >> shift;
    covered += shift;
  }
  return low;
}

// The union of a few sets, read word by word (a tile's memory elements'
// windows, for a message that touches several).
class EventBitsUnion {
 public:
  void add(const EventBits& bits) {
    bits_[count_++] = &bits;
    end_ = std::max(end_, bits.end_word());
  }
  std::size_t size() const noexcept { return count_; }
  const EventBits& only() const noexcept { return *bits_[0]; }
  std::uint64_t word(std::int64_t index) const noexcept {
    std::uint64_t word = 0;
    for (std::size_t i = 0; i < count_; ++i) word |= bits_[i]->word(index);
    return word;
  }
  std::int64_t end_word() const noexcept { return end_; }

 private:
  std::array<const EventBits*, 32> bits_;  // an ElementSet has at most 32 elements; [0, count_) set
  std::size_t count_ = 0;
  std::int64_t end_ = std::numeric_limits<std::int64_t>::min();
};

// The first b ≥ `begin` such that [b, b + length) meets no event of the set.
// A window of up to 64 events is looked for a word at a time: the clear
// events of a word and the next, shifted and ANDed with themselves, mark
// every start in the word whose window is clear (a tile's many short gaps
// cost one step per word, not one per gap); a longer one walks from gap to
// gap.
template <class Words>
Event first_gap(const Words& bits, Event begin, Event length) {
  if (length <= 64) {
    std::int64_t index = begin >> 6;
    std::uint64_t from = ~std::uint64_t{0} << (begin & 63);  // starts ≥ begin in the first word
    std::uint64_t next = bits.word(index);
    for (;; ++index, from = ~std::uint64_t{0}) {
      const std::uint64_t word = next;
      next = bits.word(index + 1);
      if (word == ~std::uint64_t{0}) continue;
      // (low, high): the clear events of this word and the next. After the
      // loop bit p of `low` says events 64·index + p … + length − 1 are
      // clear (each step doubles the window a bit stands for, at most 32).
      std::uint64_t low = ~word, high = ~next;
      for (Event covered = 1; covered < length;) {
        const auto shift = static_cast<unsigned>(std::min(covered, length - covered));
        low &= (low >> shift) | (high << (64 - shift));
        high &= high >> shift;
        covered += shift;
      }
      const std::uint64_t starts = low & from;
      if (starts != 0) return index * 64 + std::countr_zero(starts);
    }
  }
  for (;;) {
    begin = first_outside(bits, begin);
    const Event next = first_member(bits, begin);
    if (next - begin >= length) return begin;
    begin = next;
  }
}

}  // namespace tessera::compiler::exchange
