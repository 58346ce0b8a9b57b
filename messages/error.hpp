#pragma once

// The georoute error category: one enum for every failure an actor can
// report, registered with CAF so that `caf::error` values render as text.
//
// Every error carries a context string that says where it came from and what
// to do ("account key rejected (401) by http://127.0.0.1:4301: check
// GEOROUTE_ACCOUNT_KEY"). The enum is the machine-readable part; the context
// is for people.

#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/fwd.hpp>
#include <cstdint>
#include <string>

namespace georoute {

namespace transport {
struct outcome;
} // namespace transport

struct diagnostics; // messages/payloads.hpp

/// Error codes of the `georoute` CAF error category. Values are stable: they
/// cross CAF's wire format.
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

/// The words every error of a write whose outcome is unknown carries, the
/// same on every path (router, batch, bulk, the blocking client).
inline constexpr const char* outcome_unknown_advice =
    "outcome unknown: the write may have been applied; read it back before "
    "writing it again";

/// `text`, ending with `outcome_unknown_advice` (appended after "; " unless
/// the text already carries it).
std::string with_outcome_unknown_advice(std::string text);

/// Name of the category as CAF sees it (at most 10 characters).
constexpr caf::atom_value error_category = caf::atom("georoute");

/// Stable lower-case name of a code, e.g. "service_unavailable".
const char* to_string(errc x);

/// Builds a `caf::error` of the georoute category. `context` is free text that
/// says where the error came from and what to do about it.
caf::error make_error(errc x, std::string context);

/// Like `make_error(x, context)`, with the operation's diagnostics attached
/// (every attempt with its region and status); read them back with
/// `diagnostics_of`.
caf::error make_error(errc x, std::string context, const diagnostics& diag);

/// The diagnostics attached to a georoute error, or nullptr.
const diagnostics* diagnostics_of(const caf::error& err);

/// Found by CAF through ADL when an `errc` is converted to `caf::error`.
caf::error make_error(errc x);

/// Maps an HTTP status and substatus to the error code that names it. 2xx
/// and 304 map to `errc::none`.
errc classify_status(int status, int substatus);

/// The code that names an HTTP attempt's outcome: the transport failure kind
/// when no response arrived, else `classify_status`.
errc classify_outcome(const transport::outcome& o);

/// Returns the code of `err` if it belongs to the georoute category, else
/// `errc::none`.
errc code_of(const caf::error& err);

/// Returns the context string of a georoute error, or an empty string.
std::string context_of(const caf::error& err);

/// Renders a georoute error for people: "georoute.service_unavailable: 503
/// from East US after 7 attempts". Installed as the category renderer.
std::string render_error(uint8_t code, caf::atom_value category,
                         const caf::message& context);

} // namespace georoute
