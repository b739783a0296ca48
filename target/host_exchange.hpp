#pragma once
// Host exchange (reference §4.5, with §6 for the syncs): the words a tile
// sends to the host engine and the programs that send them. The compiler
// emits these programs; the simulator parses the same headers and bitmaps
// when it models the host side, so every encoder here has an exact inverse
// and every input is checked — nothing is ever masked to fit.
//
// The pieces, bottom up:
//   * XREQ: the row-0 tile that asks the host to serve a target, the bit that
//     names the target in its 46-bit request bitmap, and the send of that bitmap;
//   * incoming-mux values for the host (0x600 + k) and for "no source" (0x640);
//   * packet headers (2 words) for H2D read requests, D2H writes and the
//     zero-byte read that closes a D2H transfer, with parse_packet_header() as
//     the encoder's inverse;
//   * splitting a host byte range into packets at 4 KiB host pages;
//   * the target code of one H2D or D2H transfer, and the wrappers that make
//     a whole host-phase program of it for owners, targets and idle tiles.
//
// Inferences and resolved ambiguities [INF]:
//   * Header bit names. Only the four base words are known (0xCC000200 and
//     0xEC000200 for H2D, 0x80000000 and 0xA0000000 for D2H). Their common
//     bits are named here as "header", "read request", "long" and "H2D
//     marker"; the names are ours. A parsed header must re-encode to exactly
//     its words, so any bit outside those meanings is rejected.
//   * The zero-byte read is modelled as an H2D read request of 0 bytes at
//     host offset 0. That is what its words are: the short H2D base word with
//     the stream-end bits set, and a word 1 holding only the route bit.
//   * The whole H2D payload must lie inside the H2D window, not only its first
//     byte. The 9-bit address field can name only the window; whether the
//     engine may write past its end is not known, so it is refused.
//   * Packet words (bitmap, headers, close) must sit at 8-aligned addresses:
//     §2.5 says so for host packet addresses, and every vector complies.
//   * D2H padding ("pad so each payload spans ≥ 18 events", HEAD) counts the
//     payload's own words, not its header: the oracle's 16-word payload is
//     followed by `delay 2`, so the 2 header words are not counted. OLD padded
//     with a constant 2 events, which gives the same vector; we follow HEAD,
//     so a 4-word payload gets `delay 14` and an 18-word one no delay.
//   * Multi-chunk D2H is not in the reference's vectors. Each chunk is its
//     header followed by its payload and padding; each header is sent with
//     `send` (not `sendoff`), because after a payload the outgoing stream
//     continues from the payload, not from the header block. Headers are
//     contiguous, the single close packet follows them, and it is sent once,
//     after the last chunk.
//   * Multi-chunk H2D: `$INCOMING_DCOUNT` is set to the payload words of the
//     whole transfer (all chunks), since one `sync 0` waits for all of them.
//   * The close packet's target. §2.4 reserves 0x50160 as the zero-byte read
//     target (kD2hClose), but the t260 oracle puts its packets at 0x50160 and
//     reads zero bytes to 0x50180. Both addresses are therefore parameters of
//     a D2H transfer; the close target defaults to kD2hClose.
//   * An H2D transfer whose host offset is not 32-byte aligned is encodable
//     only while it stays inside one host page: after a page boundary the next
//     chunk's tile address is no longer 32-byte aligned. Such a transfer is an
//     error naming the chunk, never a silently shifted address.

#include <array>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string_view>
#include <vector>

#include "support/error.hpp"
#include "target/isa.hpp"
#include "target/memory_map.hpp"
#include "target/topology.hpp"

