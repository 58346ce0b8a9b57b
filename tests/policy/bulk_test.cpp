// Bulk, the pure part: one operation on the wire and what is refused before
// any trip, the session's options, what each per-operation answer means,
// how a request is filled, and each range's congestion window.

#include "georoute/actors/policy/bulk.hpp"

#include <deque>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace georoute;

namespace georoute {
// A failing row names the verdict, not its bytes.
void PrintTo(bulk_op_verdict v, std::ostream* os) {
  static const char* const names[] = {"done", "throttled", "regroup",
                                      "resend_now", "resend_gone"};
  *os << names[static_cast<int>(v)];
}
void PrintTo(bulk_failure_verdict v, std::ostream* os) {
  static const char* const names[] = {"regroup", "retry_later", "final",
                                      "maybe_applied"};
  *os << names[static_cast<int>(v)];
}
} // namespace georoute

namespace bulk_policy_test {

using json = nlohmann::json;

batch_operation bulk_op(batch_op_kind k, std::string id, std::string body,
                        std::string key = R"(["A"])") {
  batch_operation o;
  o.kind = k;
  o.id = std::move(id);
  o.body = std::move(body);
  o.partition_key_json = std::move(key);
  return o;
}

std::string refusal(const batch_operation& o, size_t index = 3) {
  auto r = bulk_op_json(o, index);
  return r ? std::string{"(accepted)"} : r.error().what;
}

TEST(BulkOp, Create_CarriesItsOwnKeyTypeAndDocument) {
  auto j = bulk_op_json(
      bulk_op(batch_op_kind::create, "", R"({"id":"a","pk":"A"})"), 0);
  ASSERT_TRUE(j) << j.error().what;
  auto o = json::parse(*j);
  EXPECT_EQ(o["operationType"], "Create");
  EXPECT_EQ(o["partitionKey"], R"(["A"])");
  EXPECT_EQ(o["resourceBody"]["id"], "a");
  EXPECT_FALSE(o.contains("id"));
}

TEST(BulkOp, EachKind_ItsWireName_AndIdWhereNeeded) {
  struct row {
    batch_op_kind kind;
    std::string id, body, type;
  };
  for (const auto& r :
       {row{batch_op_kind::upsert, "", R"({"id":"u"})", "Upsert"},
        row{batch_op_kind::read, "r", "", "Read"},
        row{batch_op_kind::replace, "p", R"({"id":"p"})", "Replace"},
        row{batch_op_kind::remove, "d", "", "Delete"},
        row{batch_op_kind::patch, "q",
            R"([{"op":"incr","path":"/n","value":1}])", "Patch"}}) {
    auto j = bulk_op_json(bulk_op(r.kind, r.id, r.body), 0);
    ASSERT_TRUE(j) << r.type << ": " << j.error().what;
    auto o = json::parse(*j);
    EXPECT_EQ(o["operationType"], r.type);
    if (!r.id.empty()) {
      EXPECT_EQ(o["id"], r.id) << r.type;
    }
  }
}

TEST(BulkOpRefused, EachProblem_NamesTheOperationAndWhatIsWrong) {
  struct row {
    batch_operation op;
    std::string expect;
  };
  const row rows[] = {
      {bulk_op(batch_op_kind::create, "", R"({"id":"a"})", ""),
       "bulk operation 3 (Create): a bulk operation needs its partition key"},
      {bulk_op(batch_op_kind::create, "", R"({"id":"a"})", "A"),
       "bulk operation 3 (Create): the partition key A is not valid"},
      {bulk_op(batch_op_kind::create, "", R"({"pk":"A"})"),
       "bulk operation 3 (Create): the document needs a string \"id\""},
      {bulk_op(batch_op_kind::create, "", "[1]"),
       "bulk operation 3 (Create): the document must be a JSON object"},
      {bulk_op(batch_op_kind::read, "a/b", ""),
       "bulk operation 3 (Read): 'a/b' is not a document id"},
      {bulk_op(batch_op_kind::replace, "x", R"({"id":"y"})"),
       "differs from the id replaced"},
      {bulk_op(batch_op_kind::patch, "x",
               R"([{"op":"incr","path":"/n","value":"one"}])"),
       "bulk operation 3 (Patch): "},
      {bulk_op(batch_op_kind::remove, "x", R"({"id":"x"})"),
       "bulk operation 3 (Delete) takes no body"},
  };
  for (const auto& r : rows) {
    auto got = refusal(r.op);
    EXPECT_NE(got.find(r.expect), std::string::npos)
        << "expected \"" << r.expect << "\" in \"" << got << "\"";
  }
}

TEST(BulkOpRefused, OverTwoMebibytes_NamesTheSize) {
  std::string big(2 * 1024 * 1024, 'x');
  auto got = refusal(bulk_op(batch_op_kind::create, "",
                             R"({"id":"a","blob":")" + big + "\"}"));
  EXPECT_NE(got.find("a request takes at most 2097152 (2 MiB)"),
            std::string::npos)
      << got;
}

