// Patch and transactional batch through the engine against the emulator:
// each patch operation and the condition, a batch applied as one and a
// batch that fails as one, the blocking client, and bad input refused
// before any request goes out.

#include "georoute/actors/client.hpp"
#include "tests/integration/engine_fixture.hpp"

namespace {

using namespace georoute;
using namespace georoute::test;
using namespace std::chrono_literals;
using json = nlohmann::json;

const std::string link = "dbs/d/colls/c";

class PatchBatch : public engine_test {
protected:
  caf::expected<data_response> route(data_request r) {
    return ask<data_response>(eng->router(), 10s, route_atom_v, std::move(r));
  }

  caf::expected<batch_response> batch(batch_request b) {
    return ask<batch_response>(eng->router(), 10s, route_atom_v, std::move(b));
  }

  void put(const std::string& id, json doc) {
    auto r = point(data_op::upsert, id);
    doc["id"] = id;
    doc["pk"] = "p0";
    r.body = doc.dump();
    auto w = route(r);
    ASSERT_TRUE(w) << describe(w.error());
  }

  json get(const std::string& id) {
    auto r = route(point(data_op::read, id));
    EXPECT_TRUE(r) << describe(r.error());
    return r ? json::parse(r->body) : json{};
  }

  data_request patch_of(const std::string& id, const std::string& body) {
    auto r = point(data_op::read, id);
    r.op = data_op::patch;
    r.body = body;
    return r;
  }

  static batch_operation op(batch_op_kind k, std::string id,
                            std::string body = {}) {
    batch_operation o;
    o.kind = k;
    o.id = std::move(id);
    o.body = std::move(body);
    return o;
  }

  static batch_request batch_of(std::vector<batch_operation> ops) {
    batch_request b;
    b.collection_link = link;
    b.partition_key_json = R"(["p0"])";
    b.operations = std::move(ops);
    return b;
  }

