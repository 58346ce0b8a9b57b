// Bulk through the engine's blocking client against the emulator: many
// operations across ranges, each applied once with its result in order;
// per-operation throttling under a per-range ops budget; a split during the
// load; answers cut by the response cap; a lost answer that may have been
// applied (never sent again); and bad input refused before any trip.

#include "georoute/actors/bulk_executor.hpp"
#include "georoute/actors/client.hpp"
#include "tests/integration/engine_fixture.hpp"

#include <atomic>

namespace bulk_integration_test {

using namespace georoute;
using namespace georoute::test;
using namespace std::chrono_literals;
using json = nlohmann::json;

const std::string coll_link = "dbs/d/colls/c";

batch_operation create_of(size_t n) {
  batch_operation o;
  o.kind = batch_op_kind::create;
  auto id = "doc" + std::to_string(n);
  auto key = "k" + std::to_string(n % 97);
  o.body = json{{"id", id}, {"pk", key}, {"n", n}}.dump();
  o.partition_key_json = json::array({key}).dump();
  return o;
}

class Bulk : public engine_test {
protected:
  // A request of a hundred operations takes longer than the fixture's
  // 150 ms ladder steps under a sanitizer: each attempt gets 2 s here, so
  // that only the test that means to loses an answer.
  void configure() override {
    timeout_ladder ladder{{2000ms, 0ms}, {2000ms, 0ms}};
    settings.http.ladders.hot_path = ladder;
    settings.http.ladders.default_ladder = ladder;
    settings.http.ladders.partition_failover = ladder;
  }

  struct outcome {
    caf::expected<bulk_summary> summary{caf::error{}};
    std::vector<bulk_op_result> results; // by stream index
    std::vector<uint64_t> firsts;        // each chunk's first index
  };

  /// The n-th operation `load` streams.
  std::function<batch_operation(size_t)> make_op = create_of;

  /// Streams `count` operations (`make_op`, chunks of `chunk`) through
  /// client::bulk; `after_chunk(k)` runs after the k-th chunk's results
  /// arrived.
  outcome load(size_t count, size_t chunk, bulk_options o = {},
               std::function<void(size_t)> after_chunk = {}) {
    outcome out;
    out.results.resize(count);
    client db{*sys, *eng, 30s};
    size_t next = 0;
    size_t chunks_done = 0;
    bulk_open open{coll_link};
    open.options = o;
    out.summary = db.bulk(
        open,
        [&] {
          std::vector<batch_operation> ops;
          for (; next < count && ops.size() < chunk; ++next)
            ops.push_back(make_op(next));
          return ops;
        },
        [&](uint64_t first, std::vector<bulk_op_result>& rs) {
          out.firsts.push_back(first);
          for (size_t i = 0; i < rs.size(); ++i)
            out.results[first + i] = std::move(rs[i]);
          if (after_chunk) after_chunk(chunks_done);
          ++chunks_done;
        });
    return out;
  }

  /// The writes the write region committed per document id.
  std::map<std::string, uint64_t> writes() {
    std::map<std::string, uint64_t> out;
    auto docs = emu->control().documents("d", "c");
    EXPECT_TRUE(docs) << docs.error().what;
    if (docs)
      for (const auto& d : *docs)
        out[d.id] = d.writes;
    return out;
  }

  /// Splits the collection's first range twice: two more ranges.
  void two_more_ranges() {
    auto a = emu->control().split_range("d", "c", "0");
    ASSERT_TRUE(a) << a.error().what;
    auto b = emu->control().split_range("d", "c", a->front());
    ASSERT_TRUE(b) << b.error().what;
  }

