#pragma once

// Internal to the admin API (admin.cpp, admin_bulk.cpp): JSON answers and
// the field readers whose problems name the field. Not part of emulator.hpp.

#include "georoute/actors/policy/result.hpp"
#include "tests/emulator/http_types.hpp"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace georoute::emulator::admin_json {

using json = nlohmann::json;

inline http_response reply(int status, const json& body) {
  http_response r;
  r.status = status;
  r.set("content-type", "application/json");
  r.body = body.dump();
  return r;
}

inline http_response bad(const std::string& what) {
  return reply(400, json{{"error", what}});
}

inline http_response ok() {
  return reply(200, json{{"ok", true}});
}

inline std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= path.size()) {
    auto next = path.find('/', pos);
    if (next == std::string_view::npos) next = path.size();
    if (next > pos) out.emplace_back(path.substr(pos, next - pos));
    pos = next + 1;
  }
  return out;
}

/// Parses the body as a JSON object; an empty body is `{}`.
inline result<json> object_body(const http_request& req) {
  if (req.body.find_first_not_of(" \t\r\n") == std::string::npos)
    return json::object();
  auto j = json::parse(req.body, nullptr, false);
  if (j.is_discarded()) return problem{"body: not valid JSON"};
  if (!j.is_object()) return problem{"body: expected a JSON object"};
  return j;
}

/// Rejects members other than `allowed`, so a typo is not silently ignored.
inline result<bool> only(const json& j,
                         std::initializer_list<const char*> allowed) {
  for (const auto& [k, v] : j.items())
    if (std::none_of(allowed.begin(), allowed.end(),
                     [&k = k](const char* a) { return k == a; })) {
      std::string list;
      for (const char* a : allowed)
        list += (list.empty() ? "" : ", ") + std::string{a};
      return problem{k + ": unknown field (allowed: " + list + ")"};
    }
  return true;
}

inline result<int64_t> get_int(const json& j, const char* field, int64_t min,
                               int64_t max) {
  auto i = j.find(field);
  if (i == j.end()) return problem{std::string{field} + ": missing"};
  if (!i->is_number_integer())
    return problem{std::string{field} + ": expected an integer, got " +
                   i->dump()};
  auto v = i->get<int64_t>();
  if (i->is_number_unsigned() && i->get<uint64_t>() > uint64_t(INT64_MAX))
    v = INT64_MAX;
  if (v < min || v > max)
    return problem{std::string{field} + ": " + std::to_string(v) +
                   " is outside [" + std::to_string(min) + ", " +
                   std::to_string(max) + "]"};
  return v;
}

inline result<std::string> get_string(const json& j, const char* field,
                                      bool required = true) {
  auto i = j.find(field);
  if (i == j.end()) {
    if (required) return problem{std::string{field} + ": missing"};
    return std::string{};
  }
  if (!i->is_string())
    return problem{std::string{field} + ": expected a string, got " +
                   i->dump()};
  return i->get<std::string>();
}

inline result<double> get_number(const json& j, const char* field, double min,
                                 double max) {
  auto i = j.find(field);
  if (i == j.end()) return problem{std::string{field} + ": missing"};
  if (!i->is_number())
    return problem{std::string{field} + ": expected a number, got " +
                   i->dump()};
  auto v = i->get<double>();
  if (!(v >= min && v <= max))
    return problem{std::string{field} + ": " + i->dump() + " is outside [" +
                   json(min).dump() + ", " + json(max).dump() + "]"};
  return v;
}

/// The optional "retry_after_ms" (-1 = none, up to `max_ms`) and "count"
/// (-1 = unlimited, never 0) of a fault rule, into `retry_after_ms` and
/// `count` when present.
inline result<bool> read_retry_and_count(const json& j, int64_t max_ms,
                                         int64_t& retry_after_ms,
                                         int64_t& count) {
  if (j.contains("retry_after_ms")) {
    auto v = get_int(j, "retry_after_ms", -1, max_ms);
    if (!v) return v.error();
    retry_after_ms = *v;
  }
  if (j.contains("count")) {
    auto v = get_int(j, "count", -1, INT64_MAX);
    if (!v) return v.error();
    if (*v == 0)
      return problem{"count: 0 would never match (use -1 for unlimited)"};
    count = *v;
  }
  return true;
}

} // namespace georoute::emulator::admin_json
