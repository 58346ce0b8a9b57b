#pragma once

// How actors send HTTP. An actor hands a request to its port with a
// completion; the port calls it exactly once, on a transport thread, with the
// outcome. The completion only `anon_send`s a message to the actor, of a type
// private to that actor's .cpp, so nobody else can inject an HTTP outcome
// (the completion must never touch actor state or promises). The real port
// signs with the master key and uses the Beast client. Tests substitute a
// port that records requests and answers them by hand, so actor tests run in
// virtual time without sockets.

#include "georoute/config/settings.hpp"
#include "georoute/transport/outcome.hpp"

#include <cstdint>
#include <functional>
#include <memory>

namespace georoute {

namespace transport {
class http_client;
} // namespace transport

/// See the file comment.
class http_port {
public:
  virtual ~http_port() = default;

  /// Called exactly once with the outcome, on a transport thread.
  using completion = std::function<void(transport::outcome)>;

  /// Signs and sends `req`; `done` later gets the outcome.
  virtual void send(transport::request req, completion done) = 0;
};

using http_port_ptr = std::shared_ptr<http_port>;

/// A port over a Beast client that signs every request with `key` (empty:
/// unsigned). An invalid key fails every request with a protocol outcome
/// naming the problem.
http_port_ptr make_http_port(std::shared_ptr<transport::http_client> client,
                             const config::secret& key);

} // namespace georoute
