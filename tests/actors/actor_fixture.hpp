#pragma once

// Shared pieces of the actor tests: a CAF system on the deterministic test
// coordinator (virtual time, no worker threads), an HTTP port that records
// requests and is answered by hand, and canned outcomes.

#include "actors/http_port.hpp"
#include "messages/types.hpp"

#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <gtest/gtest.h>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace georoute::test {

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
    caf::actor reply_to;
    uint64_t id;
    transport::request request;
    bool answered = false;
  };

  void send(const caf::actor& reply_to, uint64_t id,
            transport::request req) override {
    std::lock_guard<std::mutex> guard{mtx_};
    log_.push_back(sent{reply_to, id, std::move(req)});
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
    caf::anon_send(s.reply_to, http_done_atom_v, s.id, std::move(o));
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