  uint64_t bulk_requests() {
    uint64_t n = 0;
    for (const auto& [region, kinds] : emu->control().counters_by_kind())
      if (auto k = kinds.find("bulk"); k != kinds.end())
        for (const auto& [status, count] : k->second)
          n += count;
    return n;
  }
};

TEST_F(Bulk, ManyCreates_AcrossRanges_EachAppliedOnce_ResultsInOrder) {
  two_more_ranges();
  auto out = load(2000, 250);
  ASSERT_TRUE(out.summary) << describe(out.summary.error());
  EXPECT_EQ(out.summary->operations, 2000u);
  EXPECT_EQ(out.summary->succeeded, 2000u);
  EXPECT_EQ(out.summary->failed, 0u);
  EXPECT_EQ(out.summary->pending, 0u);
  client db{*sys, *eng, 30s};
  auto ranges = db.feed_ranges(coll_link);
  ASSERT_TRUE(ranges) << describe(ranges.error());
  EXPECT_EQ(out.summary->ranges.size(), ranges->size());
  // Chunks come back in the order they were taken.
  std::vector<uint64_t> firsts;
  for (uint64_t f = 0; f < 2000; f += 250)
    firsts.push_back(f);
  EXPECT_EQ(out.firsts, firsts);
  for (size_t i = 0; i < out.results.size(); ++i) {
    ASSERT_EQ(out.results[i].status, 201) << i << ": " << out.results[i].error;
    ASSERT_EQ(json::parse(out.results[i].body)["id"],
              "doc" + std::to_string(i));
    ASSERT_EQ(out.results[i].sends, 1u);
  }
  auto w = writes();
  EXPECT_EQ(w.size(), 2000u);
  for (const auto& [id, n] : w)
    ASSERT_EQ(n, 1u) << id;
  // Batches, not one request per operation.
  EXPECT_LE(out.summary->requests, 2000u / 10);
  EXPECT_EQ(bulk_requests(), out.summary->requests);
}

// The bucket holds fewer operations than one full request carries, so the
// first request of each range is cut however fast or slow the machine is
// (at 2,000 ops/s and a bucket of 100, a sanitizer build never outran the
// refill and saw no 429 at all).
TEST_F(Bulk, UnderAnOpsBudget_ThrottledOpsWaitAndGoAgain_EachAppliedOnce) {
  emulator::range_ops_budget b;
  b.ops_per_second = 1000;
  b.burst = 40;
  ASSERT_TRUE(emu->control().add_ops_budget(b));
  auto out = load(1500, 500);
  ASSERT_TRUE(out.summary) << describe(out.summary.error());
  EXPECT_EQ(out.summary->succeeded, 1500u);
  EXPECT_GT(out.summary->throttled, 0u);
  uint32_t cuts = 0;
  for (const auto& r : out.summary->ranges)
    cuts += r.cuts;
  EXPECT_GT(cuts, 0u) << "the throttles never cut a window";
  size_t resent = 0;
  for (const auto& r : out.results) {
    ASSERT_EQ(r.status, 201) << r.error;
    if (r.sends > 1) ++resent;
  }
  EXPECT_GT(resent, 0u);
  for (const auto& [id, n] : writes())
    ASSERT_EQ(n, 1u) << id;
}

// The service spreads a throttled request's retry-afters by the tokens each
// operation needs at its budget then (a tenth of a second apart at 10 ops/s:
// up to ten seconds for a hundred). Once the budget is lifted those waits
// are stale: a clear answer releases twice as many waiting operations each
// time, so the load ends within a few round trips instead of on the old
// schedule. (Measured against a margin of three: the old schedule needs
// about ten seconds.)
TEST_F(Bulk, BudgetLifted_StaleRetryAftersReleased_LoadEndsSoon) {
  emulator::range_ops_budget b;
  b.ops_per_second = 10;
  b.burst = 1;
  ASSERT_TRUE(emu->control().add_ops_budget(b));
  std::promise<outcome> done;
  auto finished = done.get_future();
  std::thread loader([&] { done.set_value(load(200, 200)); });
  std::this_thread::sleep_for(500ms); // every range throttled by now
  emu->control().clear_ops_budgets();
  auto lifted = std::chrono::steady_clock::now();
  auto status = finished.wait_for(10s);
  auto took = std::chrono::steady_clock::now() - lifted;
  loader.join();
  ASSERT_EQ(status, std::future_status::ready);
  auto out = finished.get();
  ASSERT_TRUE(out.summary) << describe(out.summary.error());
  EXPECT_EQ(out.summary->succeeded, 200u);
  EXPECT_GT(out.summary->throttled, 100u);
  EXPECT_LT(took, 3s)
      << "the load followed the stale retry-afters: "
      << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
      << " ms after the budget was lifted";
}

TEST_F(Bulk, PerOperation429WithoutBudget_RetriedAfterItsRetryAfter) {
  emulator::bulk_op_fault f;
  f.status = 429;
  f.substatus = 3200;
  f.retry_after_ms = 20;
  f.count = 30;
  ASSERT_TRUE(emu->control().add_bulk_op_fault(f));
  auto out = load(200, 200);
  ASSERT_TRUE(out.summary) << describe(out.summary.error());
  EXPECT_EQ(out.summary->succeeded, 200u);
  EXPECT_EQ(out.summary->throttled, 30u);
  for (const auto& [id, n] : writes())
    ASSERT_EQ(n, 1u) << id;
}

TEST_F(Bulk, SplitDuringTheLoad_Regrouped_NothingLostNothingTwice) {
  std::atomic<bool> split{false};
  auto out = load(1500, 100, {}, [&](size_t k) {
    if (k != 2) return;
    auto s = emu->control().split_range("d", "c", "0");
    ASSERT_TRUE(s) << s.error().what;
    split = true;
  });
  ASSERT_TRUE(split);
  ASSERT_TRUE(out.summary) << describe(out.summary.error());
  EXPECT_EQ(out.summary->succeeded, 1500u);
  EXPECT_GE(out.summary->ranges.size(), 3u) << "the children were never used";
  EXPECT_GT(out.summary->regrouped + out.summary->map_reads, 0u);
  for (const auto& r : out.results)
    ASSERT_EQ(r.status, 201) << r.error;
  auto w = writes();
  EXPECT_EQ(w.size(), 1500u);
  for (const auto& [id, n] : w)
    ASSERT_EQ(n, 1u) << id;
}

TEST_F(Bulk, PerOperation410_1002_RoutingMapReadAgain_Regrouped) {
  emulator::bulk_op_fault f;
  f.status = 410;
  f.substatus = 1002;
  f.retry_after_ms = -1;
  f.count = 40;
  ASSERT_TRUE(emu->control().add_bulk_op_fault(f));
  auto out = load(300, 300);
  ASSERT_TRUE(out.summary) << describe(out.summary.error());
  EXPECT_EQ(out.summary->succeeded, 300u);
  EXPECT_EQ(out.summary->regrouped, 40u);
  EXPECT_GT(out.summary->map_reads, 0u);
  for (const auto& [id, n] : writes())
    ASSERT_EQ(n, 1u) << id;
}

TEST_F(Bulk, AnswersCutByTheResponseCap_413_3402_ResentAtOnce) {
  emu->control().set_bulk_response_cap(4000);
  auto out = load(300, 300);
  ASSERT_TRUE(out.summary) << describe(out.summary.error());
  EXPECT_EQ(out.summary->succeeded, 300u);
  EXPECT_GT(out.summary->resent, 0u);
  EXPECT_EQ(out.summary->throttled, 0u);
  for (const auto& [id, n] : writes())
    ASSERT_EQ(n, 1u) << id;
}

// Answers with room for about four results each (a 1,500-byte cap, results
// of about 350 bytes: the service's 4 MB limit with documents of a few
// hundred KB): most of every request is turned away 413/3402, round after
// round, yet each of those operations would fit an answer that began with
// it. Only an operation that led its request and still found no room may
// fail for it, so every create succeeds, once. (Charged a resend per
// turned-away round, ten at most, 632 of these 1,200 used to fail.)
TEST_F(Bulk, AnswersOfAFewResults_OnlyTheLeaderMayFailForRoom_AllSucceed) {
  emu->control().set_bulk_response_cap(1500);
  make_op = [](size_t n) {
    auto o = create_of(n);
    auto key = "k" + std::to_string(n % 3);
    o.body = json{{"id", "doc" + std::to_string(n)},
                  {"pk", key},
                  {"pad", std::string(8, 'x')}}
                 .dump();
    o.partition_key_json = json::array({key}).dump();
    return o;
  };
  auto out = load(1200, 1200);
  ASSERT_TRUE(out.summary) << describe(out.summary.error());
  EXPECT_EQ(out.summary->succeeded, 1200u);
  EXPECT_EQ(out.summary->failed, 0u);
  size_t failed = 0;
  for (const auto& r : out.results) {
    if (r.status == 201) continue;
    if (++failed <= 3)
      ADD_FAILURE() << r.status << "/" << r.substatus << " after " << r.sends
                    << " sends: " << r.error;
  }
  EXPECT_EQ(failed, 0u);
  // The cap did bite: at most four results an answer.
  EXPECT_GE(out.summary->requests, 1200u / 4);
  EXPECT_GT(out.summary->resent, 0u);
  EXPECT_EQ(out.summary->throttled, 0u);
  auto w = writes();
  EXPECT_EQ(w.size(), 1200u);
  for (const auto& [id, n] : w)
    ASSERT_EQ(n, 1u) << id;
}

TEST_F(Bulk, AnswerLost_MayHaveBeenApplied_NeverSentAgain) {
  emulator::fault_rule slow;
  slow.operation = "bulk";
  slow.action = emulator::fault_action::delay;
  slow.delay = 5000ms; // applied at once, answered after the ladder's end
  slow.count = 1;
  emu->control().add_fault(slow);
  auto out = load(100, 100);
  ASSERT_TRUE(out.summary) << describe(out.summary.error());
  // One request's answer was late (its range's operations), the others'
  // came.
  ASSERT_GT(out.summary->failed, 0u);
  ASSERT_GT(out.summary->succeeded, 0u);
  EXPECT_EQ(out.summary->failed + out.summary->succeeded, 100u);
  for (const auto& r : out.results) {
    EXPECT_EQ(r.sends, 1u);
    if (r.ok()) continue;
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.error_code, static_cast<uint16_t>(errc::outcome_unknown));
    EXPECT_NE(r.error.find(outcome_unknown_advice), std::string::npos)
        << r.error;
  }
  std::this_thread::sleep_for(3200ms); // the late answer, for the record
  auto w = writes();
  EXPECT_EQ(w.size(), 100u);
  for (const auto& [id, n] : w)
    ASSERT_EQ(n, 1u) << id;
  EXPECT_EQ(bulk_requests(), out.summary->requests);
}

