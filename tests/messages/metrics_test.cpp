// The metrics snapshot and its Prometheus rendering: a small snapshot against
// a hand-checked text; every field of every stats struct in the field tables
// exactly once and in the rendering; missing actors; label escaping; the
// snapshot survives CAF's serializer.

#include "georoute/messages/metrics.hpp"
#include "georoute/messages/types.hpp"

#include <caf/all.hpp>
#include <gtest/gtest.h>
#include <set>
#include <sstream>
#include <type_traits>

namespace georoute {
namespace {

operation_series series(std::string op, std::string region, int status,
                        std::string error, std::vector<uint64_t> durations,
                        double duration_sum, std::vector<uint64_t> charges,
                        double charge_sum) {
  operation_series s;
  s.operation = std::move(op);
  s.region = std::move(region);
  s.status_code = status;
  s.error_type = std::move(error);
  for (auto n : durations)
    s.count += n;
  s.duration_buckets = std::move(durations);
  s.duration_sum = duration_sum;
  s.request_charge_buckets = std::move(charges);
  s.request_charge_sum = charge_sum;
  return s;
}

engine_metrics small_snapshot() {
  engine_metrics m;
  m.engine.restarts = 3;
  m.missing.assign(std::begin(metrics_actor_names),
                   std::end(metrics_actor_names));
  // Two reads in West US (3 ms, 1 RU; 200 ms, 7.5 RU), and a create in
  // East US that timed out after 4.5 s with no answer.
  m.operations.push_back(series("read_item", "West US", 200, "",
                                {0, 1, 0, 0, 0, 1, 0, 0, 0, 0}, 0.203,
                                {1, 0, 1, 0, 0, 0, 0, 0, 0, 0}, 8.5));
  m.operations.push_back(series(
      "create_item", "East US", 0, "transport_timeout",
      {0, 0, 0, 0, 0, 0, 0, 1, 0, 0}, 4.5, {1, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 0));
  return m;
}

// Checked by hand against the exposition format: cumulative buckets, `le`
// inclusive, +Inf equal to _count, no status label without a response.
constexpr const char* small_snapshot_text =
    R"(# HELP db_client_operation_duration_seconds Duration of database client operations.
# TYPE db_client_operation_duration_seconds histogram
db_client_operation_duration_seconds_bucket{db_system_name="azure.cosmosdb",db_operation_name="read_item",cloud_region="West US",db_response_status_code="200",le="0.001"} 0
db_client_operation_duration_seconds_bucket{db_system_name="azure.cosmosdb",db_operation_name="read_item",cloud_region="West US",db_response_status_code="200",le="0.005"} 1
db_client_operation_duration_seconds_bucket{db_system_name="azure.cosmosdb",db_operation_name="read_item",cloud_region="West US",db_response_status_code="200",le="0.01"} 1
db_client_operation_duration_seconds_bucket{db_system_name="azure.cosmosdb",db_operation_name="read_item",cloud_region="West US",db_response_status_code="200",le="0.05"} 1
db_client_operation_duration_seconds_bucket{db_system_name="azure.cosmosdb",db_operation_name="read_item",cloud_region="West US",db_response_status_code="200",le="0.1"} 1
db_client_operation_duration_seconds_bucket{db_system_name="azure.cosmosdb",db_operation_name="read_item",cloud_region="West US",db_response_status_code="200",le="0.5"} 2
db_client_operation_duration_seconds_bucket{db_system_name="azure.cosmosdb",db_operation_name="read_item",cloud_region="West US",db_response_status_code="200",le="1"} 2
db_client_operation_duration_seconds_bucket{db_system_name="azure.cosmosdb",db_operation_name="read_item",cloud_region="West US",db_response_status_code="200",le="5"} 2
db_client_operation_duration_seconds_bucket{db_system_name="azure.cosmosdb",db_operation_name="read_item",cloud_region="West US",db_response_status_code="200",le="10"} 2
db_client_operation_duration_seconds_bucket{db_system_name="azure.cosmosdb",db_operation_name="read_item",cloud_region="West US",db_response_status_code="200",le="+Inf"} 2
db_client_operation_duration_seconds_sum{db_system_name="azure.cosmosdb",db_operation_name="read_item",cloud_region="West US",db_response_status_code="200"} 0.203
db_client_operation_duration_seconds_count{db_system_name="azure.cosmosdb",db_operation_name="read_item",cloud_region="West US",db_response_status_code="200"} 2
db_client_operation_duration_seconds_bucket{db_system_name="azure.cosmosdb",db_operation_name="create_item",cloud_region="East US",error_type="transport_timeout",le="0.001"} 0
db_client_operation_duration_seconds_bucket{db_system_name="azure.cosmosdb",db_operation_name="create_item",cloud_region="East US",error_type="transport_timeout",le="0.005"} 0
db_client_operation_duration_seconds_bucket{db_system_name="azure.cosmosdb",db_operation_name="create_item",cloud_region="East US",error_type="transport_timeout",le="0.01"} 0
db_client_operation_duration_seconds_bucket{db_system_name="azure.cosmosdb",db_operation_name="create_item",cloud_region="East US",error_type="transport_timeout",le="0.05"} 0
db_client_operation_duration_seconds_bucket{db_system_name="azure.cosmosdb",db_operation_name="create_item",cloud_region="East US",error_type="transport_timeout",le="0.1"} 0
db_client_operation_duration_seconds_bucket{db_system_name="azure.cosmosdb",db_operation_name="create_item",cloud_region="East US",error_type="transport_timeout",le="0.5"} 0
db_client_operation_duration_seconds_bucket{db_system_name="azure.cosmosdb",db_operation_name="create_item",cloud_region="East US",error_type="transport_timeout",le="1"} 0
db_client_operation_duration_seconds_bucket{db_system_name="azure.cosmosdb",db_operation_name="create_item",cloud_region="East US",error_type="transport_timeout",le="5"} 1
db_client_operation_duration_seconds_bucket{db_system_name="azure.cosmosdb",db_operation_name="create_item",cloud_region="East US",error_type="transport_timeout",le="10"} 1
db_client_operation_duration_seconds_bucket{db_system_name="azure.cosmosdb",db_operation_name="create_item",cloud_region="East US",error_type="transport_timeout",le="+Inf"} 1
db_client_operation_duration_seconds_sum{db_system_name="azure.cosmosdb",db_operation_name="create_item",cloud_region="East US",error_type="transport_timeout"} 4.5
db_client_operation_duration_seconds_count{db_system_name="azure.cosmosdb",db_operation_name="create_item",cloud_region="East US",error_type="transport_timeout"} 1
# HELP azure_cosmosdb_client_operation_request_charge Request units consumed by the operation.
# TYPE azure_cosmosdb_client_operation_request_charge histogram
azure_cosmosdb_client_operation_request_charge_bucket{db_system_name="azure.cosmosdb",db_operation_name="read_item",cloud_region="West US",db_response_status_code="200",le="1"} 1
azure_cosmosdb_client_operation_request_charge_bucket{db_system_name="azure.cosmosdb",db_operation_name="read_item",cloud_region="West US",db_response_status_code="200",le="5"} 1
azure_cosmosdb_client_operation_request_charge_bucket{db_system_name="azure.cosmosdb",db_operation_name="read_item",cloud_region="West US",db_response_status_code="200",le="10"} 2
azure_cosmosdb_client_operation_request_charge_bucket{db_system_name="azure.cosmosdb",db_operation_name="read_item",cloud_region="West US",db_response_status_code="200",le="25"} 2
azure_cosmosdb_client_operation_request_charge_bucket{db_system_name="azure.cosmosdb",db_operation_name="read_item",cloud_region="West US",db_response_status_code="200",le="50"} 2
azure_cosmosdb_client_operation_request_charge_bucket{db_system_name="azure.cosmosdb",db_operation_name="read_item",cloud_region="West US",db_response_status_code="200",le="100"} 2
azure_cosmosdb_client_operation_request_charge_bucket{db_system_name="azure.cosmosdb",db_operation_name="read_item",cloud_region="West US",db_response_status_code="200",le="250"} 2
azure_cosmosdb_client_operation_request_charge_bucket{db_system_name="azure.cosmosdb",db_operation_name="read_item",cloud_region="West US",db_response_status_code="200",le="500"} 2
azure_cosmosdb_client_operation_request_charge_bucket{db_system_name="azure.cosmosdb",db_operation_name="read_item",cloud_region="West US",db_response_status_code="200",le="1000"} 2
azure_cosmosdb_client_operation_request_charge_bucket{db_system_name="azure.cosmosdb",db_operation_name="read_item",cloud_region="West US",db_response_status_code="200",le="+Inf"} 2
azure_cosmosdb_client_operation_request_charge_sum{db_system_name="azure.cosmosdb",db_operation_name="read_item",cloud_region="West US",db_response_status_code="200"} 8.5
azure_cosmosdb_client_operation_request_charge_count{db_system_name="azure.cosmosdb",db_operation_name="read_item",cloud_region="West US",db_response_status_code="200"} 2
azure_cosmosdb_client_operation_request_charge_bucket{db_system_name="azure.cosmosdb",db_operation_name="create_item",cloud_region="East US",error_type="transport_timeout",le="1"} 1
azure_cosmosdb_client_operation_request_charge_bucket{db_system_name="azure.cosmosdb",db_operation_name="create_item",cloud_region="East US",error_type="transport_timeout",le="5"} 1
azure_cosmosdb_client_operation_request_charge_bucket{db_system_name="azure.cosmosdb",db_operation_name="create_item",cloud_region="East US",error_type="transport_timeout",le="10"} 1
azure_cosmosdb_client_operation_request_charge_bucket{db_system_name="azure.cosmosdb",db_operation_name="create_item",cloud_region="East US",error_type="transport_timeout",le="25"} 1
azure_cosmosdb_client_operation_request_charge_bucket{db_system_name="azure.cosmosdb",db_operation_name="create_item",cloud_region="East US",error_type="transport_timeout",le="50"} 1
azure_cosmosdb_client_operation_request_charge_bucket{db_system_name="azure.cosmosdb",db_operation_name="create_item",cloud_region="East US",error_type="transport_timeout",le="100"} 1
azure_cosmosdb_client_operation_request_charge_bucket{db_system_name="azure.cosmosdb",db_operation_name="create_item",cloud_region="East US",error_type="transport_timeout",le="250"} 1
azure_cosmosdb_client_operation_request_charge_bucket{db_system_name="azure.cosmosdb",db_operation_name="create_item",cloud_region="East US",error_type="transport_timeout",le="500"} 1
azure_cosmosdb_client_operation_request_charge_bucket{db_system_name="azure.cosmosdb",db_operation_name="create_item",cloud_region="East US",error_type="transport_timeout",le="1000"} 1
azure_cosmosdb_client_operation_request_charge_bucket{db_system_name="azure.cosmosdb",db_operation_name="create_item",cloud_region="East US",error_type="transport_timeout",le="+Inf"} 1
azure_cosmosdb_client_operation_request_charge_sum{db_system_name="azure.cosmosdb",db_operation_name="create_item",cloud_region="East US",error_type="transport_timeout"} 0
azure_cosmosdb_client_operation_request_charge_count{db_system_name="azure.cosmosdb",db_operation_name="create_item",cloud_region="East US",error_type="transport_timeout"} 1
# HELP georoute_actor_up 1 if the actor's counters are in this snapshot, 0 if it was down or did not answer in time.
# TYPE georoute_actor_up gauge
georoute_actor_up{actor="georoute.router"} 0
georoute_actor_up{actor="georoute.retry"} 0
georoute_actor_up{actor="georoute.endpoint_manager"} 0
georoute_actor_up{actor="georoute.collection_cache"} 0
georoute_actor_up{actor="georoute.pkrange_cache"} 0
georoute_actor_up{actor="georoute.query_plan"} 0
# HELP georoute_engine_restarts_total Successors of dead actors spawned.
# TYPE georoute_engine_restarts_total counter
georoute_engine_restarts_total 3
# HELP georoute_engine_gave_up_total Actors left down: restart intensity exceeded.
# TYPE georoute_engine_gave_up_total counter
georoute_engine_gave_up_total 0
)";

TEST(Metrics, ToPrometheus_SmallSnapshot_MatchesHandCheckedText) {
  EXPECT_EQ(to_prometheus(small_snapshot()), small_snapshot_text);
}

// Visits the fields of a stats struct through its inspect() (the list CAF
// serializes, independent of the metrics tables): their addresses, and a
// distinct value written into each.
struct field_visitor {
  using result_type = void;
  static constexpr bool reads_state = true;
  static constexpr bool writes_state = true;
  std::vector<const void*> addresses;
  uint64_t next_value = 0;

