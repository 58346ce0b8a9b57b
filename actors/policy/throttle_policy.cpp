#include "georoute/actors/policy/throttle_policy.hpp"

namespace georoute {

throttle_verdict evaluate_throttle(const throttle_options& options,
                                   const throttle_state& state,
                                   const failure_signal& signal) {
  throttle_verdict verdict;
  verdict.next = state;
  if (!signal.is_status(429) || state.attempts >= options.max_attempts)
    return verdict;
  auto delay = signal.retry_after_ms > 0
                   ? std::chrono::milliseconds{signal.retry_after_ms}
                   : options.default_delay;
  if (delay >= options.max_wait || state.cumulative + delay > options.max_wait)
    return verdict;
  verdict.retry = true;
  verdict.delay = delay;
  verdict.next.attempts = state.attempts + 1;
  verdict.next.cumulative = state.cumulative + delay;
  return verdict;
}

} // namespace georoute
