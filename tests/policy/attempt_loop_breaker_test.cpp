// The attempt loop with the per-partition circuit breaker, without actors:
// every operation is a fresh loop (as in the router), on the location
// fixture (reads prefer East US, then West US, then North Europe). Time is
// virtual; each step checks where the next request goes before the next
// outcome is reported.

#include "georoute/actors/policy/attempt_loop.hpp"
#include "tests/policy/attempt_results.hpp"
#include "tests/policy/location_fixture.hpp"

#include <gtest/gtest.h>

using namespace georoute;
using namespace georoute::location_fixture;
using namespace std::chrono_literals;

namespace {

using namespace georoute::test;

const std::string rid = "aaaaAAAAAAA=";
const timeout_ladders ladders{};

attempt_result ok() {
  return http_answer(200);
}

// One operation's loop on range `range`, like the router builds it.
struct operation {
  attempt_loop loop;
  attempt_plan plan;

  operation(partition_breaker& b, const location_table& t, policy_time now,
            std::string range = "1", op_kind op = op_kind::read)
      : loop(data_plane(op, &b), ladders) {
    loop.set_partition(rid, std::move(range));
    auto p = loop.next_attempt(t, now);
    EXPECT_TRUE(p) << p.error().what;
    if (p) plan = *p;
  }

