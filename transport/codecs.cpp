#include "georoute/transport/codecs.hpp"

#include "georoute/actors/policy/epk.hpp"
#include "georoute/transport/auth.hpp"
#include "georoute/transport/codecs_reader.hpp"
#include "georoute/transport/url.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

namespace georoute::transport {

namespace {

using namespace codec_detail;
using ojson = nlohmann::ordered_json;

bool upper_hex(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F');
  });
}

// EPK bounds are upper-case hex; "" is the minimum. They compare in EPK order
// (epk_compare), where "" == "00" == "0000": comparing them as strings would
// let through empty ranges such as ["", "00") (the crash-empty-range-* files
// of tests/fuzz/corpus/pkranges keep such cases).
void check_epk_bounds(reader& rd, const std::string& min_path,
                      const std::string& min, const std::string& max_path,
                      const std::string& max, bool allow_equal) {
  if (rd.failed()) return;
  if (!upper_hex(min))
    rd.fail(min_path, quote(min) + " is not upper-case hex");
  else if (max.empty() || !upper_hex(max))
    rd.fail(max_path, quote(max) + " is not non-empty upper-case hex");
  else if (allow_equal ? epk_compare(max, min) < 0 : epk_compare(min, max) >= 0)
    rd.fail(max_path, quote(max) +
                          (allow_equal ? " is below" : " is not above") +
                          " the minimum " + quote(min));
}

std::string dump(const ojson& j) {
  // `replace` keeps an invalid UTF-8 byte in a model string from throwing.
  return j.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

// -- decoders ----------------------------------------------------------------

std::vector<account_region> decode_locations(reader& rd, const json& root,
                                             const char* key) {
  std::vector<account_region> r;
  auto* a = rd.array(root, "", key, false);
  if (!a) return r;
  for (size_t i = 0; i < a->size() && !rd.failed(); ++i) {
    const auto& e = (*a)[i];
    auto path = at(key, i);
    if (!rd.object(e, path)) break;
    account_region region;
    region.name = rd.non_empty_string(e, path, "name");
    region.endpoint = rd.string(e, path, "databaseAccountEndpoint", true);
    if (rd.failed()) break;
    auto u = parse_url(region.endpoint);
    if (auto* why = std::get_if<std::string>(&u))
      rd.fail(at(path, "databaseAccountEndpoint"),
              quote(region.endpoint) +
                  " is not an absolute http(s) URL: " + *why);
    r.push_back(std::move(region));
  }
  return r;
}

} // namespace

result<database_account> decode_database_account(std::string_view body) {
  auto doc = parse_document(body);
  if (!doc) return doc.error();
  const json& root = *doc;
  reader rd;
  if (!rd.object(root, "")) return rd.take();
  database_account acc;
  acc.id = rd.string(root, "", "id", true);
  acc.writable = decode_locations(rd, root, "writableLocations");
  acc.readable = decode_locations(rd, root, "readableLocations");
  if (auto* m = rd.member(root, "", "enableMultipleWriteLocations", false)) {
    if (m->is_boolean())
      acc.enable_multiple_write_locations = m->get<bool>();
    else if (m->is_string() && (*m == "true" || *m == "false"))
      acc.enable_multiple_write_locations = *m == "true";
    else
      rd.fail(
          "enableMultipleWriteLocations",
          std::string("expected boolean or \"true\"/\"false\", got ") +
              (m->is_string() ? quote(m->get<std::string>()) : m->type_name()));
  }
  // Explicit values only: absent or null says nothing.
  if (auto* m =
          rd.member(root, "", "enablePerPartitionFailoverBehavior", false)) {
    if (m->is_boolean())
      acc.per_partition_failover = m->get<bool>();
    else if (m->is_string() && (*m == "true" || *m == "false"))
      acc.per_partition_failover = *m == "true";
    else if (!m->is_null())
      rd.fail(
          "enablePerPartitionFailoverBehavior",
          std::string("expected boolean or \"true\"/\"false\", got ") +
              (m->is_string() ? quote(m->get<std::string>()) : m->type_name()));
  }
  if (auto* p = rd.object(root, "", "userConsistencyPolicy", false)) {
    acc.default_consistency =
        rd.string(*p, "userConsistencyPolicy", "defaultConsistencyLevel", false,
                  "Session");
    rd.one_of(acc.default_consistency,
              "userConsistencyPolicy.defaultConsistencyLevel",
              {"Strong", "BoundedStaleness", "Session", "Eventual",
               "ConsistentPrefix"});
  }
  if (rd.failed()) return rd.take();
  return acc;
}

