// The retry actor and its collaborators (issue 7, items 1, 3, 4, 5): which
// snapshots it applies, what it does when a collaborator goes down or the
// engine stops, and the detach-only path's deadline error. Virtual time.

#include "georoute/actors/internal.hpp"
#include "georoute/actors/location_cache.hpp"
#include "georoute/actors/query_plan.hpp"
#include "georoute/actors/retry.hpp"
#include "georoute/actors/router.hpp"
#include "georoute/messages/error.hpp"
#include "tests/actors/actor_fixture.hpp"

// Named after the file as well: the unity build (tests/CMakeLists.txt)
// compiles it in one translation unit with other tests.
namespace retry_wiring_test {
namespace {

using namespace georoute;
using namespace georoute::test;
using namespace std::chrono_literals;

using push_atom = caf::atom_constant<caf::atom("push")>;
using confirm_atom = caf::atom_constant<caf::atom("confirm")>;
constexpr push_atom push_atom_v = push_atom{};
constexpr confirm_atom confirm_atom_v = confirm_atom{};

location_table_options table_options() {
  location_table_options lo;
  lo.default_endpoint = global_ep;
  lo.preferred_regions = {"West US", "East US", "North Europe"};
  return lo;
}

// A location cache the test drives: it answers `subscribe` with `initial`,
// keeps every mark's promise until the test confirms it, and pushes the
// snapshots the test gives it, under its own identity.
using fake_locations_actor = location_cache_actor::extend<
    caf::reacts_to<push_atom, location_snapshot>,
    caf::reacts_to<confirm_atom, uint64_t, uint64_t>>;

struct locations_log {
  location_snapshot initial;
  std::vector<caf::actor> subscribers;
  std::vector<region_mark> marks;
  std::vector<caf::typed_response_promise<uint64_t>> mark_promises;
};

fake_locations_actor::behavior_type
fake_locations(fake_locations_actor::pointer self,
               std::shared_ptr<locations_log> log) {
  return {
      [](account_atom, database_account&) {},
      [=](resolve_atom, resolve_input& in) {
        return log->initial.table->resolve(in, self->clock().now());
      },
      [](fleet_atom, fleet_demotion&) { return uint64_t{0}; },
      [=](mark_atom, region_mark& m) -> caf::result<uint64_t> {
        log->marks.push_back(m);
        log->mark_promises.push_back(self->make_response_promise<uint64_t>());
        return log->mark_promises.back();
      },
      [=](subscribe_atom, caf::actor& sub) {
        log->subscribers.push_back(sub);
        return log->initial;
      },
      [](refresh_atom) { return false; },
      [=](push_atom, location_snapshot& snap) {
        for (auto& sub : log->subscribers)
          caf::unsafe_send_as(self, sub, snapshot_atom_v, snap);
      },
      [=](confirm_atom, uint64_t i, uint64_t version) {
        log->mark_promises.at(i).deliver(version);
      },
  };
}

// An endpoint manager that answers refreshes at once, or holds them.
struct endpoints_log {
  bool hold = false;
  int refreshes = 0;
  std::vector<caf::typed_response_promise<database_account>> held;
};

endpoint_manager_actor::behavior_type
fake_endpoints(endpoint_manager_actor::pointer self,
               std::shared_ptr<endpoints_log> log) {
  return {
      [=](refresh_atom, bool) -> caf::result<database_account> {
        ++log->refreshes;
        if (!log->hold) return three_region_account();
        log->held.push_back(self->make_response_promise<database_account>());
        return log->held.back();
      },
      [=](refresh_atom, fresh_atom) -> caf::result<database_account> {
        ++log->refreshes;
        if (!log->hold) return three_region_account();
        log->held.push_back(self->make_response_promise<database_account>());
        return log->held.back();
      },
      [](account_atom) { return three_region_account(); },
      [](stats_atom) { return endpoint_manager_stats{}; },
  };
}

// A router that never answers.
router_actor::behavior_type silent_router(router_actor::pointer self) {
  return {
      [](route_atom, data_request&) -> caf::result<data_response> {
        return make_error(errc::validation_error, "not used here");
      },
      [](route_atom, change_feed_request&) -> caf::result<change_feed_page> {
        return make_error(errc::validation_error, "not used here");
      },
      [](route_atom, batch_request&) -> caf::result<batch_response> {
        return make_error(errc::validation_error, "not used here");
      },
      [](route_atom, bulk_open&) -> caf::result<caf::actor> {
        return make_error(errc::validation_error, "not used here");
      },
      [](feed_ranges_atom,
         std::string&) -> caf::result<std::vector<partition_key_range>> {
        return make_error(errc::validation_error, "not used here");
      },
      [=](route_atom, document_request&) -> caf::result<transport::outcome> {
        return self->make_response_promise<transport::outcome>();
      },
      [](stats_atom) { return router_stats{}; },
      [](metrics_atom) { return router_metrics{}; },
  };
}

metadata_request read_collection() {
  metadata_request r;
  r.what.kind = transport::attempt_kind::resource_read;
  r.what.resource = "/dbs/d/colls/c";
  r.kind = request_kind::metadata_read;
  return r;
}

class RetryWiring : public actor_test {
protected:
  std::shared_ptr<locations_log> locs = std::make_shared<locations_log>();
  std::shared_ptr<endpoints_log> eps = std::make_shared<endpoints_log>();
  std::vector<caf::actor> spawned;
  fake_locations_actor locations;
  endpoint_manager_actor endpoints;
  router_actor router;
  retry_actor retry;
  caf::actor_addr supervisor; // null: nobody may re-wire the retry actor

