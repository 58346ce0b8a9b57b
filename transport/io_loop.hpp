#pragma once

// One event loop (an Asio io_context behind a pimpl) that several parts of a
// process can share: the engine loop scheduler (actors/engine_loop.hpp) runs
// actors, CAF timers and this loop's sockets on one thread, and an
// `http_client` built on it (`http_client_options::loop`) keeps its sockets
// here instead of on io threads of its own. No Asio type appears in this
// header; transport/io_loop_asio.hpp gives transport code the io_context.
//
// The driver. At most one thread runs the loop at a time: the thread that
// holds the driver role (`become_driver` .. `stop_driving`). Code that owns
// objects bound to the loop asks `on_loop_thread()` to know whether it may
// touch them directly or must `post`. Whoever finds no driver (e.g. a client
// destroyed after its actor system ended) may become the driver itself to
// finish its own work (`try_become_driver`).
//
// Ending. A driver that stops for good runs what is still queued once more
// (`poll`; the engine loop does so when its system stops). A queued handler of
// an `http_client` (the aborted read of a client just destroyed) holds its
// connection, which holds the client's internals, which hold this loop: left
// in the queue, it keeps all of them alive for the life of the process.

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>

namespace georoute::transport {

/// See the file comment.
class io_loop {
public:
  using time_point = std::chrono::steady_clock::time_point;

  io_loop();
  /// Destroys handlers still queued without running them.
  ~io_loop();

  io_loop(const io_loop&) = delete;
  io_loop& operator=(const io_loop&) = delete;

  /// True on the thread that currently drives the loop.
  bool on_loop_thread() const noexcept;

  /// Makes the calling thread the driver; blocks while another thread is.
  void become_driver();
  /// Makes the calling thread the driver if nobody is; false otherwise.
  bool try_become_driver();
  /// Gives the driver role up (only the driver calls this).
  void stop_driving();

  // -- for the driver only ---------------------------------------------------

  /// Runs every handler that is ready, without blocking. Returns how many.
  size_t poll();
  /// Blocks until one handler ran or `until` passed. Returns 0 or 1.
  size_t run_one_until(time_point until);
  /// Blocks until one handler ran.
  size_t run_one();

  // -- from any thread
  // ---------------------------------------------------------

  /// Queues `f` to run on the driver. Thread-safe.
  void post(std::function<void()> f);

  /// Implementation detail (transport/io_loop_asio.hpp).
  struct impl;
  impl& internals() noexcept { return *impl_; }

private:
  std::unique_ptr<impl> impl_;
};

using io_loop_ptr = std::shared_ptr<io_loop>;

} // namespace georoute::transport
