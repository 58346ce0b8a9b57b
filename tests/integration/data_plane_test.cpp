// The data plane against the emulator (issue 8, items 1-5, 7, 9): point
// operations routed through the engine's router, every retry path of the
// client retry policy with its fault injected in the emulator, session
// reads under replication lag, throttling, excluded regions, the caller
// timeout during a failover, range-gone re-routing, the operation budget,
// and 64 requests in flight while one region hangs.

#include "tests/integration/engine_fixture.hpp"

#include <nlohmann/json.hpp>
#include <optional>

namespace {

using namespace georoute;
using namespace georoute::test;
using namespace std::chrono_literals;

class DataPlane : public engine_test {
protected:
  /// Read preference for a test that restarts with `restart()`.
  std::vector<std::string> preferred;

  /// The pause before a failover retry, for a test that restarts with
  /// `restart()` (the fixture's is 50 ms).
  std::optional<std::chrono::milliseconds> failover_pause;

  void configure() override {
    if (!preferred.empty()) settings.location.preferred_regions = preferred;
    if (failover_pause)
      settings.retry.failover_retry_interval = *failover_pause;
  }

  void restart() {
    TearDown();
    start();
  }

  caf::expected<data_response> route(data_request r,
                                     caf::timespan timeout = 10s) {
    return ask<data_response>(eng->router(), timeout, route_atom_v,
                              std::move(r));
  }

  // Creates document `id` and returns the response.
  data_response create(const std::string& id, const std::string& pk = "p0") {
    auto r = route(point(data_op::create, id, pk));
    EXPECT_TRUE(r) << sys->render(r.error());
    return r ? *r : data_response{};
  }

  uint64_t served(const std::string& region, int status = 0) {
    auto counters = emu->control().counters();
    uint64_t n = 0;
    for (const auto& [s, count] : counters[region])
      if (status == 0 || s == status) n += count;
    return n;
  }

  std::vector<std::string> regions_of(const diagnostics& d) {
    std::vector<std::string> r;
    for (const auto& a : d.attempts)
      r.push_back(a.region + " " + std::to_string(a.status) +
                  (a.substatus ? "/" + std::to_string(a.substatus) : "") +
                  (a.failure.empty() ? "" : " " + a.failure));
    return r;
  }

