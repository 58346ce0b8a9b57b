#pragma once

// A JSON check for the hot path: is a response body one JSON object?
//
// Every successful point operation's body is checked before it is handed
// to the caller (a broken body is the gateway breaking the protocol, never
// a success). nlohmann's `accept` allocates on the heap to do that, even
// for a small document; this scanner allocates nothing and makes one pass,
// for documents nested up to `max_depth` deep. It only ever answers
// "yes, an object" when nlohmann would accept the text and its first
// character is `{`; for anything else (invalid, not an object, a byte-order
// mark, deeper nesting) the caller falls back to nlohmann, which also says
// what is wrong. The grammar is RFC 8259's, with nlohmann's checks of
// UTF-8 (RFC 3629) and of \u surrogate pairs.

#include <cstddef>
#include <string_view>

namespace georoute {

/// Nesting the scanner follows without allocating; deeper text is "not
/// known" (false).
constexpr size_t json_check_max_depth = 256;

/// True when `text` is exactly one JSON object (whitespace around it
/// allowed, nothing else). False when it is not, or when it is nested more
/// than `json_check_max_depth` deep, or starts with a byte-order mark.
bool is_json_object_text(std::string_view text);

} // namespace georoute
