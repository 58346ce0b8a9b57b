// The attempt loop without actors: what the router and the retry actor
// carry out, step by step. Each test walks an operation through its
// attempts and checks every step between them (where it goes, with which
// timeout, which side effects, what comes next).

#include "georoute/actors/policy/attempt_loop.hpp"
#include "georoute/actors/policy/loop_config.hpp"
#include "tests/policy/attempt_results.hpp"
#include "tests/policy/location_fixture.hpp"

#include <gtest/gtest.h>

using namespace georoute;
using namespace georoute::location_fixture;
using georoute::test::data_plane;
using namespace std::chrono_literals;

// Named after the file as well: the unity build (tests/CMakeLists.txt)
// compiles it in one translation unit with other tests.
namespace attempt_loop_test {
namespace {

attempt_result status(int s, int sub = 0, int64_t retry_after = -1) {
  attempt_result r;
  r.status = s;
  r.substatus = sub;
  r.retry_after_ms = retry_after;
  return r;
}

attempt_result timed_out() {
  attempt_result r;
  r.transport_failure = true;
  r.timed_out = true;
  return r;
}

attempt_result refused() {
  attempt_result r;
  r.transport_failure = true;
  return r;
}

// The retry actor's loop for a metadata read.
attempt_loop_config metadata(loop_policy p = loop_policy::client) {
  return metadata_loop(request_kind::metadata_read, op_kind::read, p, false, {},
                       loop_environment{});
}

const timeout_ladders ladders{};

TEST(LoopConfig, MergedExclusions_EngineFirstThenTheRequests) {
  EXPECT_EQ(merged_exclusions({"West US"}, {"East US", "North Europe"}),
            (std::vector<std::string>{"West US", "East US", "North Europe"}));
  EXPECT_TRUE(merged_exclusions({}, {}).empty());
}

// The two planes' loops, built once from what the engine shares: the
// environment reaches both, the breaker and per-partition failover only
// the data plane.
TEST(LoopConfig, BothPlanes_FromOneEnvironment) {
  partition_breaker breaker;
  partition_failover ppaf;
  loop_environment env;
  env.client.max_failover_retries = 7;
  env.attempt_cap = 9;
  env.breaker = &breaker;
  env.ppaf = &ppaf;
  auto d = data_plane_loop(request_kind::write, op_kind::write, true,
                           {"West US"}, env);
  EXPECT_TRUE(d.is_document);
  EXPECT_TRUE(d.per_partition_failover);
  EXPECT_TRUE(d.refresh_metadata_on_gone);
  EXPECT_TRUE(d.write_retries);
  EXPECT_EQ(d.breaker, &breaker);
  EXPECT_EQ(d.ppaf, &ppaf);
  EXPECT_EQ(d.attempt_cap, 9u);
  EXPECT_EQ(d.client.max_failover_retries, 7u);
  EXPECT_EQ(d.excluded_regions, std::vector<std::string>{"West US"});
  auto m = metadata_loop(request_kind::pkranges_read, op_kind::read,
                         loop_policy::partition_range, true, {}, env);
  EXPECT_FALSE(m.is_document);
  EXPECT_FALSE(m.refresh_metadata_on_gone);
  EXPECT_EQ(m.policy, loop_policy::partition_range);
  EXPECT_TRUE(m.name_based);
  EXPECT_EQ(m.breaker, nullptr);
  EXPECT_EQ(m.ppaf, nullptr);
  EXPECT_EQ(m.attempt_cap, 9u);
  EXPECT_EQ(m.client.max_failover_retries, 7u);
}

TEST(GoneKind, Classify_OneAnswerPer410) {
  struct row {
    int status, sub;
    gone_kind want;
  };
  for (auto r : std::vector<row>{{410, 1002, gone_kind::partition_range},
                                 {410, 1007, gone_kind::partition_range},
                                 {410, 1008, gone_kind::partition_range},
                                 {410, 1000, gone_kind::collection},
                                 {410, 1022, gone_kind::lease_not_found},
                                 {410, 0, gone_kind::other},
                                 {404, 1002, gone_kind::none},
                                 {503, 1002, gone_kind::none}})
    EXPECT_EQ(classify_gone(r.status, r.sub), r.want)
        << r.status << "/" << r.sub;
}

TEST(AttemptLoop, FirstAttempt_FirstPreferredRegion_FirstRungTimeout) {
  auto t = fixture();
  attempt_loop loop{data_plane(op_kind::read), ladders};
  auto p = loop.next_attempt(t, t0);
  ASSERT_TRUE(p) << p.error().what;
  EXPECT_EQ(p->endpoint, east);
  EXPECT_EQ(p->region, "East US");
  EXPECT_EQ(p->timeout, ladders.partition_failover.front().timeout);
  EXPECT_EQ(p->number, 1u);
  EXPECT_FALSE(p->hub_header);
  EXPECT_EQ(loop.on_result(status(200), t, t0, false).next, loop_next::succeed);
}

TEST(AttemptLoop, SilentRegion_ClimbsLadderPinned_ThenMarksRefreshesFailsOver) {
  auto t = fixture();
  attempt_loop loop{data_plane(op_kind::read), ladders};
  const auto& l = ladders.partition_failover;
  for (size_t rung = 0; rung < l.size(); ++rung) {
    auto p = loop.next_attempt(t, t0);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->endpoint, east) << "rung " << rung << " left the endpoint";
    EXPECT_EQ(p->timeout, l[rung].timeout);
    auto s = loop.on_result(timed_out(), t, t0, false);
    if (rung + 1 < l.size()) {
      EXPECT_EQ(s.next, loop_next::attempt);
      EXPECT_EQ(s.delay, l[rung].delay_after);
      EXPECT_FALSE(s.effects.marks());
      EXPECT_EQ(s.reason, "attempt timed out: next ladder step");
      continue;
    }
    // Silent through the whole ladder: a connection failure.
    EXPECT_EQ(s.next, loop_next::after_refresh);
    EXPECT_EQ(s.effects.mark_endpoint, east);
    EXPECT_TRUE(s.effects.mark_read);
    EXPECT_TRUE(s.effects.mark_write);
    EXPECT_TRUE(s.effects.refresh_account);
    t = t.with_mark(east, true, true, t0);
  }
  auto p = loop.next_attempt(t, t0);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->endpoint, west);
  EXPECT_EQ(p->timeout, l.front().timeout) << "the ladder starts again";
}

