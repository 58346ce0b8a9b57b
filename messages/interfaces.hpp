#pragma once

// The typed actor interfaces of georoute. Each comes with its protocol: who
// sends what, what comes back, which errors. The design rule behind all of
// them: a caller gives up only by letting its own request time out. No
// deadline, token or cancel message travels into an actor that retries; the
// retry actor's failover decision and its side effects always complete.
//
//   application
//       |  route(document_request)
//       v
//   request router --------------------> query plan --detach--> retry actor
//       |  resolve / snapshot                |                     |
//       v                                    v                     v
//   location cache <--- account ---- endpoint manager <-- refresh --+
//       ^                                                          |
//       +------------------------- mark ---------------------------+
//   collection cache --execute--> retry actor      pkrange cache --execute-->
//   retry actor
//
// Only the public protocol is listed here. What an actor sends itself (timers,
// ladder steps, the 5 s sweep switch), what the transport hands back (HTTP
// completions) and what the location cache pushes to its subscribers are not:
// they are messages of types private to each actor's .cpp (nobody else can
// construct them, so no handle holder can end an operation early or inject a
// fake HTTP outcome), or, for snapshot pushes and the engine's re-wiring
// (actors/internal.hpp), accepted only from the one sender allowed to send
// them. Each actor runs an interface that extends the public one with those
// messages; its spawn function hands out the public handle.

#include "georoute/messages/types.hpp"

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>
#include <string>

