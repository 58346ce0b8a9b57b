// Cross-region hedging, the pure rules: the final-result classification, the
// eligibility and regions of an operation, the thresholds (static, derived,
// adaptive), the metadata hedge's rules and the options.

#include "georoute/actors/policy/hedging.hpp"
#include "georoute/actors/policy/write_copy.hpp"
#include "location_fixture.hpp"
#include "tests/policy/hedge_class_print.hpp"

#include <cmath>
#include <gtest/gtest.h>
#include <ostream>
#include <string>
#include <vector>

namespace georoute {

// Readable names in failure messages (found by ADL); hedge_class's is in
// hedge_class_print.hpp.
inline void PrintTo(hedge_skip x, std::ostream* os) {
  *os << to_string(x);
}

inline void PrintTo(metadata_outcome x, std::ostream* os) {
  static const char* names[] = {"success", "definitive_error",
                                "regional_failure"};
  *os << names[static_cast<int>(x)];
}

} // namespace georoute

namespace {

using namespace georoute;
using namespace std::chrono_literals;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using strings = std::vector<std::string>;
using tf = transport_fault;
using hc = hedge_class;

// -- final results ---------------------------------------------------------

TEST(HedgeResult, Classify_EveryListedStatus_Table) {
  struct row {
    const char* name;
    transport_fault fault;
    int status, substatus;
    hedge_class expected;
  };
  const row rows[] = {
      // Answers: final.
      {"Ok200_Final", tf::none, 200, 0, hc::final_result},
      {"Created201_Final", tf::none, 201, 0, hc::final_result},
      {"NoContent204_Final", tf::none, 204, 0, hc::final_result},
      {"NotModified304_Final", tf::none, 304, 0, hc::final_result},
      // The .NET final set: the request or the data decided.
      {"BadRequest400_Final", tf::none, 400, 0, hc::final_result},
      {"Unauthorized401_Final", tf::none, 401, 0, hc::final_result},
      {"NotFound404_0_Final", tf::none, 404, 0, hc::final_result},
      {"MethodNotAllowed405_Final", tf::none, 405, 0, hc::final_result},
      {"Conflict409_Final", tf::none, 409, 0, hc::final_result},
      {"PreconditionFailed412_Final", tf::none, 412, 0, hc::final_result},
      {"TooLarge413_Final", tf::none, 413, 0, hc::final_result},
      // The Rust additions: another region cannot change them.
      {"Forbidden403_0_Final", tf::none, 403, 0, hc::final_result},
      {"Forbidden403_5300_Final", tf::none, 403, 5300, hc::final_result},
      {"Unprocessable422_Final", tf::none, 422, 0, hc::final_result},
      {"Legal451_Final", tf::none, 451, 0, hc::final_result},
      {"NotImplemented501_Final", tf::none, 501, 0, hc::final_result},
      {"HttpVersion505_Final", tf::none, 505, 0, hc::final_result},
      {"Throttled429_3200_Final", tf::none, 429, 3200, hc::final_result},
      {"Throttled429_3210_Final", tf::none, 429, 3210, hc::final_result},
      {"Throttled429_3214_Final", tf::none, 429, 3214, hc::final_result},
      // Regional 403s: another region may answer.
      {"WriteForbidden403_3_StartNext", tf::none, 403, 3, hc::start_next},
      {"AccountNotFound403_1008_StartNext", tf::none, 403, 1008,
       hc::start_next},
      // Not final, next arm at once.
      {"SessionNotAvailable404_1002_StartNext", tf::none, 404, 1002,
       hc::start_next},
      {"NotFound404_1003_StartNext", tf::none, 404, 1003, hc::start_next},
      {"Timeout408_StartNext", tf::none, 408, 0, hc::start_next},
      {"Gone410_0_StartNext", tf::none, 410, 0, hc::start_next},
      {"PartitionGone410_1002_StartNext", tf::none, 410, 1002, hc::start_next},
      {"LeaseNotFound410_1022_StartNext", tf::none, 410, 1022, hc::start_next},
      {"RetryWith449_StartNext", tf::none, 449, 0, hc::start_next},
      {"ServerError500_StartNext", tf::none, 500, 0, hc::start_next},
      {"BadGateway502_StartNext", tf::none, 502, 0, hc::start_next},
      {"Unavailable503_StartNext", tf::none, 503, 0, hc::start_next},
      {"Unavailable503_20003_StartNext", tf::none, 503, 20003, hc::start_next},
      {"GatewayTimeout504_StartNext", tf::none, 504, 0, hc::start_next},
      {"ResourceUnavailable429_3092_StartNext", tf::none, 429, 3092,
       hc::start_next},
      {"Unlisted418_StartNext", tf::none, 418, 0, hc::start_next},
      {"NoStatus_StartNext", tf::none, 0, 0, hc::start_next},
      {"ConnectionFailure_StartNext", tf::connection, 0, 0, hc::start_next},
      {"Timeout_StartNext", tf::timeout, 0, 0, hc::start_next},
      // A fault wins over a stale status.
      {"ConnectionWithStatus200_StartNext", tf::connection, 200, 0,
       hc::start_next},
      // Throttles: not final, the next arm waits for its time.
      {"Throttled429_0_WaitForTimer", tf::none, 429, 0, hc::wait_for_timer},
      {"Throttled429_3101_WaitForTimer", tf::none, 429, 3101,
       hc::wait_for_timer},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(classify_for_hedging(r.fault, r.status, r.substatus), r.expected);
    EXPECT_EQ(final_for_hedging(r.fault, r.status, r.substatus),
              r.expected == hc::final_result);
    EXPECT_EQ(starts_next_arm_early(r.fault, r.status, r.substatus),
              r.expected == hc::start_next);
  }
}

TEST(HedgeResult, FinalAndEarly_EveryStatus_NeverBoth) {
  for (int status = 0; status < 600; ++status)
    for (int sub : {0, 3, 1002, 1008, 1022, 3092, 3200}) {
      SCOPED_TRACE(std::to_string(status) + "/" + std::to_string(sub));
      EXPECT_FALSE(final_for_hedging(tf::none, status, sub) &&
                   starts_next_arm_early(tf::none, status, sub));
    }
}

// -- eligibility -----------------------------------------------------------

TEST(HedgeEligibility, Table) {
  struct row {
    const char* name;
    bool enabled, hedge_writes;
    std::optional<bool> req_enabled, req_writes;
    op_kind op;
    bool multi_write, safe;
    std::size_t regions;
    hedge_skip expected;
  };
  const auto R = op_kind::read;
  const auto W = op_kind::write;
  const std::nullopt_t _ = std::nullopt;
  const row rows[] = {
      {"Read_Enabled_TwoRegions_Hedges", true, false, _, _, R, false, false, 2,
       hedge_skip::none},
      {"Read_Enabled_ThreeRegions_Hedges", true, false, _, _, R, false, false,
       3, hedge_skip::none},
      {"Read_OneRegion_SingleRegion", true, false, _, _, R, false, false, 1,
       hedge_skip::single_region},
      {"Read_NoRegion_SingleRegion", true, false, _, _, R, false, false, 0,
       hedge_skip::single_region},
      {"Read_Disabled_Disabled", false, false, _, _, R, false, false, 3,
       hedge_skip::disabled},
      {"Read_DisabledRequestEnables_Hedges", false, false, true, _, R, false,
       false, 3, hedge_skip::none},
      {"Read_EnabledRequestDisables_Disabled", true, false, false, _, R, false,
       false, 3, hedge_skip::disabled},
      {"Read_HedgeWritesIrrelevant_Hedges", true, true, _, _, R, true, true, 2,
       hedge_skip::none},
      // Writes: never unless opted in, multi-write, retry-safe.
      {"Write_NotOptedIn_Refused", true, false, _, _, W, true, true, 3,
       hedge_skip::write_not_opted_in},
      {"Write_OptedInSingleWrite_Refused", true, true, _, _, W, false, true, 3,
       hedge_skip::write_single_write},
      {"Write_OptedInMultiWriteUnsafe_Refused", true, true, _, _, W, true,
       false, 3, hedge_skip::write_not_retry_safe},
      {"Write_OptedInMultiWriteSafe_Hedges", true, true, _, _, W, true, true, 2,
       hedge_skip::none},
      {"Write_AllSetOneRegion_SingleRegion", true, true, _, _, W, true, true, 1,
       hedge_skip::single_region},
      {"Write_RequestOptsIn_Hedges", true, false, _, true, W, true, true, 2,
       hedge_skip::none},
      {"Write_RequestOptsOut_Refused", true, true, _, false, W, true, true, 2,
       hedge_skip::write_not_opted_in},
      {"Write_Disabled_Disabled", false, true, _, _, W, true, true, 2,
       hedge_skip::disabled},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    hedging_options o;
    o.enabled = r.enabled;
    o.hedge_writes = r.hedge_writes;
    hedge_request q;
    q.op = r.op;
    q.multi_write_account = r.multi_write;
    q.write_retries_safe = r.safe;
    q.region_count = r.regions;
    q.request.enabled = r.req_enabled;
    q.request.hedge_writes = r.req_writes;
    EXPECT_EQ(hedge_eligibility(o, q), r.expected);
  }
}

TEST(HedgeRegions, FromTable_Table) {
  using namespace location_fixture;
  struct row {
    const char* name;
    bool multi_write;
    op_kind op;
    strings excluded;
    strings expected;
  };
  const row rows[] = {
      {"Read_NoExclusions_PreferredOrder",
       false,
       op_kind::read,
       {},
       {"East US", "West US", "North Europe"}},
      {"Read_ExcludeEast_RestInOrder",
       false,
       op_kind::read,
       {"East US"},
       {"West US", "North Europe"}},
      {"Read_ExcludeCaseInsensitive_Removed",
       false,
       op_kind::read,
       {"east us", "NORTH EUROPE"},
       {"West US"}},
      {"Read_ExcludedToOne_OneRegion",
       false,
       op_kind::read,
       {"East US", "West US"},
       {"North Europe"}},
      {"Read_ExcludeAll_FallbackOnly",
       false,
       op_kind::read,
       {"East US", "West US", "North Europe"},
       {"East US"}},
      {"Write_SingleWrite_AccountWriteOrder",
       false,
       op_kind::write,
       {},
       {"East US", "West US", "North Europe"}},
      {"Write_MultiWriteExcludeWest_Rest",
       true,
       op_kind::write,
       {"West US"},
       {"East US", "North Europe"}},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    auto t = fixture(r.multi_write);
    EXPECT_EQ(hedge_regions(t, r.op, r.excluded, t0), r.expected);
  }
}

TEST(HedgeRegions, MarkedRegion_LeftOut) {
  using namespace location_fixture;
  auto t = fixture().with_mark(east, true, false, t0);
  EXPECT_EQ(hedge_regions(t, op_kind::read, {}, t0),
            (strings{"West US", "North Europe"}));
  // A write mark does not keep reads away.
  auto w = fixture().with_mark(east, false, true, t0);
  EXPECT_EQ(hedge_regions(w, op_kind::read, {}, t0),
            (strings{"East US", "West US", "North Europe"}));
}

TEST(HedgeRegions, ExcludedDownToOneRegion_NoHedge) {
  using namespace location_fixture;
  auto t = fixture();
  hedge_request q;
  q.region_count =
      hedge_regions(t, op_kind::read, {"East US", "North Europe"}, t0).size();
  hedging_options on;
  on.enabled = true;
  EXPECT_EQ(hedge_eligibility(on, q), hedge_skip::single_region);
  q.region_count = hedge_regions(t, op_kind::read, {"East US"}, t0).size();
  EXPECT_EQ(hedge_eligibility(on, q), hedge_skip::none);
}

TEST(HedgeRegions, DiscoveryOff_OneRegion) {
  using namespace location_fixture;
  auto t = fixture(false, false);
  EXPECT_EQ(hedge_regions(t, op_kind::read, {}, t0).size(), 1u);
}

TEST(HedgeRegions, ArmExclusions_Table) {
  const strings regions = {"East US", "West US", "North Europe"};
  struct row {
    const char* name;
    strings user;
    std::size_t arm;
    strings expected;
  };
  const row rows[] = {
      {"Arm0_NoUserExclusions_None", {}, 0, {}},
      {"Arm0_UserExclusions_KeptOnly",
       {"Southeast Asia"},
       0,
       {"Southeast Asia"}},
      {"Arm1_ExcludesOthers", {}, 1, {"East US", "North Europe"}},
      {"Arm2_ExcludesOthers", {}, 2, {"East US", "West US"}},
      {"Arm1_UserExclusionsKeptFirst",
       {"Southeast Asia"},
       1,
       {"Southeast Asia", "East US", "North Europe"}},
      {"Arm1_UserAlreadyExcludesOne_NoDuplicate",
       {"east us"},
       1,
       {"east us", "North Europe"}},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(arm_exclusions(r.user, regions, r.arm), r.expected);
  }
}

// -- thresholds ------------------------------------------------------------

TEST(HedgeThreshold, Default_FirstRung_CapsAt1sHalvesShort) {
  struct row {
    const char* name;
    timeout_ladder ladder;
    milliseconds expected;
  };
  const row rows[] = {
      {"Empty_1s", {}, 1000ms},
      {"Rung65s_CappedAt1s", {{65s, 0s}}, 1000ms},
      {"Rung6s_CappedAt1s", {{6s, 0s}, {6s, 0s}}, 1000ms},
      {"Rung2s_Exactly1s", {{2s, 0s}}, 1000ms},
      {"Rung1500ms_Halved", {{1500ms, 0s}}, 750ms},
      {"Rung1s_Halved", {{1s, 0s}, {5s, 1s}}, 500ms},
      {"Rung3ms_Halved", {{3ms, 0s}}, 1ms},
      {"Rung1ms_AtLeast1ms", {{1ms, 0s}}, 1ms},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(default_hedge_threshold(r.ladder), r.expected);
  }
}

TEST(HedgeThreshold, Default_ReferenceLadders_Values) {
  const timeout_ladders l;
  EXPECT_EQ(default_hedge_threshold(l.default_ladder), 1000ms);
  EXPECT_EQ(default_hedge_threshold(l.partition_failover), 1000ms);
  EXPECT_EQ(default_hedge_threshold(l.hot_path), 500ms);
}

TEST(HedgeThreshold, Static_OptionWinsOverLadder) {
  hedging_options o;
  const timeout_ladder ladder{{1s, 0s}};
  EXPECT_EQ(static_hedge_threshold(o, ladder), 500ms);
  o.threshold = 800ms;
  EXPECT_EQ(static_hedge_threshold(o, ladder), 800ms);
}

TEST(HedgeThreshold, Adaptive_Table) {
  struct row {
    const char* name;
    std::optional<microseconds> p99;
    milliseconds static_threshold;
    milliseconds expected;
  };
  const row rows[] = {
      {"TooFewSamples_Static", std::nullopt, 1000ms, 1000ms},
      {"Fast5ms_LowerBound", microseconds{5000}, 1000ms, 50ms},
      {"Fast25ms_LowerBound", microseconds{25000}, 1000ms, 50ms},
      {"Mid100ms_Doubled", microseconds{100000}, 1000ms, 200ms},
      {"Mid400_1ms_DoubledRoundedUp", microseconds{400100}, 1000ms, 801ms},
      {"Slow500ms_ExactlyStatic", microseconds{500000}, 1000ms, 1000ms},
      {"Slow800ms_CappedAtStatic", microseconds{800000}, 1000ms, 1000ms},
      {"Huge_CappedAtStatic", microseconds{3600000000}, 1000ms, 1000ms},
      {"StaticBelowLowerBound_StaticWins", microseconds{5000}, 30ms, 30ms},
      {"Zero_LowerBound", microseconds{0}, 1000ms, 50ms},
  };
  const adaptive_hedge_options a;
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(adaptive_hedge_threshold(a, r.p99, r.static_threshold),
              r.expected);
  }
}

