// Issue 4, item 8: a caller with a 300 ms timeout while the first preferred
// region hangs, for the collection cache and the partition-range cache. The
// caller gets its timeout; the retry actor gives up on the region through
// its ladder, fails over (the client policy marks it and refreshes the
// account; the partition-range policy hops without marking), succeeds in the
// next region and fills the cache; the next caller is answered from the
// cache and the hung region sees no request.

#include "georoute/actors/collection_cache.hpp"
#include "georoute/actors/pkrange_cache.hpp"
#include "georoute/actors/policy/routing_map.hpp"
#include "tests/integration/stack_fixture.hpp"

namespace {

using namespace georoute;
using namespace georoute::test;
using namespace std::chrono_literals;

class CacheRace : public stack_test {
protected:
  void SetUp() override {
    start_emulator();
    create_collection("d", "c");
    start_actors();
  }

  void expect_west_marked_and_refreshed() {
    resolve_input read;
    auto where = ask<resolution>(locations, 5s, resolve_atom_v, read);
    ASSERT_TRUE(where);
    EXPECT_EQ(where->region, "East US");
    auto em = ask<endpoint_manager_stats>(endpoints, 5s, stats_atom_v);
    ASSERT_TRUE(em);
    EXPECT_GE(em->fetches_started, 2u); // the initial read and the refresh
    auto rs = retry_stats_now();
    EXPECT_GE(rs.marks, 1u);
    EXPECT_GE(rs.refreshes, 1u);
  }
};

TEST_F(CacheRace, Collection_CallerTimesOut_FetchFailsOverAndFillsTheCache) {
  auto cache = spawn_collection_cache(*sys, retry);
  actors.push_back(caf::actor_cast<caf::actor>(cache));
  ASSERT_TRUE(emu->set_region_state("West US", emulator::region_state::hang));
  auto first =
      ask<collection_info>(cache, 300ms, by_name_atom_v,
                           std::string{"dbs/d/colls/c"}, false, std::string{});
  ASSERT_FALSE(first);
  EXPECT_EQ(first.error(), caf::sec::request_timeout);
  wait_for([&] { return retry_stats_now().live == 0; }, "the fetch to end");
  expect_west_marked_and_refreshed();
  emu->control().reset_counters();
  auto second =
      ask<collection_info>(cache, 5s, by_name_atom_v,
                           std::string{"dbs/d/colls/c"}, false, std::string{});
  ASSERT_TRUE(second) << sys->render(second.error());
  EXPECT_EQ(second->id, "c");
  EXPECT_EQ(served_by("West US"), 0u);
  EXPECT_EQ(served_by("East US"), 0u); // from the cache
  ASSERT_TRUE(emu->set_region_state("West US", emulator::region_state::online));
}

TEST_F(CacheRace,
       PartitionRanges_CallerTimesOut_RefreshGoesOnAndFillsTheCache) {
  auto colls = spawn_collection_cache(*sys, retry);
  auto ranges = spawn_pkrange_cache(*sys, retry);
  actors.push_back(caf::actor_cast<caf::actor>(colls));
  actors.push_back(caf::actor_cast<caf::actor>(ranges));
  auto coll =
      ask<collection_info>(colls, 5s, by_name_atom_v,
                           std::string{"dbs/d/colls/c"}, false, std::string{});
  ASSERT_TRUE(coll) << sys->render(coll.error());
  // A map is cached: what follows is a refresh, not a cold load.
  auto cold = ask<routing_snapshot>(ranges, 5s, pkranges_atom_v, coll->rid,
                                    std::string{});
  ASSERT_TRUE(cold) << sys->render(cold.error());
  ASSERT_EQ(cold->map->ranges().size(), 2u); // the emulator's initial ranges
  auto old_etag = cold->map->etag();
  auto split = emu->control().split_range("d", "c", cold->map->ranges()[0].id);
  ASSERT_TRUE(split) << split.error().what;
  ASSERT_TRUE(emu->set_region_state("West US", emulator::region_state::hang));
  emu->control().reset_counters();
  auto before = ask<pkrange_cache_stats>(ranges, 5s, stats_atom_v);
  ASSERT_TRUE(before);
  // The caller doubts the map it holds (a 410/1002 would make it) and gives
  // up after 300 ms; the refresh goes on.
  auto first = ask<routing_snapshot>(ranges, 300ms, pkranges_atom_v, coll->rid,
                                     old_etag);
  ASSERT_FALSE(first);
  EXPECT_EQ(first.error(), caf::sec::request_timeout);
  // The refresh is two operations of the retry actor (the changes, then a
  // 304): the retry actor is idle between them, so only the map tells that
  // the refresh ended. Asking for it is a cache hit: no request goes out.
  wait_for(
      [&] {
        auto now = ask<routing_snapshot>(ranges, 5s, pkranges_atom_v, coll->rid,
                                         std::string{});
        return now && now->map && now->map->etag() != old_etag;
      },
      "the refresh to fill the cache");
  wait_for([&] { return retry_stats_now().live == 0; }, "the refresh to end");
  auto after = ask<pkrange_cache_stats>(ranges, 5s, stats_atom_v);
  ASSERT_TRUE(after);
  EXPECT_EQ(after->refreshes, before->refreshes + 1) << "not a refresh";
  EXPECT_EQ(after->misses, before->misses) << "a cold load, not a refresh";
  // The partition-range policy hops regions without marking or refreshing
  // (.NET ResourceThrottleRetryPolicy and the metadata retry policies): West
  // stays first in the table, the map came from East.
  auto rs = retry_stats_now();
  EXPECT_EQ(rs.marks, 0u);
  EXPECT_GE(rs.retries, 1u);
  EXPECT_GE(served_by("East US"), 1u);
  emu->control().reset_counters();
  auto second = ask<routing_snapshot>(ranges, 5s, pkranges_atom_v, coll->rid,
                                      std::string{});
  ASSERT_TRUE(second) << sys->render(second.error());
  ASSERT_TRUE(second->map);
  EXPECT_NE(second->map->etag(), old_etag);
  EXPECT_EQ(second->map->ranges().size(), 3u); // the split's children merged
  EXPECT_EQ(served_by("West US"), 0u);
  EXPECT_EQ(served_by("East US"), 0u); // from the cache
  ASSERT_TRUE(emu->set_region_state("West US", emulator::region_state::online));
}

} // namespace
