#pragma once

// Bulk: many independent operations, sent as non-atomic batches of one
// partition-key range each. The rules the bulk executor
// (actors/bulk_executor.hpp) follows, kept pure:
//
// - what one operation looks like on the wire (`bulk_op_json`), checked
//   when the caller hands it over, never after a trip;
// - which per-operation answers are final and which send the operation
//   again (`classify_bulk_op`): 429 after its retry-after, 410/1002, 1007
//   and 1008 after the routing map is read again (the range split or
//   merged), other 410s at once; 413/3402 (no room left in the answer) at
//   once, unless the operation led its request (see `classify_bulk_op`);
// - what a whole request's failure means for its operations
//   (`classify_bulk_failure`): re-grouped, sent again later, failed with
//   the error, or failed as possibly applied;
// - how many requests one range has in flight (`range_congestion`): a
//   congestion window, not a fixed cap. It starts at one request, doubles
//   per round of clear answers until the first throttle, then grows by one
//   per round; a round with a throttled operation halves it, once per
//   round. The service's throttle is the signal, so the window settles where
//   the range's throughput is, whatever it is;
// - what a 429 costs one operation (`decide_bulk_throttle`): the engine's
//   throttle budget, through `evaluate_throttle`, as for any request;
// - how full a request gets (`bulk_request_fill`);
// - how a range paces itself around throttles (`bulk_may_send`,
//   `plan_bulk_front`, `bulk_release_count`): its queue is served in order,
//   one request at a time while operations wait after a throttle, a clear
//   answer releases waiting operations early, and a front that would wait
//   long is probed alone first.

#include "georoute/actors/policy/batch.hpp"
#include "georoute/actors/policy/errc.hpp"
#include "georoute/actors/policy/result.hpp"
#include "georoute/actors/policy/throttle_policy.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace georoute {

/// The byte size at which a bulk request closes (the SDKs' figure): small
/// enough that the answer of a full request stays far below the service's
/// 4 MB response limit in the common case.
inline constexpr size_t default_bulk_request_bytes = 220'201;

/// Re-groupings of one operation after its range split or merged, at most.
inline constexpr uint32_t max_bulk_regroups = 10;

/// Sends again of one operation answered 410 without a split or merge
/// (not 1002, 1007, 1008), at most; the next such answer is its result.
/// Nothing in that answer says when the operation would run.
inline constexpr uint32_t max_bulk_gone_resends = 10;

/// The options of one bulk session (`bulk_open`).
struct bulk_options {
  /// Operations per request, 1 to 100.
  uint32_t max_operations_per_request = 100;
  /// Bytes of JSON per request at which it closes; an operation larger
  /// than this travels alone. At most 2 MiB.
  uint32_t max_request_bytes = default_bulk_request_bytes;
  /// Requests in flight per range at most: the congestion window's ceiling.
  uint32_t max_requests_per_range = 20;
  /// Operations the session holds at most (queued and in flight) before it
  /// refuses a chunk with `errc::overloaded`; 0: the engine's
  /// `georoute.max-operations-in-flight`.
  uint32_t max_pending_operations = 0;
  /// Each operation's budget, from when the session took it; once spent,
  /// it is not sent again and fails with `errc::deadline_exceeded`. 0: the
  /// engine's `georoute.operation-budget`.
  int64_t budget_ms = 0;
};

/// A problem naming the option, or none.
std::optional<std::string> check_bulk_options(const bulk_options& o);

/// One bulk operation as the JSON object of a request's array, or a
/// problem naming it by `index` ("bulk operation 7 (Create): ..."): its
/// kind's id and document as for a batch (batch.hpp), and its own
/// partition key, which every bulk operation needs.
result<std::string> bulk_op_json(const batch_operation& op, size_t index);

/// What a per-operation answer means for the operation.
enum class bulk_op_verdict {
  done,        ///< final: the caller gets it (a success or a refusal)
  throttled,   ///< 429: send again after its retry-after
  regroup,     ///< 410/1002, 1007, 1008: its range is gone; read the map
  resend_now,  ///< 413/3402 behind another operation: again now, uncharged
  resend_gone, ///< other 410: again now, charged one `gone_resends`
};

