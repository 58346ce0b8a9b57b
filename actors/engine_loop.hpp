#pragma once

// The engine loop: a CAF 0.17 scheduler that runs every cooperatively
// scheduled actor, CAF's timers (timeouts, delayed messages) and the sockets
// of an `http_client` on ONE thread. Load it into the program's own
// configuration before the actor system is built:
//
//     caf::actor_system_config cfg;
//     cfg.load<georoute::engine_loop>();
//     caf::actor_system sys{cfg};
//     auto eng = georoute::engine::start(sys, settings); // uses the loop
//
// Why. With CAF's default scheduler a point read crosses threads: caller ->
// router, router -> caller, and, unless the router runs on a home thread
// beside its sockets (actors/home_thread.hpp), router -> the client's io
// thread and back; and every `request(..., timeout)` or `delayed_send`
// registers with CAF's clock thread. Each crossing is a wake of a sleeping
// thread. On the loop the router, its socket and its timers share a thread:
// a message between actors of the loop is a push onto a local queue, an
// HTTP completion runs on the thread that will handle it, and a timer is an
// entry in a map the loop looks at before it sleeps.
//
// The thread runs, in turn: ready actors (FIFO, at most a batch before it
// looks at sockets and timers again, so busy actors cannot starve I/O),
// expired CAF timers, ready socket handlers (`poll`, no blocking); and when
// nothing is ready it blocks in the io_context until the next CAF timer is
// due, a socket is ready, or another thread wakes it.
//
// Enqueue. On the loop thread (an actor sending to another, a timer firing,
// an HTTP completion) an actor goes onto the local queue: no lock, no wake.
// From any other thread (a `scoped_actor`, a detached actor, the embedding
// program's `anon_send`) it goes onto a locked queue, and the loop is woken
// (one posted no-op handler) only if it sleeps and nobody woke it yet.
//
// The clock. Timer calls made on the loop thread go straight into a
// `caf::detail::simple_actor_clock`, CAF's own single-threaded bookkeeping
// (the same one the default scheduler's clock thread uses), so ordinary and
// multi timeouts, delayed messages and their cancellations keep CAF's
// semantics. Request timeouts, one per request in flight and the bulk of
// the clock's work, are kept apart with the same semantics in structures
// that cost no allocation per request and cancel one in constant time.
// Calls from other threads are queued, in order, and handed to the loop
// (one post per batch). The loop sleeps until the earliest due
// time; Asio's epoll wait rounds that up to the next millisecond, so a timer
// fires up to about a millisecond late, never early.
//
// THE ONE RULE: nothing on the loop may block. An actor that sleeps, waits in
// a `scoped_actor` receive, waits for a future or does blocking I/O stops
// every actor, socket and timer of the process. `scoped_actor`s on other
// threads (the embedding program's main thread, tests) are fine, and so is
// spawning actors with `caf::detached` for work that must block. The actor
// system must not be destroyed from the loop thread either.
//
// One loop. The module runs exactly one loop thread (whatever
// `scheduler.max-threads` says): CAF 0.17 gives a scheduler no way to keep an
// actor on the loop that owns its sockets, so with N loops an actor and its
// connections would drift apart and every completion would cross threads
// again. A process that needs more CPU for actors than one core uses CAF's
// default scheduler instead (the engine then runs its router and its
// client's sockets on a thread of its own: actors/home_thread.hpp).
//
// Shutdown. The actor system's destructor first waits for every actor, as
// always; then the loop thread runs what is still queued up to the moment it
// is told to stop and exits; actors enqueued later are cleaned up on the
// stopping thread, and pending timers and delayed messages are dropped (what
// CAF's clock thread does at shutdown). A timer minutes in the future does
// not delay the shutdown.

#include <caf/actor_clock.hpp>
#include <caf/actor_system.hpp>
#include <caf/detail/type_list.hpp>
#include <caf/scheduler/abstract_coordinator.hpp>
#include <cstddef>
#include <memory>

namespace georoute {

namespace transport {
class io_loop;
} // namespace transport

/// See the file comment.
class engine_loop final : public caf::scheduler::abstract_coordinator {
public:
  using super = caf::scheduler::abstract_coordinator;

  /// What `actor_system_config::load<engine_loop>()` calls.
  static caf::actor_system::module* make(caf::actor_system& sys,
                                         caf::detail::type_list<>);

  explicit engine_loop(caf::actor_system& sys);
  ~engine_loop() override;

  engine_loop(const engine_loop&) = delete;
  engine_loop& operator=(const engine_loop&) = delete;

  // -- actor_system::module
  // ----------------------------------------------------

  void init(caf::actor_system_config& cfg) override;
  void start() override;
  void stop() override;

  // -- abstract_coordinator
  // ----------------------------------------------------

  void enqueue(caf::resumable* what) override;
  caf::actor_clock& clock() noexcept override;

  /// The loop's io_context, for an `http_client` that runs on it.
  std::shared_ptr<transport::io_loop> io() const;

  /// How many request timeouts the loop's clock holds right now (any
  /// thread; for tests: one set from another thread counts once the loop
  /// has taken it in).
  size_t request_timeouts_held() const noexcept;

  /// Implementation detail.
  struct impl;

private:
  std::unique_ptr<impl> impl_;
};

/// The io_loop of `sys` when its scheduler is an `engine_loop`, else null.
std::shared_ptr<transport::io_loop> engine_loop_io(caf::actor_system& sys);

} // namespace georoute