  std::string first_read_region() {
    resolve_input in;
    auto r = ask<resolution>(eng->locations(), 5s, resolve_atom_v, in);
    return r ? r->region : "?";
  }
};

TEST_F(DataPlane, PointOperations_RoundTrip_WithDiagnostics) {
  auto c = create("doc1");
  EXPECT_EQ(c.status, 201);
  EXPECT_FALSE(c.etag.empty());
  EXPECT_FALSE(c.session_token.empty());
  ASSERT_EQ(c.diag.attempts.size(), 1u);
  EXPECT_EQ(c.diag.attempts[0].region, "West US");
  EXPECT_FALSE(c.diag.collection_rid.empty());
  EXPECT_FALSE(c.diag.range_id.empty());
  auto read = route(point(data_op::read, "doc1"));
  ASSERT_TRUE(read) << sys->render(read.error());
  EXPECT_EQ(read->status, 200);
  EXPECT_EQ(nlohmann::json::parse(read->body)["n"], 1);
  auto replace = point(data_op::replace, "doc1");
  replace.body = nlohmann::json{{"id", "doc1"}, {"pk", "p0"}, {"n", 2}}.dump();
  replace.options.if_match = read->etag;
  auto replaced = route(replace);
  ASSERT_TRUE(replaced) << sys->render(replaced.error());
  // A replace with the old etag now fails the precondition.
  auto stale = route(replace);
  ASSERT_FALSE(stale);
  EXPECT_EQ(code_of(stale.error()), errc::precondition_failed);
  ASSERT_NE(diagnostics_of(stale.error()), nullptr);
  EXPECT_EQ(diagnostics_of(stale.error())->attempts.size(), 1u);
  auto upserted = route(point(data_op::upsert, "doc2"));
  ASSERT_TRUE(upserted) << sys->render(upserted.error());
  auto removed = route(point(data_op::remove, "doc1"));
  ASSERT_TRUE(removed) << sys->render(removed.error());
  EXPECT_EQ(removed->status, 204);
  auto missing = route(point(data_op::read, "doc1"));
  ASSERT_FALSE(missing);
  EXPECT_EQ(code_of(missing.error()), errc::not_found);
  EXPECT_NE(context_of(missing.error()).find("404 from West US"),
            std::string::npos)
      << context_of(missing.error());
}

TEST_F(DataPlane, IdsWithSpacesPercentQuotesAndUnicode_RoundTrip) {
  // Ids may hold anything but / \\ ? #: what a path cannot carry is
  // percent-encoded on the wire and signed decoded, as the SDKs do.
  for (std::string id : {"a b", "50% off", "caf\xc3\xa9 \"q\" <x>", "a%20b",
                         "plus+equals=&amp"}) {
    SCOPED_TRACE(id);
    auto c = route(point(data_op::create, id));
    ASSERT_TRUE(c) << sys->render(c.error());
    EXPECT_EQ(c->status, 201);
    auto read = route(point(data_op::read, id));
    ASSERT_TRUE(read) << sys->render(read.error());
    EXPECT_EQ(nlohmann::json::parse(read->body)["id"], id);
    auto replace = point(data_op::replace, id);
    replace.body = nlohmann::json{{"id", id}, {"pk", "p0"}, {"n", 2}}.dump();
    auto replaced = route(replace);
    ASSERT_TRUE(replaced) << sys->render(replaced.error());
    auto removed = route(point(data_op::remove, id));
    ASSERT_TRUE(removed) << sys->render(removed.error());
    auto gone = route(point(data_op::read, id));
    ASSERT_FALSE(gone);
    EXPECT_EQ(code_of(gone.error()), errc::not_found);
  }
  // "a%20b" and "a b" are two documents.
  ASSERT_TRUE(route(point(data_op::create, "a b")));
  auto other = route(point(data_op::read, "a%20b"));
  ASSERT_FALSE(other);
  EXPECT_EQ(code_of(other.error()), errc::not_found);
}

TEST_F(DataPlane, BadRequests_AreValidationErrors_WithoutATrip) {
  emu->control().reset_counters();
  auto no_pk = point(data_op::read, "x");
  no_pk.options.partition_key_json.clear();
  auto r = route(no_pk);
  ASSERT_FALSE(r);
  EXPECT_EQ(code_of(r.error()), errc::validation_error);
  EXPECT_NE(context_of(r.error()).find("partition key"), std::string::npos);
  auto bad_body = point(data_op::create, "x");
  bad_body.body = "[1,2]";
  r = route(bad_body);
  ASSERT_FALSE(r);
  EXPECT_EQ(code_of(r.error()), errc::validation_error);
  auto bad_link = point(data_op::read, "x");
  bad_link.collection_link = "dbs/d";
  r = route(bad_link);
  ASSERT_FALSE(r);
  EXPECT_EQ(code_of(r.error()), errc::validation_error);
  // An option that travels as a header value may not hold a line break.
  auto smuggled = point(data_op::read, "x");
  smuggled.options.session_token = "0:1#1\r\nx-ms-evil: 1";
  r = route(smuggled);
  ASSERT_FALSE(r);
  EXPECT_EQ(code_of(r.error()), errc::validation_error);
  EXPECT_NE(context_of(r.error()).find("options.session_token"),
            std::string::npos)
      << context_of(r.error());
  auto multiline_pk = point(data_op::read, "x");
  multiline_pk.options.partition_key_json = "[\n  \"p0\"\n]";
  r = route(multiline_pk);
  ASSERT_FALSE(r);
  EXPECT_EQ(code_of(r.error()), errc::validation_error);
  EXPECT_NE(context_of(r.error()).find("options.partition_key_json"),
            std::string::npos)
      << context_of(r.error());
  EXPECT_EQ(served("West US") + served("East US") + served("North Europe"), 0u);
}

TEST_F(DataPlane, RegionRefuses_ReadFailsOver_MarksIt_NextRequestAvoidsIt) {
  create("doc1");
  ASSERT_TRUE(
      emu->set_region_state("West US", emulator::region_state::offline_refuse));
  // Not hedged: the failover and the mark are what is tested. (Hedged, on a
  // slow machine -- ThreadSanitizer beside a CPU hog -- East's answer can
  // outlast the hedge threshold, and a hedge shows as a third attempt.)
  auto read = point(data_op::read, "doc1");
  read.options.hedge = 0;
  auto r = route(read);
  ASSERT_TRUE(r) << sys->render(r.error());
  auto attempts = regions_of(r->diag);
  std::string seen;
  for (const auto& a : attempts)
    seen += a + "; ";
  ASSERT_EQ(attempts.size(), 2u) << seen;
  EXPECT_EQ(attempts[0], "West US 0 refused");
  EXPECT_EQ(attempts[1], "East US 200");
  EXPECT_NE(r->diag.attempts[0].retry_reason, "");
  EXPECT_EQ(first_read_region(), "East US"); // marked in the location cache
  auto again = route(read);
  ASSERT_TRUE(again);
  EXPECT_EQ(regions_of(again->diag), std::vector<std::string>{"East US 200"});
}

// A refusal is a definite answer: the next region is tried at once, without
// the failover pause. The pause here is a minute, so a read that waited for
// it would outlast the request's 10 s timeout; the same test with a reset
// (not a refusal) keeps the pause (ClientRetryPolicy tests).
TEST_F(DataPlane, RegionRefuses_NextRegionAtOnce_NotAfterTheFailoverPause) {
  failover_pause = std::chrono::minutes{1};
  restart();
  create("doc1");
  ASSERT_TRUE(
      emu->set_region_state("West US", emulator::region_state::offline_refuse));
  auto read = point(data_op::read, "doc1");
  read.options.hedge = 0;
  auto r = route(read, 10s);
  ASSERT_TRUE(r) << sys->render(r.error());
  ASSERT_EQ(regions_of(r->diag),
            (std::vector<std::string>{"West US 0 refused", "East US 200"}));
  EXPECT_NE(r->diag.attempts[0].retry_reason.find("connection refused"),
            std::string::npos)
      << r->diag.attempts[0].retry_reason;
}

TEST_F(DataPlane, ReadGets503_OneCrossRegionRetry) {
  create("doc1");
  emulator::fault_rule f;
  f.region = "West US";
  f.operation = "read";
  f.status = 503;
  emu->control().add_fault(f);
  auto r = route(point(data_op::read, "doc1"));
  ASSERT_TRUE(r) << sys->render(r.error());
  EXPECT_EQ(regions_of(r->diag),
            (std::vector<std::string>{"West US 503", "East US 200"}));
}

TEST_F(DataPlane, ReadGets410_1022_OneCrossRegionRetry) {
  create("doc1");
  emulator::fault_rule f;
  f.region = "West US";
  f.operation = "read";
  f.status = 410;
  f.substatus = 1022;
  emu->control().add_fault(f);
  auto r = route(point(data_op::read, "doc1"));
  ASSERT_TRUE(r) << sys->render(r.error());
  EXPECT_EQ(regions_of(r->diag),
            (std::vector<std::string>{"West US 410/1022", "East US 200"}));
}

TEST_F(DataPlane, ReadGets500_OneCrossRegionRetry_WriteGets500_NoRetry) {
  create("doc1");
  emulator::fault_rule f;
  f.region = "West US";
  f.status = 500;
  emu->control().add_fault(f);
  auto r = route(point(data_op::read, "doc1"));
  ASSERT_TRUE(r) << sys->render(r.error());
  EXPECT_EQ(regions_of(r->diag),
            (std::vector<std::string>{"West US 500", "East US 200"}));
  // A single-master write is not retried on 500: it may have been applied.
  auto w = route(point(data_op::upsert, "doc1"));
  ASSERT_FALSE(w);
  EXPECT_EQ(code_of(w.error()), errc::internal_server_error);
  ASSERT_NE(diagnostics_of(w.error()), nullptr);
  EXPECT_EQ(diagnostics_of(w.error())->attempts.size(), 1u);
}

TEST_F(DataPlane, RegionRemoved_403_1008_ReadGoesToTheNextRegion) {
  create("doc1");
  ASSERT_TRUE(emu->control().remove_region("West US"));
  auto r = route(point(data_op::read, "doc1"));
  ASSERT_TRUE(r) << sys->render(r.error());
  auto attempts = regions_of(r->diag);
  ASSERT_GE(attempts.size(), 2u);
  EXPECT_EQ(attempts.front(), "West US 403/1008");
  // East answers. (On a slow machine the account read after the 403 can
  // outlast the hedge threshold: then the answer is a hedge's, or arm 0's
  // retry while a hedge to another region is still out.)
  const attempt_record* answer = &r->diag.attempts.back();
  for (const auto& a : r->diag.attempts)
    if (a.winner) answer = &a;
  EXPECT_EQ(answer->region + " " + std::to_string(answer->status),
            "East US 200")
      << testing::PrintToString(attempts);
}

TEST_F(DataPlane, CollectionRecreated_410_1000_RefreshesTheCollection) {
  create("doc1");
  emulator::fault_rule f;
  f.region = "West US";
  f.operation = "read";
  f.status = 410;
  f.substatus = 1000;
  f.count = 1;
  emu->control().add_fault(f);
  auto r = route(point(data_op::read, "doc1"));
  ASSERT_TRUE(r) << sys->render(r.error());
  EXPECT_EQ(r->diag.metadata_refreshes, 1u);
  EXPECT_EQ(regions_of(r->diag),
            (std::vector<std::string>{"West US 410/1000", "West US 200"}));
}

TEST_F(DataPlane, WriteRegionMoved_403_3_RefreshesAndRedirects) {
  create("doc1");
  ASSERT_TRUE(
      emu->control().set_write_regions({"East US", "West US", "North Europe"}));
  auto r = route(point(data_op::upsert, "doc1"));
  ASSERT_TRUE(r) << sys->render(r.error());
  auto attempts = regions_of(r->diag);
  ASSERT_GE(attempts.size(), 2u);
  EXPECT_EQ(attempts.front(), "West US 403/3");
  EXPECT_EQ(attempts.back().rfind("East US 20", 0), 0u) << attempts.back();
}

TEST_F(DataPlane, Throttled_429_BacksOffAndSucceeds) {
  create("doc1");
  emulator::fault_rule f;
  f.region = "West US";
  f.operation = "read";
  f.status = 429;
  f.retry_after_ms = 50;
  f.count = 2;
  emu->control().add_fault(f);
  // Not hedged: the back-off in place is what is tested (hedged, a plain 429
  // waits for the threshold and the hedge may answer first).
  auto req = point(data_op::read, "doc1");
  req.options.hedge = 0;
  auto r = route(req);
  ASSERT_TRUE(r) << sys->render(r.error());
  EXPECT_EQ(
      regions_of(r->diag),
      (std::vector<std::string>{"West US 429", "West US 429", "West US 200"}));
  EXPECT_GE(r->diag.total_us, 100'000);
}

TEST_F(DataPlane, ExcludedRegions_AreNotUsed) {
  create("doc1");
  auto req = point(data_op::read, "doc1");
  req.options.excluded_regions = {"West US"};
  auto r = route(req);
  ASSERT_TRUE(r) << sys->render(r.error());
  EXPECT_EQ(regions_of(r->diag), std::vector<std::string>{"East US 200"});
  req.options.excluded_regions = {"west us", "East US"}; // case-insensitive
  r = route(req);
  ASSERT_TRUE(r) << sys->render(r.error());
  EXPECT_EQ(regions_of(r->diag), std::vector<std::string>{"North Europe 200"});
}

TEST_F(DataPlane, EveryRegionExcluded_AfterWriteSwitch_ReadsGoToTheNewWriter) {
  create("doc1");
  ASSERT_TRUE(
      emu->control().set_write_regions({"East US", "West US", "North Europe"}));
  auto acct = ask<database_account>(eng->endpoints(), 5s, refresh_atom_v, true);
  ASSERT_TRUE(acct) << sys->render(acct.error());
  wait_for(
      [&] {
        resolve_input w;
        w.op = op_kind::write;
        auto r = ask<resolution>(eng->locations(), 5s, resolve_atom_v, w);
        return r && r->region == "East US";
      },
      "the write switch to reach the table");
  auto req = point(data_op::read, "doc1");
  req.options.excluded_regions = {"West US", "East US", "North Europe"};
  auto r = route(req);
  ASSERT_TRUE(r) << sys->render(r.error());
  // The fallback is the current first write region, named as such: not the
  // account endpoint, not the old writer.
  ASSERT_EQ(r->diag.attempts.size(), 1u);
  EXPECT_EQ(r->diag.attempts[0].region, "East US");
  EXPECT_EQ(r->diag.attempts[0].endpoint, emu->endpoint("East US"));
}

TEST_F(DataPlane, RangeGone_RefreshesTheRoutingMap_AndReroutes) {
  create("doc1");
  emulator::fault_rule f;
  f.region = "West US";
  f.operation = "read";
  f.status = 410;
  f.substatus = 1002;
  f.count = 1;
  emu->control().add_fault(f);
  auto r = route(point(data_op::read, "doc1"));
  ASSERT_TRUE(r) << sys->render(r.error());
  EXPECT_EQ(r->diag.metadata_refreshes, 1u);
  EXPECT_EQ(regions_of(r->diag),
            (std::vector<std::string>{"West US 410/1002", "West US 200"}));
}

TEST_F(DataPlane, OperationBudget_NoNewAttemptOnceSpent) {
  create("doc1");
  for (auto region : {"West US", "East US", "North Europe"})
    ASSERT_TRUE(
        emu->set_region_state(region, emulator::region_state::offline_refuse));
  auto req = point(data_op::read, "doc1");
  req.options.budget = 300ms;
  auto before = ask<router_stats>(eng->router(), 5s, stats_atom_v);
  ASSERT_TRUE(before);
  auto r = route(req);
  ASSERT_FALSE(r);
  EXPECT_EQ(code_of(r.error()), errc::connection_refused);
  EXPECT_NE(context_of(r.error()).find("operation budget of 300ms spent"),
            std::string::npos)
      << context_of(r.error());
  ASSERT_NE(diagnostics_of(r.error()), nullptr);
  const auto& attempts = diagnostics_of(r.error())->attempts;
  EXPECT_GE(attempts.size(), 2u);
  // Every attempt the router sent is in the answer's diagnostics, and
  // nothing of the operation is left running: no attempt started after the
  // budget ended it.
  auto s = ask<router_stats>(eng->router(), 5s, stats_atom_v);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->attempts - before->attempts, attempts.size());
  EXPECT_EQ(s->live, 0u);
}

TEST_F(DataPlane, CallerTimesOutDuringFailover_RegionIsMarked_NextAvoidsIt) {
  create("doc1");
  ASSERT_TRUE(emu->set_region_state("West US", emulator::region_state::hang));
  // The caller gives up after 100 ms, inside West's first ladder step (not
  // hedged: a hedge to East would answer it before then).
  auto first = point(data_op::read, "doc1");
  first.options.hedge = 0;
  auto r = route(first, 100ms);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), caf::sec::request_timeout);
  // The router's decision runs anyway: West stays silent through its
  // ladder, is marked, the account refreshed.
  wait_for([&] { return first_read_region() == "East US"; },
           "West to be marked");
  emu->control().reset_counters();
  auto again = route(point(data_op::read, "doc1"));
  ASSERT_TRUE(again) << sys->render(again.error());
  EXPECT_EQ(regions_of(again->diag), std::vector<std::string>{"East US 200"});
  EXPECT_EQ(served("West US"), 0u);
}

