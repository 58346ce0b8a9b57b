#include "georoute/actors/policy/change_feed.hpp"

#include "georoute/actors/policy/epk.hpp"
#include "georoute/actors/policy/fnv.hpp"
#include "georoute/actors/policy/json_check.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <ctime>
#include <nlohmann/json.hpp>

namespace georoute {

namespace {

/// More cursors than this is not a continuation this engine wrote: a
/// collection has far fewer ranges.
constexpr size_t max_cursors = 100'000;

const char* origin_name(feed_origin o) {
  switch (o) {
  case feed_origin::beginning:
    return "beginning";
  case feed_origin::now:
    return "now";
  case feed_origin::time:
    return "time";
  }
  return "beginning";
}

std::string upper(std::string text) {
  for (auto& c : text)
    if (c >= 'a' && c <= 'f') c = static_cast<char>(c - 'a' + 'A');
  return text;
}

/// A problem with an EPK interval, naming `field` ("range" or
/// "cursors[2]"), or std::nullopt.
std::optional<std::string> interval_problem(const std::string& field,
                                            const std::string& min,
                                            const std::string& max) {
  if (!is_epk_text(min))
    return field + " min '" + min +
           "' is not an EPK (upper-case hex digits, \"\" the lowest)";
  if (!is_epk_text(max) || max.empty())
    return field + " max '" + max +
           "' is not an EPK (upper-case hex digits, \"FF\" the end)";
  if (epk_compare(max, "FF") > 0)
    return field + " max '" + max + "' lies past the end of the key space, FF";
  if (epk_compare(min, max) >= 0)
    return field + " [" + min + ", " + max +
           ") is empty: min must be below max, so it overlaps no range";
  return std::nullopt;
}

/// The pk JSON texts name the same key.
bool same_key(const std::string& a, const std::string& b) {
  auto x = nlohmann::json::parse(a, nullptr, false);
  auto y = nlohmann::json::parse(b, nullptr, false);
  return !x.is_discarded() && !y.is_discarded() && x == y;
}

std::string interval_text(const std::string& min, const std::string& max) {
  return "[" + min + ", " + max + ")";
}

/// A continuation's checksum: FNV-1a 64 of its JSON without "sum", as 16
/// lower-case hex digits. nlohmann::json sorts the keys, so the text is the
/// same whichever layout the token came in.
std::string token_sum(nlohmann::json token) {
  token.erase("sum");
  auto h = fnv1a64(token.dump());
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, h >>= 4)
    out[static_cast<size_t>(i)] = digits[h & 0xf];
  return out;
}

/// The interval `cursors` tile together, or a problem naming two of them
/// that overlap or leave a gap.
result<std::pair<std::string, std::string>>
tiled_interval(const std::deque<feed_cursor>& cursors) {
  std::vector<const feed_cursor*> sorted;
  for (const auto& c : cursors)
    sorted.push_back(&c);
  std::sort(sorted.begin(), sorted.end(),
            [](auto* a, auto* b) { return epk_compare(a->min, b->min) < 0; });
  for (size_t i = 1; i < sorted.size(); ++i) {
    const auto& a = *sorted[i - 1];
    const auto& b = *sorted[i];
    auto order = epk_compare(a.max, b.min);
    if (order > 0)
      return problem{"the cursors " + interval_text(a.min, a.max) + " and " +
                     interval_text(b.min, b.max) + " overlap"};
    if (order < 0)
      return problem{"the cursors " + interval_text(a.min, a.max) + " and " +
                     interval_text(b.min, b.max) +
                     " leave a gap: no cursor covers " +
                     interval_text(a.max, b.min) +
                     " (a cursor was removed from the token), so the changes "
                     "there would never be read"};
  }
  return std::pair{sorted.front()->min, sorted.back()->max};
}

/// What is wrong when the cursors tile [lo, hi) and the scope is
/// [min, max), or std::nullopt when the two are the same.
std::optional<std::string> scope_problem(const std::string& lo,
                                         const std::string& hi,
                                         const std::string& min,
                                         const std::string& max) {
  auto scope = "its scope " + interval_text(min, max);
  auto lost = " is missing from the token (cut or edited), so the changes "
              "there would never be read";
  if (epk_compare(lo, min) > 0)
    return "no cursor covers " + interval_text(min, lo) + " of " + scope +
           ": its first cursor" + lost;
  if (epk_compare(hi, max) < 0)
    return "no cursor covers " + interval_text(hi, max) + " of " + scope +
           ": its last cursor" + lost;
  if (epk_compare(lo, min) < 0 || epk_compare(hi, max) > 0)
    return "the cursors cover " + interval_text(lo, hi) + ", past " + scope +
           ": the scope or a cursor was edited";
  return std::nullopt;
}

} // namespace

