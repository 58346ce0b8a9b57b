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

TEST(BulkBatchSize, ByCountAndBytes_FirstAlwaysGoes) {
  auto size = [](size_t s) { return s; };
  std::vector<size_t> ten_small(10, 10);
  EXPECT_EQ(
      next_batch_size(ten_small.begin(), ten_small.end(), size, 100, 10'000),
      10u);
  EXPECT_EQ(
      next_batch_size(ten_small.begin(), ten_small.end(), size, 4, 10'000), 4u);
  // [ + 10 + , + 10 + ] = 23 bytes for two; three need 34.
  EXPECT_EQ(next_batch_size(ten_small.begin(), ten_small.end(), size, 100, 33),
            2u);
  EXPECT_EQ(next_batch_size(ten_small.begin(), ten_small.end(), size, 100, 34),
            3u);
  std::vector<size_t> huge_first{5000, 10};
  EXPECT_EQ(
      next_batch_size(huge_first.begin(), huge_first.end(), size, 100, 100),
      1u);
  std::vector<size_t> none;
  EXPECT_EQ(next_batch_size(none.begin(), none.end(), size, 100, 100), 0u);
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

} // namespace bulk_policy_test
