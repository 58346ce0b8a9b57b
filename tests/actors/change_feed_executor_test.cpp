// The change-feed executor in virtual time: a fake router holds every read
// until the test answers it, so each test sees the executor's next step
// after each answer: the next cursor's read, the lookup of a split range's
// successors (never a forced refresh: the router refreshed the map before
// it answered that the range is gone), the page.

#include "georoute/actors/change_feed_executor.hpp"
#include "tests/actors/composite_fakes.hpp"

#include <nlohmann/json.hpp>

namespace {

using namespace georoute;
using namespace georoute::test;
using namespace std::chrono_literals;

data_response not_modified(const std::string& etag,
                           diagnostics diag = sub_diag(1, 1)) {
  data_response r;
  r.status = 304;
  r.etag = etag;
  diag.attempts[0].status = 304;
  r.request_charge = diag.request_charge;
  r.diag = std::move(diag);
  return r;
}

data_response changes(std::vector<int> lsns,
                      diagnostics diag = sub_diag(1, 2)) {
  nlohmann::json docs = nlohmann::json::array();
  for (auto lsn : lsns)
    docs.push_back({{"id", "d" + std::to_string(lsn)}, {"_lsn", lsn}});
  data_response r;
  r.status = 200;
  r.etag = "\"" + std::to_string(lsns.back()) + "\"";
  r.body = nlohmann::json{{"Documents", docs}, {"_count", docs.size()}}.dump();
  r.request_charge = diag.request_charge;
  r.diag = std::move(diag);
  return r;
}

class ChangeFeedExecutor : public composite_test {
protected:
  auto ask(std::chrono::milliseconds budget = 0ms) {
    change_feed_collaborators with;
    with.router = caf::actor_cast<router_actor>(router);
    with.collections = sys.spawn(one_collection_cache, composite_collection());
    with.pkranges = sys.spawn(fake_range_cache, ranges);
    exec = spawn_change_feed_executor(sys, with);
    change_feed_request req;
    req.collection_link = "dbs/d/colls/c";
    req.start = feed_start::beginning;
    req.max_item_count = 10;
    req.options.budget = budget;
    auto h = self->request(exec, caf::infinite, route_atom_v, std::move(req));
    run();
    return h;
  }
};

// Cursors are read front first, one at a time; the first with changes is
// the page, with the diagnostics of every read.
TEST_F(ChangeFeedExecutor, ReadsCursorsInTurn_FirstWithChangesIsThePage) {
  ranges->now = {range_of("0", "", "80"), range_of("1", "80", "FF")};
  auto h = ask();
  ASSERT_EQ(routed->requests.size(), 1u);
  EXPECT_EQ(sent(0).op, data_op::change_feed);
  EXPECT_EQ(sent(0).range_id, "0");
  answer(0, not_modified("\"3\""));
  EXPECT_TRUE(self->mailbox().empty()) << "answered before range 1 was read";
  ASSERT_EQ(routed->requests.size(), 2u);
  EXPECT_EQ(sent(1).range_id, "1");
  auto read = sub_diag(1, 2);
  read.range_id = "1";
  answer(1, changes({4, 5}, read));
  receive_now(
      self, h,
      [&](change_feed_page& p) {
        EXPECT_EQ(p.count, 2u);
        EXPECT_FALSE(p.caught_up);
        EXPECT_EQ(p.ranges, 2u);
        EXPECT_EQ(p.diag.attempts.size(), 2u);
        EXPECT_DOUBLE_EQ(p.request_charge, 3);
        EXPECT_EQ(p.diag.range_id, "1");
        EXPECT_EQ(p.diag.collection_rid, composite_rid);
      },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  EXPECT_EQ(routed->requests.size(), 2u);
}

// The router refreshed the map before it answered that range 0 is gone:
// the executor reads the ranges under the cursor from the cache without
// forcing it, cuts the cursor and reads the first child. One split, one
// refresh.
TEST_F(ChangeFeedExecutor, RangeSplits_OneMapRefresh_CursorCut) {
  auto h = ask();
  ASSERT_EQ(routed->requests.size(), 1u);
  EXPECT_EQ(sent(0).range_id, "0");
  ranges->now = {range_of("1", "", "80", {"0"}),
                 range_of("2", "80", "FF", {"0"})};
  answer(0, range_gone("0"));
  ASSERT_EQ(ranges->overlaps.size(), 2u);
  EXPECT_FALSE(ranges->overlaps[1].second)
      << "the executor forced a second refresh of the routing map";
  EXPECT_EQ(ranges->refreshes(), 0);
  ASSERT_EQ(routed->requests.size(), 2u);
  EXPECT_EQ(sent(1).range_id, "1");
  EXPECT_TRUE(self->mailbox().empty());
  answer(1, changes({7}));
  receive_now(
      self, h,
      [&](change_feed_page& p) {
        EXPECT_EQ(p.count, 1u);
        EXPECT_EQ(p.ranges, 2u) << "the cursor was not cut";
        EXPECT_EQ(p.diag.metadata_refreshes, 1u) << "one split, one refresh";
        EXPECT_EQ(p.diag.attempts.size(), 2u);
        EXPECT_DOUBLE_EQ(p.request_charge, 1 + 2);
      },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
}

TEST_F(ChangeFeedExecutor, RangeGoneFourTimesInARow_Fails) {
  auto h = ask();
  for (uint64_t i = 0; i < 4; ++i) {
    ASSERT_EQ(routed->requests.size(), i + 1);
    answer(i, range_gone("0"));
    EXPECT_TRUE(self->mailbox().empty()) << "gave up after " << i + 1;
  }
  ASSERT_EQ(routed->requests.size(), 5u);
  answer(4, range_gone("0"));
  EXPECT_EQ(routed->requests.size(), 5u);
  EXPECT_EQ(ranges->refreshes(), 0);
  receive_now(
      self, h, [](change_feed_page&) { ADD_FAILURE() << "a page"; },
      [](caf::error& e) {
        EXPECT_EQ(code_of(e), errc::partition_range_gone);
        EXPECT_NE(context_of(e).find("still gone after 4 refreshes"),
                  std::string::npos)
            << context_of(e);
        ASSERT_NE(diagnostics_of(e), nullptr);
        EXPECT_EQ(diagnostics_of(e)->metadata_refreshes, 5u);
      });
}

TEST_F(ChangeFeedExecutor, BudgetSpent_NoNewRead_DeadlineExceeded) {
  ranges->now = {range_of("0", "", "80"), range_of("1", "80", "FF")};
  auto h = ask(300ms);
  ASSERT_EQ(routed->requests.size(), 1u);
  EXPECT_EQ(sent(0).options.budget, 300ms);
  advance(300ms);
  answer(0, not_modified("\"3\""));
  EXPECT_EQ(routed->requests.size(), 1u) << "a read after the budget";
  receive_now(
      self, h, [](change_feed_page&) { ADD_FAILURE() << "a page"; },
      [](caf::error& e) {
        EXPECT_EQ(code_of(e), errc::deadline_exceeded) << context_of(e);
        EXPECT_NE(context_of(e).find("operation budget of 300ms spent"),
                  std::string::npos)
            << context_of(e);
        ASSERT_NE(diagnostics_of(e), nullptr);
        EXPECT_EQ(diagnostics_of(e)->attempts.size(), 1u);
      });
}

TEST_F(ChangeFeedExecutor, ReadFails_CodeWordsAndDiagnosticsKept) {
  auto h = ask();
  ASSERT_EQ(routed->requests.size(), 1u);
  auto bad = sub_diag(2, 1.5);
  bad.hedges = 1;
  bad.hedge_charge = 1.5;
  bad.abandoned_arms = 1;
  answer(0, make_error(errc::service_unavailable, "503 from West US", bad));
  receive_now(
      self, h, [](change_feed_page&) { ADD_FAILURE() << "a page"; },
      [](caf::error& e) {
        EXPECT_EQ(code_of(e), errc::service_unavailable);
        EXPECT_EQ(context_of(e), "change feed of dbs/d/colls/c: reading [, "
                                 "FF): 503 from West US");
        const auto* d = diagnostics_of(e);
        ASSERT_NE(d, nullptr);
        EXPECT_EQ(d->attempts.size(), 2u);
        EXPECT_DOUBLE_EQ(d->request_charge, 3);
        EXPECT_EQ(d->hedges, 1u);
        EXPECT_DOUBLE_EQ(d->hedge_charge, 1.5);
        EXPECT_EQ(d->abandoned_arms, 1u);
      });
}

} // namespace
