#include "georoute/actors/router_wire.hpp"

#include "georoute/actors/policy/epk.hpp"
#include "georoute/actors/policy/json_check.hpp"
#include "georoute/actors/policy/patch.hpp"

#include <nlohmann/json.hpp>

namespace georoute {

const char* to_string(data_op op) {
  switch (op) {
  case data_op::create:
    return "create";
  case data_op::upsert:
    return "upsert";
  case data_op::read:
    return "read";
  case data_op::replace:
    return "replace";
  case data_op::remove:
    return "remove";
  case data_op::query:
    return "query";
  case data_op::change_feed:
    return "change feed read";
  case data_op::patch:
    return "patch";
  case data_op::batch:
    return "batch";
  case data_op::bulk:
    return "bulk request";
  }
  return "?";
}

namespace {

bool needs_id(data_op op) {
  return op == data_op::read || op == data_op::replace ||
         op == data_op::remove || op == data_op::patch;
}

bool needs_document(data_op op) {
  return op == data_op::create || op == data_op::upsert ||
         op == data_op::replace;
}

} // namespace

std::optional<std::string> validate(const data_request& req) {
  // Built only for an answer: a valid request allocates nothing here.
  auto what = [&] {
    return std::string{to_string(req.op)} + " on '" + req.collection_link +
           "': ";
  };
  if (req.options.budget.count() < 0)
    return what() + "the operation budget may not be negative";
  // These travel as header values: a CR or LF would split the request.
  const std::pair<const char*, const std::string*> header_options[] = {
      {"partition_key_json", &req.options.partition_key_json},
      {"consistency_level", &req.options.consistency_level},
      {"session_token", &req.options.session_token},
      {"continuation", &req.options.continuation},
      {"if_match", &req.options.if_match},
      {"if_none_match", &req.options.if_none_match}};
  for (const auto& [name, value] : header_options)
    if (value->find_first_of(std::string_view{"\r\n\0", 3}) !=
        std::string::npos)
      return what() + "options." + name +
             " contains a CR, LF or NUL character; it is sent as an HTTP "
             "header value, which must be one line";
  const bool feed = req.op == data_op::change_feed;
  for (const auto* h : {&req.start_epk, &req.end_epk, &req.if_modified_since})
    if (h->find_first_of(std::string_view{"\r\n\0", 3}) != std::string::npos)
      return what() + "a change-feed header contains a CR, LF or NUL "
                      "character";
  if (!feed && (!req.start_epk.empty() || !req.end_epk.empty() ||
                !req.if_modified_since.empty()))
    return what() + "start_epk, end_epk and if_modified_since belong to "
                    "change-feed reads";
  if (feed && req.range_id.empty() &&
      (!req.start_epk.empty() || !req.end_epk.empty()))
    return what() + "an EPK part (start_epk, end_epk) needs the range_id it "
                    "is part of";
  // A part may start at the lowest EPK, "", but always ends somewhere.
  if (!req.start_epk.empty() && req.end_epk.empty())
    return what() + "start_epk needs end_epk (\"FF\" is the end)";
  const bool bulk = req.op == data_op::bulk;
  if (!req.range_id.empty() && req.op != data_op::query && !feed && !bulk)
    return what() +
           "only a query, a change-feed read or a bulk request can target a "
           "partition-key range";
  if (bulk && req.range_id.empty())
    return what() + "a bulk request targets a partition-key range (range_id)";
  if (!req.range_id.empty() && !req.options.partition_key_json.empty())
    return what() + "a query targets a partition key or a range, not both";
  if (feed && req.range_id.empty() && req.options.partition_key_json.empty())
    return what() + "a change-feed read targets a range (range_id) or a "
                    "partition key; read a whole collection's feed with "
                    "change_feed_request";
  if ((req.op != data_op::query && !feed && !bulk) ||
      !req.options.partition_key_json.empty()) {
    if (req.options.partition_key_json.empty())
      return what() +
             "a partition key is required (options.partition_key_json, "
             "e.g. [\"p0\"])";
    auto pk = parse_partition_key_json(req.options.partition_key_json);
    if (!pk)
      return what() + "the partition key " + req.options.partition_key_json +
             " is not valid: " + pk.error().what;
  }
  if (needs_id(req.op) && !is_document_id(req.id))
    return what() + "'" + req.id +
           "' is not a document id (1 to 1023 characters, none of / \\ ? #)";
  if (needs_document(req.op)) {
    auto doc = nlohmann::json::parse(req.body, nullptr, false);
    if (doc.is_discarded() || !doc.is_object())
      return what() + "the document must be a JSON object";
    auto id = doc.find("id");
    if (id == doc.end() || !id->is_string() ||
        !is_document_id(id->get<std::string>()))
      return what() + "the document needs a string \"id\" (1 to 1023 "
                      "characters, none of / \\ ? #)";
    if (req.op == data_op::replace && id->get<std::string>() != req.id)
      return what() + "the document's id \"" + id->get<std::string>() +
             "\" differs from the id replaced, \"" + req.id + "\"";
  }
  if (req.op == data_op::patch) {
    if (auto spec = parse_patch(req.body); !spec)
      return what() + spec.error().what;
  }
  if (req.op == data_op::batch || bulk) {
    // The router writes a batch's body from a `batch_request`, the bulk
    // executor a bulk request's from its operations (checked there); here
    // only its shape.
    auto first = req.body.find_first_not_of(" \t\r\n");
    if (first == std::string::npos || req.body[first] != '[')
      return what() + "the body is the JSON array of its operations";
  }
  if (req.op == data_op::query) {
    auto spec = nlohmann::json::parse(req.body, nullptr, false);
    if (spec.is_discarded() || !spec.is_object() || !spec.contains("query") ||
        !spec["query"].is_string())
      return what() + "a query needs the body {\"query\": \"SELECT ...\", "
                      "\"parameters\": [...]}";
    if (spec.contains("parameters") && !spec["parameters"].is_array())
      return what() + "query parameters must be a JSON array";
  }
  return std::nullopt;
}

transport::attempt_kind attempt_kind_of(data_op op) {
  using k = transport::attempt_kind;
  switch (op) {
  case data_op::create:
    return k::create;
  case data_op::upsert:
    return k::upsert;
  case data_op::read:
    return k::read;
  case data_op::replace:
    return k::replace;
  case data_op::remove:
    return k::remove;
  case data_op::query:
    return k::query;
  case data_op::change_feed:
    return k::change_feed;
  case data_op::patch:
    return k::patch;
  case data_op::batch:
    return k::batch;
  case data_op::bulk:
    return k::bulk;
  }
  return k::read;
}

bool resend_after_drop(data_op op) {
  return transport::reads_only(attempt_kind_of(op));
}

transport::attempt to_attempt(const data_request& req, wire_target t) {
  transport::attempt a;
  a.kind = attempt_kind_of(req.op);
  a.endpoint = std::move(t.endpoint);
  a.proto = t.proto;
  a.resource = std::move(t.collection_link);
  a.id = req.id;
  a.partition_key_json = req.options.partition_key_json;
  a.range_id = req.range_id;
  a.start_epk = req.start_epk;
  a.end_epk = req.end_epk;
  a.session_token = std::move(t.session_token);
  a.consistency_level = req.options.consistency_level;
  a.continuation = req.options.continuation;
  a.max_item_count = req.options.max_item_count;
  a.if_match = req.options.if_match;
  a.if_none_match = req.options.if_none_match;
  a.if_modified_since = req.if_modified_since;
  a.hub_region_only = t.hub_only;
  a.body = req.body;
  a.timeout = t.timeout;
  a.resend_after_drop = resend_after_drop(req.op);
  return a;
}

data_response to_response(transport::outcome&& o) {
  data_response r;
  r.status = o.status;
  r.body = std::move(o.body);
  r.etag = std::move(o.etag);
  r.session_token = std::move(o.session_token);
  r.continuation = std::move(o.continuation);
  r.request_charge = o.request_charge;
  return r;
}

data_response to_response(const transport::outcome& o) {
  data_response r;
  r.status = o.status;
  r.body = o.body;
  r.etag = o.etag;
  r.session_token = o.session_token;
  r.continuation = o.continuation;
  r.request_charge = o.request_charge;
  return r;
}

std::optional<std::string> success_body_problem(data_op op,
                                                const transport::outcome& o) {
  if (o.status == 204 || o.status == 304) return std::nullopt;
  if (o.body.empty()) {
    if (op == data_op::remove) return std::nullopt;
    return std::string{"the body is empty; expected a JSON "} +
           (op == data_op::batch || op == data_op::bulk ? "array" : "object");
  }
  // A batch answers the array of its operations' results (read by the
  // router, which says what is wrong with it).
  if (op == data_op::batch || op == data_op::bulk) {
    auto first = o.body.find_first_not_of(" \t\r\n");
    if (first == std::string::npos || o.body[first] != '[')
      return std::string{"the body is not a JSON array of the operations' "
                         "results"};
    return std::nullopt;
  }
  // One pass on the hot path, without a heap allocation: the scanner says
  // yes only to a JSON object. Anything else (including objects nested
  // deeper than it follows) goes to nlohmann, whose SAX parser keeps its
  // nesting on the heap; the parse that says where it broke runs only on
  // the error path.
  if (is_json_object_text(o.body)) return std::nullopt;
  if (!nlohmann::json::accept(o.body)) {
    try {
      auto parsed = nlohmann::json::parse(o.body);
      static_cast<void>(parsed);
    } catch (const nlohmann::json::exception& e) {
      return std::string{"the body is not valid JSON ("} + e.what() + ")";
    }
    return std::string{"the body is not valid JSON"};
  }
  auto first = o.body.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || o.body[first] != '{')
    return std::string{"the body is valid JSON but not an object"};
  return std::nullopt;
}

} // namespace georoute
