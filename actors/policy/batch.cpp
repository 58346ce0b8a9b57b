#include "georoute/actors/policy/batch.hpp"

#include "georoute/actors/policy/bulk.hpp"
#include "georoute/actors/policy/epk.hpp"
#include "georoute/actors/policy/operation.hpp"
#include "georoute/actors/policy/patch.hpp"

#include <nlohmann/json.hpp>

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

// One operation as its JSON object, with `key_json` as its partitionKey
// (checked JSON array text); problems start with `where`.
result<json> op_object(const batch_operation& op, const std::string& where,
                       std::string_view key_json) {
  json o;
  o["operationType"] = wire_name(op.kind);
  if (needs_id(op.kind)) {
    if (!is_document_id(op.id))
      return problem{where + ": '" + op.id.substr(0, 80) +
                     "' is not a document id (1 to 1023 characters, none "
                     "of / \\ ? #)"};
    o["id"] = op.id;
  }
  o["partitionKey"] = std::string{key_json};
  if (needs_document(op.kind)) {
    auto doc = json::parse(op.body, nullptr, false);
    if (doc.is_discarded() || !doc.is_object())
      return problem{where + ": the document must be a JSON object"};
    auto id = doc.find("id");
    if (id == doc.end() || !id->is_string() ||
        !is_document_id(id->get_ref<const std::string&>()))
      return problem{where + ": the document needs a string \"id\" (1 to "
                             "1023 characters, none of / \\ ? #)"};
    if (op.kind == batch_op_kind::replace && id->get<std::string>() != op.id)
      return problem{where + ": the document's id \"" + id->get<std::string>() +
                     "\" differs from the id "
                     "replaced, \"" +
                     op.id + "\""};
    o["resourceBody"] = std::move(doc);
  } else if (op.kind == batch_op_kind::patch) {
    auto spec = parse_patch(op.body);
    if (!spec) return problem{where + ": " + spec.error().what};
    auto doc = json::parse(op.body);
    if (doc.is_array()) doc = json{{"operations", std::move(doc)}};
    o["resourceBody"] = std::move(doc);
  } else if (!op.body.empty()) {
    return problem{where + " takes no body"};
  }
  if (!one_line(op.if_match) || !one_line(op.if_none_match))
    return problem{where + ": if_match or if_none_match holds a CR, LF or "
                           "NUL character"};
  if (!op.if_match.empty()) o["ifMatch"] = op.if_match;
  if (!op.if_none_match.empty()) o["ifNoneMatch"] = op.if_none_match;
  return o;
}

std::string op_where(const char* what, size_t n, batch_op_kind k) {
  return std::string{what} + " operation " + std::to_string(n) + " (" +
         wire_name(k) + ")";
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
  json out = json::array();
  for (size_t n = 0; n < ops.size(); ++n) {
    const auto& op = ops[n];
    auto where = op_where("batch", n, op.kind);
    if (!op.partition_key_json.empty()) {
      auto key = json::parse(op.partition_key_json, nullptr, false);
      if (key.is_discarded() || key != batch_key)
        return problem{where + ": its partition key " +
                       op.partition_key_json.substr(0, 80) +
                       " is not the batch's, " +
                       std::string{partition_key_json} +
                       " (a batch is one logical partition)"};
    }
    auto o = op_object(op, where, partition_key_json);
    if (!o) return o.error();
    out.push_back(std::move(*o));
  }
  auto text = out.dump();
  if (text.size() > max_batch_bytes)
    return problem{"the batch's body is " + std::to_string(text.size()) +
                   " bytes; the service takes at most " +
                   std::to_string(max_batch_bytes) + " (2 MiB)"};
  return text;
}

result<std::string> bulk_op_json(const batch_operation& op, size_t index) {
  auto where = op_where("bulk", index, op.kind);
  if (op.partition_key_json.empty())
    return problem{where + ": a bulk operation needs its partition key "
                           "(partition_key_json, e.g. [\"p0\"])"};
  auto key = parse_partition_key_json(op.partition_key_json);
  if (!key)
    return problem{where + ": the partition key " +
                   op.partition_key_json.substr(0, 80) +
                   " is not valid: " + key.error().what};
  auto o = op_object(op, where, op.partition_key_json);
  if (!o) return o.error();
  auto text = o->dump();
  if (text.size() > max_batch_bytes)
    return problem{where + " is " + std::to_string(text.size()) +
                   " bytes as JSON; a request takes at most " +
                   std::to_string(max_batch_bytes) + " (2 MiB)"};
  return text;
}

result<std::vector<batch_op_result>> parse_batch_results(std::string_view body,
                                                         size_t expected) {
  auto doc = nlohmann::json::parse(body, nullptr, false);
  if (doc.is_discarded() || !doc.is_array())
    return problem{"the batch's answer is not a JSON array"};
  if (doc.size() != expected)
    return problem{"the batch's answer has " + std::to_string(doc.size()) +
                   " results for " + std::to_string(expected) + " operations"};
  std::vector<batch_op_result> out;
  out.reserve(doc.size());
  for (size_t n = 0; n < doc.size(); ++n) {
    const auto& r = doc[n];
    auto status = r.is_object() ? r.find("statusCode") : r.end();
    if (!r.is_object() || status == r.end() || !status->is_number_integer())
      return problem{"result " + std::to_string(n) +
                     " of the batch's answer has no numeric statusCode"};
    batch_op_result x;
    x.status = status->get<int>();
    if (auto s = r.find("subStatusCode");
        s != r.end() && s->is_number_integer())
      x.substatus = s->get<int>();
    if (auto e = r.find("eTag"); e != r.end() && e->is_string())
      x.etag = e->get<std::string>();
    if (auto b = r.find("resourceBody"); b != r.end() && b->is_object())
      x.body = b->dump();
    if (auto c = r.find("requestCharge"); c != r.end() && c->is_number())
      x.request_charge = c->get<double>();
    if (auto w = r.find("retryAfterMilliseconds");
        w != r.end() && w->is_number())
      x.retry_after_ms = w->get<int64_t>();
    out.push_back(std::move(x));
  }
  return out;
}

} // namespace georoute
