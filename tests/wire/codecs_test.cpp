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

// -- valid documents ---------------------------------------------------------

TEST(Codecs, Account_A3Shape_Decoded) {
  auto r = decode_database_account(a3_account);
  ASSERT_TRUE(r.ok()) << r.error().what;
  EXPECT_EQ(r->id, "test runacct");
  ASSERT_EQ(r->writable.size(), 1u);
  EXPECT_EQ(r->writable[0].name, "Region A");
  EXPECT_EQ(r->writable[0].endpoint, "http://127.0.0.1:4301/");
  ASSERT_EQ(r->readable.size(), 2u);
  EXPECT_EQ(r->readable[1].name, "Region B");
  EXPECT_EQ(r->readable[1].endpoint, "http://127.0.0.1:4302/");
  EXPECT_FALSE(r->enable_multiple_write_locations);
  EXPECT_EQ(r->default_consistency, "Session");
}

TEST(Codecs, Account_MultiWriteAsString_True) {
  auto r = decode_database_account(
      with(a3_account, R"("enableMultipleWriteLocations":false)",
           R"("enableMultipleWriteLocations":"true")"));
  ASSERT_TRUE(r.ok()) << r.error().what;
  EXPECT_TRUE(r->enable_multiple_write_locations);
}

TEST(Codecs, Account_MultiWriteAsBool_True) {
  auto r = decode_database_account(
      with(a3_account, R"("enableMultipleWriteLocations":false)",
           R"("enableMultipleWriteLocations":true)"));
  ASSERT_TRUE(r.ok()) << r.error().what;
  EXPECT_TRUE(r->enable_multiple_write_locations);
}

TEST(Codecs, Account_NoConsistencyPolicy_DefaultsToSession) {
  auto r = decode_database_account(
      R"({"id":"a","writableLocations":[],"readableLocations":[]})");
  ASSERT_TRUE(r.ok()) << r.error().what;
  EXPECT_EQ(r->default_consistency, "Session");
  EXPECT_TRUE(r->writable.empty());
}

TEST(Codecs, Account_StrongConsistency_Decoded) {
  auto r = decode_database_account(
      with(a3_account, R"("defaultConsistencyLevel":"Session")",
           R"("defaultConsistencyLevel":"Strong")"));
  ASSERT_TRUE(r.ok()) << r.error().what;
  EXPECT_EQ(r->default_consistency, "Strong");
}

TEST(Codecs, Collection_A4Shape_Decoded) {
  auto r = decode_collection(a4_collection);
  ASSERT_TRUE(r.ok()) << r.error().what;
  EXPECT_EQ(r->id, "c");
  EXPECT_EQ(r->rid, "wRUaAK6VyWc=");
  EXPECT_EQ(r->self, "dbs/wRUaAA==/colls/wRUaAK6VyWc=/");
  EXPECT_EQ(r->etag, "\"00000a00-0000-0000-0000-000000000000\"");
  EXPECT_EQ(r->partition_key.paths, std::vector<std::string>{"/pk"});
  EXPECT_EQ(r->partition_key.kind, "Hash");
  EXPECT_EQ(r->partition_key.version, 2);
}

TEST(Codecs, Collection_NoVersion_DefaultsToV1) {
  auto r = decode_collection(with(a4_collection, R"(,"version":2)", ""));
  ASSERT_TRUE(r.ok()) << r.error().what;
  EXPECT_EQ(r->partition_key.version, 1);
}

TEST(Codecs, Collection_NoKind_DefaultsToHash) {
  auto r = decode_collection(with(a4_collection, R"("kind":"Hash",)", ""));
  ASSERT_TRUE(r.ok()) << r.error().what;
  EXPECT_EQ(r->partition_key.kind, "Hash");
}

TEST(Codecs, Collection_MultiHashThreePaths_Decoded) {
  auto r =
      decode_collection(with(a4_collection, R"("paths":["/pk"],"kind":"Hash")",
                             R"("paths":["/a","/b","/c"],"kind":"MultiHash")"));
  ASSERT_TRUE(r.ok()) << r.error().what;
  EXPECT_EQ(r->partition_key.paths.size(), 3u);
  EXPECT_EQ(r->partition_key.kind, "MultiHash");
}

TEST(Codecs, Pkranges_A5Shape_Decoded) {
  auto r = decode_pkranges(a5_pkranges, "\"etag-7\"");
  ASSERT_TRUE(r.ok()) << r.error().what;
  EXPECT_EQ(r->rid, "wRUaAK6VyWc=");
  EXPECT_EQ(r->etag, "\"etag-7\"");
  ASSERT_EQ(r->ranges.size(), 2u);
  EXPECT_EQ(r->ranges[0].id, "0");
  EXPECT_EQ(r->ranges[0].min_inclusive, "");
  EXPECT_EQ(r->ranges[0].max_exclusive, "7F");
  EXPECT_EQ(r->ranges[1].id, "1");
  EXPECT_EQ(r->ranges[1].min_inclusive, "7F");
  EXPECT_EQ(r->ranges[1].max_exclusive, "FF");
  EXPECT_EQ(r->ranges[1].status, "online"); // absent -> default
}