TEST_F(DataPlane, SessionRead_UnderReplicationLag_RetriesThenServes) {
  // Reads prefer East, which lags; writes go to West (single-write).
  preferred = {"East US", "West US", "North Europe"};
  restart();
  emu->control().set_replication_lag(60s);
  auto c = create("doc1");
  auto req = point(data_op::read, "doc1");
  req.options.consistency_level = "Session";
  auto r = route(req);
  ASSERT_TRUE(r) << sys->render(r.error());
  auto attempts = regions_of(r->diag);
  ASSERT_GE(attempts.size(), 2u);
  EXPECT_EQ(attempts.front(), "East US 404/1002");
  EXPECT_EQ(attempts.back(), "West US 200");
}

// A multi-write account: document writes go to the preferred region and a
// 503 on a write gets its one cross-region retry; a session read that keeps
// missing walks the regions.
class MultiWrite : public DataPlane {
protected:
  void SetUp() override {
    emu_options.engine.multi_write = true;
    DataPlane::SetUp();
  }

  // The engine has just read the account as single-write; then it is
  // multi-write again, and West US answers every write 503.
  void stale_single_write_view_west_503() {
    create("doc1");
    emu->control().set_multi_write(false);
    auto a = ask<database_account>(eng->endpoints(), 5s, refresh_atom_v, true);
    ASSERT_TRUE(a);
    ASSERT_FALSE(a->enable_multiple_write_locations);
    // The single-write table reaches the router a hop after the endpoint
    // manager answered: a round trip through the location cache, then one
    // through the router, and the router has it (each mailbox takes what
    // was sent to it before, in order). Without them the write could be
    // routed on the multi-write table, and its 503 retried without a read.
    ASSERT_TRUE(
        ask<resolution>(eng->locations(), 5s, resolve_atom_v, resolve_input{}));
    ASSERT_TRUE(ask<router_stats>(eng->router(), 5s, stats_atom_v));
    emu->control().set_multi_write(true); // the engine has not seen this yet
    emulator::fault_rule f;
    f.region = "West US";
    f.operation = "write";
    f.status = 503;
    emu->control().add_fault(f);
  }
};

