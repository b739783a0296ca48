// Host exchange (docs/reference/ipu21-target.md §4.5, §6): golden vectors
// for XREQ, host mux, packet headers, splitting, target programs and
// wrappers; a failing case for every validation rule; and properties.
#include "target/host_exchange.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "support/checked.hpp"
#include "target/assembly.hpp"

namespace tessera::target {
namespace {

using isa::Instruction;
using Words = std::vector<std::uint32_t>;

constexpr PhysicalTile tile(std::uint16_t id) { return PhysicalTile(id); }

// Runs `body`, expects it to throw E, and returns the error's full text
// (context and message) so a test can check that it names the bad argument.
template <class E = HostExchangeError>
std::string error_text(const std::function<void()>& body) {
  try {
    body();
  } catch (const E& error) {
    return error.what();
  } catch (const std::exception& other) {
    return std::string("wrong exception type: ") + other.what();
  }
  return "no error";
}

#define EXPECT_ERROR_MENTIONS(statement, fragment)                            \
  do {                                                                        \
    const std::string text_ = error_text([&] { (void)(statement); });         \
    EXPECT_NE(text_.find(fragment), std::string::npos) << "error: " << text_; \
  } while (false)

// ---------------------------------------------------------------------------
// XREQ and host mux

struct XreqVector {
  std::uint16_t target;
  std::uint16_t owner;
  std::uint32_t word0;
  std::uint32_t word1;
};

// §4.5 XREQ vectors [SDK][T].
const std::vector<XreqVector> kXreqVectors = {
    {260, 4, 0x100, 0},       // t260 → owner 4, [0x100, 0]
    {31, 29, 2, 0},           // t31 → owner 29, [2, 0]
    {81, 17, 4, 0},           // t81 → [4, 0] (owner computed: 81 & 0x3D)
    {768, 0, 0, 1},           // t768 → [0, 1]
    {1471, 61, 0, 1u << 21},  // t1471 → [0, 1<<21] (owner computed: 1471 & 0x3D)
};

TEST(XreqGolden, OwnerAndBitmap) {
  for (const auto& v : kXreqVectors) {
    EXPECT_EQ(xreq_owner(tile(v.target)), tile(v.owner)) << v.target;
    XreqBitmap bitmap(xreq_owner(tile(v.target)));
    bitmap.add(tile(v.target));
    EXPECT_EQ(bitmap.word0(), v.word0) << v.target;
    EXPECT_EQ(bitmap.word1(), v.word1) << v.target;
    EXPECT_EQ(bitmap.targets(), std::vector<PhysicalTile>{tile(v.target)}) << v.target;
  }
}

TEST(XreqGolden, OwnerSendsTheBitmapWithSend2Sctl3) {
  // §4.5: t260's owner sends its bitmap from pkt 0x50120 as 0x782A0243 [SDK][T].
  const isa::Send send = xreq_send(0x50120);
  EXPECT_EQ(send, (isa::Send{2, 0x50120 / 4, 3}));
  EXPECT_EQ(isa::encode(send).words[0], 0x782A0243u);
}

TEST(XreqBitmap, SeveralTargetsAreOred) {
  // §4.5 "Several targets are ORed together": 260 (bit 8) and 4 (bit 0),
  // 6 (bit 1) and 1414 (row 22, lane 1: bit 45) all belong to owner 4.
  XreqBitmap bitmap(tile(4));
  bitmap.add(tile(260)).add(tile(4)).add(tile(6)).add(tile(1414)).add(tile(260));
  EXPECT_EQ(bitmap.word0(), 0x103u);
  EXPECT_EQ(bitmap.word1(), 1u << 21);
  EXPECT_EQ(bitmap.targets(), (std::vector<PhysicalTile>{tile(4), tile(6), tile(260), tile(1414)}));
  EXPECT_EQ(XreqBitmap::from_words(tile(4), 0x103, 1u << 21), bitmap);
  EXPECT_TRUE(bitmap.contains(tile(6)));
  EXPECT_FALSE(bitmap.contains(tile(68)));
  EXPECT_FALSE(bitmap.contains(tile(5)));     // another owner's tile
  EXPECT_FALSE(bitmap.contains(tile(5000)));  // off the chip
}

TEST(XreqExhaustive, EveryTileHasOneOwnerAndADistinctBit) {
  std::map<std::uint16_t, std::set<unsigned>> bits_by_owner;
  for (std::uint16_t t = 0; t < kTileCount; ++t) {
    const PhysicalTile owner = xreq_owner(tile(t));
    ASSERT_TRUE(is_xreq_owner(owner)) << t;
    ASSERT_EQ(row(owner), 0) << t;
    ASSERT_EQ(is_xreq_owner(tile(t)), owner == tile(t)) << t;
    const unsigned bit = xreq_bit(tile(t));
    ASSERT_LT(bit, kXreqBits) << t;
    // (row, lane) → bit is injective within an owner.
    ASSERT_TRUE(bits_by_owner[owner.value].insert(bit).second) << t;
    XreqBitmap bitmap(owner);
    bitmap.add(tile(t));
    ASSERT_EQ(bitmap.targets(), std::vector<PhysicalTile>{tile(t)}) << t;
    ASSERT_EQ((std::uint64_t{bitmap.word1()} << 24) | bitmap.word0(), std::uint64_t{1} << bit);
    // The host endpoint a tile listens to is its owner's column.
    ASSERT_EQ(host_mux(tile(t)), kHostMuxBase + owner.value) << t;
  }
  EXPECT_EQ(bits_by_owner.size(), 32u);
  for (const auto& [owner, bits] : bits_by_owner) EXPECT_EQ(bits.size(), kXreqBits) << owner;
}

TEST(HostMuxGolden, Vectors) {
  // §4.5 host mux vectors [T]; 0x640 is the neutral value (§3, §4.1 setzi $m8,0x640).
  EXPECT_EQ(host_mux(tile(116)), 0x634u);
  EXPECT_EQ(host_mux(tile(582)), 0x604u);
  EXPECT_EQ(host_mux(tile(1173)), 0x615u);
  EXPECT_EQ(kNeutralMux, 0x640u);
}

TEST(XreqValidation, OffChipTilesAreRejected) {
  EXPECT_ERROR_MENTIONS(xreq_owner(tile(1472)), "p1472 is not a C600 tile");
  EXPECT_ERROR_MENTIONS(xreq_bit(tile(0xFFFF)), "XREQ target: p65535");
  EXPECT_ERROR_MENTIONS(host_mux(tile(1472)), "host mux tile: p1472");
  EXPECT_ERROR_MENTIONS(XreqBitmap(tile(4)).add(tile(1472)), "p1472");
  EXPECT_ERROR_MENTIONS(XreqBitmap(tile(1536)), "XREQ owner: p1536");
}

TEST(XreqValidation, OwnerMustBeAnOwnerTile) {
  EXPECT_ERROR_MENTIONS(XreqBitmap(tile(2)), "p2 owns no XREQs");
  EXPECT_ERROR_MENTIONS(XreqBitmap(tile(64)), "p64's owner is p0");
}

TEST(XreqValidation, TargetsOfAnotherOwnerAreRejected) {
  EXPECT_ERROR_MENTIONS(XreqBitmap(tile(4)).add(tile(5)), "target p5 belongs to owner p5");
  EXPECT_ERROR_MENTIONS(XreqBitmap(tile(0)).add(tile(260)), "belongs to owner p4");
}

TEST(XreqValidation, BitsAbove45AreRejected) {
  EXPECT_ERROR_MENTIONS(XreqBitmap::from_words(tile(4), 1u << 24, 0), "bits above bit 45");
  EXPECT_ERROR_MENTIONS(XreqBitmap::from_words(tile(4), 0, 1u << 22), "bits above bit 45");
  EXPECT_NO_THROW(XreqBitmap::from_words(tile(4), 0xFFFFFF, 0x3FFFFF));
}

TEST(XreqValidation, PacketAddressMustBe8AlignedInSram) {
  EXPECT_ERROR_MENTIONS(xreq_send(0x50124), "XREQ packet_address 0x50124 is not 8-byte aligned");
  EXPECT_ERROR_MENTIONS(xreq_send(0x4BFF8), "leaves tile SRAM");
  EXPECT_ERROR_MENTIONS(xreq_send(0xE7FFC), "not 8-byte aligned");
  EXPECT_ERROR_MENTIONS(xreq_send(0xE8000), "leaves tile SRAM");
  EXPECT_NO_THROW(xreq_send(0xE7FF8));
}

// ---------------------------------------------------------------------------
// Packet headers

struct HeaderVector {
  PacketHeader header;
  PacketWords words;
  const char* source;
};

// clang-format off
const std::vector<HeaderVector> kHeaderVectors = {
    {d2h_request(tile(0), 0x40, 64), {0xA0000000, 0x00000011}, "4.5 D2H(t0, off 0x40, 64 B) [T][SDK]"},
    {h2d_request(tile(0), 0x50120, 0x40, 64), {0xEC000209, 0x00000011}, "4.5 H2D(t0, 0x50120, off 0x40, 64 B) [T][SDK]"},
    {zero_byte_read(tile(2), 0x50180), {0xCC01020C, 0x00000000}, "4.5 zero-read(t2, 0x50180) [T][SDK]"},
    {d2h_request(tile(1409), 0x40, 64), {0xA2C08000, 0x80000011}, "4.5 D2H(t1409, off 0x40, 64 B) [T][SDK]"},
    {h2d_request(tile(0), 0x50180, 0x1000, 4), {0xCC00020C, 0x00004001}, "4.5 H2D(t0, 0x50180, off 0x1000, 4 B) [T][SDK]"},
    {h2d_request(tile(260), 0x50120, 0x40, 64), {0xEC820209, 0x00000011}, "4.5 t260 H2D program packet [SDK][T]"},
    {d2h_request(tile(260), 0x40, 64), {0xA0820000, 0x00000011}, "4.5 t260 D2H program header [SDK][T]"},
    {zero_byte_read(tile(260), 0x50180), {0xCC82020C, 0x00000000}, "4.5 t260 D2H close packet [SDK][T]"},
    // Computed from the §4.5 rules: stream end cleared, 1024 B as length 0, short D2H.
    {h2d_request(tile(0), 0x50120, 0x40, 64, false), {0xE0000209, 0x00000011}, "4.5 non-final H2D (computed)"},
    {h2d_request(tile(1), 0x50000, 0x400, 1024), {0xEC008200, 0x80000100}, "4.5 1024 B → 0 (computed)"},
    {d2h_request(tile(3), 0x8, 60), {0x80018000, 0x8000002F}, "4.5 short D2H (computed)"},
};
// clang-format on

TEST(PacketHeaderGolden, EncodeGivesTheReferenceWords) {
  for (const auto& v : kHeaderVectors) {
    EXPECT_EQ(encode_packet_header(v.header), v.words) << v.source;
  }
}

TEST(PacketHeaderGolden, ParseGivesTheHeader) {
  for (const auto& v : kHeaderVectors) {
    EXPECT_EQ(parse_packet_header(v.words[0], v.words[1]), v.header) << v.source;
  }
}

TEST(PacketHeaderGolden, FormatFollowsTheSize) {
  EXPECT_EQ(packet_format(4), PacketFormat::kShort);
  EXPECT_EQ(packet_format(60), PacketFormat::kShort);
  EXPECT_EQ(packet_format(64), PacketFormat::kLong);
  EXPECT_EQ(packet_format(1024), PacketFormat::kLong);
}

TEST(PacketHeaderValidation, SizeMustFitAFormat) {
  for (const std::uint32_t size : {0u, 2u, 62u, 96u, 100u, 1025u, 1088u, 2048u}) {
    EXPECT_ERROR_MENTIONS(packet_format(size), fmt::format("packet size {} fits no", size));
  }
  EXPECT_ERROR_MENTIONS(encode_packet_header(d2h_request(tile(7), 0, 100)),
                        "D2H header for p7: packet size 100");
  EXPECT_ERROR_MENTIONS(encode_packet_header(h2d_request(tile(7), 0x50000, 0, 2)),
                        "H2D header for p7: packet size 2");
}

TEST(PacketHeaderValidation, TileMustBeOnChip) {
  EXPECT_ERROR_MENTIONS(encode_packet_header(d2h_request(tile(1472), 0, 64)),
                        "packet header tile: p1472");
  EXPECT_ERROR_MENTIONS(encode_packet_header(zero_byte_read(tile(4095), 0x50000)), "p4095");
}

TEST(PacketHeaderValidation, H2dTileAddressMustBeInTheWindowAnd32Aligned) {
  EXPECT_ERROR_MENTIONS(encode_packet_header(h2d_request(tile(0), 0x4FFE0, 0, 4)),
                        "tile_address 0x4ffe0 is outside the H2D window");
  EXPECT_ERROR_MENTIONS(encode_packet_header(h2d_request(tile(0), 0x54000, 0, 4)),
                        "tile_address 0x54000 is outside the H2D window");
  EXPECT_ERROR_MENTIONS(encode_packet_header(h2d_request(tile(0), 0x50010, 0, 4)),
                        "tile_address 0x50010 is not 32-byte aligned");
  EXPECT_ERROR_MENTIONS(encode_packet_header(zero_byte_read(tile(0), 0x50164)),
                        "zero-byte read for p0: tile_address 0x50164");
  // [INF] the payload must not run past the window either.
  EXPECT_ERROR_MENTIONS(encode_packet_header(h2d_request(tile(0), 0x53FE0, 0, 64)),
                        "payload [0x53fe0, 0x54020) runs past the end of the H2D window");
  EXPECT_NO_THROW(encode_packet_header(h2d_request(tile(0), 0x53FE0, 0, 32)));
}

TEST(PacketHeaderValidation, HostOffsetMustBeAlignedToTheUnit) {
  EXPECT_ERROR_MENTIONS(encode_packet_header(d2h_request(tile(0), 0x42, 8)),
                        "host_offset 0x42 is not a multiple of 4 (short packet)");
  EXPECT_ERROR_MENTIONS(encode_packet_header(h2d_request(tile(0), 0x50000, 0x20, 64)),
                        "host_offset 0x20 is not a multiple of 64 (long packet)");
}

TEST(PacketHeaderValidation, HostOffsetFieldMustStayBelowBit31) {
  // (hostoff >> sh) << 4 | len must be ≤ 0x7FFFFFFF.
  EXPECT_NO_THROW(encode_packet_header(d2h_request(tile(0), 0x1FFFFFFC, 4)));
  EXPECT_ERROR_MENTIONS(encode_packet_header(d2h_request(tile(0), 0x20000000, 4)),
                        "host_offset 0x20000000 is beyond the largest short packet offset");
  EXPECT_NO_THROW(encode_packet_header(h2d_request(tile(0), 0x50000, 0x1FFFFFFC0, 64)));
  EXPECT_ERROR_MENTIONS(encode_packet_header(h2d_request(tile(0), 0x50000, 0x200000000, 64)),
                        "host_offset 0x200000000 is beyond the largest long packet offset");
  EXPECT_EQ(encode_packet_header(d2h_request(tile(1), 0x1FFFFFFC0, 1024))[1], 0xFFFFFFF0u);
}

TEST(PacketHeaderValidation, D2hHasNoTileAddressStreamEndOrZeroSize) {
  PacketHeader header = d2h_request(tile(0), 0, 64);
  header.tile_address = 0x50000;
  EXPECT_ERROR_MENTIONS(encode_packet_header(header), "tile_address 0x50000 must be 0");
  header = d2h_request(tile(0), 0, 64);
  header.stream_end = false;
  EXPECT_ERROR_MENTIONS(encode_packet_header(header), "D2H header for p0: stream_end must be true");
  EXPECT_ERROR_MENTIONS(encode_packet_header(d2h_request(tile(0), 0, 0)),
                        "D2H header for p0: size 0");
}

TEST(PacketHeaderValidation, ZeroByteReadHasNoOffsetAndEndsItsStream) {
  PacketHeader header = zero_byte_read(tile(2), 0x50180);
  header.host_offset = 0x40;
  EXPECT_ERROR_MENTIONS(encode_packet_header(header),
                        "zero-byte read for p2: host_offset 0x40 must be 0");
  header = zero_byte_read(tile(2), 0x50180);
  header.stream_end = false;
  EXPECT_ERROR_MENTIONS(encode_packet_header(header),
                        "zero-byte read for p2: stream_end must be true");
}

TEST(PacketHeaderParse, RejectsWordsThatAreNoHeader) {
  // Bit 31 clear.
  EXPECT_ERROR_MENTIONS(parse_packet_header(0x4C00020C, 0), "bit 31 of word 0 is clear");
  // Route lane in word 0 without its copy in word 1.
  EXPECT_ERROR_MENTIONS(parse_packet_header(0xA2C08000, 0x00000011), "lane bits disagree");
  // A route naming tile 1472 (t >> 1 = 736).
  EXPECT_ERROR_MENTIONS(parse_packet_header(0xA2E00000, 0x00000011), "route: p1472");
  // Only one of the two stream-end bits.
  EXPECT_ERROR_MENTIONS(parse_packet_header(0xE4000209, 0x00000011), "stream-end bits 0x04000000");
  // A short D2H with length 0.
  EXPECT_ERROR_MENTIONS(parse_packet_header(0x80000000, 0x00000010), "D2H header for p0: size 0");
  // A zero-byte read with a host offset.
  EXPECT_ERROR_MENTIONS(parse_packet_header(0xCC00020C, 0x00000010), "host_offset 0x4 must be 0");
  // Reserved bits: an address field in a D2H header, bit 28, bits 14..10, no H2D marker.
  EXPECT_ERROR_MENTIONS(parse_packet_header(0xA0000009, 0x00000011),
                        "reserved bits [0x00000009, 0x00000000]");
  EXPECT_ERROR_MENTIONS(parse_packet_header(0xFC000209, 0x00000011), "reserved bits [0x10000000");
  EXPECT_ERROR_MENTIONS(parse_packet_header(0xEC000609, 0x00000011), "reserved bits [0x00000400");
  EXPECT_ERROR_MENTIONS(parse_packet_header(0xEC000009, 0x00000011), "reserved bits [0x00000200");
  EXPECT_ERROR_MENTIONS(parse_packet_header(0xAC000000, 0x00000011), "reserved bits [0x0c000000");
  // The context names the words.
  EXPECT_ERROR_MENTIONS(parse_packet_header(0x4C00020C, 0),
                        "host packet header [0x4c00020c, 0x00000000]");
  // A payload running past the window: field 511, 64 bytes.
  EXPECT_ERROR_MENTIONS(parse_packet_header(0xEC0003FF, 0x00000001),
                        "runs past the end of the H2D window");
}

// ---------------------------------------------------------------------------
// Splitting

struct SplitVector {
  HostDirection direction;
  std::uint64_t host_offset;
  std::uint32_t size;
  std::vector<std::uint32_t> sizes;
  const char* source;
};

// clang-format off
const std::vector<SplitVector> kSplitVectors = {
    {HostDirection::kHostToDevice, 4, 100, {32, 32, 36}, "4.5 H2D (t1409, 0x50000, off 4, 100 B) [T]"},
    // Computed from the §4.5 rule.
    {HostDirection::kHostToDevice, 0, 4096, {1024, 1024, 1024, 1024}, "H2D max 1024 (computed)"},
    {HostDirection::kDeviceToHost, 0, 1024, {256, 256, 256, 256}, "D2H max 256 (computed)"},
    {HostDirection::kHostToDevice, 4032, 128, {64, 64}, "page crossing, long (computed)"},
    {HostDirection::kDeviceToHost, 4088, 16, {8, 8}, "page crossing, short (computed)"},
    {HostDirection::kHostToDevice, 32, 200, {32, 128, 40}, "short, long, short tail (computed)"},
    {HostDirection::kDeviceToHost, 64, 1000, {256, 256, 256, 192, 40}, "long run, short tail (computed)"},
    {HostDirection::kHostToDevice, 0x1000, 4, {4}, "4 B (computed)"},
    {HostDirection::kHostToDevice, 8, 60, {60}, "≤ 60 B in one short (computed)"},
};
// clang-format on

TEST(PacketSplittingGolden, Vectors) {
  for (const auto& v : kSplitVectors) {
    const auto chunks = split_host_transfer(v.direction, v.host_offset, v.size);
    std::vector<std::uint32_t> sizes;
    for (const auto& chunk : chunks) sizes.push_back(chunk.size);
    EXPECT_EQ(sizes, v.sizes) << v.source;
    ASSERT_FALSE(chunks.empty());
    EXPECT_EQ(chunks.front().host_offset, v.host_offset) << v.source;
  }
}

TEST(PacketSplittingValidation, RejectsBadRanges) {
  EXPECT_ERROR_MENTIONS(split_host_transfer(HostDirection::kHostToDevice, 0, 0),
                        "H2D transfer: size is 0");
  EXPECT_ERROR_MENTIONS(split_host_transfer(HostDirection::kDeviceToHost, 2, 8),
                        "D2H transfer: host_offset 0x2 is not 4-byte aligned");
  EXPECT_ERROR_MENTIONS(split_host_transfer(HostDirection::kHostToDevice, 0, 6),
                        "size 6 is not a multiple of 4");
  const std::string text = error_text<ArithmeticError>(
      [] { (void)split_host_transfer(HostDirection::kHostToDevice, 0xFFFFFFFFFFFFFFFC, 8); });
  EXPECT_NE(text.find("H2D transfer end: 0xfffffffffffffffc + 0x8 overflows"), std::string::npos)
      << text;
}

// ---------------------------------------------------------------------------
// Target programs

TEST(HostTargetProgramGolden, H2dT260) {
  // §4.5 t260 oracle: H2D (0x50120, off 0x40, 64 B, pkt 0x50170) [SDK][T].
  const TargetCode code = h2d_target_code({tile(260), 0x50120, 0x40, 64, 0x50170});
  const HostProgram program = code.standalone();
  EXPECT_EQ(program.encode(), (Words{0x19800010, 0x438080A6, 0x782A02E3, 0x41800000, 0x43A00000}));
  ASSERT_EQ(program.packets.size(), 1u);
  EXPECT_EQ(program.packets[0], (PacketBlock{0x50170, {0xEC820209, 0x00000011}}));
}

TEST(HostTargetProgramGolden, D2hT260) {
  // §4.5 t260 oracle: D2H (0x50120, off 0x40, 64 B, pkt 0x50160, close 0x50180) [SDK][T].
  const TargetCode code = d2h_target_code({tile(260), 0x50120, 0x40, 64, 0x50160, 0x50180});
  const HostProgram program = code.standalone();
  EXPECT_EQ(program.encode(), (Words{0x19800001, 0x438080A6, 0x782A02C3, 0x79EA0243, 0x40A00001,
                                     0x782A02D3, 0x41800000, 0x43A00000}));
  ASSERT_EQ(program.packets.size(), 1u);
  EXPECT_EQ(program.packets[0],
            (PacketBlock{0x50160, {0xA0820000, 0x00000011, 0xCC82020C, 0x00000000}}));
}

TEST(HostTargetProgram, MultiChunkH2dSendsFurtherHeadersWithSendoff) {
  // §4.5 [T] rule: the first header via send 2, every further one via
  // sendoff 2; the words are computed for the §4.5 splitting vector.
  const TargetCode code = h2d_target_code({tile(1409), 0x50000, 4, 100, 0x50100});
  EXPECT_EQ(code.dcount_setup,
            (std::vector<Instruction>{isa::Setzi{isa::Reg::m8, 25},
                                      isa::Put{isa::Csr::kIncomingDcount, isa::Reg::m8}}));
  EXPECT_EQ(code.transfer,
            (std::vector<Instruction>{isa::Send{2, 0x50100 / 4, 3}, isa::SendOff{2, 0, 3},
                                      isa::SendOff{2, 0, 3}, isa::Sync{0}}));
  // 32 B at 0x50000 (host 4), 32 B at 0x50020 (host 36), 36 B at 0x50040
  // (host 68); only the last keeps the stream-end bits.
  EXPECT_EQ(code.packets.words,
            (Words{0xC2C08200, 0x80000018, 0xC2C08201, 0x80000098, 0xCEC08202, 0x80000119}));
  for (std::size_t i = 0; i < 3; ++i) {
    const PacketHeader header =
        parse_packet_header(code.packets.words[2 * i], code.packets.words[2 * i + 1]);
    EXPECT_EQ(header.stream_end, i == 2);
    EXPECT_EQ(header.tile, tile(1409));
  }
}

TEST(HostTargetProgram, MultiChunkD2hPadsEachShortPayloadAndClosesOnce) {
  // [INF] reading of §4.5 (see host_exchange.hpp): 64 B up to the page end,
  // then 256 B; each header via send; one close after the last chunk.
  const TargetCode code = d2h_target_code({tile(5), 0x60000, 0xFC0, 320, 0x50008, kD2hClose});
  EXPECT_EQ(code.transfer,
            (std::vector<Instruction>{isa::Send{2, 0x50008 / 4, 3}, isa::Send{16, 0x60000 / 4, 3},
                                      isa::Delay{2}, isa::Send{2, 0x50010 / 4, 3},
                                      isa::Send{64, 0x60040 / 4, 3}, isa::Send{2, 0x50018 / 4, 3},
                                      isa::Sync{0}}));
  ASSERT_EQ(code.packets.words.size(), 6u);
  EXPECT_EQ(parse_packet_header(code.packets.words[0], code.packets.words[1]),
            d2h_request(tile(5), 0xFC0, 64));
  EXPECT_EQ(parse_packet_header(code.packets.words[2], code.packets.words[3]),
            d2h_request(tile(5), 0x1000, 256));
  EXPECT_EQ(parse_packet_header(code.packets.words[4], code.packets.words[5]),
            zero_byte_read(tile(5), kD2hClose));
}

TEST(HostTargetProgram, D2hPaddingCountsPayloadWordsOnly) {
  // HEAD: each payload spans ≥ 18 events; 8 B = 2 words → delay 16.
  const TargetCode small = d2h_target_code({tile(5), 0x60000, 0, 8});
  EXPECT_EQ(small.transfer[2], Instruction{isa::Delay{16}});
  // 128 B = 32 words: no padding.
  const TargetCode long_one = d2h_target_code({tile(5), 0x60000, 0x40, 128});
  EXPECT_EQ(long_one.transfer,
            (std::vector<Instruction>{isa::Send{2, 0x50008 / 4, 3}, isa::Send{32, 0x60000 / 4, 3},
                                      isa::Send{2, 0x50010 / 4, 3}, isa::Sync{0}}));
}

TEST(HostTargetProgramValidation, H2dTransfer) {
  EXPECT_ERROR_MENTIONS(h2d_target_code({tile(1472), 0x50180, 0, 4}), "tile: p1472");
  EXPECT_ERROR_MENTIONS(h2d_target_code({tile(0), 0x50180, 0, 0}), "H2D transfer: size is 0");
  EXPECT_ERROR_MENTIONS(h2d_target_code({tile(0), 0x60000, 0, 64}),
                        "destination [0x60000, 0x60040) is not inside the H2D window");
  EXPECT_ERROR_MENTIONS(h2d_target_code({tile(0), 0x53FC0, 0, 128}),
                        "destination [0x53fc0, 0x54040)");
  EXPECT_ERROR_MENTIONS(h2d_target_code({tile(0), 0x50180, 0, 64, 0x50184}),
                        "packet_address 0x50184 is not 8-byte aligned");
  EXPECT_ERROR_MENTIONS(h2d_target_code({tile(0), 0x50180, 0, 64, 0xE7FF8 + 8}),
                        "leaves tile SRAM");
  EXPECT_ERROR_MENTIONS(h2d_target_code({tile(0), 0x50000, 4, 100}),
                        "request headers at [0x50008, 0x50020) overlap the destination");
  EXPECT_ERROR_MENTIONS(h2d_target_code({tile(0), 0x50010, 0, 64}),
                        "tile_address 0x50010 is not 32-byte aligned");
  // A transfer crossing a page from a host offset that is not 32-aligned:
  // the chunk after the page boundary would land at 0x50ffc.
  const std::string text = error_text([] {
    (void)h2d_target_code({tile(0), 0x50000, 4, 4096, 0x56000});
  });
  EXPECT_NE(text.find("chunk 127 (4 B at host offset 0x1000)"), std::string::npos) << text;
  EXPECT_NE(text.find("tile_address 0x50ffc is not 32-byte aligned"), std::string::npos) << text;
  EXPECT_NE(text.find("H2D transfer to p0 at 0x50000"), std::string::npos) << text;
}

TEST(HostTargetProgramValidation, D2hTransfer) {
  EXPECT_ERROR_MENTIONS(d2h_target_code({tile(2000), 0x60000, 0, 4}), "tile: p2000");
  EXPECT_ERROR_MENTIONS(d2h_target_code({tile(0), 0x60000, 0, 0}), "D2H transfer: size is 0");
  EXPECT_ERROR_MENTIONS(d2h_target_code({tile(0), 0x60002, 0, 4}),
                        "tile_address 0x60002 is not 4-byte aligned");
  EXPECT_ERROR_MENTIONS(d2h_target_code({tile(0), 0xE7FF0, 0, 32}),
                        "source [0xe7ff0, 0xe8010) leaves tile SRAM");
  EXPECT_ERROR_MENTIONS(d2h_target_code({tile(0), 0x40000, 0, 32}), "leaves tile SRAM");
  EXPECT_ERROR_MENTIONS(d2h_target_code({tile(0), 0x60000, 0, 4, 0x5000C}),
                        "packet_address 0x5000c");
  EXPECT_ERROR_MENTIONS(
      d2h_target_code({tile(0), 0x60000, 0, 4, 0x50008, 0x50170}),
      "close packet: zero-byte read for p0: tile_address 0x50170 is not 32-byte aligned");
  EXPECT_ERROR_MENTIONS(d2h_target_code({tile(0), 0x60000, 0, 4, 0x50008, 0x60000}),
                        "outside the H2D window");
  EXPECT_ERROR_MENTIONS(d2h_target_code({tile(0), 0x60000, 0x20000000, 4}),
                        "beyond the largest short packet offset");
}

// ---------------------------------------------------------------------------
// Wrappers

TEST(HostWrapperGolden, XreqOnlyOwner4) {
  // §4.5 "owner 4 → 19800604 438080A0 4180000F" [T]; the rest is the
  // XREQ-only form: send the bitmap, sync 7, mux 0x640, br $m10.
  const HostProgram program = xreq_only_program(XreqBitmap(tile(4)).add(tile(260)), 0x50120);
  EXPECT_EQ(program.encode(), (Words{0x19800604, 0x438080A0, 0x4180000F, 0x782A0243, 0x41800007,
                                     0x19800640, 0x438080A0, 0x43A00000}));
  EXPECT_EQ(program.packets, (std::vector<PacketBlock>{{0x50120, {0x100, 0}}}));
}

TEST(HostWrapperGolden, TargetOnly260) {
  // §4.5 "target 260 → 19800604 438080A0 41800007 … 41800007 19800640
  // 438080A0 43A00000" [T], with the t260 H2D code in the middle.
  const TargetCode code = h2d_target_code({tile(260), 0x50120, 0x40, 64, 0x50170});
  const HostProgram program = target_only_program(code);
  EXPECT_EQ(program.encode(),
            (Words{0x19800604, 0x438080A0, 0x41800007, 0x19800010, 0x438080A6, 0x782A02E3,
                   0x41800000, 0x41800007, 0x19800640, 0x438080A0, 0x43A00000}));
  EXPECT_EQ(program.packets, std::vector<PacketBlock>{code.packets});
}

TEST(HostWrapperGolden, OwnerTargetTile0) {
  // §4.5 "combined tile 0 → 19800600 438080A0 4180000F" [T]; then the
  // dcount setup, the bitmap send, the rest of the target code (computed).
  const TargetCode code = h2d_target_code({tile(0), 0x50180, 0x1000, 4});
  const HostProgram program = owner_target_program(XreqBitmap(tile(0)).add(tile(0)), code);
  EXPECT_EQ(program.encode(),
            (Words{0x19800600, 0x438080A0, 0x4180000F, 0x19800001, 0x438080A6, 0x782A0003,
                   0x782A0013, 0x41800000, 0x41800007, 0x19800640, 0x438080A0, 0x43A00000}));
  EXPECT_EQ(program.packets,
            (std::vector<PacketBlock>{{0x50000, {1, 0}}, {0x50008, {0xCC00020C, 0x00004001}}}));
}

TEST(HostWrapperGolden, Tile9SelectsHostMux609) {
  // §4.5 "tile 9 → first word 19800609" [T]: tile 9 owns itself.
  const TargetCode code = d2h_target_code({tile(9), 0x60000, 0x40, 64});
  const HostProgram program = owner_target_program(XreqBitmap(tile(9)).add(tile(9)), code);
  EXPECT_EQ(program.encode().front(), 0x19800609u);
}

TEST(HostWrapperGolden, Inactive) {
  // §4.5 / §6: sans 1; sync 1; br $m10.
  EXPECT_EQ(inactive_program().encode(), (Words{0x40C00001, 0x41800001, 0x43A00000}));
  EXPECT_TRUE(inactive_program().packets.empty());
}

TEST(HostWrapperValidation, XreqOnly) {
  EXPECT_ERROR_MENTIONS(xreq_only_program(XreqBitmap(tile(4))), "p4: the bitmap names no target");
  EXPECT_ERROR_MENTIONS(xreq_only_program(XreqBitmap(tile(4)).add(tile(4))),
                        "the owner is one of its own targets");
  EXPECT_ERROR_MENTIONS(xreq_only_program(XreqBitmap(tile(4)).add(tile(260)), 0x50004),
                        "XREQ packet_address 0x50004 is not 8-byte aligned");
}

TEST(HostWrapperValidation, TargetOnly) {
  const TargetCode code = h2d_target_code({tile(4), 0x50180, 0, 64});
  EXPECT_ERROR_MENTIONS(target_only_program(code), "p4: the tile is its own XREQ owner");
  TargetCode off_chip = code;
  off_chip.tile = tile(1500);
  EXPECT_ERROR_MENTIONS(target_only_program(off_chip), "p1500");
}

TEST(HostWrapperValidation, OwnerTarget) {
  const TargetCode code = h2d_target_code({tile(4), 0x50180, 0, 64});
  EXPECT_ERROR_MENTIONS(owner_target_program(XreqBitmap(tile(0)).add(tile(0)), code),
                        "the XREQ bitmap belongs to p0");
  EXPECT_ERROR_MENTIONS(owner_target_program(XreqBitmap(tile(4)).add(tile(260)), code),
                        "does not name the tile itself");
  EXPECT_ERROR_MENTIONS(owner_target_program(XreqBitmap(tile(4)).add(tile(4)), code, 0x5000C),
                        "XREQ packet_address 0x5000c");
  EXPECT_ERROR_MENTIONS(owner_target_program(XreqBitmap(tile(4)).add(tile(4)), code, 0x50008),
                        "the XREQ packet [0x50008, 0x50010) overlaps the target's packets");
}

// ---------------------------------------------------------------------------
// Properties

rc::Gen<HostDirection> any_direction() {
  return rc::gen::element(HostDirection::kHostToDevice, HostDirection::kDeviceToHost);
}

rc::Gen<PhysicalTile> any_tile() {
  return rc::gen::map(rc::gen::inRange<std::uint16_t>(0, kTileCount),
                      [](std::uint16_t id) { return PhysicalTile(id); });
}

// Offsets anywhere, and often just below a page boundary.
std::uint64_t any_host_offset(std::uint64_t limit) {
  if (*rc::gen::arbitrary<bool>()) return 4 * *rc::gen::inRange<std::uint64_t>(0, limit / 4);
  const std::uint64_t page = *rc::gen::inRange<std::uint64_t>(0, limit / kHostPageBytes);
  return page * kHostPageBytes + kHostPageBytes - 4 * *rc::gen::inRange<std::uint64_t>(1, 64);
}

RC_GTEST_PROP(PacketSplittingProperties, ChunksCoverTheRangeAndObeyThePacketRules, ()) {
  const HostDirection direction = *any_direction();
  const std::uint64_t offset = any_host_offset(std::uint64_t{1} << 40);
  const std::uint32_t size = 4 * *rc::gen::inRange<std::uint32_t>(1, 4 * 1024);
  const auto chunks = split_host_transfer(direction, offset, size);

  std::uint64_t next = offset;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    const HostChunk& chunk = chunks[i];
    RC_ASSERT(chunk.host_offset == next);  // in order, no gap, no overlap
    const std::uint64_t end = chunk.host_offset + chunk.size;
    RC_ASSERT(chunk.host_offset / kHostPageBytes == (end - 1) / kHostPageBytes);
    RC_ASSERT(chunk.size <= max_packet_bytes(direction));
    const PacketFormat format = packet_format(chunk.size);  // throws if no format fits
    if (format == PacketFormat::kLong) {
      RC_ASSERT(chunk.host_offset % kLongPacketUnit == 0);
    } else {
      RC_ASSERT(chunk.host_offset % 4 == 0);
      // A short other than 32 B ends the transfer or the page.
      if (chunk.size != kShortStepBytes) {
        RC_ASSERT(i + 1 == chunks.size() || end % kHostPageBytes == 0);
      }
    }
    next = end;
  }
  RC_ASSERT(next == offset + size);
}

RC_GTEST_PROP(PacketSplittingProperties, EveryD2hChunkHeaderEncodes, ()) {
  const PhysicalTile target = *any_tile();
  // Short packets reach host offsets below 2^29.
  const std::uint64_t offset = any_host_offset(std::uint64_t{1} << 28);
  const std::uint32_t size = 4 * *rc::gen::inRange<std::uint32_t>(1, 4 * 1024);
  for (const HostChunk& chunk : split_host_transfer(HostDirection::kDeviceToHost, offset, size)) {
    const PacketHeader header = d2h_request(target, chunk.host_offset, chunk.size);
    RC_ASSERT(parse_packet_header(encode_packet_header(header)[0],
                                  encode_packet_header(header)[1]) == header);
  }
}

RC_GTEST_PROP(PacketSplittingProperties, EveryH2dChunkHeaderEncodesWhenOffsetsAre32Aligned, ()) {
  const PhysicalTile target = *any_tile();
  const std::uint32_t size = 4 * *rc::gen::inRange<std::uint32_t>(1, 2048);
  const std::uint32_t slots = (kH2dWindow.size() - size) / kH2dAddressUnit;
  const std::uint32_t address =
      kH2dWindow.begin + kH2dAddressUnit * *rc::gen::inRange<std::uint32_t>(0, slots + 1);
  const std::uint64_t offset = 32 * *rc::gen::inRange<std::uint64_t>(0, std::uint64_t{1} << 24);
  const TargetCode code = h2d_target_code({target, address, offset, size, 0x56000});
  const auto chunks = split_host_transfer(HostDirection::kHostToDevice, offset, size);
  RC_ASSERT(code.packets.words.size() == 2 * chunks.size());
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    const PacketHeader header =
        parse_packet_header(code.packets.words[2 * i], code.packets.words[2 * i + 1]);
    RC_ASSERT(header ==
              h2d_request(target,
                          address + static_cast<std::uint32_t>(chunks[i].host_offset - offset),
                          chunks[i].host_offset, chunks[i].size, i + 1 == chunks.size()));
  }
}

