// Grey failures in the engine, called directly (no sockets, explicit clock):
// fault rules scoped to one partition-key range of one collection (status,
// hang, delay) for point reads, writes, queries and feeds; the checks of
// add_checked_fault; the per-range counters; the lift listener.

#include "georoute/transport/auth.hpp"
#include "tests/emulator/engine.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <gtest/gtest.h>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

// Named after the file as well: the unity build (tests/CMakeLists.txt)
// compiles it in one translation unit with other tests.
namespace engine_grey_test {
namespace {

using namespace georoute;
using namespace georoute::emulator;
using namespace std::chrono_literals;
using json = nlohmann::json;
using headers_t = std::vector<std::pair<std::string, std::string>>;

const engine::clock::time_point t0 =
    engine::clock::time_point{} + std::chrono::seconds{1'900'000'000};

const std::string west = "West US";
const std::string east = "East US";
const std::string coll_path = "dbs/d/colls/c";

/// A multi-write engine with collection dbs/d/colls/c (two ranges, "0" and
/// "1") and one document per range, `in0` and `in1` (their partition keys).
class EngineGrey : public testing::Test {
protected:
  void SetUp() override {
    engine_options o;
    o.multi_write = true;
    o.verify_auth = false; // signing is the server tests' business
    eng = std::make_unique<engine>(o);
    ASSERT_EQ(send(west, "POST", "/dbs", R"({"id":"d"})").status, 201);
    ASSERT_EQ(send(west, "POST", "/dbs/d/colls",
                   R"({"id":"c","partitionKey":{"paths":["/pk"],)"
                   R"("kind":"Hash","version":2}})")
                  .status,
              201);
    // Keys until both ranges hold one.
    for (int i = 0; i < 32 && (in0.empty() || in1.empty()); ++i) {
      auto pk = "k" + std::to_string(i);
      auto res = write(west, pk, "doc-" + pk);
      ASSERT_EQ(res.status, 201) << res.body;
      auto range = res.get("x-ms-documentdb-partitionkeyrangeid");
      auto& slot = range == "0" ? in0 : in1;
      if (slot.empty()) slot = pk;
    }
    ASSERT_FALSE(in0.empty());
    ASSERT_FALSE(in1.empty());
    eng->reset_counters();
  }

  http_response send(const std::string& region, const std::string& method,
                     const std::string& target, std::string body = {},
                     headers_t headers = {}) {
    http_request h;
    h.method = method;
    h.target = target;
    h.body = std::move(body);
    for (auto& [name, value] : headers)
      h.headers[name] = value;
    if (!h.body.empty() && h.headers.count("content-type") == 0)
      h.headers["content-type"] = "application/json";
    return eng->handle(region, h, t0);
  }

  static headers_t pk_header(const std::string& pk) {
    return {{"x-ms-documentdb-partitionkey", json::array({pk}).dump()}};
  }

  http_response write(const std::string& region, const std::string& pk,
                      const std::string& id) {
    return send(region, "POST", "/dbs/d/colls/c/docs",
                json{{"id", id}, {"pk", pk}}.dump(), pk_header(pk));
  }

  http_response read(const std::string& region, const std::string& pk) {
    return send(region, "GET", "/dbs/d/colls/c/docs/doc-" + pk, {},
                pk_header(pk));
  }

  http_response query(const std::string& region, headers_t extra) {
    extra.emplace_back("x-ms-documentdb-isquery", "true");
    extra.emplace_back("content-type", "application/query+json");
    return send(region, "POST", "/dbs/d/colls/c/docs",
                R"({"query":"SELECT * FROM c","parameters":[]})", extra);
  }

  http_response feed(const std::string& region, const std::string& range) {
    return send(region, "GET", "/dbs/d/colls/c/docs", {},
                {{"x-ms-documentdb-partitionkeyrangeid", range}});
  }

  fault_rule range_rule(const std::string& region, const std::string& range) {
    fault_rule r;
    r.region = region;
    r.collection = coll_path;
    r.range_id = range;
    return r;
  }

  std::unique_ptr<engine> eng;
  std::string in0; ///< a partition key in range "0"
  std::string in1; ///< a partition key in range "1"
};

// -- status ------------------------------------------------------------------

TEST_F(EngineGrey, RangeStatus_EveryOperation_OnlyThatRangeInThatRegionFails) {
  auto rule = range_rule(east, "1");
  rule.status = 503;
  rule.substatus = 21008;
  rule.retry_after_ms = 40;
  auto id = eng->add_checked_fault(rule);
  ASSERT_TRUE(id) << id.error().what;
  struct row {
    const char* name;
    std::function<http_response()> call;
    int want;
  };
  std::vector<row> rows{
      {"read, range 1, East", [&] { return read(east, in1); }, 503},
      {"read, range 0, East", [&] { return read(east, in0); }, 200},
      {"read, range 1, West", [&] { return read(west, in1); }, 200},
      {"write, range 1, East", [&] { return write(east, in1, "east-1"); }, 503},
      {"write, range 0, East", [&] { return write(east, in0, "w0"); }, 201},
      {"write, range 1, West", [&] { return write(west, in1, "w1"); }, 201},
      {"query by pk, range 1, East",
       [&] { return query(east, pk_header(in1)); }, 503},
      {"query by pk, range 0, East",
       [&] { return query(east, pk_header(in0)); }, 200},
      {"query by range id 1, East",
       [&] {
         return query(east, {{"x-ms-documentdb-partitionkeyrangeid", "1"}});
       },
       503},
      {"query by range id 0, East",
       [&] {
         return query(east, {{"x-ms-documentdb-partitionkeyrangeid", "0"}});
       },
       200},
      {"query by range id 1, West",
       [&] {
         return query(west, {{"x-ms-documentdb-partitionkeyrangeid", "1"}});
       },
       200},
      {"cross-partition query, East (covers range 1)",
       [&] { return query(east, {}); }, 503},
      {"feed of range 1, East", [&] { return feed(east, "1"); }, 503},
      {"feed of range 0, East", [&] { return feed(east, "0"); }, 200},
      {"collection read, East (not a range request)",
       [&] { return send(east, "GET", "/dbs/d/colls/c"); }, 200},
      {"pkranges, East",
       [&] { return send(east, "GET", "/dbs/d/colls/c/pkranges"); }, 200},
  };
  for (const auto& r : rows) {
    auto res = r.call();
    EXPECT_EQ(res.status, r.want) << r.name << ": " << res.body;
    if (r.want == 503) {
      EXPECT_EQ(res.get("x-ms-substatus"), "21008") << r.name;
      EXPECT_EQ(res.get("x-ms-retry-after-ms"), "40") << r.name;
    }
  }
  // The failed write was answered, not served: it was never applied.
  EXPECT_EQ(send(west, "GET", "/dbs/d/colls/c/docs/east-1", {}, pk_header(in1))
                .status,
            404);
  eng->remove_fault(*id);
  EXPECT_EQ(read(east, in1).status, 200);
  EXPECT_EQ(query(east, {}).status, 200);
}

TEST_F(EngineGrey, RangeStatus_RangeSplits_RuleMatchesNothing) {
  auto id = eng->add_checked_fault(range_rule(east, "1"));
  ASSERT_TRUE(id) << id.error().what;
  EXPECT_EQ(read(east, in1).status, 503);
  auto children = eng->split_range("d", "c", "1");
  ASSERT_TRUE(children) << children.error().what;
  EXPECT_EQ(read(east, in1).status, 200); // served by a child
  EXPECT_EQ(feed(east, "1").status, 410); // the parent: gone, not the fault
}

TEST_F(EngineGrey, CollectionRule_EveryRangeOfThatCollectionOnly) {
  ASSERT_EQ(send(west, "POST", "/dbs/d/colls",
                 R"({"id":"other","partitionKey":{"paths":["/pk"],)"
                 R"("kind":"Hash","version":2}})")
                .status,
            201);
  fault_rule rule;
  rule.collection = coll_path;
  rule.status = 500;
  ASSERT_TRUE(eng->add_checked_fault(rule));
  EXPECT_EQ(read(east, in0).status, 500);
  EXPECT_EQ(read(west, in1).status, 500);
  EXPECT_EQ(
      send(west, "GET", "/dbs/d/colls/other/docs/x", {}, pk_header(in0)).status,
      404);
}

// -- hang and delay -----------------------------------------------------------

TEST_F(EngineGrey, RangeHang_MarkedNotServed_CountedAsHeld) {
  auto rule = range_rule(east, "0");
  rule.action = fault_action::hang;
  auto id = eng->add_checked_fault(rule);
  ASSERT_TRUE(id) << id.error().what;
  auto held = write(east, in0, "never");
  EXPECT_EQ(held.status, 0);
  EXPECT_EQ(held.get(hang_marker), std::to_string(*id));
  EXPECT_EQ(write(east, in1, "fine").status, 201);
  eng->remove_fault(*id);
  // Held, so never served: the write is not there.
  EXPECT_EQ(
      send(east, "GET", "/dbs/d/colls/c/docs/never", {}, pk_header(in0)).status,
      404);
  auto by_range = eng->counters_by_range();
  auto& r0 = by_range[range_key{east, coll_path, "0"}];
  EXPECT_EQ(r0.held, 1u);
  EXPECT_EQ(r0.by_status[404], 1u);
  EXPECT_EQ(r0.by_status.count(0), 0u);
  auto& r1 = by_range[range_key{east, coll_path, "1"}];
  EXPECT_EQ(r1.by_status[201], 1u);
  // The per-region counters count answers only.
  auto by_region = eng->counters();
  EXPECT_EQ(by_region[east].count(0), 0u);
  EXPECT_EQ(by_region[east][201], 1u);
}

TEST_F(EngineGrey, RangeDelay_ServedNowAnsweredLater_MarkedForTheServer) {
  auto rule = range_rule(east, "0");
  rule.action = fault_action::delay;
  rule.delay = 250ms;
  ASSERT_TRUE(eng->add_checked_fault(rule));
  auto slow = write(east, in0, "late");
  EXPECT_EQ(slow.status, 201); // applied at once
  EXPECT_EQ(slow.get(delay_marker), "250");
  EXPECT_EQ(read(east, in0).get(delay_marker), "250");
  EXPECT_EQ(read(east, in1).get(delay_marker), "");
  EXPECT_EQ(read(west, in0).get(delay_marker), "");
  // A status rule with a delay: the error comes late.
  eng->clear_faults();
  auto late_error = range_rule(east, "1");
  late_error.status = 408;
  late_error.delay = 100ms;
  ASSERT_TRUE(eng->add_checked_fault(late_error));
  auto res = read(east, in1);
  EXPECT_EQ(res.status, 408);
  EXPECT_EQ(res.get(delay_marker), "100");
}

TEST_F(EngineGrey, LiftListener_CalledForRulesThatHeld_OutsideTheLock) {
  std::vector<std::optional<uint64_t>> lifted;
  eng->on_hang_lifted([&](std::optional<uint64_t> id) {
    lifted.push_back(id);
    eng->counters(); // takes the engine's lock: would deadlock if held
  });
  auto hang = range_rule(east, "0");
  hang.action = fault_action::hang;
  hang.count = 1;
  auto holding = eng->add_checked_fault(hang);
  ASSERT_TRUE(holding);
  auto idle = eng->add_checked_fault(hang); // never holds anything
  ASSERT_TRUE(idle);
  auto status = eng->add_checked_fault(range_rule(west, "0"));
  ASSERT_TRUE(status);
  EXPECT_EQ(read(east, in0).status, 0); // held by `holding`, now used up
  EXPECT_EQ(read(west, in0).status, 503);
  eng->remove_fault(*status);
  EXPECT_TRUE(lifted.empty());
  eng->remove_fault(*holding); // used up, but what it held is released
  ASSERT_EQ(lifted.size(), 1u);
  EXPECT_EQ(lifted[0], *holding);
  EXPECT_EQ(read(east, in0).status, 0); // `idle` holds this one
  eng->clear_faults();
  ASSERT_EQ(lifted.size(), 2u);
  EXPECT_EQ(lifted[1], std::nullopt);
  eng->clear_faults(); // nothing held any more
  EXPECT_EQ(lifted.size(), 2u);
}

// -- counters -----------------------------------------------------------------

TEST_F(EngineGrey,
       RangeCounters_PerRegionCollectionRange_CrossPartitionUnderEach) {
  read(east, in0);
  read(east, in0);
  read(west, in1);
  send(east, "GET", "/dbs/d/colls/c/docs/missing", {}, pk_header(in1));
  query(east, {});        // both ranges
  send(east, "GET", "/"); // not a range request
  send("", "GET", "/dbs/d/colls/c/docs/doc-" + in0, {}, pk_header(in0));
  auto c = eng->counters_by_range();
  EXPECT_EQ((c[range_key{east, coll_path, "0"}].by_status),
            (std::map<int, uint64_t>{{200, 3}}));
  EXPECT_EQ((c[range_key{east, coll_path, "1"}].by_status),
            (std::map<int, uint64_t>{{200, 1}, {404, 1}}));
  EXPECT_EQ((c[range_key{west, coll_path, "1"}].by_status),
            (std::map<int, uint64_t>{{200, 1}}));
  EXPECT_EQ((c[range_key{"", coll_path, "0"}].by_status),
            (std::map<int, uint64_t>{{200, 1}}));
  EXPECT_EQ(c.size(), 4u);
  eng->reset_counters();
  EXPECT_TRUE(eng->counters_by_range().empty());
}

// -- checks -------------------------------------------------------------------

TEST_F(EngineGrey, CheckedFault_BadInput_ProblemStartsWithTheField) {
  struct row {
    const char* name;
    std::function<void(fault_rule&)> edit;
    const char* prefix;
    const char* mentions;
  };
  std::vector<row> rows{
      {"unknown region", [](fault_rule& r) { r.region = "Mars"; },
       "region:", "Mars"},
      {"range without collection", [](fault_rule& r) { r.collection.clear(); },
       "range:", "collection"},
      {"malformed collection", [](fault_rule& r) { r.collection = "d/c"; },
       "collection:", "d/c"},
      {"unknown database",
       [](fault_rule& r) { r.collection = "dbs/x/colls/c"; },
       "collection:", "'x'"},
      {"unknown collection",
       [](fault_rule& r) { r.collection = "dbs/d/colls/x"; },
       "collection:", "dbs/d/colls/x"},
      {"unknown range", [](fault_rule& r) { r.range_id = "7"; },
       "range:", "'7'"},
      {"bad operation", [](fault_rule& r) { r.operation = "upsert"; },
       "operation:", "upsert"},
      {"status", [](fault_rule& r) { r.status = 42; }, "status:", "42"},
      {"count 0", [](fault_rule& r) { r.count = 0; }, "count:", "0"},
      {"probability", [](fault_rule& r) { r.probability = 1.5; },
       "probability:", "1.5"},
      {"negative delay", [](fault_rule& r) { r.delay = -5ms; },
       "delay_ms:", "-5"},
      {"retry-after", [](fault_rule& r) { r.retry_after_ms = -2; },
       "retry_after_ms:", "-2"},
      {"hang with delay",
       [](fault_rule& r) {
         r.action = fault_action::hang;
         r.delay = 5ms;
       },
       "delay_ms:", "hang"},
      {"hang with body",
       [](fault_rule& r) {
         r.action = fault_action::hang;
         r.body = "{}";
       },
       "action:", "hang"},
      {"delay without delay",
       [](fault_rule& r) { r.action = fault_action::delay; },
       "delay_ms:", "delay"},
  };
  for (const auto& r : rows) {
    auto rule = range_rule(east, "1");
    r.edit(rule);
    auto added = eng->add_checked_fault(rule);
    ASSERT_FALSE(added) << r.name;
    const auto& what = added.error().what;
    EXPECT_EQ(what.rfind(r.prefix, 0), 0u) << r.name << ": " << what;
    EXPECT_NE(what.find(r.mentions), std::string::npos)
        << r.name << ": " << what;
  }
  ASSERT_TRUE(eng->split_range("d", "c", "1"));
  auto gone = eng->add_checked_fault(range_rule(east, "1"));
  ASSERT_FALSE(gone);
  EXPECT_NE(gone.error().what.find("gone"), std::string::npos)
      << gone.error().what;
  // Nothing was added on the way: every request is served.
  EXPECT_EQ(read(east, in0).status, 200);
  EXPECT_EQ(read(east, in1).status, 200);
  EXPECT_TRUE(eng->add_checked_fault(range_rule(east, "0")));
}

TEST(FaultAction, NamesRoundTrip_UnknownIsProblem) {
  for (auto a : {fault_action::status, fault_action::hang, fault_action::delay})
    EXPECT_EQ(*parse_fault_action(to_string(a)), a);
  auto bad = parse_fault_action("sleep");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().what.rfind("action:", 0), 0u);
}

} // namespace
} // namespace engine_grey_test
