#pragma once

// Shared pieces of the actor tests: a CAF system on the deterministic test
// coordinator (virtual time, no worker threads), an HTTP port that records
// requests and is answered by hand, and canned outcomes.

#include "actors/http_port.hpp"
#include "messages/interfaces.hpp"
#include "messages/types.hpp"

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

/// An HTTP port that records every request; tests answer with `respond`.
class fake_http_port : public http_port {
public:
  struct sent {
    transport::request request;
    completion done;
    bool answered = false;
  };

  void send(transport::request req, completion done) override {
    std::lock_guard<std::mutex> guard{mtx_};
    log_.push_back(sent{std::move(req), std::move(done)});
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
  database_account serves = three_region_account();
  int total() const { return forced + plain; }
};

/// An endpoint manager that answers every refresh at once with
/// `log->serves`, and counts them.
inline endpoint_manager_actor::behavior_type
fake_endpoint_manager(endpoint_manager_actor::pointer,
                      std::shared_ptr<refresh_log> log) {
  return {
      [log](refresh_atom, bool force) {
        ++(force ? log->forced : log->plain);
        return log->serves;
      },
      [log](account_atom) { return log->serves; },
      [](stats_atom) { return endpoint_manager_stats{}; },
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
  std::shared_ptr<fake_http_port> http = std::make_shared<fake_http_port>();

  /// Runs every message, no timers.
  void run() { sched.run(); }

  /// Moves virtual time forward by `d`, firing due timers, then runs.
  void advance(caf::timespan d) {
    sched.advance_time(d);
    sched.run();
  }
};

} // namespace georoute::test
