// The engine loop scheduler (actors/engine_loop.hpp) against CAF's own
// semantics: every case runs on CAF's default scheduler and on the loop, so
// a difference between the two fails one of the pair.
//
// Real time, on a machine shared with builds: a wait for something that
// must happen is generous (`patience`), a check that something does NOT
// happen looks for a short while only (`quiet`), and no case asserts how
// long anything took beyond "it came" or "not before".

#include "georoute/actors/engine_loop.hpp"
#include "georoute/transport/io_loop.hpp"

#include <algorithm>
#include <atomic>
#include <caf/all.hpp>
#include <chrono>
#include <gtest/gtest.h>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace georoute {
namespace {

using namespace std::chrono_literals;

using go_atom = caf::atom_constant<caf::atom("go")>;
using tick_atom = caf::atom_constant<caf::atom("tick")>;
using arm_atom = caf::atom_constant<caf::atom("arm")>;
using ping_atom = caf::atom_constant<caf::atom("ping")>;
using answer_atom = caf::atom_constant<caf::atom("answer")>;

constexpr auto patience = std::chrono::seconds{10};
constexpr auto quiet = std::chrono::milliseconds{300};

enum class sched { caf_default, loop };

std::string name_of(const testing::TestParamInfo<sched>& info) {
  return info.param == sched::loop ? "EngineLoop" : "CafDefault";
}

struct loop_config : caf::actor_system_config {
  explicit loop_config(sched s) {
    if (s == sched::loop)
      load<engine_loop>();
    else
      set("scheduler.max-threads", 2);
  }
};

/// The next message of `self`, as text; "none" when nothing came within
/// `wait`.
std::string next(caf::scoped_actor& self, std::chrono::milliseconds wait) {
  std::string got = "none";
  self->receive(
      [&](const std::string& s) { got = s; },
      [&](caf::timeout_msg& tm) { got = "timeout:" + caf::to_string(tm.type); },
      caf::after(wait) >> [] {});
  return got;
}

class EngineLoop : public testing::TestWithParam<sched> {
protected:
  loop_config cfg{GetParam()};
  caf::actor_system sys{cfg};

  /// The loop's scheduler; null on CAF's.
  engine_loop* loop() { return dynamic_cast<engine_loop*>(&sys.scheduler()); }

  /// Waits until the loop's clock holds `n` request timeouts; true at once
  /// on CAF's scheduler (its clock has no such count).
  bool held_becomes(size_t n) {
    auto* l = loop();
    if (!l) return true;
    auto until = std::chrono::steady_clock::now() + patience;
    while (l->request_timeouts_held() != n) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds{1});
    }
    return true;
  }
};

/// An actor that never answers: it keeps every promise it is given.
caf::behavior
silent(caf::stateful_actor<std::vector<caf::response_promise>>* self) {
  return {[=](ping_atom) {
    self->state.push_back(self->make_response_promise());
    return self->state.back();
  }};
}

/// An actor that keeps the promise of every `(ping, i)` and, told to,
/// answers the given ones in the given order.
struct holder_state {
  std::vector<std::pair<int, caf::response_promise>> promises;
};

caf::behavior holder(caf::stateful_actor<holder_state>* self) {
  return {[=](ping_atom, int i) {
            self->state.promises.emplace_back(i, self->make_response_promise());
            return self->state.promises.back().second;
          },
          [=](answer_atom, const std::vector<int>& order) {
            for (int i : order)
              for (auto& p : self->state.promises)
                if (p.first == i) p.second.deliver(ping_atom::value, i);
          }};
}

TEST_P(EngineLoop, LoopIoIsThereOnlyOnTheLoop) {
  auto io = engine_loop_io(sys);
  EXPECT_EQ(io != nullptr, GetParam() == sched::loop);
}

TEST_P(EngineLoop, DelayedMessageFires) {
  caf::scoped_actor self{sys};
  auto report = caf::actor{self};
  auto a = sys.spawn([=](caf::event_based_actor* me) -> caf::behavior {
    return {[=](go_atom) { me->delayed_send(me, 20ms, tick_atom::value); },
            [=](tick_atom) { me->send(report, std::string{"fired"}); }};
  });
  self->send(a, go_atom::value);
  EXPECT_EQ(next(self, patience), "fired");
  self->send_exit(a, caf::exit_reason::user_shutdown);
}

