// The operation driver's own contract (actors/operation_driver.hpp), on a
// plane that does nothing of its own: what the driver decides whichever
// plane runs on it. Virtual time; every test asserts between steps.

#include "georoute/actors/operation_driver.hpp"
#include "georoute/actors/policy/loop_config.hpp"
#include "georoute/actors/policy/snapshot_holder.hpp"
#include "tests/actors/actor_fixture.hpp"

#include <caf/stateful_actor.hpp>

namespace driver_toy {

// The plane's private messages.
struct attempt_msg {
  uint64_t op = 0;
  uint32_t gen = 0;
};
struct tick_msg {
  caf::actor_clock::time_point due;
};
struct http_msg {
  uint64_t op = 0;
  uint32_t arm = 0;
  georoute::transport::outcome outcome;
};

} // namespace driver_toy

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(driver_toy::attempt_msg)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(driver_toy::tick_msg)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(driver_toy::http_msg)

namespace driver_toy {

using namespace georoute;
using namespace georoute::test;
using namespace std::chrono_literals;

using go_atom = caf::atom_constant<caf::atom("go")>;
using poke_atom = caf::atom_constant<caf::atom("poke")>;
using figures_atom = caf::atom_constant<caf::atom("figures")>;
constexpr go_atom go_atom_v = go_atom{};
constexpr poke_atom poke_atom_v = poke_atom{};
constexpr figures_atom figures_atom_v = figures_atom{};

template <end_kind End>
struct toy_state;

template <end_kind End>
using toy_self = caf::stateful_actor<toy_state<End>>*;

struct toy_payload {
  caf::response_promise rp;
};

// A plane with nothing of its own: a read of "/toy", answered "ok" on
// success and with the loop's reason otherwise.
template <end_kind End>
struct toy_plane {
  using self_ptr = toy_self<End>;
  using payload = toy_payload;
  using late_wire = std::string;
  using attempt_msg = driver_toy::attempt_msg;
  using tick_msg = driver_toy::tick_msg;
  using http_msg = driver_toy::http_msg;
  using op = driven_op<toy_payload>;
  static constexpr end_kind end = End;

  self_ptr self = nullptr;

