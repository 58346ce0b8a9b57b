#include "config/settings.hpp"

#include <sstream>

namespace georoute::config {

namespace {

std::string list(const std::vector<std::string>& xs) {
  std::string r = "[";
  for (size_t i = 0; i < xs.size(); ++i)
    r += (i > 0 ? ", \"" : "\"") + xs[i] + "\"";
  return r + "]";
}

std::string ladder(const timeout_ladder& l) {
  std::vector<std::string> steps;
  for (const auto& s : l)
    steps.push_back(to_string(s));
  return list(steps);
}

const char* boolean(bool b) {
  return b ? "true" : "false";
}

} // namespace

std::string render(const settings& s) {
  std::ostringstream o;
  o << "[georoute]\n"
    << "account-endpoint=\"" << s.account_endpoint << "\"\n"
    << "; account-key " << s.account_key
    << (s.account_key_source.empty() ? ""
                                     : " (from " + s.account_key_source + ")")
    << "\n"
    << "preferred-regions=" << list(s.location.preferred_regions) << "\n"
    << "excluded-regions=" << list(s.location.excluded_regions) << "\n"
    << "endpoint-discovery=" << boolean(s.location.endpoint_discovery) << "\n"
    << "use-multiple-write-locations="
    << boolean(s.location.use_multiple_write_locations) << "\n"
    << "background-refresh-interval="
    << format_duration(s.refresh.background_interval) << "\n"
    << "min-refresh-interval=" << format_duration(s.refresh.min_interval)
    << "\n"
    << "unavailable-region-expiry="
    << format_duration(s.location.unavailable_region_expiry) << "\n"
    << "metadata-hard-deadline="
    << format_duration(s.retry.metadata_hard_deadline) << "\n"
    << "metadata-attempt-cap=" << s.retry.metadata_attempt_cap << "\n"
    << "failover-retries=" << s.retry.failover_retries << "\n"
    << "failover-retry-interval="
    << format_duration(s.retry.failover_retry_interval) << "\n"
    << "throttle-retries=" << s.retry.throttle_retries << "\n"
    << "throttle-max-wait=" << format_duration(s.retry.throttle_max_wait)
    << "\n"
    << "operation-budget=" << format_duration(s.retry.operation_budget) << "\n"
    << "write-retries=" << boolean(s.retry.write_retries) << "\n"
    << "scheduler-threads=" << s.scheduler_threads << "\n"
    << "query-plan-cache-size=" << s.query_plan_cache_size << "\n"
    << "collection-cache-size=" << s.collection_cache_size << "\n"
    << "pkrange-cache-size=" << s.pkrange_cache_size << "\n"
    << "cache-max-waiters=" << s.cache_max_waiters << "\n"
    << "max-operations-in-flight=" << s.max_operations_in_flight << "\n"
    << "\n[georoute.http]\n"
    << "max-connections-per-endpoint=" << s.http.max_connections_per_endpoint
    << "\n"
    << "response-body-limit=" << s.http.response_body_limit << "\n"
    << "tls-ca-file=\"" << s.http.tls_ca_file << "\"\n"
    << "io-threads=" << s.http.io_threads << "\n"
    << "ladder-control-plane-read=" << ladder(s.http.ladders.control_plane_read)
    << "\n"
    << "ladder-hot-path=" << ladder(s.http.ladders.hot_path) << "\n"
    << "ladder-default=" << ladder(s.http.ladders.default_ladder) << "\n"
    << "ladder-partition-failover=" << ladder(s.http.ladders.partition_failover)
    << "\n"
    << "ladder-no-retry=" << ladder(s.http.ladders.no_retry) << "\n";
  const auto& he = s.hedging;
  o << "\n[georoute.hedging]\n"
    << "enabled=" << (he.enabled ? "true" : "false") << "\n"
    << "writes=" << (he.hedge_writes ? "true" : "false") << "\n"
    << "threshold="
    << format_duration(he.threshold ? *he.threshold
                                    : std::chrono::milliseconds{0})
    << "\n"
    << "step=" << format_duration(he.step) << "\n"
    << "mode=\""
    << (he.mode == hedge_threshold_mode::adaptive ? "adaptive" : "static")
    << "\"\n"
    << "budget-percent=" << static_cast<int64_t>(he.budget.share * 100.0 + 0.5)
    << "\n"
    << "metadata-threshold=" << format_duration(he.metadata.threshold) << "\n"
    << "metadata-max-concurrent=" << he.metadata.max_concurrent << "\n";
  const auto& cb = s.circuit_breaker;
  o << "\n[georoute.circuit-breaker]\n"
    << "enabled=" << (s.circuit_breaker_enabled ? "true" : "false") << "\n"
    << "read-failures=" << cb.read_failure_threshold << "\n"
    << "write-failures=" << cb.write_failure_threshold << "\n"
    << "hedge-wins=" << cb.hedge_win_threshold << "\n"
    << "open-period=" << format_duration(cb.open_period) << "\n"
    << "max-open-period=" << format_duration(cb.max_open_period) << "\n"
    << "probe-timeout=" << format_duration(cb.probe_timeout) << "\n"
    << "half-open-steps=" << cb.half_open_steps << "\n"
    << "capacity=" << cb.capacity << "\n";
  const auto& pf = s.per_partition_failover;
  o << "\n[georoute.per-partition-failover]\n"
    << "enabled=" << (pf.enabled ? "true" : "false") << "\n"
    << "timeout-threshold=" << pf.timeout_threshold << "\n"
    << "timeout-window=" << format_duration(pf.timeout_window) << "\n"
    << "max-ranges=" << pf.max_ranges << "\n";
  return o.str();
}

} // namespace georoute::config