TEST_P(EngineLoop, DelayedMessagesFireInDueOrder) {
  caf::scoped_actor self{sys};
  auto report = caf::actor{self};
  auto a = sys.spawn([=](caf::event_based_actor* me) -> caf::behavior {
    return {[=](go_atom) {
              // Scheduled out of order; the earliest due comes first.
              me->delayed_send(me, 90ms, tick_atom::value, 3);
              me->delayed_send(me, 30ms, tick_atom::value, 1);
              me->delayed_send(me, 60ms, tick_atom::value, 2);
            },
            [=](tick_atom, int i) { me->send(report, std::to_string(i)); }};
  });
  self->send(a, go_atom::value);
  EXPECT_EQ(next(self, patience), "1");
  EXPECT_EQ(next(self, patience), "2");
  EXPECT_EQ(next(self, patience), "3");
  self->send_exit(a, caf::exit_reason::user_shutdown);
}

TEST_P(EngineLoop, RequestTimeoutFiresWithoutReply) {
  caf::scoped_actor self{sys};
  auto report = caf::actor{self};
  auto mute = sys.spawn(silent);
  auto a = sys.spawn([=](caf::event_based_actor* me) -> caf::behavior {
    return {[=](go_atom) {
      me->request(mute, 30ms, ping_atom::value)
          .then([=](ping_atom) { me->send(report, std::string{"reply"}); },
                [=](caf::error& e) {
                  me->send(report, std::string{e == caf::sec::request_timeout
                                                   ? "request_timeout"
                                                   : "other error"});
                });
    }};
  });
  self->send(a, go_atom::value);
  EXPECT_EQ(next(self, patience), "request_timeout");
  self->send_exit(a, caf::exit_reason::user_shutdown);
  self->send_exit(mute, caf::exit_reason::user_shutdown);
}

TEST_P(EngineLoop, RequestTimeoutDoesNotFireWhenTheReplyComes) {
  caf::scoped_actor self{sys};
  auto report = caf::actor{self};
  auto echo = sys.spawn(
      []() -> caf::behavior { return {[](ping_atom x) { return x; }}; });
  auto a = sys.spawn([=](caf::event_based_actor* me) -> caf::behavior {
    return {[=](go_atom) {
      me->request(echo, 200ms, ping_atom::value)
          .then([=](ping_atom) { me->send(report, std::string{"reply"}); },
                [=](caf::error&) { me->send(report, std::string{"error"}); });
    }};
  });
  self->send(a, go_atom::value);
  EXPECT_EQ(next(self, patience), "reply");
  // Past the 200 ms deadline: the handler ran once, no error follows.
  EXPECT_EQ(next(self, 400ms), "none");
  self->send_exit(a, caf::exit_reason::user_shutdown);
  self->send_exit(echo, caf::exit_reason::user_shutdown);
}

// The clock's cancellation of a request timeout, observed: two requests
// that are never answered, with timeouts set by hand through the clock;
// one is cancelled, only the other may fail with request_timeout. From the
// actor itself, i.e. on the loop thread when the loop runs.
TEST_P(EngineLoop, CancelledRequestTimeoutDoesNotFire) {
  caf::scoped_actor self{sys};
  auto report = caf::actor{self};
  auto mute = sys.spawn(silent);
  auto a = sys.spawn([=](caf::event_based_actor* me) -> caf::behavior {
    return {[=](go_atom) {
      auto now = me->clock().now();
      auto on = [=](std::string name) {
        return [=](caf::error& e) {
          me->send(report,
                   name + (e == caf::sec::request_timeout ? ":request_timeout"
                                                          : ":other"));
        };
      };
      auto h1 = me->request(mute, caf::infinite, ping_atom::value);
      auto h2 = me->request(mute, caf::infinite, ping_atom::value);
      me->clock().set_request_timeout(now + 40ms, me, h1.id());
      me->clock().set_request_timeout(now + 40ms, me, h2.id());
      me->clock().cancel_request_timeout(me, h1.id());
      std::move(h1).then([=](ping_atom) {}, on("first"));
      std::move(h2).then([=](ping_atom) {}, on("second"));
    }};
  });
  self->send(a, go_atom::value);
  EXPECT_EQ(next(self, patience), "second:request_timeout");
  EXPECT_EQ(next(self, quiet), "none");
  self->send_exit(a, caf::exit_reason::user_shutdown);
  self->send_exit(mute, caf::exit_reason::user_shutdown);
}

