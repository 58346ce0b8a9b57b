// Per-partition automatic failover (PPAF) of single-write accounts, without
// actors: the override table alone, then the attempt loop that follows it
// (the one place an endpoint is chosen). The account writes in East US and
// reads in East US, West US, North Europe and Southeast Asia, in that
// account order; the client prefers East, West, North. Ports of the .NET
// SDK's GlobalPartitionEndpointManager tests where they apply.

#include "georoute/actors/policy/attempt_loop.hpp"
#include "georoute/actors/policy/partition_failover.hpp"
#include "tests/policy/attempt_results.hpp"
#include "tests/policy/location_fixture.hpp"

#include <gtest/gtest.h>

using namespace georoute;
using namespace georoute::location_fixture;
using namespace georoute::test;
using namespace std::chrono_literals;

// Named after the file as well: the unity build (tests/CMakeLists.txt)
// compiles it in one translation unit with other tests.
namespace partition_failover_test {
namespace {

const std::string rid = "aaaaAAAAAAA=";
const timeout_ladders ladders{};
const strings account_order = {"East US", "West US", "North Europe",
                               "Southeast Asia"};

location_table ppaf_table(std::optional<bool> flag = true,
                          strings preferred = preferred3) {
  auto acc = fixture_account(false);
  acc.per_partition_failover = flag;
  return location_table(options(false, true, std::move(preferred)))
      .with_account(acc, t0);
}

using mk = ppaf_move::kind;

// -- the override table --------------------------------------------------

TEST(PartitionFailover, Applies_ClientFlagTimesAccountFlag_Table) {
  struct row {
    const char* name;
    bool client;
    std::optional<bool> account;
    bool multi_write;
    op_kind op;
    bool expected;
  };
  const row rows[] = {
      {"BothOn", true, true, false, op_kind::write, true},
      {"AccountOff", true, false, false, op_kind::write, false},
      {"AccountSilent", true, std::nullopt, false, op_kind::write, false},
      {"ClientOff", false, true, false, op_kind::write, false},
      {"MultiWriteAccount", true, true, true, op_kind::write, false},
      {"Read", true, true, false, op_kind::read, false},
  };
  for (const auto& r : rows) {
    auto acc = fixture_account(r.multi_write);
    acc.per_partition_failover = r.account;
    auto t = location_table(options(r.multi_write, true, preferred3))
                 .with_account(acc, t0);
    partition_failover_options o;
    o.enabled = r.client;
    EXPECT_EQ(ppaf_applies(o, t, r.op, true), r.expected) << r.name;
  }
  // Metadata requests never.
  EXPECT_FALSE(ppaf_applies({}, ppaf_table(), op_kind::write, false));
}

TEST(PartitionFailover, AccountFlag_ExplicitValuesOnly_SilenceKeepsLast) {
  auto on = ppaf_table(true);
  EXPECT_TRUE(on.account_per_partition_failover());
  auto acc = fixture_account(false); // says nothing
  EXPECT_TRUE(on.with_account(acc, t0 + 1s).account_per_partition_failover());
  acc.per_partition_failover = false;
  EXPECT_FALSE(on.with_account(acc, t0 + 2s).account_per_partition_failover());
}

TEST(PartitionFailover, SingleReadRegion_NeverApplies) {
  auto acc = fixture_account(false);
  acc.per_partition_failover = true;
  acc.readable = {{"East US", east}};
  auto t = location_table(options(false, true, {})).with_account(acc, t0);
  EXPECT_FALSE(ppaf_applies({}, t, op_kind::write, true));
}

TEST(PartitionFailover, Triggers_Table) {
  struct row {
    const char* name;
    attempt_result r;
    std::optional<ppaf_trigger> expected;
  };
  const row rows[] = {
      {"WriteForbidden", http_answer(403, 3), ppaf_trigger::write_forbidden},
      {"AccountNotFound", http_answer(403, 1008),
       ppaf_trigger::account_not_found},
      {"Unavailable", http_answer(503), ppaf_trigger::service_unavailable},
      {"Unavailable_Sub", http_answer(503, 20001),
       ppaf_trigger::service_unavailable},
      {"ServerTimeout", http_answer(408), ppaf_trigger::server_timeout},
      {"TransitTimeout_Not", http_answer(408, 21013), std::nullopt},
      {"ClientTimeout", no_answer(true, true), ppaf_trigger::client_timeout},
      {"Refused_Not", no_answer(false, false), std::nullopt},
      {"Forbidden0_Not", http_answer(403), std::nullopt},
      {"Throttled_Not", http_answer(429), std::nullopt},
      {"Conflict_Not", http_answer(409), std::nullopt},
  };
  for (const auto& x : rows) {
    auto t = ppaf_trigger_of(x.r.transport_failure, x.r.timed_out, x.r.status,
                             x.r.substatus);
    EXPECT_EQ(t, x.expected) << x.name;
  }
}

TEST(PartitionFailover, WriteForbidden_MovesToNextAccountRegion_RangeOnly) {
  partition_failover p;
  auto m = p.on_failure(rid, "1", "East US", ppaf_trigger::write_forbidden,
                        account_order, "East US", t0);
  EXPECT_EQ(m.what, mk::moved);
  EXPECT_EQ(m.region, "West US");
  EXPECT_EQ(p.override_for(rid, "1"), "West US");
  EXPECT_EQ(p.override_for(rid, "2"), std::nullopt);
  EXPECT_EQ(p.override_for("bbbbBBBBBBB=", "1"), std::nullopt);
}

TEST(PartitionFailover, VisitsEveryAccountRegionOnce_ThenExhausted) {
  for (auto trigger :
       {ppaf_trigger::service_unavailable, ppaf_trigger::write_forbidden})
    for (std::size_t n = 2; n <= 12; ++n) {
      strings regions;
      for (std::size_t i = 0; i < n; ++i)
        regions.push_back("Region " + std::to_string(i));
      partition_failover p;
      std::string at = regions[0];
      strings visited{at};
      for (std::size_t k = 1; k < n; ++k) {
        auto m = p.on_failure(rid, "1", at, trigger, regions, regions[0], t0);
        ASSERT_EQ(m.what, mk::moved) << n << " regions, move " << k;
        at = m.region;
        visited.push_back(at);
      }
      EXPECT_EQ(visited, regions) << n;
      auto last = p.on_failure(rid, "1", at, trigger, regions, regions[0], t0);
      EXPECT_EQ(last.what, mk::exhausted) << n;
      EXPECT_EQ(p.size(), 0u) << n;
      EXPECT_EQ(p.override_for(rid, "1"), std::nullopt) << n;
    }
}

TEST(PartitionFailover, StaleFailure_DoesNotMoveAgain) {
  partition_failover p;
  p.on_failure(rid, "1", "East US", ppaf_trigger::write_forbidden,
               account_order, "East US", t0);
  // A second write that was already out to East answers 403/3 late: the
  // range already moved; it is told where, nothing moves.
  auto m = p.on_failure(rid, "1", "East US", ppaf_trigger::write_forbidden,
                        account_order, "East US", t0 + 10ms);
  EXPECT_EQ(m.what, mk::moved);
  EXPECT_EQ(m.region, "West US");
  EXPECT_EQ(p.override_for(rid, "1"), "West US");
  EXPECT_EQ(p.counters().moves, 1u);
}

TEST(PartitionFailover, Failback_OverrideForbidden_WriteRegionFirst) {
  partition_failover p;
  p.on_failure(rid, "1", "East US", ppaf_trigger::write_forbidden,
               account_order, "East US", t0);
  p.on_success(rid, "1", "West US", "East US");
  // Later the service moves the range home: West answers 403/3. The next
  // try goes to the write region, not on to North Europe.
  auto m = p.on_failure(rid, "1", "West US", ppaf_trigger::write_forbidden,
                        account_order, "East US", t0 + 1h);
  EXPECT_EQ(m.what, mk::homing);
  EXPECT_EQ(m.region, "East US");
  EXPECT_EQ(p.override_for(rid, "1"), std::nullopt);
  // East takes it: the entry is gone.
  p.on_success(rid, "1", "East US", "East US");
  EXPECT_EQ(p.size(), 0u);
}

TEST(PartitionFailover, Failback_WentElsewhere_WalksOnAfterWriteRegion) {
  partition_failover p;
  p.on_failure(rid, "1", "East US", ppaf_trigger::write_forbidden,
               account_order, "East US", t0);
  p.on_success(rid, "1", "West US", "East US");
  // The service moved it from West to Southeast Asia: West 403/3 -> East
  // (home first) 403/3 -> North Europe 403/3 -> Southeast Asia.
  auto m = p.on_failure(rid, "1", "West US", ppaf_trigger::write_forbidden,
                        account_order, "East US", t0 + 1h);
  ASSERT_EQ(m.what, mk::homing);
  m = p.on_failure(rid, "1", "East US", ppaf_trigger::write_forbidden,
                   account_order, "East US", t0 + 1h);
  EXPECT_EQ(m.what, mk::moved);
  EXPECT_EQ(m.region, "North Europe");
  m = p.on_failure(rid, "1", "North Europe", ppaf_trigger::write_forbidden,
                   account_order, "East US", t0 + 1h);
  EXPECT_EQ(m.what, mk::moved);
  EXPECT_EQ(m.region, "Southeast Asia");
}

TEST(PartitionFailover, AccountNotFound_FromOverride_DroppedAtOnce) {
  partition_failover p;
  p.on_failure(rid, "1", "East US", ppaf_trigger::write_forbidden,
               account_order, "East US", t0);
  auto m = p.on_failure(rid, "1", "West US", ppaf_trigger::account_not_found,
                        account_order, "East US", t0 + 1s);
  EXPECT_EQ(m.what, mk::dropped);
  EXPECT_EQ(p.override_for(rid, "1"), std::nullopt);
}

TEST(PartitionFailover, RegionLeavesAccount_OverrideDropped) {
  partition_failover p;
  p.on_failure(rid, "1", "East US", ppaf_trigger::write_forbidden,
               account_order, "East US", t0);
  p.on_failure(rid, "2", "East US", ppaf_trigger::write_forbidden,
               {"East US", "North Europe"}, "East US", t0);
  EXPECT_EQ(p.retain_regions({"East US", "North Europe"}), 1u);
  EXPECT_EQ(p.override_for(rid, "1"), std::nullopt);
  EXPECT_EQ(p.override_for(rid, "2"), "North Europe");
}

TEST(PartitionFailover, ClientTimeouts_MoveAfterThresholdWithinWindow) {
  partition_failover_options o;
  o.timeout_threshold = 3;
  o.timeout_window = 60s;
  partition_failover p{o};
  auto t = [&](policy_time at) {
    return p.on_failure(rid, "1", "East US", ppaf_trigger::client_timeout,
                        account_order, "East US", at);
  };
  EXPECT_EQ(t(t0).what, mk::none);
  EXPECT_EQ(t(t0 + 10s).what, mk::none);
  // The window ran out: counting starts over.
  EXPECT_EQ(t(t0 + 71s).what, mk::none);
  EXPECT_EQ(t(t0 + 72s).what, mk::none);
  EXPECT_EQ(p.override_for(rid, "1"), std::nullopt);
  auto m = t(t0 + 73s);
  EXPECT_EQ(m.what, mk::moved);
  EXPECT_EQ(m.region, "West US");
}

TEST(PartitionFailover, Success_ClearsTimeoutCount) {
  partition_failover_options o;
  o.timeout_threshold = 2;
  partition_failover p{o};
  p.on_failure(rid, "1", "East US", ppaf_trigger::client_timeout, account_order,
               "East US", t0);
  p.on_success(rid, "1", "East US", "East US");
  EXPECT_EQ(p.on_failure(rid, "1", "East US", ppaf_trigger::client_timeout,
                         account_order, "East US", t0 + 1s)
                .what,
            mk::none);
}

TEST(PartitionFailover, Bounded_LeastRecentlyUsedDropped) {
  partition_failover_options o;
  o.max_ranges = 3;
  partition_failover p{o};
  for (int i = 0; i < 5; ++i)
    p.on_failure(rid, std::to_string(i), "East US",
                 ppaf_trigger::write_forbidden, account_order, "East US", t0);
  EXPECT_EQ(p.size(), 3u);
  EXPECT_EQ(p.counters().evicted, 2u);
  EXPECT_EQ(p.override_for(rid, "0"), std::nullopt);
  EXPECT_EQ(p.override_for(rid, "4"), "West US");
}

// -- the attempt loop follows it -------------------------------------------

attempt_loop_config write_loop(partition_failover* p) {
  auto c = data_plane(op_kind::write);
  c.ppaf = p;
  return c;
}

struct write_op {
  attempt_loop loop;
  explicit write_op(partition_failover* p, std::string range = "1",
                    strings excluded = {})
      : loop(
            [&] {
              auto c = write_loop(p);
              c.excluded_regions = std::move(excluded);
              return c;
            }(),
            ladders) {
    loop.set_partition(rid, std::move(range));
  }
  attempt_plan next(const location_table& t, policy_time at = t0) {
    auto p = loop.next_attempt(t, at);
    EXPECT_TRUE(p) << p.error().what;
    return p ? *p : attempt_plan{};
  }
};

TEST(PartitionFailoverLoop, WriteForbidden_RetriedAtOnceInNextRegion_NoMark) {
  auto t = ppaf_table();
  partition_failover p;
  write_op w{&p};
  EXPECT_EQ(w.next(t).region, "East US");
  auto s = w.loop.on_result(http_answer(403, 3), t, t0, false);
  EXPECT_EQ(s.next, loop_next::attempt);
  EXPECT_EQ(s.delay, 0ms);
  EXPECT_FALSE(s.effects.marks());
  EXPECT_FALSE(s.effects.refresh_account);
  auto retry = w.next(t);
  EXPECT_EQ(retry.region, "West US");
  EXPECT_EQ(retry.endpoint, west);
  EXPECT_EQ(retry.ppaf_region, "West US");
  EXPECT_EQ(w.loop.on_result(http_answer(201), t, t0, false).next,
            loop_next::succeed);
  // The next write of range 1 goes to West at once; range 2 stays in East.
  write_op again{&p};
  EXPECT_EQ(again.next(t).region, "West US");
  write_op other{&p, "2"};
  EXPECT_EQ(other.next(t).region, "East US");
}

TEST(PartitionFailoverLoop, NoPreferredRegions_StillMoves) {
  auto t = ppaf_table(true, {});
  partition_failover p;
  write_op w{&p};
  EXPECT_EQ(w.next(t).region, "East US");
  w.loop.on_result(http_answer(403, 3), t, t0, false);
  EXPECT_EQ(w.next(t).region, "West US");
}

TEST(PartitionFailoverLoop, AccountOrder_IgnoresPreferenceAndExclusions) {
  // The client prefers North Europe and excludes West US: the service's
  // candidate order still is the account's, West first.
  auto t = ppaf_table(true, {"North Europe", "East US"});
  partition_failover p;
  write_op w{&p, "1", {"West US"}};
  EXPECT_EQ(w.next(t).region, "East US");
  w.loop.on_result(http_answer(403, 3), t, t0, false);
  EXPECT_EQ(w.next(t).region, "West US");
}

TEST(PartitionFailoverLoop, ServiceUnavailable_RetriedOnce) {
  auto t = ppaf_table();
  partition_failover p;
  write_op w{&p};
  w.next(t);
  auto s = w.loop.on_result(http_answer(503), t, t0, false);
  EXPECT_EQ(s.next, loop_next::attempt);
  EXPECT_EQ(w.next(t).region, "West US");
  // West 503 too: the range moves on, but this write is not retried by
  // PPAF a second time (the account-level policy decides).
  auto s2 = w.loop.on_result(http_answer(503), t, t0, false);
  EXPECT_EQ(p.override_for(rid, "1"), "North Europe");
  EXPECT_TRUE(s2.reason.find("per-partition failover") == std::string::npos)
      << s2.reason;
}

TEST(PartitionFailoverLoop, ServerTimeout_MovesRange_WriteNotRetriedByIt) {
  auto t = ppaf_table();
  partition_failover p;
  write_op w{&p};
  w.next(t);
  auto s = w.loop.on_result(http_answer(408), t, t0, false);
  EXPECT_TRUE(s.reason.find("per-partition failover") == std::string::npos)
      << s.reason;
  EXPECT_EQ(p.override_for(rid, "1"), "West US");
}

TEST(PartitionFailoverLoop, SessionAheadRead_HubRetryGoesToRangesOverride) {
  auto t = ppaf_table();
  partition_failover p;
  // The range's writes moved to North Europe (its hub now).
  p.on_failure(rid, "1", "East US", ppaf_trigger::write_forbidden,
               {"East US", "North Europe", "West US"}, "East US", t0);
  ASSERT_EQ(p.override_for(rid, "1"), "North Europe");
  auto c = data_plane(op_kind::read);
  c.ppaf = &p;
  attempt_loop read{c, ladders};
  read.set_partition(rid, "1");
  std::vector<std::string> went;
  attempt_plan last;
  for (int i = 0; i < 4; ++i) {
    auto plan = read.next_attempt(t, t0);
    ASSERT_TRUE(plan) << plan.error().what;
    went.push_back(plan->region);
    last = *plan;
    if (plan->hub_header) break;
    auto s = read.on_result(http_answer(404, 1002), t, t0, false);
    ASSERT_EQ(s.next, loop_next::attempt) << s.reason;
  }
  // The retry that asks for the hub goes to the range's hub, the override,
  // not to the account's write region.
  ASSERT_TRUE(last.hub_header) << ::testing::PrintToString(went);
  EXPECT_EQ(last.region, "North Europe") << ::testing::PrintToString(went);
  EXPECT_EQ(last.ppaf_region, "North Europe");
}

TEST(PartitionFailoverLoop, ClientTimeouts_WriteRetries_FollowTheMovedRange) {
  // With write retries a write that timed out goes again once per-partition
  // failover moved its range (the timeout that reached the threshold);
  // without them it is not retried (it may have been applied).
  for (bool retries : {false, true}) {
    auto t = ppaf_table();
    partition_failover_options o;
    o.timeout_threshold = 1;
    partition_failover p{o};
    auto c = write_loop(&p);
    c.write_retries = retries;
    attempt_loop w{c, ladders};
    w.set_partition(rid, "1");
    ASSERT_EQ(w.next_attempt(t, t0)->region, "East US");
    auto s = w.on_result(no_answer(true, true), t, t0 + 1s, false);
    EXPECT_EQ(p.override_for(rid, "1"), "West US") << retries;
    EXPECT_TRUE(w.maybe_applied());
    if (retries) {
      EXPECT_EQ(s.next, loop_next::attempt) << s.reason;
      EXPECT_EQ(w.next_attempt(t, t0 + 1s)->region, "West US");
    } else {
      EXPECT_NE(s.next, loop_next::attempt) << s.reason;
    }
  }
}

TEST(PartitionFailoverLoop, PpafOff_WriteForbidden_AccountLevelPath) {
  // PPCB alone (or PPAF off on the account) never overrides a single-write
  // write: the 403/3 takes the account-level path (mark, refresh).
  auto t = ppaf_table(false);
  partition_failover p;
  write_op w{&p};
  w.next(t);
  auto s = w.loop.on_result(http_answer(403, 3), t, t0, false);
  EXPECT_TRUE(s.effects.mark_write);
  EXPECT_TRUE(s.effects.refresh_account);
  EXPECT_EQ(p.size(), 0u);
}

TEST(PartitionFailoverLoop, Exhausted_FallsBackToAccountLevelPath) {
  auto acc = fixture_account(false);
  acc.per_partition_failover = true;
  acc.readable = {{"East US", east}, {"West US", west}};
  auto t = location_table(options(false, true, {})).with_account(acc, t0);
  partition_failover p;
  write_op w{&p};
  EXPECT_EQ(w.next(t).region, "East US");
  w.loop.on_result(http_answer(403, 3), t, t0, false);
  EXPECT_EQ(w.next(t).region, "West US");
  // West says no too, and East already did in this walk (it is not tried
  // again as "home"): every region failed; the account-level path takes
  // over.
  auto s = w.loop.on_result(http_answer(403, 3), t, t0, false);
  EXPECT_TRUE(s.effects.mark_write);
  EXPECT_EQ(p.size(), 0u);
}

} // namespace
} // namespace partition_failover_test
