#pragma once

// Small helpers for the http_client tests: a thread-safe collector of
// outcomes (counts every callback, so "exactly once" is checkable), request
// builders and a polling wait with a generous bound.

#include "georoute/transport/http_client.hpp"

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace georoute::transport {

/// GoogleTest prints failures by name ("timeout"), not as a number.
inline void PrintTo(failure f, std::ostream* os) {
  *os << to_string(f);
}

} // namespace georoute::transport

namespace georoute::testing {

using namespace std::chrono_literals;

/// Generous bound for anything the tests wait for; never slept through.
constexpr auto patience = std::chrono::seconds(10);

/// Collects outcomes from any thread. Hand out `cb()`; the state is shared
/// with the callbacks, so a late callback never touches a dead collector.
class collector {
public:
  transport::http_client::callback cb() {
    return [st = st_](transport::outcome o) {
      std::lock_guard<std::mutex> guard{st->mtx};
      st->outcomes.push_back(std::move(o));
      st->cv.notify_all();
    };
  }

  /// True once at least `n` callbacks ran, false after `timeout`.
  bool wait_for(size_t n, std::chrono::milliseconds timeout = patience) {
    std::unique_lock<std::mutex> lock{st_->mtx};
    return st_->cv.wait_for(lock, timeout,
                            [&] { return st_->outcomes.size() >= n; });
  }

  size_t count() const {
    std::lock_guard<std::mutex> guard{st_->mtx};
    return st_->outcomes.size();
  }

  std::vector<transport::outcome> outcomes() const {
    std::lock_guard<std::mutex> guard{st_->mtx};
    return st_->outcomes;
  }

private:
  struct state {
    mutable std::mutex mtx;
    std::condition_variable cv;
    std::vector<transport::outcome> outcomes;
  };
  std::shared_ptr<state> st_ = std::make_shared<state>();
};

inline transport::request get(std::string endpoint, std::string target = "/",
                              std::chrono::milliseconds timeout = 5s) {
  transport::request r;
  r.endpoint = std::move(endpoint);
  r.target = std::move(target);
  r.timeout = timeout;
  return r;
}

/// Sends `r` and waits for its outcome; an outcome with error_detail
/// "test: no callback" (and a test failure) if none came.
inline transport::outcome send_sync(transport::http_client& client,
                                    transport::request r) {
  collector c;
  client.send(std::move(r), c.cb());
  if (!c.wait_for(1)) {
    transport::outcome o;
    o.error = transport::failure::reset;
    o.error_detail = "test: no callback";
    return o;
  }
  return c.outcomes().front();
}

/// Polls `pred` every millisecond until it holds or `timeout` passes.
template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds timeout = patience) {
  auto until = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

inline std::chrono::milliseconds
elapsed_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - t0);
}

} // namespace georoute::testing
