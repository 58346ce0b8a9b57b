#pragma once

// Retry actor: the detached executor of metadata operations (routing
// .NET MetadataDetachedExecutor and MetadataHedgingStrategy; issue 4).
//
//   collection cache / pkrange cache --(execute_atom, metadata_request)--+
//   query plan --(detach_atom, document_request)--+                      |
//                                                 v                      v
//                                            retry actor ---> http port --->
//                                            region
//                                              |   |   |
//                   (mark_atom, mark) <--------+   |   +--> (refresh_atom,
//                   force) location cache                 |        endpoint
//                   manager
//                                   (clear_session_atom, name) --> session sink
//
// One primitive, two modes:
// - loop mode (`execute_atom`): resolve on the current location snapshot,
//   sign, send with the request kind's timeout ladder, and on every failure
//   consult the operation's retry policy and carry out its side effects
//   (mark a region, refresh the account and wait for it, clear session
//   tokens) before the next attempt;
// - detach-only (`detach_atom`): hand a document request to the request
//   router, which retries inside its own pipeline; no outer retry.
//
// Metadata hedging (loop mode): a collection or database read, a query plan
// or the first page of the pkranges feed that its first region has not
// answered within `metadata_hedge.threshold` is sent once to the next
// region, if a slot of the actor's metadata hedge budget is free. The first
// region's definitive answer wins; while it is out only the hedge's success
// is taken; once it failed for its region's sake the hedge's answer is. The
// hedge's time sits in the same deadline queue as the hard deadlines. Every
// attempt's failure still carries out its effects, also one that answers
// after its operation ended (a hung primary goes on up its ladder until its
// region is marked).
//
// The operation is bounded only by the actor's own hard deadline and, in loop
// mode, the attempt cap. Nothing a caller does reaches it: a caller gives up
// by letting its request time out, and the work (with every side effect)
// runs to completion. When the deadline trips, the requester gets the last
// underlying failure ("503 from East US after 7 attempts"); before any
// attempt finished, `errc::deadline_exceeded`.

#include "georoute/actors/log.hpp"
#include "georoute/actors/policy/client_retry_policy.hpp"
#include "georoute/actors/policy/hedging.hpp"
#include "georoute/actors/policy/timeout_ladder.hpp"
#include "georoute/config/settings.hpp"
#include "georoute/messages/interfaces.hpp"
#include "georoute/transport/port.hpp"

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <chrono>
#include <string>
#include <vector>

namespace georoute {

/// The slice of settings the retry actor needs.
struct retry_config {
  std::chrono::milliseconds hard_deadline = std::chrono::seconds{300};
  uint32_t attempt_cap = 200;
  client_retry_options client;
  timeout_ladders ladders;
  /// Regions excluded for every request (settings).
  std::vector<std::string> excluded_regions;
  /// Detach-only mode waits this much longer than the hard deadline for the
  /// router's answer: the router's own pipeline trips the deadline first and
  /// answers the last underlying failure; this only catches a router that
  /// never answers.
  std::chrono::milliseconds detach_grace = std::chrono::seconds{5};
  /// Metadata hedging: a collection or database read, a query plan or the
  /// first pkranges page still unanswered after `threshold` is sent once to
  /// the next region; `max_concurrent` hedges at most in flight (0: off).
  metadata_hedge_options metadata_hedge;
  /// Per-operation detail at debug and trace only (actors/log.hpp).
  logger log;
};

/// Builds the slice from validated settings.
retry_config retry_config_from(const config::settings& s);

/// Whether the transport may send an attempt of `r` again after its
/// connection dropped with nothing back: every metadata read may; a caller's
/// raw request only when it says it reads (`op_kind::read`) and its method
/// only reads (GET, HEAD, a query POST).
bool metadata_resend_after_drop(const metadata_request& r);

/// Whom the retry actor talks to.
struct retry_collaborators {
  location_cache_actor locations;
  endpoint_manager_actor endpoints;
  transport::port_ptr http;
  /// Target of detach-only requests; may be null (detach then fails).
  router_actor router;
  /// Receives `(clear_session_atom, collection_name)`; may be null.
  caf::actor session_sink;
  /// The only sender whose `engine_wiring` the actor accepts; null: none.
  caf::actor_addr supervisor;
};

/// Spawns the retry actor. It subscribes to the location cache and holds
/// operations until the first snapshot arrives. It monitors its
/// collaborators: when the endpoint manager goes down, operations waiting
/// for a refresh go on without it; when the router goes down, detached
/// operations fail at once with `errc::collaborator_down`.
retry_actor spawn_retry(caf::actor_system& sys, retry_config cfg,
                        retry_collaborators with);

} // namespace georoute