TEST_F(MultiWrite, WriteGets503_RetriedInTheNextWriteRegion) {
  create("doc1");
  emulator::fault_rule f;
  f.region = "West US";
  f.operation = "write";
  f.status = 503;
  emu->control().add_fault(f);
  auto r = route(point(data_op::upsert, "doc1"));
  ASSERT_TRUE(r) << sys->render(r.error());
  EXPECT_EQ(regions_of(r->diag),
            (std::vector<std::string>{"West US 503", "East US 200"}));
}

// Just after a single-write moment ends, the engine still sees the account
// as single-write, and the hub answers writes 503.
// ClientRetryPolicy.ShouldRetryOnUnavailableEndpointStatusCodes would not
// retry; georoute reads the account again and retries once, on the table the
// refresh produced (not the one it replaced, which reaches the router a hop
// later): multi-write again, so the retry goes to another write region than
// the one that answered 503.
TEST_F(MultiWrite, StaleSingleWriteView_WriteGets503_RefreshedAndRetried) {
  stale_single_write_view_west_503();
  auto before = ask<endpoint_manager_stats>(eng->endpoints(), 5s, stats_atom_v);
  ASSERT_TRUE(before);
  auto r = route(point(data_op::upsert, "doc1"));
  ASSERT_TRUE(r) << sys->render(r.error());
  EXPECT_EQ(regions_of(r->diag),
            (std::vector<std::string>{"West US 503", "East US 200"}));
  // The account was read again between the attempts, and shows multi-write.
  auto after = ask<endpoint_manager_stats>(eng->endpoints(), 5s, stats_atom_v);
  ASSERT_TRUE(after);
  EXPECT_EQ(after->fetches_started, before->fetches_started + 1);
  EXPECT_EQ(after->multi_write_changes, before->multi_write_changes + 1);
}

