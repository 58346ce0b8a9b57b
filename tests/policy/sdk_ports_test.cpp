// Availability tests of the official Cosmos DB SDKs (.NET, Java, Rust
// driver), ported as tables on the pure policy layer: the per-partition
// circuit breaker, cross-region hedging and metadata hedging. Each test or
// row names the SDK test it stands for. Only what the other policy tests do
// not already cover is here; where georoute deliberately behaves otherwise
// than an SDK, the row tests georoute's behaviour and says so.

#include "georoute/actors/policy/attempt_loop.hpp"
#include "georoute/actors/policy/hedge_budget.hpp"
#include "georoute/actors/policy/hedge_plan.hpp"
#include "georoute/actors/policy/hedging.hpp"
#include "georoute/actors/policy/partition_breaker.hpp"
#include "tests/policy/attempt_results.hpp"
#include "tests/policy/location_fixture.hpp"

#include <gtest/gtest.h>
#include <optional>
#include <string>
#include <vector>

// Named after the file as well: the unity build (tests/CMakeLists.txt)
// compiles it in one translation unit with other tests.
namespace sdk_ports_test {
namespace {

using namespace georoute::test;

using namespace georoute;
using namespace georoute::location_fixture;
using namespace std::chrono_literals;
using std::chrono::milliseconds;
using tf = transport_fault;

const char* name_of(hedge_class x) {
  switch (x) {
  case hedge_class::final_result:
    return "final_result";
  case hedge_class::start_next:
    return "start_next";
  case hedge_class::wait_for_timer:
    return "wait_for_timer";
  }
  return "?";
}

// ===========================================================================
// Per-partition circuit breaker
// ===========================================================================

const std::string rid = "aaaaAAAAAAA=";
const timeout_ladders ladders{};

/// Where an operation runs, for the breaker tables.
enum class ctx { read, multi_write_write, single_write_write };

const char* name_of(ctx c) {
  switch (c) {
  case ctx::read:
    return "read";
  case ctx::multi_write_write:
    return "multi-write write";
  case ctx::single_write_write:
    return "single-write write";
  }
  return "?";
}

op_kind op_of(ctx c) {
  return c == ctx::read ? op_kind::read : op_kind::write;
}

location_table table_of(ctx c) {
  return fixture(c == ctx::multi_write_write);
}

/// One operation of range "1": plans its first attempt (consulting the
/// breaker) and reports `r` as that attempt's outcome.
breaker_report run_one(partition_breaker& b, const location_table& t, ctx c,
                       const attempt_result& r, policy_time now) {
  attempt_loop_config cfg;
  cfg.op = op_of(c);
  cfg.kind = cfg.op == op_kind::read ? request_kind::document_read
                                     : request_kind::write;
  cfg.is_document = true;
  cfg.per_partition_failover = true;
  cfg.refresh_metadata_on_gone = true;
  cfg.breaker = &b;
  attempt_loop loop{cfg, ladders};
  loop.set_partition(rid, "1");
  auto plan = loop.next_attempt(t, now);
  EXPECT_TRUE(plan);
  return loop.report_outcome(r, now);
}

breaker_key east_key() {
  return {rid, "1", "East US"};
}

struct status_row {
  const char* name;
  attempt_result outcome;
  bool read_counts;        ///< counts toward opening for reads
  bool write_counts;       ///< ... for writes on a multi-write account
  bool resets_read_count;  ///< an answer: resets the reads' count
  bool resets_write_count; ///< ... the multi-write writes' count
};

// Java's PartitionLevelCircuitBreakerTests drive the breaker with one fault
// per status code and operation type and check the state each reaches;
// .NET's ReadItemAsync/CreateItemAsync_WithCircuitBreakerEnabled* check the
// same split between reads, multi-write writes and single-write writes.
// Differences kept on purpose (partition_breaker.hpp): 500 counts for
// reads and writes (.NET does not count it), 408 counts for every write
// (Java counts only transit timeouts of writes), and a connection that
// provably sent nothing neither counts nor resets (the Rust driver's fix).
const std::vector<status_row>& status_rows() {
  static const std::vector<status_row> rows = {
      // The region failed the request: counted for reads and multi-write
      // writes alike.
      {"503", http_answer(503), true, true, false, false},
      {"503/20003 gateway read timeout", http_answer(503, 20003), true, true,
       false, false},
      {"500", http_answer(500), true, true, false, false},
      {"502", http_answer(502), true, true, false, false},
      {"504", http_answer(504), true, true, false, false},
      {"408", http_answer(408), true, true, false, false},
      {"timeout after sending", no_answer(true, true), true, true, false,
       false},
      {"connection lost after sending", no_answer(false, true), true, true,
       false, false},
      // Nothing reached the region: no count, no reset.
      {"connect timeout, not sent", no_answer(true, false), false, false, false,
       false},
      {"refused, not sent", no_answer(false, false), false, false, false,
       false},
      // 429/3092 (the region ran out of resources) is a 503 for a
      // multi-write write in every SDK; for a read it is a throttle.
      {"429/3092", http_answer(429, 3092), false, true, true, false},
      // Answers: the region works for this range.
      {"408/21013 write barrier", http_answer(408, 21013), false, false, true,
       true},
      {"429", http_answer(429), false, false, true, true},
      {"429/3200", http_answer(429, 3200), false, false, true, true},
      {"449", http_answer(449), false, false, true, true},
      {"404/1002", http_answer(404, 1002), false, false, true, true},
      {"404/0", http_answer(404), false, false, true, true},
      {"409", http_answer(409), false, false, true, true},
      {"412", http_answer(412), false, false, true, true},
      {"410/1022", http_answer(410, 1022), false, false, true, true},
      {"403/3", http_answer(403, 3), false, false, true, true},
      {"200", http_answer(200), false, false, true, true},
  };
  return rows;
}

// Java PartitionLevelCircuitBreakerTests (transition per status code and
// operation type); .NET CreateItemAsync_WithCircuitBreakerEnabledAndSingle-
// MasterAccount*_ShouldNotApplyPartitionLevelOverride and its multi-master
// twin: the threshold's worth of one outcome opens the range's region for
// reads (10) and multi-write writes (5) exactly when the outcome counts;
// single-write writes never consult the breaker.
TEST(SdkBreaker, StatusTable_ThresholdOfOneOutcome_OpensWhenItCounts) {
  for (const auto& row : status_rows())
    for (ctx c : {ctx::read, ctx::multi_write_write, ctx::single_write_write}) {
      SCOPED_TRACE(std::string{row.name} + " / " + name_of(c));
      auto t = table_of(c);
      partition_breaker b;
      const int n = c == ctx::read ? 10 : 5;
      const bool counts = c == ctx::read                ? row.read_counts
                          : c == ctx::multi_write_write ? row.write_counts
                                                        : false;
      for (int i = 0; i < n; ++i) {
        auto rep = run_one(b, t, c, row.outcome, t0);
        EXPECT_EQ(rep.reported, c != ctx::single_write_write);
        if (c == ctx::single_write_write) continue;
        if (i + 1 < n || !counts) {
          EXPECT_STREQ(to_string(rep.state), "closed") << "#" << i + 1;
        }
      }
      EXPECT_STREQ(to_string(b.view(east_key(), t0).state),
                   counts ? "open" : "closed");
      if (c == ctx::single_write_write) {
        EXPECT_EQ(b.size(), 0u);
      }
    }
}

// Java's HealthyWithFailures state: a success resets the consecutive count
// (the .NET breaker never resets; georoute follows Java). Threshold - 1
// failures, then the outcome, then one more failure: the region opens
// unless the outcome was an answer.
TEST(SdkBreaker, StatusTable_OutcomeBetweenFailures_ResetsOnlyIfAnAnswer) {
  for (const auto& row : status_rows())
    for (ctx c : {ctx::read, ctx::multi_write_write}) {
      SCOPED_TRACE(std::string{row.name} + " / " + name_of(c));
      auto t = table_of(c);
      partition_breaker b;
      const int n = c == ctx::read ? 10 : 5;
      const bool resets =
          c == ctx::read ? row.resets_read_count : row.resets_write_count;
      const bool counts = c == ctx::read ? row.read_counts : row.write_counts;
      for (int i = 0; i + 1 < n; ++i)
        run_one(b, t, c, http_answer(503), t0);
      run_one(b, t, c, row.outcome, t0);
      if (counts) {
        // The outcome itself was the n-th failure.
        EXPECT_STREQ(to_string(b.view(east_key(), t0).state), "open");
        continue;
      }
      run_one(b, t, c, http_answer(503), t0);
      EXPECT_STREQ(to_string(b.view(east_key(), t0).state),
                   resets ? "closed" : "open");
    }
}

// .NET IncrementRequestFailureCounterAndCheckIfPartitionCanFailover with
// configured counts (the SDK reads them from its environment): the
// configured count, not the default, decides. georoute opens on the
// count-th failure (`>=`, as Java and the Rust driver), .NET on the one
// after it.
TEST(SdkBreaker, ConfiguredThresholds_OpenOnExactlyThatFailure) {
  struct row {
    uint32_t reads, writes;
  };
  for (const auto& r : {row{1, 1}, row{2, 3}, row{10, 5}, row{25, 7}}) {
    SCOPED_TRACE(std::to_string(r.reads) + "/" + std::to_string(r.writes));
    for (op_kind op : {op_kind::read, op_kind::write}) {
      partition_breaker_options o;
      o.read_failure_threshold = r.reads;
      o.write_failure_threshold = r.writes;
      partition_breaker b{o};
      const auto k = east_key();
      const uint32_t n = op == op_kind::read ? r.reads : r.writes;
      for (uint32_t i = 1; i < n; ++i)
        ASSERT_STREQ(
            to_string(b.record(k, op, breaker_signal::failure, {}, t0)),
            "closed")
            << i;
      EXPECT_STREQ(to_string(b.record(k, op, breaker_signal::failure, {}, t0)),
                   "open");
    }
  }
}

// .NET TryMarkEndpointUnavailableForPartitionKeyRange_*SingleMasterWrite-
// Account_WritesShouldNotAddOverride* and *MultiMasterWriteAccount_Writes-
// ShouldAddOverride*, and the hedge side of the same split (.NET hedges
// writes only with enableMultiWriteRegionHedge on a multi-write account):
// writes count as multi-write only when the client asks for it, the account
// allows it and more than one region takes writes.
TEST(SdkBreaker, MultiWriteMatrix_WritesConsultBreakerAndMayHedge) {
  struct row {
    const char* name;
    bool client_multi_write;
    bool account_multi_write;
    bool is_document;
    bool multi_write;
  };
  const row rows[] = {
      {"ClientOn_AccountOn_Document", true, true, true, true},
      {"ClientOn_AccountOff_Document", true, false, true, false},
      {"ClientOff_AccountOn_Document", false, true, true, false},
      {"ClientOff_AccountOff_Document", false, false, true, false},
      {"ClientOn_AccountOn_Metadata", true, true, false, false},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    auto t = location_table(options(r.client_multi_write, true, preferred3))
                 .with_account(fixture_account(r.account_multi_write), t0);
    EXPECT_EQ(t.can_support_multiple_write_locations(r.is_document),
              r.multi_write);
    partition_breaker b;
    attempt_loop_config cfg;
    cfg.kind = request_kind::write;
    cfg.op = op_kind::write;
    cfg.is_document = r.is_document;
    cfg.breaker = &b;
    attempt_loop loop{cfg, ladders};
    loop.set_partition(rid, "1");
    EXPECT_EQ(loop.breaker_applies(t), r.multi_write);
    // Reads consult it on every account.
    cfg.kind = request_kind::document_read;
    cfg.op = op_kind::read;
    attempt_loop read{cfg, ladders};
    read.set_partition(rid, "1");
    EXPECT_TRUE(read.breaker_applies(t));
    // A write opted in to hedging, with safe retries, hedges only there.
    hedging_options o;
    o.hedge_writes = true;
    hedge_request q;
    q.op = op_kind::write;
    q.multi_write_account = t.can_support_multiple_write_locations(true);
    q.write_retries_safe = true;
    q.region_count = hedge_regions(t, op_kind::write, {}, t0).size();
    auto skip = hedge_eligibility(o, q);
    if (r.is_document) {
      EXPECT_STREQ(to_string(skip),
                   r.multi_write ? "none" : "write_single_write");
    }
  }
}

// ===========================================================================
// Cross-region hedging
// ===========================================================================

// Rust is_final_result_403_is_final_regardless_of_sub_status, swept over
// substatuses. georoute keeps 403/3 (write forbidden / not the hub) and
// 403/1008 (region no longer serves the account) non-final: both are about
// the region (hedging.hpp), where the Rust driver makes only 1008 an
// exception.
TEST(SdkHedgeClassify, Forbidden403_FinalExceptRegionalSubstatuses) {
  for (int sub = 0; sub <= 6000; ++sub) {
    SCOPED_TRACE(sub);
    const bool regional = sub == 3 || sub == 1008;
    EXPECT_STREQ(name_of(classify_for_hedging(tf::none, 403, sub)),
                 regional ? "start_next" : "final_result");
  }
}

// Rust is_final_result_429_ru_budget_and_hot_partition_are_final and
// throttle_substatus_gates_hedge_eligibility: the RU-budget and
// hot-partition 429s end the operation; 429/3092 starts the next arm at
// once; every other 429 waits for the timer (.NET, Java and Python start
// the next arm on any 429).
TEST(SdkHedgeClassify, Throttle429_SubstatusDecides) {
  for (int sub = 0; sub <= 6000; ++sub) {
    SCOPED_TRACE(sub);
    const char* want = "wait_for_timer";
    if (sub == 3200 || sub == 3210 || sub == 3214) want = "final_result";
    if (sub == 3092) want = "start_next";
    EXPECT_STREQ(name_of(classify_for_hedging(tf::none, 429, sub)), want);
  }
}

// .NET IsFinalResult: every status below 400 and 404/0 are final; a 404
// with any other substatus (session not yet replicated, ...) is not.
TEST(SdkHedgeClassify, AnswersAndNotFound_Table) {
  for (int status = 100; status < 400; ++status) {
    SCOPED_TRACE(status);
    EXPECT_TRUE(final_for_hedging(tf::none, status, 0));
    EXPECT_TRUE(final_for_hedging(tf::none, status, 1002));
  }
  for (int sub = 0; sub <= 6000; ++sub) {
    SCOPED_TRACE(sub);
    EXPECT_STREQ(name_of(classify_for_hedging(tf::none, 404, sub)),
                 sub == 0 ? "final_result" : "start_next");
  }
}

// Rust should_hedge_write_never and should_hedge_excluded_to_one_region,
// .NET's "more than one read endpoint" and enableMultiWriteRegionHedge,
// with the regions taken from a real table: exclusions that leave one
// region stop hedging; writes hedge only when opted in, on a multi-write
// account, with safe retries (the Rust driver never hedges writes; the
// router never asks to).
TEST(SdkHedgeEligibility, FromTable_Table) {
  struct row {
    const char* name;
    bool multi_write;
    op_kind op;
    strings excluded;
    bool hedge_writes;
    bool safe;
    const char* expected;
  };
  const auto R = op_kind::read;
  const auto W = op_kind::write;
  const row rows[] = {
      {"Read_NoExclusions_Hedged", false, R, {}, false, false, "none"},
      {"Read_ExcludedToOneRegion_NotHedged",
       false,
       R,
       {"East US", "West US"},
       false,
       false,
       "single_region"},
      {"Read_ExcludedToTwoRegions_Hedged",
       false,
       R,
       {"East US"},
       false,
       false,
       "none"},
      {"Write_Default_NeverHedged",
       true,
       W,
       {},
       false,
       true,
       "write_not_opted_in"},
      {"Write_OptedInSingleWrite_NotHedged",
       false,
       W,
       {},
       true,
       true,
       "write_single_write"},
      {"Write_OptedInMultiWriteUnsafe_NotHedged",
       true,
       W,
       {},
       true,
       false,
       "write_not_retry_safe"},
      {"Write_OptedInMultiWriteSafe_Hedged", true, W, {}, true, true, "none"},
      {"Write_MultiWriteExcludedToOne_NotHedged",
       true,
       W,
       {"East US", "West US"},
       true,
       true,
       "single_region"},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    auto t = fixture(r.multi_write);
    hedging_options o;
    o.hedge_writes = r.hedge_writes;
    hedge_request q;
    q.op = r.op;
    q.multi_write_account = t.can_support_multiple_write_locations(true);
    q.write_retries_safe = r.safe;
    q.region_count = hedge_regions(t, r.op, r.excluded, t0).size();
    EXPECT_STREQ(to_string(hedge_eligibility(o, q)), r.expected);
  }
}

/// The regions that got an arm (the .NET "Hedge Context" datum).
strings contacted(const hedge_plan& p) {
  strings out;
  for (const auto& a : p.arms())
    if (a.state != arm_state::not_started) out.push_back(a.region);
  return out;
}

// .NET CosmosAvailabilityStrategyTests fault matrix (RetryWith, 500,
// 404/1002, timeout, splitting, migrating, 503, response delay, 429) and
// Java FaultInjectionWithAvailabilityStrategyTests: the primary (East US)
// meets the fault at 100 ms; a hedge to West US goes at once when the fault
// is not final, at the 1 s threshold when it says nothing (delay, plain
// throttle), and never when the primary's answer is final. West US answers
// 200 60 ms after it is sent. Expected: whether West is contacted, when,
// and which region's answer is the operation's.
TEST(SdkHedgePlan, FaultMatrix_WhenTheHedgeGoesAndWhoWins) {
  struct row {
    const char* name;
    std::optional<arm_outcome> primary; // nullopt: no answer (delay)
    std::optional<milliseconds> hedge_at;
    const char* winner;
  };
  const auto H = [](int s, int sub = 0) { return arm_outcome::http(s, sub); };
  const row rows[] = {
      {"RetryWith449", H(449), 100ms, "West US"},
      {"ServerError500", H(500), 100ms, "West US"},
      {"SessionNotAvailable404_1002", H(404, 1002), 100ms, "West US"},
      {"RequestTimeout408", H(408), 100ms, "West US"},
      {"Splitting410_1007", H(410, 1007), 100ms, "West US"},
      {"Migrating410_1008", H(410, 1008), 100ms, "West US"},
      {"ServiceUnavailable503", H(503), 100ms, "West US"},
      {"TransportTimeout", arm_outcome::timed_out(), 100ms, "West US"},
      {"ConnectionFailure", arm_outcome::connection_failure(), 100ms,
       "West US"},
      {"ResourceUnavailable429_3092", H(429, 3092), 100ms, "West US"},
      {"ResponseDelay", std::nullopt, 1000ms, "West US"},
      // georoute: a plain throttle waits for the timer (.NET hedges at once).
      {"Throttled429", H(429), 1000ms, "West US"},
      // Final answers of the primary: nothing else is sent
      // (AvailabilityStrategyNoTriggerTest).
      {"Ok200", H(200), std::nullopt, "East US"},
      {"NotFound404", H(404), std::nullopt, "East US"},
      {"Conflict409", H(409), std::nullopt, "East US"},
      {"RuBudget429_3200", H(429, 3200), std::nullopt, "East US"},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    hedge_plan p{{"East US", "West US"}, {1000ms, 500ms}, t0};
    if (r.primary) p.on_result(0, *r.primary, 1, t0 + 100ms);
    auto next = p.next_start();
    ASSERT_EQ(next.has_value(), r.hedge_at.has_value());
    if (!next) {
      EXPECT_TRUE(p.finished());
      EXPECT_EQ(contacted(p), strings{"East US"});
      EXPECT_EQ(p.arms()[*p.result_arm()].region, r.winner);
      continue;
    }
    EXPECT_EQ(next->at, t0 + *r.hedge_at);
    auto sent_at = next->at;
    ASSERT_EQ(p.start_next(sent_at), 1u);
    EXPECT_EQ(contacted(p), (strings{"East US", "West US"}));
    p.on_result(1, arm_outcome::http(200), 1, sent_at + 60ms);
    ASSERT_TRUE(p.finished());
    EXPECT_EQ(p.arms()[*p.result_arm()].region, r.winner);
    EXPECT_EQ(p.summary().hedges_won, 1u);
  }
}

// .NET FaultedHedgeTask_DoesNotAbortWhenOtherRegionSucceeds: one arm ending
// without an answer (or with a non-final one) never ends the operation
// while another arm can still succeed, whichever arm it is.
TEST(SdkHedgePlan, FailedArm_OtherRegionSucceeds_Table) {
  struct row {
    const char* name;
    std::size_t failing_arm;
    arm_outcome failure;
  };
  const row rows[] = {
      {"PrimaryConnectionFailure", 0, arm_outcome::connection_failure()},
      {"PrimaryTimeout", 0, arm_outcome::timed_out()},
      {"Primary503", 0, arm_outcome::http(503)},
      {"HedgeConnectionFailure", 1, arm_outcome::connection_failure()},
      {"HedgeTimeout", 1, arm_outcome::timed_out()},
      {"Hedge503", 1, arm_outcome::http(503)},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    hedge_plan p{{"East US", "West US"}, {1000ms, 500ms}, t0};
    ASSERT_EQ(p.start_next(t0 + 1s), 1u);
    p.on_result(r.failing_arm, r.failure, 0, t0 + 1100ms);
    EXPECT_FALSE(p.finished());
    const std::size_t other = 1 - r.failing_arm;
    p.on_result(other, arm_outcome::http(200), 1, t0 + 1200ms);
    ASSERT_TRUE(p.finished());
    EXPECT_EQ(p.result_arm(), other);
    EXPECT_EQ(p.arms()[other].outcome.status, 200);
  }
}

// .NET PrimaryCompletesBeforeThreshold_HedgeContextContainsSingleRegion and
// HedgeTriggered_HedgeContextContainsMultipleRegions: the arms record
// exactly the regions that were sent a request, in order.
TEST(SdkHedgePlan, HedgeContext_ListsExactlyTheRegionsSent) {
  struct row {
    const char* name;
    milliseconds primary_answer; // East answers 200 then
    strings expected;
  };
  const row rows[] = {
      {"BeforeThreshold_OneRegion", 999ms, {"East US"}},
      {"AfterThreshold_TwoRegions", 1200ms, {"East US", "West US"}},
      {"AfterStep_ThreeRegions",
       1600ms,
       {"East US", "West US", "North Europe"}},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    hedge_plan p{{"East US", "West US", "North Europe"}, {1000ms, 500ms}, t0};
    auto answer = t0 + r.primary_answer;
    while (auto n = p.next_start()) {
      if (n->at > answer) break;
      p.start_next(n->at);
    }
    p.on_result(0, arm_outcome::http(200), 1, answer);
    ASSERT_TRUE(p.finished());
    EXPECT_EQ(p.result_arm(), 0u);
    EXPECT_EQ(contacted(p), r.expected);
    EXPECT_EQ(p.summary().hedges_won, 0u);
  }
}

// ===========================================================================
// Metadata hedging
// ===========================================================================

// .NET MetadataHedgingStrategyTests at the level of statuses (the primary
// is the first region, the hedge the second; pending: the primary has not
// answered yet). The hedge's result replaces the primary's only when it is
// a success while the primary is out, or once the primary failed for its
// region's sake.
//
// One deliberate difference: .NET rejects a 401 or plain 403 from the hedge
// even after the primary failed regionally (its reason: a region-scoped
// RBAC misconfiguration must not surface as the result), and answers the
// primary's 503. georoute signs with the account's master key, valid or
// not in every region (hedging.hpp, actors/README.md "Metadata hedging"),
// so after a regional failure of the primary the hedge's 401 is the true
// answer and is taken.
TEST(SdkMetadataHedge, Winner_ByStatus_Table) {
  struct side {
    transport_fault fault;
    int status, substatus;
  };
  struct row {
    const char* name;
    std::optional<side> primary;
    side hedge;
    bool hedge_wins;
  };
  const side ok{tf::none, 200, 0};
  const row rows[] = {
      // HedgeAuthRejectYieldsPrimaryOutcome, primary still out: a 401 never
      // wins by itself.
      {"HedgeUnauthorized_PrimaryPending",
       std::nullopt,
       {tf::none, 401, 0},
       false},
      {"HedgeForbidden_PrimaryPending",
       std::nullopt,
       {tf::none, 403, 0},
       false},
      // The difference described above: taken after a regional failure.
      {"HedgeUnauthorized_PrimaryFailed503_Taken",
       side{tf::none, 503, 0},
       {tf::none, 401, 0},
       true},
      {"HedgeForbidden_PrimaryFailed503_Taken",
       side{tf::none, 503, 0},
       {tf::none, 403, 0},
       true},
      // FastPrimaryDefinitiveErrorIsNeverOverriddenByHedge, by status.
      {"PrimaryNotFound_HedgeOk", side{tf::none, 404, 0}, ok, false},
      {"PrimaryUnauthorized_HedgeOk", side{tf::none, 401, 0}, ok, false},
      {"PrimaryForbidden_HedgeOk", side{tf::none, 403, 0}, ok, false},
      {"PrimaryThrottled_HedgeOk", side{tf::none, 429, 0}, ok, false},
      {"PrimaryPartitionGone410_1002_HedgeOk", side{tf::none, 410, 1002}, ok,
       false},
      // PrimaryRegionalFailureHedgeWins / PrimaryConnectionFailureHedgeWins,
      // by status (502, 504 and 408 are regional in georoute too).
      {"Primary503_HedgeOk", side{tf::none, 503, 0}, ok, true},
      {"Primary500_HedgeOk", side{tf::none, 500, 0}, ok, true},
      {"Primary502_HedgeOk", side{tf::none, 502, 0}, ok, true},
      {"Primary504_HedgeOk", side{tf::none, 504, 0}, ok, true},
      {"Primary408_HedgeOk", side{tf::none, 408, 0}, ok, true},
      {"Primary410_1022_HedgeOk", side{tf::none, 410, 1022}, ok, true},
      {"Primary403_1008_HedgeOk", side{tf::none, 403, 1008}, ok, true},
      {"PrimaryRefused_HedgeOk", side{tf::connection, 0, 0}, ok, true},
      {"PrimaryTimedOut_HedgeOk", side{tf::timeout, 0, 0}, ok, true},
      // HedgeDidNotWinReportsHedgeWonFalse: the primary's own success.
      {"PrimaryOk_HedgeOk", ok, ok, false},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    std::optional<metadata_outcome> primary;
    if (r.primary)
      primary = classify_metadata_outcome(r.primary->fault, r.primary->status,
                                          r.primary->substatus);
    auto hedge = classify_metadata_outcome(r.hedge.fault, r.hedge.status,
                                           r.hedge.substatus);
    EXPECT_EQ(metadata_hedge_wins(primary, hedge), r.hedge_wins);
  }
}

// Rust driver: 32 metadata hedges in flight at most; an operation refused a
// slot goes on alone and does not queue for the next free slot.
TEST(SdkMetadataHedge, Budget32_RefusedOperationDoesNotQueue) {
  const hedging_options defaults;
  metadata_hedge_budget b{defaults.metadata.max_concurrent};
  for (int i = 0; i < 32; ++i)
    ASSERT_TRUE(b.try_acquire()) << i;
  // The 33rd cold lookup: refused at once, counted.
  EXPECT_FALSE(b.try_acquire());
  EXPECT_EQ(b.refused(), 1u);
  // A slot frees: nobody waiting takes it; a new operation may.
  EXPECT_TRUE(b.release());
  EXPECT_EQ(b.in_use(), 31u);
  EXPECT_TRUE(b.try_acquire());
  EXPECT_EQ(b.in_use(), 32u);
  EXPECT_EQ(b.acquired(), 33u);
}

} // namespace
} // namespace sdk_ports_test
