// The retry actor's contract, one test per point (issue 4, item 1). Virtual
// time: the hard deadline, back-offs and caller timeouts are exact.

#include "georoute/actors/internal.hpp"
#include "georoute/actors/location_cache.hpp"
#include "georoute/actors/retry.hpp"
#include "georoute/messages/error.hpp"
#include "tests/actors/actor_fixture.hpp"

// Named after the file as well: the unity build (tests/CMakeLists.txt)
// compiles it in one translation unit with other tests.
namespace retry_test {
namespace {

using namespace georoute;
using namespace georoute::test;
using namespace std::chrono_literals;

// A router that records requests and answers them when told.
struct router_log {
  int requests = 0;
  caf::typed_response_promise<transport::outcome> pending;
};

using fake_router_actor = router_actor::extend<
    caf::reacts_to<answer_atom, uint64_t, transport::outcome>>;

fake_router_actor::behavior_type fake_router(fake_router_actor::pointer self,
                                             std::shared_ptr<router_log> log) {
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
        ++log->requests;
        log->pending = self->make_response_promise<transport::outcome>();
        return log->pending;
      },
      [](stats_atom) { return router_stats{}; },
      [](metrics_atom) { return router_metrics{}; },
      // The test's trigger to answer the pending request (a promise must be
      // delivered by its own actor): 503 answers an error, else the outcome.
      [=](answer_atom, uint64_t, transport::outcome& o) {
        if (o.status == 503)
          log->pending.deliver(
              make_error(errc::service_unavailable, "503 from East US"));
        else
          log->pending.deliver(o);
      },
  };
}

metadata_request read_collection() {
  metadata_request r;
  r.what.kind = transport::attempt_kind::resource_read;
  r.what.resource = "/dbs/d/colls/c";
  r.kind = request_kind::metadata_read;
  r.op = op_kind::read;
  return r;
}

class Retry : public actor_test {
protected:
  std::shared_ptr<refresh_log> refreshes = std::make_shared<refresh_log>();
  std::shared_ptr<router_log> routed = std::make_shared<router_log>();
  location_cache_actor locations;
  endpoint_manager_actor endpoints;
  fake_router_actor router;
  retry_actor retry;

  // `with_endpoints` false: an engine without an endpoint manager.
  void start(retry_config cfg = {}, bool with_endpoints = true) {
    location_table_options lo;
    lo.default_endpoint = global_ep;
    lo.preferred_regions = {"West US", "East US", "North Europe"};
    locations = spawn_location_cache(sys, lo);
    self->send(locations, account_atom_v, three_region_account());
    if (with_endpoints) endpoints = sys.spawn(fake_endpoint_manager, refreshes);
    router = sys.spawn(fake_router, routed);
    retry = spawn_retry(sys, cfg, {locations, endpoints, http, router, {}, {}});
    run();
  }