TEST(AttemptLoop, WriteTimesOut_NotRetried_MayHaveBeenApplied) {
  auto t = fixture();
  attempt_loop loop{data_plane(op_kind::write), ladders};
  ASSERT_TRUE(loop.next_attempt(t, t0));
  auto s = loop.on_result(timed_out(), t, t0, false);
  EXPECT_EQ(s.next, loop_next::fail);
  EXPECT_TRUE(s.policy_refused);
  EXPECT_FALSE(s.effects.marks());
  EXPECT_FALSE(s.effects.refresh_account);
  ASSERT_TRUE(loop.last_failure());
  EXPECT_EQ(loop.last_region(), "East US");
}

TEST(AttemptLoop, ServiceUnavailable_OneCrossRegionRetry_NoMark) {
  auto t = fixture();
  attempt_loop loop{data_plane(op_kind::read), ladders};
  ASSERT_EQ(loop.next_attempt(t, t0)->endpoint, east);
  auto s1 = loop.on_result(status(503), t, t0, false);
  EXPECT_EQ(s1.next, loop_next::attempt);
  EXPECT_FALSE(s1.effects.marks());
  EXPECT_FALSE(s1.effects.refresh_account);
  EXPECT_EQ(loop.next_attempt(t, t0)->endpoint, west);
  auto s2 = loop.on_result(status(503), t, t0, false);
  EXPECT_EQ(s2.next, loop_next::fail);
  EXPECT_EQ(loop.attempts(), 2u);
}

TEST(AttemptLoop, RangeGone_RefreshesTheMap_AllThreeSubstatuses) {
  for (int sub : {1002, 1007, 1008}) {
    auto t = fixture();
    attempt_loop loop{data_plane(op_kind::read), ladders};
    ASSERT_TRUE(loop.next_attempt(t, t0));
    auto s = loop.on_result(status(410, sub), t, t0, false);
    EXPECT_EQ(s.next, loop_next::refresh_ranges) << "410/" << sub;
    EXPECT_FALSE(s.effects.marks()) << "no region is at fault";
    EXPECT_EQ(loop.metadata_refreshes(), 1u);
  }
}

TEST(AttemptLoop, CollectionGone_RefreshesTheCollection) {
  auto t = fixture();
  attempt_loop loop{data_plane(op_kind::read), ladders};
  ASSERT_TRUE(loop.next_attempt(t, t0));
  EXPECT_EQ(loop.on_result(status(410, 1000), t, t0, false).next,
            loop_next::refresh_collection);
}

