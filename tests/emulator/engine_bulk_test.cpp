// Bulk requests on the engine alone: addressing by range id (400, 410/1002),
// per-operation range checks (410/1002, never written), independent ops in
// order with one change LSN each, 200/207, continue-on-error, the limits
// (100 ops, 2 MB, the response cap's 413/3402), bulk-op faults, the
// per-range ops budget (429 with retryAfterMilliseconds from the budget),
// whole-request fault rules and the request-unit budget, and the counters.

#include "tests/emulator/engine_items_fixture.hpp"

#include <set>

namespace {

using namespace georoute;
using namespace georoute::emulator_testing;
using namespace std::chrono_literals;

class EngineBulk : public EngineItems {
protected:
  void SetUp() override {
    EngineItems::SetUp();
    // Sort partition keys by range: keys[range id] = some keys in it.
    for (int i = 0; i < 40; ++i) {
      auto pk = "k" + std::to_string(i);
      keys[range_of(pk)].push_back(pk);
    }
    ASSERT_EQ(keys.size(), 2u);
    r0 = keys.begin()->first;
    r1 = std::next(keys.begin())->first;
  }

  /// A create of `id` in partition `pk`, with its partitionKey.
  static json create_op(const std::string& id, const std::string& pk,
                        int n = 0) {
    auto o = op("Create", {}, {{"id", id}, {"pk", pk}, {"n", n}});
    o["partitionKey"] = key_of(pk);
    return o;
  }
  static json keyed(json o, const std::string& pk) {
    o["partitionKey"] = key_of(pk);
    return o;
  }

  /// `n` creates in range `range` (ids prefix0..), round robin over its keys.
  json creates(const std::string& range, int n, const std::string& prefix) {
    json ops = json::array();
    for (int i = 0; i < n; ++i) {
      const auto& ks = keys[range];
      ops.push_back(create_op(prefix + std::to_string(i),
                              ks[static_cast<size_t>(i) % ks.size()]));
    }
    return ops;
  }

