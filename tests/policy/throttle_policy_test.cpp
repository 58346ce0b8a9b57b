// The throttling policies (.NET ResourceThrottleRetryPolicy and the metadata
// retry policies): the 429 throttle policy (9 attempts, 30 s cumulative, the
// server's delay exactly, 5 s without one) and the partition-range policy
// (region hops, then the throttle).

#include "georoute/actors/policy/client_retry_policy.hpp"
#include "georoute/actors/policy/throttle_policy.hpp"

#include <gtest/gtest.h>
#include <string>
#include <vector>

using namespace georoute;
using namespace std::chrono_literals;
using std::chrono::milliseconds;

// -- throttle_policy -------------------------------------------------------

TEST(ThrottlePolicy, Delay_Table_ServerValueOrDefault) {
  struct row {
    const char* name;
    int64_t retry_after_ms;
    milliseconds delay;
  };
  const std::vector<row> rows = {
      {"server value exactly", 1234, 1234ms},
      {"one millisecond", 1, 1ms},
      {"zero means default", 0, 5000ms},
      {"absent means default", -1, 5000ms},
      {"just below max wait", 29'999, 29'999ms},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    throttle_policy p;
    auto v = p.evaluate(failure_signal::http(429, 0, r.retry_after_ms));
    EXPECT_TRUE(v.retry);
    EXPECT_EQ(v.delay, r.delay);
    EXPECT_EQ(v.next.cumulative, r.delay);
  }
}

TEST(ThrottlePolicy, Attempts_NineRetries_TenthRefused) {
  throttle_policy p;
  for (uint32_t i = 1; i <= 9; ++i) {
    auto v = p.on_failure(failure_signal::http(429, 0, 100));
    ASSERT_TRUE(v.retry) << "attempt " << i;
    EXPECT_EQ(p.state().attempts, i);
  }
  EXPECT_EQ(p.state().cumulative, 900ms);
  EXPECT_FALSE(p.on_failure(failure_signal::http(429, 0, 100)).retry);
  EXPECT_EQ(p.state().attempts, 9u);
}

TEST(ThrottlePolicy, CumulativeWait_DefaultDelay_SixRetriesFill30s) {
  throttle_policy p;
  for (int i = 0; i < 6; ++i)
    ASSERT_TRUE(p.on_failure(failure_signal::http(429)).retry) << i;
  EXPECT_EQ(p.state().cumulative, 30s);
  EXPECT_FALSE(p.on_failure(failure_signal::http(429)).retry);
}