rc::Gen<PacketHeader> valid_header() {
  return rc::gen::exec([] {
    const PhysicalTile target = *any_tile();
    const HostDirection direction = *any_direction();
    if (direction == HostDirection::kHostToDevice && *rc::gen::inRange(0, 8) == 0) {
      return zero_byte_read(target,
                            kH2dWindow.begin + 32 * *rc::gen::inRange<std::uint32_t>(0, 512));
    }
    const bool is_long = *rc::gen::arbitrary<bool>();
    const std::uint32_t unit = is_long ? kLongPacketUnit : 4;
    const std::uint32_t size = unit * (is_long ? *rc::gen::inRange<std::uint32_t>(1, 17)
                                               : *rc::gen::inRange<std::uint32_t>(1, 16));
    const std::uint64_t offset = unit * *rc::gen::inRange<std::uint64_t>(0, std::uint64_t{1} << 27);
    if (direction == HostDirection::kDeviceToHost) return d2h_request(target, offset, size);
    const std::uint32_t slots = (kH2dWindow.size() - size) / kH2dAddressUnit;
    const std::uint32_t address =
        kH2dWindow.begin + 32 * *rc::gen::inRange<std::uint32_t>(0, slots + 1);
    return h2d_request(target, address, offset, size, *rc::gen::arbitrary<bool>());
  });
}

