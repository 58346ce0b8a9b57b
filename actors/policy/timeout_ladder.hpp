#pragma once

// HTTP timeout ladders (.NET HttpTimeoutPolicy, src/HttpClient/): per request
// kind, the list of per-attempt timeouts and the delay after each failed
// attempt. Pure data and a selection function; the transport applies one step
// per attempt.

#include "georoute/actors/policy/operation.hpp"
#include "georoute/actors/policy/result.hpp"

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

namespace georoute {

/// One step: the attempt's deadline and the pause after it if it timed out.
struct ladder_step {
  std::chrono::milliseconds timeout{0};
  std::chrono::milliseconds delay_after{0};

  friend bool operator==(const ladder_step& a, const ladder_step& b) {
    return a.timeout == b.timeout && a.delay_after == b.delay_after;
  }
};

/// A ladder: at least one step.
using timeout_ladder = std::vector<ladder_step>;

/// The configurable ladders, with the reference SDK's values as defaults.
struct timeout_ladders {
  /// Account reads: (5 s, 0), (10 s, 1 s), (20 s, 0).
  timeout_ladder control_plane_read{
      {std::chrono::seconds{5}, {}},
      {std::chrono::seconds{10}, std::chrono::seconds{1}},
      {std::chrono::seconds{20}, {}}};
  /// Metadata reads, query plans, pkranges: (1 s, 0), (5 s, 1 s), (65 s, 0).
  timeout_ladder hot_path{{std::chrono::seconds{1}, {}},
                          {std::chrono::seconds{5}, std::chrono::seconds{1}},
                          {std::chrono::seconds{65}, {}}};
  /// Document reads and writes: (65 s, 0), (65 s, 1 s), (65 s, 0).
  timeout_ladder default_ladder{
      {std::chrono::seconds{65}, {}},
      {std::chrono::seconds{65}, std::chrono::seconds{1}},
      {std::chrono::seconds{65}, {}}};
  /// Document reads with per-partition failover: (6 s, 0), (6 s, 0), (10 s, 0).
  timeout_ladder partition_failover{{std::chrono::seconds{6}, {}},
                                    {std::chrono::seconds{6}, {}},
                                    {std::chrono::seconds{10}, {}}};
  /// Probes: one attempt of 65 s.
  timeout_ladder no_retry{{std::chrono::seconds{65}, {}}};
};

/// How a ladder is used for one request kind.
struct ladder_choice {
  const timeout_ladder* ladder;
  /// Whether a timed-out attempt may be sent again (reads only: a write may
  /// have been applied).
  bool retry_timeouts;
  /// Whether a 408 response is retried on the next step.
  bool retry_408;
};

/// Selects the ladder for `kind` (.NET HttpTimeoutPolicy (src/HttpClient/),
/// "Selection").
ladder_choice choose_ladder(const timeout_ladders& ladders, request_kind kind,
                            bool per_partition_failover = false);

/// What the ladder makes of a failed attempt.
struct ladder_decision {
  /// Re-send on the same endpoint at the next step, after `delay`.
  bool climb = false;
  std::chrono::milliseconds delay{0};
  /// The attempt timed out on the last step of a ladder that retries
  /// timeouts: the region stayed silent through the whole ladder.
  bool region_silent = false;
};

/// Decides after attempt `step` (0-based) failed: a timeout climbs when the
/// kind retries timeouts, a 408 climbs when the kind retries 408s, each only
/// while a step is left; the delay is that of the failed step.
ladder_decision decide_ladder(const ladder_choice& choice, size_t step,
                              bool timed_out, int status);

/// Parses one step written as "<timeout>/<delay>", e.g. "5s/0s" or
/// "500ms/1s". Units: ms, s, min. The timeout must be positive.
result<ladder_step> parse_ladder_step(std::string_view text);

/// Parses a whole ladder; at least one and at most 10 steps.
result<timeout_ladder> parse_ladder(const std::vector<std::string>& steps);

/// Renders a step as "5s/0s" (the shortest exact unit).
std::string to_string(const ladder_step& step);

/// Renders a duration as "300s", "1500ms" or "5min" (shortest exact unit).
std::string format_duration(std::chrono::milliseconds d);

/// Parses "300s", "1500ms", "5min", "2h" into milliseconds.
result<std::chrono::milliseconds> parse_duration(std::string_view text);

} // namespace georoute
