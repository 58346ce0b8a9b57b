#pragma once

// georoute under load: an engine (actors/engine.hpp) on its own actor
// system, and caller actors that keep N point operations in flight through
// the router, `(route_atom, data_request)` -> data_response, each recording
// its operations in an event_log. Every request the engine sends passes a
// counting port, so the bench knows how many metadata requests reached the
// emulator. The same callers ask the bench's echo (echo_load.hpp).

#include "georoute/actors/policy/result.hpp"
#include "georoute/messages/interfaces.hpp"
#include "georoute/messages/payloads.hpp"
#include "georoute/transport/port.hpp"
#include "tests/bench/engine_port.hpp"
#include "tests/bench/measure.hpp"

#include <caf/actor_system_config.hpp>
#include <caf/fwd.hpp>
#include <caf/typed_actor.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace georoute::bench {

/// How the engine under test is set up.
struct driver_options {
  std::string global_endpoint;
  std::string key;
  std::vector<std::string> preferred_regions;
  /// Keep-alive connections per endpoint (the raw client uses one per
  /// request in flight; so does georoute with this at the largest count).
  size_t connections = 64;
  /// CAF scheduler workers.
  size_t scheduler_threads = 2;
  /// Null: a Beast client from the settings. Else the port to send through
  /// (the counting port wraps it either way).
  transport::port_ptr port;
  /// The account read waits this long for the global endpoint before it
  /// also asks the regions.
  std::chrono::milliseconds sweep_after{5000};
  /// Overrides `georoute.hedging.enabled` (unset: the library's default).
  std::optional<bool> hedging;
  /// The engine loop (true) or CAF's default scheduler (false); unset: the
  /// program's choice (`--engine-loop`, the loop by default).
  std::optional<bool> engine_loop;
  /// On CAF's default scheduler: the router and the client's sockets on a
  /// home thread (actors/home_thread.hpp), as the engine runs by default.
  bool home_thread = true;
  /// Non-empty: fleet health on, its link a NATS channel to this server
  /// URL (the bench gives one where nothing listens: the cost of sharing
  /// with a dead channel). Starting fails in a build without libnats.
  std::string fleet_server;
};

/// A running set of callers (see `georoute_driver::start_load`).
class caller_load {
public:
  virtual ~caller_load() = default;
  /// Tells every caller to stop after its current operation and waits for
  /// all of them (at most `wait`). False if some did not finish in time.
  virtual bool stop(std::chrono::milliseconds wait) = 0;
};

/// What the callers ask of a router: `(route_atom, data_request)` ->
/// data_response. The engine's router is one; the bench's echo is another.
using route_actor = caf::typed_actor<
    caf::replies_to<route_atom, data_request>::with<data_response>>;

/// The actor system of a load: the engine loop (`loop` true), or CAF's
/// default scheduler with `threads` workers (false); unset: the program's
/// choice (`--engine-loop`, the loop by default).
struct bench_config : caf::actor_system_config {
  bench_config(size_t threads, std::optional<bool> loop);
};

/// `in_flight` caller actors on `sys`, each asking `to` for `req` again as
/// soon as the last one was answered (request timeout `timeout`), into `log`
/// (one slot each).
std::unique_ptr<caller_load> start_callers(caf::actor_system& sys,
                                           const route_actor& to,
                                           const data_request& req,
                                           size_t in_flight, event_log& log,
                                           std::chrono::milliseconds timeout);

/// See the file comment.
class georoute_driver {
public:
  /// Starts the engine and waits (at most 10 s) for its first account read.
  static result<std::unique_ptr<georoute_driver>> start(driver_options opts);
  ~georoute_driver(); ///< stops the engine, then the actor system

  /// `in_flight` callers, each routing `req` again as soon as the last one
  /// was answered (caller timeout `timeout`), into `log` (one slot each).
  std::unique_ptr<caller_load> start_load(const data_request& req,
                                          size_t in_flight, event_log& log,
                                          std::chrono::milliseconds timeout);

  /// `callers` actors route `req` at once (each once); waits for every
  /// answer. The counts are those of the port during the trial.
  cold_figures cold_start(const data_request& req, size_t callers);

  /// Routes every request once, `in_flight` at a time: a sliding window,
  /// each answer starting the next request. Returns (answered, failed).
  std::pair<uint64_t, uint64_t>
  route_many(const std::vector<data_request>& reqs, size_t in_flight);

  /// `in_flight` callers route `req` until `total` operations were
  /// answered; waits for them. Returns the operations that succeeded.
  uint64_t run_ops(const data_request& req, size_t total, size_t in_flight);

  /// Drains the change feed of `link` from the beginning, `page_size`
  /// documents a page, one page at a time, until a page is caught up.
  feed_figures drain_feed(const std::string& link, int32_t page_size);
  /// Creates `count` documents in `link` with the bulk API (client::bulk,
  /// chunks of 1 000, four in flight).
  bulk_figures bulk_load(const std::string& link, size_t count);
  /// Creates `count` documents in `link` one by one, `in_flight` at a time
  /// (waves).
  bulk_figures point_load(const std::string& link, size_t count,
                          size_t in_flight);
  /// The number of partition-key ranges of `link` (0 when unknown).
  size_t ranges_of(const std::string& link);
  /// Routes `req` once (blocking); true on a 2xx answer.
  bool route_once(const data_request& req, std::string* error = nullptr);

  port_counts& counts();

  /// Entries held by the collection and partition-range caches: (collection
  /// cache misses, routing maps loaded) from their counters.
  std::pair<uint64_t, uint64_t> cache_loads();

  /// The router's counters (zeroes if it does not answer).
  georoute::router_stats router_counters();

  georoute_driver(const georoute_driver&) = delete;
  georoute_driver& operator=(const georoute_driver&) = delete;

private:
  georoute_driver();
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// A point read of `id` in `link` with partition key value `pk`.
data_request point_read(const std::string& link, const std::string& id,
                        const std::string& pk);

/// An upsert of `{"id": id, "pk": pk, "n": n}`.
data_request point_upsert(const std::string& link, const std::string& id,
                          const std::string& pk);

} // namespace georoute::bench