namespace georoute {

/// Location cache (.NET LocationCache, src/Routing/LocationCache.cs). Owns the
/// current `location_table` snapshot.
///
/// - `(account_atom, database_account)` from the endpoint manager: rebuild
///   the snapshot from a fresh account read; subscribers get
///   `(snapshot_atom, location_snapshot)` if anything changed.
/// - `(resolve_atom, resolve_input)` → `resolution`: the endpoint for one
///   attempt. Never fails; before the first account read it answers the
///   account endpoint.
/// - `(mark_atom, region_mark)` → `uint64_t`: demote an endpoint for reads
///   and/or writes until the configured expiry; pushes a new snapshot and
///   answers its version (every snapshot from that version on has the mark).
/// - `(subscribe_atom, caf::actor)` → `location_snapshot`: the current
///   snapshot now; every later one is pushed as `(snapshot_atom, ...)`, sent
///   by the location cache itself (subscribers accept snapshots from it
///   only), with a version that only grows. The subscriber is dropped when
///   it terminates.
/// - `(fleet_atom, fleet_demotion)` → `uint64_t`: the regions the fleet's
///   shared evidence demotes now (from the fleet actor, actors/fleet.hpp);
///   replaces the last list, pushes a new snapshot and answers its version.
/// - `(refresh_atom)` → `bool`: `should_refresh_endpoints`
/// (LocationCache.ShouldRefreshEndpoints) on the
///   current snapshot.
using location_cache_actor = caf::typed_actor<
    caf::reacts_to<account_atom, database_account>,
    caf::replies_to<resolve_atom, resolve_input>::with<resolution>,
    caf::replies_to<mark_atom, region_mark>::with<uint64_t>,
    caf::replies_to<fleet_atom, fleet_demotion>::with<uint64_t>,
    caf::replies_to<subscribe_atom, caf::actor>::with<location_snapshot>,
    caf::replies_to<refresh_atom>::with<bool>>;

/// Endpoint manager (.NET GlobalEndpointManager,
/// src/Routing/GlobalEndpointManager.cs). Reads the account from the global
/// endpoint, sweeping the regional endpoints in preferred order when that fails
/// or takes more than 5 s, and feeds every change to the location cache. Runs a
/// background refresh every interval that never stops while the actor lives.
///
/// - `(refresh_atom, bool force)` → `database_account`: on-demand refresh.
///   Non-forced requests within the minimum interval answer the current
///   account without fetching; forced ones join the fetch in flight.
///   Errors: `errc::unauthorized` / `errc::forbidden` at once (401/403 stop
///   the sweep), otherwise the last failure of the sweep.
/// - `(refresh_atom, fresh_atom)` → `database_account`: an account read
///   that is newer than the account this caller last saw: the fetch in
///   flight, or one started now, or, when a fetch started less than
///   `fresh_refresh_spacing` (at most the minimum interval) ago, the next
///   one, started when that spacing has passed. For a decision whose
///   answer must come from a newer view (a 503 from the write region of an
///   account that may have become multi-write again), at most one read a
///   second however many decisions ask.
/// - `(account_atom)` → `database_account`: the current account, fetched
///   first if none was read yet.
/// - `(stats_atom)` → `endpoint_manager_stats`.
/// Waiters of a fetch get `errc::shutting_down` when the engine stops.
using endpoint_manager_actor = caf::typed_actor<
    caf::replies_to<refresh_atom, bool>::with<database_account>,
    caf::replies_to<refresh_atom, fresh_atom>::with<database_account>,
    caf::replies_to<account_atom>::with<database_account>,
    caf::replies_to<stats_atom>::with<endpoint_manager_stats>>;

/// Retry actor: the detached executor (.NET MetadataDetachedExecutor; issue 4).
/// Bounded only by its own hard deadline and, in loop mode, the attempt cap.
/// Callers give up through their request timeout; the work goes on.
///
/// - `(execute_atom, metadata_request)` → `transport::outcome` (loop mode):
///   resolve, sign, send, consult the client retry policy on every failure
///   and carry out its side effects (mark, refresh, clear session tokens).
///   Errors: the last underlying failure when the policy says no or the
///   deadline trips after an attempt finished ("503 from East US after 7
///   attempts"); `errc::deadline_exceeded` before any attempt finished.
/// - `(detach_atom, document_request)` → `transport::outcome` (detach-only):
///   hand the request to the request router, which retries inside its own
///   pipeline under the same hard deadline and reports the last underlying
///   failure when it trips; no outer retry. `errc::collaborator_down` if the
///   router exits meanwhile.
/// - `(stats_atom)` → `retry_stats`.
/// Every operation in flight gets `errc::shutting_down` when the engine
/// stops.
using retry_actor = caf::typed_actor<
    caf::replies_to<execute_atom, metadata_request>::with<transport::outcome>,
    caf::replies_to<detach_atom, document_request>::with<transport::outcome>,
    caf::replies_to<stats_atom>::with<retry_stats>>;

/// Collection cache (.NET CollectionCache (src/Routing/CollectionCache.cs) and
/// .NET ClearingSessionContainerClientRetryPolicy).
///
/// - `(by_name_atom, std::string link, bool force, std::string obsolete_rid)`
///   → `collection_info`: "dbs/x/colls/y". Concurrent callers of one key
///   share one fetch (run by the retry actor); every waiter still waiting
///   gets the result. A forced refresh with an obsolete rid refetches only
///   if the cache still holds that rid.
/// - `(by_rid_atom, std::string rid)` → `collection_info`.
/// - `(stats_atom)` → `collection_cache_stats`.
/// Errors: the retry actor's error (e.g. `errc::not_found`), never cached;
/// `errc::protocol_violation` for a body that does not decode;
/// `errc::validation_error` for a malformed link or rid;
/// `errc::collaborator_down` at once for every waiter when the retry actor
/// exits with the fetch in flight (the next request fetches afresh);
/// `errc::overloaded` when too many callers already wait for one key.
using collection_cache_actor = caf::typed_actor<
    caf::replies_to<by_name_atom, std::string, bool,
                    std::string>::with<collection_info>,
    caf::replies_to<by_rid_atom, std::string>::with<collection_info>,
    caf::replies_to<stats_atom>::with<collection_cache_stats>>;

/// Partition-range cache (.NET PartitionKeyRangeCache and
/// CollectionRoutingMap).
///
/// - `(pkranges_atom, std::string collection_rid, std::string known_etag)`
///   → `routing_snapshot`: the routing map; with a non-empty `known_etag`
///   a refresh runs only if nobody refreshed since that version.
/// - `(overlap_atom, std::string collection_rid, epk_range, bool force)` →
///   `std::vector<partition_key_range>`.
/// - `(stats_atom)` → `pkrange_cache_stats`.
/// Errors: `errc::not_found` for an unknown collection, the fetch's error
/// otherwise; never a half map. `errc::deadline_exceeded` when one load (all
/// its pages) outlives the hard deadline; `errc::collaborator_down` and
/// `errc::overloaded` as for the collection cache.
using pkrange_cache_actor = caf::typed_actor<
    caf::replies_to<pkranges_atom, std::string,
                    std::string>::with<routing_snapshot>,
    caf::replies_to<overlap_atom, std::string, epk_range,
                    bool>::with<std::vector<partition_key_range>>,
    caf::replies_to<stats_atom>::with<pkrange_cache_stats>>;

/// Query plan (.NET QueryPlanRetriever, gateway path). `(plan_atom,
/// query_plan_request)` → `query_plan`, cached by (collection rid, query,
/// parameters, partition key) in a bounded LRU. The POST runs through the
/// request router, wrapped in the retry actor's detach-only mode.
/// `(stats_atom)` → `query_plan_stats`. Errors: `errc::validation_error`
/// for an empty collection rid or parameters that are not a JSON array; the
/// fetch's error otherwise (not cached); `errc::collaborator_down` and
/// `errc::overloaded` as for the collection cache.
using query_plan_actor = caf::typed_actor<
    caf::replies_to<plan_atom, query_plan_request>::with<query_plan>,
    caf::replies_to<stats_atom>::with<query_plan_stats>>;

/// Request router: the data plane (actors/router.hpp).
///
/// - `(route_atom, data_request)` → `data_response`: one point operation
///   (create, upsert, read, replace, remove) or a single-partition query,
///   routed to its collection, partition range and region, retried per the
///   client retry policy within the operation budget. Errors: the last
///   underlying failure (its code, e.g. `errc::not_found`,
///   `errc::service_unavailable`, with "... from East US (...) after 3
///   attempts"), `errc::validation_error` for a malformed request,
///   `errc::collaborator_down`, `errc::shutting_down`; every error carries
///   the diagnostics (`diagnostics_of`).
/// - `(route_atom, document_request)` → `transport::outcome`: the raw path
///   of the query-plan actor (through the retry actor's detach-only mode).
/// - `(route_atom, change_feed_request)` → `change_feed_page`: one page of
///   a change feed (pull model; actors/change_feed_executor.hpp). Errors:
///   `errc::validation_error` before any trip for a malformed request or
///   continuation (the message names the field), or after the collection
///   lookup for a continuation of a collection that was created again;
///   otherwise the failure of a read, as for a data request. A caller that
///   gets an error keeps the continuation it sent: nothing is lost.
/// - `(route_atom, batch_request)` → `batch_response`: a transactional
///   batch, 200 (applied) or 207 (not applied, each operation's status).
///   Errors as for a data request; `errc::validation_error` before any
///   trip for a malformed batch (the message names the operation). A batch
///   that may have been applied (a timeout, a connection lost after it was
///   sent) is never sent again: it fails with `errc::outcome_unknown`, as
///   every write of unknown outcome does.
/// - `(route_atom, bulk_open)` → `caf::actor`: a bulk session
///   (actors/bulk_executor.hpp; `caf::actor_cast<bulk_actor>` the answer),
///   which takes operations in chunks and answers each operation's result.
///   Errors, before any trip: `errc::validation_error` for a malformed
///   link or option (named).
/// - `(feed_ranges_atom, std::string collection_link)` →
///   `std::vector<partition_key_range>`: the collection's ranges now, in
///   EPK order; their bounds are the feed ranges a change feed can be
///   split into (one consumer per range).
/// - `(stats_atom)` → `router_stats`; `(metrics_atom)` → `router_metrics`:
///   the same counters with the data plane's histograms per operation,
///   region, status and error (messages/metrics.hpp).
/// A caller gives up only through its own request timeout; the router's
/// failover decisions and their side effects complete regardless.
using router_actor = caf::typed_actor<
    caf::replies_to<route_atom, data_request>::with<data_response>,
    caf::replies_to<route_atom, change_feed_request>::with<change_feed_page>,
    caf::replies_to<route_atom, batch_request>::with<batch_response>,
    caf::replies_to<route_atom, bulk_open>::with<caf::actor>,
    caf::replies_to<feed_ranges_atom,
                    std::string>::with<std::vector<partition_key_range>>,
    caf::replies_to<route_atom, document_request>::with<transport::outcome>,
    caf::replies_to<stats_atom>::with<router_stats>,
    caf::replies_to<metrics_atom>::with<router_metrics>>;

/// The engine's supervisor (actors/engine.hpp, `engine::supervisor()`): it
/// spawns the other actors, restarts them and stops them as one unit. A host
/// may monitor it (a `down_msg` says the engine is gone) or link to it (the
/// engine stops when the linked actor exits, and vice versa).
///
/// - `(stop_atom)` -> `caf::ok_atom`: the asynchronous stop. Every actor is
///   told to exit (callers with work in flight get `errc::shutting_down`),
///   the HTTP client is closed off the CAF workers (its io threads joined,
///   or its sockets closed on the thread that drives them), and only
///   then comes the answer: once it is there, the engine is down and the
///   actor system may destruct. Idempotent while the supervisor lives; a
///   stop sent after it is gone fails with CAF's `request_receiver_down`,
///   which means the same. No deadline travels with it: a caller that wants
///   one sets its own request timeout.
/// - `(metrics_atom)` -> `engine_metrics`: every counter of every actor and
///   the data plane's histograms (messages/metrics.hpp). The supervisor asks
///   each actor and joins the answers; an actor that is down, or silent for
///   `engine_options::metrics_timeout`, is named in `missing` instead of
///   failing the snapshot. Never fails while the supervisor lives.
using engine_supervisor_actor =
    caf::typed_actor<caf::replies_to<stop_atom>::with<caf::ok_atom>,
                     caf::replies_to<metrics_atom>::with<engine_metrics>>;

} // namespace georoute