  std::map<std::string, std::vector<std::string>> keys;
  std::string r0, r1;
};

TEST_F(EngineBulk, AllSucceed_200_EachOpItsOwnChangeLsnAndSessionAdvance) {
  auto a = keys[r0][0];
  auto lsn_before =
      std::stoll(send(west, "GET", "/dbs/d/colls/c/docs/x", {},
                      {{"x-ms-documentdb-partitionkey", key_of(a)}})
                     .get("lsn"));
  auto res = bulk(r0, creates(r0, 5, "d"));
  ASSERT_EQ(res.status, 200) << res.body;
  EXPECT_EQ(statuses(res), (std::vector<int>{201, 201, 201, 201, 201}));
  EXPECT_EQ(std::stoll(res.get("lsn")), lsn_before + 5);
  EXPECT_EQ(res.get("x-ms-documentdb-partitionkeyrangeid"), r0);
  auto results = json::parse(res.body);
  EXPECT_EQ(results[2]["resourceBody"]["id"], "d2");
  auto feed = send(west, "GET", "/dbs/d/colls/c/docs", {},
                   {{"a-im", "Incremental Feed"}});
  std::set<int64_t> lsns;
  auto body = json::parse(feed.body);
  for (const auto& d : body["Documents"])
    lsns.insert(d["_lsn"].get<int64_t>());
  EXPECT_EQ(lsns, (std::set<int64_t>{1, 2, 3, 4, 5}));
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(writes_of("d" + std::to_string(i)), 1);
}

TEST_F(EngineBulk, AnOpOutsideTheAddressedRange_410_1002_NeverWritten_207) {
  auto res = bulk(r0, json::array({create_op("in", keys[r0][0]),
                                   create_op("out", keys[r1][0]),
                                   create_op("in2", keys[r0][1])}));
  ASSERT_EQ(res.status, 207) << res.body;
  EXPECT_EQ(statuses(res), (std::vector<int>{201, 410, 201}));
  auto results = json::parse(res.body);
  EXPECT_EQ(results[1]["subStatusCode"], 1002);
  EXPECT_EQ(writes_of("out"), -1);
  EXPECT_EQ(read("out", keys[r1][0]).first, 404);
  EXPECT_EQ(read("in2", keys[r0][1]).first, 200);
}

TEST_F(EngineBulk, Addressing_MissingRangeId400_Unknown400_Gone410_1002) {
  auto ops = creates(r0, 1, "a");
  auto res = send(west, "POST", "/dbs/d/colls/c/docs", ops.dump(),
                  {{"x-ms-cosmos-is-batch-request", "True"},
                   {"x-ms-cosmos-batch-atomic", "False"}});
  EXPECT_EQ(res.status, 400) << res.body;
  EXPECT_NE(res.body.find("x-ms-documentdb-partitionkeyrangeid"),
            std::string::npos);
  res = bulk("77", ops);
  EXPECT_EQ(res.status, 400) << res.body;
  auto split = eng->split_range("d", "c", r0);
  ASSERT_TRUE(split) << split.error().what;
  res = bulk(r0, ops);
  EXPECT_EQ(res.status, 410) << res.body;
  EXPECT_EQ(res.get("x-ms-substatus"), "1002");
  EXPECT_EQ(writes_of("a0"), -1);
  // The children take it, each only its own keys.
  int written = 0;
  for (const auto& child : *split) {
    auto r = bulk(child, ops);
    auto st = statuses(r);
    ASSERT_EQ(st.size(), 1u);
    written += st[0] == 201;
    EXPECT_TRUE(st[0] == 201 || st[0] == 410) << r.body;
  }
  EXPECT_EQ(written, 1);
  EXPECT_EQ(writes_of("a0"), 1);
}

TEST_F(EngineBulk, IndependentOpsInOrder_DuplicateCreate409_OthersApplied) {
  auto k = keys[r0][0];
  auto patch_too_long = op("Patch", "dup", {{"operations", json::array()}});
  json eleven = json::array();
  for (int i = 0; i < 11; ++i)
    eleven.push_back({{"op", "set"}, {"path", "/f"}, {"value", i}});
  auto res = bulk(
      r0,
      json::array(
          {create_op("dup", k, 1), create_op("dup", k, 2),
           keyed(op("Patch", "dup", {{"operations", eleven}}), k),
           keyed(op("Replace", "dup", {{"id", "dup"}, {"pk", k}, {"n", 3}}), k),
           keyed(op("Read", "dup"), k)}));
  ASSERT_EQ(res.status, 207) << res.body;
  EXPECT_EQ(statuses(res), (std::vector<int>{201, 409, 400, 200, 200}));
  EXPECT_EQ(json::parse(res.body)[4]["resourceBody"]["n"], 3);
  EXPECT_EQ(writes_of("dup"), 2);
}

TEST_F(EngineBulk, ContinueOnErrorFalse_StopsAtTheFirstFailure_Rest424) {
  auto k = keys[r0][0];
  json ops = json::array({create_op("c1", k), keyed(op("Read", "nope"), k),
                          create_op("c2", k), create_op("c3", k)});
  auto res = bulk(r0, ops, {{"x-ms-cosmos-batch-continue-on-error", "False"}});
  ASSERT_EQ(res.status, 207) << res.body;
  EXPECT_EQ(statuses(res), (std::vector<int>{201, 404, 424, 424}));
  EXPECT_EQ(writes_of("c1"), 1);
  EXPECT_EQ(writes_of("c2"), -1);
  res = bulk(r0, ops);
  EXPECT_EQ(statuses(res), (std::vector<int>{409, 404, 201, 201}));
}

TEST_F(EngineBulk, Limits_100Ops_2MB_AndOpsWithoutAKey) {
  auto res = bulk(r0, creates(r0, 101, "m"));
  EXPECT_EQ(res.status, 400) << res.body;
  EXPECT_EQ(bulk(r0, creates(r0, 100, "m")).status, 200);
  auto big = creates(r0, 1, "big");
  big[0]["resourceBody"]["pad"] = std::string(2 * 1024 * 1024, 'x');
  EXPECT_EQ(bulk(r0, big).status, 413);
  EXPECT_EQ(writes_of("big0"), -1);
  res = bulk(r0, json::array({op("Create", {}, {{"id", "nk"}, {"pk", "x"}})}));
  EXPECT_EQ(statuses(res), std::vector<int>{400});
  EXPECT_NE(res.body.find("partitionKey is missing"), std::string::npos);
  // A body whose key is not the op's: 400/1001, alone.
  auto wrong = create_op("w", keys[r0][0]);
  wrong["resourceBody"]["pk"] = keys[r0][1];
  res = bulk(r0, json::array({wrong, create_op("fine", keys[r0][0])}));
  EXPECT_EQ(statuses(res), (std::vector<int>{400, 201}));
  EXPECT_EQ(json::parse(res.body)[0]["subStatusCode"], 1001);
}

TEST_F(EngineBulk, ResponseCap_TheRest413_3402_Unexecuted_FirstAlwaysRuns) {
  // Each created document answers with ~200 bytes of result.
  eng->set_bulk_response_cap(700);
  auto res = bulk(r0, creates(r0, 6, "cap"));
  ASSERT_EQ(res.status, 207) << res.body;
  auto st = statuses(res);
  ASSERT_EQ(st.size(), 6u);
  size_t ran = 0;
  while (ran < st.size() && st[ran] == 201)
    ++ran;
  EXPECT_GE(ran, 2u) << res.body;
  EXPECT_LT(ran, 6u) << res.body;
  EXPECT_LE(res.body.size(), 700u + 200 * (6 - ran)) << res.body;
  auto results = json::parse(res.body);
  for (size_t i = ran; i < 6; ++i) {
    EXPECT_EQ(st[i], 413) << i;
    EXPECT_EQ(results[i]["subStatusCode"], 3402) << i;
    EXPECT_EQ(writes_of("cap" + std::to_string(i)), -1) << i;
  }
  for (size_t i = 0; i < ran; ++i)
    EXPECT_EQ(writes_of("cap" + std::to_string(i)), 1) << i;
  // Minimal answers are small: more fit.
  auto minimal =
      bulk(r0, creates(r0, 6, "min"), {{"prefer", "return=minimal"}});
  EXPECT_EQ(minimal.status, 200) << minimal.body;
  // A cap below one result: the first still runs.
  eng->set_bulk_response_cap(1);
  res = bulk(r0, creates(r0, 2, "one"));
  EXPECT_EQ(statuses(res), (std::vector<int>{201, 413}));
}

TEST_F(EngineBulk, BulkOpFault_NextNOpsOfATypeGet429WithRetryAfter) {
  emulator::bulk_op_fault f;
  f.collection = "dbs/d/colls/c";
  f.range_id = r0;
  f.operation_type = "create";
  f.retry_after_ms = 40;
  f.count = 2;
  auto id = eng->add_bulk_op_fault(f);
  ASSERT_TRUE(id) << id.error().what;
  auto k = keys[r0][0];
  auto res = bulk(r1, creates(r1, 2, "other"));
  EXPECT_EQ(res.status, 200) << "another range is not affected: " << res.body;
  res = bulk(r0, json::array({keyed(op("Read", "x"), k), create_op("f1", k),
                              create_op("f2", k), create_op("f3", k)}));
  ASSERT_EQ(res.status, 207) << res.body;
  EXPECT_EQ(statuses(res), (std::vector<int>{404, 429, 429, 201}));
  auto results = json::parse(res.body);
  EXPECT_EQ(results[1]["retryAfterMilliseconds"], 40);
  EXPECT_EQ(results[1]["subStatusCode"], 3200);
  EXPECT_EQ(writes_of("f1"), -1);
  EXPECT_TRUE(eng->bulk_op_faults().empty()) << "used up";
  // Checks name the field.
  f.operation_type = "Merge";
  auto bad = eng->add_bulk_op_fault(f);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().what.rfind("operation_type:", 0), 0u);
  f.operation_type = "";
  f.range_id = "99";
  bad = eng->add_bulk_op_fault(f);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().what.rfind("range:", 0), 0u);
  // clear_faults lifts them.
  f.range_id = "";
  f.count = -1;
  ASSERT_TRUE(eng->add_bulk_op_fault(f));
  eng->clear_faults();
  EXPECT_EQ(bulk(r0, creates(r0, 1, "after")).status, 200);
}