TEST(HedgeThreshold, ChooseTiming_Table) {
  struct row {
    const char* name;
    hedge_threshold_mode mode;
    std::optional<milliseconds> option_threshold;
    hedge_override request;
    std::optional<microseconds> p99;
    milliseconds threshold, step;
  };
  const auto S = hedge_threshold_mode::static_threshold;
  const auto A = hedge_threshold_mode::adaptive;
  const microseconds fast{5000};
  const row rows[] = {
      {"Static_Defaults_1sAnd500ms", S, {}, {}, {}, 1000ms, 500ms},
      {"Static_IgnoresPercentile", S, {}, {}, fast, 1000ms, 500ms},
      {"Static_Option", S, 700ms, {}, fast, 700ms, 500ms},
      {"Adaptive_Fast_LowerBound", A, {}, {}, fast, 50ms, 500ms},
      {"Adaptive_TooFew_Static", A, {}, {}, {}, 1000ms, 500ms},
      {"Adaptive_CappedByOption",
       A,
       300ms,
       {},
       microseconds{200000},
       300ms,
       500ms},
      {"Request_ThresholdWinsOverAdaptive",
       A,
       {},
       {{}, {}, 20ms, {}},
       fast,
       20ms,
       500ms},
      {"Request_ThresholdWinsOverStatic",
       S,
       700ms,
       {{}, {}, 2000ms, {}},
       {},
       2000ms,
       500ms},
      {"Request_Step", S, {}, {{}, {}, {}, 100ms}, {}, 1000ms, 100ms},
  };
  const timeout_ladders ladders;
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    hedging_options o;
    o.mode = r.mode;
    o.threshold = r.option_threshold;
    auto t =
        choose_hedge_timing(o, r.request, ladders.partition_failover, r.p99);
    EXPECT_EQ(t.threshold, r.threshold);
    EXPECT_EQ(t.step, r.step);
  }
}

