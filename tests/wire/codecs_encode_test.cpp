#include "tests/wire/codec_fixtures.hpp"
#include "georoute/transport/codecs.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

using namespace georoute;
using namespace georoute::test;
using namespace georoute::transport;
using json = nlohmann::json;

namespace {

// -- encoders ----------------------------------------------------------------

database_account sample_account() {
  database_account a;
  a.id = "georoute-test";
  a.writable = {{"West US", "http://127.0.0.1:4301/"}};
  a.readable = {{"West US", "http://127.0.0.1:4301/"},
                {"East US", "http://127.0.0.1:4302/"}};
  a.enable_multiple_write_locations = true;
  a.default_consistency = "BoundedStaleness";
  return a;
}

TEST(Codecs, EncodeAccount_RoundTrip_Equal) {
  auto a = sample_account();
  auto r = decode_database_account(encode_database_account(a));
  ASSERT_TRUE(r.ok()) << r.error().what;
  EXPECT_EQ(r->id, a.id);
  ASSERT_EQ(r->writable.size(), 1u);
  EXPECT_EQ(r->writable[0].name, "West US");
  ASSERT_EQ(r->readable.size(), 2u);
  EXPECT_EQ(r->readable[1].name, "East US");
  EXPECT_EQ(r->readable[1].endpoint, "http://127.0.0.1:4302/");
  EXPECT_TRUE(r->enable_multiple_write_locations);
  EXPECT_EQ(r->default_consistency, "BoundedStaleness");
}

TEST(Codecs, EncodeAccount_ServiceFields_Present) {
  auto j = json::parse(encode_database_account(sample_account()));
  EXPECT_EQ(j["_self"], "");
  EXPECT_EQ(j["_rid"], "georoute-test.documents.azure.com");
  EXPECT_EQ(j["media"], "//media/");
  EXPECT_EQ(j["addresses"], "//addresses/");
  EXPECT_EQ(j["_dbs"], "//dbs/");
  EXPECT_EQ(j["userReplicationPolicy"]["minReplicaSetSize"], 3);
  EXPECT_EQ(j["systemReplicationPolicy"]["maxReplicasetSize"], 4);
  EXPECT_EQ(j["readPolicy"]["primaryReadCoefficient"], 1);
  ASSERT_TRUE(j["queryEngineConfiguration"].is_string());
  auto qec = json::parse(j["queryEngineConfiguration"].get<std::string>());
  EXPECT_EQ(qec["maxSqlQueryInputLength"], 262144);
  EXPECT_TRUE(j["enableMultipleWriteLocations"].is_boolean());
}

TEST(Codecs, PerPartitionFailover_ExplicitValuesOnly) {
  auto a = sample_account();
  // Unset: the property is left out, and decodes as unset.
  auto j = json::parse(encode_database_account(a));
  EXPECT_FALSE(j.contains("enablePerPartitionFailoverBehavior"));
  auto r = decode_database_account(j.dump());
  ASSERT_TRUE(r.ok()) << r.error().what;
  EXPECT_FALSE(r->per_partition_failover.has_value());
  for (bool v : {true, false}) {
    a.per_partition_failover = v;
    auto back = decode_database_account(encode_database_account(a));
    ASSERT_TRUE(back.ok()) << back.error().what;
    EXPECT_EQ(back->per_partition_failover, v);
  }
  // The service's string spelling and null (says nothing).
  j["enablePerPartitionFailoverBehavior"] = "true";
  EXPECT_EQ(decode_database_account(j.dump())->per_partition_failover, true);
  j["enablePerPartitionFailoverBehavior"] = nullptr;
  EXPECT_FALSE(
      decode_database_account(j.dump())->per_partition_failover.has_value());
}

TEST(Codecs, EncodeAccount_InvalidUtf8Name_NoThrow) {
  auto a = sample_account();
  a.readable[0].name = "bad\xff";
  std::string text;
  EXPECT_NO_THROW(text = encode_database_account(a));
  EXPECT_TRUE(json::accept(text));
}

collection_info sample_collection() {
  collection_info c;
  c.id = "c";
  c.rid = "wRUaAK6VyWc=";
  c.self = "dbs/wRUaAA==/colls/wRUaAK6VyWc=/";
  c.etag = "\"e1\"";
  c.partition_key.paths = {"/tenant", "/user"};
  c.partition_key.kind = "MultiHash";
  c.partition_key.version = 2;
  return c;
}

TEST(Codecs, EncodeCollection_RoundTrip_Equal) {
  auto c = sample_collection();
  auto r = decode_collection(encode_collection(c));
  ASSERT_TRUE(r.ok()) << r.error().what;
  EXPECT_EQ(r->id, c.id);
  EXPECT_EQ(r->rid, c.rid);
  EXPECT_EQ(r->self, c.self);
  EXPECT_EQ(r->etag, c.etag);
  EXPECT_EQ(r->partition_key.paths, c.partition_key.paths);
  EXPECT_EQ(r->partition_key.kind, "MultiHash");
  EXPECT_EQ(r->partition_key.version, 2);
}

TEST(Codecs, EncodeCollection_ServiceFields_Present) {
  auto j = json::parse(encode_collection(sample_collection()));
  for (const char* k : {"_docs", "_sprocs", "_triggers", "_udfs", "_conflicts",
                        "_ts", "indexingPolicy", "geospatialConfig"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["_docs"], "docs/");
  EXPECT_EQ(j["indexingPolicy"]["indexingMode"], "consistent");
  EXPECT_EQ(j["indexingPolicy"]["includedPaths"][0]["path"], "/*");
}

pkranges_page sample_page() {
  pkranges_page p;
  p.rid = "wRUaAK6VyWc=";
  p.etag = "\"42\"";
  p.ranges = {{"2", "", "3F", {"0"}, "online"},
              {"3", "3F", "7F", {"0"}, "online"},
              {"1", "7F", "FF", {}, "online"}};
  return p;
}

TEST(Codecs, EncodePkranges_RoundTrip_Equal) {
  auto p = sample_page();
  auto r = decode_pkranges(encode_pkranges(p), p.etag);
  ASSERT_TRUE(r.ok()) << r.error().what;
  EXPECT_EQ(r->rid, p.rid);
  EXPECT_EQ(r->etag, p.etag);
  ASSERT_EQ(r->ranges.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(r->ranges[i].id, p.ranges[i].id);
    EXPECT_EQ(r->ranges[i].min_inclusive, p.ranges[i].min_inclusive);
    EXPECT_EQ(r->ranges[i].max_exclusive, p.ranges[i].max_exclusive);
    EXPECT_EQ(r->ranges[i].parents, p.ranges[i].parents);
    EXPECT_EQ(r->ranges[i].status, p.ranges[i].status);
  }
}

TEST(Codecs, EncodePkranges_ServiceFields_Present) {
  auto j = json::parse(encode_pkranges(sample_page()));
  EXPECT_EQ(j["_rid"], "wRUaAK6VyWc=");
  EXPECT_EQ(j["_count"], 3);
  const auto& r = j["PartitionKeyRanges"][0];
  for (const char* k : {"_rid", "id", "_etag", "minInclusive", "maxExclusive",
                        "ridPrefix", "_self", "throughputFraction", "status",
                        "parents", "ownedArchivalPKRangeIds", "_ts", "_lsn"})
    EXPECT_TRUE(r.contains(k)) << k;
  EXPECT_EQ(r["ridPrefix"], 2);
  // Range RID = the collection's 8 bytes + 8 more, base64 (16 bytes -> 24).
  EXPECT_EQ(r["_rid"].get<std::string>().size(), 24u);
  EXPECT_EQ(r["_rid"].get<std::string>().rfind("wRUaAK6VyWc", 0), 0u);
  EXPECT_EQ(r["_self"].get<std::string>().rfind(
                "dbs/wRUaAA==/colls/wRUaAK6VyWc=/pkranges/", 0),
            0u);
  EXPECT_NE(j["PartitionKeyRanges"][0]["_rid"],
            j["PartitionKeyRanges"][1]["_rid"]);
}

query_plan sample_plan() {
  query_plan p;
  p.version = 2;
  p.info.distinct_type = "Ordered";
  p.info.top = 7;
  p.info.offset = -1;
  p.info.limit = 3;
  p.info.order_by = {"Descending", "Ascending"};
  p.info.order_by_expressions = {"c.a", "c.b"};
  p.info.aggregates = {"Max"};
  p.info.rewritten_query = "SELECT \"quoted\"\nFROM c";
  p.info.has_select_value = true;
  p.query_ranges = {{"", "7F", true, false}, {"7F", "FF", true, false}};
  return p;
}

TEST(Codecs, EncodeQueryPlan_RoundTrip_Equal) {
  auto p = sample_plan();
  auto r = decode_query_plan(encode_query_plan(p));
  ASSERT_TRUE(r.ok()) << r.error().what;
  EXPECT_EQ(r->version, 2);
  EXPECT_EQ(r->info.distinct_type, "Ordered");
  EXPECT_EQ(r->info.top, 7);
  EXPECT_EQ(r->info.offset, -1);
  EXPECT_EQ(r->info.limit, 3);
  EXPECT_EQ(r->info.order_by, p.info.order_by);
  EXPECT_EQ(r->info.order_by_expressions, p.info.order_by_expressions);
  EXPECT_EQ(r->info.aggregates, p.info.aggregates);
  EXPECT_EQ(r->info.rewritten_query, p.info.rewritten_query);
  EXPECT_TRUE(r->info.has_select_value);
  ASSERT_EQ(r->query_ranges.size(), 2u);
  EXPECT_EQ(r->query_ranges[1].min, "7F");
  EXPECT_EQ(r->query_ranges[1].max, "FF");
}

TEST(Codecs, EncodeQueryPlan_A8Fields_Present) {
  auto j = json::parse(encode_query_plan(sample_plan()));
  const auto& qi = j["queryInfo"];
  EXPECT_TRUE(qi["offset"].is_null()); // -1 -> null
  EXPECT_EQ(qi["top"], 7);
  for (const char* k :
       {"groupByExpressions", "groupByAliases", "groupByAliasToAggregateType",
        "dCountInfo", "hasNonStreamingOrderBy"})
    EXPECT_TRUE(qi.contains(k)) << k;
  EXPECT_EQ(j["queryRanges"][0]["isMinInclusive"], true);
}

TEST(Codecs, EncodeErrorBody_WithPlan_RoundTrip) {
  error_body e{"BadRequest",
               "Cross partition query only supports 'VALUE <AggreateFunc>'",
               encode_query_plan(sample_plan())};
  auto text = encode_error_body(e);
  auto j = json::parse(text);
  EXPECT_TRUE(j["additionalErrorInfo"].is_string()); // JSON text, per A7
  auto r = decode_error_body(text);
  ASSERT_TRUE(r.ok()) << r.error().what;
  EXPECT_EQ(r->code, e.code);
  EXPECT_EQ(r->message, e.message);
  EXPECT_EQ(r->additional_error_info, e.additional_error_info);
  // And the embedded plan decodes.
  EXPECT_TRUE(decode_query_plan(r->additional_error_info).ok());
}

TEST(Codecs, EncodeErrorBody_NoAdditionalInfo_FieldOmitted) {
  auto j = json::parse(encode_error_body({"NotFound", "missing", ""}));
  EXPECT_EQ(j["code"], "NotFound");
  EXPECT_FALSE(j.contains("additionalErrorInfo"));
}

} // namespace
