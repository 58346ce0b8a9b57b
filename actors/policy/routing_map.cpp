#include "georoute/actors/policy/routing_map.hpp"

#include "georoute/actors/policy/epk.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <system_error>

namespace georoute {

namespace {

std::string describe(const partition_key_range& r) {
  return "\"" + r.id + "\" [\"" + r.min_inclusive + "\", \"" + r.max_exclusive +
         "\")";
}

bool is_offline(std::string_view status) {
  constexpr std::string_view offline = "offline";
  if (status.size() != offline.size()) return false;
  for (std::size_t i = 0; i < status.size(); ++i) {
    char c = status[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != offline[i]) return false;
  }
  return true;
}

/// The id as a 32-bit integer (the SDK parses ids with int.TryParse and
/// fails the whole map otherwise), or a problem.
result<long long> integer_id(const std::string& id) {
  int value = 0;
  const char* first = id.data();
  const char* last = id.data() + id.size();
  auto [ptr, ec] = std::from_chars(first, last, value);
  if (id.empty() || ec != std::errc{} || ptr != last)
    return problem{"partition key range id \"" + id +
                   "\" is not a 32-bit integer"};
  return static_cast<long long>(value);
}

/// Checks that the sorted `ranges` tile ["", "FF") exactly.
std::optional<problem>
check_complete(const std::vector<partition_key_range>& ranges) {
  if (ranges.empty())
    return problem{
        "no partition key ranges: the map must cover [\"\", \"FF\")"};
  for (std::size_t i = 1; i < ranges.size(); ++i) {
    const auto& prev = ranges[i - 1];
    const auto& cur = ranges[i];
    if (prev.max_exclusive == cur.min_inclusive) continue;
    const int c = epk_compare(prev.max_exclusive, cur.min_inclusive);
    if (c > 0)
      return problem{"ranges overlap: " + describe(prev) + " and " +
                     describe(cur)};
    if (c < 0)
      return problem{"gap between " + describe(prev) + " and " + describe(cur)};
    return problem{"ranges " + describe(prev) + " and " + describe(cur) +
                   " meet at a boundary written two ways; a complete map "
                   "repeats each boundary exactly"};
  }
  if (ranges.front().min_inclusive != epk_min)
    return problem{"incomplete map: the first range " +
                   describe(ranges.front()) + " does not start at \"\""};
  if (ranges.back().max_exclusive != epk_max)
    return problem{"incomplete map: the last range " + describe(ranges.back()) +
                   " does not end at \"FF\""};
  return std::nullopt;
}

} // namespace

result<routing_map>
routing_map::create_complete(std::vector<partition_key_range> ranges,
                             std::string etag) {
  std::vector<std::string> gone;
  for (const auto& r : ranges)
    gone.insert(gone.end(), r.parents.begin(), r.parents.end());
  std::unordered_map<std::string, partition_key_range> by_id;
  for (auto& r : ranges) {
    std::string id = r.id;
    by_id[std::move(id)] = std::move(r);
  }
  return build(std::move(by_id), std::move(gone), std::move(etag));
}

result<routing_map>
routing_map::try_combine(const std::vector<partition_key_range>& new_ranges,
                         std::string etag) const {
  std::vector<std::string> gone = gone_;
  for (const auto& r : new_ranges)
    gone.insert(gone.end(), r.parents.begin(), r.parents.end());
  std::unordered_map<std::string, partition_key_range> by_id;
  for (const auto& r : ranges_)
    by_id[r.id] = r;
  for (const auto& r : new_ranges)
    by_id[r.id] = r;
  return build(std::move(by_id), std::move(gone), std::move(etag));
}

result<routing_map>
routing_map::build(std::unordered_map<std::string, partition_key_range> by_id,
                   std::vector<std::string> gone, std::string etag) {
  std::sort(gone.begin(), gone.end());
  gone.erase(std::unique(gone.begin(), gone.end()), gone.end());
  routing_map m;
  for (auto& [id, r] : by_id)
    if (!std::binary_search(gone.begin(), gone.end(), id))
      m.ranges_.push_back(std::move(r));
  std::sort(m.ranges_.begin(), m.ranges_.end(),
            [](const partition_key_range& a, const partition_key_range& b) {
              if (a.min_inclusive != b.min_inclusive)
                return a.min_inclusive < b.min_inclusive;
              return a.id < b.id;
            });
  for (const auto& r : m.ranges_) {
    auto id = integer_id(r.id);
    if (!id) return id.error();
    if (epk_compare(r.min_inclusive, r.max_exclusive) >= 0)
      return problem{"range " + describe(r) + " is empty or inverted"};
    if (!is_offline(r.status)) m.highest_id_ = std::max(m.highest_id_, *id);
  }
  if (auto p = check_complete(m.ranges_)) return *p;
  for (std::size_t i = 0; i < m.ranges_.size(); ++i)
    m.by_id_.emplace(m.ranges_[i].id, i);
  m.gone_ = std::move(gone);
  m.etag_ = std::move(etag);
  return m;
}

bool routing_map::is_gone(std::string_view id) const {
  return std::binary_search(gone_.begin(), gone_.end(), id);
}

std::size_t routing_map::index_of(std::string_view epk) const {
  auto it =
      std::upper_bound(ranges_.begin(), ranges_.end(), epk,
                       [](std::string_view e, const partition_key_range& r) {
                         return epk_less(e, r.max_exclusive);
                       });
  return static_cast<std::size_t>(it - ranges_.begin());
}

const partition_key_range*
routing_map::range_by_epk(std::string_view epk) const {
  if (epk_compare(epk, epk_max) >= 0) return nullptr;
  const std::size_t i = index_of(epk);
  return i < ranges_.size() ? &ranges_[i] : nullptr;
}

const partition_key_range* routing_map::range_by_id(std::string_view id) const {
  auto it = by_id_.find(std::string{id});
  return it == by_id_.end() ? nullptr : &ranges_[it->second];
}

void routing_map::collect(const epk_range& r,
                          std::vector<std::size_t>& hits) const {
  const int c = epk_compare(r.min, r.max);
  if (c > 0 || (c == 0 && !(r.min_inclusive && r.max_inclusive)))
    return; // an empty query range
  // Ranges are contiguous: start at the one holding r.min (or just past it)
  // and walk up while the range still starts below r.max.
  for (std::size_t i = index_of(r.min); i < ranges_.size(); ++i) {
    const int d = epk_compare(ranges_[i].min_inclusive, r.max);
    if (d > 0 || (d == 0 && !r.max_inclusive)) break;
    hits.push_back(i);
  }
}

std::vector<partition_key_range>
routing_map::overlapping(const epk_range& r) const {
  return overlapping(std::vector<epk_range>{r});
}

std::vector<partition_key_range>
routing_map::overlapping(const std::vector<epk_range>& rs) const {
  std::vector<std::size_t> hits;
  for (const auto& r : rs)
    collect(r, hits);
  std::sort(hits.begin(), hits.end());
  hits.erase(std::unique(hits.begin(), hits.end()), hits.end());
  std::vector<partition_key_range> out;
  out.reserve(hits.size());
  for (auto i : hits)
    out.push_back(ranges_[i]);
  return out;
}

} // namespace georoute
