#include "target/host_exchange.hpp"

#include <algorithm>
#include <ostream>
#include <string>

#include <fmt/format.h>

#include "support/checked.hpp"

namespace tessera::target {

namespace detail {

void throw_host_off_chip(PhysicalTile tile, std::string_view role) {
  throw HostExchangeError(fmt::format("{}: {} is not a C600 tile (physical ids are 0..{})", role,
                                      tile, kTileCount - 1));
}

}  // namespace detail

namespace {

// ---- Header layout (§4.5) ---------------------------------------------------
// Word 0. The four base words are known; the names of their bits are ours [INF].
constexpr std::uint32_t kHeaderBit = 0x80000000;       // set in every header
constexpr std::uint32_t kReadRequestBit = 0x40000000;  // H2D: the tile reads from the host
constexpr std::uint32_t kLongBit = 0x20000000;
constexpr std::uint32_t kStreamEndBits = 0x0C000000;  // H2D: clear on all but a stream's last
constexpr unsigned kRoutePairShift = 16;              // t >> 1
constexpr std::uint32_t kRoutePairMask = 0x3FF;
constexpr unsigned kRouteLaneShift = 15;            // t & 1
constexpr std::uint32_t kH2dMarkerBit = 0x200;      // set in every H2D header
constexpr std::uint32_t kAddressFieldMask = 0x1FF;  // (tile address − 0x50000) / 32
// Word 1.
constexpr unsigned kWord1LaneShift = 31;  // t & 1 again
constexpr unsigned kHostOffsetShift = 4;
constexpr std::uint64_t kHostOffsetFieldMax = 0x7FFFFFF;  // so that the word stays ≤ 0x7FFFFFFF
constexpr std::uint32_t kLengthMask = 0xF;

static_assert(((kTileCount - 1) >> 1) <= static_cast<int>(kRoutePairMask),
              "every tile id must fit the route field");
static_assert(kH2dWindow.size() / kH2dAddressUnit == kAddressFieldMask + 1);
static_assert(((kHostOffsetFieldMax << kHostOffsetShift) | kLengthMask) == 0x7FFFFFFF);

// ---- Sync zones (§6) as host phases use them --------------------------------
constexpr std::uint32_t kSyncHostReceive = 0;  // waits for this tile's host transfer [INF]
constexpr std::uint32_t kSyncLocal = 1;
constexpr std::uint32_t kSyncAll = isa::kHostSyncZone;  // the external sync that includes the host
constexpr std::uint32_t kSyncHostEntry = 15;  // the XREQ owner's entry sync
constexpr std::uint32_t kSansHost = 1;        // no part in the next host sync [INF]

// ---- Small helpers ------------------------------------------------------------

std::string_view direction_name(HostDirection direction) {
  return direction == HostDirection::kHostToDevice ? "H2D" : "D2H";
}

std::string_view format_name(PacketFormat format) {
  return format == PacketFormat::kShort ? "short" : "long";
}

bool is_zero_byte_read(const PacketHeader& header) {
  return header.direction == HostDirection::kHostToDevice && header.size == 0;
}

// Names a header in messages: "H2D header for p260".
std::string header_name(const PacketHeader& header) {
  if (is_zero_byte_read(header)) return fmt::format("zero-byte read for {}", header.tile);
  return fmt::format("{} header for {}", direction_name(header.direction), header.tile);
}

std::uint32_t unit_bytes(PacketFormat format) {
  return format == PacketFormat::kShort ? kWordBytes : kLongPacketUnit;
}

// Whether [begin, begin + bytes) lies in `region`. The operands are 32-bit,
// so their 64-bit sum cannot wrap.
bool range_in(const AddressRange& region, std::uint32_t begin, std::uint64_t bytes) {
  return region.contains(begin) && std::uint64_t{begin} + bytes <= region.end;
}

// Packet words are sent from memory: 8-aligned (§2.5) and inside tile SRAM.
AddressRange packet_range(std::uint32_t address, std::size_t words, std::string_view what) {
  if (!is_aligned(address, kPairedAlignment)) {
    throw HostExchangeError(
        fmt::format("{} {:#x} is not {}-byte aligned", what, address, kPairedAlignment));
  }
  const std::uint64_t bytes = std::uint64_t{words} * kWordBytes;
  if (!range_in(kSram, address, bytes)) {
    throw HostExchangeError(fmt::format("{} [{:#x}, {:#x}) ({} words) leaves tile SRAM {}", what,
                                        address, address + bytes, words, kSram));
  }
  return AddressRange(address, static_cast<std::uint32_t>(address + bytes));
}

// ---- Header fields ------------------------------------------------------------

std::uint32_t route_word0(PhysicalTile tile) {
  const std::uint32_t id = tile.value;
  return ((id >> 1) << kRoutePairShift) | ((id & 1u) << kRouteLaneShift);
}

std::uint32_t route_word1(PhysicalTile tile) {
  return (static_cast<std::uint32_t>(tile.value) & 1u) << kWord1LaneShift;
}

std::uint32_t h2d_address_field(const PacketHeader& header) {
  const std::string name = header_name(header);
  if (!kH2dWindow.contains(header.tile_address)) {
    throw HostExchangeError(fmt::format("{}: tile_address {:#x} is outside the H2D window {}", name,
                                        header.tile_address, kH2dWindow));
  }
  if (!is_aligned(header.tile_address, kH2dAddressUnit)) {
    throw HostExchangeError(fmt::format("{}: tile_address {:#x} is not {}-byte aligned", name,
                                        header.tile_address, kH2dAddressUnit));
  }
  if (!range_in(kH2dWindow, header.tile_address, header.size)) {
    throw HostExchangeError(fmt::format(
        "{}: payload [{:#x}, {:#x}) runs past the end of the H2D window {}", name,
        header.tile_address, std::uint64_t{header.tile_address} + header.size, kH2dWindow));
  }
  return (header.tile_address - kH2dWindow.begin) / kH2dAddressUnit;
}

std::uint32_t host_offset_field(const PacketHeader& header, PacketFormat format) {
  const std::uint32_t unit = unit_bytes(format);
  if (header.host_offset % unit != 0) {
    throw HostExchangeError(fmt::format("{}: host_offset {:#x} is not a multiple of {} ({} packet)",
                                        header_name(header), header.host_offset, unit,
                                        format_name(format)));
  }
  const std::uint64_t units = header.host_offset / unit;
  if (units > kHostOffsetFieldMax) {
    throw HostExchangeError(fmt::format(
        "{}: host_offset {:#x} is beyond the largest {} packet offset {:#x}", header_name(header),
        header.host_offset, format_name(format), kHostOffsetFieldMax * unit));
  }
  return static_cast<std::uint32_t>(units) << kHostOffsetShift;
}

// packet_format's message names only the size; the context says whose it was.
PacketFormat header_format(const PacketHeader& header) {
  return with_context(header_name(header), [&] { return packet_format(header.size); });
}

std::uint32_t length_field(std::uint32_t size, PacketFormat format) {
  if (format == PacketFormat::kShort) return size / kWordBytes;
  const std::uint32_t units = size / kLongPacketUnit;
  return units == kLongPacketMaxBytes / kLongPacketUnit ? 0 : units;  // 1024 B is encoded as 0
}

PacketWords encode_d2h(const PacketHeader& header) {
  if (header.tile_address != 0) {
    throw HostExchangeError(
        fmt::format("{}: tile_address {:#x} must be 0 (a D2H header names no tile address)",
                    header_name(header), header.tile_address));
  }
  if (!header.stream_end) {
    throw HostExchangeError(fmt::format(
        "{}: stream_end must be true (D2H headers have no stream-end bits)", header_name(header)));
  }
  if (header.size == 0) {
    throw HostExchangeError(fmt::format(
        "{}: size 0 (only an H2D zero-byte read carries no payload)", header_name(header)));
  }
  const PacketFormat format = header_format(header);
  const std::uint32_t word0 =
      kHeaderBit | (format == PacketFormat::kLong ? kLongBit : 0u) | route_word0(header.tile);
  const std::uint32_t word1 = route_word1(header.tile) | host_offset_field(header, format) |
                              length_field(header.size, format);
  return {word0, word1};
}

PacketWords encode_zero_byte_read(const PacketHeader& header) {
  if (header.host_offset != 0) {
    throw HostExchangeError(
        fmt::format("{}: host_offset {:#x} must be 0", header_name(header), header.host_offset));
  }
  if (!header.stream_end) {
    throw HostExchangeError(
        fmt::format("{}: stream_end must be true (a zero-byte read is a stream of its own)",
                    header_name(header)));
  }
  const std::uint32_t word0 = kHeaderBit | kReadRequestBit | kStreamEndBits | kH2dMarkerBit |
                              route_word0(header.tile) | h2d_address_field(header);
  return {word0, route_word1(header.tile)};
}

PacketWords encode_h2d(const PacketHeader& header) {
  if (header.size == 0) return encode_zero_byte_read(header);
  const PacketFormat format = header_format(header);
  const std::uint32_t word0 = kHeaderBit | kReadRequestBit |
                              (format == PacketFormat::kLong ? kLongBit : 0u) |
                              (header.stream_end ? kStreamEndBits : 0u) | kH2dMarkerBit |
                              route_word0(header.tile) | h2d_address_field(header);
  const std::uint32_t word1 = route_word1(header.tile) | host_offset_field(header, format) |
                              length_field(header.size, format);
  return {word0, word1};
}

}  // namespace

// ---------------------------------------------------------------------------
// XREQ

XreqBitmap::XreqBitmap(PhysicalTile owner) : owner_(owner) {
  if (!on_chip(owner)) detail::throw_host_off_chip(owner, "XREQ owner");
  if (!is_xreq_owner(owner)) {
    throw HostExchangeError(fmt::format(
        "XREQ owner: {} owns no XREQs (owners are row-0 tiles with column bit 1 clear; {}'s "
        "owner is {})",
        owner, owner, xreq_owner(owner)));
  }
}

XreqBitmap XreqBitmap::from_words(PhysicalTile owner, std::uint32_t word0, std::uint32_t word1) {
  constexpr unsigned kWord1Bits = kXreqBits - kXreqWord0Bits;
  if ((word0 >> kXreqWord0Bits) != 0 || (word1 >> kWord1Bits) != 0) {
    throw HostExchangeError(fmt::format(
        "XREQ bitmap [{:#x}, {:#x}] of {}: bits above bit {} are set (word 0 holds bits 0–{}, "
        "word 1 bits {}–{})",
        word0, word1, owner, kXreqBits - 1, kXreqWord0Bits - 1, kXreqWord0Bits, kXreqBits - 1));
  }
  XreqBitmap bitmap(owner);
  bitmap.bits_ = word0 | (std::uint64_t{word1} << kXreqWord0Bits);
  return bitmap;
}

XreqBitmap& XreqBitmap::add(PhysicalTile target) {
  if (xreq_owner(target) != owner_) {
    throw HostExchangeError(fmt::format("XREQ bitmap of {}: target {} belongs to owner {}", owner_,
                                        target, xreq_owner(target)));
  }
  bits_ |= std::uint64_t{1} << xreq_bit(target);
  return *this;
}

bool XreqBitmap::contains(PhysicalTile target) const noexcept {
  // On the chip, xreq_owner and xreq_bit cannot throw.
  if (!on_chip(target) || xreq_owner(target) != owner_) return false;
  return ((bits_ >> xreq_bit(target)) & 1u) != 0;
}

std::vector<PhysicalTile> XreqBitmap::targets() const {
  std::vector<PhysicalTile> tiles;
  for (unsigned bit = 0; bit < kXreqBits; ++bit) {
    if (((bits_ >> bit) & 1u) == 0) continue;
    const unsigned id = (bit / 2) * kColumns + owner_.value + (bit & 1u) * 2;
    tiles.emplace_back(static_cast<std::uint16_t>(id));
  }
  return tiles;
}

std::uint32_t XreqBitmap::word0() const noexcept {
  return static_cast<std::uint32_t>(bits_ & ((std::uint64_t{1} << kXreqWord0Bits) - 1));
}

std::uint32_t XreqBitmap::word1() const noexcept {
  return static_cast<std::uint32_t>(bits_ >> kXreqWord0Bits);
}

std::ostream& operator<<(std::ostream& out, const XreqBitmap& bitmap) {
  return out << fmt::format("XREQ of {} [{:#x}, {:#x}]", bitmap.owner(), bitmap.word0(),
                            bitmap.word1());
}

isa::Send xreq_send(std::uint32_t packet_address) {
  const AddressRange range =
      packet_range(packet_address, kPacketHeaderWords, "XREQ packet_address");
  return isa::Send{kPacketHeaderWords, range.begin / kWordBytes, kHostSendControl};
}

// ---------------------------------------------------------------------------
// Packet headers

PacketFormat packet_format(std::uint32_t size) {
  if (size >= kShortPacketMinBytes && size <= kShortPacketMaxBytes && size % kWordBytes == 0) {
    return PacketFormat::kShort;
  }
  if (size >= kLongPacketUnit && size <= kLongPacketMaxBytes && size % kLongPacketUnit == 0) {
    return PacketFormat::kLong;
  }
  throw HostExchangeError(fmt::format(
      "packet size {} fits no packet format (short: {}–{} B, a multiple of 4; long: {}–{} B, a "
      "multiple of {})",
      size, kShortPacketMinBytes, kShortPacketMaxBytes, kLongPacketUnit, kLongPacketMaxBytes,
      kLongPacketUnit));
}

std::ostream& operator<<(std::ostream& out, const PacketHeader& header) {
  return out << fmt::format("{}{{tile_address {:#x}, host_offset {:#x}, size {}, stream_end {}}}",
                            header_name(header), header.tile_address, header.host_offset,
                            header.size, header.stream_end);
}

PacketWords encode_packet_header(const PacketHeader& header) {
  if (!on_chip(header.tile)) detail::throw_host_off_chip(header.tile, "packet header tile");
  return header.direction == HostDirection::kHostToDevice ? encode_h2d(header) : encode_d2h(header);
}

PacketHeader parse_packet_header(std::uint32_t word0, std::uint32_t word1) {
  return with_context(fmt::format("host packet header [{:#010x}, {:#010x}]", word0, word1), [&] {
    if ((word0 & kHeaderBit) == 0) {
      throw HostExchangeError("bit 31 of word 0 is clear, so this is no header");
    }
    const std::uint32_t lane = (word0 >> kRouteLaneShift) & 1u;
    if ((word1 >> kWord1LaneShift) != lane) {
      throw HostExchangeError(
          fmt::format("the route's lane bits disagree (word 0 bit {} = {}, word 1 bit {} = {})",
                      kRouteLaneShift, lane, kWord1LaneShift, word1 >> kWord1LaneShift));
    }
    PacketHeader header;
    header.tile = PhysicalTile(
        static_cast<std::uint16_t>((((word0 >> kRoutePairShift) & kRoutePairMask) << 1) | lane));
    if (!on_chip(header.tile)) detail::throw_host_off_chip(header.tile, "route");

    const PacketFormat format =
        (word0 & kLongBit) != 0 ? PacketFormat::kLong : PacketFormat::kShort;
    const std::uint32_t length = word1 & kLengthMask;
    if ((word0 & kReadRequestBit) != 0) {
      header.direction = HostDirection::kHostToDevice;
      header.tile_address = kH2dWindow.begin + (word0 & kAddressFieldMask) * kH2dAddressUnit;
      const std::uint32_t end_bits = word0 & kStreamEndBits;
      if (end_bits != 0 && end_bits != kStreamEndBits) {
        throw HostExchangeError(
            fmt::format("stream-end bits {:#010x} are neither both set nor both clear", end_bits));
      }
      header.stream_end = end_bits != 0;
    } else {
      header.direction = HostDirection::kDeviceToHost;
    }
    const std::uint64_t offset_units = (word1 >> kHostOffsetShift) & kHostOffsetFieldMax;
    header.host_offset = offset_units * unit_bytes(format);
    if (format == PacketFormat::kLong) {
      header.size =
          (length == 0 ? kLongPacketMaxBytes / kLongPacketUnit : length) * kLongPacketUnit;
    } else {
      header.size = length * kWordBytes;  // 0: the zero-byte read, checked by the encoder
    }

    // The encoder checks every rule; bits it would not set are reserved.
    const PacketWords canonical = encode_packet_header(header);
    if (canonical != PacketWords{word0, word1}) {
      throw HostExchangeError(fmt::format("{}: reserved bits [{:#010x}, {:#010x}] are set",
                                          header_name(header), word0 ^ canonical[0],
                                          word1 ^ canonical[1]));
    }
    return header;
  });
}

// ---------------------------------------------------------------------------
// Splitting

std::ostream& operator<<(std::ostream& out, const HostChunk& chunk) {
  return out << fmt::format("{{host_offset {:#x}, size {}}}", chunk.host_offset, chunk.size);
}

std::vector<HostChunk> split_host_transfer(HostDirection direction, std::uint64_t host_offset,
                                           std::uint32_t size) {
  const auto what = fmt::format("{} transfer", direction_name(direction));
  if (size == 0) throw HostExchangeError(fmt::format("{}: size is 0", what));
  if (host_offset % kWordBytes != 0) {
    throw HostExchangeError(
        fmt::format("{}: host_offset {:#x} is not 4-byte aligned", what, host_offset));
  }
  if (size % kWordBytes != 0) {
    throw HostExchangeError(fmt::format("{}: size {} is not a multiple of 4", what, size));
  }
  const std::uint64_t end = checked_add(host_offset, std::uint64_t{size}, what + " end");
  const std::uint64_t max = max_packet_bytes(direction);

  std::vector<HostChunk> chunks;
  for (std::uint64_t offset = host_offset; offset < end;) {
    const std::uint64_t in_page = std::min(end - offset, kHostPageBytes - offset % kHostPageBytes);
    std::uint64_t bytes = kShortStepBytes;
    if (offset % kLongPacketUnit == 0 && in_page >= kLongPacketUnit) {
      bytes = std::min(in_page, max) / kLongPacketUnit * kLongPacketUnit;
    } else if (in_page <= kShortPacketMaxBytes) {
      bytes = in_page;
    }
    chunks.push_back(HostChunk{offset, static_cast<std::uint32_t>(bytes)});
    offset += bytes;
  }
  return chunks;
}

// ---------------------------------------------------------------------------
// Target code

std::vector<std::uint32_t> HostProgram::encode() const {
  std::vector<std::uint32_t> words;
  words.reserve(instructions.size());
  for (const auto& instruction : instructions) isa::encode_into(instruction, words);
  return words;
}

HostProgram TargetCode::standalone() const {
  HostProgram program;
  program.instructions = dcount_setup;
  program.instructions.insert(program.instructions.end(), transfer.begin(), transfer.end());
  program.instructions.emplace_back(isa::Br{isa::kReturnReg});
  program.packets.push_back(packets);
  return program;
}

namespace {

std::vector<isa::Instruction> dcount_setup(std::uint32_t words) {
  return {isa::Setzi{isa::kScratchReg, words},
          isa::Put{isa::Csr::kIncomingDcount, isa::kScratchReg}};
}

// Encodes each chunk's header, naming the chunk when one does not fit.
template <class MakeHeader>
std::vector<std::uint32_t> encode_chunk_headers(const std::vector<HostChunk>& chunks,
                                                MakeHeader make_header) {
  std::vector<std::uint32_t> words;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    const PacketWords header =
        with_context(fmt::format("chunk {} ({} B at host offset {:#x})", i, chunks[i].size,
                                 chunks[i].host_offset),
                     [&] { return encode_packet_header(make_header(i, chunks[i])); });
    words.insert(words.end(), header.begin(), header.end());
  }
  return words;
}

void require_size(std::uint32_t size, std::string_view what) {
  if (size == 0) throw HostExchangeError(fmt::format("{}: size is 0", what));
}

}  // namespace

