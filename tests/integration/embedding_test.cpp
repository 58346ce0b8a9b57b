// Embedding georoute in an actor server (issue 21, item 4), against the
// emulator on 127.0.0.1, on a scheduler with ONE worker: the case in which a
// blocking call made from an actor holds the only worker the engine needs.
// An actor starts an engine, stops one by message and gets the answer once
// it is down; a host monitors the supervisor or links to it; the engine
// refuses a key the transport cannot decode in the words check-config uses.

#include "georoute/config/georoute_config.hpp"
#include "tests/integration/engine_fixture.hpp"
#include "tests/threads_named.hpp"

namespace {

using namespace georoute;
using namespace georoute::test;
using namespace std::chrono_literals;

class Embedding : public engine_test {
protected:
  Embedding() { cfg.set("scheduler.max-threads", 1); }

  // Runs `sys.reset()` under a watchdog and returns how long it took.
  std::chrono::milliseconds destroy_system() {
    std::promise<void> done;
    std::thread watchdog{[f = done.get_future()]() mutable {
      if (f.wait_for(10s) != std::future_status::ready) {
        std::cerr << "FAILED: the actor system still waits for actors 10 s "
                     "after the engine answered its stop\n";
        std::_Exit(1);
      }
    }};
    auto t0 = std::chrono::steady_clock::now();
    sys.reset();
    done.set_value();
    watchdog.join();
    return std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - t0);
  }
};

// Sends (stop_atom) to the supervisor with its own timeout and records the
// answer: "ok, down" if the engine was down when it came (as the protocol
// says), "ok, still running" if not, or the error.
caf::behavior stopper(caf::event_based_actor* self, engine_supervisor_actor sup,
                      const engine* eng, std::shared_ptr<replies> out) {
  self->request(sup, 5s, stop_atom_v)
      .then(
          [=](caf::ok_atom) {
            out->add(eng->running() ? "ok, still running" : "ok, down");
            self->quit();
          },
          [=](caf::error& e) {
            out->add(describe(e));
            self->quit();
          });
  return {[](caf::ok_atom) {}};
}

TEST_F(Embedding, StopByMessage_FromAnActorOnOneWorker_AnswersOnceDown) {
  auto hung = hung_caller();
  auto out = std::make_shared<replies>();
  sys->spawn(stopper, eng->supervisor(), &*eng, out);
  wait_for([&] { return !out->all().empty(); }, "the stop's answer");
  ASSERT_EQ(out->all(), std::vector<std::string>{"ok, down"});
  // The answer came after the engine was down: the caller with work in
  // flight has its answer, and nothing keeps the actor system alive.
  EXPECT_FALSE(eng->running());
  wait_for([&] { return !hung->all().empty(); }, "the hung caller's answer");
  EXPECT_EQ(hung->all().at(0).rfind("shutting_down: engine stopped", 0), 0u)
      << hung->all().at(0);
  auto ms = destroy_system();
  std::cout << "actor_system destructed " << ms.count()
            << " ms after the stop's answer\n";
  EXPECT_LT(ms, 1000ms);
  EXPECT_TRUE(eng->stop()); // after a stop by message: at once, true
}

// On CAF's default scheduler the router runs on a home thread of the
// engine's own (actors/home_thread.hpp), which ends with the engine, by
// either way of stopping; on the engine loop there is none.
TEST_F(Embedding, HomeThread_OnCafsScheduler_EndsWithAStopByMessage) {
  const size_t running = engine_loop_chosen(false) ? 0 : 1;
  EXPECT_EQ(threads_named("georoute.home"), running);
  auto out = std::make_shared<replies>();
  sys->spawn(stopper, eng->supervisor(), &*eng, out);
  wait_for([&] { return !out->all().empty(); }, "the stop's answer");
  ASSERT_EQ(out->all(), std::vector<std::string>{"ok, down"});
  EXPECT_EQ(threads_named("georoute.home"), 0u);
}

TEST_F(Embedding, HomeThread_OnCafsScheduler_EndsWithABlockingStop) {
  const size_t running = engine_loop_chosen(false) ? 0 : 1;
  // A read through the router first: nothing was written, so a not-found
  // that came from a region (through the home thread's sockets).
  auto r = ask<data_response>(eng->router(), 10s, route_atom_v,
                              point(data_op::read, "nope"));
  ASSERT_FALSE(r);
  EXPECT_EQ(code_of(r.error()), errc::not_found) << sys->render(r.error());
  EXPECT_EQ(threads_named("georoute.home"), running);
  EXPECT_TRUE(eng->stop());
  EXPECT_EQ(threads_named("georoute.home"), 0u);
}

// With the home thread off the router runs on CAF's workers and the client
// on io threads of its own.
class EmbeddingNoHome : public Embedding {
protected:
  void configure_engine(engine_options& eo) override { eo.home_thread = false; }
};

TEST_F(EmbeddingNoHome, HomeThreadOff_RouterServes_NoHomeThread) {
  auto r = ask<data_response>(eng->router(), 10s, route_atom_v,
                              point(data_op::read, "nope"));
  ASSERT_FALSE(r);
  EXPECT_EQ(code_of(r.error()), errc::not_found) << sys->render(r.error());
  EXPECT_EQ(threads_named("georoute.home"), 0u);
  EXPECT_TRUE(eng->stop());
}

