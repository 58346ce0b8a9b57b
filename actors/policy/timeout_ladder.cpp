#include "georoute/actors/policy/timeout_ladder.hpp"

#include <charconv>
#include <cstdint>

namespace georoute {

using std::chrono::milliseconds;

ladder_choice choose_ladder(const timeout_ladders& ladders, request_kind kind,
                            bool per_partition_failover) {
  switch (kind) {
  case request_kind::account_read:
    return {&ladders.control_plane_read, true, false};
  case request_kind::query_plan:
  case request_kind::pkranges_read:
  case request_kind::metadata_read:
    return {&ladders.hot_path, true, true};
  case request_kind::document_read:
    if (per_partition_failover)
      return {&ladders.partition_failover, true, false};
    return {&ladders.default_ladder, true, false};
  case request_kind::probe:
    return {&ladders.no_retry, false, false};
  case request_kind::write:
    break;
  }
  return {&ladders.default_ladder, false, false};
}

ladder_decision decide_ladder(const ladder_choice& choice, size_t step,
                              bool timed_out, int status) {
  ladder_decision d;
  bool climbs = (timed_out && choice.retry_timeouts) ||
                (!timed_out && status == 408 && choice.retry_408);
  if (climbs && step + 1 < choice.ladder->size()) {
    d.climb = true;
    d.delay = (*choice.ladder)[step].delay_after;
    return d;
  }
  d.region_silent = timed_out && choice.retry_timeouts;
  return d;
}

result<milliseconds> parse_duration(std::string_view text) {
  if (text.empty()) return problem{"empty duration"};
  int64_t n = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc{} || ptr == text.data())
    return problem{"'" + std::string(text) +
                   "' is not a duration (expected e.g. 300s, 1500ms, 5min)"};
  if (n < 0) return problem{"'" + std::string(text) + "' is negative"};
  std::string_view unit(ptr,
                        static_cast<size_t>(text.data() + text.size() - ptr));
  int64_t factor = 0;
  if (unit == "ms")
    factor = 1;
  else if (unit == "s")
    factor = 1000;
  else if (unit == "min")
    factor = 60'000;
  else if (unit == "h")
    factor = 3'600'000;
  else
    return problem{"'" + std::string(text) +
                   "' has no valid unit (expected ms, s, min or h)"};
  if (n > INT64_MAX / factor / 1000)
    return problem{"'" + std::string(text) + "' is too large"};
  return milliseconds{n * factor};
}

std::string format_duration(milliseconds d) {
  auto n = d.count();
  if (n != 0 && n % 3'600'000 == 0) return std::to_string(n / 3'600'000) + "h";
  if (n != 0 && n % 60'000 == 0) return std::to_string(n / 60'000) + "min";
  if (n % 1000 == 0) return std::to_string(n / 1000) + "s";
  return std::to_string(n) + "ms";
}

result<ladder_step> parse_ladder_step(std::string_view text) {
  auto slash = text.find('/');
  if (slash == std::string_view::npos)
    return problem{"'" + std::string(text) +
                   "' is not a ladder step (expected <timeout>/<delay>, "
                   "e.g. 5s/0s)"};
  auto timeout = parse_duration(text.substr(0, slash));
  if (!timeout)
    return problem{"step '" + std::string(text) + "': " + timeout.error().what};
  auto delay = parse_duration(text.substr(slash + 1));
  if (!delay)
    return problem{"step '" + std::string(text) + "': " + delay.error().what};
  if (timeout->count() == 0)
    return problem{"step '" + std::string(text) +
                   "': the timeout must be positive"};
  return ladder_step{*timeout, *delay};
}

result<timeout_ladder> parse_ladder(const std::vector<std::string>& steps) {
  if (steps.empty()) return problem{"a ladder needs at least one step"};
  if (steps.size() > 10)
    return problem{"a ladder has at most 10 steps, got " +
                   std::to_string(steps.size())};
  timeout_ladder ladder;
  for (const auto& s : steps) {
    auto step = parse_ladder_step(s);
    if (!step) return step.error();
    ladder.push_back(*step);
  }
  return ladder;
}

std::string to_string(const ladder_step& step) {
  return format_duration(step.timeout) + "/" +
         format_duration(step.delay_after);
}

} // namespace georoute
