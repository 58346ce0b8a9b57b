#pragma once

// Collection cache (.NET CollectionCache (src/Routing/CollectionCache.cs) and
// .NET ClearingSessionContainerClientRetryPolicy): collection properties by
// name ("dbs/x/colls/y") and by rid, each fetched once and shared.
//
//   caller --(by_name_atom, link, force, obsolete_rid)--+
//   caller --(by_rid_atom, rid)-------------------------+
//          <------------- collection_info --------------+
//                                                       v
//                                              collection cache
//     (execute_atom, GET /dbs/x/colls/y)  |          | (clear_session_atom,
//     (execute_atom, GET /dbs/{dbRid}/    |          |  link) when the rid
//                    colls/{collRid})     v          v  of the name changed
//                                   retry actor   session sink
//
// - A hit is answered at once. A miss or a forced refresh runs ONE fetch per
//   key in the retry actor (policy `clearing_session`); every caller of that
//   key who arrives meanwhile joins it, and every one still waiting when it
//   lands gets the result. A fetch by name also fills the rid entry.
// - Caller cancellation is the caller's own request timeout and nothing
//   else: the cache asks the retry actor with `caf::infinite` (the retry
//   actor has its own hard deadline), a caller that gave up is simply gone
//   when the answer comes, the answer still lands in the cache, and the
//   callers still waiting get it. Unlike .NET's AsyncCache, a caller timing
//   out never makes the next caller start a second fetch.
// - A forced refresh that names an `obsolete_rid` refetches only if the
//   cache still holds that rid for the name; otherwise someone already
//   refreshed and the cached value is the answer (`refetch_skipped`).
// - A refetch by name that returns a new rid means the collection was
//   recreated: the old rid entry goes, and the session tokens of the name are
//   cleared with `(clear_session_atom, link)` to the session sink.
// - Errors (the retry actor's, or `errc::protocol_violation` for a body that
//   does not decode) go to every waiter and are not cached: the entry of the
//   key is dropped, as .NET drops a faulted entry, and the next caller
//   fetches again.
// - Bounded: each index (by name, by rid) is an LRU of `capacity` entries;
//   at most `max_waiters` callers wait for one key (more get
//   `errc::overloaded`).
// - The cache monitors the retry actor. If it goes down with fetches in
//   flight, every waiter gets `errc::collaborator_down` at once and the next
//   request fetches afresh (through the successor the engine re-wires in).

#include "georoute/messages/interfaces.hpp"

#include <caf/actor.hpp>
#include <caf/actor_addr.hpp>
#include <caf/actor_system.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace georoute {

/// "dbs/x/colls/y" with surrounding '/' removed, or std::nullopt when `link`
/// is not a collection link (four non-empty segments, "dbs" and "colls").
std::optional<std::string> normalize_collection_link(std::string_view link);

/// The rid-based path of a collection, "/dbs/{dbRid}/colls/{collRid}": the
/// database rid is the first 4 of the 8 bytes of the collection rid (rids
/// are base64 with '-' for '/'). std::nullopt when `rid` does not decode to
/// 8 bytes.
std::optional<std::string> rid_collection_path(std::string_view rid);

/// Limits of the collection cache.
struct collection_cache_config {
  /// Entries per index (by name, by rid); least recently used go first.
  size_t capacity = 10000;
  /// Callers that may wait for one key's fetch.
  size_t max_waiters = 10000;
};

/// Spawns the collection cache. `session_sink` receives
/// `(clear_session_atom, std::string link)` when a collection was
/// recreated; it may be null.
collection_cache_actor spawn_collection_cache(caf::actor_system& sys,
                                              retry_actor retry,
                                              caf::actor session_sink = {},
                                              collection_cache_config cfg = {},
                                              caf::actor_addr supervisor = {});

} // namespace georoute
