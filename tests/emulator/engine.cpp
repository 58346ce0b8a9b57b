// The engine's front: the public API, topology control, and the pipeline
// every request goes through (region check, auth, status faults, request-unit
// budget, dispatch to the resource handlers, counters).

#include "tests/emulator/engine.hpp"

#include "georoute/transport/codecs.hpp"
#include "georoute/transport/url.hpp"
#include "tests/emulator/engine_impl.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace georoute::emulator {

using detail::error_response;
using detail::json_response;

namespace {

std::string upper(std::string text) {
  for (auto& c : text)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

std::string default_endpoint(const std::string& name) {
  std::string slug;
  for (char c : name)
    if (std::isalnum(static_cast<unsigned char>(c)))
      slug += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return "http://" + slug + ".emulator.invalid/";
}

/// The estimated charge checked against the budget before serving.
double estimated_charge(const std::string& op) {
  if (op == "write") return 5;
  if (op == "query" || op == "feed") return 2;
  return 1;
}

} // namespace

// -- state: construction, topology -------------------------------------------

engine::state::state(engine_options o) : opts(std::move(o)) {
  if (opts.initial_ranges == 0) opts.initial_ranges = 1;
  if (opts.regions.empty()) opts.regions.push_back("West US");
  if (auto k = transport::parse_master_key(opts.master_key))
    key.emplace(std::move(*k));
  else
    key_problem = k.error().what;
  for (const auto& name : opts.regions) {
    detail::region_info r;
    r.name = name;
    r.endpoint = default_endpoint(name);
    r.ru_per_second = opts.ru_per_second;
    regions.push_back(std::move(r));
    write_order.push_back(name);
  }
}

int engine::state::region_index(const std::string& name) const {
  for (size_t i = 0; i < regions.size(); ++i)
    if (regions[i].name == name) return static_cast<int>(i);
  return -1;
}

std::string engine::state::writer() const {
  for (const auto& name : write_order) {
    int i = region_index(name);
    if (i >= 0 && !regions[static_cast<size_t>(i)].removed) return name;
  }
  return regions.empty() ? std::string{} : regions.front().name;
}

bool engine::state::can_write(const std::string& region) const {
  if (opts.multi_write) return true; // removed regions never get this far
  return region == writer();
}

database_account engine::state::account() const {
  database_account a;
  a.id = opts.account_id;
  a.enable_multiple_write_locations = opts.multi_write;
  a.default_consistency = "Session";
  auto entry = [this](const std::string& name) {
    const auto& r = regions[static_cast<size_t>(region_index(name))];
    return account_region{r.name, r.endpoint};
  };
  if (opts.multi_write) {
    for (const auto& name : write_order)
      if (!regions[static_cast<size_t>(region_index(name))].removed)
        a.writable.push_back(entry(name));
  } else if (!regions.empty()) {
    a.writable.push_back(entry(writer()));
  }
  for (const auto& r : regions)
    if (!r.removed) a.readable.push_back({r.name, r.endpoint});
  return a;
}

std::string engine::state::new_guid() {
  uint64_t a = id_rng();
  uint64_t b = id_rng();
  char buf[40];
  std::snprintf(buf, sizeof buf, "%08x-%04x-4%03x-%04x-%012llx",
                static_cast<unsigned>(a >> 32),
                static_cast<unsigned>((a >> 16) & 0xFFFF),
                static_cast<unsigned>(a & 0xFFF),
                static_cast<unsigned>(0x8000 | ((b >> 48) & 0x3FFF)),
                static_cast<unsigned long long>(b & 0xFFFFFFFFFFFFull));
  return buf;
}

std::string engine::state::new_etag() {
  char buf[48];
  auto seq = ++etag_seq;
  std::snprintf(buf, sizeof buf, "\"%08llx-0000-0000-0000-%012llx\"",
                static_cast<unsigned long long>(seq >> 48),
                static_cast<unsigned long long>(seq & 0xFFFFFFFFFFFFull));
  return buf;
}

// -- the request pipeline ----------------------------------------------------

detail::served engine::state::serve(const std::string& arrived,
                                    const http_request& raw, time_point now) {
  http_request req;
  req.method = upper(raw.method);
  req.target = raw.target;
  req.body = raw.body;
  for (const auto& [name, value] : raw.headers)
    req.headers[detail::lower(name)] = value;
  auto path = req.target.substr(0, req.target.find('?'));
  if (path.rfind("/_emulator", 0) == 0)
    return error_response(404, 0,
                          "the admin API /_emulator/ is served by the emulator "
                          "server, not by the engine");

  request_ctx ctx{req, arrived, {}, 0, now, {}, false, {}, {}, {}, 0, {}, {}};
  if (arrived.empty()) {
    ctx.region = writer();
  } else {
    int i = region_index(arrived);
    if (i < 0)
      return error_response(500, 0, "unknown region '" + arrived + "'");
    ctx.region = arrived;
  }
  ctx.region_index = static_cast<size_t>(region_index(ctx.region));
  if (regions[ctx.region_index].removed)
    return error_response(403, 1008,
                          "region '" + ctx.region +
                              "' has been removed from the account");

  // Path segments, decoded; the signed type is the last collection name.
  size_t pos = 0;
  while (pos < path.size()) {
    auto next = path.find('/', pos);
    auto seg = path.substr(pos, next == std::string::npos ? std::string::npos
                                                          : next - pos);
    if (!seg.empty()) {
      auto decoded = transport::percent_decode(seg);
      if (!decoded)
        return error_response(
            400, 0, "malformed %-escape in path segment '" + seg + "'");
      ctx.segs.push_back(std::move(*decoded));
    }
    if (next == std::string::npos) break;
    pos = next + 1;
  }
  auto n = ctx.segs.size();
  ctx.type = n == 0 ? "" : n % 2 == 0 ? ctx.segs[n - 2] : ctx.segs[n - 1];
  bool is_plan =
      detail::is_true(req.header("x-ms-cosmos-is-query-plan-request"));
  bool is_query = detail::is_true(req.header("x-ms-documentdb-isquery")) ||
                  detail::lower(req.header("content-type"))
                          .rfind("application/query+json", 0) == 0;
  if (n == 0)
    ctx.op = "account";
  else if (req.method == "GET" || req.method == "HEAD")
    ctx.op = n % 2 == 0 ? "read" : "feed";
  else if (req.method == "POST" && is_plan)
    ctx.op = "query_plan";
  else if (req.method == "POST" && is_query)
    ctx.op = "query";
  else
    ctx.op = "write";
  if (ctx.op == "write" && req.method == "PATCH")
    ctx.kind = "patch";
  else if (ctx.op == "write" && req.method == "POST" &&
           detail::is_true(req.header("x-ms-cosmos-is-batch-request")))
    ctx.kind = detail::is_true(req.header("x-ms-cosmos-batch-atomic")) ? "batch"
                                                                       : "bulk";
  ctx.rid_based = n >= 2 && ctx.segs[0] == "dbs" &&
                  dbs.count(ctx.segs[1]) == 0 &&
                  db_by_rid.count(ctx.segs[1]) != 0;

  auto with_ranges = [&ctx](http_response res) {
    detail::served s{std::move(res), std::move(ctx.collection),
                     std::move(ctx.ranges)};
    s.kind = ctx.kind.empty() ? ctx.op : ctx.kind;
    return s;
  };
  if (auto denied = check_auth(ctx)) return with_ranges(std::move(*denied));
  resolve_ranges(ctx);
  // A fault answers instead of serving, except a bare `truncate` rule and a
  // `delay` rule: those serve, then have the server cut or hold the answer.
  detail::fault_hit hit;
  hit.serve = true;
  if (auto fault = check_faults(ctx)) hit = std::move(*fault);
  if (!hit.serve) return with_ranges(std::move(hit.answer));
  bool metered = ctx.type == "docs" && ctx.op != "query_plan";
  if (metered)
    if (auto throttled = check_budget(ctx, estimated_charge(ctx.op)))
      return with_ranges(std::move(*throttled));
  auto res = dispatch(ctx);
  if (metered) spend(ctx);
  res.set("x-ms-request-charge", detail::charge_text(ctx.charge));
  if (hit.cut) res.set(truncate_marker, "1");
  if (hit.delay.count() > 0)
    res.set(delay_marker, std::to_string(hit.delay.count()));
  return with_ranges(std::move(res));
}

std::optional<http_response> engine::state::check_auth(request_ctx& ctx) {
  if (!opts.verify_auth) return std::nullopt;
  if (!key)
    return error_response(500, 0,
                          "the engine's master key is invalid: " + key_problem);
  const auto& req = ctx.req;
  auto path = req.target.substr(0, req.target.find('?'));
  auto check = transport::verify_authorization(
      *key, req.method, path, req.header("authorization"),
      req.header("x-ms-date"), ctx.now + opts.clock_offset, ctx.rid_based);
  switch (check.verdict) {
  case transport::auth_verdict::ok:
    return std::nullopt;
  case transport::auth_verdict::forbidden:
    return error_response(403, 0,
                          "the authorization token is not valid at the "
                          "current time: " +
                              check.reason);
  default:
    return error_response(401, 0,
                          "the input authorization token can't serve the "
                          "request: " +
                              check.reason);
  }
}

std::optional<detail::fault_hit> engine::state::check_faults(request_ctx& ctx) {
  for (auto it = faults.begin(); it != faults.end(); ++it) {
    auto& r = it->second;
    if (r.count == 0) continue;
    if (!r.region.empty() && r.region != ctx.arrived) continue;
    if (!r.method.empty() && upper(r.method) != ctx.req.method) continue;
    if (!r.resource_type.empty() && r.resource_type != ctx.type) continue;
    if (!r.operation.empty() && r.operation != ctx.op &&
        r.operation != ctx.kind)
      continue;
    if (!r.path_contains.empty() &&
        ctx.req.target.find(r.path_contains) == std::string::npos)
      continue;
    if (!range_matches(r, ctx)) continue;
    if (r.probability < 1.0) {
      std::uniform_real_distribution<double> draw(0.0, 1.0);
      if (draw(fault_rng) >= r.probability) continue;
    }
    if (r.count > 0) --r.count;
    detail::fault_hit hit;
    auto& res = hit.answer;
    if (r.action == fault_action::hang) {
      res.status = 0; // never sent: the server holds the request
      res.set(hang_marker, std::to_string(it->first));
      holding_rules.insert(it->first);
    } else if (r.action == fault_action::delay && !r.body) {
      hit.serve = true;
      hit.cut = r.truncate;
      hit.delay = r.delay;
    } else if (r.body) {
      res = json_response(r.status, *r.body);
      if (r.substatus != 0)
        res.set("x-ms-substatus", std::to_string(r.substatus));
      for (const auto& [name, value] : r.headers)
        res.set(name, value);
    } else if (r.truncate) {
      hit.serve = true; // serve() serves the request, the server cuts it
      hit.cut = true;
    } else {
      res = error_response(r.status, r.substatus,
                           "injected fault (rule " + std::to_string(it->first) +
                               ")");
    }
    if (!hit.serve && r.action != fault_action::hang) {
      if (r.retry_after_ms >= 0)
        res.set("x-ms-retry-after-ms", std::to_string(r.retry_after_ms));
      if (r.truncate) res.set(truncate_marker, "1");
      if (r.delay.count() > 0)
        res.set(delay_marker, std::to_string(r.delay.count()));
    }
    if (r.count == 0) faults.erase(it);
    return hit;
  }
  return std::nullopt;
}

std::optional<http_response> engine::state::check_budget(request_ctx& ctx,
                                                         double estimate) {
  auto& r = regions[ctx.region_index];
  if (r.ru_per_second <= 0) return std::nullopt;
  if (!r.bucket_started) {
    r.bucket_started = true;
    r.tokens = r.ru_per_second;
    r.last_refill = ctx.now;
  } else if (ctx.now > r.last_refill) {
    std::chrono::duration<double> elapsed = ctx.now - r.last_refill;
    r.tokens =
        std::min(r.ru_per_second, r.tokens + elapsed.count() * r.ru_per_second);
    r.last_refill = ctx.now;
  }
  if (r.tokens >= estimate) return std::nullopt;
  auto wait_ms = static_cast<int64_t>(
      std::ceil((estimate - r.tokens) / r.ru_per_second * 1000.0));
  auto res = error_response(429, 3200,
                            "Request rate is large. More Request Units may be "
                            "needed, so no changes were made. Please retry "
                            "this request later.");
  res.set("x-ms-retry-after-ms", std::to_string(std::max<int64_t>(1, wait_ms)));
  return res;
}

void engine::state::spend(request_ctx& ctx) {
  auto& r = regions[ctx.region_index];
  if (r.ru_per_second > 0) r.tokens -= ctx.charge;
}

http_response engine::state::dispatch(request_ctx& ctx) {
  const auto& segs = ctx.segs;
  const auto& method = ctx.req.method;
  auto n = segs.size();
  if (n == 0) {
    if (method != "GET")
      return error_response(405, 0, "the account supports GET only");
    auto res = json_response(200, account_text());
    res.set("x-ms-max-media-storage-usage-mb", "10240");
    res.set("x-ms-media-storage-usage-mb", "0");
    return res;
  }
  if (segs[0] != "dbs")
    return error_response(404, 0,
                          "resource type '" + segs[0] +
                              "' is not supported by the emulator");
  if (n <= 2) return handle_dbs(ctx);
  auto* db = find_db(segs[1], ctx.rid_based);
  if (db == nullptr)
    return error_response(404, 0, "database '" + segs[1] + "' does not exist");
  if (segs[2] != "colls")
    return error_response(404, 0,
                          "resource type '" + segs[2] +
                              "' is not supported by the emulator");
  if (n <= 4) return handle_colls(ctx, *db);
  auto* coll = find_coll(*db, segs[3], ctx.rid_based);
  if (coll == nullptr)
    return error_response(404, 0,
                          "collection '" + segs[3] + "' does not exist");
  if (n == 5 && segs[4] == "pkranges") {
    if (method != "GET")
      return error_response(405, 0, "pkranges supports GET only");
    return handle_pkranges(ctx, *coll);
  }
  if (segs[4] == "docs" && n <= 6) return handle_docs(ctx, *coll);
  return error_response(404, 0,
                        "resource type '" + segs[4] +
                            "' is not supported by the emulator");
}

// -- engine: public API ------------------------------------------------------

engine::engine(engine_options opts)
    : state_(std::make_unique<state>(std::move(opts))) {}

engine::~engine() = default;

void engine::set_endpoints(std::map<std::string, std::string> endpoints) {
  std::lock_guard<std::mutex> guard{state_->mutex};
  for (auto& r : state_->regions) {
    auto i = endpoints.find(r.name);
    if (i != endpoints.end()) r.endpoint = i->second;
  }
}

http_response engine::handle(const std::string& region, const http_request& req,
                             clock::time_point now) {
  std::lock_guard<std::mutex> guard{state_->mutex};
  detail::served out{http_response{}};
  auto& res = out.res;
  try {
    out = state_->serve(region, req, now);
  } catch (const std::exception& e) {
    res = error_response(
        500, 0, std::string{"internal error of the emulator: "} + e.what());
  } catch (...) {
    res = error_response(500, 0, "internal error of the emulator");
  }
  try {
    ++state_->user_agents[req.header("user-agent")];
    auto i = req.headers.find("x-ms-activity-id");
    res.set("x-ms-activity-id", i != req.headers.end() && !i->second.empty()
                                    ? i->second
                                    : state_->new_guid());
    if (res.get("x-ms-request-charge").empty())
      res.set("x-ms-request-charge", "0.00");
    state_->count(region, out, !res.get(hang_marker).empty());
  } catch (...) {
    // Out of memory while decorating: the response goes out as it is.
  }
  return std::move(res);
}

result<bool> engine::set_write_regions(const std::vector<std::string>& order) {
  std::lock_guard<std::mutex> guard{state_->mutex};
  if (order.empty()) return problem{"set_write_regions: the order is empty"};
  std::vector<std::string> next;
  for (const auto& name : order) {
    if (state_->region_index(name) < 0)
      return problem{"set_write_regions: unknown region '" + name + "'"};
    if (std::find(next.begin(), next.end(), name) != next.end())
      return problem{"set_write_regions: region '" + name + "' listed twice"};
    next.push_back(name);
  }
  for (const auto& r : state_->regions)
    if (std::find(next.begin(), next.end(), r.name) == next.end())
      next.push_back(r.name);
  state_->write_order = std::move(next);
  return true;
}

void engine::set_multi_write(bool on) {
  std::lock_guard<std::mutex> guard{state_->mutex};
  state_->opts.multi_write = on;
}

result<bool> engine::remove_region(const std::string& region) {
  std::lock_guard<std::mutex> guard{state_->mutex};
  int i = state_->region_index(region);
  if (i < 0) return problem{"remove_region: unknown region '" + region + "'"};
  size_t alive = 0;
  for (const auto& r : state_->regions)
    alive += r.removed ? 0 : 1;
  auto& r = state_->regions[static_cast<size_t>(i)];
  if (!r.removed && alive == 1)
    return problem{"remove_region: '" + region +
                   "' is the last region of the account"};
  r.removed = true;
  return true;
}

result<bool> engine::restore_region(const std::string& region) {
  std::lock_guard<std::mutex> guard{state_->mutex};
  int i = state_->region_index(region);
  if (i < 0) return problem{"restore_region: unknown region '" + region + "'"};
  state_->regions[static_cast<size_t>(i)].removed = false;
  return true;
}

void engine::set_replication_lag(std::chrono::milliseconds lag) {
  std::lock_guard<std::mutex> guard{state_->mutex};
  state_->opts.replication_lag = lag;
}

void engine::set_clock_offset(std::chrono::milliseconds offset) {
  std::lock_guard<std::mutex> guard{state_->mutex};
  state_->opts.clock_offset = offset;
}

void engine::set_throughput(const std::string& region, double ru_per_second) {
  std::lock_guard<std::mutex> guard{state_->mutex};
  if (region.empty()) state_->opts.ru_per_second = ru_per_second;
  for (auto& r : state_->regions) {
    if (region.empty() || r.name == region) {
      r.ru_per_second = ru_per_second;
      r.bucket_started = false;
    }
  }
}

result<std::vector<std::string>>
engine::split_range(const std::string& db, const std::string& coll,
                    const std::string& range_id) {
  std::lock_guard<std::mutex> guard{state_->mutex};
  auto d = state_->dbs.find(db);
  if (d == state_->dbs.end())
    return problem{"split_range: database '" + db + "' does not exist"};
  auto c = d->second.colls.find(coll);
  if (c == d->second.colls.end())
    return problem{"split_range: collection 'dbs/" + db + "/colls/" + coll +
                   "' does not exist"};
  return state_->split(c->second, range_id);
}

result<std::string> engine::merge_ranges(const std::string& db,
                                         const std::string& coll,
                                         const std::string& left_id,
                                         const std::string& right_id) {
  std::lock_guard<std::mutex> guard{state_->mutex};
  auto c = state_->named_collection(db, coll);
  if (!c) return c.error();
  auto id = state_->merge_pair(**c, left_id, right_id);
  if (!id) return problem{"ranges: " + id.error().what};
  return id;
}

result<bool> engine::set_region_lag(const std::string& region,
                                    std::chrono::milliseconds lag) {
  std::lock_guard<std::mutex> guard{state_->mutex};
  int i = state_->region_index(region);
  if (i < 0) {
    std::string known;
    for (const auto& r : state_->regions)
      known += (known.empty() ? "'" : ", '") + r.name + "'";
    return problem{"region: unknown region '" + region + "' (known: " + known +
                   ")"};
  }
  if (lag.count() < 0)
    return problem{"lag_ms: " + std::to_string(lag.count()) + " is negative"};
  // A new vector: the writes committed so far keep the lags they had.
  std::vector<std::chrono::milliseconds> lags(state_->regions.size());
  if (state_->region_lag) {
    std::copy(state_->region_lag->begin(), state_->region_lag->end(),
              lags.begin());
  }
  lags[static_cast<size_t>(i)] = lag;
  bool any = std::any_of(lags.begin(), lags.end(),
                         [](auto x) { return x.count() > 0; });
  state_->region_lag =
      any ? std::make_shared<const std::vector<std::chrono::milliseconds>>(
                std::move(lags))
          : nullptr;
  return true;
}

std::map<std::string, std::chrono::milliseconds> engine::region_lags() const {
  std::lock_guard<std::mutex> guard{state_->mutex};
  std::map<std::string, std::chrono::milliseconds> out;
  if (state_->region_lag)
    for (size_t i = 0; i < state_->region_lag->size(); ++i)
      if ((*state_->region_lag)[i].count() > 0)
        out[state_->regions[i].name] = (*state_->region_lag)[i];
  return out;
}

uint64_t engine::add_fault(fault_rule rule) {
  std::lock_guard<std::mutex> guard{state_->mutex};
  auto id = state_->next_fault_id++;
  if (rule.count != 0) state_->faults.emplace(id, std::move(rule));
  return id;
}

result<uint64_t> engine::add_checked_fault(fault_rule rule) {
  std::lock_guard<std::mutex> guard{state_->mutex};
  if (auto ok = state_->check_rule(rule); !ok) return ok.error();
  auto id = state_->next_fault_id++;
  state_->faults.emplace(id, std::move(rule));
  return id;
}

void engine::remove_fault(uint64_t id) {
  std::function<void(std::optional<uint64_t>)> notify;
  {
    std::lock_guard<std::mutex> guard{state_->mutex};
    state_->faults.erase(id);
    if (state_->holding_rules.erase(id) != 0) notify = state_->lift_listener;
  }
  // Outside the lock: the servers' close of held connections must not wait
  // for the engine (their io threads may be blocked on it).
  if (notify) notify(id);
}

void engine::clear_faults() {
  std::function<void(std::optional<uint64_t>)> notify;
  {
    std::lock_guard<std::mutex> guard{state_->mutex};
    state_->faults.clear();
    state_->op_faults.clear();
    if (!state_->holding_rules.empty()) notify = state_->lift_listener;
    state_->holding_rules.clear();
  }
  if (notify) notify(std::nullopt);
}

void engine::on_hang_lifted(
    std::function<void(std::optional<uint64_t>)> listener) {
  std::lock_guard<std::mutex> guard{state_->mutex};
  state_->lift_listener = std::move(listener);
}

status_counters engine::counters() const {
  std::lock_guard<std::mutex> guard{state_->mutex};
  return state_->counts;
}

range_counters engine::counters_by_range() const {
  std::lock_guard<std::mutex> guard{state_->mutex};
  return state_->range_counts;
}

void engine::reset_counters() {
  std::lock_guard<std::mutex> guard{state_->mutex};
  state_->counts.clear();
  state_->range_counts.clear();
  state_->kind_counts.clear();
  state_->op_counts.clear();
  state_->user_agents.clear();
}

std::map<std::string, uint64_t> engine::user_agents() const {
  std::lock_guard<std::mutex> guard{state_->mutex};
  return state_->user_agents;
}

std::string engine::account_json() const {
  std::lock_guard<std::mutex> guard{state_->mutex};
  return state_->account_text();
}

std::vector<std::string> engine::write_regions() const {
  std::lock_guard<std::mutex> guard{state_->mutex};
  std::vector<std::string> out;
  for (const auto& name : state_->write_order)
    if (!state_->regions[static_cast<size_t>(state_->region_index(name))]
             .removed)
      out.push_back(name);
  return out;
}

engine_options engine::options() const {
  std::lock_guard<std::mutex> guard{state_->mutex};
  return state_->opts;
}

} // namespace georoute::emulator