TargetCode h2d_target_code(const H2dTransfer& transfer) {
  return with_context(
      fmt::format("H2D transfer to {} at {:#x} ({} B from host offset {:#x})", transfer.tile,
                  transfer.tile_address, transfer.size, transfer.host_offset),
      [&] {
        if (!on_chip(transfer.tile)) detail::throw_host_off_chip(transfer.tile, "tile");
        require_size(transfer.size, "H2D transfer");
        if (!range_in(kH2dWindow, transfer.tile_address, transfer.size)) {
          throw HostExchangeError(fmt::format(
              "destination [{:#x}, {:#x}) is not inside the H2D window {}", transfer.tile_address,
              std::uint64_t{transfer.tile_address} + transfer.size, kH2dWindow));
        }
        const auto chunks =
            split_host_transfer(HostDirection::kHostToDevice, transfer.host_offset, transfer.size);
        const AddressRange packets = packet_range(
            transfer.packet_address, chunks.size() * kPacketHeaderWords, "packet_address");
        const AddressRange destination(transfer.tile_address,
                                       transfer.tile_address + transfer.size);
        if (packets.overlaps(destination)) {
          throw HostExchangeError(fmt::format(
              "the request headers at {} overlap the destination {}", packets, destination));
        }

        TargetCode code;
        code.tile = transfer.tile;
        code.packets.address = transfer.packet_address;
        code.packets.words = encode_chunk_headers(chunks, [&](std::size_t i, const HostChunk& c) {
          const auto delta = static_cast<std::uint32_t>(c.host_offset - transfer.host_offset);
          return h2d_request(transfer.tile, transfer.tile_address + delta, c.host_offset, c.size,
                             i + 1 == chunks.size());
        });
        code.dcount_setup = dcount_setup(transfer.size / kWordBytes);
        code.transfer.emplace_back(
            isa::Send{kPacketHeaderWords, transfer.packet_address / kWordBytes, kHostSendControl});
        for (std::size_t i = 1; i < chunks.size(); ++i) {
          code.transfer.emplace_back(isa::SendOff{kPacketHeaderWords, 0, kHostSendControl});
        }
        code.transfer.emplace_back(isa::Sync{kSyncHostReceive});
        return code;
      });
}

