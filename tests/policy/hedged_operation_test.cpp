// The hedge of one data-plane operation as a state machine, without actors:
// events in (a timer, an arm's answer, arm 0 giving up, the operation
// ending), steps out (arms to send, the next wake-up, marks, the end). Each
// test checks the step of every event before the next event happens.
// Reads on the location fixture prefer East US, then West US, then North
// Europe; the read ladder's first rung is 6 s, so the default threshold is
// 1 s and the step 500 ms.

#include "georoute/actors/policy/hedged_operation.hpp"
#include "tests/policy/attempt_results.hpp"
#include "tests/policy/location_fixture.hpp"

#include <gtest/gtest.h>

using namespace georoute;
using namespace georoute::location_fixture;
using namespace georoute::test;
using namespace std::chrono_literals;

// Named after the file as well: the unity build (tests/CMakeLists.txt)
// compiles it in one translation unit with other tests.
namespace hedged_operation_test {
namespace {

const std::string rid = "aaaaAAAAAAA=";
const timeout_ladders ladders{};

// The engine's shared state, as the router holds it.
struct engine {
  hedging_options options;
  hedge_budget budget;
  region_latencies latencies;
  std::optional<partition_breaker> breaker;

  explicit engine(hedging_options o = {}, bool with_breaker = false)
      : options(o), budget(o.budget) {
    if (with_breaker) breaker.emplace();
  }

  hedge_env env() {
    hedge_env e;
    e.options = &options;
    e.budget = &budget;
    e.latencies = &latencies;
    e.ladders = &ladders;
    e.breaker = breaker ? &*breaker : nullptr;
    return e;
  }
};

// One operation: arm 0's loop has sent its first attempt at `t0`.
struct operation {
  attempt_loop primary;
  attempt_plan first;

  operation(engine& e, const location_table& t, op_kind op = op_kind::read,
            strings excluded = {})
      : primary(make(e, op, std::move(excluded)), ladders) {
    primary.set_partition(rid, "1");
    auto p = primary.next_attempt(t, t0);
    EXPECT_TRUE(p) << p.error().what;
    if (p) first = *p;
  }

