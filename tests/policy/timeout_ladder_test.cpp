// HTTP timeout ladders (.NET HttpTimeoutPolicy, src/HttpClient/): the ladder
// and flags chosen per request kind, the reference values of each ladder, and
// the parsing and rendering of ladder steps and durations.

#include "georoute/actors/policy/timeout_ladder.hpp"

#include <gtest/gtest.h>
#include <string>
#include <vector>

using namespace georoute;
using namespace std::chrono_literals;
using std::chrono::milliseconds;

namespace {

timeout_ladder steps(std::vector<std::pair<milliseconds, milliseconds>> xs) {
  timeout_ladder out;
  for (auto [t, d] : xs)
    out.push_back(ladder_step{t, d});
  return out;
}

} // namespace

// -- selection -------------------------------------------------------------

TEST(TimeoutLadder, ChooseLadder_EveryKind_ReferenceSelection) {
  const timeout_ladders l;
  struct row {
    const char* name;
    request_kind kind;
    bool ppaf;
    const timeout_ladder* ladder;
    bool retry_timeouts;
    bool retry_408;
  };
  const std::vector<row> rows = {
      // .NET HttpTimeoutPolicy (src/HttpClient/): "Account reads use
      // ControlPlaneRead".
      {"AccountRead_Default_ControlPlaneReadTimeoutsNot408",
       request_kind::account_read, false, &l.control_plane_read, true, false},
      {"QueryPlan_Default_HotPathTimeoutsAnd408", request_kind::query_plan,
       false, &l.hot_path, true, true},
      {"PkrangesRead_Default_HotPathTimeoutsAnd408",
       request_kind::pkranges_read, false, &l.hot_path, true, true},
      {"MetadataRead_Default_HotPathTimeoutsAnd408",
       request_kind::metadata_read, false, &l.hot_path, true, true},
      {"MetadataRead_Ppaf_HotPathTimeoutsAnd408", request_kind::metadata_read,
       true, &l.hot_path, true, true},
      {"DocumentRead_Default_DefaultLadderTimeoutsNot408",
       request_kind::document_read, false, &l.default_ladder, true, false},
      {"DocumentRead_Ppaf_PartitionFailoverTimeoutsNot408",
       request_kind::document_read, true, &l.partition_failover, true, false},
      {"Write_Default_DefaultLadderNoRetries", request_kind::write, false,
       &l.default_ladder, false, false},
      {"Write_Ppaf_DefaultLadderNoRetries", request_kind::write, true,
       &l.default_ladder, false, false},
      {"Probe_Default_NoRetryLadderNoRetries", request_kind::probe, false,
       &l.no_retry, false, false},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    auto c = choose_ladder(l, r.kind, r.ppaf);
    EXPECT_EQ(c.ladder, r.ladder);
    EXPECT_EQ(c.retry_timeouts, r.retry_timeouts);
    EXPECT_EQ(c.retry_408, r.retry_408);
  }
}

TEST(TimeoutLadder, Defaults_ReferenceValues_Exact) {
  const timeout_ladders l;
  EXPECT_EQ(l.control_plane_read, steps({{5s, 0s}, {10s, 1s}, {20s, 0s}}));
  EXPECT_EQ(l.hot_path, steps({{1s, 0s}, {5s, 1s}, {65s, 0s}}));
  EXPECT_EQ(l.default_ladder, steps({{65s, 0s}, {65s, 1s}, {65s, 0s}}));
  EXPECT_EQ(l.partition_failover, steps({{6s, 0s}, {6s, 0s}, {10s, 0s}}));
  EXPECT_EQ(l.no_retry, steps({{65s, 0s}}));
}

TEST(TimeoutLadder, ChooseLadder_CustomLadders_PointsIntoThem) {
  timeout_ladders l;
  l.hot_path = steps({{500ms, 0s}});
  auto c = choose_ladder(l, request_kind::pkranges_read);
  ASSERT_EQ(c.ladder, &l.hot_path);
  EXPECT_EQ(c.ladder->front().timeout, 500ms);
}

// -- durations -------------------------------------------------------------

TEST(TimeoutLadder, ParseDuration_Valid_Milliseconds) {
  struct row {
    const char* text;
    milliseconds value;
  };
  const std::vector<row> rows = {
      {"0s", 0ms},    {"0ms", 0ms},   {"1500ms", 1500ms},
      {"300s", 300s}, {"5min", 5min}, {"2h", 2h},
      {"1ms", 1ms},   {"65s", 65s},   {"86400s", 86400s},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.text);
    auto d = parse_duration(r.text);
    ASSERT_TRUE(d.ok()) << d.error().what;
    EXPECT_EQ(*d, r.value);
  }
}

TEST(TimeoutLadder, ParseDuration_Invalid_Problem) {
  const std::vector<const char*> rows = {
      "",
      "5",
      "s",
      "abc",
      "-1s",
      "+5s",
      "5 s",
      "5S",
      "5sec",
      "1.5s",
      "5m",
      "ms5",
      " 5s",
      "5s ",
      "0x5s",
      "99999999999999999999s",
      "9223372036854775807h",
  };
  for (const auto* text : rows) {
    SCOPED_TRACE(text);
    auto d = parse_duration(text);
    ASSERT_FALSE(d.ok());
    EXPECT_FALSE(d.error().what.empty());
  }
}