  template <class... Ts>
  void operator()(Ts&... xs) {
    (visit(xs), ...);
  }
  template <class T>
  void visit(T& x) {
    static_assert(std::is_same_v<T, uint64_t> || std::is_same_v<T, double>,
                  "stats fields are uint64_t or double");
    addresses.push_back(&x);
    if (next_value != 0) x = static_cast<T>(next_value++);
  }
};

template <class Stats>
std::vector<const void*> table_addresses(const Stats& x) {
  std::vector<const void*> out;
  for (const auto& f : stats_fields<Stats>())
    out.push_back(f.count != nullptr
                      ? static_cast<const void*>(&(x.*f.count))
                      : static_cast<const void*>(&(x.*f.amount)));
  return out;
}

template <class Stats>
void expect_table_names_every_field(const char* what) {
  Stats x;
  field_visitor v;
  inspect(v, x);
  EXPECT_EQ(table_addresses(x), v.addresses)
      << what << ": the metrics table must list every field of inspect(), "
      << "once, in the same order";
  std::set<std::string> names;
  for (const auto& f : stats_fields<Stats>()) {
    EXPECT_TRUE(names.insert(f.name).second) << what << "." << f.name;
    EXPECT_FALSE(std::string{f.help}.empty()) << what << "." << f.name;
    EXPECT_TRUE((f.count == nullptr) != (f.amount == nullptr))
        << what << "." << f.name;
  }
}

TEST(Metrics, FieldTables_EveryStatsStruct_NameEveryFieldOnce) {
  expect_table_names_every_field<engine_stats>("engine_stats");
  expect_table_names_every_field<router_stats>("router_stats");
  expect_table_names_every_field<retry_stats>("retry_stats");
  expect_table_names_every_field<endpoint_manager_stats>(
      "endpoint_manager_stats");
  expect_table_names_every_field<collection_cache_stats>(
      "collection_cache_stats");
  expect_table_names_every_field<pkrange_cache_stats>("pkrange_cache_stats");
  expect_table_names_every_field<query_plan_stats>("query_plan_stats");
}

// Every field of every struct gets a value no other field has; each value
// must show up as the value of exactly one sample.
TEST(Metrics, ToPrometheus_EveryCounterOfEveryActor_Rendered) {
  engine_metrics m;
  field_visitor v;
  v.next_value = 100001;
  inspect(v, m.engine);
  inspect(v, m.router);
  inspect(v, m.retry);
  inspect(v, m.endpoint_manager);
  inspect(v, m.collection_cache);
  inspect(v, m.pkrange_cache);
  inspect(v, m.query_plan);
  auto fields = v.next_value - 100001;
  EXPECT_EQ(fields, 2u + 28 + 18 + 12 + 11 + 12 + 7);
  auto text = to_prometheus(m);
  std::map<std::string, int> seen; // sample value -> how many samples
  std::istringstream in{text};
  std::string line;
  size_t samples = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line.rfind("georoute_actor_up", 0) == 0) continue;
    ++samples;
    ++seen[line.substr(line.rfind(' ') + 1)];
  }
  EXPECT_EQ(samples, fields);
  for (uint64_t value = 100001; value < v.next_value; ++value)
    EXPECT_EQ(seen[std::to_string(value)], 1) << "field value " << value;
  // Spot checks of the naming: a counter, a level, a double counter.
  EXPECT_NE(text.find("\n# TYPE georoute_router_operations_total counter\n"
                      "georoute_router_operations_total 100003\n"),
            std::string::npos);
  EXPECT_NE(text.find("\n# TYPE georoute_router_live gauge\n"),
            std::string::npos);
  EXPECT_NE(text.find("\n# TYPE georoute_router_hedge_charge_total counter\n"),
            std::string::npos);
  EXPECT_NE(text.find("georoute_query_plan_collaborator_failures_total "),
            std::string::npos);
}