TEST_P(EngineLoop, CancelTimeoutsDropsEveryTimeoutOfTheActor) {
  caf::scoped_actor self{sys};
  auto report = caf::actor{self};
  auto mute = sys.spawn(silent);
  auto a = sys.spawn([=](caf::event_based_actor* me) -> caf::behavior {
    return {[=](go_atom) {
              auto now = me->clock().now();
              for (int i = 0; i < 3; ++i) {
                auto h = me->request(mute, caf::infinite, ping_atom::value);
                me->clock().set_request_timeout(now + 30ms, me, h.id());
                std::move(h).then([=](ping_atom) {},
                                  [=](caf::error&) {
                                    me->send(report,
                                             std::string{"timeout fired"});
                                  });
              }
              me->clock().cancel_timeouts(me);
              // Scheduled messages are not timeouts: this one still comes.
              me->delayed_send(me, 60ms, tick_atom::value);
            },
            [=](tick_atom) { me->send(report, std::string{"tick"}); }};
  });
  self->send(a, go_atom::value);
  EXPECT_EQ(next(self, patience), "tick");
  EXPECT_EQ(next(self, quiet), "none");
  self->send_exit(a, caf::exit_reason::user_shutdown);
  self->send_exit(mute, caf::exit_reason::user_shutdown);
}

// Many requests in flight from one actor, answered in random order before
// their deadline; the answered ones cancel their timeout as their reply
// comes (CAF 0.17 itself never does), the rest time out. Each request ends
// exactly once, either way.
TEST_P(EngineLoop, ManyRequestsInFlight_OnlyTheUnansweredTimeOut) {
  constexpr int n = 64;
  std::vector<int> answered(n);
  for (int i = 0; i < n; ++i)
    answered[i] = i;
  std::mt19937 rng{GetParam() == sched::loop ? 7u : 11u};
  std::shuffle(answered.begin(), answered.end(), rng);
  answered.resize(48);
  caf::scoped_actor self{sys};
  auto report = caf::actor{self};
  auto keeper = sys.spawn(holder);
  auto a = sys.spawn([=](caf::event_based_actor* me) -> caf::behavior {
    return {[=](go_atom) {
      for (int i = 0; i < n; ++i) {
        auto h =
            me->request(keeper, std::chrono::seconds{2}, ping_atom::value, i);
        auto id = h.id();
        std::move(h).then(
            [=](ping_atom, int j) {
              me->clock().cancel_request_timeout(me, id);
              me->send(report, "reply:" + std::to_string(j));
            },
            [=](caf::error& e) {
              me->send(report, (e == caf::sec::request_timeout ? "timeout:"
                                                               : "other:") +
                                   std::to_string(i));
            });
      }
      me->send(keeper, answer_atom::value, answered);
    }};
  });
  self->send(a, go_atom::value);
  std::multiset<std::string> got;
  for (int k = 0; k < n; ++k)
    got.insert(next(self, patience));
  EXPECT_EQ(next(self, quiet), "none");
  std::multiset<std::string> want;
  std::set<int> replied(answered.begin(), answered.end());
  for (int i = 0; i < n; ++i)
    want.insert((replied.count(i) ? "reply:" : "timeout:") + std::to_string(i));
  EXPECT_EQ(got, want);
  EXPECT_TRUE(held_becomes(0));
  self->send_exit(a, caf::exit_reason::user_shutdown);
  self->send_exit(keeper, caf::exit_reason::user_shutdown);
}