namespace tessera::target {

// A host-exchange request that cannot be encoded as asked, or words that are
// not a host packet. The message names the argument (or word) and its value.
class HostExchangeError : public Error {
 public:
  using Error::Error;
};

namespace detail {
[[noreturn]] void throw_host_off_chip(PhysicalTile tile, std::string_view role);
}  // namespace detail

// ---------------------------------------------------------------------------
// Incoming-mux values ($INCOMING_MUX, XPIC)

// The host endpoints are 0x600 + k, k a row-0 column with bit 1 clear.
inline constexpr std::uint32_t kHostMuxBase = 0x600;
// "Neutral/none": no source selected. Every exchange row and host phase ends
// by restoring it, and a receive teardown writes it (§3, §5.2).
inline constexpr std::uint32_t kNeutralMux = 0x640;

// The host endpoint tile `tile` selects to hear the host: 0x600 + ((t & 0x3F) & ~2).
constexpr std::uint32_t host_mux(PhysicalTile tile) {
  if (!on_chip(tile)) detail::throw_host_off_chip(tile, "host mux tile");
  return kHostMuxBase + (static_cast<std::uint32_t>(tile.value) & 0x3Du);
}

// ---------------------------------------------------------------------------
// XREQ: the request that makes the host serve a target tile

inline constexpr unsigned kXreqBits = 2 * kRows;  // 23 rows × 2 lanes
inline constexpr unsigned kXreqWord0Bits = 24;    // bits 0–23 in word 0, 24–45 in word 1
static_assert(kXreqBits == 46);

// The row-0 tile that requests service for `target`: t & 0x3D.
constexpr PhysicalTile xreq_owner(PhysicalTile target) {
  if (!on_chip(target)) detail::throw_host_off_chip(target, "XREQ target");
  return PhysicalTile(static_cast<std::uint16_t>(target.value & 0x3Du));
}

// Whether `tile` owns XREQs (row 0, column bit 1 clear): 32 tiles do.
constexpr bool is_xreq_owner(PhysicalTile tile) noexcept {
  return on_chip(tile) && (tile.value & 0x3Du) == tile.value;
}

// The bit naming `target` in its owner's bitmap: 2·row + lane, lane = (t>>1)&1.
constexpr unsigned xreq_bit(PhysicalTile target) {
  if (!on_chip(target)) detail::throw_host_off_chip(target, "XREQ target");
  return 2u * static_cast<unsigned>(row(target)) + ((target.value >> 1) & 1u);
}

// The 46-bit request bitmap one owner sends. It names only targets of that
// owner, so it can always be read back as a set of tiles.
class XreqBitmap {
 public:
  // HostExchangeError unless `owner` is an XREQ owner tile.
  explicit XreqBitmap(PhysicalTile owner);
  // The bitmap as received from `owner`; HostExchangeError when a bit above
  // bit 45 is set (word 0 above bit 23, word 1 above bit 21).
  static XreqBitmap from_words(PhysicalTile owner, std::uint32_t word0, std::uint32_t word1);

  // ORs in `target`'s bit. HostExchangeError when it is off the chip or its
  // owner is another tile.
  XreqBitmap& add(PhysicalTile target);

  PhysicalTile owner() const noexcept { return owner_; }
  bool contains(PhysicalTile target) const noexcept;
  bool empty() const noexcept { return bits_ == 0; }
  // The targets, in ascending physical order.
  std::vector<PhysicalTile> targets() const;

  std::uint32_t word0() const noexcept;
  std::uint32_t word1() const noexcept;
  std::array<std::uint32_t, 2> words() const noexcept { return {word0(), word1()}; }

  friend bool operator==(const XreqBitmap&, const XreqBitmap&) = default;

