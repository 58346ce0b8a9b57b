#pragma once

// The engine: georoute's actor graph as one unit that an embedding program
// starts, uses and stops.
//
//   engine::start(sys, settings)
//       |
//       v
//   supervisor (georoute.engine) -- spawns, monitors, restarts, re-wires:
//       location cache <- endpoint manager
//       request router (+ its pipeline) , retry actor
//       collection cache, partition-range cache, query plan  (-> retry actor)
//
// - `start` spawns the whole graph from validated settings and returns a
//   handle. The handles it gives out (`router()`, `query_plans()`, ...) are
//   the current ones; after a restart the handle gives the successor.
// - Supervision: when an actor dies (anything but a stop), the supervisor
//   spawns a successor with the same configuration and sends the new wiring
//   to every other actor, which re-subscribes or re-targets its requests.
//   What was in flight in the dead actor fails at once with
//   `errc::collaborator_down` (its collaborators monitor it) or, for
//   callers of the dead actor itself, with CAF's `request_receiver_down` or
//   the caller's own timeout; the next request is served by the successor.
//   At most `max_restarts` restarts per actor within `restart_window`; past
//   that the actor stays down (requests to it fail at once).
// - `stop` ends every actor, timer and connection: every caller with work in
//   flight gets `errc::shutting_down` ("engine stopped ..."), the HTTP
//   client's io threads are joined, and afterwards the embedding program's
//   `actor_system` destructs at once. The destructor stops too.

#include "actors/http_port.hpp"
#include "actors/internal.hpp"
#include "config/settings.hpp"
#include "messages/interfaces.hpp"

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>
#include <chrono>
#include <cstdint>
#include <memory>

namespace georoute {

/// What the embedding program may choose beyond the settings.
struct engine_options {
  /// How actors send HTTP. Null: the engine builds a Beast client from
  /// `settings.http` and signs with `settings.account_key`.
  http_port_ptr http;
  /// How long the account read waits for the global endpoint before it
  /// also asks the regions (GlobalEndpointManager's constants: 5 s).
  std::chrono::milliseconds sweep_after = std::chrono::seconds{5};
  /// Restart intensity of the supervisor, per actor.
  uint32_t max_restarts = 10;
  std::chrono::milliseconds restart_window = std::chrono::seconds{60};
  /// How long `stop` waits for the actors to end.
  std::chrono::milliseconds stop_timeout = std::chrono::seconds{10};
};

/// Counters of the supervisor.
struct engine_stats {
  uint64_t restarts = 0; ///< successors spawned
  uint64_t gave_up = 0;  ///< actors left down (restart intensity exceeded)
};

/// See the file comment. Movable, not copyable.
class engine {
public:
  /// Spawns the graph. Errors: `errc::validation_error` for settings the
  /// engine cannot run with (no account endpoint, a TLS CA file that does
  /// not load).
  static caf::expected<engine> start(caf::actor_system& sys,
                                     const config::settings& settings,
                                     engine_options options = {});

  engine(engine&&) noexcept;
  engine& operator=(engine&&) noexcept;
  engine(const engine&) = delete;
  engine& operator=(const engine&) = delete;

  /// Stops (see `stop`).
  ~engine();

  /// The current handles.
  router_actor router() const;
  query_plan_actor query_plans() const;
  collection_cache_actor collections() const;
  pkrange_cache_actor pkranges() const;
  location_cache_actor locations() const;
  endpoint_manager_actor endpoints() const;
  retry_actor retry() const;
  engine_wiring wiring() const;

  engine_stats stats() const;

  /// Ends every actor, timer and connection; blocks until they are gone (at
  /// most `stop_timeout`). Idempotent. Returns false if an actor did not end
  /// in time.
  bool stop();

  /// True until `stop`.
  bool running() const;

  /// Implementation detail (shared with the supervisor actor).
  struct shared;

private:
  explicit engine(std::shared_ptr<shared> s);
  std::shared_ptr<shared> s_;
};

} // namespace georoute