TEST_F(Bulk, MalformedOperation_ItsChunkRefusedBeforeAnyTrip_OthersAnswered) {
  client db{*sys, *eng, 30s};
  int chunk = 0;
  std::vector<uint64_t> firsts;
  auto r = db.bulk(
      bulk_open{coll_link},
      [&]() -> std::vector<batch_operation> {
        ++chunk;
        if (chunk == 1) return {create_of(0), create_of(1)};
        if (chunk == 2) {
          auto bad = create_of(3);
          bad.partition_key_json.clear();
          return {create_of(2), bad};
        }
        return {};
      },
      [&](uint64_t first, std::vector<bulk_op_result>&) {
        firsts.push_back(first);
      },
      1);
  ASSERT_FALSE(r);
  EXPECT_EQ(code_of(r.error()), errc::validation_error);
  EXPECT_NE(context_of(r.error()).find(
                "the chunk from operation 2: bulk on dbs/d/colls/c: "
                "bulk operation 1 (Create): a bulk operation needs its "
                "partition key"),
            std::string::npos)
      << describe(r.error());
  EXPECT_EQ(firsts, (std::vector<uint64_t>{0}));
  auto w = writes();
  EXPECT_EQ(w.size(), 2u) << "nothing of the refused chunk may be written";
}

TEST_F(Bulk, BadSessionOptions_RefusedBeforeAnyTrip) {
  auto open = [&](bulk_open o) {
    return ask<caf::actor>(eng->router(), 5s, route_atom_v, std::move(o));
  };
  auto r = open(bulk_open{"dbs/d"});
  ASSERT_FALSE(r);
  EXPECT_EQ(code_of(r.error()), errc::validation_error);
  EXPECT_NE(context_of(r.error()).find("not a collection link"),
            std::string::npos);
  bulk_open o{coll_link};
  o.options.max_operations_per_request = 500;
  r = open(o);
  ASSERT_FALSE(r);
  EXPECT_NE(context_of(r.error()).find("max_operations_per_request is 500"),
            std::string::npos)
      << describe(r.error());
  EXPECT_EQ(bulk_requests(), 0u);
}

