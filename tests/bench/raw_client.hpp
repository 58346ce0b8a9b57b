#pragma once

// The limit: a minimal Beast keep-alive client that sends one pre-signed
// request over and over, one request in flight per connection, no routing,
// no parsing beyond the status line. Every Beast line of the bench is in
// raw_client.cpp.

#include "tests/bench/measure.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace georoute::bench {

/// What the raw client sends: `GET target` to host:port with these headers
/// (already signed; the signature stays valid for 15 minutes).
struct raw_request {
  std::string host; ///< numeric IPv4, 127.0.0.1
  uint16_t port = 0;
  std::string target;
  std::vector<std::pair<std::string, std::string>> headers;
};

/// Runs `connections` chains of request -> response -> request ... on one
/// io thread, recording every completed exchange in `log` (one slot per
/// connection) until `stop` is set; returns after every chain ended.
/// A connection that fails records a failure and ends its chain.
class raw_load {
public:
  raw_load(raw_request req, size_t connections, event_log& log);
  ~raw_load(); ///< stops and joins

  /// Stops every chain and joins the io thread.
  void stop();

  raw_load(const raw_load&) = delete;
  raw_load& operator=(const raw_load&) = delete;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace georoute::bench
