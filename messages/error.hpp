#pragma once

// The georoute error category: the codes of every failure an actor can
// report (`errc`, in actors/policy/errc.hpp so that the pure policy code can
// read them), registered with CAF so that `caf::error` values render as
// text.
//
// Every error carries a context string that says where it came from and what
// to do ("account key rejected (401) by http://127.0.0.1:4301: check
// GEOROUTE_ACCOUNT_KEY"). The enum is the machine-readable part; the context
// is for people.

#include "georoute/actors/policy/errc.hpp"

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
