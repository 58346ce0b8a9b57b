#pragma once

// The vocabulary of the retry policies (.NET ClientRetryPolicy,
// src/ClientRetryPolicy.cs) and the 429 throttle policy (.NET
// ResourceThrottleRetryPolicy).
//
// Every policy here splits "would this outcome be retried?" from "do it
// now": `evaluate` is a const function of the outcome and the policy's
// counters and returns a `retry_decision` that carries the counters as they
// would be afterwards; `apply` commits them; `on_failure` does both. The
// caller (the retry actor) performs the side effects the decision names:
// marks, refresh, the delay.

#include <chrono>
#include <cstdint>
#include <string>

namespace georoute {

/// A failed attempt, classified once by the caller.
struct failure_signal {
  enum class kind : uint8_t {
    connection_failure, ///< no HTTP response: refused, reset, DNS, TLS
    http_status,        ///< an HTTP error status (with substatus)
    timeout,            ///< the attempt ladder gave up without a 503; never
                        ///< retried here (a write may have been applied)
    lost_after_send,    ///< no usable response, and (part of) the request
                        ///< had gone out: a write may have been applied
  };

  kind what = kind::http_status;
  int status = 0;
  int substatus = 0;
  /// x-ms-retry-after-ms; negative when absent or unparsable.
  int64_t retry_after_ms = -1;
  /// With `connection_failure`: the server refused the connection (a
  /// definite answer; nothing was sent).
  bool refused = false;

  static failure_signal connection(bool refused = false) {
    return {kind::connection_failure, 0, 0, -1, refused};
  }
  static failure_signal http(int status, int substatus = 0,
                             int64_t retry_after_ms = -1) {
    return {kind::http_status, status, substatus, retry_after_ms};
  }
  static failure_signal timed_out() { return {kind::timeout, 0, 0, -1}; }
  static failure_signal lost_after_send() {
    return {kind::lost_after_send, 0, 0, -1};
  }

  bool is(int s, int sub) const {
    return what == kind::http_status && status == s && substatus == sub;
  }
  bool is_status(int s) const {
    return what == kind::http_status && status == s;
  }
};

/// The 429 budget (the .NET SDK's defaults).
struct throttle_options {
  /// Retries of throttled attempts per operation.
  uint32_t max_attempts = 9;
  /// Cumulative back-off per operation; a single delay must stay below it.
  std::chrono::milliseconds max_wait{std::chrono::seconds{30}};
  /// The delay when the server sends no (or a zero) retry-after.
  std::chrono::milliseconds default_delay{std::chrono::seconds{5}};
};

/// The throttle policy's counters.
struct throttle_state {
  uint32_t attempts = 0;
  std::chrono::milliseconds cumulative{0};

  friend bool operator==(const throttle_state& a, const throttle_state& b) {
    return a.attempts == b.attempts && a.cumulative == b.cumulative;
  }
};

/// The answer of the throttle policy.
struct throttle_verdict {
  bool retry = false;
  std::chrono::milliseconds delay{0};
  throttle_state next; ///< the counters after this verdict
};

/// The wait a 429 asks for: its retry-after, or `default_delay` when it
/// says none (absent, zero or negative).
std::chrono::milliseconds throttle_delay(const throttle_options& options,
                                         int64_t retry_after_ms);

/// .NET ResourceThrottleRetryPolicy and the metadata retry policies: only 429
/// is retried; the delay is exactly the server's retry-after (`default_delay`
/// when absent or 0); retry while attempts < max_attempts, delay < max_wait and
/// cumulative + delay <= max_wait. The delay counts against the cumulative
/// budget.
throttle_verdict evaluate_throttle(const throttle_options& options,
                                   const throttle_state& state,
                                   const failure_signal& signal);

/// The stateful wrapper around `evaluate_throttle`.
class throttle_policy {
public:
  explicit throttle_policy(throttle_options options = {}) : options_(options) {}

  throttle_verdict evaluate(const failure_signal& signal) const {
    return evaluate_throttle(options_, state_, signal);
  }

  void apply(const throttle_verdict& verdict) { state_ = verdict.next; }

  throttle_verdict on_failure(const failure_signal& signal) {
    auto verdict = evaluate(signal);
    apply(verdict);
    return verdict;
  }

  const throttle_state& state() const { return state_; }
  const throttle_options& options() const { return options_; }

private:
  throttle_options options_;
  throttle_state state_;
};

} // namespace georoute
