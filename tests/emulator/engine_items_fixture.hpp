#pragma once

// Shared by the engine tests of item operations (engine_patch_test.cpp,
// engine_batch_test.cpp, engine_bulk_test.cpp): an engine without auth, a
// database `d` with a collection `c` partitioned on /pk, and helpers that
// hand requests to engine::handle at explicit times (no sockets, no sleep).

#include "tests/emulator/engine.hpp"

#include <chrono>
#include <gtest/gtest.h>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace georoute::emulator_testing {

using emulator::engine;
using emulator::http_response;
using json = nlohmann::json;
using headers_t = std::map<std::string, std::string>;

/// A fixed instant, so times are exact.
inline const engine::clock::time_point t0 =
    engine::clock::time_point{} + std::chrono::seconds{1'900'000'000};

inline const std::string west = "West US";
inline const std::string east = "East US";

/// The partition-key header value of one string key: ["a"].
inline std::string key_of(const std::string& pk) {
  return json::array({pk}).dump();
}

class EngineItems : public testing::Test {
protected:
  void SetUp() override { make(emulator::engine_options{}); }

  void make(emulator::engine_options o) {
    o.verify_auth = false;
    eng = std::make_unique<engine>(std::move(o));
    ASSERT_EQ(send(west, "POST", "/dbs", json{{"id", "d"}}.dump()).status, 201);
    json coll{{"id", "c"},
              {"partitionKey",
               {{"paths", {"/pk"}}, {"kind", "Hash"}, {"version", 2}}}};
    ASSERT_EQ(send(west, "POST", "/dbs/d/colls", coll.dump()).status, 201);
  }

  http_response send(const std::string& region, const std::string& method,
                     const std::string& target, std::string body = {},
                     headers_t headers = {},
                     engine::clock::time_point now = t0) {
    emulator::http_request r;
    r.method = method;
    r.target = target;
    r.body = std::move(body);
    r.headers = std::move(headers);
    return eng->handle(region, r, now);
  }

  /// Creates document `doc` (its pk from the document) in the write region.
  http_response create(const json& doc, engine::clock::time_point now = t0) {
    auto res = send(west, "POST", "/dbs/d/colls/c/docs", doc.dump(),
                    {{"x-ms-documentdb-partitionkey",
                      key_of(doc["pk"].get<std::string>())}},
                    now);
    EXPECT_EQ(res.status, 201) << res.body;
    return res;
  }

  /// A point read: the status and, on 200, the document.
  std::pair<int, json> read(const std::string& id, const std::string& pk,
                            const std::string& region = west,
                            engine::clock::time_point now = t0) {
    auto res = send(region, "GET", "/dbs/d/colls/c/docs/" + id, {},
                    {{"x-ms-documentdb-partitionkey", key_of(pk)}}, now);
    return {res.status, res.status == 200 ? json::parse(res.body) : json{}};
  }

  /// PATCH of document `id` in partition `pk`.
  http_response patch(const std::string& id, const std::string& pk,
                      const json& body, headers_t extra = {},
                      const std::string& region = west) {
    extra["x-ms-documentdb-partitionkey"] = key_of(pk);
    return send(region, "PATCH", "/dbs/d/colls/c/docs/" + id, body.dump(),
                extra);
  }

  /// A transactional batch in partition `pk`.
  http_response batch(const std::string& pk, const json& ops,
                      headers_t extra = {}, const std::string& region = west) {
    extra.emplace("x-ms-cosmos-is-batch-request", "True");
    extra.emplace("x-ms-cosmos-batch-atomic", "True");
    extra.emplace("x-ms-documentdb-partitionkey", key_of(pk));
    return send(region, "POST", "/dbs/d/colls/c/docs", ops.dump(), extra);
  }

  /// A bulk request to range `range`.
  http_response bulk(const std::string& range, const json& ops,
                     headers_t extra = {}, const std::string& region = west,
                     engine::clock::time_point now = t0) {
    extra.emplace("x-ms-cosmos-is-batch-request", "true");
    extra.emplace("x-ms-cosmos-batch-atomic", "false");
    extra.emplace("x-ms-cosmos-batch-continue-on-error", "true");
    extra.emplace("x-ms-documentdb-partitionkeyrangeid", range);
    return send(region, "POST", "/dbs/d/colls/c/docs", ops.dump(), extra, now);
  }

  /// Current ranges: id -> [min, max).
  std::map<std::string, std::pair<std::string, std::string>> ranges() {
    auto res = send(west, "GET", "/dbs/d/colls/c/pkranges");
    std::map<std::string, std::pair<std::string, std::string>> out;
    auto body = json::parse(res.body);
    for (const auto& r : body["PartitionKeyRanges"])
      out[r["id"]] = {r["minInclusive"], r["maxExclusive"]};
    return out;
  }

  /// The range that holds partition `pk` (from a write's answer).
  std::string range_of(const std::string& pk) {
    auto res = send(west, "GET", "/dbs/d/colls/c/docs/nothing-here", {},
                    {{"x-ms-documentdb-partitionkey", key_of(pk)}});
    return res.get("x-ms-documentdb-partitionkeyrangeid");
  }

  /// Document `id`'s committed writes, or -1 when it was never written.
  int64_t writes_of(const std::string& id) {
    auto docs = eng->documents("d", "c");
    EXPECT_TRUE(docs) << docs.error().what;
    for (const auto& d : *docs)
      if (d.id == id) return static_cast<int64_t>(d.writes);
    return -1;
  }

  std::unique_ptr<engine> eng;
};

/// A batch operation.
inline json op(const std::string& type, const std::string& id = {},
               json body = nullptr) {
  json o{{"operationType", type}};
  if (!id.empty()) o["id"] = id;
  if (!body.is_null()) o["resourceBody"] = std::move(body);
  return o;
}

/// The statusCode of each result of a batch or bulk answer.
inline std::vector<int> statuses(const http_response& res) {
  std::vector<int> out;
  auto j = json::parse(res.body, nullptr, false);
  if (!j.is_array()) return out;
  for (const auto& r : j)
    out.push_back(r.value("statusCode", 0));
  return out;
}

} // namespace georoute::emulator_testing