/// The verdict on one operation's answer `status`/`substatus`. `leading`:
/// it was the first operation of the request that answer belongs to.
/// `gone_resends`: the times it was sent again after an other 410.
///
/// 413/3402 says the answer filled up before the operation's turn: the
/// service did not run it, so sending it again is safe. It fails for room
/// only if it led its request: an answer that began with it could not hold
/// it, and no answer will. Behind another operation it was merely late, and
/// goes again at once, charged nothing: a small limit (a 4 MB answer and
/// documents of a few hundred KB) turns most of each request away, round
/// after round, and a charge per round would fail operations that fit.
///
/// This cannot livelock. The executor sends turned-away operations again
/// at the front of their range's queue, and builds each request from that
/// front, so they lead later requests. The service runs or refuses a
/// request's first operation on its own merits, never for room behind
/// others; so every answer settles its leading operation (a result, a
/// final 413/3402) or charges it one of its bounded budgets (throttle
/// retries, re-groups, `max_bulk_gone_resends`, and its time budget in any
/// case). Room turns away only the operations after it: every round makes
/// progress.
bulk_op_verdict classify_bulk_op(int status, int substatus, bool leading,
                                 uint32_t gone_resends);

/// What a whole bulk request's failure (the `errc` of the router's answer,
/// after the driver's own retries of answers that say nothing ran) means
/// for the operations it carried.
enum class bulk_failure_verdict {
  regroup,       ///< its range is gone: nothing ran, re-group them
  retry_later,   ///< the engine refused it (overloaded): nothing ran
  final,         ///< a definite refusal: nothing ran; each op fails with it
  maybe_applied, ///< it may have run: each op fails and says so
};

/// The verdict on a bulk request that failed with `code`. Only a failure
/// that says the request never ran is `final`; anything after which it may
/// have run is `maybe_applied`, since a bulk request is never sent twice.
bulk_failure_verdict classify_bulk_failure(errc code);

/// One range's congestion window (see the file comment). Every request
/// sent gets a sequence number from `on_send`; its answer reports back with
/// it, so that a round's throttles halve the window once.
class range_congestion {
public:
  explicit range_congestion(uint32_t ceiling = 20);

  /// Whether another request may go now.
  bool can_send() const { return in_flight_ < window(); }
  /// A request went; returns its sequence number.
  uint64_t on_send();
  /// The answer of request `seq`: `throttled` when any of its operations
  /// (or the request itself) was answered 429.
  void on_answer(uint64_t seq, bool throttled);
  /// Request `seq` ended without an answer that says anything about
  /// throughput (a failure, a re-group): its slot is free, the window
  /// unchanged.
  void on_abandon(uint64_t seq);

  /// Requests allowed in flight now, at least one.
  uint32_t window() const;
  uint32_t in_flight() const { return in_flight_; }
  /// Times the window was halved.
  uint32_t cuts() const { return cuts_; }
  /// The largest window reached.
  uint32_t peak() const { return peak_; }

private:
  double cwnd_ = 1;
  double ssthresh_ = 0; // 0: no throttle seen yet (slow start)
  uint32_t ceiling_;
  uint32_t in_flight_ = 0;
  uint64_t next_seq_ = 1;
  // Requests sent up to this number belong to the round a cut answered:
  // their throttles do not cut again.
  uint64_t cut_until_ = 0;
  uint32_t cuts_ = 0;
  uint32_t peak_ = 1;
  uint32_t clear_ = 0; // clear answers since the window last grew by one
};

/// What a 429 means for one operation.
struct bulk_throttle_verdict {
  enum class kind : uint8_t {
    wait,        ///< sent again once `delay` has passed
    final,       ///< its throttle budget is spent: the 429 is its result
    out_of_time, ///< its own budget ends before `delay` does
  };
  kind what = kind::final;
  /// The wait the 429 asked for (its retry-after, or the default).
  std::chrono::milliseconds delay{0};
  /// The operation's throttle counters afterwards.
  throttle_state next;
};

