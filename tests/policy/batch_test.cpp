// Transactional batch, the pure part: the body on the wire, what is
// refused before any trip, and the per-operation results read back.

#include "georoute/actors/policy/batch.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace georoute;

namespace {

using json = nlohmann::json;

batch_operation op(batch_op_kind k, std::string id, std::string body = {}) {
  batch_operation o;
  o.kind = k;
  o.id = std::move(id);
  o.body = std::move(body);
  return o;
}

std::string problem_of(const std::vector<batch_operation>& ops,
                       const std::string& pk = R"(["A"])") {
  auto r = batch_wire_body(ops, pk);
  return r ? std::string{"(accepted)"} : r.error().what;
}

TEST(Batch, Body_EveryKindInOrder_KeyOnEachOperation) {
  std::vector<batch_operation> ops{
      op(batch_op_kind::create, "", R"({"id":"a","pk":"A"})"),
      op(batch_op_kind::replace, "b", R"({"id":"b","pk":"A","n":2})"),
      op(batch_op_kind::patch, "c", R"([{"op":"incr","path":"/n","value":1}])"),
      op(batch_op_kind::read, "d"),
      op(batch_op_kind::remove, "e"),
      op(batch_op_kind::upsert, "", R"({"id":"f","pk":"A"})")};
  ops[1].if_match = "\"7\"";
  auto body = batch_wire_body(ops, R"(["A"])");
  ASSERT_TRUE(body) << body.error().what;
  auto j = json::parse(*body);
  ASSERT_EQ(j.size(), 6u);
  EXPECT_EQ(j[0], (json{{"operationType", "Create"},
                        {"partitionKey", R"(["A"])"},
                        {"resourceBody", {{"id", "a"}, {"pk", "A"}}}}));
  EXPECT_EQ(j[1]["operationType"], "Replace");
  EXPECT_EQ(j[1]["id"], "b");
  EXPECT_EQ(j[1]["ifMatch"], "\"7\"");
  // A bare patch array travels in the object form.
  EXPECT_EQ(j[2]["resourceBody"]["operations"][0]["op"], "incr");
  EXPECT_EQ(j[3], (json{{"operationType", "Read"},
                        {"id", "d"},
                        {"partitionKey", R"(["A"])"}}));
  EXPECT_EQ(j[4]["operationType"], "Delete");
  EXPECT_EQ(j[5]["operationType"], "Upsert");
}

TEST(Batch, TwoPartitionKeys_Refused_NamingTheOperation) {
  std::vector<batch_operation> ops{
      op(batch_op_kind::create, "", R"({"id":"a","pk":"A"})"),
      op(batch_op_kind::create, "", R"({"id":"b","pk":"B"})")};
  ops[1].partition_key_json = R"(["B"])";
  auto what = problem_of(ops);
  EXPECT_NE(what.find("batch operation 1 (Create): its partition key [\"B\"] "
                      "is not the batch's"),
            std::string::npos)
      << what;
  // The same key written differently is the same key.
  ops[1].partition_key_json = R"([ "A" ])";
  EXPECT_EQ(problem_of(ops), "(accepted)");
}

TEST(Batch, Limits_HundredOperationsAndTwoMiB) {
  std::vector<batch_operation> ops;
  for (int i = 0; i < 100; ++i)
    ops.push_back(op(batch_op_kind::read, "d" + std::to_string(i)));
  EXPECT_EQ(problem_of(ops), "(accepted)");
  ops.push_back(op(batch_op_kind::read, "d100"));
  EXPECT_NE(problem_of(ops).find("at most 100 operations; this one has 101"),
            std::string::npos);
  EXPECT_NE(problem_of({}).find("at least one operation"), std::string::npos);
  std::string big(1100 * 1024, 'x');
  std::vector<batch_operation> large{
      op(batch_op_kind::upsert, "", json{{"id", "a"}, {"v", big}}.dump()),
      op(batch_op_kind::upsert, "", json{{"id", "b"}, {"v", big}}.dump())};
  EXPECT_NE(problem_of(large).find("the service takes at most 2097152"),
            std::string::npos)
      << problem_of(large);
  large.pop_back();
  EXPECT_EQ(problem_of(large), "(accepted)");
}

struct bad_case {
  batch_operation op;
  const char* names;
};

class BatchRefused : public ::testing::TestWithParam<bad_case> {};

TEST_P(BatchRefused, NamesWhatIsWrong) {
  auto what = problem_of({op(batch_op_kind::read, "ok"), GetParam().op});
  EXPECT_NE(what.find(GetParam().names), std::string::npos) << what;
  EXPECT_NE(what.find("batch operation 1"), std::string::npos) << what;
}

INSTANTIATE_TEST_SUITE_P(
    Batch, BatchRefused,
    ::testing::Values(
        bad_case{op(batch_op_kind::read, ""), "is not a document id"},
        bad_case{op(batch_op_kind::remove, "a/b"), "is not a document id"},
        bad_case{op(batch_op_kind::create, "", "[1]"), "must be a JSON object"},
        bad_case{op(batch_op_kind::upsert, "", R"({"pk":"A"})"),
                 "needs a string \"id\""},
        bad_case{op(batch_op_kind::replace, "a", R"({"id":"b"})"),
                 "differs from the id replaced"},
        bad_case{op(batch_op_kind::patch, "a",
                    R"([{"op":"incr","path":"/n","value":"x"}])"),
                 "needs a number"},
        bad_case{op(batch_op_kind::read, "a", R"({"x":1})"), "takes no body"}));

TEST(Batch, Results_ReadInOrder_WithWhatTheServiceSaid) {
  auto r = parse_batch_results(
      R"([{"statusCode":201,"requestCharge":6.5,"eTag":"\"1\"","resourceBody":{"id":"a"}},
          {"statusCode":429,"subStatusCode":3200,"retryAfterMilliseconds":120},
          {"statusCode":424}])",
      3);
  ASSERT_TRUE(r) << r.error().what;
  EXPECT_EQ((*r)[0].status, 201);
  EXPECT_EQ((*r)[0].etag, "\"1\"");
  EXPECT_EQ(json::parse((*r)[0].body)["id"], "a");
  EXPECT_DOUBLE_EQ((*r)[0].request_charge, 6.5);
  EXPECT_EQ((*r)[1].substatus, 3200);
  EXPECT_EQ((*r)[1].retry_after_ms, 120);
  EXPECT_EQ((*r)[2].status, 424);
  EXPECT_EQ((*r)[2].body, "");
}