TEST_F(EngineBulk, OpsBudget_ExcessOps429_RetryAfterFromTheBudget_PerRange) {
  emulator::range_ops_budget b;
  b.ops_per_second = 10;
  auto id = eng->add_ops_budget(b);
  ASSERT_TRUE(id) << id.error().what;
  auto res = bulk(r0, creates(r0, 15, "b"), {}, west, t0);
  ASSERT_EQ(res.status, 207) << res.body;
  auto st = statuses(res);
  auto results = json::parse(res.body);
  for (size_t i = 0; i < 10; ++i)
    EXPECT_EQ(st[i], 201) << i;
  for (size_t i = 10; i < 15; ++i) {
    EXPECT_EQ(st[i], 429) << i;
    EXPECT_EQ(results[i]["subStatusCode"], 3200) << i;
    // 10 ops a second: the k-th turned away waits k tenths of a second.
    EXPECT_EQ(results[i]["retryAfterMilliseconds"],
              static_cast<int64_t>((i - 9) * 100))
        << i;
    EXPECT_EQ(writes_of("b" + std::to_string(i)), -1) << i;
  }
  // Another range has its own bucket.
  EXPECT_EQ(bulk(r1, creates(r1, 10, "o"), {}, west, t0).status, 200);
  // Half a second later: five tokens.
  res = bulk(r0, creates(r0, 6, "h"), {}, west, t0 + 500ms);
  EXPECT_EQ(statuses(res), (std::vector<int>{201, 201, 201, 201, 201, 429}));
  EXPECT_EQ(json::parse(res.body)[5]["retryAfterMilliseconds"], 100);
  // Lifted: everything runs.
  EXPECT_TRUE(eng->remove_ops_budget(*id));
  // Not spread: every operation turned away waits for the next token.
  emulator::range_ops_budget flat;
  flat.ops_per_second = 10;
  flat.spread = false;
  flat.range_id = r1;
  flat.collection = "dbs/d/colls/c";
  auto flat_id = eng->add_ops_budget(flat);
  ASSERT_TRUE(flat_id);
  res = bulk(r1, creates(r1, 12, "flat"), {}, west, t0 + 500ms);
  auto flat_results = json::parse(res.body);
  ASSERT_EQ(flat_results.size(), 12u);
  EXPECT_EQ(flat_results[10]["statusCode"], 429) << res.body;
  EXPECT_EQ(flat_results[10]["retryAfterMilliseconds"], 100) << res.body;
  EXPECT_EQ(flat_results[11]["retryAfterMilliseconds"], 100) << res.body;
  EXPECT_TRUE(eng->remove_ops_budget(*flat_id));
  EXPECT_EQ(bulk(r0, creates(r0, 20, "free"), {}, west, t0 + 500ms).status,
            200);
  // A scoped budget: only that range.
  b.collection = "dbs/d/colls/c";
  b.range_id = r1;
  b.ops_per_second = 1;
  ASSERT_TRUE(eng->add_ops_budget(b));
  EXPECT_EQ(bulk(r0, creates(r0, 5, "s0"), {}, west, t0 + 1s).status, 200);
  EXPECT_EQ(statuses(bulk(r1, creates(r1, 2, "s1"), {}, west, t0 + 1s)),
            (std::vector<int>{201, 429}));
  // Bad budgets name the field.
  b.ops_per_second = 0;
  auto bad = eng->add_ops_budget(b);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().what.rfind("ops_per_second:", 0), 0u);
  b.ops_per_second = 5;
  b.burst = 0.5;
  bad = eng->add_ops_budget(b);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().what.rfind("burst:", 0), 0u);
}

