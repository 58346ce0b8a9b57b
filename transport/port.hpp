#pragma once

// How actors send an attempt. An actor hands its port a logical attempt
// (attempt.hpp) with a completion; the port encodes it in the protocol of
// its endpoint, sends it, and calls the completion exactly once, on a
// transport thread (or the engine loop's), with the outcome. The
// completion only `anon_send`s a message to the actor, of a type private
// to that actor's .cpp, so nobody else can inject an outcome (it must
// never touch actor state or promises).
//
// The classic gateway's port (`make_gateway_port`) encodes with
// gateway_wire.hpp, signs with the master key and sends on the HTTP/1.1
// client. Tests substitute a port that records attempts and answers them
// by hand, so actor tests run in virtual time without sockets.

#include "georoute/transport/attempt.hpp"
#include "georoute/transport/outcome.hpp"

#include <functional>
#include <memory>
#include <string>

namespace georoute::transport {

class http_client;

/// See the file comment.
class port {
public:
  virtual ~port() = default;

  /// Called exactly once with the outcome.
  using completion = std::function<void(outcome)>;

  /// Encodes and sends `a`; `done` later gets the outcome.
  virtual void send(attempt a, completion done) = 0;
};

using port_ptr = std::shared_ptr<port>;

/// The classic gateway over `client`, signing every request with the
/// base64 master key `key` (empty: unsigned). An unusable key fails every
/// attempt with a protocol outcome naming the problem; so does an attempt
/// whose endpoint speaks another protocol.
port_ptr make_gateway_port(std::shared_ptr<http_client> client,
                           const std::string& key);

} // namespace georoute::transport
