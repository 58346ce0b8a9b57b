#include "georoute/actors/policy/query_merge.hpp"

#include "georoute/actors/policy/fnv.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <iterator>
#include <limits>
#include <utility>

namespace georoute {

using nlohmann::json;

namespace {

constexpr double max_exact_integer = 9007199254740992.0; // 2^53

int rank(const json* v) {
  if (v == nullptr) return 0;
  switch (v->type()) {
  case json::value_t::null:
    return 1;
  case json::value_t::boolean:
    return 2;
  case json::value_t::number_integer:
  case json::value_t::number_unsigned:
  case json::value_t::number_float:
    return 3;
  case json::value_t::string:
    return 4;
  case json::value_t::array:
    return 5;
  default:
    return 6;
  }
}

template <class T>
int sign(T a, T b) {
  return a == b ? 0 : (a < b ? -1 : 1);
}

int compare_numbers(const json& a, const json& b) {
  // Integers compare exactly (doubles lose them past 2^53).
  if (a.is_number_integer() && b.is_number_integer()) {
    bool au = a.is_number_unsigned();
    bool bu = b.is_number_unsigned();
    if (au && bu) return sign(a.get<uint64_t>(), b.get<uint64_t>());
    if (!au && !bu) return sign(a.get<int64_t>(), b.get<int64_t>());
    if (au)
      return b.get<int64_t>() < 0 ? 1
                                  : sign(a.get<uint64_t>(), b.get<uint64_t>());
    return a.get<int64_t>() < 0 ? -1
                                : sign(a.get<uint64_t>(), b.get<uint64_t>());
  }
  return sign(a.get<double>(), b.get<double>());
}

json normalized(const json& v) {
  switch (v.type()) {
  case json::value_t::object: {
    json out = json::object();
    for (auto it = v.begin(); it != v.end(); ++it)
      out[it.key()] = normalized(it.value());
    return out;
  }
  case json::value_t::array: {
    json out = json::array();
    for (const auto& x : v)
      out.push_back(normalized(x));
    return out;
  }
  case json::value_t::number_float: {
    // Every integral double below 2^63 is exactly an int64.
    double d = v.get<double>();
    if (std::isfinite(d) && std::floor(d) == d &&
        std::fabs(d) < 9223372036854775808.0)
      return json(static_cast<int64_t>(d));
    return v;
  }
  default:
    return v;
  }
}

/// A number as the service prints it: integral values as integers.
std::optional<json> number_value(double d) {
  if (!std::isfinite(d)) return std::nullopt;
  if (std::floor(d) == d && std::fabs(d) < max_exact_integer)
    return json(static_cast<int64_t>(d));
  return json(d);
}

int64_t saturating_add(int64_t a, int64_t b) {
  if (a > std::numeric_limits<int64_t>::max() - b)
    return std::numeric_limits<int64_t>::max();
  return a + b;
}

const json* member(const json& object, const char* key) {
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

const json* order_item(const json& items, size_t i) {
  if (!items.is_array() || i >= items.size() || !items[i].is_object())
    return nullptr;
  return member(items[i], "item");
}

const json& order_items(const json& row) {
  static const json none;
  const json* items = row.is_object() ? member(row, "orderByItems") : nullptr;
  return items ? *items : none;
}

} // namespace

// -- free functions -----------------------------------------------------------

int compare_query_values(const json* a, const json* b) {
  int ra = rank(a);
  int rb = rank(b);
  if (ra != rb) return ra < rb ? -1 : 1;
  switch (ra) {
  case 2:
    return sign(a->get<bool>(), b->get<bool>());
  case 3:
    return compare_numbers(*a, *b);
  case 4:
    return sign(a->get_ref<const std::string&>().compare(
                    b->get_ref<const std::string&>()),
                0);
  default:
    return 0; // undefined, null, and two arrays or two objects tie
  }
}

std::string canonical_json(const json& value) {
  return normalized(value).dump(-1, ' ', false, json::error_handler_t::replace);
}

uint64_t row_hash(const json& row) {
  return fnv1a64(canonical_json(row));
}

uint64_t query_fingerprint(const query_info& info) {
  std::string text = info.distinct_type;
  auto add = [&](const std::string& s) {
    text += '\x1f';
    text += s;
  };
  add(std::to_string(info.top));
  add(std::to_string(info.offset));
  add(std::to_string(info.limit));
  for (const auto& list :
       {info.order_by, info.order_by_expressions, info.aggregates}) {
    add(std::to_string(list.size()));
    for (const auto& s : list)
      add(s);
  }
  add(info.rewritten_query);
  add(info.has_select_value ? "value" : "");
  return fnv1a64(text);
}

// -- hash_set64
// ----------------------------------------------------------------

bool hash_set64::contains(uint64_t hash) const {
  return std::any_of(runs_.begin(), runs_.end(), [&](const auto& run) {
    return std::binary_search(run.begin(), run.end(), hash);
  });
}

bool hash_set64::insert(uint64_t hash) {
  if (contains(hash)) return false;
  std::vector<uint64_t> carry{hash};
  while (!runs_.empty() && runs_.back().size() <= carry.size()) {
    const auto& last = runs_.back();
    std::vector<uint64_t> merged;
    merged.reserve(last.size() + carry.size());
    std::merge(last.begin(), last.end(), carry.begin(), carry.end(),
               std::back_inserter(merged));
    runs_.pop_back();
    carry = std::move(merged);
  }
  runs_.push_back(std::move(carry));
  ++size_;
  return true;
}

std::vector<uint64_t> hash_set64::sorted() const {
  std::vector<uint64_t> out;
  out.reserve(size_);
  for (const auto& run : runs_)
    out.insert(out.end(), run.begin(), run.end());
  std::sort(out.begin(), out.end());
  return out;
}

hash_set64 hash_set64::from_sorted(std::vector<uint64_t> hashes) {
  hash_set64 s;
  s.size_ = hashes.size();
  if (!hashes.empty()) s.runs_.push_back(std::move(hashes));
  return s;
}

// -- query_merger: construction
// ------------------------------------------------

query_merger::query_merger(query_info info, mode m, aggregate_kind agg)
    : info_(std::move(info)), mode_(m), agg_kind_(agg) {
  ordered_distinct_ = info_.distinct_type == "Ordered";
  unordered_distinct_ = info_.distinct_type == "Unordered";
}

result<query_merger> query_merger::make(query_info info) {
  const auto& d = info.distinct_type;
  if (d != "None" && d != "Ordered" && d != "Unordered")
    return problem{"queryInfo.distinctType '" + d +
                   "' is not None, Ordered or Unordered"};
  for (size_t i = 0; i < info.order_by.size(); ++i)
    if (info.order_by[i] != "Ascending" && info.order_by[i] != "Descending")
      return problem{"queryInfo.orderBy[" + std::to_string(i) + "] '" +
                     info.order_by[i] + "' is not Ascending or Descending"};
  for (auto [name, v] :
       {std::pair{"top", info.top}, std::pair{"offset", info.offset},
        std::pair{"limit", info.limit}})
    if (v < -1)
      return problem{std::string("queryInfo.") + name + " " +
                     std::to_string(v) + " is negative"};
  if (info.aggregates.empty()) {
    auto m = info.order_by.empty() ? mode::parallel : mode::order_by;
    return query_merger(std::move(info), m, aggregate_kind::none);
  }
  if (info.aggregates.size() > 1)
    return problem{"queryInfo.aggregates has " +
                   std::to_string(info.aggregates.size()) +
                   " aggregates: only one VALUE aggregate is supported"};
  if (!info.has_select_value)
    return problem{"aggregate queries must use the VALUE keyword "
                   "(queryInfo.hasSelectValue is false)"};
  if (!info.order_by.empty())
    return problem{"queryInfo has both aggregates and orderBy"};
  const auto& a = info.aggregates[0];
  aggregate_kind kind = a == "Count" || a == "CountIf" ? aggregate_kind::count
                        : a == "Sum"                   ? aggregate_kind::sum
                        : a == "Average"               ? aggregate_kind::average
                        : a == "Min"                   ? aggregate_kind::min
                        : a == "Max"                   ? aggregate_kind::max
                                                       : aggregate_kind::none;
  if (kind == aggregate_kind::none)
    return problem{"queryInfo.aggregates[0] '" + a +
                   "' is not Count, Sum, Average, Min or Max"};
  return query_merger(std::move(info), mode::aggregate, kind);
}

result<query_merger> query_merger::create(query_info info,
                                          std::vector<query_range> ranges) {
  if (ranges.empty())
    return problem{"a cross-partition query needs at least one range"};
  auto m = make(std::move(info));
  if (!m) return m;
  for (auto& r : ranges) {
    stream s;
    s.range = std::move(r);
    s.lineage.push_back(m->next_key_++);
    m->streams_.push_back(std::move(s));
  }
  return m;
}

result<query_merger> query_merger::resume(query_info info,
                                          const query_continuation& from) {
  auto m = make(std::move(info));
  if (!m) return m;
  auto fp = query_fingerprint(m->info_);
  if (from.query_hash != fp)
    return problem{"the continuation belongs to another query (query hash " +
                   hash_hex(from.query_hash) + ", this query " + hash_hex(fp) +
                   ")"};
  if (from.ranges.empty()) return problem{"the continuation has no ranges"};
  if (from.position < 0) return problem{"the continuation's position is < 0"};
  const auto& seen = from.distinct_seen;
  if (!seen.empty() && !m->unordered_distinct_)
    return problem{"the continuation carries a set of DISTINCT values but "
                   "the query's DISTINCT is not unordered"};
  if (std::adjacent_find(seen.begin(), seen.end(), std::greater_equal<>{}) !=
      seen.end())
    return problem{"the continuation's set of DISTINCT values does not "
                   "ascend without repeats"};
  if (m->unordered_distinct_ &&
      static_cast<int64_t>(seen.size()) != from.position)
    return problem{"the continuation's set holds " +
                   std::to_string(seen.size()) +
                   " DISTINCT values, but its position says " +
                   std::to_string(from.position) + " were returned"};
  const auto& items = from.order_by_items;
  if (!items.is_null()) {
    if (m->mode_ != mode::order_by)
      return problem{"the continuation carries sort keys but the query has "
                     "no ORDER BY"};
    if (!items.is_array() || items.size() != m->info_.order_by.size() ||
        !std::all_of(items.begin(), items.end(),
                     [](const json& x) { return x.is_object(); }))
      return problem{"the continuation's orderByItems do not match the " +
                     std::to_string(m->info_.order_by.size()) +
                     " sort keys of the plan"};
  }
  m->position_ = from.position;
  m->last_key_ = items;
  m->last_rid_ = from.rid;
  m->last_distinct_ = from.last_distinct;
  m->seen_ = hash_set64::from_sorted(seen);
  m->agg_ = from.aggregate;
  for (const auto& r : from.ranges) {
    stream s;
    s.range = r.range;
    s.lineage.push_back(m->next_key_++);
    s.next_token = r.token;
    s.done = r.done;
    for (auto h : r.skip)
      ++s.skip[h];
    bool by_key = m->mode_ == mode::order_by && !items.is_null();
    s.filtering =
        !s.done && m->mode_ != mode::aggregate && (by_key || !s.skip.empty());
    m->streams_.push_back(std::move(s));
  }
  return m;
}

// -- query_merger: input
// ---------------------------------------------------------

std::optional<problem> query_merger::check_rows(size_t range,
                                                const std::vector<json>& rows,
                                                aggregate_state* agg) const {
  for (size_t i = 0; i < rows.size(); ++i) {
    const json& r = rows[i];
    auto where = [&] {
      return "range " + std::to_string(range) + " ('" +
             streams_[range].range.id + "') row " + std::to_string(i) + ": ";
    };
    if (mode_ == mode::aggregate) {
      if (auto p = fold(r, *agg)) return problem{where() + p->what};
      continue;
    }
    if (mode_ != mode::order_by) continue;
    if (!r.is_object())
      return problem{where() +
                     "expected an ORDER BY row {\"_rid\", "
                     "\"orderByItems\", \"payload\"}, got " +
                     r.type_name()};
    const json* items = member(r, "orderByItems");
    if (items == nullptr || !items->is_array())
      return problem{where() + "orderByItems: expected an array"};
    if (items->size() != info_.order_by.size())
      return problem{where() + "orderByItems has " +
                     std::to_string(items->size()) + " entries, the plan " +
                     "sorts by " + std::to_string(info_.order_by.size())};
    for (size_t k = 0; k < items->size(); ++k)
      if (!(*items)[k].is_object())
        return problem{where() + "orderByItems[" + std::to_string(k) +
                       "]: expected {\"item\": value} or {}"};
    const json* rid = member(r, "_rid");
    if (rid != nullptr && !rid->is_string())
      return problem{where() + "_rid: expected a string"};
  }
  return std::nullopt;
}

std::optional<problem> query_merger::fold(const json& row,
                                          aggregate_state& agg) const {
  const json* e = &row;
  if (row.is_array()) {
    if (row.empty()) return problem{"an aggregate row is an empty array"};
    e = &row[0];
  }
  if (!e->is_object())
    return problem{std::string("expected an aggregate row [{\"item\": ..}], "
                               "got ") +
                   e->type_name()};
  // `{}`: the range's aggregate is undefined (the SDK ends the query with
  // no result, and so does a single range run by the emulator).
  if (e->empty()) {
    agg.undefined = true;
    return std::nullopt;
  }
  const json* item = member(*e, "item");
  switch (agg_kind_) {
  case aggregate_kind::count:
    if (item == nullptr) {
      agg.undefined = true;
    } else if (!item->is_number_integer() || item->get<int64_t>() < 0) {
      return problem{"item: expected a count, got " + item->dump()};
    } else {
      agg.count = saturating_add(agg.count, item->get<int64_t>());
    }
    return std::nullopt;
  case aggregate_kind::sum:
    if (item == nullptr) {
      agg.undefined = true;
    } else if (!item->is_number()) {
      return problem{"item: expected a number, got " + item->dump()};
    } else {
      agg.sum += item->get<double>();
    }
    break;
  case aggregate_kind::average: {
    if (item == nullptr) {
      agg.undefined = true;
      return std::nullopt;
    }
    const json* count = item->is_object() ? member(*item, "count") : nullptr;
    if (count == nullptr || !count->is_number_integer() ||
        count->get<int64_t>() < 0)
      return problem{"item: expected {\"sum\": s, \"count\": n}, got " +
                     item->dump()};
    const json* sum = member(*item, "sum");
    // No "sum": the range met a value that is not a number, so AVG is
    // undefined (the SDK skips such a range; the single-range answer is
    // undefined, and that is what a merge must equal).
    if (sum == nullptr) {
      agg.undefined = true;
    } else if (!sum->is_number()) {
      return problem{"item.sum: expected a number, got " + sum->dump()};
    } else {
      agg.sum += sum->get<double>();
      agg.count = saturating_add(agg.count, count->get<int64_t>());
    }
    break;
  }
  case aggregate_kind::min:
  case aggregate_kind::max: {
    bool is_min = agg_kind_ == aggregate_kind::min;
    const json* value = item;
    if (const json* item2 = member(*e, "item2")) {
      if (!item2->is_object())
        return problem{"item2: expected an object, got " + item2->dump()};
      const json* count = member(*item2, "count");
      if (count != nullptr && !count->is_number_integer())
        return problem{"item2.count: expected an integer, got " +
                       count->dump()};
      value = member(*item2, is_min ? "min" : "max");
      // Values counted but no extreme: arrays or objects, so undefined.
      if (value == nullptr && count != nullptr && count->get<int64_t>() > 0)
        agg.undefined = true;
    }
    if (value == nullptr) return std::nullopt; // an empty range
    if (value->is_array() || value->is_object()) {
      agg.undefined = true;
      return std::nullopt;
    }
    const json* best = agg.best ? &*agg.best : nullptr;
    int c = best ? compare_query_values(value, best) : 0;
    if (!best || (is_min ? c < 0 : c > 0)) agg.best = *value;
    return std::nullopt;
  }
  case aggregate_kind::none:
    break;
  }
  if (!std::isfinite(agg.sum)) {
    agg.undefined = true;
    agg.sum = 0;
  }
  return std::nullopt;
}

std::optional<problem>
query_merger::add_page(size_t range, std::vector<json> rows,
                       std::optional<std::string> continuation) {
  if (range >= streams_.size())
    return problem{"add_page: range index " + std::to_string(range) +
                   " is out of " + std::to_string(streams_.size())};
  auto& s = streams_[range];
  if (s.done)
    return problem{"add_page: range " + std::to_string(range) + " ('" +
                   s.range.id + "') already returned its last page"};
  aggregate_state agg = agg_;
  if (auto p = check_rows(range, rows, &agg)) return p;
  agg_ = std::move(agg);
  counters_.rows_received += rows.size();
  if (mode_ != mode::aggregate && !rows.empty()) {
    page pg;
    pg.serial = next_serial_++;
    pg.owner = s.lineage.back();
    pg.request_token = s.next_token;
    pg.rows.reserve(rows.size());
    for (auto& v : rows) {
      auto h = row_hash(v);
      pg.rows.push_back(row{std::move(v), h});
    }
    while (s.filtering && pg.next < pg.rows.size() &&
           drop_on_resume(s, pg.rows[pg.next])) {
      note_consumed(pg.rows[pg.next], pg);
      ++pg.next;
      ++counters_.resume_dropped;
    }
    if (pg.next < pg.rows.size()) s.pages.push_back(std::move(pg));
  }
  bool last = !continuation || continuation->empty();
  s.next_token = last ? std::nullopt : std::move(continuation);
  s.done = last;
  if (last) {
    s.filtering = false;
    s.skip.clear();
  }
  return std::nullopt;
}

std::optional<problem>
query_merger::replace_range(size_t index, std::vector<query_range> children) {
  if (index >= streams_.size())
    return problem{"replace_range: range index " + std::to_string(index) +
                   " is out of " + std::to_string(streams_.size())};
  if (children.empty())
    return problem{"replace_range: a split range needs at least one child"};
  stream parent = std::move(streams_[index]);
  std::vector<stream> kids;
  for (auto& c : children) {
    stream k;
    k.range = std::move(c);
    k.lineage = parent.lineage;
    k.lineage.push_back(next_key_++);
    k.next_token = parent.next_token;
    k.done = parent.done;
    k.filtering = parent.filtering;
    k.skip = parent.skip;
    kids.push_back(std::move(k));
  }
  // Rows already received stay in front: the first child emits them first.
  kids.front().pages = std::move(parent.pages);
  streams_.erase(streams_.begin() + static_cast<ptrdiff_t>(index));
  streams_.insert(streams_.begin() + static_cast<ptrdiff_t>(index),
                  std::make_move_iterator(kids.begin()),
                  std::make_move_iterator(kids.end()));
  ++counters_.splits;
  return std::nullopt;
}

// -- query_merger: merging
// -------------------------------------------------------

int query_merger::compare_keys(const json& a, const json& b) const {
  for (size_t i = 0; i < info_.order_by.size(); ++i) {
    int c = compare_query_values(order_item(a, i), order_item(b, i));
    if (c != 0) return info_.order_by[i] == "Descending" ? -c : c;
  }
  return 0;
}

bool query_merger::has_head(const stream& s) const {
  return !s.pages.empty();
}

bool query_merger::drop_on_resume(stream& s, const row& r) {
  if (mode_ == mode::order_by && !last_key_.is_null()) {
    int c = compare_keys(order_items(r.value), last_key_);
    if (c < 0) return true; // sorts before the last consumed row
    if (c > 0) {
      s.filtering = false;
      s.skip.clear();
      return false;
    }
  }
  auto it = s.skip.find(r.hash);
  if (it == s.skip.end()) {
    s.filtering = false;
    s.skip.clear();
    return false;
  }
  if (--it->second == 0) s.skip.erase(it);
  return true;
}

void query_merger::note_consumed(const row& r, const page& p) {
  if (mode_ == mode::order_by) {
    const json& items = order_items(r.value);
    int c = last_key_.is_null() ? 1 : compare_keys(items, last_key_);
    if (c < 0) return; // before the resume key: the key alone skips it
    if (c > 0) {
      consumed_.clear(); // only rows with the last key need their hashes
      last_key_ = items;
    }
    const json* rid = member(r.value, "_rid");
    last_rid_ = rid ? rid->get<std::string>() : std::string{};
  }
  consumed_.push_back(consumed{r.hash, p.serial, p.owner});
}

std::optional<query_merger::row> query_merger::next_row() {
  auto head = [](const stream& s) -> const json& {
    const auto& p = s.pages.front();
    return order_items(p.rows[p.next].value);
  };
  size_t best = streams_.size();
  for (size_t i = 0; i < streams_.size(); ++i) {
    const auto& s = streams_[i];
    if (!has_head(s)) {
      if (!s.done) return std::nullopt; // this range may hold the next row
      continue;
    }
    if (mode_ != mode::order_by) {
      best = i;
      break;
    }
    // Strictly less: a tie stays with the earlier range.
    if (best == streams_.size() ||
        compare_keys(head(s), head(streams_[best])) < 0)
      best = i;
  }
  if (best == streams_.size()) return std::nullopt;
  auto& s = streams_[best];
  auto& p = s.pages.front();
  note_consumed(p.rows[p.next], p);
  row r = std::move(p.rows[p.next]);
  if (++p.next == p.rows.size()) s.pages.pop_front();
  return r;
}

int64_t query_merger::window_end() const {
  int64_t end = std::numeric_limits<int64_t>::max();
  int64_t skip = info_.offset >= 0 ? info_.offset : 0;
  if (info_.limit >= 0) end = saturating_add(skip, info_.limit);
  if (info_.top >= 0) end = std::min(end, saturating_add(skip, info_.top));
  return end;
}

void query_merger::offer(json result, std::optional<uint64_t> hash,
                         std::vector<json>& out) {
  if (ordered_distinct_) {
    auto canon = canonical_json(result);
    if (last_distinct_ == canon) {
      ++counters_.distinct_dropped;
      return;
    }
    last_distinct_ = std::move(canon);
  }
  if (unordered_distinct_ && !seen_.insert(hash ? *hash : row_hash(result))) {
    ++counters_.distinct_dropped;
    return;
  }
  int64_t i = position_++;
  if (i < (info_.offset >= 0 ? info_.offset : 0)) {
    ++counters_.offset_skipped;
    return;
  }
  out.push_back(std::move(result));
  ++counters_.rows_emitted;
}

std::optional<json> query_merger::aggregate_result() const {
  if (agg_.undefined) return std::nullopt;
  switch (agg_kind_) {
  case aggregate_kind::count:
    return json(agg_.count);
  case aggregate_kind::sum:
    return number_value(agg_.sum);
  case aggregate_kind::average:
    if (agg_.count <= 0) return std::nullopt;
    return number_value(agg_.sum / static_cast<double>(agg_.count));
  case aggregate_kind::min:
  case aggregate_kind::max:
    return agg_.best;
  case aggregate_kind::none:
    break;
  }
  return std::nullopt;
}

std::vector<json> query_merger::drain(size_t max_items) {
  std::vector<json> out;
  if (max_items == 0) return out;
  if (mode_ == mode::aggregate) {
    bool all_done = std::all_of(streams_.begin(), streams_.end(),
                                [](const stream& s) { return s.done; });
    if (!all_done || agg_computed_) return out;
    agg_computed_ = true;
    // A resumed query whose result already went out has position 1.
    if (position_ == 0 && !window_done())
      if (auto v = aggregate_result()) offer(std::move(*v), std::nullopt, out);
    return out;
  }
  while (out.size() < max_items && !window_done()) {
    auto r = next_row();
    if (!r) break;
    if (mode_ == mode::parallel) {
      offer(std::move(r->value), r->hash, out); // the row is the result
      continue;
    }
    auto it = r->value.find("payload");
    if (it != r->value.end())
      offer(std::move(*it), std::nullopt, out); // else undefined
  }
  prune();
  return out;
}

bool query_merger::finished() const {
  if (window_done()) return true;
  for (const auto& s : streams_)
    if (!s.done || has_head(s)) return false;
  return mode_ != mode::aggregate || agg_computed_;
}

std::vector<size_t> query_merger::ranges_needed() const {
  std::vector<size_t> out;
  if (window_done()) return out;
  for (size_t i = 0; i < streams_.size(); ++i) {
    const auto& s = streams_[i];
    if (mode_ == mode::parallel && has_head(s)) break;
    if (s.done || has_head(s)) continue;
    out.push_back(i);
    if (mode_ == mode::parallel) break;
  }
  return out;
}

// -- query_merger: continuation
// ------------------------------------------------

bool query_merger::in_lineage(const stream& s, uint64_t owner) const {
  return std::find(s.lineage.begin(), s.lineage.end(), owner) !=
         s.lineage.end();
}

const query_merger::page* query_merger::anchor(const stream& s) const {
  // The earliest page with rows not consumed that a restart of `s` reads
  // again: its own, or one it inherited from an ancestor (held by the first
  // child of the split).
  const page* best = nullptr;
  for (const auto& other : streams_)
    for (const auto& p : other.pages)
      if (in_lineage(s, p.owner) && (!best || p.serial < best->serial))
        best = &p;
  return best;
}

void query_merger::prune() {
  if (consumed_.empty()) return;
  std::vector<uint64_t> from;
  for (const auto& s : streams_) {
    const page* a = anchor(s);
    from.push_back(a ? a->serial : std::numeric_limits<uint64_t>::max());
  }
  auto needed = [&](const consumed& e) {
    for (size_t i = 0; i < streams_.size(); ++i)
      if (e.serial >= from[i] && in_lineage(streams_[i], e.owner)) return true;
    return false;
  };
  consumed_.erase(std::remove_if(consumed_.begin(), consumed_.end(),
                                 [&](const consumed& e) { return !needed(e); }),
                  consumed_.end());
}

result<query_continuation> query_merger::continuation() const {
  if (unordered_distinct_ && seen_.size() > max_distinct_carried)
    return problem{
        "an unordered DISTINCT query's continuation carries at most " +
        std::to_string(max_distinct_carried) +
        " values already returned (their hashes take up to " +
        std::to_string(distinct_set_max_chars(max_distinct_carried)) +
        " characters of it), and this query has returned " +
        std::to_string(seen_.size()) +
        ": sort by the DISTINCT value (ORDER BY on it makes DISTINCT "
        "ordered, and its continuation carries only the last value), or "
        "read the whole result in one page (a max_item_count of at least "
        "the number of results) so that no continuation is needed"};
  query_continuation c;
  c.query_hash = query_fingerprint(info_);
  c.position = position_;
  c.order_by_items = last_key_;
  c.rid = last_rid_;
  c.last_distinct = last_distinct_;
  if (unordered_distinct_) c.distinct_seen = seen_.sorted();
  c.aggregate = agg_;
  for (const auto& s : streams_) {
    range_resume r;
    r.range = s.range;
    const page* a = mode_ == mode::aggregate ? nullptr : anchor(s);
    r.token = a ? a->request_token : s.next_token;
    r.done = a ? false : s.done;
    // With unordered DISTINCT the set already names every row consumed (its
    // result passed, or repeated one that did), so a row sent again is
    // dropped as a repeat: no skip list needed.
    if (!r.done && !unordered_distinct_) {
      auto from = a ? a->serial : std::numeric_limits<uint64_t>::max();
      for (const auto& e : consumed_)
        if (e.serial >= from && in_lineage(s, e.owner))
          r.skip.push_back(e.hash);
      if (s.filtering)
        for (const auto& [h, n] : s.skip)
          r.skip.insert(r.skip.end(), n, h);
      std::sort(r.skip.begin(), r.skip.end());
    }
    c.ranges.push_back(std::move(r));
  }
  return c;
}

} // namespace georoute
