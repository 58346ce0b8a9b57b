#include "georoute/transport/gateway_wire.hpp"

#include "georoute/transport/url.hpp"

#include <algorithm>
#include <string_view>

namespace georoute::transport {

namespace {

using header_list = std::vector<std::pair<std::string, std::string>>;

// "/" + `resource` with the names in it encoded (ids may hold what a path
// cannot carry as it is; the signer decodes them again). A query string,
// if any, goes as it is: names cannot hold '?'.
void append_resource(std::string& out, std::string_view resource) {
  if (resource.empty() || resource.front() != '/') out += '/';
  auto query = std::min(resource.find('?'), resource.size());
  append_encoded_path(out, resource.substr(0, query), true);
  out.append(resource.substr(query));
}

// "/{resource}/docs", then "/{id}" for the operations on one document.
void docs_target(std::string& out, const attempt& a, bool with_id) {
  out.clear();
  out.reserve(a.resource.size() + a.id.size() + 7);
  append_resource(out, a.resource);
  out += "/docs";
  if (!with_id) return;
  out += '/';
  append_encoded_path(out, a.id, false);
}

void add_max_item_count(header_list& h, int32_t n) {
  if (n != -1) h.emplace_back("x-ms-max-item-count", std::to_string(n));
}

// The headers every document operation may carry, from its options.
void add_document_options(header_list& h, attempt& a) {
  h.emplace_back("accept", "application/json");
  if (!a.partition_key_json.empty())
    h.emplace_back("x-ms-documentdb-partitionkey",
                   std::move(a.partition_key_json));
  if (!a.consistency_level.empty())
    h.emplace_back("x-ms-consistency-level", std::move(a.consistency_level));
  if (!a.session_token.empty())
    h.emplace_back("x-ms-session-token", std::move(a.session_token));
  if (!a.if_match.empty()) h.emplace_back("if-match", std::move(a.if_match));
  if (!a.if_none_match.empty())
    h.emplace_back("if-none-match", std::move(a.if_none_match));
  if (a.hub_region_only)
    h.emplace_back("x-ms-cosmos-hub-region-processing-only", "True");
}

// The metadata kinds: what the gateway's resource feeds and reads take.
void encode_metadata(request& r, attempt& a) {
  r.target.clear();
  switch (a.kind) {
  case attempt_kind::account_read:
    r.target = "/";
    r.headers.emplace_back("accept", "application/json");
    return;
  case attempt_kind::resource_read:
    append_resource(r.target, a.resource);
    return;
  case attempt_kind::pkranges_read:
    append_resource(r.target, a.resource);
    r.target += "/pkranges";
    r.headers.emplace_back("a-im", "Incremental Feed");
    r.headers.emplace_back("x-ms-max-item-count",
                           std::to_string(a.max_item_count));
    if (!a.if_none_match.empty())
      r.headers.emplace_back("if-none-match", std::move(a.if_none_match));
    return;
  case attempt_kind::query_plan:
    r.method = "POST";
    docs_target(r.target, a, false);
    r.headers = {
        {"content-type", "application/query+json"},
        {"x-ms-cosmos-is-query-plan-request", "True"},
        {"x-ms-cosmos-query-version", "1.0"},
        {"x-ms-cosmos-supported-query-features", supported_query_features},
        {"x-ms-documentdb-query-enablecrosspartition", "True"},
    };
    break;
  case attempt_kind::raw:
    r.method = std::move(a.raw.method);
    append_resource(r.target, a.resource);
    r.headers = std::move(a.raw.headers);
    break;
  default:
    return;
  }
  if (!a.partition_key_json.empty())
    r.headers.emplace_back("x-ms-documentdb-partitionkey",
                           std::move(a.partition_key_json));
  r.body = std::move(a.body);
}

} // namespace

request to_gateway_request(attempt&& a) {
  request r;
  r.endpoint = std::move(a.endpoint);
  r.timeout = a.timeout;
  r.rid_based = a.rid_based;
  r.resend = a.resend_after_drop ? resend_rule::allowed : resend_rule::never;
  r.method = "GET";
  auto& h = r.headers;
  switch (a.kind) {
  case attempt_kind::account_read:
  case attempt_kind::resource_read:
  case attempt_kind::pkranges_read:
  case attempt_kind::query_plan:
  case attempt_kind::raw:
    encode_metadata(r, a);
    return r;
  default:
    break;
  }
  h.reserve(8);
  switch (a.kind) {
  case attempt_kind::create:
  case attempt_kind::upsert:
    r.method = "POST";
    docs_target(r.target, a, false);
    h.emplace_back("content-type", "application/json");
    if (a.kind == attempt_kind::upsert)
      h.emplace_back("x-ms-documentdb-is-upsert", "True");
    break;
  case attempt_kind::read:
    docs_target(r.target, a, true);
    break;
  case attempt_kind::replace:
    r.method = "PUT";
    docs_target(r.target, a, true);
    h.emplace_back("content-type", "application/json");
    break;
  case attempt_kind::remove:
    r.method = "DELETE";
    docs_target(r.target, a, true);
    break;
  case attempt_kind::query:
    r.method = "POST";
    docs_target(r.target, a, false);
    h.emplace_back("content-type", "application/query+json");
    h.emplace_back("x-ms-documentdb-isquery", "True");
    add_max_item_count(h, a.max_item_count);
    if (!a.continuation.empty())
      h.emplace_back("x-ms-continuation", std::move(a.continuation));
    if (!a.range_id.empty()) {
      h.emplace_back("x-ms-documentdb-partitionkeyrangeid",
                     std::move(a.range_id));
      h.emplace_back("x-ms-documentdb-query-enablecrosspartition", "True");
    }
    break;
  case attempt_kind::change_feed:
    docs_target(r.target, a, false);
    h.emplace_back("a-im", "Incremental Feed");
    add_max_item_count(h, a.max_item_count);
    if (!a.range_id.empty())
      h.emplace_back("x-ms-documentdb-partitionkeyrangeid",
                     std::move(a.range_id));
    if (!a.end_epk.empty()) {
      h.emplace_back("x-ms-read-key-type", "EffectivePartitionKeyRange");
      h.emplace_back("x-ms-start-epk", std::move(a.start_epk));
      h.emplace_back("x-ms-end-epk", std::move(a.end_epk));
    }
    if (!a.if_modified_since.empty())
      h.emplace_back("if-modified-since", std::move(a.if_modified_since));
    break;
  case attempt_kind::patch:
    r.method = "PATCH";
    docs_target(r.target, a, true);
    h.emplace_back("content-type", "application/json-patch+json");
    break;
  case attempt_kind::batch:
    r.method = "POST";
    docs_target(r.target, a, false);
    h.emplace_back("content-type", "application/json");
    h.emplace_back("x-ms-cosmos-is-batch-request", "True");
    h.emplace_back("x-ms-cosmos-batch-atomic", "True");
    break;
  case attempt_kind::bulk:
    r.method = "POST";
    docs_target(r.target, a, false);
    h.emplace_back("content-type", "application/json");
    h.emplace_back("x-ms-cosmos-is-batch-request", "True");
    h.emplace_back("x-ms-cosmos-batch-atomic", "False");
    h.emplace_back("x-ms-cosmos-batch-continue-on-error", "True");
    h.emplace_back("x-ms-documentdb-partitionkeyrangeid",
                   std::move(a.range_id));
    break;
  default:
    break;
  }
  r.body = std::move(a.body);
  add_document_options(h, a);
  return r;
}

} // namespace georoute::transport
