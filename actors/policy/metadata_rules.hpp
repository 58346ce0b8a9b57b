#pragma once

// Pure decisions of the metadata path: the clearing-session decorator
// (.NET ClearingSessionContainerClientRetryPolicy), the mapping of a failed
// attempt to the signal the retry policy sees, and the lookup gates of the
// collection cache and the partition-range cache (.NET
// ClearingSessionContainerClientRetryPolicy, .NET PartitionKeyRangeCache,
// src/Routing/PartitionKeyRangeCache.cs). The actors call these and act on the
// answer.

#include "georoute/actors/policy/throttle_policy.hpp"
#include "georoute/actors/policy/timeout_ladder.hpp"

#include <cstdint>
#include <string_view>

namespace georoute {

// -- clearing-session decorator ---------------------------------------------

/// ClearingSessionContainerClientRetryPolicy (.NET): a decorator that never
/// changes the retry decision. True when the inner policy gave up
/// (`policy_retries` false) on a name-based request's 404 with substatus
/// 1002: the collection name may have been reused, so its session tokens go.
bool clearing_session_clears(bool policy_retries, bool name_based, int status,
                             int substatus);

// -- failed attempt to retry signal -----------------------------------------

/// A failed attempt as the retry actor sees it after the transport.
struct attempt_failure {
  /// No HTTP response arrived (refused, reset, timeout, DNS, TLS, protocol,
  /// body too large).
  bool transport_failure = false;
  /// The per-attempt deadline expired (a transport failure of its own kind).
  bool timed_out = false;
  /// The HTTP status and substatus when a response arrived.
  int status = 0;
  int substatus = 0;
  /// x-ms-retry-after-ms; negative when absent or unparsable.
  int64_t retry_after_ms = -1;
  /// With `transport_failure`: the request had (maybe) reached the server
  /// (`transport::outcome::request_sent`).
  bool request_sent = false;
  /// With `transport_failure`: the server refused the connection. Nothing
  /// was sent, and the region's answer is definite: it is not serving.
  bool refused = false;
};

/// The signal the retry policy sees for `f`, once the ladder has given up
/// (`ladder` is decide_ladder's answer for this attempt). A timeout after a
/// region stayed silent through the whole ladder is a connection failure
/// (mark, refresh, fail over), not the 503 the reference retries once
/// without marking; a timeout on a ladder that does not retry timeouts
/// (writes) is `failure_signal::timed_out()`; any other transport failure is
/// `failure_signal::lost_after_send()` when the request had gone out, else a
/// connection failure; an HTTP error is `failure_signal::http`.
failure_signal signal_for(const attempt_failure& f,
                          const ladder_decision& ladder);

// -- collection cache -------------------------------------------------------

/// What the collection cache does with a by-name lookup.
enum class collection_lookup {
  join,            ///< wait for the fetch in flight
  hit,             ///< answer the cached value
  refetch_skipped, ///< forced, but the doubted rid is gone: answer the cache
  refresh,         ///< forced on a cached value: fetch again
  miss,            ///< nothing cached: fetch
};

/// The by-name gate. A fetch in flight is fresh enough even for a forced
/// lookup; a cached value answers unless forced; a forced lookup whose
/// `obsolete_rid` is set and differs from the cached rid is skipped, since
/// someone refreshed since the caller's doubt.
collection_lookup decide_collection_lookup(bool fetch_in_flight, bool cached,
                                           bool force,
                                           std::string_view cached_rid,
                                           std::string_view obsolete_rid);

/// True when the server answered a by-rid read with another collection's
/// rid: a protocol violation.
bool rid_mismatch(std::string_view asked_rid, std::string_view answered_rid);

// -- partition-range cache --------------------------------------------------

/// What the partition-range cache does with a lookup.
enum class pkrange_lookup {
  hit,             ///< answer the cached map
  refresh_skipped, ///< the caller's etag is stale: the map was refreshed
  load,            ///< load (no map) or refresh (a map): join or start one
};

/// The snapshot gate (.NET PartitionKeyRangeCache
/// (src/Routing/PartitionKeyRangeCache.cs), TryLookupAsync): with a map, an
/// empty `known_etag` is a hit and a `known_etag` other than the map's means
/// someone refreshed since; otherwise load. The caller tells a cold load
/// from a refresh by `has_map`.
pkrange_lookup decide_pkrange_lookup(bool has_map, std::string_view map_etag,
                                     std::string_view known_etag);

/// The overlap gate: a map answers unless forced; otherwise load.
pkrange_lookup decide_overlap_lookup(bool has_map, bool force);

} // namespace georoute