  static transport::attempt wire(const std::string&, const attempt_plan& p) {
    transport::attempt a;
    a.kind = transport::attempt_kind::resource_read;
    a.resource = "toy";
    a.endpoint = p.endpoint;
    a.timeout = p.timeout;
    return a;
  }
  static transport::attempt wire(const op&, const attempt_plan& p) {
    return wire(std::string{}, p);
  }
  static std::string late_wire_of(const op&) { return "toy"; }
  template <class Any>
  effect_origin origin(const Any&, const transport::outcome* why,
                       bool after_end) const {
    effect_origin from;
    from.why = why;
    from.after_end = after_end;
    return from;
  }
  bool defer_primary(op&) { return false; }
  void before_attempt(uint64_t, op&) {}
  void on_sent(uint64_t, op&, const attempt_plan&) {}
  bool on_answer(uint64_t, op&, uint32_t, transport::outcome&) { return false; }
  void on_hedge_due(uint64_t, op&) {}
  void on_arm_answer(uint64_t, op&, uint32_t, transport::outcome&) {}
  void on_primary_success(uint64_t id, op&, transport::outcome&) {
    self->state.driver.finish(id, std::string{"ok"});
  }
  primary_hedge on_primary_failure(uint64_t, op&, const transport::outcome&,
                                   const loop_step&) {
    return primary_hedge::as_loop_says;
  }
  void hedge_takes_over(uint64_t, op&) {}
  void on_metadata_step(uint64_t id, op&, const loop_step& s) {
    self->state.driver.finish(id, "failed: " + s.reason);
  }
  void on_final_failure(uint64_t id, op&, const transport::outcome&,
                        const loop_step& s) {
    self->state.driver.finish(id, "failed: " + s.reason);
  }
  void on_refused(uint64_t id, op&, const std::string& why) {
    self->state.driver.finish(id, "refused: " + why);
  }
  void on_end_reached(uint64_t id, op&) {
    self->state.driver.finish(id, std::string{"ended"});
  }
  void abandon_arms(uint64_t, op&, bool) {}
  void on_late_answer(uint32_t, const transport::outcome&) {}
  void reply(uint64_t, op& o, std::string v) { o.rp.deliver(v); }
  void on_new_table() {}
};

struct toy_with {
  location_cache_actor locations;
  endpoint_manager_actor endpoints;
  transport::port_ptr http;
};

template <end_kind End>
struct toy_state {
  toy_with with;
  timeout_ladders ladders; // the loops refer to them
  snapshot_holder snap;
  operation_driver<toy_plane<End>> driver;
  driver_counters counts;
  struct {
    uint64_t attempts = 0;
  } stats;
};

template <end_kind End>
caf::behavior toy_actor(toy_self<End> self, toy_with with) {
  auto& st = self->state;
  st.with = std::move(with);
  st.driver.bind(self);
  self->set_down_handler([=](caf::down_msg& dm) {
    self->state.driver.on_endpoints_down(dm.source);
  });
  if (st.with.endpoints) self->monitor(st.with.endpoints);
  auto new_table = [self] { self->state.driver.on_new_table(); };
  subscribe_to_tables(self, new_table);
  return {
      // An operation ending after `end_ms`.
      [=](go_atom, int64_t end_ms) {
        auto rp = self->make_response_promise();
        loop_environment env;
        auto loop = attempt_loop{data_plane_loop(request_kind::document_read,
                                                 op_kind::read, false, {}, env),
                                 self->state.ladders};
        auto& d = self->state.driver;
        auto id =
            d.admit({rp}, std::chrono::milliseconds{end_ms}, std::move(loop));
        d.schedule(id, *d.find(id), 0ms);
        return rp;
      },
      // The test asks for the next attempt of `id` after `delay_ms`.
      [=](poke_atom, uint64_t id, int64_t delay_ms) {
        auto& d = self->state.driver;
        if (auto* op = d.find(id))
          d.schedule(id, *op, std::chrono::milliseconds{delay_ms});
      },
      [=](figures_atom) {
        const auto& st = self->state;
        return std::vector<uint64_t>{st.driver.live(),
                                     st.driver.late_out(),
                                     st.counts.decisions,
                                     st.counts.decisions_completed,
                                     st.counts.decisions_after_end,
                                     st.counts.marks,
                                     st.counts.late_answers,
                                     st.driver.deadlines_tracked()};
      },
      [=](snapshot_atom, location_snapshot& s) {
        on_pushed_table(self, s, new_table);
      },
      [=](attempt_msg m) { self->state.driver.on_attempt(m.op, m.gen); },
      [=](tick_msg m) { self->state.driver.on_tick(m.due); },
      [=](http_msg& m) { self->state.driver.on_http(m.op, m.arm, m.outcome); },
  };
}

struct figures {
  uint64_t live, late, decisions, completed, after_end, marks, late_answers,
      deadlines;
};

class Driver : public actor_test {
protected:
  std::shared_ptr<refresh_log> refreshes = std::make_shared<refresh_log>();
  std::shared_ptr<table_log> tables = std::make_shared<table_log>();
  caf::actor locations_;
  caf::actor endpoints_;
  caf::actor toy;

  template <end_kind End>
  void start() {
    auto locations = sys.spawn(fake_location_cache, tables);
    auto endpoints = sys.spawn(fake_endpoint_manager, refreshes);
    locations_ = caf::actor_cast<caf::actor>(locations);
    endpoints_ = caf::actor_cast<caf::actor>(endpoints);
    toy = sys.spawn(toy_actor<End>, toy_with{locations, endpoints, http});
    run();
  }

  void TearDown() override {
    for (const auto& a : {toy, locations_, endpoints_})
      if (a) self->send_exit(a, caf::exit_reason::user_shutdown);
    run();
  }

  // Starts an operation; its answer goes to the hidden scoped actor.
  caf::response_handle<caf::blocking_actor, caf::message, true>
  go(std::chrono::milliseconds end) {
    auto h = self->request(toy, caf::infinite, go_atom_v,
                           static_cast<int64_t>(end.count()));
    run();
    return h;
  }

  figures get() {
    figures f{};
    auto h = self->request(toy, caf::infinite, figures_atom_v);
    run();
    receive_now(
        self, h,
        [&](std::vector<uint64_t>& v) {
          f = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]};
        },
        [](caf::error&) { ADD_FAILURE() << "figures failed"; });
    return f;
  }

  void answer(size_t i, transport::outcome o) {
    http->respond(i, std::move(o));
    run();
  }
};

