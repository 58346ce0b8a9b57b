// The arms of one hedged operation: start times (threshold, steps, early
// starts after non-final results), the winner (first final result, else the
// last answer), stopping, late answers, and the RU accounting.

#include "georoute/actors/policy/hedge_plan.hpp"
#include "tests/policy/hedge_class_print.hpp"

#include <gtest/gtest.h>
#include <ostream>
#include <string>
#include <vector>

namespace georoute {

// Readable names in failure messages (found by ADL); hedge_class's is in
// hedge_class_print.hpp.
inline void PrintTo(arm_state x, std::ostream* os) {
  static const char* names[] = {"not_started", "in_flight", "answered",
                                "abandoned", "late"};
  *os << names[static_cast<int>(x)];
}

} // namespace georoute

// Named after the file as well: the unity build (tests/CMakeLists.txt)
// compiles it in one translation unit with other tests.
namespace hedge_plan_test {
namespace {

using namespace georoute;
using namespace std::chrono_literals;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using strings = std::vector<std::string>;
using hc = hedge_class;

const policy_time t0 = policy_time{} + 1h;

// -- the arm plan ----------------------------------------------------------

const strings three = {"East US", "West US", "North Europe"};

hedge_plan plan3(milliseconds threshold = 1000ms, milliseconds step = 500ms) {
  return hedge_plan{three, {threshold, step}, t0};
}

TEST(HedgePlan, ArmStartTimes_ThresholdThenSteps) {
  auto p = plan3();
  EXPECT_EQ(p.scheduled_offset(0), 0ms);
  EXPECT_EQ(p.scheduled_offset(1), 1000ms);
  EXPECT_EQ(p.scheduled_offset(2), 1500ms);
  EXPECT_EQ(p.scheduled_offset(5), 3000ms);
  ASSERT_TRUE(p.next_start());
  EXPECT_EQ(p.next_start()->arm, 1u);
  EXPECT_EQ(p.next_start()->at, t0 + 1000ms);
  EXPECT_FALSE(p.next_start()->early);
  EXPECT_EQ(p.start_next(t0 + 999ms), std::nullopt);
  EXPECT_EQ(p.start_next(t0 + 1000ms), 1u);
  EXPECT_EQ(p.next_start()->at, t0 + 1500ms);
  EXPECT_EQ(p.start_next(t0 + 1600ms), 2u);
  EXPECT_EQ(p.next_start(), std::nullopt);
  EXPECT_EQ(p.start_next(t0 + 9s), std::nullopt);
  EXPECT_EQ(p.started(), 3u);
  EXPECT_EQ(p.in_flight(), 3u);
  EXPECT_EQ(p.arms()[1].start_offset, microseconds{1000000});
  EXPECT_EQ(p.arms()[2].start_offset, microseconds{1600000});
  EXPECT_EQ(p.arms()[2].region, "North Europe");
}

TEST(HedgePlan, PrimaryFinalBeforeThreshold_NoHedge) {
  auto p = plan3();
  EXPECT_EQ(p.on_result(0, arm_outcome::http(200), 1.0, t0 + 10ms),
            hc::final_result);
  EXPECT_TRUE(p.finished());
  EXPECT_EQ(p.result_arm(), 0u);
  EXPECT_EQ(p.next_start(), std::nullopt);
  EXPECT_EQ(p.start_next(t0 + 5s), std::nullopt);
  auto s = p.summary();
  EXPECT_EQ(s.hedges_started, 0u);
  EXPECT_EQ(s.hedges_won, 0u);
  EXPECT_DOUBLE_EQ(s.winner_charge, 1.0);
  EXPECT_DOUBLE_EQ(s.extra_charge(), 0.0);
}

TEST(HedgePlan, NonFinalResult_StartsNextArmAtOnce) {
  auto p = plan3();
  EXPECT_EQ(p.on_result(0, arm_outcome::http(503), 1.0, t0 + 200ms),
            hc::start_next);
  EXPECT_FALSE(p.finished());
  ASSERT_TRUE(p.next_start());
  EXPECT_EQ(p.next_start()->arm, 1u);
  EXPECT_EQ(p.next_start()->at, t0 + 200ms);
  EXPECT_TRUE(p.next_start()->early);
  EXPECT_EQ(p.start_next(t0 + 200ms), 1u);
  // The third arm keeps its schedule.
  EXPECT_EQ(p.next_start()->at, t0 + 1500ms);
  EXPECT_FALSE(p.next_start()->early);
}

TEST(HedgePlan, EarlyStart_Table) {
  struct row {
    const char* name;
    arm_outcome outcome;
    bool early;
  };
  const row rows[] = {
      {"Unavailable503_Early", arm_outcome::http(503), true},
      {"Session404_1002_Early", arm_outcome::http(404, 1002), true},
      {"Resource429_3092_Early", arm_outcome::http(429, 3092), true},
      {"Connection_Early", arm_outcome::connection_failure(), true},
      {"Timeout_Early", arm_outcome::timed_out(), true},
      {"Plain429_WaitsForTimer", arm_outcome::http(429), false},
      {"Throttle429_3101_WaitsForTimer", arm_outcome::http(429, 3101), false},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    auto p = plan3();
    p.on_result(0, r.outcome, 0, t0 + 100ms);
    EXPECT_FALSE(p.finished());
    ASSERT_TRUE(p.next_start());
    EXPECT_EQ(p.next_start()->early, r.early);
    EXPECT_EQ(p.next_start()->at, r.early ? t0 + 100ms : t0 + 1000ms);
    EXPECT_EQ(p.start_next(t0 + 100ms).has_value(), r.early);
  }
}

TEST(HedgePlan, NonFinalAfterTimerArm_StartsThirdAtOnce) {
  auto p = plan3();
  ASSERT_EQ(p.start_next(t0 + 1000ms), 1u);
  p.on_result(0, arm_outcome::http(503), 0, t0 + 1200ms);
  ASSERT_TRUE(p.next_start());
  EXPECT_EQ(p.next_start()->arm, 2u);
  EXPECT_EQ(p.next_start()->at, t0 + 1200ms);
  EXPECT_EQ(p.start_next(t0 + 1200ms), 2u);
}

TEST(HedgePlan, ScheduleAndEarlyBothDue_EachStartsOneArm) {
  // The timer for arm 1 (1 s) is handled after arm 0's 503 at 1.1 s: arm 1
  // starts on schedule, the 503 still starts arm 2 at once.
  auto p = plan3();
  p.on_result(0, arm_outcome::http(503), 0, t0 + 1100ms);
  EXPECT_EQ(p.next_start()->at, t0 + 1000ms);
  EXPECT_FALSE(p.next_start()->early);
  EXPECT_EQ(p.start_next(t0 + 1100ms), 1u);
  EXPECT_EQ(p.next_start()->at, t0 + 1100ms);
  EXPECT_TRUE(p.next_start()->early);
  EXPECT_EQ(p.start_next(t0 + 1100ms), 2u);
}

TEST(HedgePlan, HedgeFinalWins_PrimaryAbandonedThenLate) {
  auto p = plan3();
  ASSERT_EQ(p.start_next(t0 + 1000ms), 1u);
  EXPECT_EQ(p.on_result(1, arm_outcome::http(200), 2.5, t0 + 1040ms),
            hc::final_result);
  EXPECT_TRUE(p.finished());
  EXPECT_EQ(p.result_arm(), 1u);
  EXPECT_EQ(p.arms()[0].state, arm_state::abandoned);
  EXPECT_EQ(p.arms()[2].state, arm_state::not_started);
  EXPECT_EQ(p.next_start(), std::nullopt);
  // The slow primary answers later: charged, recorded, not the result.
  EXPECT_EQ(p.on_result(0, arm_outcome::http(200), 1.5, t0 + 3s),
            hc::final_result);
  EXPECT_EQ(p.arms()[0].state, arm_state::late);
  EXPECT_EQ(p.result_arm(), 1u);
  EXPECT_FALSE(p.arms()[0].winner);
  EXPECT_TRUE(p.arms()[1].winner);
  auto s = p.summary();
  EXPECT_DOUBLE_EQ(s.winner_charge, 2.5);
  EXPECT_DOUBLE_EQ(s.hedge_charge, 2.5);
  EXPECT_DOUBLE_EQ(s.total_charge, 4.0);
  EXPECT_DOUBLE_EQ(s.extra_charge(), 1.5);
  EXPECT_EQ(s.hedges_started, 1u);
  EXPECT_EQ(s.hedges_won, 1u);
}

TEST(HedgePlan, NonFinalThenFinal_FinalWins) {
  auto p = plan3();
  p.on_result(0, arm_outcome::http(404, 1002), 1, t0 + 50ms);
  ASSERT_EQ(p.start_next(t0 + 50ms), 1u);
  EXPECT_EQ(p.on_result(1, arm_outcome::http(404), 1, t0 + 90ms),
            hc::final_result);
  EXPECT_EQ(p.result_arm(), 1u);
}

TEST(HedgePlan, AllArmsTransient_ReturnsLastResponse) {
  auto p = plan3();
  p.on_result(0, arm_outcome::http(503), 1, t0 + 10ms);
  ASSERT_EQ(p.start_next(t0 + 10ms), 1u);
  ASSERT_EQ(p.start_next(t0 + 1500ms), 2u);
  p.on_result(2, arm_outcome::timed_out(), 0, t0 + 1600ms);
  EXPECT_FALSE(p.finished());
  p.on_result(1, arm_outcome::http(500), 1, t0 + 1700ms);
  EXPECT_TRUE(p.finished());
  EXPECT_EQ(p.result_arm(), 1u);
  EXPECT_EQ(p.arms()[1].outcome.status, 500);
  EXPECT_EQ(p.summary().hedges_started, 2u);
}

TEST(HedgePlan, OneRegion_NonFinalFinishes) {
  hedge_plan p{{"East US"}, {1000ms, 500ms}, t0};
  EXPECT_EQ(p.next_start(), std::nullopt);
  p.on_result(0, arm_outcome::http(503), 0, t0 + 5ms);
  EXPECT_TRUE(p.finished());
  EXPECT_EQ(p.result_arm(), 0u);
}

TEST(HedgePlan, Stop_NothingInFlight_FinishesWithLastAnswer) {
  // Arm 0 failed early; the budget refuses the hedge.
  auto p = plan3();
  p.on_result(0, arm_outcome::http(503), 0, t0 + 5ms);
  EXPECT_FALSE(p.finished());
  p.stop();
  EXPECT_TRUE(p.finished());
  EXPECT_EQ(p.result_arm(), 0u);
  EXPECT_EQ(p.next_start(), std::nullopt);
}

TEST(HedgePlan, Stop_ArmInFlight_FinishesWhenItAnswers) {
  auto p = plan3();
  p.stop();
  EXPECT_FALSE(p.finished());
  EXPECT_EQ(p.next_start(), std::nullopt);
  EXPECT_EQ(p.start_next(t0 + 5s), std::nullopt);
  p.on_result(0, arm_outcome::http(503), 0, t0 + 5s);
  EXPECT_TRUE(p.finished());
  EXPECT_EQ(p.result_arm(), 0u);
}

TEST(HedgePlan, BadResults_Ignored) {
  auto p = plan3();
  EXPECT_EQ(p.on_result(1, arm_outcome::http(200), 1, t0), std::nullopt);
  EXPECT_EQ(p.on_result(7, arm_outcome::http(200), 1, t0), std::nullopt);
  EXPECT_EQ(p.arms()[1].state, arm_state::not_started);
  EXPECT_FALSE(p.finished());
  p.on_result(0, arm_outcome::http(503), 1, t0 + 1ms);
  // A second answer of the same arm changes nothing.
  EXPECT_EQ(p.on_result(0, arm_outcome::http(200), 9, t0 + 2ms), std::nullopt);
  EXPECT_FALSE(p.finished());
  EXPECT_DOUBLE_EQ(p.arms()[0].request_charge, 1.0);
}

TEST(HedgePlan, PrimaryWinsAfterHedgeStarted_HedgeChargeIsExtra) {
  auto p = plan3();
  ASSERT_EQ(p.start_next(t0 + 1000ms), 1u);
  p.on_result(0, arm_outcome::http(200), 3.0, t0 + 1010ms);
  EXPECT_EQ(p.result_arm(), 0u);
  EXPECT_EQ(p.arms()[1].state, arm_state::abandoned);
  p.on_result(1, arm_outcome::http(200), 3.0, t0 + 1050ms);
  auto s = p.summary();
  EXPECT_DOUBLE_EQ(s.winner_charge, 3.0);
  EXPECT_DOUBLE_EQ(s.hedge_charge, 3.0);
  EXPECT_DOUBLE_EQ(s.extra_charge(), 3.0);
  EXPECT_EQ(s.hedges_started, 1u);
  EXPECT_EQ(s.hedges_won, 0u);
}

TEST(HedgeSummary, Records_Table) {
  auto rec = [](arm_state st, double ru, bool winner) {
    hedge_arm_record r;
    r.state = st;
    r.request_charge = ru;
    r.winner = winner;
    return r;
  };
  const auto A = arm_state::answered;
  struct row {
    const char* name;
    std::vector<hedge_arm_record> arms;
    double winner, hedges, total;
    uint32_t started, won;
  };
  const row rows[] = {
      {"Empty_Zero", {}, 0, 0, 0, 0, 0},
      {"PrimaryOnly", {rec(A, 1, true)}, 1, 0, 1, 0, 0},
      {"HedgeWon",
       {rec(arm_state::late, 2, false), rec(A, 3, true),
        rec(arm_state::not_started, 0, false)},
       3,
       3,
       5,
       1,
       1},
      {"TwoHedgesPrimaryWon",
       {rec(A, 1, true), rec(arm_state::abandoned, 0, false),
        rec(arm_state::late, 4, false)},
       1,
       4,
       5,
       2,
       0},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    auto s = summarize(r.arms);
    EXPECT_DOUBLE_EQ(s.winner_charge, r.winner);
    EXPECT_DOUBLE_EQ(s.hedge_charge, r.hedges);
    EXPECT_DOUBLE_EQ(s.total_charge, r.total);
    EXPECT_EQ(s.hedges_started, r.started);
    EXPECT_EQ(s.hedges_won, r.won);
  }
}

} // namespace
} // namespace hedge_plan_test
