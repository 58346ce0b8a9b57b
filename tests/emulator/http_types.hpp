#pragma once

// HTTP request/response as the emulator's engine sees them: plain data, so the
// engine (resources, queries, sessions, faults) has no Beast in it and can be
// unit-tested by calling `engine::handle` directly.

#include "georoute/transport/outcome.hpp"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace georoute::emulator {

/// One parsed request. Header names are lower case.
struct http_request {
  std::string method; ///< "GET", "POST", "PUT", "DELETE"
  std::string target; ///< path and query as sent
  std::map<std::string, std::string> headers;
  std::string body;

  /// The header value or "" when absent (`name` in lower case).
  const std::string& header(const std::string& name) const;
};

/// One response. The server adds Content-Length, Connection and Date.
struct http_response {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  /// Adds or replaces a header.
  void set(const std::string& name, std::string value);
  /// The header value or "" when absent.
  std::string get(const std::string& name) const;
};

/// `r` as the engine would see it after the server parsed it (header
/// names lower-cased): for ports that answer in process, without a socket.
http_request from_client_request(const transport::request& r);

/// `res` as the HTTP client would report it, from `endpoint`.
transport::outcome to_outcome(const http_response& res,
                              const std::string& endpoint);

} // namespace georoute::emulator
