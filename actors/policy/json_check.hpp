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
#include <string>
#include <string_view>

namespace georoute {

/// Nesting the scanner follows without allocating; deeper text is "not
/// known" (false).
constexpr size_t json_check_max_depth = 256;

/// True when `text` is exactly one JSON object (whitespace around it
/// allowed, nothing else). False when it is not, or when it is nested more
/// than `json_check_max_depth` deep, or starts with a byte-order mark.
bool is_json_object_text(std::string_view text);

/// The same for exactly one JSON array.
bool is_json_array_text(std::string_view text);

// -- walking checked text ----------------------------------------------------
//
// For text a check accepted (here or nlohmann's): its parts as views of the
// text, without building a document. On text that is not valid JSON the
// answers are meaningless but stay within the text.

/// The index of the first character at or after `pos` that is not JSON
/// whitespace (`text.size()` at the end).
size_t json_skip_ws(std::string_view text, size_t pos);

/// The index just past the value (object, array, string, number or
/// literal) that starts at `pos`.
size_t json_value_end(std::string_view text, size_t pos);

/// Calls `f(name_token, value_text)` for each top-level member of `object`
/// (checked JSON object text), in order; the name token keeps its quotes.
template <class F>
void json_each_member(std::string_view object, F&& f) {
  size_t i = json_skip_ws(object, 0) + 1; // past '{'
  for (;;) {
    i = json_skip_ws(object, i);
    if (i >= object.size() || object[i] == '}') return;
    if (object[i] == ',') {
      ++i;
      continue;
    }
    auto name_end = json_value_end(object, i);
    auto name = object.substr(i, name_end - i);
    i = json_skip_ws(object, json_skip_ws(object, name_end) + 1); // past ':'
    auto value_end = json_value_end(object, i);
    f(name, object.substr(i, value_end - i));
    i = value_end;
  }
}

/// Calls `f(element_text)` for each element of `array` (checked JSON array
/// text), in order.
template <class F>
void json_each_element(std::string_view array, F&& f) {
  size_t i = json_skip_ws(array, 0) + 1; // past '['
  for (;;) {
    i = json_skip_ws(array, i);
    if (i >= array.size() || array[i] == ']') return;
    if (array[i] == ',') {
      ++i;
      continue;
    }
    auto end = json_value_end(array, i);
    f(array.substr(i, end - i));
    i = end;
  }
}

/// The value of a string token (its quotes included), escapes decoded; false
/// when `token` is not a string.
bool json_string_value(std::string_view token, std::string& out);

/// Appends `s` to `out` as a JSON string, quoted and escaped; false (and
/// `out` as it was) when `s` is not valid UTF-8.
bool append_json_string(std::string& out, std::string_view s);

} // namespace georoute
