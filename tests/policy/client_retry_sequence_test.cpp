// The client retry policy over several attempts
// (ClientRetryPolicy.ShouldRetryOnSessionNotAvailable,
// ClientRetryPolicy.ShouldRetryOnUnavailableEndpointStatusCodes): the 404.1002
// walks, the single cross-region retry, the retry context and the counters.

#include "georoute/actors/policy/client_retry_policy.hpp"
#include "tests/policy/retry_fixture.hpp"

#include <gtest/gtest.h>
#include <string>
#include <vector>

using namespace georoute;
using namespace georoute::retry_fixture;
using namespace std::chrono_literals;

// -- 404.1002 (ClientRetryPolicy.ShouldRetryOnSessionNotAvailable)
// -------------------------------------------------------

// ValidateRetryOnSessionNotAvailableWithEndpointDiscovery*: three attempts,
// all to the write region, the third with the hub-only header.
TEST(ClientRetryPolicy, SessionNotAvailable_SingleMasterRead_ThreeAttempts) {
  auto t = table(false).with_preferences({"West US", "North Europe"}, t0);
  client_retry_policy policy;
  resolve_input base;
  EXPECT_EQ(t.resolve(policy.route(base), t0).endpoint, west);
  auto d1 = policy.on_failure(failure_signal::http(404, 1002), read_facts());
  ASSERT_TRUE(d1.retry);
  EXPECT_EQ(d1.location_index, 0u);
  EXPECT_FALSE(d1.use_preferred);
  EXPECT_FALSE(d1.hub_header);
  EXPECT_EQ(t.resolve(policy.route(base), t0).endpoint, east);
  auto d2 = policy.on_failure(failure_signal::http(404, 1002), read_facts());
  ASSERT_TRUE(d2.retry);
  EXPECT_EQ(d2.location_index, 0u);
  EXPECT_FALSE(d2.use_preferred);
  EXPECT_TRUE(d2.hub_header);
  EXPECT_TRUE(policy.hub_header(true));
  EXPECT_EQ(t.resolve(policy.route(base), t0).endpoint, east);
  auto d3 = policy.on_failure(failure_signal::http(404, 1002), read_facts());
  EXPECT_FALSE(d3.retry);
  EXPECT_FALSE(d3.clear_session_token);
  EXPECT_EQ(policy.counters().session, 3u);
}

TEST(ClientRetryPolicy, SessionNotAvailable_SingleMasterWrite_NoHubHeader) {
  client_retry_policy policy;
  EXPECT_FALSE(
      policy.on_failure(failure_signal::http(404, 1002), single_write_facts())
          .hub_header);
  auto d2 =
      policy.on_failure(failure_signal::http(404, 1002), single_write_facts());
  EXPECT_TRUE(d2.retry);
  EXPECT_FALSE(d2.hub_header);
  EXPECT_FALSE(policy.hub_header(false));
  EXPECT_FALSE(
      policy.on_failure(failure_signal::http(404, 1002), single_write_facts())
          .retry);
}

TEST(ClientRetryPolicy, SessionNotAvailable_HubProcessingOff_TwoAttempts) {
  client_retry_options o;
  o.hub_region_processing = false;
  client_retry_policy policy(o);
  auto d1 = policy.on_failure(failure_signal::http(404, 1002), read_facts());
  EXPECT_TRUE(d1.retry);
  EXPECT_FALSE(d1.use_preferred);
  auto d2 = policy.on_failure(failure_signal::http(404, 1002), read_facts());
  EXPECT_FALSE(d2.retry);
  EXPECT_FALSE(policy.hub_header(true));
}

// ValidateRetryOnReadSessionNotAvailableWithEnableMultipleWriteLocations:
// index = retry count, until every applicable endpoint was tried.
TEST(ClientRetryPolicy, SessionNotAvailable_MultiWrite_WalksEveryRegion) {
  auto t = table(true);
  client_retry_policy policy;
  resolve_input base;
  auto facts = facts_for(t, true, true, {}, east, t0);
  ASSERT_EQ(facts.applicable_endpoint_count, 3u);
  const std::vector<std::string> expected = {west, north, east};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    auto d = policy.on_failure(failure_signal::http(404, 1002), facts);
    ASSERT_TRUE(d.retry);
    EXPECT_EQ(d.location_index, i + 1);
    EXPECT_TRUE(d.use_preferred);
    EXPECT_EQ(d.delay, 0ms);
    EXPECT_EQ(t.resolve(policy.route(base), t0).endpoint, expected[i]);
  }
  EXPECT_FALSE(policy.on_failure(failure_signal::http(404, 1002), facts).retry);
}