  static attempt_loop_config make(engine& e, op_kind op, strings excluded) {
    auto c = data_plane(op, e.breaker ? &*e.breaker : nullptr);
    c.excluded_regions = std::move(excluded);
    return c;
  }
};

hedge_ask read_ask(strings excluded = {}) {
  hedge_ask a;
  a.op = op_kind::read;
  a.excluded = std::move(excluded);
  return a;
}

strings regions_of(const hedged_operation& h) {
  strings out;
  for (const auto& a : h.arms().arms())
    out.push_back(a.region);
  return out;
}

// -- whether and where ---------------------------------------------------

TEST(HedgedOperation, Wanted_Table) {
  struct row {
    const char* name;
    bool enabled, hedge_writes;
    op_kind op;
    int hedge;
    bool expected;
  };
  const row rows[] = {
      {"Read_On", true, false, op_kind::read, -1, true},
      {"Read_Off", false, false, op_kind::read, -1, false},
      {"Read_OffButRequestOn", false, false, op_kind::read, 1, true},
      {"Read_OnButRequestOff", true, false, op_kind::read, 0, false},
      {"Write_NotOptedIn", true, false, op_kind::write, -1, false},
      {"Write_EngineOptedIn", true, true, op_kind::write, -1, true},
      {"Write_RequestOptedIn", false, false, op_kind::write, 1, true},
      {"Write_EngineOptedIn_RequestOff", true, true, op_kind::write, 0, false},
      {"Write_EngineOptedIn_HedgingOff", false, true, op_kind::write, -1,
       false},
  };
  for (const auto& r : rows) {
    hedging_options o;
    o.enabled = r.enabled;
    o.hedge_writes = r.hedge_writes;
    EXPECT_EQ(hedge_wanted(o, r.op, r.hedge), r.expected) << r.name;
  }
}

TEST(HedgedOperation, Plan_ReadRegions_Arm0FirstThenApplicable) {
  auto t = fixture();
  engine e;
  operation op{e, t};
  ASSERT_EQ(op.first.region, "East US");
  auto h = hedged_operation::plan(e.env(), read_ask(), op.primary, t, t0);
  ASSERT_TRUE(h);
  auto regions = regions_of(*h);
  ASSERT_GE(regions.size(), 3u);
  EXPECT_EQ(regions[0], "East US");
  EXPECT_EQ(regions[1], "West US");
  EXPECT_EQ(regions[2], "North Europe");
  EXPECT_EQ(h->wake_at(), t0 + 1s);
  EXPECT_EQ(e.budget.operations(), 1u);
}

TEST(HedgedOperation, Plan_NotHedged_Table) {
  auto t = fixture();
  auto mw = fixture(true);
  struct row {
    const char* name;
    const location_table* table;
    bool enabled, hedge_writes;
    hedge_ask ask;
  };
  hedge_ask write;
  write.op = op_kind::write;
  write.write_copy_safe = true;
  hedge_ask unsafe_write = write;
  unsafe_write.write_copy_safe = false;
  hedge_ask off = read_ask();
  off.hedge = 0;
  const row rows[] = {
      {"HedgingOff", &t, false, false, read_ask()},
      {"RequestOff", &t, true, false, off},
      {"ExcludedDownToOneRegion", &t, true, false,
       read_ask({"West US", "North Europe", "Southeast Asia"})},
      {"Write_NotOptedIn", &mw, true, false, write},
      {"Write_SingleWriteAccount", &t, true, true, write},
      {"Write_NotSafeToCopy", &mw, true, true, unsafe_write},
  };
  for (const auto& r : rows) {
    engine e;
    e.options.enabled = r.enabled;
    e.options.hedge_writes = r.hedge_writes;
    operation op{e, *r.table, r.ask.op, r.ask.excluded};
    EXPECT_FALSE(
        hedged_operation::plan(e.env(), r.ask, op.primary, *r.table, t0))
        << r.name;
    EXPECT_EQ(e.budget.operations(), 0u) << r.name;
  }
  // The control: an opted-in safe write on a multi-write account is hedged.
  engine e;
  e.options.hedge_writes = true;
  operation op{e, mw, op_kind::write};
  EXPECT_TRUE(hedged_operation::plan(e.env(), write, op.primary, mw, t0));
}

TEST(HedgedOperation, RequestThreshold_Wins) {
  auto t = fixture();
  engine e;
  operation op{e, t};
  auto ask = read_ask();
  ask.threshold = 40ms;
  auto h = hedged_operation::plan(e.env(), ask, op.primary, t, t0);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->wake_at(), t0 + 40ms);
}

// -- when arms go ----------------------------------------------------------

TEST(HedgedOperation, Arms_OnSchedule_OneRegionEach) {
  auto t = fixture();
  engine e;
  operation op{e, t};
  auto h = *hedged_operation::plan(e.env(), read_ask(), op.primary, t, t0);
  // Before the threshold: nothing.
  auto s = h.advance(e.env(), op.primary, t, t0 + 999ms, false);
  EXPECT_TRUE(s.sends.empty());
  EXPECT_EQ(s.wake_at, t0 + 1s);
  // At the threshold: arm 1 to West US, with the read ladder's first rung.
  s = h.advance(e.env(), op.primary, t, t0 + 1s, false);
  ASSERT_EQ(s.sends.size(), 1u);
  EXPECT_EQ(s.sends[0].arm, 1u);
  EXPECT_EQ(s.sends[0].plan.region, "West US");
  EXPECT_EQ(s.sends[0].plan.endpoint, west);
  EXPECT_EQ(s.sends[0].plan.timeout, 6s);
  EXPECT_EQ(s.wake_at, t0 + 1500ms);
  EXPECT_TRUE(h.in_flight(1));
  // A step later: arm 2 to North Europe.
  s = h.advance(e.env(), op.primary, t, t0 + 1500ms, false);
  ASSERT_EQ(s.sends.size(), 1u);
  EXPECT_EQ(s.sends[0].arm, 2u);
  EXPECT_EQ(s.sends[0].plan.region, "North Europe");
  EXPECT_EQ(h.hedges_sent(), 2u);
}

TEST(HedgedOperation, NonFinalAnswer_MarksAndStartsNextArmAtOnce) {
  auto t = fixture();
  engine e;
  operation op{e, t};
  auto h = *hedged_operation::plan(e.env(), read_ask(), op.primary, t, t0);
  auto s = h.advance(e.env(), op.primary, t, t0 + 1s, false);
  ASSERT_EQ(s.sends.size(), 1u);
  // Arm 1's connection is refused 100 ms later: not final; West is marked
  // for reads and arm 2 goes now, not at +1.5 s.
  auto a = h.on_arm_result(1, no_answer(false, false), 0, e.env(), op.primary,
                           true, t, t0 + 1100ms, false);
  EXPECT_EQ(a.ends, arm_answer::end::none);
  EXPECT_EQ(a.effects.mark_endpoint, west);
  EXPECT_TRUE(a.effects.mark_read);
  ASSERT_EQ(a.next.sends.size(), 1u);
  EXPECT_EQ(a.next.sends[0].arm, 2u);
  EXPECT_EQ(a.next.sends[0].plan.region, "North Europe");
  EXPECT_FALSE(h.in_flight(1));
  EXPECT_TRUE(h.in_flight(2));
}

// What a non-final answer asks for is what its loop asks for, as for the
// metadata plane's hedge: a refused connection marks the region and
// refreshes the account.
TEST(HedgedOperation, NonFinalAnswer_RefreshesTheAccountAsItsLoopAsks) {
  auto t = fixture();
  engine e;
  operation op{e, t};
  auto h = *hedged_operation::plan(e.env(), read_ask(), op.primary, t, t0);
  h.advance(e.env(), op.primary, t, t0 + 1s, false);
  auto a = h.on_arm_result(1, no_answer(false, false), 0, e.env(), op.primary,
                           true, t, t0 + 1100ms, false);
  EXPECT_TRUE(a.effects.marks());
  EXPECT_TRUE(a.effects.refresh_account);
}

TEST(HedgedOperation, FinalAnswer_EndsTheOperation_NoMarks) {
  auto t = fixture();
  engine e;
  operation op{e, t};
  auto h = *hedged_operation::plan(e.env(), read_ask(), op.primary, t, t0);
  h.advance(e.env(), op.primary, t, t0 + 1s, false);
  for (int status : {200, 404, 409, 412}) {
    auto copy = h;
    auto a = copy.on_arm_result(1, http_answer(status), 1.0, e.env(),
                                op.primary, true, t, t0 + 1200ms, false);
    EXPECT_EQ(a.ends, arm_answer::end::final_result) << status;
    EXPECT_FALSE(a.effects.marks()) << status;
    EXPECT_TRUE(a.next.sends.empty()) << status;
    ASSERT_TRUE(copy.arms().result_arm()) << status;
    EXPECT_EQ(*copy.arms().result_arm(), 1u) << status;
  }
}

TEST(HedgedOperation, HedgeBudgetSpent_NoArm_PlanStops) {
  auto t = fixture();
  hedging_options o;
  o.budget.min_allowance = 0;
  o.budget.share = 0.0;
  engine e{o};
  operation op{e, t};
  auto h = *hedged_operation::plan(e.env(), read_ask(), op.primary, t, t0);
  auto s = h.advance(e.env(), op.primary, t, t0 + 1s, false);
  EXPECT_TRUE(s.sends.empty());
  EXPECT_EQ(s.refused, 1u);
  EXPECT_FALSE(s.wake_at);
  // Nothing later either: a refused arm stops the plan.
  s = h.advance(e.env(), op.primary, t, t0 + 5s, false);
  EXPECT_TRUE(s.sends.empty());
  EXPECT_EQ(s.refused, 0u);
  EXPECT_EQ(h.hedges_sent(), 0u);
}

TEST(HedgedOperation, OperationBudgetSpent_NoArm) {
  auto t = fixture();
  engine e;
  operation op{e, t};
  auto h = *hedged_operation::plan(e.env(), read_ask(), op.primary, t, t0);
  auto s = h.advance(e.env(), op.primary, t, t0 + 1s, true);
  EXPECT_TRUE(s.sends.empty());
  EXPECT_FALSE(s.wake_at);
  EXPECT_EQ(s.refused, 0u);
}

// -- arm 0 gives up ---------------------------------------------------------

TEST(HedgedOperation, PrimaryGaveUp_NonFinal_HedgeTakesOverAtOnce) {
  auto t = fixture();
  engine e;
  operation op{e, t};
  auto h = *hedged_operation::plan(e.env(), read_ask(), op.primary, t, t0);
  // Arm 0 gives up with a 503 at +300 ms, before any hedge went: arm 1
  // starts now.
  auto s = h.primary_gave_up(http_answer(503), 0, e.env(), op.primary, t,
                             t0 + 300ms, false);
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->all_answered);
  ASSERT_EQ(s->sends.size(), 1u);
  EXPECT_EQ(s->sends[0].arm, 1u);
  EXPECT_TRUE(h.primary_done());
}