// A cancel for a timeout the clock does not hold (one that already fired,
// one never set, one set only later) changes nothing.
TEST_P(EngineLoop, CancelOfAnUnknownOrFiredRequestTimeout_HasNoEffect) {
  caf::scoped_actor self{sys};
  auto report = caf::actor{self};
  auto mute = sys.spawn(silent);
  auto a = sys.spawn([=](caf::event_based_actor* me) -> caf::behavior {
    auto on = [=](std::string name) {
      return [=](caf::error& e) {
        me->send(report,
                 name + (e == caf::sec::request_timeout ? ":request_timeout"
                                                        : ":other"));
      };
    };
    return {[=](go_atom) {
              auto h1 = me->request(mute, caf::infinite, ping_atom::value);
              auto id1 = h1.id();
              me->clock().set_request_timeout(me->clock().now() + 20ms, me,
                                              id1);
              std::move(h1).then([=](ping_atom) {},
                                 [=](caf::error& e) {
                                   on("first")(e);
                                   // Already fired: nothing to cancel.
                                   me->clock().cancel_request_timeout(me, id1);
                                   me->send(me, tick_atom::value);
                                 });
            },
            [=](tick_atom) {
              auto h2 = me->request(mute, caf::infinite, ping_atom::value);
              auto h3 = me->request(mute, caf::infinite, ping_atom::value);
              // Before it is set, and one that never will be.
              me->clock().cancel_request_timeout(me, h2.id());
              me->clock().cancel_request_timeout(me, h3.id());
              me->clock().set_request_timeout(me->clock().now() + 20ms, me,
                                              h2.id());
              // The other actor's id space: the same number, not its timer.
              me->clock().cancel_request_timeout(
                  caf::actor_cast<caf::abstract_actor*>(mute), h2.id());
              std::move(h2).then([=](ping_atom) {}, on("second"));
              std::move(h3).then([=](ping_atom) {}, on("third"));
            }};
  });
  self->send(a, go_atom::value);
  EXPECT_EQ(next(self, patience), "first:request_timeout");
  EXPECT_EQ(next(self, patience), "second:request_timeout");
  EXPECT_EQ(next(self, quiet), "none");
  EXPECT_TRUE(held_becomes(0));
  self->send_exit(a, caf::exit_reason::user_shutdown);
  self->send_exit(mute, caf::exit_reason::user_shutdown);
}

// A scoped actor's request from this thread: its timeout is set from a
// foreign thread (queued to the loop), and cancelled from here once the
// reply is in. Nothing lands in its mailbox after the deadline; without
// the cancel, the `request_timeout` error would (and sit there unread).
TEST_P(EngineLoop, ForeignRequestTimeout_CancelledAfterTheReply) {
  auto echo = sys.spawn(
      []() -> caf::behavior { return {[](int x) { return x + 1; }}; });
  caf::scoped_actor self{sys};
  constexpr auto deadline = std::chrono::milliseconds{500};
  for (int round = 0; round < 3; ++round) {
    auto h = self->request(echo, deadline, round);
    auto id = h.id();
    int got = -1;
    std::move(h).receive(
        [&](int x) { got = x; },
        [&](caf::error& e) { ADD_FAILURE() << sys.render(e); });
    EXPECT_EQ(got, round + 1);
    self->clock().cancel_request_timeout(self.ptr(), id);
  }
  EXPECT_TRUE(held_becomes(0));
  std::this_thread::sleep_for(deadline + quiet);
  EXPECT_TRUE(self->mailbox().empty()) << "a cancelled request timeout fired";
  self->send_exit(echo, caf::exit_reason::user_shutdown);
}

