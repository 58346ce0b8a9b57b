#pragma once

// Location cache (.NET LocationCache, src/Routing/LocationCache.cs). Owns the
// current immutable `location_table` snapshot and rebuilds it on every change:
//
//   endpoint manager --(account_atom, account)--> location cache
//   retry actor      --(mark_atom, region_mark)--> location cache
//   anyone           --(resolve_atom, input)----> location cache --> resolution
//   subscribers      <--(snapshot_atom, snapshot)-- on every new snapshot
//
// Subscribers (the retry actor, the router) resolve on their own copy of the
// snapshot, so the request path needs no round trip. Marks expire by time:
// the table answers every query at `now`, so expiry needs no message. Only
// the log notices expiries: with a logger at info a timer of the cache's
// own looks for them (one pending at a time) and logs each once.

#include "georoute/actors/log.hpp"
#include "georoute/actors/policy/location_table.hpp"
#include "georoute/config/settings.hpp"
#include "georoute/messages/interfaces.hpp"

#include <caf/actor_system.hpp>

namespace georoute {

/// Builds the table options from validated settings.
location_table_options location_options_from(const config::settings& s);

/// Spawns the location cache with an empty table (every request goes to the
/// default endpoint until the first account arrives). `log` hears of marks
/// (a region newly unavailable, and when its mark expires); while a mark is
/// live and `log` is enabled at info, one timer of the cache waits for the
/// next expiry.
location_cache_actor spawn_location_cache(caf::actor_system& sys,
                                          location_table_options options,
                                          logger log = {});

} // namespace georoute