TEST(HedgedOperation, PrimaryGaveUp_Final_OperationEnds) {
  auto t = fixture();
  engine e;
  operation op{e, t};
  auto h = *hedged_operation::plan(e.env(), read_ask(), op.primary, t, t0);
  EXPECT_FALSE(h.primary_gave_up(http_answer(404), 0, e.env(), op.primary, t,
                                 t0 + 300ms, false));
  EXPECT_FALSE(h.primary_done());
}

TEST(HedgedOperation, EveryArmNonFinal_AllAnswered_OnlyAfterArm0) {
  auto t = fixture();
  engine e;
  // Two regions: East (arm 0) and West (arm 1).
  strings two = {"North Europe", "Southeast Asia"};
  operation op{e, t, op_kind::read, two};
  auto h = *hedged_operation::plan(e.env(), read_ask(two), op.primary, t, t0);
  ASSERT_EQ(regions_of(h), (strings{"East US", "West US"}));
  auto s = h.advance(e.env(), op.primary, t, t0 + 1s, false);
  ASSERT_EQ(s.sends.size(), 1u);
  // Arm 1 fails; arm 0 is still out: the operation goes on.
  auto a = h.on_arm_result(1, http_answer(503), 0, e.env(), op.primary, true, t,
                           t0 + 1100ms, false);
  EXPECT_EQ(a.ends, arm_answer::end::none);
  EXPECT_TRUE(a.next.sends.empty());
  EXPECT_FALSE(a.next.wake_at);
  // Then arm 0 gives up: every arm answered, none final.
  auto g = h.primary_gave_up(http_answer(503), 0, e.env(), op.primary, t,
                             t0 + 2s, false);
  ASSERT_TRUE(g);
  EXPECT_TRUE(g->all_answered);
  EXPECT_TRUE(g->sends.empty());
}