std::optional<int64_t> feed_lsn_of(std::string_view etag) {
  auto v = etag;
  if (v.substr(0, 2) == "W/") v.remove_prefix(2);
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"')
    v = v.substr(1, v.size() - 2);
  if (v.empty()) return std::nullopt;
  int64_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc{} || end != v.data() + v.size() || n < 0)
    return std::nullopt;
  return n;
}

bool is_epk_text(const std::string& text) {
  if (text.size() > 64) return false;
  return std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F');
  });
}

std::string http_date_of(int64_t unix_ms) {
  auto secs = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  auto n = std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return std::string{buf, n};
}

namespace {

/// Past the JSON string that starts at `i` (a '"'); text.size() if open.
size_t skip_string(std::string_view text, size_t i) {
  for (++i; i < text.size(); ++i) {
    if (text[i] == '\\')
      ++i;
    else if (text[i] == '"')
      return i + 1;
  }
  return text.size();
}

/// Past the JSON value that starts at `i` (valid JSON assumed).
size_t skip_value(std::string_view text, size_t i) {
  if (text[i] == '"') return skip_string(text, i);
  if (text[i] != '{' && text[i] != '[') {
    while (i < text.size() && text[i] != ',' && text[i] != '}' &&
           text[i] != ']')
      ++i;
    return i;
  }
  int depth = 0;
  while (i < text.size()) {
    char c = text[i];
    if (c == '"') {
      i = skip_string(text, i);
      continue;
    }
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
    ++i;
  }
  return text.size();
}

size_t skip_space(std::string_view text, size_t i) {
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t' ||
                             text[i] == '\n' || text[i] == '\r'))
    ++i;
  return i;
}

/// The text of member `name` of the JSON object `text` (valid JSON
/// assumed; a key written with escapes is not recognized), or "".
std::string_view member_text(std::string_view text, std::string_view name) {
  auto i = skip_space(text, 0);
  if (i >= text.size() || text[i] != '{') return {};
  i = skip_space(text, i + 1);
  while (i < text.size() && text[i] == '"') {
    auto key_end = skip_string(text, i);
    auto key = text.substr(i + 1, key_end - i - 2);
    i = skip_space(text, key_end);
    if (i >= text.size() || text[i] != ':') return {};
    i = skip_space(text, i + 1);
    if (i >= text.size()) return {};
    auto end = skip_value(text, i);
    if (key == name) return text.substr(i, end - i);
    i = skip_space(text, end);
    if (i < text.size() && text[i] == ',') i = skip_space(text, i + 1);
  }
  return {};
}

} // namespace

result<feed_page_text> scan_feed_page(std::string_view body) {
  // Checked first (one pass, no allocation; nlohmann for what the scanner
  // does not follow), so that the scans below may assume valid JSON.
  if (!is_json_object_text(body) && !nlohmann::json::accept(body))
    return problem{"the change-feed page is not a JSON object"};
  feed_page_text out;
  out.documents = member_text(body, "Documents");
  if (out.documents.empty() || out.documents.front() != '[')
    return problem{"a change-feed page without a Documents array"};
  auto docs = out.documents;
  auto i = skip_space(docs, 1);
  while (i < docs.size() && docs[i] != ']') {
    auto end = skip_value(docs, i);
    std::optional<int64_t> lsn;
    if (docs[i] == '{') {
      auto v = member_text(docs.substr(i, end - i), "_lsn");
      if (!v.empty()) lsn = feed_lsn_of(v);
    }
    out.lsns.push_back(lsn);
    i = skip_space(docs, end);
    if (i < docs.size() && docs[i] == ',') i = skip_space(docs, i + 1);
  }
  return out;
}

