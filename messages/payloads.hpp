#pragma once

// Payloads of the messages between georoute's actors. Each has inspect() so
// it can cross CAF's network layer; the snapshots (immutable tables shared by
// pointer) are the exception and stay process-local by design.

#include "georoute/actors/policy/batch.hpp"
#include "georoute/actors/policy/bulk.hpp"
#include "georoute/actors/policy/location_table.hpp"
#include "georoute/actors/policy/model.hpp"
#include "georoute/actors/policy/operation.hpp"
#include "georoute/actors/policy/timeout_ladder.hpp"
#include "georoute/transport/attempt.hpp"
#include "georoute/transport/outcome.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace georoute {

class routing_map; // actors/policy/routing_map.hpp

/// Marks an endpoint unavailable for reads, writes or both.
struct region_mark {
  std::string endpoint;
  bool read = false;
  bool write = false;
  /// Why, for the log ("refused (...) (router)"); may be empty. (Its
  /// default initializer keeps `region_mark{endpoint, read, write}` free of
  /// -Wmissing-field-initializers.)
  std::string reason{};
};

/// The regions the fleet's shared evidence demotes now (the fleet actor to
/// the location cache; actors/fleet.hpp): each message replaces the last.
/// A demoted region goes after the healthy ones and stays usable.
struct fleet_demotion {
  std::vector<std::string> reads;
  std::vector<std::string> writes; ///< multi-write accounts only
};

/// An immutable location snapshot, pushed to subscribers on every change.
struct location_snapshot {
  std::shared_ptr<const location_table> table;
  uint64_t version = 0;
};

/// An immutable routing map of one collection.
struct routing_snapshot {
  std::shared_ptr<const routing_map> map;
  std::string collection_rid;
};

/// A metadata request executed by the retry actor (loop mode): the actor
/// resolves the endpoint, signs, sends, and consults the retry policy on every
/// failure.
struct metadata_request {
  /// What each attempt sends: its kind, resource ("/dbs/d/colls/c") and
  /// options. The retry actor fills in the endpoint, the timeout and
  /// whether a dropped attempt may be sent again.
  transport::attempt what;
  request_kind kind = request_kind::metadata_read;
  op_kind op = op_kind::read;
  /// Name-based collection path whose session tokens are cleared when the
  /// policy gives up on a 404/1002 (.NET
  /// ClearingSessionContainerClientRetryPolicy); empty when not applicable.
  std::string collection_name;
  loop_policy policy = loop_policy::client;
  /// Per-request exclusions, on top of the configured ones.
  std::vector<std::string> excluded_regions;
  /// The first page of a feed (every non-feed request is one): only the
  /// first page of the pkranges feed may be hedged to a second region.
  bool first_page = true;
  /// The endpoint the first attempt goes to while its region may take the
  /// request (not excluded, not marked unavailable, not demoted by the
  /// fleet for reads); empty: the loop's choice. A later page of a feed starts
  /// where the page before was served: its continuation came from there, and
  /// when a hedge served it, the preferred region just proved slow.
  std::string start_endpoint;
};

/// A document-level request for the request router.
struct document_request {
  /// What it sends: a query plan, or (`attempt_kind::raw`) a caller's own
  /// method, path ("/dbs/d/colls/c/docs/x"), headers and body, with its
  /// partition key (`what.partition_key_json`, "[\"p0\"]"; empty for
  /// cross-partition).
  transport::attempt what;
  request_kind kind = request_kind::document_read;
  op_kind op = op_kind::read;
  std::vector<std::string> excluded_regions;
};

