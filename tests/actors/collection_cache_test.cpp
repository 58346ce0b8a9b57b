// The collection cache's contract (.NET CollectionCache
// (src/Routing/CollectionCache.cs) and .NET
// ClearingSessionContainerClientRetryPolicy) and the design rule: a caller's
// timeout is only a reply timeout on the caller; the fetch in the retry actor
// goes on, lands in the cache and answers every caller still waiting. Virtual
// time.

#include "georoute/actors/collection_cache.hpp"
#include "georoute/transport/codecs.hpp"
#include "tests/actors/actor_fixture.hpp"
#include "tests/actors/recording_retry.hpp"

// Named after the file as well: the unity build (tests/CMakeLists.txt)
// compiles it in one translation unit with other tests.
namespace collection_cache_test {
namespace {

using namespace georoute;
using namespace georoute::test;
using namespace std::chrono_literals;

const std::string link = "dbs/d/colls/c";
const std::string rid1 = "wRUaAK6VyWc=";
const std::string rid2 = "wRUaAL7VyWc="; // same database, recreated collection

transport::outcome collection_ok(const std::string& rid) {
  collection_info c;
  c.id = "c";
  c.rid = rid;
  c.self = "dbs/wRUaAA==/colls/" + rid + "/";
  c.etag = "\"00000100-0000-0000-0000-000000000000\"";
  c.partition_key.paths = {"/pk"};
  return ok_response(transport::encode_collection(c));
}

// A session sink: records the names whose tokens were cleared.
struct sink_log {
  std::vector<std::string> cleared;
};

caf::behavior session_sink(caf::event_based_actor*,
                           std::shared_ptr<sink_log> log) {
  return {
      [log](clear_session_atom, const std::string& name) {
        log->cleared.push_back(name);
      },
  };
}

// A caller that asks by name with its own timeout and records the answer.
caf::behavior name_caller(caf::event_based_actor* self,
                          collection_cache_actor cache, caf::timespan timeout,
                          std::shared_ptr<reply_log> log) {
  self->request(cache, timeout, by_name_atom_v, link, false, std::string{})
      .then([log](collection_info& c) { log->got.push_back("ok " + c.rid); },
            [log](caf::error& e) { log->got.push_back(describe_error(e)); });
  return {[](caf::ok_atom) {}};
}

class CollectionCache : public actor_test {
protected:
  std::shared_ptr<recording_retry_log> fetches =
      std::make_shared<recording_retry_log>();
  std::shared_ptr<sink_log> sunk = std::make_shared<sink_log>();
  fake_retry_actor retry;
  caf::actor sink;
  collection_cache_actor cache;
  std::vector<caf::actor> callers;

  void SetUp() override {
    retry = sys.spawn(recording_retry, fetches);
    sink = sys.spawn(session_sink, sunk);
    cache = spawn_collection_cache(sys, retry, sink);
    run();
  }

  void TearDown() override {
    callers.push_back(caf::actor_cast<caf::actor>(cache));
    callers.push_back(caf::actor_cast<caf::actor>(retry));
    callers.push_back(sink);
    for (auto& a : callers)
      self->send_exit(a, caf::exit_reason::user_shutdown);
    run();
  }

  std::shared_ptr<reply_log> spawn_caller(caf::timespan timeout) {
    auto log = std::make_shared<reply_log>();
    callers.push_back(sys.spawn(name_caller, cache, timeout, log));
    return log;
  }

  // The retry actor answers fetch `i` (the fake delivers, not this thread).
  void answer(uint64_t i, transport::outcome o) {
    caf::anon_send(retry, answer_atom_v, i, std::move(o));
    run();
  }

  auto by_name(bool force = false, std::string obsolete = {}) {
    return self->request(cache, caf::infinite, by_name_atom_v, link, force,
                         std::move(obsolete));
  }

