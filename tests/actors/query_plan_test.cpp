// Query plan: one detached fetch per key, the LRU, and callers that time out
// while the plan still lands in the cache. Virtual time.

#include "georoute/actors/query_plan.hpp"
#include "georoute/messages/error.hpp"
#include "georoute/transport/codecs.hpp"
#include "tests/actors/actor_fixture.hpp"

// Named after the file as well: the unity build (tests/CMakeLists.txt)
// compiles it in one translation unit with other tests.
namespace query_plan_test {
namespace {

using namespace georoute;
using namespace georoute::test;
using namespace std::chrono_literals;

// A retry actor that records detach requests; the test makes it answer
// request i with `(answer_atom, i, outcome)` (status >= 400: an error).
struct detach_log {
  std::vector<document_request> requests;
  std::vector<caf::typed_response_promise<transport::outcome>> promises;
};

fake_retry_actor::behavior_type fake_retry(fake_retry_actor::pointer self,
                                           std::shared_ptr<detach_log> log) {
  return {
      [](execute_atom, metadata_request&) -> caf::result<transport::outcome> {
        return make_error(errc::validation_error, "unexpected");
      },
      [=](detach_atom, document_request& d) -> caf::result<transport::outcome> {
        log->requests.push_back(d);
        log->promises.push_back(
            self->make_response_promise<transport::outcome>());
        return log->promises.back();
      },
      [](stats_atom) { return retry_stats{}; },
      [=](answer_atom, uint64_t i, transport::outcome& o) {
        if (o.status >= 400)
          log->promises.at(i).deliver(
              make_error(classify_status(o.status, o.substatus), "injected"));
        else
          log->promises.at(i).deliver(o);
      },
  };
}

std::string plan_body(const std::string& expr) {
  query_plan p;
  p.info.order_by = {"Ascending"};
  p.info.order_by_expressions = {expr};
  p.info.rewritten_query = "SELECT c._rid FROM c ORDER BY " + expr;
  p.query_ranges = {{"", "FF", true, false}};
  return transport::encode_query_plan(p);
}

query_plan_request plan_for(std::string query) {
  query_plan_request r;
  r.collection_link = "dbs/d/colls/c";
  r.collection_rid = "wRUaAK6VyWc=";
  r.query = std::move(query);
  r.parameters_json = "[]";
  return r;
}

struct caller_log {
  std::vector<std::string> got;
};

caf::behavior caller(caf::event_based_actor* self, query_plan_actor plans,
                     caf::timespan timeout, query_plan_request req,
                     std::shared_ptr<caller_log> log) {
  self->request(plans, timeout, plan_atom_v, std::move(req))
      .then([log](query_plan&) { log->got.push_back("plan"); },
            [log](caf::error& e) {
              log->got.push_back(e == caf::sec::request_timeout ? "timeout"
                                                                : "error");
            });
  return {[](caf::ok_atom) {}};
}

class QueryPlan : public actor_test {
protected:
  std::shared_ptr<detach_log> log = std::make_shared<detach_log>();
  fake_retry_actor retry;
  query_plan_actor plans;

  void start(size_t cache_size = 1024) {
    retry = sys.spawn(fake_retry, log);
    plans = spawn_query_plan(sys, retry, cache_size);
    run();
  }

  void TearDown() override {
    self->send_exit(plans, caf::exit_reason::user_shutdown);
    self->send_exit(retry, caf::exit_reason::user_shutdown);
    run();
  }

  void answer(size_t i, transport::outcome o) {
    caf::anon_send(retry, answer_atom_v, uint64_t{i}, std::move(o));
    run();
  }

  query_plan_stats stats() {
    query_plan_stats s;
    auto h = self->request(plans, caf::infinite, stats_atom_v);
    run();
    h.receive([&](query_plan_stats x) { s = x; }, [](caf::error&) {});
    return s;
  }