/// Per-request options of a data-plane operation. Every field has a
/// default that means "as configured".
struct request_options {
  /// The partition key as JSON array text, `["p0"]` or `["a","b"]`
  /// (hierarchical). Required for point operations.
  std::string partition_key_json;
  /// Regions not to use for this request, on top of the configured ones.
  std::vector<std::string> excluded_regions;
  /// "Strong", "BoundedStaleness", "Session", "Eventual",
  /// "ConsistentPrefix"; empty: the account's default.
  std::string consistency_level;
  /// A session token to send instead of the engine's own (reads).
  std::string session_token;
  /// Page size of a query; -1: the server decides.
  int32_t max_item_count = -1;
  /// Resume a query from this continuation.
  std::string continuation;
  /// Conditional writes (replace, remove, upsert) and reads.
  std::string if_match;
  std::string if_none_match;
  /// The operation budget: once spent, no new attempt starts (an attempt in
  /// flight finishes, and a failover it triggered completes). 0: the
  /// configured `georoute.operation-budget`.
  std::chrono::milliseconds budget{0};
  /// Cross-region hedging: -1 the engine's settings
  /// (`georoute.hedging.enabled`, and for writes `georoute.hedging.writes`),
  /// 0 off, 1 on. On a write, 1 opts it in; it is still hedged only on a
  /// multi-write account, and only an upsert or a replace without if-match.
  int8_t hedge = -1;
  /// When the first hedge starts; 0: the engine's threshold.
  std::chrono::milliseconds hedge_threshold{0};
  /// Writes that survive a hang: -1 the engine's setting
  /// (`georoute.write-retries`), 0 off, 1 on. With it, a create, replace,
  /// upsert or remove whose attempt timed out or lost its connection after
  /// it was sent is retried where another region can take it (another
  /// write region; on a single-write account only once per-partition
  /// failover moved its range). Creates, replaces and upserts carry a
  /// `_trackingId` property that the engine adds to the document, so that a
  /// retried create's 409 (or a retried conditional replace's 412) whose
  /// stored document carries it is reported as the success it was.
  int8_t write_retries = -1;
};

/// A data-plane request for the request router.
struct data_request {
  data_op op = data_op::read;
  std::string collection_link; ///< "dbs/d/colls/c"
  std::string id;              ///< the document id (read, replace, remove)
  /// The document JSON (create, upsert, replace), or the query spec
  /// `{"query": ..., "parameters": [...]}` (query).
  std::string body;
  request_options options;
  /// Queries only: run on this one physical partition-key range
  /// (x-ms-documentdb-partitionkeyrangeid) instead of a logical partition;
  /// how cross-partition queries read each range. A range that split
  /// answers `errc::partition_range_gone`. Change-feed reads too.
  std::string range_id;
  /// Change-feed reads of a range: only the EPK part [start_epk, end_epk)
  /// of it when `end_epk` is set ("" is the lowest EPK); neither: the
  /// whole range.
  std::string start_epk;
  std::string end_epk;
  /// Change-feed reads: `If-Modified-Since`, RFC 1123 ("Tue, 29 Mar 2016
  /// 02:28:29 GMT"); the changes from then on, when no etag is sent
  /// (`options.if_none_match`).
  std::string if_modified_since;
};

/// One attempt of an operation, for diagnostics.
struct attempt_record {
  std::string region;
  std::string endpoint;
  int status = 0; ///< 0 when no response arrived
  int substatus = 0;
  std::string failure;      ///< transport failure kind, "" when a response came
  std::string retry_reason; ///< why the next attempt happened, "" for the last
  int64_t started_us = 0;   ///< since the operation started
  int64_t elapsed_us = 0;
  double request_charge = 0;
  /// The hedge arm that sent it: 0 the primary (with its retries), 1.. a
  /// hedge to another region.
  uint32_t arm = 0;
  /// Its answer became the operation's.
  bool winner = false;
  /// Regions this attempt skipped because the circuit breaker of the
  /// operation's range was open there (in the order they were passed over).
  std::vector<std::string> breaker_skipped;
  /// How the circuit breaker let it through: "" (normally, or not
  /// consulted), "probe" (the one request to a region whose open period
  /// ended), "trial" (half-open share), "fallback" (every region was open).
  std::string breaker_admission;
  /// The service's `x-ms-activity-id` of the answer ("" when none came): the
  /// id to quote to the service's support for this attempt.
  std::string activity_id;
  /// The client's connection that carried it (numbered from 1 per HTTP
  /// client; 0 when none did) and how many requests that connection had
  /// answered before (0: a fresh connection).
  uint64_t connection = 0;
  uint64_t connection_served = 0;
  /// Where its time went, in microseconds (-1: a phase not reached): waiting
  /// for a free connection in the pool, a fresh connection's connect (0 on
  /// a kept-alive one), writing the request, and from then to its answer.
  int64_t queued_us = -1;
  int64_t connect_us = -1;
  int64_t write_us = -1;
  int64_t wait_us = -1;
};