TEST(BulkOptions, Defaults_Pass) {
  EXPECT_FALSE(check_bulk_options(bulk_options{}));
}

TEST(BulkOptions, OutOfRange_NamesTheOption) {
  struct row {
    bulk_options o;
    std::string expect;
  };
  std::vector<row> rows;
  {
    bulk_options o;
    o.max_operations_per_request = 0;
    rows.push_back({o, "max_operations_per_request is 0"});
    o.max_operations_per_request = 101;
    rows.push_back({o, "max_operations_per_request is 101"});
  }
  {
    bulk_options o;
    o.max_request_bytes = 100;
    rows.push_back({o, "max_request_bytes is 100"});
    o.max_request_bytes = 3 * 1024 * 1024;
    rows.push_back({o, "max_request_bytes is 3145728"});
  }
  {
    bulk_options o;
    o.max_requests_per_range = 0;
    rows.push_back({o, "max_requests_per_range is 0"});
  }
  {
    bulk_options o;
    o.budget_ms = -1;
    rows.push_back({o, "budget_ms is -1"});
  }
  for (const auto& r : rows) {
    auto got = check_bulk_options(r.o);
    ASSERT_TRUE(got) << r.expect;
    EXPECT_NE(got->find(r.expect), std::string::npos) << *got;
  }
}

// Every answer but 413/3402 means the same wherever the operation stood in
// its request: each row is checked leading and behind another.
TEST(BulkVerdict, PerOperationAnswers_SameLeadingOrNot) {
  struct row {
    const char* name;
    int status, substatus;
    bulk_op_verdict v;
  };
  const row rows[] = {
      {"Created_201_Done", 201, 0, bulk_op_verdict::done},
      {"Read_200_Done", 200, 0, bulk_op_verdict::done},
      {"Deleted_204_Done", 204, 0, bulk_op_verdict::done},
      {"Conflict_409_Done", 409, 0, bulk_op_verdict::done},
      {"PreconditionFailed_412_Done", 412, 0, bulk_op_verdict::done},
      {"BadRequest_400_Done", 400, 0, bulk_op_verdict::done},
      {"NotFound_404_Done", 404, 0, bulk_op_verdict::done},
      {"DocumentTooLarge_413NoSubstatus_Done", 413, 0, bulk_op_verdict::done},
      {"Throttled_429_3200_Throttled", 429, 3200, bulk_op_verdict::throttled},
      {"Throttled_429NoSubstatus_Throttled", 429, 0,
       bulk_op_verdict::throttled},
      {"RangeGone_410_1002_Regroup", 410, 1002, bulk_op_verdict::regroup},
      {"RangeGone_410_1007_Regroup", 410, 1007, bulk_op_verdict::regroup},
      {"RangeGone_410_1008_Regroup", 410, 1008, bulk_op_verdict::regroup},
      {"Gone_410NoSubstatus_ResendGone", 410, 0, bulk_op_verdict::resend_gone},
      {"Gone_410_1000_ResendGone", 410, 1000, bulk_op_verdict::resend_gone},
      {"FailedDependency_424_Done", 424, 0, bulk_op_verdict::done},
      {"ServerError_500_Done", 500, 0, bulk_op_verdict::done},
  };
  for (const auto& r : rows)
    for (bool leading : {true, false})
      EXPECT_EQ(classify_bulk_op(r.status, r.substatus, leading, 0), r.v)
          << r.name << (leading ? " (leading)" : " (behind another)");
}