TargetCode d2h_target_code(const D2hTransfer& transfer) {
  return with_context(
      fmt::format("D2H transfer from {} at {:#x} ({} B to host offset {:#x})", transfer.tile,
                  transfer.tile_address, transfer.size, transfer.host_offset),
      [&] {
        if (!on_chip(transfer.tile)) detail::throw_host_off_chip(transfer.tile, "tile");
        require_size(transfer.size, "D2H transfer");
        if (!is_word_aligned(transfer.tile_address)) {
          throw HostExchangeError(
              fmt::format("tile_address {:#x} is not 4-byte aligned", transfer.tile_address));
        }
        if (!range_in(kSram, transfer.tile_address, transfer.size)) {
          throw HostExchangeError(
              fmt::format("source [{:#x}, {:#x}) leaves tile SRAM {}", transfer.tile_address,
                          std::uint64_t{transfer.tile_address} + transfer.size, kSram));
        }
        const auto chunks =
            split_host_transfer(HostDirection::kDeviceToHost, transfer.host_offset, transfer.size);
        (void)packet_range(transfer.packet_address, (chunks.size() + 1) * kPacketHeaderWords,
                           "packet_address");

        TargetCode code;
        code.tile = transfer.tile;
        code.packets.address = transfer.packet_address;
        code.packets.words = encode_chunk_headers(chunks, [&](std::size_t, const HostChunk& c) {
          return d2h_request(transfer.tile, c.host_offset, c.size);
        });
        const PacketWords close = with_context("close packet", [&] {
          return encode_packet_header(zero_byte_read(transfer.tile, transfer.close_address));
        });
        code.packets.words.insert(code.packets.words.end(), close.begin(), close.end());

        code.dcount_setup = dcount_setup(1);
        std::uint32_t header_address = transfer.packet_address;
        for (const HostChunk& chunk : chunks) {
          const auto delta = static_cast<std::uint32_t>(chunk.host_offset - transfer.host_offset);
          const std::uint32_t words = chunk.size / kWordBytes;
          code.transfer.emplace_back(
              isa::Send{kPacketHeaderWords, header_address / kWordBytes, kHostSendControl});
          code.transfer.emplace_back(
              isa::Send{words, (transfer.tile_address + delta) / kWordBytes, kHostSendControl});
          if (words < kD2hMinPayloadEvents) {
            code.transfer.emplace_back(isa::Delay{kD2hMinPayloadEvents - words});
          }
          header_address += kPacketHeaderBytes;
        }
        code.transfer.emplace_back(
            isa::Send{kPacketHeaderWords, header_address / kWordBytes, kHostSendControl});
        code.transfer.emplace_back(isa::Sync{kSyncHostReceive});
        return code;
      });
}

