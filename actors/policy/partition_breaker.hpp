#pragma once

// The per-partition circuit breaker: per (collection rid, partition-key
// range id, region) it notices that a region keeps failing one range, sends
// that range's requests elsewhere for a while, and lets them come back only
// after a real request to the region succeeded. It applies to reads on every
// account and to writes on multi-write accounts; which requests are eligible
// is the caller's decision, as is which outcomes count (`breaker_signal_of`
// is the table the caller is meant to use).
//
// States of one (collection, range, region) key:
//
//   closed ──N consecutive failures / H hedge wins──▶ open
//   open ──first request once `open_until` passed──▶ probing (one request)
//   probing ──probe answered──▶ half_open  (or closed with 0 half-open steps)
//   probing ──probe failed, timed out or lost to a hedge──▶ open, period x2
//   probing ──probe sent nothing (not-sent connection failure)──▶ open, same
//   half_open ──enough answers──▶ closed
//   half_open ──one failure, or H hedge wins──▶ open, period x2
//
// Rules, and where they differ from the SDKs:
//   - "Consecutive" is consecutive: an answer from the region resets the
//     failure count of its operation kind (reads and writes count apart, so
//     answered reads cannot hide failing multi-write writes). The .NET
//     breaker never resets on success (GlobalPartitionEndpointManagerCore.
//     IncrementRequestFailureCounterAndCheckIfPartitionCanFailover); Java's
//     ConsecutiveExceptionBasedCircuitBreaker does, like this one.
//   - The comparison is `count >= threshold`: with the defaults the 10th
//     consecutive read failure (5th write failure) opens, as in Java, Python
//     and the Rust driver (.NET opens on the 11th: `count > threshold`).
//   - H consecutive hedge wins against a region open it too (the Rust
//     driver's hedge feedback): a hedge to another region won while this
//     region's arm was still out. A final result from the region as the
//     primary resets that count; plain answers do not.
//   - Time alone never closes it. After the open period the next request
//     that would go to the region is let through as the one probe; nothing
//     else is, until the probe answers. The .NET and Java gateway paths put
//     traffic back on a timer without asking the region.
//   - A probe has a deadline: if no outcome is reported by
//     `probe started + probe_timeout`, the first call that touches the key
//     at or after the deadline treats the probe as failed at the deadline.
//   - Half-open returns traffic gradually and deterministically: with S
//     steps, one request in 2^S is let through, and every answer doubles the
//     share (1/8, 1/4, 1/2 with S = 3); the S-th answer after the probe's
//     closes it. No randomness is needed, so every sequence is exact in
//     tests. Closing forgets the entry, so the next opening starts again at
//     the first open period.
//   - Every admission hands out a ticket; reports carry it back. An outcome
//     of a request let through before the key's current open or half-open
//     state began is stale and ignored there (a timeout of a request sent
//     before the breaker opened must not fail the probe or re-open a
//     recovering range). Only the probe's own ticket resolves a probe.
//   - All candidates blocked: the first one is used anyway (`fallback`), so
//     the breaker never leaves a range with no region at all, like Java
//     dropping its exclusions when nothing would be left.
//   - Bad options are refused (`validate`); they never switch it off, unlike
//     Java, which replaces a below-minimum config with a disabled default.
//
// Memory: entries live in an LRU bounded by `capacity`. A closed entry whose
// counts are all zero is not kept. When full, the least recently used
// closed entry (one holding failure or hedge-win counts) goes first; only if
// every entry is open, probing or half-open is the least recently used of
// those evicted. Evicting such an entry puts traffic back on the region
// without a probe, so it is logged as a transition (reason `evicted`); with
// the default capacity it needs 10 000 ranges tripped at once.
//
// Splits and merges: the children of a split have new range ids and start
// closed; they do not inherit the parent's state (they may live on other
// servers, and a still-bad region trips them again after N failures). The
// parent's entries match nothing any more: the owner should call
// `forget_range` for the parent when the routing map drops it; otherwise the
// LRU ages out closed ones, while tripped ones stay until forgotten or
// evicted.
//
// Region names are compared ignoring ASCII case, like the location table;
// collection rids and range ids exactly. Not thread-safe: one actor owns it.

#include "georoute/actors/policy/hedging.hpp"
#include "georoute/actors/policy/location_table.hpp"
#include "georoute/actors/policy/result.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace georoute {

// -- which outcomes count ----------------------------------------------------

/// How an attempt ended below HTTP: the same three kinds hedging sorts by
/// (none, connection, timeout).
using transport_failure_kind = transport_fault;