 private:
  PhysicalTile owner_;
  std::uint64_t bits_ = 0;
};

std::ostream& operator<<(std::ostream& out, const XreqBitmap& bitmap);

// Every host packet (bitmap, headers, close) is sent in both fabric directions.
inline constexpr std::uint32_t kHostSendControl = 3;
inline constexpr std::uint32_t kPacketHeaderWords = 2;
inline constexpr std::uint32_t kPacketHeaderBytes = kPacketHeaderWords * kWordBytes;

// The owner's send of its bitmap, placed at byte address `packet_address`:
// `send 2, packet_address/4, 3`. HostExchangeError unless the address is
// 8-aligned and the two words lie in tile SRAM.
isa::Send xreq_send(std::uint32_t packet_address);

// ---------------------------------------------------------------------------
// Packet headers

enum class HostDirection : std::uint8_t { kHostToDevice, kDeviceToHost };

// Short packets carry 4–60 bytes in words; long ones 64–1024 bytes in 64-byte
// units. The size decides which a packet is.
enum class PacketFormat : std::uint8_t { kShort, kLong };

inline constexpr std::uint32_t kShortPacketMinBytes = 4;
inline constexpr std::uint32_t kShortPacketMaxBytes = 60;
inline constexpr std::uint32_t kLongPacketUnit = 64;
inline constexpr std::uint32_t kLongPacketMaxBytes = 1024;

// The format of a packet of `size` bytes; HostExchangeError when no format
// carries that size (0, unaligned, 61–63, above 1024, not a multiple of 64
// above 60).
PacketFormat packet_format(std::uint32_t size);

// One H2D read request, D2H write, or zero-byte read, as fields.
struct PacketHeader {
  HostDirection direction = HostDirection::kHostToDevice;
  // The target tile; its id routes the packet.
  PhysicalTile tile;
  // H2D: where the data lands (H2D window, 32-byte aligned). D2H: must be 0.
  std::uint32_t tile_address = 0;
  // Byte offset in the host buffer, aligned to the format's unit.
  std::uint64_t host_offset = 0;
  // Payload bytes. 0 only for the zero-byte read (H2D, host offset 0).
  std::uint32_t size = 0;
  // H2D: false on every header of a multi-packet stream but the last. D2H
  // headers and the zero-byte read have no such bits and must leave it true.
  bool stream_end = true;

  friend bool operator==(const PacketHeader&, const PacketHeader&) = default;
};

std::ostream& operator<<(std::ostream& out, const PacketHeader& header);

constexpr PacketHeader h2d_request(PhysicalTile tile, std::uint32_t tile_address,
                                   std::uint64_t host_offset, std::uint32_t size,
                                   bool stream_end = true) {
  return PacketHeader{
      HostDirection::kHostToDevice, tile, tile_address, host_offset, size, stream_end};
}
constexpr PacketHeader d2h_request(PhysicalTile tile, std::uint64_t host_offset,
                                   std::uint32_t size) {
  return PacketHeader{HostDirection::kDeviceToHost, tile, 0, host_offset, size, true};
}
// The read of zero bytes that closes a D2H transfer.
constexpr PacketHeader zero_byte_read(PhysicalTile tile, std::uint32_t tile_address) {
  return PacketHeader{HostDirection::kHostToDevice, tile, tile_address, 0, 0, true};
}

using PacketWords = std::array<std::uint32_t, 2>;

// The two header words. Every field is checked; HostExchangeError names the
// first one that does not fit.
PacketWords encode_packet_header(const PacketHeader& header);

// The inverse of encode_packet_header: for any words it either throws
// HostExchangeError or returns the one header that encodes to them.
PacketHeader parse_packet_header(std::uint32_t word0, std::uint32_t word1);

// ---------------------------------------------------------------------------
// Splitting a transfer into packets

// Host memory is translated per 4 KiB page, so no packet may cross one.
inline constexpr std::uint32_t kHostPageBytes = 4096;
// Away from 64-byte alignment, a long run is sent as short packets of this size.
inline constexpr std::uint32_t kShortStepBytes = 32;
inline constexpr std::uint32_t kH2dMaxPacketBytes = kLongPacketMaxBytes;
// One `send` carries at most 64 words, so a D2H payload is at most 256 bytes.
inline constexpr std::uint32_t kD2hMaxPacketBytes = 256;

constexpr std::uint32_t max_packet_bytes(HostDirection direction) noexcept {
  return direction == HostDirection::kHostToDevice ? kH2dMaxPacketBytes : kD2hMaxPacketBytes;
}

// One packet's share of a transfer.
struct HostChunk {
  std::uint64_t host_offset = 0;
  std::uint32_t size = 0;
  friend bool operator==(const HostChunk&, const HostChunk&) = default;
};

std::ostream& operator<<(std::ostream& out, const HostChunk& chunk);

// Splits [host_offset, host_offset + size) into packets, in order: never
// across a host page; a long packet (min(rest of page, max) rounded down to
// 64) where the offset is 64-aligned and ≥ 64 bytes remain in the page; else
// one short packet when ≤ 60 bytes remain; else a 32-byte short packet.
// HostExchangeError for size 0 or an offset or size that is not 4-aligned;
// ArithmeticError when the end overflows 64 bits.
std::vector<HostChunk> split_host_transfer(HostDirection direction, std::uint64_t host_offset,
                                           std::uint32_t size);

// ---------------------------------------------------------------------------
// Target code: one tile's side of one transfer

// The words a program sends from memory; the caller places them at `address`.
struct PacketBlock {
  std::uint32_t address = 0;
  std::vector<std::uint32_t> words;
  friend bool operator==(const PacketBlock&, const PacketBlock&) = default;
};

// A host-phase program: instructions plus the packet words it sends.
struct HostProgram {
  std::vector<isa::Instruction> instructions;
  std::vector<PacketBlock> packets;