// N answered requests whose timeouts are cancelled with the reply leave
// nothing behind in the loop's clock.
TEST_P(EngineLoop, AnsweredAndCancelled_NothingIsHeld) {
  constexpr int n = 500;
  caf::scoped_actor self{sys};
  auto report = caf::actor{self};
  auto echo = sys.spawn(
      []() -> caf::behavior { return {[](ping_atom, int i) { return i; }}; });
  auto* l = loop();
  auto a = sys.spawn([=](caf::event_based_actor* me) -> caf::behavior {
    auto left = std::make_shared<int>(n);
    return {[=](go_atom) {
      for (int i = 0; i < n; ++i) {
        auto h =
            me->request(echo, std::chrono::minutes{10}, ping_atom::value, i);
        auto id = h.id();
        std::move(h).then(
            [=](int) {
              me->clock().cancel_request_timeout(me, id);
              if (--*left == 0) me->send(report, std::string{"done"});
            },
            [=](caf::error& e) { me->send(report, me->system().render(e)); });
      }
      // On the loop this runs on its thread: all of them are held now.
      if (l)
        me->send(report, "held:" + std::to_string(l->request_timeouts_held()));
    }};
  });
  self->send(a, go_atom::value);
  if (l) {
    EXPECT_EQ(next(self, patience), "held:" + std::to_string(n));
  }
  EXPECT_EQ(next(self, patience), "done");
  if (l) {
    EXPECT_EQ(l->request_timeouts_held(), 0u);
  }
  self->send_exit(a, caf::exit_reason::user_shutdown);
  self->send_exit(echo, caf::exit_reason::user_shutdown);
}

// CAF 0.17 itself does not cancel a request timeout when the reply comes:
// it stays in the clock until its deadline. An actor that ends takes its
// timeouts with it (`cancel_timeouts` at cleanup).
TEST_P(EngineLoop, AnsweredRequestTimeoutsStayUntilTheActorEnds) {
  constexpr int n = 20;
  caf::scoped_actor self{sys};
  auto report = caf::actor{self};
  auto echo = sys.spawn(
      []() -> caf::behavior { return {[](ping_atom, int i) { return i; }}; });
  auto a = sys.spawn([=](caf::event_based_actor* me) -> caf::behavior {
    auto left = std::make_shared<int>(n);
    return {[=](go_atom) {
      for (int i = 0; i < n; ++i)
        me->request(echo, std::chrono::minutes{10}, ping_atom::value, i)
            .then(
                [=](int) {
                  if (--*left == 0) me->send(report, std::string{"done"});
                },
                [=](caf::error& e) {
                  me->send(report, me->system().render(e));
                });
    }};
  });
  self->send(a, go_atom::value);
  EXPECT_EQ(next(self, patience), "done");
  if (auto* l = loop()) {
    EXPECT_EQ(l->request_timeouts_held(), size_t{n});
  }
  self->send_exit(a, caf::exit_reason::user_shutdown);
  EXPECT_TRUE(held_becomes(0));
  self->send_exit(echo, caf::exit_reason::user_shutdown);
}

// Request timeouts and delayed messages interleaved in time fire in due
// order across the two.
TEST_P(EngineLoop, RequestTimeoutsAndDelayedMessagesFireInDueOrder) {
  caf::scoped_actor self{sys};
  auto report = caf::actor{self};
  auto mute = sys.spawn(silent);
  auto a = sys.spawn([=](caf::event_based_actor* me) -> caf::behavior {
    return {[=](go_atom) {
              auto now = me->clock().now();
              for (int i : {4, 0, 2}) {
                auto h = me->request(mute, caf::infinite, ping_atom::value);
                me->clock().set_request_timeout(now + 30ms * (i + 1), me,
                                                h.id());
                std::move(h).then([=](ping_atom) {},
                                  [=](caf::error&) {
                                    me->send(report,
                                             "timeout:" + std::to_string(i));
                                  });
              }
              for (int i : {3, 1})
                me->delayed_send(me, 30ms * (i + 1), tick_atom::value, i);
            },
            [=](tick_atom, int i) {
              me->send(report, "tick:" + std::to_string(i));
            }};
  });
  self->send(a, go_atom::value);
  std::vector<std::string> got;
  for (int k = 0; k < 5; ++k)
    got.push_back(next(self, patience));
  EXPECT_EQ(got, (std::vector<std::string>{"timeout:0", "tick:1", "timeout:2",
                                           "tick:3", "timeout:4"}));
  self->send_exit(a, caf::exit_reason::user_shutdown);
  self->send_exit(mute, caf::exit_reason::user_shutdown);
}