// ---------------------------------------------------------------------------
// Host-phase programs

namespace {

void append(std::vector<isa::Instruction>& out, const std::vector<isa::Instruction>& more) {
  out.insert(out.end(), more.begin(), more.end());
}

// Selects `mux` as this tile's receive source, then waits in `entry_zone`.
void append_entry(std::vector<isa::Instruction>& out, PhysicalTile tile, std::uint32_t entry_zone) {
  out.emplace_back(isa::Setzi{isa::kScratchReg, host_mux(tile)});
  out.emplace_back(isa::Put{isa::Csr::kIncomingMux, isa::kScratchReg});
  out.emplace_back(isa::Sync{entry_zone});
}

// Everyone leaves a host phase through `sync 7`, then stops listening to the host.
void append_exit(std::vector<isa::Instruction>& out) {
  out.emplace_back(isa::Sync{kSyncAll});
  out.emplace_back(isa::Setzi{isa::kScratchReg, kNeutralMux});
  out.emplace_back(isa::Put{isa::Csr::kIncomingMux, isa::kScratchReg});
  out.emplace_back(isa::Br{isa::kReturnReg});
}

PacketBlock xreq_block(const XreqBitmap& bitmap, std::uint32_t packet_address) {
  return PacketBlock{packet_address, {bitmap.word0(), bitmap.word1()}};
}

}  // namespace

