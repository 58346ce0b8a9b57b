// The judgement of the soak's ambiguous writes and its memory slope: which
// attempt a timed-out or cut write is judged by, what the report says about
// one that no fault explains, and the slope fitted to a memory series.

#include "tests/drill/criteria.hpp"

#include <gtest/gtest.h>
#include <random>

using namespace georoute::drill;
using georoute::errc;

namespace {

op_record::attempt_outcome attempt(int status, int64_t sent_ms,
                                   int64_t answered_ms) {
  op_record::attempt_outcome a;
  a.status = status;
  a.sent_us = sent_ms * 1000;
  a.answered_us = answered_ms * 1000;
  return a;
}

// A write that was throttled at 5 s, retried, and whose second attempt
// timed out: sent at 9.8 s, given up at 10.8 s.
op_record throttled_then_timed_out() {
  op_record op;
  op.type = op_type::write;
  op.result = op_result::failure;
  op.start_us = 5'000'000;
  op.end_us = 10'800'000;
  op.error = "outcome_unknown: timeout; may have been applied";
  op.error_code = errc::outcome_unknown;
  op.attempted = {"West US", "East US"};
  auto first = attempt(429, 5000, 5100);
  first.retry_reason = "throttled";
  op.outcomes = {first, attempt(0, 9800, 10800)};
  op.outcomes[1].failure = "timeout";
  op.outcomes[1].endpoint = "http://127.0.0.1:4711/";
  op.outcomes[1].connection = 7;
  op.outcomes[1].connection_served = 12;
  return op;
}

} // namespace

TEST(SoakJudgement, TimedOutWrite_JudgedByTheAttemptThatTimedOut) {
  auto op = throttled_then_timed_out();
  // East US hung from 10.0 s to 12.0 s: the attempt that timed out went
  // out 0.2 s before (inside the +-0.5 s margin); the operation itself
  // started 5 s before.
  EXPECT_TRUE(sent_inside(op, {{10000, 12000}}));
  EXPECT_FALSE(sent_inside(op, {{11000, 12000}}));
  // Without diagnostics the operation's own start is all there is.
  op.outcomes.clear();
  EXPECT_FALSE(sent_inside(op, {{10000, 12000}}));
  EXPECT_TRUE(sent_inside(op, {{5200, 6000}}));
}

TEST(SoakJudgement, CutWrite_InFlightAtTheCut) {
  op_record op;
  op.type = op_type::write;
  op.result = op_result::failure;
  op.start_us = 20'000'000;
  op.end_us = 20'050'000;
  op.error = "outcome_unknown: closed after the request was sent; may "
             "have been applied";
  op.error_code = errc::outcome_unknown;
  op.outcomes = {attempt(0, 20000, 20050)};
  EXPECT_TRUE(in_flight_at(op, {20040}));
  EXPECT_TRUE(in_flight_at(op, {20500})); // the margin
  EXPECT_FALSE(in_flight_at(op, {21000}));
  EXPECT_FALSE(in_flight_at(op, {19000}));
}

// Whether a write may have been applied is read from the engine's code,
// never from its words.
TEST(SoakJudgement, OutcomeUnknown_ByItsCode_NotByItsText) {
  auto op = throttled_then_timed_out();
  EXPECT_TRUE(outcome_unknown(op));
  EXPECT_TRUE(timed_out_in_engine(op));
  op.error_code = errc::service_unavailable;
  op.error = "service_unavailable: 503 (the words may have been applied)";
  EXPECT_FALSE(outcome_unknown(op));
  EXPECT_FALSE(timed_out_in_engine(op));
  op.error_code = errc::outcome_unknown;
  op.result = op_result::timeout; // the caller's own timeout: not the engine's
  EXPECT_FALSE(outcome_unknown(op));
}

