#pragma once

// What a process does with the region-health reports of its fleet: the
// receiver's rules, pure and table-tested. The transport (NATS) hands each
// report over with the reporter id the server authenticated (taken from the
// subject, never from the payload); this decides what the reports are worth
// and which regions the fleet's evidence demotes.
//
// A report is one claim by one reporter about one region of one account:
// "down" (reads on it waited for the hedge threshold, its breaker opened, it
// refused connections) or "up" (the reporter's own probe of it succeeded),
// with the first-hand evidence behind it. The rules:
//
//   1. Dropped and counted, never believed: a payload over 1 KiB, not a JSON
//      object, an unknown version or a field of the wrong type or range
//      (`parse_fleet_claim`); a clock more than 30 s from the receiver's; a
//      replay (within one reporter epoch a sequence number not above the
//      last one, or an epoch older than the reporter's latest); a reporter
//      past its token bucket (5 a second, 20 deep), which is then ignored
//      for 60 s with its claims withdrawn; a new reporter beyond
//      `max_reporters`.
//   2. Each reporter holds its latest claim per region; a claim lapses at
//      its receipt + min(its ttl, 15 s). An "up" only withdraws the
//      reporter's own "down": it never restores a region. A report that
//      could not be parsed still takes a token from its reporter's bucket
//      (`malformed`), so a flood of garbage is a flood.
//   3. A reporter that is itself unhealthy counts for nothing: a local
//      health score of 3 or more (its timers run late), claims against two
//      or more regions of the account at once (a sick observer sees
//      everything fail), or no success elsewhere in its window (`oko` = 0:
//      no differential evidence).
//   4. A region is judged down by the fleet when at least `min_reporters`
//      (k, 2 by default) distinct reporters hold a counted "down" claim.
//      Each reporter is one vote, however often it reports.
//      The owner hands its own claims in too (under its own id): its
//      first-hand evidence is one vote, and one peer's agreement makes a
//      verdict at k = 2, while a process without evidence of its own
//      needs k peers.
//   5. The receiver's own normal-latency success on the region within the
//      last 2 s vetoes the verdict, and lifts one already applied:
//      first-hand evidence beats hearsay. Only while it is the receiver's
//      latest word on the region: a failure it saw there since
//      (`local_failure`) ends the veto, so a region that answered a moment
//      before it hung is not shielded for 2 s.
//   6. Never the last region: at most n-1 regions of an account's read list
//      are demoted at once; when more qualify, the ones with the most votes
//      go first (then the later in the preference order), and the refusals
//      are counted.
//   7. An applied verdict holds at least 5 s. When it lapses (fewer than k
//      votes, or expired) the region is not restored: it waits for the
//      receiver's own probe (`probe_succeeded`), and stays demoted until
//      then. `regions_to_probe` lists them for the owner.
//
// What a verdict does is the owner's to carry out, and soft: the region goes
// to the end of the read order (hedged at once), for a multi-write account
// also of the write order, and stays usable as the last resort. Hearsay never
// moves the write region of a single-write account: `demoted_for_writes` is
// always empty there. Partition-scoped claims (`pk`) are checked and their
// sequence numbers count, but they never demote a region (what they may do,
// hedge that partition at once, is not built yet).
//
// With k = 2 neither one sick nor one forged reporter (with valid
// credentials) can demote anything; k or more colluders can only reorder
// regions, never the last one, for at most the claim's life plus the hold,
// and cannot stop fail-back, which needs the receiver's own probe.
//
// Time: `now` (steady) for lifetimes, `wall_ms` (the receiver's wall clock,
// ms since the epoch) only to compare with a report's `ts`. Region names are
// compared ignoring ASCII case, like the location table. Memory is bounded
// by `max_reporters` times the regions claimed. One per account: rule 3
// counts a reporter's claims across the regions it holds, which must be
// one account's. Not thread-safe: one actor owns it.

#include "georoute/actors/policy/result.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace georoute {

// -- one report ---------------------------------------------------------------

/// What a reporter claims about a region.
enum class fleet_claim_state : uint8_t { down, up };

/// Which operations the reporter saw it on.
enum class fleet_claim_class : uint8_t { read, write };

/// The first-hand evidence behind a claim, over the reporter's window.
struct fleet_evidence {
  uint32_t threshold_waits =
      0;                  ///< `to`: reads that reached the hedge threshold
  uint32_t errors = 0;    ///< `er`: transport errors, 408s and 5xx
  uint32_t successes = 0; ///< `ok`: successes on this region
  uint32_t successes_other = 0; ///< `oko`: normal-latency successes elsewhere
  uint32_t window_ms = 0;       ///< `win`
};

