#pragma once

// What a process tells its fleet about the regions it uses: the sender's
// rules, pure and table-tested (the receiver's are in fleet_health.hpp).
// The owner feeds it what its own requests saw and asks it, on a timer,
// which reports are due; the transport publishes them (or drops them: a
// report is never queued).
//
// First-hand only: a process reports what its own requests and probes saw,
// never what peers said (one process, one independent vote). The rules:
//
//   - "down" about region R when, within the last `window` (10 s): at least
//     `min_threshold_waits` (2) reads on R waited for the hedge threshold,
//     or R's circuit breaker opened, or R refused a connection, or the
//     process's own failover marked R unavailable for reads; and the
//     process itself had a normal-latency success on another region in that
//     window (differential evidence: it is R, not the reporter); and the
//     reporter's local health score is at most 1; and no other region
//     qualifies at the same time (a reporter that sees everything fail is
//     the sick one, so it says nothing).
//   - While that holds, the claim is sent again every `refresh` (5 s) with
//     a ttl of `ttl` (15 s). When it stops holding the claim is not
//     repeated and lapses at the receivers; "up" is sent once the process's
//     own probe of R succeeds (`probe_succeeded`), and only if it had
//     claimed "down". The probe is newer than the evidence against R: that
//     evidence is forgotten, and R qualifies again only by failing again.
//   - A peer that starts asks for the current claims (`resend_claims`):
//     each held claim goes out again at once, so that the newcomer knows
//     before its first reads go out, and does not pay for the incident
//     while it waits for the next refresh. The answer is not held by the
//     region's spacing below (one report a second about a region would make
//     a newcomer that subscribed just after the last one wait a second);
//     asks are limited per asker where they arrive instead.
//   - At most one report a second per region (answers to asks aside) and
//     `max_per_second` (10) per process. Not connected: nothing is sent and
//     nothing is kept for later; what is due is worked out again at the next
//     call.
//   - Local health, a saturating score 0..7 in the manner of Lifeguard: +1
//     when the owner's periodic timer fires more than `late_by` (50 ms)
//     late (the process is starved), +1 when two or more regions qualify in
//     one window; -1 for each `window` with neither.
//
// Nothing a caller sent leaves the process: a report holds counts, a region
// name, times and (for a partition-scoped claim) a collection rid and range
// id. Memory: the events of the last `window` per region, at most
// `max_events` of them each. Not thread-safe: one actor owns it.

#include "georoute/actors/policy/fleet_health.hpp"
#include "georoute/actors/policy/result.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace georoute {

/// The payload of one report: the inverse of `parse_fleet_claim`.
std::string fleet_payload(const fleet_claim& c);

struct fleet_report_options {
  /// The evidence window.
  std::chrono::milliseconds window{std::chrono::seconds{10}};
  /// Reads that waited for the hedge threshold on a region, within the
  /// window, before it is claimed down.
  uint32_t min_threshold_waits = 2;
  /// A claim that still holds is sent again this often.
  std::chrono::milliseconds refresh{std::chrono::seconds{5}};
  /// The ttl a claim asks for.
  std::chrono::milliseconds ttl{std::chrono::seconds{15}};
  /// Reports about one region at most this often.
  std::chrono::milliseconds region_spacing{std::chrono::seconds{1}};
  /// Reports a second at most, all regions together.
  uint32_t max_per_second = 10;
  /// A timer that fires this much later than asked makes the score rise.
  std::chrono::milliseconds late_by{std::chrono::milliseconds{50}};
  /// Claims go out only while the score is at most this.
  uint8_t max_health_score = 1;
  /// Events kept per region at most (the oldest go first).
  std::size_t max_events = 1024;

  std::optional<problem> validate() const;
};

/// What the owner saw on a region.
enum class fleet_event : uint8_t {
  threshold_wait, ///< a read waited for the hedge threshold
  breaker_opened, ///< the region's circuit breaker opened for a range
  refused,        ///< the region refused a connection
  marked,         ///< the owner's failover marked it unavailable for reads
  error,          ///< a transport error, a 408 or a 5xx
  success,        ///< a success in normal time
};

/// One report to publish about `region`.
struct fleet_outgoing {
  std::string region;
  fleet_claim claim;
};

struct fleet_report_counters {
  uint64_t sent = 0;                 ///< reports handed out by `due`
  uint64_t dropped_disconnected = 0; ///< due while not connected
  uint64_t held_by_rate = 0;         ///< held back by a rate limit
  uint64_t withheld_unhealthy = 0;   ///< not claimed: the score was too high
  uint64_t withheld_many = 0; ///< not claimed: two or more regions qualified
};

class fleet_reporter {
public:
  using clock = std::chrono::steady_clock;

  /// `epoch`: 16 hex digits, new at each process start. Throws
  /// std::invalid_argument for bad options or epoch.
  fleet_reporter(std::string epoch, fleet_report_options options = {});

  /// What one of the owner's own requests saw on `region`.
  void observe(std::string_view region, fleet_event e, clock::time_point now);

  /// The owner's periodic timer was due at `due` and fired at `now`.
  void timer_fired(clock::time_point due, clock::time_point now);

  /// The owner's own probe of `region` succeeded.
  void probe_succeeded(std::string_view region, clock::time_point now);

  /// The reports to publish now. `connected`: whether the transport can
  /// send (when not, nothing is handed out and nothing is kept).
  std::vector<fleet_outgoing> due(clock::time_point now, int64_t wall_ms,
                                  bool connected);

  /// A new peer asked for the current claims: each region claimed down is
  /// sent again at the next `due`, without waiting for its refresh and
  /// without the region's spacing (the process's cap per second holds).
  void resend_claims();

  /// The regions this process claims down now (as first spelled), for the
  /// owner to probe: a probe that answers takes the claim back.
  std::vector<std::string> claimed() const;

  uint8_t local_health() const { return health_; }
  const fleet_report_counters& counters() const { return counters_; }

private:
  struct region_state {
    std::string name; ///< as the owner spelled it first
    std::deque<std::pair<clock::time_point, fleet_event>> events;
    bool claiming = false; ///< "down" was sent and not taken back
    bool up_due = false;   ///< the probe answered after a claim
    bool resend = false;   ///< a peer asked: send the claim again now
    std::optional<clock::time_point> last_sent;
  };
  struct window_counts {
    fleet_evidence evidence;
    bool qualifies = false;
  };

  window_counts counts(const region_state& r) const;
  bool rate_allows(region_state& r, clock::time_point now, bool answers_ask);
  fleet_claim claim(fleet_claim_state st, const fleet_evidence& ev,
                    int64_t wall_ms);
  void age_health(clock::time_point now);
  void prune(region_state& r, clock::time_point now);

  std::string epoch_;
  fleet_report_options options_;
  fleet_report_counters counters_;
  uint64_t seq_ = 0;
  uint8_t health_ = 0;
  std::optional<clock::time_point> last_bad_;
  std::optional<clock::time_point> last_step_down_;
  std::optional<clock::time_point> multi_counted_at_;
  std::deque<clock::time_point> sent_times_;
  /// Region key (lower-cased) -> its state.
  std::map<std::string, region_state> regions_;
};

} // namespace georoute
