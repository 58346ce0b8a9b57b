// The partition-range cache's contract (.NET PartitionKeyRangeCache
// (src/Routing/PartitionKeyRangeCache.cs) and .NET CollectionRoutingMap
// (src/Routing/CollectionRoutingMap.cs)): the incremental feed looped until
// 304, complete maps or nothing, refresh only if nobody refreshed since, and
// the design rule: a caller's timeout never stops a load, which goes on and
// fills the cache. Virtual time.

#include "georoute/actors/pkrange_cache.hpp"
#include "georoute/actors/policy/routing_map.hpp"
#include "georoute/transport/codecs.hpp"
#include "tests/actors/actor_fixture.hpp"
#include "tests/actors/recording_retry.hpp"

// Named after the file as well: the unity build (tests/CMakeLists.txt)
// compiles it in one translation unit with other tests.
namespace pkrange_cache_test {
namespace {

using namespace georoute;
using namespace georoute::test;
using namespace std::chrono_literals;

const std::string rid = "wRUaAK6VyWc=";
const std::string other_rid = "XP0mAJ3H-AA=";
const std::string e1 = "\"1\"";
const std::string e2 = "\"2\"";

partition_key_range range(std::string id, std::string min, std::string max,
                          std::vector<std::string> parents = {}) {
  partition_key_range r;
  r.id = std::move(id);
  r.min_inclusive = std::move(min);
  r.max_exclusive = std::move(max);
  r.parents = std::move(parents);
  return r;
}

transport::outcome page(std::vector<partition_key_range> ranges,
                        const std::string& etag) {
  pkranges_page p;
  p.rid = rid;
  p.ranges = std::move(ranges);
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

std::vector<std::string> ids_of(const std::vector<partition_key_range>& rs) {
  std::vector<std::string> ids;
  for (const auto& r : rs)
    ids.push_back(r.id);
  return ids;
}

using ids = std::vector<std::string>;

// Stands in for a missing map so that a failing test fails, not crashes.
std::shared_ptr<const routing_map> no_map() {
  auto m = routing_map::create_complete({range("999", "", "FF")}, "<no map>");
  return std::make_shared<const routing_map>(std::move(m).value());
}

// A caller that asks for the map with its own timeout and records the answer
// ("ok <etag>").
caf::behavior map_caller(caf::event_based_actor* self,
                         pkrange_cache_actor cache, caf::timespan timeout,
                         std::string known_etag,
                         std::shared_ptr<reply_log> log) {
  self->request(cache, timeout, pkranges_atom_v, rid, std::move(known_etag))
      .then(
          [log](routing_snapshot& s) {
            log->got.push_back("ok " + s.map->etag());
          },
          [log](caf::error& e) { log->got.push_back(describe_error(e)); });
  return {[](caf::ok_atom) {}};
}

class PkRangeCache : public actor_test {
protected:
  std::shared_ptr<recording_retry_log> fetches =
      std::make_shared<recording_retry_log>();
  fake_retry_actor retry;
  pkrange_cache_actor cache;
  std::vector<caf::actor> callers;

  void SetUp() override {
    retry = sys.spawn(recording_retry, fetches);
    cache = spawn_pkrange_cache(sys, retry);
    run();
  }

  void TearDown() override {
    callers.push_back(caf::actor_cast<caf::actor>(cache));
    callers.push_back(caf::actor_cast<caf::actor>(retry));
    for (auto& a : callers)
      self->send_exit(a, caf::exit_reason::user_shutdown);
    run();
  }

  std::shared_ptr<reply_log> spawn_caller(caf::timespan timeout,
                                          std::string known_etag = {}) {
    auto log = std::make_shared<reply_log>();
    callers.push_back(
        sys.spawn(map_caller, cache, timeout, std::move(known_etag), log));
    return log;
  }

  size_t sent() const { return fetches->requests.size(); }

  // The retry actor answers the newest page request (the fake delivers).
  void answer(transport::outcome o) {
    auto p = fetches->pending();
    ASSERT_FALSE(p.empty()) << "no page request pending";
    caf::anon_send(retry, answer_atom_v, p.back(), std::move(o));
    run();
  }

  auto lookup(std::string known_etag = {}, const std::string& r = rid) {
    return self->request(cache, caf::infinite, pkranges_atom_v, r,
                         std::move(known_etag));
  }

  auto overlap(epk_range range, bool force, const std::string& r = rid) {
    return self->request(cache, caf::infinite, overlap_atom_v, r, range, force);
  }

  template <class Handle>
  routing_snapshot snapshot_of(Handle& h) {
    routing_snapshot got;
    receive_now(
        self, h, [&](routing_snapshot& s) { got = s; },
        [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
    if (!got.map) got.map = no_map();
    return got;
  }

  template <class Handle>
  caf::error error_of(Handle& h) {
    caf::error got;
    receive_now(
        self, h,
        [](routing_snapshot&) { ADD_FAILURE() << "expected an error"; },
        [&](caf::error& e) { got = e; });
    return got;
  }

  // Answers the map from the cache and checks that nothing was fetched.
  routing_snapshot cached(std::string known_etag = {}) {
    auto before = sent();
    auto h = lookup(std::move(known_etag));
    run();
    EXPECT_EQ(sent(), before) << "expected no fetch";
    return snapshot_of(h);
  }

  // Cold-loads ranges 0 ["", 7F) and 1 [7F, FF) at etag e1.
  void load_cold() {
    auto h = lookup();
    run();
    answer(page({range("0", "", "7F"), range("1", "7F", "FF")}, e1));
    answer(not_modified(e1));
    auto s = snapshot_of(h);
    ASSERT_TRUE(s.map);
    ASSERT_EQ(s.map->etag(), e1);
  }

  // Splits range 1 into 2 [7F, BF) and 3 [BF, FF): the incremental page.
  transport::outcome split_page() {
    return page({range("2", "7F", "BF", {"1"}), range("3", "BF", "FF", {"1"})},
                e2);
  }

  pkrange_cache_stats stats() {
    pkrange_cache_stats result;
    auto h = self->request(cache, caf::infinite, stats_atom_v);
    run();
    receive_now(
        self, h, [&](pkrange_cache_stats& s) { result = s; },
        [](caf::error&) { ADD_FAILURE() << "stats failed"; });
    return result;
  }
};

TEST_F(PkRangeCache, ColdLoad_LoopsPagesUntil304_BuildsCompleteMap) {
  auto h1 = lookup();
  auto h2 = lookup();
  run();
  ASSERT_EQ(sent(), 1u); // one load, two waiters
  const auto& req = fetches->requests[0];
  EXPECT_EQ(req.what.kind, transport::attempt_kind::pkranges_read);
  EXPECT_EQ(req.what.resource, "/dbs/wRUaAA==/colls/wRUaAK6VyWc=");
  EXPECT_TRUE(req.what.rid_based);
  auto wire = fetches->wire(0);
  EXPECT_EQ(wire.method, "GET");
  EXPECT_EQ(wire.target, "/dbs/wRUaAA==/colls/wRUaAK6VyWc=/pkranges");
  EXPECT_TRUE(wire.rid_based);
  EXPECT_EQ(req.kind, request_kind::pkranges_read);
  EXPECT_EQ(req.op, op_kind::read);
  EXPECT_EQ(req.policy, loop_policy::partition_range);
  EXPECT_EQ(fetches->header(0, "a-im"), "Incremental Feed");
  EXPECT_EQ(fetches->header(0, "x-ms-max-item-count"), "-1");
  EXPECT_EQ(fetches->header(0, "if-none-match"), "<absent>");
  // Only the first page of a load may be hedged by the retry actor.
  EXPECT_TRUE(req.first_page);
  answer(page({range("0", "", "7F"), range("1", "7F", "FF")}, e1));
  ASSERT_EQ(sent(), 2u);
  EXPECT_EQ(fetches->header(1, "if-none-match"), e1);
  EXPECT_FALSE(fetches->requests[1].first_page);
  // A second page: 1 split meanwhile; the cold build drops the parent.
  answer(split_page());
  ASSERT_EQ(sent(), 3u);
  EXPECT_EQ(fetches->header(2, "if-none-match"), e2);
  EXPECT_FALSE(fetches->requests[2].first_page);
  answer(not_modified(e2));
  EXPECT_EQ(sent(), 3u);
  for (auto* h : {&h1, &h2}) {
    auto s = snapshot_of(*h);
    ASSERT_TRUE(s.map);
    EXPECT_EQ(s.collection_rid, rid);
    EXPECT_EQ(s.map->etag(), e2);
    EXPECT_EQ(ids_of(s.map->ranges()), (ids{"0", "2", "3"}));
    EXPECT_TRUE(s.map->is_gone("1"));
  }
  auto s = stats();
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.shared_waiters, 1u);
  EXPECT_EQ(s.pages, 3u);
}

TEST_F(PkRangeCache, Refresh_SendsIfNoneMatch_AndMergesSplitChildren) {
  load_cold();
  auto h = lookup(e1); // the caller saw e1 fail: nobody refreshed since
  run();
  ASSERT_EQ(sent(), 3u);
  EXPECT_EQ(fetches->header(2, "if-none-match"), e1);
  EXPECT_EQ(fetches->header(2, "a-im"), "Incremental Feed");
  EXPECT_TRUE(fetches->requests[2].first_page); // a refresh's first page
  // Plain lookups during the refresh get the current map at once.
  EXPECT_EQ(cached().map->etag(), e1);
  answer(split_page());
  ASSERT_EQ(sent(), 4u);
  EXPECT_EQ(fetches->header(3, "if-none-match"), e2);
  answer(not_modified(e2));
  auto s = snapshot_of(h);
  ASSERT_TRUE(s.map);
  EXPECT_EQ(s.map->etag(), e2);
  EXPECT_EQ(ids_of(s.map->ranges()), (ids{"0", "2", "3"}));
  EXPECT_EQ(s.map->range_by_epk("90")->id, "2");
  EXPECT_EQ(s.map->range_by_epk("C0")->id, "3");
  EXPECT_EQ(cached().map->etag(), e2);
  auto st = stats();
  EXPECT_EQ(st.misses, 1u);
  EXPECT_EQ(st.refreshes, 1u);
  EXPECT_EQ(st.pages, 4u);
}

TEST_F(PkRangeCache, RefreshOnlyIfNobodyRefreshedSince) {
  load_cold();
  // Two callers saw e1 fail at once: one refresh.
  auto a = lookup(e1);
  auto b = lookup(e1);
  run();
  ASSERT_EQ(sent(), 3u);
  answer(split_page());
  answer(not_modified(e2));
  EXPECT_EQ(snapshot_of(a).map->etag(), e2);
  EXPECT_EQ(snapshot_of(b).map->etag(), e2);
  // A third caller still holds e1: someone refreshed since, no fetch.
  EXPECT_EQ(cached(e1).map->etag(), e2);
  EXPECT_EQ(cached().map->etag(), e2);
  auto s = stats();
  EXPECT_EQ(s.refreshes, 1u);
  EXPECT_EQ(s.shared_waiters, 1u);
  EXPECT_EQ(s.refresh_skipped, 1u);
  EXPECT_EQ(s.pages, 4u);
}

TEST_F(PkRangeCache, IncompleteMap_IsAnError_OldMapKept) {
  load_cold();
  auto h = lookup(e1);
  run();
  // Only the left child of the split arrives: [BF, FF) would be missing.
  answer(page({range("2", "7F", "BF", {"1"})}, e2));
  answer(not_modified(e2));
  auto err = error_of(h);
  EXPECT_EQ(code_of(err), errc::protocol_violation);
  EXPECT_NE(context_of(err).find("complete routing map"), std::string::npos)
      << context_of(err);
  EXPECT_NE(context_of(err).find("FF"), std::string::npos) << context_of(err);
  EXPECT_NE(context_of(err).find("previous map stays"), std::string::npos);
  // Never a half map: the old one answers, whole.
  auto s = cached();
  EXPECT_EQ(s.map->etag(), e1);
  EXPECT_EQ(ids_of(s.map->ranges()), (ids{"0", "1"}));
  // Overlapping ranges on a cold load: an error, and nothing cached.
  auto cold = lookup({}, other_rid);
  run();
  answer(page({range("0", "", "80"), range("1", "7F", "FF")}, e1));
  answer(not_modified(e1));
  err = error_of(cold);
  EXPECT_EQ(code_of(err), errc::protocol_violation);
  EXPECT_NE(context_of(err).find("overlap"), std::string::npos)
      << context_of(err);
  auto before = sent();
  auto again = lookup({}, other_rid);
  run();
  EXPECT_EQ(sent(), before + 1); // nothing was cached: a new load
  answer(page({range("0", "", "FF")}, e1));
  answer(not_modified(e1));
  EXPECT_EQ(ids_of(snapshot_of(again).map->ranges()), ids{"0"});
  EXPECT_EQ(stats().failures, 2u);
}

TEST_F(PkRangeCache, CallerTimesOut_RefreshGoesOn_AndFillsTheCache) {
  // Cold: the caller gives up at 300 ms; the load goes on.
  auto early = spawn_caller(300ms);
  run();
  auto patient = lookup();
  run();
  ASSERT_EQ(sent(), 1u);
  advance(300ms);
  ASSERT_EQ(early->got, std::vector<std::string>{"timeout"});
  EXPECT_EQ(fetches->pending().size(), 1u);
  answer(page({range("0", "", "7F"), range("1", "7F", "FF")}, e1));
  answer(not_modified(e1));
  EXPECT_EQ(snapshot_of(patient).map->etag(), e1); // still waiting: served
  EXPECT_EQ(early->got.size(), 1u);
  EXPECT_EQ(cached().map->etag(), e1);
  // Refresh: the same, the cache ends up at e2 though nobody waits.
  auto refresher = spawn_caller(300ms, e1);
  run();
  ASSERT_EQ(sent(), 3u);
  advance(300ms);
  ASSERT_EQ(refresher->got, std::vector<std::string>{"timeout"});
  answer(split_page());
  answer(not_modified(e2));
  EXPECT_EQ(sent(), 4u);
  auto s = cached();
  EXPECT_EQ(s.map->etag(), e2);
  EXPECT_EQ(ids_of(s.map->ranges()), (ids{"0", "2", "3"}));
}

TEST_F(PkRangeCache, Overlap_Force_RefreshesOnce) {
  epk_range all{"", "FF", true, false};
  epk_range mid{"80", "90", true, false};
  // Cold: one load, then the ranges.
  auto h = overlap(all, false);
  run();
  answer(page({range("0", "", "7F"), range("1", "7F", "FF")}, e1));
  answer(not_modified(e1));
  receive_now(
      self, h,
      [](std::vector<partition_key_range>& rs) {
        EXPECT_EQ(ids_of(rs), (ids{"0", "1"}));
      },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  // Not forced: from the map, no fetch.
  auto plain = overlap(mid, false);
  run();
  EXPECT_EQ(sent(), 2u);
  receive_now(
      self, plain,
      [](std::vector<partition_key_range>& rs) {
        EXPECT_EQ(ids_of(rs), ids{"1"});
      },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  // Forced (the caller saw a 410/1002): exactly one refresh.
  auto forced = overlap(mid, true);
  run();
  ASSERT_EQ(sent(), 3u);
  EXPECT_EQ(fetches->header(2, "if-none-match"), e1);
  answer(split_page());
  answer(not_modified(e2));
  EXPECT_EQ(sent(), 4u);
  receive_now(
      self, forced,
      [](std::vector<partition_key_range>& rs) {
        EXPECT_EQ(ids_of(rs), ids{"2"});
      },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  // Forced on an empty cache: the cold load is fresh; no second refresh.
  auto cold = overlap(all, true, other_rid);
  run();
  answer(page({range("0", "", "FF")}, e1));
  answer(not_modified(e1));
  EXPECT_EQ(sent(), 6u);
  receive_now(
      self, cold,
      [](std::vector<partition_key_range>& rs) {
        EXPECT_EQ(ids_of(rs), ids{"0"});
      },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  auto s = stats();
  EXPECT_EQ(s.misses, 2u);
  EXPECT_EQ(s.refreshes, 1u);
  EXPECT_EQ(s.hits, 1u);
}

TEST_F(PkRangeCache, NotFound) {
  auto h = lookup();
  run();
  answer(status_response(404));
  auto err = error_of(h);
  EXPECT_EQ(code_of(err), errc::not_found);
  EXPECT_NE(context_of(err).find("partition-key ranges of"), std::string::npos)
      << context_of(err);
  // Not cached: the next caller loads again.
  load_cold();
  EXPECT_EQ(sent(), 3u);
  // A refresh answered 404: the collection is gone, and so is its map.
  auto r = lookup(e1);
  run();
  answer(status_response(404));
  EXPECT_EQ(code_of(error_of(r)), errc::not_found);
  auto next = lookup();
  run();
  EXPECT_EQ(sent(), 5u); // a cold load, not the stale map
  answer(status_response(404));
  EXPECT_EQ(code_of(error_of(next)), errc::not_found);
  auto s = stats();
  EXPECT_EQ(s.dropped, 1u);
  EXPECT_EQ(s.failures, 3u);
}

TEST_F(PkRangeCache, ServerThatNeverAnswers304_IsCutOff) {
  callers.push_back(caf::actor_cast<caf::actor>(cache));
  pkrange_cache_config cfg;
  cfg.max_pages = 3;
  cache = spawn_pkrange_cache(sys, retry, cfg);
  run();
  auto h = lookup();
  run();
  for (int i = 0; i < 3; ++i)
    answer(page({range("0", "", "FF")}, e1));
  EXPECT_EQ(sent(), 3u);
  auto err = error_of(h);
  EXPECT_EQ(code_of(err), errc::protocol_violation);
  EXPECT_NE(context_of(err).find("no 304 after 3 pages"), std::string::npos)
      << context_of(err);
}

TEST_F(PkRangeCache, BadRid_IsRefusedWithoutAFetch) {
  auto h = lookup({}, "nope");
  run();
  EXPECT_EQ(sent(), 0u);
  EXPECT_EQ(code_of(error_of(h)), errc::validation_error);
}

} // namespace
} // namespace pkrange_cache_test