// -- metadata hedging ------------------------------------------------------

const strings three = {"East US", "West US", "North Europe"};
TEST(MetadataHedge, Applies_Table) {
  struct row {
    const char* name;
    uint32_t budget;
    request_kind kind;
    bool first_page;
    std::size_t regions;
    bool expected;
  };
  const row rows[] = {
      {"CollectionRead_TwoRegions_Applies", 32, request_kind::metadata_read,
       true, 2, true},
      {"SingleRegionSkipsHedging", 32, request_kind::metadata_read, true, 1,
       false},
      {"QueryPlan_Applies", 32, request_kind::query_plan, true, 3, true},
      {"PkrangesFirstPage_Applies", 32, request_kind::pkranges_read, true, 2,
       true},
      {"NonFirstReadFeedPageSkipsHedging", 32, request_kind::pkranges_read,
       false, 2, false},
      {"BudgetZero_Disabled", 0, request_kind::metadata_read, true, 3, false},
      {"DocumentRead_DataPlaneNotMetadata", 32, request_kind::document_read,
       true, 3, false},
      {"Write_Never", 32, request_kind::write, true, 3, false},
      {"AccountRead_Never", 32, request_kind::account_read, true, 3, false},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    metadata_hedge_options o;
    o.max_concurrent = r.budget;
    EXPECT_EQ(metadata_hedge_applies(o, r.kind, r.first_page, r.regions),
              r.expected);
  }
}

