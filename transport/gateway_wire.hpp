#pragma once

// The classic gateway's encoding of an attempt: the REST request over
// HTTP/1.1 (method, path, headers, body) that carries it. The one place the
// engine writes a request of its own; signing comes after, in the port
// (port.hpp). Pure: no sockets, no clock.

#include "georoute/transport/attempt.hpp"
#include "georoute/transport/outcome.hpp"

#include <string>

namespace georoute::transport {

/// The value of the supported-query-features header of a query plan: what
/// the engine's query executor can merge across ranges.
inline constexpr const char* supported_query_features =
    "Aggregate, Distinct, MultipleOrderBy, OffsetAndLimit, OrderBy, Top, "
    "NonValueAggregate";

/// The gateway request of `a` (its body and strings moved out). Its
/// `resend` rule is `a.resend_after_drop`; `rid_based` and the timeout carry
/// over. What cannot be written as one HTTP/1.1 request (a CR or LF in an
/// option, a method that is not a token) is found by the client's check
/// of the request before anything is sent (request_checks.hpp).
request to_gateway_request(attempt&& a);

} // namespace georoute::transport
