// Cross-region hedging of reads against the emulator: a hung primary region
// costs a read one threshold (the fixture's read ladder is 150 ms, so the
// default threshold is 75 ms), a fast one is never hedged, a request can
// turn it off, and the budget bounds it. Diagnostics name every arm.

#include "tests/integration/engine_fixture.hpp"

namespace {

using namespace georoute;
using namespace georoute::test;
using namespace std::chrono_literals;

class Hedging : public engine_test {
protected:
  std::function<void(config::settings&)> tweak;

  void configure() override {
    settings.hedging.enabled = true; // on by default; pinned here
    if (tweak) tweak(settings);
  }

  void restart() {
    TearDown();
    start();
  }

  caf::expected<data_response> route(data_request r,
                                     caf::timespan timeout = 10s) {
    return ask<data_response>(eng->router(), timeout, route_atom_v,
                              std::move(r));
  }

  router_stats stats() {
    auto s = ask<router_stats>(eng->router(), 5s, stats_atom_v);
    EXPECT_TRUE(s);
    return s ? *s : router_stats{};
  }

  static std::vector<std::string> arms_of(const diagnostics& d) {
    std::vector<std::string> out;
    for (const auto& a : d.attempts)
      out.push_back("arm " + std::to_string(a.arm) + " " + a.region + " " +
                    (a.status            ? std::to_string(a.status)
                     : a.failure.empty() ? "-"
                                         : a.failure) +
                    (a.winner ? " winner" : ""));
    return out;
  }
};

TEST_F(Hedging, PrimaryHangs_HedgeInNextRegionWins) {
  ASSERT_TRUE(route(point(data_op::create, "doc1")));
  ASSERT_TRUE(emu->set_region_state("West US", emulator::region_state::hang));
  auto r = route(point(data_op::read, "doc1"));
  ASSERT_TRUE(r) << sys->render(r.error());
  // West's attempt was still out when East's answer won.
  EXPECT_EQ(arms_of(r->diag),
            (std::vector<std::string>{"arm 0 West US -",
                                      "arm 1 East US 200 winner"}));
  EXPECT_EQ(r->diag.hedges, 1u);
  EXPECT_EQ(r->diag.abandoned_arms, 1u);
  EXPECT_GT(r->hedge_charge, 0.0);
  EXPECT_DOUBLE_EQ(r->hedge_charge, r->diag.attempts.back().request_charge);
  auto s = stats();
  EXPECT_EQ(s.hedges_started, 1u);
  EXPECT_EQ(s.hedges_won, 1u);
  // West's abandoned attempt goes on up its ladder and finds West silent:
  // West is marked, as without hedging, and the next read goes to East
  // without waiting for a hedge.
  wait_for([&] { return stats().marks >= 1; }, "West to be marked");
  EXPECT_GE(stats().late_answers, 1u);
  auto next = route(point(data_op::read, "doc1"));
  ASSERT_TRUE(next) << sys->render(next.error());
  EXPECT_EQ(arms_of(next->diag),
            (std::vector<std::string>{"arm 0 East US 200"}));
}

// Arm 0 gives up long before the first hedge is due (a 408, which its own
// loop does not retry): the hedge's regions are chosen then, and the next
// region is asked at once instead of the read failing.
TEST_F(Hedging, PrimaryGivesUpBeforeTheThreshold_HedgeStartsAtOnce) {
  ASSERT_TRUE(route(point(data_op::create, "doc1")));
  emulator::fault_rule f;
  f.region = "West US";
  f.operation = "read";
  f.status = 408;
  f.count = 1;
  emu->control().add_fault(f);
  auto r = route(point(data_op::read, "doc1"));
  ASSERT_TRUE(r) << sys->render(r.error());
  EXPECT_EQ(arms_of(r->diag),
            (std::vector<std::string>{"arm 0 West US 408",
                                      "arm 1 East US 200 winner"}));
  EXPECT_EQ(r->diag.hedges, 1u);
}

TEST_F(Hedging, FastPrimary_NeverHedged) {
  ASSERT_TRUE(route(point(data_op::create, "doc1")));
  for (int i = 0; i < 50; ++i) {
    auto r = route(point(data_op::read, "doc1"));
    ASSERT_TRUE(r) << sys->render(r.error());
    EXPECT_EQ(r->diag.hedges, 0u);
  }
  EXPECT_EQ(stats().hedges_started, 0u);
}

TEST_F(Hedging, RequestTurnsItOff_ReadClimbsTheLadder) {
  ASSERT_TRUE(route(point(data_op::create, "doc1")));
  ASSERT_TRUE(emu->set_region_state("West US", emulator::region_state::hang));
  auto req = point(data_op::read, "doc1");
  req.options.hedge = 0;
  auto r = route(req);
  ASSERT_TRUE(r) << sys->render(r.error());
  EXPECT_EQ(arms_of(r->diag), (std::vector<std::string>{"arm 0 West US timeout",
                                                        "arm 0 West US timeout",
                                                        "arm 0 East US 200"}));
  EXPECT_EQ(stats().hedges_started, 0u);
}

TEST_F(Hedging, Writes_NeverHedged) {
  ASSERT_TRUE(emu->set_region_state("West US", emulator::region_state::hang));
  auto r = route(point(data_op::create, "doc2"));
  ASSERT_FALSE(r); // a single-write account: the create waited on West
  EXPECT_EQ(stats().hedges_started, 0u);
}

TEST_F(Hedging, SingleWriteAccount_OptedInUpsert_NotHedged) {
  tweak = [](config::settings& s) { s.hedging.hedge_writes = true; };
  restart();
  ASSERT_TRUE(route(point(data_op::create, "doc1")));
  ASSERT_TRUE(emu->set_region_state("West US", emulator::region_state::hang));
  auto req = point(data_op::upsert, "doc1");
  req.options.hedge = 1;
  auto r = route(req);
  ASSERT_FALSE(r); // the one write region hung
  EXPECT_EQ(stats().hedges_started, 0u);
}

// Writes on a multi-write account: hedged only when opted in (in the
// settings or by the request), and only those whose second copy cannot
// change what the first did.
class HedgedWrites : public Hedging {
protected:
  void SetUp() override {
    emu_options.engine.multi_write = true;
    Hedging::SetUp();
  }
};

TEST_F(HedgedWrites, OptedInSettings_PrimaryHangs_UpsertAnsweredByNextRegion) {
  tweak = [](config::settings& s) { s.hedging.hedge_writes = true; };
  restart();
  ASSERT_TRUE(route(point(data_op::create, "doc1")));
  ASSERT_TRUE(emu->set_region_state("West US", emulator::region_state::hang));
  auto r = route(point(data_op::upsert, "doc1"));
  ASSERT_TRUE(r) << sys->render(r.error());
  EXPECT_EQ(arms_of(r->diag),
            (std::vector<std::string>{"arm 0 West US -",
                                      "arm 1 East US 200 winner"}));
  EXPECT_EQ(r->diag.hedges, 1u);
  EXPECT_GT(r->hedge_charge, 0.0);
  auto s = stats();
  EXPECT_EQ(s.hedges_started, 1u);
  EXPECT_EQ(s.hedges_won, 1u);
  // An unconditional replace is as safe as an upsert.
  auto replaced = route(point(data_op::replace, "doc1"));
  ASSERT_TRUE(replaced) << sys->render(replaced.error());
  EXPECT_EQ(replaced->diag.attempts.back().region, "East US");
}

TEST_F(HedgedWrites, RequestOptsIn_UpsertHedged_OthersNot) {
  ASSERT_TRUE(route(point(data_op::create, "doc1")));
  ASSERT_TRUE(emu->set_region_state("West US", emulator::region_state::hang));
  auto opted = point(data_op::upsert, "doc1");
  opted.options.hedge = 1;
  auto r = route(opted);
  ASSERT_TRUE(r) << sys->render(r.error());
  EXPECT_EQ(r->diag.hedges, 1u);
  EXPECT_EQ(r->diag.attempts.back().region, "East US");
  // Not opted in (the default): the upsert is not hedged.
  auto plain = route(point(data_op::upsert, "doc1"));
  if (plain) {
    EXPECT_EQ(plain->diag.hedges, 0u);
  }
  EXPECT_EQ(stats().hedges_started, 1u);
}

TEST_F(HedgedWrites, OptedIn_CreateRemoveAndConditionalWrites_NeverHedged) {
  tweak = [](config::settings& s) { s.hedging.hedge_writes = true; };
  auto conditional = point(data_op::replace, "doc1");
  conditional.options.if_match = "\"some-etag\"";
  auto conditional_upsert = point(data_op::upsert, "doc1");
  conditional_upsert.options.if_match = "\"some-etag\"";
  for (auto req :
       {point(data_op::create, "doc2"), point(data_op::remove, "doc1"),
        conditional, conditional_upsert}) {
    SCOPED_TRACE("data_op " + std::to_string(static_cast<int>(req.op)) +
                 (req.options.if_match.empty() ? "" : " if-match"));
    // A fresh engine each: West not yet marked, so each write meets the
    // hang itself.
    restart();
    ASSERT_TRUE(route(point(data_op::create, "doc1")));
    ASSERT_TRUE(emu->set_region_state("West US", emulator::region_state::hang));
    req.options.hedge = 1;
    auto r = route(req);
    ASSERT_FALSE(r) << "West hung, and the write was not hedged elsewhere";
    EXPECT_EQ(stats().hedges_started, 0u);
  }
}

TEST_F(Hedging, BudgetRefuses_NoHedge) {
  tweak = [](config::settings& s) {
    s.hedging.budget.share = 0;
    s.hedging.budget.min_allowance = 0;
  };
  restart();
  ASSERT_TRUE(route(point(data_op::create, "doc1")));
  ASSERT_TRUE(emu->set_region_state("West US", emulator::region_state::hang));
  auto r = route(point(data_op::read, "doc1"));
  ASSERT_TRUE(r) << sys->render(r.error());
  EXPECT_EQ(r->diag.hedges, 0u);
  auto s = stats();
  EXPECT_EQ(s.hedges_started, 0u);
  EXPECT_GE(s.hedges_refused, 1u);
}

TEST_F(Hedging, DisabledInSettings_NoHedge) {
  tweak = [](config::settings& s) { s.hedging.enabled = false; };
  restart();
  ASSERT_TRUE(route(point(data_op::create, "doc1")));
  ASSERT_TRUE(emu->set_region_state("West US", emulator::region_state::hang));
  auto r = route(point(data_op::read, "doc1"));
  ASSERT_TRUE(r) << sys->render(r.error());
  EXPECT_EQ(r->diag.hedges, 0u);
  EXPECT_EQ(stats().hedges_started, 0u);
}

} // namespace