// The document goes on the wire as the caller wrote it: its spacing, its
// numbers' spelling and its key order are not rewritten by a parse and a
// print.
TEST(Batch, Body_DocumentTravelsAsWritten) {
  std::string doc =
      "{ \"id\" : \"a\", \"n\": 1.50e2, \"z\":[ ], \"pk\":\"A\" }";
  auto body = batch_wire_body({op(batch_op_kind::create, "", doc)}, R"(["A"])");
  ASSERT_TRUE(body) << body.error().what;
  EXPECT_NE(body->find("\"resourceBody\":" + doc), std::string::npos) << *body;
  EXPECT_TRUE(json::accept(*body));
}

// The id the service will see: the last "id" member, escapes decoded.
TEST(Batch, DocumentId_LastMemberEscapesDecoded) {
  EXPECT_EQ(problem_of({op(batch_op_kind::replace, "ab",
                           R"({"id":1,"id":"a\u0062"})")}),
            "(accepted)");
  EXPECT_NE(problem_of({op(batch_op_kind::create, "", R"({"id":"a","id":2})")})
                .find("needs a string \"id\""),
            std::string::npos);
  // "id" nested deeper is not the document's id.
  EXPECT_NE(problem_of({op(batch_op_kind::create, "", R"({"x":{"id":"a"}})")})
                .find("needs a string \"id\""),
            std::string::npos);
}

// Bytes that are not UTF-8 cannot be JSON text: a problem naming the
// operation, not an exception.
TEST(Batch, IdNotUtf8_AProblemNamingTheOperation) {
  auto what = problem_of({op(batch_op_kind::read, "a\xff")});
  EXPECT_NE(what.find("batch operation 0 (Read): its id is not valid UTF-8"),
            std::string::npos)
      << what;
  auto etag = op(batch_op_kind::read, "a");
  etag.if_match = "\"\xc3\"";
  EXPECT_NE(problem_of({etag}).find("if_match is not valid UTF-8"),
            std::string::npos);
}

// Nesting deeper than the fast check follows is still a document.
TEST(Batch, DeeplyNestedDocument_Accepted) {
  std::string doc = R"({"id":"deep","pk":"A","x":)" + std::string(300, '[') +
                    std::string(300, ']') + "}";
  EXPECT_EQ(problem_of({op(batch_op_kind::create, "", doc)}), "(accepted)");
}

TEST(Batch, Results_DocumentKeptAsSent_EscapedNamesRead) {
  std::string doc = R"({ "id":"a", "s":"}]{[\"", "n": 1.0 })";
  auto r = parse_batch_results(
      "[ {\"status\\u0043ode\" : 201 , \"resourceBody\": " + doc +
          ", \"requestCharge\": 1e1, \"eTag\": \"\\\"7\\\"\"},"
          "{\"statusCode\":429, \"retryAfterMilliseconds\": 12.9} ]",
      2);
  ASSERT_TRUE(r) << r.error().what;
  EXPECT_EQ((*r)[0].status, 201);
  EXPECT_EQ((*r)[0].body, doc);
  EXPECT_DOUBLE_EQ((*r)[0].request_charge, 10);
  EXPECT_EQ((*r)[0].etag, "\"7\"");
  EXPECT_EQ((*r)[1].retry_after_ms, 12);
}

TEST(Batch, Results_StatusNotAnInteger_AProblem) {
  for (const char* body :
       {R"([{"statusCode":201.0}])", R"([{"statusCode":"201"}])",
        R"([{"statusCode":99999999999}])", "[1]",
        R"([{"statusCode":201,"statusCode":null}])"})
    EXPECT_FALSE(parse_batch_results(body, 1)) << body;
}

TEST(Batch, Results_WrongCountOrShape_AProblem) {
  EXPECT_NE(parse_batch_results(R"([{"statusCode":200}])", 2)
                .error()
                .what.find("1 results for 2 operations"),
            std::string::npos);
  EXPECT_FALSE(parse_batch_results(R"({"statusCode":200})", 1));
  EXPECT_FALSE(parse_batch_results(R"([{"status":200}])", 1));
  EXPECT_FALSE(parse_batch_results("not json", 1));
}

} // namespace