TEST_F(EngineBulk, WholeRequestFaults_OperationBulk_410_429_Hang_RuBudget) {
  emulator::fault_rule r;
  r.operation = "bulk";
  r.collection = "dbs/d/colls/c";
  r.range_id = r0;
  r.status = 410;
  r.substatus = 1002;
  r.count = 1;
  eng->add_fault(r);
  auto res = bulk(r0, creates(r0, 2, "w"));
  EXPECT_EQ(res.status, 410);
  EXPECT_EQ(res.get("x-ms-substatus"), "1002");
  EXPECT_EQ(writes_of("w0"), -1);
  EXPECT_EQ(bulk(r1, creates(r1, 1, "w1x")).status, 200);
  r.status = 429;
  r.substatus = 3200;
  r.retry_after_ms = 30;
  eng->add_fault(r);
  res = bulk(r0, creates(r0, 2, "w"));
  EXPECT_EQ(res.status, 429);
  EXPECT_EQ(res.get("x-ms-retry-after-ms"), "30");
  r.action = emulator::fault_action::hang;
  auto hang = eng->add_fault(r);
  res = bulk(r0, creates(r0, 2, "w"));
  EXPECT_FALSE(res.get(emulator::hang_marker).empty());
  eng->remove_fault(hang);
  EXPECT_EQ(writes_of("w0"), -1);
  // A batch rule does not match bulk.
  r.action = emulator::fault_action::status;
  r.operation = "batch";
  r.count = -1;
  eng->add_fault(r);
  EXPECT_EQ(bulk(r0, creates(r0, 2, "w")).status, 200);
  eng->clear_faults();
  // The request-unit budget throttles bulk requests too.
  eng->set_throughput(west, 10);
  EXPECT_EQ(bulk(r0, creates(r0, 5, "ru"), {}, west, t0).status, 200);
  res = bulk(r0, creates(r0, 1, "ru-next"), {}, west, t0);
  EXPECT_EQ(res.status, 429) << res.body;
  EXPECT_FALSE(res.get("x-ms-retry-after-ms").empty());
}

