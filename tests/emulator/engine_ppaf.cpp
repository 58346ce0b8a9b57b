// Per-partition automatic failover (issue 19): the account property, a write
// region per partition-key range that the service moves, the 403/3 of a
// write (or a hub-only read) that reaches another region, and moving back.
// The behaviour and its choices are described in engine.hpp.

#include "tests/emulator/engine_impl.hpp"
#include "georoute/transport/codecs.hpp"

#include <algorithm>

namespace georoute::emulator {

using detail::error_response;

namespace {

constexpr const char* hub_header = "x-ms-cosmos-hub-region-processing-only";

std::string quoted_list(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names)
    out += (out.empty() ? "'" : ", '") + n + "'";
  return out;
}

} // namespace

// -- state
// ---------------------------------------------------------------------

std::string engine::state::account_text() const {
  // The property is left out unless set (explicit values only).
  auto a = account();
  a.per_partition_failover = opts.per_partition_failover;
  return transport::encode_database_account(a);
}

std::string engine::state::hub_of(const detail::pk_range* range) const {
  if (range != nullptr && !range->write_region.empty() && !opts.multi_write) {
    int i = region_index(range->write_region);
    if (i >= 0 && !regions[static_cast<size_t>(i)].removed)
      return range->write_region;
  }
  return writer();
}

std::optional<http_response>
engine::state::check_write_region(request_ctx& ctx, detail::collection& coll) {
  if (opts.multi_write) return std::nullopt;
  // The range the write is for, as resolved for the fault rules: the one its
  // partition key falls in. Without one (no or a malformed key), the account
  // writer decides, and the handler answers the key's problem there.
  detail::pk_range* range = nullptr;
  for (const auto& r : ctx.ranges)
    if (!r.gone) range = range_by_id(coll, r.id);
  auto hub = hub_of(range);
  if (ctx.region == hub) return std::nullopt;
  if (hub == writer())
    return error_response(403, 3,
                          "region '" + ctx.region +
                              "' does not accept writes on this single-write "
                              "account; the write region is '" +
                              hub + "'");
  return error_response(403, 3,
                        "region '" + ctx.region +
                            "' does not accept writes for partition key "
                            "range '" +
                            range->info.id + "' of " + coll.name_path() +
                            "; its write region is '" + hub + "'");
}

std::optional<http_response>
engine::state::check_hub_only(request_ctx& ctx, detail::collection& coll) {
  if (opts.multi_write || !detail::is_true(ctx.req.header(hub_header)))
    return std::nullopt;
  std::vector<const detail::pk_range*> current;
  for (const auto& r : ctx.ranges)
    if (!r.gone) current.push_back(range_by_id(coll, r.id));
  // Only gone ranges: the handler answers 410.
  if (current.empty() && !ctx.ranges.empty()) return std::nullopt;
  if (current.empty()) current.push_back(nullptr);
  for (const auto* range : current) {
    auto hub = hub_of(range);
    if (ctx.region == hub) continue;
    auto what = range == nullptr ? std::string{"this request"}
                                 : "partition key range '" + range->info.id +
                                       "' of " + coll.name_path();
    return error_response(403, 3,
                          "region '" + ctx.region +
                              "' is not the hub region of " + what +
                              " (the request carries " + hub_header +
                              "); the hub is '" + hub + "'");
  }
  return std::nullopt;
}

result<detail::collection*>
engine::state::named_collection(const std::string& db,
                                const std::string& coll) {
  auto d = dbs.find(db);
  if (d == dbs.end())
    return problem{"db: database '" + db + "' does not exist"};
  auto c = d->second.colls.find(coll);
  if (c == d->second.colls.end())
    return problem{"coll: collection 'dbs/" + db + "/colls/" + coll +
                   "' does not exist"};
  return &c->second;
}

result<detail::pk_range*> engine::state::named_range(detail::collection& coll,
                                                     const std::string& id) {
  std::vector<std::string> current;
  for (auto* r : current_ranges(coll))
    current.push_back(r->info.id);
  auto* r = range_by_id(coll, id);
  if (r == nullptr)
    return problem{"range: unknown range '" + id + "' of " + coll.name_path() +
                   " (current: " + quoted_list(current) + ")"};
  if (r->gone)
    return problem{
        "range: range '" + id + "' of " + coll.name_path() +
        " is gone: it split or merged (current: " + quoted_list(current) + ")"};
  return r;
}

// -- engine: public API
// --------------------------------------------------------

void engine::set_per_partition_failover(std::optional<bool> enabled) {
  std::lock_guard<std::mutex> guard{state_->mutex};
  state_->opts.per_partition_failover = enabled;
}

std::optional<bool> engine::per_partition_failover() const {
  std::lock_guard<std::mutex> guard{state_->mutex};
  return state_->opts.per_partition_failover;
}

result<bool> engine::move_partition_write_region(const std::string& db,
                                                 const std::string& coll,
                                                 const std::string& range_id,
                                                 const std::string& region) {
  std::lock_guard<std::mutex> guard{state_->mutex};
  auto& s = *state_;
  if (s.opts.multi_write)
    return problem{"account: the account is multi-write; per-partition "
                   "failover moves the write region of a range on a "
                   "single-write account only"};
  auto c = s.named_collection(db, coll);
  if (!c) return c.error();
  auto r = s.named_range(**c, range_id);
  if (!r) return r.error();
  int i = s.region_index(region);
  if (i < 0) {
    std::vector<std::string> known;
    for (const auto& x : s.regions)
      known.push_back(x.name);
    return problem{"region: unknown region '" + region +
                   "' (known: " + quoted_list(known) + ")"};
  }
  if (s.regions[static_cast<size_t>(i)].removed)
    return problem{"region: '" + region +
                   "' is removed from the account (restore it first)"};
  (*r)->write_region = region;
  return true;
}

result<bool> engine::clear_partition_write_region(const std::string& db,
                                                  const std::string& coll,
                                                  const std::string& range_id) {
  std::lock_guard<std::mutex> guard{state_->mutex};
  auto c = state_->named_collection(db, coll);
  if (!c) return c.error();
  auto r = state_->named_range(**c, range_id);
  if (!r) return r.error();
  bool had = !(*r)->write_region.empty();
  (*r)->write_region.clear();
  return had;
}

std::vector<partition_write_region> engine::partition_write_regions() const {
  std::lock_guard<std::mutex> guard{state_->mutex};
  std::vector<partition_write_region> out;
  for (auto& [db_id, db] : state_->dbs)
    for (auto& [coll_id, coll] : db.colls)
      for (auto* r : state_->current_ranges(coll))
        if (!r->write_region.empty())
          out.push_back({coll.name_path(), r->info.id, r->write_region});
  return out;
}

result<std::string> engine::write_region_of(const std::string& db,
                                            const std::string& coll,
                                            const std::string& range_id) const {
  std::lock_guard<std::mutex> guard{state_->mutex};
  auto c = state_->named_collection(db, coll);
  if (!c) return c.error();
  auto r = state_->named_range(**c, range_id);
  if (!r) return r.error();
  if (state_->opts.multi_write) return std::string{};
  return state_->hub_of(*r);
}

} // namespace georoute::emulator
