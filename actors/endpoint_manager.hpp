#pragma once

// Endpoint manager (.NET GlobalEndpointManager,
// src/Routing/GlobalEndpointManager.cs).
//
//   caller --(refresh_atom, force)--> endpoint manager --GET /--> global
//          <---- database_account ---                  --GET /--> regions
//                                        |  (after 5 s or a failure, in
//                                        |   preferred order)
//                                        v
//                         (account_atom, account) --> location cache
//
// - Reads the account from the global endpoint with the ControlPlaneRead
//   ladder. When that fails, or has not answered after 5 s, it sweeps the
//   regional endpoints of the last known account in preferred order; the
//   first success wins. 401 and 403 (other than 403/1008, a removed region)
//   stop the sweep at once with an error that says what to check.
// - One fetch in flight: forced requests join it; non-forced ones within the
//   minimum interval are answered with the current account (skipped).
// - A fresh request (refresh_atom, fresh_atom) wants a read newer than the
//   account its caller decided on: it joins the fetch in flight or starts
//   one, unless one started less than `fresh_refresh_spacing` ago; then it
//   waits for the next, started when that spacing has passed. A 503 from
//   the single write region asks for one: the account may be multi-write
//   again, and the write's one retry must be resolved on a table that
//   knows. However many writes fail so, the reads stay one a second.
// - A background refresh every interval that never stops while the actor
//   lives, whatever the topology looks like (the Java timer of the seed bug
//   died on a healthy multi-writer account).
// - Every change (write-region switch, multi-write flip, regions added or
//   removed) goes to the location cache. It never waits on a caller.

#include "georoute/actors/log.hpp"
#include "georoute/actors/policy/timeout_ladder.hpp"
#include "georoute/config/settings.hpp"
#include "georoute/messages/interfaces.hpp"
#include "georoute/transport/port.hpp"

#include <caf/actor_system.hpp>
#include <string>
#include <vector>

namespace georoute {

/// The least time between two fetch starts that fresh requests cause (the
/// minimum interval when that is shorter).
constexpr std::chrono::milliseconds fresh_refresh_spacing{1000};

/// The slice of settings the endpoint manager needs.
struct endpoint_manager_config {
  std::string account_endpoint;
  std::vector<std::string> preferred_regions;
  config::refresh_options refresh;
  /// Account reads climb `choose_ladder(ladders, request_kind::account_read)`.
  timeout_ladders ladders;
  /// How long the global endpoint may take before the sweep starts.
  std::chrono::milliseconds sweep_after = std::chrono::seconds{5};
  /// Topology changes, refresh failures and recoveries (actors/log.hpp).
  logger log;
};

/// Builds the slice from validated settings.
endpoint_manager_config endpoint_manager_config_from(const config::settings& s);

/// Spawns the endpoint manager. It reads the account at once and then every
/// background interval until it is told to exit.
endpoint_manager_actor spawn_endpoint_manager(caf::actor_system& sys,
                                              endpoint_manager_config cfg,
                                              location_cache_actor locations,
                                              transport::port_ptr http,
                                              caf::actor_addr supervisor = {});

} // namespace georoute
