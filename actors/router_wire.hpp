#pragma once

// What the request router sends for a data-plane operation (the attempt it
// hands its port) and how it reads the answer. No actor state: the router
// calls these with what it resolved (collection, range, endpoint, session
// token) and acts on the result.

#include "georoute/actors/policy/model.hpp"
#include "georoute/actors/policy/timeout_ladder.hpp"
#include "georoute/messages/payloads.hpp"
#include "georoute/transport/attempt.hpp"
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
  transport::protocol proto = transport::protocol::gateway;
  std::string session_token; ///< "" = send none
  /// Only the hub region may serve it (a read's last session retry).
  bool hub_only = false;
  std::chrono::milliseconds timeout{65000};
};

/// The attempt kind of a data operation.
transport::attempt_kind attempt_kind_of(data_op op);

/// Whether the transport may send an attempt of `op` again after its
/// connection dropped with nothing back: reads only. A write never, with
/// write retries or without: its second copy is the attempt loop's own
/// retry, which knows that the first may have been applied (so that a
/// later 409, 412 or 404 can be recognised as that copy's echo).
bool resend_after_drop(data_op op);

/// One attempt of `req` at `t`, as the port takes it (`t`'s strings are
/// moved in: the hot path copies the link, the endpoint and the session
/// token once each).
transport::attempt to_attempt(const data_request& req, wire_target t);

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