RC_GTEST_PROP(PacketHeaderProperties, ParseInvertsEncode, ()) {
  const PacketHeader header = *valid_header();
  const PacketWords words = encode_packet_header(header);
  RC_ASSERT(parse_packet_header(words[0], words[1]) == header);
}

// Whatever parses re-encodes to exactly its words; everything else is a
// HostExchangeError. Inputs: arbitrary words, and valid words with a bit or two flipped.
RC_GTEST_PROP(PacketHeaderProperties, ParsingAnyWordsIsTotalAndCanonical, ()) {
  PacketWords words{};
  if (*rc::gen::arbitrary<bool>()) {
    words = {*rc::gen::arbitrary<std::uint32_t>(), *rc::gen::arbitrary<std::uint32_t>()};
  } else {
    words = encode_packet_header(*valid_header());
    const int flips = *rc::gen::inRange(1, 3);
    for (int i = 0; i < flips; ++i) {
      words[*rc::gen::inRange<std::size_t>(0, 2)] ^= std::uint32_t{1} << *rc::gen::inRange(0, 32);
    }
  }
  try {
    const PacketHeader header = parse_packet_header(words[0], words[1]);
    RC_TAG("parsed");
    RC_ASSERT(encode_packet_header(header) == words);
  } catch (const HostExchangeError&) {
    RC_TAG("rejected");
  }
}

