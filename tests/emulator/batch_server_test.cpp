// Patch, transactional batch and bulk over loopback HTTP (signed with the
// project's transport, the verb patch included), and their admin API:
// bulk-op faults, the ops budget, the response cap, the counters by kind
// and by operation, the document listing, fault rules of the new kinds.

#include "tests/emulator/server_fixture.hpp"

namespace {

using namespace georoute;
using namespace georoute::emulator_testing;

class EmulatorBatch : public EmulatorServer {
protected:
  void SetUp() override {
    EmulatorServer::SetUp();
    create_collection();
  }

  transport::outcome create(const std::string& id, const std::string& pk) {
    return send("POST", west(), "/dbs/d/colls/c/docs",
                json{{"id", id}, {"pk", pk}, {"n", 1}}.dump(),
                {{"x-ms-documentdb-partitionkey", json::array({pk}).dump()}});
  }

  transport::outcome bulk(const std::string& range, const json& ops,
                          std::chrono::milliseconds timeout = 5s) {
    return send("POST", west(), "/dbs/d/colls/c/docs", ops.dump(),
                {{"x-ms-cosmos-is-batch-request", "True"},
                 {"x-ms-cosmos-batch-atomic", "False"},
                 {"x-ms-cosmos-batch-continue-on-error", "True"},
                 {"x-ms-documentdb-partitionkeyrangeid", range}},
                timeout);
  }

  /// `n` creates for partition `pk` (ids prefix0..).
  static json creates(const std::string& pk, int n, const std::string& prefix) {
    json ops = json::array();
    for (int i = 0; i < n; ++i)
      ops.push_back(
          {{"operationType", "Create"},
           {"partitionKey", json::array({pk}).dump()},
           {"resourceBody", {{"id", prefix + std::to_string(i)}, {"pk", pk}}}});
    return ops;
  }

  /// The range of partition `pk`.
  std::string range_of(const std::string& pk) {
    auto o = send("GET", west(), "/dbs/d/colls/c/docs/none", {},
                  {{"x-ms-documentdb-partitionkey", json::array({pk}).dump()}});
    return o.status == 404
               ? o.session_token.substr(0, o.session_token.find(':'))
               : std::string{};
  }

