// The query executor in virtual time: a fake router holds every range query
// until the test answers it, so each test sees what the executor sent and
// answered after each step: a page comes only once the ranges that decide
// it have answered, a split is one lookup of the successors (the router's
// refresh being the only one), a spent budget starts nothing new.

#include "georoute/actors/query_executor.hpp"
#include "georoute/actors/router.hpp"
#include "tests/actors/composite_fakes.hpp"

#include <nlohmann/json.hpp>

namespace {

using namespace georoute;
using namespace georoute::test;
using namespace std::chrono_literals;
using nlohmann::json;

query_plan plan_of(query_info info) {
  query_plan p;
  p.info = std::move(info);
  p.query_ranges = {epk_range{"", "FF", true, false}};
  return p;
}

query_info ordered_by_n() {
  query_info q;
  q.order_by = {"Ascending"};
  q.order_by_expressions = {"c.n"};
  q.rewritten_query =
      "SELECT c._rid, [{\"item\": c.n}] AS orderByItems, c AS payload FROM c "
      "WHERE ({documentdb-formattableorderbyquery-filter}) ORDER BY c.n";
  return q;
}

query_info unordered() {
  query_info q;
  q.rewritten_query = "SELECT * FROM c";
  return q;
}

query_plan_actor::behavior_type fake_plans(query_plan_actor::pointer,
                                           query_plan plan) {
  return {
      [plan](plan_atom, const query_plan_request&) { return plan; },
      [](stats_atom) { return query_plan_stats{}; },
  };
}

// An ORDER BY row of the rewritten query, for document n.
json ob_row(int n) {
  return {{"_rid", "r" + std::to_string(n)},
          {"orderByItems", json::array({{{"item", n}}})},
          {"payload", {{"n", n}}}};
}

data_response page_of(const json& rows, std::string continuation,
                      diagnostics diag = sub_diag(1, 2.5)) {
  data_response r;
  r.status = 200;
  r.body = json{{"Documents", rows}, {"_count", rows.size()}}.dump();
  r.continuation = std::move(continuation);
  r.request_charge = diag.request_charge;
  r.hedge_charge = diag.hedge_charge;
  r.diag = std::move(diag);
  return r;
}

std::vector<int> ns_of(const data_response& r) {
  std::vector<int> out;
  auto body = json::parse(r.body);
  for (const auto& d : body["Documents"])
    out.push_back(d.contains("n") ? d["n"].get<int>() : d.get<int>());
  return out;
}

class QueryExecutor : public composite_test {
protected:
  void start(query_plan plan, size_t parallelism = 4) {
    query_executor_collaborators with;
    with.router = caf::actor_cast<router_actor>(router);
    with.collections = sys.spawn(one_collection_cache, composite_collection());
    with.pkranges = sys.spawn(fake_range_cache, ranges);
    with.plans = sys.spawn(fake_plans, std::move(plan));
    with.parallelism = parallelism;
    exec = spawn_query_executor(sys, with);
    run();
  }

  static data_request query(int32_t page = 100,
                            std::chrono::milliseconds budget = 0ms) {
    data_request q;
    q.op = data_op::query;
    q.collection_link = "dbs/d/colls/c";
    q.body = R"({"query":"SELECT * FROM c ORDER BY c.n"})";
    q.options.max_item_count = page;
    q.options.budget = budget;
    return q;
  }