TEST(ClientRetryPolicy, SessionNotAvailable_NameBasedGivesUp_ClearsSession) {
  client_retry_policy policy;
  auto facts = with(read_facts(), [](auto& f) { f.name_based = true; });
  EXPECT_FALSE(policy.on_failure(failure_signal::http(404, 1002), facts)
                   .clear_session_token);
  EXPECT_FALSE(policy.on_failure(failure_signal::http(404, 1002), facts)
                   .clear_session_token);
  auto last = policy.on_failure(failure_signal::http(404, 1002), facts);
  EXPECT_FALSE(last.retry);
  EXPECT_TRUE(last.clear_session_token);
}

// -- UE (ClientRetryPolicy.ShouldRetryOnUnavailableEndpointStatusCodes)
// -------------------------------------------------------------

TEST(ClientRetryPolicy, ServiceUnavailable_AcrossStatuses_AtMostOnce) {
  client_retry_policy policy;
  EXPECT_TRUE(policy.on_failure(failure_signal::http(503), read_facts()).retry);
  EXPECT_FALSE(
      policy.on_failure(failure_signal::http(500), read_facts()).retry);
  EXPECT_FALSE(
      policy.on_failure(failure_signal::http(410, 1022), read_facts()).retry);
  EXPECT_FALSE(
      policy.on_failure(failure_signal::http(503), read_facts()).retry);
}

// The one retry a 503 allows is spent by any path that takes it: after a
// refused one (410.1022 on a single-master write, as
// ClientRetryPolicy.ShouldRetryOnUnavailableEndpointStatusCodes says) and after
// georoute's refresh-and-retry of a single-master write's 503 (its
// deviation), a later 503 is not retried.
TEST(ClientRetryPolicy, ServiceUnavailable_RefusedFirst_StillCountsAttempt) {
  client_retry_policy refused;
  EXPECT_FALSE(
      refused.on_failure(failure_signal::http(410, 1022), single_write_facts())
          .retry);
  EXPECT_FALSE(
      refused.on_failure(failure_signal::http(503), read_facts()).retry);
  client_retry_policy refreshed;
  EXPECT_TRUE(
      refreshed.on_failure(failure_signal::http(503), single_write_facts())
          .retry);
  EXPECT_FALSE(
      refreshed.on_failure(failure_signal::http(503), read_facts()).retry);
}

TEST(ClientRetryPolicy, ServiceUnavailable_Read_ResolvesSecondPreferred) {
  auto t = table(false);
  client_retry_policy policy;
  resolve_input base;
  auto d = policy.on_failure(failure_signal::http(503, 20003), read_facts());
  EXPECT_TRUE(d.mark_endpoint.empty());
  EXPECT_EQ(t.resolve(policy.route(base), t0).endpoint, west);
}