/// What happened to one operation: every attempt in order.
struct diagnostics {
  std::vector<attempt_record> attempts;
  double request_charge = 0;
  int64_t total_us = 0;
  std::string collection_rid;
  std::string range_id;
  uint32_t metadata_refreshes = 0; ///< collection or routing-map refreshes
  /// Hedges sent (arms after the primary) and what their answers were
  /// charged (also when they lost); `request_charge` includes it.
  uint32_t hedges = 0;
  double hedge_charge = 0;
  /// Arms still in flight when the operation ended: their answers are
  /// dropped, but still mark regions.
  uint32_t abandoned_arms = 0;
  /// Circuit-breaker transitions this operation's outcomes caused, e.g.
  /// "West US range 1: closed -> open (read_failures)".
  std::vector<std::string> breaker_transitions;
};

/// The answer to a data request.
struct data_response {
  int status = 0;
  std::string body;
  std::string etag;
  /// The session token the response carried ("rangeId:token").
  std::string session_token;
  std::string continuation; ///< queries: more pages when non-empty
  /// Every attempt's charge (the winner's, retries' and hedges'); the
  /// hedges' part alone is `hedge_charge`.
  double request_charge = 0;
  double hedge_charge = 0;
  diagnostics diag;
};

/// Where a change feed starts when no continuation says where it is.
enum class feed_start : uint8_t {
  beginning = 0, ///< every change still in the feed
  now = 1,       ///< only changes after the first read
  time = 2,      ///< changes committed at or after `start_time_ms`
};

/// One page of a change feed (pull model: the caller asks for each page).
/// The feed is read in latest-version mode: each document appears at its
/// latest version (intermediate updates collapse; deletes are not shown).
///
/// The first request names the scope and the start; every later one passes
/// the continuation of the page before, and only that (scope and start are
/// in it; fields that contradict it are an error). The continuation holds a
/// position per EPK range, not per range id, so it survives splits and
/// merges and resumes in another engine.
struct change_feed_request {
  std::string collection_link; ///< "dbs/d/colls/c"
  /// Scope: one logical partition (JSON array text, `["p0"]`), or ...
  std::string partition_key_json;
  /// ... an EPK range [range_min, range_max) (upper-case hex; "" is the
  /// lowest, "FF" the end), e.g. one of `feed_ranges`; or, with
  /// neither, the whole collection. `range_max` empty: no EPK scope.
  std::string range_min;
  std::string range_max;
  feed_start start = feed_start::beginning;
  /// With `feed_start::time`: milliseconds since the Unix epoch (UTC). The
  /// service's precision is about a second. Not in the future.
  int64_t start_time_ms = 0;
  /// Resume from here: the continuation of an earlier page.
  std::string continuation;
  /// Documents per page at most; -1: the service's default (100).
  int32_t max_item_count = -1;
  /// Consistency, session token, excluded regions, budget and hedging of
  /// each read (a page may take several: one per range until one has
  /// changes). `partition_key_json`, `max_item_count` and `continuation`
  /// of the options are not used: the fields above are.
  request_options options;
};

/// The answer to a `change_feed_request`.
struct change_feed_page {
  /// The changed documents, a JSON array, in the order of the feed: per
  /// range by the service's change sequence (`_lsn`).
  std::string documents = "[]";
  uint32_t count = 0;
  /// Pass it to read on. Never empty: a change feed has no end.
  std::string continuation;
  /// No changes now: every range of the scope was read up to date during
  /// this request. Ask again later.
  bool caught_up = false;
  /// EPK ranges the continuation tracks (grows as ranges split).
  uint32_t ranges = 0;
  double request_charge = 0;
  /// Every read this page took, in order.
  diagnostics diag;
};

/// A transactional batch: operations on one logical partition that the
/// service applies all or none, in order (actors/policy/batch.hpp has the
/// operations, the limits and the rules of resending).
struct batch_request {
  std::string collection_link; ///< "dbs/d/colls/c"
  /// The batch's logical partition, JSON array text (`["p0"]`). Every
  /// operation belongs to it.
  std::string partition_key_json;
  /// (This and `options` have `{}` so that `batch_request{link, key}`
  /// builds without -Wmissing-field-initializers.)
  std::vector<batch_operation> operations{};
  /// Consistency, session token, excluded regions and budget. Not used:
  /// the options' partition key (the field above is), paging, if-match
  /// (each operation has its own), hedging and write retries (a batch is
  /// never sent twice once it may have been applied).
  request_options options{};
};

/// The answer to a `batch_request`.
struct batch_response {
  /// 200: every operation was applied. 207: none was; the operation that
  /// failed has its status and every other one 424.
  int status = 0;
  /// One per operation, in the request's order.
  std::vector<batch_op_result> results;
  double request_charge = 0;
  std::string session_token;
  diagnostics diag;

