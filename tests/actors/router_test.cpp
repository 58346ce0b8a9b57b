// The request router in virtual time: its collaborators are fakes that
// answer at once (one collection, one range), its HTTP port is answered by
// hand, and time moves only when a test advances it. Each test checks what
// went out and what was answered between the steps, so a decision the
// router defers (a budget, a hedge, an abandoned ladder step) is seen at
// the moment it is due, not only once everything has run.

#include "georoute/actors/fleet.hpp"
#include "georoute/actors/location_cache.hpp"
#include "georoute/actors/log.hpp"
#include "georoute/actors/policy/epk.hpp"
#include "georoute/actors/policy/routing_map.hpp"
#include "georoute/actors/router.hpp"
#include "georoute/messages/error.hpp"
#include "tests/actors/actor_fixture.hpp"
#include "tests/actors/fake_caches.hpp"

#include <nlohmann/json.hpp>

namespace {

using namespace georoute;
using namespace georoute::test;
using namespace std::chrono_literals;

const std::string coll_rid = "aaaaAAAAAAA=";

collection_info the_collection() {
  collection_info c;
  c.id = "c";
  c.rid = coll_rid;
  c.self = "dbs/aaaaAA==/colls/" + coll_rid + "/";
  c.partition_key.paths = {"/pk"};
  return c;
}

// A partition-range cache whose collections have one range over all EPKs,
// in a map of version `etag`.
pkrange_cache_actor::behavior_type fake_pkranges(pkrange_cache_actor::pointer,
                                                 std::string etag) {
  return {
      [etag](pkranges_atom, const std::string& rid, const std::string&) {
        partition_key_range whole;
        whole.id = "0";
        whole.min_inclusive = "";
        whole.max_exclusive = "FF";
        auto map = routing_map::create_complete({whole}, etag);
        routing_snapshot s;
        s.collection_rid = rid;
        s.map = std::make_shared<const routing_map>(std::move(map.value()));
        return s;
      },
      [](overlap_atom, const std::string&, const epk_range&, bool) {
        return std::vector<partition_key_range>{};
      },
      [](stats_atom) { return pkrange_cache_stats{}; },
  };
}

// West US and East US both take writes.
database_account multi_write_account() {
  auto a = three_region_account();
  a.writable = {{"West US", west_ep}, {"East US", east_ep}};
  a.enable_multiple_write_locations = true;
  return a;
}

// The tracking id the router put into a write's body.
std::string tracking_id_of(const std::string& body) {
  const std::string key = R"("_trackingId":")";
  auto at = body.find(key);
  if (at == std::string::npos) return {};
  return body.substr(at + key.size(), 32);
}

// A caller actor that asks the router with its own timeout and records
// what it got: "ok", "timeout" or the error text.
struct caller_log {
  std::vector<std::string> got;
};

caf::behavior caller(caf::event_based_actor* self, router_actor router,
                     caf::timespan timeout, data_request req,
                     std::shared_ptr<caller_log> log) {
  self->request(router, timeout, route_atom_v, std::move(req))
      .then([log](data_response&) { log->got.push_back("ok"); },
            [log](caf::error& e) {
              log->got.push_back(
                  e == caf::sec::request_timeout ? "timeout" : context_of(e));
            });
  return {[](caf::ok_atom) {}};
}

// A create with write retries on: it carries a tracking id.
data_request tracked_create() {
  data_request r;
  r.op = data_op::create;
  r.collection_link = "dbs/d/colls/c";
  r.body = R"({"id":"doc1","pk":"p0"})";
  r.options.partition_key_json = R"(["p0"])";
  r.options.write_retries = 1;
  r.options.hedge = 0; // tests that hedge say so
  return r;
}

data_request read_doc() {
  data_request r;
  r.op = data_op::read;
  r.collection_link = "dbs/d/colls/c";
  r.id = "doc1";
  r.options.partition_key_json = R"(["p0"])";
  r.options.hedge = 0; // tests that hedge say so
  return r;
}

class Router : public actor_test {
protected:
  std::shared_ptr<refresh_log> refreshes = std::make_shared<refresh_log>();
  location_cache_actor locations;
  endpoint_manager_actor endpoints;
  collection_cache_actor collections;
  pkrange_cache_actor pkranges;
  router_actor router;

  // Reads prefer West US, then East US, then North Europe.
  // `with_endpoints` false: an engine without an endpoint manager.
  // `ranges`: a partition-range cache of the test's (default: one range).
  void start(router_config cfg = {},
             database_account account = three_region_account(),
             bool with_endpoints = true, pkrange_cache_actor ranges = {}) {
    location_table_options lo;
    lo.default_endpoint = global_ep;
    lo.preferred_regions = {"West US", "East US", "North Europe"};
    locations = spawn_location_cache(sys, lo);
    refreshes->serves = account;
    self->send(locations, account_atom_v, account);
    if (with_endpoints) endpoints = sys.spawn(fake_endpoint_manager, refreshes);
    collections = sys.spawn(one_collection_cache, the_collection());
    pkranges =
        ranges ? ranges : sys.spawn(fake_pkranges, std::string{"etag-1"});
    router = spawn_router(
        sys, std::move(cfg),
        {locations, endpoints, collections, pkranges, http, {}, {}});
    run();
  }

  void TearDown() override {
    for (auto a : {caf::actor_cast<caf::actor>(router),
                   caf::actor_cast<caf::actor>(locations),
                   caf::actor_cast<caf::actor>(endpoints),
                   caf::actor_cast<caf::actor>(collections),
                   caf::actor_cast<caf::actor>(pkranges)})
      self->send_exit(a, caf::exit_reason::user_shutdown);
    run();
  }

  router_stats stats() {
    router_stats result;
    auto h = self->request(router, caf::infinite, stats_atom_v);
    run();
    receive_now(
        self, h, [&](router_stats s) { result = s; },
        [](caf::error&) { ADD_FAILURE() << "stats failed"; });
    return result;
  }

  auto route(data_request req) {
    auto h = self->request(router, caf::infinite, route_atom_v, std::move(req));
    run();
    return h;
  }

  // Answers request `i` (in the order they went out) with `o`.
  void answer(size_t i, transport::outcome o) {
    ASSERT_LT(i, http->count()) << "request " << i << " never went out";
    ASSERT_FALSE(http->at(i).answered) << "request " << i << " was answered";
    http->respond(i, std::move(o));
    run();
  }

  std::string endpoint_of(size_t i) { return http->at(i).request.endpoint; }

  // A read that may hedge, its hedge due 1 s after it went (`cfg` may set
  // more): West, the primary, is request 0.
  auto route_hedged_read(router_config cfg = {}) {
    cfg.hedging.threshold = 1s;
    start(std::move(cfg));
    auto req = read_doc();
    req.options.hedge = 1;
    return route(req);
  }

  // A tracked create on a multi-write account, hedged after 1 s: West (the
  // primary) is out as request 0, the hedge to East as request 1.
  auto hedged_create() {
    router_config cfg;
    cfg.hedging.threshold = 1s;
    start(cfg, multi_write_account());
    auto create = tracked_create();
    create.options.hedge = 1;
    auto h = route(create);
    advance(1s);
    EXPECT_EQ(http->count(), 2u) << "the create was not hedged";
    if (http->count() >= 2) {
      EXPECT_EQ(endpoint_of(1), east_ep);
    }
    return h;
  }
};

