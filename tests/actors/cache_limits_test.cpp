// The metadata caches under failure and load (issue 7, items 3 and 7): a
// retry actor that dies mid-fetch never wedges a cache, and every cache is
// bounded (LRU capacity, waiter caps, one deadline per pkranges load, a
// query-plan key that never mixes collections). Virtual time.

#include "georoute/actors/collection_cache.hpp"
#include "georoute/actors/internal.hpp"
#include "georoute/actors/pkrange_cache.hpp"
#include "georoute/actors/policy/routing_map.hpp"
#include "georoute/actors/query_plan.hpp"
#include "georoute/transport/codecs.hpp"
#include "tests/actors/recording_retry.hpp"

// Named after the file as well: the unity build (tests/CMakeLists.txt)
// compiles it in one translation unit with other tests.
namespace cache_limits_test {
namespace {

using namespace georoute;
using namespace georoute::test;
using namespace std::chrono_literals;

const std::string rid_a = "wRUaAK6VyWc=";
const std::string rid_b = "XP0mAJ3H-AA=";
const std::string rid_c = "wRUaAPB2O-0=";

transport::outcome collection_ok(const std::string& rid) {
  collection_info c;
  c.id = "c";
  c.rid = rid;
  c.self = "dbs/wRUaAA==/colls/" + rid + "/";
  c.etag = "\"1\"";
  c.partition_key.paths = {"/pk"};
  return ok_response(transport::encode_collection(c));
}

transport::outcome whole_range_page(const std::string& rid,
                                    const std::string& etag) {
  pkranges_page p;
  p.rid = rid;
  partition_key_range r;
  r.id = "0";
  r.min_inclusive = "";
  r.max_exclusive = "FF";
  p.ranges = {r};
  p.etag = etag;
  auto o = ok_response(transport::encode_pkranges(p));
  o.etag = etag;
  return o;
}

transport::outcome not_modified(const std::string& etag) {
  transport::outcome o;
  o.status = 304;
  o.etag = etag;
  return o;
}

transport::outcome plan_ok() {
  query_plan p;
  p.query_ranges = {{"", "FF", true, false}};
  return ok_response(transport::encode_query_plan(p));
}

query_plan_request plan_for(std::string rid, std::string query) {
  query_plan_request r;
  r.collection_link = "dbs/d/colls/c";
  r.collection_rid = std::move(rid);
  r.query = std::move(query);
  r.parameters_json = "[]";
  return r;
}

// A caller with a long timeout (30 s) that records what it got.
template <class Reply, class Handle, class... Ts>
caf::behavior caller(caf::event_based_actor* self, Handle target,
                     std::shared_ptr<reply_log> log, Ts... xs) {
  self->request(target, 30s, xs...)
      .then([log](Reply&) { log->got.push_back("ok"); },
            [log](caf::error& e) {
              log->got.push_back(describe_error(e) + " " + context_of(e));
            });
  return {[](caf::ok_atom) {}};
}

class CacheLimits : public actor_test {
protected:
  std::shared_ptr<recording_retry_log> fetches =
      std::make_shared<recording_retry_log>();
  fake_retry_actor retry;
  collection_cache_actor collections;
  pkrange_cache_actor pkranges;
  query_plan_actor plans;
  std::vector<caf::actor> others;

  collection_cache_config collection_cfg;
  pkrange_cache_config pkrange_cfg;
  size_t plan_capacity = 16;
  size_t plan_waiters = 10000;

  // Spawns the three caches with the scoped actor as their supervisor.
  void start() {
    retry = sys.spawn(recording_retry, fetches);
    auto me = self->address();
    collections =
        spawn_collection_cache(sys, retry, caf::actor{}, collection_cfg, me);
    pkranges = spawn_pkrange_cache(sys, retry, pkrange_cfg, me);
    plans = spawn_query_plan(sys, retry, plan_capacity, plan_waiters, me);
    run();
  }

