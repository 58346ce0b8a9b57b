// The client retry policy (.NET ClientRetryPolicy, src/ClientRetryPolicy.cs):
// one row per line of the decision table
// (ClientRetryPolicy.ShouldRetryInternalAsync's branches), and the
// endpoint-failover budget and routes
// (ClientRetryPolicy.ShouldRetryOnEndpointFailureAsync).

#include "georoute/actors/policy/client_retry_policy.hpp"
#include "tests/policy/retry_fixture.hpp"

#include <gtest/gtest.h>
#include <ostream>
#include <string>
#include <vector>

using namespace georoute;
using namespace georoute::retry_fixture;
using namespace std::chrono_literals;
using std::chrono::milliseconds;

namespace {

// -- the decision table ----------------------------------------------------

struct expect {
  bool retry = false;
  milliseconds delay{0};
  uint32_t index = 0;
  bool use_preferred = true;
  bool hub = false;
  bool mark_read = false;
  bool mark_write = false;
  bool refresh = false;
  bool force = false;
};

struct decision_row {
  const char* name;
  request_facts facts;
  failure_signal signal;
  expect want;
};

const expect no_retry{};

std::vector<decision_row> decision_rows() {
  using fs = failure_signal;
  return {
      // connection failure: EF(mark both, preferred, index 0)
      {"ConnectionFailure_Read_MarksBothRetriesFirstPreferred",
       read_facts(),
       fs::connection(),
       {true, 1000ms, 0, true, false, true, true, true, false}},
      {"ConnectionFailure_SingleMasterWrite_MarksBothNoDelay",
       single_write_facts(),
       fs::connection(),
       {true, 0ms, 0, true, false, true, true, true, false}},
      {"ConnectionFailure_DiscoveryOff_NoRetry", no_discovery(read_facts()),
       fs::connection(), no_retry},
      {"ConnectionFailure_NoPinnedEndpoint_RetriesWithoutMark",
       with(read_facts(), [](auto& f) { f.endpoint.clear(); }),
       fs::connection(),
       {true, 1000ms, 0, true, false, false, false, true, false}},
      // A refused connection: the same failover, without the pause (the
      // region's answer is definite and nothing was sent).
      {"ConnectionRefused_Read_MarksBothRetriesAtOnce",
       read_facts(),
       fs::connection(true),
       {true, 0ms, 0, true, false, true, true, true, false}},
      {"ConnectionRefused_OneRegionRequest_Pauses",
       with(read_facts(), [](auto& f) { f.applicable_endpoint_count = 1; }),
       fs::connection(true),
       {true, 1000ms, 0, true, false, true, true, true, false}},
      // 403.3
      {"WriteForbidden_SingleMasterWrite_MarkWriteForceRefreshFlip",
       single_write_facts(),
       fs::http(403, 3),
       {true, 0ms, 1, false, false, false, true, true, true}},
      {"WriteForbidden_Read_MarksWriteOnly",
       read_facts(),
       fs::http(403, 3),
       {true, 0ms, 1, false, false, false, true, true, true}},
      {"WriteForbidden_DiscoveryOff_NoRetry",
       no_discovery(single_write_facts()), fs::http(403, 3), no_retry},
      {"WriteForbidden_MultiMasterMetadataWrite_HubWithoutMarks",
       multi_metadata_write_facts(),
       fs::http(403, 3),
       {true, 0ms, 1, false, true, false, false, true, false}},
      {"WriteForbidden_MultiMasterMetadataWriteDiscoveryOff_StillHub",
       no_discovery(multi_metadata_write_facts()),
       fs::http(403, 3),
       {true, 0ms, 1, false, true, false, false, true, false}},
      {"WriteForbidden_MetadataWriteOneWriteRegion_PlainFailover",
       with(multi_metadata_write_facts(),
            [](auto& f) { f.write_region_count = 1; }),
       fs::http(403, 3),
       {true, 0ms, 1, false, false, false, true, true, true}},
      // 403.1008
      {"AccountNotFound_Read_NextPreferredMarkRead",
       read_facts(),
       fs::http(403, 1008),
       {true, 1000ms, 0, true, false, true, false, true, false}},
      {"AccountNotFound_MultiWriteWrite_NextPreferredMarkWrite",
       multi_write_facts(),
       fs::http(403, 1008),
       {true, 0ms, 0, true, false, false, true, true, false}},
      {"AccountNotFound_SingleMasterWrite_NoRetry", single_write_facts(),
       fs::http(403, 1008), no_retry},
      {"Forbidden_OtherSubstatus_NoRetry", read_facts(), fs::http(403, 0),
       no_retry},
      // 404.1002
      {"SessionNotAvailable_SingleMasterRead_WriteRegion",
       read_facts(),
       fs::http(404, 1002),
       {true, 0ms, 0, false}},
      {"SessionNotAvailable_MultiWriteRead_NextRegion",
       multi_read_facts(),
       fs::http(404, 1002),
       {true, 0ms, 1, true}},
      {"SessionNotAvailable_DiscoveryOff_NoRetry", no_discovery(read_facts()),
       fs::http(404, 1002), no_retry},
      {"NotFound_OtherSubstatus_NoRetry", read_facts(), fs::http(404, 0),
       no_retry},
      // 503 / 500 / 410.1022 (UE)
      {"ServiceUnavailable_Read_SecondPreferredNoMark",
       read_facts(),
       fs::http(503),
       {true, 0ms, 1, true}},
      {"ServiceUnavailable20003_Read_SecondPreferred",
       read_facts(),
       fs::http(503, 20003),
       {true, 0ms, 1, true}},
      {"ServiceUnavailable_MultiWriteWrite_SecondPreferred",
       multi_write_facts(),
       fs::http(503),
       {true, 0ms, 1, true}},
      // georoute's one deviation from
      // ClientRetryPolicy.ShouldRetryOnUnavailableEndpointStatusCodes (the
      // reference: no retry): the
      // account is read again and the write retried once.
      {"ServiceUnavailable_SingleMasterWrite_RefreshThenRetryOnce",
       single_write_facts(),
       fs::http(503),
       {true, 0ms, 0, true, false, false, false, true, false}},
      {"ServiceUnavailable_OnePreferredRegion_NoRetry", read_facts(1),
       fs::http(503), no_retry},
      {"ServiceUnavailable_NoPreferredRegion_NoRetry", read_facts(0),
       fs::http(503), no_retry},
      {"ServiceUnavailable_DiscoveryOff_StillUsesPreferredCount",
       no_discovery(read_facts()),
       fs::http(503),
       {true, 0ms, 1, true}},
      {"InternalServerError_Read_SecondPreferred",
       read_facts(),
       fs::http(500),
       {true, 0ms, 1, true}},
      {"InternalServerError_MultiWriteWrite_NoRetry", multi_write_facts(),
       fs::http(500), no_retry},
      {"LeaseNotFound_Read_SecondPreferred",
       read_facts(),
       fs::http(410, 1022),
       {true, 0ms, 1, true}},
      {"LeaseNotFound_MultiWriteWrite_SecondPreferred",
       multi_write_facts(),
       fs::http(410, 1022),
       {true, 0ms, 1, true}},
      {"LeaseNotFound_SingleMasterWrite_NoRetry", single_write_facts(),
       fs::http(410, 1022), no_retry},
      {"Gone_OtherSubstatus_NoRetry", read_facts(), fs::http(410, 1002),
       no_retry},
      // 429.3092
      {"SystemResourceUnavailable_MultiMasterWrite_LikeServiceUnavailable",
       multi_write_facts(),
       fs::http(429, 3092, 250),
       {true, 0ms, 1, true}},
      {"SystemResourceUnavailable_SingleMasterWrite_Throttled",
       single_write_facts(),
       fs::http(429, 3092, 250),
       {true, 250ms, 0, true}},
      {"SystemResourceUnavailable_Read_Throttled",
       read_facts(),
       fs::http(429, 3092, 250),
       {true, 250ms, 0, true}},
      {"SystemResourceUnavailable_MultiWriteOneRegion_Throttled",
       with(multi_write_facts(), [](auto& f) { f.write_region_count = 1; }),
       fs::http(429, 3092, 250),
       {true, 250ms, 0, true}},
      // 408 and the rest
      {"RequestTimeout_Read_NoRetry", read_facts(), fs::http(408), no_retry},
      {"RequestTimeout21013_Write_NoRetry", multi_write_facts(),
       fs::http(408, 21013), no_retry},
      {"Timeout_Read_NoRetry", read_facts(), fs::timed_out(), no_retry},
      // A timed-out write may have been applied: never retried. On a
      // multi-write account its silent region is marked so that the next
      // writes go elsewhere (georoute's addition; the reference marks
      // nothing and every later write waits for the same silence).
      {"Timeout_MultiMasterWrite_NoRetry_MarksTheRegion",
       multi_write_facts(),
       fs::timed_out(),
       {false, 0ms, 0, true, false, true, true, false, false}},
      {"Timeout_SingleMasterWrite_NoRetry_NoMark", single_write_facts(),
       fs::timed_out(), no_retry},
      // The connection went after the request had gone out: a read repeats
      // harmlessly (as a connection failure); a write may have been applied
      // and is not repeated, on any account, but its region is marked as a
      // connection failure marks it.
      {"LostAfterSend_Read_FailsOverLikeConnectionFailure",
       read_facts(),
       fs::lost_after_send(),
       {true, 1000ms, 0, true, false, true, true, true, false}},
      {"LostAfterSend_SingleMasterWrite_NoRetryMarksBoth",
       single_write_facts(),
       fs::lost_after_send(),
       {false, 0ms, 0, true, false, true, true, false, false}},
      {"LostAfterSend_MultiMasterWrite_NoRetryMarksBoth",
       multi_write_facts(),
       fs::lost_after_send(),
       {false, 0ms, 0, true, false, true, true, false, false}},
      {"LostAfterSend_MultiMasterMetadataWrite_NoRetryMarksBoth",
       multi_metadata_write_facts(),
       fs::lost_after_send(),
       {false, 0ms, 0, true, false, true, true, false, false}},
      {"LostAfterSend_WriteDiscoveryOff_NoRetryNoMark",
       no_discovery(single_write_facts()), fs::lost_after_send(), no_retry},
      {"LostAfterSend_WriteNoPinnedEndpoint_NoRetryNoMark",
       with(multi_write_facts(), [](auto& f) { f.endpoint.clear(); }),
       fs::lost_after_send(), no_retry},
      {"Throttled_Read_ServerDelay",
       read_facts(),
       fs::http(429, 0, 1200),
       {true, 1200ms, 0, true}},
      {"Throttled_NoRetryAfter_FiveSeconds",
       single_write_facts(),
       fs::http(429),
       {true, 5000ms, 0, true}},
      {"BadRequest_Read_NoRetry", read_facts(), fs::http(400), no_retry},
      {"Unauthorized_Read_NoRetry", read_facts(), fs::http(401), no_retry},
      {"Conflict_Write_NoRetry", single_write_facts(), fs::http(409), no_retry},
      {"PreconditionFailed_Write_NoRetry", multi_write_facts(), fs::http(412),
       no_retry},
  };
}

void PrintTo(const decision_row& r, std::ostream* os) {
  *os << r.name;
}

class DecisionTable : public ::testing::TestWithParam<decision_row> {};

} // namespace