result<collection_info> decode_collection(std::string_view body) {
  auto doc = parse_document(body);
  if (!doc) return doc.error();
  const json& root = *doc;
  reader rd;
  if (!rd.object(root, "")) return rd.take();
  collection_info c;
  c.id = rd.non_empty_string(root, "", "id");
  c.rid = rd.non_empty_string(root, "", "_rid");
  c.self = rd.string(root, "", "_self", true);
  c.etag = rd.string(root, "", "_etag", false);
  auto* pk = rd.object(root, "", "partitionKey", true);
  if (rd.failed()) return rd.take();
  auto& def = c.partition_key;
  def.paths = rd.strings(*pk, "partitionKey", "paths", true);
  def.kind = rd.string(*pk, "partitionKey", "kind", false, "Hash");
  rd.one_of(def.kind, "partitionKey.kind", {"Hash", "MultiHash"});
  // Containers created before V2 hashing carry no version: they are V1.
  def.version = 1;
  if (auto* v = rd.member(*pk, "partitionKey", "version", false))
    def.version =
        static_cast<int>(rd.integer(*v, "partitionKey.version", 1, 2));
  if (rd.failed()) return rd.take();
  size_t max_paths = def.kind == "Hash" ? 1 : 3;
  if (def.paths.empty() || def.paths.size() > max_paths)
    rd.fail("partitionKey.paths", std::to_string(def.paths.size()) +
                                      " paths; " + def.kind + " takes 1" +
                                      (max_paths > 1 ? " to 3" : ""));
  for (size_t i = 0; i < def.paths.size() && !rd.failed(); ++i)
    if (def.paths[i].size() < 2 || def.paths[i][0] != '/')
      rd.fail(at("partitionKey.paths", i),
              quote(def.paths[i]) + " is not a path like '/pk'");
  if (rd.failed()) return rd.take();
  return c;
}

result<pkranges_page> decode_pkranges(std::string_view body,
                                      std::string_view etag) {
  auto doc = parse_document(body);
  if (!doc) return doc.error();
  const json& root = *doc;
  reader rd;
  if (!rd.object(root, "")) return rd.take();
  pkranges_page page;
  page.etag = std::string(etag);
  page.rid = rd.string(root, "", "_rid", false);
  auto* list = rd.array(root, "", "PartitionKeyRanges", true);
  if (rd.failed()) return rd.take();
  for (size_t i = 0; i < list->size() && !rd.failed(); ++i) {
    const auto& e = (*list)[i];
    auto path = at("PartitionKeyRanges", i);
    if (!rd.object(e, path)) break;
    partition_key_range r;
    r.id = rd.non_empty_string(e, path, "id");
    r.min_inclusive = rd.string(e, path, "minInclusive", true);
    r.max_exclusive = rd.string(e, path, "maxExclusive", true);
    r.parents = rd.strings(e, path, "parents", false);
    r.status = rd.string(e, path, "status", false, "online");
    check_epk_bounds(rd, at(path, "minInclusive"), r.min_inclusive,
                     at(path, "maxExclusive"), r.max_exclusive, false);
    page.ranges.push_back(std::move(r));
  }
  if (rd.failed()) return rd.take();
  return page;
}