TEST(AttemptLoop, RangeGoneEveryTime_ThreeRefreshes_ThenThePolicyDecides) {
  auto t = fixture();
  attempt_loop loop{data_plane(op_kind::read), ladders};
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(loop.next_attempt(t, t0));
    ASSERT_EQ(loop.on_result(status(410, 1002), t, t0, false).next,
              loop_next::refresh_ranges);
  }
  ASSERT_TRUE(loop.next_attempt(t, t0));
  auto s = loop.on_result(status(410, 1002), t, t0, false);
  EXPECT_EQ(s.next, loop_next::fail);
  EXPECT_EQ(loop.metadata_refreshes(), 3u);
}

TEST(AttemptLoop, MetadataLoop_RangeGone_LeftToThePolicy) {
  auto t = fixture();
  attempt_loop loop{metadata(), ladders};
  ASSERT_TRUE(loop.next_attempt(t, t0));
  EXPECT_EQ(loop.on_result(status(410, 1002), t, t0, false).next,
            loop_next::fail);
}

TEST(AttemptLoop, BudgetSpent_EffectsStillRun_NoNewAttempt) {
  auto t = fixture();
  attempt_loop loop{data_plane(op_kind::read), ladders};
  ASSERT_TRUE(loop.next_attempt(t, t0));
  auto s = loop.on_result(refused(), t, t0, true);
  EXPECT_EQ(s.next, loop_next::fail_budget);
  EXPECT_EQ(s.effects.mark_endpoint, east);
  EXPECT_TRUE(s.effects.mark_read);
  EXPECT_TRUE(s.effects.refresh_account)
      << "the failover decision's refresh runs although nobody waits";
}

TEST(AttemptLoop, BudgetSpent_TimeoutDoesNotClimb_RangeGoneDoesNotRefresh) {
  auto t = fixture();
  attempt_loop a{data_plane(op_kind::read), ladders};
  ASSERT_TRUE(a.next_attempt(t, t0));
  EXPECT_NE(a.on_result(timed_out(), t, t0, true).next, loop_next::attempt);
  attempt_loop b{data_plane(op_kind::read), ladders};
  ASSERT_TRUE(b.next_attempt(t, t0));
  EXPECT_NE(b.on_result(status(410, 1002), t, t0, true).next,
            loop_next::refresh_ranges);
}

TEST(AttemptLoop, AttemptCap_IsAProblemNamingIt) {
  auto t = fixture();
  auto c = data_plane(op_kind::read);
  c.attempt_cap = 2;
  attempt_loop loop{c, ladders};
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(loop.next_attempt(t, t0));
    ASSERT_EQ(loop.on_result(status(429, 0, 10), t, t0, false).next,
              loop_next::attempt);
  }
  auto p = loop.next_attempt(t, t0);
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().what, "attempt cap of 2 reached");
}

TEST(AttemptLoop, Throttled_RetriesInPlaceAfterRetryAfter) {
  auto t = fixture();
  attempt_loop loop{data_plane(op_kind::read), ladders};
  ASSERT_TRUE(loop.next_attempt(t, t0));
  auto s = loop.on_result(status(429, 0, 250), t, t0, false);
  EXPECT_EQ(s.next, loop_next::attempt);
  EXPECT_EQ(s.delay, 250ms);
  EXPECT_EQ(loop.next_attempt(t, t0)->endpoint, east);
}

TEST(AttemptLoop, SessionNotAvailable_LastReadRetryCarriesHubHeader) {
  auto t = fixture();
  attempt_loop loop{data_plane(op_kind::read), ladders};
  ASSERT_FALSE(loop.next_attempt(t, t0)->hub_header);
  ASSERT_EQ(loop.on_result(status(404, 1002), t, t0, false).next,
            loop_next::attempt);
  ASSERT_FALSE(loop.next_attempt(t, t0)->hub_header);
  ASSERT_EQ(loop.on_result(status(404, 1002), t, t0, false).next,
            loop_next::attempt);
  EXPECT_TRUE(loop.next_attempt(t, t0)->hub_header);
}

TEST(AttemptLoop, ClearingSession_FinalSessionMiss_ClearsNameBasedOnly) {
  for (bool name_based : {true, false}) {
    auto t = fixture();
    auto c = metadata(loop_policy::clearing_session);
    c.name_based = name_based;
    attempt_loop loop{c, ladders};
    loop_step s;
    do {
      ASSERT_TRUE(loop.next_attempt(t, t0));
      s = loop.on_result(status(404, 1002), t, t0, false);
    } while (s.next == loop_next::attempt);
    EXPECT_EQ(s.next, loop_next::fail);
    EXPECT_EQ(s.effects.clear_session, name_based);
  }
}