// 413/3402: the answer was full before the operation's turn. Final only for
// the operation an answer began with; behind another it goes again however
// often it was turned away before (nothing is counted for it).
TEST(BulkVerdict, ResponseFull_ByPosition) {
  struct row {
    const char* name;
    bool leading;
    uint32_t gone_resends;
    bulk_op_verdict v;
  };
  const row rows[] = {
      {"ResponseFull_Leading_Done", true, 0, bulk_op_verdict::done},
      {"ResponseFull_BehindAnother_ResendNow", false, 0,
       bulk_op_verdict::resend_now},
      {"ResponseFull_BehindAnotherAfterManyGones_ResendNow", false,
       max_bulk_gone_resends, bulk_op_verdict::resend_now},
      {"ResponseFull_LeadingAfterManyGones_Done", true, max_bulk_gone_resends,
       bulk_op_verdict::done},
  };
  for (const auto& r : rows)
    EXPECT_EQ(classify_bulk_op(413, 3402, r.leading, r.gone_resends), r.v)
        << r.name;
}

// Other 410s say nothing about when the operation would run: sent again
// max_bulk_gone_resends times, then the 410 is its result.
TEST(BulkVerdict, OtherGone_Bounded) {
  struct row {
    const char* name;
    uint32_t gone_resends;
    bulk_op_verdict v;
  };
  const row rows[] = {
      {"Gone_FirstTime_ResendGone", 0, bulk_op_verdict::resend_gone},
      {"Gone_OneBeforeTheLimit_ResendGone", max_bulk_gone_resends - 1,
       bulk_op_verdict::resend_gone},
      {"Gone_AtTheLimit_Done", max_bulk_gone_resends, bulk_op_verdict::done},
      {"Gone_PastTheLimit_Done", max_bulk_gone_resends + 1,
       bulk_op_verdict::done},
  };
  for (const auto& r : rows)
    for (bool leading : {true, false})
      EXPECT_EQ(classify_bulk_op(410, 0, leading, r.gone_resends), r.v)
          << r.name << (leading ? " (leading)" : " (behind another)");
}

// A whole request's failure, one row per error code: only a failure that
// says the request never ran is final; whatever may have run is reported
// as possibly applied, since a bulk request is never sent twice.
TEST(BulkFailure, EveryErrorCode_ItsVerdict) {
  using v = bulk_failure_verdict;
  struct row {
    const char* name;
    errc code;
    bulk_failure_verdict verdict;
  };
  const row rows[] = {
      {"RangeGone_Regroup", errc::partition_range_gone, v::regroup},
      {"EngineOverloaded_RetryLater", errc::overloaded, v::retry_later},
      {"Invalid_Final", errc::validation_error, v::final},
      {"ConnectionRefused_Final", errc::connection_refused, v::final},
      {"DnsFailure_Final", errc::dns_failure, v::final},
      {"TlsFailure_Final", errc::tls_failure, v::final},
      {"BadRequest_Final", errc::bad_request, v::final},
      {"Unauthorized_Final", errc::unauthorized, v::final},
      {"Forbidden_Final", errc::forbidden, v::final},
      {"WriteForbidden_Final", errc::write_forbidden, v::final},
      {"AccountNotFound_Final", errc::account_not_found, v::final},
      {"NotFound_Final", errc::not_found, v::final},
      {"ReadSessionUnavailable_Final", errc::read_session_unavailable,
       v::final},
      {"ThrottledToTheEnd_Final", errc::throttled, v::final},
      {"LeaseNotFound_Final", errc::lease_not_found, v::final},
      {"None_MaybeApplied", errc::none, v::maybe_applied},
      {"ConnectionReset_MaybeApplied", errc::connection_reset,
       v::maybe_applied},
      {"TransportTimeout_MaybeApplied", errc::transport_timeout,
       v::maybe_applied},
      {"ProtocolError_MaybeApplied", errc::protocol_error, v::maybe_applied},
      {"BodyTooLarge_MaybeApplied", errc::body_too_large, v::maybe_applied},
      {"RequestTimeout408_MaybeApplied", errc::request_timeout,
       v::maybe_applied},
      {"Conflict_MaybeApplied", errc::conflict, v::maybe_applied},
      {"OtherGone_MaybeApplied", errc::gone, v::maybe_applied},
      {"PreconditionFailed_MaybeApplied", errc::precondition_failed,
       v::maybe_applied},
      {"InternalServerError_MaybeApplied", errc::internal_server_error,
       v::maybe_applied},
      {"ServiceUnavailable_MaybeApplied", errc::service_unavailable,
       v::maybe_applied},
      {"UnexpectedStatus_MaybeApplied", errc::unexpected_status,
       v::maybe_applied},
      {"DeadlineExceeded_MaybeApplied", errc::deadline_exceeded,
       v::maybe_applied},
      {"ProtocolViolation_MaybeApplied", errc::protocol_violation,
       v::maybe_applied},
      {"AttemptsExhausted_MaybeApplied", errc::attempts_exhausted,
       v::maybe_applied},
      {"ShuttingDown_MaybeApplied", errc::shutting_down, v::maybe_applied},
      {"CollaboratorDown_MaybeApplied", errc::collaborator_down,
       v::maybe_applied},
      {"OutcomeUnknown_MaybeApplied", errc::outcome_unknown, v::maybe_applied},
  };
  for (const auto& r : rows)
    EXPECT_EQ(classify_bulk_failure(r.code), r.verdict) << r.name;
}

