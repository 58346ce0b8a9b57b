// The emulator's JSON admin API under /_emulator/ on the global endpoint (no
// auth: the servers listen on loopback only). Plain C++ and nlohmann/json;
// the Beast session hands requests in and writes the answer.
//
//   GET    /_emulator/state                  regions, write regions, ...
//   POST   /_emulator/regions/{name}/state   {"state":"online|offline_refuse|
//                                             offline_reset|hang"}
//   POST   /_emulator/regions/{name}/latency {"ms":N,"jitter_ms":J} (J <= N;
//                                            each response waits N ± J)
//   POST   /_emulator/regions/{name}/flap {"down_state":"hang|offline_refuse|
//                                             offline_reset|online",
//                                             "down_latency_ms":N,
//                                             "down_for_ms":N,"up_for_ms":N}
//                                            down first, then up, ... (online
//                                            + down_latency_ms = turns slow)
//   DELETE /_emulator/regions/{name}/flap    stops it; the region is online
//   POST   /_emulator/regions/{name}/remove  (no body)
//   POST   /_emulator/regions/{name}/restore (no body)
//   POST   /_emulator/write-regions          {"order":["East US","West US"]}
//   POST   /_emulator/multi-write            {"enabled":true}
//   POST   /_emulator/split                  {"db":"d","coll":"c","range":"0"}
//   POST   /_emulator/merge                  {"db":"d","coll":"c","ranges":
//                                             ["1","2"]} -> {"range":"3"}:
//                                            two adjacent ranges become one
//   POST   /_emulator/replication-lag        {"ms":N}
//   POST   /_emulator/region-lag             {"region":"East US","lag_ms":N}:
//                                            that region sees the others'
//                                            writes N ms later still (the
//                                            writes from now on; 0 = none)
//   POST   /_emulator/throughput             {"region":"","ru_per_second":N}
//   POST   /_emulator/clock-offset           {"ms":N} (N may be negative)
//   POST   /_emulator/faults                 fault_rule fields -> {"id":N}
//                                            ("body":"...", "headers":{..},
//                                            "truncate":true included; grey
//                                            failures: "collection":"dbs/d/
//                                            colls/c", "range":"1",
//                                            "action":"status|hang|delay",
//                                            "delay_ms":N)
//   DELETE /_emulator/faults/{id}, DELETE /_emulator/faults (lifting a hang
//                                            rule closes what it holds)
//   POST   /_emulator/reset                  lifts every fault: regions online,
//                                            no latency, flap or fault rule
//   GET    /_emulator/counters               {"West US":{"200":N},...}
//   GET    /_emulator/counters/ranges        {"West US":{"dbs/d/colls/c":
//                                             {"0":{"status":{"200":N},
//                                             "held":M}}}}
//   POST   /_emulator/counters/reset         (both kinds)
//   GET    /_emulator/ppaf                   {"enabled":true|false|null,
//                                             "moves":[{"collection":"dbs/d/
//                                             colls/c","range":"0",
//                                             "region":"East US"}]}
//   POST   /_emulator/ppaf                   {"enabled":true|false|null}: the
//                                            account property
//                                            enablePerPartitionFailoverBehavior
//                                            (null = left out of GET /)
//   POST   /_emulator/ppaf/move              {"db":"d","coll":"c","range":"0",
//                                             "region":"East US"}: the range's
//                                            writes go to that region only
//                                            (single-write accounts; 400
//                                            "account: ..." on multi-write)
//   POST   /_emulator/ppaf/clear             {"db":"d","coll":"c","range":"0"}
//                                            -> {"cleared":true|false}: back
//                                            to the account write region
//   .../bulk-op-faults, ops-budget, bulk-response-cap, counters/kinds,
//   counters/ops, documents/{db}/{coll}: batch and bulk (admin_bulk.cpp)
//
// Region names in paths are percent-encoded ("West%20US"). Success is 200
// with a JSON body; a bad request is 400 {"error":"<field>: <why>"}; an
// unknown path 404, a known path with the wrong method 405.