  /// Requests of `kind` ("patch", "batch") the emulator answered, in
  /// every region.
  uint64_t answered(const std::string& kind) {
    uint64_t n = 0;
    for (const auto& [region, kinds] : emu->control().counters_by_kind())
      if (auto k = kinds.find(kind); k != kinds.end())
        for (const auto& [status, count] : k->second)
          n += count;
    return n;
  }
};

TEST_F(PatchBatch, Patch_EveryOperation_InOrder_OneNewVersion) {
  put("a", {{"n", 1}, {"tags", {"x"}}, {"old", "gone"}, {"from", {{"k", 1}}}});
  auto before = get("a");
  auto r = route(patch_of("a", R"([
      {"op":"set","path":"/s","value":"new"},
      {"op":"incr","path":"/n","value":5},
      {"op":"add","path":"/tags/-","value":"y"},
      {"op":"remove","path":"/old"},
      {"op":"replace","path":"/tags/0","value":"w"},
      {"op":"move","from":"/from","path":"/to"}])"));
  ASSERT_TRUE(r) << describe(r.error());
  EXPECT_EQ(r->status, 200);
  auto doc = json::parse(r->body);
  EXPECT_EQ(doc["s"], "new");
  EXPECT_EQ(doc["n"], 6);
  EXPECT_EQ(doc["tags"], (json{"w", "y"}));
  EXPECT_FALSE(doc.contains("old"));
  EXPECT_FALSE(doc.contains("from"));
  EXPECT_EQ(doc["to"], (json{{"k", 1}}));
  EXPECT_NE(doc["_etag"], before["_etag"]);
  EXPECT_EQ(get("a"), doc);
}

TEST_F(PatchBatch, Patch_FalseCondition_412_NothingChanged) {
  put("a", {{"n", 1}});
  auto r = route(patch_of("a", R"({"condition":"FROM c WHERE c.n > 5",
      "operations":[{"op":"incr","path":"/n","value":1}]})"));
  ASSERT_FALSE(r);
  EXPECT_EQ(code_of(r.error()), errc::precondition_failed)
      << describe(r.error());
  EXPECT_EQ(get("a")["n"], 1);
  auto ok = route(patch_of("a", R"({"condition":"FROM c WHERE c.n = 1",
      "operations":[{"op":"incr","path":"/n","value":1}]})"));
  ASSERT_TRUE(ok) << describe(ok.error());
  EXPECT_EQ(get("a")["n"], 2);
}

TEST_F(PatchBatch, Patch_MissingDocument_404) {
  auto r = route(patch_of("nobody", R"([{"op":"set","path":"/a","value":1}])"));
  ASSERT_FALSE(r);
  EXPECT_EQ(code_of(r.error()), errc::not_found) << describe(r.error());
}

TEST_F(PatchBatch, Batch_Applied_200_EachOperationsStatus) {
  put("r", {{"n", 1}});
  auto b = batch_of({op(batch_op_kind::create, "", R"({"id":"a","pk":"p0"})"),
                     op(batch_op_kind::upsert, "", R"({"id":"b","pk":"p0"})"),
                     op(batch_op_kind::read, "a"),
                     op(batch_op_kind::patch, "r",
                        R"([{"op":"incr","path":"/n","value":1}])"),
                     op(batch_op_kind::remove, "b")});
  auto r = batch(b);
  ASSERT_TRUE(r) << describe(r.error());
  EXPECT_EQ(r->status, 200);
  EXPECT_TRUE(r->committed());
  ASSERT_EQ(r->results.size(), 5u);
  std::vector<int> statuses;
  for (const auto& x : r->results)
    statuses.push_back(x.status);
  EXPECT_EQ(statuses, (std::vector<int>{201, 201, 200, 200, 204}));
  EXPECT_EQ(json::parse(r->results[2].body)["id"], "a");
  EXPECT_FALSE(r->session_token.empty());
  EXPECT_EQ(get("r")["n"], 2);
}

TEST_F(PatchBatch, Batch_OneFails_207_NothingApplied) {
  put("taken", {{"n", 1}});
  auto b =
      batch_of({op(batch_op_kind::create, "", R"({"id":"new","pk":"p0"})"),
                op(batch_op_kind::create, "", R"({"id":"taken","pk":"p0"})"),
                op(batch_op_kind::patch, "taken",
                   R"([{"op":"incr","path":"/n","value":1}])")});
  auto r = batch(b);
  ASSERT_TRUE(r) << describe(r.error());
  EXPECT_EQ(r->status, 207);
  EXPECT_FALSE(r->committed());
  ASSERT_EQ(r->results.size(), 3u);
  EXPECT_EQ(r->results[0].status, 424);
  EXPECT_EQ(r->results[1].status, 409);
  EXPECT_EQ(r->results[2].status, 424);
  EXPECT_FALSE(route(point(data_op::read, "new"))) << "a failed batch applied";
  EXPECT_EQ(get("taken")["n"], 1);
}

TEST_F(PatchBatch, BlockingClient_PatchAndBatch) {
  client db{*sys, *eng};
  ASSERT_TRUE(db.upsert(link, R"({"id":"a","pk":"p0","n":1})", pk("p0")));
  auto p =
      db.patch(link, "a", R"([{"op":"incr","path":"/n","value":2}])", pk("p0"));
  ASSERT_TRUE(p) << describe(p.error());
  EXPECT_EQ(json::parse(p->body)["n"], 3);
  // Spelled as docs/embedding.md spells it.
  batch_request req{link, R"(["p0"])"};
  req.operations.push_back({batch_op_kind::read, "a"});
  req.operations.push_back(
      {batch_op_kind::create, "", R"({"id":"line-7","pk":"p0"})"});
  auto b = db.batch(req);
  ASSERT_TRUE(b) << describe(b.error());
  ASSERT_TRUE(b->committed());
  EXPECT_EQ(json::parse(b->results[0].body)["n"], 3);
  EXPECT_EQ(b->results[1].status, 201);
}

// A caller that stops waiting for a write cannot know whether it was
// applied (the engine goes on with it): the blocking client says so by the
// code every write of unknown outcome has, for a plain write and a batch.
TEST_F(PatchBatch, BlockingClient_WriteHeldPastItsTimeout_OutcomeUnknown) {
  emulator::fault_rule hold;
  hold.operation = "write";
  hold.action = emulator::fault_action::delay;
  // Inside the fixture's write timeout (150 ms): only the caller gives up.
  hold.delay = 120ms;
  emu->control().add_fault(hold);
  client db{*sys, *eng, 50ms};
  auto w = db.create(link, R"({"id":"held","pk":"p0"})", pk("p0"));
  ASSERT_FALSE(w) << "the held create was answered";
  EXPECT_EQ(code_of(w.error()), errc::outcome_unknown) << describe(w.error());
  EXPECT_NE(context_of(w.error()).find(outcome_unknown_advice),
            std::string::npos)
      << context_of(w.error());
  EXPECT_NE(context_of(w.error()).find("50 ms"), std::string::npos)
      << context_of(w.error());
  batch_request req{link, R"(["p0"])"};
  req.operations.push_back(
      {batch_op_kind::create, "", R"({"id":"held-2","pk":"p0"})"});
  auto b = db.batch(req);
  ASSERT_FALSE(b) << "the held batch was answered";
  EXPECT_EQ(code_of(b.error()), errc::outcome_unknown) << describe(b.error());
  // A read the caller stopped waiting for is only the caller's timeout.
  emulator::fault_rule slow_read = hold;
  slow_read.operation = "read";
  emu->control().add_fault(slow_read);
  auto r = db.read(link, "held", pk("p0"));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), caf::sec::request_timeout);
  emu->control().clear_faults();
  std::this_thread::sleep_for(500ms); // the held requests are answered
  // Both were applied once: the advice was right to ask for a read-back.
  client patient{*sys, *eng};
  EXPECT_TRUE(patient.read(link, "held", pk("p0")));
  EXPECT_TRUE(patient.read(link, "held-2", pk("p0")));
}

