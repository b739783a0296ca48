#pragma once
// The exchange timing model (reference §5): when each instruction of an
// exchange row acts, and when a transfer's receivers must act. The compiler's
// scheduler plans rows with these functions and the simulator replays rows
// with them, so a plan and its replay cannot disagree about timing.
//
// What is measured and what is inferred (reference §5, §7):
//   - Field layouts and "events − 1" counts: [SDK].
//   - One event = one tile cycle, and every tile leaves the phase-entry
//     `sync 3` at event 0 together: [INF].
//   - Control timing (a delay-type control acts at its last event, a control
//     merged into sendpic/sendpicp at the first send event): [SDK] rows and
//     their computed timelines [T].
//   - The route model ttm (target/topology.hpp) is an empirical fit [INF].
//   - The lags P = X + 52 + 2·row and the 5-event guard come from primitive
//     and SDK rows, not from documentation [INF]; transfers of 1..4148 words
//     were verified on hardware with them [HW].
//   - The paired 64-bit timing (format start X + 51 + 2·row, pointer two
//     events later, horizon + 7) comes from SDK rows and is less verified [INF].
//   - How `sendoff`'s delta and an sctl-0 `send` move the outgoing stream is
//     not documented; see OutgoingStream [INF].

#include <array>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <span>
#include <vector>

#include "support/error.hpp"
#include "target/isa.hpp"
#include "target/topology.hpp"

namespace tessera::target {

// An event time within one exchange phase, counted from the phase-entry sync.
using Event = std::int64_t;

// Timing constants of the model (§5.2, §5.4).
inline constexpr Event kPointerLag = 52;        // P − X for row 0 [INF]
inline constexpr Event kPointerLagPerRow = 2;   // added per physical row of the receiver [INF]
inline constexpr Event kReceiveGuard = 5;       // events after the last write [INF]
inline constexpr Event kPairedFormatLag = 51;   // F − Xp for row 0 ("MXP − 8") [INF]
inline constexpr Event kPairedPointerLag = 2;   // pointer set two events after the format [INF]
inline constexpr Event kPairedGuard = 7;        // events after the paired format end [INF]
inline constexpr std::uint32_t kMaxTransferWords = 4148;  // verified on hardware [HW]
inline constexpr std::uint32_t kMinPairedItems = 64;      // paired receives carry ≥ 64 items

// sctl bits (§4.2).
inline constexpr std::uint32_t kSctlDirectionOne = 1;
inline constexpr std::uint32_t kSctlDirectionTwo = 2;
inline constexpr std::uint32_t kSctlBroadcast = 3;     // both directions
inline constexpr std::uint32_t kSctl64BitItems = 4;

// Bytes per item of a send with this sctl: 8 in the 64-bit paired mode.
constexpr std::uint32_t item_bytes(std::uint32_t sctl) noexcept {
  return (sctl & kSctl64BitItems) != 0 ? 8u : 4u;
}

// The wrong use of an instruction or a timing function in an exchange row.
class ExchangeTimingError : public Error {
 public:
  using Error::Error;
};

// ---- Rows -------------------------------------------------------------------

// Events an instruction consumes in an exchange row (§4.2 "Advance"): delays
// their count, sends their words; sync and br take none. nullopt for an
// instruction that has no place in an exchange row (setzi, ld32, Unknown, …).
std::optional<Event> exchange_advance(const isa::Instruction& instruction) noexcept;

// A receive control: XPIC selects the incoming source, PIC sets the incoming
// memory pointer (selector 0, a word address) or the paired format (selector 1).
struct ReceiveControl {
  enum class Register : std::uint8_t { kXpic, kPic };
  Event event = 0;
  Register target = Register::kXpic;
  std::uint32_t selector = 0;  // XPIC: 1 = paired stream; PIC: 1 = format
  std::uint32_t value = 0;
  friend bool operator==(const ReceiveControl&, const ReceiveControl&) = default;
};

// "XPIC@53=0xc0", "PIC.format@54=0x1": for diagnostics and test output.
std::ostream& operator<<(std::ostream& out, const ReceiveControl& control);

// Words leaving the tile: `items` items at events [start, start + items),
// read from consecutive items from `first_item` (in item units: see isa.hpp).
struct SendWindow {
  Event start = 0;
  std::uint32_t items = 0;
  std::uint32_t first_item = 0;
  std::uint32_t sctl = 0;
  Event end() const noexcept { return start + items; }
  friend bool operator==(const SendWindow&, const SendWindow&) = default;
};

// What one instruction did in a row.
struct RowStep {
  Event start = 0;    // the event count before the instruction (T in §5.1)
  Event advance = 0;
  std::optional<SendWindow> send;
  std::array<std::optional<ReceiveControl>, 2> controls;  // at most one XPIC and one PIC
  bool returns = false;  // a br: the row is over
};

// The outgoing event stream of one tile while it runs an exchange row. Feed
// it the row's instructions in order (the simulator as it fetches them, the
// compiler to check what it emitted); it reports what each one does.
//
// [INF] A `send` (re)starts the stream at its source, even with sctl 0 (then
// no packet leaves). `sendoff` continues `delta` items past the stream's next
// item; `sendpic` continues with the stream's current sctl; `sendpicp`
// restarts the stream at its source with its own sctl.
class OutgoingStream {
 public:
  // Throws ExchangeTimingError for an instruction that has no place in an
  // exchange row, or for any instruction after the row's br.
  RowStep step(const isa::Instruction& instruction);

