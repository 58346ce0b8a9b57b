#pragma once

// Cross-region hedging, the pure rules: which results end a hedged
// operation, which operations are hedged and to which regions, the static
// and adaptive thresholds, the options, and the metadata hedge's rules.
// hedge_plan.hpp holds the arms of one operation and their RU accounting;
// hedge_budget.hpp the engine-wide state (answer times per region, the
// data-plane budget, the metadata budget). The per-operation state machine
// owns one `hedge_plan`; the engine owns one `region_latencies`, one
// `hedge_budget` and one `metadata_hedge_budget`.
//
// A hedged operation sends arm 0 to the first region of the request's
// applicable list (after exclusions); arm i >= 1 goes to region i, at
// `threshold + step * (i - 1)` after arm 0 was sent, or at once when an arm
// ends with a result that another region may change. The first final result
// of any arm is the operation's result; when every arm has answered and none
// was final, the last answer is. The caller's sequence, in its simplest
// form (hedged_operation.hpp carries it out, choosing the regions only when
// the first hedge is due and consulting the circuit breaker):
//
//   regions = hedge_regions(table, op, excluded, now);
//   if (hedge_eligibility(opts, {op, ..., regions.size()}) ==
//       hedge_skip::none) {
//     budget.record_operation(now);
//     timing = choose_hedge_timing(opts, request_override, read_ladder,
//                                  latencies.percentile(regions[0]));
//     hedge_plan plan{regions, timing, now};  // send arm 0
//   }
//   on a timer or an arm's answer:
//     plan.on_result(arm, outcome, charge, now);
//     if (auto n = plan.next_start(); n && n->at <= now)
//       budget.try_take(now) ? send(*plan.start_next(now)) : plan.stop();
//     else if (n) arm a timer for n->at;
//     if (plan.finished()) answer with plan.result_arm(), record
//       plan.summary(), feed final answers' latencies to `latencies`.
//
// Nothing here reads a clock: every time is a `now` argument.

#include "georoute/actors/policy/location_table.hpp"
#include "georoute/actors/policy/timeout_ladder.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace georoute {

// -- results ---------------------------------------------------------------

/// Why an attempt produced no HTTP response, as far as hedging cares.
enum class transport_fault : uint8_t {
  none,       ///< an HTTP response arrived; see the status
  connection, ///< refused, reset, DNS, TLS, protocol: nothing usable came
  timeout,    ///< the attempt's deadline expired
};

/// What one arm produced.
struct arm_outcome {
  transport_fault fault = transport_fault::none;
  int status = 0;
  int substatus = 0;

  static arm_outcome http(int status, int substatus = 0) {
    return {transport_fault::none, status, substatus};
  }
  static arm_outcome connection_failure() {
    return {transport_fault::connection, 0, 0};
  }
  static arm_outcome timed_out() { return {transport_fault::timeout, 0, 0}; }
};

/// What a result means for a hedged operation.
enum class hedge_class : uint8_t {
  final_result,   ///< the operation's result: no other region can change it
  start_next,     ///< not final; the next arm starts at once
  wait_for_timer, ///< not final; the next arm still waits for its time
};

/// The one classification; `final_for_hedging` and `starts_next_arm_early`
/// are views of it. Final (another region would answer the same, so waiting
/// for it only adds load):
///   1xx-3xx      an answer, 304 included
///   400, 405, 413, 422  the request itself is malformed or unsupported
///   401          the key is the account's, valid or not in every region
///   403 except /3 and /1008  authorization, firewall and quota rules are
///                the account's (Rust driver); 403/3 (not a write region, or
///                not the hub for a hub-only read) and 403/1008 (the region
///                no longer serves the account) are about the region
///   404/0        the item does not exist; other 404s (1002 session not yet
///                replicated, ...) may differ in a region that caught up
///   409, 412     the data's answer. For a hedged write one arm's 409/412
///                can be the echo of a sibling arm's applied write; that is
///                why writes hedge only when their retries are safe
///   451, 501, 505  the service's rules and protocol, not the region's
///   429/3200, 3210, 3214  the RU budget and hot-partition throttles; the
///                provisioned throughput is the same in every region, and a
///                hedge would spend more RU on an account already over it
/// Not final, next arm at once: every transport fault, 408, 410 (1022 lease
/// not found, 1002 partition gone, ...), 449, 429/3092 (the region is out of
/// resources, treated as 503), 500, 502, 503, 504, the 403s and 404s above,
/// a missing status, and any status not listed (another region may answer;
/// the hedge budget bounds the cost). Not final, wait for the timer: every
/// other 429; the account is throttled and its own back-off runs, so an
/// early arm would only add load. .NET, Java and Python treat every 403 and
/// 429 as not final; this follows the Rust driver's reasoning instead.
hedge_class classify_for_hedging(transport_fault fault, int status,
                                 int substatus);

inline hedge_class classify_for_hedging(const arm_outcome& x) {
  return classify_for_hedging(x.fault, x.status, x.substatus);
}

/// True when the result ends the operation (see `classify_for_hedging`).
bool final_for_hedging(transport_fault fault, int status, int substatus);

