// Transactional batches on the engine alone: every operation type, 200 and
// 207/424, nothing applied on failure, one change LSN and one session-token
// advance per batch (and a change-feed page never ends inside it), the
// request checks (400/413), Prefer: return=minimal, the write region, and
// fault rules of operation "batch".

#include "tests/emulator/engine_items_fixture.hpp"

namespace {

using namespace georoute;
using namespace georoute::emulator_testing;
using namespace std::chrono_literals;

using EngineBatch = EngineItems;

json doc(const std::string& id, int n, const std::string& pk = "p") {
  return {{"id", id}, {"pk", pk}, {"n", n}};
}

std::string lsn_of(const http_response& res) {
  return res.get("lsn");
}

TEST_F(EngineBatch, EveryOperationType_200_InOrder_LaterOpsSeeEarlierOnes) {
  create(doc("old", 1));
  create(doc("gone", 1));
  auto res = batch(
      "p", json::array(
               {op("Create", {}, doc("a", 1)), op("Upsert", {}, doc("b", 1)),
                op("Upsert", {}, doc("old", 2)), op("Read", "a"),
                op("Replace", "a", doc("a", 5)),
                op("Patch", "b",
                   {{"operations",
                     json::array(
                         {{{"op", "incr"}, {"path", "/n"}, {"value", 10}}})}}),
                op("Delete", "gone"), op("Read", "b")}));
  ASSERT_EQ(res.status, 200) << res.body;
  EXPECT_EQ(statuses(res),
            (std::vector<int>{201, 201, 200, 200, 200, 200, 204, 200}));
  auto results = json::parse(res.body);
  EXPECT_EQ(results[3]["resourceBody"]["n"], 1);  // the create, read back
  EXPECT_EQ(results[4]["resourceBody"]["n"], 5);  // replace
  EXPECT_EQ(results[5]["resourceBody"]["n"], 11); // patch of the upsert
  EXPECT_EQ(results[7]["resourceBody"]["n"], 11);
  for (size_t i : {0u, 1u, 2u, 3u, 4u, 5u, 7u}) {
    EXPECT_TRUE(results[i]["eTag"].is_string()) << i << ": " << results[i];
    EXPECT_TRUE(results[i]["requestCharge"].is_number()) << i;
    EXPECT_FALSE(results[i].contains("subStatusCode")) << i;
  }
  EXPECT_EQ(results[4]["eTag"], results[4]["resourceBody"]["_etag"]);
  EXPECT_FALSE(results[6].contains("resourceBody"));
  EXPECT_EQ(read("a", "p").second["n"], 5);
  EXPECT_EQ(read("b", "p").second["n"], 11);
  EXPECT_EQ(read("old", "p").second["n"], 2);
  EXPECT_EQ(read("gone", "p").first, 404);
  EXPECT_EQ(read("a", "p").second["_etag"], results[4]["eTag"]);
  EXPECT_EQ(writes_of("a"), 2);
  EXPECT_EQ(writes_of("b"), 2);
  EXPECT_EQ(writes_of("old"), 2);
}

TEST_F(EngineBatch, AFailure_207_ItsStatusAnd424ForEveryOther_NothingApplied) {
  create(doc("exists", 1));
  auto lsn_before =
      lsn_of(send(west, "GET", "/dbs/d/colls/c/docs/exists", {},
                  {{"x-ms-documentdb-partitionkey", key_of("p")}}));
  auto res = batch("p", json::array({op("Create", {}, doc("new1", 1)),
                                     op("Upsert", {}, doc("exists", 9)),
                                     op("Create", {}, doc("exists", 2)),
                                     op("Create", {}, doc("new2", 1))}));
  ASSERT_EQ(res.status, 207) << res.body;
  EXPECT_EQ(statuses(res), (std::vector<int>{424, 424, 409, 424}));
  auto results = json::parse(res.body);
  EXPECT_FALSE(results[0].contains("resourceBody"));
  EXPECT_TRUE(results[2]["message"].is_string());
  EXPECT_EQ(read("new1", "p").first, 404);
  EXPECT_EQ(read("new2", "p").first, 404);
  EXPECT_EQ(read("exists", "p").second["n"], 1);
  EXPECT_EQ(writes_of("new1"), -1);
  EXPECT_EQ(writes_of("exists"), 1);
  EXPECT_EQ(lsn_of(res), lsn_before);
  // The change feed has nothing after the first create.
  auto feed = send(west, "GET", "/dbs/d/colls/c/docs", {},
                   {{"a-im", "Incremental Feed"}, {"if-none-match", "\"1\""}});
  EXPECT_EQ(feed.status, 304) << feed.body;
}

TEST_F(EngineBatch, FailureCodes_SubStatusPreconditionAndNotFound) {
  create(doc("x", 1));
  auto res = batch(
      "p", json::array({op("Read", "x"),
                        op("Patch", "x", {{"operations", json::array()}})}));
  ASSERT_EQ(res.status, 207) << res.body;
  EXPECT_EQ(statuses(res), (std::vector<int>{424, 400}));

  auto stale = op("Replace", "x", doc("x", 2));
  stale["ifMatch"] = "\"not-the-etag\"";
  res = batch("p", json::array({stale}));
  EXPECT_EQ(statuses(res), (std::vector<int>{412}));
  res = batch("p", json::array({op("Delete", "missing"), op("Read", "x")}));
  EXPECT_EQ(statuses(res), (std::vector<int>{404, 424}));
  EXPECT_EQ(read("x", "p").second["n"], 1);

  // A patch whose condition is false: 412 for it, 424 for the rest.
  res = batch(
      "p", json::array({op("Upsert", {}, doc("y", 1)),
                        op("Patch", "x",
                           {{"condition", "FROM c WHERE c.n = 42"},
                            {"operations", json::array({{{"op", "set"},
                                                         {"path", "/n"},
                                                         {"value", 3}}})}})}));
  EXPECT_EQ(statuses(res), (std::vector<int>{424, 412}));
  EXPECT_EQ(read("y", "p").first, 404);
}

TEST_F(EngineBatch, OneChangeLsn_AFeedPageOfOneHoldsTheWholeBatch) {
  create(doc("before", 0));
  auto res = batch("p", json::array({op("Create", {}, doc("b1", 1)),
                                     op("Create", {}, doc("b2", 1)),
                                     op("Create", {}, doc("b3", 1))}));
  ASSERT_EQ(res.status, 200) << res.body;
  create(doc("after", 0));
  std::vector<std::vector<std::string>> pages;
  std::vector<std::set<int64_t>> lsns;
  headers_t h{{"a-im", "Incremental Feed"}, {"x-ms-max-item-count", "1"}};
  for (int i = 0; i < 10; ++i) {
    auto page = send(west, "GET", "/dbs/d/colls/c/docs", {}, h);
    if (page.status == 304) break;
    ASSERT_EQ(page.status, 200) << page.body;
    pages.emplace_back();
    lsns.emplace_back();
    auto body = json::parse(page.body);
    for (const auto& d : body["Documents"]) {
      pages.back().push_back(d["id"]);
      lsns.back().insert(d["_lsn"].get<int64_t>());
    }
    h["if-none-match"] = page.get("etag");
  }
  ASSERT_EQ(pages.size(), 3u);
  EXPECT_EQ(pages[0], std::vector<std::string>{"before"});
  EXPECT_EQ(pages[1], (std::vector<std::string>{"b1", "b2", "b3"}));
  EXPECT_EQ(pages[2], std::vector<std::string>{"after"});
  EXPECT_EQ(lsns[1], std::set<int64_t>{2});
  EXPECT_EQ(lsns[2], std::set<int64_t>{3});
}

TEST_F(EngineBatch, OneSessionTokenAdvance_TheLsnMovesByOne) {
  create(doc("first", 0));
  auto before =
      std::stoll(lsn_of(send(west, "GET", "/dbs/d/colls/c/docs/first", {},
                             {{"x-ms-documentdb-partitionkey", key_of("p")}})));
  auto res = batch("p", json::array({op("Create", {}, doc("s1", 1)),
                                     op("Create", {}, doc("s2", 1)),
                                     op("Delete", "first")}));
  ASSERT_EQ(res.status, 200) << res.body;
  EXPECT_EQ(std::stoll(lsn_of(res)), before + 1);
  auto token = res.get("x-ms-session-token");
  EXPECT_EQ(token.substr(0, token.find(':')), range_of("p"));
  EXPECT_EQ(res.get("x-ms-documentdb-partitionkeyrangeid"), range_of("p"));
}

TEST_F(EngineBatch, TheSameDocumentTwice_OneVersionInTheFeed_TwoWrites) {
  auto res = batch("p", json::array({op("Create", {}, doc("twice", 1)),
                                     op("Replace", "twice", doc("twice", 2))}));
  ASSERT_EQ(res.status, 200) << res.body;
  auto feed = send(west, "GET", "/dbs/d/colls/c/docs", {},
                   {{"a-im", "Incremental Feed"}});
  auto docs = json::parse(feed.body)["Documents"];
  ASSERT_EQ(docs.size(), 1u) << feed.body;
  EXPECT_EQ(docs[0]["n"], 2);
  EXPECT_EQ(writes_of("twice"), 2);
}

TEST_F(EngineBatch, PreferReturnMinimal_NoDocumentsOfWrites_ReadsKeepTheirs) {
  create(doc("r", 1));
  auto res = batch("p",
                   json::array({op("Create", {}, doc("m", 1)), op("Read", "r"),
                                op("Upsert", {}, doc("r", 2))}),
                   {{"prefer", "return=minimal"}});
  ASSERT_EQ(res.status, 200) << res.body;
  auto results = json::parse(res.body);
  EXPECT_FALSE(results[0].contains("resourceBody"));
  EXPECT_TRUE(results[0]["eTag"].is_string());
  EXPECT_EQ(results[1]["resourceBody"]["n"], 1);
  EXPECT_FALSE(results[2].contains("resourceBody"));
}

TEST_F(EngineBatch, ReadWithIfNoneMatchOfTheCurrentEtag_304_NotAFailure) {
  auto created = create(doc("c", 1));
  auto read_op = op("Read", "c");
  read_op["ifNoneMatch"] = created.get("etag");
  auto res = batch("p", json::array({read_op, op("Create", {}, doc("c2", 1))}));
  ASSERT_EQ(res.status, 200) << res.body;
  EXPECT_EQ(statuses(res), (std::vector<int>{304, 201}));
}

TEST_F(EngineBatch, RequestChecks_400And413_NamingTheProblem) {
  auto expect = [&](const http_response& res, int status,
                    const std::string& words) {
    EXPECT_EQ(res.status, status) << res.body;
    EXPECT_NE(res.body.find(words), std::string::npos) << res.body;
  };
  expect(batch("p", json::array()), 400, "no operations");
  json many = json::array();
  for (int i = 0; i < 101; ++i)
    many.push_back(op("Create", {}, doc("m" + std::to_string(i), i)));
  expect(batch("p", many), 400, "more operations than what is supported");
  many.erase(many.begin());
  EXPECT_EQ(batch("p", many).status, 200);
  json big = json::array({op("Create", {}, doc("big", 1))});
  big[0]["resourceBody"]["pad"] = std::string(2 * 1024 * 1024, 'x');
  expect(batch("p", big), 413, "2 MB");
  expect(batch("p", json::array({op("Merge", "x")})), 400, "Merge");
  expect(batch("p", json{{"operations", json::array()}}), 400, "JSON array");
  auto other = op("Create", {}, doc("o", 1));
  other["partitionKey"] = key_of("q");
  expect(batch("p", json::array({other})), 400, "differs from the batch");
  auto same = op("Create", {}, doc("o", 1));
  same["partitionKey"] = key_of("p");
  EXPECT_EQ(batch("p", json::array({same})).status, 200);
  auto mismatch = batch("p", json::array({op("Create", {}, doc("w", 1, "q"))}));
  expect(mismatch, 400, "doesn't match");
  EXPECT_EQ(mismatch.get("x-ms-substatus"), "1001");
  expect(batch("p", json::array({op("Read")})), 400, "id is missing");
  expect(batch("p", json::array({op("Create")})), 400, "resourceBody");
  auto no_key = send(west, "POST", "/dbs/d/colls/c/docs",
                     json::array({op("Read", "x")}).dump(),
                     {{"x-ms-cosmos-is-batch-request", "true"},
                      {"x-ms-cosmos-batch-atomic", "true"}});
  expect(no_key, 400, "x-ms-documentdb-partitionkey");
  EXPECT_EQ(read("w", "p").first, 404);
  EXPECT_EQ(writes_of("m0"), -1);
}

TEST_F(EngineBatch, HeaderValuesAnyCase) {
  for (const char* v : {"true", "True", "TRUE"}) {
    auto id = std::string{"case-"} + v;
    auto res = send(west, "POST", "/dbs/d/colls/c/docs",
                    json::array({op("Create", {}, doc(id, 1))}).dump(),
                    {{"x-ms-cosmos-is-batch-request", v},
                     {"x-ms-cosmos-batch-atomic", v},
                     {"x-ms-documentdb-partitionkey", key_of("p")}});
    EXPECT_EQ(res.status, 200) << v << ": " << res.body;
    EXPECT_EQ(statuses(res), std::vector<int>{201}) << v;
  }
}

TEST_F(EngineBatch, OutsideTheWriteRegion_403_3_EvenAllReads) {
  create(doc("r", 1));
  auto res = batch("p", json::array({op("Read", "r")}), {}, east);
  EXPECT_EQ(res.status, 403);
  EXPECT_EQ(res.get("x-ms-substatus"), "3");
}

TEST_F(EngineBatch, FaultRules_OperationBatch_WholeRequest429WithRetryAfter) {
  emulator::fault_rule r;
  r.operation = "batch";
  r.status = 429;
  r.substatus = 3200;
  r.retry_after_ms = 250;
  r.count = 1;
  eng->add_fault(r);
  auto res = batch("p", json::array({op("Create", {}, doc("f", 1))}));
  EXPECT_EQ(res.status, 429);
  EXPECT_EQ(res.get("x-ms-retry-after-ms"), "250");
  EXPECT_EQ(read("f", "p").first, 404);
  // A bulk rule does not match a batch; a write rule does.
  r.operation = "bulk";
  r.count = -1;
  eng->add_fault(r);
  EXPECT_EQ(batch("p", json::array({op("Create", {}, doc("f", 1))})).status,
            200);
  eng->clear_faults();
  r.operation = "write";
  r.status = 503;
  r.substatus = 0;
  r.count = 1;
  eng->add_fault(r);
  EXPECT_EQ(batch("p", json::array({op("Read", "f")})).status, 503);

  auto kinds = eng->counters_by_kind();
  EXPECT_EQ(kinds[west]["batch"][429], 1u);
  EXPECT_EQ(kinds[west]["batch"][200], 1u);
  EXPECT_EQ(kinds[west]["batch"][503], 1u);
  auto ops = eng->counters_by_op();
  auto& tally = ops[emulator::range_key{west, "dbs/d/colls/c", range_of("p")}];
  EXPECT_EQ(tally.batch[201], 1u);
  EXPECT_TRUE(tally.bulk.empty());
}

TEST_F(EngineBatch, Replication_TheWholeBatchAppearsAtOnceElsewhere) {
  eng->set_replication_lag(1000ms);
  auto res = send(west, "POST", "/dbs/d/colls/c/docs",
                  json::array({op("Create", {}, doc("l1", 1)),
                               op("Create", {}, doc("l2", 1))})
                      .dump(),
                  {{"x-ms-cosmos-is-batch-request", "true"},
                   {"x-ms-cosmos-batch-atomic", "true"},
                   {"x-ms-documentdb-partitionkey", key_of("p")}},
                  t0);
  ASSERT_EQ(res.status, 200) << res.body;
  EXPECT_EQ(read("l1", "p", east, t0 + 999ms).first, 404);
  EXPECT_EQ(read("l2", "p", east, t0 + 999ms).first, 404);
  EXPECT_EQ(read("l1", "p", east, t0 + 1s).first, 200);
  EXPECT_EQ(read("l2", "p", east, t0 + 1s).first, 200);
}

} // namespace