// A mark that expires between two attempts: East US is marked (it refused
// connections), so West US leads the read list and takes the first attempt;
// it answers 503. East's mark expires before the retry, which moves East
// back to the front, and index 1 names West again. The retry steps past the
// endpoint that answered 503, whatever the list looks like by then.
TEST(ClientRetryPolicy,
     ServiceUnavailable_MarkExpiresBeforeRetry_NotSameRegion) {
  location_table_options o;
  o.default_endpoint = global_ep;
  o.preferred_regions = {"East US", "West US", "North Europe"};
  o.use_multiple_write_locations = true;
  o.unavailable_expiry = std::chrono::seconds{3};
  database_account a;
  a.enable_multiple_write_locations = true;
  a.writable = {{"East US", east}, {"West US", west}, {"North Europe", north}};
  a.readable = a.writable;
  auto t =
      location_table(o).with_account(a, t0).with_mark(east, true, true, t0);
  client_retry_policy policy;
  resolve_input base;
  const auto first_at = t0 + std::chrono::milliseconds{2900};
  ASSERT_EQ(t.resolve(policy.route(base), first_at).endpoint, west);
  auto facts = facts_for(t, true, true, {}, west, first_at);
  auto d = policy.on_failure(failure_signal::http(503), facts);
  ASSERT_TRUE(d.retry);
  EXPECT_EQ(d.location_index, 1u);
  const auto retry_at = t0 + std::chrono::milliseconds{3100};
  ASSERT_FALSE(t.is_unavailable(east, op_kind::read, retry_at));
  EXPECT_NE(t.resolve(policy.route(base), retry_at).endpoint, west);
  // A later failure of another kind clears what to avoid with the context.
  policy.on_failure(failure_signal::http(429, 0, 10), facts);
  EXPECT_TRUE(policy.route(base).avoid_endpoint.empty());
}

// -- counters, routes, purity ----------------------------------------------

TEST(ClientRetryPolicy, Evaluate_AnySignal_CountersUnchanged) {
  client_retry_policy policy;
  auto before = policy.counters().failover;
  auto d = policy.evaluate(failure_signal::connection(), read_facts());
  EXPECT_TRUE(d.retry);
  EXPECT_EQ(d.next.failover, before + 1);
  EXPECT_EQ(policy.counters().failover, before);
  policy.apply(d);
  EXPECT_EQ(policy.counters().failover, before + 1);
}

TEST(ClientRetryPolicy, Route_AfterThrottleRetry_ContextCleared) {
  client_retry_policy policy;
  resolve_input base;
  policy.on_failure(failure_signal::http(503), read_facts());
  EXPECT_EQ(policy.route(base).location_index, 1u);
  auto d = policy.on_failure(failure_signal::http(429, 0, 100), read_facts());
  EXPECT_TRUE(d.retry);
  EXPECT_EQ(policy.route(base).location_index, 0u);
  EXPECT_TRUE(policy.route(base).use_preferred);
}

TEST(ClientRetryPolicy, HubHeader_AfterSet_StickyForReads) {
  client_retry_policy policy;
  policy.on_failure(failure_signal::http(404, 1002), read_facts());
  policy.on_failure(failure_signal::http(404, 1002), read_facts());
  auto d = policy.on_failure(failure_signal::http(429, 0, 100), read_facts());
  EXPECT_TRUE(d.retry);
  EXPECT_TRUE(d.hub_header);
}

TEST(ClientRetryPolicy, Throttle_ThroughPolicy_BudgetShared) {
  client_retry_policy policy;
  for (int i = 0; i < 9; ++i)
    EXPECT_TRUE(
        policy.on_failure(failure_signal::http(429, 0, 10), read_facts())
            .retry);
  EXPECT_FALSE(
      policy.on_failure(failure_signal::http(429, 0, 10), read_facts()).retry);
  EXPECT_EQ(policy.counters().throttle.attempts, 9u);
}

TEST(ClientRetryPolicy, FactsFor_Tables_MultiWriteFlags) {
  auto single = facts_for(table(false), false, true, {}, east, t0);
  EXPECT_FALSE(single.can_use_multiple_write_locations());
  EXPECT_TRUE(single.is_single_master_write());
  EXPECT_FALSE(single.is_multi_master_write());
  EXPECT_EQ(single.write_region_count, 3u);
  EXPECT_EQ(single.preferred_location_count, 3u);
  EXPECT_EQ(single.endpoint, east);

  auto multi = facts_for(table(true), false, true, {"West US"}, west, t0);
  EXPECT_TRUE(multi.is_multi_master_write());
  EXPECT_FALSE(multi.is_multi_master_metadata_write());
  EXPECT_EQ(multi.applicable_endpoint_count, 2u);

  auto meta = facts_for(table(true), false, false, {}, east, t0);
  EXPECT_TRUE(meta.is_metadata());
  EXPECT_TRUE(meta.is_multi_master_metadata_write());
  EXPECT_TRUE(meta.is_single_master_write());
}