/// What one attempt says about a (range, region) pair.
enum class breaker_signal : uint8_t {
  failure,   ///< counts toward opening
  answered,  ///< the region answered: resets the consecutive failure count
  no_signal, ///< nothing reached the region: neither counts nor resets
};

/// Whether an attempt counts as a breaker failure:
///
///   outcome                                              counts
///   503 (any substatus), 500, 502, 504                   yes
///   408, except 408/21013 (write barrier throttled)      yes
///   timeout or connection failure, may have been sent    yes
///   timeout or connection failure, provably not sent     no (the caller
///     (refused, DNS, connect failure or connect timeout)    marks the
///                                                           endpoint)
///   404/1002, 409, 412, 429 (all substatuses), 449,      no
///   every other 4xx, 501, 505, 1xx-3xx
///
/// 502 and 504 are in because a proxy in front of the region failing or
/// timing out is the same grey failure for the range; 501 and 505 are final
/// answers another region cannot change. A 429/3092 on a multi-write write
/// is a 503 for the SDKs' retry paths: a caller that wants it counted maps
/// it to 503 first (`attempt_loop::report_outcome` does). `may_have_sent` is
/// ignored when an HTTP response arrived (it was sent).
bool breaker_counts(int status, int substatus, transport_failure_kind kind,
                    bool may_have_sent);

/// The signal of an attempt: `failure` when `breaker_counts`; `no_signal`
/// for a transport failure that sent nothing (or a response without a
/// status); `answered` for every other HTTP response.
breaker_signal breaker_signal_of(int status, int substatus,
                                 transport_failure_kind kind,
                                 bool may_have_sent);

// -- options -----------------------------------------------------------------

/// The breaker's knobs. Defaults follow the SDKs where they agree.
struct partition_breaker_options {
  /// The consecutive read failure that opens (`count >= threshold`).
  uint32_t read_failure_threshold = 10;
  /// The same for writes (multi-write accounts).
  uint32_t write_failure_threshold = 5;
  /// Consecutive hedge wins against the region that open it.
  uint32_t hedge_win_threshold = 5;
  /// The first open period; each failed recovery doubles it.
  std::chrono::milliseconds open_period{std::chrono::seconds{5}};
  /// The cap of the doubling: 5 s, 10 s, ... 160 s, 300 s, 300 s. Five
  /// minutes is the SDKs' failback sweep interval (and the location table's
  /// mark expiry): no range stays away from a region longer than the SDKs
  /// would, and one probe per range every five minutes costs nothing.
  std::chrono::milliseconds max_open_period{std::chrono::minutes{5}};
  /// How long a probe may stay unanswered before it counts as failed. The
  /// longest step of the partition-failover ladder is 10 s; give the probe
  /// attempt a timeout no longer than this.
  std::chrono::milliseconds probe_timeout{std::chrono::seconds{10}};
  /// Half-open steps S: the share starts at 1/2^S and doubles per answer;
  /// the S-th answer closes. 0: the probe's answer closes at once. At most
  /// 16.
  uint32_t half_open_steps = 3;
  /// Tracked (collection, range, region) entries at most.
  std::size_t capacity = 10000;
  /// Transitions kept for `drain_transitions`; older ones are dropped (and
  /// counted) when the owner does not drain.
  std::size_t transition_log_capacity = 1000;

  /// A problem naming the first bad field, or nothing when all are usable.
  std::optional<problem> validate() const;
};

// -- vocabulary --------------------------------------------------------------

/// One tracked pair. Field order matters: rid, range, region.
struct breaker_key {
  std::string collection_rid; ///< the collection's rid
  std::string range_id;       ///< the partition-key range id ("0", "12")
  std::string region;         ///< the region name ("West US")

  friend bool operator==(const breaker_key& a, const breaker_key& b) {
    return a.collection_rid == b.collection_rid && a.range_id == b.range_id &&
           same_region(a.region, b.region);
  }
};

enum class breaker_state : uint8_t { closed, open, probing, half_open };

/// Why a transition happened.
enum class breaker_reason : uint8_t {
  read_failures,       ///< closed -> open
  write_failures,      ///< closed -> open
  hedge_wins,          ///< closed or half_open -> open
  probe_started,       ///< open -> probing
  probe_answered,      ///< probing -> half_open (or closed)
  probe_failed,        ///< probing -> open
  probe_timed_out,     ///< probing -> open
  probe_lost_to_hedge, ///< probing -> open
  probe_not_sent,      ///< probing -> open, period unchanged
  half_open_failure,   ///< half_open -> open
  recovered,           ///< half_open -> closed
  evicted,             ///< any tripped state -> closed (LRU full)
  forgotten,           ///< any tripped state -> closed (`forget_range`)
};