result<change_feed_state> change_feed_state::fresh(const feed_scope& scope,
                                                   int64_t now_ms) {
  change_feed_state st;
  st.link_ = scope.collection_link;
  st.start_ = scope.start;
  feed_cursor all{"", "FF", {}};
  if (!scope.partition_key_json.empty() &&
      (!scope.range_max.empty() || !scope.range_min.empty()))
    return problem{"partition_key_json and range_min/range_max: a feed reads "
                   "one partition key or one EPK range, not both"};
  if (!scope.partition_key_json.empty()) {
    auto pk = parse_partition_key_json(scope.partition_key_json);
    if (!pk)
      return problem{"partition_key_json: " + scope.partition_key_json +
                     " is not a partition key: " + pk.error().what};
    st.pk_ = scope.partition_key_json;
  }
  if (!scope.range_min.empty() && scope.range_max.empty())
    return problem{"range_min is set without range_max: a feed range needs "
                   "both bounds (\"FF\" is the end of the key space)"};
  if (!scope.range_max.empty()) {
    auto min = upper(scope.range_min);
    auto max = upper(scope.range_max);
    if (auto p = interval_problem("range", min, max)) return problem{*p};
    all = feed_cursor{min, max, {}};
  }
  switch (scope.start) {
  case feed_origin::time:
    if (scope.start_time_ms < 0)
      return problem{"start_time_ms: " + std::to_string(scope.start_time_ms) +
                     " is before the Unix epoch"};
    if (scope.start_time_ms > now_ms)
      return problem{"start_time_ms: " + http_date_of(scope.start_time_ms) +
                     " is in the future (now is " + http_date_of(now_ms) +
                     "); a feed cannot start after now: start it now "
                     "instead"};
    st.start_time_ms_ = scope.start_time_ms;
    break;
  case feed_origin::beginning:
  case feed_origin::now:
    if (scope.start_time_ms != 0)
      return problem{"start_time_ms is set, but the feed does not start at a "
                     "time (start is " +
                     std::string{origin_name(scope.start)} + ")"};
    break;
  }
  st.scope_min_ = all.min;
  st.scope_max_ = all.max;
  st.cursors_.push_back(std::move(all));
  return st;
}

result<change_feed_state> change_feed_state::resume(const std::string& token,
                                                    const std::string& link) {
  feed_scope asked;
  asked.collection_link = link;
  return resume(token, asked);
}