result<query_plan> decode_query_plan(std::string_view body) {
  auto doc = parse_document(body);
  if (!doc) return doc.error();
  const json& root = *doc;
  reader rd;
  if (!rd.object(root, "")) return rd.take();
  query_plan plan;
  if (auto* v =
          rd.member(root, "", "partitionedQueryExecutionInfoVersion", true))
    plan.version =
        static_cast<int>(rd.integer(*v, "partitionedQueryExecutionInfoVersion",
                                    1, std::numeric_limits<int>::max()));
  auto* qi = rd.object(root, "", "queryInfo", true);
  auto* ranges = rd.array(root, "", "queryRanges", true);
  if (rd.failed()) return rd.take();
  const std::string p = "queryInfo";
  auto& info = plan.info;
  info.distinct_type = rd.string(*qi, p, "distinctType", false, "None");
  rd.one_of(info.distinct_type, at(p, "distinctType"),
            {"None", "Ordered", "Unordered"});
  info.top = rd.optional_count(*qi, p, "top");
  info.offset = rd.optional_count(*qi, p, "offset");
  info.limit = rd.optional_count(*qi, p, "limit");
  info.order_by = rd.strings(*qi, p, "orderBy", false);
  for (size_t i = 0; i < info.order_by.size(); ++i)
    rd.one_of(info.order_by[i], at(at(p, "orderBy"), i),
              {"Ascending", "Descending"});
  info.order_by_expressions = rd.strings(*qi, p, "orderByExpressions", false);
  if (!rd.failed() && !info.order_by_expressions.empty() &&
      info.order_by_expressions.size() != info.order_by.size())
    rd.fail(at(p, "orderByExpressions"),
            std::to_string(info.order_by_expressions.size()) +
                " expressions for " + std::to_string(info.order_by.size()) +
                " orderBy entries");
  info.aggregates = rd.strings(*qi, p, "aggregates", false);
  info.rewritten_query = rd.string(*qi, p, "rewrittenQuery", false);
  info.has_select_value = rd.boolean(*qi, p, "hasSelectValue", false);
  for (size_t i = 0; i < ranges->size() && !rd.failed(); ++i) {
    const auto& e = (*ranges)[i];
    auto path = at("queryRanges", i);
    if (!rd.object(e, path)) break;
    epk_range r;
    r.min = rd.string(e, path, "min", true);
    r.max = rd.string(e, path, "max", true);
    r.min_inclusive = rd.boolean(e, path, "isMinInclusive", true);
    r.max_inclusive = rd.boolean(e, path, "isMaxInclusive", false);
    // A point range (min == max, both inclusive) is how a pk-scoped query
    // is planned, so equal bounds are allowed here.
    check_epk_bounds(rd, at(path, "min"), r.min, at(path, "max"), r.max, true);
    plan.query_ranges.push_back(std::move(r));
  }
  if (rd.failed()) return rd.take();
  return plan;
}

result<error_body> decode_error_body(std::string_view body) {
  auto doc = parse_document(body);
  if (!doc) return doc.error();
  const json& root = *doc;
  reader rd;
  if (!rd.object(root, "")) return rd.take();
  error_body e;
  e.code = rd.string(root, "", "code", false);
  e.message = rd.string(root, "", "message", false);
  if (auto* m = rd.member(root, "", "additionalErrorInfo", false)) {
    if (m->is_string())
      e.additional_error_info = m->get<std::string>();
    else if (m->is_object() || m->is_array())
      e.additional_error_info =
          m->dump(-1, ' ', false, json::error_handler_t::replace);
    else
      rd.fail("additionalErrorInfo",
              std::string("expected string or object, got ") + m->type_name());
  }
  if (rd.failed()) return rd.take();
  return e;
}

// -- encoders ----------------------------------------------------------------