// The same at the library's minimum refresh interval (15 s): the account
// was read a moment before the write, so a plain refresh would be skipped
// and answer the single-write view the write was routed on; the retry
// would go back to West and fail. The fresh refresh waits for a new read
// (about a second after the last one) and the retry goes east.
class MultiWriteDefaultInterval : public MultiWrite {
protected:
  void configure() override {
    MultiWrite::configure();
    settings.refresh.min_interval = config::refresh_options{}.min_interval;
  }
};

TEST_F(MultiWriteDefaultInterval,
       StaleSingleWriteView_JustRead_RetryWaitsForANewRead) {
  stale_single_write_view_west_503();
  auto r = route(point(data_op::upsert, "doc1"));
  ASSERT_TRUE(r) << sys->render(r.error());
  EXPECT_EQ(regions_of(r->diag),
            (std::vector<std::string>{"West US 503", "East US 200"}));
  auto stats = ask<endpoint_manager_stats>(eng->endpoints(), 5s, stats_atom_v);
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->refreshes_deferred, 1u);
  EXPECT_EQ(stats->fetches_started, 3u) << "the first read, the test's, the "
                                           "retry's";
}

TEST_F(MultiWrite, SessionReadThatKeepsMissing_WalksTheRegions) {
  create("doc1");
  emulator::fault_rule f;
  f.operation = "read";
  f.status = 404;
  f.substatus = 1002;
  f.count = 2;
  emu->control().add_fault(f);
  auto req = point(data_op::read, "doc1");
  req.options.consistency_level = "Session";
  auto r = route(req);
  ASSERT_TRUE(r) << sys->render(r.error());
  EXPECT_EQ(regions_of(r->diag),
            (std::vector<std::string>{"West US 404/1002", "East US 404/1002",
                                      "North Europe 200"}));
}

