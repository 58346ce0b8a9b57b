// Endpoint manager: account discovery, the sweep, the refresh gate and the
// background loop that never stops. Virtual time; HTTP answered by hand.

#include "georoute/actors/endpoint_manager.hpp"
#include "georoute/actors/internal.hpp"
#include "georoute/messages/error.hpp"
#include "georoute/transport/codecs.hpp"
#include "tests/actors/actor_fixture.hpp"

#include <memory>

// Named after the file as well: the unity build (tests/CMakeLists.txt)
// compiles it in one translation unit with other tests.
namespace endpoint_manager_test {
namespace {

using namespace georoute;
using namespace georoute::test;
using namespace std::chrono_literals;

database_account make_account(bool multi_write,
                              std::vector<std::string> writers = {"West US"}) {
  database_account a;
  a.id = "acct";
  std::map<std::string, std::string> eps{
      {"West US", west_ep}, {"East US", east_ep}, {"North Europe", north_ep}};
  for (const auto& w : writers)
    a.writable.push_back({w, eps[w]});
  a.readable = {
      {"West US", west_ep}, {"East US", east_ep}, {"North Europe", north_ep}};
  a.enable_multiple_write_locations = multi_write;
  return a;
}

std::string body_of(const database_account& a) {
  return transport::encode_database_account(a);
}

// A location cache that only records the accounts it is given.
struct recorded {
  std::vector<database_account> accounts;
};

location_cache_actor::behavior_type
recording_cache(location_cache_actor::pointer, std::shared_ptr<recorded> rec) {
  return {
      [rec](account_atom, database_account& a) { rec->accounts.push_back(a); },
      [](resolve_atom, resolve_input&) { return resolution{}; },
      [](mark_atom, region_mark&) { return uint64_t{0}; },
      [](fleet_atom, fleet_demotion&) { return uint64_t{0}; },
      [](subscribe_atom, caf::actor&) { return location_snapshot{}; },
      [](refresh_atom) { return false; },
  };
}

class EndpointManager : public actor_test {
protected:
  std::shared_ptr<recorded> rec = std::make_shared<recorded>();
  location_cache_actor cache;
  endpoint_manager_actor em;

  void start(std::vector<std::string> preferred = {},
             caf::timespan interval = 300s) {
    cache = sys.spawn(recording_cache, rec);
    endpoint_manager_config c;
    c.account_endpoint = global_ep;
    c.preferred_regions = std::move(preferred);
    c.refresh.background_interval =
        std::chrono::duration_cast<std::chrono::milliseconds>(interval);
    c.refresh.min_interval = 15s;
    em = spawn_endpoint_manager(sys, c, cache, http, self->address());
    run();
  }

  void TearDown() override {
    self->send_exit(em, caf::exit_reason::user_shutdown);
    self->send_exit(cache, caf::exit_reason::user_shutdown);
    run();
  }

  endpoint_manager_stats stats() {
    endpoint_manager_stats result;
    auto h = self->request(em, caf::infinite, stats_atom_v);
    run();
    receive_now(
        self, h, [&](endpoint_manager_stats s) { result = s; },
        [](caf::error&) { ADD_FAILURE() << "stats failed"; });
    return result;
  }