RC_GTEST_PROP(XreqProperties, BitmapWordsRoundTripAndNameTheirTargets, ()) {
  const PhysicalTile owner(
      static_cast<std::uint16_t>(*rc::gen::element(0, 1) + 4 * *rc::gen::inRange(0, 16)));
  const auto rows = *rc::gen::container<std::vector<int>>(rc::gen::inRange(0, kRows));
  std::set<PhysicalTile> expected;
  XreqBitmap bitmap(owner);
  for (const int r : rows) {
    const PhysicalTile target(
        static_cast<std::uint16_t>(r * kColumns + owner.value + 2 * *rc::gen::element(0, 1)));
    bitmap.add(target);
    expected.insert(target);
  }
  RC_ASSERT(bitmap.targets() == std::vector<PhysicalTile>(expected.begin(), expected.end()));
  RC_ASSERT(XreqBitmap::from_words(owner, bitmap.word0(), bitmap.word1()) == bitmap);
  RC_ASSERT((bitmap.word0() >> 24) == 0u);
  RC_ASSERT((bitmap.word1() >> 22) == 0u);
}

RC_GTEST_PROP(HostProgramProperties, TargetProgramsEncodeAndDecodeBack, ()) {
  // Every program the builders return encodes (isa::encode checks each
  // operand) and decodes to the same instructions.
  const PhysicalTile target = *any_tile();
  const std::uint32_t size = 4 * *rc::gen::inRange<std::uint32_t>(1, 1024);
  const std::uint64_t offset = 32 * *rc::gen::inRange<std::uint64_t>(0, 1u << 20);
  const bool h2d = *rc::gen::arbitrary<bool>();
  const TargetCode code = h2d ? h2d_target_code({target, 0x50180, offset, size, 0x50008})
                              : d2h_target_code({target, 0x60000, offset, size});
  const HostProgram program = code.standalone();
  const Words words = program.encode();
  std::size_t at = 0;
  for (const Instruction& instruction : program.instructions) {
    const isa::Decoded decoded = isa::decode(std::span(words).subspan(at));
    RC_ASSERT(decoded.instruction == instruction);
    at += decoded.words;
  }
  RC_ASSERT(at == words.size());
  RC_ASSERT(program.instructions.back() == Instruction{isa::Br{isa::kReturnReg}});
}

}  // namespace
}  // namespace tessera::target
