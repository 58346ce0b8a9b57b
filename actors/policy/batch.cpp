#include "georoute/actors/policy/batch.hpp"

#include "georoute/actors/policy/bulk.hpp"
#include "georoute/actors/policy/epk.hpp"
#include "georoute/actors/policy/json_check.hpp"
#include "georoute/actors/policy/operation.hpp"
#include "georoute/actors/policy/patch.hpp"

#include <charconv>
#include <nlohmann/json.hpp>
#include <optional>
#include <system_error>

namespace georoute {

const char* wire_name(batch_op_kind k) {
  switch (k) {
  case batch_op_kind::create:
    return "Create";
  case batch_op_kind::upsert:
    return "Upsert";
  case batch_op_kind::read:
    return "Read";
  case batch_op_kind::replace:
    return "Replace";
  case batch_op_kind::remove:
    return "Delete";
  case batch_op_kind::patch:
    return "Patch";
  }
  return "?";
}

namespace {

using json = nlohmann::ordered_json;

bool needs_id(batch_op_kind k) {
  return k != batch_op_kind::create && k != batch_op_kind::upsert;
}

bool needs_document(batch_op_kind k) {
  return k == batch_op_kind::create || k == batch_op_kind::upsert ||
         k == batch_op_kind::replace;
}

// Header-bound text: a CR, LF or NUL would not survive as a JSON string
// either way, but they never belong in an etag or a key.
bool one_line(const std::string& s) {
  return s.find_first_of(std::string_view{"\r\n\0", 3}) == std::string::npos;
}

} // namespace

namespace {

std::string op_where(const char* what, size_t n, batch_op_kind k) {
  return std::string{what} + " operation " + std::to_string(n) + " (" +
         wire_name(k) + ")";
}

// Whether a member's name token is `key` (escapes decoded when it has any).
bool name_is(std::string_view token, std::string_view key) {
  if (token.size() == key.size() + 2 && token.substr(1, key.size()) == key)
    return true;
  if (token.find('\\') == std::string_view::npos) return false;
  std::string name;
  return json_string_value(token, name) && name == key;
}

// `text` without the whitespace around it.
std::string_view trimmed(std::string_view text) {
  auto from = json_skip_ws(text, 0);
  auto to = text.size();
  while (to > from && json_skip_ws(text, to - 1) == to)
    --to;
  return text.substr(from, to - from);
}

// Whether `text` is one JSON value whose first character is `open`: the
// fast scanner, or nlohmann's (deeper nesting) when it says no.
bool is_json_text(std::string_view text, char open) {
  if (open == '{' ? is_json_object_text(text) : is_json_array_text(text))
    return true;
  auto from = json_skip_ws(text, 0);
  return from < text.size() && text[from] == open &&
         nlohmann::json::accept(text.begin(), text.end());
}

// Appends one operation as a JSON object to `out`, with `key_json` as its
// partitionKey (checked JSON array text); a problem names it by `what` and
// `n`. The document travels as the caller wrote it (checked, not parsed
// into a tree and printed again).
std::optional<problem> append_op(std::string& out, const batch_operation& op,
                                 const char* what, size_t n,
                                 std::string_view key_json) {
  auto fail = [&](const std::string& why) {
    return problem{op_where(what, n, op.kind) + why};
  };
  out += "{\"operationType\":\"";
  out += wire_name(op.kind);
  out += '"';
  if (needs_id(op.kind)) {
    if (!is_document_id(op.id))
      return fail(": '" + op.id.substr(0, 80) +
                  "' is not a document id (1 to 1023 characters, none of / "
                  "\\ ? #)");
    out += ",\"id\":";
    if (!append_json_string(out, op.id))
      return fail(": its id is not valid UTF-8");
  }
  out += ",\"partitionKey\":";
  if (!append_json_string(out, key_json))
    return fail(": its partition key is not valid UTF-8");
  if (needs_document(op.kind)) {
    if (!is_json_text(op.body, '{'))
      return fail(": the document must be a JSON object");
    auto body = trimmed(op.body);
    std::string_view id_token;
    json_each_member(body, [&](std::string_view name, std::string_view value) {
      if (name_is(name, "id")) id_token = value; // the last one, as parsers
    });
    std::string id;
    if (!json_string_value(id_token, id) || !is_document_id(id))
      return fail(": the document needs a string \"id\" (1 to 1023 "
                  "characters, none of / \\ ? #)");
    if (op.kind == batch_op_kind::replace && id != op.id)
      return fail(": the document's id \"" + id +
                  "\" differs from the id replaced, \"" + op.id + "\"");
    out += ",\"resourceBody\":";
    out += body;
  } else if (op.kind == batch_op_kind::patch) {
    auto spec = parse_patch(op.body);
    if (!spec) return fail(": " + spec.error().what);
    // A bare array of operations is the patch's "operations".
    auto body = trimmed(op.body);
    out += ",\"resourceBody\":";
    if (!body.empty() && body.front() == '[') {
      out += "{\"operations\":";
      out += body;
      out += '}';
    } else {
      out += body;
    }
  } else if (!op.body.empty()) {
    return problem{op_where(what, n, op.kind) + " takes no body"};
  }
  if (!one_line(op.if_match) || !one_line(op.if_none_match))
    return fail(": if_match or if_none_match holds a CR, LF or NUL character");
  if (!op.if_match.empty()) {
    out += ",\"ifMatch\":";
    if (!append_json_string(out, op.if_match))
      return fail(": if_match is not valid UTF-8");
  }
  if (!op.if_none_match.empty()) {
    out += ",\"ifNoneMatch\":";
    if (!append_json_string(out, op.if_none_match))
      return fail(": if_none_match is not valid UTF-8");
  }
  out += '}';
  return std::nullopt;
}

// A number token as an integer: digits only, with an optional sign (what
// nlohmann calls an integer).
template <class Int>
bool integer_of(std::string_view token, Int& out) {
  if (token.empty() || token.find_first_of(".eE") != std::string_view::npos)
    return false;
  auto [end, ec] =
      std::from_chars(token.data(), token.data() + token.size(), out);
  return ec == std::errc{} && end == token.data() + token.size();
}

bool number_of(std::string_view token, double& out) {
  if (token.empty() ||
      !(token.front() == '-' || (token.front() >= '0' && token.front() <= '9')))
    return false;
  auto [end, ec] =
      std::from_chars(token.data(), token.data() + token.size(), out);
  return ec == std::errc{} && end == token.data() + token.size();
}

} // namespace

result<std::string> batch_wire_body(const std::vector<batch_operation>& ops,
                                    std::string_view partition_key_json) {
  if (ops.empty()) return problem{"a batch needs at least one operation"};
  if (ops.size() > max_batch_operations)
    return problem{"a batch holds at most " +
                   std::to_string(max_batch_operations) +
                   " operations; this one has " + std::to_string(ops.size())};
  auto batch_key = json::parse(partition_key_json, nullptr, false);
  std::string text = "[";
  for (size_t n = 0; n < ops.size(); ++n) {
    const auto& op = ops[n];
    if (!op.partition_key_json.empty()) {
      auto key = json::parse(op.partition_key_json, nullptr, false);
      if (key.is_discarded() || key != batch_key)
        return problem{op_where("batch", n, op.kind) + ": its partition key " +
                       op.partition_key_json.substr(0, 80) +
                       " is not the batch's, " +
                       std::string{partition_key_json} +
                       " (a batch is one logical partition)"};
    }
    if (n > 0) text += ',';
    if (auto p = append_op(text, op, "batch", n, partition_key_json)) return *p;
  }
  text += ']';
  if (text.size() > max_batch_bytes)
    return problem{"the batch's body is " + std::to_string(text.size()) +
                   " bytes; the service takes at most " +
                   std::to_string(max_batch_bytes) + " (2 MiB)"};
  return text;
}

result<std::string> bulk_op_json(const batch_operation& op, size_t index) {
  if (op.partition_key_json.empty())
    return problem{op_where("bulk", index, op.kind) +
                   ": a bulk operation needs its partition key "
                   "(partition_key_json, e.g. [\"p0\"])"};
  auto key = parse_partition_key_json(op.partition_key_json);
  if (!key)
    return problem{op_where("bulk", index, op.kind) + ": the partition key " +
                   op.partition_key_json.substr(0, 80) +
                   " is not valid: " + key.error().what};
  std::string text;
  text.reserve(op.body.size() + op.partition_key_json.size() + 64);
  if (auto p = append_op(text, op, "bulk", index, op.partition_key_json))
    return *p;
  if (text.size() > max_batch_bytes)
    return problem{op_where("bulk", index, op.kind) + " is " +
                   std::to_string(text.size()) +
                   " bytes as JSON; a request takes at most " +
                   std::to_string(max_batch_bytes) + " (2 MiB)"};
  return text;
}

result<std::vector<batch_op_result>> parse_batch_results(std::string_view body,
                                                         size_t expected) {
  if (!is_json_text(body, '['))
    return problem{"the batch's answer is not a JSON array"};
  // The elements, as views of the body.
  std::vector<std::string_view> items;
  items.reserve(expected);
  json_each_element(trimmed(body),
                    [&](std::string_view item) { items.push_back(item); });
  if (items.size() != expected)
    return problem{"the batch's answer has " + std::to_string(items.size()) +
                   " results for " + std::to_string(expected) + " operations"};
  std::vector<batch_op_result> out;
  out.reserve(items.size());
  for (size_t n = 0; n < items.size(); ++n) {
    batch_op_result x;
    bool has_status = false;
    if (items[n].front() == '{')
      json_each_member(
          items[n], [&](std::string_view name, std::string_view v) {
            if (name_is(name, "statusCode")) {
              has_status = integer_of(v, x.status);
            } else if (name_is(name, "subStatusCode")) {
              if (!integer_of(v, x.substatus)) x.substatus = 0;
            } else if (name_is(name, "eTag")) {
              if (!json_string_value(v, x.etag)) x.etag.clear();
            } else if (name_is(name, "resourceBody")) {
              if (v.front() == '{')
                x.body.assign(v);
              else
                x.body.clear();
            } else if (name_is(name, "requestCharge")) {
              if (!number_of(v, x.request_charge)) x.request_charge = 0;
            } else if (name_is(name, "retryAfterMilliseconds")) {
              double ms = 0;
              if (integer_of(v, x.retry_after_ms)) return;
              x.retry_after_ms =
                  number_of(v, ms) ? static_cast<int64_t>(ms) : int64_t{0};
            }
          });
    if (!has_status)
      return problem{"result " + std::to_string(n) +
                     " of the batch's answer has no numeric statusCode"};
    out.push_back(std::move(x));
  }
  return out;
}

} // namespace georoute
