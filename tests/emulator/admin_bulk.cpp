// The admin API of batch and bulk requests (on the global endpoint, beside
// admin.cpp's):
//
//   POST   /_emulator/bulk-op-faults     {"region","collection":"dbs/d/colls/
//                                        c","range":"1","operation_type":
//                                        "Create","status":429,"substatus":
//                                        3200,"retry_after_ms":100,"count":N}
//                                        (all optional) -> {"id":N}: single
//                                        bulk operations fail (engine.hpp
//                                        bulk_op_fault)
//   GET    /_emulator/bulk-op-faults     {"faults":[{"id":N,...}]}
//   DELETE /_emulator/bulk-op-faults[/{id}]  (DELETE /_emulator/faults and
//                                        /_emulator/reset lift them too)
//   POST   /_emulator/ops-budget         {"region","collection","range",
//                                        "ops_per_second":N,"burst":B,
//                                        "spread":true} ->
//                                        {"id":N}: bulk operations per second
//                                        per range, the excess 429 with
//                                        retryAfterMilliseconds (engine.hpp
//                                        range_ops_budget); reset leaves it
//   GET    /_emulator/ops-budget         {"budgets":[{"id":N,...}]}
//   DELETE /_emulator/ops-budget[/{id}]
//   POST   /_emulator/bulk-response-cap  {"bytes":N}: past N bytes of results
//                                        the rest of a bulk request is
//                                        413/3402
//   GET    /_emulator/counters/kinds     {"West US":{"bulk":{"200":N}}}: by
//                                        kind (read, write, query, feed,
//                                        patch, batch, bulk, ...)
//   GET    /_emulator/counters/ops       {"West US":{"dbs/d/colls/c":{"1":
//                                        {"batch":{"201":N},"bulk":{..}}}}}
//   GET    /_emulator/documents/{db}/{coll}  {"documents":[{"id","pk",
//                                        "writes":N,"live":true,"etag"}]}:
//                                        every document ever written and how
//                                        often (applied exactly once?)
//
// A bad request is 400 {"error":"<field>: <why>"}.

#include "tests/emulator/admin_json.hpp"
#include "tests/emulator/server.hpp"

#include <optional>
#include <string>
#include <vector>

