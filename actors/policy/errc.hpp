#pragma once

// The engine's error codes as plain values: the actors report them in the
// `georoute` CAF error category (messages/error.hpp), and the pure decision
// code that judges a failure (which bulk failures may have run) reads them
// without CAF.

#include <cstdint>

namespace georoute {

/// Error codes of the `georoute` CAF error category (messages/error.hpp).
/// Values are stable: they cross CAF's wire format.
enum class errc : uint8_t {
  none = 0,
  // -- transport: the request never produced an HTTP response ---------------
  connection_refused = 1,
  connection_reset = 2,
  transport_timeout = 3,
  dns_failure = 4,
  tls_failure = 5,
  protocol_error = 6, ///< malformed HTTP, oversized header
  body_too_large = 7, ///< response body above the configured limit
  // -- HTTP status classes -------------------------------------------------
  bad_request = 20,              ///< 400 (any substatus)
  unauthorized = 21,             ///< 401
  forbidden = 22,                ///< 403 other than the two below
  write_forbidden = 23,          ///< 403/3
  account_not_found = 24,        ///< 403/1008: the region was removed
  not_found = 25,                ///< 404/0
  read_session_unavailable = 26, ///< 404/1002
  request_timeout = 27,          ///< 408
  conflict = 28,                 ///< 409
  gone = 29,                     ///< 410 other than the two below
  partition_range_gone = 30,     ///< 410/1002, 1007, 1008
  lease_not_found = 31,          ///< 410/1022
  precondition_failed = 32,      ///< 412
  throttled = 33,                ///< 429
  internal_server_error = 34,    ///< 500
  service_unavailable = 35,      ///< 503
  unexpected_status = 36,        ///< any other non-2xx status
  // -- engine ----------------------------------------------------------------
  deadline_exceeded = 50,  ///< the retry actor's own hard deadline tripped
  validation_error = 51,   ///< bad input: configuration, arguments
  protocol_violation = 52, ///< a response that does not match the protocol
  attempts_exhausted = 53, ///< the attempt cap was reached
  shutting_down = 54,      ///< the engine was stopped with work in flight
  collaborator_down = 55,  ///< an actor the work waited on exited
  overloaded = 56,         ///< a waiter list is full; retry later
  /// A write was sent and no answer says whether it was applied: it timed
  /// out, or its connection was lost, after the request went out (on any
  /// account, whatever the attempt count). The write may have been applied
  /// once; the context says what happened and ends with
  /// `outcome_unknown_advice`. Read the item back before writing it again.
  outcome_unknown = 57,
};

} // namespace georoute