// Ordinary timeouts (one per type; a new one replaces the old) and their
// cancellation, as the clock ships them: a `timeout_msg` to the target,
// here the test's own scoped actor. `from_actor`: the calls are made by an
// actor (on the loop thread when the loop runs), else by the test thread.
void ordinary_timeouts(caf::actor_system& sys, bool from_actor) {
  caf::scoped_actor self{sys};
  auto* target = caf::actor_cast<caf::abstract_actor*>(self.ptr());
  auto arm = [&sys, target] {
    auto& clk = sys.clock();
    auto now = clk.now();
    clk.set_ordinary_timeout(now + 40ms, target, caf::atom("a"), 1);
    clk.set_ordinary_timeout(now + 40ms, target, caf::atom("b"), 2);
    clk.cancel_ordinary_timeout(target, caf::atom("a"));
    // Replaces the 10-minute one: "c" fires once, soon.
    clk.set_ordinary_timeout(now + std::chrono::minutes{10}, target,
                             caf::atom("c"), 3);
    clk.set_ordinary_timeout(now + 60ms, target, caf::atom("c"), 4);
  };
  caf::actor helper;
  if (from_actor) {
    helper = sys.spawn(
        [arm]() -> caf::behavior { return {[arm](arm_atom) { arm(); }}; });
    self->send(helper, arm_atom::value);
  } else {
    arm();
  }
  std::vector<std::string> got;
  got.push_back(next(self, patience));
  got.push_back(next(self, patience));
  EXPECT_EQ(got, (std::vector<std::string>{"timeout:b", "timeout:c"}));
  EXPECT_EQ(next(self, quiet), "none");
  if (helper) self->send_exit(helper, caf::exit_reason::user_shutdown);
}

TEST_P(EngineLoop, CancelledOrdinaryTimeoutDoesNotFire_FromAnActor) {
  ordinary_timeouts(sys, true);
}

TEST_P(EngineLoop, CancelledOrdinaryTimeoutDoesNotFire_FromAForeignThread) {
  ordinary_timeouts(sys, false);
}

TEST_P(EngineLoop, DelayedAnonSendFromAForeignThread) {
  caf::scoped_actor self{sys};
  auto report = caf::actor{self};
  auto a = sys.spawn([=]() -> caf::behavior {
    return {[=](tick_atom) { caf::anon_send(report, std::string{"tick"}); }};
  });
  std::thread t{[a] { caf::delayed_anon_send(a, 20ms, tick_atom::value); }};
  t.join();
  EXPECT_EQ(next(self, patience), "tick");
  self->send_exit(a, caf::exit_reason::user_shutdown);
}

TEST_P(EngineLoop, ScopedActorRequestFromTheMainThread) {
  auto echo = sys.spawn(
      []() -> caf::behavior { return {[](int x) { return x + 1; }}; });
  caf::scoped_actor self{sys};
  int got = 0;
  self->request(echo, patience, 41)
      .receive([&](int x) { got = x; },
               [&](caf::error& e) { ADD_FAILURE() << sys.render(e); });
  EXPECT_EQ(got, 42);
  self->send_exit(echo, caf::exit_reason::user_shutdown);
}

TEST_P(EngineLoop, IdleTimeoutOfABehavior) {
  caf::scoped_actor self{sys};
  auto report = caf::actor{self};
  auto a = sys.spawn([=](caf::event_based_actor* me) -> caf::behavior {
    return {[](ping_atom) {}, caf::after(30ms) >>
                                  [=] {
                                    me->send(report, std::string{"idle"});
                                    me->quit();
                                  }};
  });
  EXPECT_EQ(next(self, patience), "idle");
  EXPECT_EQ(next(self, quiet), "none"); // quit: fires once
}

