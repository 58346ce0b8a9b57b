#include "georoute/actors/policy/location_table.hpp"

#include <algorithm>
#include <utility>

namespace georoute {

namespace {

char lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

std::string to_lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out)
    c = lower(c);
  return out;
}

/// "scheme://host..." with a non-empty scheme and host.
bool is_absolute(std::string_view endpoint) {
  auto sep = endpoint.find("://");
  if (sep == std::string_view::npos || sep == 0) return false;
  for (std::size_t i = 0; i < sep; ++i) {
    char c = lower(endpoint[i]);
    bool ok =
        (c >= 'a' && c <= 'z') ||
        (i > 0 && ((c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.'));
    if (!ok) return false;
  }
  auto host_at = sep + 3;
  return host_at < endpoint.size() && endpoint[host_at] != '/' &&
         endpoint[host_at] != '?' && endpoint[host_at] != '#';
}

bool has_port(std::string_view authority) {
  if (!authority.empty() && authority.front() == '[') {
    auto close = authority.find(']');
    return close != std::string_view::npos && close + 1 < authority.size() &&
           authority[close + 1] == ':';
  }
  return authority.find(':') != std::string_view::npos;
}

const region_entry* find_by_name(const std::vector<region_entry>& map,
                                 std::string_view name) {
  for (const auto& e : map)
    if (same_region(e.name, name)) return &e;
  return nullptr;
}

const region_entry* find_by_key(const std::vector<region_entry>& map,
                                const std::string& key) {
  for (const auto& e : map)
    if (e.key == key) return &e;
  return nullptr;
}

bool is_excluded(const std::vector<std::string>& excluded,
                 std::string_view name) {
  return std::any_of(
      excluded.begin(), excluded.end(),
      [&](const std::string& x) { return same_region(x, name); });
}

/// Builds the name list and the name -> endpoint map of one region list
/// (LocationCache.UpdateLocationCache step 3): skip empty names and
/// non-absolute endpoints; keep account order; a duplicate name overwrites the
/// endpoint in place but is listed twice.
void build_regions(const std::vector<account_region>& regions,
                   std::vector<std::string>& names,
                   std::vector<region_entry>& map) {
  names.clear();
  map.clear();
  for (const auto& r : regions) {
    if (r.name.empty() || !is_absolute(r.endpoint)) continue;
    names.push_back(r.name);
    auto key = normalize_endpoint(r.endpoint);
    auto it = std::find_if(map.begin(), map.end(), [&](const region_entry& e) {
      return same_region(e.name, r.name);
    });
    if (it != map.end()) {
      it->endpoint = r.endpoint;
      it->key = std::move(key);
    } else {
      map.push_back(region_entry{r.name, r.endpoint, std::move(key)});
    }
  }
}

} // namespace

std::string normalize_endpoint(std::string_view endpoint) {
  auto sep = endpoint.find("://");
  if (sep == std::string_view::npos) {
    auto out = to_lower(endpoint);
    if (out.empty() || out.back() != '/') out += '/';
    return out;
  }
  auto scheme = to_lower(endpoint.substr(0, sep));
  auto rest = endpoint.substr(sep + 3);
  auto path_at = rest.find_first_of("/?#");
  auto authority = to_lower(rest.substr(0, path_at));
  std::string path = path_at == std::string_view::npos
                         ? std::string("/")
                         : std::string(rest.substr(path_at));
  if (!has_port(authority)) {
    if (scheme == "http")
      authority += ":80";
    else if (scheme == "https")
      authority += ":443";
  }
  if (path.back() != '/') path += '/';
  return scheme + "://" + authority + path;
}

bool same_region(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

// -- construction and changes ----------------------------------------------

location_table::location_table(location_table_options options)
    : options_(std::move(options)),
      default_key_(normalize_endpoint(options_.default_endpoint)) {
  rebuild(policy_time{});
}

void location_table::rebuild(policy_time now) {
  // Drop what has expired, as the SDK does on every update
  // (LocationCache.UpdateLocationCache step 2).
  for (auto it = marks_.begin(); it != marks_.end();) {
    if (mark_live(it->second, now))
      ++it;
    else
      it = marks_.erase(it);
  }
  // LocationCache.UpdateLocationCache step 7.
  if (!options_.preferred_regions.empty()) {
    effective_preferred_ = options_.preferred_regions;
  } else if (const auto* e = find_by_key(read_map_, default_key_)) {
    effective_preferred_ = {e->name};
  } else {
    effective_preferred_ = read_regions_;
  }
  updated_at_ = now;
  // Every mark left is live at `now` (the expired ones were dropped above),
  // and stays live until its own expiry: until the earliest of those the
  // lists below are exact.
  lists_valid_until_ = policy_time::max();
  for (const auto& [key, m] : marks_) {
    auto until = m.at > policy_time::max() - options_.unavailable_expiry
                     ? policy_time::max()
                     : m.at + options_.unavailable_expiry;
    lists_valid_until_ = std::min(lists_valid_until_, until);
  }
  writes_at_rebuild_ = compute_write_endpoints(now);
  reads_at_rebuild_ = compute_read_endpoints(now);
}

location_table location_table::with_account(const database_account& account,
                                            policy_time now) const {
  location_table next = *this;
  next.has_account_ = true;
  next.account_multi_write_ = account.enable_multiple_write_locations;
  // Explicit values only: an account that does not say keeps the last one.
  if (account.per_partition_failover)
    next.account_ppaf_ = *account.per_partition_failover;
  build_regions(account.readable, next.read_regions_, next.read_map_);
  build_regions(account.writable, next.write_regions_, next.write_map_);
  next.rebuild(now);
  return next;
}

location_table
location_table::with_preferences(std::vector<std::string> preferred,
                                 policy_time now) const {
  location_table next = *this;
  next.options_.preferred_regions = std::move(preferred);
  next.rebuild(now);
  return next;
}

location_table location_table::with_mark(std::string_view endpoint, bool read,
                                         bool write, policy_time now) const {
  location_table next = *this;
  if (!read && !write) return next;
  auto key = normalize_endpoint(endpoint);
  auto it = next.marks_.find(key);
  if (it == next.marks_.end() || !mark_live(it->second, now)) {
    next.marks_[key] = mark_state{now, read, write};
  } else {
    it->second.at = now;
    it->second.read = it->second.read || read;
    it->second.write = it->second.write || write;
  }
  next.rebuild(now);
  return next;
}

location_table
location_table::with_fleet_demotions(std::vector<std::string> reads,
                                     std::vector<std::string> writes,
                                     policy_time now) const {
  location_table next = *this;
  next.fleet_reads_ = std::move(reads);
  next.fleet_writes_ = std::move(writes);
  next.rebuild(now);
  return next;
}

location_table
location_table::with_expired_marks_dropped(policy_time now) const {
  location_table next = *this;
  next.rebuild(now);
  return next;
}

// -- marks -----------------------------------------------------------------

bool location_table::mark_live(const mark_state& m, policy_time now) const {
  return now - m.at <= options_.unavailable_expiry;
}

bool location_table::unavailable_by_key(const std::string& key, op_kind op,
                                        policy_time now) const {
  auto it = marks_.find(key);
  if (it == marks_.end() || !mark_live(it->second, now)) return false;
  return op == op_kind::read ? it->second.read : it->second.write;
}

bool location_table::is_unavailable(std::string_view endpoint, op_kind op,
                                    policy_time now) const {
  // The table's own spellings skip normalizing (an allocation per call).
  if (const auto* known = known_key(endpoint))
    return unavailable_by_key(*known, op, now);
  return unavailable_by_key(normalize_endpoint(endpoint), op, now);
}

// -- endpoint lists --------------------------------------------------------

// GPAE (LocationCache.GetPreferredAvailableEndpoints), with the new preference
// list used immediately.
std::vector<std::string>
location_table::preferred_available(const std::vector<region_entry>& by_name,
                                    const std::vector<std::string>& ordered,
                                    op_kind op, const std::string& fallback,
                                    policy_time now) const {
  if (!options_.endpoint_discovery) return {fallback};
  std::vector<std::string> result;
  if (can_use_multiple_write_locations() || op == op_kind::read) {
    std::vector<const region_entry*> available;
    std::vector<const region_entry*> demoted; // by the fleet: after healthy
    std::vector<const region_entry*> unavailable;
    const auto& fleet = op == op_kind::read ? fleet_reads_ : fleet_writes_;
    auto place = [&](const region_entry& e) {
      if (unavailable_by_key(e.key, op, now))
        unavailable.push_back(&e);
      else if (std::any_of(fleet.begin(), fleet.end(),
                           [&](const std::string& r) {
                             return same_region(r, e.name);
                           }))
        demoted.push_back(&e);
      else
        available.push_back(&e);
    };
    if (!options_.preferred_regions.empty()) {
      for (const auto& name : options_.preferred_regions)
        if (const auto* e = find_by_name(by_name, name)) place(*e);
    } else {
      for (const auto& name : ordered) {
        const auto* e = find_by_name(by_name, name);
        if (e == nullptr) continue;
        if (e->key == default_key_) {
          // A regional default endpoint pins the client to itself.
          available.clear();
          demoted.clear();
          break;
        }
        place(*e);
      }
    }
    // A region the fleet demoted is still available, after the healthy
    // ones: it never lets the fallback in.
    available.insert(available.end(), demoted.begin(), demoted.end());
    // Every region is marked: the reference puts the fallback first. When
    // that is the region-agnostic account endpoint and the account's
    // regions are known, georoute tries the marked regions instead, in
    // preference order: a mark is a hint that expires, while the account
    // endpoint names no region and may lag a write-region move (the stale
    // fallback the engine exists to avoid).
    bool agnostic = normalize_endpoint(fallback) == default_key_;
    if (available.empty() && !(agnostic && !unavailable.empty())) {
      result.push_back(fallback);
      auto fallback_key = normalize_endpoint(fallback);
      unavailable.erase(std::remove_if(unavailable.begin(), unavailable.end(),
                                       [&](const region_entry* e) {
                                         return e->key == fallback_key;
                                       }),
                        unavailable.end());
    }
    for (const auto* e : available)
      result.push_back(e->endpoint);
    for (const auto* e : unavailable)
      result.push_back(e->endpoint);
  } else {
    for (const auto& name : ordered)
      if (const auto* e = find_by_name(by_name, name))
        result.push_back(e->endpoint);
  }
  if (result.empty()) result.push_back(fallback);
  return result;
}

std::vector<std::string>
location_table::compute_write_endpoints(policy_time now) const {
  return preferred_available(write_map_, write_regions_, op_kind::write,
                             options_.default_endpoint, now);
}

std::vector<std::string>
location_table::compute_read_endpoints(policy_time now) const {
  return preferred_available(read_map_, read_regions_, op_kind::read,
                             compute_write_endpoints(now).front(), now);
}

std::vector<std::string>
location_table::write_endpoints(policy_time now) const {
  if (now <= lists_valid_until_) return writes_at_rebuild_;
  return compute_write_endpoints(now);
}

std::vector<std::string> location_table::read_endpoints(policy_time now) const {
  if (now <= lists_valid_until_) return reads_at_rebuild_;
  return compute_read_endpoints(now);
}

const std::vector<std::string>& location_table::applicable_ref(
    op_kind op, const std::vector<std::string>& excluded, policy_time now,
    bool& fell_back, std::vector<std::string>& scratch) const {
  if (excluded.empty() && now <= lists_valid_until_) {
    fell_back = false;
    return op == op_kind::read ? reads_at_rebuild_ : writes_at_rebuild_;
  }
  scratch = applicable(op, excluded, now, fell_back);
  return scratch;
}

const std::string* location_table::known_key(std::string_view endpoint) const {
  for (const auto* map : {&write_map_, &read_map_})
    for (const auto& e : *map)
      if (e.endpoint == endpoint) return &e.key;
  if (endpoint == options_.default_endpoint) return &default_key_;
  return nullptr;
}

std::vector<std::string>
location_table::applicable(op_kind op, const std::vector<std::string>& excluded,
                           policy_time now, bool& fell_back) const {
  fell_back = false;
  if (excluded.empty())
    return op == op_kind::read ? read_endpoints(now) : write_endpoints(now);
  if (!options_.endpoint_discovery) return {options_.default_endpoint};
  const auto& by_name = op == op_kind::read ? read_map_ : write_map_;
  std::vector<std::string> result;
  for (const auto& name : effective_preferred_) {
    if (is_excluded(excluded, name)) continue;
    if (const auto* e = find_by_name(by_name, name))
      result.push_back(e->endpoint);
  }
  if (result.empty()) {
    fell_back = true;
    result.push_back(write_endpoints(now).front());
  }
  return result;
}

std::vector<std::string>
location_table::applicable_endpoints(op_kind op,
                                     const std::vector<std::string>& excluded,
                                     policy_time now) const {
  bool fell_back = false;
  return applicable(op, excluded, now, fell_back);
}

// -- regions ---------------------------------------------------------------

std::string
location_table::account_read_endpoint(std::string_view region) const {
  for (const auto& e : read_map_)
    if (same_region(e.name, region)) return e.endpoint;
  return {};
}

std::string location_table::region_of(std::string_view endpoint) const {
  std::string normalized;
  const auto* known = known_key(endpoint);
  if (known == nullptr) normalized = normalize_endpoint(endpoint);
  const auto& key = known != nullptr ? *known : normalized;
  if (const auto* e = find_by_key(write_map_, key)) return e->name;
  if (const auto* e = find_by_key(read_map_, key)) return e->name;
  if (key == default_key_ && !write_regions_.empty())
    return write_regions_.front();
  return {};
}

std::string location_table::hub_endpoint() const {
  if (!write_regions_.empty())
    if (const auto* e = find_by_name(write_map_, write_regions_.front()))
      return e->endpoint;
  return options_.default_endpoint;
}

// -- resolution ------------------------------------------------------------

resolution location_table::resolve(const resolve_input& in,
                                   policy_time now) const {
  resolution out;
  if (!in.pinned_endpoint.empty()) {
    out.endpoint = in.pinned_endpoint;
    out.route = resolve_route::pinned;
  } else if (in.route_to_hub) {
    out.endpoint = hub_endpoint();
    out.route = resolve_route::hub;
  } else if (!in.use_preferred ||
             (in.op == op_kind::write &&
              !can_use_multiple_write_locations(in.is_document))) {
    // Branch A: flip-flop between the first two write regions in account
    // order; marks are ignored (manual failover).
    if (options_.endpoint_discovery && !write_regions_.empty()) {
      auto i = std::min<std::size_t>(in.location_index % 2,
                                     write_regions_.size() - 1);
      out.endpoint = find_by_name(write_map_, write_regions_[i])->endpoint;
      out.route = resolve_route::write_regions;
    } else {
      out.endpoint = options_.default_endpoint;
      out.route = resolve_route::default_endpoint;
    }
  } else {
    bool fell_back = false;
    std::vector<std::string> scratch;
    const auto& eps =
        applicable_ref(in.op, in.excluded_regions, now, fell_back, scratch);
    auto pick = in.location_index % eps.size();
    if (!in.avoid_endpoint.empty()) {
      const auto avoid = normalize_endpoint(in.avoid_endpoint);
      for (std::size_t step = 1;
           step < eps.size() && normalize_endpoint(eps[pick]) == avoid; ++step)
        pick = (pick + 1) % eps.size();
    }
    out.endpoint = eps[pick];
    out.route = fell_back ? resolve_route::exclusion_fallback
                          : resolve_route::applicable;
  }
  out.region = region_of(out.endpoint);
  return out;
}

refresh_verdict
location_table::should_refresh_endpoints(policy_time now) const {
  if (!options_.endpoint_discovery) return {false, true, 0};
  const bool wants_multi_but_account_single =
      options_.use_multiple_write_locations && !account_multi_write_;
  const std::string most_preferred = effective_preferred_.empty()
                                         ? std::string{}
                                         : effective_preferred_.front();
  auto reads = read_endpoints(now);
  if (is_unavailable(reads.front(), op_kind::read, now))
    return {true, reads.size() > 1, 1};
  if (!most_preferred.empty()) {
    const auto* e = find_by_name(read_map_, most_preferred);
    if (e != nullptr && e->key != normalize_endpoint(reads.front()))
      return {true, true, 2};
    if (e == nullptr) return {true, true, 3};
  }
  auto writes = write_endpoints(now);
  if (!can_use_multiple_write_locations()) {
    if (is_unavailable(writes.front(), op_kind::write, now))
      return {true, writes.size() > 1, 4};
    return {wants_multi_but_account_single, true, 5};
  }
  if (!most_preferred.empty()) {
    if (const auto* e = find_by_name(write_map_, most_preferred))
      return {wants_multi_but_account_single ||
                  e->key != normalize_endpoint(writes.front()),
              true, 6};
    return {true, true, 7};
  }
  return {wants_multi_but_account_single, true, 8};
}

} // namespace georoute
