// What the router holds per operation, and what it does when it cannot keep
// up: an answered operation leaves no deadline and no timer behind (the
// budgets share one sweep timer), a short budget still ends on time next to
// long ones, and past georoute.max-operations-in-flight a request is refused
// at once with `overloaded`.

#include "tests/integration/engine_fixture.hpp"

namespace {

using namespace georoute;
using namespace georoute::test;
using namespace std::chrono_literals;

class RouterLimits : public engine_test {
protected:
  size_t limit = 10000;

  void configure() override { settings.max_operations_in_flight = limit; }

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

  void everywhere(emulator::region_state state) {
    for (auto region : {"West US", "East US", "North Europe"})
      ASSERT_TRUE(emu->set_region_state(region, state));
  }
  void hang_everywhere(bool on) {
    everywhere(on ? emulator::region_state::hang
                  : emulator::region_state::online);
  }

  // Sends `n` reads of doc1 from their own actors (60 s caller timeout) and
  // returns once the router counts them live.
  std::shared_ptr<replies> start_reads(size_t n) {
    auto out = std::make_shared<replies>();
    auto before = stats().live;
    for (size_t i = 0; i < n; ++i)
      sys->spawn([=, router = eng->router()](caf::event_based_actor* self) {
        self->request(router, 60s, route_atom_v, point(data_op::read, "doc1"))
            .then([=](data_response&) { out->add("ok"); },
                  [=](caf::error& e) { out->add(describe(e)); });
      });
    wait_for([&] { return stats().live >= before + n; },
             "the reads to be live in the router");
    return out;
  }
};

TEST_F(RouterLimits, AnsweredOperations_LeaveNoDeadlineOrTimerBehind) {
  ASSERT_TRUE(route(point(data_op::create, "doc1")));
  for (int i = 0; i < 200; ++i) {
    auto r = route(point(data_op::read, "doc1"));
    ASSERT_TRUE(r) << sys->render(r.error());
  }
  auto s = stats();
  EXPECT_EQ(s.live, 0u);
  EXPECT_EQ(s.deadlines_tracked, 0u);
  // Every read had the default 60 s budget and a hedge time: one timer
  // serves the budgets and one the hedge times (a timer per read would
  // leave 201 pending for a minute).
  EXPECT_LE(s.deadline_timers_pending, 2u);
}

TEST_F(RouterLimits, ShortBudgetAfterLongOnes_EndsOnTime) {
  ASSERT_TRUE(route(point(data_op::create, "doc1")));
  // Every region refuses: reads fail over again and again (about 6 s of
  // retries with these settings), so only a budget ends one early.
  everywhere(emulator::region_state::offline_refuse);
  auto long_ones = start_reads(3); // 60 s budgets: the sweep timer is armed
  auto req = point(data_op::read, "doc1");
  req.options.budget = 400ms;
  auto r = route(req, 10s); // the caller would give up at 10 s
  ASSERT_FALSE(r);
  EXPECT_NE(r.error(), caf::sec::request_timeout)
      << "the 400 ms budget waited for the 60 s sweep";
  EXPECT_NE(context_of(r.error()).find("operation budget of 400ms spent"),
            std::string::npos)
      << describe(r.error());
  EXPECT_EQ(stats().deadlines_tracked, 3u);
  everywhere(emulator::region_state::online);
  wait_for([&] { return long_ones->all().size() == 3; }, "the long reads");
  EXPECT_EQ(stats().deadlines_tracked, 0u);
}

class RouterOverload : public RouterLimits {
protected:
  void configure() override {
    limit = 4;
    RouterLimits::configure();
  }
};

TEST_F(RouterOverload, BeyondTheLimit_RefusedAtOnce_ThenServedAgain) {
  ASSERT_TRUE(route(point(data_op::create, "doc1")));
  hang_everywhere(true);
  auto held = start_reads(4);
  auto r = route(point(data_op::read, "doc1"), 10s);
  ASSERT_FALSE(r);
  EXPECT_EQ(code_of(r.error()), errc::overloaded) << describe(r.error());
  EXPECT_NE(context_of(r.error()).find("georoute.max-operations-in-flight"),
            std::string::npos)
      << describe(r.error());
  EXPECT_EQ(stats().rejected_overloaded, 1u);
  // A cross-partition query is refused the same way.
  data_request q;
  q.op = data_op::query;
  q.collection_link = "dbs/d/colls/c";
  q.body = R"({"query":"SELECT * FROM c"})";
  auto qr = route(q, 10s);
  ASSERT_FALSE(qr);
  EXPECT_EQ(code_of(qr.error()), errc::overloaded) << describe(qr.error());
  hang_everywhere(false);
  wait_for([&] { return held->all().size() == 4; }, "the held reads");
  for (const auto& got : held->all())
    EXPECT_EQ(got, "ok");
  auto again = route(point(data_op::read, "doc1"));
  ASSERT_TRUE(again) << sys->render(again.error());
  EXPECT_EQ(stats().rejected_overloaded, 2u);
}

} // namespace