// The loop asleep (nothing to do, or only a timer minutes away) must wake
// for a message from another thread. Repeated, with pauses, so that most
// rounds find it asleep.
TEST_P(EngineLoop, ForeignEnqueueWakesTheLoop) {
  auto echo =
      sys.spawn([]() -> caf::behavior { return {[](int x) { return x; }}; });
  caf::scoped_actor self{sys};
  for (int round = 0; round < 20; ++round) {
    if (round == 10) {
      // From now on the loop sleeps until a timer far away, not forever.
      caf::delayed_anon_send(echo, std::chrono::minutes{10}, -1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{5 + round % 4 * 5});
    // A plain send, no request timeout: a timer registration from this
    // thread would wake the loop by itself and hide a missing wake.
    self->send(echo, round);
    int got = -1;
    self->receive([&](int x) { got = x; }, caf::after(patience) >> [] {});
    ASSERT_EQ(got, round) << "the loop did not wake for a foreign enqueue";
  }
  self->send_exit(echo, caf::exit_reason::user_shutdown);
}

INSTANTIATE_TEST_SUITE_P(engine_loop, EngineLoop,
                         testing::Values(sched::caf_default, sched::loop),
                         name_of);

// Shutdown with timers minutes in the future, a request that will never be
// answered and a delayed message from a foreign thread still pending: the
// actor system's destructor returns promptly, and everything the clock held
// is released (a leak fails the ASan build).
class EngineLoopShutdown : public testing::TestWithParam<sched> {};

TEST_P(EngineLoopShutdown, PendingTimersDoNotDelayShutdown) {
  auto started = std::chrono::steady_clock::now();
  {
    loop_config cfg{GetParam()};
    caf::actor_system sys{cfg};
    auto mute = sys.spawn(silent);
    auto a = sys.spawn([=](caf::event_based_actor* me) -> caf::behavior {
      return {[=](go_atom) {
                me->delayed_send(me, std::chrono::minutes{10},
                                 tick_atom::value);
                me->request(mute, std::chrono::minutes{10}, ping_atom::value)
                    .then([](ping_atom) {}, [](caf::error&) {});
                me->send(me, arm_atom::value);
              },
              [=](arm_atom) {}, [=](tick_atom) {},
              caf::after(std::chrono::minutes{10}) >> [] {}};
    });
    caf::scoped_actor self{sys};
    self->send(a, go_atom::value);
    caf::delayed_anon_send(a, std::chrono::minutes{10}, tick_atom::value);
    // The go message has been handled once a request gets through.
    self->request(a, patience, arm_atom::value)
        .receive([] {}, [](caf::error&) {});
    self->send_exit(a, caf::exit_reason::user_shutdown);
    self->send_exit(mute, caf::exit_reason::user_shutdown);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - started,
            std::chrono::minutes{1});
}

// Messages still queued when the system goes: a chatty pair of actors that
// keeps the loop busy until the very end. The exits must cut the exchange
// short (on its own the pair would bounce ten million times), and the system
// must go down without waiting for the queue to drain.
TEST_P(EngineLoopShutdown, BusyActorsAtShutdown) {
  constexpr int rounds = 10000000;
  std::atomic<int> bounces{0}; // outlives the actors
  auto started = std::chrono::steady_clock::now();
  {
    loop_config cfg{GetParam()};
    caf::actor_system sys{cfg};
    auto bouncer = [&bounces](caf::event_based_actor* me) -> caf::behavior {
      return {[me, &bounces](int n, caf::actor peer) {
        ++bounces;
        if (n > 0) me->send(peer, n - 1, caf::actor{me});
      }};
    };
    auto x = sys.spawn(bouncer);
    auto y = sys.spawn(bouncer);
    caf::anon_send(x, rounds, y);
    while (bounces.load() < 100)
      std::this_thread::yield();
    caf::anon_send_exit(x, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(y, caf::exit_reason::user_shutdown);
  } // the system's destructor waits for its actors
  auto at_end = bounces.load();
  EXPECT_GE(at_end, 100);
  EXPECT_LT(at_end, rounds + 1)
      << "the exits did not stop the pair: it bounced to the end";
  EXPECT_LT(std::chrono::steady_clock::now() - started,
            std::chrono::minutes{1});
}

INSTANTIATE_TEST_SUITE_P(engine_loop, EngineLoopShutdown,
                         testing::Values(sched::caf_default, sched::loop),
                         name_of);

} // namespace
} // namespace georoute
