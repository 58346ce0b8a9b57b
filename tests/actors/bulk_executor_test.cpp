// The bulk executor in virtual time. Its router is a fake that records
// every bulk request and is answered by hand; its caches answer at once
// (one collection, one range that may split). Each test checks what went
// out between the scheduler's steps, so a request the executor holds back
// (a throttle's retry-after, one request at a time while operations wait,
// a probe) is seen at the moment it is due, and a send that should not
// happen is seen when it would have.

#include "georoute/actors/bulk_executor.hpp"
#include "georoute/messages/error.hpp"
#include "tests/actors/actor_fixture.hpp"
#include "tests/actors/fake_caches.hpp"

#include <nlohmann/json.hpp>

namespace bulk_executor_test {

using namespace georoute;
using namespace georoute::test;
using namespace std::chrono_literals;

/// Makes the fake router fail request `i` with an error.
using refuse_atom = caf::atom_constant<caf::atom("refuse")>;
constexpr refuse_atom refuse_atom_v = refuse_atom{};

/// What the fake router was asked, and the promises it holds.
struct router_log {
  std::vector<data_request> requests;
  std::vector<caf::response_promise> promises;
};

// A router that records every request and answers only when the test says.
caf::behavior recording_router(caf::event_based_actor* self,
                               std::shared_ptr<router_log> log) {
  return {
      [self, log](route_atom, data_request& d) -> caf::result<data_response> {
        log->requests.push_back(d);
        log->promises.push_back(self->make_response_promise());
        return log->promises.back();
      },
      [log](answer_atom, uint64_t i, data_response& r) {
        log->promises.at(i).deliver(std::move(r));
      },
      [log](refuse_atom, uint64_t i, caf::error& e) {
        log->promises.at(i).deliver(std::move(e));
      },
  };
}

// One operation's answer in a bulk response.
std::string created() {
  return R"({"statusCode":201,"requestCharge":1})";
}
std::string throttled(int64_t retry_after_ms) {
  return R"({"statusCode":429,"subStatusCode":3200,"retryAfterMilliseconds":)" +
         std::to_string(retry_after_ms) + "}";
}

data_response bulk_answer(const std::vector<std::string>& items) {
  data_response r;
  r.status = 200;
  r.body = "[";
  for (const auto& i : items) {
    if (r.body.size() > 1) r.body += ',';
    r.body += i;
  }
  r.body += ']';
  return r;
}

class BulkExecutor : public actor_test {
protected:
  std::shared_ptr<router_log> log = std::make_shared<router_log>();
  std::shared_ptr<int> map_reads = std::make_shared<int>(0);
  caf::actor router = sys.spawn(recording_router, log);
  collection_cache_actor colls =
      sys.spawn(one_collection_cache, one_collection());
  pkrange_cache_actor ranges = sys.spawn(splitting_range_cache, map_reads);
  bulk_actor exec;
  std::vector<bulk_chunk_result> results;
  std::vector<caf::error> errors;

  /// A session with `o` (pending and budget filled in) and `t`.
  void open(bulk_options o, throttle_options t = {}) {
    if (o.max_pending_operations == 0) o.max_pending_operations = 1000;
    if (o.budget_ms == 0) o.budget_ms = 60'000;
    bulk_session s;
    s.collection_link = "dbs/d/colls/c";
    s.options = o;
    s.throttle = t;
    exec = caf::actor_cast<bulk_actor>(spawn_bulk_executor(
        sys, {caf::actor_cast<router_actor>(router), colls, ranges}, s));
    run();
  }