namespace {

// What the service reports for its SQL engine limits; the SDKs read it as an
// opaque string.
constexpr const char* query_engine_configuration =
    R"({"maxSqlQueryInputLength":262144,"maxJoinsPerSqlQuery":5,)"
    R"("maxLogicalAndPerSqlQuery":500,"maxLogicalOrPerSqlQuery":500,)"
    R"("maxUdfRefPerSqlQuery":10,"maxInExpressionItemsCount":16000,)"
    R"("queryMaxInMemorySortDocumentCount":500,)"
    R"("maxQueryRequestTimeoutFraction":0.9,"sqlAllowNonFiniteNumbers":false,)"
    R"("sqlAllowAggregateFunctions":true,"sqlAllowSubQuery":true,)"
    R"("sqlAllowScalarSubQuery":true,"allowNewKeywords":true,)"
    R"("sqlAllowLike":true,"sqlAllowGroupByClause":true,)"
    R"("maxSpatialQueryCells":12,"spatialMaxGeometryPointCount":256,)"
    R"("sqlDisableOptimizationFlags":0,"sqlAllowTop":true,)"
    R"("enableSpatialIndexing":true})";

// A fixed timestamp for resources the emulator never modifies (2023-11-14).
constexpr int64_t resource_ts = 1700000000;

ojson encode_locations(const std::vector<account_region>& regions) {
  auto r = ojson::array();
  for (const auto& x : regions) {
    ojson e;
    e["name"] = x.name;
    e["databaseAccountEndpoint"] = x.endpoint;
    r.push_back(std::move(e));
  }
  return r;
}

// RIDs are base64 with '/' written as '-'.
std::optional<std::vector<unsigned char>> rid_bytes(const std::string& rid) {
  std::string s = rid;
  std::replace(s.begin(), s.end(), '-', '/');
  return base64_decode(s);
}

std::string rid_text(const std::vector<unsigned char>& bytes) {
  auto s = base64_encode(bytes.data(), bytes.size());
  std::replace(s.begin(), s.end(), '/', '-');
  return s;
}

ojson path(const char* p) {
  ojson r;
  r["path"] = p;
  return r;
}

ojson null_or(int64_t v) {
  return v < 0 ? ojson(nullptr) : ojson(v);
}

} // namespace

std::string encode_database_account(const database_account& a) {
  ojson j;
  j["_self"] = "";
  j["id"] = a.id;
  j["_rid"] = a.id + ".documents.azure.com";
  j["media"] = "//media/";
  j["addresses"] = "//addresses/";
  j["_dbs"] = "//dbs/";
  j["writableLocations"] = encode_locations(a.writable);
  j["readableLocations"] = encode_locations(a.readable);
  j["enableMultipleWriteLocations"] = a.enable_multiple_write_locations;
  if (a.per_partition_failover)
    j["enablePerPartitionFailoverBehavior"] = *a.per_partition_failover;
  j["userReplicationPolicy"] = {{"asyncReplication", false},
                                {"minReplicaSetSize", 3},
                                {"maxReplicasetSize", 4}};
  j["userConsistencyPolicy"] = {
      {"defaultConsistencyLevel", a.default_consistency}};
  j["systemReplicationPolicy"] = {{"minReplicaSetSize", 3},
                                  {"maxReplicasetSize", 4}};
  j["readPolicy"] = {{"primaryReadCoefficient", 1},
                     {"secondaryReadCoefficient", 1}};
  j["queryEngineConfiguration"] = query_engine_configuration;
  return dump(j);
}

std::string encode_collection(const collection_info& c) {
  ojson j;
  j["id"] = c.id;
  j["indexingPolicy"] = {
      {"indexingMode", "consistent"},
      {"automatic", true},
      {"includedPaths", ojson::array({path("/*")})},
      {"excludedPaths", ojson::array({path("/\"_etag\"/?")})}};
  j["partitionKey"] = {{"paths", c.partition_key.paths},
                       {"kind", c.partition_key.kind},
                       {"version", c.partition_key.version}};
  j["conflictResolutionPolicy"] = {{"mode", "LastWriterWins"},
                                   {"conflictResolutionPath", "/_ts"},
                                   {"conflictResolutionProcedure", ""}};
  j["geospatialConfig"] = {{"type", "Geography"}};
  j["_rid"] = c.rid;
  j["_ts"] = resource_ts;
  j["_self"] = c.self;
  j["_etag"] = c.etag;
  j["_docs"] = "docs/";
  j["_sprocs"] = "sprocs/";
  j["_triggers"] = "triggers/";
  j["_udfs"] = "udfs/";
  j["_conflicts"] = "conflicts/";
  return dump(j);
}

