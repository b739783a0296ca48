// The reader against hostile input: forged headers, blobs, sizes and
// messages, including the prior art's holes (review-findings.md #2, #12,
// #13, #14).
#include <capnp/any.h>
#include <capnp/message.h>
#include <capnp/serialize.h>
#include <zstd.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include <gtest/gtest.h>

#include "schema/package_error.hpp"
#include "schema/reader.hpp"
#include "schema/sha256.hpp"
#include "schema/wire.hpp"
#include "schema/writer.hpp"
#include "tests/testing/sample_package.hpp"
#include "tests/testing/scratch.hpp"

namespace tessera::schema {
namespace {

std::vector<std::uint8_t> to_bytes(capnp::MessageBuilder& message) {
  const auto words = capnp::messageToFlatArray(message);
  return {words.asBytes().begin(), words.asBytes().end()};
}

// The sample package with its wire form edited.
std::vector<std::uint8_t> edited(const std::function<void(wire::Application::Builder)>& edit) {
  const auto bytes = serialize_package(testing::sample_application());
  kj::Array<capnp::word> words = kj::heapArray<capnp::word>(bytes.size() / 8);
  std::memcpy(words.begin(), bytes.data(), bytes.size());
  capnp::FlatArrayMessageReader reader(words);
  capnp::MallocMessageBuilder message;
  message.setRoot(reader.getRoot<wire::Application>());
  edit(message.getRoot<wire::Application>());
  return to_bytes(message);
}

std::string read_error(const std::vector<std::uint8_t>& bytes, const ReadLimits& limits = {}) {
  try {
    (void)read_package(bytes, limits);
  } catch (const PackageError& error) {
    return error.what();
  }
  return "accepted";
}

void expect_error(const std::vector<std::uint8_t>& bytes, const std::string& fragment,
                  const ReadLimits& limits = {}) {
  const std::string error = read_error(bytes, limits);
  EXPECT_NE(error.find(fragment), std::string::npos) << "got: " << error;
}

kj::ArrayPtr<const kj::byte> as_bytes(const std::vector<std::uint8_t>& bytes) {
  return {bytes.data(), bytes.size()};
}

TEST(Reader, HeaderMustNameThisFormat) {
  // Version 1 predates HostCall.inputBindings/outputBindings (docs/FORMAT.md).
  expect_error(edited([](auto a) { a.getHeader().setSchemaVersion(1); }),
               "header.schemaVersion: 1 is not the supported version 2");
  expect_error(edited([](auto a) { a.getHeader().setSchemaVersion(3); }),
               "header.schemaVersion: 3 is not the supported version 2");
  expect_error(edited([](auto a) { a.getHeader().setTarget("ipu2"); }),
               "header.target: 'ipu2' is not 'ipu21'");
  expect_error(edited([](auto a) { a.getHeader().setTileMemoryBase(0); }),
               "header.tileMemoryBase: 0x0 is not 0x4c000");
  expect_error(edited([](auto a) { a.getHeader().setTileMemorySize(0x100000); }),
               "header.tileMemorySize: 0x100000 is not 0x9c000");
}

TEST(Reader, DigestMustMatchTheContents) {
  expect_error(edited([](auto a) { a.getEntryPoints()[0].setCommand(99); }),
               "buildDigest: does not match the package's contents");
  expect_error(edited([](auto a) { a.setBuildDigest(kj::ArrayPtr<const kj::byte>()); }),
               "buildDigest: does not match");
}

TEST(Reader, BlobHashIsCheckedAfterDecoding) {
  expect_error(edited([](auto a) {
                 auto data = a.getBlobs()[1].getData();
                 data[0] = static_cast<kj::byte>(data[0] ^ 1);
               }),
               "blobs[1].sha256: does not match the blob's bytes");
  expect_error(edited([](auto a) { a.getBlobs()[1].setSha256(kj::ArrayPtr<const kj::byte>()); }),
               "blobs[1].sha256: 0 bytes is not a SHA-256 digest");
}

TEST(Reader, DuplicateBlobsAreRejected) {
  expect_error(edited([](auto a) {
                 auto blobs = a.getBlobs();
                 blobs.setWithCaveats(2, blobs[1].asReader());
               }),
               "blobs[2].sha256: duplicates blobs[1]");
}

// review-findings.md #13: the prior art allocated the untrusted
// uncompressedSize before checking anything.
TEST(Reader, MultiGigabyteUncompressedSizeIsRejectedBeforeAllocating) {
  expect_error(edited([](auto a) { a.getBlobs()[0].setUncompressedSize(8ull << 30); }),
               "blobs[0].uncompressedSize: 8589934592 more bytes exceed the package limit");
  // A per-blob cap below the total cap names the blob's own limit.
  ReadLimits limits;
  limits.max_blob_bytes = 100;
  expect_error(serialize_package(testing::sample_application()),
               "blobs[1]: uncompressedSize 256 exceeds the limit of 100 bytes", limits);
}

// A zstd frame header that records `content_size` (single segment, 8-byte
// content size field) followed by one empty last raw block: zstd's frame
// parser accepts it, and only decoding finds that it holds no bytes.
std::vector<std::uint8_t> forged_zstd_frame(std::uint64_t content_size) {
  std::vector<std::uint8_t> frame = {0x28, 0xB5, 0x2F, 0xFD, 0xE0};
  for (int i = 0; i < 8; ++i) frame.push_back(static_cast<std::uint8_t>(content_size >> (8 * i)));
  frame.insert(frame.end(), {0x01, 0x00, 0x00});
  return frame;
}

// Found with tests/fuzz (libFuzzer: out-of-memory (malloc(2147483648))): the
// derived decompression cap was tiles × SRAM size with the tile list's
// untrusted length, and a tile costs 16 bytes on the wire. 3400 empty tiles
// (54 KB) raised the cap above 2 GiB, so a 16-byte zstd frame claiming 2 GiB
// was allocated in full before decoding failed (std::bad_alloc where memory
// is short). The cap now counts at most the chip's 1472 tiles, which is all a
// valid package can have.
TEST(Reader, ForgedTileCountCannotRaiseTheDecompressionCap) {
  constexpr std::uint64_t kClaimed = 2ull << 30;
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<wire::Application>();
  auto header = root.initHeader();
  header.setSchemaVersion(kPackageSchemaVersion);
  header.setCompilerVersion("x");
  header.setTarget(std::string(kTargetName));
  header.setTileMemoryBase(0x4C000);
  header.setTileMemorySize(0x9C000);
  root.initTiles(3400);
  auto blob = root.initBlobs(1)[0];
  const std::vector<std::uint8_t> digest(32, 0);
  blob.setSha256(as_bytes(digest));
  blob.setCodec(wire::BlobCodec::ZSTD);
  blob.setUncompressedSize(kClaimed);
  blob.setData(as_bytes(forged_zstd_frame(kClaimed)));
  const auto bytes = to_bytes(message);
  ASSERT_LT(bytes.size(), 65536u);
  expect_error(bytes,
               "blobs[0].uncompressedSize: 2147483648 more bytes exceed the package limit of "
               "940572672 decompressed bytes");  // 1472 × 0x9C000
}

// A well-formed zstd frame of `size` copies of `byte`, made of RLE blocks
// (4 bytes per 128 KiB): the densest frame there is, so a few kilobytes
// claim hundreds of megabytes.
std::vector<std::uint8_t> rle_zstd_frame(std::uint64_t size, std::uint8_t byte) {
  std::vector<std::uint8_t> frame = {0x28, 0xB5, 0x2F, 0xFD, 0xE0};
  for (int i = 0; i < 8; ++i) frame.push_back(static_cast<std::uint8_t>(size >> (8 * i)));
  constexpr std::uint64_t kBlock = 128 << 10;
  for (std::uint64_t left = size; left > 0;) {
    const std::uint64_t n = std::min(left, kBlock);
    left -= n;
    const std::uint32_t header = static_cast<std::uint32_t>(n << 3 | 1u << 1 | (left == 0 ? 1 : 0));
    frame.insert(frame.end(),
                 {static_cast<std::uint8_t>(header), static_cast<std::uint8_t>(header >> 8),
                  static_cast<std::uint8_t>(header >> 16), byte});
  }
  return frame;
}

// Issue 15 item 5: a 52 KB package of 1472 empty tile records and one
// 28 KB frame made the reader decompress and hash 940 MB before it rejected
// tiles[0].entryPoint. The tiles (which bound the bytes any blob may
// usefully hold) are now checked first: the blob's wrong digest, found only
// by decompressing, is never reached.
TEST(Reader, TileStructureIsCheckedBeforeAnyBlobIsDecompressed) {
  constexpr std::uint64_t kClaimed = 8u << 20;  // large enough to notice, small enough for a test
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<wire::Application>();
  auto header = root.initHeader();
  header.setSchemaVersion(kPackageSchemaVersion);
  header.setCompilerVersion("x");
  header.setTarget(std::string(kTargetName));
  header.setTileMemoryBase(0x4C000);
  header.setTileMemorySize(0x9C000);
  auto tiles = root.initTiles(1472);
  for (unsigned t = 0; t < tiles.size(); ++t)
    tiles[t].setPhysicalTile(static_cast<std::uint16_t>(t));
  auto blob = root.initBlobs(1)[0];
  const std::vector<std::uint8_t> digest(32, 0);
  blob.setSha256(as_bytes(digest));
  blob.setCodec(wire::BlobCodec::ZSTD);
  blob.setUncompressedSize(kClaimed);
  blob.setData(as_bytes(rle_zstd_frame(kClaimed, 0)));
  const auto bytes = to_bytes(message);
  ASSERT_LT(bytes.size(), 60000u);
  expect_error(bytes, "tiles[0].entryPoint: 0x0 is not a 4-aligned address inside an executable");
}

// A blob may hold only bytes some segment loads, so its declared size is
// bounded by the tiles before it is decoded.
TEST(Reader, ABlobLargerThanItsSegmentsLoadIsRejectedBeforeDecoding) {
  const auto bytes = edited([](auto a) {
    auto blob = a.getBlobs()[1];
    blob.setCodec(wire::BlobCodec::ZSTD);
    blob.setUncompressedSize(1u << 20);  // within the package's cap of 2 tiles × SRAM
    blob.setData(as_bytes(rle_zstd_frame(1u << 20, 7)));
  });
  expect_error(bytes,
               "blobs[1].uncompressedSize: 1048576 bytes, but the segments using it load "
               "only its first 256");
}

TEST(Reader, ZstdFramesMustBeExact) {
  // Blob 1 is tile 0's 256-byte data segment; the declared size stays 256
  // (the segment bounds it), the stored data varies.
  const auto frame_of = [](std::size_t size) {
    const std::vector<std::uint8_t> zeros(size, 0);
    std::vector<std::uint8_t> frame(ZSTD_compressBound(zeros.size()));
    frame.resize(ZSTD_compress(frame.data(), frame.size(), zeros.data(), zeros.size(), 3));
    return frame;
  };
  const auto with_blob = [&](std::vector<std::uint8_t> data, wire::BlobCodec codec) {
    return edited([&](auto a) {
      auto blob = a.getBlobs()[1];
      blob.setCodec(codec);
      blob.setData(as_bytes(data));
    });
  };
  expect_error(with_blob(frame_of(255), wire::BlobCodec::ZSTD),
               "blobs[1]: the zstd frame holds 255 bytes but uncompressedSize is 256");
  auto trailing = frame_of(256);
  trailing.push_back(0);
  expect_error(with_blob(trailing, wire::BlobCodec::ZSTD),
               "blobs[1]: 1 bytes follow the zstd frame");
  expect_error(with_blob({1, 2, 3, 4}, wire::BlobCodec::ZSTD), "blobs[1]: not a zstd frame");
  // Raw data must be exactly the declared size.
  expect_error(with_blob(std::vector<std::uint8_t>(255, 0), wire::BlobCodec::RAW),
               "blobs[1]: raw data holds 255 bytes but uncompressedSize is 256");
}

TEST(Reader, UnknownEnumValuesAreErrors) {
  expect_error(edited([](auto a) { a.getBlobs()[0].setCodec(static_cast<wire::BlobCodec>(7)); }),
               "blobs[0].codec: 7 is not a known value");
  expect_error(edited([](auto a) { a.getInputs()[0].setDtype(static_cast<wire::DType>(40)); }),
               "inputs[0].dtype: 40 is not a known value");
}

TEST(Reader, TextMustBeUtf8) {
  expect_error(edited([](auto a) { a.getEntryPoints()[0].setName("\xC3\x28"); }),
               "entryPoints[0].name: is not valid UTF-8");
  expect_error(edited([](auto a) {
                 a.getHostExchange().getCalls()[0].getInputBindings().set(0, "\xC3\x28");
               }),
               "hostExchange.calls[0].inputBindings[0]: is not valid UTF-8");
  expect_error(edited([](auto a) {
                 a.getHostExchange().getCalls()[0].getOutputBindings().set(0, "\xFF");
               }),
               "hostExchange.calls[0].outputBindings[0]: is not valid UTF-8");
}

// review-findings.md #12: the prior art disabled the traversal limit, so a
// small message whose pointers all point at one large list could make the
// reader walk that list again and again. Forge exactly that: 2000 bindings
// whose shape pointers all target binding 0's 60000-element shape.
TEST(Reader, AmplifiedMessagesHitTheTraversalLimit) {
  constexpr unsigned kBindings = 2000;
  constexpr unsigned kShape = 60000;
  capnp::MallocMessageBuilder message(1u << 20, capnp::AllocationStrategy::FIXED_SIZE);
  auto root = message.initRoot<wire::Application>();
  auto header = root.initHeader();
  header.setSchemaVersion(kPackageSchemaVersion);
  header.setTarget(std::string(kTargetName));
  header.setTileMemoryBase(0x4C000);
  header.setTileMemorySize(0x9C000);
  auto inputs = root.initInputs(kBindings);
  inputs[0].initShape(kShape);
  for (unsigned i = 1; i < kBindings; ++i) inputs[i].initShape(0);
  ASSERT_EQ(message.getSegmentsForOutput().size(), 1u);

  const auto shape_bytes = capnp::AnyList::Reader(inputs[0].asReader().getShape()).getRawBytes();
  for (unsigned i = 1; i < kBindings; ++i) {
    // The shape pointer is the binding's second pointer, after its data word.
    auto pointer_section = capnp::AnyStruct::Builder(inputs[i]).getDataSection().end();
    auto* pointer = reinterpret_cast<std::uint64_t*>(pointer_section) + 1;
    const auto offset_words = (reinterpret_cast<std::int64_t>(shape_bytes.begin()) -
                               reinterpret_cast<std::int64_t>(pointer + 1)) / 8;
    *pointer = (static_cast<std::uint64_t>(static_cast<std::uint32_t>(offset_words << 2)) | 1u) |
               (std::uint64_t{4} << 32) | (std::uint64_t{kShape} << 35);  // list of 32-bit values
  }
  const auto bytes = to_bytes(message);
  // The file is about 60000·4 + 2000·32 bytes; walking every shape would
  // read 2000 × 240000 bytes.
  EXPECT_LT(bytes.size(), 400000u);
  expect_error(bytes, "malformed Cap'n Proto message");
}

TEST(Reader, TraversalLimitIsConfigurableForLargeTrustedPackages) {
  const auto bytes = serialize_package(testing::sample_application());
  ReadLimits tight;
  tight.traversal_limit_words = 16;
  expect_error(bytes, "malformed Cap'n Proto message", tight);
  ReadLimits generous;
  generous.traversal_limit_words = 1ull << 40;
  EXPECT_EQ(read_error(bytes, generous), "accepted");
}

TEST(Reader, DeeplyNestedMessagesHitTheNestingLimit) {
  ReadLimits shallow;
  shallow.nesting_limit = 2;
  expect_error(serialize_package(testing::sample_application()), "malformed Cap'n Proto message",
               shallow);
}

TEST(Reader, TruncatedAndPaddedInputIsRejected) {
  const auto bytes = serialize_package(testing::sample_application());
  expect_error({bytes.begin(), bytes.begin() + 100}, "package:");
  expect_error({bytes.begin(), bytes.end() - 3}, "is not a whole number of 8-byte words");
  auto padded = bytes;
  padded.resize(padded.size() + 8, 0);
  expect_error(padded, "package: bytes follow the message");
  expect_error({}, "package:");
}

// Issue 15 item 4: a 1 TiB sparse file ended in "internal error:
// std::bad_alloc" naming no file, and a 2 GiB one cost 2.1 GB of memory
// before it was rejected. The size is capped before anything is read.
TEST(ReaderFile, AHugeFileIsRefusedByItsSizeBeforeReadingNamingTheFile) {
  testing::ScratchDirectory scratch;
  const std::string path = scratch.path("huge.ipuexe");
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  const bool sparse = ::ftruncate(fd, off_t{1} << 40) == 0;
  ::close(fd);
  if (!sparse) GTEST_SKIP() << "this file system has no 1 TiB sparse files";
  try {
    (void)read_package_file(path);
    FAIL() << "a 1 TiB package was read";
  } catch (const PackageError& error) {
    EXPECT_EQ(std::string(error.what()),
              path +
                  ": package: 1099511627776 bytes is more than the 1342177280 bytes a package "
                  "may have (ReadLimits::max_package_bytes)");
  }
}

TEST(ReaderFile, TheSizeCapIsConfigurable) {
  testing::ScratchDirectory scratch;
  const std::string path = scratch.path("sample.ipuexe");
  const auto bytes = serialize_package(testing::sample_application());
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  ReadLimits tight;
  tight.max_package_bytes = bytes.size() - 8;
  EXPECT_THROW((void)read_package_file(path, tight), PackageError);
  expect_error(
      bytes,
      fmt::format("package: {} bytes is more than the {} bytes", bytes.size(), bytes.size() - 8),
      tight);
  ReadLimits exact;
  exact.max_package_bytes = bytes.size();
  EXPECT_NO_THROW((void)read_package_file(path, exact));
}

TEST(Reader, SegmentTableLargerThanTheFileIsRejected) {
  // A forged segment table claiming 2^31 words in one segment.
  std::vector<std::uint8_t> bytes(16, 0);
  bytes[4] = 0x00;
  bytes[5] = 0x00;
  bytes[6] = 0x00;
  bytes[7] = 0x80;
  expect_error(bytes, "malformed Cap'n Proto message");
}

}  // namespace
}  // namespace tessera::schema