// Offers operations of the sizes `sizes` in order until one is refused;
// returns how many the request took.
size_t fill_with(bulk_request_fill f, const std::vector<size_t>& sizes) {
  for (auto n : sizes)
    if (!f.take(n)) break;
  return f.count();
}

TEST(BulkRequestFill, ByCountAndBytes_FirstAlwaysGoes) {
  struct row {
    const char* name;
    size_t max_ops, max_bytes;
    std::vector<size_t> sizes;
    size_t taken;
  };
  const std::vector<size_t> ten_small(10, 10);
  const row rows[] = {
      {"AllFit_AllTaken", 100, 10'000, ten_small, 10},
      {"CountLimit_StopsAtIt", 4, 10'000, ten_small, 4},
      {"OneOperationPerRequest_One", 1, 10'000, ten_small, 1},
      // [ + 10 + , + 10 + ] = 23 bytes for two; three need 34.
      {"BytesOneShortOfThree_Two", 100, 33, ten_small, 2},
      {"BytesExactlyThree_Three", 100, 34, ten_small, 3},
      {"FirstLargerThanTheLimit_GoesAlone", 100, 100, {5000, 10}, 1},
      {"FirstExactlyTheLimit_GoesAlone", 100, 12, {10, 1}, 1},
      {"NothingOffered_None", 100, 100, {}, 0},
  };
  for (const auto& r : rows)
    EXPECT_EQ(fill_with(bulk_request_fill{r.max_ops, r.max_bytes}, r.sizes),
              r.taken)
        << r.name;
}

TEST(BulkRequestFill, BytesCountBracketsAndCommas) {
  bulk_request_fill f{100, 1000};
  EXPECT_EQ(f.bytes(), 2u);
  ASSERT_TRUE(f.take(10));
  EXPECT_EQ(f.bytes(), 12u);
  ASSERT_TRUE(f.take(10));
  EXPECT_EQ(f.bytes(), 23u);
}

TEST(BulkRequestFill, RefusedOperation_LeavesItAsItWas) {
  bulk_request_fill f{2, 1000};
  ASSERT_TRUE(f.take(10));
  ASSERT_TRUE(f.take(10));
  EXPECT_TRUE(f.full());
  EXPECT_FALSE(f.take(1));
  EXPECT_EQ(f.count(), 2u);
  EXPECT_EQ(f.bytes(), 23u);
}

// Sends until the window is full; returns the sequence numbers.
std::deque<uint64_t> fill(range_congestion& c) {
  std::deque<uint64_t> out;
  while (c.can_send())
    out.push_back(c.on_send());
  return out;
}

// Answers every request of `round` (clear or throttled).
void answer(range_congestion& c, std::deque<uint64_t>& round, bool throttled) {
  while (!round.empty()) {
    c.on_answer(round.front(), throttled);
    round.pop_front();
  }
}

TEST(RangeCongestion, StartsAtOne_DoublesPerClearRound) {
  range_congestion c{64};
  EXPECT_EQ(c.window(), 1u);
  std::vector<uint32_t> windows;
  for (int round = 0; round < 5; ++round) {
    auto sent = fill(c);
    windows.push_back(static_cast<uint32_t>(sent.size()));
    answer(c, sent, false);
  }
  EXPECT_EQ(windows, (std::vector<uint32_t>{1, 2, 4, 8, 16}));
  EXPECT_EQ(c.peak(), 32u);
}

TEST(RangeCongestion, ThrottledRound_HalvesOnce_ThenGrowsByOnePerRound) {
  range_congestion c{64};
  for (int round = 0; round < 4; ++round) { // 1, 2, 4, 8: window now 16
    auto sent = fill(c);
    answer(c, sent, false);
  }
  ASSERT_EQ(c.window(), 16u);
  auto sent = fill(c);
  ASSERT_EQ(sent.size(), 16u);
  answer(c, sent, true); // every one of the 16 throttled: one cut
  EXPECT_EQ(c.window(), 8u);
  EXPECT_EQ(c.cuts(), 1u);
  std::vector<uint32_t> windows;
  for (int round = 0; round < 3; ++round) {
    auto s = fill(c);
    windows.push_back(static_cast<uint32_t>(s.size()));
    answer(c, s, false);
  }
  EXPECT_EQ(windows, (std::vector<uint32_t>{8, 9, 10}));
}

TEST(RangeCongestion, ThrottleOfANewerRound_CutsAgain) {
  range_congestion c{64};
  for (int round = 0; round < 4; ++round) {
    auto sent = fill(c);
    answer(c, sent, false);
  }
  auto first = fill(c); // 16 out
  c.on_answer(first.front(), true);
  first.pop_front();
  EXPECT_EQ(c.window(), 8u);
  auto more = fill(c); // none: 15 still out against a window of 8
  EXPECT_TRUE(more.empty());
  answer(c, first, true); // the old round's throttles: no further cut
  EXPECT_EQ(c.window(), 8u);
  auto second = fill(c); // sent after the cut
  ASSERT_EQ(second.size(), 8u);
  c.on_answer(second.front(), true);
  EXPECT_EQ(c.window(), 4u);
  EXPECT_EQ(c.cuts(), 2u);
}

TEST(RangeCongestion, NeverBelowOne_NeverAboveTheCeiling) {
  range_congestion c{3};
  for (int i = 0; i < 10; ++i) {
    auto s = fill(c);
    answer(c, s, false);
  }
  EXPECT_EQ(c.window(), 3u);
  for (int i = 0; i < 10; ++i) {
    auto s = fill(c);
    answer(c, s, true);
  }
  EXPECT_EQ(c.window(), 1u);
  EXPECT_TRUE(c.can_send());
}

TEST(RangeCongestion, Abandoned_FreesItsSlot_WindowUnchanged) {
  range_congestion c{8};
  auto s = fill(c);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_FALSE(c.can_send());
  c.on_abandon(s.front());
  EXPECT_TRUE(c.can_send());
  EXPECT_EQ(c.window(), 1u);
}

using std::chrono::milliseconds;
using std::chrono::seconds;
using tp = std::chrono::steady_clock::time_point;

// The 429 budget of an operation is the engine's (evaluate_throttle):
// nine retries and 30 s of waits by default, a single wait below 30 s.
TEST(BulkThrottle, ChargedAndEarly_Table) {
  using k = bulk_throttle_verdict::kind;
  const throttle_options o; // 9 retries, 30 s, default wait 5 s
  struct row {
    const char* name;
    throttle_state before;
    int64_t retry_after_ms;
    bool early;
    milliseconds time_left;
    k what;
    milliseconds delay;
    throttle_state after;
  };
  const auto ms = [](int64_t n) { return milliseconds{n}; };
  const row rows[] = {
      {"First_ItsRetryAfter_Charged",
       {0, ms(0)},
       200,
       false,
       ms(60'000),
       k::wait,
       ms(200),
       {1, ms(200)}},
      {"NoRetryAfter_DefaultWait",
       {0, ms(0)},
       0,
       false,
       ms(60'000),
       k::wait,
       ms(5000),
       {1, ms(5000)}},
      {"NegativeRetryAfter_DefaultWait",
       {2, ms(100)},
       -1,
       false,
       ms(60'000),
       k::wait,
       ms(5000),
       {3, ms(5100)}},
      {"LastRetry_Waits",
       {8, ms(800)},
       100,
       false,
       ms(60'000),
       k::wait,
       ms(100),
       {9, ms(900)}},
      {"RetriesSpent_Final",
       {9, ms(900)},
       100,
       false,
       ms(60'000),
       k::final,
       ms(100),
       {9, ms(900)}},
      {"WaitsUpToTheMax_Waits",
       {1, ms(29'000)},
       1000,
       false,
       ms(60'000),
       k::wait,
       ms(1000),
       {2, ms(30'000)}},
      {"WaitsPastTheMax_Final",
       {1, ms(29'001)},
       1000,
       false,
       ms(60'000),
       k::final,
       ms(1000),
       {1, ms(29'001)}},
      // The one place the bulk executor's own budget differed: a single
      // wait of exactly the maximum is refused, as for every request.
      {"OneWaitEqualToTheMax_Final",
       {0, ms(0)},
       30'000,
       false,
       ms(60'000),
       k::final,
       ms(30'000),
       {0, ms(0)}},
      {"OneWaitJustBelowTheMax_Waits",
       {0, ms(0)},
       29'999,
       false,
       ms(60'000),
       k::wait,
       ms(29'999),
       {1, ms(29'999)}},
      {"BudgetEndsFirst_OutOfTime",
       {0, ms(0)},
       200,
       false,
       ms(199),
       k::out_of_time,
       ms(200),
       {1, ms(200)}},
      {"BudgetEndsWithTheWait_Waits",
       {0, ms(0)},
       200,
       false,
       ms(200),
       k::wait,
       ms(200),
       {1, ms(200)}},
      {"SpentAndOutOfTime_Final",
       {9, ms(0)},
       200,
       false,
       ms(1),
       k::final,
       ms(200),
       {9, ms(0)}},
      {"Early_NotCharged",
       {3, ms(300)},
       200,
       true,
       ms(60'000),
       k::wait,
       ms(200),
       {3, ms(300)}},
      {"EarlyWithRetriesSpent_StillWaits",
       {9, ms(30'000)},
       200,
       true,
       ms(60'000),
       k::wait,
       ms(200),
       {9, ms(30'000)}},
      {"EarlyOutOfTime_OutOfTime",
       {0, ms(0)},
       200,
       true,
       ms(100),
       k::out_of_time,
       ms(200),
       {0, ms(0)}},
  };
  for (const auto& r : rows) {
    auto v = decide_bulk_throttle(o, r.before, r.retry_after_ms, r.early,
                                  r.time_left);
    EXPECT_EQ(static_cast<int>(v.what), static_cast<int>(r.what)) << r.name;
    EXPECT_EQ(v.delay, r.delay) << r.name;
    if (r.what != k::final) {
      EXPECT_EQ(v.next, r.after) << r.name;
    }
  }
}

// Whatever the state, a charged 429 retries exactly when evaluate_throttle
// says so: there is one budget.
TEST(BulkThrottle, Charged_AgreesWithEvaluateThrottle) {
  throttle_options o;
  o.max_attempts = 3;
  o.max_wait = milliseconds{1000};
  o.default_delay = milliseconds{400};
  for (uint32_t attempts = 0; attempts <= 4; ++attempts)
    for (int64_t cum : {0, 200, 600, 999, 1000})
      for (int64_t after : {-1, 0, 1, 400, 999, 1000, 1001}) {
        throttle_state s{attempts, milliseconds{cum}};
        auto t = evaluate_throttle(o, s, failure_signal::http(429, 0, after));
        auto v = decide_bulk_throttle(o, s, after, false, seconds{60});
        EXPECT_EQ(v.what != bulk_throttle_verdict::kind::final, t.retry)
            << attempts << " " << cum << " " << after;
        if (t.retry) {
          EXPECT_EQ(v.next, t.next);
        }
      }
}

TEST(BulkPacing, MaySend_WindowAndBacklog) {
  struct row {
    const char* name;
    int window_growth; // clear answers before the row's sends
    int in_flight;
    size_t backlog;
    bool may;
  };
  const row rows[] = {
      {"Idle_NoBacklog_May", 0, 0, 0, true},
      {"WindowFull_MayNot", 0, 1, 0, false},
      {"RoomInTheWindow_NoBacklog_May", 3, 1, 0, true},
      {"RoomInTheWindow_Backlog_OneInFlight_MayNot", 3, 1, 1, false},
      {"Idle_Backlog_May", 3, 0, 5, true},
  };
  for (const auto& r : rows) {
    range_congestion c{20};
    for (int i = 0; i < r.window_growth; ++i)
      c.on_answer(c.on_send(), false);
    for (int i = 0; i < r.in_flight; ++i)
      c.on_send();
    EXPECT_EQ(bulk_may_send(c, r.backlog), r.may) << r.name;
  }
}

TEST(BulkPacing, Front_Table) {
  using k = bulk_front_plan::kind;
  const tp t0{seconds{1000}};
  const auto at = [&](int64_t ms) { return t0 + milliseconds{ms}; };
  const tp never{}; // not throttled
  struct row {
    const char* name;
    tp deadline, not_before, now, last_send;
    bool alone;
    k what;
    tp wake;
  };
  const row rows[] = {
      {"Fresh_Take", at(5000), never, at(0), at(-10), false, k::take, {}},
      {"RetryAfterPassed_Take",
       at(5000),
       at(0),
       at(0),
       at(-10),
       true,
       k::take,
       {}},
      {"BudgetSpent_Expired",
       at(0),
       never,
       at(0),
       at(-10),
       false,
       k::expired,
       {}},
      {"BudgetSpentWhileWaiting_Expired",
       at(0),
       at(50),
       at(0),
       at(-10),
       true,
       k::expired,
       {}},
      {"WaitsNotAlone_WaitsForItsRetryAfter", at(5000), at(500), at(0), at(-10),
       false, k::wait, at(500)},
      {"WaitsAloneShortly_WaitsForItsRetryAfter", at(5000), at(50), at(0),
       at(-10), true, k::wait, at(50)},
      {"WaitsAloneUntilTheProbeTime_WaitsForItsRetryAfter", at(5000), at(90),
       at(0), at(-10), true, k::wait, at(90)},
      {"WaitsAloneJustPastTheProbeTime_WaitsForTheProbe", at(5000), at(91),
       at(0), at(-10), true, k::wait, at(90)},
      {"WaitsAloneLong_WaitsForTheProbe", at(5000), at(500), at(0), at(-10),
       true, k::wait, at(90)},
      {"WaitsAloneLong_ProbeDue_Probe",
       at(5000),
       at(500),
       at(90),
       at(-10),
       true,
       k::probe,
       {}},
      {"WaitsAloneLong_ProbeOverdue_Probe",
       at(5000),
       at(500),
       at(200),
       at(-10),
       true,
       k::probe,
       {}},
      {"ProbeDueButNotAlone_WaitsForItsRetryAfter", at(5000), at(500), at(200),
       at(-10), false, k::wait, at(500)},
  };
  for (const auto& r : rows) {
    auto p =
        plan_bulk_front(r.deadline, r.not_before, r.now, r.last_send, r.alone);
    EXPECT_EQ(static_cast<int>(p.what), static_cast<int>(r.what)) << r.name;
    if (r.what == k::wait) {
      EXPECT_EQ(p.wake, r.wake) << r.name;
    }
  }
}

TEST(BulkPacing, Release_Table) {
  struct row {
    const char* name;
    bool throttled, probe;
    size_t carried, backlog, released;
  };
  const row rows[] = {
      {"ClearAnswer_TwiceWhatItCarried", false, false, 3, 10, 6},
      {"ClearAnswer_FewerWaiting_AllOfThem", false, false, 3, 4, 4},
      {"ClearProbe_AllOfThem", false, true, 1, 10, 10},
      {"Throttled_None", true, false, 3, 10, 0},
      {"ThrottledProbe_None", true, true, 1, 10, 0},
      {"NoneWaiting_None", false, false, 3, 0, 0},
  };
  for (const auto& r : rows)
    EXPECT_EQ(bulk_release_count(r.throttled, r.probe, r.carried, r.backlog),
              r.released)
        << r.name;
}

} // namespace bulk_policy_test