  Event now() const noexcept { return now_; }
  bool finished() const noexcept { return finished_; }

 private:
  Event now_ = 0;
  std::uint32_t next_item_ = 0;
  std::uint32_t sctl_ = 0;
  bool finished_ = false;
};

// The whole timeline of a row: what it sends, which controls it applies when,
// and its horizon (the sum of its advances; §5.1).
struct RowTimeline {
  Event horizon = 0;
  std::vector<SendWindow> sends;
  std::vector<ReceiveControl> controls;  // in event order
};

// Replays a row (optionally starting with its `sync 3` and ending with
// `br $m10`) through an OutgoingStream. Errors name the instruction's index.
RowTimeline row_timeline(std::span<const isa::Instruction> row);

// Decodes words into instructions and replays them; an undecodable word is
// an error naming its index.
RowTimeline row_timeline(std::span<const std::uint32_t> words);

// ---- Word32 transfers (§5.2) ------------------------------------------------

// When the receiver of a 32-bit transfer must act, given the sender's first
// word event S:
//   source select X = S + ttm(s, d) + 1        (XPIC := s)
//   pointer       P = X + 52 + 2·row(d)        (first word reaches memory)
//   teardown        = X + n                    (XPIC := neutral; needed even for n = 1)
//   writes            [P, P + n)
//   horizon         = max(X + n, P + n) + 5
struct Word32Timing {
  Event send_start = 0;     // S
  Event source_select = 0;  // X
  Event pointer = 0;        // P
  Event teardown = 0;
  Event horizon = 0;        // the receiver's
  std::uint32_t words = 0;
  Event write_end() const noexcept { return pointer + words; }
};

// One message: the words a receiver takes from `source` under one source
// select (from an XPIC control to the next). Throws ExchangeTimingError when
// `words` is outside 1..kMaxTransferWords, the longest message verified on
// hardware [HW] (the limit is read from the primitive rows' 12-bit XPIC
// teardown field [INF]). The scheduler's messages and the simulator's
// deliveries are both held to it here.
void check_message_words(PhysicalTile source, PhysicalTile destination, std::uint64_t words);

// The earliest S at which `source` can send to `destination`: the receiver's
// source select must fall on event 1 or later (after the phase-entry sync).
Event earliest_send_start(PhysicalTile source, PhysicalTile destination);

// Throws ExchangeTimingError when words is not a message's (check_message_words)
// or send_start is too early for this destination.
Word32Timing word32_transfer(PhysicalTile source, PhysicalTile destination, Event send_start,
                             std::uint32_t words);

// A multicast: one send, several receivers, each selecting the source at its
// own X. S = max(0, −min ttm) + offset so that every X ≥ 1.
struct MulticastTiming {
  Event send_start = 0;
  std::vector<Word32Timing> receivers;  // in the order given
  Event horizon() const noexcept;       // the latest receiver horizon
};

MulticastTiming multicast_transfer(PhysicalTile source, std::span<const PhysicalTile> receivers,
                                   std::uint32_t words, Event offset = 0);

// The sctl of a 32-bit send: its one receiver's direction, or both
// directions for a multicast (HEAD's rule; a packet may also go both ways).
std::uint32_t word32_sctl(PhysicalTile source, std::span<const PhysicalTile> receivers);

// ---- Paired 64-bit transfers (§5.4) [INF] ------------------------------------

// One receiving pair (d, d ^ 2) of a paired transfer. The early member is the
// one whose own ttm is smaller; it owns the paired XPIC stream.
struct PairedReceiverTiming {
  PhysicalTile early;
  PhysicalTile late;
  Event source_select = 0;  // Xp: early member's paired XPIC := s ^ (d & 2)
  Event teardown = 0;       // Xp + n: paired XPIC := neutral
  Event format_start = 0;   // F = Xp + 51 + 2·row: both members' PIC format := direction
  Event pointer = 0;        // F + 2: both members' PIC pointer
  Event format_end = 0;     // F + n: format := 0
  Event horizon = 0;        // last event + 7
};

struct PairedTiming {
  Event send_start = 0;  // S: the sender's first item event
  std::uint32_t items = 0;
  std::uint32_t sctl = 0;  // direction | 4 for one receiving pair, else 7
  std::vector<PairedReceiverTiming> pairs;
};

// `receiver_pairs` lists one member of each receiving pair. Throws
// ExchangeTimingError for fewer than 64 items, a pair listed twice, or a
// format event that would coincide with the source select or teardown (the
// hardware faults on that [HW-implied]).
PairedTiming paired_transfer(PhysicalTile source, std::span<const PhysicalTile> receiver_pairs,
                             std::uint32_t items);

}  // namespace tessera::target
