#include "georoute/actors/policy/throttle_policy.hpp"

namespace georoute {

std::chrono::milliseconds throttle_delay(const throttle_options& options,
                                         int64_t retry_after_ms) {
  return retry_after_ms > 0 ? std::chrono::milliseconds{retry_after_ms}
                            : options.default_delay;
}

throttle_verdict evaluate_throttle(const throttle_options& options,
                                   const throttle_state& state,
                                   const failure_signal& signal) {
  throttle_verdict verdict;
  verdict.next = state;
  if (!signal.is_status(429) || state.attempts >= options.max_attempts)
    return verdict;
  auto delay = throttle_delay(options, signal.retry_after_ms);
  if (delay >= options.max_wait || state.cumulative + delay > options.max_wait)
    return verdict;
  verdict.retry = true;
  verdict.delay = delay;
  verdict.next.attempts = state.attempts + 1;
  verdict.next.cumulative = state.cumulative + delay;
  return verdict;
}

} // namespace georoute
