// Writes that survive a hang, against the emulator: Java's
// CosmosItemWriteRetriesTest table, row by row. The account writes in West
// US and East US (multi-write); West is the first preference. "Applied":
// West applies the write and answers after 1 s, past the write's 150 ms
// timeout (the emulator's delay fault); "not applied": West holds the
// request and never serves it (hang). With write retries the write goes
// again to East; a create's 409 or a conditional replace's 412 whose stored
// document carries the operation's own tracking id is the success it was.

#include "tests/integration/engine_fixture.hpp"

namespace {

using namespace georoute;
using namespace georoute::test;
using namespace std::chrono_literals;
using strings = std::vector<std::string>;

class WriteRetries : public engine_test {
protected:
  bool engine_on = true;
  bool multi_write = true;

  void SetUp() override {
    emu_options.engine.multi_write = multi_write;
    start();
  }

  void configure() override { settings.retry.write_retries = engine_on; }

  void TearDown() override {
    if (emu) emu->control().clear_faults();
    engine_test::TearDown();
  }

  caf::expected<data_response> route(data_request r) {
    return ask<data_response>(eng->router(), 10s, route_atom_v, std::move(r));
  }

  // West's next writes: applied and answered late, or never served.
  void west_writes(bool applied) {
    emulator::fault_rule f;
    f.region = "West US";
    f.operation = "write";
    if (applied) {
      f.action = emulator::fault_action::delay;
      f.delay = 1000ms;
    } else {
      f.action = emulator::fault_action::hang;
    }
    emu->control().add_fault(f);
  }

  static strings attempts_of(const diagnostics& d) {
    strings out;
    for (const auto& a : d.attempts)
      out.push_back(a.region + " " +
                    (a.status ? std::to_string(a.status) : a.failure));
    return out;
  }

  static std::string text(const caf::error& e) { return context_of(e); }