TEST_P(DecisionTable, Row) {
  const auto& r = GetParam();
  client_retry_policy policy;
  auto d = policy.evaluate(r.signal, r.facts);
  SCOPED_TRACE(d.reason);
  EXPECT_FALSE(d.reason.empty());
  EXPECT_EQ(d.retry, r.want.retry);
  EXPECT_EQ(d.mark_read, r.want.mark_read);
  EXPECT_EQ(d.mark_write, r.want.mark_write);
  EXPECT_EQ(d.mark_endpoint,
            r.want.mark_read || r.want.mark_write ? r.facts.endpoint : "");
  EXPECT_EQ(d.refresh_account, r.want.refresh);
  EXPECT_EQ(d.force_refresh, r.want.force);
  EXPECT_FALSE(d.clear_session_token);
  if (!r.want.retry) return;
  EXPECT_EQ(d.delay, r.want.delay);
  EXPECT_EQ(d.location_index, r.want.index);
  EXPECT_EQ(d.use_preferred, r.want.use_preferred);
  EXPECT_EQ(d.route_to_hub, r.want.hub);
}

INSTANTIATE_TEST_SUITE_P(ClientRetryPolicy, DecisionTable,
                         ::testing::ValuesIn(decision_rows()),
                         [](const auto& info) {
                           return std::string(info.param.name);
                         });