TEST(TimeoutLadder, FormatDuration_ShortestExactUnit) {
  struct row {
    milliseconds value;
    const char* text;
  };
  const std::vector<row> rows = {
      {0ms, "0s"},   {1ms, "1ms"},     {1500ms, "1500ms"}, {1s, "1s"},
      {90s, "90s"},  {60s, "1min"},    {300s, "5min"},     {3600s, "1h"},
      {7200s, "2h"}, {5400s, "90min"}, {65s, "65s"},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.text);
    EXPECT_EQ(format_duration(r.value), r.text);
    auto back = parse_duration(format_duration(r.value));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, r.value);
  }
}

// -- ladder steps ----------------------------------------------------------

TEST(TimeoutLadder, ParseLadderStep_Valid_TimeoutAndDelay) {
  struct row {
    const char* text;
    ladder_step step;
    const char* rendered;
  };
  const std::vector<row> rows = {
      {"5s/0s", {5s, 0s}, "5s/0s"},
      {"500ms/1s", {500ms, 1s}, "500ms/1s"},
      {"1min/0ms", {60s, 0s}, "1min/0s"},
      {"65s/1000ms", {65s, 1s}, "65s/1s"},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.text);
    auto s = parse_ladder_step(r.text);
    ASSERT_TRUE(s.ok()) << s.error().what;
    EXPECT_EQ(*s, r.step);
    EXPECT_EQ(to_string(*s), r.rendered);
  }
}

TEST(TimeoutLadder, ParseLadderStep_Invalid_Problem) {
  const std::vector<const char*> rows = {
      "",       "5s",    "/",      "5s/",    "/0s",    "0s/0s",
      "0ms/1s", "5x/0s", "5s/abc", "-1s/0s", "5s/-1s", "5s/0s/1s",
  };
  for (const auto* text : rows) {
    SCOPED_TRACE(text);
    auto s = parse_ladder_step(text);
    ASSERT_FALSE(s.ok());
    EXPECT_FALSE(s.error().what.empty());
  }
}

TEST(TimeoutLadder, ParseLadder_StepCounts_OneToTen) {
  auto one = parse_ladder({"5s/0s"});
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(*one, steps({{5s, 0s}}));
  auto three = parse_ladder({"1s/0s", "5s/1s", "65s/0s"});
  ASSERT_TRUE(three.ok());
  EXPECT_EQ(*three, timeout_ladders{}.hot_path);
  EXPECT_TRUE(parse_ladder(std::vector<std::string>(10, "1s/0s")).ok());
  EXPECT_FALSE(parse_ladder(std::vector<std::string>(11, "1s/0s")).ok());
  EXPECT_FALSE(parse_ladder({}).ok());
  auto bad = parse_ladder({"1s/0s", "oops"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().what.find("oops"), std::string::npos);
}

namespace {

using georoute::choose_ladder;
using georoute::decide_ladder;
using georoute::request_kind;
using georoute::timeout_ladders;

TEST(TimeoutLadder, DecideLadder_Table) {
  using namespace std::chrono_literals;
  const timeout_ladders l;
  auto hot =
      choose_ladder(l, request_kind::metadata_read);  // 1s/0, 5s/1s, 65s/0
  auto write = choose_ladder(l, request_kind::write); // no timeout retry
  auto account = choose_ladder(l, request_kind::account_read); // no 408 retry
  struct row {
    const char* name;
    georoute::ladder_choice c;
    size_t step;
    bool timed_out;
    int status;
    bool climb;
    std::chrono::milliseconds delay;
    bool silent;
  };
  const row rows[] = {
      {"HotPath_TimeoutStep0_ClimbsNoDelay", hot, 0, true, 0, true, 0ms, false},
      {"HotPath_TimeoutStep1_ClimbsAfter1s", hot, 1, true, 0, true, 1000ms,
       false},
      {"HotPath_TimeoutLastStep_RegionSilent", hot, 2, true, 0, false, 0ms,
       true},
      {"HotPath_408_Climbs", hot, 0, false, 408, true, 0ms, false},
      {"HotPath_408LastStep_NotSilent", hot, 2, false, 408, false, 0ms, false},
      {"HotPath_503_NoClimb", hot, 0, false, 503, false, 0ms, false},
      {"Write_Timeout_NeverResent", write, 0, true, 0, false, 0ms, false},
      {"Account_408_NoClimb", account, 0, false, 408, false, 0ms, false},
      {"Account_TimeoutStep0_Climbs", account, 0, true, 0, true, 0ms, false},
  };
  for (const auto& r : rows) {
    auto d = decide_ladder(r.c, r.step, r.timed_out, r.status);
    EXPECT_EQ(d.climb, r.climb) << r.name;
    EXPECT_EQ(d.delay, r.delay) << r.name;
    EXPECT_EQ(d.region_silent, r.silent) << r.name;
  }
}

} // namespace