/// The verdict on an operation answered 429 with `retry_after_ms` (0 or
/// less: none said), whose throttle counters are `state` and whose own
/// budget ends in `time_left`. Charged (`early` false), the 429 goes
/// through `evaluate_throttle`, the budget of every other request
/// (`georoute.throttle-retries`, `georoute.throttle-max-wait`). An
/// operation the range sent before its retry-after (`early`: released by
/// a clear answer, or a probe) is not charged: the service's schedule
/// still held, and its time budget bounds it anyway.
bulk_throttle_verdict
decide_bulk_throttle(const throttle_options& options,
                     const throttle_state& state, int64_t retry_after_ms,
                     bool early, std::chrono::steady_clock::duration time_left);

/// How full the next request of a range gets: operations are offered in
/// queue order, and it takes at most `max_ops` of them and as many as stay
/// within `max_bytes` as one JSON array; the first always goes, however
/// large.
class bulk_request_fill {
public:
  bulk_request_fill(size_t max_ops, size_t max_bytes)
      : max_ops_(max_ops), max_bytes_(max_bytes) {}

  /// Whether it holds `max_ops` operations.
  bool full() const { return count_ >= max_ops_; }
  /// Takes an operation of `json_bytes` if it fits: whether it did.
  bool take(size_t json_bytes);

  size_t count() const { return count_; }
  /// The JSON array's size so far, brackets and commas included.
  size_t bytes() const { return bytes_; }

private:
  size_t max_ops_;
  size_t max_bytes_;
  size_t count_ = 0;
  size_t bytes_ = 2; // the brackets
};

/// How long a range whose front operation waits after a throttle stays
/// silent at most, from its last request, before it sends that operation
/// alone, early (a probe): a retry-after reckoned while the service held the
/// range to a lower budget overstates the wait once the budget is back.
inline constexpr std::chrono::milliseconds bulk_probe_every{100};

/// The pause before the operations of a request the engine itself refused
/// (`errc::overloaded`) are sent again.
inline constexpr std::chrono::milliseconds bulk_overloaded_pause{100};

/// Whether a range may send another request now: its window has room, and
/// while any of its operations waits after a throttle (`backlog` > 0) none
/// is in flight. The service's retry-afters are its schedule for the
/// operations it turned away; a second request meanwhile would claim the
/// same budget and both would be turned away again.
bool bulk_may_send(const range_congestion& cc, size_t backlog);

/// What a range does with the live operation at the front of its queue.
struct bulk_front_plan {
  enum class kind : uint8_t {
    expired, ///< its budget is spent: it fails, and is not sent again
    take,    ///< into the request being built (if it fits)
    wait,    ///< it holds the queue back: look again at `wake`
    probe,   ///< sent now, alone, before its retry-after
  };
  kind what = kind::take;
  std::chrono::steady_clock::time_point wake{};
};

/// The plan for the front operation, whose budget ends at `deadline` and
/// which was throttled until `not_before` (or not at all: the epoch). The
/// queue is served in order: a front that must wait holds back the
/// operations behind it. `alone`: the request being built is empty and the
/// range has none in flight; only then is a front that would wait past
/// `last_send + bulk_probe_every` probed, at that moment.
bulk_front_plan
plan_bulk_front(std::chrono::steady_clock::time_point deadline,
                std::chrono::steady_clock::time_point not_before,
                std::chrono::steady_clock::time_point now,
                std::chrono::steady_clock::time_point last_send, bool alone);

/// How many of a range's operations waiting after a throttle (`backlog`)
/// an answer releases before their retry-after: none after an answer with a
/// throttle; after a clear one, all of them if it answered a probe, else
/// twice as many as the request carried (`carried`). A schedule reckoned
/// at a low budget is stale once the budget rises: this way a range finds
/// its budget again in a few round trips, as a window grows in slow start.
size_t bulk_release_count(bool throttled, bool probe, size_t carried,
                          size_t backlog);

} // namespace georoute