TEST(SoakJudgement, DescribedWrite_NamesAttemptsConnectionAndNearestFaults) {
  auto op = throttled_then_timed_out();
  std::vector<fault_marker> faults{
      {2000, "West US throttles 30% of its requests (429)", "West US", 4000},
      {9900, "East US hangs", "East US", 12000},
      {15000, "range 1 splits", "", -1}};
  auto text = describe_op(op, faults);
  for (const char* part :
       {"write +5.00 s .. +10.80 s", "attempt 1 to West US", "429/0",
        "then throttled", "attempt 2 to East US", "(http://127.0.0.1:4711/)",
        "sent +9.80 s", "timeout after 1.0 s",
        "connection #7 reused (12 answered before)",
        "nearest fault before: 'West US throttles 30% of its requests (429)' "
        "at +2.0 s (lifted at +4.0 s)",
        "after: 'East US hangs' at +9.9 s (lifted at +12.0 s)"})
    EXPECT_NE(text.find(part), std::string::npos) << part << "\nin: " << text;
}

TEST(MemorySlope, FlatNoisySeries_NearZero_LinearSeries_ItsRate) {
  std::mt19937 rng{3};
  std::normal_distribution<double> noise{0, 0.3};
  std::vector<memory_point> flat, rising;
  for (int64_t t = 0; t < 600'000; t += 1000) {
    flat.push_back({t, 40 + noise(rng), 20 + noise(rng)});
    // 0.5 MiB a minute, from the start.
    rising.push_back({t, 40 + 0.5 * static_cast<double>(t) / 60000.0, 0});
  }
  auto f = slope_per_min(flat, &memory_point::rss_mib, 300'000);
  ASSERT_TRUE(f);
  EXPECT_LT(std::abs(f->per_min), 0.05);
  auto r = slope_per_min(rising, &memory_point::rss_mib, 300'000);
  ASSERT_TRUE(r);
  EXPECT_NEAR(r->per_min, 0.5, 1e-9);
  EXPECT_NEAR(r->std_error, 0, 1e-9) << "a straight line has no error";
  // A step in the first half does not count.
  std::vector<memory_point> step;
  for (int64_t t = 0; t < 600'000; t += 1000)
    step.push_back({t, t < 200'000 ? 30.0 : 45.0, 0});
  EXPECT_NEAR(slope_per_min(step, &memory_point::rss_mib, 300'000)->per_min, 0,
              1e-9);
  EXPECT_FALSE(slope_per_min(step, &memory_point::rss_mib, 595'000));
}

// The standard error follows the residuals' spread and how long a swing
// lasts: a heap that swings by megabytes over tens of seconds (hangs holding
// requests beside a CPU hog) gives a slope far less certain than the same
// spread drawn afresh each second, and a steady leak under light noise
// stands out by many standard errors.
TEST(MemorySlope, StandardError_GrowsWithSpreadAndWithSwingsThatLast) {
  std::mt19937 rng{11};
  std::normal_distribution<double> step{0, 1};
  std::vector<memory_point> white, swinging, leaking;
  double ar = 0;
  for (int64_t t = 0; t < 1'200'000; t += 1000) {
    auto minutes = static_cast<double>(t) / 60000.0;
    // The same spread twice (1.6 MiB): drawn afresh each second, and as an
    // AR(1) swing where each second keeps 95 % of the last one's offset.
    double w = 1.6 * step(rng);
    ar = 0.95 * ar + 0.5 * step(rng);
    white.push_back({t, 0, 30 + w});
    swinging.push_back({t, 0, 30 + ar});
    // 16 bytes kept per operation at 200 operations a second: 0.18 MiB a
    // minute, under 0.05 MiB of noise.
    leaking.push_back({t, 0, 30 + 0.183 * minutes + 0.03 * w});
  }
  auto w = slope_per_min(white, &memory_point::heap_mib, 600'000);
  auto s = slope_per_min(swinging, &memory_point::heap_mib, 600'000);
  auto l = slope_per_min(leaking, &memory_point::heap_mib, 600'000);
  ASSERT_TRUE(w && s && l);
  EXPECT_GT(w->std_error, 0);
  EXPECT_GT(s->std_error, 3 * w->std_error)
      << "a swing that lasts must weigh more than white noise: " << s->std_error
      << " against " << w->std_error;
  // The limit of a long soak (0.05 MiB/min): the swing is not judged a
  // leak, the leak is, by far.
  EXPECT_LE(s->at_least(2), 0.05) << s->per_min << " +- " << s->std_error;
  EXPECT_GT(l->at_least(2), 0.05 + 0.1) << l->per_min << " +- " << l->std_error;
  EXPECT_NEAR(l->per_min, 0.183, 0.01);
}