result<change_feed_state> change_feed_state::resume(const std::string& token,
                                                    const feed_scope& asked) {
  auto bad = [](const std::string& what) {
    return problem{"continuation: " + what};
  };
  const auto& link = asked.collection_link;
  auto j = nlohmann::json::parse(token, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return bad("not a change-feed continuation: not a JSON object (cut short "
               "or damaged?); pass the continuation an earlier page "
               "returned, whole");
  auto v = j.find("v");
  if (v == j.end() || !v->is_number_integer())
    return bad("no version \"v\": not a change-feed continuation of this "
               "engine");
  auto version = v->get<int64_t>();
  if (version != 1 && version != 2)
    return bad("version " + v->dump() +
               " is not supported (this engine reads versions 1 and 2)");
  if (version == 1 && (j.contains("scope") || j.contains("sum")))
    return bad("a version-1 token has no \"scope\" or \"sum\": this one is a "
               "version-2 token whose version was edited");
  auto str = [&](const char* key) -> const nlohmann::json* {
    auto it = j.find(key);
    if (it == j.end() || !it->is_string()) return nullptr;
    return &*it;
  };
  change_feed_state st;
  const auto* coll = str("coll");
  if (coll == nullptr) return bad("\"coll\" is missing or not a string");
  if (coll->get<std::string>() != link)
    return bad("it belongs to the feed of '" + coll->get<std::string>() +
               "', not of '" + link + "'");
  st.link_ = link;
  const auto* rid = str("rid");
  if (rid == nullptr || rid->get<std::string>().empty())
    return bad("\"rid\" is missing or empty");
  st.rid_ = rid->get<std::string>();
  const auto* start = str("start");
  if (start == nullptr) return bad("\"start\" is missing or not a string");
  auto s = start->get<std::string>();
  if (s == "beginning") {
    st.start_ = feed_origin::beginning;
  } else if (s == "now") {
    st.start_ = feed_origin::now;
  } else if (s == "time") {
    st.start_ = feed_origin::time;
    auto t = j.find("time");
    if (t == j.end() || !t->is_number_integer() || t->get<int64_t>() < 0)
      return bad("\"time\" must be milliseconds since the epoch with start "
                 "\"time\"");
    st.start_time_ms_ = t->get<int64_t>();
  } else {
    return bad("start '" + s + "' is not beginning, now or time");
  }
  if (auto pk = j.find("pk"); pk != j.end()) {
    if (!pk->is_string()) return bad("\"pk\" is not a string");
    auto key = parse_partition_key_json(pk->get<std::string>());
    if (!key)
      return bad("\"pk\" " + pk->get<std::string>() +
                 " is not a partition key: " + key.error().what);
    st.pk_ = pk->get<std::string>();
  }
  if (version == 2) {
    auto sc = j.find("scope");
    if (sc == j.end())
      return bad("\"scope\" is missing: a version-2 token carries the EPK "
                 "interval its feed reads");
    auto min = sc->is_object() ? sc->find("min") : sc->end();
    auto max = sc->is_object() ? sc->find("max") : sc->end();
    if (!sc->is_object() || min == sc->end() || !min->is_string() ||
        max == sc->end() || !max->is_string())
      return bad("\"scope\" must be an object with string \"min\" and "
                 "\"max\"");
    st.scope_min_ = min->get<std::string>();
    st.scope_max_ = max->get<std::string>();
    if (auto p = interval_problem("scope", st.scope_min_, st.scope_max_))
      return bad(*p);
  }
  auto cs = j.find("cursors");
  if (cs == j.end() || !cs->is_array() || cs->empty())
    return bad("\"cursors\" must be a non-empty array");
  if (cs->size() > max_cursors)
    return bad("\"cursors\" has " + std::to_string(cs->size()) +
               " entries; no collection has that many ranges");
  if (!st.pk_.empty() && cs->size() != 1)
    return bad("a partition key's feed has one cursor, not " +
               std::to_string(cs->size()));
  for (size_t i = 0; i < cs->size(); ++i) {
    const auto& c = (*cs)[i];
    auto field = "cursors[" + std::to_string(i) + "]";
    if (!c.is_object()) return bad(field + " is not an object");
    auto min = c.find("min");
    auto max = c.find("max");
    if (min == c.end() || !min->is_string() || max == c.end() ||
        !max->is_string())
      return bad(field + " needs string \"min\" and \"max\"");
    feed_cursor cur{min->get<std::string>(), max->get<std::string>(), {}};
    if (auto p = interval_problem(field, cur.min, cur.max)) return bad(*p);
    if (auto e = c.find("etag"); e != c.end()) {
      if (!e->is_string() || e->get<std::string>().empty())
        return bad(field + " etag must be a non-empty string");
      cur.etag = e->get<std::string>();
    }
    st.cursors_.push_back(std::move(cur));
  }
  auto tiled = tiled_interval(st.cursors_);
  if (!tiled) return bad(tiled.error().what);
  const auto& [lo, hi] = *tiled;
  if (version == 2) {
    if (auto p = scope_problem(lo, hi, st.scope_min_, st.scope_max_))
      return bad(*p);
    const auto* sum = str("sum");
    if (sum == nullptr)
      return bad("its checksum \"sum\" is missing or not a string: a "
                 "version-2 token carries one; pass the continuation exactly "
                 "as a page returned it");
    if (sum->get<std::string>() != token_sum(j))
      return bad("its checksum \"sum\" does not match its content: the token "
                 "was changed after it was written (edited or damaged); pass "
                 "the continuation exactly as a page returned it");
  } else {
    // Version 1 did not record its scope: known only in the cases below.
    auto whole = epk_compare(lo, "") == 0 && epk_compare(hi, "FF") == 0;
    auto named = !asked.range_max.empty() &&
                 epk_compare(upper(asked.range_min), lo) == 0 &&
                 epk_compare(upper(asked.range_max), hi) == 0;
    if (st.pk_.empty() && !whole && !named)
      return bad(
          "written by an older georoute (version 1), which did not record the "
          "feed's scope, and its cursors cover only " +
          interval_text(lo, hi) +
          ", not the whole collection: a feed of that EPK range cannot be "
          "told from a whole feed's token that lost its first or last "
          "cursor, which would skip changes in silence. If the feed was "
          "started for exactly the range " +
          interval_text(lo, hi) +
          ", send that range (range_min/range_max) with the token; otherwise "
          "start the feed again (start = time, from when the last page you "
          "applied was read)");
    st.scope_min_ = lo;
    st.scope_max_ = hi;
  }
  if (auto p = st.check_matches(asked)) return *p;
  return st;
}

std::optional<problem>
change_feed_state::check_matches(const feed_scope& scope) const {
  if (!scope.partition_key_json.empty() &&
      !same_key(scope.partition_key_json, pk_))
    return problem{"partition_key_json: " + scope.partition_key_json +
                   " differs from the continuation's " +
                   (pk_.empty() ? std::string{"(none)"} : pk_) +
                   "; a continuation carries its scope"};
  if (!scope.range_max.empty() &&
      (!pk_.empty() || epk_compare(upper(scope.range_min), scope_min_) != 0 ||
       epk_compare(upper(scope.range_max), scope_max_) != 0))
    return problem{"range_min/range_max: " +
                   interval_text(scope.range_min, scope.range_max) +
                   " differs from the continuation's scope " +
                   (pk_.empty()
                        ? interval_text(scope_min_, scope_max_)
                        : std::string{"(the partition key "} + pk_ + ")") +
                   "; a continuation carries its scope"};
  return std::nullopt;
}

std::optional<problem> change_feed_state::bind(const std::string& rid) {
  if (rid_.empty()) {
    rid_ = rid;
    return std::nullopt;
  }
  if (rid_ == rid) return std::nullopt;
  return problem{"continuation: it was made for collection rid " + rid_ +
                 ", but '" + link_ + "' is now rid " + rid +
                 " (deleted and created again?): start a new feed"};
}

result<feed_target>
change_feed_state::target(const std::vector<partition_key_range>& overlapping) {
  auto& c = cursors_.front();
  std::vector<const partition_key_range*> hits;
  for (const auto& r : overlapping)
    if (epk_compare(r.min_inclusive, c.max) < 0 &&
        epk_compare(c.min, r.max_exclusive) < 0)
      hits.push_back(&r);
  std::sort(hits.begin(), hits.end(), [](auto* a, auto* b) {
    return epk_compare(a->min_inclusive, b->min_inclusive) < 0;
  });
  auto hole = [&] {
    return problem{"the routing map does not cover [" + c.min + ", " + c.max +
                   ")"};
  };
  if (hits.empty() || epk_compare(hits.front()->min_inclusive, c.min) > 0 ||
      epk_compare(hits.back()->max_exclusive, c.max) < 0)
    return hole();
  for (size_t i = 1; i < hits.size(); ++i)
    if (epk_compare(hits[i - 1]->max_exclusive, hits[i]->min_inclusive) != 0)
      return hole();
  if (hits.size() > 1) {
    // Cut: one cursor per range, each from the parent's position.
    auto parent = c;
    cursors_.pop_front();
    for (auto it = hits.rbegin(); it != hits.rend(); ++it) {
      const auto& r = **it;
      feed_cursor part;
      part.min = epk_compare(r.min_inclusive, parent.min) > 0 ? r.min_inclusive
                                                              : parent.min;
      part.max = epk_compare(r.max_exclusive, parent.max) < 0 ? r.max_exclusive
                                                              : parent.max;
      part.etag = parent.etag;
      cursors_.push_front(std::move(part));
    }
  }
  const auto& front = cursors_.front();
  const auto& r = *hits.front();
  feed_target t;
  t.range_id = r.id;
  if (epk_compare(front.min, r.min_inclusive) != 0 ||
      epk_compare(front.max, r.max_exclusive) != 0) {
    t.start_epk = front.min;
    t.end_epk = front.max;
  }
  return t;
}

std::string change_feed_state::if_none_match() const {
  const auto& c = cursors_.front();
  if (!c.etag.empty()) return c.etag;
  if (start_ == feed_origin::now) return "*";
  return {};
}

std::string change_feed_state::if_modified_since() const {
  if (!cursors_.front().etag.empty() || start_ != feed_origin::time) return {};
  return http_date_of(start_time_ms_);
}

bool change_feed_state::advance_front(const std::string& etag) {
  auto& c = cursors_.front();
  auto had = feed_lsn_of(c.etag);
  auto got = feed_lsn_of(etag);
  if (had && got && *got < *had) return true;
  c.etag = etag;
  return false;
}

result<feed_page_effect>
change_feed_state::on_page(const std::string& etag,
                           const std::vector<std::optional<int64_t>>& lsns) {
  if (etag.empty())
    return problem{"a change-feed page came without an etag, so the feed "
                   "could not continue after it"};
  feed_page_effect e;
  if (auto at = feed_lsn_of(cursors_.front().etag)) {
    for (size_t i = 0; i < lsns.size(); ++i) {
      if (lsns[i] && *lsns[i] <= *at) {
        if (e.drop.empty()) e.drop.resize(lsns.size(), false);
        e.drop[i] = true;
        ++e.dropped;
      }
    }
  }
  e.kept = lsns.size() - e.dropped;
  e.held = advance_front(etag);
  cursors_.push_back(std::move(cursors_.front()));
  cursors_.pop_front();
  // A page with nothing new (all of it replayed) counts as caught up.
  if (e.kept == 0)
    ++not_modified_in_a_row_;
  else
    not_modified_in_a_row_ = 0;
  return e;
}

result<feed_page_effect>
change_feed_state::on_not_modified(const std::string& etag) {
  if (etag.empty())
    return problem{"a 304 came without an etag, so the feed would not know "
                   "where it stands"};
  feed_page_effect e;
  e.held = advance_front(etag);
  cursors_.push_back(std::move(cursors_.front()));
  cursors_.pop_front();
  ++not_modified_in_a_row_;
  return e;
}

std::string change_feed_state::continuation() const {
  nlohmann::json j;
  j["v"] = 2;
  j["coll"] = link_;
  j["rid"] = rid_;
  j["start"] = origin_name(start_);
  if (start_ == feed_origin::time) j["time"] = start_time_ms_;
  if (!pk_.empty()) j["pk"] = pk_;
  j["scope"] = {{"min", scope_min_}, {"max", scope_max_}};
  auto& cs = j["cursors"] = nlohmann::json::array();
  for (const auto& c : cursors_) {
    nlohmann::json e;
    e["min"] = c.min;
    e["max"] = c.max;
    if (!c.etag.empty()) e["etag"] = c.etag;
    cs.push_back(std::move(e));
  }
  j["sum"] = token_sum(j);
  return j.dump();
}

} // namespace georoute
