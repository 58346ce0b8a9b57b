#pragma once

// Shared pieces of the actor tests: a CAF system on the deterministic test
// coordinator (virtual time, no worker threads), a port that records
// attempts and is answered by hand, and canned outcomes.

#include "georoute/messages/interfaces.hpp"
#include "georoute/messages/types.hpp"
#include "georoute/transport/gateway_wire.hpp"
#include "georoute/transport/port.hpp"

#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <gtest/gtest.h>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace georoute::test {

/// The trigger with which a test makes a fake actor answer request `i`
/// (a promise is only ever delivered by its own actor, never from the test
/// thread). Fakes extend the public interface with it.
using answer_atom = caf::atom_constant<caf::atom("answer")>;
constexpr answer_atom answer_atom_v = answer_atom{};

/// A fake retry actor: the public interface plus the test's trigger.
using fake_retry_actor = retry_actor::extend<
    caf::reacts_to<answer_atom, uint64_t, transport::outcome>>;

struct test_config : caf::actor_system_config {
  test_config() {
    register_types(*this);
    set("scheduler.policy", caf::atom("testing"));
  }
};

/// A port that records every attempt, with the classic gateway's request
/// for it (what the real port would sign and send); tests answer with
/// `respond`.
class fake_port : public transport::port {
public:
  struct sent {
    transport::attempt what;
    transport::request request;
    completion done;
    bool answered = false;
  };

  void send(transport::attempt a, completion done) override {
    auto req = transport::to_gateway_request(transport::attempt{a});
    std::lock_guard<std::mutex> guard{mtx_};
    log_.push_back(sent{std::move(a), std::move(req), std::move(done)});
  }

  size_t count() const {
    std::lock_guard<std::mutex> guard{mtx_};
    return log_.size();
  }

  sent at(size_t i) const {
    std::lock_guard<std::mutex> guard{mtx_};
    return log_.at(i);
  }

  /// Requests not answered yet, oldest first.
  std::vector<size_t> pending() const {
    std::lock_guard<std::mutex> guard{mtx_};
    std::vector<size_t> r;
    for (size_t i = 0; i < log_.size(); ++i)
      if (!log_[i].answered) r.push_back(i);
    return r;
  }

  /// Answers request `i` with `o` (its endpoint is filled in).
  void respond(size_t i, transport::outcome o) {
    sent s;
    {
      std::lock_guard<std::mutex> guard{mtx_};
      log_.at(i).answered = true;
      s = log_.at(i);
    }
    o.endpoint = s.request.endpoint;
    s.done(std::move(o)); // the actor's own completion: an anon_send
  }

private:
  mutable std::mutex mtx_;
  std::vector<sent> log_;
};

/// The endpoints the actor tests use: the account endpoint and three regions
/// (nothing listens; the fake port answers by hand).
inline const std::string global_ep = "http://127.0.0.1:4300/";
inline const std::string west_ep = "http://127.0.0.1:4301/";
inline const std::string east_ep = "http://127.0.0.1:4302/";
inline const std::string north_ep = "http://127.0.0.1:4303/";

/// A single-write account on those endpoints: West US writes; West US,
/// East US and North Europe read.
inline database_account three_region_account() {
  database_account a;
  a.id = "acct";
  a.writable = {{"West US", west_ep}};
  a.readable = {
      {"West US", west_ep}, {"East US", east_ep}, {"North Europe", north_ep}};
  return a;
}

/// The account refreshes an endpoint manager was asked for, and the account
/// it answers with.
struct refresh_log {
  int forced = 0;
  int plain = 0;
  int fresh = 0; ///< (refresh_atom, fresh_atom)
  /// Hold every refresh unanswered (it never answers).
  bool hold = false;
  database_account serves = three_region_account();
  int total() const { return forced + plain + fresh; }
};