  void TearDown() override {
    others.push_back(caf::actor_cast<caf::actor>(collections));
    others.push_back(caf::actor_cast<caf::actor>(pkranges));
    others.push_back(caf::actor_cast<caf::actor>(plans));
    others.push_back(caf::actor_cast<caf::actor>(retry));
    for (auto& a : others)
      self->send_exit(a, caf::exit_reason::user_shutdown);
    run();
  }

  template <class Reply, class Handle, class... Ts>
  std::shared_ptr<reply_log> ask(Handle target, Ts... xs) {
    auto log = std::make_shared<reply_log>();
    others.push_back(
        sys.spawn(caller<Reply, Handle, Ts...>, target, log, xs...));
    run();
    return log;
  }

  void answer(uint64_t i, transport::outcome o) {
    caf::anon_send(retry, answer_atom_v, i, std::move(o));
    run();
  }

  // Kills the retry actor, then re-wires the caches to a fresh one, as the
  // engine's supervisor does.
  void replace_retry() {
    self->send_exit(retry, caf::exit_reason::kill);
    run();
    others.push_back(caf::actor_cast<caf::actor>(retry));
    fetches = std::make_shared<recording_retry_log>();
    retry = sys.spawn(recording_retry, fetches);
    run();
  }

  void rewire() {
    engine_wiring w;
    w.supervisor = self->address();
    w.retry = retry;
    for (auto h : {caf::actor_cast<caf::actor>(collections),
                   caf::actor_cast<caf::actor>(pkranges),
                   caf::actor_cast<caf::actor>(plans)})
      self->send(h, w);
    run();
  }