  bool committed() const { return status == 200; }
};

/// Opens a bulk session: the router answers the session's actor
/// (`bulk_actor`, actors/bulk_executor.hpp), which takes the operations in
/// chunks and answers each chunk with every operation's result.
struct bulk_open {
  std::string collection_link; ///< "dbs/d/colls/c"
  /// (`{}`: so that `bulk_open{link}` builds without
  /// -Wmissing-field-initializers.)
  bulk_options options{};
  /// Consistency and excluded regions for every request of the session.
  /// Not used: the partition key (each operation has its own), paging,
  /// if-match (each operation has its own), the budget (`options.budget_ms`
  /// is each operation's), hedging and write retries (a bulk request is
  /// never sent twice once it may have been applied).
  request_options request{};
};

/// Operations handed to a bulk session, at most
/// `bulk_options::max_pending_operations` held at once.
struct bulk_chunk {
  /// Each has its own partition key (`partition_key_json`).
  std::vector<batch_operation> operations{};
};

/// One bulk operation's result.
struct bulk_op_result {
  /// The service's final status for the operation (201 created, 409,
  /// 429 once its throttle retries were spent, ...); 0 when it has none:
  /// then `error_code` and `error` say why.
  int status = 0;
  int substatus = 0;
  std::string etag;
  /// The document the service sent back, or "".
  std::string body;
  double request_charge = 0;
  /// Requests that carried it (1 unless it was sent again).
  uint32_t sends = 0;
  /// With status 0: the `errc` value (e.g. deadline_exceeded; or
  /// transport_timeout when its request may have been applied) ...
  uint16_t error_code = 0;
  /// ... and what happened, naming the operation.
  std::string error;

  bool ok() const { return status >= 200 && status < 300; }
};

/// The answer to a `bulk_chunk`: one result per operation, in its order.
struct bulk_chunk_result {
  std::vector<bulk_op_result> results;
  double request_charge = 0;
};

/// What one range of a bulk session saw.
struct bulk_range_stats {
  std::string range_id;
  uint64_t operations = 0; ///< operations with a final result from it
  uint64_t requests = 0;   ///< bulk requests sent to it
  uint64_t throttled = 0;  ///< operations it answered 429
  uint32_t cuts = 0;       ///< times its congestion window was halved
  uint32_t peak_window = 0;
  uint32_t window = 0; ///< the window now
};

/// A bulk session's counters: `(stats_atom)` at any time, and the answer
/// to `(stop_atom)` once every chunk is answered.
struct bulk_summary {
  uint64_t operations = 0; ///< taken by the session
  uint64_t succeeded = 0;  ///< final 2xx
  uint64_t failed = 0;     ///< final otherwise
  uint64_t pending = 0;    ///< not final yet
  uint64_t requests = 0;   ///< bulk requests sent
  uint64_t throttled = 0;  ///< per-operation 429s, each sent again
  uint64_t regrouped = 0;  ///< operations re-grouped after a split or merge
  uint64_t resent = 0;     ///< operations sent again at once (413/3402, 410)
  uint64_t map_reads = 0;  ///< routing-map reads after a split or merge
  double request_charge = 0;
  /// Ranges in the order the session first sent to them.
  std::vector<bulk_range_stats> ranges;
};

/// A query plan request.
struct query_plan_request {
  std::string collection_link; ///< "dbs/d/colls/c"
  std::string collection_rid;
  std::string query;
  std::string parameters_json; ///< "[]" or the parameters array
  std::string partition_key_json;
};

/// Counters of the endpoint manager.
struct endpoint_manager_stats {
  uint64_t fetches_started = 0;
  uint64_t fetches_succeeded = 0;
  uint64_t fetches_failed = 0;
  uint64_t refreshes_skipped = 0; ///< non-forced, within the minimum interval
  /// Fresh refreshes that waited for the next fetch to start.
  uint64_t refreshes_deferred = 0;
  uint64_t background_ticks = 0;
  uint64_t attempts = 0; ///< GET / requests sent
  uint64_t topology_changes = 0;
  uint64_t write_region_switches = 0;
  uint64_t multi_write_changes = 0;
  uint64_t regions_added = 0;
  uint64_t regions_removed = 0;
};

