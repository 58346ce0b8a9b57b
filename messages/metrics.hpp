#pragma once

// The engine's metrics: one snapshot with every counter of every actor and
// the data plane's histograms, and its rendering in the Prometheus text
// format.
//
// - `engine::metrics()` (a thread that is not a CAF worker) and
//   `(metrics_atom)` to `engine::supervisor()` (an actor) answer an
//   `engine_metrics`. The supervisor asks every actor for its counters and
//   the router for its histograms, and joins the answers; an actor that is
//   down or does not answer within `engine_options::metrics_timeout` is
//   named in `missing` and its counters stay zero. The snapshot never fails
//   for that.
// - Histograms, recorded by the router once per finished data-plane
//   operation (a cross-partition query counts once per range query it
//   sends), named after the OpenTelemetry semantic conventions for
//   database clients and Azure Cosmos DB:
//     db.client.operation.duration                   seconds
//     azure.cosmosdb.client.operation.request_charge {request_unit}
//   with the attributes
//     db.system.name           "azure.cosmosdb"
//     db.operation.name        create_item, upsert_item, read_item,
//                              replace_item, delete_item, query_items
//     cloud.region             the region whose answer ended the operation
//                              (the winning attempt's; on an error the last
//                              answer's); "" when no attempt was sent
//     db.response.status_code  the final HTTP status ("" when none came)
//     error.type               the errc name of a failed operation
//   The request charge of an operation is every attempt's, hedges included
//   (`data_response::request_charge`).
// - `to_prometheus` renders a snapshot in the Prometheus text exposition
//   format (0.0.4): the histograms as `db_client_operation_duration_seconds`
//   and `azure_cosmosdb_client_operation_request_charge` (dots become
//   underscores, the unit `s` the suffix `_seconds`), every counter as
//   `georoute_<actor>_<counter>_total`, every level (operations live now,
//   slots held now) as a gauge `georoute_<actor>_<counter>`, and
//   `georoute_actor_up{actor="georoute.router"}` 1 or 0 per actor.

#include "georoute/actors/policy/operation_histograms.hpp"
#include "georoute/messages/payloads.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace georoute {

/// Counters of the supervisor.
struct engine_stats {
  uint64_t restarts = 0; ///< successors spawned
  uint64_t gave_up = 0;  ///< actors left down (restart intensity exceeded)
};

/// One histogram series of the data plane (see the file comment). Bucket
/// counts are per bucket, not cumulative; the last is +Inf. The boundaries
/// are `operation_duration_bounds` and `request_charge_bounds`.
struct operation_series {
  std::string operation;  ///< db.operation.name, e.g. "read_item"
  std::string region;     ///< cloud.region
  int status_code = 0;    ///< db.response.status_code; 0: no response
  std::string error_type; ///< error.type; "" for a success
  uint64_t count = 0;
  double duration_sum = 0; ///< seconds
  std::vector<uint64_t> duration_buckets;
  double request_charge_sum = 0; ///< request units
  std::vector<uint64_t> request_charge_buckets;
};

/// The router's answer to `(metrics_atom)`: its counters and histograms,
/// taken at the same moment.
struct router_metrics {
  router_stats stats;
  std::vector<operation_series> operations;
};

/// Every counter of every actor and the data plane's histograms.
struct engine_metrics {
  engine_stats engine; ///< the supervisor's (always present)
  router_stats router;
  retry_stats retry;
  endpoint_manager_stats endpoint_manager;
  collection_cache_stats collection_cache;
  pkrange_cache_stats pkrange_cache;
  query_plan_stats query_plan;
  /// Actors whose part is missing (down, or no answer in time), by name:
  /// "georoute.router", "georoute.retry", "georoute.endpoint_manager",
  /// "georoute.collection_cache", "georoute.pkrange_cache",
  /// "georoute.query_plan". Their counters are zero.
  std::vector<std::string> missing;
  std::vector<operation_series> operations;
};

/// The actor names of `engine_metrics::missing`, in rendering order.
extern const char* const metrics_actor_names[6];

/// db.operation.name of a data-plane operation: "read_item", ...
const char* operation_name(data_op op);

/// One field of a stats struct as the Prometheus rendering names it. The
/// table of each struct is the one list of its counters: the rendering walks
/// it, and a compile-time check in messages/metrics.cpp fails the build when
/// a struct has a field the table lacks.
template <class Stats>
struct stats_field {
  const char* name;       ///< the field's name, "operations"
  uint64_t Stats::*count; ///< the field, or null for `amount`
  double Stats::*amount;  ///< a double field (RU), or null
  bool gauge;             ///< a level (live now), not a counter
  const char* help;
};

/// The field table of `Stats` (each stats struct of `engine_metrics`).
template <class Stats>
const std::vector<stats_field<Stats>>& stats_fields();
template <>
const std::vector<stats_field<engine_stats>>& stats_fields<engine_stats>();
template <>
const std::vector<stats_field<router_stats>>& stats_fields<router_stats>();
template <>
const std::vector<stats_field<retry_stats>>& stats_fields<retry_stats>();
template <>
const std::vector<stats_field<endpoint_manager_stats>>&
stats_fields<endpoint_manager_stats>();
template <>
const std::vector<stats_field<collection_cache_stats>>&
stats_fields<collection_cache_stats>();
template <>
const std::vector<stats_field<pkrange_cache_stats>>&
stats_fields<pkrange_cache_stats>();
template <>
const std::vector<stats_field<query_plan_stats>>&
stats_fields<query_plan_stats>();

/// The Prometheus text exposition format (0.0.4) of `m`; see the file
/// comment for the names. Ends with a newline.
std::string to_prometheus(const engine_metrics& m);

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, engine_stats& x) {
  return f(x.restarts, x.gave_up);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, operation_series& x) {
  return f(x.operation, x.region, x.status_code, x.error_type, x.count,
           x.duration_sum, x.duration_buckets, x.request_charge_sum,
           x.request_charge_buckets);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, router_metrics& x) {
  return f(x.stats, x.operations);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, engine_metrics& x) {
  return f(x.engine, x.router, x.retry, x.endpoint_manager, x.collection_cache,
           x.pkrange_cache, x.query_plan, x.missing, x.operations);
}

} // namespace georoute
