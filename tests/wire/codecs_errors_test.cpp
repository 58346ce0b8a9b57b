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

// -- wrong shapes: the problem names the field path --------------------------

// Runs a decoder and returns the problem text, or "" when it accepted.
std::string problem_of(const std::string& kind, const std::string& body) {
  if (kind == "account") {
    auto r = decode_database_account(body);
    return r ? "" : r.error().what;
  }
  if (kind == "collection") {
    auto r = decode_collection(body);
    return r ? "" : r.error().what;
  }
  if (kind == "pkranges") {
    auto r = decode_pkranges(body, "etag");
    return r ? "" : r.error().what;
  }
  if (kind == "plan") {
    auto r = decode_query_plan(body);
    return r ? "" : r.error().what;
  }
  auto r = decode_error_body(body);
  return r ? "" : r.error().what;
}

struct shape_row {
  std::string name;
  std::string kind; ///< account | collection | pkranges | plan | error
  std::string body;
  std::string problem_prefix; ///< the problem must start with this
};

// ctest shows the row by this name (gtest_discover_tests pretty values).
void PrintTo(const shape_row& row, std::ostream* os) {
  *os << row.name;
}

class WrongShape : public testing::TestWithParam<shape_row> {};

TEST_P(WrongShape, ProblemNamesFieldPath) {
  const auto& row = GetParam();
  auto what = problem_of(row.kind, row.body);
  ASSERT_FALSE(what.empty()) << "accepted";
  EXPECT_EQ(what.rfind(row.problem_prefix, 0), 0u)
      << "problem: " << what << "\nexpected prefix: " << row.problem_prefix;
}

const std::string acct = a3_account;
const std::string coll = a4_collection;
const std::string pkr = a5_pkranges;
const std::string plan = a8_plan;

