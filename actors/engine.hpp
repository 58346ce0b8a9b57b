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
// - Stopping ends every actor, timer and connection: every caller with work
//   in flight gets `errc::shutting_down` ("engine stopped ..."), the HTTP
//   client's connections are closed (its io threads joined, or its sockets
//   closed on the engine loop or on the engine's home thread, which then
//   ends: `engine_options::home_thread`), and afterwards the embedding
//   program's `actor_system` destructs at once. Two ways:
//     - from an actor: `request(eng.supervisor(), timeout, stop_atom_v)`;
//       the answer (`caf::ok_atom`) says the engine is down. Nothing blocks.
//     - from a thread that is not a CAF worker (main, a test): `stop()`,
//       which sends the same message and waits for the answer. It must not
//       run on a CAF worker: it would hold the worker the supervisor needs
//       (on a one-worker scheduler it waits its full `stop_timeout` and
//       fails). The destructor calls `stop()`, so an engine owned by an
//       actor is stopped with the message first.
//   Once the engine is down it holds nothing of the actor system: the
//   system may go before the engine object. While it runs, the engine
//   object must not outlive its `actor_system`.
// - `start` does not block either: it spawns the actors and hands out their
//   handles at once, so an actor may start an engine too.
// - Metrics: `metrics()` (blocking, not from a CAF worker) or
//   `(metrics_atom)` to `supervisor()` (from an actor) answer one snapshot of
//   every counter and the data plane's histograms (messages/metrics.hpp).
// - `supervisor()` is a typed handle (messages/interfaces.hpp) a host may
//   monitor or link to. The supervisor exits once the engine is down, by
//   either way of stopping or because an actor linked to it exited.
//
// - Logs: `engine_options::log` receives the engine's events (topology,
//   marks, breaker, refresh failures, restarts) once each; actors/log.hpp
//   lists them. The supervisor logs its restarts and give-ups.
//
// What a host includes is the public protocol: this file, actors/log.hpp,
// actors/client.hpp, messages/ and config/. transport/port.hpp comes with it
// because a host may substitute the transport (`engine_options::http`); the
// engine's internal protocol (actors/internal.hpp: the re-wiring, the helpers
// its actors share) is not part of it.

#include "georoute/actors/log.hpp"
#include "georoute/config/settings.hpp"
#include "georoute/messages/interfaces.hpp"
#include "georoute/transport/port.hpp"

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>
#include <chrono>
#include <cstdint>
#include <memory>

namespace georoute {

class home_thread;
class fleet_link;
class fleet_inbox;

namespace detail {
struct engine_state;
} // namespace detail

/// What the embedding program may choose beyond the settings.
struct engine_options {
  /// How actors send their attempts (transport/port.hpp). Null: the
  /// classic gateway's port over a client the engine builds from
  /// `settings.http`, signing with `settings.account_key`.
  transport::port_ptr http;
  /// How long the account read waits for the global endpoint before it
  /// also asks the regions (GlobalEndpointManager's constants: 5 s).
  std::chrono::milliseconds sweep_after = std::chrono::seconds{5};
  /// How long the supervisor waits for each actor's counters when it builds
  /// a metrics snapshot; an actor silent that long is `missing` from it.
  std::chrono::milliseconds metrics_timeout = std::chrono::seconds{1};
  /// Restart intensity of the supervisor, per actor.
  uint32_t max_restarts = 10;
  std::chrono::milliseconds restart_window = std::chrono::seconds{60};
  /// How long the blocking `stop` waits for the engine to be down.
  std::chrono::milliseconds stop_timeout = std::chrono::seconds{10};
  /// Where the engine's logs go (actors/log.hpp: the events, their levels).
  /// Called on actor threads, several at once: thread-safe and quick. Null:
  /// nothing is logged and nothing is formatted.
  log_sink log;
  /// The least severe level passed to `log`. At `info` (the default) and
  /// above the engine logs events (topology, marks, breaker, refresh
  /// failures, restarts), never one line per request.
  log_level log_min_level = log_level::info;
  /// On CAF's default scheduler, with the engine's own HTTP client: run the
  /// router and the client's sockets on one thread of the engine's own
  /// (actors/home_thread.hpp): a read then crosses threads twice (to the
  /// router and back to its caller) instead of four times. False: the
  /// router runs on CAF's workers and the client on
  /// `settings.http.io_threads` io threads of its own. Not used on the
  /// engine loop (every actor is already on the sockets' thread) nor with
  /// `http` set.
  bool home_thread = true;
  /// With `http` set: the home thread whose io_loop the host's client runs
  /// on, for the router to run there too (null: on CAF's workers). The host
  /// stops it after its client is gone.
  std::shared_ptr<georoute::home_thread> home;
  /// With `settings.fleet.enabled`: the link the fleet's reports go out on
  /// and the inbox it delivers to (actors/fleet.hpp). The host builds them
  /// (`make_nats_fleet_link`, actors/nats/fleet_link.hpp, in a build with
  /// libnats; or a bus of its own) and keeps the link alive until the
  /// engine stopped. Fleet health enabled without a link: `start` fails.
  std::shared_ptr<fleet_link> fleet;
  std::shared_ptr<georoute::fleet_inbox> inbox;
};

/// See the file comment. Movable, not copyable.
class engine {
public:
  /// Spawns the graph and returns at once (callable from an actor). Errors:
  /// `errc::validation_error` for settings the engine cannot run with: the
  /// first line of `config::check_settings` (the option table's bounds, no
  /// account endpoint, a key the transport cannot decode), or a TLS CA file
  /// that does not load.
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
  /// The fleet actor (actors/fleet.hpp; answers `(stats_atom)` with
  /// `fleet_stats`); null with fleet health off or once the engine is down.
  caf::actor fleet() const;

  /// The supervisor: monitor or link to it; `(stop_atom)` stops the engine
  /// without blocking (see the file comment). Null once the engine is down.
  engine_supervisor_actor supervisor() const;

  /// The supervisor's counters (`engine_stats`, messages/metrics.hpp).
  engine_stats stats() const;

  /// Every counter of every actor and the data plane's histograms
  /// (messages/metrics.hpp; `to_prometheus` renders it): sends
  /// `(metrics_atom)` to the supervisor and blocks for the answer (at most
  /// `metrics_timeout` and a second). Not from a CAF worker, for the reason
  /// `stop()` gives; an actor asks the supervisor itself. Once the engine is
  /// down, or if the supervisor does not answer, the snapshot holds the
  /// supervisor's counters and names every other actor in `missing`.
  engine_metrics metrics() const;

  /// Sends `(stop_atom)` to the supervisor and blocks until the answer (at
  /// most `stop_timeout`). Not from a CAF worker (see the file comment).
  /// Idempotent; also fine after a stop by message. Returns false if the
  /// engine was not down in time.
  bool stop();

  /// True until the engine is down (by `stop()`, by `(stop_atom)` or because
  /// an actor linked to the supervisor exited).
  bool running() const;

private:
  explicit engine(std::shared_ptr<detail::engine_state> s);
  std::shared_ptr<detail::engine_state> s_;
};

} // namespace georoute