// -- EF budget (ClientRetryPolicy.ShouldRetryOnEndpointFailureAsync)
// ------------------------------------------------------

TEST(ClientRetryPolicy, EndpointFailover_121Allowed_122ndRefused) {
  client_retry_policy policy;
  for (uint32_t i = 1; i <= 121; ++i) {
    auto d = policy.on_failure(failure_signal::connection(), read_facts());
    ASSERT_TRUE(d.retry) << "failover " << i;
    EXPECT_EQ(policy.counters().failover, i);
  }
  auto d = policy.on_failure(failure_signal::connection(), read_facts());
  EXPECT_FALSE(d.retry);
  EXPECT_FALSE(d.refresh_account);
  EXPECT_TRUE(d.mark_endpoint.empty());
  EXPECT_EQ(policy.counters().failover, 121u);
}

// Refused connections go on at once while a region of the request is still
// untried (three here: two failovers), then pause as any failover does: a
// client whose every region refuses (its own network down) does not spin.
// Other connection failures (a reset before the request went out, DNS, TLS)
// keep the pause.
TEST(ClientRetryPolicy, ConnectionRefused_AtOnceUntilEveryRegionWasTried) {
  client_retry_policy policy;
  std::vector<int64_t> delays;
  for (int i = 0; i < 4; ++i) {
    auto d = policy.on_failure(failure_signal::connection(true), read_facts());
    ASSERT_TRUE(d.retry);
    EXPECT_EQ(d.mark_endpoint, east);
    EXPECT_NE(d.reason.find("connection refused"), std::string::npos)
        << d.reason;
    delays.push_back(d.delay.count());
  }
  EXPECT_EQ(delays, (std::vector<int64_t>{0, 0, 1000, 1000}));
  client_retry_policy writes;
  auto w1 =
      writes.on_failure(failure_signal::connection(true), single_write_facts());
  auto w2 =
      writes.on_failure(failure_signal::connection(true), single_write_facts());
  auto w3 =
      writes.on_failure(failure_signal::connection(true), single_write_facts());
  EXPECT_EQ(w1.delay.count(), 0);
  EXPECT_EQ(w2.delay.count(), 0) << "a write's second failover, refused";
  EXPECT_EQ(w3.delay.count(), 1000);
  client_retry_policy other;
  EXPECT_EQ(other.on_failure(failure_signal::connection(), read_facts())
                .delay.count(),
            1000);
}