TEST_F(DataPlane, SixtyFourInFlight_OneRegionHangs_OthersKeepAnswering) {
  for (int i = 0; i < 8; ++i)
    create("doc" + std::to_string(i), "p" + std::to_string(i));
  ASSERT_TRUE(emu->set_region_state("West US", emulator::region_state::hang));
  auto out = std::make_shared<replies>();
  auto router = eng->router();
  for (int i = 0; i < 64; ++i) {
    auto req = point(data_op::read, "doc" + std::to_string(i % 8),
                     "p" + std::to_string(i % 8));
    // A third of them go to the hung region first and fail over; the rest
    // exclude it and must not wait behind them.
    if (i % 3 != 0) req.options.excluded_regions = {"West US"};
    sys->spawn([=](caf::event_based_actor* self) {
      self->request(router, 10s, route_atom_v, req)
          .then([=](data_response&) { out->add("ok"); },
                [=](caf::error& e) { out->add(describe(e)); });
    });
  }
  wait_for([&] { return out->all().size() == 64; }, "64 answers");
  auto got = out->all();
  EXPECT_EQ(std::count(got.begin(), got.end(), "ok"), 64)
      << "first failure: "
      << *std::find_if(got.begin(), got.end(),
                       [](const std::string& s) { return s != "ok"; });
}

} // namespace