TEST(MetadataHedge, ThresholdSitsBetweenFirstAndSecondHttpTimeouts) {
  const metadata_hedge_options o;
  const timeout_ladders l;
  EXPECT_EQ(o.threshold, 1500ms);
  EXPECT_GT(o.threshold, l.hot_path[0].timeout);
  EXPECT_LT(o.threshold, l.hot_path[1].timeout);
}

TEST(MetadataHedge, Region_FirstOtherThanPrimary) {
  EXPECT_EQ(metadata_hedge_region(three, "East US"), "West US");
  EXPECT_EQ(metadata_hedge_region(three, "west us"), "East US");
  EXPECT_EQ(metadata_hedge_region({"East US"}, "EAST US"), std::nullopt);
  EXPECT_EQ(metadata_hedge_region({}, "East US"), std::nullopt);
}

TEST(MetadataHedge, ClassifyOutcome_Table) {
  using mo = metadata_outcome;
  struct row {
    const char* name;
    transport_fault fault;
    int status, substatus;
    metadata_outcome expected;
  };
  const row rows[] = {
      {"Ok200_Success", tf::none, 200, 0, mo::success},
      {"NotModified304_Success", tf::none, 304, 0, mo::success},
      {"Unauthorized401_Definitive", tf::none, 401, 0, mo::definitive_error},
      {"NotFound404_Definitive", tf::none, 404, 0, mo::definitive_error},
      {"BadRequest400_Definitive", tf::none, 400, 0, mo::definitive_error},
      {"Conflict409_Definitive", tf::none, 409, 0, mo::definitive_error},
      {"Throttled429_Definitive", tf::none, 429, 0, mo::definitive_error},
      {"Forbidden403_0_Definitive", tf::none, 403, 0, mo::definitive_error},
      {"PartitionGone410_1002_Definitive", tf::none, 410, 1002,
       mo::definitive_error},
      {"Unavailable503_Regional", tf::none, 503, 0, mo::regional_failure},
      {"ServerError500_Regional", tf::none, 500, 0, mo::regional_failure},
      {"LeaseNotFound410_1022_Regional", tf::none, 410, 1022,
       mo::regional_failure},
      {"AccountNotFound403_1008_Regional", tf::none, 403, 1008,
       mo::regional_failure},
      {"BadGateway502_Regional", tf::none, 502, 0, mo::regional_failure},
      {"GatewayTimeout504_Regional", tf::none, 504, 0, mo::regional_failure},
      {"Timeout408_Regional", tf::none, 408, 0, mo::regional_failure},
      {"NoStatus_Regional", tf::none, 0, 0, mo::regional_failure},
      {"Connection_Regional", tf::connection, 0, 0, mo::regional_failure},
      {"Timeout_Regional", tf::timeout, 0, 0, mo::regional_failure},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(classify_metadata_outcome(r.fault, r.status, r.substatus),
              r.expected);
  }
}