TEST(ClientRetryPolicy, EndpointFailover_CustomBudget_MaxPlusOne) {
  client_retry_options o;
  o.max_failover_retries = 2;
  client_retry_policy policy(o);
  for (int i = 0; i < 3; ++i)
    EXPECT_TRUE(
        policy.on_failure(failure_signal::http(403, 3), single_write_facts())
            .retry);
  EXPECT_FALSE(
      policy.on_failure(failure_signal::http(403, 3), single_write_facts())
          .retry);
}

TEST(ClientRetryPolicy, EndpointFailover_Write_FirstAtOnceThenInterval) {
  client_retry_options o;
  o.failover_retry_interval = 750ms;
  client_retry_policy policy(o);
  EXPECT_EQ(
      policy.on_failure(failure_signal::connection(), single_write_facts())
          .delay,
      0ms);
  EXPECT_EQ(
      policy.on_failure(failure_signal::connection(), single_write_facts())
          .delay,
      750ms);
  EXPECT_EQ(policy.on_failure(failure_signal::http(403, 3), read_facts()).delay,
            750ms);
}

// ValidateRetryOnWriteForbiddenExceptionAsync: the index walks the failover
// count, so branch A flips between the first two write regions.
// The deviation from
// ClientRetryPolicy.ShouldRetryOnUnavailableEndpointStatusCodes: a
// single-master write's first 503 reads the account and retries once; the
// second 503 of the same operation is final, and a 503 after another retry path
// (connection failure) is too.
TEST(ClientRetryPolicy, ServiceUnavailable_SingleMasterWrite_OnlyOnce) {
  client_retry_policy policy;
  auto first =
      policy.on_failure(failure_signal::http(503), single_write_facts());
  ASSERT_TRUE(first.retry);
  EXPECT_TRUE(first.refresh_account);
  EXPECT_FALSE(first.force_refresh);
  // A read newer than the account the write was routed on: a plain
  // refresh within the minimum interval would answer that very account.
  EXPECT_TRUE(first.fresh_refresh);
  EXPECT_TRUE(first.mark_endpoint.empty());
  auto second =
      policy.on_failure(failure_signal::http(503), single_write_facts());
  EXPECT_FALSE(second.retry) << second.reason;
  // 500 on a write is never retried: it may have been applied.
  client_retry_policy other;
  EXPECT_FALSE(
      other.on_failure(failure_signal::http(500), single_write_facts()).retry);
}

