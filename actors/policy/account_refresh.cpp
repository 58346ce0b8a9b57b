#include "georoute/actors/policy/account_refresh.hpp"

#include <algorithm>
#include <cctype>
#include <map>

namespace georoute {

namespace {

std::string lower(const std::string& s) {
  std::string r = s;
  std::transform(r.begin(), r.end(), r.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return r;
}

std::vector<std::string> names(const std::vector<account_region>& xs) {
  std::vector<std::string> r;
  for (const auto& x : xs)
    r.push_back(x.name);
  return r;
}

} // namespace

refresh_action
decide_refresh(bool force, bool fetch_in_flight, bool account_known,
               std::chrono::steady_clock::duration since_last,
               std::chrono::steady_clock::duration min_interval) {
  if (!force && account_known && since_last < min_interval)
    return refresh_action::skip;
  return fetch_in_flight ? refresh_action::join : refresh_action::fetch;
}

std::vector<std::string>
sweep_candidates(const std::string& global_endpoint,
                 const database_account* known,
                 const std::vector<std::string>& preferred_regions) {
  std::vector<std::string> result{global_endpoint};
  auto add = [&](const std::string& ep) {
    if (!ep.empty() &&
        std::find(result.begin(), result.end(), ep) == result.end())
      result.push_back(ep);
  };
  if (known == nullptr) return result;
  std::vector<account_region> all = known->readable;
  all.insert(all.end(), known->writable.begin(), known->writable.end());
  for (const auto& p : preferred_regions)
    for (const auto& r : all)
      if (lower(r.name) == lower(p)) add(r.endpoint);
  for (const auto& r : all)
    add(r.endpoint);
  return result;
}

topology_change diff_accounts(const database_account* before,
                              const database_account& after) {
  topology_change c;
  if (before == nullptr) {
    c.first = true;
    return c;
  }
  auto wb = names(before->writable);
  auto wa = names(after.writable);
  c.write_order_changed = wb != wa;
  c.write_region_switched = (wb.empty() ? std::string{} : wb.front()) !=
                            (wa.empty() ? std::string{} : wa.front());
  c.multi_write_changed = before->enable_multiple_write_locations !=
                          after.enable_multiple_write_locations;
  std::map<std::string, std::string> old_eps, new_eps;
  for (const auto& r : before->readable)
    old_eps.emplace(r.name, r.endpoint);
  for (const auto& r : after.readable)
    new_eps.emplace(r.name, r.endpoint);
  for (const auto& [name, ep] : new_eps) {
    auto i = old_eps.find(name);
    if (i == old_eps.end())
      c.added.push_back(name);
    else if (i->second != ep)
      c.endpoints_changed = true;
  }
  for (const auto& [name, ep] : old_eps)
    if (new_eps.count(name) == 0) c.removed.push_back(name);
  return c;
}

std::string refused_topology(const database_account* held,
                             const database_account& read) {
  if (held == nullptr || held->writable.empty() || !read.writable.empty())
    return {};
  return "writableLocations is empty (the account read before listed " +
         std::to_string(held->writable.size()) +
         " writable region(s)); the last topology is kept";
}

} // namespace georoute