  void TearDown() override {
    for (auto a : {caf::actor_cast<caf::actor>(retry),
                   caf::actor_cast<caf::actor>(locations),
                   caf::actor_cast<caf::actor>(endpoints),
                   caf::actor_cast<caf::actor>(router)})
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

  // Answers the newest pending request with `o`.
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

// A caller actor that asks the retry actor with its own timeout and records
// what it got: "ok", "timeout" or the error text.
struct caller_log {
  std::vector<std::string> got;
};

caf::behavior caller(caf::event_based_actor* self, retry_actor retry,
                     caf::timespan timeout, metadata_request req,
                     std::shared_ptr<caller_log> log) {
  self->request(retry, timeout, execute_atom_v, std::move(req))
      .then([log](transport::outcome&) { log->got.push_back("ok"); },
            [log](caf::error& e) {
              log->got.push_back(
                  e == caf::sec::request_timeout ? "timeout" : context_of(e));
            });
  return {[](caf::ok_atom) {}};
}

TEST_F(Retry, SucceedsFirstAttempt) {
  start();
  auto h =
      self->request(retry, caf::infinite, execute_atom_v, read_collection());
  run();
  ASSERT_EQ(http->count(), 1u);
  EXPECT_EQ(last_endpoint(), west_ep);
  EXPECT_EQ(http->at(0).request.timeout, 1s); // HotPath ladder, step 1
  answer(ok_response(R"({"id":"c"})"));
  receive_now(
      self, h, [](transport::outcome& o) { EXPECT_EQ(o.status, 200); },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  auto s = stats();
  EXPECT_EQ(s.attempts, 1u);
  EXPECT_EQ(s.live, 0u);
}

TEST_F(Retry, RetriesOnTransient_InTheNextRegion) {
  start();
  auto h =
      self->request(retry, caf::infinite, execute_atom_v, read_collection());
  run();
  answer(status_response(503));
  ASSERT_EQ(http->count(), 2u);
  EXPECT_EQ(last_endpoint(), east_ep); // UE: index 1
  answer(ok_response("{}"));
  receive_now(
      self, h, [](transport::outcome& o) { EXPECT_EQ(o.endpoint, east_ep); },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  EXPECT_EQ(stats().retries, 1u);
}

TEST_F(Retry, CrossRegionRetryExecutes_EvenWhenCallerTimesOutMidFlight) {
  start();
  auto log = std::make_shared<caller_log>();
  auto c =
      sys.spawn(caller, retry, caf::timespan{300ms}, read_collection(), log);
  run();
  ASSERT_EQ(http->count(), 1u);
  advance(300ms);
  ASSERT_EQ(log->got, std::vector<std::string>{"timeout"});
  // West US refuses the connection after the caller left: the decision runs
  // anyway: West is marked, the account refreshed, East tried.
  answer(transport_failure(transport::failure::refused));
  EXPECT_EQ(refreshes->total(), 1);
  advance(1s); // EF: reads wait 1 s
  ASSERT_EQ(http->count(), 2u);
  EXPECT_EQ(last_endpoint(), east_ep);
  answer(ok_response("{}"));
  auto s = stats();
  EXPECT_EQ(s.marks, 1u);
  EXPECT_EQ(s.refreshes, 1u);
  EXPECT_EQ(s.live, 0u);
  EXPECT_EQ(log->got.size(), 1u); // the late result was not delivered twice
  self->send_exit(c, caf::exit_reason::user_shutdown);
}

TEST_F(Retry, CallerTimesOut_WorkKeepsRunning_AndWaitingRequesterGetsResult) {
  start();
  auto early = std::make_shared<caller_log>();
  auto c =
      sys.spawn(caller, retry, caf::timespan{300ms}, read_collection(), early);
  // A second requester without a timeout (a cache filling itself).
  auto h =
      self->request(retry, caf::infinite, execute_atom_v, read_collection());
  run();
  advance(300ms);
  EXPECT_EQ(early->got, std::vector<std::string>{"timeout"});
  // Both operations fail over from West to East.
  for (auto i : http->pending())
    http->respond(i, status_response(503));
  run();
  for (auto i : http->pending())
    http->respond(i, ok_response(R"({"id":"c"})"));
  run();
  receive_now(
      self, h,
      [](transport::outcome& o) { EXPECT_EQ(o.body, R"({"id":"c"})"); },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  EXPECT_EQ(stats().live, 0u);
  self->send_exit(c, caf::exit_reason::user_shutdown);
}

TEST_F(Retry, PolicyDeniesRetry_SurfacesOriginalFailure) {
  start();
  auto h =
      self->request(retry, caf::infinite, execute_atom_v, read_collection());
  run();
  answer(status_response(404));
  EXPECT_EQ(http->count(), 1u);
  receive_now(
      self, h,
      [](transport::outcome&) { ADD_FAILURE() << "expected an error"; },
      [](caf::error& e) {
        EXPECT_EQ(code_of(e), errc::not_found);
        EXPECT_NE(context_of(e).find("404 from West US"), std::string::npos)
            << context_of(e);
      });
  EXPECT_EQ(stats().policy_refusals, 1u);
}

TEST_F(Retry, DeadlineTripsDuringAttempt_BeforeAnyFinished_IsADeadlineError) {
  retry_config cfg;
  cfg.hard_deadline = 30s;
  start(cfg);
  auto h =
      self->request(retry, caf::infinite, execute_atom_v, read_collection());
  run();
  advance(30s); // the region hangs: nothing ever answers
  receive_now(
      self, h,
      [](transport::outcome&) { ADD_FAILURE() << "expected an error"; },
      [](caf::error& e) {
        EXPECT_EQ(code_of(e), errc::deadline_exceeded);
        EXPECT_NE(context_of(e).find("30s"), std::string::npos);
      });
  // The answer arriving after the deadline is dropped and counted.
  answer(ok_response("{}"));
  auto s = stats();
  EXPECT_EQ(s.deadline_trips, 1u);
  EXPECT_EQ(s.late_completions, 1u);
  EXPECT_EQ(s.live, 0u);
}

TEST_F(Retry, DeadlineTripsDuringBackoff_ReportsLastUnderlyingFailure) {
  // Connection failures fail over with a pause of 20 s (reads): attempt 1 at
  // 0 s, attempt 2 at 20 s, the deadline at 30 s falls into the second
  // pause. Nothing refuses: the policy would retry 120 times. (Resets before
  // the request went out: a refused connection would go on at once.)
  retry_config cfg;
  cfg.hard_deadline = 30s;
  cfg.client.failover_retry_interval = 20s;
  start(cfg);
  auto h =
      self->request(retry, caf::infinite, execute_atom_v, read_collection());
  run();
  answer(transport_failure(transport::failure::reset));
  advance(20s);
  ASSERT_EQ(http->count(), 2u);
  EXPECT_EQ(last_endpoint(), east_ep); // West is marked
  answer(transport_failure(transport::failure::reset));
  advance(9s);
  EXPECT_TRUE(self->mailbox().empty()) << "answered before the deadline";
  advance(1s); // t = 30 s, in the middle of the second pause
  receive_now(
      self, h,
      [](transport::outcome&) { ADD_FAILURE() << "expected an error"; },
      [](caf::error& e) {
        EXPECT_EQ(code_of(e), errc::connection_reset);
        auto text = context_of(e);
        EXPECT_NE(text.find("reset (injected reset) from East US"),
                  std::string::npos)
            << text;
        EXPECT_NE(text.find("after 2 attempts"), std::string::npos) << text;
        EXPECT_NE(text.find("hard deadline of 30s reached"), std::string::npos)
            << text;
      });
  auto s = stats();
  EXPECT_EQ(s.deadline_trips, 1u);
  EXPECT_EQ(s.policy_refusals, 0u); // the deadline ended it, not the policy
  advance(20s); // the pending attempt finds the operation gone
  EXPECT_EQ(http->count(), 2u);
  EXPECT_EQ(stats().live, 0u);
}

// The hard deadline ends an operation that was not hedged while its
// primary is out. The caller gets its error at the deadline; what the
// primary's region did afterwards is still acted on: a refusal marks it and
// refreshes the account, as it would have had the deadline not come.
TEST_F(Retry, DeadlineTripsDuringAnUnhedgedAttempt_ItsLateFailureStillMarks) {
  retry_config cfg;
  cfg.hard_deadline = 30s;
  cfg.metadata_hedge.max_concurrent = 0; // not hedged
  start(cfg);
  auto h =
      self->request(retry, caf::infinite, execute_atom_v, read_collection());
  run();
  advance(30s);
  receive_now(
      self, h,
      [](transport::outcome&) { ADD_FAILURE() << "expected an error"; },
      [](caf::error& e) { EXPECT_EQ(code_of(e), errc::deadline_exceeded); });
  ASSERT_EQ(http->count(), 1u) << "the operation was hedged after all";
  EXPECT_EQ(stats().marks, 0u);
  EXPECT_EQ(refreshes->total(), 0);
  answer(transport_failure(transport::failure::refused));
  auto s = stats();
  EXPECT_EQ(s.marks, 1u) << "the late refusal was dropped";
  EXPECT_EQ(refreshes->total(), 1);
  EXPECT_EQ(s.late_completions, 1u);
  EXPECT_EQ(http->count(), 1u); // a refusal does not climb: nothing resent
  EXPECT_EQ(s.live, 0u);
}

// The hard deadline falls into the pause between two steps of the timeout
// ladder of an operation that was not hedged. The pending step still goes
// to the same endpoint (at once: nobody waits for the pause), and when it
// too is silent the region is marked, as if the deadline had not come.
TEST_F(Retry, DeadlineTripsBetweenLadderSteps_TheNextStepStillGoesAndMarks) {
  retry_config cfg;
  cfg.hard_deadline = 29500ms;
  cfg.metadata_hedge.max_concurrent = 0; // not hedged
  start(cfg);
  auto h =
      self->request(retry, caf::infinite, execute_atom_v, read_collection());
  run();
  answer(transport_failure(transport::failure::timeout)); // step 1 (1 s)
  ASSERT_EQ(http->count(), 2u);
  advance(29s);
  answer(transport_failure(transport::failure::timeout)); // step 2 (5 s)
  EXPECT_EQ(http->count(), 2u); // step 3 waits out a 1 s pause
  advance(500ms);               // the hard deadline, mid-pause
  receive_now(
      self, h,
      [](transport::outcome&) { ADD_FAILURE() << "expected an error"; },
      [](caf::error& e) {
        EXPECT_NE(context_of(e).find("hard deadline of 29500ms reached"),
                  std::string::npos)
            << context_of(e);
      });
  ASSERT_EQ(http->count(), 3u) << "the pending ladder step was dropped";
  EXPECT_EQ(last_endpoint(), west_ep);
  EXPECT_EQ(http->at(2).request.timeout, 65s);
  EXPECT_EQ(stats().marks, 0u);
  advance(500ms); // the pause's own attempt message finds the operation gone
  EXPECT_EQ(http->count(), 3u);
  answer(transport_failure(transport::failure::timeout)); // step 3, silent
  auto s = stats();
  EXPECT_EQ(s.marks, 1u);
  EXPECT_EQ(refreshes->total(), 1);
  EXPECT_EQ(http->count(), 3u); // nothing more goes to the marked region
  EXPECT_EQ(s.live, 0u);
}

TEST_F(Retry, ZeroBackoff_GoesThroughTheMailbox_OtherMessagesInterleave) {
  start();
  auto req = read_collection();
  req.what.kind = transport::attempt_kind::pkranges_read;
  req.kind = request_kind::pkranges_read;
  req.policy = loop_policy::partition_range;
  auto h = self->request(retry, caf::infinite, execute_atom_v, req);
  run();
  ASSERT_EQ(http->count(), 1u);
  // A 503 is a zero-delay hop to the next region. Step the coordinator one
  // message at a time: handling the completion must only enqueue the next
  // attempt, not send it.
  http->respond(0, status_response(503));
  ASSERT_TRUE(sched.try_run_once()); // the retry actor handles the completion
  EXPECT_EQ(http->count(), 1u)
      << "the zero back-off attempt ran inside the completion handler";
  ASSERT_TRUE(sched.try_run_once()); // now the attempt message
  EXPECT_EQ(http->count(), 2u);
  EXPECT_EQ(last_endpoint(), east_ep);
  answer(ok_response("{}"));
  EXPECT_EQ(stats().live, 0u);
  receive_now(
      self, h, [](transport::outcome& o) { EXPECT_EQ(o.endpoint, east_ep); },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
}

TEST_F(Retry, AttemptCap_BoundsTheLoop) {
  retry_config cfg;
  cfg.attempt_cap = 3;
  start(cfg);
  auto h =
      self->request(retry, caf::infinite, execute_atom_v, read_collection());
  run();
  auto throttled = status_response(429);
  throttled.retry_after_ms = 10;
  for (int i = 0; i < 3; ++i) {
    answer(throttled);
    advance(10ms);
  }
  EXPECT_EQ(http->count(), 3u);
  receive_now(
      self, h,
      [](transport::outcome&) { ADD_FAILURE() << "expected an error"; },
      [](caf::error& e) {
        EXPECT_EQ(code_of(e), errc::throttled);
        EXPECT_NE(context_of(e).find("attempt cap of 3"), std::string::npos);
      });
}

TEST_F(Retry, TimeoutClimbsTheHotPathLadder_OnTheSameEndpoint) {
  start();
  auto h =
      self->request(retry, caf::infinite, execute_atom_v, read_collection());
  run();
  answer(transport_failure(transport::failure::timeout));
  ASSERT_EQ(http->count(), 2u);
  EXPECT_EQ(http->at(1).request.timeout, 5s);
  EXPECT_EQ(last_endpoint(), west_ep);
  answer(transport_failure(transport::failure::timeout));
  EXPECT_EQ(http->count(), 2u); // (5 s, 1 s): one second pause
  advance(1s);
  ASSERT_EQ(http->count(), 3u);
  EXPECT_EQ(http->at(2).request.timeout, 65s);
  // Silent through the whole ladder: West is marked, the account refreshed,
  // and after the 1 s failover pause East is tried.
  answer(transport_failure(transport::failure::timeout));
  EXPECT_EQ(stats().marks, 1u);
  EXPECT_EQ(refreshes->total(), 1);
  advance(1s);
  ASSERT_EQ(http->count(), 4u);
  EXPECT_EQ(last_endpoint(), east_ep);
  answer(ok_response("{}"));
  receive_now(
      self, h, [](transport::outcome& o) { EXPECT_EQ(o.status, 200); },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
}

TEST_F(Retry, DetachOnly_HasNoOuterRetry) {
  start();
  document_request d;
  d.what.kind = transport::attempt_kind::query_plan;
  d.what.resource = "dbs/d/colls/c";
  d.kind = request_kind::query_plan;
  auto h = self->request(retry, caf::infinite, detach_atom_v, d);
  run();
  EXPECT_EQ(routed->requests, 1);
  caf::anon_send(router, answer_atom_v, uint64_t{0}, status_response(503));
  run();
  receive_now(
      self, h,
      [](transport::outcome&) { ADD_FAILURE() << "expected an error"; },
      [](caf::error& e) { EXPECT_EQ(code_of(e), errc::service_unavailable); });
  EXPECT_EQ(routed->requests, 1); // no outer retry
  EXPECT_EQ(http->count(), 0u);
}

TEST_F(Retry, DetachOnly_RouterThatNeverAnswers_IsCutOffAfterTheGrace) {
  // The router's own pipeline trips the hard deadline and answers the last
  // failure; only a router that never answers meets the detach timeout.
  retry_config cfg;
  cfg.hard_deadline = 30s;
  cfg.detach_grace = 5s;
  start(cfg);
  document_request d;
  auto h = self->request(retry, caf::infinite, detach_atom_v, d);
  run();
  EXPECT_EQ(stats().live, 1u);
  advance(30s);
  EXPECT_TRUE(self->mailbox().empty()) << "the detach path raced the router";
  advance(5s);
  receive_now(
      self, h,
      [](transport::outcome&) { ADD_FAILURE() << "expected an error"; },
      [](caf::error& e) { EXPECT_EQ(code_of(e), errc::deadline_exceeded); });
  EXPECT_EQ(stats().live, 0u);
}

TEST_F(Retry, LiveGauge_ReturnsToZeroWhenWorkEnds) {
  start();
  std::vector<decltype(self->request(retry, caf::infinite, execute_atom_v,
                                     read_collection()))>
      handles;
  for (int i = 0; i < 3; ++i)
    handles.push_back(
        self->request(retry, caf::infinite, execute_atom_v, read_collection()));
  run();
  EXPECT_EQ(stats().live, 3u);
  for (auto i : http->pending())
    http->respond(i, ok_response("{}"));
  run();
  EXPECT_EQ(stats().live, 0u);
  for (auto& h : handles)
    receive_now(
        self, h, [](transport::outcome&) {}, [](caf::error&) {});
}

// -- What both planes do alike: the router's twins of these tests are in
// router_test.cpp.

// An engine without an endpoint manager: a refusal marks West, and the read
// goes on to East after the failover pause. No refresh is asked, so none is
// counted, and the decision (its mark) completes.
TEST_F(Retry, NoEndpointManager_NoRefreshCounted_TheDecisionCompletes) {
  retry_config cfg;
  cfg.metadata_hedge.max_concurrent = 0; // not hedged
  start(cfg, false);
  auto h =
      self->request(retry, caf::infinite, execute_atom_v, read_collection());
  run();
  // A reset before the request went out: it keeps the failover pause
  // (a refused connection goes on at once).
  answer(transport_failure(transport::failure::reset));
  auto s = stats();
  EXPECT_EQ(s.marks, 1u);
  EXPECT_EQ(s.refreshes, 0u);
  EXPECT_EQ(s.failover_decisions, 1u);
  EXPECT_EQ(s.failover_decisions_completed, 1u);
  EXPECT_EQ(http->count(), 1u);
  advance(1s); // the failover pause of reads
  ASSERT_EQ(http->count(), 2u);
  EXPECT_EQ(last_endpoint(), east_ep);
  answer(ok_response("{}"));
  receive_now(
      self, h, [](transport::outcome& o) { EXPECT_EQ(o.status, 200); },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
}

// The mark an attempt makes after its operation's hard deadline is a
// decision made after the operation ended; it is counted and completes, and
// its answer is a late answer.
TEST_F(Retry, DeadlineTrips_TheLateAttemptsDecisionIsCounted) {
  retry_config cfg;
  cfg.hard_deadline = 30s;
  cfg.metadata_hedge.max_concurrent = 0; // not hedged
  start(cfg);
  auto h =
      self->request(retry, caf::infinite, execute_atom_v, read_collection());
  run();
  advance(30s);
  receive_now(
      self, h,
      [](transport::outcome&) { ADD_FAILURE() << "expected an error"; },
      [](caf::error& e) { EXPECT_EQ(code_of(e), errc::deadline_exceeded); });
  EXPECT_EQ(stats().failover_decisions, 0u);
  answer(transport_failure(transport::failure::refused));
  auto s = stats();
  EXPECT_EQ(s.late_completions, 1u);
  EXPECT_EQ(s.failover_decisions, 1u);
  EXPECT_EQ(s.failover_decisions_completed, 1u);
  EXPECT_EQ(s.decisions_after_deadline, 1u);
  EXPECT_EQ(s.refreshes, 1u);
}

// A table that arrives as a push, before the subscription is answered,
// starts what waited for a first table.
TEST_F(Retry, FirstTableArrivesAsAPush_TheWaitingReadGoes) {
  auto tables = std::make_shared<table_log>();
  tables->hold_subscriptions = true;
  auto cache = sys.spawn(fake_location_cache, tables);
  locations = caf::actor_cast<location_cache_actor>(cache);
  endpoints = sys.spawn(fake_endpoint_manager, refreshes);
  router = sys.spawn(fake_router, routed);
  retry_config cfg;
  cfg.metadata_hedge.max_concurrent = 0; // not hedged
  retry = spawn_retry(sys, cfg, {locations, endpoints, http, router, {}, {}});
  run();
  auto h =
      self->request(retry, caf::infinite, execute_atom_v, read_collection());
  run();
  EXPECT_EQ(http->count(), 0u) << "sent with no table";
  self->send(cache, push_atom_v);
  run();
  ASSERT_EQ(http->count(), 1u) << "the pushed table did not start the read";
  EXPECT_EQ(last_endpoint(), west_ep);
  answer(ok_response("{}"));
  receive_now(
      self, h, [](transport::outcome& o) { EXPECT_EQ(o.status, 200); },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
}

// A re-wiring that names no location cache keeps the one the actor has:
// null means "not part of this engine", never "forget it". West's refusal
// after such a re-wiring still reaches the cache as a mark.
TEST_F(Retry, RewiringWithNoLocationCache_KeepsTheCache) {
  auto tables = std::make_shared<table_log>();
  auto cache = sys.spawn(fake_location_cache, tables);
  locations = caf::actor_cast<location_cache_actor>(cache);
  endpoints = sys.spawn(fake_endpoint_manager, refreshes);
  router = sys.spawn(fake_router, routed);
  retry_config cfg;
  cfg.metadata_hedge.max_concurrent = 0; // not hedged
  retry = spawn_retry(
      sys, cfg, {locations, endpoints, http, router, {}, self->address()});
  run();
  engine_wiring w;
  w.supervisor = self->address();
  w.endpoints = endpoints; // everything else null
  self->send(caf::actor_cast<caf::actor>(retry), w);
  run();
  auto h =
      self->request(retry, caf::infinite, execute_atom_v, read_collection());
  run();
  answer(transport_failure(transport::failure::refused));
  EXPECT_EQ(tables->marks, 1) << "the mark never reached the location cache";
  advance(1s);
  answer(ok_response("{}"));
  receive_now(
      self, h, [](transport::outcome& o) { EXPECT_EQ(o.status, 200); },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
}

// A loop that may make no attempt at all (an attempt cap of 0) fails with
// `attempts_exhausted`, as the router's does.
TEST_F(Retry, NoAttemptAllowed_AttemptsExhausted) {
  retry_config cfg;
  cfg.attempt_cap = 0;
  start(cfg);
  auto h =
      self->request(retry, caf::infinite, execute_atom_v, read_collection());
  run();
  EXPECT_EQ(http->count(), 0u);
  receive_now(
      self, h,
      [](transport::outcome&) { ADD_FAILURE() << "expected an error"; },
      [](caf::error& e) {
        EXPECT_EQ(code_of(e), errc::attempts_exhausted) << context_of(e);
        EXPECT_NE(context_of(e).find("attempt cap of 0 reached"),
                  std::string::npos)
            << context_of(e);
      });
}

// The endpoint manager goes down while a read waits for the refresh its
// failover decision asked for: the read goes on without it, after the pause
// the decision asked for, as after a refresh that answered.
TEST_F(Retry, EndpointManagerDownDuringTheRefresh_GoesOnAfterThePause) {
  refreshes->hold = true;
  retry_config cfg;
  cfg.metadata_hedge.max_concurrent = 0; // not hedged
  start(cfg);
  auto h =
      self->request(retry, caf::infinite, execute_atom_v, read_collection());
  run();
  // A reset before the request went out: it keeps the failover pause
  // (a refused connection goes on at once).
  answer(transport_failure(transport::failure::reset));
  EXPECT_EQ(refreshes->total(), 1);
  advance(5s);
  EXPECT_EQ(http->count(), 1u) << "went on without the refresh";
  self->send_exit(endpoints, caf::exit_reason::kill);
  run();
  EXPECT_EQ(http->count(), 1u) << "the failover pause was skipped";
  advance(1s); // the failover pause of reads
  ASSERT_EQ(http->count(), 2u) << "the read waited for a dead actor";
  EXPECT_EQ(last_endpoint(), east_ep);
  answer(ok_response("{}"));
  receive_now(
      self, h, [](transport::outcome&) {},
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
}

} // namespace
} // namespace retry_test

namespace retry_test {
namespace {

// Which metadata attempts the transport may send again after a dropped
// connection: every metadata read, and a caller's raw request only when
// it says it reads and its method only reads.
TEST(MetadataResend, ReadsYes_RawOnlyWhenItsOperationAndMethodBothRead) {
  auto of = [](transport::attempt_kind k, op_kind op, std::string method) {
    metadata_request r;
    r.what.kind = k;
    r.what.raw.method = std::move(method);
    r.op = op;
    return metadata_resend_after_drop(r);
  };
  using k = transport::attempt_kind;
  EXPECT_TRUE(of(k::resource_read, op_kind::read, ""));
  EXPECT_TRUE(of(k::pkranges_read, op_kind::read, ""));
  EXPECT_TRUE(of(k::query_plan, op_kind::read, ""));
  EXPECT_TRUE(of(k::raw, op_kind::read, "GET"));
  EXPECT_FALSE(of(k::raw, op_kind::read, "POST")); // a create, by its method
  EXPECT_FALSE(of(k::raw, op_kind::write, "GET")); // the caller says write
  EXPECT_FALSE(of(k::raw, op_kind::read, "DELETE"));
}

} // namespace
} // namespace retry_test