  breaker_report report(const attempt_result& r, policy_time now) {
    return loop.report_outcome(r, now);
  }
};

breaker_key key(std::string region, std::string range = "1") {
  return {rid, std::move(range), std::move(region)};
}

using strings = std::vector<std::string>;

// Opens (range 1, East US) with ten failed reads at `at`.
void trip_east(partition_breaker& b, const location_table& t, policy_time at,
               std::string range = "1") {
  for (int i = 0; i < 10; ++i) {
    operation op{b, t, at, range};
    ASSERT_EQ(op.plan.region, "East US") << "read " << i + 1;
    op.report(http_answer(503), at);
  }
  ASSERT_EQ(b.view(key("East US", range), at).state, breaker_state::open);
}

TEST(AttemptLoopBreaker, TenReadFailures_RangeSkipsRegion_OtherRangesStay) {
  auto t = fixture();
  partition_breaker b;
  for (int i = 0; i < 9; ++i) {
    operation op{b, t, t0};
    ASSERT_EQ(op.plan.region, "East US");
    EXPECT_TRUE(op.plan.breaker_consulted);
    EXPECT_EQ(op.plan.admission, admission_kind::pass);
    EXPECT_TRUE(op.plan.breaker_skipped.empty());
    auto rep = op.report(http_answer(503), t0);
    EXPECT_TRUE(rep.reported);
    EXPECT_EQ(rep.signal, breaker_signal::failure);
    EXPECT_EQ(rep.state, breaker_state::closed);
  }
  // The tenth consecutive failure opens.
  operation tenth{b, t, t0};
  ASSERT_EQ(tenth.plan.region, "East US");
  EXPECT_EQ(tenth.report(http_answer(503), t0).state, breaker_state::open);
  // Range 1 skips East; range 2 and East's other regions are untouched.
  operation next{b, t, t0 + 1s};
  EXPECT_EQ(next.plan.region, "West US");
  EXPECT_EQ(next.plan.endpoint, west);
  EXPECT_EQ(next.plan.breaker_skipped, strings{"East US"});
  EXPECT_EQ(next.plan.admission, admission_kind::pass);
  operation other{b, t, t0 + 1s, "2"};
  EXPECT_EQ(other.plan.region, "East US");
  EXPECT_TRUE(other.plan.breaker_skipped.empty());
  // A report is made once per attempt.
  EXPECT_TRUE(next.report(ok(), t0 + 1s).reported);
  EXPECT_FALSE(next.report(ok(), t0 + 1s).reported);
}

TEST(AttemptLoopBreaker, AnAnswerInBetween_ResetsTheCount) {
  auto t = fixture();
  partition_breaker b;
  for (int i = 0; i < 9; ++i)
    operation{b, t, t0}.report(http_answer(503), t0);
  operation answered{b, t, t0};
  // A 404 is an answer: the region works for this range.
  EXPECT_EQ(answered.report(http_answer(404), t0).signal,
            breaker_signal::answered);
  for (int i = 0; i < 9; ++i)
    operation{b, t, t0}.report(http_answer(503), t0);
  EXPECT_EQ(operation(b, t, t0).plan.region, "East US");
}

TEST(AttemptLoopBreaker, AfterOpenPeriod_ExactlyOneProbe_ThenGradualReturn) {
  auto t = fixture();
  partition_breaker b; // open period 5 s, 3 half-open steps
  trip_east(b, t, t0);
  EXPECT_EQ(operation(b, t, t0 + 4999ms).plan.region, "West US");
  // The open period is over: the next request is the probe, and while it is
  // out nothing else goes to East for this range.
  operation probe{b, t, t0 + 5s};
  EXPECT_EQ(probe.plan.region, "East US");
  EXPECT_EQ(probe.plan.admission, admission_kind::probe);
  for (int i = 0; i < 5; ++i) {
    operation during{b, t, t0 + 6s};
    EXPECT_EQ(during.plan.region, "West US");
    EXPECT_EQ(during.plan.breaker_skipped, strings{"East US"});
  }
  auto rep = probe.report(ok(), t0 + 6s);
  EXPECT_TRUE(rep.probe);
  EXPECT_EQ(rep.state, breaker_state::half_open);
  // Half-open: one in 8, then one in 4, then one in 2; the third answer
  // closes.
  for (int share : {8, 4, 2}) {
    for (int i = 1; i < share; ++i)
      EXPECT_EQ(operation(b, t, t0 + 7s).plan.region, "West US")
          << "1/" << share << " #" << i;
    operation trial{b, t, t0 + 7s};
    ASSERT_EQ(trial.plan.region, "East US") << "1/" << share;
    EXPECT_EQ(trial.plan.admission, admission_kind::trial);
    trial.report(ok(), t0 + 7s);
  }
  EXPECT_EQ(b.view(key("East US"), t0 + 7s).state, breaker_state::closed);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(operation(b, t, t0 + 7s).plan.region, "East US");
  EXPECT_EQ(b.counters().probes_started, 1u);
  EXPECT_EQ(b.counters().closed, 1u);
}

TEST(AttemptLoopBreaker, ProbeFails_OpenPeriodDoubles) {
  auto t = fixture();
  partition_breaker b;
  trip_east(b, t, t0);
  operation probe{b, t, t0 + 5s};
  ASSERT_EQ(probe.plan.admission, admission_kind::probe);
  EXPECT_EQ(probe.report(http_answer(503), t0 + 5s).state, breaker_state::open);
  EXPECT_EQ(b.view(key("East US"), t0 + 5s).open_period, 10s);
  EXPECT_EQ(operation(b, t, t0 + 14999ms).plan.region, "West US");
  operation second{b, t, t0 + 15s};
  EXPECT_EQ(second.plan.region, "East US");
  EXPECT_EQ(second.plan.admission, admission_kind::probe);
  second.report(no_answer(true, true), t0 + 15s); // timed out, sent
  EXPECT_EQ(b.view(key("East US"), t0 + 15s).open_period, 20s);
  EXPECT_EQ(b.counters().reopened, 2u);
}

TEST(AttemptLoopBreaker, NotSentConnectionFailure_DoesNotCount) {
  auto t = fixture();
  partition_breaker b;
  // Refused, connect timeouts: nothing reached the region for this range.
  for (int i = 0; i < 20; ++i) {
    operation op{b, t, t0};
    ASSERT_EQ(op.plan.region, "East US");
    bool timed_out = i % 2 == 1;
    EXPECT_EQ(op.report(no_answer(timed_out, false), t0).signal,
              breaker_signal::no_signal);
  }
  EXPECT_FALSE(b.view(key("East US"), t0).tracked);
  // Sent and then lost: these count.
  for (int i = 0; i < 10; ++i)
    operation{b, t, t0}.report(no_answer(i % 2 == 1, true), t0);
  EXPECT_EQ(operation(b, t, t0).plan.region, "West US");
}

TEST(AttemptLoopBreaker, ProbeNotSent_StaysOpen_PeriodUnchanged) {
  auto t = fixture();
  partition_breaker b;
  trip_east(b, t, t0);
  operation probe{b, t, t0 + 5s};
  ASSERT_EQ(probe.plan.admission, admission_kind::probe);
  probe.report(no_answer(false, false), t0 + 5s);
  auto v = b.view(key("East US"), t0 + 5s);
  EXPECT_EQ(v.state, breaker_state::open);
  EXPECT_EQ(v.open_period, 5s);
}

TEST(AttemptLoopBreaker, WritesOnSingleWriteAccount_NotConsulted) {
  auto t = fixture(false);
  partition_breaker b;
  for (int i = 0; i < 10; ++i) {
    operation op{b, t, t0, "1", op_kind::write};
    EXPECT_EQ(op.plan.endpoint, east); // the hub
    EXPECT_FALSE(op.plan.breaker_consulted);
    EXPECT_FALSE(op.report(http_answer(503), t0).reported);
  }
  EXPECT_EQ(b.size(), 0u);
  // Even with East tripped for reads, the write goes to the hub.
  trip_east(b, t, t0);
  operation w{b, t, t0, "1", op_kind::write};
  EXPECT_EQ(w.plan.endpoint, east);
  EXPECT_TRUE(w.plan.breaker_skipped.empty());
}

TEST(AttemptLoopBreaker, WritesOnMultiWriteAccount_FiveFailuresOpen) {
  auto t = fixture(true);
  partition_breaker b;
  for (int i = 0; i < 5; ++i) {
    operation op{b, t, t0, "1", op_kind::write};
    ASSERT_EQ(op.plan.region, "East US") << "write " << i + 1;
    EXPECT_TRUE(op.plan.breaker_consulted);
    op.report(http_answer(503), t0);
  }
  operation w{b, t, t0, "1", op_kind::write};
  EXPECT_EQ(w.plan.region, "West US");
  EXPECT_EQ(w.plan.breaker_skipped, strings{"East US"});
  // Reads and writes count apart: reads of the range are blocked too (one
  // key per region), but read answers would not reset the write count.
  EXPECT_EQ(operation(b, t, t0).plan.region, "West US");
}

TEST(AttemptLoopBreaker, FiveHedgeWins_Open_PrimaryFinalResets) {
  auto t = fixture();
  partition_breaker b;
  for (int i = 0; i < 4; ++i) {
    operation primary{b, t, t0};
    ASSERT_EQ(primary.plan.region, "East US");
    EXPECT_TRUE(primary.loop.record_hedge_loss(t0));
    EXPECT_FALSE(primary.loop.record_hedge_loss(t0)); // once per attempt
  }
  // A final answer of East as the primary resets the count.
  operation won{b, t, t0};
  won.report(ok(), t0);
  won.loop.record_final(t0);
  for (int i = 0; i < 4; ++i)
    operation{b, t, t0}.loop.record_hedge_loss(t0);
  EXPECT_EQ(operation(b, t, t0).plan.region, "East US");
  operation fifth{b, t, t0};
  fifth.loop.record_hedge_loss(t0);
  // The late answer of the losing primary still reports (an answer does
  // not reset hedge wins).
  fifth.report(ok(), t0 + 1s);
  EXPECT_EQ(b.view(key("East US"), t0 + 1s).state, breaker_state::open);
  EXPECT_EQ(operation(b, t, t0 + 1s).plan.region, "West US");
}

TEST(AttemptLoopBreaker, AnsweredAttempt_NoHedgeLoss) {
  auto t = fixture();
  partition_breaker b;
  operation op{b, t, t0};
  op.report(ok(), t0);
  EXPECT_FALSE(op.loop.record_hedge_loss(t0));
}

TEST(AttemptLoopBreaker, PinnedLadderStep_RegionOpensMeanwhile_Unpinned) {
  auto t = fixture();
  partition_breaker b;
  operation op{b, t, t0};
  ASSERT_EQ(op.plan.region, "East US");
  auto r = no_answer(true, true);
  op.report(r, t0);
  auto step = op.loop.on_result(r, t, t0, false);
  ASSERT_TRUE(step.ladder_climb);
  EXPECT_FALSE(op.loop.pinned_blocked(t0));
  // Other reads of the range open East before the ladder step goes.
  for (int i = 0; i < 9; ++i)
    operation{b, t, t0}.report(http_answer(503), t0);
  EXPECT_TRUE(op.loop.pinned_blocked(t0));
  auto next = op.loop.next_attempt(t, t0);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->region, "West US");
  EXPECT_EQ(next->breaker_skipped, strings{"East US"});
  EXPECT_EQ(next->timeout, ladders.partition_failover.front().timeout);
}