std::string encode_pkranges(const pkranges_page& page) {
  auto coll = rid_bytes(page.rid);
  bool rid_ok = coll && coll->size() == 8;
  auto ranges = ojson::array();
  double fraction = page.ranges.empty() ? 1.0 : 1.0 / page.ranges.size();
  for (const auto& r : page.ranges) {
    uint32_t number = 0;
    bool numeric = !r.id.empty() && r.id.size() <= 9 &&
                   std::all_of(r.id.begin(), r.id.end(),
                               [](char c) { return c >= '0' && c <= '9'; });
    if (numeric) number = static_cast<uint32_t>(std::stoul(r.id));
    // A range RID extends the collection RID by 8 bytes: the range number
    // (little endian) and the pkrange type marker 0x50, as the service does.
    std::string rid = page.rid + r.id;
    std::string self = "pkranges/" + r.id + "/";
    if (rid_ok) {
      auto bytes = *coll;
      for (int i = 0; i < 4; ++i)
        bytes.push_back(static_cast<unsigned char>((number >> (8 * i)) & 0xFF));
      bytes.insert(bytes.end(), {0, 0, 0, 0x50});
      rid = rid_text(bytes);
      std::vector<unsigned char> db(coll->begin(), coll->begin() + 4);
      self = "dbs/" + rid_text(db) + "/colls/" + page.rid + "/pkranges/" + rid +
             "/";
    }
    ojson e;
    e["_rid"] = rid;
    e["id"] = r.id;
    e["_etag"] = "\"pkrange-" + r.id + "\"";
    e["minInclusive"] = r.min_inclusive;
    e["maxExclusive"] = r.max_exclusive;
    e["ridPrefix"] = number;
    e["_self"] = self;
    e["throughputFraction"] = fraction;
    e["status"] = r.status;
    e["parents"] = r.parents;
    e["ownedArchivalPKRangeIds"] = ojson::array();
    e["_ts"] = resource_ts;
    e["_lsn"] = 1;
    ranges.push_back(std::move(e));
  }
  ojson j;
  j["_rid"] = page.rid;
  j["_count"] = page.ranges.size();
  j["PartitionKeyRanges"] = std::move(ranges);
  return dump(j);
}

std::string encode_query_plan(const query_plan& plan) {
  const auto& q = plan.info;
  ojson info;
  info["distinctType"] = q.distinct_type;
  info["top"] = null_or(q.top);
  info["offset"] = null_or(q.offset);
  info["limit"] = null_or(q.limit);
  info["orderBy"] = q.order_by;
  info["orderByExpressions"] = q.order_by_expressions;
  info["groupByExpressions"] = ojson::array();
  info["groupByAliases"] = ojson::array();
  info["aggregates"] = q.aggregates;
  info["groupByAliasToAggregateType"] = ojson::object();
  info["rewrittenQuery"] = q.rewritten_query;
  info["hasSelectValue"] = q.has_select_value;
  info["dCountInfo"] = nullptr;
  info["hasNonStreamingOrderBy"] = false;
  auto ranges = ojson::array();
  for (const auto& r : plan.query_ranges) {
    ojson e;
    e["min"] = r.min;
    e["max"] = r.max;
    e["isMinInclusive"] = r.min_inclusive;
    e["isMaxInclusive"] = r.max_inclusive;
    ranges.push_back(std::move(e));
  }
  ojson j;
  j["partitionedQueryExecutionInfoVersion"] = plan.version;
  j["queryInfo"] = std::move(info);
  j["queryRanges"] = std::move(ranges);
  return dump(j);
}

std::string encode_error_body(const error_body& e) {
  ojson j;
  j["code"] = e.code;
  j["message"] = e.message;
  if (!e.additional_error_info.empty())
    j["additionalErrorInfo"] = e.additional_error_info;
  return dump(j);
}

std::optional<problem> check_json_depth(std::string_view text) {
  return codec_detail::check_depth(text);
}

} // namespace georoute::transport