  // The instructions' words (every operand checked by isa::encode).
  std::vector<std::uint32_t> encode() const;
};

// Host → tile: `size` bytes from host offset `host_offset` land at
// `tile_address` (inside the H2D window). The request headers are placed at
// `packet_address`.
struct H2dTransfer {
  PhysicalTile tile;
  std::uint32_t tile_address = 0;
  std::uint64_t host_offset = 0;
  std::uint32_t size = 0;
  std::uint32_t packet_address = kTargetPacketHeaders;
};

// Tile → host: `size` bytes at `tile_address` (anywhere in SRAM) go to host
// offset `host_offset`. Headers and then the close packet are placed at
// `packet_address`; the close packet reads zero bytes to `close_address`.
struct D2hTransfer {
  PhysicalTile tile;
  std::uint32_t tile_address = 0;
  std::uint64_t host_offset = 0;
  std::uint32_t size = 0;
  std::uint32_t packet_address = kTargetPacketHeaders;
  std::uint32_t close_address = kD2hClose;
};

// Every D2H payload is padded with a delay to span at least this many events (HEAD).
inline constexpr std::uint32_t kD2hMinPayloadEvents = 18;

// A target's code, split where the owner-target wrapper inserts the XREQ send.
struct TargetCode {
  PhysicalTile tile;
  // `setzi $m8, n; put $INCOMING_DCOUNT, $m8`: n = payload words (H2D) or 1 (D2H).
  std::vector<isa::Instruction> dcount_setup;
  // The header, payload and close sends, then `sync 0`.
  std::vector<isa::Instruction> transfer;
  PacketBlock packets;

  // The code as a program of its own, ending `br $m10` (the t260 oracle's form).
  HostProgram standalone() const;
};

// H2D: dcount := payload words; the first header via `send 2`, each further
// header via `sendoff 2` (headers contiguous); `sync 0`.
TargetCode h2d_target_code(const H2dTransfer& transfer);
// D2H: dcount := 1; per chunk its header, its payload and any padding; the
// close packet; `sync 0`.
TargetCode d2h_target_code(const D2hTransfer& transfer);

// ---------------------------------------------------------------------------
// Host-phase programs (§4.5 "Wrappers", §6 "Host phases")

// An owner that is not a target: host mux, `sync 15`, send the bitmap,
// `sync 7`, neutral mux, `br $m10`. The bitmap must name at least one target
// and not its owner (that tile needs owner_target_program).
HostProgram xreq_only_program(const XreqBitmap& bitmap, std::uint32_t packet_address = kXreqBitmap);
// A target that is not an XREQ owner: host mux, `sync 7`, its code, `sync 7`,
// neutral mux, `br $m10`.
HostProgram target_only_program(const TargetCode& target);
// An owner that is also a target: host mux, `sync 15`, its dcount setup, the
// bitmap send, the rest of its code, `sync 7`, neutral mux, `br $m10`. The
// bitmap must be the target's own and name it; the two packet blocks must
// not overlap.
HostProgram owner_target_program(const XreqBitmap& bitmap, const TargetCode& target,
                                 std::uint32_t xreq_packet_address = kXreqBitmap);
// A tile with no part in the phase: `sans 1; sync 1; br $m10`.
HostProgram inactive_program();

}  // namespace tessera::target
