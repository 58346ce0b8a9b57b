#pragma once

// The baseline of georoute on CAF's default scheduler: the bench's caller
// actors (georoute_load.hpp) on an actor system configured as the
// default-mode engine's, asking one responder actor that answers
// `(route_atom, data_request)` at once with an empty 200: no engine, no
// I/O. What a read costs here is what the host's scheduler costs for one
// request: the request and response messages, the hand-overs between CAF's
// workers, the caller's request timeout in CAF's clock. The responder
// cancels that timeout as the router does (actors/timeout_cancels.hpp), so
// the clock does the same work per read in both.

#include "tests/bench/georoute_load.hpp"
#include "tests/bench/measure.hpp"

#include <caf/actor_system.hpp>
#include <chrono>
#include <memory>

namespace georoute::bench {

/// See the file comment.
class echo_driver {
public:
  /// The actor system (CAF's default scheduler with `threads` workers) and
  /// the responder on it.
  explicit echo_driver(size_t threads);
  ~echo_driver(); ///< stops the responder, then the actor system

  /// As georoute_driver::start_load, against the responder.
  std::unique_ptr<caller_load> start_load(const data_request& req,
                                          size_t in_flight, event_log& log,
                                          std::chrono::milliseconds timeout);

  echo_driver(const echo_driver&) = delete;
  echo_driver& operator=(const echo_driver&) = delete;

private:
  bench_config cfg_;
  caf::actor_system sys_;
  route_actor echo_;
};

} // namespace georoute::bench