// -- the breaker -------------------------------------------------------------

// Opens (range 1, `region`) with ten failed reads.
void trip(partition_breaker& b, const std::string& region, policy_time at) {
  breaker_key k{rid, "1", region};
  for (int i = 0; i < 10; ++i) {
    auto adm = b.admit(k, at);
    b.record(k, op_kind::read, breaker_signal::failure, adm.ticket, at);
  }
  ASSERT_EQ(b.view(k, at).state, breaker_state::open);
}

// -- chosen when due ---------------------------------------------------------

// The intent is decided at the first send, the regions when the first hedge
// is due: what the breaker and the marks say then counts.
TEST(HedgedOperation, Intent_RegionsChosenWhenDue_BreakerAndMarksOfThen) {
  auto t = fixture();
  engine e{{}, true};
  operation op{e, t};
  ASSERT_EQ(op.first.region, "East US");
  auto intent =
      hedged_operation::intend(e.env(), read_ask(), op.primary, t, t0);
  ASSERT_TRUE(intent);
  EXPECT_EQ(intent->due(), t0 + 1s);
  EXPECT_EQ(e.budget.operations(), 1u);
  // North Europe is marked before the hedge is due: no arm there.
  auto marked = t.with_mark(north, true, false, t0 + 600ms);
  auto h = hedged_operation::materialize(e.env(), read_ask(), *intent,
                                         op.primary, marked, t0 + 1s);
  ASSERT_TRUE(h);
  EXPECT_EQ(regions_of(*h), (strings{"East US", "West US"}));
  EXPECT_EQ(h->wake_at(), t0 + 1s);     // the schedule counts from the send
  EXPECT_EQ(e.budget.operations(), 1u); // recorded once, by the intent
  // West's breaker opens for this range as well: one region is left, no
  // hedge (the operation stays counted).
  trip(*e.breaker, "West US", t0 + 700ms);
  EXPECT_FALSE(hedged_operation::materialize(e.env(), read_ask(), *intent,
                                             op.primary, marked, t0 + 1s));
  // North Europe's mark, made at the first send, expires before the hedge
  // is due: North Europe is the hedge's region.
  auto expiring = t.with_mark(north, true, false, t0 - expiry + 500ms);
  ASSERT_TRUE(expiring.is_unavailable(north, op_kind::read, t0));
  h = hedged_operation::materialize(e.env(), read_ask(), *intent, op.primary,
                                    expiring, t0 + 1s);
  ASSERT_TRUE(h);
  EXPECT_EQ(regions_of(*h), (strings{"East US", "North Europe"}));
}

