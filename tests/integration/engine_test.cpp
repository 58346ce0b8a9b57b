// The engine as one unit against the emulator, in real time (issue 7, items
// 3 and 6): start spawns the graph, stop ends every actor, timer and
// connection with work in flight (callers get "engine stopped", the actor
// system destructs at once), and supervision restarts an actor that died
// and re-wires the others. Nothing asserts on elapsed time except the stop
// bound the issue sets (the actor system must go within a second).

#include "tests/integration/engine_fixture.hpp"

#include <atomic>

namespace {

using namespace georoute;
using namespace georoute::test;
using namespace std::chrono_literals;

using Engine = engine_test;

TEST_F(Engine, Start_SpawnsTheGraph_AndServes) {
  auto c = read_collection();
  ASSERT_TRUE(c) << sys->render(c.error());
  EXPECT_EQ(c->id, "c");
  auto r =
      ask<resolution>(eng->locations(), 5s, resolve_atom_v, resolve_input{});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->region, "West US");
  EXPECT_TRUE(eng->running());
}

TEST_F(Engine, Stop_WithWorkInFlight_CallersGetEngineStopped_SystemGoesAtOnce) {
  auto out = hung_caller();
  ASSERT_TRUE(eng->stop());
  EXPECT_FALSE(eng->running());
  wait_for([&] { return !out->all().empty(); }, "the caller's answer");
  auto got = out->all();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].rfind("shutting_down: engine stopped", 0), 0u) << got[0];
  // The background refresh tick (300 s) and the operation's deadline timer
  // (30 s) are pending; neither may keep the actor system alive.
  // A watchdog ends the process should the destructor hang: a test that
  // fails, not one that waits for ctest's timeout.
  std::promise<void> done;
  std::thread watchdog{[f = done.get_future()]() mutable {
    if (f.wait_for(10s) != std::future_status::ready) {
      std::cerr << "FAILED: the actor system still waits for actors 10 s "
                   "after engine::stop\n";
      std::_Exit(1);
    }
  }};
  auto t0 = std::chrono::steady_clock::now();
  sys.reset(); // on this thread, as an embedding program would
  done.set_value();
  watchdog.join();
  auto took = std::chrono::steady_clock::now() - t0;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(took);
  std::cout << "actor_system destructed " << ms.count()
            << " ms after engine::stop\n";
  EXPECT_LT(ms, 1000ms);
  EXPECT_TRUE(eng->stop()); // idempotent
}

TEST_F(Engine, RetryActorKilledMidFetch_WaiterFailsAtOnce_SuccessorServes) {
  auto out = hung_caller();
  auto old = eng->retry();
  kill(caf::actor_cast<caf::actor>(old));
  wait_for([&] { return !out->all().empty(); }, "the waiter's answer");
  auto got = out->all();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].rfind("collaborator_down: the retry actor", 0), 0u)
      << got[0];
  wait_for([&] { return eng->stats().restarts == 1; }, "the restart");
  EXPECT_NE(eng->retry(), old);
  set_all_regions(emulator::region_state::online);
  auto c = read_collection();
  ASSERT_TRUE(c) << sys->render(c.error());
  EXPECT_EQ(c->id, "c");
}

TEST_F(Engine, LocationCacheKilled_SuccessorLearnsTheAccount) {
  auto old = eng->locations();
  kill(caf::actor_cast<caf::actor>(old));
  wait_for([&] { return eng->stats().restarts == 1; }, "the restart");
  ASSERT_NE(eng->locations(), old);
  // The endpoint manager tells the new cache the account it holds.
  wait_for(
      [&] {
        auto r = ask<resolution>(eng->locations(), 5s, resolve_atom_v,
                                 resolve_input{});
        return r && r->region == "West US";
      },
      "the new location cache to know the account");
  auto c = read_collection();
  ASSERT_TRUE(c) << sys->render(c.error());
}

TEST_F(Engine, EndpointManagerKilled_SuccessorReadsTheAccount) {
  auto old = eng->endpoints();
  kill(caf::actor_cast<caf::actor>(old));
  wait_for([&] { return eng->stats().restarts == 1; }, "the restart");
  auto a = ask<database_account>(eng->endpoints(), 5s, account_atom_v);
  ASSERT_TRUE(a) << sys->render(a.error());
  EXPECT_EQ(a->readable.size(), 3u);
  auto c = read_collection();
  ASSERT_TRUE(c) << sys->render(c.error());
}

TEST_F(Engine, RouterKilled_QueryPlansWorkThroughTheSuccessor) {
  auto c = read_collection();
  ASSERT_TRUE(c) << sys->render(c.error());
  auto old = eng->router();
  kill(caf::actor_cast<caf::actor>(old));
  wait_for([&] { return eng->stats().restarts == 1; }, "the restart");
  query_plan_request q;
  q.collection_link = "dbs/d/colls/c";
  q.collection_rid = c->rid;
  q.query = "SELECT * FROM c ORDER BY c.n";
  // The retry actor learnt the successor with the re-wiring.
  caf::expected<query_plan> plan{caf::error{}};
  wait_for(
      [&] {
        plan = ask<query_plan>(eng->query_plans(), 5s, plan_atom_v, q);
        return static_cast<bool>(plan);
      },
      "a plan through the new router");
  EXPECT_FALSE(plan->info.order_by_expressions.empty());
}

// A caller that counts the request timeouts reaching its mailbox (CAF
// drops one whose request was answered, so only its enqueue can see it),
// and routes `n` reads one after another, each with timeout `t`.
class timeout_counting_caller : public caf::event_based_actor {
public:
  timeout_counting_caller(caf::actor_config& cfg, router_actor router, int n,
                          caf::duration t,
                          std::shared_ptr<std::atomic<int>> fired,
                          std::shared_ptr<std::promise<int>> done)
      : caf::event_based_actor(cfg), router_(std::move(router)), n_(n), t_(t),
        fired_(std::move(fired)), done_(std::move(done)) {}