TEST(MetadataHedge, Winner_Table) {
  auto kind = [](transport_fault f, int status, int sub = 0) {
    return classify_metadata_outcome(f, status, sub);
  };
  const auto ok = kind(tf::none, 200);
  const auto e401 = kind(tf::none, 401);
  const auto e404 = kind(tf::none, 404);
  const auto e503 = kind(tf::none, 503);
  const auto conn = kind(tf::connection, 0);
  const std::optional<metadata_outcome> pending;
  struct row {
    const char* name;
    std::optional<metadata_outcome> primary;
    metadata_outcome hedge;
    bool hedge_wins;
  };
  const row rows[] = {
      {"SlowPrimaryTriggersHedgeThatWins", pending, ok, true},
      {"HedgeAuthRejectYieldsPrimaryOutcome", pending, e401, false},
      {"HedgeNotFoundWaitsForPrimary", pending, e404, false},
      {"HedgeRegionalFailureWaitsForPrimary", pending, e503, false},
      {"FastPrimaryDefinitiveErrorIsNeverOverriddenByHedge", e404, ok, false},
      {"PrimaryAuthRejectIsNeverOverriddenByHedge", e401, ok, false},
      {"SlowPrimaryDefinitiveErrorArrivingFirstWinsOverInFlightHedge", e404,
       e503, false},
      {"PrimarySuccessWins", ok, ok, false},
      {"PrimaryRegionalFailureHedgeWins", e503, ok, true},
      {"PrimaryConnectionFailureHedgeWins", conn, ok, true},
      {"PrimaryTimeoutHedgeWins", kind(tf::timeout, 0), ok, true},
      {"PrimaryLeaseNotFoundHedgeWins", kind(tf::none, 410, 1022), ok, true},
      {"PrimaryAccountNotFoundHedgeWins", kind(tf::none, 403, 1008), ok, true},
      {"PrimaryServerErrorHedgeWins", kind(tf::none, 500), ok, true},
      {"PrimaryRegionalFailureHedgeNotFoundTaken", e503, e404, true},
      {"PrimaryRegionalFailureHedgeRegionalTaken", e503, conn, true},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(metadata_hedge_wins(r.primary, r.hedge), r.hedge_wins);
  }
}

