// A host receives the engine's metrics: reads and writes against the
// emulator, then the snapshot by `engine::metrics()` and by message from an
// actor, its counters and its histograms per operation and region, its
// Prometheus text; an actor that is down is missing from it. Every attempt's
// diagnostics carry the service's activity id, and every request the
// emulator saw carried georoute's User-Agent.

#include "tests/integration/engine_fixture.hpp"
#include "georoute/transport/version.hpp"

#include <set>

namespace {

using namespace georoute;
using namespace georoute::test;
using namespace std::chrono_literals;

class Metrics : public engine_test {
protected:
  // The counts below are exact: a hedge (a slow read under a sanitizer)
  // would add an attempt, and its late answer could change the second
  // snapshot.
  void configure() override { settings.hedging.enabled = false; }

  caf::expected<data_response> route(data_request r) {
    return ask<data_response>(eng->router(), 10s, route_atom_v, std::move(r));
  }

  static const operation_series* find(const engine_metrics& m,
                                      const std::string& op,
                                      const std::string& region, int status) {
    for (const auto& s : m.operations)
      if (s.operation == op && s.region == region && s.status_code == status)
        return &s;
    return nullptr;
  }

  static uint64_t sum(const std::vector<uint64_t>& v) {
    uint64_t n = 0;
    for (auto x : v)
      n += x;
    return n;
  }
};

// Asks the supervisor for a snapshot as an actor does, and hands it over.
caf::behavior
metrics_caller(caf::event_based_actor* self, engine_supervisor_actor sup,
               std::shared_ptr<std::promise<engine_metrics>> out) {
  self->request(sup, 5s, metrics_atom_v)
      .then(
          [=](engine_metrics& m) {
            out->set_value(std::move(m));
            self->quit();
          },
          [=](caf::error&) {
            out->set_value(engine_metrics{});
            self->quit();
          });
  return {[](caf::ok_atom) {}};
}

TEST_F(Metrics,
       HostReceivesMetrics_CountersAndHistogramsPerOperationAndRegion) {
  std::vector<data_response> answers;
  auto keep = [&](caf::expected<data_response> r) {
    ASSERT_TRUE(r) << sys->render(r.error());
    answers.push_back(*r);
  };
  keep(route(point(data_op::create, "m1")));
  keep(route(point(data_op::read, "m1")));
  keep(route(point(data_op::read, "m1")));
  keep(route(point(data_op::upsert, "m1")));
  auto missing = route(point(data_op::read, "nope"));
  ASSERT_FALSE(missing);
  ASSERT_EQ(code_of(missing.error()), errc::not_found);
  // West US refuses: the next read is answered by East US.
  ASSERT_TRUE(
      emu->set_region_state("West US", emulator::region_state::offline_refuse));
  keep(route(point(data_op::read, "m1")));
  ASSERT_EQ(answers.back().diag.attempts.back().region, "East US");

  auto m = eng->metrics();
  EXPECT_TRUE(m.missing.empty());
  // Counters of every actor.
  EXPECT_EQ(m.router.operations, 6u);
  EXPECT_EQ(m.router.succeeded, 5u);
  EXPECT_EQ(m.router.failed, 1u);
  EXPECT_EQ(m.router.attempts, 7u); // the refused attempt too
  EXPECT_GE(m.router.marks, 1u);
  EXPECT_GE(m.endpoint_manager.fetches_succeeded, 1u);
  EXPECT_GE(m.collection_cache.fetches, 1u);
  EXPECT_GE(m.pkrange_cache.misses, 1u);
  EXPECT_GE(m.retry.operations, 2u); // the collection and its ranges
  EXPECT_EQ(m.engine.restarts, 0u);

  // Histograms per operation, region and status.
  auto* reads_west = find(m, "read_item", "West US", 200);
  auto* reads_east = find(m, "read_item", "East US", 200);
  auto* not_found = find(m, "read_item", "West US", 404);
  auto* creates = find(m, "create_item", "West US", 201);
  auto* upserts = find(m, "upsert_item", "West US", 200);
  ASSERT_NE(reads_west, nullptr);
  ASSERT_NE(reads_east, nullptr);
  ASSERT_NE(not_found, nullptr);
  ASSERT_NE(creates, nullptr);
  ASSERT_NE(upserts, nullptr);
  EXPECT_EQ(m.operations.size(), 5u);
  EXPECT_EQ(reads_west->count, 2u);
  EXPECT_EQ(reads_east->count, 1u);
  EXPECT_EQ(not_found->count, 1u);
  EXPECT_EQ(not_found->error_type, "not_found");
  EXPECT_EQ(reads_west->error_type, "");
  EXPECT_EQ(creates->count, 1u);
  EXPECT_EQ(upserts->count, 1u);
  for (const auto& s : m.operations) {
    SCOPED_TRACE(s.operation + " " + s.region);
    EXPECT_EQ(s.duration_buckets.size(), operation_duration_bounds.size() + 1);
    EXPECT_EQ(sum(s.duration_buckets), s.count);
    EXPECT_EQ(sum(s.request_charge_buckets), s.count);
    EXPECT_GT(s.duration_sum, 0.0);
    EXPECT_LT(s.duration_sum, 10.0 * static_cast<double>(s.count));
  }
  // The charge is every attempt's, as the answers say.
  EXPECT_DOUBLE_EQ(reads_west->request_charge_sum,
                   answers[1].request_charge + answers[2].request_charge);
  EXPECT_DOUBLE_EQ(creates->request_charge_sum, answers[0].request_charge);
  EXPECT_GT(creates->request_charge_sum, 0.0);

  // The same by message, from an actor.
  auto got = std::make_shared<std::promise<engine_metrics>>();
  auto fut = got->get_future();
  sys->spawn(metrics_caller, eng->supervisor(), got);
  ASSERT_EQ(fut.wait_for(10s), std::future_status::ready);
  auto by_message = fut.get();
  EXPECT_TRUE(by_message.missing.empty());
  EXPECT_EQ(by_message.router.operations, 6u);
  EXPECT_EQ(by_message.operations.size(), 5u);
  EXPECT_EQ(to_prometheus(by_message), to_prometheus(m));

  // What a scraper reads.
  auto text = to_prometheus(m);
  EXPECT_NE(text.find("db_client_operation_duration_seconds_count{"
                      "db_system_name=\"azure.cosmosdb\","
                      "db_operation_name=\"read_item\","
                      "cloud_region=\"West US\","
                      "db_response_status_code=\"200\"} 2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("db_client_operation_duration_seconds_count{"
                      "db_system_name=\"azure.cosmosdb\","
                      "db_operation_name=\"read_item\","
                      "cloud_region=\"East US\","
                      "db_response_status_code=\"200\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("georoute_router_operations_total 6\n"),
            std::string::npos);
  EXPECT_NE(text.find("georoute_actor_up{actor=\"georoute.query_plan\"} 1\n"),
            std::string::npos);
}

TEST_F(Metrics, EveryAttempt_CarriesTheActivityIdOfItsAnswer) {
  auto c = route(point(data_op::create, "a1"));
  ASSERT_TRUE(c) << sys->render(c.error());
  auto r = route(point(data_op::read, "a1"));
  ASSERT_TRUE(r) << sys->render(r.error());
  auto e = route(point(data_op::read, "none"));
  ASSERT_FALSE(e);
  ASSERT_NE(diagnostics_of(e.error()), nullptr);
  std::set<std::string> ids;
  const diagnostics* all[] = {&c->diag, &r->diag, diagnostics_of(e.error())};
  for (const auto* d : all) {
    ASSERT_EQ(d->attempts.size(), 1u);
    const auto& id = d->attempts[0].activity_id;
    EXPECT_EQ(id.size(), 36u) << id; // a GUID, one per response
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 3u);
  // An attempt that got no answer has none.
  ASSERT_TRUE(
      emu->set_region_state("West US", emulator::region_state::offline_refuse));
  auto f = route(point(data_op::read, "a1"));
  ASSERT_TRUE(f) << sys->render(f.error());
  ASSERT_EQ(f->diag.attempts.size(), 2u);
  EXPECT_EQ(f->diag.attempts[0].activity_id, "");
  EXPECT_EQ(f->diag.attempts[1].activity_id.size(), 36u);
}

// Each attempt names the HTTP client's connection that carried it and how
// many requests it had answered before: the second read in the region goes
// out on the create's kept-alive connection.
TEST_F(Metrics, EveryAttempt_NamesItsConnection) {
  auto c = route(point(data_op::create, "k1"));
  ASSERT_TRUE(c) << sys->render(c.error());
  auto r = route(point(data_op::read, "k1"));
  ASSERT_TRUE(r) << sys->render(r.error());
  ASSERT_EQ(c->diag.attempts.size(), 1u);
  ASSERT_EQ(r->diag.attempts.size(), 1u);
  const auto& first = c->diag.attempts[0];
  const auto& second = r->diag.attempts[0];
  EXPECT_NE(first.connection, 0u);
  EXPECT_EQ(second.endpoint, first.endpoint);
  EXPECT_EQ(second.connection, first.connection);
  EXPECT_GT(second.connection_served, first.connection_served);
}

TEST_F(Metrics, EveryRequest_CarriesGeorouteUserAgent) {
  ASSERT_TRUE(route(point(data_op::create, "u1")));
  ASSERT_TRUE(route(point(data_op::read, "u1")));
  auto agents = emu->control().user_agents();
  ASSERT_EQ(agents.size(), 1u) << "agents seen: " << agents.begin()->first
                               << (agents.size() > 1 ? " and more" : "");
  EXPECT_EQ(agents.begin()->first, "georoute/" GEOROUTE_PROJECT_VERSION);
  EXPECT_EQ(transport::user_agent(), "georoute/" GEOROUTE_PROJECT_VERSION);
  // The account reads, the collection, its ranges, the documents.
  EXPECT_GE(agents.begin()->second, 5u);
}

class MetricsNoRestarts : public Metrics {
protected:
  void configure_engine(engine_options& eo) override { eo.max_restarts = 0; }
};

TEST_F(MetricsNoRestarts, ActorDown_MissingFromSnapshot_RestStillThere) {
  ASSERT_TRUE(route(point(data_op::create, "k1")));
  auto plans = caf::actor_cast<caf::actor>(eng->query_plans());
  kill(plans);
  wait_for([&] { return eng->stats().gave_up == 1; },
           "the supervisor to give up");
  auto m = eng->metrics();
  EXPECT_EQ(m.missing, std::vector<std::string>{"georoute.query_plan"});
  EXPECT_EQ(m.engine.gave_up, 1u);
  EXPECT_EQ(m.router.operations, 1u);
  auto text = to_prometheus(m);
  EXPECT_NE(text.find("georoute_actor_up{actor=\"georoute.query_plan\"} 0\n"),
            std::string::npos);
  EXPECT_EQ(text.find("georoute_query_plan_"), std::string::npos);
  EXPECT_NE(text.find("georoute_engine_gave_up_total 1\n"), std::string::npos);
}

TEST_F(Metrics, EngineDown_SnapshotNamesEveryActorMissing) {
  ASSERT_TRUE(route(point(data_op::create, "s1")));
  ASSERT_TRUE(eng->stop());
  auto m = eng->metrics();
  EXPECT_EQ(m.missing.size(), 6u);
  EXPECT_TRUE(m.operations.empty());
}

} // namespace