  void enqueue(caf::mailbox_element_ptr x, caf::execution_unit* eu) override {
    if (x && x->mid.is_response() &&
        x->content().match_elements<caf::error>() &&
        x->content().get_as<caf::error>(0) == caf::sec::request_timeout)
      ++*fired_;
    caf::event_based_actor::enqueue(std::move(x), eu);
  }

  caf::behavior make_behavior() override {
    send(this, n_);
    return {[=](int left) {
      if (left == 0) return done_->set_value(answered_);
      auto next = [=] {
        ++answered_;
        send(this, left - 1);
      };
      request(router_, t_, route_atom_v, point(data_op::read, "x"))
          .then([=](data_response&) { next(); },
                [=](caf::error& e) {
                  // A missing document is an answer too; the caller's own
                  // timeout is not.
                  if (e == caf::sec::request_timeout)
                    send(this, left - 1);
                  else
                    next();
                });
    }};
  }

private:
  router_actor router_;
  int n_;
  caf::duration t_;
  int answered_ = 0;
  std::shared_ptr<std::atomic<int>> fired_;
  std::shared_ptr<std::promise<int>> done_;
};

// CAF 0.17 leaves a request timeout in its clock until its deadline even when
// the answer came (then fires it into nothing): memory in proportion to the
// rate times the callers' timeout. The router cancels the timeouts of the
// reads it answered (on CAF's clock in batches of 16, on the engine loop at
// once), so after 64 answered reads at most a few fire; without the cancel
// all 64 would.
TEST_F(Engine, AnsweredReads_TheirRequestTimeoutsDoNotFire) {
  auto run = [&](int n, std::chrono::milliseconds t, int& answered) {
    auto fired = std::make_shared<std::atomic<int>>(0);
    auto done = std::make_shared<std::promise<int>>();
    auto f = done->get_future();
    auto caller = sys->spawn<timeout_counting_caller>(
        eng->router(), n, caf::duration{t}, fired, done);
    answered = f.wait_for(30s) == std::future_status::ready ? f.get() : -1;
    return std::make_pair(caller, fired);
  };
  int answered = 0;
  // Metadata resolved and caches warm first.
  kill(caf::actor_cast<caf::actor>(run(1, 60s, answered).first));
  ASSERT_EQ(answered, 1);
  auto [caller, fired] = run(64, 2s, answered);
  ASSERT_EQ(answered, 64);
  // Past every deadline; the caller stays alive to count what reaches it.
  std::this_thread::sleep_for(2500ms);
  EXPECT_LT(fired->load(), 16) << "request timeouts fired after the answers";
  kill(caf::actor_cast<caf::actor>(caller));
}

TEST_F(Engine, StartWithoutAccountEndpoint_IsAValidationError) {
  auto s = settings;
  s.account_endpoint.clear();
  auto e = engine::start(*sys, s);
  ASSERT_FALSE(e);
  EXPECT_EQ(code_of(e.error()), errc::validation_error);
  EXPECT_NE(context_of(e.error()).find("georoute.account-endpoint"),
            std::string::npos);
}

} // namespace

// On the engine loop the router cancels a caller's request timeout as it
// answers (CAF 0.17 itself leaves it until its deadline): a caller's answered
// reads leave nothing in the loop's clock. The callers stay alive until the
// count is taken: an actor that ends takes its timeouts with it.
class EngineOnLoop : public engine_test {
protected:
  void configure() override {
    if (!engine_loop_chosen(false)) cfg.load<engine_loop>();
  }

  size_t held() {
    return dynamic_cast<engine_loop&>(sys->scheduler()).request_timeouts_held();
  }

  // `n` point reads of a missing document one after another from an actor
  // on the loop, each with a 60 s timeout; `answered` is how many were
  // answered. The actor stays alive (the caller kills it).
  caf::actor read_from_the_loop(int n, int& answered) {
    auto done = std::make_shared<std::promise<int>>();
    auto f = done->get_future();
    auto router = eng->router();
    auto caller = sys->spawn([=](caf::event_based_actor* self) {
      auto count = std::make_shared<int>(0);
      self->send(self, n);
      return caf::behavior{[=](int left) {
        if (left == 0) return done->set_value(*count);
        self->request(router, 60s, route_atom_v, point(data_op::read, "x"))
            .then(
                [=](data_response&) {
                  ++*count;
                  self->send(self, left - 1);
                },
                [=](caf::error& e) {
                  // A missing document is an answer too; the caller's
                  // own timeout is not.
                  if (e != caf::sec::request_timeout) ++*count;
                  self->send(self, left - 1);
                });
      }};
    });
    answered = f.wait_for(30s) == std::future_status::ready ? f.get() : -1;
    return caf::actor_cast<caf::actor>(caller);
  }
};

TEST_F(EngineOnLoop, AnsweredReads_LeaveNoRequestTimeoutBehind) {
  int answered = 0;
  kill(read_from_the_loop(1, answered)); // metadata resolved, caches warm
  ASSERT_EQ(answered, 1);
  auto before = held();
  auto caller = read_from_the_loop(20, answered);
  ASSERT_EQ(answered, 20);
  // Background refreshes may hold one or two of their own meanwhile; 20
  // answered reads whose timeouts stayed would hold 20 more.
  EXPECT_LE(held(), before + 2) << "held before the reads: " << before;
  kill(caller);
}