/// Counters of the query-plan actor.
struct query_plan_stats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t fetches = 0;
  uint64_t evictions = 0;
  uint64_t failures = 0;
  uint64_t overloaded = 0; ///< callers refused: too many waiting for one plan
  /// Waiters failed at once because the retry actor went down.
  uint64_t collaborator_failures = 0;
};

/// Counters of the retry actor.
struct retry_stats {
  uint64_t operations = 0;
  uint64_t attempts = 0;
  uint64_t retries = 0;
  uint64_t deadline_trips = 0;
  uint64_t policy_refusals = 0; ///< failures the policy did not retry
  /// Failover decisions with a side effect (a region mark, an account
  /// refresh) and those whose side effects all completed, as the router's;
  /// and those made by attempts whose operation had ended (its hard
  /// deadline tripped or a hedge won): they still run.
  uint64_t failover_decisions = 0;
  uint64_t failover_decisions_completed = 0;
  uint64_t decisions_after_deadline = 0;
  uint64_t marks = 0;     ///< regions marked unavailable
  uint64_t refreshes = 0; ///< account refreshes asked of the endpoint manager
  uint64_t session_clears = 0;
  uint64_t late_completions = 0; ///< HTTP answers after the operation ended
  uint64_t live = 0;             ///< detached operations still running
  /// Pushed snapshots not applied because they were no newer than the held
  /// one (a push that raced a local mark).
  uint64_t stale_snapshots = 0;
  /// Metadata hedges: sent to a second region, taken as the operation's
  /// answer, and not sent because every budget slot was in use.
  uint64_t metadata_hedges_started = 0;
  uint64_t metadata_hedges_won = 0;
  uint64_t metadata_hedges_refused = 0;
  /// Budget slots held by metadata hedges right now.
  uint64_t metadata_hedge_slots = 0;
};

/// Counters of the request router (the data plane).
struct router_stats {
  uint64_t operations = 0; ///< data requests accepted
  uint64_t attempts = 0;   ///< HTTP requests sent
  uint64_t succeeded = 0;
  uint64_t failed = 0; ///< answered with an error
  /// Failover decisions with a side effect (a region mark, an account
  /// refresh), and those whose side effects all completed: marks confirmed
  /// by the location cache, refreshes answered by the endpoint manager. The
  /// difference is what is still running; once the engine is quiet it is
  /// zero, whatever the callers did meanwhile (nothing a caller does can
  /// pre-empt a decision).
  uint64_t failover_decisions = 0;
  uint64_t failover_decisions_completed = 0;
  /// Decisions carried out when nobody waited for the operation any more:
  /// its budget had ended, or the operation had (an abandoned attempt's).
  /// The side effects still run.
  uint64_t decisions_after_budget = 0;
  uint64_t marks = 0; ///< regions marked unavailable
  /// Account refreshes asked of the endpoint manager.
  uint64_t refreshes = 0;
  uint64_t metadata_refreshes = 0; ///< 410 range/collection gone
  uint64_t live = 0;               ///< operations in flight now
  /// Requests refused at once with `overloaded`: the router already had
  /// `georoute.max-operations-in-flight` operations in flight.
  uint64_t rejected_overloaded = 0;
  /// Operation deadlines the router tracks now (one per live operation; an
  /// answered operation leaves none behind) and the timer messages it has
  /// pending for them (one, unless a shorter budget arrived after a longer).
  uint64_t deadlines_tracked = 0;
  uint64_t deadline_timers_pending = 0;
  /// Timer messages the router armed in all (deadline ticks, delayed
  /// attempts): with the one-timer deadline queue this stays far below one
  /// per operation.
  uint64_t timers_armed = 0;
  /// Hedging: arms sent after the primary, arms whose answer won, hedges
  /// the budget refused, the RU the hedges' answers were charged, and
  /// answers that came after their operation ended (they still mark).
  uint64_t hedges_started = 0;
  uint64_t hedges_won = 0;
  uint64_t hedges_refused = 0;
  /// First hedges sent outside the budget because the primary's region was
  /// already losing that range (its breaker not closed, or hedges beat it
  /// since its last final answer); bounded by the breaker's hedge-wins.
  uint64_t hedges_on_evidence = 0;
  double hedge_charge = 0;
  uint64_t late_answers = 0;
  /// Tables from the location cache not applied because they were no newer
  /// than the held one (a push that raced a local mark).
  uint64_t stale_snapshots = 0;
  /// The per-partition circuit breaker: (range, region) keys opened from
  /// closed, probes started, keys closed again after a probe, keys opened
  /// again from probing or half-open (failed, timed-out or lost probes,
  /// half-open failures), attempts that skipped at least one region whose
  /// breaker was open for their range, and keys tracked now.
  uint64_t breaker_opened = 0;
  uint64_t breaker_probes = 0;
  uint64_t breaker_closed = 0;
  uint64_t breaker_reopened = 0;
  uint64_t breaker_skips = 0;
  uint64_t breaker_tracked = 0;
};