TEST(AttemptLoopBreaker, PinnedLadderStep_Closed_StaysPinned) {
  auto t = fixture();
  partition_breaker b;
  operation op{b, t, t0};
  auto r = no_answer(true, true);
  op.report(r, t0);
  ASSERT_TRUE(op.loop.on_result(r, t, t0, false).ladder_climb);
  auto next = op.loop.next_attempt(t, t0);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->region, "East US");
  EXPECT_TRUE(next->breaker_consulted);
}

TEST(AttemptLoopBreaker, EveryRegionOpen_FallsBackToThePick_OptionalSkips) {
  auto t = fixture();
  partition_breaker b;
  auto eps = t.applicable_endpoints(op_kind::read, {}, t0);
  for (const auto& ep : eps)
    for (int i = 0; i < 10; ++i)
      b.record(key(t.region_of(ep)), op_kind::read, breaker_signal::failure, {},
               t0);
  operation op{b, t, t0};
  EXPECT_EQ(op.plan.admission, admission_kind::fallback);
  EXPECT_EQ(op.plan.region, "East US");
  EXPECT_EQ(op.plan.breaker_skipped.size(), eps.size() - 1);
  // A hedge arm confined to West: not made.
  auto c = data_plane(op_kind::read, &b);
  c.optional_attempt = true;
  c.excluded_regions = {"East US", "North Europe", "Southeast Asia"};
  attempt_loop arm{c, ladders};
  arm.set_partition(rid, "1");
  auto p = arm.next_attempt(t, t0);
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->skip);
  EXPECT_EQ(p->region, "West US");
  EXPECT_EQ(arm.attempts(), 0u);
}

