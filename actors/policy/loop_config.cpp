#include "georoute/actors/policy/loop_config.hpp"

#include <utility>

namespace georoute {

std::vector<std::string>
merged_exclusions(const std::vector<std::string>& engine,
                  const std::vector<std::string>& request) {
  std::vector<std::string> all;
  all.reserve(engine.size() + request.size());
  all.insert(all.end(), engine.begin(), engine.end());
  all.insert(all.end(), request.begin(), request.end());
  return all;
}

namespace {

// What every loop takes from its operation and the engine.
attempt_loop_config loop_of(request_kind kind, op_kind op,
                            std::vector<std::string> excluded,
                            const loop_environment& env) {
  attempt_loop_config c;
  c.kind = kind;
  c.op = op;
  c.attempt_cap = env.attempt_cap;
  c.excluded_regions = std::move(excluded);
  c.client = env.client;
  return c;
}

} // namespace

attempt_loop_config data_plane_loop(request_kind kind, op_kind op,
                                    bool write_retries,
                                    std::vector<std::string> excluded,
                                    const loop_environment& env) {
  auto c = loop_of(kind, op, std::move(excluded), env);
  c.is_document = true;
  c.per_partition_failover = true;
  c.refresh_metadata_on_gone = true;
  c.breaker = env.breaker;
  c.ppaf = env.ppaf;
  c.write_retries = write_retries;
  return c;
}

attempt_loop_config metadata_loop(request_kind kind, op_kind op,
                                  loop_policy policy, bool name_based,
                                  std::vector<std::string> excluded,
                                  const loop_environment& env) {
  auto c = loop_of(kind, op, std::move(excluded), env);
  c.is_document = false;
  c.policy = policy;
  c.name_based = name_based;
  return c;
}

} // namespace georoute