TEST_F(Router, Read_GoesToTheFirstPreferredRegion_OnTheReadLadder) {
  start();
  auto h = route(read_doc());
  ASSERT_EQ(http->count(), 1u);
  EXPECT_EQ(endpoint_of(0), west_ep);
  EXPECT_EQ(http->at(0).request.method, "GET");
  EXPECT_EQ(http->at(0).request.timeout, 6s); // the read ladder's first step
  EXPECT_TRUE(self->mailbox().empty());
  answer(0, ok_response(R"({"id":"doc1","pk":"p0"})"));
  receive_now(
      self, h,
      [](data_response& r) {
        EXPECT_EQ(r.status, 200);
        ASSERT_EQ(r.diag.attempts.size(), 1u);
        EXPECT_EQ(r.diag.attempts[0].region, "West US");
      },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  auto s = stats();
  EXPECT_EQ(s.attempts, 1u);
  EXPECT_EQ(s.live, 0u);
}

// The budget ends while the attempt is out: the attempt finishes, its
// failover decision runs with every side effect, and nothing new starts.
TEST_F(Router, BudgetSpentDuringAnAttempt_ItsDecisionRuns_NoNewAttempt) {
  start();
  auto req = read_doc();
  req.options.budget = 2s;
  auto h = route(req);
  ASSERT_EQ(http->count(), 1u);
  advance(2s);
  EXPECT_TRUE(self->mailbox().empty())
      << "the budget ended the operation under its attempt";
  answer(0, transport_failure(transport::failure::refused));
  receive_now(
      self, h, [](data_response&) { ADD_FAILURE() << "expected an error"; },
      [](caf::error& e) {
        EXPECT_EQ(code_of(e), errc::connection_refused);
        EXPECT_NE(context_of(e).find("operation budget of 2s spent"),
                  std::string::npos)
            << context_of(e);
      });
  auto s = stats();
  EXPECT_EQ(s.marks, 1u);
  EXPECT_EQ(refreshes->total(), 1);
  EXPECT_EQ(s.failover_decisions, s.failover_decisions_completed);
  EXPECT_EQ(s.decisions_after_budget, 1u);
  advance(5s); // any pause the decision asked for
  EXPECT_EQ(http->count(), 1u) << "an attempt started after the budget";
  EXPECT_EQ(stats().live, 0u);
}

// The budget ends while the next attempt waits out the failover pause: the
// operation ends at once, and the pending attempt never goes. (A reset
// before the request went out: a refused connection would go on at once.)
TEST_F(Router, BudgetSpentDuringTheFailoverPause_EndsAtOnce_NoNewAttempt) {
  start();
  auto req = read_doc();
  req.options.budget = 500ms;
  auto h = route(req);
  answer(0, transport_failure(transport::failure::reset));
  EXPECT_EQ(stats().marks, 1u);
  EXPECT_EQ(http->count(), 1u) << "no failover pause";
  EXPECT_TRUE(self->mailbox().empty());
  advance(500ms);
  receive_now(
      self, h, [](data_response&) { ADD_FAILURE() << "expected an error"; },
      [](caf::error& e) {
        EXPECT_EQ(code_of(e), errc::connection_reset);
        EXPECT_NE(context_of(e).find("operation budget of 500ms spent"),
                  std::string::npos)
            << context_of(e);
      });
  advance(2s); // past the pause: the pending attempt finds nothing to do
  EXPECT_EQ(http->count(), 1u) << "an attempt started after the budget";
  EXPECT_EQ(stats().live, 0u);
}

// A hedged read: West is silent past the threshold, East answers for it.
// West's answer comes after the operation ended and still marks West.
TEST_F(Router, HedgeWins_TheAbandonedPrimaryStillMarksItsRegion) {
  auto h = route_hedged_read();
  ASSERT_EQ(http->count(), 1u);
  advance(999ms);
  EXPECT_EQ(http->count(), 1u) << "hedged before the threshold";
  advance(1ms);
  ASSERT_EQ(http->count(), 2u) << "no hedge at the threshold";
  EXPECT_EQ(endpoint_of(1), east_ep);
  answer(1, ok_response(R"({"id":"doc1","pk":"p0"})"));
  receive_now(
      self, h,
      [](data_response& r) {
        EXPECT_EQ(r.status, 200);
        EXPECT_EQ(r.diag.hedges, 1u);
        EXPECT_EQ(r.diag.abandoned_arms, 1u);
      },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  EXPECT_EQ(stats().marks, 0u);
  answer(0, transport_failure(transport::failure::refused));
  auto s = stats();
  EXPECT_EQ(s.marks, 1u) << "the abandoned primary's refusal was dropped";
  EXPECT_EQ(s.late_answers, 1u);
  EXPECT_EQ(refreshes->total(), 1);
  EXPECT_EQ(http->count(), 2u);
}

// A hedged read whose primary timed out and waits out its ladder's pause
// when the hedge wins: the pending ladder step still goes to the primary's
// region (at once), and when that region stays silent through its ladder
// it is marked, as without the hedge. The retry actor does the same
// (Retry.DeadlineTripsBetweenLadderSteps_TheNextStepStillGoesAndMarks).
TEST_F(Router, HedgeWinsDuringTheLadderPause_ThePendingStepStillGoesAndMarks) {
  router_config cfg;
  cfg.ladders.partition_failover = {{6s, 2s}, {6s, 0s}, {10s, 0s}};
  auto h = route_hedged_read(cfg);
  answer(0, transport_failure(transport::failure::timeout)); // step 1
  EXPECT_EQ(http->count(), 1u) << "step 2 waits out a 2 s pause";
  advance(1s);
  ASSERT_EQ(http->count(), 2u) << "no hedge at the threshold";
  EXPECT_EQ(endpoint_of(1), east_ep);
  answer(1, ok_response(R"({"id":"doc1","pk":"p0"})"));
  receive_now(
      self, h, [](data_response& r) { EXPECT_EQ(r.status, 200); },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  ASSERT_EQ(http->count(), 3u) << "the pending ladder step was dropped";
  EXPECT_EQ(endpoint_of(2), west_ep);
  EXPECT_EQ(http->at(2).request.timeout, 6s);
  advance(1s); // the pause's own attempt message finds the operation gone
  EXPECT_EQ(http->count(), 3u);
  answer(2, transport_failure(transport::failure::timeout)); // step 2
  ASSERT_EQ(http->count(), 4u);
  EXPECT_EQ(endpoint_of(3), west_ep);
  EXPECT_EQ(http->at(3).request.timeout, 10s);
  EXPECT_EQ(stats().marks, 0u);
  answer(3, transport_failure(transport::failure::timeout)); // step 3
  auto s = stats();
  EXPECT_EQ(s.marks, 1u);
  EXPECT_EQ(http->count(), 4u);
  EXPECT_EQ(stats().live, 0u);
}

// A refused connection is a definite answer (the region is not serving,
// nothing was sent): the read goes on to the next region at once, with no
// failover pause, while one of its regions is still untried. Once every
// region refused, the pause is back, so that a client whose own network is
// down does not spin. Each step is asserted before any time passes.
TEST_F(Router, Refused_NextRegionAtOnce_ThePauseOnlyOnceEveryRegionRefused) {
  start();
  auto h = route(read_doc());
  ASSERT_EQ(http->count(), 1u);
  EXPECT_EQ(endpoint_of(0), west_ep);
  answer(0, transport_failure(transport::failure::refused));
  ASSERT_EQ(http->count(), 2u) << "the refused read waited for the pause";
  EXPECT_EQ(endpoint_of(1), east_ep);
  answer(1, transport_failure(transport::failure::refused));
  ASSERT_EQ(http->count(), 3u) << "the second refusal waited for the pause";
  EXPECT_EQ(endpoint_of(2), north_ep);
  answer(2, transport_failure(transport::failure::refused));
  EXPECT_EQ(http->count(), 3u) << "every region refused, and no pause";
  advance(999ms);
  EXPECT_EQ(http->count(), 3u) << "the pause was shorter than a read's 1 s";
  advance(1ms);
  ASSERT_EQ(http->count(), 4u) << "nothing after the pause";
  answer(3, ok_response(R"({"id":"doc1","pk":"p0"})"));
  receive_now(
      self, h, [](data_response& r) { EXPECT_EQ(r.status, 200); },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  EXPECT_EQ(stats().marks, 3u);
}

// The caller gives up during West's attempt; nothing reaches the router.
// West then refuses: the router's decision runs whole (West marked, the
// account refreshed), and after the failover pause the read goes to East
// and ends there. The caller heard only its own timeout.
TEST_F(Router, CallerTimesOut_TheFailoverStillRunsToTheEnd) {
  start();
  auto log = std::make_shared<caller_log>();
  auto c = sys.spawn(caller, router, caf::timespan{300ms}, read_doc(), log);
  run();
  ASSERT_EQ(http->count(), 1u);
  advance(300ms);
  ASSERT_EQ(log->got, std::vector<std::string>{"timeout"});
  EXPECT_EQ(stats().live, 1u) << "the caller's timeout reached the router";
  answer(0, transport_failure(transport::failure::refused));
  auto s = stats();
  EXPECT_EQ(s.marks, 1u);
  EXPECT_EQ(refreshes->total(), 1);
  advance(1s); // the failover pause of reads
  ASSERT_EQ(http->count(), 2u);
  EXPECT_EQ(endpoint_of(1), east_ep);
  answer(1, ok_response(R"({"id":"doc1","pk":"p0"})"));
  s = stats();
  EXPECT_EQ(s.live, 0u);
  EXPECT_EQ(s.succeeded, 1u);
  EXPECT_EQ(s.failover_decisions, s.failover_decisions_completed);
  EXPECT_EQ(log->got.size(), 1u); // the late answer was not delivered again
  self->send_exit(c, caf::exit_reason::user_shutdown);
}

// The hedge budget allows one hedge here: of two slow reads, one is hedged
// at the threshold, the other waits on its own region, and the refusal is
// counted.
TEST_F(Router, HedgeBudgetSpent_TheOtherSlowReadIsNotHedged) {
  router_config cfg;
  cfg.hedging.threshold = 1s;
  cfg.hedging.budget.share = 0;
  cfg.hedging.budget.min_allowance = 1;
  start(cfg);
  auto req = read_doc();
  req.options.hedge = 1;
  auto first = route(req);
  auto second = route(req);
  ASSERT_EQ(http->count(), 2u);
  advance(1s);
  ASSERT_EQ(http->count(), 3u) << "hedges beyond the budget went out";
  EXPECT_EQ(endpoint_of(2), east_ep);
  auto s = stats();
  EXPECT_EQ(s.hedges_started, 1u);
  EXPECT_EQ(s.hedges_refused, 1u);
  for (auto i : http->pending())
    http->respond(i, ok_response(R"({"id":"doc1","pk":"p0"})"));
  run();
  for (auto* h : {&first, &second})
    receive_now(
        self, *h, [](data_response& r) { EXPECT_EQ(r.status, 200); },
        [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
}

// Writes that survive a hang on a multi-write account: West's create
// times out (it may have been applied), the copy goes to East and meets a
// 409. The router reads the document back from East: it carries this
// create's tracking id, so the first copy was applied and the create
// succeeded.
TEST_F(Router, WriteRetried_ItsOwnEcho_ReadBackTellsItWasApplied) {
  start({}, multi_write_account());
  auto create = tracked_create();
  auto h = route(create);
  ASSERT_EQ(http->count(), 1u);
  EXPECT_EQ(endpoint_of(0), west_ep);
  auto id = tracking_id_of(http->at(0).request.body);
  ASSERT_EQ(id.size(), 32u) << http->at(0).request.body;
  answer(0, transport_failure(transport::failure::timeout));
  if (http->count() == 1u) advance(1s); // a failover pause, if any
  ASSERT_EQ(http->count(), 2u);
  EXPECT_EQ(endpoint_of(1), east_ep);
  EXPECT_EQ(http->at(1).request.method, "POST");
  EXPECT_EQ(tracking_id_of(http->at(1).request.body), id);
  answer(1, status_response(409));
  ASSERT_EQ(http->count(), 3u) << "no read-back";
  EXPECT_EQ(http->at(2).request.method, "GET");
  EXPECT_EQ(endpoint_of(2), east_ep);
  EXPECT_EQ(http->at(2).request.timeout, 6s);
  EXPECT_TRUE(self->mailbox().empty()) << "answered before the read-back";
  answer(2, ok_response(R"({"id":"doc1","pk":"p0","_trackingId":")" + id +
                        R"("})"));
  receive_now(
      self, h, [](data_response& r) { EXPECT_EQ(r.status, 201); },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  EXPECT_EQ(stats().live, 0u);
}

// The same, but the stored document carries somebody else's tracking id:
// the 409 stands, and says why.
TEST_F(Router, WriteRetried_SomebodyElsesDocument_The409Stands) {
  start({}, multi_write_account());
  auto create = tracked_create();
  auto h = route(create);
  answer(0, transport_failure(transport::failure::timeout));
  if (http->count() == 1u) advance(1s);
  ASSERT_EQ(http->count(), 2u);
  answer(1, status_response(409));
  ASSERT_EQ(http->count(), 3u) << "no read-back";
  answer(
      2,
      ok_response(
          R"({"id":"doc1","pk":"p0","_trackingId":"0123456789abcdef0123456789abcdef"})"));
  receive_now(
      self, h, [](data_response&) { ADD_FAILURE() << "expected the 409"; },
      [](caf::error& e) {
        EXPECT_EQ(code_of(e), errc::conflict) << context_of(e);
        EXPECT_NE(context_of(e).find("somebody else's"), std::string::npos)
            << context_of(e);
      });
}

// A hedged, tracked create: West answers 409 while the hedge is out in
// East, and the router reads the document back from West. East's copy
// succeeds first and ends the operation. Nothing is left behind as
// abandoned: West's create answered, and East's arm answered too; only the
// read-back was out, and its late answer is dropped.
TEST_F(Router, HedgeWinsDuringAReadBack_NothingIsLeftAsAbandoned) {
  auto h = hedged_create();
  ASSERT_EQ(http->count(), 2u);
  answer(0, status_response(409));
  ASSERT_EQ(http->count(), 3u) << "no read-back";
  EXPECT_EQ(http->at(2).request.method, "GET");
  EXPECT_EQ(endpoint_of(2), west_ep);
  answer(1, ok_response(R"({"id":"doc1","pk":"p0"})", 201));
  receive_now(
      self, h,
      [](data_response& r) {
        EXPECT_EQ(r.status, 201);
        EXPECT_EQ(r.diag.abandoned_arms, 0u)
            << "an arm that had answered was kept as abandoned";
      },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  answer(2, status_response(404)); // the read-back, late: dropped
  auto s = stats();
  // Counted as late, as every answer whose operation ended is (in both
  // planes); nothing waited for it.
  EXPECT_EQ(s.late_answers, 1u);
  EXPECT_EQ(s.live, 0u);
}

// Per-partition failover on a single-write account that allows it: West
// answers a write of range 0 with 503, so that range's writes move to the
// next region (East) without marking West; the next write of the range goes
// straight to East, where the move was confirmed.
TEST_F(Router, PerPartitionFailover_TheRangesWritesMove_NoRegionMarked) {
  auto account = three_region_account();
  account.per_partition_failover = true;
  start({}, account);
  data_request upsert;
  upsert.op = data_op::upsert;
  upsert.collection_link = "dbs/d/colls/c";
  upsert.body = R"({"id":"doc1","pk":"p0"})";
  upsert.options.partition_key_json = R"(["p0"])";
  upsert.options.hedge = 0;
  auto first = route(upsert);
  ASSERT_EQ(http->count(), 1u);
  EXPECT_EQ(endpoint_of(0), west_ep);
  answer(0, status_response(503));
  if (http->count() == 1u) advance(1s); // a pause, if the move asks one
  ASSERT_EQ(http->count(), 2u);
  EXPECT_EQ(endpoint_of(1), east_ep) << "the range's write did not move";
  EXPECT_EQ(stats().marks, 0u);
  answer(1, ok_response(R"({"id":"doc1","pk":"p0"})"));
  receive_now(
      self, first, [](data_response& r) { EXPECT_EQ(r.status, 200); },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  auto second = route(upsert);
  ASSERT_EQ(http->count(), 3u);
  EXPECT_EQ(endpoint_of(2), east_ep) << "the move was forgotten";
  answer(2, ok_response(R"({"id":"doc1","pk":"p0"})"));
  receive_now(
      self, second, [](data_response& r) { EXPECT_EQ(r.status, 200); },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  EXPECT_EQ(stats().marks, 0u);
}

// The partition circuit breaker through its whole life, for range 0 of
// the collection, with the open period at 1 s and one half-open step: ten
// reads that West answers 503 (East serves each) open it; reads skip West;
// after the period one read probes West, fails, and the period doubles;
// after the doubled period the next probe succeeds; of the next two reads
// one is skipped and one goes to West as a trial, whose success closes the
// breaker. No read fails for its caller.
TEST_F(Router, Breaker_OpenProbeReopenHalfOpenClosed) {
  router_config cfg;
  cfg.breaker.open_period = 1s;
  cfg.breaker.max_open_period = 10s;
  cfg.breaker.probe_timeout = 5s;
  cfg.breaker.half_open_steps = 1;
  // The breaker's log lines, in order (the sink runs on the test's thread:
  // the test coordinator has no other).
  auto events = std::make_shared<std::vector<std::string>>();
  cfg.log = logger{[events](const log_record& r) {
                     if (r.event.rfind("breaker.", 0) == 0)
                       events->push_back(r.event);
                   },
                   log_level::info};
  start(cfg);
  const std::string doc = R"({"id":"doc1","pk":"p0"})";
  // One read; `west` answers its attempt in West (if it goes there), East
  // serves a read West did not. Returns where it went first.
  auto read = [&](transport::outcome west) {
    auto first = http->count();
    auto h = route(read_doc());
    EXPECT_EQ(http->count(), first + 1);
    auto went = endpoint_of(first);
    answer(first, went == west_ep ? west : ok_response(doc));
    if (http->count() > first + 1) {
      EXPECT_EQ(endpoint_of(first + 1), east_ep);
      answer(first + 1, ok_response(doc));
    }
    receive_now(
        self, h, [](data_response& r) { EXPECT_EQ(r.status, 200); },
        [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
    return went;
  };
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(read(status_response(503)), west_ep) << "read " << i;
    EXPECT_EQ(stats().breaker_opened, i < 9 ? 0u : 1u) << "read " << i;
  }
  EXPECT_EQ(stats().marks, 0u) << "a 503 marks no region";
  EXPECT_EQ(read(status_response(503)), east_ep) << "open, yet tried West";
  EXPECT_EQ(stats().breaker_skips, 1u);
  // The period ends with the fault still there: the probe fails, the
  // period doubles.
  advance(1s);
  EXPECT_EQ(read(status_response(503)), west_ep) << "no probe";
  auto s = stats();
  EXPECT_EQ(s.breaker_probes, 1u);
  EXPECT_EQ(s.breaker_reopened, 1u);
  EXPECT_EQ(read(status_response(503)), east_ep);
  advance(1s);
  EXPECT_EQ(read(status_response(503)), east_ep) << "the period did not double";
  // West serves again: nothing brings it back but the next probe.
  advance(1s);
  EXPECT_EQ(read(ok_response(doc)), west_ep) << "no second probe";
  EXPECT_EQ(stats().breaker_probes, 2u);
  EXPECT_EQ(read(ok_response(doc)), east_ep) << "half open: one in two";
  EXPECT_EQ(read(ok_response(doc)), west_ep) << "no trial read";
  s = stats();
  EXPECT_EQ(s.breaker_closed, 1u);
  EXPECT_EQ(s.breaker_tracked, 0u);
  EXPECT_EQ(read(ok_response(doc)), west_ep);
  EXPECT_EQ(stats().failed, 0u);
  // Each transition logged once.
  EXPECT_EQ(*events,
            (std::vector<std::string>{"breaker.opened", "breaker.probe",
                                      "breaker.reopened", "breaker.probe",
                                      "breaker.half_open", "breaker.closed"}));
}

} // namespace

// -- What both planes do alike: the retry actor's twins of these tests are
// in retry_test.cpp.

// An engine without an endpoint manager: a refusal marks West, and the read
// goes on to East after the failover pause. No refresh is asked, so none is
// counted, and the decision (its mark) completes.
TEST_F(Router, NoEndpointManager_NoRefreshCounted_TheDecisionCompletes) {
  start({}, three_region_account(), false);
  auto h = route(read_doc());
  // A reset before the request went out: it keeps the failover pause
  // (a refused connection goes on at once).
  answer(0, transport_failure(transport::failure::reset));
  auto s = stats();
  EXPECT_EQ(s.marks, 1u);
  EXPECT_EQ(s.refreshes, 0u);
  EXPECT_EQ(s.failover_decisions, 1u);
  EXPECT_EQ(s.failover_decisions_completed, 1u);
  EXPECT_EQ(http->count(), 1u);
  advance(1s); // the failover pause of reads
  ASSERT_EQ(http->count(), 2u);
  EXPECT_EQ(endpoint_of(1), east_ep);
  answer(1, ok_response(R"({"id":"doc1","pk":"p0"})"));
  receive_now(
      self, h, [](data_response& r) { EXPECT_EQ(r.status, 200); },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
}

// A hedge arm's failure that does not end the operation is a decision like
// the primary's: East refuses the hedge, is marked, and the decision is
// counted and completes.
TEST_F(Router, HedgeArmRefused_ItsMarkIsACountedDecision) {
  auto h = route_hedged_read();
  advance(1s);
  ASSERT_EQ(http->count(), 2u) << "no hedge at the threshold";
  EXPECT_EQ(endpoint_of(1), east_ep);
  answer(1, transport_failure(transport::failure::refused));
  auto s = stats();
  EXPECT_EQ(s.marks, 1u);
  EXPECT_EQ(s.failover_decisions, 1u);
  EXPECT_EQ(s.failover_decisions_completed, 1u);
  EXPECT_EQ(s.decisions_after_budget, 0u);
  answer(0, ok_response(R"({"id":"doc1","pk":"p0"})"));
  receive_now(
      self, h, [](data_response& r) { EXPECT_EQ(r.status, 200); },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
}

// The ladder steps an abandoned primary still sends are attempts, its
// answers are late answers, and the mark it ends with is a decision made
// after its operation ended.
TEST_F(Router, AbandonedPrimaryClimbs_ItsStepsAndDecisionAreCounted) {
  router_config cfg;
  cfg.ladders.partition_failover = {{6s, 2s}, {6s, 0s}, {10s, 0s}};
  auto h = route_hedged_read(cfg);
  answer(0, transport_failure(transport::failure::timeout)); // step 1
  advance(1s);
  ASSERT_EQ(http->count(), 2u) << "no hedge at the threshold";
  answer(1, ok_response(R"({"id":"doc1","pk":"p0"})"));
  receive_now(
      self, h, [](data_response& r) { EXPECT_EQ(r.status, 200); },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  ASSERT_EQ(http->count(), 3u) << "the pending ladder step was dropped";
  EXPECT_EQ(stats().attempts, 3u);
  answer(2, transport_failure(transport::failure::timeout)); // step 2
  ASSERT_EQ(http->count(), 4u);
  EXPECT_EQ(stats().attempts, 4u);
  EXPECT_EQ(stats().failover_decisions, 0u);
  answer(3, transport_failure(transport::failure::timeout)); // step 3
  auto s = stats();
  EXPECT_EQ(s.late_answers, 2u);
  EXPECT_EQ(s.marks, 1u);
  EXPECT_EQ(s.failover_decisions, 1u);
  EXPECT_EQ(s.failover_decisions_completed, 1u);
  EXPECT_EQ(s.decisions_after_budget, 1u);
}

// A table that arrives as a push, before the subscription is answered,
// starts what waited for a first table.
TEST_F(Router, FirstTableArrivesAsAPush_TheWaitingReadGoes) {
  auto tables = std::make_shared<table_log>();
  tables->hold_subscriptions = true;
  auto cache = sys.spawn(fake_location_cache, tables);
  locations = caf::actor_cast<location_cache_actor>(cache);
  endpoints = sys.spawn(fake_endpoint_manager, refreshes);
  collections = sys.spawn(one_collection_cache, the_collection());
  pkranges = sys.spawn(fake_pkranges, std::string{"etag-1"});
  router = spawn_router(
      sys, {}, {locations, endpoints, collections, pkranges, http, {}, {}});
  run();
  auto h = route(read_doc());
  EXPECT_EQ(http->count(), 0u) << "sent with no table";
  self->send(cache, push_atom_v);
  run();
  ASSERT_EQ(http->count(), 1u) << "the pushed table did not start the read";
  EXPECT_EQ(endpoint_of(0), west_ep);
  answer(0, ok_response(R"({"id":"doc1","pk":"p0"})"));
  receive_now(
      self, h, [](data_response& r) { EXPECT_EQ(r.status, 200); },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
}

// A query of range "0", hedged, whose primary finds the range gone: the
// router refreshes the map, which no longer has the range (it split), and
// the query fails as `partition_range_gone`. The hedge's arm still out is
// abandoned with the session token of the range the query now has: none
// (the range it held was in the map the refresh replaced; under ASan a
// stale pointer to it is a heap-use-after-free here).
TEST_F(Router, RangeSplitWhileHedged_QueryFailsAsGone_ArmAbandoned) {
  router_config cfg;
  cfg.hedging.threshold = 1s;
  auto calls = std::make_shared<int>(0);
  start(cfg, three_region_account(), true,
        sys.spawn(splitting_range_cache, calls));
  data_request q;
  q.op = data_op::query;
  q.collection_link = "dbs/d/colls/c";
  q.body = R"({"query":"SELECT * FROM c"})";
  q.range_id = "0";
  q.options.hedge = 1;
  auto h = route(q);
  ASSERT_EQ(http->count(), 1u);
  advance(1s);
  ASSERT_EQ(http->count(), 2u) << "no hedge at the threshold";
  // The answer carries a session token: the router now keeps tokens for
  // the collection, so the abandoned arm's token is looked up by range.
  auto gone = status_response(410, 1002);
  gone.session_token = "0:1#100";
  answer(0, gone);
  EXPECT_EQ(*calls, 2) << "the map was not refreshed";
  receive_now(
      self, h, [](data_response&) { ADD_FAILURE() << "the query succeeded"; },
      [](caf::error& e) {
        EXPECT_EQ(code_of(e), errc::partition_range_gone) << context_of(e);
      });
  EXPECT_EQ(stats().live, 0u);
  // The abandoned arm still settles when it answers.
  answer(1, ok_response(R"({"Documents":[],"_count":0})"));
  EXPECT_EQ(stats().late_answers, 1u);
}

// A hedged read whose primary gives up (a 408, final for its loop) before
// the hedge's threshold: the hedge takes over at once, after the failure's
// side effects, and its arm's answer is the read's.
TEST_F(Router, PrimaryGivesUpBeforeTheThreshold_TheHedgeGoesAtOnce) {
  auto h = route_hedged_read();
  ASSERT_EQ(http->count(), 1u);
  advance(100ms);
  answer(0, status_response(408));
  ASSERT_EQ(http->count(), 2u) << "the hedge did not take over at once";
  EXPECT_EQ(endpoint_of(1), east_ep);
  EXPECT_EQ(stats().live, 1u) << "the read ended with the primary's 408";
  answer(1, ok_response(R"({"id":"doc1","pk":"p0"})"));
  receive_now(
      self, h,
      [](data_response& r) {
        EXPECT_EQ(r.status, 200);
        EXPECT_EQ(r.diag.hedges, 1u);
        ASSERT_EQ(r.diag.attempts.size(), 2u);
        EXPECT_EQ(r.diag.attempts[0].status, 408);
        EXPECT_TRUE(r.diag.attempts[1].winner);
      },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  EXPECT_EQ(stats().hedges_won, 1u);
}

// A hedged read whose caller gives up while both arms are out: nothing
// reaches the router. East's refusal (the hedge arm) still marks East; West
// (the primary) then answers, the operation ends, and the caller, already
// gone, hears nothing more.
TEST_F(Router, CallerTimesOutWhileHedged_TheArmsStillDecide) {
  router_config cfg;
  cfg.hedging.threshold = 1s;
  start(cfg);
  auto req = read_doc();
  req.options.hedge = 1;
  auto log = std::make_shared<caller_log>();
  auto c = sys.spawn(caller, router, caf::timespan{1500ms}, req, log);
  run();
  advance(1s);
  ASSERT_EQ(http->count(), 2u) << "no hedge at the threshold";
  EXPECT_EQ(endpoint_of(1), east_ep);
  advance(500ms);
  ASSERT_EQ(log->got, std::vector<std::string>{"timeout"});
  EXPECT_EQ(stats().live, 1u) << "the caller's timeout reached the router";
  answer(1, transport_failure(transport::failure::refused));
  auto s = stats();
  EXPECT_EQ(s.marks, 1u) << "the hedge arm's refusal was dropped";
  EXPECT_EQ(s.failover_decisions, s.failover_decisions_completed);
  EXPECT_EQ(s.live, 1u);
  answer(0, ok_response(R"({"id":"doc1","pk":"p0"})"));
  s = stats();
  EXPECT_EQ(s.live, 0u);
  EXPECT_EQ(s.succeeded, 1u);
  EXPECT_EQ(log->got.size(), 1u);
  self->send_exit(c, caf::exit_reason::user_shutdown);
}

// A loop that may make no attempt at all (an attempt cap of 0) fails with
// `attempts_exhausted`, as the retry actor's does: nothing finished, and no
// budget or deadline ended it.
TEST_F(Router, NoAttemptAllowed_AttemptsExhausted) {
  router_config cfg;
  cfg.attempt_cap = 0;
  start(cfg);
  auto h = route(read_doc());
  EXPECT_EQ(http->count(), 0u);
  receive_now(
      self, h, [](data_response&) { ADD_FAILURE() << "expected an error"; },
      [](caf::error& e) {
        EXPECT_EQ(code_of(e), errc::attempts_exhausted) << context_of(e);
        EXPECT_NE(context_of(e).find("attempt cap of 0 reached"),
                  std::string::npos)
            << context_of(e);
      });
}

// A hedged, tracked create: West (the primary) is silent, the hedge to East
// answers 409, and the router reads the document back from East while West
// is still out. West's refusal during the read-back still reaches its loop:
// West is marked. The read-back finds the create's own tracking id: 201.
TEST_F(Router, ReadBackAfterTheHedge_PrimaryRefusedMeanwhile_MarksItsRegion) {
  auto h = hedged_create();
  ASSERT_EQ(http->count(), 2u);
  auto id = tracking_id_of(http->at(0).request.body);
  ASSERT_FALSE(id.empty());
  answer(1, status_response(409));
  ASSERT_EQ(http->count(), 3u) << "no read-back";
  EXPECT_EQ(http->at(2).request.method, "GET");
  EXPECT_EQ(endpoint_of(2), east_ep);
  answer(0, transport_failure(transport::failure::refused));
  EXPECT_EQ(stats().marks, 1u) << "the primary's refusal was dropped";
  EXPECT_EQ(http->count(), 3u) << "an attempt started during the read-back";
  answer(2, ok_response(R"({"id":"doc1","pk":"p0","_trackingId":")" + id +
                        R"("})"));
  receive_now(
      self, h, [](data_response& r) { EXPECT_EQ(r.status, 201); },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  EXPECT_EQ(stats().live, 0u);
}

// The same, but the read-back ends the operation while West is still out:
// West's attempt is abandoned, not forgotten, and its refusal marks West.
TEST_F(Router, ReadBackEndsWhileThePrimaryIsOut_ItsLateRefusalStillMarks) {
  auto h = hedged_create();
  ASSERT_EQ(http->count(), 2u);
  auto id = tracking_id_of(http->at(0).request.body);
  answer(1, status_response(409));
  ASSERT_EQ(http->count(), 3u) << "no read-back";
  answer(2, ok_response(R"({"id":"doc1","pk":"p0","_trackingId":")" + id +
                        R"("})"));
  receive_now(
      self, h,
      [](data_response& r) {
        EXPECT_EQ(r.status, 201);
        EXPECT_EQ(r.diag.abandoned_arms, 1u);
      },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  EXPECT_EQ(stats().marks, 0u);
  answer(0, transport_failure(transport::failure::refused));
  auto s = stats();
  EXPECT_EQ(s.marks, 1u) << "the abandoned primary's refusal was dropped";
  EXPECT_EQ(s.late_answers, 1u);
}

// The endpoint manager goes down while a read waits for the refresh its
// failover decision asked for: the read goes on without it, after the pause
// the decision asked for, as after a refresh that answered.
TEST_F(Router, EndpointManagerDownDuringTheRefresh_GoesOnAfterThePause) {
  refreshes->hold = true;
  start();
  auto h = route(read_doc());
  // A reset before the request went out: it keeps the failover pause
  // (a refused connection goes on at once).
  answer(0, transport_failure(transport::failure::reset));
  EXPECT_EQ(refreshes->total(), 1);
  advance(5s);
  EXPECT_EQ(http->count(), 1u) << "went on without the refresh";
  self->send_exit(endpoints, caf::exit_reason::kill);
  run();
  EXPECT_EQ(http->count(), 1u) << "the failover pause was skipped";
  advance(1s); // the failover pause of reads
  ASSERT_EQ(http->count(), 2u) << "the read waited for a dead actor";
  EXPECT_EQ(endpoint_of(1), east_ep);
  answer(1, ok_response(R"({"id":"doc1","pk":"p0"})"));
  receive_now(
      self, h, [](data_response&) {},
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
}

// A hedge arm's refusal asks for what its loop asks for, as the metadata
// hedge's does: the region is marked and the account refreshed (the retry
// actor's twin: RetryHedge.HedgeRegionalFailure_MarksAndRefreshes).
TEST_F(Router, HedgeArmRefused_MarksAndRefreshes) {
  auto h = route_hedged_read();
  advance(1s);
  ASSERT_EQ(http->count(), 2u) << "no hedge at the threshold";
  EXPECT_EQ(refreshes->total(), 0);
  answer(1, transport_failure(transport::failure::refused));
  EXPECT_EQ(stats().marks, 1u);
  EXPECT_EQ(refreshes->total(), 1) << "the arm's refusal refreshed nothing";
  answer(0, ok_response(R"({"id":"doc1","pk":"p0"})"));
  receive_now(
      self, h, [](data_response& r) { EXPECT_EQ(r.status, 200); },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
}

// -- the change feed
// ------------------------------------------------------------
//
// A change-feed page through the router and its feed executor, in virtual
// time, with a partition-range cache whose topology the test changes: what
// each read sends is checked read by read.

// The collection's ranges as the test sets them; what a caller sees is the
// published view, which moves to `current` on a forced refresh (the cache
// learns of a split only when asked to look again).
struct topology {
  std::vector<partition_key_range> current;
  std::vector<partition_key_range> published;
  int version = 1;
  int forced = 0;    ///< overlap lookups that forced a refresh
  int refreshes = 0; ///< map reads that named an etag: refreshes
};

pkrange_cache_actor::behavior_type
topology_pkranges(pkrange_cache_actor::pointer, std::shared_ptr<topology> t) {
  auto publish = [t] {
    if (t->published.size() != t->current.size() ||
        t->published.front().id != t->current.front().id) {
      t->published = t->current;
      ++t->version;
    }
  };
  return {
      [t, publish](pkranges_atom, const std::string& rid,
                   const std::string& known) {
        if (!known.empty()) {
          ++t->refreshes;
          publish();
        }
        auto map = routing_map::create_complete(
            t->published, "etag-" + std::to_string(t->version));
        routing_snapshot s;
        s.collection_rid = rid;
        s.map = std::make_shared<const routing_map>(std::move(map.value()));
        return s;
      },
      [t, publish](overlap_atom, const std::string&, const epk_range& r,
                   bool force) {
        if (force) {
          ++t->forced;
          publish();
        }
        std::vector<partition_key_range> out;
        for (const auto& x : t->published)
          if (epk_compare(x.min_inclusive, r.max) < 0 &&
              epk_compare(r.min, x.max_exclusive) < 0)
            out.push_back(x);
        return out;
      },
      [](stats_atom) { return pkrange_cache_stats{}; },
  };
}

partition_key_range pk_range(std::string id, std::string min, std::string max,
                             std::vector<std::string> parents = {}) {
  partition_key_range r;
  r.id = std::move(id);
  r.min_inclusive = std::move(min);
  r.max_exclusive = std::move(max);
  r.parents = std::move(parents);
  return r;
}

std::string header(const transport::request& r, const std::string& name) {
  for (const auto& [k, v] : r.headers)
    if (k == name) return v;
  return {};
}

transport::outcome feed_page(const std::string& docs, const std::string& etag) {
  auto o =
      ok_response(R"({"_rid":"x","Documents":)" + docs + R"(,"_count":1})");
  o.etag = etag;
  return o;
}

transport::outcome not_modified(const std::string& etag) {
  auto o = status_response(304);
  o.etag = etag;
  return o;
}

class RouterFeed : public Router {
protected:
  std::shared_ptr<topology> topo = std::make_shared<topology>();

  void start_feed() {
    topo->current = {pk_range("0", "", "FF")};
    topo->published = topo->current;
    start({}, three_region_account(), true, sys.spawn(topology_pkranges, topo));
  }

  auto read_page(const std::string& continuation) {
    change_feed_request req;
    req.collection_link = "dbs/d/colls/c";
    req.continuation = continuation;
    req.options.hedge = 0;
    auto h = self->request(router, caf::infinite, route_atom_v, req);
    run();
    return h;
  }

  template <class Handle>
  change_feed_page page_of(Handle& h) {
    change_feed_page out;
    receive_now(
        self, h, [&](change_feed_page& p) { out = std::move(p); },
        [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
    return out;
  }

  /// The last request: the range it named and the position it sent.
  std::pair<std::string, std::string> last_read() {
    auto r = http->at(http->count() - 1).request;
    EXPECT_EQ(header(r, "a-im"), "Incremental Feed");
    return {header(r, "x-ms-documentdb-partitionkeyrangeid"),
            header(r, "if-none-match")};
  }
};

TEST_F(RouterFeed, SplitSeenByTheMap_EachChildReadFromTheParentsPosition) {
  start_feed();
  auto h = read_page("");
  ASSERT_EQ(http->count(), 1u);
  EXPECT_EQ(last_read(), (std::pair<std::string, std::string>{"0", ""}));
  answer(0, feed_page(R"([{"id":"a","_lsn":5}])", "\"5\""));
  auto first = page_of(h);
  EXPECT_EQ(first.count, 1u);
  EXPECT_FALSE(first.caught_up);

  // The range split; the map already knows.
  topo->current = {pk_range("1", "", "80", {"0"}),
                   pk_range("2", "80", "FF", {"0"})};
  topo->published = topo->current;
  ++topo->version;
  h = read_page(first.continuation);
  ASSERT_EQ(http->count(), 2u);
  EXPECT_EQ(last_read(), (std::pair<std::string, std::string>{"1", "\"5\""}));
  answer(1, not_modified("\"7\""));
  // Only now, after the first child's 304, the second child goes.
  ASSERT_EQ(http->count(), 3u);
  EXPECT_EQ(last_read(), (std::pair<std::string, std::string>{"2", "\"5\""}));
  answer(2, not_modified("\"7\""));
  auto caught = page_of(h);
  EXPECT_TRUE(caught.caught_up);
  EXPECT_EQ(caught.count, 0u);
  EXPECT_EQ(caught.ranges, 2u);
}

TEST_F(RouterFeed, RangeGone_OneMapRefreshThenTheChildGoesWithTheParentsEtag) {
  start_feed();
  auto h = read_page("");
  answer(0, feed_page(R"([{"id":"a","_lsn":5}])", "\"5\""));
  auto first = page_of(h);
  // The range split, but nobody has looked yet: the next read goes to the
  // old range and meets 410/1002.
  topo->current = {pk_range("1", "", "80", {"0"}),
                   pk_range("2", "80", "FF", {"0"})};
  h = read_page(first.continuation);
  ASSERT_EQ(http->count(), 2u);
  EXPECT_EQ(last_read(), (std::pair<std::string, std::string>{"0", "\"5\""}));
  EXPECT_EQ(topo->forced, 0);
  EXPECT_EQ(topo->refreshes, 0);
  answer(1, status_response(410, 1002));
  // The router refreshed the map (once: the feed executor does not force
  // another) and the cursor was cut: the first child goes, from the
  // parent's position.
  EXPECT_EQ(topo->refreshes, 1);
  EXPECT_EQ(topo->forced, 0) << "a second refresh of the map";
  ASSERT_EQ(http->count(), 3u);
  EXPECT_EQ(last_read(), (std::pair<std::string, std::string>{"1", "\"5\""}));
  answer(2, feed_page(R"([{"id":"b","_lsn":6}])", "\"6\""));
  auto second = page_of(h);
  EXPECT_EQ(second.count, 1u);
  EXPECT_EQ(second.ranges, 2u);
  EXPECT_EQ(second.diag.metadata_refreshes, 1u);
}

TEST_F(RouterFeed, CallerTimesOut_TheReadStillFailsOverAndEnds) {
  start_feed();
  auto log = std::make_shared<caller_log>();
  change_feed_request req;
  req.collection_link = "dbs/d/colls/c";
  req.options.hedge = 0;
  // (An argument: CAF 0.17 spawns an argument-less function actor through
  // a null tuple, which UBSan reports.)
  sys.spawn(
      [=](caf::event_based_actor* me,
          std::shared_ptr<caller_log> out) -> caf::behavior {
        me->request(router, 1s, route_atom_v, req)
            .then([out](change_feed_page&) { out->got.push_back("ok"); },
                  [out](caf::error& e) {
                    out->got.push_back(e == caf::sec::request_timeout
                                           ? "timeout"
                                           : context_of(e));
                  });
        return {[](caf::ok_atom) {}};
      },
      log);
  run();
  ASSERT_EQ(http->count(), 1u);
  EXPECT_EQ(endpoint_of(0), west_ep);
  advance(1100ms);
  EXPECT_EQ(log->got, std::vector<std::string>{"timeout"});
  // The caller is gone; the read goes on: West's 503 moves it to East.
  answer(0, status_response(503));
  ASSERT_EQ(http->count(), 2u) << "the failover stopped with the caller";
  EXPECT_EQ(endpoint_of(1), east_ep);
  answer(1, not_modified("\"3\""));
  auto s = stats();
  EXPECT_EQ(s.live, 0u);
  EXPECT_EQ(log->got.size(), 1u);
}

TEST_F(RouterFeed, ARegionReplaysWhatWasRead_OnlyTheNewDocumentsComeBack) {
  start_feed();
  auto h = read_page("");
  answer(0, feed_page(R"([{"id":"a","_lsn":5}])", "\"5\""));
  auto first = page_of(h);
  h = read_page(first.continuation);
  ASSERT_EQ(http->count(), 2u);
  EXPECT_EQ(last_read().second, "\"5\"");
  // A region that behaves badly sends "a" again, with "b".
  answer(1, feed_page(R"([{"id":"a","_lsn":5},{"id":"b","_lsn":6}])", "\"6\""));
  auto second = page_of(h);
  EXPECT_EQ(second.count, 1u);
  auto docs = nlohmann::json::parse(second.documents);
  ASSERT_EQ(docs.size(), 1u);
  EXPECT_EQ(docs[0]["id"], "b");
}

// -- patch and transactional batch
// ---------------------------------------------

namespace {

// A patch of document doc1 in ["p0"], write retries on.
data_request tracked_patch(std::string ops) {
  data_request r;
  r.op = data_op::patch;
  r.collection_link = "dbs/d/colls/c";
  r.id = "doc1";
  r.body = std::move(ops);
  r.options.partition_key_json = R"(["p0"])";
  r.options.write_retries = 1;
  r.options.hedge = 0;
  return r;
}

std::string ten_ops(const char* op) {
  auto ops = nlohmann::json::array();
  for (int i = 0; i < 10; ++i)
    ops.push_back(
        {{"op", op}, {"path", "/f" + std::to_string(i)}, {"value", 1}});
  return ops.dump();
}

// An increment that timed out in West goes to East, guarded: the patch sets
// its tracking id and holds only where the document lacks it. East answers
// 412 (the first copy was applied, and replicated): the router reads the
// document back, finds its own id and reports the patch as the success it
// was; it was applied once.
TEST_F(Router, TrackedPatch_TimedOut_GuardedCopy412_ReadBackSaysApplied) {
  start({}, multi_write_account());
  auto h = route(tracked_patch(R"([{"op":"incr","path":"/n","value":1}])"));
  ASSERT_EQ(http->count(), 1u);
  EXPECT_EQ(http->at(0).request.method, "PATCH");
  EXPECT_EQ(http->at(0).request.target, "/dbs/d/colls/c/docs/doc1");
  auto sent = nlohmann::json::parse(http->at(0).request.body);
  ASSERT_EQ(sent["operations"].size(), 2u) << sent;
  EXPECT_EQ(sent["operations"][1]["path"], "/_trackingId");
  auto id = sent["operations"][1]["value"].get<std::string>();
  ASSERT_EQ(id.size(), 32u);
  EXPECT_NE(sent["condition"].get<std::string>().find("c._trackingId != \"" +
                                                      id + "\""),
            std::string::npos)
      << sent;
  answer(0, transport_failure(transport::failure::timeout));
  if (http->count() == 1u) advance(1s);
  ASSERT_EQ(http->count(), 2u) << "the tracked patch was not retried";
  EXPECT_EQ(endpoint_of(1), east_ep);
  EXPECT_EQ(http->at(1).request.body, http->at(0).request.body);
  answer(1, status_response(412));
  ASSERT_EQ(http->count(), 3u) << "no read-back";
  EXPECT_EQ(http->at(2).request.method, "GET");
  EXPECT_TRUE(self->mailbox().empty()) << "answered before the read-back";
  answer(2, ok_response(R"({"id":"doc1","pk":"p0","n":2,"_trackingId":")" + id +
                        R"("})"));
  receive_now(
      self, h, [](data_response& r) { EXPECT_EQ(r.status, 200); },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
}

// Ten increments leave no room for the tracking operation: once a copy may
// have been applied, the patch is not sent again, and the caller is told.
TEST_F(Router, UntrackablePatch_TimedOut_NotSentAgain) {
  start({}, multi_write_account());
  auto h = route(tracked_patch(ten_ops("incr")));
  ASSERT_EQ(http->count(), 1u);
  EXPECT_EQ(nlohmann::json::parse(http->at(0).request.body).size(), 10u)
      << "the caller's patch went as it was";
  answer(0, transport_failure(transport::failure::timeout));
  advance(2s);
  EXPECT_EQ(http->count(), 1u) << "an increment was sent twice";
  receive_now(
      self, h, [](data_response&) { ADD_FAILURE() << "expected an error"; },
      [](caf::error& e) { EXPECT_NE(code_of(e), errc::none); });
}

// Ten sets: a second copy changes nothing, so it goes again untracked.
TEST_F(Router, UntrackableButResendSafePatch_TimedOut_SentAgain) {
  start({}, multi_write_account());
  auto h = route(tracked_patch(ten_ops("set")));
  answer(0, transport_failure(transport::failure::timeout));
  if (http->count() == 1u) advance(1s);
  ASSERT_EQ(http->count(), 2u);
  EXPECT_EQ(http->at(1).request.body, http->at(0).request.body);
  answer(1, ok_response(R"({"id":"doc1","pk":"p0"})"));
  receive_now(
      self, h, [](data_response& r) { EXPECT_EQ(r.status, 200); },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
}

TEST_F(Router, Patch_IncrByAString_RefusedBeforeAnyTrip) {
  start();
  auto h = route(tracked_patch(R"([{"op":"incr","path":"/n","value":"1"}])"));
  EXPECT_EQ(http->count(), 0u);
  receive_now(
      self, h, [](data_response&) { ADD_FAILURE() << "expected an error"; },
      [](caf::error& e) {
        EXPECT_EQ(code_of(e), errc::validation_error);
        EXPECT_NE(context_of(e).find("patch operation 0 (incr) needs a number"),
                  std::string::npos)
            << context_of(e);
      });
}

batch_request two_op_batch() {
  batch_request b;
  b.collection_link = "dbs/d/colls/c";
  b.partition_key_json = R"(["p0"])";
  batch_operation create;
  create.kind = batch_op_kind::create;
  create.body = R"({"id":"a","pk":"p0"})";
  batch_operation patch;
  patch.kind = batch_op_kind::patch;
  patch.id = "b";
  patch.body = R"([{"op":"incr","path":"/n","value":1}])";
  b.operations = {create, patch};
  b.options.write_retries = 1; // not for a batch: never sent twice
  return b;
}

class RouterBatch : public Router {
protected:
  auto route_batch(batch_request req) {
    auto h = self->request(router, caf::infinite, route_atom_v, std::move(req));
    run();
    return h;
  }
};

TEST_F(RouterBatch, Answered207_EachOperationsStatus_NothingResent) {
  start();
  auto h = route_batch(two_op_batch());
  ASSERT_EQ(http->count(), 1u);
  const auto& req = http->at(0).request;
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.target, "/dbs/d/colls/c/docs");
  auto header = [&](const std::string& name) {
    for (const auto& [k, v] : req.headers)
      if (k == name) return v;
    return std::string{"(absent)"};
  };
  EXPECT_EQ(header("x-ms-cosmos-is-batch-request"), "True");
  EXPECT_EQ(header("x-ms-cosmos-batch-atomic"), "True");
  EXPECT_EQ(header("x-ms-documentdb-partitionkey"), R"(["p0"])");
  EXPECT_EQ(nlohmann::json::parse(req.body).size(), 2u);
  answer(0, ok_response(R"([{"statusCode":424},
                            {"statusCode":404,"requestCharge":1.5}])",
                        207));
  EXPECT_EQ(http->count(), 1u);
  receive_now(
      self, h,
      [](batch_response& r) {
        EXPECT_EQ(r.status, 207);
        EXPECT_FALSE(r.committed());
        ASSERT_EQ(r.results.size(), 2u);
        EXPECT_EQ(r.results[0].status, 424);
        EXPECT_EQ(r.results[1].status, 404);
      },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
}

// A throttled batch was not applied: it goes again after the wait. One that
// timed out may have been: never again, even with write retries asked for
// on a multi-write account.
TEST_F(RouterBatch, Throttled_SentAgain_TimedOut_Never) {
  start({}, multi_write_account());
  auto h = route_batch(two_op_batch());
  auto throttled = status_response(429);
  throttled.retry_after_ms = 100;
  answer(0, throttled);
  if (http->count() == 1u) advance(100ms);
  ASSERT_EQ(http->count(), 2u) << "a throttled batch was not retried";
  answer(1, transport_failure(transport::failure::timeout));
  advance(5s);
  EXPECT_EQ(http->count(), 2u) << "a batch that may have been applied went "
                                  "again";
  receive_now(
      self, h, [](batch_response&) { ADD_FAILURE() << "expected an error"; },
      [](caf::error& e) { EXPECT_NE(code_of(e), errc::none); });
}

TEST_F(RouterBatch, TwoPartitionKeys_RefusedBeforeAnyTrip) {
  start();
  auto b = two_op_batch();
  b.operations[1].partition_key_json = R"(["p1"])";
  auto h = route_batch(b);
  EXPECT_EQ(http->count(), 0u);
  receive_now(
      self, h, [](batch_response&) { ADD_FAILURE() << "expected an error"; },
      [](caf::error& e) {
        EXPECT_EQ(code_of(e), errc::validation_error);
        EXPECT_NE(context_of(e).find("batch operation 1 (Patch): its "
                                     "partition key [\"p1\"] is not the "
                                     "batch's"),
                  std::string::npos)
            << context_of(e);
      });
}

TEST_F(RouterBatch, AnswerWithTheWrongCount_AProtocolViolation) {
  start();
  auto h = route_batch(two_op_batch());
  answer(0, ok_response(R"([{"statusCode":201}])", 200));
  receive_now(
      self, h, [](batch_response&) { ADD_FAILURE() << "expected an error"; },
      [](caf::error& e) {
        EXPECT_EQ(code_of(e), errc::protocol_violation);
        EXPECT_NE(context_of(e).find("1 results for 2 operations; it was "
                                     "applied"),
                  std::string::npos)
            << context_of(e);
      });
}

// -- writes whose outcome is unknown ----------------------------------------

// Every write whose answer was lost after it went out fails with
// `errc::outcome_unknown` and the same words, whatever the account, the
// kind of write, write retries, and how the answer was lost: a caller can
// branch on the code, and a person reads that it may have been applied.
struct unknown_case {
  const char* name;
  bool multi_write;
  data_op op;
  transport::failure failure;
  int write_retries; // 0 or 1
};

void PrintTo(const unknown_case& c, std::ostream* os) {
  *os << c.name;
}

data_request write_of(data_op op, int write_retries) {
  data_request r;
  r.op = op;
  r.collection_link = "dbs/d/colls/c";
  r.options.partition_key_json = R"(["p0"])";
  r.options.write_retries = write_retries;
  r.options.hedge = 0;
  if (op != data_op::create && op != data_op::upsert) r.id = "doc1";
  if (op == data_op::patch)
    r.body = R"([{"op":"incr","path":"/n","value":1}])";
  else if (op != data_op::remove)
    r.body = R"({"id":"doc1","pk":"p0"})";
  return r;
}

class RouterOutcomeUnknown
    : public Router,
      public ::testing::WithParamInterface<unknown_case> {};

TEST_P(RouterOutcomeUnknown, AnswerLostAfterSent_OutcomeUnknownByCode) {
  const auto& c = GetParam();
  start({}, c.multi_write ? multi_write_account() : three_region_account());
  auto req = write_of(c.op, c.write_retries);
  req.options.budget = 10s;
  auto h = route(req);
  ASSERT_EQ(http->count(), 1u);
  auto lost = transport_failure(c.failure);
  lost.request_sent = true;
  // A multi-write account with write retries sends a tracked copy to the
  // next write region: its answer is lost too.
  for (int round = 0; round < 10 && self->mailbox().empty(); ++round) {
    for (size_t i = 0; i < http->count(); ++i)
      if (!http->at(i).answered) answer(i, lost);
    advance(2s);
  }
  if (c.write_retries == 0 || !c.multi_write) {
    EXPECT_EQ(http->count(), 1u) << "sent again though it may be applied";
  }
  receive_now(
      self, h, [](data_response&) { ADD_FAILURE() << "expected an error"; },
      [&](caf::error& e) {
        EXPECT_EQ(code_of(e), errc::outcome_unknown) << context_of(e);
        auto text = context_of(e);
        EXPECT_NE(text.find(outcome_unknown_advice), std::string::npos) << text;
        EXPECT_EQ(text.find("the attempt ladder already did"),
                  std::string::npos)
            << text;
        EXPECT_NE(diagnostics_of(e), nullptr);
      });
}

// The writes a caller can make, each on both kinds of account; timeouts
// and connections lost after the request went out.
INSTANTIATE_TEST_SUITE_P(
    Writes, RouterOutcomeUnknown,
    ::testing::Values(
        unknown_case{"CreateTimeoutSingleWrite", false, data_op::create,
                     transport::failure::timeout, 0},
        unknown_case{"CreateTimeoutSingleWriteRetries", false, data_op::create,
                     transport::failure::timeout, 1},
        unknown_case{"CreateTimeoutMultiWrite", true, data_op::create,
                     transport::failure::timeout, 0},
        unknown_case{"CreateTimeoutMultiWriteRetries", true, data_op::create,
                     transport::failure::timeout, 1},
        unknown_case{"UpsertResetSingleWrite", false, data_op::upsert,
                     transport::failure::reset, 0},
        unknown_case{"ReplaceTimeoutSingleWrite", false, data_op::replace,
                     transport::failure::timeout, 0},
        unknown_case{"ReplaceResetMultiWrite", true, data_op::replace,
                     transport::failure::reset, 0},
        unknown_case{"RemoveTimeoutSingleWrite", false, data_op::remove,
                     transport::failure::timeout, 0},
        unknown_case{"PatchTimeoutSingleWrite", false, data_op::patch,
                     transport::failure::timeout, 0},
        unknown_case{"PatchTimeoutSingleWriteRetries", false, data_op::patch,
                     transport::failure::timeout, 1},
        unknown_case{"PatchResetMultiWrite", true, data_op::patch,
                     transport::failure::reset, 0}),
    [](const ::testing::TestParamInfo<unknown_case>& i) {
      return std::string{i.param.name};
    });

// One attempt, not retried, and the reason says why without claiming a
// ladder that never ran.
TEST_F(Router, CreateTimedOutOnASingleWriteAccount_OneAttemptSaysWhy) {
  start();
  auto h = route(write_of(data_op::create, 0));
  auto lost = transport_failure(transport::failure::timeout);
  lost.request_sent = true;
  answer(0, lost);
  advance(5s);
  EXPECT_EQ(http->count(), 1u) << "a write that may have been applied went "
                                  "again";
  receive_now(
      self, h, [](data_response&) { ADD_FAILURE() << "expected an error"; },
      [](caf::error& e) {
        EXPECT_EQ(code_of(e), errc::outcome_unknown);
        EXPECT_NE(context_of(e).find("after 1 attempt for create of "
                                     "dbs/d/colls/c; timeout on a write: not "
                                     "retried; " +
                                     std::string{outcome_unknown_advice}),
                  std::string::npos)
            << context_of(e);
      });
}

// A refused connection sent nothing: its outcome is known (not applied).
TEST_F(Router, CreateRefusedEverywhere_NotOutcomeUnknown) {
  start();
  auto req = write_of(data_op::create, 0);
  req.options.budget = 3s;
  auto h = route(req);
  for (int i = 0; i < 20 && self->mailbox().empty(); ++i) {
    for (size_t j = 0; j < http->count(); ++j)
      if (!http->at(j).answered)
        answer(j, transport_failure(transport::failure::refused));
    advance(1s);
  }
  receive_now(
      self, h, [](data_response&) { ADD_FAILURE() << "expected an error"; },
      [](caf::error& e) {
        EXPECT_NE(code_of(e), errc::outcome_unknown) << context_of(e);
        EXPECT_EQ(context_of(e).find(outcome_unknown_advice), std::string::npos)
            << context_of(e);
      });
}

// A read-back that cannot tell whether the 409 is the write's own copy
// leaves its outcome unknown.
TEST_F(Router, WriteRetried_ReadBackFails_OutcomeUnknown) {
  start({}, multi_write_account());
  auto h = route(tracked_create());
  answer(0, transport_failure(transport::failure::timeout));
  if (http->count() == 1u) advance(1s);
  ASSERT_EQ(http->count(), 2u) << "the tracked create was not retried";
  answer(1, status_response(409));
  ASSERT_EQ(http->count(), 3u) << "no read-back";
  answer(2, status_response(503));
  receive_now(
      self, h, [](data_response&) { ADD_FAILURE() << "expected an error"; },
      [](caf::error& e) {
        EXPECT_EQ(code_of(e), errc::outcome_unknown) << context_of(e);
        EXPECT_NE(context_of(e).find(outcome_unknown_advice), std::string::npos)
            << context_of(e);
      });
}

TEST_F(RouterBatch, TimedOut_OutcomeUnknown_SaysSo) {
  start();
  auto h = route_batch(two_op_batch());
  auto lost = transport_failure(transport::failure::timeout);
  lost.request_sent = true;
  answer(0, lost);
  advance(5s);
  EXPECT_EQ(http->count(), 1u);
  receive_now(
      self, h, [](batch_response&) { ADD_FAILURE() << "expected an error"; },
      [](caf::error& e) {
        EXPECT_EQ(code_of(e), errc::outcome_unknown) << context_of(e);
        EXPECT_NE(context_of(e).find(outcome_unknown_advice), std::string::npos)
            << context_of(e);
      });
}

// -- the fleet's startup wait ----------------------------------------------

// A fleet actor that holds the router's sync request until the test says.
struct held_sync {
  caf::response_promise rp;
  int asked = 0;
};

caf::behavior fake_fleet(caf::event_based_actor* self,
                         std::shared_ptr<held_sync> held) {
  return {
      [=](fleet_sync_atom) {
        ++held->asked;
        held->rp = self->make_response_promise();
      },
      // The test's word: the view is in.
      [=](caf::ok_atom) { held->rp.deliver(caf::ok_atom_v); },
      [](fleet_observations&) {},
  };
}

class RouterFleetGate : public Router {
protected:
  std::shared_ptr<held_sync> held = std::make_shared<held_sync>();
  caf::actor fleet;

  void start_gated(std::chrono::milliseconds wait = 1000ms) {
    fleet = sys.spawn(fake_fleet, held);
    router_config cfg;
    cfg.fleet = fleet;
    cfg.fleet_startup_wait = wait;
    start(cfg);
  }

  void TearDown() override {
    self->send_exit(fleet, caf::exit_reason::user_shutdown);
    Router::TearDown();
  }
};

// A read that comes while the fleet's view is not in waits, unresolved
// (nothing is asked of the metadata caches or sent), and goes once the
// fleet actor answers: the verdicts the view brought decide its first
// region.
TEST_F(RouterFleetGate, ReadWaitsForTheFleetsView_GoesWhenItIsIn) {
  start_gated();
  EXPECT_EQ(held->asked, 1) << "the router did not ask the fleet actor";
  auto h = route(read_doc());
  EXPECT_EQ(http->count(), 0u) << "a read went out before the fleet's view";
  advance(500ms);
  EXPECT_EQ(http->count(), 0u);
  self->send(fleet, caf::ok_atom_v);
  run();
  ASSERT_EQ(http->count(), 1u) << "the read did not go once the view was in";
  answer(0, ok_response(R"({"id":"doc1","pk":"p0"})"));
  receive_now(
      self, h, [](data_response& r) { EXPECT_EQ(r.status, 200); },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  // Later reads do not wait.
  route(read_doc());
  EXPECT_EQ(http->count(), 2u);
}

// A fleet actor that never answers (its server hung at start): the reads
// go at the bound, in the order they came.
TEST_F(RouterFleetGate, FleetNeverAnswers_ReadsGoAtTheBound) {
  start_gated(1000ms);
  route(read_doc());
  route(read_doc());
  advance(999ms);
  EXPECT_EQ(http->count(), 0u);
  advance(1ms);
  EXPECT_EQ(http->count(), 2u) << "the reads did not go at the bound";
}

// No wait configured: nothing is asked, nothing waits.
TEST_F(RouterFleetGate, NoStartupWait_ReadsGoAtOnce) {
  start_gated(0ms);
  EXPECT_EQ(held->asked, 0);
  route(read_doc());
  EXPECT_EQ(http->count(), 1u);
}

} // namespace