// -- options ---------------------------------------------------------------

TEST(HedgingOptions, Defaults_DocumentedValues) {
  const hedging_options o;
  EXPECT_TRUE(o.enabled);
  EXPECT_FALSE(o.hedge_writes);
  EXPECT_EQ(o.threshold, std::nullopt);
  EXPECT_EQ(o.step, 500ms);
  EXPECT_EQ(o.mode, hedge_threshold_mode::static_threshold);
  EXPECT_DOUBLE_EQ(o.adaptive.percentile, 0.99);
  EXPECT_DOUBLE_EQ(o.adaptive.factor, 2.0);
  EXPECT_EQ(o.adaptive.lower_bound, 50ms);
  EXPECT_EQ(o.adaptive.window, 256u);
  EXPECT_EQ(o.adaptive.min_samples, 50u);
  EXPECT_DOUBLE_EQ(o.budget.share, 0.10);
  EXPECT_EQ(o.budget.window, 10s);
  EXPECT_EQ(o.budget.bucket, 1s);
  EXPECT_EQ(o.budget.min_allowance, 3u);
  EXPECT_EQ(o.metadata.threshold, 1500ms);
  EXPECT_EQ(o.metadata.max_concurrent, 32u);
  EXPECT_TRUE(o.validate().empty());
}