INSTANTIATE_TEST_SUITE_P(
    Account, WrongShape,
    testing::Values(
        shape_row{
            "Account_EndpointNumber_Problem", "account",
            with(acct, R"("databaseAccountEndpoint":"http://127.0.0.1:4302/")",
                 R"("databaseAccountEndpoint":4302)"),
            "readableLocations[1].databaseAccountEndpoint: expected string, "
            "got number"},
        shape_row{
            "Account_WritableEndpointNull_Problem", "account",
            with(acct, R"("databaseAccountEndpoint":"http://127.0.0.1:4301/")",
                 R"("databaseAccountEndpoint":null)"),
            "writableLocations[0].databaseAccountEndpoint: expected string, "
            "got null"},
        shape_row{"Account_EndpointMissing_Problem", "account",
                  R"({"id":"a","writableLocations":[{"name":"A"}]})",
                  "writableLocations[0].databaseAccountEndpoint: missing"},
        shape_row{
            "Account_EndpointRelative_Problem", "account",
            with(acct, R"("http://127.0.0.1:4302/")", R"("/relative")"),
            "readableLocations[1].databaseAccountEndpoint: '/relative' is "
            "not an absolute http(s) URL"},
        shape_row{"Account_EndpointFtp_Problem", "account",
                  with(acct, R"("http://127.0.0.1:4301/")", R"("ftp://h/")"),
                  "writableLocations[0].databaseAccountEndpoint: 'ftp://h/'"},
        shape_row{"Account_NameEmpty_Problem", "account",
                  with(acct, R"("name":"Region B")", R"("name":"")"),
                  "readableLocations[1].name: must not be empty"},
        shape_row{"Account_NameNumber_Problem", "account",
                  with(acct, R"("name":"Region A")", R"("name":1)"),
                  "writableLocations[0].name: expected string, got number"},
        shape_row{"Account_LocationsObject_Problem", "account",
                  R"({"id":"a","writableLocations":{}})",
                  "writableLocations: expected array, got object"},
        shape_row{"Account_LocationString_Problem", "account",
                  R"({"id":"a","readableLocations":["http://h/"]})",
                  "readableLocations[0]: expected object, got string"},
        shape_row{"Account_IdMissing_Problem", "account",
                  R"({"writableLocations":[]})", "id: missing"},
        shape_row{"Account_IdNumber_Problem", "account", R"({"id":7})",
                  "id: expected string, got number"},
        shape_row{"Account_MultiWriteYes_Problem", "account",
                  with(acct, R"("enableMultipleWriteLocations":false)",
                       R"("enableMultipleWriteLocations":"yes")"),
                  "enableMultipleWriteLocations: expected boolean or "
                  "\"true\"/\"false\", got 'yes'"},
        shape_row{"Account_MultiWriteNumber_Problem", "account",
                  R"({"id":"a","enableMultipleWriteLocations":1})",
                  "enableMultipleWriteLocations: expected boolean"},
        shape_row{"Account_PpafNumber_Problem", "account",
                  R"({"id":"a","enablePerPartitionFailoverBehavior":1})",
                  "enablePerPartitionFailoverBehavior: expected boolean"},
        shape_row{
            "Account_ConsistencyUnknown_Problem", "account",
            with(acct, R"("Session")", R"("Strongest")"),
            "userConsistencyPolicy.defaultConsistencyLevel: 'Strongest' is "
            "not one of"},
        shape_row{"Account_ConsistencyPolicyArray_Problem", "account",
                  R"({"id":"a","userConsistencyPolicy":[]})",
                  "userConsistencyPolicy: expected object, got array"}));

INSTANTIATE_TEST_SUITE_P(
    Collection, WrongShape,
    testing::Values(
        shape_row{"Collection_PathNumber_Problem", "collection",
                  with(coll, R"(["/pk"])", R"(["/pk",3])"),
                  "partitionKey.paths[1]: expected string, got number"},
        shape_row{"Collection_PartitionKeyMissing_Problem", "collection",
                  R"({"id":"c","_rid":"r","_self":"s"})",
                  "partitionKey: missing"},
        shape_row{"Collection_PartitionKeyString_Problem", "collection",
                  R"({"id":"c","_rid":"r","_self":"s","partitionKey":"/pk"})",
                  "partitionKey: expected object, got string"},
        shape_row{"Collection_VersionThree_Problem", "collection",
                  with(coll, R"("version":2)", R"("version":3)"),
                  "partitionKey.version: 3 outside 1..2"},
        shape_row{"Collection_VersionString_Problem", "collection",
                  with(coll, R"("version":2)", R"("version":"2")"),
                  "partitionKey.version: expected integer, got string"},
        shape_row{"Collection_VersionFraction_Problem", "collection",
                  with(coll, R"("version":2)", R"("version":1.5)"),
                  "partitionKey.version: expected integer"},
        shape_row{"Collection_KindRange_Problem", "collection",
                  with(coll, R"("kind":"Hash")", R"("kind":"Range")"),
                  "partitionKey.kind: 'Range' is not one of Hash, MultiHash"},
        shape_row{"Collection_HashTwoPaths_Problem", "collection",
                  with(coll, R"(["/pk"])", R"(["/a","/b"])"),
                  "partitionKey.paths: 2 paths; Hash takes 1"},
        shape_row{"Collection_MultiHashFourPaths_Problem", "collection",
                  with(coll, R"(["/pk"],"kind":"Hash")",
                       R"(["/a","/b","/c","/d"],"kind":"MultiHash")"),
                  "partitionKey.paths: 4 paths; MultiHash takes 1 to 3"},
        shape_row{"Collection_NoPaths_Problem", "collection",
                  with(coll, R"(["/pk"])", "[]"),
                  "partitionKey.paths: 0 paths"},
        shape_row{"Collection_PathWithoutSlash_Problem", "collection",
                  with(coll, R"(["/pk"])", R"(["pk"])"),
                  "partitionKey.paths[0]: 'pk' is not a path"},
        shape_row{"Collection_RidMissing_Problem", "collection",
                  with(coll, R"("_rid":"wRUaAK6VyWc=",)", ""), "_rid: missing"},
        shape_row{"Collection_IdEmpty_Problem", "collection",
                  with(coll, R"("id":"c")", R"("id":"")"),
                  "id: must not be empty"},
        shape_row{"Collection_EtagNumber_Problem", "collection",
                  with(coll,
                       R"("_etag":"\"00000a00-0000-0000-0000-000000000000\"")",
                       R"("_etag":5)"),
                  "_etag: expected string, got number"}));

INSTANTIATE_TEST_SUITE_P(
    Pkranges, WrongShape,
    testing::Values(
        shape_row{"Pkranges_ListMissing_Problem", "pkranges", R"({"_rid":"x"})",
                  "PartitionKeyRanges: missing"},
        shape_row{"Pkranges_ListObject_Problem", "pkranges",
                  R"({"PartitionKeyRanges":{}})",
                  "PartitionKeyRanges: expected array, got object"},
        shape_row{"Pkranges_RangeNumber_Problem", "pkranges",
                  R"({"PartitionKeyRanges":[1]})",
                  "PartitionKeyRanges[0]: expected object, got number"},
        shape_row{"Pkranges_IdNumber_Problem", "pkranges",
                  with(pkr, R"("id":"1")", R"("id":1)"),
                  "PartitionKeyRanges[1].id: expected string, got number"},
        shape_row{"Pkranges_MaxMissing_Problem", "pkranges",
                  with(pkr, R"(,"maxExclusive":"FF")", ""),
                  "PartitionKeyRanges[1].maxExclusive: missing"},
        shape_row{"Pkranges_LowercaseHex_Problem", "pkranges",
                  with(pkr, R"("maxExclusive":"7F")", R"("maxExclusive":"7f")"),
                  "PartitionKeyRanges[0].maxExclusive: '7f' is not non-empty "
                  "upper-case hex"},
        shape_row{
            "Pkranges_MinNotHex_Problem", "pkranges",
            with(pkr, R"("minInclusive":"7F")", R"("minInclusive":"7G")"),
            "PartitionKeyRanges[1].minInclusive: '7G' is not upper-case hex"},
        shape_row{"Pkranges_EmptyMax_Problem", "pkranges",
                  with(pkr, R"("maxExclusive":"FF")", R"("maxExclusive":"")"),
                  "PartitionKeyRanges[1].maxExclusive: '' is not non-empty"},
        shape_row{"Pkranges_MinEqualsMax_Problem", "pkranges",
                  with(pkr, R"("maxExclusive":"FF")", R"("maxExclusive":"7F")"),
                  "PartitionKeyRanges[1].maxExclusive: '7F' is not above the "
                  "minimum '7F'"},
        // EPK order, not ordinal: "7F00" == "7F" (tests/fuzz/pkranges).
        shape_row{
            "Pkranges_MaxEqualInEpkOrder_Problem", "pkranges",
            with(pkr, R"("maxExclusive":"FF")", R"("maxExclusive":"7F00")"),
            "PartitionKeyRanges[1].maxExclusive: '7F00' is not above the "
            "minimum '7F'"},
        shape_row{"Pkranges_MinAboveMax_Problem", "pkranges",
                  with(pkr, R"("maxExclusive":"FF")", R"("maxExclusive":"3F")"),
                  "PartitionKeyRanges[1].maxExclusive: '3F' is not above"},
        shape_row{
            "Pkranges_ParentNumber_Problem", "pkranges",
            with(pkr, R"("parents":[]})", R"("parents":[0]})"),
            "PartitionKeyRanges[1].parents[0]: expected string, got number"},
        shape_row{
            "Pkranges_StatusBool_Problem", "pkranges",
            with(pkr, R"("status":"online")", R"("status":true)"),
            "PartitionKeyRanges[0].status: expected string, got boolean"}));

INSTANTIATE_TEST_SUITE_P(
    QueryPlan, WrongShape,
    testing::Values(
        shape_row{
            "Plan_QueryInfoMissing_Problem", "plan",
            R"({"partitionedQueryExecutionInfoVersion":2,"queryRanges":[]})",
            "queryInfo: missing"},
        shape_row{"Plan_VersionMissing_Problem", "plan",
                  R"({"queryInfo":{},"queryRanges":[]})",
                  "partitionedQueryExecutionInfoVersion: missing"},
        shape_row{"Plan_VersionFloat_Problem", "plan",
                  with(plan, R"(:2,)", R"(:2.5,)"),
                  "partitionedQueryExecutionInfoVersion: expected integer"},
        shape_row{"Plan_TopString_Problem", "plan",
                  with(plan, R"("top":null)", R"("top":"5")"),
                  "queryInfo.top: expected integer, got string"},
        shape_row{"Plan_LimitNegative_Problem", "plan",
                  with(plan, R"("limit":null)", R"("limit":-1)"),
                  "queryInfo.limit: -1 outside 0.."},
        shape_row{
            "Plan_OffsetHuge_Problem", "plan",
            with(plan, R"("offset":null)", R"("offset":18446744073709551615)"),
            "queryInfo.offset: integer out of range"},
        shape_row{
            "Plan_OrderByUnknown_Problem", "plan",
            with(plan, R"("Ascending")", R"("Up")"),
            "queryInfo.orderBy[0]: 'Up' is not one of Ascending, Descending"},
        shape_row{"Plan_OrderByExpressionsMismatch_Problem", "plan",
                  with(plan, R"(["c.n"])", R"(["c.n","c.m"])"),
                  "queryInfo.orderByExpressions: 2 expressions for 1 orderBy"},
        shape_row{"Plan_DistinctUnknown_Problem", "plan",
                  with(plan, R"("None")", R"("Sometimes")"),
                  "queryInfo.distinctType: 'Sometimes' is not one of"},
        shape_row{
            "Plan_RewrittenQueryNumber_Problem", "plan",
            R"({"partitionedQueryExecutionInfoVersion":2,"queryInfo":{"rewrittenQuery":1},"queryRanges":[]})",
            "queryInfo.rewrittenQuery: expected string, got number"},
        shape_row{"Plan_RangeMinNumber_Problem", "plan",
                  with(plan, R"("min":"")", R"("min":0)"),
                  "queryRanges[0].min: expected string, got number"},
        shape_row{
            "Plan_RangeInclusiveString_Problem", "plan",
            with(plan, R"("isMinInclusive":true)",
                 R"("isMinInclusive":"true")"),
            "queryRanges[0].isMinInclusive: expected boolean, got string"},
        shape_row{"Plan_RangeReversed_Problem", "plan",
                  with(plan, R"("min":"")", R"("min":"FFFF")"),
                  "queryRanges[0].max: 'FF' is below the minimum 'FFFF'"},
        shape_row{
            "Plan_RangesObject_Problem", "plan",
            with(
                plan,
                R"([{"min":"","max":"FF","isMinInclusive":true,"isMaxInclusive":false}])",
                "{}"),
            "queryRanges: expected array, got object"}));

INSTANTIATE_TEST_SUITE_P(
    ErrorBody, WrongShape,
    testing::Values(
        shape_row{"Error_CodeNumber_Problem", "error", R"({"code":404})",
                  "code: expected string, got number"},
        shape_row{"Error_AdditionalInfoNumber_Problem", "error",
                  R"({"code":"x","additionalErrorInfo":5})",
                  "additionalErrorInfo: expected string or object, got number"},
        shape_row{"Error_Array_Problem", "error", R"([{"code":"x"}])",
                  "document: expected object, got array"}));

// -- hostile input, for every decoder ----------------------------------------

struct hostile_row {
  std::string name;
  std::string body;
  std::string problem_contains;
};

// ctest shows the row by this name (gtest_discover_tests pretty values).
void PrintTo(const hostile_row& row, std::ostream* os) {
  *os << row.name;
}

class HostileInput : public testing::TestWithParam<hostile_row> {};

TEST_P(HostileInput, EveryDecoderReturnsProblem) {
  const auto& row = GetParam();
  for (const char* kind :
       {"account", "collection", "pkranges", "plan", "error"}) {
    SCOPED_TRACE(kind);
    auto what = problem_of(kind, row.body);
    ASSERT_FALSE(what.empty()) << "accepted";
    EXPECT_NE(what.find(row.problem_contains), std::string::npos) << what;
    EXPECT_LT(what.size(), 400u) << what;
  }
}

std::string repeat(const std::string& s, size_t n) {
  std::string r;
  r.reserve(s.size() * n);
  for (size_t i = 0; i < n; ++i)
    r += s;
  return r;
}

INSTANTIATE_TEST_SUITE_P(
    Table, HostileInput,
    testing::Values(
        hostile_row{"Hostile_Empty_Problem", "", "empty body"},
        hostile_row{"Hostile_Whitespace_Problem", "  \n", "invalid JSON"},
        hostile_row{"Hostile_Null_Problem", "null",
                    "document: expected object, got null"},
        hostile_row{"Hostile_Array_Problem", "[]",
                    "document: expected object, got array"},
        hostile_row{"Hostile_String_Problem", R"("{}")",
                    "document: expected object, got string"},
        hostile_row{"Hostile_Number_Problem", "42",
                    "document: expected object, got number"},
        hostile_row{"Hostile_Truncated_Problem",
                    R"({"id":"a","writableLocations":[{"na)",
                    "invalid JSON (byte "},
        hostile_row{"Hostile_TrailingGarbage_Problem", R"({"id":"a"} x)",
                    "invalid JSON"},
        hostile_row{"Hostile_DeepArrays_Problem", repeat("[", 100000),
                    "nested deeper than 64 levels"},
        hostile_row{"Hostile_DeepArraysClosed_Problem",
                    repeat("[", 100000) + repeat("]", 100000),
                    "nested deeper than 64 levels"},
        hostile_row{"Hostile_DeepObjects_Problem",
                    repeat(R"({"a":)", 100000) + "1" + repeat("}", 100000),
                    "nested deeper than 64 levels"},
        hostile_row{"Hostile_NumberOverflowsDouble_Problem",
                    R"({"id":1e400,"code":1e400})", "invalid JSON"},
        hostile_row{"Hostile_InvalidUtf8_Problem",
                    std::string("{\"id\":\"\xff\xfe\",\"code\":\"\xc3\x28\"}"),
                    "invalid JSON"},
        hostile_row{"Hostile_NulByte_Problem",
                    std::string("{\"id\":\"a\0\"}", 11), "invalid JSON"}));