namespace georoute::emulator {

namespace {

using namespace admin_json;

constexpr int64_t max_ms = int64_t{24} * 3600 * 1000;

/// The scope fields every bulk knob has.
result<bool> read_scope(const json& j, std::string& region,
                        std::string& collection, std::string& range) {
  for (auto [field, dest] :
       {std::pair<const char*, std::string*>{"region", &region},
        {"collection", &collection},
        {"range", &range}}) {
    auto v = get_string(j, field, false);
    if (!v) return v.error();
    *dest = std::move(*v);
  }
  return true;
}

result<bulk_op_fault> parse_op_fault(const json& j) {
  if (auto r = only(j, {"region", "collection", "range", "operation_type",
                        "status", "substatus", "retry_after_ms", "count"});
      !r)
    return r.error();
  bulk_op_fault f;
  if (auto r = read_scope(j, f.region, f.collection, f.range_id); !r)
    return r.error();
  auto type = get_string(j, "operation_type", false);
  if (!type) return type.error();
  f.operation_type = std::move(*type);
  for (auto [field, min, max] :
       {std::tuple<const char*, int64_t, int64_t>{"status", 100, 999},
        {"substatus", 0, 1000000}}) {
    if (!j.contains(field)) continue;
    auto v = get_int(j, field, min, max);
    if (!v) return v.error();
    (std::string_view{field} == "status" ? f.status : f.substatus) =
        static_cast<int>(*v);
  }
  if (auto r = read_retry_and_count(j, max_ms, f.retry_after_ms, f.count); !r)
    return r.error();
  return f;
}

json op_fault_json(uint64_t id, const bulk_op_fault& f) {
  return {{"id", id},
          {"region", f.region},
          {"collection", f.collection},
          {"range", f.range_id},
          {"operation_type", f.operation_type},
          {"status", f.status},
          {"substatus", f.substatus},
          {"retry_after_ms", f.retry_after_ms},
          {"count", f.count}};
}

result<range_ops_budget> parse_budget(const json& j) {
  if (auto r = only(j, {"region", "collection", "range", "ops_per_second",
                        "burst", "spread"});
      !r)
    return r.error();
  range_ops_budget b;
  if (auto r = read_scope(j, b.region, b.collection, b.range_id); !r)
    return r.error();
  auto rate = get_number(j, "ops_per_second", 0.0, 1e9);
  if (!rate) return rate.error();
  if (*rate <= 0) return problem{"ops_per_second: must be above 0"};
  b.ops_per_second = *rate;
  if (j.contains("burst")) {
    auto v = get_number(j, "burst", 0.0, 1e9);
    if (!v) return v.error();
    b.burst = *v;
  }
  if (auto i = j.find("spread"); i != j.end()) {
    if (!i->is_boolean())
      return problem{"spread: expected true or false, got " + i->dump()};
    b.spread = i->get<bool>();
  }
  return b;
}

json budget_json(uint64_t id, const range_ops_budget& b) {
  return {{"id", id},
          {"region", b.region},
          {"collection", b.collection},
          {"range", b.range_id},
          {"ops_per_second", b.ops_per_second},
          {"burst", b.burst},
          {"spread", b.spread}};
}

json statuses_json(const std::map<int, uint64_t>& by_status) {
  json out = json::object();
  for (const auto& [status, n] : by_status)
    out[std::to_string(status)] = n;
  return out;
}

/// A DELETE of one rule or budget: `/{id}`.
std::optional<uint64_t> id_of(const std::string& text) {
  if (text.empty() || text.size() > 19 ||
      text.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::stoull(text);
}

http_response wrong_method(const http_request& req, const char* allowed) {
  return reply(405, json{{"error", req.target + " takes " + allowed + ", not " +
                                       req.method}});
}

http_response op_faults_action(engine& eng,
                               const std::vector<std::string>& parts,
                               const http_request& req) {
  const auto& m = req.method;
  if (parts.size() == 2) {
    if (m != "DELETE") return wrong_method(req, "DELETE");
    auto id = id_of(parts[1]);
    if (!id) return bad("id: '" + parts[1] + "' is not a fault id");
    eng.remove_bulk_op_fault(*id);
    return ok();
  }
  if (m == "GET") {
    json list = json::array();
    for (const auto& [id, f] : eng.bulk_op_faults())
      list.push_back(op_fault_json(id, f));
    return reply(200, json{{"faults", std::move(list)}});
  }
  if (m == "DELETE") {
    for (const auto& [id, f] : eng.bulk_op_faults())
      eng.remove_bulk_op_fault(id);
    return ok();
  }
  if (m != "POST") return wrong_method(req, "GET, POST or DELETE");
  auto body = object_body(req);
  if (!body) return bad(body.error().what);
  auto rule = parse_op_fault(*body);
  if (!rule) return bad(rule.error().what);
  auto id = eng.add_bulk_op_fault(std::move(*rule));
  if (!id) return bad(id.error().what);
  return reply(200, json{{"id", *id}});
}

http_response budget_action(engine& eng, const std::vector<std::string>& parts,
                            const http_request& req) {
  const auto& m = req.method;
  if (parts.size() == 2) {
    if (m != "DELETE") return wrong_method(req, "DELETE");
    auto id = id_of(parts[1]);
    if (!id) return bad("id: '" + parts[1] + "' is not a budget id");
    return reply(200,
                 json{{"ok", true}, {"removed", eng.remove_ops_budget(*id)}});
  }
  if (m == "GET") {
    json list = json::array();
    for (const auto& [id, b] : eng.ops_budgets())
      list.push_back(budget_json(id, b));
    return reply(200, json{{"budgets", std::move(list)}});
  }
  if (m == "DELETE") {
    eng.clear_ops_budgets();
    return ok();
  }
  if (m != "POST") return wrong_method(req, "GET, POST or DELETE");
  auto body = object_body(req);
  if (!body) return bad(body.error().what);
  auto budget = parse_budget(*body);
  if (!budget) return bad(budget.error().what);
  auto id = eng.add_ops_budget(std::move(*budget));
  if (!id) return bad(id.error().what);
  return reply(200, json{{"id", *id}});
}

} // namespace

json bulk_state_json(engine& eng) {
  json budgets = json::array();
  for (const auto& [id, b] : eng.ops_budgets())
    budgets.push_back(budget_json(id, b));
  return {{"bulk_response_cap_bytes", eng.options().bulk_response_cap_bytes},
          {"ops_budgets", std::move(budgets)}};
}

std::optional<http_response>
handle_bulk_admin(engine& eng, const std::vector<std::string>& parts,
                  const http_request& req) {
  if (parts.empty()) return std::nullopt;
  const auto& top = parts[0];
  const auto& m = req.method;
  if (top == "bulk-op-faults" && parts.size() <= 2)
    return op_faults_action(eng, parts, req);
  if (top == "ops-budget" && parts.size() <= 2)
    return budget_action(eng, parts, req);
  if (top == "bulk-response-cap" && parts.size() == 1) {
    if (m != "POST") return wrong_method(req, "POST");
    auto body = object_body(req);
    if (!body) return bad(body.error().what);
    if (auto r = only(*body, {"bytes"}); !r) return bad(r.error().what);
    auto bytes = get_int(*body, "bytes", 1, int64_t{1} << 40);
    if (!bytes) return bad(bytes.error().what);
    eng.set_bulk_response_cap(static_cast<size_t>(*bytes));
    return ok();
  }
  if (top == "counters" && parts.size() == 2 &&
      (parts[1] == "kinds" || parts[1] == "ops")) {
    if (m != "GET") return wrong_method(req, "GET");
    json out = json::object();
    if (parts[1] == "kinds") {
      for (const auto& [region, kinds] : eng.counters_by_kind())
        for (const auto& [kind, by_status] : kinds)
          out[region][kind] = statuses_json(by_status);
    } else {
      for (const auto& [key, tally] : eng.counters_by_op())
        out[key.region][key.collection][key.range_id] = {
            {"batch", statuses_json(tally.batch)},
            {"bulk", statuses_json(tally.bulk)}};
    }
    return reply(200, out);
  }
  if (top == "documents" && parts.size() == 3) {
    if (m != "GET") return wrong_method(req, "GET");
    auto docs = eng.documents(parts[1], parts[2]);
    if (!docs) return bad(docs.error().what);
    json list = json::array();
    for (const auto& d : *docs)
      list.push_back({{"id", d.id},
                      {"pk", d.pk},
                      {"writes", d.writes},
                      {"live", d.live},
                      {"etag", d.etag}});
    return reply(200, json{{"documents", std::move(list)}});
  }
  return std::nullopt;
}

} // namespace georoute::emulator