  // Asks by name and expects an answer without any fetch.
  collection_info cached_by_name(bool force = false,
                                 std::string obsolete = {}) {
    auto before = fetches->requests.size();
    auto h = by_name(force, std::move(obsolete));
    run();
    EXPECT_EQ(fetches->requests.size(), before) << "expected no fetch";
    collection_info got;
    receive_now(
        self, h, [&](collection_info& c) { got = c; },
        [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
    return got;
  }

  collection_cache_stats stats() {
    collection_cache_stats result;
    auto h = self->request(cache, caf::infinite, stats_atom_v);
    run();
    receive_now(
        self, h, [&](collection_cache_stats& s) { result = s; },
        [](caf::error&) { ADD_FAILURE() << "stats failed"; });
    return result;
  }

  // Fills the cache by name with `rid`.
  void fill(const std::string& rid) {
    auto h = by_name();
    run();
    answer(fetches->pending().back(), collection_ok(rid));
    receive_now(
        self, h, [&](collection_info& c) { EXPECT_EQ(c.rid, rid); },
        [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  }
};

TEST_F(CollectionCache, MissFetchesOnce_ConcurrentCallersShareIt) {
  auto h1 = by_name();
  auto h2 = by_name();
  auto h3 = by_name();
  run();
  ASSERT_EQ(fetches->requests.size(), 1u);
  const auto& req = fetches->requests[0];
  EXPECT_EQ(req.what.kind, transport::attempt_kind::resource_read);
  EXPECT_EQ(req.what.resource, "/dbs/d/colls/c");
  auto wire = fetches->wire(0);
  EXPECT_EQ(wire.method, "GET");
  EXPECT_EQ(wire.target, "/dbs/d/colls/c");
  EXPECT_EQ(req.kind, request_kind::metadata_read);
  EXPECT_EQ(req.op, op_kind::read);
  EXPECT_EQ(req.policy, loop_policy::clearing_session);
  EXPECT_EQ(req.collection_name, link);
  EXPECT_FALSE(req.what.rid_based);
  answer(0, collection_ok(rid1));
  for (auto* h : {&h1, &h2, &h3})
    receive_now(
        self, *h,
        [](collection_info& c) {
          EXPECT_EQ(c.rid, rid1);
          EXPECT_EQ(c.partition_key.paths, std::vector<std::string>{"/pk"});
        },
        [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  auto s = stats();
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.shared_waiters, 2u);
  EXPECT_EQ(s.fetches, 1u);
  // The by-name fetch filled the rid entry too.
  auto h = self->request(cache, caf::infinite, by_rid_atom_v, rid1);
  run();
  EXPECT_EQ(fetches->requests.size(), 1u);
  receive_now(
      self, h, [](collection_info& c) { EXPECT_EQ(c.id, "c"); },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
}

TEST_F(CollectionCache,
       CallerTimesOut_FetchLandsInCache_NextCallerServedFromCache) {
  auto early = spawn_caller(300ms);
  run();
  ASSERT_EQ(fetches->requests.size(), 1u);
  advance(299ms);
  EXPECT_TRUE(early->got.empty());
  advance(1ms);
  ASSERT_EQ(early->got, std::vector<std::string>{"timeout"});
  // Nothing travelled to the retry actor: the fetch is still running.
  EXPECT_EQ(fetches->pending().size(), 1u);
  answer(0, collection_ok(rid1));
  EXPECT_EQ(early->got.size(), 1u); // the late answer is not delivered
  EXPECT_EQ(cached_by_name().rid, rid1);
  auto s = stats();
  EXPECT_EQ(s.fetches, 1u);
  EXPECT_EQ(s.hits, 1u);
}

TEST_F(CollectionCache,
       WaitersStillWaiting_GetResult_AfterFirstCallerTimedOut) {
  auto first = spawn_caller(300ms);
  run();
  auto second = spawn_caller(10s);
  auto third = by_name();
  run();
  ASSERT_EQ(fetches->requests.size(), 1u);
  advance(300ms);
  ASSERT_EQ(first->got, std::vector<std::string>{"timeout"});
  // Unlike .NET's AsyncCache, the followers do not start a second fetch
  // when the first caller gives up.
  auto late = by_name();
  run();
  EXPECT_EQ(fetches->requests.size(), 1u);
  answer(0, collection_ok(rid1));
  EXPECT_EQ(second->got, std::vector<std::string>{"ok " + rid1});
  for (auto* h : {&third, &late})
    receive_now(
        self, *h, [](collection_info& c) { EXPECT_EQ(c.rid, rid1); },
        [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  EXPECT_EQ(first->got.size(), 1u);
  auto s = stats();
  EXPECT_EQ(s.fetches, 1u);
  EXPECT_EQ(s.shared_waiters, 3u);
}

TEST_F(CollectionCache, ForcedRefresh_WithObsoleteRid_OnlyIfStillHeld) {
  fill(rid1);
  // The caller doubts a rid the cache does not hold: someone refreshed
  // since, the cached value is the answer.
  EXPECT_EQ(cached_by_name(true, rid2).rid, rid1);
  EXPECT_EQ(stats().refetch_skipped, 1u);
  // The caller doubts the rid the cache holds: one refetch.
  auto h = by_name(true, rid1);
  run();
  ASSERT_EQ(fetches->requests.size(), 2u);
  // A forced caller arriving meanwhile joins the refetch in flight.
  auto joined = by_name(true, rid1);
  run();
  EXPECT_EQ(fetches->requests.size(), 2u);
  answer(1, collection_ok(rid1));
  for (auto* x : {&h, &joined})
    receive_now(
        self, *x, [](collection_info& c) { EXPECT_EQ(c.rid, rid1); },
        [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  // Forced without an obsolete rid: refetches unconditionally.
  auto plain = by_name(true);
  run();
  EXPECT_EQ(fetches->requests.size(), 3u);
  answer(2, collection_ok(rid1));
  receive_now(
      self, plain, [](collection_info&) {},
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  auto s = stats();
  EXPECT_EQ(s.refreshes, 2u);
  EXPECT_EQ(s.refetch_skipped, 1u);
  EXPECT_EQ(s.recreated, 0u);
  EXPECT_TRUE(sunk->cleared.empty()); // same rid: nothing was recreated
}

TEST_F(CollectionCache, Recreated_NewRid_ClearsOldSessionTokens) {
  fill(rid1);
  auto h = by_name(true, rid1);
  run();
  answer(1, collection_ok(rid2));
  receive_now(
      self, h, [](collection_info& c) { EXPECT_EQ(c.rid, rid2); },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  EXPECT_EQ(sunk->cleared, std::vector<std::string>{link});
  EXPECT_EQ(stats().recreated, 1u);
  EXPECT_EQ(cached_by_name().rid, rid2);
  // The new rid is cached; the old one is gone and must be fetched again.
  auto by_new = self->request(cache, caf::infinite, by_rid_atom_v, rid2);
  run();
  EXPECT_EQ(fetches->requests.size(), 2u);
  receive_now(
      self, by_new, [](collection_info& c) { EXPECT_EQ(c.rid, rid2); },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  auto by_old = self->request(cache, caf::infinite, by_rid_atom_v, rid1);
  run();
  ASSERT_EQ(fetches->requests.size(), 3u);
  EXPECT_TRUE(fetches->requests[2].what.rid_based);
  answer(2, status_response(404));
  receive_now(
      self, by_old, [](collection_info&) { ADD_FAILURE() << "expected 404"; },
      [](caf::error& e) { EXPECT_EQ(code_of(e), errc::not_found); });
}

TEST_F(CollectionCache, FetchError_GoesToAllWaiters_AndIsNotCached) {
  auto h1 = by_name();
  auto h2 = by_name();
  auto waiting = spawn_caller(10s);
  run();
  ASSERT_EQ(fetches->requests.size(), 1u);
  answer(0, status_response(404));
  for (auto* h : {&h1, &h2})
    receive_now(
        self, *h,
        [](collection_info&) { ADD_FAILURE() << "expected an error"; },
        [](caf::error& e) {
          EXPECT_EQ(code_of(e), errc::not_found);
          EXPECT_NE(context_of(e).find("/dbs/d/colls/c"), std::string::npos)
              << context_of(e);
        });
  EXPECT_EQ(waiting->got, std::vector<std::string>{"error not_found"});
  // Not cached: the next caller fetches again, and that one can succeed.
  auto again = by_name();
  run();
  ASSERT_EQ(fetches->requests.size(), 2u);
  answer(1, collection_ok(rid1));
  receive_now(
      self, again, [](collection_info& c) { EXPECT_EQ(c.rid, rid1); },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  auto s = stats();
  EXPECT_EQ(s.failures, 1u);
  EXPECT_EQ(s.misses, 2u);
}

TEST_F(CollectionCache, FailedForcedRefresh_DropsTheDoubtedValue) {
  fill(rid1);
  auto h = by_name(true, rid1);
  run();
  answer(1, status_response(503));
  receive_now(
      self, h, [](collection_info&) { ADD_FAILURE() << "expected an error"; },
      [](caf::error& e) { EXPECT_EQ(code_of(e), errc::service_unavailable); });
  // As .NET drops a faulted entry: the next caller fetches again.
  auto next = by_name();
  run();
  EXPECT_EQ(fetches->requests.size(), 3u);
  answer(2, collection_ok(rid1));
  receive_now(
      self, next, [](collection_info&) {},
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
}

TEST_F(CollectionCache, ByRid_UsesRidBasedPath) {
  auto h = self->request(cache, caf::infinite, by_rid_atom_v, rid1);
  run();
  ASSERT_EQ(fetches->requests.size(), 1u);
  const auto& req = fetches->requests[0];
  EXPECT_EQ(req.what.resource, "/dbs/wRUaAA==/colls/wRUaAK6VyWc=");
  EXPECT_TRUE(req.what.rid_based);
  EXPECT_TRUE(fetches->wire(0).rid_based);
  EXPECT_EQ(req.kind, request_kind::metadata_read);
  EXPECT_EQ(req.policy, loop_policy::clearing_session);
  EXPECT_TRUE(req.collection_name.empty());
  answer(0, collection_ok(rid1));
  receive_now(
      self, h, [](collection_info& c) { EXPECT_EQ(c.rid, rid1); },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  // Cached by rid now.
  auto again = self->request(cache, caf::infinite, by_rid_atom_v, rid1);
  run();
  EXPECT_EQ(fetches->requests.size(), 1u);
  receive_now(
      self, again, [](collection_info&) {},
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  // A rid that is not 8 bytes of base64 is refused without a fetch.
  auto bad = self->request(cache, caf::infinite, by_rid_atom_v,
                           std::string{"wRUaAA=="});
  run();
  EXPECT_EQ(fetches->requests.size(), 1u);
  receive_now(
      self, bad, [](collection_info&) { ADD_FAILURE() << "expected an error"; },
      [](caf::error& e) { EXPECT_EQ(code_of(e), errc::validation_error); });
}

TEST(CollectionPaths, RidPath_DbRidIsTheFirstFourBytes_InTheRidAlphabet) {
  EXPECT_EQ(rid_collection_path("wRUaAK6VyWc="),
            std::optional<std::string>{"/dbs/wRUaAA==/colls/wRUaAK6VyWc="});
  EXPECT_EQ(rid_collection_path("XP0mAJ3H-AA="),
            std::optional<std::string>{"/dbs/XP0mAA==/colls/XP0mAJ3H-AA="});
  // '/' in the database part is written as '-' too.
  EXPECT_EQ(rid_collection_path("----AQIDBAU="),
            std::optional<std::string>{"/dbs/----AQ==/colls/----AQIDBAU="});
  EXPECT_EQ(rid_collection_path("wRUaAA=="), std::nullopt); // a database rid
  EXPECT_EQ(rid_collection_path(""), std::nullopt);
  EXPECT_EQ(rid_collection_path("not base64!"), std::nullopt);
}

TEST(CollectionPaths, Link_IsNormalized_OrRefused) {
  EXPECT_EQ(normalize_collection_link("dbs/d/colls/c"),
            std::optional<std::string>{"dbs/d/colls/c"});
  EXPECT_EQ(normalize_collection_link("/dbs/d/colls/c/"),
            std::optional<std::string>{"dbs/d/colls/c"});
  EXPECT_EQ(normalize_collection_link("dbs/d"), std::nullopt);
  EXPECT_EQ(normalize_collection_link("dbs//colls/c"), std::nullopt);
  EXPECT_EQ(normalize_collection_link("dbs/d/docs/c"), std::nullopt);
  EXPECT_EQ(normalize_collection_link("dbs/d/colls/c/docs/x"), std::nullopt);
}

TEST_F(CollectionCache, MalformedBody_IsAProtocolError) {
  auto h = by_name();
  run();
  answer(0, ok_response(R"({"id":"c","partitionKey":{"paths":["/pk"]}})"));
  receive_now(
      self, h, [](collection_info&) { ADD_FAILURE() << "expected an error"; },
      [](caf::error& e) {
        EXPECT_EQ(code_of(e), errc::protocol_violation);
        EXPECT_NE(context_of(e).find("_rid"), std::string::npos)
            << context_of(e);
        EXPECT_NE(context_of(e).find("read of /dbs/d/colls/c"),
                  std::string::npos)
            << context_of(e);
      });
  // Not cached either.
  auto again = by_name();
  run();
  EXPECT_EQ(fetches->requests.size(), 2u);
  answer(1, collection_ok(rid1));
  receive_now(
      self, again, [](collection_info&) {},
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
}

} // namespace
} // namespace collection_cache_test
