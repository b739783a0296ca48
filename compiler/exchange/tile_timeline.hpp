#pragma once
// What the list scheduler has already placed on one tile, kept as the events
// a new send or receive may not use, and the two questions the scheduler
// asks of it: the first send start at or after S that this tile allows, and
// the same for a receive. The rules (reference §5.5 and §2.2):
//   - one outgoing message at a time (rule 1);
//   - no receive control at a send's first event or the next (rule 2);
//   - receives' source windows [X, X + n) do not overlap (rule 3; their
//     payload windows then do not either, since P − X depends only on the
//     receiver);
//   - no two receive controls at one event, except a teardown meeting the
//     next source select, which becomes a cut-over (rule 4; letting only a
//     message's own pointer and teardown meet otherwise keeps every sendpicp
//     far enough from the previous one that the emitter can always align it);
//   - a send's read window [S, S + n) and a receive's write window
//     [P, receiver horizon) do not overlap in time when they touch a common
//     memory element (§2.2 rule 3).
// Each rule's forbidden events are kept as a bitmap (event_bits.hpp), per
// memory element for the last one, so every check reads a few machine words
// and skips a busy stretch 64 events at a time: a congested tile (a 1471 → 1
// gather, a tile of a transpose sending and receiving a thousand one-word
// messages) costs a few steps, not a scan of its messages. When a message's
// windows are at most 64 events (most are), every rule's refusals of 64
// candidate starts are one word each, and the answer is the first start
// none refuses: one pass, not a round of searches until they agree.

#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "compiler/exchange/event_bits.hpp"
#include "target/memory_map.hpp"

namespace tessera::compiler::exchange {

// A receive's events relative to its message's send start S (the timing
// model is the same at every S: word32_transfer adds S to fixed offsets).
struct ReceiveShape {
  Event select = 0;    // X − S
  Event pointer = 0;   // P − S
  Event teardown = 0;  // X + n − S
  Event horizon = 0;   // the receiver's horizon − S
  target::ElementSet elements;  // the elements its words are written to
};

class TileTimeline {
 public:
  // The first S ≥ `start` at which this tile can send `words` words read
  // from `elements`.
  Event first_send_start(Event start, Event words, target::ElementSet elements) const;
  // The first S ≥ `start` at which this tile can receive a message of
  // `shape` sent at S.
  Event first_receive_start(Event start, const ReceiveShape& shape) const;

  void add_send(Event start, Event words, target::ElementSet elements);
  void add_receive(Event start, const ReceiveShape& shape);

  // Counts the sends and receives added: while it stays the same, every
  // question (at or after the floor) has the answer it had — forget_before
  // changes none — so a caller may keep an answer instead of asking again.
  std::uint64_t version() const noexcept { return version_; }

  // No question will look at an event before `floor` again (the
  // earliest-start schedule's sweep has passed it): what ends by then is
  // dropped, so a tile's past costs nothing (event_bits.hpp).
  void forget_before(Event floor);

 private:
  // Joined windows per memory element, for the §2.2 hazards: few elements
  // per tile take part, so a short list by element.
  class ElementWindows {
   public:
    void add(target::ElementSet elements, Event begin, Event end);
    // The first b ≥ `begin` with [b, b + length) clear of every window on
    // an element of `elements`.
    Event first_gap(target::ElementSet elements, Event begin, Event length) const;
    // The windows on the elements of `elements`, added to `windows`.
    void collect(target::ElementSet elements, EventBitsUnion& windows) const;
    void forget_before(Event floor);

   private:
    std::vector<std::pair<unsigned, EventBits>> windows_;  // by element index
    std::uint32_t present_ = 0;                             // the elements in windows_
  };

  // A receive control at `event`: a send may not start there or one event
  // before (rule 2).
  void add_control(Event event) { rules_.add(kSendStartBlocked, event - 1, event + 1); }

  std::uint64_t version_ = 0;
  // The latest floor forgotten before (forget_before): forgetting again
  // waits until the floor has moved this far on.
  static constexpr Event kForgetStride = 64;
  Event forgotten_ = std::numeric_limits<Event>::min() / 2;
  // The rules' sets, interleaved (event_bits.hpp): a receive's question reads
  // four of them at nearby events.
  enum Rule : std::size_t {
    kSends,             // [S, S + n)
    kSendStartBlocked,  // rule 2, seen from a new send
    kSources,           // receive source windows [X, X + n)
    kSelectBlocked,     // where a new source select may not fall (rules 2 and 4)
    kPointerBlocked,    // … a new pointer
    kTeardownBlocked,   // … a new teardown
    kRules
  };
  EventBitmaps<kRules> rules_;
  ElementWindows reads_;       // sends' read windows [S, S + n)
  ElementWindows writes_;      // receives' write windows [P, receiver horizon)
};

}  // namespace tessera::compiler::exchange