TEST_F(Bulk, EveryKind_ItsOwnStatus) {
  client db{*sys, *eng, 30s};
  auto seed = load(3, 3);
  ASSERT_TRUE(seed.summary) << describe(seed.summary.error());
  auto with_key = [](batch_operation o, size_t n) {
    o.partition_key_json = json::array({"k" + std::to_string(n % 97)}).dump();
    return o;
  };
  std::vector<batch_operation> ops;
  ops.push_back(with_key({batch_op_kind::read, "doc0"}, 0));
  ops.push_back(with_key({batch_op_kind::replace, "doc1",
                          json{{"id", "doc1"}, {"pk", "k1"}, {"n", 10}}.dump()},
                         1));
  ops.push_back(with_key({batch_op_kind::remove, "doc2"}, 2));
  ops.push_back(with_key({batch_op_kind::patch, "doc0",
                          R"([{"op":"incr","path":"/n","value":5}])"},
                         0));
  ops.push_back(with_key(
      {batch_op_kind::upsert, "", json{{"id", "doc9"}, {"pk", "k9"}}.dump()},
      9));
  ops.push_back(create_of(0)); // exists: 409
  ops.push_back(with_key({batch_op_kind::read, "nobody"}, 4));
  bool given = false;
  std::vector<bulk_op_result> got;
  auto s = db.bulk(
      bulk_open{coll_link},
      [&] {
        if (given) return std::vector<batch_operation>{};
        given = true;
        return ops;
      },
      [&](uint64_t, std::vector<bulk_op_result>& rs) { got = std::move(rs); });
  ASSERT_TRUE(s) << describe(s.error());
  std::vector<int> statuses;
  for (const auto& r : got)
    statuses.push_back(r.status);
  EXPECT_EQ(statuses, (std::vector<int>{200, 200, 204, 200, 201, 409, 404}));
  EXPECT_EQ(s->succeeded, 5u);
  EXPECT_EQ(s->failed, 2u);
}

} // namespace bulk_integration_test