TEST_F(Embedding, BlockingStop_AfterAStopByMessage_IsTrue) {
  auto out = std::make_shared<replies>();
  sys->spawn(stopper, eng->supervisor(), &*eng, out);
  EXPECT_TRUE(eng->stop()); // whichever comes first, both see it down
  wait_for([&] { return !out->all().empty(); }, "the stop's answer");
  auto got = out->all().at(0);
  // The message either stopped the engine or met a supervisor already gone.
  EXPECT_TRUE(got == "ok, down" ||
              got.find("request_receiver_down") != std::string::npos)
      << got;
  EXPECT_FALSE(eng->running());
}

// An actor that starts its own engine, reads the collection through it,
// stops it by message and reports. With a blocking start or stop it would
// hold the only worker its engine's actors need.
struct owner_state {
  std::optional<engine> eng;
};

caf::behavior engine_owner(caf::stateful_actor<owner_state>* self,
                           config::settings settings,
                           std::shared_ptr<replies> out) {
  auto started = engine::start(self->system(), settings);
  if (!started) {
    out->add("start: " + self->system().render(started.error()));
    self->quit();
    return {};
  }
  self->state.eng.emplace(std::move(*started));
  auto& eng = *self->state.eng;
  self->request(eng.collections(), 5s, by_name_atom_v,
                std::string{"dbs/d/colls/c"}, false, std::string{})
      .then(
          [=](collection_info& c) {
            out->add("read " + c.id);
            self->request(self->state.eng->supervisor(), 5s, stop_atom_v)
                .then(
                    [=](caf::ok_atom) {
                      out->add(self->state.eng->running() ? "still running"
                                                          : "stopped");
                      self->quit();
                    },
                    [=](caf::error& e) {
                      out->add("stop: " + describe(e));
                      self->quit();
                    });
          },
          [=](caf::error& e) {
            out->add("read: " + describe(e));
            self->quit();
          });
  return {[](caf::ok_atom) {}};
}

TEST_F(Embedding, AnActorStartsAndStopsAnEngine_OnOneWorker) {
  auto out = std::make_shared<replies>();
  sys->spawn(engine_owner, settings, out);
  wait_for([&] { return out->all().size() >= 2; }, "the owner's report");
  EXPECT_EQ(out->all(), (std::vector<std::string>{"read c", "stopped"}));
}

TEST_F(Embedding, Supervisor_AMonitorSeesTheEngineGo) {
  caf::scoped_actor self{*sys};
  auto sup = eng->supervisor();
  ASSERT_TRUE(sup);
  self->monitor(sup);
  ASSERT_TRUE(eng->stop());
  bool down = false;
  self->receive(
      [&](const caf::down_msg& dm) {
        down = dm.source == sup.address() &&
               dm.reason == caf::exit_reason::user_shutdown;
      },
      caf::after(5s) >> [] {});
  EXPECT_TRUE(down);
  EXPECT_FALSE(eng->supervisor()); // null after stop()
}

// A host actor linked to the supervisor: the engine lives as long as it.
// (Not `exit_reason::kill`: CAF makes that fatal through a link too, so the
// supervisor would die without stopping the engine.)
TEST_F(Embedding, Supervisor_ALinkedHostThatExitsStopsTheEngine) {
  auto sup = eng->supervisor();
  auto host = sys->spawn([sup](caf::event_based_actor* self) {
    self->link_to(sup);
    return caf::behavior{[](caf::ok_atom) {}};
  });
  caf::anon_send_exit(host, caf::exit_reason::user_shutdown);
  wait_for([&] { return !eng->running(); }, "the engine to stop");
  EXPECT_FALSE(eng->running());
  EXPECT_TRUE(eng->stop());
}

// `georoute check-config` (georoute_config::load) and engine::start on
// hand-built settings refuse the same key for the same reason, the one the
// transport gives when it would sign with it: "QUJ=" is four characters of
// the base64 alphabet with padding, but its last character has bits set
// that the padding drops (not canonical base64).
TEST_F(Embedding, AKeyTheTransportRefuses_IsRefusedByCheckConfigAndByStart) {
  const std::string bad_key = "QUJ=";
  auto transport_says = transport::parse_master_key(bad_key);
  ASSERT_FALSE(transport_says);
  const auto& reason = transport_says.error().what;

  config::georoute_config check;
  auto loaded = check.load(
      {},
      [&](const std::string& name) -> std::optional<std::string> {
        if (name == config::account_key_env) return bad_key;
        return std::nullopt;
      },
      std::string{});
  ASSERT_EQ(loaded.errors.size(), 1u);
  EXPECT_NE(loaded.errors[0].find(reason), std::string::npos)
      << loaded.errors[0];

  auto hand_built = settings;
  hand_built.account_key = config::secret{bad_key};
  auto e = engine::start(*sys, hand_built);
  ASSERT_FALSE(e);
  EXPECT_EQ(code_of(e.error()), errc::validation_error);
  EXPECT_NE(context_of(e.error()).find(reason), std::string::npos)
      << context_of(e.error());
  EXPECT_EQ(context_of(e.error()).find(bad_key), std::string::npos);
}

} // namespace
