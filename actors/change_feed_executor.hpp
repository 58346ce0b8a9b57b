#pragma once

// Change-feed executor: one page of a change feed, read by a short-lived
// actor the router spawns for it (as a cross-partition query page is).
//
//   router --(delegate: route_atom, change_feed_request)--> feed executor
//     collection cache: the collection's rid and partition-key definition
//     partition-range cache: the ranges under the front cursor
//     router: one change-feed read (data_op::change_feed) per cursor, by
//             range id (and EPK part) or by partition key, each routed,
//             retried and failed over like any read
//     change_feed_state (actors/policy/change_feed.hpp): positions, cuts,
//             the continuation
//   --> change_feed_page
//
// - Cursors are read one after another, front first: the first page with
//   documents is the answer; after a 304 from every cursor in a row the
//   answer is an empty page that says it is caught up.
// - A cursor whose range is gone (`errc::partition_range_gone`: a split or
//   a merge, answered after the router refreshed the routing map) makes the
//   executor ask the partition-range cache for the ranges now under it (not
//   forced: a split costs the router's one refresh) and read again; the
//   cursor is cut or narrowed, its position kept. Gone four times in a row
//   (`max_gone_in_a_row`), the request fails (actors/composite.hpp).
// - Each read gets what is left of the caller's budget; once it is spent no
//   new read starts and the request fails `errc::deadline_exceeded`.
// - Any other failure is the answer, with the diagnostics of every read:
//   the caller keeps the continuation it sent and loses nothing.
// - The executor ends with its page; a caller that gave up is simply gone.

#include "georoute/messages/interfaces.hpp"

#include <caf/actor_system.hpp>

namespace georoute {

/// Whom the executor asks.
struct change_feed_collaborators {
  router_actor router;
  collection_cache_actor collections;
  pkrange_cache_actor pkranges;
};

/// The actor that answers one `(route_atom, change_feed_request)`, checked
/// by the router already (`check_change_feed_request`), and then quits.
caf::actor spawn_change_feed_executor(caf::actor_system& sys,
                                      change_feed_collaborators with);

/// The checks a change-feed request passes before any trip: a problem
/// names the field. `now_ms`: milliseconds since the epoch.
std::optional<std::string>
check_change_feed_request(const change_feed_request& req, int64_t now_ms);

} // namespace georoute
