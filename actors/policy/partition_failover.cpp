#include "georoute/actors/policy/partition_failover.hpp"

#include <algorithm>

namespace georoute {

std::vector<std::string> partition_failover_options::validate() const {
  std::vector<std::string> out;
  if (timeout_threshold == 0)
    out.emplace_back("per-partition-failover.timeout-threshold must be at "
                     "least 1");
  if (timeout_window.count() <= 0)
    out.emplace_back("per-partition-failover.timeout-window must be positive");
  if (max_ranges == 0)
    out.emplace_back("per-partition-failover.max-ranges must be at least 1");
  return out;
}

bool ppaf_applies(const partition_failover_options& options,
                  const location_table& table, op_kind op, bool is_document) {
  return options.enabled && op == op_kind::write && is_document &&
         table.account_per_partition_failover() &&
         !table.account_multiple_write_locations() &&
         table.available_read_regions().size() > 1;
}

std::optional<ppaf_trigger> ppaf_trigger_of(bool transport_failure,
                                            bool timed_out, int status,
                                            int substatus) {
  if (transport_failure)
    return timed_out ? std::optional{ppaf_trigger::client_timeout}
                     : std::nullopt;
  if (status == 403 && substatus == 3) return ppaf_trigger::write_forbidden;
  if (status == 403 && substatus == 1008)
    return ppaf_trigger::account_not_found;
  if (status == 503) return ppaf_trigger::service_unavailable;
  // 408/21013 is the gateway's own transit timeout, not the region's.
  if (status == 408 && substatus != 21013) return ppaf_trigger::server_timeout;
  return std::nullopt;
}

const char* to_string(ppaf_trigger x) {
  switch (x) {
  case ppaf_trigger::write_forbidden:
    return "403/3";
  case ppaf_trigger::service_unavailable:
    return "503";
  case ppaf_trigger::server_timeout:
    return "408";
  case ppaf_trigger::client_timeout:
    return "client timeout";
  case ppaf_trigger::account_not_found:
    return "403/1008";
  }
  return "?";
}

partition_failover::partition_failover(partition_failover_options options)
    : options_(options) {}

std::string partition_failover::key_of(std::string_view rid,
                                       std::string_view range) {
  std::string k;
  k.reserve(rid.size() + range.size() + 1);
  k.append(rid).push_back('\n');
  k.append(range);
  return k;
}

partition_failover::entry& partition_failover::touch(const std::string& key) {
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return it->second;
  }
  lru_.push_front(key);
  auto& e = entries_[key];
  e.lru = lru_.begin();
  while (entries_.size() > options_.max_ranges) {
    auto victim = lru_.back();
    erase(victim);
    ++counters_.evicted;
  }
  return entries_.at(key);
}

void partition_failover::erase(const std::string& key) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return;
  lru_.erase(it->second.lru);
  entries_.erase(it);
}

std::optional<std::string>
partition_failover::override_for(std::string_view collection_rid,
                                 std::string_view range_id) const {
  auto it = entries_.find(key_of(collection_rid, range_id));
  if (it == entries_.end() || it->second.current.empty()) return std::nullopt;
  return it->second.current;
}

namespace {

bool listed(const std::vector<std::string>& xs, std::string_view x) {
  return std::any_of(xs.begin(), xs.end(),
                     [&](const std::string& y) { return same_region(x, y); });
}

} // namespace

ppaf_move partition_failover::walk(const std::string& key, entry& e,
                                   std::string_view tried,
                                   const std::vector<std::string>& regions) {
  if (!listed(e.failed, tried)) e.failed.emplace_back(tried);
  for (const auto& r : regions) {
    if (same_region(r, tried) || listed(e.failed, r)) continue;
    e.current = r;
    ++counters_.moves;
    return {ppaf_move::kind::moved, r};
  }
  erase(key);
  ++counters_.exhausted;
  return {ppaf_move::kind::exhausted, {}};
}

ppaf_move partition_failover::on_failure(
    std::string_view collection_rid, std::string_view range_id,
    std::string_view tried, ppaf_trigger trigger,
    const std::vector<std::string>& account_read_regions,
    std::string_view write_region, policy_time now) {
  auto key = key_of(collection_rid, range_id);
  if (trigger == ppaf_trigger::account_not_found) {
    auto it = entries_.find(key);
    if (it == entries_.end() || it->second.current.empty() ||
        !same_region(it->second.current, tried))
      return {};
    erase(key);
    ++counters_.drops;
    return {ppaf_move::kind::dropped, std::string{write_region}};
  }
  auto it = entries_.find(key);
  // A range nobody moved yet is PPAF's only when its write failed where
  // the account writes (anything else is the account-level path's).
  if (it == entries_.end() && !same_region(tried, write_region)) return {};
  auto& e = touch(key);
  if (trigger == ppaf_trigger::client_timeout) {
    if (e.timeouts == 0 || now - e.window_start > options_.timeout_window) {
      e.window_start = now;
      e.timeouts = 0;
    }
    if (++e.timeouts < options_.timeout_threshold) return {};
    e.timeouts = 0;
  }
  std::string going = e.current.empty() ? std::string{write_region} : e.current;
  if (!same_region(tried, going)) {
    // Another request already moved the range: retry where it went.
    return {ppaf_move::kind::moved, going};
  }
  if (trigger == ppaf_trigger::write_forbidden && !e.current.empty() &&
      !same_region(e.current, write_region) && !e.home_tried &&
      !listed(e.failed, write_region)) {
    // An override whose place was confirmed answered 403/3: the service
    // moved the range home or elsewhere. Home first: one round trip if it
    // went home. (Not while a walk is still looking: the write region
    // already said no.)
    if (!listed(e.failed, e.current)) e.failed.push_back(e.current);
    e.current.clear();
    e.home_tried = true;
    ++counters_.homings;
    return {ppaf_move::kind::homing, std::string{write_region}};
  }
  return walk(key, e, tried, account_read_regions);
}

void partition_failover::on_success(std::string_view collection_rid,
                                    std::string_view range_id,
                                    std::string_view region,
                                    std::string_view write_region) {
  auto key = key_of(collection_rid, range_id);
  auto it = entries_.find(key);
  if (it == entries_.end()) return;
  auto& e = it->second;
  const std::string_view going =
      e.current.empty() ? write_region : std::string_view{e.current};
  if (!same_region(region, going)) return; // a stale attempt elsewhere
  if (same_region(region, write_region)) {
    // Home (again): nothing to override, nothing counted.
    if (!e.current.empty() || e.home_tried) ++counters_.confirmed;
    erase(key);
    return;
  }
  touch(key);
  e.failed.clear();
  e.home_tried = false;
  e.timeouts = 0;
  ++counters_.confirmed;
}

std::size_t partition_failover::retain_regions(
    const std::vector<std::string>& account_read_regions) {
  std::vector<std::string> gone;
  for (const auto& [key, e] : entries_)
    if (!e.current.empty() && !listed(account_read_regions, e.current))
      gone.push_back(key);
  for (const auto& k : gone)
    erase(k);
  counters_.drops += gone.size();
  return gone.size();
}

bool partition_failover::forget_range(std::string_view collection_rid,
                                      std::string_view range_id) {
  auto key = key_of(collection_rid, range_id);
  if (entries_.find(key) == entries_.end()) return false;
  erase(key);
  return true;
}

} // namespace georoute