/// One report, parsed and checked (`parse_fleet_claim`). The reporter's id
/// is not in it: it comes from what the server authenticated.
struct fleet_claim {
  std::string epoch; ///< `ep`: 16 hex digits, new at each reporter start
  uint64_t seq = 0;  ///< `sq`: +1 per report within the epoch
  int64_t ts_ms = 0; ///< `ts`: the reporter's wall clock when sent
  fleet_claim_state state = fleet_claim_state::down;    ///< `st`
  fleet_claim_class op_class = fleet_claim_class::read; ///< `sc`
  /// `pk`: "<collection rid>/<range id>" for a partition-scoped claim.
  std::string partition;
  fleet_evidence evidence;          ///< `ev`
  uint8_t local_health = 0;         ///< `lh`: 0 (healthy) .. 7
  std::chrono::milliseconds ttl{0}; ///< `ttl`: how long to believe it
};

/// Whether `epoch` is a reporter epoch: 16 hex digits.
bool is_fleet_epoch(std::string_view epoch);

/// How region names are compared here: ASCII lower case ("East US" and
/// "east us" are one region).
std::string fleet_region_key(std::string_view region);

/// The largest payload read at all.
constexpr std::size_t max_fleet_payload = 1024;

/// Parses one payload: a JSON object with `v` = 1 and the fields above.
/// Fields it does not know are ignored (a later minor version may add
/// some); a known field of the wrong type or out of range is a problem
/// naming it.
result<fleet_claim> parse_fleet_claim(std::string_view payload);

// -- options ------------------------------------------------------------------

struct fleet_health_options {
  /// k: distinct reporters whose counted "down" claims make a verdict.
  uint32_t min_reporters = 2;
  /// The longest a claim is believed, whatever its ttl says.
  std::chrono::milliseconds max_claim_ttl{std::chrono::seconds{15}};
  /// A report whose `ts` is further than this from the receiver's wall
  /// clock is dropped.
  std::chrono::milliseconds max_clock_skew{std::chrono::seconds{30}};
  /// The token bucket per reporter: reports a second, and its depth.
  double reports_per_second = 5;
  uint32_t report_burst = 20;
  /// How long a reporter past its bucket is ignored.
  std::chrono::milliseconds flood_penalty{std::chrono::seconds{60}};
  /// A reporter with this local health score or more counts for nothing.
  uint8_t unhealthy_score = 3;
  /// The receiver's own success on a region this recent vetoes a verdict.
  std::chrono::milliseconds local_veto{std::chrono::seconds{2}};
  /// An applied verdict holds at least this long.
  std::chrono::milliseconds min_hold{std::chrono::seconds{5}};
  /// Reporters tracked at most; reports from further new ones are dropped.
  std::size_t max_reporters = 1024;

  /// A problem naming the first bad field, or nothing.
  std::optional<problem> validate() const;
};

// -- the receiver -------------------------------------------------------------

/// Why a report was dropped; `accepted` when it was not.
enum class fleet_drop : uint8_t {
  accepted,
  malformed,          ///< `parse_fleet_claim` refused it (the caller counts it)
  clock_skew,         ///< `ts` too far from the receiver's clock
  replayed,           ///< not newer than the reporter's last report
  flooded,            ///< past the reporter's bucket, or inside its penalty
  too_many_reporters, ///< a new reporter beyond `max_reporters`
};

/// A short name for logs and metrics ("clock_skew").
std::string_view to_string(fleet_drop d);

/// What the fleet's evidence does to one account's regions now.
struct fleet_view {
  /// Regions to put at the end of the read order, in the account's
  /// preference order (the owner keeps that order among them). Never every
  /// region of the list.
  std::vector<std::string> demoted_for_reads;
  /// The same for the write order; empty for a single-write account.
  std::vector<std::string> demoted_for_writes;
  /// Demoted regions whose verdict lapsed: the owner probes them and
  /// calls `probe_succeeded` when one answers.
  std::vector<std::string> regions_to_probe;
};

