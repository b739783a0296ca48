// The HTML report's payload: names with '<', '>' and '&' cannot end the
// script element it sits in, and the page's JSON reads back to the names.
#include <gtest/gtest.h>

#include <algorithm>

#include "runtime/profile/html_report.hpp"

namespace tessera::profile {
namespace {

schema::Profile profile_named(const std::string& operation, const std::string& kernel) {
  schema::Profile profile;
  profile.clock_hz = 1'330'000'000;
  schema::ProfileInterner names(profile);
  const auto step = names.step({schema::StepKind::kCompute, kernel, operation, "", {}}, 0xFFFFFFF0,
                               0x10);
  profile.tiles.push_back({target::PhysicalTile(7), {step}});
  return profile;
}

std::string embedded_json(const std::string& html) {
  const std::string open = "<script id=\"payload\" type=\"application/json\">";
  const auto begin = html.find(open);
  const auto end = html.find("</script>", begin);
  EXPECT_NE(begin, std::string::npos);
  return html.substr(begin + open.size(), end - begin - open.size());
}

TEST(ProfileHtmlReport, NamesCannotCloseTheScriptElement) {
  const std::string hostile = "</script><img src=x onerror=alert(1)><!-- & -->";
  const auto profile = profile_named(hostile, "k<&>");
  const Timeline timeline(profile);
  const std::string html = html_report({&timeline, nullptr, "run.profile", ""});
  EXPECT_EQ(html.find(hostile), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  const std::string json = embedded_json(html);
  EXPECT_EQ(json.find_first_of("<>&"), std::string::npos);
  EXPECT_NE(json.find("\\u003c/script\\u003e"), std::string::npos);
  EXPECT_NE(json.find("k\\u003c\\u0026\\u003e"), std::string::npos);
  // The escapes are JSON's own: the page reads the names back unchanged.
  const auto payload = nlohmann::json::parse(json);
  const auto& strings = payload["strings"];
  EXPECT_NE(std::find(strings.begin(), strings.end(), hostile), strings.end());
  EXPECT_NE(std::find(strings.begin(), strings.end(), "k<&>"), strings.end());
}

TEST(ProfileHtmlReport, SamplesCarryWrappingDurations) {
  const auto profile = profile_named("op", "k");
  const Timeline timeline(profile);
  const auto payload =
      nlohmann::json::parse(report_payload_text({&timeline, nullptr, "run.profile", ""}));
  const auto& samples = payload["tiles"][0]["samples"];
  ASSERT_EQ(samples.size(), 5u);  // [kind, kernel, operation, offset, cycles]
  EXPECT_EQ(samples[0], static_cast<int>(schema::StepKind::kCompute));
  EXPECT_EQ(payload["strings"][samples[1].get<std::size_t>()], "k");
  EXPECT_EQ(payload["strings"][samples[2].get<std::size_t>()], "op");
  EXPECT_EQ(samples[3], 0);
  EXPECT_EQ(samples[4], 0x20);  // 0x10 − 0xFFFFFFF0 mod 2^32
  EXPECT_EQ(payload["header"]["summary"]["totalCycles"], 0x20);
  EXPECT_EQ(payload["operations"][0]["name"], "op");
}

// Over the sample budget each tile's steps become cells of at least the
// quantum, named by their longest step, covering the same cycles; the flame
// graph's tree still counts every step. Oracle: the steps, summed by hand.
TEST(ProfileHtmlReport, ALargeProfilesTimelineIsMergedIntoCells) {
  schema::Profile profile;
  profile.clock_hz = 1;
  schema::ProfileInterner names(profile);
  for (std::uint16_t t = 0; t < 2; ++t) {
    schema::TileProfile tile{target::PhysicalTile(t), {}};
    std::uint32_t at = 0xFFFFFFFFu - 10;  // 2^32 − 11: the counters wrap
    for (int i = 0; i < 100; ++i) {       // 100 × (compute 3, sync 7): 1000 cycles
      tile.steps.push_back(names.step({schema::StepKind::kCompute, "k", "op", "", {}}, at, at + 3));
      tile.steps.push_back(
          names.step({schema::StepKind::kSynchronization, "", "op", "", {}}, at + 3, at + 10));
      at += 10;
    }
    profile.tiles.push_back(std::move(tile));
  }
  const Timeline timeline(profile);
  // 400 samples over a budget of 20: 10 a tile, cells of 1000 / 10 = 100 cycles.
  EXPECT_EQ(timeline_quantum(timeline, 400), 0u);
  EXPECT_EQ(timeline_quantum(timeline, 20), 100u);
  const auto payload =
      nlohmann::json::parse(report_payload_text({&timeline, nullptr, "run.profile", "", 20}));
  EXPECT_EQ(payload["timelineQuantum"], 100);
  for (const auto& tile : payload["tiles"]) {
    const auto& s = tile["samples"];
    ASSERT_EQ(s.size(), 5u * 10u);
    for (std::size_t c = 0; c < 10; ++c) {
      EXPECT_EQ(s[5 * c], static_cast<int>(schema::StepKind::kSynchronization));  // the longest
      EXPECT_EQ(s[5 * c + 3], 100u * c);
      EXPECT_EQ(s[5 * c + 4], 100u);
    }
  }
  // kind → operation → kernel: 2 tiles × 100 × 3 compute, × 7 sync.
  const auto flame = nlohmann::json::parse(
      R"json([["compute", [["op", [["k", 600]]]]], ["synchronization", [["op", [["(no kernel)", 1400]]]]]])json");
  EXPECT_EQ(payload["flame"], flame);
}

}  // namespace
}  // namespace tessera::profile