const char* to_string(breaker_state x);
const char* to_string(breaker_reason x);

/// One state change, for the owner's log and diagnostics.
struct breaker_transition {
  breaker_key key;
  breaker_state from = breaker_state::closed;
  breaker_state to = breaker_state::closed;
  breaker_reason reason = breaker_reason::read_failures;
  policy_time at;
};

/// Handed out with every admission, handed back with its outcome. 0 means
/// "unknown": it counts as current, but never resolves a probe.
struct breaker_ticket {
  uint64_t value = 0;

  friend bool operator==(breaker_ticket a, breaker_ticket b) {
    return a.value == b.value;
  }
  friend bool operator!=(breaker_ticket a, breaker_ticket b) {
    return a.value != b.value;
  }
};

enum class admission_kind : uint8_t {
  pass,     ///< closed: a normal request
  probe,    ///< the one probe of an open key: report its outcome
  trial,    ///< half-open: one of the share let through
  fallback, ///< every candidate was blocked; this one is used anyway
  blocked,  ///< skip this region for this request
};

/// The answer for one request to one region.
struct breaker_admission {
  admission_kind kind = admission_kind::pass;
  breaker_ticket ticket; ///< 0 when blocked

  bool allowed() const { return kind != admission_kind::blocked; }
};

/// The answer of `choose`.
struct breaker_choice {
  std::size_t index = 0; ///< the position in the candidate list to use
  breaker_admission admission;
  /// Candidates the breaker blocked: those before `index`, or all of them
  /// on `fallback`.
  std::size_t skipped = 0;
};

/// A key's state as of a time, for diagnostics and tests.
struct breaker_view {
  breaker_state state = breaker_state::closed;
  uint32_t read_failures = 0;
  uint32_t write_failures = 0;
  uint32_t hedge_wins = 0;
  /// The open period in force (the one the current or next opening uses).
  std::chrono::milliseconds open_period{0};
  policy_time open_until;     ///< open: when the probe may go
  policy_time probe_deadline; ///< probing
  /// half_open: one request in this many is let through.
  uint32_t one_in = 0;
  bool tracked = false;
};

/// What happened, in one list per breaker.
struct partition_breaker_counters {
  uint64_t opened = 0;          ///< closed -> open
  uint64_t reopened = 0;        ///< probing or half_open -> open
  uint64_t probes_started = 0;  ///< open -> probing
  uint64_t probe_successes = 0; ///< probing -> half_open or closed
  uint64_t probe_failures = 0;  ///< failed, timed out or lost to a hedge
  uint64_t probe_timeouts = 0;  ///< of which timed out
  uint64_t probes_not_sent = 0; ///< probing -> open, period unchanged
  uint64_t closed = 0;          ///< half_open (or probing) -> closed
  uint64_t evictions = 0;       ///< every eviction
  uint64_t evicted_tripped = 0; ///< of which open, probing or half_open
  uint64_t forgotten = 0;       ///< entries dropped by forget_range
  uint64_t blocked = 0;         ///< a region skipped for one request
  uint64_t fallbacks = 0;       ///< every candidate blocked, first used
  uint64_t stale_outcomes = 0;  ///< reports ignored by open/probing/half_open
  uint64_t transitions_dropped = 0; ///< log full, oldest dropped
};

// -- the breaker -------------------------------------------------------------

class partition_breaker {
public:
  /// Requires `!options.validate()`; throws std::invalid_argument with the
  /// problem's text otherwise (a programming error: settings are validated
  /// when they are loaded).
  explicit partition_breaker(partition_breaker_options options = {});

  // -- routing (the one place that picks an endpoint calls these) -----------

  /// Whether a request for `key` may go to its region now; a mutating
  /// query: it may start the probe or use up a half-open slot.
  breaker_admission admit(const breaker_key& key, policy_time now);

  /// The first of `regions` (in order) the breaker lets this request use,
  /// for range `range_id` of `collection_rid`; when all are blocked, index 0
  /// with kind `fallback`. Regions after the chosen one are not consulted.
  /// Nothing for an empty list. For an optional extra arm (a hedge: call it
  /// again with the primary's region left out) a `fallback` answer means
  /// "no healthy region left": skip the arm rather than send it.
  std::optional<breaker_choice> choose(std::string_view collection_rid,
                                       std::string_view range_id,
                                       const std::vector<std::string>& regions,
                                       policy_time now);

