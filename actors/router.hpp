#pragma once

// Request router: the data plane.
//
//   application --(route_atom, data_request)--> router --> data_response
//                                                  |
//          collection (collection cache, on a miss or a 410/1000)
//          EPK of the partition key (hash V2, multi-hash)
//          range (partition-range cache, on a miss or a 410/1002, 1007, 1008)
//          endpoint (its own location snapshot; one place:
//                    attempt_loop::next_attempt)
//          session token (its session container)
//                                                  v
//                                       http port --> region
//
// - On a cache hit nothing costs a message round trip: the router keeps the
//   collection infos and routing maps its caches answered, and the location
//   snapshots the location cache pushes, and resolves locally.
// - Every attempt goes through the operation's attempt loop
//   (actors/policy/attempt_loop.hpp, shared with the retry actor), which
//   asks the client retry policy with `is_document = true`: connection
//   failure or a silent region →
//   mark, refresh the account, next region; 403/3 → write-region refresh and
//   redirect; 403/1008; 404/1002 session retries; 503/500/410.1022 one
//   cross-region retry; 429 back-off. A timed-out read climbs the
//   partition-failover ladder (6 s, 6 s, 10 s) first. Marks and refreshes
//   are sent to the location cache and the endpoint manager.
// - Cancellation, the design rule: a caller gives up only through its own
//   request timeout, which never reaches the router. An operation is bounded
//   by its budget (`request_options::budget`, default
//   `georoute.operation-budget`): once spent, no new attempt starts; an
//   attempt in flight finishes and the failover decision it triggers runs
//   with its side effects (the region is marked, the account refreshed).
//   The caller that left gets nothing; later requests avoid the region.
//   Budgets need no timer per operation: the router keeps every live
//   operation's deadline in one ordered set and one timer message, armed
//   for the earliest deadline, sweeps it. An answered operation leaves
//   nothing behind (no timer that fires a minute later).
// - Overload: with `max_in_flight` operations live, a new request is
//   refused at once with `overloaded` (counted in `rejected_overloaded`);
//   nothing queues without bound inside the router.
// - A query with neither partition key nor range id is cross-partition: the
//   router hands it to a query executor (actors/query_executor.hpp), which
//   fans out over the ranges through the router and merges the pages.
// - `(route_atom, document_request)` → `transport::outcome`: the raw path
//   of the query-plan actor (via the retry actor's detach-only mode): the
//   same attempt loop as the retry actor, in the router's own pipeline.
// - The per-partition circuit breaker (actors/policy/partition_breaker.hpp)
//   lives in the router's state. Every attempt of an operation whose range
//   is known is admitted by it inside `attempt_loop::next_attempt` (a range
//   whose breaker is open in a region skips that region), and every outcome
//   (primary, hedge arms, answers after the operation ended) goes back to it
//   with the admission's ticket. A hedge that wins while the primary is out
//   counts against the primary's region. Its clock is the `now` of those
//   calls: no timer of its own. A routing map that drops a range (a split)
//   makes the router forget that range's entries.
// - Errors carry the diagnostics (`diagnostics_of`): every attempt with its
//   region, endpoint, status and retry reason.

#include "georoute/actors/policy/hedging.hpp"
#include "georoute/actors/policy/partition_breaker.hpp"
#include "georoute/actors/policy/partition_failover.hpp"
#include "georoute/actors/retry.hpp"
#include "georoute/messages/interfaces.hpp"

#include <caf/actor_addr.hpp>
#include <caf/actor_system.hpp>
#include <chrono>
#include <memory>

namespace georoute {

class home_thread;

/// The slice of settings the router needs.
struct router_config {
  /// The raw path's pipeline (the metadata attempt loop).
  retry_config pipeline;
  client_retry_options client;
  timeout_ladders ladders;
  /// Regions excluded for every request.
  std::vector<std::string> excluded_regions;
  /// The operation budget when a request names none.
  std::chrono::milliseconds default_budget = std::chrono::seconds{60};
  /// Collection infos and routing maps the router keeps.
  size_t collection_capacity = 10000;
  /// Attempts per operation at most (a bound in addition to the budget).
  uint32_t attempt_cap = 200;
  /// Range queries in flight at once for one cross-partition query.
  size_t query_parallelism = 4;
  /// Operations in flight at most; a request beyond it is refused at once
  /// with `overloaded` instead of queueing without bound.
  size_t max_in_flight = 10000;
  /// Cross-region hedging of reads.
  hedging_options hedging;
  /// The per-partition circuit breaker (reads; writes on multi-write
  /// accounts), owned by the router; consulted where the attempt loop
  /// chooses the endpoint.
  bool breaker_enabled = true;
  partition_breaker_options breaker;
  /// Per-partition automatic failover of single-write accounts' writes
  /// (followed when the account says so and `ppaf.enabled`).
  partition_failover_options ppaf;
  /// Retry writes that may have been applied (`georoute.write-retries`).
  bool write_retries = false;
  /// Breaker transitions; per-operation detail at debug and trace
  /// (actors/log.hpp).
  logger log;
  /// The fleet actor (actors/fleet.hpp), when region health is shared:
  /// the router tallies what its own requests saw per region and sends it
  /// every `fleet_flush`. None: nothing is tallied.
  caf::actor fleet;
  std::chrono::milliseconds fleet_flush{250};
  /// At start, data operations wait at most this long for the fleet's view
  /// (`fleet_sync_atom`); 0: they never wait.
  std::chrono::milliseconds fleet_startup_wait{0};
  /// A read attempt that took this long waited for the hedge threshold.
  std::chrono::milliseconds fleet_threshold{std::chrono::seconds{1}};
};

/// Builds the slice from validated settings.
router_config router_config_from(const config::settings& s);

/// Whom the router talks to.
struct router_collaborators {
  location_cache_actor locations;
  endpoint_manager_actor endpoints;
  collection_cache_actor collections;
  pkrange_cache_actor pkranges;
  transport::port_ptr http;
  /// Query plans for cross-partition queries; may be null (then such
  /// queries fail with a validation error).
  query_plan_actor plans;
  /// The only sender whose `engine_wiring` the router accepts.
  caf::actor_addr supervisor;
};

/// Spawns the router and its pipeline. With `home` the router runs on that
/// thread (actors/home_thread.hpp), beside the sockets of the HTTP client
/// that `with.http` sends through; without, on the system's scheduler.
router_actor spawn_router(caf::actor_system& sys, router_config cfg,
                          router_collaborators with,
                          std::shared_ptr<home_thread> home = nullptr);

/// The metadata request the pipeline executes for a raw document request.
metadata_request to_pipeline_request(const document_request& req);

} // namespace georoute