TEST(ClientRetryPolicy, WriteForbidden_Repeated_FlipFlopsWriteRegions) {
  auto t = table(false);
  client_retry_policy policy;
  resolve_input base;
  base.op = op_kind::write;
  EXPECT_EQ(t.resolve(policy.route(base), t0).endpoint, east);
  const std::vector<std::string> expected = {west, east, west};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    auto d =
        policy.on_failure(failure_signal::http(403, 3), single_write_facts());
    ASSERT_TRUE(d.retry);
    EXPECT_EQ(d.location_index, i + 1);
    EXPECT_EQ(t.resolve(policy.route(base), t0).endpoint, expected[i]);
  }
}

// ValidateRetryOnDatabaseAccountNotFoundAsync / ValidateRetryOnHttpException:
// the failed region is marked, index 0 of the demoted list is the next one.
TEST(ClientRetryPolicy, AccountNotFound_Read_NextPreferredAfterMark) {
  auto t = table(false);
  client_retry_policy policy;
  resolve_input base;
  auto d = policy.on_failure(failure_signal::http(403, 1008), read_facts());
  ASSERT_TRUE(d.retry);
  t = t.with_mark(d.mark_endpoint, d.mark_read, d.mark_write, t0);
  EXPECT_EQ(t.resolve(policy.route(base), t0).endpoint, west);
}

TEST(ClientRetryPolicy,
     ConnectionFailure_SingleMasterWrite_StaysOnWriteRegion) {
  auto t = table(false);
  client_retry_policy policy;
  resolve_input base;
  base.op = op_kind::write;
  auto d =
      policy.on_failure(failure_signal::connection(), single_write_facts());
  t = t.with_mark(d.mark_endpoint, d.mark_read, d.mark_write, t0);
  EXPECT_EQ(t.resolve(policy.route(base), t0).endpoint, east);
}

TEST(ClientRetryPolicy, ConnectionFailure_MultiMasterWrite_NextRegion) {
  auto t = table(true);
  client_retry_policy policy;
  resolve_input base;
  base.op = op_kind::write;
  auto d = policy.on_failure(failure_signal::connection(), multi_write_facts());
  t = t.with_mark(d.mark_endpoint, d.mark_read, d.mark_write, t0);
  EXPECT_EQ(t.resolve(policy.route(base), t0).endpoint, west);
}

// MultimasterMetadataWriteRetryTest: 403.3 routes to the hub; the second
// 403.3 (from the hub) forces the refresh.
TEST(ClientRetryPolicy, MultiMasterMetadataWrite_SecondWriteForbidden_Forced) {
  auto t = table(true);
  client_retry_policy policy;
  resolve_input base;
  base.op = op_kind::write;
  base.is_document = false;
  auto first = policy.on_failure(failure_signal::http(403, 3),
                                 multi_metadata_write_facts());
  EXPECT_TRUE(first.route_to_hub);
  EXPECT_FALSE(first.force_refresh);
  EXPECT_EQ(t.resolve(policy.route(base), t0).route, resolve_route::hub);
  EXPECT_EQ(t.resolve(policy.route(base), t0).endpoint, east);
  auto second = policy.on_failure(failure_signal::http(403, 3),
                                  multi_metadata_write_facts());
  EXPECT_TRUE(second.route_to_hub);
  EXPECT_TRUE(second.force_refresh);
}