/// An endpoint manager that answers every refresh at once with
/// `log->serves`, or never (`log->hold`), and counts them.
inline endpoint_manager_actor::behavior_type
fake_endpoint_manager(endpoint_manager_actor::pointer self,
                      std::shared_ptr<refresh_log> log) {
  return {
      [self, log](refresh_atom, bool force) -> caf::result<database_account> {
        ++(force ? log->forced : log->plain);
        if (log->hold) return self->make_response_promise<database_account>();
        return log->serves;
      },
      [self, log](refresh_atom, fresh_atom) -> caf::result<database_account> {
        ++log->fresh;
        if (log->hold) return self->make_response_promise<database_account>();
        return log->serves;
      },
      [log](account_atom) { return log->serves; },
      [](stats_atom) { return endpoint_manager_stats{}; },
  };
}

/// What a `fake_location_cache` saw, and whether it answers subscriptions.
struct table_log {
  /// Hold every subscription unanswered: a subscriber gets its first table
  /// only from a push (`push_atom`).
  bool hold_subscriptions = false;
  std::vector<caf::actor> subscribers;
  int marks = 0;
};

/// The trigger with which a test makes a `fake_location_cache` push its
/// table to its subscribers.
using push_atom = caf::atom_constant<caf::atom("push")>;
constexpr push_atom push_atom_v = push_atom{};

using fake_location_cache_actor =
    location_cache_actor::extend<caf::reacts_to<push_atom>>;

/// A location cache with one table, `three_region_account()` preferring
/// West US, East US, North Europe (version 1). It counts marks and confirms
/// them without changing its table, and it answers subscriptions at once,
/// or never (`hold_subscriptions`); `push_atom` sends the table to every
/// subscriber.
inline fake_location_cache_actor::behavior_type
fake_location_cache(fake_location_cache_actor::pointer self,
                    std::shared_ptr<table_log> log) {
  location_table_options lo;
  lo.default_endpoint = global_ep;
  lo.preferred_regions = {"West US", "East US", "North Europe"};
  auto table =
      std::make_shared<const location_table>(location_table{lo}.with_account(
          three_region_account(), self->clock().now()));
  location_snapshot snap{table, 1};
  return {
      [](account_atom, const database_account&) {},
      [](resolve_atom, const resolve_input&) { return resolution{}; },
      [](fleet_atom, const fleet_demotion&) { return uint64_t{1}; },
      [log](mark_atom, const region_mark&) {
        ++log->marks;
        return uint64_t{1};
      },
      [self, log, snap](subscribe_atom,
                        caf::actor& sub) -> caf::result<location_snapshot> {
        log->subscribers.push_back(sub);
        if (log->hold_subscriptions)
          return self->make_response_promise<location_snapshot>();
        return snap;
      },
      [](refresh_atom) { return false; },
      [self, log, snap](push_atom) {
        for (const auto& sub : log->subscribers)
          caf::unsafe_send_as(self, sub, snapshot_atom_v, snap);
      },
  };
}

inline transport::outcome ok_response(std::string body, int status = 200) {
  transport::outcome o;
  o.status = status;
  o.body = std::move(body);
  return o;
}

inline transport::outcome status_response(int status, int substatus = 0) {
  transport::outcome o;
  o.status = status;
  o.substatus = substatus;
  o.body = R"({"code":"Error","message":"injected"})";
  return o;
}

inline transport::outcome transport_failure(transport::failure f) {
  transport::outcome o;
  o.error = f;
  o.error_detail = std::string{"injected "} + transport::to_string(f);
  return o;
}

/// Receives the reply to `h` if one arrived, else fails the test at once:
/// under the test coordinator a blocking receive with no reply would wait
/// until ctest kills the binary.
template <class Handle, class OnValue, class OnError>
void receive_now(caf::scoped_actor& self, Handle& h, OnValue on_value,
                 OnError on_error) {
  if (self->mailbox().empty()) {
    ADD_FAILURE() << "no reply arrived";
    return;
  }
  h.receive(std::move(on_value), std::move(on_error));
}

/// Fixture base: the system, a hidden scoped actor, the coordinator.
class actor_test : public ::testing::Test {
protected:
  test_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys, true};
  caf::scheduler::test_coordinator& sched =
      dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler());
  std::shared_ptr<fake_port> http = std::make_shared<fake_port>();

  /// Runs every message, no timers.
  void run() { sched.run(); }

  /// Moves virtual time forward by `d`, firing due timers, then runs.
  void advance(caf::timespan d) {
    sched.advance_time(d);
    sched.run();
  }
};

} // namespace georoute::test