/// Counters, for metrics. Each only grows.
struct fleet_health_counters {
  uint64_t accepted = 0;
  uint64_t dropped_malformed = 0;
  uint64_t dropped_clock_skew = 0;
  uint64_t dropped_replayed = 0;
  uint64_t dropped_flooded = 0;
  uint64_t dropped_too_many_reporters = 0;
  uint64_t asks = 0;             ///< newcomers' asks for the claims, taken
  uint64_t verdicts_applied = 0; ///< a region demoted by the fleet
  uint64_t verdicts_vetoed =
      0; ///< a verdict the receiver's success refused or lifted
  uint64_t verdicts_refused_last_region = 0; ///< kept back by rule 6
  uint64_t restored_by_probe =
      0; ///< a lapsed verdict's region back after a probe
};

class fleet_health {
public:
  using clock = std::chrono::steady_clock;

  /// Throws std::invalid_argument when the options are not usable.
  explicit fleet_health(fleet_health_options options = {});

  /// One report of `reporter` (the server-authenticated id) about `region`.
  /// Returns `accepted` or why it was dropped (and counts it).
  fleet_drop receive(std::string_view reporter, std::string_view region,
                     const fleet_claim& claim, clock::time_point now,
                     int64_t wall_ms);

  /// A report of `reporter` that `parse_fleet_claim` refused: counted, and
  /// it takes a token from the reporter's bucket like any other report.
  void malformed(std::string_view reporter, clock::time_point now);

  /// `reporter` (a newcomer) asks for the current claims. It takes a token
  /// from the reporter's bucket like a report; false when it is flooded (or
  /// past `max_reporters`): then the ask is ignored.
  bool asked(std::string_view reporter, clock::time_point now);

  /// The receiver itself had a normal-latency success on `region`.
  void local_success(std::string_view region, clock::time_point now);

  /// The receiver itself saw `region` fail (a read waited for the hedge
  /// threshold, an error, a refusal, its breaker or failover gave up on
  /// it). Newer than its last success there, it ends that success's veto:
  /// the receiver's own latest word on the region is no longer "healthy".
  void local_failure(std::string_view region, clock::time_point now);

  /// The receiver's own probe of `region` succeeded: a lapsed verdict's
  /// region is restored.
  void probe_succeeded(std::string_view region, clock::time_point now);

  /// Applies the rules at `now` to an account whose read regions are
  /// `read_regions` (in preference order) and returns what to demote.
  /// `multi_write`: whether writes go to several regions (only then are
  /// writes demoted).
  fleet_view evaluate(const std::vector<std::string>& read_regions,
                      bool multi_write, clock::time_point now);

  /// Distinct reporters whose "down" claim on `region` counts at `now`.
  uint32_t votes(std::string_view region, clock::time_point now) const;

  const fleet_health_counters& counters() const { return counters_; }
  const fleet_health_options& options() const { return options_; }

private:
  struct held_claim {
    fleet_claim claim;
    clock::time_point expires;
  };
  struct reporter {
    std::string epoch;
    uint64_t seq = 0;
    int64_t ts_ms = 0;
    bool seen = false;
    double tokens = 0;
    clock::time_point refilled;
    clock::time_point ignored_until;
    clock::time_point last_heard;
    /// Region key (lower-cased) -> its latest region-scoped "down" claim.
    std::map<std::string, held_claim> regions;
  };
  enum class verdict_state : uint8_t { applied, awaiting_probe };
  struct verdict {
    verdict_state state = verdict_state::applied;
    clock::time_point since;
  };

  /// The reporter's bucket at `now`: `accepted`, or `flooded` (and the
  /// penalty starts), or `too_many_reporters` for a new one beyond the cap.
  fleet_drop take_token(std::string_view id, clock::time_point now,
                        reporter** out);
  bool counts(const reporter& r, const held_claim& c,
              clock::time_point now) const;
  bool vetoed(const std::string& key, clock::time_point now) const;
  void forget_idle(clock::time_point now);

  fleet_health_options options_;
  fleet_health_counters counters_;
  std::map<std::string, reporter, std::less<>> reporters_;
  /// Region key -> the receiver's last normal-latency success there.
  std::map<std::string, clock::time_point> local_success_;
  /// Region key -> the receiver's last failure there.
  std::map<std::string, clock::time_point> local_failure_;
  /// Region key -> its verdict, while the region is demoted.
  std::map<std::string, verdict> verdicts_;
  /// Regions whose verdict the veto or rule 6 is holding back now: each
  /// episode is counted once, not at every evaluation.
  enum class held_back_by : uint8_t { veto, last_region };
  std::map<std::string, held_back_by> held_back_;
};

} // namespace georoute
