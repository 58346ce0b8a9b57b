#pragma once

// Asynchronous HTTP/1.1 client over Boost.Beast, hidden behind a pimpl so
// that no Beast or Asio type leaves transport/.
//
// The client owns its io_context and its io thread(s). Each endpoint (scheme,
// host, port) has a bounded pool of keep-alive connections; a request waits
// for a free connection when all are busy. A kept-alive socket the server
// closed is never trusted blindly: before a request goes out on it the
// client checks that it is still open, and when it closes after the request
// went out but before any response byte, only what `resend_after_close`
// allows is sent again (see outcome.hpp). Every attempt has one deadline
// (`request::timeout`) that covers the wait for a connection, connect, TLS
// handshake, write and read. The completion callback runs on an io thread: it
// must only hand the outcome on (the CAF bridge does `anon_send`), never touch
// actor state.
//
// Loop mode (`http_client_options::loop`): the client has no thread of its
// own; its sockets live on a shared io_loop, whose driver thread runs every
// handler and every completion (with the engine loop scheduler, the thread
// of the actors: a completion's `anon_send` is then a local enqueue). A
// `send` made on that thread starts the request right there (no post, no
// strand); from any other thread it is posted to the loop. Destruction
// completes what is in flight with "client shut down" before it returns, as
// in thread mode; see `~http_client` for the three cases.

#include "georoute/transport/outcome.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace georoute::transport {

class io_loop;

/// Options of one client; all limits are per client instance.
struct http_client_options {
  /// Keep-alive connections per endpoint; requests beyond wait in a queue.
  size_t max_connections_per_endpoint = 16;
  /// A response body above this is `failure::body_too_large`.
  size_t max_response_body = size_t{64} * 1024 * 1024;
  /// A response header block above this is `failure::protocol`.
  size_t max_header_bytes = 64 * 1024;
  /// PEM file of trusted CAs for https; empty = the system's default paths.
  /// Peer verification and SNI are always on.
  std::string tls_ca_file;
  /// Number of io threads (thread mode only).
  size_t io_threads = 1;
  /// Loop mode: run on this loop (whose driver must keep running it while
  /// requests are in flight) instead of io threads of the client's own.
  std::shared_ptr<io_loop> loop;
};

/// Counters for tests and benchmarks.
struct http_client_stats {
  uint64_t requests = 0;           ///< requests handed to send()
  uint64_t connections_opened = 0; ///< TCP connects that succeeded
  uint64_t reused = 0;             ///< requests sent on a kept-alive socket
  /// Requests moved to a fresh connection because their kept-alive socket
  /// was found closed before any byte of them was written (any method).
  uint64_t stale_unsent = 0;
  /// Requests sent again on a fresh connection after their kept-alive
  /// socket closed with no response byte back (`repeat_safe` ones only).
  uint64_t resent = 0;
  /// The same situation for a request that is not `repeat_safe`: not sent
  /// again, completed with `failure::reset` and `request_sent`.
  uint64_t resend_refused = 0;
};

/// See the file comment.
class http_client {
public:
  using callback = std::function<void(outcome)>;

  explicit http_client(http_client_options opts);

  /// Stops the io threads. Requests still in flight complete with
  /// `failure::reset` ("client shut down") before this returns.
  ///
  /// Loop mode: on the loop thread, the sockets are closed and the callbacks
  /// run right here (the loop is neither run nor waited for: this thread is
  /// the loop). On another thread, that work is posted to the loop and
  /// waited for; if nobody drives the loop any more (its actor system
  /// ended), this thread drives it for that work and for the aborted socket
  /// operations (at most 2 s: a DNS lookup in progress cannot be cut).
  ~http_client();

  http_client(const http_client&) = delete;
  http_client& operator=(const http_client&) = delete;

  /// Sends `req` and calls `cb` exactly once, on an io thread (loop mode:
  /// on the loop thread, possibly before `send` returns). Thread-safe.
  /// An unparsable endpoint completes at once with `failure::protocol`.
  void send(request req, callback cb);

  /// Thread-safe snapshot of the counters.
  http_client_stats stats() const;

  /// Fails the TLS configuration early: returns an error text if the CA file
  /// could not be loaded, else an empty string.
  const std::string& tls_setup_error() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace georoute::transport