  auto ask(data_request q) {
    auto h = self->request(exec, caf::infinite, route_atom_v, std::move(q));
    run();
    return h;
  }
};

TEST_F(QueryExecutor, OrderBy_PageWaitsForEveryRange_ThenMergedInOrder) {
  ranges->now = {range_of("0", "", "80"), range_of("1", "80", "FF")};
  start(plan_of(ordered_by_n()));
  auto h = ask(query(4));
  ASSERT_EQ(routed->requests.size(), 2u) << "not one query per range";
  EXPECT_EQ(sent(0).range_id, "0");
  EXPECT_EQ(sent(1).range_id, "1");
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(sent(i).op, data_op::query);
    EXPECT_EQ(sent(i).options.max_item_count, 4);
    auto text = json::parse(sent(i).body)["query"].get<std::string>();
    EXPECT_NE(text.find("WHERE (true)"), std::string::npos) << text;
  }
  answer(0, page_of(json::array({ob_row(0), ob_row(2), ob_row(4), ob_row(6)}),
                    "c0"));
  EXPECT_TRUE(self->mailbox().empty())
      << "answered before range 1, whose rows may sort first";
  EXPECT_EQ(routed->requests.size(), 2u);
  answer(1, page_of(json::array({ob_row(1), ob_row(3)}), ""));
  receive_now(
      self, h,
      [&](data_response& r) {
        EXPECT_EQ(ns_of(r), (std::vector<int>{0, 1, 2, 3}));
        EXPECT_FALSE(r.continuation.empty()) << "rows 4 and 6 are left";
        EXPECT_EQ(r.diag.attempts.size(), 2u);
        EXPECT_DOUBLE_EQ(r.request_charge, 5.0);
        EXPECT_EQ(r.diag.collection_rid, composite_rid);
      },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  EXPECT_EQ(routed->requests.size(), 2u) << "read past the full page";
}

TEST_F(QueryExecutor, Continuation_ResumesEachRangeFromItsOwnToken) {
  ranges->now = {range_of("0", "", "80"), range_of("1", "80", "FF")};
  start(plan_of(ordered_by_n()));
  auto h = ask(query(2));
  answer(0, page_of(json::array({ob_row(0), ob_row(2)}), "c0"));
  answer(1, page_of(json::array({ob_row(1), ob_row(3)}), "c1"));
  std::string token;
  receive_now(
      self, h, [&](data_response& r) { token = r.continuation; },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  ASSERT_FALSE(token.empty());
  self->send_exit(exec, caf::exit_reason::user_shutdown);
  run();
  start(plan_of(ordered_by_n()));
  auto q = query(2);
  q.options.continuation = token;
  auto h2 = ask(q);
  EXPECT_EQ(ranges->map_reads.size(), 1u) << "a resumed query read the map";
  // Rows 2 and 3 are still buffered in the token's restart pages: both
  // ranges read those pages again.
  ASSERT_EQ(routed->requests.size(), 4u);
  EXPECT_EQ(sent(2).options.continuation, "");
  EXPECT_EQ(sent(3).options.continuation, "");
  answer(2, page_of(json::array({ob_row(0), ob_row(2)}), "c0"));
  answer(3, page_of(json::array({ob_row(1), ob_row(3)}), ""));
  // Row 3 waits for range 0's next page, which may hold a smaller one.
  EXPECT_TRUE(self->mailbox().empty());
  ASSERT_EQ(routed->requests.size(), 5u);
  EXPECT_EQ(sent(4).range_id, "0");
  EXPECT_EQ(sent(4).options.continuation, "c0");
  answer(4, page_of(json::array({ob_row(4), ob_row(6)}), ""));
  receive_now(
      self, h2,
      [&](data_response& r) {
        EXPECT_EQ(ns_of(r), (std::vector<int>{2, 3}));
      },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
}

// A continuation that does not decode fails the page before any range
// query or map read.
TEST_F(QueryExecutor, BadContinuation_ValidationError_NothingSent) {
  start(plan_of(ordered_by_n()));
  auto q = query(5);
  q.options.continuation = "not a token";
  auto h = ask(q);
  EXPECT_EQ(routed->requests.size(), 0u);
  EXPECT_EQ(ranges->map_reads.size(), 0u);
  receive_now(
      self, h, [](data_response&) { ADD_FAILURE() << "the query succeeded"; },
      [](caf::error& e) {
        EXPECT_EQ(code_of(e), errc::validation_error);
        EXPECT_NE(context_of(e).find("the continuation does not decode"),
                  std::string::npos)
            << context_of(e);
      });
}

// The router refreshed the map before it answered that range 0 is gone:
// the executor reads the successors from the cache without forcing it, and
// the children continue from the parent's continuation. The page's
// diagnostics count the one refresh.
TEST_F(QueryExecutor, RangeSplits_OneMapRefresh_ChildrenGoOnFromTheParent) {
  start(plan_of(unordered()));
  auto h = ask(query(100));
  ASSERT_EQ(routed->requests.size(), 1u);
  answer(0, page_of(json::array({1, 2}), "p0"));
  ASSERT_EQ(routed->requests.size(), 2u);
  EXPECT_EQ(sent(1).options.continuation, "p0");
  ranges->now = {range_of("1", "", "80", {"0"}),
                 range_of("2", "80", "FF", {"0"})};
  answer(1, range_gone("0"));
  ASSERT_EQ(ranges->overlaps.size(), 1u) << "the successors were not looked up";
  EXPECT_FALSE(ranges->overlaps[0].second)
      << "the executor forced a second refresh of the routing map";
  EXPECT_EQ(ranges->overlaps[0].first.min, "");
  EXPECT_EQ(ranges->overlaps[0].first.max, "FF");
  EXPECT_EQ(ranges->refreshes(), 0);
  // Without ORDER BY the ranges are read in order: child 1, then child 2,
  // each from the parent's continuation.
  ASSERT_EQ(routed->requests.size(), 3u);
  EXPECT_EQ(sent(2).range_id, "1");
  EXPECT_EQ(sent(2).options.continuation, "p0");
  EXPECT_TRUE(self->mailbox().empty());
  answer(2, page_of(json::array({3}), ""));
  ASSERT_EQ(routed->requests.size(), 4u);
  EXPECT_EQ(sent(3).range_id, "2");
  EXPECT_EQ(sent(3).options.continuation, "p0");
  EXPECT_TRUE(self->mailbox().empty());
  answer(3, page_of(json::array({4}), ""));
  receive_now(
      self, h,
      [&](data_response& r) {
        EXPECT_EQ(ns_of(r), (std::vector<int>{1, 2, 3, 4}));
        EXPECT_TRUE(r.continuation.empty());
        EXPECT_EQ(r.diag.metadata_refreshes, 1u) << "one split, one refresh";
        EXPECT_EQ(r.diag.attempts.size(), 4u);
        EXPECT_DOUBLE_EQ(r.request_charge, 2.5 * 3 + 1);
      },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
}

// A cache whose map still holds the gone range: it is read again, and
// after four gone answers in a row the page fails as the range's.
TEST_F(QueryExecutor, RangeGoneFourTimesInARow_Fails_NoRefreshForced) {
  start(plan_of(unordered()));
  auto h = ask(query(100));
  for (uint64_t i = 0; i < 4; ++i) {
    ASSERT_EQ(routed->requests.size(), i + 1);
    EXPECT_EQ(sent(i).range_id, "0");
    answer(i, range_gone("0"));
    EXPECT_EQ(ranges->overlaps.size(), i + 1);
    EXPECT_TRUE(self->mailbox().empty()) << "gave up after " << i + 1;
  }
  ASSERT_EQ(routed->requests.size(), 5u);
  answer(4, range_gone("0"));
  EXPECT_EQ(ranges->overlaps.size(), 4u) << "looked up a fifth time";
  EXPECT_EQ(ranges->refreshes(), 0);
  EXPECT_EQ(routed->requests.size(), 5u);
  receive_now(
      self, h, [](data_response&) { ADD_FAILURE() << "the query succeeded"; },
      [](caf::error& e) {
        EXPECT_EQ(code_of(e), errc::partition_range_gone);
        EXPECT_NE(context_of(e).find("still gone after 4 refreshes"),
                  std::string::npos)
            << context_of(e);
        ASSERT_NE(diagnostics_of(e), nullptr);
        EXPECT_EQ(diagnostics_of(e)->metadata_refreshes, 5u);
        EXPECT_EQ(diagnostics_of(e)->attempts.size(), 5u);
      });
}

// A page of the range ends its streak: four more gone answers after it
// are looked up again.
TEST_F(QueryExecutor, APageEndsTheGoneStreak) {
  start(plan_of(unordered()));
  auto h = ask(query(100));
  uint64_t i = 0;
  for (; i < 3; ++i)
    answer(i, range_gone("0"));
  answer(i++, page_of(json::array({1}), "p1"));
  for (int n = 0; n < 4; ++n)
    answer(i++, range_gone("0"));
  EXPECT_TRUE(self->mailbox().empty()) << "the page did not end the streak";
  EXPECT_EQ(ranges->overlaps.size(), 7u);
  ASSERT_EQ(routed->requests.size(), i + 1);
  EXPECT_EQ(sent(i).options.continuation, "p1");
  answer(i, page_of(json::array({2}), ""));
  receive_now(
      self, h,
      [&](data_response& r) {
        EXPECT_EQ(ns_of(r), (std::vector<int>{1, 2}));
      },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
}

// Each range query gets what is left of the caller's budget; once it is
// spent no new one goes, and the page fails as a spent budget.
TEST_F(QueryExecutor, BudgetSpent_NoNewRangeQuery_DeadlineExceeded) {
  start(plan_of(unordered()));
  auto h = ask(query(100, 300ms));
  ASSERT_EQ(routed->requests.size(), 1u);
  EXPECT_EQ(sent(0).options.budget, 300ms);
  advance(200ms);
  answer(0, page_of(json::array({1}), "p1"));
  ASSERT_EQ(routed->requests.size(), 2u);
  EXPECT_EQ(sent(1).options.budget, 100ms) << "not what is left";
  advance(100ms);
  answer(1, page_of(json::array({2}), "p2"));
  EXPECT_EQ(routed->requests.size(), 2u) << "a range query after the budget";
  receive_now(
      self, h, [](data_response&) { ADD_FAILURE() << "the query succeeded"; },
      [](caf::error& e) {
        EXPECT_EQ(code_of(e), errc::deadline_exceeded) << context_of(e);
        EXPECT_NE(context_of(e).find("operation budget of 300ms spent"),
                  std::string::npos)
            << context_of(e);
        ASSERT_NE(diagnostics_of(e), nullptr);
        EXPECT_EQ(diagnostics_of(e)->attempts.size(), 2u);
        EXPECT_EQ(diagnostics_of(e)->total_us, 300000);
      });
}

TEST_F(QueryExecutor, NoBudget_RangeQueriesGetTheEnginesDefault) {
  start(plan_of(unordered()));
  ask(query(100));
  ASSERT_EQ(routed->requests.size(), 1u);
  EXPECT_EQ(sent(0).options.budget, 0ms);
}

// A range query's failure is the page's: its code, its words after the
// query's, and every diagnostic of it, charges and hedges included.
TEST_F(QueryExecutor, RangeFails_CodeWordsAndDiagnosticsKept) {
  ranges->now = {range_of("0", "", "80"), range_of("1", "80", "FF")};
  start(plan_of(unordered()));
  auto h = ask(query(100));
  ASSERT_EQ(routed->requests.size(), 1u);
  auto ok = sub_diag(2, 1.5);
  ok.hedges = 1;
  ok.hedge_charge = 1.5;
  ok.attempts[1].arm = 1;
  answer(0, page_of(json::array({1}), "", ok));
  ASSERT_EQ(routed->requests.size(), 2u);
  auto bad = sub_diag(3, 2);
  bad.hedges = 1;
  bad.hedge_charge = 2;
  bad.abandoned_arms = 1;
  bad.breaker_transitions = {"West US range 1: closed -> open (read_failures)"};
  answer(1, make_error(errc::service_unavailable,
                       "503 from West US after 3 attempts", bad));
  receive_now(
      self, h, [](data_response&) { ADD_FAILURE() << "the query succeeded"; },
      [](caf::error& e) {
        EXPECT_EQ(code_of(e), errc::service_unavailable);
        EXPECT_EQ(context_of(e), "cross-partition query of dbs/d/colls/c: "
                                 "range 1: 503 from West US after 3 attempts");
        const auto* d = diagnostics_of(e);
        ASSERT_NE(d, nullptr);
        EXPECT_EQ(d->attempts.size(), 5u);
        EXPECT_DOUBLE_EQ(d->request_charge, 3 + 6);
        EXPECT_EQ(d->hedges, 2u);
        EXPECT_DOUBLE_EQ(d->hedge_charge, 1.5 + 2);
        EXPECT_EQ(d->abandoned_arms, 1u);
        EXPECT_EQ(d->breaker_transitions.size(), 1u);
        EXPECT_EQ(d->collection_rid, composite_rid);
      });
}

// An error that is not georoute's (the router went away) is the page's as
// `collaborator_down`.
TEST_F(QueryExecutor, RouterGone_CollaboratorDown) {
  start(plan_of(unordered()));
  auto h = ask(query(100));
  ASSERT_EQ(routed->requests.size(), 1u);
  answer(0, caf::make_error(caf::sec::request_receiver_down));
  receive_now(
      self, h, [](data_response&) { ADD_FAILURE() << "the query succeeded"; },
      [](caf::error& e) {
        EXPECT_EQ(code_of(e), errc::collaborator_down) << caf::to_string(e);
        EXPECT_NE(context_of(e).find("range 0: "), std::string::npos)
            << context_of(e);
      });
}

// The page's diagnostics hold every range query's hedges and their charge.
TEST_F(QueryExecutor, Success_HedgesAndTheirChargeInTheDiagnostics) {
  ranges->now = {range_of("0", "", "80"), range_of("1", "80", "FF")};
  start(plan_of(unordered()));
  auto h = ask(query(100));
  auto hedged = sub_diag(2, 3);
  hedged.hedges = 1;
  hedged.hedge_charge = 3;
  hedged.attempts[1].arm = 1;
  hedged.attempts[1].winner = true;
  answer(0, page_of(json::array({1}), "", sub_diag(1, 1)));
  ASSERT_EQ(routed->requests.size(), 2u);
  answer(1, page_of(json::array({2}), "", hedged));
  receive_now(
      self, h,
      [&](data_response& r) {
        EXPECT_EQ(ns_of(r), (std::vector<int>{1, 2}));
        EXPECT_EQ(r.diag.hedges, 1u);
        EXPECT_DOUBLE_EQ(r.diag.hedge_charge, 3);
        EXPECT_DOUBLE_EQ(r.hedge_charge, 3);
        EXPECT_DOUBLE_EQ(r.request_charge, 7);
        EXPECT_DOUBLE_EQ(r.diag.request_charge, 7);
      },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
}

// The real router and the executor it spawns, with the HTTP port answered
// by hand: a split of the range a query reads costs one refresh of the
// routing map in all, the router's.
class QueryThroughRouter : public actor_test {
protected:
  std::shared_ptr<range_log> ranges = std::make_shared<range_log>();
  std::shared_ptr<table_log> tables = std::make_shared<table_log>();
  std::shared_ptr<refresh_log> refreshes = std::make_shared<refresh_log>();
  std::vector<caf::actor> actors;
  router_actor router;

  void SetUp() override {
    auto locations = sys.spawn(fake_location_cache, tables);
    auto endpoints = sys.spawn(fake_endpoint_manager, refreshes);
    auto collections = sys.spawn(one_collection_cache, composite_collection());
    auto pkranges = sys.spawn(fake_range_cache, ranges);
    auto plans = sys.spawn(fake_plans, plan_of(unordered()));
    router = spawn_router(sys, {},
                          {caf::actor_cast<location_cache_actor>(locations),
                           endpoints,
                           collections,
                           pkranges,
                           http,
                           plans,
                           {}});
    for (auto a : {caf::actor_cast<caf::actor>(locations),
                   caf::actor_cast<caf::actor>(endpoints),
                   caf::actor_cast<caf::actor>(collections),
                   caf::actor_cast<caf::actor>(pkranges),
                   caf::actor_cast<caf::actor>(plans),
                   caf::actor_cast<caf::actor>(router)})
      actors.push_back(a);
    run();
  }

  void TearDown() override {
    for (auto& a : actors)
      self->send_exit(a, caf::exit_reason::user_shutdown);
    run();
  }

  void respond(size_t i, transport::outcome o) {
    http->respond(i, std::move(o));
    run();
  }
};

TEST_F(QueryThroughRouter, RangeSplits_ExactlyOneMapRefresh) {
  data_request q;
  q.op = data_op::query;
  q.collection_link = "dbs/d/colls/c";
  q.body = R"({"query":"SELECT * FROM c"})";
  auto h = self->request(router, caf::infinite, route_atom_v, q);
  run();
  ASSERT_EQ(http->count(), 1u) << "range 0's query was not sent";
  EXPECT_EQ(ranges->refreshes(), 0);
  ranges->now = {range_of("1", "", "80", {"0"}),
                 range_of("2", "80", "FF", {"0"})};
  respond(0, status_response(410, 1002));
  EXPECT_EQ(ranges->refreshes(), 1) << "a split is one refresh, the router's";
  ASSERT_EQ(http->count(), 2u) << "child 1 was not read";
  respond(1, ok_response(R"({"Documents":[1],"_count":1})"));
  ASSERT_EQ(http->count(), 3u) << "child 2 was not read";
  EXPECT_TRUE(self->mailbox().empty());
  respond(2, ok_response(R"({"Documents":[2],"_count":1})"));
  EXPECT_EQ(ranges->refreshes(), 1);
  receive_now(
      self, h,
      [](data_response& r) {
        EXPECT_NE(r.body.find(R"("Documents":[1,2])"), std::string::npos)
            << r.body;
        EXPECT_EQ(r.diag.metadata_refreshes, 1u);
        EXPECT_EQ(r.diag.attempts.size(), 3u);
      },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
}

} // namespace
