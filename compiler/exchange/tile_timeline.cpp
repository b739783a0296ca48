#include "compiler/exchange/tile_timeline.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <limits>

namespace tessera::compiler::exchange {


void TileTimeline::ElementWindows::add(target::ElementSet elements, Event begin, Event end) {
  for (std::uint32_t mask = elements.mask(); mask != 0; mask &= mask - 1) {
    const auto element = static_cast<unsigned>(std::countr_zero(mask));
    auto it = std::partition_point(windows_.begin(), windows_.end(),
                                   [&](const auto& entry) { return entry.first < element; });
    if (it == windows_.end() || it->first != element) {
      it = windows_.insert(it, {element, EventBits{}});
      present_ |= std::uint32_t{1} << element;
    }
    it->second.add(begin, end);
  }
}

Event TileTimeline::ElementWindows::first_gap(target::ElementSet elements, Event begin,
                                              Event length) const {
  if ((elements.mask() & present_) == 0) return begin;
  EventBitsUnion windows;
  collect(elements, windows);
  if (windows.size() == 1) return exchange::first_gap(windows.only(), begin, length);
  return exchange::first_gap(windows, begin, length);
}

void TileTimeline::ElementWindows::collect(target::ElementSet elements,
                                           EventBitsUnion& windows) const {
  const std::uint32_t mask = elements.mask() & present_;
  if (mask == 0) return;
  for (const auto& [element, bits] : windows_) {
    if ((mask >> element) & 1u) windows.add(bits);
  }
}

void TileTimeline::ElementWindows::forget_before(Event floor) {
  for (auto& [element, bits] : windows_) bits.forget_before(floor);
}

void TileTimeline::forget_before(Event floor) {
  // The caller's floor is below every event a later question looks at: a
  // receive's select can come before its send start (ttm < 0), and the
  // caller allows for that. The searches ask every tile of a message to
  // forget before each search, mostly at a floor it has passed or nearly
  // passed: forgetting only once the floor has moved kForgetStride events
  // on costs one comparison most times, not a pass over the ten run sets.
  // No answer depends on it (a run that ends before a question's event is
  // skipped by every search), only how many dead runs a search steps over.
  if (floor < forgotten_ + kForgetStride) return;
  forgotten_ = floor;
  rules_.forget_before(floor);
  reads_.forget_before(floor);
  writes_.forget_before(floor);
}

// Each check moves a refused start to the first one that clears its conflict,
// skipping only starts that conflict too; the first start every check
// accepts is the answer.
Event TileTimeline::first_send_start(Event start, Event words, target::ElementSet elements) const {
  if (words >= 1 && words <= 64) {
    // As first_receive_start: the rules' refusals of 64 starts at a time.
    EventBitsUnion writes;
    writes_.collect(elements, writes);
    for (Event base = start;; base += 64) {
      std::uint64_t refused = members_within(rules_[kSends], base, words) |
                              members_from(rules_[kSendStartBlocked], base);
      if (writes.size() != 0) refused |= members_within(writes, base, words);
      if (refused != ~std::uint64_t{0}) return base + std::countr_zero(~refused);
    }
  }
  for (;;) {
    const Event before = start;
    start = first_gap(rules_[kSends], start, words);               // rule 1
    start = first_outside(rules_[kSendStartBlocked], start);       // rule 2
    start = writes_.first_gap(elements, start, words);     // §2.2 rule 3
    if (start == before) return start;
  }
}

Event TileTimeline::first_receive_start(Event start, const ReceiveShape& r) const {
  const Event words = r.teardown - r.select;
  const Event reach = r.horizon - r.pointer;  // the write window's length
  if (words >= 1 && words <= 64 && reach >= 1 && reach <= 64) {
    // Short windows (most messages): every rule's refusals of the 64 starts
    // from `base` in one word each — the rule-4 sets read at the control's
    // offset, rule 3's and §2.2's as windows (members_within) — so the least
    // start they all allow is the first clear bit of their union: the
    // answer of the loop below, found without going round it.
    EventBitsUnion reads;
    reads_.collect(r.elements, reads);
    for (Event base = start;; base += 64) {
      std::uint64_t refused = members_within(rules_[kSources], base + r.select, words) |
                              members_from(rules_[kSelectBlocked], base + r.select) |
                              members_from(rules_[kPointerBlocked], base + r.pointer) |
                              members_from(rules_[kTeardownBlocked], base + r.teardown);
      if (reads.size() != 0) refused |= members_within(reads, base + r.pointer, reach);
      if (refused != ~std::uint64_t{0}) return base + std::countr_zero(~refused);
    }
  }
  for (;;) {
    const Event before = start;
    start = first_gap(rules_[kSources], start + r.select, words) - r.select;           // rule 3
    start = first_outside(rules_[kSelectBlocked], start + r.select) - r.select;        // rules 2, 4
    start = first_outside(rules_[kPointerBlocked], start + r.pointer) - r.pointer;     // rules 2, 4
    start = first_outside(rules_[kTeardownBlocked], start + r.teardown) - r.teardown;  // rules 2, 4
    start = reads_.first_gap(r.elements, start + r.pointer, r.horizon - r.pointer) -  // §2.2
            r.pointer;
    if (start == before) return start;
  }
}

void TileTimeline::add_send(Event start, Event words, target::ElementSet elements) {
  ++version_;
  rules_.add(kSends, start, start + words);
  // Rule 2: no receive control at the send's first event or the next.
  rules_.add(kSelectBlocked, start, start + 2);
  rules_.add(kPointerBlocked, start, start + 2);
  rules_.add(kTeardownBlocked, start, start + 2);
  reads_.add(elements, start, start + words);
}

void TileTimeline::add_receive(Event start, const ReceiveShape& r) {
  ++version_;
  const Event select = start + r.select, pointer = start + r.pointer,
              teardown = start + r.teardown;
  rules_.add(kSources, select, teardown);
  // Rule 4. A source select excludes another select and any pointer; a
  // teardown excludes a pointer and another teardown; a pointer excludes
  // everything. A select and a teardown may meet: the select cuts over.
  rules_.add(kSelectBlocked, select, select + 1);
  rules_.add(kPointerBlocked, select, select + 1);
  rules_.add(kSelectBlocked, pointer, pointer + 1);
  rules_.add(kPointerBlocked, pointer, pointer + 1);
  rules_.add(kTeardownBlocked, pointer, pointer + 1);
  rules_.add(kPointerBlocked, teardown, teardown + 1);
  rules_.add(kTeardownBlocked, teardown, teardown + 1);
  add_control(select);
  add_control(pointer);
  add_control(teardown);
  writes_.add(r.elements, pointer, start + r.horizon);
}

}  // namespace tessera::compiler::exchange
