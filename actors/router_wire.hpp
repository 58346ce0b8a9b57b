#pragma once

// What the request router sends for a data-plane operation and how it reads
// the answer (gateway protocol A6, A7, A10). No actor state: the router
// calls these with what it resolved (collection, range, endpoint, session
// token) and acts on the result.

#include "georoute/actors/policy/model.hpp"
#include "georoute/actors/policy/timeout_ladder.hpp"
#include "georoute/messages/payloads.hpp"
#include "georoute/transport/outcome.hpp"

#include <optional>
#include <string>
#include <vector>

namespace georoute {

/// "create", "read", ...
const char* to_string(data_op op);

/// Checks a request before anything is resolved; returns the problem, or
/// nothing. Point operations need a partition key; read, replace and
/// remove need an id; create, upsert and replace need a JSON object body;
/// a query needs `{"query": "..."}`; the budget may not be negative.
std::optional<std::string> validate(const data_request& req);

/// What the router resolved for one attempt.
struct wire_target {
  std::string collection_link; ///< "dbs/d/colls/c" (normalized)
  std::string endpoint;
  std::string session_token; ///< "" = send none
  bool hub_header =
      false; ///< the hub-region-only header
             ///< (ClientRetryPolicy.ShouldRetryOnSessionNotAvailable)
  std::chrono::milliseconds timeout{65000};
};

/// The HTTP request of one attempt.
transport::request to_wire(const data_request& req, const wire_target& t);

/// The response of a successful attempt (2xx, or 304 on a conditional read).
data_response to_response(const transport::outcome& o);
/// The same, taking the outcome's strings instead of copying them.
data_response to_response(transport::outcome&& o);

/// Checks the body of a successful attempt: a 2xx that carries a resource
/// (a document, a query page) must carry one JSON object; 204, 304 and the
/// empty answer of a remove carry none. Returns the problem, or nothing.
/// Without it a broken body would reach the caller as a success (the
/// bad-input table, `integration.BadInput.MalformedJson_*`).
std::optional<std::string> success_body_problem(data_op op,
                                                const transport::outcome& o);

} // namespace georoute