TEST(AttemptLoopBreaker, NoPartitionOrNoBreaker_NotConsulted) {
  auto t = fixture();
  partition_breaker b;
  trip_east(b, t, t0);
  attempt_loop no_range{data_plane(op_kind::read, &b), ladders};
  auto p = no_range.next_attempt(t, t0);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->region, "East US");
  EXPECT_FALSE(p->breaker_consulted);
  attempt_loop no_breaker{data_plane(op_kind::read, nullptr), ladders};
  no_breaker.set_partition(rid, "1");
  auto q = no_breaker.next_attempt(t, t0);
  ASSERT_TRUE(q);
  EXPECT_EQ(q->region, "East US");
  EXPECT_FALSE(no_breaker.report_outcome(http_answer(503), t0).reported);
}

TEST(AttemptLoopBreaker, CrossRegionRetry_WalksOnFromTheBreakersChoice) {
  auto t = fixture();
  partition_breaker b;
  trip_east(b, t, t0);
  // West (the breaker's choice) answers 503: the one cross-region retry
  // goes on to North Europe, not back to East.
  operation op{b, t, t0};
  ASSERT_EQ(op.plan.region, "West US");
  op.report(http_answer(503), t0);
  auto step = op.loop.on_result(http_answer(503), t, t0, false);
  ASSERT_EQ(step.next, loop_next::attempt);
  auto next = op.loop.next_attempt(t, t0);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->region, "North Europe");
}

// Found by the soak under ASan: the range was kept out of every region but
// East, East answered 503, and the one cross-region retry went back to East
// (the breaker's only admitted region), which answered 503 again. The retry
// steps past the region that just failed: with every other region open, it
// falls back to the policy's pick, as when every region is open.
TEST(AttemptLoopBreaker,
     CrossRegionRetry_OnlyTheFailedRegionAdmitted_NotBackThere) {
  auto t = fixture();
  partition_breaker b;
  auto eps = t.applicable_endpoints(op_kind::read, {}, t0);
  for (const auto& ep : eps)
    if (t.region_of(ep) != "East US")
      for (int i = 0; i < 10; ++i)
        b.record(key(t.region_of(ep)), op_kind::read, breaker_signal::failure,
                 {}, t0);
  operation op{b, t, t0};
  ASSERT_EQ(op.plan.region, "East US");
  EXPECT_EQ(op.plan.admission, admission_kind::pass);
  op.report(http_answer(503), t0);
  auto step = op.loop.on_result(http_answer(503), t, t0, false);
  ASSERT_EQ(step.next, loop_next::attempt);
  auto next = op.loop.next_attempt(t, t0);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->region, "West US");
  EXPECT_EQ(next->admission, admission_kind::fallback);
  // A first attempt (nothing to step past) still takes the admitted region.
  operation fresh{b, t, t0};
  EXPECT_EQ(fresh.plan.region, "East US");
}

} // namespace

// Ported from the .NET SDK's "failures from two regions move the partition to
// the third": East US trips for range 1, then West US (now its first choice)
// trips too; range 1 goes to North Europe, naming both skipped regions, while
// range 2 still reads from East US. Timeouts that may have been sent count
// like 503s (the SDK's "service response delay" case).
TEST(AttemptLoopBreaker, TwoRegionsTrip_RangeMovesToTheThird) {
  auto t = fixture();
  partition_breaker b;
  trip_east(b, t, t0);
  for (int i = 0; i < 10; ++i) {
    operation op{b, t, t0 + 1s};
    ASSERT_EQ(op.plan.region, "West US") << "read " << i + 1;
    op.report(no_answer(true, true), t0 + 1s);
  }
  EXPECT_EQ(b.view(key("West US"), t0 + 1s).state, breaker_state::open);
  operation third{b, t, t0 + 2s};
  EXPECT_EQ(third.plan.region, "North Europe");
  EXPECT_EQ(third.plan.breaker_skipped, (strings{"East US", "West US"}));
  operation other{b, t, t0 + 2s, "2"};
  EXPECT_EQ(other.plan.region, "East US");
}
