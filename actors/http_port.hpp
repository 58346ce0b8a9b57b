#pragma once

// How actors send HTTP. An actor hands a request to its port with an id; the
// outcome comes back into its mailbox as `(http_done_atom, id, outcome)`.
// The real port signs with the master key and uses the Beast client, whose io
// threads only `anon_send` (they never touch actor state or promises). Tests
// substitute a port that records requests and answers them by hand, so actor
// tests run in virtual time without sockets.

#include "config/settings.hpp"
#include "transport/outcome.hpp"

#include <caf/actor.hpp>
#include <cstdint>
#include <memory>

namespace georoute {

namespace transport {
class http_client;
} // namespace transport

/// See the file comment.
class http_port {
public:
  virtual ~http_port() = default;

  /// Signs and sends `req`; `reply_to` later receives
  /// `(http_done_atom, id, transport::outcome)` exactly once.
  virtual void send(const caf::actor& reply_to, uint64_t id,
                    transport::request req) = 0;
};

using http_port_ptr = std::shared_ptr<http_port>;

/// A port over a Beast client that signs every request with `key` (empty:
/// unsigned). An invalid key fails every request with a protocol outcome
/// naming the problem.
http_port_ptr make_http_port(std::shared_ptr<transport::http_client> client,
                             const config::secret& key);

} // namespace georoute