HostProgram xreq_only_program(const XreqBitmap& bitmap, std::uint32_t packet_address) {
  if (bitmap.empty()) {
    throw HostExchangeError(
        fmt::format("XREQ-only program for {}: the bitmap names no target", bitmap.owner()));
  }
  if (bitmap.contains(bitmap.owner())) {
    throw HostExchangeError(
        fmt::format("XREQ-only program for {}: the owner is one of its own targets; it needs "
                    "owner_target_program",
                    bitmap.owner()));
  }
  HostProgram program;
  append_entry(program.instructions, bitmap.owner(), kSyncHostEntry);
  program.instructions.emplace_back(xreq_send(packet_address));
  append_exit(program.instructions);
  program.packets.push_back(xreq_block(bitmap, packet_address));
  return program;
}

HostProgram target_only_program(const TargetCode& target) {
  if (!on_chip(target.tile)) detail::throw_host_off_chip(target.tile, "target-only program");
  if (is_xreq_owner(target.tile)) {
    throw HostExchangeError(
        fmt::format("target-only program for {}: the tile is its own XREQ owner; it needs "
                    "owner_target_program",
                    target.tile));
  }
  HostProgram program;
  append_entry(program.instructions, target.tile, kSyncAll);
  append(program.instructions, target.dcount_setup);
  append(program.instructions, target.transfer);
  append_exit(program.instructions);
  program.packets.push_back(target.packets);
  return program;
}

