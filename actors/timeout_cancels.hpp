#pragma once

// Answering a caller so that its request timeout goes with the answer.
//
// CAF 0.17 never cancels a request timeout when the response arrives: the
// entry stays in the clock for the whole timeout and then fires into nothing
// (a message, the caller resumed to drop it). At a high rate that is memory
// in proportion to rate x the callers' timeout (about 200 bytes each: 40 MiB
// at 20k reads/s and 10 s), and a second wake-up of each caller later. So an
// actor that answers at such a rate (the router) cancels it for the caller,
// who cannot be waiting on it any more. The engine loop's clock cancels in
// constant time on this thread: at once. CAF's own clock takes a cancel as an
// event for its thread, and wakes that thread whenever its queue was empty:
// so the cancels go in batches of `timeout_cancels::batch`, one wake-up for
// many; the last few of a burst keep their entries, which fire into nothing
// at their deadline. Only a
// local caller answered directly (no forwarding stages) set the timeout this
// cancels. CAF 0.17 sends a request before it registers the request's
// timeout, so a cancel can overtake its timeout (an answer faster than the
// caller's next step; on the loop also a timeout set from another thread that
// has not reached the loop yet): that one is missed and fires into nothing.
// Batching makes it rare on CAF's clock.

#include <caf/actor_addr.hpp>
#include <caf/fwd.hpp>
#include <caf/local_actor.hpp>
#include <caf/message_id.hpp>
#include <caf/response_promise.hpp>
#include <cstddef>
#include <utility>
#include <vector>

namespace georoute {

/// The request timeouts of the callers one actor answered, cancelled for
/// them (see the file comment). Held in that actor's state and used on it
/// only.
class timeout_cancels {
public:
  /// How many answered requests' timeouts go to CAF's clock in one go: its
  /// event queue holds 63, and a producer that finds it full sleeps.
  static constexpr size_t batch = 16;

  timeout_cancels() = default;

  /// For an actor of `sys`: at once on the engine loop's clock, in batches
  /// on CAF's own.
  explicit timeout_cancels(caf::actor_system& sys);

  /// Delivers `x` through `rp`, then cancels the caller's request timeout
  /// (or adds it to the next batch).
  template <class T>
  void answer(caf::local_actor* self, caf::response_promise& rp, T&& x) {
    if (!rp.stages().empty() || !rp.source() ||
        rp.source()->node() != self->node()) {
      rp.deliver(std::forward<T>(x));
      return;
    }
    auto caller = rp.source();
    auto id = rp.id().response_id();
    rp.deliver(std::forward<T>(x));
    cancel(self, caller, id);
  }

private:
  void cancel(caf::local_actor* self, const caf::strong_actor_ptr& caller,
              caf::message_id id);
  /// Tells CAF's clock thread to drop the timeouts collected so far.
  void flush(caf::local_actor* self);

  bool on_loop_clock_ = false;
  /// Callers held weakly: one that ended took its timeouts with it.
  std::vector<std::pair<caf::actor_addr, caf::message_id>> pending_;
};

} // namespace georoute