TEST(Codecs, Hostile_HugeInteger_ProblemNotCrash) {
  auto r = decode_query_plan(
      R"({"partitionedQueryExecutionInfoVersion":123456789012345678901234567890,"queryInfo":{},"queryRanges":[]})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().what.rfind("partitionedQueryExecutionInfoVersion: ", 0),
            0u)
      << r.error().what;
}

TEST(Codecs, Hostile_BracketsInsideStrings_NotCountedAsNesting) {
  // 1000 brackets inside a string (and an escaped quote) are just text.
  auto body = R"({"id":"\")" + repeat("[{", 1000) + R"("})";
  auto r = decode_database_account(body);
  ASSERT_TRUE(r.ok()) << r.error().what;
  EXPECT_EQ(r->id.size(), 2001u);
}

TEST(Codecs, Hostile_NestingAtLimit_Accepted) {
  // 64 levels in total, including the root object.
  auto body = R"({"id":"a","x":)" + repeat("[", 63) + repeat("]", 63) + "}";
  EXPECT_TRUE(decode_database_account(body).ok());
  auto deeper = R"({"id":"a","x":)" + repeat("[", 64) + repeat("]", 64) + "}";
  EXPECT_FALSE(decode_database_account(deeper).ok());
}

TEST(Codecs, Hostile_NonUtf8InErrorMessage_Sanitized) {
  auto r = decode_database_account(std::string("{\"id\":\"\xff\"}"));
  ASSERT_FALSE(r.ok());
  for (unsigned char c : r.error().what)
    EXPECT_TRUE(c >= 0x20 && c < 0x7f) << "byte " << int{c};
}

} // namespace