TEST(HedgedOperation, Breaker_OpenRegion_GetsNoArm) {
  auto t = fixture();
  engine e{{}, true};
  trip(*e.breaker, "West US", t0 - 1s);
  operation op{e, t};
  ASSERT_EQ(op.first.region, "East US");
  auto h = *hedged_operation::plan(e.env(), read_ask(), op.primary, t, t0);
  auto regions = regions_of(h);
  ASSERT_GE(regions.size(), 2u);
  EXPECT_EQ(regions[0], "East US");
  EXPECT_EQ(regions[1], "North Europe");
}

TEST(HedgedOperation, Breaker_Arm0RegionOpenedSince_FirstHedgeOutsideBudget) {
  auto t = fixture();
  hedging_options o;
  o.budget.min_allowance = 0;
  o.budget.share = 0.0;
  engine e{o, true};
  operation op{e, t};
  ASSERT_EQ(op.first.region, "East US");
  auto h = *hedged_operation::plan(e.env(), read_ask(), op.primary, t, t0);
  // East opens for this range while arm 0 is out there: the first hedge
  // goes although the budget is spent; the second does not.
  trip(*e.breaker, "East US", t0 + 500ms);
  auto s = h.advance(e.env(), op.primary, t, t0 + 1s, false);
  ASSERT_EQ(s.sends.size(), 1u);
  EXPECT_EQ(s.on_evidence, 1u);
  EXPECT_EQ(s.refused, 0u);
  s = h.advance(e.env(), op.primary, t, t0 + 1500ms, false);
  EXPECT_TRUE(s.sends.empty());
  EXPECT_EQ(s.refused, 1u);
}

TEST(HedgedOperation, Breaker_HedgeWinAgainstArm0_Counted) {
  auto t = fixture();
  engine e{{}, true};
  operation op{e, t};
  auto h = *hedged_operation::plan(e.env(), read_ask(), op.primary, t, t0);
  h.advance(e.env(), op.primary, t, t0 + 1s, false);
  auto a = h.on_arm_result(1, http_answer(200), 1, e.env(), op.primary, true, t,
                           t0 + 1100ms, false);
  EXPECT_EQ(a.ends, arm_answer::end::final_result);
  EXPECT_TRUE(a.hedge_win);
  // Not when arm 0 had already given up (nothing of it was out).
  operation op2{e, t};
  auto h2 = *hedged_operation::plan(e.env(), read_ask(), op2.primary, t, t0);
  h2.advance(e.env(), op2.primary, t, t0 + 1s, false);
  auto b = h2.on_arm_result(1, http_answer(200), 1, e.env(), op2.primary, false,
                            t, t0 + 1100ms, false);
  EXPECT_EQ(b.ends, arm_answer::end::final_result);
  EXPECT_FALSE(b.hedge_win);
}

// -- the operation ends ------------------------------------------------------

TEST(HedgedOperation, Abandon_ArmsInFlight_MovedOut) {
  auto t = fixture();
  engine e;
  operation op{e, t};
  auto h = *hedged_operation::plan(e.env(), read_ask(), op.primary, t, t0);
  h.advance(e.env(), op.primary, t, t0 + 1s, false);
  h.advance(e.env(), op.primary, t, t0 + 1500ms, false);
  h.on_arm_result(2, http_answer(503), 0, e.env(), op.primary, true, t,
                  t0 + 1600ms, false);
  auto out = h.abandon();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].first, 1u);
  EXPECT_EQ(out[0].second.region(), "West US");
  EXPECT_FALSE(h.in_flight(1));
  EXPECT_TRUE(h.abandon().empty());
}

