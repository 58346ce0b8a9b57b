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
// - how many requests one range has in flight (`range_congestion`): a
//   congestion window, not a fixed cap. It starts at one request, doubles
//   per round of clear answers until the first throttle, then grows by one
//   per round; a round with a throttled operation halves it, once per
//   round. The service's throttle is the signal, so the window settles where
//   the range's throughput is, whatever it is;
// - how many of a range's queued operations go in the next request
//   (`next_batch_size`).

#include "georoute/actors/policy/batch.hpp"
#include "georoute/actors/policy/result.hpp"

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

/// How many of the queued operations [first, last) the next request
/// takes: at most `max_ops`, and as many as stay within `max_bytes` as one
/// JSON array (`size_of(*it)`: an operation's JSON size); the first always
/// goes, however large.
template <class It, class SizeOf>
size_t next_batch_size(It first, It last, SizeOf size_of, size_t max_ops,
                       size_t max_bytes) {
  size_t n = 0;
  size_t bytes = 2; // the brackets
  for (; first != last && n < max_ops; ++first) {
    size_t more = size_of(*first) + (n > 0 ? 1 : 0); // the comma
    if (n > 0 && bytes + more > max_bytes) break;
    bytes += more;
    ++n;
  }
  return n;
}

} // namespace georoute