TEST(Codecs, Pkranges_SplitChildren_ParentsDecoded) {
  auto r = decode_pkranges(
      R"({"_rid":"x","PartitionKeyRanges":[
      {"id":"2","minInclusive":"","maxExclusive":"3F","parents":["0"]},
      {"id":"3","minInclusive":"3F","maxExclusive":"7F","parents":["0"]}]})",
      "");
  ASSERT_TRUE(r.ok()) << r.error().what;
  EXPECT_EQ(r->ranges[1].parents, std::vector<std::string>{"0"});
}

TEST(Codecs, Pkranges_EmptyFeedPage_NoRanges) {
  auto r = decode_pkranges(R"({"_rid":"x","PartitionKeyRanges":[],"_count":0})",
                           "e");
  ASSERT_TRUE(r.ok()) << r.error().what;
  EXPECT_TRUE(r->ranges.empty());
}

TEST(Codecs, QueryPlan_A8Shape_Decoded) {
  auto r = decode_query_plan(a8_plan);
  ASSERT_TRUE(r.ok()) << r.error().what;
  EXPECT_EQ(r->version, 2);
  EXPECT_EQ(r->info.distinct_type, "None");
  EXPECT_EQ(r->info.top, -1);
  EXPECT_EQ(r->info.offset, -1);
  EXPECT_EQ(r->info.limit, -1);
  EXPECT_EQ(r->info.order_by, std::vector<std::string>{"Ascending"});
  EXPECT_EQ(r->info.order_by_expressions, std::vector<std::string>{"c.n"});
  EXPECT_TRUE(r->info.aggregates.empty());
  EXPECT_EQ(
      r->info.rewritten_query.rfind("SELECT c._rid, [{\"item\": c.n}]", 0), 0u);
  EXPECT_FALSE(r->info.has_select_value);
  ASSERT_EQ(r->query_ranges.size(), 1u);
  EXPECT_EQ(r->query_ranges[0].min, "");
  EXPECT_EQ(r->query_ranges[0].max, "FF");
  EXPECT_TRUE(r->query_ranges[0].min_inclusive);
  EXPECT_FALSE(r->query_ranges[0].max_inclusive);
}

TEST(Codecs, QueryPlan_TopOffsetLimitAggregates_Decoded) {
  auto r = decode_query_plan(
      R"({"partitionedQueryExecutionInfoVersion":2,
        "queryInfo":{"distinctType":"Unordered","top":5,"offset":10,"limit":20,
                     "aggregates":["Count"],"hasSelectValue":true},
        "queryRanges":[{"min":"05C1","max":"05C1","isMinInclusive":true,"isMaxInclusive":true}]})");
  ASSERT_TRUE(r.ok()) << r.error().what;
  EXPECT_EQ(r->info.distinct_type, "Unordered");
  EXPECT_EQ(r->info.top, 5);
  EXPECT_EQ(r->info.offset, 10);
  EXPECT_EQ(r->info.limit, 20);
  EXPECT_EQ(r->info.aggregates, std::vector<std::string>{"Count"});
  EXPECT_TRUE(r->info.has_select_value);
  EXPECT_TRUE(r->query_ranges[0].max_inclusive);
}

TEST(Codecs, ErrorBody_StringAdditionalInfo_KeptAsText) {
  auto r = decode_error_body(
      R"({"code":"BadRequest","message":"Cross partition query only supports ...","additionalErrorInfo":"{\"partitionedQueryExecutionInfoVersion\":2}"})");
  ASSERT_TRUE(r.ok()) << r.error().what;
  EXPECT_EQ(r->code, "BadRequest");
  EXPECT_EQ(r->additional_error_info,
            R"({"partitionedQueryExecutionInfoVersion":2})");
}

TEST(Codecs, ErrorBody_ObjectAdditionalInfo_StoredAsJsonText) {
  auto r = decode_error_body(
      R"({"code":"BadRequest","message":"m","additionalErrorInfo":{"a":[1,2]}})");
  ASSERT_TRUE(r.ok()) << r.error().what;
  EXPECT_EQ(json::parse(r->additional_error_info),
            json::parse(R"({"a":[1,2]})"));
}

TEST(Codecs, ErrorBody_NoAdditionalInfo_Empty) {
  auto r = decode_error_body(R"({"code":"NotFound","message":"gone"})");
  ASSERT_TRUE(r.ok()) << r.error().what;
  EXPECT_EQ(r->message, "gone");
  EXPECT_TRUE(r->additional_error_info.empty());
}

} // namespace
