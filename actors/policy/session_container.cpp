#include "georoute/actors/policy/session_container.hpp"

#include <utility>

namespace georoute {

namespace {

std::vector<std::string_view> segments(std::string_view path) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '/') {
      ++i;
      continue;
    }
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    out.push_back(path.substr(i, j - i));
    i = j;
  }
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

} // namespace

namespace {

// "dbs/{db}/colls/{coll}" with no empty segment, nothing more: what
// collection_name_path returns for it is the text itself.
bool is_canonical_name_path(std::string_view name) {
  if (name.substr(0, 4) != "dbs/") return false;
  auto db_end = name.find('/', 4);
  if (db_end == std::string_view::npos || db_end == 4) return false;
  if (name.substr(db_end, 7) != "/colls/") return false;
  auto coll = name.substr(db_end + 7);
  return !coll.empty() && coll.find('/') == std::string_view::npos;
}

} // namespace

std::string collection_name_path(std::string_view name) {
  auto parts = segments(name);
  if (parts.size() >= 4 && parts[0] == "dbs" && parts[2] == "colls") {
    std::string out = "dbs/";
    out.append(parts[1]).append("/colls/").append(parts[3]);
    return out;
  }
  while (!name.empty() && name.front() == '/')
    name.remove_prefix(1);
  while (!name.empty() && name.back() == '/')
    name.remove_suffix(1);
  return std::string(name);
}

session_container::session_container(size_t max_collections)
    : capacity_(max_collections == 0 ? 1 : max_collections) {}

size_t session_container::capture(std::string_view collection_rid,
                                  std::string_view collection_name,
                                  std::string_view header) {
  if (trim(header).empty()) return 0;
  if (collection_rid.empty()) {
    ++counters_.ignored;
    return 0;
  }
  // A link already in the canonical form is its own name path: no copy on
  // every response (the router's links are normalized).
  std::string computed;
  std::string_view name = collection_name;
  if (!is_canonical_name_path(name)) {
    computed = collection_name_path(collection_name);
    name = computed;
  }
  auto it = find_rid(collection_rid);
  if (it != index_.end()) {
    auto& c = it->second;
    if (!c.last_header.empty() && c.last_header == header &&
        (name.empty() || c.name == name)) {
      // Merged before: nothing would change but the recency.
      order_.splice(order_.begin(), order_, c.position);
      counters_.captured += c.last_merged;
      counters_.malformed += c.last_malformed;
      return c.last_merged;
    }
  }
  // Parse entry by entry so that one bad entry costs only itself.
  session_token_set parsed;
  size_t malformed = 0;
  for (size_t pos = 0;;) {
    auto comma = header.find(',', pos);
    auto entry = header.substr(pos, comma == std::string_view::npos
                                        ? std::string_view::npos
                                        : comma - pos);
    auto one = parse_session_header(entry);
    if (one)
      merge_into(parsed, *one);
    else
      ++malformed;
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  counters_.malformed += malformed;
  if (parsed.empty()) return 0;

  std::string rid(collection_rid);
  if (it == index_.end()) {
    order_.push_front(rid);
    collection fresh;
    fresh.position = order_.begin();
    it = index_.emplace(rid, std::move(fresh)).first;
  } else {
    order_.splice(order_.begin(), order_, it->second.position);
  }
  auto& c = it->second;
  if (!name.empty() && c.name != name) {
    if (!c.name.empty()) {
      auto old = rids_by_name_.find(c.name);
      if (old != rids_by_name_.end()) {
        old->second.erase(rid);
        if (old->second.empty()) rids_by_name_.erase(old);
      }
    }
    c.name = std::string(name);
    rids_by_name_[c.name].insert(rid);
  }
  merge_into(c.tokens, parsed);
  ++c.version;
  c.last_header.assign(header);
  c.last_merged = parsed.size();
  c.last_malformed = malformed;
  counters_.captured += parsed.size();
  while (index_.size() > capacity_) {
    forget(index_.find(order_.back()));
    ++counters_.evicted;
  }
  return parsed.size();
}

std::optional<vector_session_token> session_container::token_for(
    std::string_view collection_rid, const std::string& range_id,
    const std::vector<std::string>& parent_range_ids) const {
  auto it = find_rid(collection_rid);
  if (it == index_.end()) return std::nullopt;
  const auto& tokens = it->second.tokens;
  auto own = tokens.find(range_id);
  if (own != tokens.end()) return own->second;
  // A child of a split (or of a merge) starts where its parents stopped.
  std::optional<vector_session_token> inherited;
  for (const auto& parent : parent_range_ids) {
    auto p = tokens.find(parent);
    if (p == tokens.end()) continue;
    inherited = inherited ? merge(*inherited, p->second) : p->second;
  }
  return inherited;
}

std::string session_container::header_for(
    std::string_view collection_rid, const std::string& range_id,
    const std::vector<std::string>& parent_range_ids) const {
  auto it = find_rid(collection_rid);
  if (it == index_.end()) return {};
  const auto& c = it->second;
  // A range with a token of its own: rendered once per merge, not per read.
  if (auto own = c.tokens.find(range_id); own != c.tokens.end()) {
    if (c.rendered.empty() || c.rendered_version != c.version ||
        c.rendered_range != range_id) {
      c.rendered = range_id + ":" + render(own->second);
      c.rendered_range = range_id;
      c.rendered_version = c.version;
    }
    return c.rendered;
  }
  auto token = token_for(collection_rid, range_id, parent_range_ids);
  return token ? range_id + ":" + render(*token) : std::string{};
}

std::unordered_map<std::string, session_container::collection>::iterator
session_container::find_rid(std::string_view rid) {
  key_buf_.assign(rid);
  return index_.find(key_buf_);
}

std::unordered_map<std::string, session_container::collection>::const_iterator
session_container::find_rid(std::string_view rid) const {
  key_buf_.assign(rid);
  return index_.find(key_buf_);
}

std::string
session_container::header_for_all(std::string_view collection_rid) const {
  auto it = find_rid(collection_rid);
  return it == index_.end() ? std::string{} : render(it->second.tokens);
}

void session_container::forget(
    std::unordered_map<std::string, collection>::iterator it) {
  auto& c = it->second;
  if (!c.name.empty()) {
    auto n = rids_by_name_.find(c.name);
    if (n != rids_by_name_.end()) {
      n->second.erase(it->first);
      if (n->second.empty()) rids_by_name_.erase(n);
    }
  }
  order_.erase(c.position);
  index_.erase(it);
}

bool session_container::clear_by_rid(std::string_view collection_rid) {
  auto it = index_.find(std::string(collection_rid));
  if (it == index_.end()) return false;
  forget(it);
  ++counters_.cleared;
  return true;
}

size_t session_container::clear_by_name(std::string_view collection_name) {
  auto n = rids_by_name_.find(collection_name_path(collection_name));
  if (n == rids_by_name_.end()) return 0;
  auto rids = n->second; // forget() edits the set
  size_t dropped = 0;
  for (const auto& rid : rids)
    dropped += clear_by_rid(rid) ? 1 : 0;
  return dropped;
}

session_source session_token_source(bool is_write,
                                    std::string_view consistency_level,
                                    bool caller_has_token) {
  if (is_write) return session_source::none;
  if (!consistency_level.empty() && consistency_level != "Session")
    return session_source::none;
  return caller_has_token ? session_source::caller : session_source::container;
}

} // namespace georoute
