#include "compiler/exchange/tile_timeline.hpp"

#include <algorithm>
#include <bit>

namespace tessera::compiler::exchange {

void TileTimeline::ElementWindows::add(target::ElementSet elements, Event begin, Event end) {
  for (std::uint32_t mask = elements.mask(); mask != 0; mask &= mask - 1) {
    const auto element = static_cast<unsigned>(std::countr_zero(mask));
    auto it = std::partition_point(windows_.begin(), windows_.end(),
                                   [&](const auto& entry) { return entry.first < element; });
    if (it == windows_.end() || it->first != element) it = windows_.insert(it, {element, RunSet{}});
    it->second.add(begin, end);
  }
}

Event TileTimeline::ElementWindows::first_gap(target::ElementSet elements, Event begin,
                                              Event length) const {
  const std::uint32_t mask = elements.mask();
  for (;;) {
    const Event before = begin;
    for (const auto& [element, runs] : windows_) {
      if ((mask >> element) & 1u) begin = runs.first_gap(begin, length);
    }
    if (begin == before) return begin;
  }
}

void TileTimeline::ElementWindows::forget_before(Event floor) {
  for (auto& [element, runs] : windows_) runs.forget_before(floor);
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
  sends_.forget_before(floor);
  send_start_blocked_.forget_before(floor);
  sources_.forget_before(floor);
  select_blocked_.forget_before(floor);
  pointer_blocked_.forget_before(floor);
  teardown_blocked_.forget_before(floor);
  reads_.forget_before(floor);
  writes_.forget_before(floor);
}

// Each check moves a refused start to the first one that clears its conflict,
// skipping only starts that conflict too; the first start every check
// accepts is the answer.
Event TileTimeline::first_send_start(Event start, Event words, target::ElementSet elements) const {
  for (;;) {
    const Event before = start;
    start = sends_.first_gap(start, words);                // rule 1
    start = send_start_blocked_.first_outside(start);      // rule 2
    start = writes_.first_gap(elements, start, words);     // §2.2 rule 3
    if (start == before) return start;
  }
}

Event TileTimeline::first_receive_start(Event start, const ReceiveShape& r) const {
  const Event words = r.teardown - r.select;
  for (;;) {
    const Event before = start;
    start = sources_.first_gap(start + r.select, words) - r.select;                  // rule 3
    start = select_blocked_.first_outside(start + r.select) - r.select;              // rules 2, 4
    start = pointer_blocked_.first_outside(start + r.pointer) - r.pointer;           // rules 2, 4
    start = teardown_blocked_.first_outside(start + r.teardown) - r.teardown;        // rules 2, 4
    start = reads_.first_gap(r.elements, start + r.pointer, r.horizon - r.pointer) -  // §2.2
            r.pointer;
    if (start == before) return start;
  }
}

void TileTimeline::add_send(Event start, Event words, target::ElementSet elements) {
  ++version_;
  sends_.add(start, start + words);
  // Rule 2: no receive control at the send's first event or the next.
  select_blocked_.add(start, start + 2);
  pointer_blocked_.add(start, start + 2);
  teardown_blocked_.add(start, start + 2);
  reads_.add(elements, start, start + words);
}

void TileTimeline::add_receive(Event start, const ReceiveShape& r) {
  ++version_;
  const Event select = start + r.select, pointer = start + r.pointer,
              teardown = start + r.teardown;
  sources_.add(select, teardown);
  // Rule 4. A source select excludes another select and any pointer; a
  // teardown excludes a pointer and another teardown; a pointer excludes
  // everything. A select and a teardown may meet: the select cuts over.
  select_blocked_.add(select, select + 1);
  pointer_blocked_.add(select, select + 1);
  select_blocked_.add(pointer, pointer + 1);
  pointer_blocked_.add(pointer, pointer + 1);
  teardown_blocked_.add(pointer, pointer + 1);
  pointer_blocked_.add(teardown, teardown + 1);
  teardown_blocked_.add(teardown, teardown + 1);
  add_control(select);
  add_control(pointer);
  add_control(teardown);
  writes_.add(r.elements, pointer, start + r.horizon);
}

}  // namespace tessera::compiler::exchange
