#include "georoute/actors/policy/bulk.hpp"

#include <algorithm>
#include <cmath>

namespace georoute {

std::optional<std::string> check_bulk_options(const bulk_options& o) {
  if (o.max_operations_per_request < 1 ||
      o.max_operations_per_request > max_batch_operations)
    return "bulk option max_operations_per_request is " +
           std::to_string(o.max_operations_per_request) + "; it must be 1 to " +
           std::to_string(max_batch_operations);
  if (o.max_request_bytes < 1024 || o.max_request_bytes > max_batch_bytes)
    return "bulk option max_request_bytes is " +
           std::to_string(o.max_request_bytes) + "; it must be 1024 to " +
           std::to_string(max_batch_bytes) + " (2 MiB)";
  if (o.max_requests_per_range < 1 || o.max_requests_per_range > 1000)
    return "bulk option max_requests_per_range is " +
           std::to_string(o.max_requests_per_range) + "; it must be 1 to 1000";
  if (o.budget_ms < 0)
    return "bulk option budget_ms is " + std::to_string(o.budget_ms) +
           "; it may not be negative (0: the engine's operation budget)";
  return std::nullopt;
}

bulk_op_verdict classify_bulk_op(int status, int substatus, bool leading,
                                 uint32_t gone_resends) {
  if (status == 429) return bulk_op_verdict::throttled;
  if (status == 410 &&
      (substatus == 1002 || substatus == 1007 || substatus == 1008))
    return bulk_op_verdict::regroup;
  if (status == 410)
    return gone_resends < max_bulk_gone_resends ? bulk_op_verdict::resend_gone
                                                : bulk_op_verdict::done;
  // The answer was full before its turn; only an answer it led is final
  // (see the declaration: why this always makes progress).
  if (status == 413 && substatus == 3402)
    return leading ? bulk_op_verdict::done : bulk_op_verdict::resend_now;
  return bulk_op_verdict::done;
}

bulk_failure_verdict classify_bulk_failure(errc code) {
  switch (code) {
  case errc::partition_range_gone:
    return bulk_failure_verdict::regroup;
  case errc::overloaded:
    return bulk_failure_verdict::retry_later;
  // Refused before the request ran: by the engine, by the service's
  // checks, or by every region refusing the connection.
  case errc::validation_error:
  case errc::connection_refused:
  case errc::dns_failure:
  case errc::tls_failure:
  case errc::bad_request:
  case errc::unauthorized:
  case errc::forbidden:
  case errc::write_forbidden:
  case errc::account_not_found:
  case errc::not_found:
  case errc::read_session_unavailable:
  case errc::throttled:
  case errc::lease_not_found:
    return bulk_failure_verdict::final;
  // Everything else may have run: a timeout, a lost connection, a 408, a
  // 5xx, an answer that breaks the protocol, a budget spent or an engine
  // stopped while it was out.
  default:
    return bulk_failure_verdict::maybe_applied;
  }
}

range_congestion::range_congestion(uint32_t ceiling)
    : ceiling_(std::max<uint32_t>(1, ceiling)) {}

uint32_t range_congestion::window() const {
  auto w = static_cast<uint32_t>(std::floor(cwnd_));
  return std::clamp<uint32_t>(w, 1, ceiling_);
}

uint64_t range_congestion::on_send() {
  ++in_flight_;
  return next_seq_++;
}

void range_congestion::on_abandon(uint64_t) {
  if (in_flight_ > 0) --in_flight_;
}

void range_congestion::on_answer(uint64_t seq, bool throttled) {
  if (in_flight_ > 0) --in_flight_;
  if (throttled) {
    // One cut per round: the requests already out when the window was cut
    // saw the old window's load, and their throttles say nothing new.
    if (seq <= cut_until_) return;
    ssthresh_ = std::max(1.0, cwnd_ / 2);
    cwnd_ = ssthresh_;
    cut_until_ = next_seq_ - 1;
    clear_ = 0;
    ++cuts_;
    return;
  }
  if (ssthresh_ == 0 || cwnd_ < ssthresh_) {
    cwnd_ += 1; // slow start: one more per answer, twice as many a round
  } else if (++clear_ >= window()) {
    cwnd_ += 1; // one more per round: a window's worth of clear answers
    clear_ = 0;
  }
  cwnd_ = std::min(cwnd_, static_cast<double>(ceiling_));
  peak_ = std::max(peak_, window());
}

bulk_throttle_verdict
decide_bulk_throttle(const throttle_options& options,
                     const throttle_state& state, int64_t retry_after_ms,
                     bool early,
                     std::chrono::steady_clock::duration time_left) {
  using kind = bulk_throttle_verdict::kind;
  bulk_throttle_verdict v;
  v.next = state;
  if (early) {
    v.delay = throttle_delay(options, retry_after_ms);
  } else {
    auto t = evaluate_throttle(options, state,
                               failure_signal::http(429, 0, retry_after_ms));
    if (!t.retry) {
      v.delay = throttle_delay(options, retry_after_ms);
      return v; // final
    }
    v.delay = t.delay;
    v.next = t.next;
  }
  v.what = v.delay > time_left ? kind::out_of_time : kind::wait;
  return v;
}

bool bulk_request_fill::take(size_t json_bytes) {
  if (full()) return false;
  size_t more = json_bytes + (count_ > 0 ? 1 : 0); // the comma
  if (count_ > 0 && bytes_ + more > max_bytes_) return false;
  bytes_ += more;
  ++count_;
  return true;
}

bool bulk_may_send(const range_congestion& cc, size_t backlog) {
  return cc.can_send() && (backlog == 0 || cc.in_flight() == 0);
}

bulk_front_plan
plan_bulk_front(std::chrono::steady_clock::time_point deadline,
                std::chrono::steady_clock::time_point not_before,
                std::chrono::steady_clock::time_point now,
                std::chrono::steady_clock::time_point last_send, bool alone) {
  using kind = bulk_front_plan::kind;
  if (deadline <= now) return {kind::expired, {}};
  if (not_before <= now) return {kind::take, {}};
  auto probe_at = last_send + bulk_probe_every;
  if (alone && not_before > probe_at) {
    if (probe_at <= now) return {kind::probe, {}};
    return {kind::wait, probe_at};
  }
  return {kind::wait, not_before};
}

size_t bulk_release_count(bool throttled, bool probe, size_t carried,
                          size_t backlog) {
  if (throttled || backlog == 0) return 0;
  return probe ? backlog : std::min(backlog, 2 * carried);
}

} // namespace georoute
