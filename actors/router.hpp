#pragma once

// Request router: the data-plane request pipeline.
//
//   application / query plan --(route_atom, document_request)--> router
//                                                                  |
//                                       (execute_atom, metadata_request)
//                                                                  v
//                                                    pipeline (attempt loop)
//
// Today it runs each document request through the pipeline: the same attempt
// loop as the retry actor (resolve on the location snapshot, sign, send with
// the request kind's timeout ladder, client retry policy on every failure),
// owned by the router and bounded by the policy's own budgets. The router
// answers with a delegated promise: the pipeline replies to the requester
// directly. Partition-level routing (partition key → range → session token)
// is the next layer to add here.

#include "actors/retry.hpp"
#include "messages/interfaces.hpp"

#include <caf/actor_system.hpp>

namespace georoute {

/// Spawns the router and its pipeline. The pipeline's deadline and attempt
/// cap come from `pipeline`; callers bound their own wait with a request
/// timeout (or, for metadata, the retry actor's detach-only mode).
router_actor spawn_router(caf::actor_system& sys, retry_config pipeline,
                          retry_collaborators with);

/// The metadata request the pipeline executes for a document request.
metadata_request to_pipeline_request(const document_request& req);

} // namespace georoute
