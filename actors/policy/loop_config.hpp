#pragma once

// How each plane's attempt loop is configured, built once from what the
// engine shares (the client retry options, the attempt cap, the breaker and
// per-partition failover of the router) and what the operation is.

#include "georoute/actors/policy/attempt_loop.hpp"

#include <string>
#include <vector>

namespace georoute {

/// The regions one request must not use: the engine's excluded regions,
/// then the request's own.
std::vector<std::string>
merged_exclusions(const std::vector<std::string>& engine,
                  const std::vector<std::string>& request);

/// What every loop of one engine shares: built once from the settings.
struct loop_environment {
  client_retry_options client;
  uint32_t attempt_cap = 200;
  /// Owned by the caller (the router); null: none.
  partition_breaker* breaker = nullptr;
  partition_failover* ppaf = nullptr;
};

/// The loop of a data-plane operation (a point operation, or a query on one
/// range): document routing, the partition-failover read ladder, a 410
/// range or collection gone refreshes the metadata, the breaker and
/// per-partition failover of `env`. `write_retries`: a write whose second
/// copy the caller made safe (write_tracking.hpp).
attempt_loop_config data_plane_loop(request_kind kind, op_kind op,
                                    bool write_retries,
                                    std::vector<std::string> excluded,
                                    const loop_environment& env);

/// The loop of a metadata request (collections, ranges, query plans, raw
/// document requests of the query-plan path): no document routing, no
/// breaker, no per-partition failover. `name_based`: the request names a
/// collection (the clearing-session policy clears its tokens).
attempt_loop_config metadata_loop(request_kind kind, op_kind op,
                                  loop_policy policy, bool name_based,
                                  std::vector<std::string> excluded,
                                  const loop_environment& env);

} // namespace georoute
