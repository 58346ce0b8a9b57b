// The home thread (actors/home_thread.hpp) on CAF's default scheduler: a
// pinned actor runs there whoever sends to it, what it sends to runs on the
// scheduler's workers, and nothing sent to it is lost when the home stops,
// however the home ends.
//
// Real time: waits for what must happen are generous; no case asserts how
// long anything took.

#include "georoute/actors/home_thread.hpp"
#include "tests/threads_named.hpp"

#include <caf/all.hpp>
#include <chrono>
#include <gtest/gtest.h>
#include <memory>
#include <string>
#include <thread>

namespace georoute {
// Named after the file as well: the unity build (tests/CMakeLists.txt)
// compiles it in one translation unit with other tests.
namespace home_thread_test {
namespace {

using namespace std::chrono_literals;
using test::threads_named;

using where_atom = caf::atom_constant<caf::atom("where")>;
using relay_atom = caf::atom_constant<caf::atom("relay")>;

constexpr auto patience = std::chrono::seconds{10};

struct two_workers : caf::actor_system_config {
  two_workers() { set("scheduler.max-threads", 2); }
};

/// Answers, to each `where`, whether it runs on `home`'s thread.
caf::behavior where_am_i(caf::event_based_actor*,
                         std::shared_ptr<home_thread> home) {
  return {[home](where_atom) { return home->on_thread(); }};
}

/// A pinned actor: answers `where` as above; `relay` asks another actor
/// `where` and answers what it said; `ok` makes it quit.
class probe final : public pinned<caf::event_based_actor> {
public:
  probe(caf::actor_config& cfg, std::shared_ptr<home_thread> h)
      : pinned(cfg, std::move(h)) {}

  caf::behavior make_behavior() override {
    return {
        [this](where_atom) { return home()->on_thread(); },
        [this](relay_atom, const caf::actor& other) -> caf::result<bool> {
          auto rp = make_response_promise<bool>();
          request(other, patience, where_atom::value)
              .then([rp](bool b) mutable { rp.deliver(b); },
                    [rp](caf::error& e) mutable { rp.deliver(std::move(e)); });
          return rp;
        },
        [this](caf::ok_atom) { quit(); },
    };
  }
};

class HomeThread : public testing::Test {
protected:
  two_workers cfg;
  caf::actor_system sys{cfg};

  /// Asks `who` where it ran: "home", "elsewhere" or the error.
  std::string ask_where(const caf::actor& who) {
    caf::scoped_actor self{sys};
    std::string got;
    self->request(who, patience, where_atom::value)
        .receive([&](bool b) { got = b ? "home" : "elsewhere"; },
                 [&](caf::error& e) { got = sys.render(e); });
    return got;
  }
};

TEST_F(HomeThread, PinnedActor_RunsAtHome_WhoeverSends) {
  auto home = std::make_shared<home_thread>(sys, "gr.test.home");
  auto p = sys.spawn<probe>(home);
  // From this thread (a scoped actor), many times over: every message
  // found the actor asleep or already queued, never on the sender's unit.
  for (int i = 0; i < 50; ++i)
    ASSERT_EQ(ask_where(p), "home") << "message " << i;
  // From an actor on the scheduler's workers.
  auto relay = sys.spawn([p](caf::event_based_actor* self) -> caf::behavior {
    return {[=](relay_atom) -> caf::result<bool> {
      auto rp = self->make_response_promise<bool>();
      self->request(p, patience, where_atom::value)
          .then([rp](bool b) mutable { rp.deliver(b); },
                [rp](caf::error& e) mutable { rp.deliver(std::move(e)); });
      return rp;
    }};
  });
  for (int i = 0; i < 20; ++i) {
    caf::scoped_actor self{sys};
    std::string got;
    self->request(relay, patience, relay_atom::value)
        .receive([&](bool b) { got = b ? "home" : "elsewhere"; },
                 [&](caf::error& e) { got = sys.render(e); });
    ASSERT_EQ(got, "home") << "relayed message " << i;
  }
  caf::anon_send_exit(relay, caf::exit_reason::user_shutdown);
  caf::anon_send(p, caf::ok_atom_v);
}

TEST_F(HomeThread, WhatAPinnedActorSendsTo_RunsOnTheWorkers) {
  auto home = std::make_shared<home_thread>(sys, "gr.test.home");
  auto p = sys.spawn<probe>(home);
  auto plain = sys.spawn(where_am_i, home);
  for (int i = 0; i < 20; ++i) {
    caf::scoped_actor self{sys};
    std::string got;
    self->request(p, patience, relay_atom::value, caf::actor{plain})
        .receive([&](bool b) { got = b ? "home" : "elsewhere"; },
                 [&](caf::error& e) { got = sys.render(e); });
    ASSERT_EQ(got, "elsewhere") << "message " << i;
  }
  caf::anon_send_exit(plain, caf::exit_reason::user_shutdown);
  caf::anon_send(p, caf::ok_atom_v);
}

TEST_F(HomeThread, Stop_PinnedActorGoesOnOnTheWorkers_NothingLost) {
  auto home = std::make_shared<home_thread>(sys, "gr.test.home");
  auto p = sys.spawn<probe>(home);
  ASSERT_EQ(ask_where(p), "home");
  // Requests in flight while the home stops: each is answered, at home or
  // on a worker.
  caf::scoped_actor self{sys};
  constexpr int n = 200;
  for (int i = 0; i < n; ++i)
    self->send(p, where_atom::value);
  home->stop();
  EXPECT_EQ(threads_named("gr.test.home"), 0u);
  int answered = 0;
  for (int i = 0; i < n; ++i)
    self->receive([&](bool) { ++answered; }, caf::after(patience) >> [] {});
  EXPECT_EQ(answered, n);
  // And afterwards, on the workers.
  for (int i = 0; i < 20; ++i)
    ASSERT_EQ(ask_where(p), "elsewhere") << "message " << i;
  home->stop(); // again: nothing happens
  caf::anon_send(p, caf::ok_atom_v);
}

TEST_F(HomeThread, LastShareDroppedAtHome_ThreadEndsByItself) {
  auto home = std::make_shared<home_thread>(sys, "gr.test.last");
  auto p = sys.spawn<probe>(home);
  ASSERT_EQ(ask_where(p), "home");
  EXPECT_EQ(threads_named("gr.test.last"), 1u);
  // The actor holds the only share; it quits at home and is destroyed there.
  home.reset();
  caf::anon_send(p, caf::ok_atom_v);
  p = nullptr;
  auto until = std::chrono::steady_clock::now() + patience;
  while (threads_named("gr.test.last") != 0 &&
         std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(threads_named("gr.test.last"), 0u);
}

} // namespace
} // namespace home_thread_test
} // namespace georoute
