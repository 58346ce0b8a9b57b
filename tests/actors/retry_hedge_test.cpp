// Metadata hedging in the retry actor (issue 18, item 3): a collection read,
// a query plan or the first pkranges page still unanswered after the
// threshold goes once more to the next region; the first region's definitive
// answer wins; a budget bounds the hedges in flight; the effects of every
// attempt run, also of one whose operation already ended. Virtual time: the
// checks sit between the steps.

#include "georoute/actors/retry.hpp"
#include "georoute/messages/error.hpp"
#include "tests/actors/actor_fixture.hpp"

// Named after the file as well: the unity build (tests/CMakeLists.txt)
// compiles it in one translation unit with other tests.
namespace retry_hedge_test {
namespace {

using namespace georoute;
using namespace georoute::test;
using namespace std::chrono_literals;

// A location cache that serves one table and records the marks it gets.
struct locations_log {
  location_snapshot initial;
  std::vector<region_mark> marks;
};

location_cache_actor::behavior_type
recording_locations(location_cache_actor::pointer self,
                    std::shared_ptr<locations_log> log) {
  return {
      [](account_atom, database_account&) {},
      [=](resolve_atom, resolve_input& in) {
        return log->initial.table->resolve(in, self->clock().now());
      },
      [](fleet_atom, fleet_demotion&) { return uint64_t{0}; },
      [=](mark_atom, region_mark& m) -> uint64_t {
        log->marks.push_back(m);
        return log->initial.version;
      },
      [=](subscribe_atom, caf::actor&) { return log->initial; },
      [](refresh_atom) { return false; },
  };
}

endpoint_manager_actor::behavior_type
answering_endpoints(endpoint_manager_actor::pointer,
                    std::shared_ptr<int> refreshes) {
  return {
      [=](refresh_atom, bool) {
        ++*refreshes;
        return three_region_account();
      },
      [=](refresh_atom, fresh_atom) {
        ++*refreshes;
        return three_region_account();
      },
      [](account_atom) { return three_region_account(); },
      [](stats_atom) { return endpoint_manager_stats{}; },
  };
}

metadata_request read_collection() {
  metadata_request r;
  r.what.kind = transport::attempt_kind::resource_read;
  r.what.resource = "/dbs/d/colls/c";
  r.kind = request_kind::metadata_read;
  return r;
}

metadata_request query_plan_request() {
  metadata_request r;
  r.what.kind = transport::attempt_kind::query_plan;
  r.what.resource = "dbs/d/colls/c";
  r.kind = request_kind::query_plan;
  r.what.body = R"({"query":"SELECT * FROM c"})";
  return r;
}

metadata_request pkranges_page(bool first) {
  metadata_request r;
  r.what.kind = transport::attempt_kind::pkranges_read;
  r.what.resource = "/dbs/wRUaAA==/colls/wRUaAK6VyWc=";
  r.what.rid_based = true;
  r.kind = request_kind::pkranges_read;
  r.policy = loop_policy::partition_range;
  r.first_page = first;
  return r;
}

retry_config on() {
  retry_config c;
  c.metadata_hedge.max_concurrent = 32;
  return c;
}

class RetryHedge : public actor_test {
protected:
  std::shared_ptr<locations_log> locs = std::make_shared<locations_log>();
  std::shared_ptr<int> refreshes = std::make_shared<int>(0);
  location_cache_actor locations;
  endpoint_manager_actor endpoints;
  retry_actor retry;

  // Metadata hedging is off by default; these tests turn it on (32 slots)
  // unless they set their own budget.
  void start(retry_config cfg = on()) {
    location_table_options lo;
    lo.default_endpoint = global_ep;
    lo.preferred_regions = {"West US", "East US", "North Europe"};
    auto t = location_table{lo}.with_account(three_region_account(),
                                             sys.clock().now());
    locs->initial = {std::make_shared<const location_table>(std::move(t)), 1};
    locations = sys.spawn(recording_locations, locs);
    endpoints = sys.spawn(answering_endpoints, refreshes);
    retry = spawn_retry(sys, cfg, {locations, endpoints, http, {}, {}, {}});
    run();
  }

  void TearDown() override {
    for (auto a : {caf::actor_cast<caf::actor>(retry),
                   caf::actor_cast<caf::actor>(locations),
                   caf::actor_cast<caf::actor>(endpoints)})
      self->send_exit(a, caf::exit_reason::user_shutdown);
    run();
  }

  retry_stats stats() {
    retry_stats result;
    auto h = self->request(retry, caf::infinite, stats_atom_v);
    run();
    receive_now(
        self, h, [&](retry_stats s) { result = s; },
        [](caf::error&) { ADD_FAILURE() << "stats failed"; });
    return result;
  }

