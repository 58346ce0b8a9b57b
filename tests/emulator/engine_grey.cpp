// Grey failures in the engine: which partition-key ranges a document request
// is for, rules scoped to one range of one collection, the checks of
// `add_checked_fault`, and the per-range counters.
//
// A request's ranges are resolved once, after auth and before the fault
// rules, from the same headers the handlers read: a full partition key is
// one range, a hierarchical-key prefix (queries and feeds) the ranges it
// overlaps, x-ms-documentdb-partitionkeyrangeid that range (gone or not), and
// a query or feed with neither every current range. Malformed headers
// resolve to nothing; the handler answers them as it answers any malformed
// request.

#include "tests/emulator/engine_impl.hpp"

#include <algorithm>

namespace georoute::emulator {

namespace {

constexpr int64_t max_delay_ms = int64_t{24} * 3600 * 1000;

bool is_collection_wide(const std::string& op) {
  return op == "query" || op == "feed";
}

} // namespace

const char* to_string(fault_action x) {
  switch (x) {
  case fault_action::status:
    return "status";
  case fault_action::hang:
    return "hang";
  case fault_action::delay:
    return "delay";
  }
  return "status";
}

result<fault_action> parse_fault_action(const std::string& text) {
  for (auto x : {fault_action::status, fault_action::hang, fault_action::delay})
    if (text == to_string(x)) return x;
  return problem{"action: '" + text + "' is not one of status, hang, delay"};
}

void engine::state::resolve_ranges(request_ctx& ctx) {
  const auto& segs = ctx.segs;
  auto n = segs.size();
  if (ctx.type != "docs" || ctx.op == "query_plan" || (n != 5 && n != 6) ||
      segs[0] != "dbs" || segs[2] != "colls" || segs[4] != "docs")
    return;
  auto* db = find_db(segs[1], ctx.rid_based);
  auto* coll = db ? find_coll(*db, segs[3], ctx.rid_based) : nullptr;
  if (coll == nullptr) return;
  auto add = [&ctx](const detail::pk_range& r) {
    ctx.ranges.push_back({r.info.id, r.gone});
  };
  bool wide = n == 5 && is_collection_wide(ctx.op);
  const auto& range_id = ctx.req.header("x-ms-documentdb-partitionkeyrangeid");
  if (!ctx.req.header("x-ms-documentdb-partitionkey").empty()) {
    auto pk = header_pk(ctx, *coll, false, wide);
    auto* key = std::get_if<std::vector<pk_component>>(&pk);
    if (key == nullptr || key->empty()) return;
    auto epk = epk_of(*coll, *key);
    if (key->size() == coll->pk.paths.size()) {
      if (auto* r = range_of(*coll, epk)) add(*r);
    } else {
      auto end = epk + "FF";
      for (auto* r : current_ranges(*coll))
        if (epk_compare(epk, r->info.max_exclusive) < 0 &&
            epk_compare(r->info.min_inclusive, end) < 0)
          add(*r);
    }
  } else if (!range_id.empty()) {
    if (auto* r = range_by_id(*coll, range_id)) add(*r);
  } else if (wide) {
    for (auto* r : current_ranges(*coll))
      add(*r);
  }
  if (!ctx.ranges.empty()) ctx.collection = coll->name_path();
}

bool engine::state::range_matches(const fault_rule& rule,
                                  const request_ctx& ctx) const {
  if (rule.collection.empty()) return true;
  if (rule.collection != ctx.collection) return false;
  if (rule.range_id.empty()) return true;
  return std::any_of(ctx.ranges.begin(), ctx.ranges.end(),
                     [&rule](const detail::touched_range& r) {
                       return !r.gone && r.id == rule.range_id;
                     });
}

result<bool> engine::state::check_rule(const fault_rule& rule) {
  if (!rule.region.empty() && region_index(rule.region) < 0) {
    std::string known;
    for (const auto& r : regions)
      known += (known.empty() ? "'" : ", '") + r.name + "'";
    return problem{"region: unknown region '" + rule.region +
                   "' (known: " + known + "; \"\" = every region)"};
  }
  static const char* ops[] = {"",     "read",    "write", "query", "query_plan",
                              "feed", "account", "patch", "batch", "bulk"};
  if (std::find(std::begin(ops), std::end(ops), rule.operation) ==
      std::end(ops))
    return problem{"operation: '" + rule.operation +
                   "' is not one of read, write, query, query_plan, feed, "
                   "account, patch, batch, bulk"};
  if (!rule.range_id.empty() && rule.collection.empty())
    return problem{"range: range '" + rule.range_id +
                   "' needs its collection (\"dbs/{db}/colls/{coll}\")"};
  if (!rule.collection.empty()) {
    // "dbs/{db}/colls/{coll}" by name, exactly four non-empty segments.
    std::vector<std::string> parts;
    size_t pos = 0;
    for (;;) {
      auto next = rule.collection.find('/', pos);
      parts.push_back(rule.collection.substr(pos, next - pos));
      if (next == std::string::npos) break;
      pos = next + 1;
    }
    if (parts.size() != 4 || parts[0] != "dbs" || parts[2] != "colls" ||
        parts[1].empty() || parts[3].empty())
      return problem{"collection: '" + rule.collection +
                     "' is not of the form dbs/{db}/colls/{coll}"};
    auto d = dbs.find(parts[1]);
    if (d == dbs.end())
      return problem{"collection: database '" + parts[1] + "' does not exist"};
    auto c = d->second.colls.find(parts[3]);
    if (c == d->second.colls.end())
      return problem{"collection: '" + rule.collection + "' does not exist"};
    if (!rule.range_id.empty()) {
      auto& coll = c->second;
      auto* r = range_by_id(coll, rule.range_id);
      std::string current;
      for (auto* x : current_ranges(coll))
        current += (current.empty() ? "'" : ", '") + x->info.id + "'";
      if (r == nullptr)
        return problem{"range: unknown range '" + rule.range_id + "' of " +
                       rule.collection + " (current: " + current + ")"};
      if (r->gone)
        return problem{
            "range: range '" + rule.range_id + "' of " + rule.collection +
            " is gone: it split or merged (current: " + current + ")"};
    }
  }
  if (rule.status < 100 || rule.status > 999)
    return problem{"status: " + std::to_string(rule.status) +
                   " is outside [100, 999]"};
  if (rule.substatus < 0)
    return problem{"substatus: " + std::to_string(rule.substatus) +
                   " is negative"};
  if (rule.retry_after_ms < -1)
    return problem{"retry_after_ms: " + std::to_string(rule.retry_after_ms) +
                   " is below -1 (-1 = no header)"};
  if (rule.count == 0 || rule.count < -1)
    return problem{"count: " + std::to_string(rule.count) +
                   " would never match (use -1 for unlimited)"};
  if (!(rule.probability >= 0.0 && rule.probability <= 1.0))
    return problem{"probability: " + std::to_string(rule.probability) +
                   " is outside [0, 1]"};
  if (rule.delay.count() < 0)
    return problem{"delay_ms: " + std::to_string(rule.delay.count()) +
                   " is negative"};
  if (rule.delay.count() > max_delay_ms)
    return problem{"delay_ms: " + std::to_string(rule.delay.count()) +
                   " is over a day"};
  switch (rule.action) {
  case fault_action::status:
    break;
  case fault_action::hang:
    if (rule.delay.count() > 0)
      return problem{"delay_ms: a hang never answers, so a delay does not "
                     "apply"};
    if (rule.body || rule.truncate || !rule.headers.empty())
      return problem{"action: a hang never answers, so body, headers and "
                     "truncate do not apply"};
    break;
  case fault_action::delay:
    if (rule.delay.count() == 0)
      return problem{"delay_ms: the delay action needs delay_ms > 0"};
    if (rule.body || !rule.headers.empty())
      return problem{"action: the delay action serves the request; body and "
                     "headers apply to the status action"};
    break;
  }
  return true;
}

void engine::state::count(const std::string& region, const detail::served& s,
                          bool held) {
  if (!held) {
    ++counts[region][s.res.status];
    ++kind_counts[region][s.kind.empty() ? "other" : s.kind][s.res.status];
  }
  for (const auto& r : s.ranges) {
    auto& tally = range_counts[range_key{region, s.collection, r.id}];
    if (held)
      ++tally.held;
    else
      ++tally.by_status[s.res.status];
  }
}

} // namespace georoute::emulator
