#pragma once

// Query plan (.NET QueryPlanRetriever, gateway path).
//
//   caller --(plan_atom, query_plan_request)--> query plan --hit--> query_plan
//                                                   | miss
//                                   (detach_atom, document_request)
//                                                   v
//                                      retry actor --> router pipeline -->
//                                      region
//
// The plan request is a POST through the request pipeline (client retry
// policy, HotPath ladder), wrapped in the retry actor's detach-only mode so
// that its hard deadline bounds it and no caller can cut it short. Plans are
// cached by (collection rid, query text, parameters) in a bounded LRU.
// Concurrent callers of one key share one request; a caller that times out
// gets its timeout, the plan still lands in the cache.

#include "georoute/messages/interfaces.hpp"

#include <caf/actor_addr.hpp>
#include <caf/actor_system.hpp>
#include <string>

namespace georoute {

/// The attempt that asks for a plan (exposed for tests).
document_request plan_request_for(const query_plan_request& req);

/// Spawns the query-plan actor with an LRU of `cache_size` plans.
query_plan_actor spawn_query_plan(caf::actor_system& sys, retry_actor retry,
                                  size_t cache_size, size_t max_waiters = 10000,
                                  caf::actor_addr supervisor = {});

/// The cache key of a plan: collection rid, query, parameters and partition
/// key, each length-prefixed ("4:rid1" ...), so that two collections or two
/// parameter lists never share a plan.
std::string query_plan_key(const query_plan_request& req);

} // namespace georoute
