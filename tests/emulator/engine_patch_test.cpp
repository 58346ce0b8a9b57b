// PATCH of a document on the engine alone: each operation, JSON-Pointer
// escapes, the 400s, the condition (412), If-Match, 404, all-or-nothing,
// and the commit (etag, _ts, LSN, change feed, replication, write count).

#include "tests/emulator/engine_items_fixture.hpp"

namespace {

using namespace georoute;
using namespace georoute::emulator_testing;
using namespace std::chrono_literals;

class EnginePatch : public EngineItems {
protected:
  void SetUp() override {
    EngineItems::SetUp();
    create({{"id", "a"},
            {"pk", "p"},
            {"n", 1},
            {"s", "x"},
            {"arr", {1, 2, 3}},
            {"obj", {{"k", "v"}}}});
  }

  /// Patches `a` with `ops` (a bare array); the answer's document.
  json patched(const json& ops) {
    auto res = patch("a", "p", ops);
    EXPECT_EQ(res.status, 200) << ops.dump() << " -> " << res.body;
    return res.status == 200 ? json::parse(res.body) : json{};
  }

  /// Patches `a` expecting a 400 whose message contains `words`; the
  /// document must be left as it was.
  void refused(const json& body, const std::string& words) {
    auto before = read("a", "p").second;
    auto res = patch("a", "p", body);
    EXPECT_EQ(res.status, 400) << body.dump() << " -> " << res.body;
    EXPECT_NE(res.body.find(words), std::string::npos)
        << body.dump() << " -> " << res.body;
    EXPECT_EQ(read("a", "p").second, before) << body.dump();
  }
};

json set_op(const std::string& path, json value) {
  return {{"op", "set"}, {"path", path}, {"value", std::move(value)}};
}

TEST_F(EnginePatch,
       Add_ObjectMemberCreatedOrOverwritten_ArrayInsertsAndAppends) {
  auto d =
      patched(json::array({{{"op", "add"}, {"path", "/new"}, {"value", 7}},
                           {{"op", "add"}, {"path", "/s"}, {"value", "y"}},
                           {{"op", "add"}, {"path", "/arr/1"}, {"value", 9}},
                           {{"op", "add"}, {"path", "/arr/-"}, {"value", 4}},
                           {{"op", "add"}, {"path", "/arr/5"}, {"value", 5}}}));
  EXPECT_EQ(d["new"], 7);
  EXPECT_EQ(d["s"], "y");
  EXPECT_EQ(d["arr"], json({1, 9, 2, 3, 4, 5}));
}

TEST_F(EnginePatch, Set_OverwritesAnArrayIndex) {
  auto d = patched(json::array({set_op("/arr/0", 10), set_op("/arr/3", 11),
                                set_op("/obj/k2", json{{"deep", true}})}));
  EXPECT_EQ(d["arr"], json({10, 2, 3, 11}));
  EXPECT_EQ(d["obj"]["k2"]["deep"], true);
  EXPECT_EQ(d["obj"]["k"], "v");
}

TEST_F(EnginePatch, Replace_ExistingTargetOnly) {
  auto d = patched(json::array(
      {{{"op", "replace"}, {"path", "/s"}, {"value", nullptr}},
       {{"op", "replace"}, {"path", "/arr/2"}, {"value", "three"}}}));
  EXPECT_TRUE(d["s"].is_null());
  EXPECT_EQ(d["arr"], json({1, 2, "three"}));
  refused(json::array({{{"op", "replace"}, {"path", "/nope"}, {"value", 1}}}),
          "does not exist");
  refused(json::array({{{"op", "replace"}, {"path", "/arr/3"}, {"value", 1}}}),
          "does not exist");
}

TEST_F(EnginePatch, Remove_ShiftsArrays_ValueNullOrAbsent) {
  auto d = patched(json::array(
      {{{"op", "remove"}, {"path", "/arr/0"}},
       {{"op", "remove"}, {"path", "/obj/k"}, {"value", nullptr}}}));
  EXPECT_EQ(d["arr"], json({2, 3}));
  EXPECT_EQ(d["obj"], json::object());
  refused(json::array({{{"op", "remove"}, {"path", "/missing"}}}),
          "does not exist");
  refused(json::array({{{"op", "remove"}, {"path", "/arr/2"}}}),
          "out of range");
}

TEST_F(EnginePatch, Incr_IntegersDoublesNegativesAndMissingMembers) {
  auto d = patched(
      json::array({{{"op", "incr"}, {"path", "/n"}, {"value", 5}},
                   {{"op", "incr"}, {"path", "/n"}, {"value", -2}},
                   {{"op", "incr"}, {"path", "/fresh"}, {"value", 3}},
                   {{"op", "incr"}, {"path", "/arr/1"}, {"value", 0.5}}}));
  EXPECT_EQ(d["n"], 4);
  EXPECT_TRUE(d["n"].is_number_integer());
  EXPECT_EQ(d["fresh"], 3);
  EXPECT_DOUBLE_EQ(d["arr"][1].get<double>(), 2.5);
  refused(json::array({{{"op", "incr"}, {"path", "/s"}, {"value", 1}}}),
          "not a number");
  refused(json::array({{{"op", "incr"}, {"path", "/n"}, {"value", "1"}}}),
          "incr needs a number");
}

TEST_F(EnginePatch, Move_FromMustExist_PathNotUnderFrom) {
  auto d = patched(
      json::array({{{"op", "move"}, {"from", "/s"}, {"path", "/obj/moved"}},
                   {{"op", "move"}, {"from", "/arr/0"}, {"path", "/arr/-"}}}));
  EXPECT_FALSE(d.contains("s"));
  EXPECT_EQ(d["obj"]["moved"], "x");
  EXPECT_EQ(d["arr"], json({2, 3, 1}));
  refused(json::array({{{"op", "move"}, {"from", "/gone"}, {"path", "/x"}}}),
          "does not exist");
  refused(
      json::array({{{"op", "move"}, {"from", "/obj"}, {"path", "/obj/in"}}}),
      "cannot move into itself");
}

TEST_F(EnginePatch, PointerEscapes_TildeZeroAndOne) {
  auto d = patched(json::array({set_op("/a~1b", 1), set_op("/c~0d", 2)}));
  EXPECT_EQ(d["a/b"], 1);
  EXPECT_EQ(d["c~d"], 2);
  refused(json::array({set_op("/bad~2", 1)}), "~0 or ~1");
  refused(json::array({set_op("noslash", 1)}), "JSON Pointer");
}

TEST_F(EnginePatch, ObjectFormWithCondition_TrueApplies_FalseIs412) {
  auto res = patch("a", "p",
                   {{"condition", "FROM c WHERE c.n = 1"},
                    {"operations", json::array({set_op("/s", "ok")})}});
  ASSERT_EQ(res.status, 200) << res.body;
  EXPECT_EQ(json::parse(res.body)["s"], "ok");

  auto etag = read("a", "p").second["_etag"];
  res = patch("a", "p",
              {{"condition", "from c where c.n > 100"},
               {"operations", json::array({set_op("/s", "no")})}});
  EXPECT_EQ(res.status, 412) << res.body;
  EXPECT_EQ(read("a", "p").second["s"], "ok");
  EXPECT_EQ(read("a", "p").second["_etag"], etag);

  res = patch("a", "p",
              {{"condition", "FROM c WHERE ((("},
               {"operations", json::array({set_op("/s", "no")})}});
  EXPECT_EQ(res.status, 400) << res.body;
  EXPECT_NE(res.body.find("condition"), std::string::npos) << res.body;
}

TEST_F(EnginePatch, IfMatch_MismatchIs412_MatchApplies) {
  auto etag = read("a", "p").second["_etag"].get<std::string>();
  auto res = patch("a", "p", json::array({set_op("/n", 2)}),
                   {{"if-match", "\"stale\""}});
  EXPECT_EQ(res.status, 412) << res.body;
  EXPECT_EQ(read("a", "p").second["n"], 1);
  res = patch("a", "p", json::array({set_op("/n", 2)}), {{"if-match", etag}});
  ASSERT_EQ(res.status, 200) << res.body;
  EXPECT_NE(res.get("etag"), etag);
  EXPECT_EQ(json::parse(res.body)["_etag"], res.get("etag"));
}

TEST_F(EnginePatch, AbsentOrDeletedDocument_404_PatchNeverCreates) {
  EXPECT_EQ(patch("zz", "p", json::array({set_op("/n", 1)})).status, 404);
  EXPECT_EQ(patch("a", "other", json::array({set_op("/n", 1)})).status, 404);
  ASSERT_EQ(send(west, "DELETE", "/dbs/d/colls/c/docs/a", {},
                 {{"x-ms-documentdb-partitionkey", key_of("p")}})
                .status,
            204);
  EXPECT_EQ(patch("a", "p", json::array({set_op("/n", 1)})).status, 404);
  EXPECT_EQ(writes_of("zz"), -1);
}

TEST_F(EnginePatch, Limits_TenOperationsAtMost_EmptyUnknownMissingValue) {
  json ten = json::array();
  for (int i = 0; i < 10; ++i)
    ten.push_back(set_op("/f" + std::to_string(i), i));
  EXPECT_EQ(patch("a", "p", ten).status, 200);
  auto eleven = ten;
  eleven.push_back(set_op("/f10", 10));
  refused(eleven, "can't exceed 10");
  refused(json::array(), "empty");
  refused({{"operations", json::array()}}, "empty");
  refused({{"condition", "FROM c"}}, "\\\"operations\\\" must be an array");
  refused(json::array({{{"op", "copy"}, {"path", "/x"}, {"from", "/s"}}}),
          "not a patch operation");
  refused(json::array({{{"op", "set"}, {"path", "/x"}}}),
          "\\\"value\\\" is missing");
  refused(json::array({{{"op", "add"}, {"path", "/x"}}}),
          "\\\"value\\\" is missing");
  refused(json::array({{{"op", "set"}, {"value", 1}}}),
          "\\\"path\\\" must be a string");
  refused("not a patch", "invalid patch specification");
}

TEST_F(EnginePatch, SystemPropertiesIdAndPartitionKey_Refused) {
  for (const char* sys : {"/_rid", "/_ts", "/_etag", "/_self", "/_attachments"})
    refused(json::array({set_op(sys, 1)}), "system property");
  refused(json::array({{{"op", "remove"}, {"path", "/_ts"}}}),
          "system property");
  refused(json::array({set_op("/id", "b")}), "/id");
  refused(json::array({{{"op", "remove"}, {"path", "/id"}}}), "/id");
  refused(json::array({set_op("/pk", "q")}), "partition key path /pk");
  refused(json::array({{{"op", "move"}, {"from", "/pk"}, {"path", "/x"}}}),
          "partition key path /pk");
  refused(json::array({{{"op", "move"}, {"from", "/s"}, {"path", "/pk"}}}),
          "partition key path /pk");
}

TEST_F(EnginePatch, ArrayIndexOutOfRangeAndMissingParent_400) {
  refused(json::array({{{"op", "add"}, {"path", "/arr/4"}, {"value", 1}}}),
          "out of range");
  refused(json::array({set_op("/arr/9", 1)}), "out of range");
  refused(json::array({set_op("/arr/x", 1)}), "out of range");
  refused(json::array({set_op("/no/such", 1)}),
          "the parent /no does not exist");
  refused(json::array({set_op("/s/sub", 1)}), "is not an object or an array");
}

TEST_F(EnginePatch, AllOrNothing_ALaterFailureUndoesEarlierOperations) {
  refused(json::array({set_op("/n", 99),
                       set_op("/s", "changed"),
                       {{"op", "remove"}, {"path", "/absent"}}}),
          "patch operation 2");
  EXPECT_EQ(writes_of("a"), 1);
}

TEST_F(EnginePatch, Commit_NewEtagTsLsnSessionToken_OneChangeInTheFeed) {
  auto before = read("a", "p");
  auto first = send(west, "GET", "/dbs/d/colls/c/docs/a", {},
                    {{"x-ms-documentdb-partitionkey", key_of("p")}});
  auto later = t0 + 3s;
  auto res = send(west, "PATCH", "/dbs/d/colls/c/docs/a",
                  json::array({set_op("/n", 2)}).dump(),
                  {{"x-ms-documentdb-partitionkey", key_of("p")}}, later);
  ASSERT_EQ(res.status, 200) << res.body;
  auto doc = json::parse(res.body);
  EXPECT_EQ(doc["_ts"], before.second["_ts"].get<int64_t>() + 3);
  EXPECT_EQ(doc["id"], "a");
  EXPECT_EQ(doc["pk"], "p");
  EXPECT_EQ(doc["_rid"], before.second["_rid"]);
  EXPECT_NE(doc["_etag"], before.second["_etag"]);
  EXPECT_EQ(std::stoll(res.get("lsn")), std::stoll(first.get("lsn")) + 1);
  EXPECT_FALSE(res.get("x-ms-session-token").empty());
  EXPECT_EQ(res.get("x-ms-documentdb-partitionkeyrangeid"), range_of("p"));
  EXPECT_EQ(writes_of("a"), 2);

  auto feed = send(west, "GET", "/dbs/d/colls/c/docs", {},
                   {{"a-im", "Incremental Feed"}}, later);
  ASSERT_EQ(feed.status, 200) << feed.body;
  auto docs = json::parse(feed.body)["Documents"];
  ASSERT_EQ(docs.size(), 1u);
  EXPECT_EQ(docs[0]["n"], 2);
  EXPECT_EQ(docs[0]["_lsn"], 2);
}

TEST_F(EnginePatch, Replication_OtherRegionsSeeThePatchAfterTheLag) {
  eng->set_replication_lag(1000ms);
  auto res = send(west, "PATCH", "/dbs/d/colls/c/docs/a",
                  json::array({set_op("/n", 5)}).dump(),
                  {{"x-ms-documentdb-partitionkey", key_of("p")}}, t0 + 1s);
  ASSERT_EQ(res.status, 200) << res.body;
  EXPECT_EQ(read("a", "p", east, t0 + 1500ms).second["n"], 1);
  EXPECT_EQ(read("a", "p", east, t0 + 2s).second["n"], 5);
  EXPECT_EQ(read("a", "p", west, t0 + 1s).second["n"], 5);
}

TEST_F(EnginePatch, ContentTypeDoesNotMatter) {
  for (const char* type : {"application/json-patch+json",
                           "application/json_patch+json", "text/plain", ""}) {
    headers_t h{{"x-ms-documentdb-partitionkey", key_of("p")}};
    if (*type) h["content-type"] = type;
    auto res = send(
        west, "PATCH", "/dbs/d/colls/c/docs/a",
        json::array({{{"op", "incr"}, {"path", "/n"}, {"value", 1}}}).dump(),
        h);
    EXPECT_EQ(res.status, 200) << type << ": " << res.body;
  }
  EXPECT_EQ(read("a", "p").second["n"], 5);
}

TEST_F(EnginePatch, NotTheWriteRegion_403_3) {
  auto res = patch("a", "p", json::array({set_op("/n", 2)}), {}, east);
  EXPECT_EQ(res.status, 403);
  EXPECT_EQ(res.get("x-ms-substatus"), "3");
  EXPECT_EQ(read("a", "p").second["n"], 1);
}

TEST_F(EnginePatch, FaultRules_OperationPatchMatchesPatchOnly_WriteMatchesToo) {
  emulator::fault_rule r;
  r.operation = "patch";
  r.status = 503;
  eng->add_fault(r);
  EXPECT_EQ(patch("a", "p", json::array({set_op("/n", 2)})).status, 503);
  auto doc = read("a", "p").second;
  doc["n"] = 3;
  EXPECT_EQ(send(west, "PUT", "/dbs/d/colls/c/docs/a", doc.dump(),
                 {{"x-ms-documentdb-partitionkey", key_of("p")}})
                .status,
            200);
  eng->clear_faults();
  r.operation = "write";
  r.count = 1;
  eng->add_fault(r);
  EXPECT_EQ(patch("a", "p", json::array({set_op("/n", 2)})).status, 503);
  EXPECT_EQ(patch("a", "p", json::array({set_op("/n", 2)})).status, 200);

  auto kinds = eng->counters_by_kind();
  EXPECT_EQ(kinds[west]["patch"][503], 2u);
  EXPECT_EQ(kinds[west]["patch"][200], 1u);
  EXPECT_EQ(kinds[west]["write"][200], 1u);
}

} // namespace
