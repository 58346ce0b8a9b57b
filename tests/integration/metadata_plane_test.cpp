// Issue 4, item 8: the metadata plane against the emulator, in real time.

#include "georoute/actors/query_plan.hpp"
#include "georoute/messages/error.hpp"
#include "tests/integration/stack_fixture.hpp"

namespace {

using namespace georoute;
using namespace georoute::test;
using namespace std::chrono_literals;

class MetadataPlane : public stack_test {};

resolve_input read_excluding(std::vector<std::string> excluded) {
  resolve_input in;
  in.op = op_kind::read;
  in.excluded_regions = std::move(excluded);
  return in;
}

TEST_F(MetadataPlane,
       QueryPlan_CallerTimesOutWhileRegionHangs_PlanLandsInCache) {
  start_emulator();
  create_collection("d", "c");
  start_actors();
  auto plans = spawn_query_plan(*sys, retry, 16);
  actors.push_back(caf::actor_cast<caf::actor>(plans));
  ASSERT_TRUE(emu->set_region_state("West US", emulator::region_state::hang));
  query_plan_request req;
  req.collection_link = "dbs/d/colls/c";
  req.collection_rid = "rid-of-c";
  req.query = "SELECT * FROM c ORDER BY c.n";
  req.parameters_json = "[]";
  // The caller gives up after 300 ms: it gets its timeout.
  auto first = ask<query_plan>(plans, 300ms, plan_atom_v, req);
  ASSERT_FALSE(first);
  EXPECT_EQ(first.error(), caf::sec::request_timeout);
  // The detached work goes on: West times out through its ladder, is marked,
  // the account is refreshed, East answers, the plan lands in the cache.
  wait_for([&] { return retry_stats_now().live == 0; },
           "the plan fetch to end");
  auto where =
      ask<resolution>(locations, 5s, resolve_atom_v, read_excluding({}));
  ASSERT_TRUE(where);
  EXPECT_EQ(where->region, "East US"); // West is demoted
  // The failover refreshed the account: a second fetch after the initial
  // read.
  auto em = ask<endpoint_manager_stats>(endpoints, 5s, stats_atom_v);
  ASSERT_TRUE(em);
  EXPECT_GE(em->fetches_started, 2u) << "the account was not refreshed";
  EXPECT_GE(em->fetches_succeeded, 2u);
  emu->control().reset_counters();
  auto second = ask<query_plan>(plans, 5s, plan_atom_v, req);
  ASSERT_TRUE(second) << sys->render(second.error());
  EXPECT_FALSE(second->info.order_by_expressions.empty());
  // Answered from the cache: no region saw a request.
  EXPECT_EQ(served_by("West US"), 0u);
  EXPECT_EQ(served_by("East US"), 0u);
  auto stats = ask<query_plan_stats>(plans, 5s, stats_atom_v);
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->hits, 1u);
  EXPECT_EQ(stats->fetches, 1u);
  auto rs = retry_stats_now();
  EXPECT_EQ(rs.live, 0u);
  ASSERT_TRUE(emu->set_region_state("West US", emulator::region_state::online));
}

TEST_F(MetadataPlane,
       BackgroundRefresh_KeepsRunningOnHealthyMultiWriter_SeesSwitch) {
  start_emulator(true);
  settings.location.preferred_regions = {"East US", "West US", "North Europe"};
  settings.refresh.background_interval = 100ms;
  start_actors();
  resolve_input doc_write;
  doc_write.op = op_kind::write;
  doc_write.is_document = true;
  auto w = ask<resolution>(locations, 5s, resolve_atom_v, doc_write);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->region, "East US"); // multi-write: the nearest write region
  auto ticks = [&] {
    auto s = ask<endpoint_manager_stats>(endpoints, 5s, stats_atom_v);
    return s ? s->background_ticks : 0u;
  };
  // Many intervals on a healthy multi-writer account: the loop keeps going.
  wait_for([&] { return ticks() >= 10; }, "ten background refreshes");
  emu->control().set_multi_write(false);
  wait_for(
      [&] {
        auto r = ask<resolution>(locations, 5s, resolve_atom_v, doc_write);
        return r && r->region == "West US";
      },
      "the switch to single-write to reach the location cache");
  auto after = ticks();
  wait_for([&] { return ticks() >= after + 5; }, "the loop to keep running");
  auto s = ask<endpoint_manager_stats>(endpoints, 5s, stats_atom_v);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->multi_write_changes, 1u);
}

TEST_F(MetadataPlane,
       ReadsWithEveryRegionExcluded_AfterWriteSwitch_GoToNewWriter) {
  start_emulator();
  create_collection("d", "c");
  start_actors();
  auto moved =
      emu->control().set_write_regions({"North Europe", "West US", "East US"});
  ASSERT_TRUE(moved) << moved.error().what;
  auto acct = ask<database_account>(endpoints, 5s, refresh_atom_v, true);
  ASSERT_TRUE(acct) << sys->render(acct.error());
  ASSERT_EQ(acct->writable.front().name, "North Europe");
  std::vector<std::string> all{"west us", "EAST US", "North Europe"};
  wait_for(
      [&] {
        auto r =
            ask<resolution>(locations, 5s, resolve_atom_v, read_excluding(all));
        return r && r->region == "North Europe";
      },
      "the fallback to the new write region");
  auto r = ask<resolution>(locations, 5s, resolve_atom_v, read_excluding(all));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->endpoint, emu->endpoint("North Europe"));
  EXPECT_NE(r->endpoint, emu->global_endpoint()); // never the static default
  // A real read through the router lands there too.
  document_request read;
  read.what.kind = transport::attempt_kind::raw;
  read.what.resource = "/dbs/d/colls/c";
  read.kind = request_kind::metadata_read;
  read.excluded_regions = all;
  emu->control().reset_counters();
  auto o = ask<transport::outcome>(router, 5s, route_atom_v, read);
  ASSERT_TRUE(o) << sys->render(o.error());
  EXPECT_EQ(o->status, 200);
  EXPECT_EQ(o->endpoint, emu->endpoint("North Europe"));
  EXPECT_EQ(served_by("North Europe"), 1u);
  EXPECT_EQ(served_by("West US") + served_by("East US"), 0u);
}

} // namespace
