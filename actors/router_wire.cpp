#include "georoute/actors/router_wire.hpp"

#include "georoute/actors/policy/epk.hpp"
#include "georoute/actors/policy/json_check.hpp"
#include "georoute/actors/policy/patch.hpp"
#include "georoute/transport/url.hpp"

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

transport::request to_wire(const data_request& req, const wire_target& t) {
  transport::request r;
  r.endpoint = t.endpoint;
  r.timeout = t.timeout;
  r.headers.reserve(8);
  // "/{link}/docs", then "/{id}" for the operations on one document: built
  // in place, one allocation.
  auto& docs = r.target;
  docs.clear();
  docs.reserve(t.collection_link.size() + req.id.size() + 7);
  docs += '/';
  transport::append_encoded_path(docs, t.collection_link, true);
  docs += "/docs";
  auto with_id = [&] {
    docs += '/';
    transport::append_encoded_path(docs, req.id, false);
  };
  switch (req.op) {
  case data_op::create:
  case data_op::upsert:
    r.method = "POST";
    r.body = req.body;
    r.headers.emplace_back("content-type", "application/json");
    if (req.op == data_op::upsert)
      r.headers.emplace_back("x-ms-documentdb-is-upsert", "True");
    break;
  case data_op::read:
    r.method = "GET";
    with_id();
    break;
  case data_op::replace:
    r.method = "PUT";
    with_id();
    r.body = req.body;
    r.headers.emplace_back("content-type", "application/json");
    break;
  case data_op::remove:
    r.method = "DELETE";
    with_id();
    break;
  case data_op::query:
    r.method = "POST";
    r.body = req.body;
    r.headers.emplace_back("content-type", "application/query+json");
    r.headers.emplace_back("x-ms-documentdb-isquery", "True");
    if (req.options.max_item_count != -1)
      r.headers.emplace_back("x-ms-max-item-count",
                             std::to_string(req.options.max_item_count));
    if (!req.options.continuation.empty())
      r.headers.emplace_back("x-ms-continuation", req.options.continuation);
    if (!req.range_id.empty()) {
      r.headers.emplace_back("x-ms-documentdb-partitionkeyrangeid",
                             req.range_id);
      r.headers.emplace_back("x-ms-documentdb-query-enablecrosspartition",
                             "True");
    }
    break;
  case data_op::change_feed:
    r.method = "GET";
    r.headers.emplace_back("a-im", "Incremental Feed");
    if (req.options.max_item_count != -1)
      r.headers.emplace_back("x-ms-max-item-count",
                             std::to_string(req.options.max_item_count));
    if (!req.range_id.empty())
      r.headers.emplace_back("x-ms-documentdb-partitionkeyrangeid",
                             req.range_id);
    if (!req.end_epk.empty()) {
      r.headers.emplace_back("x-ms-read-key-type",
                             "EffectivePartitionKeyRange");
      r.headers.emplace_back("x-ms-start-epk", req.start_epk);
      r.headers.emplace_back("x-ms-end-epk", req.end_epk);
    }
    if (!req.if_modified_since.empty())
      r.headers.emplace_back("if-modified-since", req.if_modified_since);
    break;
  case data_op::patch:
    r.method = "PATCH";
    with_id();
    r.body = req.body;
    r.headers.emplace_back("content-type", "application/json-patch+json");
    break;
  case data_op::batch:
    r.method = "POST";
    r.body = req.body;
    r.headers.emplace_back("content-type", "application/json");
    r.headers.emplace_back("x-ms-cosmos-is-batch-request", "True");
    r.headers.emplace_back("x-ms-cosmos-batch-atomic", "True");
    break;
  case data_op::bulk:
    r.method = "POST";
    r.body = req.body;
    r.headers.emplace_back("content-type", "application/json");
    r.headers.emplace_back("x-ms-cosmos-is-batch-request", "True");
    r.headers.emplace_back("x-ms-cosmos-batch-atomic", "False");
    r.headers.emplace_back("x-ms-cosmos-batch-continue-on-error", "True");
    r.headers.emplace_back("x-ms-documentdb-partitionkeyrangeid", req.range_id);
    break;
  }
  r.headers.emplace_back("accept", "application/json");
  if (!req.options.partition_key_json.empty())
    r.headers.emplace_back("x-ms-documentdb-partitionkey",
                           req.options.partition_key_json);
  if (!req.options.consistency_level.empty())
    r.headers.emplace_back("x-ms-consistency-level",
                           req.options.consistency_level);
  if (!t.session_token.empty())
    r.headers.emplace_back("x-ms-session-token", t.session_token);
  if (!req.options.if_match.empty())
    r.headers.emplace_back("if-match", req.options.if_match);
  if (!req.options.if_none_match.empty())
    r.headers.emplace_back("if-none-match", req.options.if_none_match);
  if (t.hub_header)
    r.headers.emplace_back("x-ms-cosmos-hub-region-processing-only", "True");
  return r;
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