  std::string endpoint_of(size_t i) { return http->at(i).request.endpoint; }

  void respond(size_t i, transport::outcome o) {
    http->respond(i, std::move(o));
    run();
  }

  // The marks the location cache got, by endpoint.
  std::vector<std::string> marked() {
    std::vector<std::string> r;
    for (auto& m : locs->marks)
      r.push_back(m.endpoint);
    return r;
  }
};

template <class Handle>
transport::outcome expect_ok(caf::scoped_actor& self, Handle& h) {
  transport::outcome got;
  receive_now(
      self, h, [&](transport::outcome& o) { got = o; },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  return got;
}

template <class Handle>
caf::error expect_error(caf::scoped_actor& self, Handle& h) {
  caf::error got;
  receive_now(
      self, h,
      [](transport::outcome& o) {
        ADD_FAILURE() << "unexpected success " << o.status;
      },
      [&](caf::error& e) { got = e; });
  return got;
}

// West hangs: its first attempt times out after 1 s and the ladder climbs
// in place (no mark: the same endpoint again, at once, with 5 s). At 1.5 s
// the hedge goes to East, which answers and wins. The operation is over, but
// its abandoned primary goes on up West's ladder until it ends: then West is
// marked.
TEST_F(RetryHedge, HungPrimary_HedgeWinsAtThreshold_LateTimeoutStillMarks) {
  start();
  auto h =
      self->request(retry, caf::infinite, execute_atom_v, read_collection());
  run();
  ASSERT_EQ(http->count(), 1u);
  EXPECT_EQ(endpoint_of(0), west_ep);
  advance(1s);
  respond(0, transport_failure(transport::failure::timeout));
  ASSERT_EQ(http->count(), 2u); // the ladder's next step, still on West
  EXPECT_EQ(endpoint_of(1), west_ep);
  EXPECT_EQ(http->at(1).request.timeout, 5s);
  EXPECT_TRUE(locs->marks.empty());
  advance(499ms);
  EXPECT_EQ(http->count(), 2u);
  EXPECT_EQ(stats().metadata_hedges_started, 0u);
  advance(1ms); // t = 1.5 s
  ASSERT_EQ(http->count(), 3u);
  EXPECT_EQ(endpoint_of(2), east_ep);
  EXPECT_EQ(http->at(2).request.target, "/dbs/d/colls/c");
  auto s = stats();
  EXPECT_EQ(s.metadata_hedges_started, 1u);
  EXPECT_EQ(s.metadata_hedge_slots, 1u);
  EXPECT_TRUE(self->mailbox().empty());
  advance(100ms);
  respond(2, ok_response(R"({"id":"c"})"));
  EXPECT_EQ(expect_ok(self, h).endpoint, east_ep);
  s = stats();
  EXPECT_EQ(s.metadata_hedges_won, 1u);
  EXPECT_EQ(s.metadata_hedge_slots, 0u);
  EXPECT_EQ(s.live, 0u);
  EXPECT_TRUE(locs->marks.empty());
  // West's abandoned attempt times out: its ladder's last step follows.
  advance(5s);
  respond(1, transport_failure(transport::failure::timeout));
  EXPECT_TRUE(locs->marks.empty());
  ASSERT_EQ(http->count(), 4u);
  EXPECT_EQ(endpoint_of(3), west_ep);
  EXPECT_EQ(http->at(3).request.timeout, 65s);
  // That one times out too: the ladder is spent, West is marked.
  advance(65s);
  respond(3, transport_failure(transport::failure::timeout));
  EXPECT_EQ(marked(), std::vector<std::string>{west_ep});
  s = stats();
  EXPECT_EQ(s.late_completions, 2u);
  EXPECT_EQ(s.marks, 1u);
  EXPECT_EQ(http->count(), 4u); // nothing more for an ended operation
}

// The hedge wins while West waits out its ladder's pause (after the 5 s
// step): the abandoned primary still sends its last step, and its timeout
// marks West. A longer threshold puts the hedge in that pause.
TEST_F(RetryHedge,
       HedgeWinsDuringTheLadderPause_AbandonedPrimaryStillMarksWest) {
  retry_config cfg = on();
  cfg.metadata_hedge.threshold = 6500ms;
  start(cfg);
  auto h =
      self->request(retry, caf::infinite, execute_atom_v, read_collection());
  run();
  advance(1s);
  respond(0, transport_failure(transport::failure::timeout));
  ASSERT_EQ(http->count(), 2u);
  advance(5s); // t = 6 s
  respond(1, transport_failure(transport::failure::timeout));
  EXPECT_EQ(http->count(), 2u); // a 1 s pause before the 65 s step
  EXPECT_TRUE(locs->marks.empty());
  advance(500ms); // t = 6.5 s
  ASSERT_EQ(http->count(), 3u);
  EXPECT_EQ(endpoint_of(2), east_ep);
  advance(100ms);
  respond(2, ok_response("{}"));
  EXPECT_EQ(expect_ok(self, h).endpoint, east_ep);
  EXPECT_EQ(stats().metadata_hedge_slots, 0u);
  ASSERT_EQ(http->count(), 4u); // the ladder's last step, abandoned
  EXPECT_EQ(endpoint_of(3), west_ep);
  EXPECT_EQ(http->at(3).request.timeout, 65s);
  EXPECT_TRUE(locs->marks.empty());
  advance(65s);
  respond(3, transport_failure(transport::failure::timeout));
  EXPECT_EQ(marked(), std::vector<std::string>{west_ep});
  EXPECT_EQ(http->count(), 4u);
}

// The primary's definitive 404 arrives while the hedge is out: it wins, the
// slot comes back at once, and the hedge's later 200 is dropped.
TEST_F(RetryHedge, PrimaryDefinitive_AfterHedgeStarted_Wins) {
  start();
  auto h =
      self->request(retry, caf::infinite, execute_atom_v, read_collection());
  run();
  advance(1500ms);
  ASSERT_EQ(http->count(), 2u);
  EXPECT_EQ(stats().metadata_hedge_slots, 1u);
  respond(0, status_response(404));
  EXPECT_EQ(code_of(expect_error(self, h)), errc::not_found);
  auto s = stats();
  EXPECT_EQ(s.metadata_hedges_won, 0u);
  EXPECT_EQ(s.metadata_hedge_slots, 0u); // released with the operation
  respond(1, ok_response("{}"));
  s = stats();
  EXPECT_EQ(s.late_completions, 1u);
  EXPECT_EQ(s.metadata_hedges_won, 0u);
  EXPECT_TRUE(locs->marks.empty());
}

// The hedge's success arrives first: it wins; the primary's later 404 is
// dropped.
TEST_F(RetryHedge, HedgeSuccessFirst_Wins_PrimaryLate404Dropped) {
  start();
  auto h =
      self->request(retry, caf::infinite, execute_atom_v, read_collection());
  run();
  advance(1500ms);
  ASSERT_EQ(http->count(), 2u);
  respond(1, ok_response(R"({"id":"c"})"));
  EXPECT_EQ(expect_ok(self, h).endpoint, east_ep);
  respond(0, status_response(404));
  auto s = stats();
  EXPECT_EQ(s.metadata_hedges_won, 1u);
  EXPECT_EQ(s.late_completions, 1u);
  EXPECT_EQ(s.metadata_hedge_slots, 0u);
  EXPECT_TRUE(locs->marks.empty());
}

// The hedge's 404 does not end the operation while the primary is out: the
// primary's later 200 is the answer.
TEST_F(RetryHedge, Hedge404_WhilePrimaryOut_WaitsForThePrimary) {
  start();
  auto h =
      self->request(retry, caf::infinite, execute_atom_v, read_collection());
  run();
  advance(1500ms);
  ASSERT_EQ(http->count(), 2u);
  respond(1, status_response(404));
  EXPECT_TRUE(self->mailbox().empty());
  EXPECT_EQ(stats().metadata_hedge_slots, 0u); // the hedge answered
  advance(1s);
  EXPECT_TRUE(self->mailbox().empty());
  respond(0, ok_response(R"({"id":"c"})"));
  EXPECT_EQ(expect_ok(self, h).endpoint, west_ep);
  EXPECT_EQ(stats().metadata_hedges_won, 0u);
  EXPECT_EQ(http->count(), 2u);
}

// The hedge's 404 waits; then the primary fails for its region: the hedge's
// answer is taken (no third region is asked).
TEST_F(RetryHedge, Hedge404_ThenPrimaryFailsRegionally_HedgeAnswerTaken) {
  start();
  auto h =
      self->request(retry, caf::infinite, execute_atom_v, read_collection());
  run();
  advance(1500ms);
  respond(1, status_response(404));
  EXPECT_TRUE(self->mailbox().empty());
  respond(0, transport_failure(transport::failure::refused));
  auto e = expect_error(self, h);
  EXPECT_EQ(code_of(e), errc::not_found) << caf::to_string(e);
  EXPECT_EQ(stats().metadata_hedges_won, 1u);
  EXPECT_EQ(http->count(), 2u);
  // West's refused connection still marked it.
  EXPECT_EQ(marked(), std::vector<std::string>{west_ep});
}

// The primary fails for its region while the hedge is out: its own retry
// would go where the hedge already is, so it waits; the hedge answers.
TEST_F(RetryHedge, PrimaryFailsWhileHedgeOut_NoSecondRequestToTheHedgeRegion) {
  start();
  auto h =
      self->request(retry, caf::infinite, execute_atom_v, read_collection());
  run();
  advance(1500ms);
  ASSERT_EQ(http->count(), 2u);
  respond(0, status_response(503));
  advance(2s); // longer than any failover pause
  EXPECT_EQ(http->count(), 2u);
  EXPECT_TRUE(self->mailbox().empty());
  respond(1, ok_response("{}"));
  EXPECT_EQ(expect_ok(self, h).endpoint, east_ep);
  EXPECT_EQ(stats().metadata_hedges_won, 1u);
}

// The primary fails for its region before the threshold: the loop's own
// cross-region retry goes to East, and no hedge follows it.
TEST_F(RetryHedge, PrimaryFailsBeforeThreshold_LoopRetries_NoHedge) {
  start();
  auto h =
      self->request(retry, caf::infinite, execute_atom_v, read_collection());
  run();
  advance(200ms);
  respond(0, status_response(503));
  advance(1s);
  ASSERT_EQ(http->count(), 2u);
  EXPECT_EQ(endpoint_of(1), east_ep);
  advance(3s); // the hedge's time has long passed
  EXPECT_EQ(http->count(), 2u);
  EXPECT_EQ(stats().metadata_hedges_started, 0u);
  respond(1, ok_response("{}"));
  expect_ok(self, h);
}

TEST_F(RetryHedge, QueryPlan_IsHedged) {
  start();
  auto h =
      self->request(retry, caf::infinite, execute_atom_v, query_plan_request());
  run();
  advance(1499ms);
  EXPECT_EQ(http->count(), 1u);
  advance(1ms);
  ASSERT_EQ(http->count(), 2u);
  EXPECT_EQ(endpoint_of(1), east_ep);
  EXPECT_EQ(http->at(1).request.method, "POST");
  EXPECT_EQ(http->at(1).request.body, http->at(0).request.body);
  respond(1, ok_response("{}"));
  EXPECT_EQ(expect_ok(self, h).endpoint, east_ep);
  EXPECT_EQ(stats().metadata_hedges_won, 1u);
}

TEST_F(RetryHedge, FirstPkrangesPage_IsHedged_LaterPageIsNot) {
  start();
  auto first =
      self->request(retry, caf::infinite, execute_atom_v, pkranges_page(true));
  run();
  advance(1500ms);
  ASSERT_EQ(http->count(), 2u);
  EXPECT_EQ(endpoint_of(1), east_ep);
  respond(1, ok_response(R"({"PartitionKeyRanges":[]})"));
  EXPECT_EQ(expect_ok(self, first).endpoint, east_ep);
  auto second =
      self->request(retry, caf::infinite, execute_atom_v, pkranges_page(false));
  run();
  ASSERT_EQ(http->count(), 3u);
  advance(3s);
  EXPECT_EQ(http->count(), 3u); // no hedge for a later page
  respond(2, ok_response(R"({"PartitionKeyRanges":[]})"));
  expect_ok(self, second);
  EXPECT_EQ(stats().metadata_hedges_started, 1u);
}

// One slot: the second slow operation is refused a hedge (counted) and ends
// through its primary; every slot is back once the operations ended.
TEST_F(RetryHedge, Budget_SecondSlowOperationRefused_SlotsReturnToZero) {
  retry_config cfg;
  cfg.metadata_hedge.max_concurrent = 1;
  start(cfg);
  auto h1 =
      self->request(retry, caf::infinite, execute_atom_v, read_collection());
  run();
  advance(100ms);
  auto h2 =
      self->request(retry, caf::infinite, execute_atom_v, query_plan_request());
  run();
  ASSERT_EQ(http->count(), 2u);
  advance(1400ms); // t = 1.5 s: op 1 hedged
  ASSERT_EQ(http->count(), 3u);
  EXPECT_EQ(endpoint_of(2), east_ep);
  auto s = stats();
  EXPECT_EQ(s.metadata_hedges_started, 1u);
  EXPECT_EQ(s.metadata_hedge_slots, 1u);
  EXPECT_EQ(s.metadata_hedges_refused, 0u);
  advance(100ms); // t = 1.6 s: op 2 is due, no slot
  EXPECT_EQ(http->count(), 3u);
  s = stats();
  EXPECT_EQ(s.metadata_hedges_refused, 1u);
  EXPECT_EQ(s.metadata_hedges_started, 1u);
  respond(1, ok_response("{}")); // op 2's primary
  EXPECT_EQ(expect_ok(self, h2).endpoint, west_ep);
  respond(2, ok_response("{}")); // op 1's hedge
  EXPECT_EQ(expect_ok(self, h1).endpoint, east_ep);
  s = stats();
  EXPECT_EQ(s.metadata_hedge_slots, 0u);
  EXPECT_EQ(s.live, 0u);
  respond(0, ok_response("{}")); // op 1's abandoned primary
  s = stats();
  EXPECT_EQ(s.metadata_hedge_slots, 0u);
  EXPECT_EQ(s.late_completions, 1u);
  // The slot is free again: a third slow operation is hedged.
  auto h3 =
      self->request(retry, caf::infinite, execute_atom_v, read_collection());
  run();
  advance(1500ms);
  ASSERT_EQ(http->count(), 5u);
  EXPECT_EQ(stats().metadata_hedges_started, 2u);
  respond(3, ok_response("{}"));
  expect_ok(self, h3);
  EXPECT_EQ(stats().metadata_hedge_slots, 0u);
}

TEST_F(RetryHedge, ZeroBudget_TurnsMetadataHedgingOff) {
  retry_config cfg;
  cfg.metadata_hedge.max_concurrent = 0;
  start(cfg);
  auto h =
      self->request(retry, caf::infinite, execute_atom_v, read_collection());
  run();
  advance(3s);
  EXPECT_EQ(http->count(), 1u);
  auto s = stats();
  EXPECT_EQ(s.metadata_hedges_started, 0u);
  EXPECT_EQ(s.metadata_hedges_refused, 0u);
  respond(0, ok_response("{}"));
  expect_ok(self, h);
}

// Nothing slow: one request per operation, no hedge, ever.
TEST_F(RetryHedge, FastPrimary_NoHedge_OneRequestPerOperation) {
  start();
  for (auto req :
       {read_collection(), query_plan_request(), pkranges_page(true)}) {
    auto before = http->count();
    auto h = self->request(retry, caf::infinite, execute_atom_v, req);
    run();
    advance(100ms);
    ASSERT_EQ(http->count(), before + 1);
    respond(before, ok_response("{}"));
    expect_ok(self, h);
    advance(5s);
    EXPECT_EQ(http->count(), before + 1);
  }
  auto s = stats();
  EXPECT_EQ(s.operations, 3u);
  EXPECT_EQ(s.attempts, 3u);
  EXPECT_EQ(s.metadata_hedges_started, 0u);
  EXPECT_EQ(s.metadata_hedges_refused, 0u);
  EXPECT_EQ(s.metadata_hedge_slots, 0u);
}

// The hedge's own regional failure marks its region; the primary then wins.
TEST_F(RetryHedge, HedgeRegionalFailure_MarksItsRegion_PrimaryGoesOn) {
  start();
  auto h =
      self->request(retry, caf::infinite, execute_atom_v, read_collection());
  run();
  advance(1500ms);
  ASSERT_EQ(http->count(), 2u);
  respond(1, transport_failure(transport::failure::refused));
  EXPECT_EQ(marked(), std::vector<std::string>{east_ep});
  EXPECT_TRUE(self->mailbox().empty());
  respond(0, ok_response("{}"));
  EXPECT_EQ(expect_ok(self, h).endpoint, west_ep);
  EXPECT_EQ(stats().metadata_hedges_won, 0u);
}

// The hedge's refusal asks for what its loop asks for, as a data-plane hedge
// arm's does: the region is marked and the account refreshed (the router's
// twin: Router.HedgeArmRefused_MarksAndRefreshes).
TEST_F(RetryHedge, HedgeRegionalFailure_MarksAndRefreshes) {
  start();
  auto h =
      self->request(retry, caf::infinite, execute_atom_v, read_collection());
  run();
  advance(1500ms);
  ASSERT_EQ(http->count(), 2u);
  EXPECT_EQ(*refreshes, 0);
  respond(1, transport_failure(transport::failure::refused));
  EXPECT_EQ(marked(), std::vector<std::string>{east_ep});
  EXPECT_EQ(*refreshes, 1) << "the hedge's refusal refreshed nothing";
  respond(0, ok_response("{}"));
  EXPECT_EQ(expect_ok(self, h).endpoint, west_ep);
}

} // namespace
} // namespace retry_hedge_test