  std::string error_of(const transport::outcome& o) {
    auto j = json::parse(o.body, nullptr, false);
    return j.is_object() && j.contains("error") ? j["error"].get<std::string>()
                                                : o.body;
  }
};

std::vector<int> statuses_of(const transport::outcome& o) {
  std::vector<int> out;
  auto j = json::parse(o.body, nullptr, false);
  if (j.is_array())
    for (const auto& r : j)
      out.push_back(r.value("statusCode", 0));
  return out;
}

TEST_F(EmulatorBatch, SignedPatchOverHttp_200WithTheDocument) {
  ASSERT_EQ(create("a", "p").status, 201);
  auto o = send("PATCH", west(), "/dbs/d/colls/c/docs/a",
                R"([{"op":"incr","path":"/n","value":41}])",
                {{"x-ms-documentdb-partitionkey", R"(["p"])"}});
  ASSERT_EQ(o.status, 200) << o.error_detail << o.body;
  EXPECT_EQ(parse(o)["n"], 42);
  EXPECT_FALSE(o.etag.empty());
  EXPECT_FALSE(o.session_token.empty());
  o = send("PATCH", west(), "/dbs/d/colls/c/docs/a",
           R"({"condition":"FROM c WHERE c.n = 0","operations":[)"
           R"({"op":"set","path":"/n","value":1}]})",
           {{"x-ms-documentdb-partitionkey", R"(["p"])"}});
  EXPECT_EQ(o.status, 412) << o.body;
}

TEST_F(EmulatorBatch, TransactionalBatchOverHttp_200Then207) {
  auto headers = std::vector<std::pair<std::string, std::string>>{
      {"x-ms-cosmos-is-batch-request", "true"},
      {"x-ms-cosmos-batch-atomic", "true"},
      {"x-ms-documentdb-partitionkey", R"(["p"])"}};
  auto o =
      send("POST", west(), "/dbs/d/colls/c/docs",
           R"([{"operationType":"Create","resourceBody":{"id":"x","pk":"p"}},)"
           R"({"operationType":"Read","id":"x"}])",
           headers);
  ASSERT_EQ(o.status, 200) << o.error_detail << o.body;
  EXPECT_EQ(statuses_of(o), (std::vector<int>{201, 200}));
  o = send("POST", west(), "/dbs/d/colls/c/docs",
           R"([{"operationType":"Create","resourceBody":{"id":"y","pk":"p"}},)"
           R"({"operationType":"Create","resourceBody":{"id":"x","pk":"p"}}])",
           headers);
  EXPECT_EQ(o.status, 207) << o.body;
  EXPECT_EQ(statuses_of(o), (std::vector<int>{424, 409}));
}

TEST_F(EmulatorBatch, AdminOpsBudget_PerOp429OverHttp_RemovedAndListed) {
  auto range = range_of("p");
  ASSERT_FALSE(range.empty());
  auto o = admin("POST", "ops-budget",
                 R"({"collection":"dbs/d/colls/c","ops_per_second":5})");
  ASSERT_EQ(o.status, 200) << o.body;
  auto id = parse(o)["id"].get<uint64_t>();
  auto res = bulk(range, creates("p", 8, "b"));
  ASSERT_EQ(res.status, 207) << res.body;
  auto results = parse(res);
  EXPECT_EQ(results[5]["statusCode"], 429);
  EXPECT_EQ(results[5]["subStatusCode"], 3200);
  EXPECT_GT(results[7]["retryAfterMilliseconds"].get<int64_t>(),
            results[5]["retryAfterMilliseconds"].get<int64_t>());

  auto list = parse(admin("GET", "ops-budget"));
  ASSERT_EQ(list["budgets"].size(), 1u) << list;
  EXPECT_EQ(list["budgets"][0]["ops_per_second"], 5.0);
  EXPECT_EQ(parse(admin("GET", "state"))["bulk"]["ops_budgets"].size(), 1u);
  // A reset lifts faults, not budgets.
  ASSERT_EQ(admin("POST", "reset").status, 200);
  EXPECT_EQ(parse(admin("GET", "ops-budget"))["budgets"].size(), 1u);
  o = admin("DELETE", "ops-budget/" + std::to_string(id));
  EXPECT_EQ(parse(o)["removed"], true) << o.body;
  EXPECT_EQ(bulk(range, creates("p", 8, "c")).status, 200);

  for (auto [body, field] : std::vector<std::pair<std::string, std::string>>{
           {R"({})", "ops_per_second: missing"},
           {R"({"ops_per_second":0})", "ops_per_second:"},
           {R"({"ops_per_second":5,"burst":0.5})", "burst:"},
           {R"({"ops_per_second":5,"spread":"yes"})", "spread:"},
           {R"({"ops_per_second":5,"rnage":"1"})", "rnage: unknown field"},
           {R"({"ops_per_second":5,"collection":"dbs/d/colls/zz"})",
            "collection:"},
           {R"({"ops_per_second":5,"collection":"dbs/d/colls/c","range":"9"})",
            "range:"},
           {R"({"ops_per_second":5,"region":"Mars"})", "region:"}}) {
    o = admin("POST", "ops-budget", body);
    EXPECT_EQ(o.status, 400) << body;
    EXPECT_EQ(error_of(o).rfind(field, 0), 0u) << body << " -> " << o.body;
  }
  ASSERT_EQ(admin("POST", "ops-budget", R"({"ops_per_second":1})").status, 200);
  ASSERT_EQ(admin("DELETE", "ops-budget").status, 200);
  EXPECT_TRUE(parse(admin("GET", "ops-budget"))["budgets"].empty());
}

TEST_F(EmulatorBatch, AdminBulkOpFaults_AddListClearAndBadFields) {
  auto range = range_of("p");
  auto o = admin(
      "POST", "bulk-op-faults",
      R"({"collection":"dbs/d/colls/c","range":")" + range +
          R"(","operation_type":"Create","retry_after_ms":25,"count":1})");
  ASSERT_EQ(o.status, 200) << o.body;
  EXPECT_EQ(parse(admin("GET", "bulk-op-faults"))["faults"].size(), 1u);
  auto res = bulk(range, creates("p", 2, "f"));
  EXPECT_EQ(statuses_of(res), (std::vector<int>{429, 201})) << res.body;
  EXPECT_EQ(parse(res)[0]["retryAfterMilliseconds"], 25);
  EXPECT_TRUE(parse(admin("GET", "bulk-op-faults"))["faults"].empty());

  ASSERT_EQ(admin("POST", "bulk-op-faults", R"({"status":503})").status, 200);
  ASSERT_EQ(admin("DELETE", "faults").status, 200);
  EXPECT_TRUE(parse(admin("GET", "bulk-op-faults"))["faults"].empty());
  o = admin("POST", "bulk-op-faults", R"({"status":500})");
  auto id = parse(o)["id"].get<uint64_t>();
  ASSERT_EQ(admin("DELETE", "bulk-op-faults/" + std::to_string(id)).status,
            200);
  EXPECT_TRUE(parse(admin("GET", "bulk-op-faults"))["faults"].empty());

  for (auto [body, field] : std::vector<std::pair<std::string, std::string>>{
           {R"({"operation_type":"Merge"})", "operation_type:"},
           {R"({"status":42})", "status:"},
           {R"({"count":0})", "count:"},
           {R"({"retry_after_ms":-5})", "retry_after_ms:"},
           {R"({"range":"1"})", "range:"},
           {R"({"colection":"x"})", "colection: unknown field"}}) {
    o = admin("POST", "bulk-op-faults", body);
    EXPECT_EQ(o.status, 400) << body;
    EXPECT_EQ(error_of(o).rfind(field, 0), 0u) << body << " -> " << o.body;
  }
}