// Bad input: a validation error naming what is wrong, and no request.
TEST_F(PatchBatch, BadInput_RefusedBeforeAnyRequest) {
  put("a", {{"n", 1}});
  emu->control().reset_counters();
  auto expect_refused = [&](caf::error e, const std::string& names) {
    EXPECT_EQ(code_of(e), errc::validation_error) << describe(e);
    EXPECT_NE(context_of(e).find(names), std::string::npos) << context_of(e);
  };
  auto two_keys =
      batch_of({op(batch_op_kind::read, "a"), op(batch_op_kind::read, "b")});
  two_keys.operations[1].partition_key_json = R"(["p1"])";
  auto r1 = batch(two_keys);
  ASSERT_FALSE(r1);
  expect_refused(r1.error(), "is not the batch's");
  std::vector<batch_operation> many;
  for (int i = 0; i < 101; ++i)
    many.push_back(op(batch_op_kind::read, "d" + std::to_string(i)));
  auto r2 = batch(batch_of(many));
  ASSERT_FALSE(r2);
  expect_refused(r2.error(), "at most 100 operations");
  auto big = json{
      {"id", "big"}, {"pk", "p0"}, {"v", std::string(2 * 1024 * 1024, 'x')}};
  auto r3 = batch(batch_of({op(batch_op_kind::upsert, "", big.dump())}));
  ASSERT_FALSE(r3);
  expect_refused(r3.error(), "2 MiB");
  auto eleven = json::array();
  for (int i = 0; i < 11; ++i)
    eleven.push_back({{"op", "set"}, {"path", "/f"}, {"value", i}});
  auto r4 = route(patch_of("a", eleven.dump()));
  ASSERT_FALSE(r4);
  expect_refused(r4.error(), "at most 10");
  auto r5 = route(patch_of("a", R"([{"op":"set","path":"n","value":1}])"));
  ASSERT_FALSE(r5);
  expect_refused(r5.error(), "not a JSON Pointer");
  auto r6 = route(patch_of("a", R"([{"op":"incr","path":"/n","value":"1"}])"));
  ASSERT_FALSE(r6);
  expect_refused(r6.error(), "needs a number");
  EXPECT_EQ(answered("batch"), 0u);
  EXPECT_EQ(answered("patch"), 0u);
  EXPECT_EQ(get("a")["n"], 1) << "nothing partially applied";
}

} // namespace