/// True when a non-final result starts the next arm without waiting for its
/// scheduled time (false for final results and for throttles).
bool starts_next_arm_early(transport_fault fault, int status, int substatus);

// -- options ---------------------------------------------------------------

/// How the threshold of arm 1 is chosen.
enum class hedge_threshold_mode : uint8_t {
  static_threshold, ///< the configured (or derived) threshold
  adaptive,         ///< from the primary region's observed latency
};

/// The adaptive threshold: clamp(factor * percentile, lower_bound, static).
struct adaptive_hedge_options {
  /// The percentile of a region's recent answer times. p99: one request in
  /// a hundred is slow in normal times, so a threshold above it hedges
  /// little when the region is healthy.
  double percentile = 0.99;
  /// Multiplies the percentile. Two: in normal times only requests twice as
  /// slow as the region's normal tail are hedged, and the slow answers that
  /// hedges cut short (never observed) do not drag the estimate down.
  double factor = 2.0;
  /// The threshold never goes below this: under ~50 ms the extra requests
  /// from jitter (GC pauses, a retransmit) buy little, since the hedge
  /// itself crosses to another region (the Rust driver's first design used
  /// 50 ms as its floor). The static threshold is the ceiling.
  std::chrono::milliseconds lower_bound{50};
  /// Answer times kept per region (the most recent ones). 256: a p99 ranks
  /// the third slowest; memory is this many samples per region.
  std::size_t window = 256;
  /// With fewer samples the static threshold applies: the p99 of fewer than
  /// 50 samples is their maximum, too noisy to act on.
  std::size_t min_samples = 50;
};

/// The data-plane hedge budget.
struct hedge_budget_options {
  /// Hedge arms as a share of the hedge-eligible operations started in the
  /// window: 10 % bounds the extra requests (and RU) of a day when every
  /// region is slow to a tenth of the hedged traffic.
  double share = 0.10;
  /// The sliding window: the current bucket and the ones before it.
  std::chrono::milliseconds window{std::chrono::seconds{10}};
  std::chrono::milliseconds bucket{std::chrono::seconds{1}};
  /// Hedges allowed per window whatever the share, so a cold or quiet
  /// engine (3 operations: 10 % is 0.3) can still hedge its first slow
  /// requests. The absolute cost is 3 extra requests per window.
  uint32_t min_allowance = 3;
};

/// Metadata hedging (collection reads, query plans, the first page of the
/// partition-range feed): one hedge to the next region.
struct metadata_hedge_options {
  /// The hedge starts this long after the primary: between the hot-path
  /// ladder's first (1 s) and second (5 s) attempt timeouts, so a region
  /// that missed the first rung is hedged before the second.
  std::chrono::milliseconds threshold{1500};
  /// Metadata hedges in flight at once across the engine; 0 disables
  /// metadata hedging. 32 (the Rust driver's value) bounds the
  /// amplification of a brownout, when every cold lookup would hedge.
  /// Set by `georoute.hedging.metadata-max-concurrent`.
  uint32_t max_concurrent = 32;
};

/// Engine-wide hedging options. Every default is documented on its field.
struct hedging_options {
  /// Hedge eligible data-plane operations. On by default: with it (and the
  /// partition breaker) a hung, slow, flapping region or one hung range
  /// costs the affected site's reads one threshold at most, where without
  /// it they wait out the ladder or their caller's deadline (the drill's G
  /// scenarios judge this at the library's defaults); when nothing is slow
  /// nothing is hedged, and the budget caps the cost of a slow-everywhere
  /// day.
  bool enabled = true;
  /// Hedge writes: only with this, on a multi-write account, and when the
  /// write's retries are safe.
  bool hedge_writes = false;
  /// The static threshold; unset: min(1 s, the read ladder's first attempt
  /// timeout / 2), the .NET and Rust default, which hedges well before a
  /// slow first attempt times out.
  std::optional<std::chrono::milliseconds> threshold;
  /// Between later arms (500 ms, as .NET and Java with per-partition
  /// failover).
  std::chrono::milliseconds step{500};
  hedge_threshold_mode mode = hedge_threshold_mode::static_threshold;
  adaptive_hedge_options adaptive;
  hedge_budget_options budget;
  metadata_hedge_options metadata;

  /// One line per invalid field, naming it ("hedging.step = 0ms: must be
  /// positive"); empty when valid.
  std::vector<std::string> validate() const;
};

// -- eligibility and regions -----------------------------------------------

/// A request's own hedging settings; unset fields use the engine's.
struct hedge_override {
  std::optional<bool> enabled;
  std::optional<bool> hedge_writes;
  std::optional<std::chrono::milliseconds> threshold;
  std::optional<std::chrono::milliseconds> step;
};

/// What eligibility needs to know about one data-plane operation: a point
/// read, a single-partition query, or one range page of a cross-partition
/// query (each page is its own operation), or a write.
struct hedge_request {
  op_kind op = op_kind::read;
  /// The account takes writes in several regions and the client uses them
  /// (`location_table::can_support_multiple_write_locations(true)`).
  bool multi_write_account = false;
  /// A retry of this write cannot apply it twice (idempotent, or tracked).
  bool write_retries_safe = false;
  /// Regions left after exclusions (`hedge_regions(...).size()`).
  std::size_t region_count = 0;
  hedge_override request;
};