  // Answers the initial read with `a` and checks it reached the cache.
  void warm(const database_account& a) {
    ASSERT_EQ(http->pending().size(), 1u);
    http->respond(http->pending().front(), ok_response(body_of(a)));
    run();
  }
};

TEST_F(EndpointManager,
       InitialRead_GoesToGlobalEndpoint_AndReachesLocationCache) {
  start();
  ASSERT_EQ(http->count(), 1u);
  EXPECT_EQ(http->at(0).request.endpoint, global_ep);
  EXPECT_EQ(http->at(0).request.target, "/");
  EXPECT_EQ(http->at(0).request.timeout, 5s); // ControlPlaneRead step 1
  warm(make_account(false));
  ASSERT_EQ(rec->accounts.size(), 1u);
  EXPECT_EQ(rec->accounts[0].writable[0].name, "West US");
}

TEST_F(EndpointManager, BackgroundRefresh_NeverStops_OnHealthyMultiWriter) {
  start({}, 1s);
  warm(make_account(true, {"West US", "East US"}));
  for (int i = 0; i < 20; ++i) {
    advance(1s);
    ASSERT_EQ(http->pending().size(), 1u) << "tick " << i << " did not fetch";
    // Ten healthy multi-writer reads, then the account turns single-write.
    auto a = i < 10 ? make_account(true, {"West US", "East US"})
                    : make_account(false, {"East US"});
    http->respond(http->pending().front(), ok_response(body_of(a)));
    run();
  }
  auto s = stats();
  EXPECT_EQ(s.background_ticks, 20u);
  EXPECT_EQ(s.fetches_succeeded, 21u);
  // First read, then the one switch to single-write; no push when unchanged.
  ASSERT_EQ(rec->accounts.size(), 2u);
  EXPECT_FALSE(rec->accounts[1].enable_multiple_write_locations);
  EXPECT_EQ(rec->accounts[1].writable[0].name, "East US");
  EXPECT_EQ(s.multi_write_changes, 1u);
  EXPECT_EQ(s.write_region_switches, 1u);
}

TEST_F(EndpointManager, BackgroundRefresh_SeesMultiToSingleToMultiWrite) {
  start({}, 1s);
  warm(make_account(true, {"West US", "East US"}));
  for (int i = 0; i < 30; ++i) {
    advance(1s);
    ASSERT_EQ(http->pending().size(), 1u) << "tick " << i << " did not fetch";
    auto a = i < 10   ? make_account(true, {"West US", "East US"})
             : i < 20 ? make_account(false, {"West US"})
                      : make_account(true, {"West US", "East US"});
    http->respond(http->pending().front(), ok_response(body_of(a)));
    run();
  }
  auto s = stats();
  EXPECT_EQ(s.background_ticks, 30u);
  EXPECT_EQ(s.multi_write_changes, 2u);
  ASSERT_EQ(rec->accounts.size(), 3u);
  EXPECT_FALSE(rec->accounts[1].enable_multiple_write_locations);
  EXPECT_TRUE(rec->accounts[2].enable_multiple_write_locations);
}

TEST_F(EndpointManager, BackgroundRefresh_SurvivesFailedReads) {
  start({}, 1s);
  warm(make_account(false));
  for (int i = 0; i < 5; ++i) {
    advance(1s);
    // Every endpoint refuses: the fetch fails, the loop goes on.
    while (!http->pending().empty()) {
      http->respond(http->pending().front(),
                    transport_failure(transport::failure::refused));
      run();
    }
  }
  advance(1s);
  ASSERT_EQ(http->pending().size(), 1u);
  http->respond(http->pending().front(),
                ok_response(body_of(make_account(false, {"East US"}))));
  run();
  ASSERT_EQ(rec->accounts.size(), 2u);
  EXPECT_EQ(rec->accounts[1].writable[0].name, "East US");
  EXPECT_EQ(stats().fetches_failed, 5u);
}

TEST_F(EndpointManager, NonForcedRefresh_WithinMinInterval_IsSkipped) {
  start();
  warm(make_account(false));
  auto h = self->request(em, caf::infinite, refresh_atom_v, false);
  run();
  receive_now(
      self, h, [](database_account& a) { EXPECT_EQ(a.id, "acct"); },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  EXPECT_EQ(http->count(), 1u);
  EXPECT_EQ(stats().refreshes_skipped, 1u);
  // After the minimum interval, a non-forced refresh fetches.
  advance(16s);
  self->send(em, refresh_atom_v, false);
  run();
  EXPECT_EQ(http->count(), 2u);
}

TEST_F(EndpointManager, ForcedRefresh_JoinsTheFetchInFlight) {
  start();
  warm(make_account(false));
  auto h1 = self->request(em, caf::infinite, refresh_atom_v, true);
  auto h2 = self->request(em, caf::infinite, refresh_atom_v, true);
  run();
  ASSERT_EQ(http->count(), 2u); // the initial read and one forced fetch
  http->respond(1, ok_response(body_of(make_account(false, {"East US"}))));
  run();
  for (auto* h : {&h1, &h2})
    h->receive(
        [](database_account& a) { EXPECT_EQ(a.writable[0].name, "East US"); },
        [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
}

// A fresh refresh right after a fetch: not skipped (a plain one would answer
// the account the caller already decided on) and not a fetch at once; the
// next fetch starts when the spacing since the last has passed, and every
// fresh request of the meantime gets it.
TEST_F(EndpointManager, FreshRefresh_JustAfterAFetch_WaitsForTheNextOne) {
  start();
  warm(make_account(false));
  auto h1 = self->request(em, caf::infinite, refresh_atom_v, fresh_atom_v);
  auto h2 = self->request(em, caf::infinite, refresh_atom_v, fresh_atom_v);
  run();
  EXPECT_EQ(http->count(), 1u);
  EXPECT_TRUE(self->mailbox().empty()) << "answered the account it had";
  advance(fresh_refresh_spacing / 2);
  EXPECT_EQ(http->count(), 1u) << "fetched before the spacing passed";
  advance(fresh_refresh_spacing / 2);
  ASSERT_EQ(http->count(), 2u) << "no fetch once the spacing passed";
  EXPECT_TRUE(self->mailbox().empty());
  http->respond(1, ok_response(body_of(make_account(true, {"East US"}))));
  run();
  for (auto* h : {&h1, &h2})
    receive_now(
        self, *h,
        [](database_account& a) {
          EXPECT_TRUE(a.enable_multiple_write_locations);
        },
        [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  EXPECT_EQ(stats().refreshes_deferred, 2u);
}

// Past the spacing, a fresh refresh fetches at once; with a fetch in flight
// it joins it.
TEST_F(EndpointManager, FreshRefresh_AfterTheSpacing_FetchesOrJoins) {
  start();
  warm(make_account(false));
  advance(fresh_refresh_spacing);
  auto h1 = self->request(em, caf::infinite, refresh_atom_v, fresh_atom_v);
  run();
  ASSERT_EQ(http->count(), 2u);
  auto h2 = self->request(em, caf::infinite, refresh_atom_v, fresh_atom_v);
  run();
  EXPECT_EQ(http->count(), 2u) << "joined, not a second fetch";
  http->respond(1, ok_response(body_of(make_account(false, {"East US"}))));
  run();
  for (auto* h : {&h1, &h2})
    receive_now(
        self, *h,
        [](database_account& a) { EXPECT_EQ(a.writable[0].name, "East US"); },
        [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  EXPECT_EQ(stats().refreshes_deferred, 0u);
}

// A fetch that starts meanwhile (here a forced one) takes the deferred
// waiters: it started after they asked.
TEST_F(EndpointManager, FreshRefresh_AFetchStartingMeanwhileAnswersIt) {
  start();
  warm(make_account(false));
  auto h = self->request(em, caf::infinite, refresh_atom_v, fresh_atom_v);
  run();
  self->send(em, refresh_atom_v, true);
  run();
  ASSERT_EQ(http->count(), 2u);
  http->respond(1, ok_response(body_of(make_account(false, {"East US"}))));
  run();
  receive_now(
      self, h,
      [](database_account& a) { EXPECT_EQ(a.writable[0].name, "East US"); },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  advance(fresh_refresh_spacing);
  EXPECT_EQ(http->count(), 2u) << "the due time started another fetch";
}

TEST_F(EndpointManager, GlobalRefused_SweepsRegionsInPreferredOrder) {
  start({"North Europe", "East US"});
  warm(make_account(false));
  self->send(em, refresh_atom_v, true);
  run();
  http->respond(1, transport_failure(transport::failure::refused));
  run();
  ASSERT_EQ(http->count(), 3u);
  EXPECT_EQ(http->at(2).request.endpoint, north_ep);
  http->respond(2, status_response(503));
  run();
  ASSERT_EQ(http->count(), 4u);
  EXPECT_EQ(http->at(3).request.endpoint, east_ep);
  http->respond(3, ok_response(body_of(make_account(false, {"East US"}))));
  run();
  EXPECT_EQ(rec->accounts.back().writable[0].name, "East US");
}

TEST_F(EndpointManager, GlobalSlow_After5s_RegionalWalkerWins) {
  start({"East US"});
  warm(make_account(false));
  self->send(em, refresh_atom_v, true);
  run();
  ASSERT_EQ(http->count(), 2u);
  advance(4900ms);
  EXPECT_EQ(http->count(), 2u);
  advance(100ms);
  ASSERT_EQ(http->count(), 3u);
  EXPECT_EQ(http->at(2).request.endpoint, east_ep);
  http->respond(2, ok_response(body_of(make_account(false, {"East US"}))));
  run();
  EXPECT_EQ(rec->accounts.back().writable[0].name, "East US");
  // The late global answer is ignored.
  http->respond(1, ok_response(body_of(make_account(false))));
  run();
  EXPECT_EQ(rec->accounts.back().writable[0].name, "East US");
}

TEST_F(EndpointManager, Unauthorized_StopsTheSweepAtOnce) {
  start({"East US"});
  warm(make_account(false));
  auto h = self->request(em, caf::infinite, refresh_atom_v, true);
  run();
  http->respond(1, status_response(401));
  run();
  EXPECT_EQ(http->count(), 2u); // no regional attempt
  receive_now(
      self, h, [](database_account&) { ADD_FAILURE() << "expected an error"; },
      [](caf::error& e) {
        EXPECT_EQ(code_of(e), errc::unauthorized);
        EXPECT_NE(context_of(e).find("GEOROUTE_ACCOUNT_KEY"),
                  std::string::npos);
      });
}

TEST_F(EndpointManager, PlainForbidden_StopsTheSweepAtOnce) {
  start({"East US"});
  warm(make_account(false));
  auto h = self->request(em, caf::infinite, refresh_atom_v, true);
  run();
  http->respond(1, status_response(403));
  run();
  EXPECT_EQ(http->count(), 2u); // no regional attempt
  receive_now(
      self, h, [](database_account&) { ADD_FAILURE() << "expected an error"; },
      [](caf::error& e) {
        EXPECT_EQ(code_of(e), errc::forbidden);
        EXPECT_NE(context_of(e).find("clock"), std::string::npos)
            << context_of(e);
      });
}

TEST_F(EndpointManager, RegionRemoved_403_1008_SweepsOn) {
  start({"East US"});
  warm(make_account(false));
  auto h = self->request(em, caf::infinite, refresh_atom_v, true);
  run();
  http->respond(1, status_response(403, 1008)); // not a plain 403
  run();
  ASSERT_EQ(http->count(), 3u);
  EXPECT_EQ(http->at(2).request.endpoint, east_ep);
  http->respond(2, ok_response(body_of(make_account(false))));
  run();
  receive_now(
      self, h, [](database_account&) {},
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
}

TEST_F(EndpointManager, Stopped_WaitersOfTheFetchGetEngineStopped) {
  start();
  warm(make_account(false));
  auto h = self->request(em, caf::infinite, refresh_atom_v, true);
  run();
  self->send_exit(em, caf::exit_reason::user_shutdown);
  run();
  receive_now(
      self, h, [](database_account&) { ADD_FAILURE() << "expected an error"; },
      [](caf::error& e) {
        EXPECT_EQ(code_of(e), errc::shutting_down);
        EXPECT_NE(context_of(e).find("engine stopped"), std::string::npos);
      });
}

TEST_F(EndpointManager, Stopped_DeferredFreshWaitersGetEngineStopped) {
  start();
  warm(make_account(false));
  auto h = self->request(em, caf::infinite, refresh_atom_v, fresh_atom_v);
  run();
  self->send_exit(em, caf::exit_reason::user_shutdown);
  run();
  receive_now(
      self, h, [](database_account&) { ADD_FAILURE() << "expected an error"; },
      [](caf::error& e) { EXPECT_EQ(code_of(e), errc::shutting_down); });
}

TEST_F(EndpointManager, RewiredToANewLocationCache_TellsItTheAccount) {
  start();
  warm(make_account(false));
  auto rec2 = std::make_shared<recorded>();
  auto cache2 = sys.spawn(recording_cache, rec2);
  engine_wiring w;
  w.locations = cache2;
  // From a stranger: ignored.
  caf::anon_send(caf::actor_cast<caf::actor>(em), w);
  run();
  EXPECT_TRUE(rec2->accounts.empty());
  // From the supervisor: the new cache learns the current account at once.
  self->send(caf::actor_cast<caf::actor>(em), w);
  run();
  ASSERT_EQ(rec2->accounts.size(), 1u);
  EXPECT_EQ(rec2->accounts[0].writable[0].name, "West US");
  self->send_exit(cache2, caf::exit_reason::user_shutdown);
}

TEST_F(EndpointManager, AllCandidatesFail_ReportsTheLastFailure) {
  start();
  warm(make_account(false));
  auto h = self->request(em, caf::infinite, refresh_atom_v, true);
  run();
  while (!http->pending().empty()) {
    http->respond(http->pending().front(), status_response(503));
    run();
  }
  EXPECT_EQ(http->count(), 5u); // initial + global + 3 regions
  receive_now(
      self, h, [](database_account&) { ADD_FAILURE() << "expected an error"; },
      [](caf::error& e) {
        EXPECT_EQ(code_of(e), errc::service_unavailable);
        EXPECT_NE(context_of(e).find(north_ep), std::string::npos);
      });
}

TEST_F(EndpointManager, Timeout_ClimbsTheControlPlaneLadder) {
  start();
  http->respond(0, transport_failure(transport::failure::timeout));
  run();
  ASSERT_EQ(http->count(), 2u);
  EXPECT_EQ(http->at(1).request.endpoint, global_ep);
  EXPECT_EQ(http->at(1).request.timeout, 10s);
  http->respond(1, transport_failure(transport::failure::timeout));
  run();
  EXPECT_EQ(http->count(), 2u); // (10 s, 1 s): waits 1 s
  advance(1s);
  ASSERT_EQ(http->count(), 3u);
  EXPECT_EQ(http->at(2).request.timeout, 20s);
}

TEST_F(EndpointManager, RegionRemovedAndAdded_AreCounted) {
  start({}, 1s);
  warm(make_account(false));
  auto smaller = make_account(false);
  smaller.readable.pop_back();
  advance(1s);
  http->respond(http->pending().front(), ok_response(body_of(smaller)));
  run();
  advance(1s);
  http->respond(http->pending().front(),
                ok_response(body_of(make_account(false))));
  run();
  auto s = stats();
  EXPECT_EQ(s.regions_removed, 1u);
  EXPECT_EQ(s.regions_added, 1u);
  EXPECT_EQ(rec->accounts.size(), 3u);
}

} // namespace
} // namespace endpoint_manager_test