  /// Hands the session a chunk of creates "d<first>".."d<first+n-1>" and
  /// runs; its answer is collected by `collect`.
  void submit(size_t n, size_t first = 0) {
    bulk_chunk c;
    for (size_t k = first; k < first + n; ++k) {
      batch_operation op;
      op.kind = batch_op_kind::create;
      op.body = R"({"id":"d)" + std::to_string(k) + R"(","pk":"p)" +
                std::to_string(k) + R"("})";
      op.partition_key_json = R"(["p)" + std::to_string(k) + R"("])";
      c.operations.push_back(std::move(op));
    }
    self->send(exec, route_atom_v, std::move(c));
    run();
  }

  /// Takes every chunk answer that has arrived; how many there were.
  size_t collect() {
    size_t n = 0;
    while (!self->mailbox().empty()) {
      self->receive([&](bulk_chunk_result& r) { results.push_back(r); },
                    [&](caf::error& e) { errors.push_back(e); });
      ++n;
    }
    return n;
  }

  size_t sent() const { return log->requests.size(); }

  /// The session's counters now.
  bulk_summary summary() {
    bulk_summary out;
    auto h = self->request(exec, caf::infinite, stats_atom_v);
    run();
    receive_now(
        self, h, [&](bulk_summary& s) { out = s; },
        [](caf::error& e) { ADD_FAILURE() << to_string(e); });
    return out;
  }

  /// The document ids request `i` carried, in its order.
  std::vector<std::string> carried(size_t i) const {
    std::vector<std::string> ids;
    auto body = nlohmann::json::parse(log->requests.at(i).body);
    for (const auto& op : body)
      ids.push_back(op["resourceBody"]["id"].get<std::string>());
    return ids;
  }

  void answer(size_t i, const std::vector<std::string>& items) {
    self->send(router, answer_atom_v, uint64_t{i}, bulk_answer(items));
    run();
  }

  /// Answers request `i` 201 for each operation it carried.
  void all_created(size_t i) {
    answer(i, std::vector<std::string>(carried(i).size(), created()));
  }

  void refuse(size_t i, errc code) {
    self->send(router, refuse_atom_v, uint64_t{i},
               make_error(code, "injected " + std::string{to_string(code)}));
    run();
  }

  void TearDown() override {
    for (auto a : {caf::actor_cast<caf::actor>(exec), router,
                   caf::actor_cast<caf::actor>(colls),
                   caf::actor_cast<caf::actor>(ranges)})
      if (a) self->send_exit(a, caf::exit_reason::user_shutdown);
    run();
  }
};

using ids = std::vector<std::string>;

// ---------------------------------------------------------------------------
// How full a request gets, and the congestion window that paces them.

TEST_F(BulkExecutor,
       Requests_FilledUpToTheOperationLimit_WindowGrowsPerAnswer) {
  bulk_options o;
  o.max_operations_per_request = 2;
  open(o);
  submit(7);
  ASSERT_EQ(sent(), 1u); // the window starts at one request
  EXPECT_EQ(carried(0), (ids{"d0", "d1"}));
  EXPECT_EQ(log->requests[0].op, data_op::bulk);
  EXPECT_EQ(log->requests[0].range_id, "0");
  all_created(0); // a clear answer: the window is two
  ASSERT_EQ(sent(), 3u);
  EXPECT_EQ(carried(1), (ids{"d2", "d3"}));
  EXPECT_EQ(carried(2), (ids{"d4", "d5"}));
  all_created(1);
  ASSERT_EQ(sent(), 4u);
  EXPECT_EQ(carried(3), (ids{"d6"}));
  EXPECT_EQ(collect(), 0u);
  all_created(2);
  all_created(3);
  ASSERT_EQ(collect(), 1u);
  ASSERT_EQ(results[0].results.size(), 7u);
  for (const auto& r : results[0].results)
    EXPECT_EQ(r.status, 201);
}

TEST_F(BulkExecutor, Requests_ClosedByBytes_FirstAlwaysGoes) {
  bulk_options o;
  o.max_request_bytes = 1024;
  open(o);
  bulk_chunk c;
  for (int k = 0; k < 3; ++k) {
    batch_operation op;
    op.kind = batch_op_kind::create;
    // About 600 bytes of JSON each: two do not fit in 1024.
    op.body = R"({"id":"d)" + std::to_string(k) + R"(","pk":"p","pad":")" +
              std::string(k == 0 ? 1500 : 550, 'x') + R"("})";
    op.partition_key_json = R"(["p"])";
    c.operations.push_back(std::move(op));
  }
  self->send(exec, route_atom_v, std::move(c));
  run();
  ASSERT_EQ(sent(), 1u);
  EXPECT_EQ(carried(0), (ids{"d0"})); // larger than the limit: alone
  all_created(0);
  ASSERT_EQ(sent(), 3u);
  EXPECT_EQ(carried(1), (ids{"d1"}));
  EXPECT_EQ(carried(2), (ids{"d2"}));
}

