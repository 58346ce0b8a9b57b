#pragma once

// Bulk executor: one bulk session. The router spawns it for a `bulk_open`;
// the caller hands it operations in chunks and gets each chunk's results.
//
//   caller --(route_atom, bulk_chunk)--> bulk executor --> bulk_chunk_result
//     collection cache: the collection's rid and partition-key definition
//     partition-range cache: the routing map (again after a split or merge)
//     router: one bulk request (data_op::bulk) per batch of one range,
//             routed to the write region, failed over and retried like any
//             write that is never sent twice
//     actors/policy/bulk.hpp: every decision: the per-operation verdicts,
//             what a failed request means, an operation's 429 budget, how
//             full a request gets, the pacing after a throttle and each
//             range's congestion window
//
// - Each operation is checked when its chunk arrives (bulk_op_json): a
//   chunk with a malformed operation is refused whole with
//   `errc::validation_error` naming it, and nothing of it is sent.
// - Operations are grouped by the range that holds their partition key's
//   EPK. Each range has a queue and a congestion window (requests in
//   flight), which grows while its requests come back clear and halves when
//   the service throttles; a request takes up to 100 operations or
//   `max_request_bytes`.
// - Per operation: 429 waits for its own retry-after (the range's queue is
//   served in order, and while any operation waits the range has one
//   request in flight; a clear answer releases waiting operations early,
//   as actors/policy/README.md explains) up to the throttle budget of
//   every request (`georoute.throttle-retries`,
//   `georoute.throttle-max-wait`); 410/1002, 1007, 1008 re-reads the
//   routing map and re-groups it (ten times at most); other 410s go again at
//   once (ten times at most). 413/3402 (the answer had no room left for it; it
//   did not run) goes again at once, at the front of its range's queue,
//   uncounted, so that it leads a later request; it is final only for the
//   operation that led its request (an answer of its own could not hold it).
//   Every other answer is final.
// - A whole request that failed: a range gone re-groups its operations; an
//   engine refusal (overloaded) sends them again after a pause; a definite
//   refusal fails them with its error; anything after which the request may
//   have run (a timeout, a lost connection, a 5xx, a broken answer) fails
//   each of them with `errc::outcome_unknown`. A bulk request is never sent
//   twice.
// - Each operation has its budget from when the session took it; once it
//   is spent, the operation is not sent again (`errc::deadline_exceeded`).
// - The session holds at most `max_pending_operations` operations; a
//   chunk beyond that is refused with `errc::overloaded`, so memory stays
//   bounded however many operations a caller has: it sends the next chunk
//   when an earlier one is answered.
// - `(stop_atom)` closes the session: chunks after it are refused, and the
//   answer (a `bulk_summary`) comes once every chunk is answered; then the
//   executor quits. It also quits, once idle, when the actor that opened it
//   is gone. A caller gives up on a chunk only through its own request
//   timeout: the operations in flight complete regardless.

#include "georoute/actors/policy/throttle_policy.hpp"
#include "georoute/messages/error.hpp"
#include "georoute/messages/interfaces.hpp"

#include <caf/actor_system.hpp>

namespace georoute {

/// A bulk session's actor, as the router answers it (a `caf::actor`;
/// `caf::actor_cast<bulk_actor>` it):
/// - `(route_atom, bulk_chunk)` → `bulk_chunk_result`, one result per
///   operation in the chunk's order, once all are final. Errors, before any
///   trip: `errc::validation_error` (a malformed operation, named: nothing
///   of the chunk is sent; the session goes on), `errc::overloaded` (the
///   session holds too many).
/// - `(stats_atom)` → `bulk_summary`: the counters now.
/// - `(stop_atom)` → `bulk_summary`, once every chunk is answered.
using bulk_actor = caf::typed_actor<
    caf::replies_to<route_atom, bulk_chunk>::with<bulk_chunk_result>,
    caf::replies_to<stats_atom>::with<bulk_summary>,
    caf::replies_to<stop_atom>::with<bulk_summary>>;

/// Whom the executor asks.
struct bulk_collaborators {
  router_actor router;
  collection_cache_actor collections;
  pkrange_cache_actor pkranges;
};

/// A session's settings, the engine's defaults filled in.
struct bulk_session {
  std::string collection_link; ///< normalized
  bulk_options options;        ///< checked; pending and budget resolved
  request_options request;
  throttle_options throttle;
  /// The actor that opened the session: once it is gone and the session
  /// idle, the executor quits.
  caf::actor_addr opener;
};

/// The executor of one session (see the file comment).
caf::actor spawn_bulk_executor(caf::actor_system& sys, bulk_collaborators with,
                               bulk_session session);

/// The options of a batch or bulk request the engine writes for a caller's
/// `options`: no paging, no if-match (each operation has its own), no
/// partition key (a batch sets its own), never hedged, never sent again
/// once it may have been applied.
request_options unresent_write_options(request_options options);

} // namespace georoute
