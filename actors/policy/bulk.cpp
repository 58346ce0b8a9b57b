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

} // namespace georoute