#include "georoute/transport/url.hpp"
#include "tests/emulator/admin_json.hpp"
#include "tests/emulator/server.hpp"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

namespace georoute::emulator {

namespace {

using namespace admin_json;

constexpr int64_t max_ms = int64_t{24} * 3600 * 1000;

json flap_json(const flap_status& f) {
  if (!f.active) return nullptr;
  return {{"down", f.down},
          {"transitions", f.transitions},
          {"down_state", to_string(f.schedule.down_state)},
          {"down_latency_ms", f.schedule.down_latency.count()},
          {"down_for_ms", f.schedule.down_for.count()},
          {"up_for_ms", f.schedule.up_for.count()}};
}

/// GET /_emulator/ppaf, and "ppaf" in GET /_emulator/state.
json ppaf_json(engine& eng) {
  json moves = json::array();
  for (const auto& m : eng.partition_write_regions())
    moves.push_back({{"collection", m.collection},
                     {"range", m.range_id},
                     {"region", m.region}});
  auto enabled = eng.per_partition_failover();
  return {{"enabled", enabled ? json(*enabled) : json(nullptr)},
          {"moves", std::move(moves)}};
}

/// POST /_emulator/ppaf[/move|/clear].
http_response ppaf_action(engine& eng, const std::string& action,
                          const json& j) {
  if (action.empty()) {
    if (auto r = only(j, {"enabled"}); !r) return bad(r.error().what);
    auto i = j.find("enabled");
    if (i == j.end() || !(i->is_boolean() || i->is_null()))
      return bad(
          "enabled: expected true, false or null" +
          (i == j.end() ? std::string{", missing"} : ", got " + i->dump()));
    eng.set_per_partition_failover(
        i->is_null() ? std::nullopt : std::optional<bool>{i->get<bool>()});
    return ok();
  }
  bool move = action == "move";
  if (auto r = move ? only(j, {"db", "coll", "range", "region"})
                    : only(j, {"db", "coll", "range"});
      !r)
    return bad(r.error().what);
  std::vector<std::string> fields;
  for (const char* field : {"db", "coll", "range", "region"}) {
    if (!move && std::string_view{field} == "region") break;
    auto v = get_string(j, field);
    if (!v) return bad(v.error().what);
    fields.push_back(std::move(*v));
  }
  if (move) {
    auto r = eng.move_partition_write_region(fields[0], fields[1], fields[2],
                                             fields[3]);
    if (!r) return bad(r.error().what);
    return ok();
  }
  auto r = eng.clear_partition_write_region(fields[0], fields[1], fields[2]);
  if (!r) return bad(r.error().what);
  return reply(200, json{{"ok", true}, {"cleared", *r}});
}

/// {"East US": 5000}: the regions with an extra replication lag.
json region_lags_json(const engine& eng) {
  json out = json::object();
  for (const auto& [name, lag] : eng.region_lags())
    out[name] = lag.count();
  return out;
}

json state_json(emulator& emu) {
  auto& eng = emu.control();
  auto account = json::parse(eng.account_json(), nullptr, false);
  std::vector<std::string> listed;
  if (account.is_object() && account.contains("readableLocations") &&
      account["readableLocations"].is_array())
    for (const auto& loc : account["readableLocations"])
      if (loc.is_object() && loc.contains("name") && loc["name"].is_string())
        listed.push_back(loc["name"].get<std::string>());
  json regions = json::array();
  const auto opts = eng.options();
  for (const auto& name : opts.regions)
    regions.push_back(
        {{"name", name},
         {"endpoint", emu.endpoint(name)},
         {"state", to_string(emu.get_region_state(name))},
         {"latency_ms", emu.get_latency(name).count()},
         {"jitter_ms", emu.get_jitter(name).count()},
         {"held_requests", emu.held_requests(name)},
         {"flap", flap_json(emu.get_flap(name))},
         {"removed",
          std::find(listed.begin(), listed.end(), name) == listed.end()},
         {"accepted_connections", emu.accepted_connections(name)}});
  bool multi = opts.multi_write;
  if (account.is_object() && account.contains("enableMultipleWriteLocations")) {
    const auto& m = account["enableMultipleWriteLocations"];
    multi = m.is_boolean() ? m.get<bool>() : (m.is_string() && m == "true");
  }
  return {{"global_endpoint", emu.global_endpoint()},
          {"regions", regions},
          {"write_regions", eng.write_regions()},
          {"multi_write", multi},
          {"replication_lag_ms", opts.replication_lag.count()},
          {"region_lag_ms", region_lags_json(eng)},
          {"ppaf", ppaf_json(eng)},
          {"bulk", bulk_state_json(eng)}};
}

result<fault_rule> parse_fault(const json& j) {
  if (auto r =
          only(j, {"region", "method", "resource_type", "operation",
                   "path_contains", "status", "substatus", "retry_after_ms",
                   "count", "probability", "body", "headers", "truncate",
                   "collection", "range", "action", "delay_ms"});
      !r)
    return r.error();
  fault_rule f;
  for (auto [field, dest] :
       {std::pair<const char*, std::string*>{"region", &f.region},
        {"method", &f.method},
        {"resource_type", &f.resource_type},
        {"operation", &f.operation},
        {"path_contains", &f.path_contains},
        {"collection", &f.collection},
        {"range", &f.range_id}}) {
    auto v = get_string(j, field, false);
    if (!v) return v.error();
    *dest = std::move(*v);
  }
  std::transform(
      f.method.begin(), f.method.end(), f.method.begin(),
      [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  static const char* ops[] = {"",     "read",    "write", "query", "query_plan",
                              "feed", "account", "patch", "batch", "bulk"};
  if (std::find(std::begin(ops), std::end(ops), f.operation) == std::end(ops))
    return problem{"operation: '" + f.operation +
                   "' is not one of read, write, query, query_plan, feed, "
                   "account, patch, batch, bulk"};
  if (j.contains("status")) {
    auto v = get_int(j, "status", 100, 999);
    if (!v) return v.error();
    f.status = static_cast<int>(*v);
  }
  if (j.contains("substatus")) {
    auto v = get_int(j, "substatus", 0, 1000000);
    if (!v) return v.error();
    f.substatus = static_cast<int>(*v);
  }
  if (auto r = read_retry_and_count(j, max_ms, f.retry_after_ms, f.count); !r)
    return r.error();
  if (j.contains("probability")) {
    auto v = get_number(j, "probability", 0.0, 1.0);
    if (!v) return v.error();
    f.probability = *v;
  }
  if (j.contains("body")) {
    auto v = get_string(j, "body");
    if (!v) return v.error();
    f.body = std::move(*v);
  }
  if (auto i = j.find("headers"); i != j.end()) {
    if (!i->is_object())
      return problem{"headers: expected an object of strings, got " +
                     i->dump()};
    for (const auto& [name, value] : i->items()) {
      if (!value.is_string())
        return problem{"headers." + name + ": expected a string, got " +
                       value.dump()};
      f.headers.emplace_back(name, value.get<std::string>());
    }
  }
  if (auto i = j.find("truncate"); i != j.end()) {
    if (!i->is_boolean())
      return problem{"truncate: expected true or false, got " + i->dump()};
    f.truncate = i->get<bool>();
  }
  if (j.contains("action")) {
    auto text = get_string(j, "action");
    if (!text) return text.error();
    auto a = parse_fault_action(*text);
    if (!a) return a.error();
    f.action = *a;
  }
  if (j.contains("delay_ms")) {
    auto v = get_int(j, "delay_ms", 0, max_ms);
    if (!v) return v.error();
    f.delay = std::chrono::milliseconds{*v};
  }
  return f;
}

json range_counters_json(const range_counters& counters) {
  json out = json::object();
  for (const auto& [key, tally] : counters) {
    json statuses = json::object();
    for (const auto& [status, n] : tally.by_status)
      statuses[std::to_string(status)] = n;
    out[key.region][key.collection][key.range_id] = {
        {"status", std::move(statuses)}, {"held", tally.held}};
  }
  return out;
}

/// The flap of POST /_emulator/regions/{name}/flap.
result<flap_schedule> parse_flap(const json& j) {
  if (auto r = only(
          j, {"down_state", "down_latency_ms", "down_for_ms", "up_for_ms"});
      !r)
    return r.error();
  flap_schedule f;
  if (j.contains("down_state")) {
    auto text = get_string(j, "down_state");
    if (!text) return text.error();
    auto s = parse_region_state(*text);
    if (!s) return problem{"down_" + s.error().what};
    f.down_state = *s;
  }
  for (auto [field, dest, min] :
       {std::tuple<const char*, std::chrono::milliseconds*, int64_t>{
            "down_latency_ms", &f.down_latency, 0},
        {"down_for_ms", &f.down_for, 10},
        {"up_for_ms", &f.up_for, 10}}) {
    if (!j.contains(field)) continue;
    auto v = get_int(j, field, min, max_ms);
    if (!v) return v.error();
    *dest = std::chrono::milliseconds{*v};
  }
  return f;
}

json counters_json(const status_counters& counters) {
  json out = json::object();
  for (const auto& [region, by_status] : counters) {
    json per = json::object();
    for (const auto& [status, n] : by_status)
      per[std::to_string(status)] = n;
    out[region] = std::move(per);
  }
  return out;
}

http_response region_action(emulator& emu, const std::string& method,
                            const std::string& region,
                            const std::string& action,
                            const http_request& req) {
  auto& eng = emu.control();
  const auto names = eng.options().regions;
  if (std::find(names.begin(), names.end(), region) == names.end())
    return bad("region: unknown region '" + region + "'");
  if (action != "state" && action != "latency" && action != "remove" &&
      action != "restore" && action != "flap")
    return reply(
        404, json{{"error", "no admin endpoint " + method + " " + req.target}});
  if (action == "flap" && method == "DELETE") {
    if (auto r = emu.stop_flap(region); !r) return bad(r.error().what);
    return ok();
  }
  if (method != "POST")
    return reply(405,
                 json{{"error", req.target + " takes POST" +
                                    (action == "flap" ? " or DELETE" : "") +
                                    ", not " + method}});
  auto body = object_body(req);
  if (!body) return bad(body.error().what);
  if (action == "state") {
    if (auto r = only(*body, {"state"}); !r) return bad(r.error().what);
    auto text = get_string(*body, "state");
    if (!text) return bad(text.error().what);
    auto s = parse_region_state(*text);
    if (!s) return bad(s.error().what);
    if (auto r = emu.set_region_state(region, *s); !r)
      return bad("state: " + r.error().what);
    return ok();
  }
  if (action == "latency") {
    if (auto r = only(*body, {"ms", "jitter_ms"}); !r)
      return bad(r.error().what);
    auto ms = get_int(*body, "ms", 0, max_ms);
    if (!ms) return bad(ms.error().what);
    int64_t jitter = 0;
    if (body->contains("jitter_ms")) {
      auto j = get_int(*body, "jitter_ms", 0, *ms);
      if (!j) return bad(j.error().what);
      jitter = *j;
    }
    if (auto r = emu.set_latency(region, std::chrono::milliseconds{*ms},
                                 std::chrono::milliseconds{jitter});
        !r)
      return bad(r.error().what);
    return ok();
  }
  if (action == "flap") {
    auto f = parse_flap(*body);
    if (!f) return bad(f.error().what);
    if (auto r = emu.start_flap(region, *f); !r) return bad(r.error().what);
    return ok();
  }
  auto r = action == "remove" ? eng.remove_region(region)
                              : eng.restore_region(region);
  if (!r) return bad("region: " + r.error().what);
  return ok();
}

http_response dispatch(emulator& emu, const http_request& req) {
  auto& eng = emu.control();
  std::string_view path{req.target};
  path = path.substr(0, path.find('?'));
  path.remove_prefix(admin_prefix.size());
  auto parts = split_path(path);
  for (auto& p : parts) {
    auto decoded = transport::percent_decode(p);
    if (!decoded) return bad("path: malformed %-escape in '" + p + "'");
    p = std::move(*decoded);
  }
  const auto& m = req.method;
  auto not_found = [&] {
    return reply(404,
                 json{{"error", "no admin endpoint " + m + " " + req.target}});
  };
  auto wrong_method = [&](const char* allowed) {
    return reply(
        405, json{{"error", req.target + " takes " + allowed + ", not " + m}});
  };
  if (parts.empty()) return not_found();
  if (auto r = handle_bulk_admin(eng, parts, req)) return std::move(*r);
  const auto& top = parts[0];

  if (top == "regions" && parts.size() == 3)
    return region_action(emu, m, parts[1], parts[2], req);
  if (top == "state" && parts.size() == 1) {
    if (m != "GET") return wrong_method("GET");
    return reply(200, state_json(emu));
  }
  if (top == "counters" && parts.size() == 1) {
    if (m != "GET") return wrong_method("GET");
    return reply(200, counters_json(eng.counters()));
  }
  if (top == "counters" && parts.size() == 2 && parts[1] == "ranges") {
    if (m != "GET") return wrong_method("GET");
    return reply(200, range_counters_json(eng.counters_by_range()));
  }
  if (top == "reset" && parts.size() == 1) {
    if (m != "POST") return wrong_method("POST");
    if (auto r = emu.reset_faults(); !r)
      return reply(500, json{{"error", "reset: " + r.error().what}});
    return ok();
  }
  if (top == "counters" && parts.size() == 2 && parts[1] == "reset") {
    if (m != "POST") return wrong_method("POST");
    eng.reset_counters();
    return ok();
  }
  if (top == "ppaf" && parts.size() == 1 && m == "GET")
    return reply(200, ppaf_json(eng));
  if (top == "ppaf" && parts.size() <= 2) {
    if (parts.size() == 2 && parts[1] != "move" && parts[1] != "clear")
      return not_found();
    if (m != "POST")
      return wrong_method(parts.size() == 1 ? "GET or POST" : "POST");
    auto body = object_body(req);
    if (!body) return bad(body.error().what);
    return ppaf_action(eng, parts.size() == 2 ? parts[1] : std::string{},
                       *body);
  }
  if (top == "faults" && parts.size() <= 2) {
    if (parts.size() == 2) {
      if (m != "DELETE") return wrong_method("DELETE");
      const auto& id = parts[1];
      if (id.empty() || id.size() > 19 ||
          id.find_first_not_of("0123456789") != std::string::npos)
        return bad("id: '" + id + "' is not a fault id");
      eng.remove_fault(std::stoull(id));
      return ok();
    }
    if (m == "DELETE") {
      eng.clear_faults();
      return ok();
    }
    if (m != "POST") return wrong_method("POST or DELETE");
  }
  if (parts.size() != 1) return not_found();
  // Everything below is POST with a JSON object body.
  static const char* post_only[] = {
      "write-regions", "multi-write",     "split",
      "merge",         "region-lag",      "throughput",
      "faults",        "replication-lag", "clock-offset"};
  if (std::find(std::begin(post_only), std::end(post_only), top) ==
      std::end(post_only))
    return not_found();
  if (m != "POST") return wrong_method("POST");
  auto body = object_body(req);
  if (!body) return bad(body.error().what);
  const json& j = *body;

  if (top == "faults") {
    auto rule = parse_fault(j);
    if (!rule) return bad(rule.error().what);
    auto id = eng.add_checked_fault(std::move(*rule));
    if (!id) return bad(id.error().what);
    return reply(200, json{{"id", *id}});
  }
  if (top == "write-regions") {
    if (auto r = only(j, {"order"}); !r) return bad(r.error().what);
    auto i = j.find("order");
    if (i == j.end()) return bad("order: missing");
    if (!i->is_array() || i->empty() ||
        !std::all_of(i->begin(), i->end(),
                     [](const json& x) { return x.is_string(); }))
      return bad("order: expected a non-empty array of region names, got " +
                 i->dump());
    auto order = i->get<std::vector<std::string>>();
    if (auto r = eng.set_write_regions(order); !r)
      return bad("order: " + r.error().what);
    return ok();
  }
  if (top == "multi-write") {
    if (auto r = only(j, {"enabled"}); !r) return bad(r.error().what);
    auto i = j.find("enabled");
    if (i == j.end() || !i->is_boolean())
      return bad(
          "enabled: expected true or false" +
          (i == j.end() ? std::string{", missing"} : ", got " + i->dump()));
    eng.set_multi_write(i->get<bool>());
    return ok();
  }
  if (top == "split") {
    if (auto r = only(j, {"db", "coll", "range"}); !r)
      return bad(r.error().what);
    auto db = get_string(j, "db");
    if (!db) return bad(db.error().what);
    auto coll = get_string(j, "coll");
    if (!coll) return bad(coll.error().what);
    auto range = get_string(j, "range");
    if (!range) return bad(range.error().what);
    auto children = eng.split_range(*db, *coll, *range);
    if (!children) return bad("range: " + children.error().what);
    return reply(200, json{{"children", *children}});
  }
  if (top == "merge") {
    if (auto r = only(j, {"db", "coll", "ranges"}); !r)
      return bad(r.error().what);
    auto db = get_string(j, "db");
    if (!db) return bad(db.error().what);
    auto coll = get_string(j, "coll");
    if (!coll) return bad(coll.error().what);
    auto i = j.find("ranges");
    if (i == j.end()) return bad("ranges: missing");
    if (!i->is_array() || i->size() != 2 || !(*i)[0].is_string() ||
        !(*i)[1].is_string())
      return bad("ranges: expected two range ids, [\"1\",\"2\"], got " +
                 i->dump());
    auto merged = eng.merge_ranges(*db, *coll, (*i)[0].get<std::string>(),
                                   (*i)[1].get<std::string>());
    if (!merged) return bad(merged.error().what);
    return reply(200, json{{"range", *merged}});
  }
  if (top == "region-lag") {
    if (auto r = only(j, {"region", "lag_ms"}); !r) return bad(r.error().what);
    auto region = get_string(j, "region");
    if (!region) return bad(region.error().what);
    auto ms = get_int(j, "lag_ms", 0, max_ms);
    if (!ms) return bad(ms.error().what);
    if (auto r = eng.set_region_lag(*region, std::chrono::milliseconds{*ms});
        !r)
      return bad(r.error().what);
    return ok();
  }
  if (top == "clock-offset") {
    if (auto r = only(j, {"ms"}); !r) return bad(r.error().what);
    auto ms = get_int(j, "ms", -max_ms, max_ms);
    if (!ms) return bad(ms.error().what);
    eng.set_clock_offset(std::chrono::milliseconds{*ms});
    return ok();
  }
  if (top == "replication-lag") {
    if (auto r = only(j, {"ms"}); !r) return bad(r.error().what);
    auto ms = get_int(j, "ms", 0, max_ms);
    if (!ms) return bad(ms.error().what);
    eng.set_replication_lag(std::chrono::milliseconds{*ms});
    return ok();
  }
  // throughput
  if (auto r = only(j, {"region", "ru_per_second"}); !r)
    return bad(r.error().what);
  auto region = get_string(j, "region", false);
  if (!region) return bad(region.error().what);
  const auto names = eng.options().regions;
  if (!region->empty() &&
      std::find(names.begin(), names.end(), *region) == names.end())
    return bad("region: unknown region '" + *region + "'");
  auto ru = get_number(j, "ru_per_second", 0.0, 1e12);
  if (!ru) return bad(ru.error().what);
  eng.set_throughput(*region, *ru);
  return ok();
}

} // namespace

http_response handle_admin(emulator& emu, const http_request& req) {
  try {
    return dispatch(emu, req);
  } catch (const std::exception& e) {
    return reply(500,
                 json{{"error", std::string{"admin failure: "} + e.what()}});
  } catch (...) {
    return reply(500, json{{"error", "admin failure"}});
  }
}

} // namespace georoute::emulator