TEST(Metrics, ToPrometheus_MissingActor_CountersLeftOutAndDown) {
  engine_metrics m;
  m.router.operations = 7;
  m.retry.operations = 9;
  m.missing = {"georoute.retry"};
  auto text = to_prometheus(m);
  EXPECT_NE(text.find("georoute_actor_up{actor=\"georoute.retry\"} 0\n"),
            std::string::npos);
  EXPECT_NE(text.find("georoute_actor_up{actor=\"georoute.router\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("georoute_router_operations_total 7\n"),
            std::string::npos);
  EXPECT_EQ(text.find("georoute_retry_"), std::string::npos);
}

TEST(Metrics, ToPrometheus_LabelValues_Escaped) {
  engine_metrics m;
  m.operations.push_back(series("read_item", "We\"st\\US\nX", 200, "",
                                {1, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 0,
                                {1, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 0));
  auto text = to_prometheus(m);
  EXPECT_NE(text.find(R"(cloud_region="We\"st\\US\nX")"), std::string::npos)
      << text.substr(0, 400);
  // No raw line feed inside a sample line.
  EXPECT_EQ(text.find("US\nX"), std::string::npos);
}

TEST(Metrics, OperationNames_FollowOpenTelemetryExamples) {
  EXPECT_STREQ(operation_name(data_op::create), "create_item");
  EXPECT_STREQ(operation_name(data_op::upsert), "upsert_item");
  EXPECT_STREQ(operation_name(data_op::read), "read_item");
  EXPECT_STREQ(operation_name(data_op::replace), "replace_item");
  EXPECT_STREQ(operation_name(data_op::remove), "delete_item");
  EXPECT_STREQ(operation_name(data_op::query), "query_items");
}

struct test_config : caf::actor_system_config {
  test_config() {
    register_types(*this);
    set("scheduler.policy", caf::atom("testing"));
  }
};

TEST(Metrics, EngineMetrics_RoundTrip_KeepsEveryField) {
  test_config cfg;
  caf::actor_system sys{cfg};
  auto m = small_snapshot();
  m.router.hedge_charge = 2.5;
  m.pkrange_cache.pages = 4;
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  ASSERT_FALSE(sink(m));
  engine_metrics back;
  caf::binary_deserializer source{sys, buf};
  ASSERT_FALSE(source(back));
  EXPECT_EQ(to_prometheus(back), to_prometheus(m));
  EXPECT_EQ(back.missing, m.missing);
}

} // namespace
} // namespace georoute
