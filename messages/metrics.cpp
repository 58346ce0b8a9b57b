#include "georoute/messages/metrics.hpp"

#include <charconv>
#include <cmath>
#include <iterator>

namespace georoute {

const char* const metrics_actor_names[6] = {
    "georoute.router",           "georoute.retry",
    "georoute.endpoint_manager", "georoute.collection_cache",
    "georoute.pkrange_cache",    "georoute.query_plan"};

const char* operation_name(data_op op) {
  switch (op) {
  case data_op::create:
    return "create_item";
  case data_op::upsert:
    return "upsert_item";
  case data_op::read:
    return "read_item";
  case data_op::replace:
    return "replace_item";
  case data_op::remove:
    return "delete_item";
  case data_op::query:
    return "query_items";
  case data_op::change_feed:
    return "read_change_feed";
  case data_op::patch:
    return "patch_item";
  case data_op::batch:
    return "execute_batch";
  case data_op::bulk:
    return "execute_bulk";
  }
  return "unknown";
}

// -- the field tables ---------------------------------------------------------
//
// One row per field of each stats struct, in declaration order. A counter
// (C) renders as `<prefix><name>_total`, a level (G) as a gauge
// `<prefix><name>`, a double counter (D, request units) as a counter.

#define GEOROUTE_C(S, f, help)                                                 \
  { #f, &S::f, nullptr, false, help }
#define GEOROUTE_G(S, f, help)                                                 \
  { #f, &S::f, nullptr, true, help }
#define GEOROUTE_D(S, f, help)                                                 \
  { #f, nullptr, &S::f, false, help }

namespace {

constexpr stats_field<engine_stats> engine_table[] = {
    GEOROUTE_C(engine_stats, restarts, "Successors of dead actors spawned."),
    GEOROUTE_C(engine_stats, gave_up,
               "Actors left down: restart intensity exceeded."),
};

constexpr stats_field<router_stats> router_table[] = {
    GEOROUTE_C(router_stats, operations, "Data requests accepted."),
    GEOROUTE_C(router_stats, attempts, "HTTP requests sent."),
    GEOROUTE_C(router_stats, succeeded, "Data requests answered with success."),
    GEOROUTE_C(router_stats, failed, "Data requests answered with an error."),
    GEOROUTE_C(router_stats, failover_decisions,
               "Failover decisions with a side effect (mark, refresh)."),
    GEOROUTE_C(router_stats, failover_decisions_completed,
               "Failover decisions whose side effects all completed."),
    GEOROUTE_C(router_stats, decisions_after_budget,
               "Failover decisions carried out after the operation's budget."),
    GEOROUTE_C(router_stats, marks, "Regions marked unavailable."),
    GEOROUTE_C(router_stats, refreshes, "Account refreshes requested."),
    GEOROUTE_C(router_stats, metadata_refreshes,
               "Collection or routing-map refreshes after a 410."),
    GEOROUTE_G(router_stats, live, "Operations in flight now."),
    GEOROUTE_C(router_stats, rejected_overloaded,
               "Requests refused at once: too many operations in flight."),
    GEOROUTE_G(router_stats, deadlines_tracked,
               "Operation deadlines tracked now."),
    GEOROUTE_G(router_stats, deadline_timers_pending,
               "Deadline timer messages pending now."),
    GEOROUTE_C(router_stats, timers_armed, "Timer messages armed."),
    GEOROUTE_C(router_stats, hedges_started, "Hedge arms sent."),
    GEOROUTE_C(router_stats, hedges_won, "Hedge arms whose answer won."),
    GEOROUTE_C(router_stats, hedges_refused,
               "Hedges the hedging budget refused."),
    GEOROUTE_C(router_stats, hedges_on_evidence,
               "First hedges sent outside the budget on evidence."),
    GEOROUTE_D(router_stats, hedge_charge,
               "Request units charged to hedges' answers."),
    GEOROUTE_C(router_stats, late_answers,
               "Answers that came after their operation ended."),
    GEOROUTE_C(router_stats, stale_snapshots,
               "Location tables not applied: no newer than the held one."),
    GEOROUTE_C(router_stats, breaker_opened,
               "Circuit-breaker keys opened from closed."),
    GEOROUTE_C(router_stats, breaker_probes, "Circuit-breaker probes started."),
    GEOROUTE_C(router_stats, breaker_closed,
               "Circuit-breaker keys closed again after a probe."),
    GEOROUTE_C(router_stats, breaker_reopened,
               "Circuit-breaker keys opened again from probing or half-open."),
    GEOROUTE_C(router_stats, breaker_skips,
               "Attempts that skipped a region whose breaker was open."),
    GEOROUTE_G(router_stats, breaker_tracked,
               "Circuit-breaker keys tracked now."),
};

constexpr stats_field<retry_stats> retry_table[] = {
    GEOROUTE_C(retry_stats, operations, "Metadata operations started."),
    GEOROUTE_C(retry_stats, attempts, "HTTP requests sent."),
    GEOROUTE_C(retry_stats, retries, "Attempts after the first."),
    GEOROUTE_C(retry_stats, deadline_trips, "Hard deadlines that tripped."),
    GEOROUTE_C(retry_stats, policy_refusals,
               "Failures the retry policy did not retry."),
    GEOROUTE_C(retry_stats, failover_decisions,
               "Failover decisions with a side effect."),
    GEOROUTE_C(retry_stats, failover_decisions_completed,
               "Failover decisions whose side effects all completed."),
    GEOROUTE_C(retry_stats, decisions_after_deadline,
               "Decisions made after their operation ended."),
    GEOROUTE_C(retry_stats, marks, "Regions marked unavailable."),
    GEOROUTE_C(retry_stats, refreshes, "Account refreshes requested."),
    GEOROUTE_C(retry_stats, session_clears, "Session containers cleared."),
    GEOROUTE_C(retry_stats, late_completions,
               "HTTP answers after the operation ended."),
    GEOROUTE_G(retry_stats, live, "Detached operations running now."),
    GEOROUTE_C(retry_stats, stale_snapshots,
               "Pushed snapshots not applied: no newer than the held one."),
    GEOROUTE_C(retry_stats, metadata_hedges_started, "Metadata hedges sent."),
    GEOROUTE_C(retry_stats, metadata_hedges_won,
               "Metadata hedges taken as the operation's answer."),
    GEOROUTE_C(retry_stats, metadata_hedges_refused,
               "Metadata hedges not sent: every budget slot in use."),
    GEOROUTE_G(retry_stats, metadata_hedge_slots,
               "Budget slots held by metadata hedges now."),
};

constexpr stats_field<endpoint_manager_stats> endpoint_manager_table[] = {
    GEOROUTE_C(endpoint_manager_stats, fetches_started,
               "Account fetches started."),
    GEOROUTE_C(endpoint_manager_stats, fetches_succeeded,
               "Account fetches that succeeded."),
    GEOROUTE_C(endpoint_manager_stats, fetches_failed,
               "Account fetches that failed."),
    GEOROUTE_C(endpoint_manager_stats, refreshes_skipped,
               "Non-forced refreshes skipped within the minimum interval."),
    GEOROUTE_C(endpoint_manager_stats, refreshes_deferred,
               "Fresh refreshes that waited for the next account fetch."),
    GEOROUTE_C(endpoint_manager_stats, background_ticks,
               "Background refresh ticks."),
    GEOROUTE_C(endpoint_manager_stats, attempts, "Account reads sent."),
    GEOROUTE_C(endpoint_manager_stats, topology_changes,
               "Account reads that changed the topology."),
    GEOROUTE_C(endpoint_manager_stats, write_region_switches,
               "Changes of the first write region."),
    GEOROUTE_C(endpoint_manager_stats, multi_write_changes,
               "Changes of the account's multi-write setting."),
    GEOROUTE_C(endpoint_manager_stats, regions_added, "Regions added."),
    GEOROUTE_C(endpoint_manager_stats, regions_removed, "Regions removed."),
};

constexpr stats_field<collection_cache_stats> collection_cache_table[] = {
    GEOROUTE_C(collection_cache_stats, hits,
               "Requests answered from the cache."),
    GEOROUTE_C(collection_cache_stats, misses,
               "Requests that found nothing cached and started a fetch."),
    GEOROUTE_C(collection_cache_stats, refreshes,
               "Forced requests that started a fetch over a cached value."),
    GEOROUTE_C(collection_cache_stats, shared_waiters,
               "Requests that joined a fetch in flight."),
    GEOROUTE_C(collection_cache_stats, fetches, "Fetches started."),
    GEOROUTE_C(collection_cache_stats, failures, "Fetches that failed."),
    GEOROUTE_C(
        collection_cache_stats, refetch_skipped,
        "Forced refreshes answered from the cache: rid refreshed since."),
    GEOROUTE_C(collection_cache_stats, recreated,
               "Refetches by name that found a new rid."),
    GEOROUTE_C(collection_cache_stats, evictions,
               "Entries dropped by the LRU bound."),
    GEOROUTE_C(collection_cache_stats, overloaded,
               "Callers refused: too many waiting for one key."),
    GEOROUTE_C(collection_cache_stats, collaborator_failures,
               "Waiters failed because the retry actor went down."),
};

constexpr stats_field<pkrange_cache_stats> pkrange_cache_table[] = {
    GEOROUTE_C(pkrange_cache_stats, hits,
               "Requests answered from the current map."),
    GEOROUTE_C(pkrange_cache_stats, misses,
               "Requests that found no map and started a cold load."),
    GEOROUTE_C(pkrange_cache_stats, refreshes,
               "Requests that started an incremental refresh."),
    GEOROUTE_C(pkrange_cache_stats, shared_waiters,
               "Requests that joined a load in flight."),
    GEOROUTE_C(pkrange_cache_stats, refresh_skipped,
               "Refreshes answered with a newer current map."),
    GEOROUTE_C(pkrange_cache_stats, pages,
               "Partition-key-range pages requested."),
    GEOROUTE_C(pkrange_cache_stats, failures, "Loads that failed."),
    GEOROUTE_C(pkrange_cache_stats, dropped,
               "Maps dropped because the collection is gone."),
    GEOROUTE_C(pkrange_cache_stats, evictions,
               "Maps dropped by the LRU bound."),
    GEOROUTE_C(pkrange_cache_stats, overloaded,
               "Callers refused: too many waiting for one load."),
    GEOROUTE_C(pkrange_cache_stats, deadline_trips,
               "Loads cut off by the hard deadline."),
    GEOROUTE_C(pkrange_cache_stats, collaborator_failures,
               "Waiters failed because the retry actor went down."),
};

constexpr stats_field<query_plan_stats> query_plan_table[] = {
    GEOROUTE_C(query_plan_stats, hits, "Plans answered from the cache."),
    GEOROUTE_C(query_plan_stats, misses, "Plans not in the cache."),
    GEOROUTE_C(query_plan_stats, fetches, "Plan fetches started."),
    GEOROUTE_C(query_plan_stats, evictions, "Plans dropped by the LRU bound."),
    GEOROUTE_C(query_plan_stats, failures, "Plan fetches that failed."),
    GEOROUTE_C(query_plan_stats, overloaded,
               "Callers refused: too many waiting for one plan."),
    GEOROUTE_C(query_plan_stats, collaborator_failures,
               "Waiters failed because the retry actor went down."),
};

#undef GEOROUTE_C
#undef GEOROUTE_G
#undef GEOROUTE_D

// Every field of these structs is 8 bytes (uint64_t or double), so a struct
// whose size is not 8 times its table's rows has a field the table lacks
// (tests/messages/metrics_test.cpp checks that the rows name every field
// once, through inspect()).
#define GEOROUTE_TABLE_COMPLETE(S, table)                                      \
  static_assert(sizeof(S) == std::size(table) * 8,                             \
                #S " has a field that the metrics table " #table " lacks")
GEOROUTE_TABLE_COMPLETE(engine_stats, engine_table);
GEOROUTE_TABLE_COMPLETE(router_stats, router_table);
GEOROUTE_TABLE_COMPLETE(retry_stats, retry_table);
GEOROUTE_TABLE_COMPLETE(endpoint_manager_stats, endpoint_manager_table);
GEOROUTE_TABLE_COMPLETE(collection_cache_stats, collection_cache_table);
GEOROUTE_TABLE_COMPLETE(pkrange_cache_stats, pkrange_cache_table);
GEOROUTE_TABLE_COMPLETE(query_plan_stats, query_plan_table);
#undef GEOROUTE_TABLE_COMPLETE

template <class Stats, size_t N>
const std::vector<stats_field<Stats>>&
as_vector(const stats_field<Stats> (&table)[N]) {
  static const std::vector<stats_field<Stats>> v(std::begin(table),
                                                 std::end(table));
  return v;
}

} // namespace

template <>
const std::vector<stats_field<engine_stats>>& stats_fields<engine_stats>() {
  return as_vector(engine_table);
}
template <>
const std::vector<stats_field<router_stats>>& stats_fields<router_stats>() {
  return as_vector(router_table);
}
template <>
const std::vector<stats_field<retry_stats>>& stats_fields<retry_stats>() {
  return as_vector(retry_table);
}
template <>
const std::vector<stats_field<endpoint_manager_stats>>&
stats_fields<endpoint_manager_stats>() {
  return as_vector(endpoint_manager_table);
}
template <>
const std::vector<stats_field<collection_cache_stats>>&
stats_fields<collection_cache_stats>() {
  return as_vector(collection_cache_table);
}
template <>
const std::vector<stats_field<pkrange_cache_stats>>&
stats_fields<pkrange_cache_stats>() {
  return as_vector(pkrange_cache_table);
}
template <>
const std::vector<stats_field<query_plan_stats>>&
stats_fields<query_plan_stats>() {
  return as_vector(query_plan_table);
}

// -- the Prometheus text format -----------------------------------------------

namespace {

// Shortest text that reads back as `v`; Prometheus' spellings of the
// special values.
void put_number(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
    return;
  }
  if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
    return;
  }
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void put_number(std::string& out, uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

// A label value: backslash, double quote and line feed escaped.
void put_label_value(std::string& out, const std::string& v) {
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
}

void put_label(std::string& out, const char* name, const std::string& value,
               bool& first) {
  out += first ? "{" : ",";
  first = false;
  out += name;
  out += "=\"";
  put_label_value(out, value);
  out += '"';
}

void put_header(std::string& out, const std::string& name, const char* help,
                const char* type) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help; // our own text: no backslash, no line feed
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

// The labels of a series, without the closing brace (a bucket adds `le`).
std::string series_labels(const operation_series& s) {
  std::string l;
  bool first = true;
  put_label(l, "db_system_name", "azure.cosmosdb", first);
  put_label(l, "db_operation_name", s.operation, first);
  put_label(l, "cloud_region", s.region, first);
  if (s.status_code != 0)
    put_label(l, "db_response_status_code", std::to_string(s.status_code),
              first);
  if (!s.error_type.empty()) put_label(l, "error_type", s.error_type, first);
  return l;
}

template <size_t N>
void put_histogram(std::string& out, const std::string& name, const char* help,
                   const std::array<double, N>& bounds,
                   const std::vector<operation_series>& all,
                   const std::vector<uint64_t> operation_series::*buckets,
                   double operation_series::*sum) {
  put_header(out, name, help, "histogram");
  for (const auto& s : all) {
    auto labels = series_labels(s);
    const auto& counts = s.*buckets;
    uint64_t cumulative = 0;
    for (size_t i = 0; i <= N; ++i) {
      cumulative += i < counts.size() ? counts[i] : 0;
      out += name;
      out += "_bucket";
      out += labels;
      out += ",le=\"";
      if (i < N)
        put_number(out, bounds[i]);
      else
        out += "+Inf";
      out += "\"} ";
      put_number(out, cumulative);
      out += '\n';
    }
    out += name;
    out += "_sum";
    out += labels;
    out += "} ";
    put_number(out, s.*sum);
    out += '\n';
    out += name;
    out += "_count";
    out += labels;
    out += "} ";
    put_number(out, s.count);
    out += '\n';
  }
}

template <class Stats>
void put_stats(std::string& out, const char* prefix, const Stats& x) {
  for (const auto& f : stats_fields<Stats>()) {
    std::string name = std::string{"georoute_"} + prefix + "_" + f.name;
    if (!f.gauge) name += "_total";
    put_header(out, name, f.help, f.gauge ? "gauge" : "counter");
    out += name;
    out += ' ';
    if (f.count != nullptr)
      put_number(out, x.*(f.count));
    else
      put_number(out, x.*(f.amount));
    out += '\n';
  }
}

bool is_missing(const engine_metrics& m, const char* actor) {
  for (const auto& name : m.missing)
    if (name == actor) return true;
  return false;
}

} // namespace

std::string to_prometheus(const engine_metrics& m) {
  std::string out;
  put_histogram(out, "db_client_operation_duration_seconds",
                "Duration of database client operations.",
                operation_duration_bounds, m.operations,
                &operation_series::duration_buckets,
                &operation_series::duration_sum);
  put_histogram(out, "azure_cosmosdb_client_operation_request_charge",
                "Request units consumed by the operation.",
                request_charge_bounds, m.operations,
                &operation_series::request_charge_buckets,
                &operation_series::request_charge_sum);
  put_header(out, "georoute_actor_up",
             "1 if the actor's counters are in this snapshot, 0 if it was "
             "down or did not answer in time.",
             "gauge");
  for (const char* actor : metrics_actor_names) {
    out += "georoute_actor_up{actor=\"";
    out += actor;
    out += "\"} ";
    out += is_missing(m, actor) ? '0' : '1';
    out += '\n';
  }
  put_stats(out, "engine", m.engine);
  // In the order of metrics_actor_names; a missing actor's counters are
  // left out rather than reported as zeros.
  if (!is_missing(m, metrics_actor_names[0]))
    put_stats(out, "router", m.router);
  if (!is_missing(m, metrics_actor_names[1])) put_stats(out, "retry", m.retry);
  if (!is_missing(m, metrics_actor_names[2]))
    put_stats(out, "endpoint_manager", m.endpoint_manager);
  if (!is_missing(m, metrics_actor_names[3]))
    put_stats(out, "collection_cache", m.collection_cache);
  if (!is_missing(m, metrics_actor_names[4]))
    put_stats(out, "pkrange_cache", m.pkrange_cache);
  if (!is_missing(m, metrics_actor_names[5]))
    put_stats(out, "query_plan", m.query_plan);
  return out;
}

} // namespace georoute
