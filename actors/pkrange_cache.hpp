#pragma once

// Partition-range cache (.NET PartitionKeyRangeCache
// (src/Routing/PartitionKeyRangeCache.cs) and .NET CollectionRoutingMap
// (src/Routing/CollectionRoutingMap.cs)): one immutable `routing_map` per
// collection rid, loaded through the incremental pkranges feed and swapped
// whole.
//
//   caller --(pkranges_atom, rid, known_etag)--------+
//   caller --(overlap_atom, rid, epk_range, force)---+
//          <-- routing_snapshot / ranges ------------+
//                                                    v
//                                              pkrange cache
//          (execute_atom, GET /dbs/{dbRid}/          |
//           colls/{collRid}/pkranges), one page      |
//           after another until 304                  v
//                                               retry actor
//
// - `(pkranges_atom, rid, known_etag)`: no map yet → cold load; an empty
//   `known_etag` → the current map; `known_etag` equal to the current map's
//   etag → refresh (nobody refreshed since the caller's version); a
//   different `known_etag` → the current map (someone already refreshed).
// - `(overlap_atom, rid, range, force)`: the ranges of the current map that
//   overlap `range`; no map → cold load first; `force` with a map → one
//   refresh first (.NET TryGetOverlappingRanges). A cold load is already
//   fresh, so `force` on an empty cache does not refresh a second time.
// - A load loops pages of the ranges feed (every range per page, the
//   changes since the previous map's etag on refresh, then since each
//   response's etag) until the server answers 304. Cold: a complete map of
//   all ranges (parents dropped); warm: the previous map combined with the
//   new ranges. A result that is not complete is an error
//   (`errc::protocol_violation` with the map's problem) and the old map
//   stays: never a half map. 404 → `errc::not_found`, and the map of the
//   collection (deleted) is dropped. Other errors are the retry actor's.
// - One load per rid in flight; callers that need it join it, callers that
//   do not (plain lookups during a refresh) get the current map at once.
// - Caller cancellation is the caller's own request timeout and nothing
//   else: the cache asks the retry actor with `caf::infinite`, a caller that
//   gave up is simply gone, and the load goes on and fills the cache. (The
//   reference SDKs make such a caller wait; georoute does not.)
// - Bounded: one load, all its pages together, ends by `load_deadline`
//   (`errc::deadline_exceeded`); at most `capacity` maps are kept (LRU); at
//   most `max_waiters` callers wait for one load (`errc::overloaded`).
// - The cache monitors the retry actor: if it goes down mid-load, every
//   waiter gets `errc::collaborator_down` at once and the next request
//   starts a fresh load.

#include "georoute/messages/interfaces.hpp"

#include <caf/actor_addr.hpp>
#include <caf/actor_system.hpp>
#include <chrono>
#include <cstdint>

namespace georoute {

/// Limits of the pkrange cache.
struct pkrange_cache_config {
  /// Pages one load may take before it is abandoned as a protocol violation
  /// (a server that never answers 304 would otherwise loop forever).
  uint32_t max_pages = 100;
  /// One load, all its pages together, ends by this deadline.
  std::chrono::milliseconds load_deadline = std::chrono::seconds{300};
  /// Routing maps kept (one per collection); least recently used go first.
  size_t capacity = 10000;
  /// Callers that may wait for one collection's load.
  size_t max_waiters = 10000;
};

/// Spawns the partition-range cache; it starts empty.
pkrange_cache_actor spawn_pkrange_cache(caf::actor_system& sys,
                                        retry_actor retry,
                                        pkrange_cache_config cfg = {},
                                        caf::actor_addr supervisor = {});

} // namespace georoute