  std::shared_ptr<const location_table> table(bool west_marked = false) {
    auto t = location_table{table_options()}.with_account(
        three_region_account(), sys.clock().now());
    if (west_marked) t = t.with_mark(west_ep, true, true, sys.clock().now());
    return std::make_shared<const location_table>(std::move(t));
  }

  void start(location_snapshot initial, retry_config cfg = {}) {
    locs->initial = std::move(initial);
    locations = sys.spawn(fake_locations, locs);
    endpoints = sys.spawn(fake_endpoints, eps);
    router = sys.spawn(silent_router);
    retry = spawn_retry(sys, cfg,
                        {locations, endpoints, http, router, {}, supervisor});
    for (auto a : {caf::actor_cast<caf::actor>(locations),
                   caf::actor_cast<caf::actor>(endpoints),
                   caf::actor_cast<caf::actor>(router),
                   caf::actor_cast<caf::actor>(retry)})
      spawned.push_back(a);
    run();
  }

  void TearDown() override {
    for (auto& a : spawned)
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

  void answer(transport::outcome o) {
    auto p = http->pending();
    ASSERT_FALSE(p.empty()) << "no pending request";
    http->respond(p.back(), std::move(o));
    run();
  }

  std::string last_endpoint() {
    return http->at(http->count() - 1).request.endpoint;
  }
};

TEST_F(RetryWiring, PushThatRacedALocalMark_DoesNotUnmarkTheRegion) {
  start({table(), 1});
  auto h =
      self->request(retry, caf::infinite, execute_atom_v, read_collection());
  run();
  ASSERT_EQ(last_endpoint(), west_ep);
  // West refuses: the retry actor marks it locally and asks the location
  // cache to mark it too; the failover pause (1 s) starts.
  answer(transport_failure(transport::failure::refused));
  ASSERT_EQ(locs->marks.size(), 1u);
  EXPECT_EQ(locs->marks[0].endpoint, west_ep);
  // The cache pushes a newer snapshot built before it applied the mark (an
  // account refresh, say): West unmarked.
  caf::anon_send(locations, push_atom_v, location_snapshot{table(), 2});
  run();
  advance(1s);
  ASSERT_EQ(http->count(), 2u);
  EXPECT_EQ(last_endpoint(), east_ep)
      << "a push that raced the mark un-marked West for the retry";
  // The cache applies the mark (version 3) and confirms it.
  caf::anon_send(locations, push_atom_v, location_snapshot{table(true), 3});
  caf::anon_send(locations, confirm_atom_v, uint64_t{0}, uint64_t{3});
  run();
  answer(ok_response("{}"));
  receive_now(
      self, h, [](transport::outcome& o) { EXPECT_EQ(o.endpoint, east_ep); },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
}

TEST_F(RetryWiring, OlderOrEqualSnapshot_IsIgnored) {
  start({table(true), 5}); // West marked
  caf::anon_send(locations, push_atom_v, location_snapshot{table(), 4});
  caf::anon_send(locations, push_atom_v, location_snapshot{table(), 5});
  run();
  EXPECT_EQ(stats().stale_snapshots, 2u);
  auto h =
      self->request(retry, caf::infinite, execute_atom_v, read_collection());
  run();
  EXPECT_EQ(last_endpoint(), east_ep) << "an older snapshot went back in time";
  answer(ok_response("{}"));
  receive_now(
      self, h, [](transport::outcome&) {},
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
}

TEST_F(RetryWiring, SnapshotFromAnyoneButTheLocationCache_IsIgnored) {
  start({table(true), 1}); // West marked
  // A handle holder sends a table of its own, with a higher version.
  self->send(caf::actor_cast<caf::actor>(retry), snapshot_atom_v,
             location_snapshot{table(), 99});
  run();
  auto h =
      self->request(retry, caf::infinite, execute_atom_v, read_collection());
  run();
  EXPECT_EQ(last_endpoint(), east_ep) << "a foreign snapshot was applied";
  answer(ok_response("{}"));
  receive_now(
      self, h, [](transport::outcome&) {},
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
}

TEST_F(RetryWiring, RouterGoesDown_DetachedOperationsFailAtOnce) {
  start({table(), 1});
  document_request d;
  d.what.kind = transport::attempt_kind::query_plan;
  d.what.resource = "dbs/d/colls/c";
  auto h = self->request(retry, caf::infinite, detach_atom_v, d);
  run();
  EXPECT_EQ(stats().live, 1u);
  self->send_exit(router, caf::exit_reason::kill);
  run(); // no time passes
  receive_now(
      self, h,
      [](transport::outcome&) { ADD_FAILURE() << "expected an error"; },
      [](caf::error& e) {
        EXPECT_EQ(code_of(e), errc::collaborator_down);
        EXPECT_NE(context_of(e).find("georoute.router"), std::string::npos)
            << context_of(e);
        EXPECT_NE(context_of(e).find("kill"), std::string::npos)
            << context_of(e);
        EXPECT_NE(context_of(e).find("query plan of dbs/d/colls/c"),
                  std::string::npos)
            << context_of(e);
      });
  EXPECT_EQ(stats().live, 0u);
}

TEST_F(RetryWiring, EndpointManagerGoesDown_WaitingOperationGoesOn) {
  eps->hold = true; // refreshes are never answered
  start({table(), 1});
  auto h =
      self->request(retry, caf::infinite, execute_atom_v, read_collection());
  run();
  answer(transport_failure(transport::failure::refused));
  EXPECT_EQ(eps->refreshes, 1);
  advance(5s);
  EXPECT_EQ(http->count(), 1u); // waiting for the refresh
  self->send_exit(endpoints, caf::exit_reason::kill);
  run();
  advance(1s); // the failover pause
  ASSERT_EQ(http->count(), 2u) << "the operation waited for a dead actor";
  EXPECT_EQ(last_endpoint(), east_ep);
  answer(ok_response("{}"));
  receive_now(
      self, h, [](transport::outcome&) {},
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
}

// The supervisor's re-wiring to a successor and the old collaborator's down
// message come from two actors: CAF does not order them. Whoever waited for
// the old one must still be told when the re-wiring comes first.
TEST_F(RetryWiring, RewiredToSuccessorsFirst_OldOnesDown_WaitersStillGoOn) {
  eps->hold = true; // refreshes are never answered
  supervisor = self->address();
  start({table(), 1});
  document_request d;
  d.what.kind = transport::attempt_kind::query_plan;
  d.what.resource = "dbs/d/colls/c";
  auto detached = self->request(retry, caf::infinite, detach_atom_v, d);
  auto read =
      self->request(retry, caf::infinite, execute_atom_v, read_collection());
  run();
  answer(transport_failure(transport::failure::refused));
  EXPECT_EQ(eps->refreshes, 1);
  auto old_router = router;
  auto old_endpoints = endpoints;
  router = sys.spawn(silent_router);
  endpoints = sys.spawn(fake_endpoints, std::make_shared<endpoints_log>());
  spawned.push_back(caf::actor_cast<caf::actor>(router));
  spawned.push_back(caf::actor_cast<caf::actor>(endpoints));
  engine_wiring w;
  w.supervisor = supervisor;
  w.locations = locations;
  w.endpoints = endpoints;
  w.router = router;
  self->send(caf::actor_cast<caf::actor>(retry), w);
  run();
  EXPECT_EQ(stats().live, 2u) << "the re-wiring alone ended an operation";
  EXPECT_EQ(http->count(), 1u) << "the re-wiring alone ended the wait";
  self->send_exit(old_router, caf::exit_reason::kill);
  self->send_exit(old_endpoints, caf::exit_reason::kill);
  run(); // no time passes
  receive_now(
      self, detached,
      [](transport::outcome&) { ADD_FAILURE() << "expected an error"; },
      [](caf::error& e) {
        EXPECT_EQ(code_of(e), errc::collaborator_down) << context_of(e);
        EXPECT_NE(context_of(e).find("georoute.router"), std::string::npos)
            << context_of(e);
      });
  advance(1s); // the failover pause
  ASSERT_EQ(http->count(), 2u) << "the read waited for a dead actor";
  EXPECT_EQ(last_endpoint(), east_ep);
  answer(ok_response("{}"));
  receive_now(
      self, read, [](transport::outcome&) {},
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  EXPECT_EQ(stats().live, 0u);
}

TEST_F(RetryWiring, Stopped_OperationsInFlightGetEngineStopped) {
  start({table(), 1});
  auto h =
      self->request(retry, caf::infinite, execute_atom_v, read_collection());
  run();
  ASSERT_EQ(http->count(), 1u);
  self->send_exit(retry, caf::exit_reason::user_shutdown);
  run();
  receive_now(
      self, h,
      [](transport::outcome&) { ADD_FAILURE() << "expected an error"; },
      [](caf::error& e) {
        EXPECT_EQ(code_of(e), errc::shutting_down);
        EXPECT_NE(context_of(e).find("engine stopped"), std::string::npos)
            << context_of(e);
      });
}

// The query-plan path end to end in virtual time: query plan → retry actor
// (detach-only) → request router → its pipeline → a region that refuses
// every connection, past the hard deadline.
class DetachDeadline : public actor_test {
protected:
  std::vector<caf::actor> spawned;

  void TearDown() override {
    for (auto& a : spawned)
      self->send_exit(a, caf::exit_reason::user_shutdown);
    run();
  }
};

TEST_F(DetachDeadline, QueryPlanPath_ReportsTheLastUnderlyingFailure) {
  auto locations = spawn_location_cache(sys, table_options());
  self->send(locations, account_atom_v, three_region_account());
  auto eps = std::make_shared<endpoints_log>();
  auto endpoints = sys.spawn(fake_endpoints, eps);
  retry_config cfg;
  cfg.hard_deadline = 30s;
  router_config rc;
  rc.pipeline = cfg;
  auto router =
      spawn_router(sys, rc, {locations, endpoints, {}, {}, http, {}, {}});
  auto retry =
      spawn_retry(sys, cfg, {locations, endpoints, http, router, {}, {}});
  auto plans = spawn_query_plan(sys, retry, 16);
  for (auto a :
       {caf::actor_cast<caf::actor>(locations),
        caf::actor_cast<caf::actor>(endpoints),
        caf::actor_cast<caf::actor>(router), caf::actor_cast<caf::actor>(retry),
        caf::actor_cast<caf::actor>(plans)})
    spawned.push_back(a);
  run();
  query_plan_request q;
  q.collection_link = "dbs/d/colls/c";
  q.collection_rid = "rid1";
  q.query = "SELECT * FROM c ORDER BY c.x";
  auto h = self->request(plans, caf::infinite, plan_atom_v, q);
  run();
  // Every region refuses, every second, until well past the deadline.
  for (int i = 0; i < 40 && self->mailbox().empty(); ++i) {
    for (auto p : http->pending())
      http->respond(p, transport_failure(transport::failure::refused));
    run();
    advance(1s);
  }
  ASSERT_GT(http->count(), 10u);
  EXPECT_EQ(http->at(0).request.method, "POST");
  receive_now(
      self, h, [](query_plan&) { ADD_FAILURE() << "expected an error"; },
      [](caf::error& e) {
        EXPECT_EQ(code_of(e), errc::connection_refused) << context_of(e);
        auto text = context_of(e);
        EXPECT_NE(text.find("refused (injected refused) from "),
                  std::string::npos)
            << text;
        EXPECT_NE(text.find("for query plan of dbs/d/colls/c"),
                  std::string::npos)
            << text;
        EXPECT_NE(text.find("hard deadline of 30s reached"), std::string::npos)
            << text;
      });
}

} // namespace
} // namespace retry_wiring_test
