// The engine-wide hedging state: answer times per region (the window, the
// percentile, the adaptive threshold they give), the data-plane hedge budget
// (share, minimum allowance, sliding window, refusals) and the metadata
// hedge budget (acquire, release, 0 disables).

#include "georoute/actors/policy/hedge_budget.hpp"

#include <gtest/gtest.h>
#include <ostream>
#include <string>
#include <vector>

// Named after the file as well: the unity build (tests/CMakeLists.txt)
// compiles it in one translation unit with other tests.
namespace hedge_budget_test {
namespace {

using namespace georoute;
using namespace std::chrono_literals;
using std::chrono::microseconds;
using std::chrono::milliseconds;

// A whole hour: the budget's 1 s buckets are aligned to it.
const policy_time t0 = policy_time{} + 1h;

// -- adaptive latency ------------------------------------------------------

TEST(LatencyTracker, Percentile_Table) {
  struct row {
    const char* name;
    std::size_t window, min_samples;
    std::vector<int> samples_ms;
    double p;
    std::optional<microseconds> expected;
  };
  std::vector<int> one_to_100;
  for (int i = 1; i <= 100; ++i)
    one_to_100.push_back(i);
  std::vector<int> one_to_300;
  for (int i = 1; i <= 300; ++i)
    one_to_300.push_back(i);
  const row rows[] = {
      {"Empty_Nullopt", 256, 1, {}, 0.99, std::nullopt},
      {"BelowMinSamples_Nullopt", 256, 50, {1, 2, 3}, 0.99, std::nullopt},
      {"AtMinSamples_Max", 256, 3, {5, 1, 3}, 0.99, microseconds{5000}},
      {"OneTo100_P99_99", 256, 50, one_to_100, 0.99, microseconds{99000}},
      {"OneTo100_P50_50", 256, 50, one_to_100, 0.50, microseconds{50000}},
      // The window keeps the last 256 (45..300): rank ceil(0.99 * 256) = 254
      // is 298; over all 300 it would be 297.
      {"Window256Of300_Last256", 256, 50, one_to_300, 0.99,
       microseconds{298000}},
      {"Window1_LastOnly", 1, 1, {9, 7}, 0.99, microseconds{7000}},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    latency_tracker t{r.window};
    for (int ms : r.samples_ms)
      t.record(milliseconds{ms});
    EXPECT_EQ(t.percentile(r.p, r.min_samples), r.expected);
  }
}

TEST(LatencyTracker, Window_Bounded_OldOutliersForgotten) {
  latency_tracker t{256};
  for (int i = 0; i < 10; ++i)
    t.record(5s); // a slow episode
  for (int i = 0; i < 255; ++i)
    t.record(4ms);
  EXPECT_EQ(t.size(), 256u);
  EXPECT_EQ(t.recorded(), 265u);
  // One 5 s sample left, rank 254 of 256: still a normal answer.
  EXPECT_EQ(t.percentile(0.99, 50), microseconds{4000});
  t.record(-3ms);
  EXPECT_EQ(t.percentile(0.001, 50), microseconds{0});
}

TEST(RegionLatencies, FastSlowAndTooFew_Thresholds) {
  hedging_options o;
  o.mode = hedge_threshold_mode::adaptive;
  region_latencies lat{o.adaptive};
  for (int i = 0; i < 200; ++i) {
    lat.record("East US", microseconds{3000 + (i % 3) * 1000}); // 3-5 ms
    lat.record("West US", milliseconds{i < 190 ? 300 : 800});
  }
  for (int i = 0; i < 49; ++i)
    lat.record("North Europe", 2ms);
  const timeout_ladders l;
  auto threshold = [&](const char* region) {
    return choose_hedge_timing(o, {}, l.partition_failover,
                               lat.percentile(region))
        .threshold;
  };
  // A region whose p99 is 5 ms is hedged at the lower bound, not at 1 s.
  EXPECT_EQ(lat.percentile("east us"), microseconds{5000});
  EXPECT_EQ(threshold("East US"), 50ms);
  // p99 800 ms: 1.6 s, capped by the static threshold.
  EXPECT_EQ(threshold("West US"), 1000ms);
  // 49 samples: too few.
  EXPECT_EQ(lat.percentile("North Europe"), std::nullopt);
  EXPECT_EQ(threshold("North Europe"), 1000ms);
  lat.record("NORTH EUROPE", 2ms);
  EXPECT_EQ(threshold("North Europe"), 50ms);
  EXPECT_EQ(threshold("Unknown"), 1000ms);
  EXPECT_EQ(lat.region_count(), 3u);
}

TEST(RegionLatencies, ManyNames_Bounded) {
  region_latencies lat;
  for (std::size_t i = 0; i < region_latencies::max_regions + 10; ++i)
    lat.record("region " + std::to_string(i), 1ms);
  EXPECT_EQ(lat.region_count(), region_latencies::max_regions);
}

// -- the data-plane budget -------------------------------------------------

TEST(HedgeBudget, ColdEngine_MinimumAllowance) {
  hedge_budget b;
  b.record_operation(t0);
  EXPECT_TRUE(b.try_take(t0));
  EXPECT_TRUE(b.try_take(t0 + 100ms));
  EXPECT_TRUE(b.try_take(t0 + 200ms));
  EXPECT_FALSE(b.try_take(t0 + 300ms));
  EXPECT_EQ(b.taken(), 3u);
  EXPECT_EQ(b.refused(), 1u);
  EXPECT_EQ(b.operations(), 1u);
}

TEST(HedgeBudget, TenPercentShare_Table) {
  struct row {
    const char* name;
    int operations;
    uint64_t allowed;
  };
  const row rows[] = {
      {"Ops0_Allowance3", 0, 3},   {"Ops29_Allowance3", 29, 3},
      {"Ops30_Share3", 30, 3},     {"Ops40_Share4", 40, 4},
      {"Ops100_Share10", 100, 10}, {"Ops109_Share10", 109, 10},
      {"Ops110_Share11", 110, 11}, {"Ops1000_Share100", 1000, 100},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    hedge_budget b;
    for (int i = 0; i < r.operations; ++i)
      b.record_operation(t0 + milliseconds{i % 1000});
    uint64_t granted = 0;
    while (b.try_take(t0 + 999ms) && granted < 10000)
      ++granted;
    EXPECT_EQ(granted, r.allowed);
    EXPECT_EQ(b.refused(), 1u);
    EXPECT_EQ(b.window_hedges(t0 + 999ms), r.allowed);
  }
}

TEST(HedgeBudget, WindowSlides_OldBucketsForgotten) {
  // Buckets of 1 s aligned to t0 (a whole hour); the window is 10 buckets.
  hedge_budget b;
  for (int i = 0; i < 100; ++i)
    b.record_operation(t0);
  for (int i = 0; i < 10; ++i)
    EXPECT_TRUE(b.try_take(t0 + 500ms));
  EXPECT_FALSE(b.try_take(t0 + 500ms));
  // 9.999 s later the first bucket is still in the window.
  EXPECT_EQ(b.window_operations(t0 + 9999ms), 100u);
  EXPECT_FALSE(b.try_take(t0 + 9999ms));
  // At 10 s it has slid out: only the allowance remains.
  EXPECT_EQ(b.window_operations(t0 + 10s), 0u);
  EXPECT_EQ(b.window_hedges(t0 + 10s), 0u);
  EXPECT_TRUE(b.try_take(t0 + 10s));
  EXPECT_TRUE(b.try_take(t0 + 10s));
  EXPECT_TRUE(b.try_take(t0 + 10s));
  EXPECT_FALSE(b.try_take(t0 + 10s));
  EXPECT_EQ(b.taken(), 13u);
  EXPECT_EQ(b.refused(), 3u);
}

TEST(HedgeBudget, OperationsSpreadOverWindow_Summed) {
  hedge_budget b;
  for (int s = 0; s < 10; ++s)
    for (int i = 0; i < 10; ++i)
      b.record_operation(t0 + std::chrono::seconds{s});
  EXPECT_EQ(b.window_operations(t0 + 9s), 100u);
  EXPECT_EQ(b.window_operations(t0 + 10s), 90u);
  EXPECT_EQ(b.window_operations(t0 + 15s), 40u);
  EXPECT_EQ(b.window_operations(t0 + 19s), 0u);
  // A gap longer than the window leaves nothing behind.
  EXPECT_EQ(b.window_operations(t0 + 1h), 0u);
}

TEST(HedgeBudget, TimeGoingBack_CountsInLatestBucket) {
  hedge_budget b;
  b.record_operation(t0 + 20s);
  b.record_operation(t0); // older than the window: counted at 20 s
  EXPECT_EQ(b.window_operations(t0 + 20s), 2u);
}

TEST(HedgeBudget, ShareZero_AllowanceOnly) {
  hedge_budget_options o;
  o.share = 0;
  o.min_allowance = 1;
  hedge_budget b{o};
  for (int i = 0; i < 1000; ++i)
    b.record_operation(t0);
  EXPECT_TRUE(b.try_take(t0));
  EXPECT_FALSE(b.try_take(t0));
}

// -- metadata hedging ------------------------------------------------------

TEST(MetadataHedgeBudget, AcquireRelease_Default32) {
  metadata_hedge_budget b;
  EXPECT_EQ(b.capacity(), 32u);
  for (int i = 0; i < 32; ++i)
    EXPECT_TRUE(b.try_acquire());
  EXPECT_FALSE(b.try_acquire());
  EXPECT_EQ(b.in_use(), 32u);
  EXPECT_EQ(b.refused(), 1u);
  EXPECT_TRUE(b.release());
  EXPECT_TRUE(b.try_acquire());
  EXPECT_EQ(b.acquired(), 33u);
}

TEST(MetadataHedgeBudget, Zero_Disables) {
  metadata_hedge_budget b{0};
  EXPECT_FALSE(b.try_acquire());
  EXPECT_FALSE(b.try_acquire());
  EXPECT_EQ(b.refused(), 2u);
  EXPECT_EQ(b.in_use(), 0u);
}

TEST(MetadataHedgeBudget, ReleaseWithoutAcquire_Refused) {
  metadata_hedge_budget b{2};
  EXPECT_FALSE(b.release());
  EXPECT_TRUE(b.try_acquire());
  EXPECT_TRUE(b.release());
  EXPECT_FALSE(b.release());
  EXPECT_EQ(b.in_use(), 0u);
}

} // namespace
} // namespace hedge_budget_test