/// Why an operation is not hedged; `none` hedges it.
enum class hedge_skip : uint8_t {
  none,
  disabled,             ///< off in the options or for this request
  write_not_opted_in,   ///< a write, and `hedge_writes` is off
  write_single_write,   ///< a write, and the account writes in one region
  write_not_retry_safe, ///< a write whose retry could apply it twice
  single_region,        ///< fewer than two regions after exclusions
};

/// Stable lower-case name, e.g. "single_region".
const char* to_string(hedge_skip x);

/// Whether to hedge: reads whenever enabled, writes only when also opted
/// in (`hedge_writes`), on a multi-write account, with safe retries; in
/// every case two regions at least. A request's override wins over the
/// options, field by field.
hedge_skip hedge_eligibility(const hedging_options& options,
                             const hedge_request& request);

/// The regions of the arms: the request's applicable endpoints (after
/// exclusions) mapped to their regions, without duplicates or unnamed
/// endpoints, and without regions marked unavailable for `op` (no arm goes
/// where the engine already knows it waits). When exclusions or marks
/// leave one region or none, there is no hedging.
std::vector<std::string> hedge_regions(const location_table& table, op_kind op,
                                       const std::vector<std::string>& excluded,
                                       policy_time now);

/// The exclusions of arm `arm`: arm 0 keeps the request's own, so its
/// ordinary cross-region retries still apply; arm i >= 1 also excludes
/// every other hedge region, so its retries stay in region i.
std::vector<std::string>
arm_exclusions(const std::vector<std::string>& request_excluded,
               const std::vector<std::string>& regions, std::size_t arm);

// -- thresholds ------------------------------------------------------------

/// min(1 s, first attempt timeout / 2), at least 1 ms; 1 s for an empty
/// ladder.
std::chrono::milliseconds default_hedge_threshold(const timeout_ladder& ladder);

/// `options.threshold` if set, else `default_hedge_threshold(read_ladder)`.
std::chrono::milliseconds
static_hedge_threshold(const hedging_options& options,
                       const timeout_ladder& read_ladder);

/// clamp(factor * percentile, lower_bound, static_threshold), rounded up to
/// a millisecond; the static threshold without a percentile (too few
/// samples). The static threshold is a hard ceiling, even below the lower
/// bound.
std::chrono::milliseconds
adaptive_hedge_threshold(const adaptive_hedge_options& options,
                         std::optional<std::chrono::microseconds> percentile,
                         std::chrono::milliseconds static_threshold);

/// When arm 1 starts, and the step between later arms.
struct hedge_timing {
  std::chrono::milliseconds threshold{1000};
  std::chrono::milliseconds step{500};
};

/// The timing of one operation. The request's threshold wins; otherwise
/// the mode's (`primary_percentile`: the primary region's, from
/// `region_latencies::percentile`). The request's step wins over the
/// options'.
hedge_timing choose_hedge_timing(
    const hedging_options& options, const hedge_override& request,
    const timeout_ladder& read_ladder,
    std::optional<std::chrono::microseconds> primary_percentile);

// -- metadata hedging ------------------------------------------------------

/// Whether a metadata request is hedged: a collection (or database) read, a
/// query plan (a read-only POST that stalls every cross-partition query
/// while its region hangs), or the first page of the partition-range feed
/// (later pages stay on the region that served the first); with budget
/// slots configured and two regions at least.
bool metadata_hedge_applies(const metadata_hedge_options& options,
                            request_kind kind, bool first_page,
                            std::size_t region_count);

/// The region of the one metadata hedge: the first of `regions` that is not
/// the primary's; nullopt when there is none.
std::optional<std::string>
metadata_hedge_region(const std::vector<std::string>& regions,
                      std::string_view primary_region);

/// What a metadata attempt produced.
enum class metadata_outcome : uint8_t {
  success,          ///< 1xx-3xx
  definitive_error, ///< an answer about the resource or the caller: 401,
                    ///< 404, 400, 409, 429, ...
  regional_failure, ///< about the region: a connection failure or timeout,
                    ///< 503, 500, 502, 504, 408, 410/1022, 403/1008
};

/// Sorts an attempt's result. 502, 504 and 408 are regional here too (a
/// proxy or the region's gateway gave up; nothing was said about the
/// resource), beyond the .NET list (503, 500, 410/1022, 403/1008,
/// connection failures).
metadata_outcome classify_metadata_outcome(transport_fault fault, int status,
                                           int substatus);

/// Whether the hedge's result becomes the operation's. The primary (the
/// first region) is authoritative: once it has a definitive answer (success
/// or a definitive error) nothing replaces it, and while it is still
/// running (`primary` nullopt) only a hedge's success is taken; a hedge's
/// 401 or 404 waits for the primary. Once the primary failed regionally
/// the hedge's result, whatever it is, is taken.
bool metadata_hedge_wins(std::optional<metadata_outcome> primary,
                         metadata_outcome hedge);

} // namespace georoute