// ---------------------------------------------------------------------------
// 429: the operation's own retry-after, the queue in order, the budget.

TEST_F(BulkExecutor, Throttled_WaitsItsRetryAfter_AndHoldsBackTheQueue) {
  bulk_options o;
  o.max_operations_per_request = 1;
  open(o);
  submit(3);
  ASSERT_EQ(sent(), 1u);
  answer(0, {throttled(50)});
  // d0 waits at the front: d1 and d2 behind it wait too.
  EXPECT_EQ(sent(), 1u);
  advance(49ms);
  EXPECT_EQ(sent(), 1u);
  advance(1ms);
  ASSERT_EQ(sent(), 2u);
  EXPECT_EQ(carried(1), (ids{"d0"}));
  all_created(1); // the window, cut to one by the 429, grows to two
  ASSERT_EQ(sent(), 4u);
  EXPECT_EQ(carried(2), (ids{"d1"}));
  EXPECT_EQ(carried(3), (ids{"d2"}));
}

TEST_F(BulkExecutor, Throttled_RetryAfterPastItsBudget_DeadlineExceededAtOnce) {
  bulk_options o;
  o.budget_ms = 1000;
  open(o);
  submit(1);
  advance(500ms);
  answer(0, {throttled(600)});
  ASSERT_EQ(collect(), 1u);
  EXPECT_EQ(results[0].results[0].error_code,
            static_cast<uint16_t>(errc::deadline_exceeded));
  EXPECT_EQ(sent(), 1u);
}

TEST_F(BulkExecutor, Throttled_BudgetSpent_The429IsItsResult) {
  bulk_options o;
  throttle_options t;
  t.max_attempts = 1;
  open(o, t);
  submit(1);
  answer(0, {throttled(20)});
  EXPECT_EQ(collect(), 0u);
  advance(20ms);
  ASSERT_EQ(sent(), 2u);
  answer(1, {throttled(20)}); // a second charged 429: over one retry
  ASSERT_EQ(collect(), 1u);
  EXPECT_EQ(results[0].results[0].status, 429);
  EXPECT_EQ(results[0].results[0].sends, 2u);
}

// The budget is evaluate_throttle's: a single wait must stay below
// georoute.throttle-max-wait (the executor's own budget let a wait equal
// to it through).
TEST_F(BulkExecutor, Throttled_OneWaitEqualToTheMaxWait_The429IsItsResult) {
  bulk_options o;
  throttle_options t;
  t.max_wait = 1000ms;
  open(o, t);
  submit(2);
  answer(0, {throttled(1000), throttled(999)});
  EXPECT_EQ(collect(), 0u); // d1 waits
  advance(100ms);           // and is probed alone
  ASSERT_EQ(sent(), 2u);
  EXPECT_EQ(carried(1), (ids{"d1"}));
  all_created(1);
  ASSERT_EQ(collect(), 1u);
  EXPECT_EQ(results[0].results[0].status, 429);
  EXPECT_EQ(results[0].results[0].sends, 1u);
  EXPECT_EQ(results[0].results[1].status, 201);
}

// ---------------------------------------------------------------------------
// Pacing after a throttle.