  template <class Stats, class Handle>
  Stats stats_of(Handle h) {
    Stats result;
    auto rh = self->request(h, caf::infinite, stats_atom_v);
    run();
    receive_now(
        self, rh, [&](Stats& s) { result = s; },
        [](caf::error&) { ADD_FAILURE() << "stats failed"; });
    return result;
  }
};

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// -- a dead retry actor never wedges a cache --------------------------------

TEST_F(CacheLimits, RetryDiesMidCollectionFetch_WaitersFailAtOnce_NextFetches) {
  start();
  auto first =
      ask<collection_info>(collections, by_name_atom_v,
                           std::string{"dbs/d/colls/c"}, false, std::string{});
  auto second =
      ask<collection_info>(collections, by_name_atom_v,
                           std::string{"dbs/d/colls/c"}, false, std::string{});
  ASSERT_EQ(fetches->requests.size(), 1u); // one fetch, two waiters
  replace_retry();                         // no virtual time passes
  for (auto& log : {first, second}) {
    ASSERT_EQ(log->got.size(), 1u) << "a waiter was left to its timeout";
    EXPECT_TRUE(starts_with(log->got[0], "error collaborator_down"))
        << log->got[0];
    EXPECT_NE(log->got[0].find("georoute.retry"), std::string::npos);
    EXPECT_NE(log->got[0].find("kill"), std::string::npos) << log->got[0];
    EXPECT_NE(log->got[0].find("read of /dbs/d/colls/c"), std::string::npos);
  }
  EXPECT_EQ(stats_of<collection_cache_stats>(collections).collaborator_failures,
            2u);
  rewire();
  auto again =
      ask<collection_info>(collections, by_name_atom_v,
                           std::string{"dbs/d/colls/c"}, false, std::string{});
  ASSERT_EQ(fetches->requests.size(), 1u) << "no fresh fetch";
  answer(0, collection_ok(rid_a));
  EXPECT_EQ(again->got, std::vector<std::string>{"ok"});
}

TEST_F(CacheLimits, RetryDiesMidPkrangeLoad_WaitersFailAtOnce_NextLoads) {
  start();
  auto first =
      ask<routing_snapshot>(pkranges, pkranges_atom_v, rid_a, std::string{});
  ASSERT_EQ(fetches->requests.size(), 1u);
  replace_retry();
  ASSERT_EQ(first->got.size(), 1u) << "the waiter was left to its timeout";
  EXPECT_TRUE(starts_with(first->got[0], "error collaborator_down"))
      << first->got[0];
  EXPECT_EQ(stats_of<pkrange_cache_stats>(pkranges).collaborator_failures, 1u);
  rewire();
  auto again =
      ask<routing_snapshot>(pkranges, pkranges_atom_v, rid_a, std::string{});
  ASSERT_EQ(fetches->requests.size(), 1u) << "no fresh load";
  answer(0, whole_range_page(rid_a, "\"1\""));
  answer(1, not_modified("\"1\""));
  EXPECT_EQ(again->got, std::vector<std::string>{"ok"});
}

TEST_F(CacheLimits, RetryDiesMidQueryPlanFetch_WaitersFailAtOnce_NextFetches) {
  start();
  auto first =
      ask<query_plan>(plans, plan_atom_v, plan_for(rid_a, "SELECT * FROM c"));
  replace_retry();
  ASSERT_EQ(first->got.size(), 1u) << "the waiter was left to its timeout";
  EXPECT_TRUE(starts_with(first->got[0], "error collaborator_down"))
      << first->got[0];
  rewire();
  auto again =
      ask<query_plan>(plans, plan_atom_v, plan_for(rid_a, "SELECT * FROM c"));
  // The fake records detach requests only as promises: answer the first.
  answer(0, plan_ok());
  EXPECT_EQ(again->got, std::vector<std::string>{"ok"});
}

// The supervisor's re-wiring and the old retry actor's down message come from
// two actors: CAF does not order them. With the re-wiring first, the waiters
// of the old actor's fetches must still fail at once, and the successor's own
// fetches must not.
TEST_F(CacheLimits, RewiredBeforeTheOldRetryIsSeenDown_ItsWaitersStillFail) {
  start();
  auto coll =
      ask<collection_info>(collections, by_name_atom_v,
                           std::string{"dbs/d/colls/c"}, false, std::string{});
  auto map =
      ask<routing_snapshot>(pkranges, pkranges_atom_v, rid_a, std::string{});
  auto plan =
      ask<query_plan>(plans, plan_atom_v, plan_for(rid_a, "SELECT * FROM c"));
  auto old = retry;
  others.push_back(caf::actor_cast<caf::actor>(old));
  fetches = std::make_shared<recording_retry_log>();
  retry = sys.spawn(recording_retry, fetches);
  rewire();
  auto fresh = ask<collection_info>(collections, by_name_atom_v,
                                    std::string{"dbs/d/colls/other"}, false,
                                    std::string{});
  ASSERT_EQ(fetches->requests.size(), 1u) << "the successor got no fetch";
  for (auto& log : {coll, map, plan, fresh})
    EXPECT_TRUE(log->got.empty()) << "answered before anything went down";
  self->send_exit(old, caf::exit_reason::kill);
  run(); // no time passes
  for (auto& log : {coll, map, plan}) {
    ASSERT_EQ(log->got.size(), 1u) << "a waiter was left to its timeout";
    EXPECT_TRUE(starts_with(log->got[0], "error collaborator_down"))
        << log->got[0];
  }
  EXPECT_TRUE(fresh->got.empty()) << "the successor's fetch failed too";
  answer(0, collection_ok(rid_b));
  EXPECT_EQ(fresh->got, std::vector<std::string>{"ok"});
  EXPECT_EQ(stats_of<collection_cache_stats>(collections).collaborator_failures,
            1u);
}

TEST_F(CacheLimits, RewireFromAnyoneButTheSupervisor_IsIgnored) {
  start();
  auto stranger = sys.spawn([](caf::event_based_actor*) -> caf::behavior {
    return {[](caf::ok_atom) {}};
  });
  others.push_back(stranger);
  replace_retry();
  engine_wiring w;
  w.retry = retry;
  caf::anon_send(caf::actor_cast<caf::actor>(collections), w); // no sender
  run();
  auto got =
      ask<collection_info>(collections, by_name_atom_v,
                           std::string{"dbs/d/colls/c"}, false, std::string{});
  EXPECT_EQ(fetches->requests.size(), 0u) << "a stranger re-wired the cache";
  ASSERT_EQ(got->got.size(), 1u); // asked the dead actor: an error at once
  EXPECT_TRUE(starts_with(got->got[0], "error")) << got->got[0];
}

// -- bounded memory -----------------------------------------------------------

TEST_F(CacheLimits, CollectionCache_Lru_EvictsTheLeastRecentlyUsed) {
  collection_cfg.capacity = 2;
  start();
  uint64_t n = 0;
  for (auto name : {"a", "b", "c"}) {
    auto log = ask<collection_info>(collections, by_name_atom_v,
                                    std::string{"dbs/d/colls/"} + name, false,
                                    std::string{});
    answer(n, collection_ok(n == 0 ? rid_a : n == 1 ? rid_b : rid_c));
    ++n;
    ASSERT_EQ(log->got, std::vector<std::string>{"ok"});
  }
  auto s = stats_of<collection_cache_stats>(collections);
  EXPECT_EQ(s.evictions, 2u); // "a" left both indexes
  // "c" and "b" are cached, "a" is fetched again.
  ask<collection_info>(collections, by_name_atom_v,
                       std::string{"dbs/d/colls/c"}, false, std::string{});
  EXPECT_EQ(fetches->requests.size(), 3u);
  ask<collection_info>(collections, by_name_atom_v,
                       std::string{"dbs/d/colls/a"}, false, std::string{});
  EXPECT_EQ(fetches->requests.size(), 4u);
}

TEST_F(CacheLimits, CollectionCache_WaiterCap_RefusesTheNextCaller) {
  collection_cfg.max_waiters = 2;
  start();
  auto link = std::string{"dbs/d/colls/c"};
  auto a = ask<collection_info>(collections, by_name_atom_v, link, false,
                                std::string{});
  auto b = ask<collection_info>(collections, by_name_atom_v, link, false,
                                std::string{});
  auto c = ask<collection_info>(collections, by_name_atom_v, link, false,
                                std::string{});
  ASSERT_EQ(c->got.size(), 1u);
  EXPECT_TRUE(starts_with(c->got[0], "error overloaded")) << c->got[0];
  EXPECT_NE(c->got[0].find("georoute.cache-max-waiters"), std::string::npos);
  answer(0, collection_ok(rid_a));
  EXPECT_EQ(a->got, std::vector<std::string>{"ok"});
  EXPECT_EQ(b->got, std::vector<std::string>{"ok"});
  EXPECT_EQ(stats_of<collection_cache_stats>(collections).overloaded, 1u);
}

TEST_F(CacheLimits, PkrangeCache_Lru_EvictsTheLeastRecentlyUsedMap) {
  pkrange_cfg.capacity = 1;
  start();
  auto a =
      ask<routing_snapshot>(pkranges, pkranges_atom_v, rid_a, std::string{});
  answer(0, whole_range_page(rid_a, "\"1\""));
  answer(1, not_modified("\"1\""));
  auto b =
      ask<routing_snapshot>(pkranges, pkranges_atom_v, rid_b, std::string{});
  answer(2, whole_range_page(rid_b, "\"1\""));
  answer(3, not_modified("\"1\""));
  ASSERT_EQ(a->got, std::vector<std::string>{"ok"});
  ASSERT_EQ(b->got, std::vector<std::string>{"ok"});
  EXPECT_EQ(stats_of<pkrange_cache_stats>(pkranges).evictions, 1u);
  ask<routing_snapshot>(pkranges, pkranges_atom_v, rid_b, std::string{});
  EXPECT_EQ(fetches->requests.size(), 4u); // b is cached
  ask<routing_snapshot>(pkranges, pkranges_atom_v, rid_a, std::string{});
  EXPECT_EQ(fetches->requests.size(), 5u); // a was evicted: a cold load
}

TEST_F(CacheLimits, PkrangeCache_OneDeadlineForAllPages) {
  pkrange_cfg.load_deadline = 10s;
  start();
  auto got =
      ask<routing_snapshot>(pkranges, pkranges_atom_v, rid_a, std::string{});
  // Each page comes back within 4 s, but the feed never ends with a 304.
  for (uint64_t i = 0; i < 2; ++i) {
    advance(4s);
    answer(i, whole_range_page(rid_a, "\"" + std::to_string(i + 1) + "\""));
  }
  EXPECT_TRUE(got->got.empty());
  advance(2s); // t = 10 s
  ASSERT_EQ(got->got.size(), 1u) << "the load outlived its deadline";
  EXPECT_TRUE(starts_with(got->got[0], "error deadline_exceeded"))
      << got->got[0];
  EXPECT_NE(got->got[0].find("3 pages"), std::string::npos) << got->got[0];
  EXPECT_EQ(stats_of<pkrange_cache_stats>(pkranges).deadline_trips, 1u);
  // The third page's answer, late, changes nothing; the next caller loads.
  answer(2, not_modified("\"3\""));
  EXPECT_EQ(got->got.size(), 1u);
}

TEST_F(CacheLimits, PkrangeCache_WaiterCap_RefusesTheNextCaller) {
  pkrange_cfg.max_waiters = 1;
  start();
  ask<routing_snapshot>(pkranges, pkranges_atom_v, rid_a, std::string{});
  auto refused =
      ask<routing_snapshot>(pkranges, pkranges_atom_v, rid_a, std::string{});
  ASSERT_EQ(refused->got.size(), 1u);
  EXPECT_TRUE(starts_with(refused->got[0], "error overloaded"))
      << refused->got[0];
}

TEST_F(CacheLimits, QueryPlan_EmptyRid_IsAValidationError) {
  start();
  auto got =
      ask<query_plan>(plans, plan_atom_v, plan_for("", "SELECT * FROM c"));
  ASSERT_EQ(got->got.size(), 1u);
  EXPECT_TRUE(starts_with(got->got[0], "error validation_error"))
      << got->got[0];
  EXPECT_EQ(fetches->requests.size(), 0u);
}

TEST(QueryPlanKey, EveryPartIsLengthPrefixed) {
  auto a = plan_for("rid1", "SELECT 1");
  auto b = a;
  b.collection_rid = "rid2";
  EXPECT_NE(query_plan_key(a), query_plan_key(b)); // two collections
  // Moving text between parts never yields the same key.
  query_plan_request x, y;
  x.collection_rid = "r";
  x.query = "q|p";
  x.parameters_json = "[]";
  y.collection_rid = "r";
  y.query = "q";
  y.parameters_json = "|p[]";
  EXPECT_NE(query_plan_key(x), query_plan_key(y));
  // A separator alone is not enough: "a|b" + "c" and "a" + "b|c".
  query_plan_request u = x, v = x;
  u.parameters_json = "[\"a|b\"]";
  u.partition_key_json = "[\"c\"]";
  v.parameters_json = "[\"a";
  v.partition_key_json = "b\"]|[\"c\"]";
  EXPECT_NE(query_plan_key(u), query_plan_key(v));
  EXPECT_EQ(query_plan_key(a), query_plan_key(plan_for("rid1", "SELECT 1")));
}

TEST_F(CacheLimits, QueryPlan_SameQueryOnTwoCollections_TwoPlans) {
  start();
  auto a =
      ask<query_plan>(plans, plan_atom_v, plan_for(rid_a, "SELECT * FROM c"));
  auto b =
      ask<query_plan>(plans, plan_atom_v, plan_for(rid_b, "SELECT * FROM c"));
  EXPECT_TRUE(b->got.empty()) << "collection b was served a's plan";
  answer(0, plan_ok());
  answer(1, plan_ok());
  EXPECT_EQ(stats_of<query_plan_stats>(plans).fetches, 2u);
}

TEST_F(CacheLimits, QueryPlan_WaiterCap_RefusesTheNextCaller) {
  plan_waiters = 1;
  start();
  ask<query_plan>(plans, plan_atom_v, plan_for(rid_a, "SELECT * FROM c"));
  auto refused =
      ask<query_plan>(plans, plan_atom_v, plan_for(rid_a, "SELECT * FROM c"));
  ASSERT_EQ(refused->got.size(), 1u);
  EXPECT_TRUE(starts_with(refused->got[0], "error overloaded"))
      << refused->got[0];
}

} // namespace
} // namespace cache_limits_test
