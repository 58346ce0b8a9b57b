#pragma once

// Query executor: one cross-partition query page, run by a short-lived actor
// the router spawns for it.
//
//   router --(delegate: route_atom, data_request)--> query executor
//     collection cache: the collection's rid
//     query plan: rewritten query, ORDER BY / aggregates / DISTINCT / TOP /
//                 OFFSET / LIMIT, the EPK ranges
//     partition-range cache: the ranges that overlap them
//     router: one query per range (`data_request::range_id`), at most
//             `parallelism` at once, each routed and retried like any request
//     query_merger (actors/policy/query_merge.hpp): the k-way merge and the
//             pipeline stages
//   --> data_response {"Documents": [...], "_count": n}, continuation
//
// - A page holds at most `options.max_item_count` results (default 100).
//   Its continuation (empty when the query is done) resumes the query, also
//   in another process: it carries every range's own continuation and what
//   was already returned.
// - A range that split answers `errc::partition_range_gone`, after the
//   router refreshed the routing map: the executor asks the partition-range
//   cache for the ranges now covering it (not forced: a split costs that
//   one refresh), puts the children in its place, and they continue from
//   the parent's continuation: no duplicates, no losses. A range and its
//   children gone `max_gone_in_a_row` (4) times in a row fail the page
//   (actors/composite.hpp).
// - Each range query gets what is left of the caller's budget; once it is
//   spent no new one starts and the page fails `errc::deadline_exceeded`.
// - Every range query's diagnostics are the page's (or the error's):
//   attempts, charges, hedges and their charge, refreshes.
// - The executor ends with its page; a caller that gave up is simply gone.

#include "georoute/actors/policy/model.hpp"
#include "georoute/messages/interfaces.hpp"

#include <caf/actor_system.hpp>

namespace georoute {

/// Whom the executor asks.
struct query_executor_collaborators {
  router_actor router;
  collection_cache_actor collections;
  pkrange_cache_actor pkranges;
  query_plan_actor plans;
  /// Range queries in flight at once.
  size_t parallelism = 4;
};

/// The actor that answers `(route_atom, data_request)` for one
/// cross-partition query (a query with neither partition key nor range id)
/// and then quits.
caf::actor spawn_query_executor(caf::actor_system& sys,
                                query_executor_collaborators with);

} // namespace georoute