TEST(SettleLateAttempt, Timeout_ClimbsTheLadder_UntilMarked) {
  auto t = fixture();
  engine e;
  operation op{e, t};
  // The abandoned arm 0 timed out at its first rung (6 s): it goes on up
  // the ladder on the same endpoint with the next rung.
  auto s = settle_late_attempt(op.primary, no_answer(true, true), t, t0 + 6s);
  ASSERT_TRUE(s.resend);
  EXPECT_EQ(s.resend->endpoint, east);
  EXPECT_EQ(s.resend->timeout, 6s);
  EXPECT_FALSE(s.effects.marks());
  // Once somebody marked East for reads, a timeout climbs no further: its
  // effects run instead.
  auto marked = t.with_mark(east, true, false, t0 + 7s);
  s = settle_late_attempt(op.primary, no_answer(true, true), marked, t0 + 12s);
  EXPECT_FALSE(s.resend);
}

TEST(SettleLateAttempt, Success_NothingToDo) {
  auto t = fixture();
  engine e;
  operation op{e, t};
  auto s = settle_late_attempt(op.primary, http_answer(200), t, t0 + 1s);
  EXPECT_FALSE(s.resend);
  EXPECT_FALSE(s.effects.marks());
  EXPECT_FALSE(s.effects.refresh_account);
}

TEST(SettleLateAttempt, ConnectionRefused_MarksAndRefreshes) {
  auto t = fixture();
  engine e;
  operation op{e, t};
  auto s = settle_late_attempt(op.primary, no_answer(false, false), t, t0 + 1s);
  EXPECT_FALSE(s.resend);
  EXPECT_EQ(s.effects.mark_endpoint, east);
  EXPECT_TRUE(s.effects.mark_read);
  EXPECT_TRUE(s.effects.refresh_account);
}

TEST(ContinueAbandonedClimb, NextRung_UntilTheEndpointIsMarked) {
  auto t = fixture();
  engine e;
  operation op{e, t};
  // Arm 0 timed out at its first rung (the loop's step said: climb).
  auto step = op.primary.on_result(no_answer(true, true), t, t0 + 6s, false);
  ASSERT_TRUE(step.ladder_climb);
  auto plan = continue_abandoned_climb(op.primary, t, t0 + 6s);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->endpoint, east);
  EXPECT_EQ(plan->timeout, 6s);
  // Somebody marked East meanwhile: the region is known bad, nothing more
  // goes there.
  auto again = fixture();
  engine e2;
  operation op2{e2, again};
  ASSERT_TRUE(
      op2.primary.on_result(no_answer(true, true), again, t0 + 6s, false)
          .ladder_climb);
  auto marked = again.with_mark(east, true, false, t0 + 6s);
  EXPECT_FALSE(continue_abandoned_climb(op2.primary, marked, t0 + 6s));
}

TEST(AbandonPrimary, Table) {
  struct row {
    bool in_flight, climbing, budget_spent;
    primary_fate fate;
  };
  for (auto r : {row{false, false, false, primary_fate::nothing},
                 row{true, false, false, primary_fate::settle_in_flight},
                 row{false, true, false, primary_fate::climb_now},
                 // in flight wins: the pending step was already sent
                 row{true, true, false, primary_fate::settle_in_flight},
                 // a spent budget starts nothing new; what is out settles
                 row{false, true, true, primary_fate::nothing},
                 row{true, false, true, primary_fate::settle_in_flight},
                 row{false, false, true, primary_fate::nothing}})
    EXPECT_EQ(abandon_primary(r.in_flight, r.climbing, r.budget_spent), r.fate)
        << r.in_flight << r.climbing << r.budget_spent;
}

// A hedge arm's non-final failure is what the operation reports only when
// there is nothing else yet, or the primary has given up.
TEST(ReplacesReportedFailure, Table) {
  EXPECT_TRUE(replaces_reported_failure(false, false));
  EXPECT_TRUE(replaces_reported_failure(false, true));
  EXPECT_TRUE(replaces_reported_failure(true, true));
  EXPECT_FALSE(replaces_reported_failure(true, false));
}

} // namespace
} // namespace hedged_operation_test
