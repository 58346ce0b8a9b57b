// The one hedge of a metadata operation as a state machine, without actors:
// when it goes (or is ruled out), who wins, what waits for what. Each test
// checks the answer of every event before the next one. Reads on the
// location fixture prefer East US, then West US; the hedge is due 1.5 s
// after the primary's first attempt.

#include "georoute/actors/policy/metadata_hedge.hpp"
#include "tests/policy/attempt_results.hpp"
#include "tests/policy/location_fixture.hpp"

#include <gtest/gtest.h>

using namespace georoute;
using namespace georoute::location_fixture;
using namespace georoute::test;
using namespace std::chrono_literals;

// Named after the file as well: the unity build (tests/CMakeLists.txt)
// compiles it in one translation unit with other tests.
namespace metadata_hedge_test {
namespace {

const timeout_ladders ladders{};
using next = metadata_hedge_answer::next;

attempt_loop metadata_loop(request_kind kind = request_kind::metadata_read) {
  attempt_loop_config c;
  c.kind = kind;
  c.op = op_kind::read;
  c.is_document = false;
  c.name_based = true;
  return attempt_loop{c, ladders};
}

// A collection read whose primary went to East US at t0.
struct operation {
  location_table table = fixture();
  attempt_loop primary = metadata_loop();
  metadata_hedge_options options;
  metadata_hedge_budget slots{32};
  std::optional<metadata_hedge> hedge;

  explicit operation(metadata_hedge_options o = {},
                     request_kind kind = request_kind::metadata_read,
                     bool first_page = true)
      : primary(metadata_loop(kind)), options(o), slots(o.max_concurrent) {
    auto p = primary.next_attempt(table, t0);
    EXPECT_TRUE(p);
    EXPECT_EQ(p->region, "East US");
    metadata_hedge_ask ask;
    ask.kind = kind;
    ask.first_page = first_page;
    hedge = metadata_hedge::plan(options, ask, primary, table, t0);
  }

  metadata_hedge_start start(policy_time at, bool primary_out = true) {
    return hedge->start(primary, primary_out, slots, ladders, table, at);
  }