TEST(HedgingOptions, Validate_EachField_NamesIt) {
  struct row {
    const char* name;
    void (*edit)(hedging_options&);
    const char* field; // empty: valid
  };
  const row rows[] = {
      {"Threshold0", [](hedging_options& o) { o.threshold = 0ms; },
       "hedging.threshold = 0s"},
      {"ThresholdNegative", [](hedging_options& o) { o.threshold = -5ms; },
       "hedging.threshold"},
      {"Threshold1ms_Valid", [](hedging_options& o) { o.threshold = 1ms; }, ""},
      {"Step0", [](hedging_options& o) { o.step = 0ms; }, "hedging.step"},
      {"Percentile1", [](hedging_options& o) { o.adaptive.percentile = 1; },
       "hedging.adaptive.percentile"},
      {"Percentile0", [](hedging_options& o) { o.adaptive.percentile = 0; },
       "hedging.adaptive.percentile"},
      {"PercentileNaN",
       [](hedging_options& o) { o.adaptive.percentile = std::nan(""); },
       "hedging.adaptive.percentile"},
      {"FactorBelow1", [](hedging_options& o) { o.adaptive.factor = 0.5; },
       "hedging.adaptive.factor"},
      {"Factor1_Valid", [](hedging_options& o) { o.adaptive.factor = 1; }, ""},
      {"LowerBound0", [](hedging_options& o) { o.adaptive.lower_bound = 0ms; },
       "hedging.adaptive.lower_bound"},
      {"Window0", [](hedging_options& o) { o.adaptive.window = 0; },
       "hedging.adaptive.window"},
      {"WindowHuge", [](hedging_options& o) { o.adaptive.window = 1u << 20; },
       "hedging.adaptive.window"},
      {"MinSamples0", [](hedging_options& o) { o.adaptive.min_samples = 0; },
       "hedging.adaptive.min_samples"},
      {"MinSamplesAboveWindow",
       [](hedging_options& o) { o.adaptive.min_samples = 257; },
       "hedging.adaptive.min_samples"},
      {"ShareNegative", [](hedging_options& o) { o.budget.share = -0.1; },
       "hedging.budget.share"},
      {"ShareAbove1", [](hedging_options& o) { o.budget.share = 1.5; },
       "hedging.budget.share"},
      {"Share0_Valid", [](hedging_options& o) { o.budget.share = 0; }, ""},
      {"BudgetWindow0", [](hedging_options& o) { o.budget.window = 0ms; },
       "hedging.budget.window"},
      {"BudgetBucket0", [](hedging_options& o) { o.budget.bucket = 0ms; },
       "hedging.budget.bucket"},
      {"BudgetWindowNotWholeBuckets",
       [](hedging_options& o) { o.budget.window = 10500ms; },
       "hedging.budget.window = 10500ms"},
      {"BudgetTooManyBuckets",
       [](hedging_options& o) { o.budget.bucket = 1ms; },
       "hedging.budget.window"},
      {"MetadataThreshold0",
       [](hedging_options& o) { o.metadata.threshold = 0ms; },
       "hedging.metadata.threshold"},
      {"MetadataBudget0_Valid",
       [](hedging_options& o) { o.metadata.max_concurrent = 0; }, ""},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    hedging_options o;
    r.edit(o);
    auto problems = o.validate();
    if (std::string{r.field}.empty()) {
      EXPECT_TRUE(problems.empty());
      continue;
    }
    ASSERT_EQ(problems.size(), 1u);
    EXPECT_EQ(problems[0].rfind(r.field, 0), 0u) << problems[0];
  }
}

} // namespace