TEST(ThrottlePolicy, CumulativeWait_ExactlyMax_AllowedThenRefused) {
  throttle_policy p;
  EXPECT_TRUE(p.on_failure(failure_signal::http(429, 0, 29'999)).retry);
  EXPECT_TRUE(p.on_failure(failure_signal::http(429, 0, 1)).retry);
  EXPECT_EQ(p.state().cumulative, 30s);
  EXPECT_FALSE(p.on_failure(failure_signal::http(429, 0, 1)).retry);
}

TEST(ThrottlePolicy, SingleDelay_AtOrAboveMaxWait_Refused) {
  throttle_policy p;
  EXPECT_FALSE(p.evaluate(failure_signal::http(429, 0, 30'000)).retry);
  EXPECT_FALSE(p.evaluate(failure_signal::http(429, 0, 120'000)).retry);
  EXPECT_FALSE(p.evaluate(failure_signal::http(429, 0, INT64_MAX / 2)).retry);
}

TEST(ThrottlePolicy, CumulativeWait_WouldOverflowBudget_Refused) {
  throttle_policy p;
  EXPECT_TRUE(p.on_failure(failure_signal::http(429, 0, 20'000)).retry);
  auto v = p.on_failure(failure_signal::http(429, 0, 10'001));
  EXPECT_FALSE(v.retry);
  EXPECT_EQ(p.state().cumulative, 20s);
}

TEST(ThrottlePolicy, Options_Custom_Respected) {
  throttle_options o;
  o.max_attempts = 2;
  o.max_wait = 1s;
  o.default_delay = 300ms;
  throttle_policy p(o);
  EXPECT_EQ(p.on_failure(failure_signal::http(429)).delay, 300ms);
  EXPECT_EQ(p.on_failure(failure_signal::http(429)).delay, 300ms);
  EXPECT_FALSE(p.on_failure(failure_signal::http(429)).retry);
}

TEST(ThrottlePolicy, OtherOutcomes_NotRetried) {
  throttle_policy p;
  EXPECT_FALSE(p.evaluate(failure_signal::http(503, 0, 100)).retry);
  EXPECT_FALSE(p.evaluate(failure_signal::http(408)).retry);
  EXPECT_FALSE(p.evaluate(failure_signal::connection()).retry);
  EXPECT_FALSE(p.evaluate(failure_signal::timed_out()).retry);
}

TEST(ThrottlePolicy, Evaluate_Retry_StateUnchanged) {
  throttle_policy p;
  auto v = p.evaluate(failure_signal::http(429, 0, 100));
  EXPECT_TRUE(v.retry);
  EXPECT_EQ(p.state(), throttle_state{});
  p.apply(v);
  EXPECT_EQ(p.state().attempts, 1u);
}

// -- partition_range_retry_policy (MetadataRequestThrottleRetryPolicy) -----

TEST(PartitionRangeRetryPolicy, ThreePreferred_HopsThreeTimesThenStops) {
  partition_range_retry_policy p(3);
  EXPECT_EQ(p.hop_budget(), 3u);
  struct row {
    failure_signal signal;
    bool retry;
    uint32_t index;
  };
  const std::vector<row> rows = {
      {failure_signal::http(503), true, 1},
      {failure_signal::http(500), true, 2},
      {failure_signal::http(410, 1022), true, 3},
      {failure_signal::http(403, 1008), false, 3},
  };
  for (std::size_t i = 0; i < rows.size(); ++i) {
    SCOPED_TRACE(i);
    auto d = p.on_failure(rows[i].signal);
    EXPECT_EQ(d.retry, rows[i].retry);
    EXPECT_EQ(p.location_index(), rows[i].index);
    EXPECT_EQ(d.delay, 0ms);
    EXPECT_TRUE(d.use_preferred);
    EXPECT_FALSE(d.refresh_account);
    EXPECT_FALSE(d.mark_read || d.mark_write);
    EXPECT_TRUE(d.mark_endpoint.empty());
  }
}

TEST(PartitionRangeRetryPolicy, NoPreferredRegions_BudgetOne) {
  partition_range_retry_policy p(0);
  EXPECT_EQ(p.hop_budget(), 1u);
  EXPECT_TRUE(p.on_failure(failure_signal::http(503, 20003)).retry);
  EXPECT_EQ(p.location_index(), 1u);
  EXPECT_FALSE(p.on_failure(failure_signal::http(503, 20003)).retry);
}

TEST(PartitionRangeRetryPolicy, Throttled_ServerDelayIndexKept) {
  partition_range_retry_policy p(2);
  p.on_failure(failure_signal::http(503));
  auto d = p.on_failure(failure_signal::http(429, 0, 700));
  EXPECT_TRUE(d.retry);
  EXPECT_EQ(d.delay, 700ms);
  EXPECT_EQ(p.location_index(), 1u);
  resolve_input base;
  EXPECT_EQ(p.route(base).location_index, 1u);
  EXPECT_TRUE(p.route(base).use_preferred);
}

TEST(PartitionRangeRetryPolicy, Throttle_NineAttempts_TenthRefused) {
  partition_range_retry_policy p(1);
  for (int i = 0; i < 9; ++i)
    ASSERT_TRUE(p.on_failure(failure_signal::http(429, 0, 10)).retry) << i;
  EXPECT_FALSE(p.on_failure(failure_signal::http(429, 0, 10)).retry);
}

TEST(PartitionRangeRetryPolicy, OtherOutcomes_NotRetried) {
  const std::vector<failure_signal> signals = {
      failure_signal::http(404),       failure_signal::http(404, 1002),
      failure_signal::http(410, 1002), failure_signal::http(403, 3),
      failure_signal::http(408),       failure_signal::timed_out(),
  };
  for (const auto& s : signals) {
    partition_range_retry_policy p(3);
    SCOPED_TRACE(s.status);
    EXPECT_FALSE(p.evaluate(s).retry);
  }
}

TEST(PartitionRangeRetryPolicy, ConnectionFailure_HopsLikeA503) {
  partition_range_retry_policy p(2);
  auto d = p.on_failure(failure_signal::connection());
  EXPECT_TRUE(d.retry);
  EXPECT_EQ(d.location_index, 1u);
  EXPECT_FALSE(d.mark_read || d.mark_write);
  EXPECT_FALSE(d.refresh_account);
}

TEST(PartitionRangeRetryPolicy, LostAfterSend_HopsLikeA503) {
  partition_range_retry_policy p(2);
  auto d = p.on_failure(failure_signal::lost_after_send());
  EXPECT_TRUE(d.retry);
  EXPECT_EQ(d.location_index, 1u);
  EXPECT_FALSE(d.mark_read || d.mark_write);
  EXPECT_FALSE(d.refresh_account);
}

TEST(PartitionRangeRetryPolicy, Route_Hops_WalkPreferredEndpoints) {
  location_table_options o;
  o.default_endpoint = "http://127.0.0.1:4300/";
  o.preferred_regions = {"East US", "West US"};
  database_account a;
  a.writable = {{"East US", "http://127.0.0.1:4301/"}};
  a.readable = {{"East US", "http://127.0.0.1:4301/"},
                {"West US", "http://127.0.0.1:4302/"}};
  auto t = location_table(o).with_account(a, policy_time{});
  partition_range_retry_policy p(t.preferred_location_count());
  resolve_input base;
  EXPECT_EQ(t.resolve(p.route(base), policy_time{}).endpoint,
            "http://127.0.0.1:4301/");
  p.on_failure(failure_signal::http(503));
  EXPECT_EQ(t.resolve(p.route(base), policy_time{}).endpoint,
            "http://127.0.0.1:4302/");
  p.on_failure(failure_signal::http(503));
  EXPECT_EQ(t.resolve(p.route(base), policy_time{}).endpoint,
            "http://127.0.0.1:4301/");
  EXPECT_FALSE(p.on_failure(failure_signal::http(503)).retry);
}

// A hop steps past the region that just failed, even when a mark expiring
// in between has shifted the list under the index.
TEST(PartitionRangeRetryPolicy, Hop_AvoidsTheRegionThatFailed) {
  location_table_options o;
  o.default_endpoint = "http://127.0.0.1:4300/";
  o.preferred_regions = {"East US", "West US", "North Europe"};
  o.unavailable_expiry = std::chrono::seconds{3};
  database_account a;
  a.writable = {{"East US", "http://127.0.0.1:4301/"}};
  a.readable = {{"East US", "http://127.0.0.1:4301/"},
                {"West US", "http://127.0.0.1:4302/"},
                {"North Europe", "http://127.0.0.1:4303/"}};
  const auto t0 = policy_time{} + std::chrono::hours{1};
  auto t = location_table(o).with_account(a, t0).with_mark(
      "http://127.0.0.1:4301/", true, false, t0);
  partition_range_retry_policy p(t.preferred_location_count());
  resolve_input base;
  const auto first_at = t0 + std::chrono::milliseconds{2900};
  const auto failed = t.resolve(p.route(base), first_at).endpoint;
  ASSERT_EQ(failed, "http://127.0.0.1:4302/");
  EXPECT_TRUE(p.on_failure(failure_signal::http(503), failed).retry);
  EXPECT_EQ(p.route(base).avoid_endpoint, failed);
  EXPECT_NE(t.resolve(p.route(base), t0 + std::chrono::seconds{4}).endpoint,
            failed);
}