  caf::expected<query_plan> ask(query_plan_request r) {
    caf::expected<query_plan> result{caf::error{}};
    auto h = self->request(plans, caf::infinite, plan_atom_v, std::move(r));
    run();
    return h.receive([&](query_plan& p) { result = p; },
                     [&](caf::error& e) { result = e; }),
           result;
  }
};

TEST_F(QueryPlan, Miss_PostsThePlanRequestThroughDetachOnlyMode) {
  start();
  self->send(plans, plan_atom_v, plan_for("SELECT * FROM c ORDER BY c.n"));
  run();
  ASSERT_EQ(log->requests.size(), 1u);
  const auto& d = log->requests[0];
  EXPECT_EQ(d.what.kind, transport::attempt_kind::query_plan);
  EXPECT_EQ(d.what.resource, "dbs/d/colls/c");
  EXPECT_EQ(d.kind, request_kind::query_plan);
  EXPECT_EQ(d.op, op_kind::read);
  // What the classic gateway sends for it.
  auto wire = transport::to_gateway_request(transport::attempt{d.what});
  EXPECT_EQ(wire.method, "POST");
  EXPECT_EQ(wire.target, "/dbs/d/colls/c/docs");
  auto has = [&](const std::string& k, const std::string& v) {
    for (const auto& h : wire.headers)
      if (h.first == k && h.second == v) return true;
    return false;
  };
  EXPECT_TRUE(has("x-ms-cosmos-is-query-plan-request", "True"));
  EXPECT_TRUE(has("content-type", "application/query+json"));
  EXPECT_EQ(wire.body,
            R"({"parameters":[],"query":"SELECT * FROM c ORDER BY c.n"})");
}

TEST_F(QueryPlan, SecondCaller_IsServedFromTheCache) {
  start();
  auto h = self->request(plans, caf::infinite, plan_atom_v,
                         plan_for("SELECT * FROM c ORDER BY c.n"));
  run();
  answer(0, ok_response(plan_body("c.n")));
  h.receive(
      [](query_plan& p) { EXPECT_EQ(p.info.order_by_expressions[0], "c.n"); },
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  auto again = ask(plan_for("SELECT * FROM c ORDER BY c.n"));
  ASSERT_TRUE(again);
  EXPECT_EQ(log->requests.size(), 1u);
  auto s = stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.fetches, 1u);
}

TEST_F(QueryPlan, ConcurrentCallers_ShareOneFetch) {
  start();
  auto h1 = self->request(plans, caf::infinite, plan_atom_v, plan_for("q"));
  auto h2 = self->request(plans, caf::infinite, plan_atom_v, plan_for("q"));
  run();
  ASSERT_EQ(log->requests.size(), 1u);
  answer(0, ok_response(plan_body("c.a")));
  for (auto* h : {&h1, &h2})
    h->receive([](query_plan&) {},
               [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
}

TEST_F(QueryPlan, CallerTimesOut_PlanStillLandsInTheCache) {
  start();
  auto got = std::make_shared<caller_log>();
  auto c = sys.spawn(caller, plans, caf::timespan{300ms}, plan_for("q"), got);
  run();
  advance(300ms);
  ASSERT_EQ(got->got, std::vector<std::string>{"timeout"});
  answer(0, ok_response(plan_body("c.a")));
  EXPECT_TRUE(ask(plan_for("q")));
  EXPECT_EQ(log->requests.size(), 1u); // served from the cache
  self->send_exit(c, caf::exit_reason::user_shutdown);
}

TEST_F(QueryPlan, DifferentParameters_AreDifferentKeys) {
  start();
  auto a = plan_for("SELECT * FROM c WHERE c.n > @n");
  a.parameters_json = R"([{"name":"@n","value":1}])";
  auto b = a;
  b.parameters_json = R"([{"name":"@n","value":2}])";
  self->send(plans, plan_atom_v, a);
  self->send(plans, plan_atom_v, b);
  run();
  EXPECT_EQ(log->requests.size(), 2u);
}

TEST_F(QueryPlan, Lru_EvictsTheLeastRecentlyUsedPlan) {
  start(2);
  for (size_t i = 0; i < 3; ++i) {
    self->send(plans, plan_atom_v, plan_for("q" + std::to_string(i)));
    run();
    answer(i, ok_response(plan_body("c.a")));
  }
  EXPECT_EQ(stats().evictions, 1u);
  self->send(plans, plan_atom_v, plan_for("q0")); // evicted: fetched again
  run();
  EXPECT_EQ(log->requests.size(), 4u);
}

TEST_F(QueryPlan, FetchError_GoesToTheCaller_AndIsNotCached) {
  start();
  auto h = self->request(plans, caf::infinite, plan_atom_v, plan_for("q"));
  run();
  answer(0, status_response(503));
  h.receive(
      [](query_plan&) { ADD_FAILURE() << "expected an error"; },
      [](caf::error& e) { EXPECT_EQ(code_of(e), errc::service_unavailable); });
  self->send(plans, plan_atom_v, plan_for("q"));
  run();
  EXPECT_EQ(log->requests.size(), 2u);
}

TEST_F(QueryPlan, MalformedPlan_IsAProtocolViolation) {
  start();
  auto h = self->request(plans, caf::infinite, plan_atom_v, plan_for("q"));
  run();
  answer(
      0,
      ok_response(
          R"({"partitionedQueryExecutionInfoVersion":2,"queryInfo":7,"queryRanges":[]})"));
  h.receive([](query_plan&) { ADD_FAILURE() << "expected an error"; },
            [](caf::error& e) {
              EXPECT_EQ(code_of(e), errc::protocol_violation);
              EXPECT_NE(context_of(e).find("queryInfo"), std::string::npos)
                  << context_of(e);
            });
}

TEST_F(QueryPlan, InvalidParameters_AreAValidationError) {
  start();
  auto r = plan_for("q");
  r.parameters_json = R"({"name":"@n"})";
  auto result = ask(r);
  ASSERT_FALSE(result);
  EXPECT_EQ(code_of(result.error()), errc::validation_error);
  EXPECT_TRUE(log->requests.empty());
}

} // namespace
} // namespace query_plan_test