TEST_F(EmulatorBatch, AdminResponseCap_413_3402) {
  auto range = range_of("p");
  auto o = admin("POST", "bulk-response-cap", R"({"bytes":0})");
  EXPECT_EQ(o.status, 400);
  EXPECT_EQ(error_of(o).rfind("bytes:", 0), 0u) << o.body;
  ASSERT_EQ(admin("POST", "bulk-response-cap", R"({"bytes":300})").status, 200);
  EXPECT_EQ(parse(admin("GET", "state"))["bulk"]["bulk_response_cap_bytes"],
            300);
  auto res = bulk(range, creates("p", 3, "cap"));
  EXPECT_EQ(statuses_of(res), (std::vector<int>{201, 413, 413})) << res.body;
  EXPECT_EQ(parse(res)[1]["subStatusCode"], 3402);
}

TEST_F(EmulatorBatch, FaultRulesOfTheNewKinds_HangAndBadOperation) {
  auto range = range_of("p");
  auto o = admin("POST", "faults", R"({"operation":"bulk","action":"hang"})");
  ASSERT_EQ(o.status, 200) << o.body;
  auto res = bulk(range, creates("p", 1, "h"), 300ms);
  EXPECT_EQ(res.error, failure::timeout) << res.error_detail;
  auto held = emu->control().counters_by_range();
  EXPECT_EQ((held[emulator::range_key{"West US", "dbs/d/colls/c", range}].held),
            1u);
  ASSERT_EQ(admin("DELETE", "faults").status, 200);
  o = admin("POST", "faults", R"({"operation":"bogus"})");
  EXPECT_EQ(o.status, 400);
  EXPECT_EQ(error_of(o).rfind("operation:", 0), 0u) << o.body;
  for (const char* kind : {"patch", "batch", "bulk"}) {
    o = admin("POST", "faults",
              std::string{R"({"operation":")"} + kind + R"(","count":1})");
    EXPECT_EQ(o.status, 200) << kind << ": " << o.body;
  }
}

TEST_F(EmulatorBatch, AdminCountersAndDocuments) {
  ASSERT_EQ(create("a", "p").status, 201);
  auto range = range_of("p");
  ASSERT_EQ(bulk(range, creates("p", 2, "k")).status, 200);
  ASSERT_EQ(send("PATCH", west(), "/dbs/d/colls/c/docs/a",
                 R"([{"op":"set","path":"/n","value":2}])",
                 {{"x-ms-documentdb-partitionkey", R"(["p"])"}})
                .status,
            200);
  auto kinds = parse(admin("GET", "counters/kinds"));
  EXPECT_EQ(kinds["West US"]["bulk"]["200"], 1) << kinds;
  EXPECT_EQ(kinds["West US"]["patch"]["200"], 1) << kinds;
  // The database, the collection and the document.
  EXPECT_EQ(kinds["West US"]["write"]["201"], 3) << kinds;
  auto ops = parse(admin("GET", "counters/ops"));
  EXPECT_EQ(ops["West US"]["dbs/d/colls/c"][range]["bulk"]["201"], 2) << ops;
  auto docs = parse(admin("GET", "documents/d/c"))["documents"];
  ASSERT_EQ(docs.size(), 3u) << docs;
  EXPECT_EQ(docs[0]["id"], "a");
  EXPECT_EQ(docs[0]["writes"], 2);
  EXPECT_EQ(docs[1]["writes"], 1);
  EXPECT_EQ(docs[0]["pk"], R"(["p"])");
  auto o = admin("GET", "documents/d/nope");
  EXPECT_EQ(o.status, 400);
  EXPECT_EQ(error_of(o).rfind("coll:", 0), 0u) << o.body;
  ASSERT_EQ(admin("POST", "counters/reset").status, 200);
  EXPECT_TRUE(parse(admin("GET", "counters/kinds")).empty());
}

} // namespace