namespace {

// Which writes may be hedged: only those whose second copy cannot be told
// apart from the first (an upsert or a replace without a precondition).
TEST(WriteCopy, Safe_Table) {
  using georoute::data_op;
  struct row {
    data_op op;
    bool conditional;
    bool safe;
  };
  for (auto r : std::vector<row>{{data_op::upsert, false, true},
                                 {data_op::replace, false, true},
                                 {data_op::upsert, true, false},
                                 {data_op::replace, true, false},
                                 {data_op::create, false, false},
                                 {data_op::create, true, false},
                                 {data_op::remove, false, false},
                                 {data_op::remove, true, false}}) {
    SCOPED_TRACE(std::to_string(static_cast<int>(r.op)) +
                 (r.conditional ? " conditional" : ""));
    EXPECT_EQ(georoute::write_copy_safe(r.op, r.conditional), r.safe);
  }
}

// With write retries on, a write carries a tracking id, and the echo of its
// own first copy is recognised: a create, and a replace without
// if-none-match, may then be copied too.
TEST(WriteCopy, Tracked_Table) {
  using georoute::data_op;
  struct row {
    data_op op;
    bool if_match, if_none_match, tracked;
    bool safe;
  };
  for (auto r :
       std::vector<row>{// untracked: the two-argument rule
                        {data_op::upsert, false, false, false, true},
                        {data_op::replace, true, false, false, false},
                        {data_op::create, false, false, false, false},
                        // tracked: creates and replaces without if-none-match
                        {data_op::create, false, false, true, true},
                        {data_op::replace, true, false, true, true},
                        {data_op::replace, false, false, true, true},
                        {data_op::replace, false, true, true, false},
                        {data_op::upsert, false, false, true, true},
                        {data_op::upsert, true, false, true, false},
                        // a remove's echo (404) cannot be told apart: never
                        {data_op::remove, false, false, true, false},
                        {data_op::remove, true, false, true, false}}) {
    SCOPED_TRACE(std::to_string(static_cast<int>(r.op)) +
                 (r.if_match ? " if-match" : "") +
                 (r.if_none_match ? " if-none-match" : "") +
                 (r.tracked ? " tracked" : ""));
    EXPECT_EQ(
        georoute::write_copy_safe(r.op, r.if_match, r.if_none_match, r.tracked),
        r.safe);
  }
}

TEST(ResolveSwitch, RequestWins_ElseTheEngine) {
  EXPECT_TRUE(georoute::resolve_switch(1, false));
  EXPECT_FALSE(georoute::resolve_switch(0, true));
  EXPECT_TRUE(georoute::resolve_switch(-1, true));
  EXPECT_FALSE(georoute::resolve_switch(-1, false));
}

} // namespace