TEST(AttemptLoop, PartitionRangePolicy_HopsRegionsWithoutMarks) {
  auto t = fixture();
  auto c = metadata(loop_policy::partition_range);
  c.kind = request_kind::pkranges_read;
  attempt_loop loop{c, ladders};
  ASSERT_EQ(loop.next_attempt(t, t0)->endpoint, east);
  auto s = loop.on_result(status(503), t, t0, false);
  EXPECT_EQ(s.next, loop_next::attempt);
  EXPECT_FALSE(s.effects.marks());
  EXPECT_FALSE(s.effects.refresh_account);
  EXPECT_EQ(loop.next_attempt(t, t0)->endpoint, west);
}

// A later page of the pkranges feed starts where the page before was
// served (a hedge in the second region, say); its ladder then stays there,
// and a failure moves on as the policy says.
TEST(AttemptLoop, StartEndpoint_FirstAttemptGoesThere_LadderStaysThere) {
  auto t = fixture();
  auto c = metadata(loop_policy::partition_range);
  c.kind = request_kind::pkranges_read;
  c.start_endpoint = west;
  attempt_loop loop{c, ladders};
  auto p = loop.next_attempt(t, t0);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->endpoint, west);
  EXPECT_EQ(p->region, "West US");
  EXPECT_EQ(loop.on_result(timed_out(), t, t0, false).next, loop_next::attempt);
  EXPECT_EQ(loop.next_attempt(t, t0)->endpoint, west) << "the ladder's step";
  // A definite answer to move on: the policy's hop, not the start again.
  attempt_loop other{c, ladders};
  ASSERT_EQ(other.next_attempt(t, t0)->endpoint, west);
  EXPECT_EQ(other.on_result(status(503), t, t0, false).next,
            loop_next::attempt);
  EXPECT_NE(other.next_attempt(t, t0)->endpoint, west);
}

// The start endpoint is a preference, not an override: a region the
// request may not use now (marked unavailable, excluded, unknown) is passed
// over for the policy's own choice.
TEST(AttemptLoop, StartEndpoint_UnusableRegion_PolicyChooses) {
  auto c = metadata(loop_policy::partition_range);
  c.kind = request_kind::pkranges_read;
  c.start_endpoint = west;
  {
    auto t = fixture().with_mark(west, true, true, t0);
    attempt_loop loop{c, ladders};
    EXPECT_EQ(loop.next_attempt(t, t0)->endpoint, east) << "marked";
  }
  {
    auto t = fixture();
    auto excluded = c;
    excluded.excluded_regions = {"West US"};
    attempt_loop loop{excluded, ladders};
    EXPECT_EQ(loop.next_attempt(t, t0)->endpoint, east) << "excluded";
  }
  {
    auto t = fixture().with_fleet_demotions({"West US"}, {}, t0);
    attempt_loop loop{c, ladders};
    EXPECT_EQ(loop.next_attempt(t, t0)->endpoint, east) << "fleet-demoted";
  }
  {
    auto t = fixture();
    auto unknown = c;
    unknown.start_endpoint = "http://127.0.0.1:9/";
    attempt_loop loop{unknown, ladders};
    EXPECT_EQ(loop.next_attempt(t, t0)->endpoint, east) << "unknown";
  }
}

TEST(AttemptLoop, ExcludedRegions_NeverChosen) {
  auto t = fixture();
  auto c = data_plane(op_kind::read);
  c.excluded_regions = {"East US"};
  attempt_loop loop{c, ladders};
  EXPECT_EQ(loop.next_attempt(t, t0)->endpoint, west);
}

TEST(AttemptLoop, WriteForbidden_MarksWriteForcesRefresh_WaitsForIt) {
  auto t = fixture();
  attempt_loop loop{data_plane(op_kind::write), ladders};
  ASSERT_EQ(loop.next_attempt(t, t0)->endpoint, east);
  auto s = loop.on_result(status(403, 3), t, t0, false);
  EXPECT_EQ(s.next, loop_next::after_refresh);
  EXPECT_TRUE(s.effects.mark_write);
  EXPECT_FALSE(s.effects.mark_read);
  EXPECT_TRUE(s.effects.refresh_account);
  EXPECT_TRUE(s.effects.force_refresh);
}

} // namespace
} // namespace attempt_loop_test