TEST_F(EngineBulk, OutsideTheWriteRegion_403_3) {
  auto res = bulk(r0, creates(r0, 1, "e"), {}, east);
  EXPECT_EQ(res.status, 403);
  EXPECT_EQ(res.get("x-ms-substatus"), "3");
  EXPECT_EQ(writes_of("e0"), -1);
}

TEST_F(EngineBulk, PartitionMovedToAnotherRegion_BulkAndBatchFollowIt) {
  ASSERT_TRUE(eng->move_partition_write_region("d", "c", r0, east));
  auto res = bulk(r0, creates(r0, 1, "m"));
  EXPECT_EQ(res.status, 403) << res.body;
  EXPECT_EQ(res.get("x-ms-substatus"), "3");
  EXPECT_EQ(bulk(r0, creates(r0, 1, "m"), {}, east).status, 200);
  EXPECT_EQ(bulk(r1, creates(r1, 1, "w"), {}, west).status, 200);
  auto k = keys[r0][0];
  auto ops = json::array({op("Create", {}, {{"id", "bt"}, {"pk", k}})});
  EXPECT_EQ(batch(k, ops).status, 403);
  EXPECT_EQ(batch(k, ops, {}, east).status, 200);
  EXPECT_EQ(patch("bt", k,
                  json::array({{{"op", "set"}, {"path", "/n"}, {"value", 1}}}))
                .status,
            403);
}

TEST_F(EngineBulk, Counters_ByKindAndByOperation) {
  emulator::bulk_op_fault f;
  f.count = 1;
  ASSERT_TRUE(eng->add_bulk_op_fault(f));
  bulk(r0, creates(r0, 3, "n"));
  bulk(r1, creates(r1, 2, "n1-"));
  auto kinds = eng->counters_by_kind();
  EXPECT_EQ(kinds[west]["bulk"][207], 1u);
  EXPECT_EQ(kinds[west]["bulk"][200], 1u);
  auto ops = eng->counters_by_op();
  auto t0r = ops[emulator::range_key{west, "dbs/d/colls/c", r0}];
  EXPECT_EQ(t0r.bulk[429], 1u);
  EXPECT_EQ(t0r.bulk[201], 2u);
  EXPECT_TRUE(t0r.batch.empty());
  auto t1r = ops[emulator::range_key{west, "dbs/d/colls/c", r1}];
  EXPECT_EQ(t1r.bulk[201], 2u);
  auto ranges = eng->counters_by_range();
  auto by_range = ranges[emulator::range_key{west, "dbs/d/colls/c", r0}];
  EXPECT_EQ(by_range.by_status[207], 1u);
  eng->reset_counters();
  EXPECT_TRUE(eng->counters_by_kind().empty());
  EXPECT_TRUE(eng->counters_by_op().empty());
}

TEST_F(EngineBulk, Documents_ListsEveryDocumentWithItsWrites) {
  bulk(r0,
       json::array({create_op("x", keys[r0][0]),
                    keyed(op("Upsert", {}, {{"id", "x"}, {"pk", keys[r0][0]}}),
                          keys[r0][0]),
                    keyed(op("Delete", "x"), keys[r0][0])}));
  auto docs = eng->documents("d", "c");
  ASSERT_TRUE(docs);
  ASSERT_EQ(docs->size(), 1u);
  EXPECT_EQ((*docs)[0].id, "x");
  EXPECT_EQ((*docs)[0].pk, key_of(keys[r0][0]));
  EXPECT_EQ((*docs)[0].writes, 3u);
  EXPECT_FALSE((*docs)[0].live);
  auto missing = eng->documents("d", "nope");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().what.rfind("coll:", 0), 0u);
}

} // namespace