// While any operation waits after a throttle, a range has one request in
// flight, however large its window.
TEST_F(BulkExecutor, Backlog_OneRequestInFlight_EvenWithRoomInTheWindow) {
  bulk_options o;
  o.max_operations_per_request = 1;
  open(o);
  submit(12);
  all_created(0); // window 2: r1, r2
  ASSERT_EQ(sent(), 3u);
  all_created(1); // window 3: r3, r4
  ASSERT_EQ(sent(), 5u);
  all_created(2); // window 4: r5, r6
  ASSERT_EQ(sent(), 7u);
  // r3 (d3) throttled: the window halves to 2 with r4, r5, r6 out.
  answer(3, {throttled(10)});
  EXPECT_EQ(sent(), 7u);
  advance(10ms); // d3's retry-after has passed; the window is still full
  EXPECT_EQ(sent(), 7u);
  all_created(4); // one clear answer: the window stays 2, one out... full
  EXPECT_EQ(sent(), 7u);
  all_created(5); // the window grows to 3 with r6 out: room, but d3 waits
  EXPECT_EQ(sent(), 7u);
  all_created(6); // none out: d3 goes, and with it the backlog is gone
  ASSERT_GE(sent(), 8u);
  EXPECT_EQ(carried(7), (ids{"d3"}));
  EXPECT_EQ(sent(), 10u); // window 3
  EXPECT_EQ(carried(8), (ids{"d7"}));
  EXPECT_EQ(carried(9), (ids{"d8"}));
}

// A front that would wait long after the range's last request is sent
// alone once that request is 100 ms old; a clear probe releases every
// operation that waits.
TEST_F(BulkExecutor, LongRetryAfter_ProbedAlone_ClearProbeReleasesAll) {
  open(bulk_options{});
  submit(4);
  ASSERT_EQ(sent(), 1u);
  answer(0,
         {throttled(5000), throttled(5000), throttled(5000), throttled(5000)});
  EXPECT_EQ(sent(), 1u);
  advance(99ms);
  EXPECT_EQ(sent(), 1u);
  advance(1ms);
  ASSERT_EQ(sent(), 2u);
  EXPECT_EQ(carried(1), (ids{"d0"}));
  all_created(1);
  ASSERT_EQ(sent(), 3u); // long before their retry-afters
  EXPECT_EQ(carried(2), (ids{"d1", "d2", "d3"}));
}

// A throttled probe releases nothing: the others keep their retry-afters.
TEST_F(BulkExecutor, LongRetryAfter_ThrottledProbe_OthersKeepWaiting) {
  open(bulk_options{});
  submit(3);
  answer(0, {throttled(1000), throttled(1000), throttled(1000)});
  advance(100ms);
  ASSERT_EQ(sent(), 2u);
  EXPECT_EQ(carried(1), (ids{"d0"}));
  answer(1, {throttled(10)});
  advance(9ms);
  EXPECT_EQ(sent(), 2u);
  advance(1ms); // d0 goes again; d1 and d2 still wait for 1000 ms
  ASSERT_EQ(sent(), 3u);
  EXPECT_EQ(carried(2), (ids{"d0"}));
}

// A clear answer while operations wait releases twice as many as it
// carried, whatever their retry-afters say.
TEST_F(BulkExecutor,
       ClearAnswerWhileOperationsWait_ReleasesTwiceWhatItCarried) {
  bulk_options o;
  o.max_operations_per_request = 3;
  throttle_options t;
  t.max_attempts = 1;
  open(o, t);
  submit(7);
  ASSERT_EQ(carried(0), (ids{"d0", "d1", "d2"}));
  all_created(0); // window 2: r1 (d3..d5), r2 (d6)
  ASSERT_EQ(sent(), 3u);
  ASSERT_EQ(carried(2), (ids{"d6"}));
  answer(1, {throttled(5000), throttled(5000), throttled(5000)});
  EXPECT_EQ(sent(), 3u);
  all_created(2); // carried one: two of the three waiting go now
  ASSERT_EQ(sent(), 4u);
  EXPECT_EQ(carried(3), (ids{"d3", "d4"}));
  // Released early and throttled again: not charged, so they wait again
  // rather than end with their 429.
  answer(3, {throttled(50), throttled(50)});
  EXPECT_EQ(summary().failed, 0u);
  advance(50ms);
  ASSERT_EQ(sent(), 5u);
  EXPECT_EQ(carried(4), (ids{"d3", "d4"}));
}

