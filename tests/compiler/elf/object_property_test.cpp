// Any truncation or bit flip of a valid object is an ObjectError or a
// LinkError from read + link — never a crash, a hang or another exception
// (issue 21 item 6). Run under make test-asan for out-of-bounds reads.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "compiler/elf/linker.hpp"
#include "tests/testing/elf_writer.hpp"

namespace tessera::compiler::elf {
namespace {

void read_and_link(const std::vector<std::uint8_t>& bytes) {
  try {
    const std::vector<ObjectFile> objects{read_object("fuzz.o", bytes)};
    LinkOptions options;
    options.entry = "main";
    options.retained = {"buffer"};
    options.externals["external"] = 0x5C000;
    (void)link(objects, options);
  } catch (const ObjectError&) {
  } catch (const LinkError&) {
  }
}

TEST(ColossusObjectProperty, TheValidObjectLinks) {
  const std::vector<ObjectFile> objects{
      read_object("valid.o", tessera::testing::sample_colossus_object())};
  LinkOptions options;
  options.entry = "main";
  options.retained = {"buffer"};
  options.externals["external"] = 0x5C000;
  EXPECT_EQ(link(objects, options).sections.size(), 3u);
}

RC_GTEST_PROP(ColossusObjectProperty, TruncationsAreErrorsNeverCrashes, ()) {
  const auto bytes = tessera::testing::sample_colossus_object();
  const auto length = *rc::gen::inRange<std::size_t>(0, bytes.size());
  const std::vector<std::uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<long>(length));
  RC_ASSERT_THROWS_AS(read_object("cut.o", cut), ObjectError);
}

RC_GTEST_PROP(ColossusObjectProperty, BitFlipsAreErrorsNeverCrashes, ()) {
  auto bytes = tessera::testing::sample_colossus_object();
  const auto flips = *rc::gen::inRange(1, 9);
  for (int i = 0; i < flips; ++i) {
    const auto at = *rc::gen::inRange<std::size_t>(0, bytes.size());
    const auto bit = *rc::gen::inRange(0, 8);
    bytes[at] = static_cast<std::uint8_t>(bytes[at] ^ (1u << bit));
  }
  read_and_link(bytes);  // anything but ObjectError / LinkError fails the property
}

RC_GTEST_PROP(ColossusObjectProperty, RandomWordsAreErrorsNeverCrashes, ()) {
  // Whole 32-bit fields replaced by hostile values (sizes, offsets, indices).
  auto bytes = tessera::testing::sample_colossus_object();
  const auto count = *rc::gen::inRange(1, 4);
  for (int i = 0; i < count; ++i) {
    const auto at = *rc::gen::inRange<std::size_t>(0, bytes.size() / 4) * 4;
    const auto value = *rc::gen::element<std::uint32_t>(0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF,
                                                        0xFFFFFFF0, 0x10000, 52, 40);
    tessera::testing::poke_u32(bytes, at, value);
  }
  read_and_link(bytes);
}

}  // namespace
}  // namespace tessera::compiler::elf