  // The primary's attempt failed with `r`: its loop decides, then the hedge.
  std::pair<loop_step, metadata_primary_step>
  primary_fails(const attempt_result& r, policy_time at) {
    auto step = primary.on_result(r, table, at, false);
    return {step, hedge->on_primary_failure(r, step)};
  }
};

TEST(MetadataHedgeMachine, Plan_Table) {
  struct row {
    const char* name;
    request_kind kind;
    bool first_page;
    uint32_t slots;
    bool hedged;
  };
  const row rows[] = {
      {"CollectionRead", request_kind::metadata_read, true, 32, true},
      {"QueryPlan", request_kind::query_plan, true, 32, true},
      {"PkRangesFirstPage", request_kind::pkranges_read, true, 32, true},
      {"PkRangesLaterPage", request_kind::pkranges_read, false, 32, false},
      {"AccountRead", request_kind::account_read, true, 32, false},
      {"BudgetZero_Off", request_kind::metadata_read, true, 0, false},
  };
  for (const auto& r : rows) {
    metadata_hedge_options o;
    o.max_concurrent = r.slots;
    operation op{o, r.kind, r.first_page};
    EXPECT_EQ(op.hedge.has_value(), r.hedged) << r.name;
    if (op.hedge) {
      EXPECT_EQ(op.hedge->due(), t0 + 1500ms) << r.name;
    }
  }
}

TEST(MetadataHedgeMachine, Due_SendsOneHedgeToNextRegion_HoldsASlot) {
  operation op;
  ASSERT_TRUE(op.hedge);
  auto s = op.start(t0 + 1500ms);
  ASSERT_TRUE(s.send);
  EXPECT_EQ(s.send->region, "West US");
  EXPECT_EQ(s.send->endpoint, west);
  EXPECT_FALSE(s.refused);
  EXPECT_EQ(op.slots.in_use(), 1u);
  EXPECT_FALSE(op.hedge->due());
  // The primary has not failed: its next attempt (a ladder step) does not
  // wait for the hedge.
  EXPECT_FALSE(op.hedge->defer_primary());
  // Once only.
  EXPECT_FALSE(op.start(t0 + 2s).send);
  // Its answer gives the slot back.
  auto a = op.hedge->on_hedge_result(http_answer(200), op.slots, op.table,
                                     t0 + 1600ms);
  EXPECT_EQ(a.then, next::take);
  EXPECT_EQ(op.slots.in_use(), 0u);
}

TEST(MetadataHedgeMachine, Due_RuledOut_Table) {
  // No slot free.
  {
    metadata_hedge_options o;
    o.max_concurrent = 1;
    operation op{o};
    ASSERT_TRUE(op.slots.try_acquire());
    auto s = op.start(t0 + 1500ms);
    EXPECT_FALSE(s.send);
    EXPECT_TRUE(s.refused);
    EXPECT_FALSE(op.hedge->due());
  }
  // The primary is waiting out a 429 (not in flight): not slow, busy.
  {
    operation op;
    op.primary.on_result(http_answer(429, 3200), op.table, t0 + 100ms, false);
    auto s = op.start(t0 + 1500ms, false);
    EXPECT_FALSE(s.send);
    EXPECT_FALSE(s.refused);
  }
  // The primary already failed for its region's sake before the hedge was
  // due: the loop's own retry goes elsewhere; the hedge is ruled out then.
  {
    operation op;
    auto [step, hs] = op.primary_fails(no_answer(false, false), t0 + 100ms);
    EXPECT_FALSE(hs.take_held);
    EXPECT_FALSE(op.hedge->due());
    EXPECT_FALSE(op.start(t0 + 1500ms).send);
  }
}

TEST(MetadataHedgeMachine, PrimaryRunning_OnlyHedgeSuccessTaken_ErrorHeld) {
  operation op;
  ASSERT_TRUE(op.start(t0 + 1500ms).send);
  // A hedge's 404 while the primary runs is held, not taken.
  auto a = op.hedge->on_hedge_result(http_answer(404), op.slots, op.table,
                                     t0 + 1600ms);
  EXPECT_EQ(a.then, next::nothing);
  EXPECT_TRUE(a.hold);
  // The primary then fails for its region's sake: the held 404 is taken.
  auto [step, hs] = op.primary_fails(no_answer(false, false), t0 + 2s);
  EXPECT_TRUE(hs.take_held);
}

TEST(MetadataHedgeMachine, PrimaryAnswers_HeldErrorNeverTaken) {
  operation op;
  ASSERT_TRUE(op.start(t0 + 1500ms).send);
  op.hedge->on_hedge_result(http_answer(401), op.slots, op.table, t0 + 1600ms);
  // The primary's own 401 is a definitive answer: not regional, the held
  // one is not taken.
  auto [step, hs] = op.primary_fails(http_answer(401), t0 + 2s);
  EXPECT_FALSE(hs.take_held);
  EXPECT_FALSE(hs.wait_for_hedge);
}

TEST(MetadataHedgeMachine, PrimaryLeftRegion_NextAttemptWaitsForHedge) {
  operation op;
  ASSERT_TRUE(op.start(t0 + 1500ms).send);
  auto [step, hs] = op.primary_fails(no_answer(false, false), t0 + 1700ms);
  EXPECT_FALSE(hs.take_held);
  EXPECT_FALSE(hs.wait_for_hedge);
  ASSERT_EQ(step.next, loop_next::after_refresh);
  // Its next attempt would go where the hedge already is: it waits.
  EXPECT_TRUE(op.hedge->defer_primary());
  // The hedge's region fails too: the primary goes on.
  auto a = op.hedge->on_hedge_result(no_answer(false, false), op.slots,
                                     op.table, t0 + 1800ms);
  EXPECT_EQ(a.then, next::resume_primary);
  EXPECT_EQ(a.effects.mark_endpoint, west);
  EXPECT_TRUE(a.effects.mark_read);
  // Nothing is out any more: no further wait.
  EXPECT_FALSE(op.hedge->defer_primary());
}

TEST(MetadataHedgeMachine, PrimaryLeftRegion_HedgeAnswerTakenWhateverItIs) {
  operation op;
  ASSERT_TRUE(op.start(t0 + 1500ms).send);
  op.primary_fails(no_answer(false, false), t0 + 1700ms);
  auto a = op.hedge->on_hedge_result(http_answer(404), op.slots, op.table,
                                     t0 + 1800ms);
  EXPECT_EQ(a.then, next::take);
}

TEST(MetadataHedgeMachine, PrimaryGaveUp_HedgeMayStillAnswer) {
  metadata_hedge_options o;
  operation op{o};
  ASSERT_TRUE(op.start(t0 + 1500ms).send);
  // A loop that gives up on a regional failure (a step that fails).
  loop_step gives_up;
  gives_up.next = loop_next::fail;
  gives_up.reason = "no region left";
  auto hs = op.hedge->on_primary_failure(no_answer(false, false), gives_up);
  EXPECT_TRUE(hs.wait_for_hedge);
  ASSERT_TRUE(op.hedge->primary_gave_up());
  EXPECT_EQ(*op.hedge->primary_gave_up(), "no region left");
  // The hedge fails too: the operation ends with the primary's reason.
  auto a =
      op.hedge->on_hedge_result(http_answer(503), op.slots, op.table, t0 + 2s);
  EXPECT_EQ(a.then, next::end_primary);
}

TEST(MetadataHedgeMachine, Abandon_GivesSlotBack_ReturnsLoopInFlight) {
  operation op;
  ASSERT_TRUE(op.start(t0 + 1500ms).send);
  EXPECT_EQ(op.slots.in_use(), 1u);
  auto loop = op.hedge->abandon(op.slots);
  ASSERT_TRUE(loop);
  EXPECT_EQ(loop->region(), "West US");
  EXPECT_EQ(op.slots.in_use(), 0u);
  EXPECT_FALSE(op.hedge->abandon(op.slots));
}

} // namespace
} // namespace metadata_hedge_test