// A message of an earlier wait moves nothing: after a throttled attempt
// the operation waits 5 s, and an attempt asked for before that (1 s) is
// not sent when it comes.
TEST_F(Driver, AttemptOfAnEarlierWait_SendsNothing) {
  start<end_kind::hard>();
  auto h = go(60s);
  ASSERT_EQ(http->count(), 1u);
  // Operation 1 waits for its attempt; an older attempt message is on its
  // way (1 s), then the operation's own answer decides a 5 s pause.
  self->send(toy, poke_atom_v, uint64_t{1}, int64_t{1000});
  run();
  auto throttled = status_response(429);
  throttled.retry_after_ms = 5000;
  answer(0, throttled);
  ASSERT_EQ(http->count(), 1u);
  advance(1s); // the older message comes: not this wait's
  EXPECT_EQ(http->count(), 1u);
  advance(4s); // the pause the answer asked for
  ASSERT_EQ(http->count(), 2u);
  answer(1, ok_response("{}"));
  receive_now(
      self, h, [](std::string& s) { EXPECT_EQ(s, "ok"); },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
}

// A budget lets the attempt in flight answer: its failover decision runs
// and ends the operation, and nothing new starts.
TEST_F(Driver, Budget_WaitsForTheAttemptInFlight_ItsDecisionRuns) {
  start<end_kind::budget>();
  auto h = go(1s);
  ASSERT_EQ(http->count(), 1u);
  advance(1s);
  EXPECT_TRUE(self->mailbox().empty()) << "answered before the attempt";
  EXPECT_EQ(get().live, 1u);
  answer(0, transport_failure(transport::failure::refused));
  auto f = get();
  EXPECT_EQ(f.live, 0u);
  EXPECT_EQ(f.marks, 1u);
  EXPECT_EQ(f.after_end, 1u);
  EXPECT_EQ(f.late, 0u);
  EXPECT_EQ(f.deadlines, 0u);
  EXPECT_EQ(http->count(), 1u); // no attempt after the budget
  receive_now(
      self, h,
      [](std::string& s) { EXPECT_EQ(s.rfind("failed: ", 0), 0u) << s; },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
}

// A hard deadline ends the operation at once; the attempt in flight is
// abandoned, not forgotten: its failure still marks when it comes.
TEST_F(Driver, HardDeadline_EndsAtOnce_TheLateFailureStillMarks) {
  start<end_kind::hard>();
  auto h = go(1s);
  ASSERT_EQ(http->count(), 1u);
  advance(1s);
  receive_now(
      self, h, [](std::string& s) { EXPECT_EQ(s, "ended"); },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  auto f = get();
  EXPECT_EQ(f.live, 0u);
  EXPECT_EQ(f.late, 1u);
  EXPECT_EQ(f.marks, 0u);
  answer(0, transport_failure(transport::failure::refused));
  f = get();
  EXPECT_EQ(f.late, 0u);
  EXPECT_EQ(f.late_answers, 1u);
  EXPECT_EQ(f.marks, 1u);
  EXPECT_EQ(f.after_end, 1u);
  EXPECT_EQ(f.decisions, f.completed);
}

// An operation that waits for an account refresh goes on only once the
// refresh answered, on the table it produced, after the decision's pause.
TEST_F(Driver, Refresh_TheNextAttemptWaitsForIt) {
  refreshes->hold = true;
  start<end_kind::hard>();
  auto h = go(60s);
  // A reset before the request went out: it keeps the failover pause
  // (a refused connection goes on at once).
  answer(0, transport_failure(transport::failure::reset));
  EXPECT_EQ(refreshes->total(), 1);
  advance(5s);
  EXPECT_EQ(http->count(), 1u) << "went on without the refresh";
  // The endpoint manager goes down: the wait ends, after the decision's
  // pause (reads wait 1 s).
  self->send_exit(endpoints_, caf::exit_reason::kill);
  run();
  EXPECT_EQ(http->count(), 1u);
  advance(1s);
  ASSERT_EQ(http->count(), 2u);
  EXPECT_EQ(http->at(1).request.endpoint, east_ep);
  answer(1, ok_response("{}"));
  receive_now(
      self, h, [](std::string& s) { EXPECT_EQ(s, "ok"); },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
}

// Before a first table nothing is sent; the first table, pushed, lets the
// operation go.
TEST_F(Driver, FirstTable_ReleasesWhatWaitedForIt) {
  tables->hold_subscriptions = true;
  start<end_kind::hard>();
  auto h = go(60s);
  EXPECT_EQ(http->count(), 0u);
  self->send(locations_, push_atom_v);
  run();
  ASSERT_EQ(http->count(), 1u);
  EXPECT_EQ(http->at(0).request.endpoint, west_ep);
  answer(0, ok_response("{}"));
  receive_now(
      self, h, [](std::string& s) { EXPECT_EQ(s, "ok"); },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
}

} // namespace driver_toy
