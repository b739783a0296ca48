// Writing and reading packages: round trips, determinism, content addressing;
// the layout of host-call payloads.
#include <algorithm>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <zstd.h>
#include <rapidcheck/gtest.h>

#include "schema/blob_codec.hpp"
#include "schema/digest.hpp"
#include "schema/package_error.hpp"
#include "schema/reader.hpp"
#include "schema/sha256.hpp"
#include "schema/writer.hpp"
#include "support/error.hpp"
#include "tests/testing/sample_package.hpp"

namespace tessera::schema {
namespace {

using testing::sample_application;
using testing::valid_application;

TEST(Sha256, KnownVectors) {
  // FIPS 180-2 test vectors.
  EXPECT_EQ(to_hex(sha256({})),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  const std::string abc = "abc";
  EXPECT_EQ(to_hex(sha256(std::span(reinterpret_cast<const std::uint8_t*>(abc.data()), 3))),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(BlobStore, StoresEqualBytesOnce) {
  BlobStore store;
  EXPECT_EQ(store.add({1, 2, 3}), 0u);
  EXPECT_EQ(store.add({4, 5}), 1u);
  EXPECT_EQ(store.add({1, 2, 3}), 0u);
  EXPECT_EQ(store.size(), 2u);
  EXPECT_EQ(store.total_bytes(), 5u);
}

TEST(BlobStore, AddSharedReusesTheBytesAndDeduplicates) {
  BlobStore source;
  source.add({1, 2, 3});
  source.add({4, 5});
  BlobStore store;
  EXPECT_EQ(store.add_shared(source, 1), 0u);
  EXPECT_EQ(store.add_shared(source, 0), 1u);
  EXPECT_EQ(store.add_shared(source, 1), 0u);
  EXPECT_EQ(store.size(), 2u);
  EXPECT_EQ(store.total_bytes(), 5u);
  EXPECT_EQ(store.digest(0), source.digest(1));
  EXPECT_EQ(store.bytes(0).data(), source.bytes(1).data()) << "shared, not copied";
  EXPECT_THROW(store.add_shared(source, 2), std::out_of_range);
}

TEST(Package, CanonicalSharesBlobBytes) {
  const Application app = sample_application();
  const Application result = canonical(app);
  for (const auto& tile : app.tiles) {
    const auto& canonical_tile = *std::find_if(result.tiles.begin(), result.tiles.end(),
                                               [&](const auto& t) { return t.tile == tile.tile; });
    for (std::size_t s = 0; s < tile.segments.size(); ++s) {
      EXPECT_EQ(result.blobs.bytes(canonical_tile.segments[s].blob).data(),
                app.blobs.bytes(tile.segments[s].blob).data());
    }
  }
}

// The writer skips the canonical copy when is_canonical() says it would change
// nothing; each order canonical() imposes, broken on its own, must be seen.
TEST(Package, IsCanonicalSeesEachOrderCanonicalImposes) {
  Application base = sample_application();
  base.debug.tiles[0].call_sites.push_back(base.debug.tiles[0].call_sites[0]);
  base.debug.tiles[0].call_sites[1].pc += 8;
  TileDebug other_debug;
  other_debug.tile = target::PhysicalTile(0);
  base.debug.tiles.insert(base.debug.tiles.begin(), other_debug);
  base = canonical(base);
  ASSERT_TRUE(is_canonical(base));

  const auto expect_not_canonical = [](Application app, const char* what) {
    EXPECT_FALSE(is_canonical(app)) << what;
    EXPECT_NE(canonical(app), app) << what << ": not an order canonical() changes";
  };
  {
    Application app = base;
    std::swap(app.tiles[0], app.tiles[1]);
    expect_not_canonical(app, "tiles out of order");
  }
  {
    Application app = base;
    std::swap(app.tiles[1].segments[0], app.tiles[1].segments[1]);
    expect_not_canonical(app, "segments out of order");
  }
  {
    // The same blobs, numbered in another order than first use.
    Application app = base;
    BlobStore reversed;
    for (std::uint32_t b = static_cast<std::uint32_t>(app.blobs.size()); b-- > 0;) {
      reversed.add_shared(app.blobs, b);
    }
    const auto last = static_cast<std::uint32_t>(app.blobs.size()) - 1;
    for (auto& tile : app.tiles) {
      for (auto& segment : tile.segments) segment.blob = last - segment.blob;
    }
    app.blobs = reversed;
    expect_not_canonical(app, "blobs numbered out of first use");
  }
  {
    Application app = base;
    app.blobs.add({42});
    expect_not_canonical(app, "an unused blob");
  }
  {
    Application app = base;
    std::swap(app.debug.tiles[0], app.debug.tiles[1]);
    expect_not_canonical(app, "debug tiles out of order");
  }
  {
    Application app = base;
    auto& sites = app.debug.tiles[1].call_sites;
    std::swap(sites[0], sites[1]);
    expect_not_canonical(app, "call sites out of order");
  }
}

RC_GTEST_PROP(PackageProperties, IsCanonicalExactlyWhenCanonicalChangesNothing, ()) {
  // The generator adds blobs before sorting tiles, so both answers occur.
  const Application app = *valid_application();
  RC_ASSERT(is_canonical(app) == (canonical(app) == app));
  RC_ASSERT(is_canonical(canonical(app)));
  RC_CLASSIFY(is_canonical(app));
}

TEST(Package, SampleRoundTrips) {
  const Application app = sample_application();
  const auto bytes = serialize_package(app);
  const Application read = read_package(bytes);
  EXPECT_EQ(read, canonical(app));
  EXPECT_EQ(read.blobs.size(), 3u) << "the code blob is shared by both tiles";
  EXPECT_EQ(build_digest(read), build_digest(canonical(app)));
}

TEST(Package, CallBindingListsRoundTripInOrderAndEnterTheDigest) {
  Application app = sample_application();
  app.host_exchange.calls[0].input_bindings = {"image", "w"};
  app.host_exchange.calls[0].output_bindings = {"logits"};
  const Application read = read_package(serialize_package(app));
  EXPECT_EQ(read, canonical(app));
  EXPECT_EQ(read.host_exchange.calls[0].input_bindings, (std::vector<std::string>{"image", "w"}));
  EXPECT_EQ(read.host_exchange.calls[0].output_bindings, (std::vector<std::string>{"logits"}));

  // Order is meaning: the writer keeps it and the digest sees it.
  Application swapped = app;
  swapped.host_exchange.calls[0].input_bindings = {"w", "image"};
  const Application swapped_read = read_package(serialize_package(swapped));
  EXPECT_EQ(swapped_read.host_exchange.calls[0].input_bindings,
            (std::vector<std::string>{"w", "image"}));
  EXPECT_NE(build_digest(swapped_read), build_digest(read));

  // Each list is hashed on its own: moving a name from one list to the other,
  // or dropping it, changes the digest too.
  Application moved = app;
  moved.host_exchange.calls[0].input_bindings = {"image"};
  moved.host_exchange.calls[0].output_bindings = {"w", "logits"};
  EXPECT_NE(build_digest(moved), build_digest(app));
  Application dropped = app;
  dropped.host_exchange.calls[0].input_bindings = {"image"};
  EXPECT_NE(build_digest(dropped), build_digest(app));
}

// The sample's bindings: image f32 [2, 8] = 0x40 bytes (an input), w f8f143
// [64] = 0x40 bytes (a weight), logits f16 [16] = 0x20 bytes (an output).
TEST(CallPayload, PartsFollowTheListedOrderEachAtTheSumOfTheSizesBeforeIt) {
  const Application app = sample_application();
  HostCall call;
  call.name = "run";
  call.invocations = 3;
  call.input_bindings = {"w", "image"};
  call.output_bindings = {"logits"};
  EXPECT_EQ(
      call_payload(app, call, CallSide::kInput),
      (std::vector<PayloadPart>{{&app.weights[0], 0x00, 0x40}, {&app.inputs[0], 0x40, 0x40}}));
  EXPECT_EQ(call_payload(app, call, CallSide::kOutput),
            (std::vector<PayloadPart>{{&app.outputs[0], 0x00, 0x20}}));
  // Three invocations back to back: 3 × (0x40 + 0x40) in, 3 × 0x20 out.
  EXPECT_EQ(call_payload_bytes(app, call, CallSide::kInput), 0x180u);
  EXPECT_EQ(call_payload_bytes(app, call, CallSide::kOutput), 0x60u);

  call.input_bindings = {"image", "w"};
  const BindingLookup bindings(app);
  EXPECT_EQ(
      call_payload(bindings, call, CallSide::kInput),
      (std::vector<PayloadPart>{{&app.inputs[0], 0x00, 0x40}, {&app.weights[0], 0x40, 0x40}}));
  EXPECT_EQ(call_payload_bytes(bindings, call, CallSide::kInput), 0x180u);
}

TEST(CallPayload, EveryPartStartsOnAWord) {
  Application app = sample_application();
  Binding odd{"odd", DType::kF16, {3}, {}};  // 6 bytes: two bytes of padding follow
  app.inputs.push_back(odd);
  HostCall call;
  call.name = "padded";
  call.input_bindings = {"odd", "image"};
  call.invocations = 2;
  EXPECT_EQ(call_payload(app, call, CallSide::kInput),
            (std::vector<PayloadPart>{{&app.inputs[1], 0x00, 6}, {&app.inputs[0], 0x08, 0x40}}));
  EXPECT_EQ(call_payload_bytes(app, call, CallSide::kInput), 2u * 0x48u);
  call.input_bindings = {"image", "odd"};  // padded at the end too
  EXPECT_EQ(call_payload_bytes(app, call, CallSide::kInput), 2u * 0x48u);
}

TEST(CallPayload, AnEmptyListIsAnEmptyPayload) {
  const Application app = sample_application();
  HostCall call;
  call.name = "poke";
  call.invocations = 7;
  EXPECT_TRUE(call_payload(app, call, CallSide::kInput).empty());
  EXPECT_EQ(call_payload_bytes(app, call, CallSide::kOutput), 0u);
}

TEST(CallPayload, EachSideNamesOnlyItsOwnBindings) {
  const Application app = sample_application();
  const BindingLookup bindings(app);
  EXPECT_EQ(bindings.find(CallSide::kInput, "image"), &app.inputs[0]);
  EXPECT_EQ(bindings.find(CallSide::kInput, "w"), &app.weights[0]);
  EXPECT_EQ(bindings.find(CallSide::kInput, "logits"), nullptr);
  EXPECT_EQ(bindings.find(CallSide::kOutput, "logits"), &app.outputs[0]);
  EXPECT_EQ(bindings.find(CallSide::kOutput, "image"), nullptr);
  EXPECT_EQ(bindings.find(CallSide::kOutput, "w"), nullptr);
  HostCall call;
  call.name = "run";
  call.input_bindings = {"logits"};
  call.output_bindings = {"w"};
  EXPECT_THROW(call_payload(app, call, CallSide::kInput), std::invalid_argument);
  EXPECT_THROW(call_payload_bytes(app, call, CallSide::kOutput), std::invalid_argument);
}

TEST(CallPayload, SizesAreChecked) {
  Application app = sample_application();
  // 0xffffffff² bytes: it fits 64 bits, but not twice, nor with 2^33 more.
  // The next part starts on the next word (0xfffffffe00000004).
  app.weights.push_back(Binding{"huge", DType::kU8, {0xFFFFFFFF, 0xFFFFFFFF}, {}});
  HostCall call;
  call.name = "run";
  call.input_bindings = {"huge", "image"};
  EXPECT_EQ(call_payload(app, call, CallSide::kInput),
            (std::vector<PayloadPart>{{&app.weights[1], 0, 0xfffffffe00000001u},
                                      {&app.inputs[0], 0xfffffffe00000004u, 0x40}}));
  EXPECT_EQ(call_payload_bytes(app, call, CallSide::kInput), 0xfffffffe00000044u);
  call.invocations = 2;
  EXPECT_THROW(call_payload_bytes(app, call, CallSide::kInput), ArithmeticError);
  call.invocations = 1;
  call.input_bindings = {"huge", "huge"};
  EXPECT_THROW(call_payload(app, call, CallSide::kInput), ArithmeticError);
}

TEST(Package, SegmentBytesAreFileBytesThenZeros) {
  // The prior art's sample: a 4-byte blob in an 8-byte segment flattens to
  // 01 02 03 04 00 00 00 00 (package-elf-profile.md §3.8).
  Application app;
  const auto blob = app.blobs.add({1, 2, 3, 4});
  const Segment segment{0x4C010, 8, blob, 0, 4, kSegmentRead | kSegmentExecute};
  EXPECT_EQ(segment_bytes(app, segment), (std::vector<std::uint8_t>{1, 2, 3, 4, 0, 0, 0, 0}));
}

TEST(Package, CompressesOnlyWhenStrictlySmaller) {
  const std::vector<std::uint8_t> zeros(4096, 0);
  EXPECT_EQ(encode_blob(zeros).codec, BlobCodec::kZstd);
  EXPECT_LT(encode_blob(zeros).data.size(), zeros.size());
  std::vector<std::uint8_t> noise(64);
  std::mt19937 random(7);
  for (auto& byte : noise) byte = static_cast<std::uint8_t>(random());
  EXPECT_EQ(encode_blob(noise).codec, BlobCodec::kRaw);
  EXPECT_EQ(encode_blob(noise).data, noise);
}

// One BlobEncoder for every blob of a package must give each blob the frame a
// fresh zstd context gives it (ZSTD_compress, the oracle): the package bytes
// may not depend on what was compressed before. Blobs of several sizes and
// contents, large ones after small ones and back, so a context reused at
// another size or left with old matches would show.
TEST(Package, OneEncoderGivesEveryBlobTheFrameOfAFreshContext) {
  std::mt19937 random(11);
  std::vector<std::vector<std::uint8_t>> blobs;
  for (const std::size_t size : {std::size_t{4096}, std::size_t{100}, std::size_t{300000},
                                 std::size_t{1000}, std::size_t{65536}, std::size_t{4096}}) {
    std::vector<std::uint8_t> bytes(size);
    // Runs of repeated bytes with a few random ones: compressible, not trivial.
    for (std::size_t i = 0; i < size; ++i) {
      bytes[i] = static_cast<std::uint8_t>(random() % 8 == 0 ? random() : i / 64);
    }
    blobs.push_back(std::move(bytes));
  }
  blobs.push_back(blobs[0]);  // the same bytes again: a reused context must not refer back
  BlobEncoder encoder(kDefaultZstdLevel);
  for (const auto& bytes : blobs) {
    std::vector<std::uint8_t> frame(ZSTD_compressBound(bytes.size()));
    const std::size_t written = ZSTD_compress(frame.data(), frame.size(), bytes.data(),
                                              bytes.size(), kDefaultZstdLevel);
    ASSERT_FALSE(ZSTD_isError(written));
    frame.resize(written);
    const BlobEncoder::Encoded encoded = encoder.encode(bytes);
    ASSERT_EQ(encoded.codec, BlobCodec::kZstd) << bytes.size() << " bytes";
    EXPECT_EQ(std::vector<std::uint8_t>(encoded.data.begin(), encoded.data.end()), frame)
        << bytes.size() << " bytes";
  }
}

TEST(Package, TileOrderAndBlobInsertionOrderDoNotChangeTheBytes) {
  Application app = sample_application();
  Application shuffled = sample_application();
  std::reverse(shuffled.tiles.begin(), shuffled.tiles.end());
  EXPECT_EQ(serialize_package(app), serialize_package(shuffled));
}

TEST(Package, WriteToFileIsAtomicAndReadable) {
  const auto directory = std::filesystem::temp_directory_path() / "tessera-package-test";
  std::filesystem::create_directories(directory);
  const auto path = directory / "sample.ipuexe";
  const Sha256 digest = write_package(sample_application(), path);
  EXPECT_FALSE(std::filesystem::exists(path.string() + ".partial"));
  const Application read = read_package_file(path);
  EXPECT_EQ(build_digest(read), digest);
  std::filesystem::remove_all(directory);
}

TEST(Package, FileErrorsNameTheFile) {
  try {
    read_package_file("/nonexistent/x.ipuexe");
    FAIL();
  } catch (const IoError& error) {
    EXPECT_NE(std::string(error.what()).find("/nonexistent/x.ipuexe: "), std::string::npos);
  }
}

TEST(Package, UncompressedPackageReadsTheSame) {
  const Application app = sample_application();
  const auto raw = serialize_package(app, WriteOptions{.compress = false});
  EXPECT_EQ(read_package(raw), canonical(app));
}

RC_GTEST_PROP(PackageProperties, ReadInvertsWrite, ()) {
  const Application app = *valid_application();
  RC_ASSERT(read_package(serialize_package(app)) == canonical(app));
}

RC_GTEST_PROP(PackageProperties, WritingTwiceGivesIdenticalBytes, ()) {
  const Application app = *valid_application();
  const auto first = serialize_package(app);
  RC_ASSERT(first == serialize_package(app));
  RC_ASSERT(first == serialize_package(read_package(first)));
}

RC_GTEST_PROP(PackageProperties, DigestIgnoresCompression, ()) {
  const Application app = *valid_application();
  const auto compressed = read_package(serialize_package(app));
  const auto raw = read_package(serialize_package(app, WriteOptions{.compress = false}));
  RC_ASSERT(build_digest(compressed) == build_digest(raw));
}

RC_GTEST_PROP(PackageProperties, AnySingleByteCorruptionIsRejectedOrHarmless, ()) {
  // Flipping any byte either fails with a PackageError or still reads as a
  // valid package (e.g. a byte of padding); it never crashes or escapes with
  // another exception type.
  const auto bytes = serialize_package(*valid_application());
  auto corrupt = bytes;
  const auto index = *rc::gen::inRange<std::size_t>(0, corrupt.size());
  corrupt[index] ^= *rc::gen::inRange<std::uint8_t>(1, 255);
  try {
    (void)read_package(corrupt);
  } catch (const PackageError&) {
  }
}

}  // namespace
}  // namespace tessera::schema