  std::string stored_tracking_id(const std::string& id) {
    auto r = route(point(data_op::read, id));
    EXPECT_TRUE(r) << sys->render(r.error());
    if (!r) return {};
    auto j = nlohmann::json::parse(r->body);
    return j.value("_trackingId", std::string{});
  }
};

TEST_F(WriteRetries, Create_Applied_Tracked_201) {
  west_writes(true);
  auto r = route(point(data_op::create, "c1"));
  ASSERT_TRUE(r) << sys->render(r.error());
  EXPECT_EQ(r->status, 201);
  // West took it and went silent; East said 409 to the second copy; the
  // stored document carries this create's tracking id.
  EXPECT_EQ(attempts_of(r->diag),
            (strings{"West US timeout", "East US 409", "East US 200"}));
  auto body = nlohmann::json::parse(r->body);
  EXPECT_EQ(body["id"], "c1");
  EXPECT_FALSE(body.value("_trackingId", std::string{}).empty());
}

TEST_F(WriteRetries, Create_NotApplied_201) {
  west_writes(false);
  auto r = route(point(data_op::create, "c1"));
  ASSERT_TRUE(r) << sys->render(r.error());
  EXPECT_EQ(r->status, 201);
  EXPECT_EQ(attempts_of(r->diag), (strings{"West US timeout", "East US 201"}));
  EXPECT_FALSE(stored_tracking_id("c1").empty());
}

TEST_F(WriteRetries, Create_SomebodyElsesDocument_409Stands) {
  auto req = point(data_op::create, "c1");
  req.options.write_retries = 0; // created before, without a tracking id
  ASSERT_TRUE(route(req));
  west_writes(true);
  auto r = route(point(data_op::create, "c1"));
  ASSERT_FALSE(r);
  EXPECT_NE(text(r.error()).find("somebody else's"), std::string::npos)
      << text(r.error());
}

TEST_F(WriteRetries, Create_RequestOff_EngineOn_NotRetried) {
  west_writes(true);
  auto req = point(data_op::create, "c1");
  req.options.write_retries = 0;
  auto r = route(req);
  ASSERT_FALSE(r);
  EXPECT_EQ(code_of(r.error()), errc::outcome_unknown);
  EXPECT_NE(text(r.error()).find(outcome_unknown_advice), std::string::npos)
      << text(r.error());
  // The document carries no tracking id: the request's "off" wins.
  emu->control().clear_faults();
  EXPECT_EQ(stored_tracking_id("c1"), "");
}

TEST_F(WriteRetries, ReplaceIfMatch_Applied_200) {
  auto created = route(point(data_op::create, "c1"));
  ASSERT_TRUE(created) << sys->render(created.error());
  ASSERT_FALSE(created->etag.empty());
  west_writes(true);
  auto req = point(data_op::replace, "c1");
  req.options.if_match = created->etag;
  auto r = route(req);
  ASSERT_TRUE(r) << sys->render(r.error());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(attempts_of(r->diag),
            (strings{"West US timeout", "East US 412", "East US 200"}));
}

TEST_F(WriteRetries, ReplaceNoPrecondition_Applied_200) {
  ASSERT_TRUE(route(point(data_op::create, "c1")));
  west_writes(true);
  auto r = route(point(data_op::replace, "c1"));
  ASSERT_TRUE(r) << sys->render(r.error());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(attempts_of(r->diag), (strings{"West US timeout", "East US 200"}));
}

TEST_F(WriteRetries, Upsert_Applied_200) {
  west_writes(true);
  auto r = route(point(data_op::upsert, "c1"));
  ASSERT_TRUE(r) << sys->render(r.error());
  EXPECT_TRUE(r->status == 200 || r->status == 201) << r->status;
  EXPECT_EQ(attempts_of(r->diag).size(), 2u);
}

TEST_F(WriteRetries, Remove_Applied_404SaysPossiblyByThisRemove) {
  ASSERT_TRUE(route(point(data_op::create, "c1")));
  west_writes(true);
  auto r = route(point(data_op::remove, "c1"));
  ASSERT_FALSE(r);
  EXPECT_NE(text(r.error()).find("possibly deleted by this remove"),
            std::string::npos)
      << text(r.error());
}

TEST_F(WriteRetries, Remove_NotApplied_204) {
  ASSERT_TRUE(route(point(data_op::create, "c1")));
  west_writes(false);
  auto r = route(point(data_op::remove, "c1"));
  ASSERT_TRUE(r) << sys->render(r.error());
  EXPECT_EQ(r->status, 204);
}

class WriteRetriesOff : public WriteRetries {
protected:
  void SetUp() override {
    engine_on = false;
    WriteRetries::SetUp();
  }
};

TEST_F(WriteRetriesOff, Create_Applied_NotRetried_NoTrackingId) {
  west_writes(true);
  auto r = route(point(data_op::create, "c1"));
  ASSERT_FALSE(r);
  EXPECT_EQ(code_of(r.error()), errc::outcome_unknown);
  EXPECT_NE(text(r.error()).find(outcome_unknown_advice), std::string::npos)
      << text(r.error());
}

class WriteRetriesSingleWrite : public WriteRetries {
protected:
  void SetUp() override {
    multi_write = false;
    WriteRetries::SetUp();
  }
};

TEST_F(WriteRetriesSingleWrite, NoOtherRegionTakesIt_NotRetried) {
  west_writes(true);
  auto r = route(point(data_op::create, "c1"));
  ASSERT_FALSE(r);
  const auto* d = diagnostics_of(r.error());
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(attempts_of(*d), (strings{"West US timeout"})) << text(r.error());
}

// With write retries on, a create may be hedged (its echo is recognised):
// West applies it and answers late; the hedge to East meets the first
// copy's 409, reads the document back, finds its own tracking id: 201.
TEST_F(WriteRetries, HedgedCreate_EchoOfItsOwnFirstCopy_201) {
  west_writes(true);
  auto req = point(data_op::create, "c1");
  req.options.hedge = 1;
  req.options.hedge_threshold = 50ms;
  auto r = route(req);
  ASSERT_TRUE(r) << sys->render(r.error());
  EXPECT_EQ(r->status, 201);
  EXPECT_EQ(r->diag.hedges, 1u);
  strings went = attempts_of(r->diag);
  ASSERT_GE(went.size(), 3u) << ::testing::PrintToString(went);
  EXPECT_EQ(went[1], "East US 409") << ::testing::PrintToString(went);
  EXPECT_EQ(went[2], "East US 200") << ::testing::PrintToString(went);
}

// -- patch and batch: the same rows
// ----------------------------------------------

data_request patch_of(const std::string& id, const std::string& ops) {
  auto r = point(data_op::read, id);
  r.op = data_op::patch;
  r.body = ops;
  return r;
}

const std::string incr = R"([{"op":"incr","path":"/n","value":1}])";

// The tracked increment: West applies it and goes silent; East meets the
// guard (the document already carries the tracking id) with 412 and
// changes nothing; the read-back says the patch was applied. Applied once.
TEST_F(WriteRetries, PatchIncr_Applied_ReadBackSaysSo_AppliedOnce) {
  ASSERT_TRUE(route(point(data_op::create, "c1"))); // n = 1
  west_writes(true);
  auto r = route(patch_of("c1", incr));
  ASSERT_TRUE(r) << sys->render(r.error());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(attempts_of(r->diag),
            (strings{"West US timeout", "East US 412", "East US 200"}));
  emu->control().clear_faults();
  auto doc = route(point(data_op::read, "c1"));
  ASSERT_TRUE(doc);
  EXPECT_EQ(nlohmann::json::parse(doc->body)["n"], 2) << doc->body;
  auto docs = emu->control().documents("d", "c");
  ASSERT_TRUE(docs);
  ASSERT_EQ(docs->size(), 1u);
  EXPECT_EQ((*docs)[0].writes, 2u) << "the create and one patch";
}

TEST_F(WriteRetries, PatchIncr_NotApplied_200_AppliedOnce) {
  ASSERT_TRUE(route(point(data_op::create, "c1")));
  west_writes(false);
  auto r = route(patch_of("c1", incr));
  ASSERT_TRUE(r) << sys->render(r.error());
  EXPECT_EQ(attempts_of(r->diag), (strings{"West US timeout", "East US 200"}));
  EXPECT_EQ(nlohmann::json::parse(r->body)["n"], 2) << r->body;
}

// Ten increments leave no room for the tracking operation: not sent again.
TEST_F(WriteRetries, PatchOfTenIncrements_Applied_NotSentAgain) {
  ASSERT_TRUE(route(point(data_op::create, "c1")));
  west_writes(true);
  auto ops = nlohmann::json::array();
  for (int i = 0; i < 10; ++i)
    ops.push_back({{"op", "incr"}, {"path", "/n"}, {"value", 1}});
  auto r = route(patch_of("c1", ops.dump()));
  ASSERT_FALSE(r);
  EXPECT_EQ(code_of(r.error()), errc::outcome_unknown);
  EXPECT_NE(text(r.error()).find(outcome_unknown_advice), std::string::npos)
      << text(r.error());
  std::this_thread::sleep_for(1200ms); // West's late answer lands
  emu->control().clear_faults();
  auto doc = route(point(data_op::read, "c1"));
  ASSERT_TRUE(doc);
  EXPECT_EQ(nlohmann::json::parse(doc->body)["n"], 11) << "applied once";
}

// A batch that may have been applied is never sent again, write retries or
// not: its error says so, and it was applied once.
TEST_F(WriteRetries, Batch_Applied_NotSentAgain) {
  ASSERT_TRUE(route(point(data_op::create, "c1")));
  west_writes(true);
  batch_request b;
  b.collection_link = "dbs/d/colls/c";
  b.partition_key_json = R"(["p0"])";
  b.operations.resize(2);
  b.operations[0].kind = batch_op_kind::patch;
  b.operations[0].id = "c1";
  b.operations[0].body = incr;
  b.operations[1].kind = batch_op_kind::create;
  b.operations[1].body = R"({"id":"c2","pk":"p0"})";
  b.options.write_retries = 1;
  auto r = ask<batch_response>(eng->router(), 10s, route_atom_v, b);
  ASSERT_FALSE(r);
  EXPECT_EQ(code_of(r.error()), errc::outcome_unknown);
  EXPECT_NE(text(r.error()).find(outcome_unknown_advice), std::string::npos)
      << text(r.error());
  const auto* d = diagnostics_of(r.error());
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(attempts_of(*d), (strings{"West US timeout"}));
  std::this_thread::sleep_for(1200ms);
  emu->control().clear_faults();
  auto doc = route(point(data_op::read, "c1"));
  ASSERT_TRUE(doc);
  EXPECT_EQ(nlohmann::json::parse(doc->body)["n"], 2);
}

TEST_F(WriteRetries, BodyNotAnObject_ValidationError) {
  auto req = point(data_op::create, "c1");
  req.body = "[1]";
  auto r = route(req);
  ASSERT_FALSE(r);
  EXPECT_NE(text(r.error()).find("JSON object"), std::string::npos)
      << text(r.error());
}

} // namespace