// An operation sent early (released, or a probe) and throttled again is not
// charged: with one throttle retry allowed it still goes again.
TEST_F(BulkExecutor, SentEarlyAndThrottledAgain_NotCharged) {
  bulk_options o;
  throttle_options t;
  t.max_attempts = 1;
  open(o, t);
  submit(2);
  answer(0, {throttled(5000), throttled(5000)}); // charged: one each
  advance(100ms);
  ASSERT_EQ(sent(), 2u);
  EXPECT_EQ(carried(1), (ids{"d0"})); // the probe, early
  answer(1, {throttled(50)});
  EXPECT_EQ(summary().failed, 0u); // not charged: it waits again
  advance(49ms);
  EXPECT_EQ(sent(), 2u);
  advance(1ms);
  ASSERT_EQ(sent(), 3u);
  EXPECT_EQ(carried(2), (ids{"d0"}));
}

// ---------------------------------------------------------------------------
// Whole-request failures (classify_bulk_failure).

TEST_F(BulkExecutor, EngineOverloaded_SentAgainAfterThePause) {
  open(bulk_options{});
  submit(2);
  refuse(0, errc::overloaded);
  EXPECT_EQ(sent(), 1u);
  advance(99ms);
  EXPECT_EQ(sent(), 1u);
  advance(1ms);
  ASSERT_EQ(sent(), 2u);
  EXPECT_EQ(carried(1), (ids{"d0", "d1"}));
  EXPECT_EQ(collect(), 0u);
}

// An engine refusal that came back a little after its request left: the
// operations that were never throttled are probed at 100 ms like a
// throttled front, and afterwards the range is paced by its window alone.
TEST_F(BulkExecutor, LateEngineOverloaded_ThenTheWindowAlonePaces) {
  bulk_options o;
  o.max_operations_per_request = 1;
  open(o);
  submit(4);
  advance(5ms);
  refuse(0, errc::overloaded); // d0 again at 105 ms; probed at 100 ms
  advance(95ms);
  ASSERT_EQ(sent(), 2u);
  EXPECT_EQ(carried(1), (ids{"d0"}));
  all_created(1); // the window grows to two: two requests at once
  ASSERT_EQ(sent(), 4u);
  EXPECT_EQ(carried(2), (ids{"d1"}));
  EXPECT_EQ(carried(3), (ids{"d2"}));
}

TEST_F(BulkExecutor, DefiniteRefusal_EachOperationFailsWithIt_NotSentAgain) {
  open(bulk_options{});
  submit(2);
  refuse(0, errc::bad_request);
  ASSERT_EQ(collect(), 1u);
  for (const auto& r : results[0].results) {
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.error_code, static_cast<uint16_t>(errc::bad_request));
  }
  EXPECT_EQ(sent(), 1u);
}

TEST_F(BulkExecutor, MayHaveRun_EachOperationOutcomeUnknown_NotSentAgain) {
  open(bulk_options{});
  submit(2);
  refuse(0, errc::service_unavailable);
  ASSERT_EQ(collect(), 1u);
  for (const auto& r : results[0].results) {
    EXPECT_EQ(r.error_code, static_cast<uint16_t>(errc::outcome_unknown));
    EXPECT_NE(r.error.find(outcome_unknown_advice), std::string::npos);
  }
  advance(10s);
  EXPECT_EQ(sent(), 1u);
}

TEST_F(BulkExecutor, RangeGone_MapReadAgain_OperationsRegrouped) {
  open(bulk_options{});
  submit(6);
  ASSERT_EQ(sent(), 1u);
  ASSERT_EQ(*map_reads, 1);
  refuse(0, errc::partition_range_gone);
  EXPECT_EQ(*map_reads, 2);
  ASSERT_GE(sent(), 2u);
  size_t resent = 0;
  for (size_t i = 1; i < sent(); ++i) {
    EXPECT_NE(log->requests[i].range_id, "0");
    resent += carried(i).size();
  }
  EXPECT_EQ(resent, 6u);
  EXPECT_EQ(collect(), 0u);
}

} // namespace bulk_executor_test