  /// Whether `admit` would answer `blocked` now; changes nothing.
  bool blocked(const breaker_key& key, policy_time now) const;

  // -- outcomes ---------------------------------------------------------------

  /// One attempt's outcome in `key`'s region; `ticket` from its admission.
  /// Returns the key's state afterwards.
  breaker_state record(const breaker_key& key, op_kind op,
                       breaker_signal signal, breaker_ticket ticket,
                       policy_time now);

  /// Another region's hedge won while `loser`'s arm (admitted with
  /// `ticket`) was still out. Returns the loser's state afterwards.
  breaker_state record_hedge_win(const breaker_key& loser,
                                 breaker_ticket ticket, policy_time now);

  /// `key`'s region, as the primary arm, returned a final result (one that
  /// ends the operation, success or not): resets its hedge-win count.
  void record_primary_final(const breaker_key& key, policy_time now);

  // -- housekeeping -----------------------------------------------------------

  /// Drops every entry of one range (all regions), e.g. the parent of a
  /// split. Returns how many were dropped.
  std::size_t forget_range(std::string_view collection_rid,
                           std::string_view range_id, policy_time now);

  // -- observation ------------------------------------------------------------

  breaker_view view(const breaker_key& key, policy_time now) const;

  /// The transitions since the last call, oldest first.
  std::vector<breaker_transition> drain_transitions();

  const partition_breaker_counters& counters() const { return counters_; }
  const partition_breaker_options& options() const { return options_; }

  /// Tracked entries.
  std::size_t size() const { return closed_.size() + tripped_.size(); }

private:
  struct entry {
    breaker_key key;
    breaker_state state = breaker_state::closed;
    uint32_t read_failures = 0;
    uint32_t write_failures = 0;
    uint32_t hedge_wins = 0;
    std::chrono::milliseconds period{0};
    policy_time open_until;
    policy_time probe_deadline;
    uint64_t probe_ticket = 0;
    /// Tickets below this were handed out before the current state.
    uint64_t state_since = 0;
    uint32_t half_open_answers = 0;
    uint32_t half_open_seen = 0;
  };
  using entry_list = std::list<entry>;
  struct slot {
    entry_list::iterator it;
    bool tripped = false;
  };

  /// The index's key of `key`, built in `key_buf_` (reused: a lookup
  /// allocates nothing once the buffer has grown).
  const std::string& index_key(const breaker_key& key) const;
  static bool is_current(const entry& e, breaker_ticket t);

  // The LRU: an index over two lists, so that eviction can prefer closed
  // entries without scanning.
  slot* find(const breaker_key& key);
  const entry* find(const breaker_key& key) const;
  slot& insert(const breaker_key& key, policy_time now);
  void evict_one(policy_time now);
  void touch(slot& s);
  void erase(const breaker_key& key);
  void erase_if_idle(slot& s);
  void place(slot& s);

  /// Finds the key's slot, applies a lapsed probe deadline, marks it used.
  slot* enter(const breaker_key& key, policy_time now);

  // State changes are built on the entry (pure, so `view` and `blocked` can
  // run them on a copy) and then applied: counted, logged, re-listed.
  breaker_transition change(entry& e, breaker_state to, breaker_reason reason,
                            policy_time at) const;
  breaker_transition to_open(entry& e, breaker_reason reason, policy_time at,
                             std::chrono::milliseconds period) const;
  std::optional<breaker_transition> settle(entry& e, policy_time now) const;
  breaker_state apply(slot& s, breaker_transition t);
  void record_transition(breaker_transition t);

  breaker_state on_failure(slot& s, op_kind op, breaker_ticket ticket,
                           policy_time now);
  breaker_state on_answered(slot& s, op_kind op, breaker_ticket ticket,
                            policy_time now);

  std::chrono::milliseconds doubled(std::chrono::milliseconds p) const;
  uint32_t one_in(const entry& e) const;
  uint64_t next_ticket() { return ++last_ticket_; }

  partition_breaker_options options_;
  entry_list closed_;  ///< closed entries with counts, most recent first
  entry_list tripped_; ///< open, probing, half_open, most recent first
  std::unordered_map<std::string, slot> index_;
  mutable std::string key_buf_;
  std::deque<breaker_transition> log_;
  partition_breaker_counters counters_;
  uint64_t last_ticket_ = 0;
};

} // namespace georoute
