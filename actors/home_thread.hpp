#pragma once

// A home thread: one thread of the engine's own on which chosen actors (the
// router) and an io_loop (the HTTP client's sockets) run together, for
// programs on CAF's default scheduler. (On the engine loop,
// actors/engine_loop.hpp, every actor already shares the sockets' thread and
// no home thread is made.)
//
// Why. On CAF's default scheduler, without a home thread, a point read
// crosses threads four times: caller -> router on a worker, router -> the
// client's io thread, the io thread -> router on a worker again, router ->
// caller. With the router at home beside its sockets, a send is a call on
// the same thread and the completion comes back there: two crossings remain
// (caller -> home, home -> caller), the ones a caller on another thread
// cannot avoid.
//
// How an actor stays home. CAF 0.17 schedules an actor that receives a
// message on the execution unit of the sender (its worker), so nothing keeps
// an actor on one thread -- except the actor itself: a `pinned<Base>` actor
// hands its own `enqueue` and `launch` the home's unit instead of the
// sender's, so whenever it becomes ready it is queued here. What it sends
// while it runs here goes out through a second unit, which hands every
// other actor to the system's scheduler as usual.
//
// The thread runs, in turn: ready pinned actors (at most a batch), ready
// socket handlers (`poll`); with nothing ready it sleeps in the io_loop
// until a socket is ready or another thread wakes it (a posted no-op, only
// when it sleeps and nobody woke it yet).
//
// The rule is the engine loop's: nothing pinned here may block.
//
// Stopping. `stop` ends the thread after what it is running, hands pinned
// actors still queued to the system's scheduler (they finish on its workers;
// one queued later goes there too), and runs once more the io_loop's
// leftover handlers. Whoever closes the HTTP client on this loop does so
// before `stop`, while the thread still drives the loop.

#include <caf/actor_config.hpp>
#include <caf/actor_system.hpp>
#include <caf/execution_unit.hpp>
#include <caf/mailbox_element.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

namespace georoute {

namespace transport {
class io_loop;
} // namespace transport

/// See the file comment. Thread-safe.
class home_thread {
public:
  /// Starts the thread, named `name` (at most 15 characters show).
  home_thread(caf::actor_system& sys, std::string name);
  /// Stops the thread (see `stop`); called on the thread itself, it can
  /// only let it go.
  ~home_thread();

  home_thread(const home_thread&) = delete;
  home_thread& operator=(const home_thread&) = delete;

  /// The loop the thread drives, for an `http_client` in loop mode.
  std::shared_ptr<transport::io_loop> io() const;

  /// The unit a pinned actor passes to CAF in place of its sender's.
  caf::execution_unit* pin_unit() noexcept;

  /// True on the home thread while it runs.
  bool on_thread() const noexcept;

  /// Ends the thread (see the file comment) and waits for it; idempotent.
  /// Not on the home thread itself.
  void stop();

  /// Implementation detail.
  struct impl;

private:
  std::shared_ptr<impl> impl_;
  std::thread::id tid_;
  std::mutex join_mtx_;
};

/// An actor of type `Base` that always runs on `home` (see the file
/// comment), until the home stops. `Base` is a cooperatively scheduled CAF
/// actor type (event-based, typed, stateful).
template <class Base>
class pinned : public Base {
public:
  template <class... Ts>
  pinned(caf::actor_config& cfg, std::shared_ptr<home_thread> home, Ts&&... xs)
      : Base(cfg, std::forward<Ts>(xs)...), home_(std::move(home)) {}

  using Base::enqueue;

  void enqueue(caf::mailbox_element_ptr ptr, caf::execution_unit*) override {
    Base::enqueue(std::move(ptr), home_->pin_unit());
  }

  void launch(caf::execution_unit*, bool lazy, bool hide) override {
    Base::launch(home_->pin_unit(), lazy, hide);
  }

  const std::shared_ptr<home_thread>& home() const noexcept { return home_; }

private:
  std::shared_ptr<home_thread> home_;
};

} // namespace georoute
