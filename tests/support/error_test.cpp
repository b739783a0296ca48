#include "support/error.hpp"

#include <gtest/gtest.h>

namespace tessera {
namespace {

TEST(Error, MessageWithoutContextIsTheWholeText) {
  const Error error("disk on fire");
  EXPECT_STREQ(error.what(), "disk on fire");
  EXPECT_EQ(error.message(), "disk on fire");
  EXPECT_TRUE(error.context().empty());
}

TEST(Error, ContextIsPrependedOutermostFirst) {
  Error error("blobOffset overflows");
  error.add_context("tiles[12].segments[3]");
  error.add_context("loading model.ipuexe");
  EXPECT_STREQ(error.what(), "loading model.ipuexe: tiles[12].segments[3]: blobOffset overflows");
  ASSERT_EQ(error.context().size(), 2u);
  EXPECT_EQ(error.context()[0], "loading model.ipuexe");
  EXPECT_EQ(error.message(), "blobOffset overflows");
}

TEST(Error, InputErrorPutsTheFieldPathFirst) {
  const InputError error("tiles[0].entryPoint", "0x90000 is not executable");
  EXPECT_STREQ(error.what(), "tiles[0].entryPoint: 0x90000 is not executable");
  EXPECT_EQ(error.message(), "0x90000 is not executable");
}

TEST(Error, WithContextAddsALayerAndKeepsTheType) {
  try {
    with_context("reading weights.safetensors",
                 [] { throw InputError("header", "length 7 is shorter than 8"); });
    FAIL() << "expected an exception";
  } catch (const InputError& error) {
    EXPECT_STREQ(error.what(), "reading weights.safetensors: header: length 7 is shorter than 8");
  }
}

TEST(Error, WithContextPassesTheResultThrough) {
  EXPECT_EQ(with_context("adding", [] { return 40 + 2; }), 42);
}

TEST(Error, WithContextLeavesForeignExceptionsAlone) {
  EXPECT_THROW(with_context("x", [] { throw std::bad_alloc(); }), std::bad_alloc);
}

}  // namespace
}  // namespace tessera