HostProgram owner_target_program(const XreqBitmap& bitmap, const TargetCode& target,
                                 std::uint32_t xreq_packet_address) {
  const auto what = fmt::format("owner-target program for {}", target.tile);
  if (target.tile != bitmap.owner()) {
    throw HostExchangeError(fmt::format("{}: the XREQ bitmap belongs to {}", what, bitmap.owner()));
  }
  if (!bitmap.contains(target.tile)) {
    throw HostExchangeError(
        fmt::format("{}: the XREQ bitmap [{:#x}, {:#x}] does not name the tile itself", what,
                    bitmap.word0(), bitmap.word1()));
  }
  const AddressRange xreq_range =
      packet_range(xreq_packet_address, kPacketHeaderWords, "XREQ packet_address");
  const AddressRange target_range =
      packet_range(target.packets.address, target.packets.words.size(), "target packet address");
  if (xreq_range.overlaps(target_range)) {
    throw HostExchangeError(fmt::format("{}: the XREQ packet {} overlaps the target's packets {}",
                                        what, xreq_range, target_range));
  }
  HostProgram program;
  append_entry(program.instructions, target.tile, kSyncHostEntry);
  append(program.instructions, target.dcount_setup);
  program.instructions.emplace_back(xreq_send(xreq_packet_address));
  append(program.instructions, target.transfer);
  append_exit(program.instructions);
  program.packets = {xreq_block(bitmap, xreq_packet_address), target.packets};
  return program;
}

HostProgram inactive_program() {
  HostProgram program;
  program.instructions = {isa::Sans{kSansHost}, isa::Sync{kSyncLocal}, isa::Br{isa::kReturnReg}};
  return program;
}

}  // namespace tessera::target