/// Counters of the collection cache. Every request counts once in exactly
/// one of hits, misses, refreshes and shared_waiters.
struct collection_cache_stats {
  uint64_t hits = 0;           ///< answered from the cache, without a fetch
  uint64_t misses = 0;         ///< nothing cached: started a fetch
  uint64_t refreshes = 0;      ///< forced: started a fetch over a cached value
  uint64_t shared_waiters = 0; ///< joined a fetch already in flight
  uint64_t fetches = 0;        ///< fetches started (misses + refreshes)
  uint64_t failures = 0;       ///< fetches that ended in an error
  /// Forced refreshes answered from the cache because the obsolete rid the
  /// caller named is no longer held (someone refreshed since); also hits.
  uint64_t refetch_skipped = 0;
  /// Refetches by name that found a new rid (collection recreated).
  uint64_t recreated = 0;
  uint64_t evictions = 0;  ///< entries dropped by the LRU bound (either index)
  uint64_t overloaded = 0; ///< callers refused: too many waiting for one key
  /// Waiters failed at once because the retry actor went down.
  uint64_t collaborator_failures = 0;
};

/// Counters of the partition-range cache. Every request counts once in
/// exactly one of hits, misses, refreshes and shared_waiters.
struct pkrange_cache_stats {
  uint64_t hits = 0;           ///< answered from the current map
  uint64_t misses = 0;         ///< no map: started a cold load
  uint64_t refreshes = 0;      ///< started an incremental refresh
  uint64_t shared_waiters = 0; ///< joined a load already in flight
  /// Refresh requests answered with the current map because its etag is
  /// newer than the caller's (someone refreshed since); also hits.
  uint64_t refresh_skipped = 0;
  uint64_t pages = 0;      ///< pkranges pages requested
  uint64_t failures = 0;   ///< loads that ended in an error (old map kept)
  uint64_t dropped = 0;    ///< maps dropped because the collection is gone
  uint64_t evictions = 0;  ///< maps dropped by the LRU bound
  uint64_t overloaded = 0; ///< callers refused: too many waiting for one load
  uint64_t deadline_trips = 0; ///< loads cut off by the hard deadline
  /// Waiters failed at once because the retry actor went down.
  uint64_t collaborator_failures = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, resolve_input& x) {
  return f(x.op, x.is_document, x.use_preferred, x.location_index,
           x.excluded_regions, x.route_to_hub, x.pinned_endpoint,
           x.avoid_endpoint);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, resolution& x) {
  return f(x.endpoint, x.region, x.route);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, region_mark& x) {
  return f(x.endpoint, x.read, x.write, x.reason);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, fleet_demotion& x) {
  return f(x.reads, x.writes);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, metadata_request& x) {
  return f(x.what, x.kind, x.op, x.collection_name, x.policy,
           x.excluded_regions, x.first_page, x.start_endpoint);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, document_request& x) {
  return f(x.what, x.kind, x.op, x.excluded_regions);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, request_options& x) {
  return f(x.partition_key_json, x.excluded_regions, x.consistency_level,
           x.session_token, x.max_item_count, x.continuation, x.if_match,
           x.if_none_match, x.budget, x.hedge, x.hedge_threshold,
           x.write_retries);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, data_request& x) {
  return f(x.op, x.collection_link, x.id, x.body, x.options, x.range_id,
           x.start_epk, x.end_epk, x.if_modified_since);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, change_feed_request& x) {
  return f(x.collection_link, x.partition_key_json, x.range_min, x.range_max,
           x.start, x.start_time_ms, x.continuation, x.max_item_count,
           x.options);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, change_feed_page& x) {
  return f(x.documents, x.count, x.continuation, x.caught_up, x.ranges,
           x.request_charge, x.diag);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batch_operation& x) {
  return f(x.kind, x.id, x.body, x.partition_key_json, x.if_match,
           x.if_none_match);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batch_request& x) {
  return f(x.collection_link, x.partition_key_json, x.operations, x.options);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batch_op_result& x) {
  return f(x.status, x.substatus, x.etag, x.body, x.request_charge,
           x.retry_after_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batch_response& x) {
  return f(x.status, x.results, x.request_charge, x.session_token, x.diag);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, bulk_options& x) {
  return f(x.max_operations_per_request, x.max_request_bytes,
           x.max_requests_per_range, x.max_pending_operations, x.budget_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, bulk_open& x) {
  return f(x.collection_link, x.options, x.request);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, bulk_chunk& x) {
  return f(x.operations);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, bulk_op_result& x) {
  return f(x.status, x.substatus, x.etag, x.body, x.request_charge, x.sends,
           x.error_code, x.error);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, bulk_chunk_result& x) {
  return f(x.results, x.request_charge);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, bulk_range_stats& x) {
  return f(x.range_id, x.operations, x.requests, x.throttled, x.cuts,
           x.peak_window, x.window);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, bulk_summary& x) {
  return f(x.operations, x.succeeded, x.failed, x.pending, x.requests,
           x.throttled, x.regrouped, x.resent, x.map_reads, x.request_charge,
           x.ranges);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, attempt_record& x) {
  return f(x.region, x.endpoint, x.status, x.substatus, x.failure,
           x.retry_reason, x.started_us, x.elapsed_us, x.request_charge, x.arm,
           x.winner, x.breaker_skipped, x.breaker_admission, x.activity_id,
           x.connection, x.connection_served, x.queued_us, x.connect_us,
           x.write_us, x.wait_us);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, diagnostics& x) {
  return f(x.attempts, x.request_charge, x.total_us, x.collection_rid,
           x.range_id, x.metadata_refreshes, x.hedges, x.hedge_charge,
           x.abandoned_arms, x.breaker_transitions);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, data_response& x) {
  return f(x.status, x.body, x.etag, x.session_token, x.continuation,
           x.request_charge, x.hedge_charge, x.diag);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, query_plan_request& x) {
  return f(x.collection_link, x.collection_rid, x.query, x.parameters_json,
           x.partition_key_json);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f,
                                        endpoint_manager_stats& x) {
  return f(x.fetches_started, x.fetches_succeeded, x.fetches_failed,
           x.refreshes_skipped, x.refreshes_deferred, x.background_ticks,
           x.attempts, x.topology_changes, x.write_region_switches,
           x.multi_write_changes, x.regions_added, x.regions_removed);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, query_plan_stats& x) {
  return f(x.hits, x.misses, x.fetches, x.evictions, x.failures, x.overloaded,
           x.collaborator_failures);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, retry_stats& x) {
  return f(x.operations, x.attempts, x.retries, x.deadline_trips,
           x.policy_refusals, x.failover_decisions,
           x.failover_decisions_completed, x.decisions_after_deadline, x.marks,
           x.refreshes, x.session_clears, x.late_completions, x.live,
           x.stale_snapshots, x.metadata_hedges_started, x.metadata_hedges_won,
           x.metadata_hedges_refused, x.metadata_hedge_slots);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, router_stats& x) {
  return f(x.operations, x.attempts, x.succeeded, x.failed,
           x.failover_decisions, x.failover_decisions_completed,
           x.decisions_after_budget, x.marks, x.refreshes, x.metadata_refreshes,
           x.live, x.rejected_overloaded, x.deadlines_tracked,
           x.deadline_timers_pending, x.timers_armed, x.hedges_started,
           x.hedges_won, x.hedges_refused, x.hedges_on_evidence, x.hedge_charge,
           x.late_answers, x.stale_snapshots, x.breaker_opened,
           x.breaker_probes, x.breaker_closed, x.breaker_reopened,
           x.breaker_skips, x.breaker_tracked);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f,
                                        collection_cache_stats& x) {
  return f(x.hits, x.misses, x.refreshes, x.shared_waiters, x.fetches,
           x.failures, x.refetch_skipped, x.recreated, x.evictions,
           x.overloaded, x.collaborator_failures);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, pkrange_cache_stats& x) {
  return f(x.hits, x.misses, x.refreshes, x.shared_waiters, x.refresh_skipped,
           x.pages, x.failures, x.dropped, x.evictions, x.overloaded,
           x.deadline_trips, x.collaborator_failures);
}

} // namespace georoute
