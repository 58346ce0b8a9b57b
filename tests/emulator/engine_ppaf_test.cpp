// Per-partition automatic failover in the engine, called directly (no
// sockets, explicit clock): the account property, a range whose writes the
// service moved to another region, the hub-region-only header, moving back,
// the refusal on multi-write accounts, bad names, splits, counters.

#include "tests/emulator/engine.hpp"

#include <chrono>
#include <gtest/gtest.h>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

// Named after the file as well: the unity build (tests/CMakeLists.txt)
// compiles it in one translation unit with other tests.
namespace engine_ppaf_test {
namespace {

using namespace georoute;
using namespace georoute::emulator;
using namespace std::chrono_literals;
using json = nlohmann::json;
using headers_t = std::vector<std::pair<std::string, std::string>>;

const engine::clock::time_point t0 =
    engine::clock::time_point{} + std::chrono::seconds{1'900'000'000};

const std::string west = "West US"; // the account write region
const std::string east = "East US";
const std::string north = "North Europe";
const std::string hub_header = "x-ms-cosmos-hub-region-processing-only";

/// A single-write engine (West US writes) with collection dbs/d/colls/c (two
/// ranges, "0" and "1") and one document per range, `doc-<in0>` and
/// `doc-<in1>`.
class EnginePpaf : public testing::Test {
protected:
  void SetUp() override {
    engine_options o;
    o.verify_auth = false; // signing is the server tests' business
    eng = std::make_unique<engine>(o);
    ASSERT_EQ(send(west, "POST", "/dbs", R"({"id":"d"})").status, 201);
    ASSERT_EQ(send(west, "POST", "/dbs/d/colls",
                   R"({"id":"c","partitionKey":{"paths":["/pk"],)"
                   R"("kind":"Hash","version":2}})")
                  .status,
              201);
    for (int i = 0; i < 32 && (in0.empty() || in1.empty()); ++i) {
      auto pk = "k" + std::to_string(i);
      auto res = create(west, pk, "doc-" + pk);
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
                     headers_t headers = {},
                     engine::clock::time_point now = t0) {
    http_request h;
    h.method = method;
    h.target = target;
    h.body = std::move(body);
    for (auto& [name, value] : headers)
      h.headers[name] = value;
    if (!h.body.empty() && h.headers.count("content-type") == 0)
      h.headers["content-type"] = "application/json";
    return eng->handle(region, h, now);
  }

  static headers_t pk_header(const std::string& pk) {
    return {{"x-ms-documentdb-partitionkey", json::array({pk}).dump()}};
  }

  http_response create(const std::string& region, const std::string& pk,
                       const std::string& id,
                       engine::clock::time_point now = t0) {
    return send(region, "POST", "/dbs/d/colls/c/docs",
                json{{"id", id}, {"pk", pk}}.dump(), pk_header(pk), now);
  }

  http_response upsert(const std::string& region, const std::string& pk) {
    auto h = pk_header(pk);
    h.emplace_back("x-ms-documentdb-is-upsert", "True");
    return send(region, "POST", "/dbs/d/colls/c/docs",
                json{{"id", "doc-" + pk}, {"pk", pk}, {"n", 1}}.dump(), h);
  }

  http_response replace(const std::string& region, const std::string& pk) {
    return send(region, "PUT", "/dbs/d/colls/c/docs/doc-" + pk,
                json{{"id", "doc-" + pk}, {"pk", pk}, {"n", 2}}.dump(),
                pk_header(pk));
  }

  http_response remove(const std::string& region, const std::string& pk) {
    return send(region, "DELETE", "/dbs/d/colls/c/docs/doc-" + pk, {},
                pk_header(pk));
  }

  http_response read(const std::string& region, const std::string& pk,
                     bool hub_only = false, engine::clock::time_point now = t0,
                     const std::string& id = {}) {
    auto h = pk_header(pk);
    if (hub_only) h.emplace_back(hub_header, "True");
    return send(region, "GET",
                "/dbs/d/colls/c/docs/" + (id.empty() ? "doc-" + pk : id), {}, h,
                now);
  }

  http_response feed(const std::string& region, const std::string& range,
                     bool hub_only) {
    headers_t h{{"x-ms-documentdb-partitionkeyrangeid", range}};
    if (hub_only) h.emplace_back(hub_header, "True");
    return send(region, "GET", "/dbs/d/colls/c/docs", {}, h);
  }

  http_response query(const std::string& region, bool hub_only) {
    headers_t h{{"x-ms-documentdb-isquery", "true"},
                {"content-type", "application/query+json"}};
    if (hub_only) h.emplace_back(hub_header, "True");
    return send(region, "POST", "/dbs/d/colls/c/docs",
                R"({"query":"SELECT * FROM c","parameters":[]})", h);
  }

  /// engine::write_region_of range `id` of dbs/d/colls/c, or the problem.
  std::string hub(const std::string& id) {
    auto r = eng->write_region_of("d", "c", id);
    return r ? *r : "problem: " + r.error().what;
  }

  /// The partition-key range of `pk` (from a read at West).
  std::string range_of(const std::string& pk) {
    return read(west, pk).get("x-ms-documentdb-partitionkeyrangeid");
  }

  static std::string status_of(const http_response& r) {
    auto sub = r.get("x-ms-substatus");
    return std::to_string(r.status) + (sub.empty() ? "" : "/" + sub);
  }

  std::optional<bool> account_property(const std::string& text) {
    auto j = json::parse(text);
    auto i = j.find("enablePerPartitionFailoverBehavior");
    if (i == j.end()) return std::nullopt;
    EXPECT_TRUE(i->is_boolean()) << text;
    return i->get<bool>();
  }

  std::unique_ptr<engine> eng;
  std::string in0; ///< a partition key in range "0"
  std::string in1; ///< a partition key in range "1"
};

// -- the account property -----------------------------------------------------

TEST_F(EnginePpaf, AccountProperty_AbsentByDefault_ThenTrueFalseAbsent) {
  for (const auto& at : {std::string{}, west, north}) {
    auto res = send(at, "GET", "/");
    ASSERT_EQ(res.status, 200);
    EXPECT_EQ(account_property(res.body), std::nullopt) << at << res.body;
  }
  EXPECT_EQ(eng->per_partition_failover(), std::nullopt);

  eng->set_per_partition_failover(true);
  EXPECT_EQ(eng->per_partition_failover(), std::optional<bool>{true});
  for (const auto& at : {std::string{}, west, north})
    EXPECT_EQ(account_property(send(at, "GET", "/").body),
              std::optional<bool>{true})
        << at;
  EXPECT_EQ(account_property(eng->account_json()), std::optional<bool>{true});
  // The rest of the account is as before.
  auto j = json::parse(eng->account_json());
  EXPECT_EQ(j["writableLocations"][0]["name"], west);
  EXPECT_EQ(j["enableMultipleWriteLocations"], false);

  eng->set_per_partition_failover(false);
  EXPECT_EQ(account_property(send(east, "GET", "/").body),
            std::optional<bool>{false});
  eng->set_per_partition_failover(std::nullopt);
  EXPECT_EQ(account_property(send(east, "GET", "/").body), std::nullopt);
}

TEST_F(EnginePpaf, AccountProperty_FromOptions) {
  engine_options o;
  o.verify_auth = false;
  o.per_partition_failover = false;
  engine e{o};
  EXPECT_EQ(account_property(e.account_json()), std::optional<bool>{false});
}

// -- a moved range
// --------------------------------------------------------------

TEST_F(EnginePpaf, MovedRange_WritesOnlyAtTheMovedToRegion_OtherRangeUnmoved) {
  ASSERT_EQ(range_of(in0), "0");
  auto moved = eng->move_partition_write_region("d", "c", "0", east);
  ASSERT_TRUE(moved) << moved.error().what;
  EXPECT_EQ(hub("0"), east);
  EXPECT_EQ(hub("1"), west);

  // Range 0: East only; the account write region, the global endpoint and
  // North answer 403/3.
  EXPECT_EQ(status_of(create(east, in0, "a")), "201");
  EXPECT_EQ(status_of(create(west, in0, "b")), "403/3");
  EXPECT_EQ(status_of(create("", in0, "b")), "403/3");
  EXPECT_EQ(status_of(create(north, in0, "b")), "403/3");
  auto denied = create(west, in0, "b");
  EXPECT_NE(denied.body.find("East US"), std::string::npos) << denied.body;
  EXPECT_NE(denied.body.find("range '0'"), std::string::npos) << denied.body;
  for (const auto& at : {west, north}) {
    EXPECT_EQ(status_of(upsert(at, in0)), "403/3") << at;
    EXPECT_EQ(status_of(replace(at, in0)), "403/3") << at;
    EXPECT_EQ(status_of(remove(at, in0)), "403/3") << at;
  }
  EXPECT_EQ(status_of(upsert(east, in0)), "200");
  EXPECT_EQ(status_of(replace(east, in0)), "200");
  EXPECT_EQ(status_of(remove(east, in0)), "204");

  // Range 1: the account write region as before; East answers 403/3.
  EXPECT_EQ(status_of(create(west, in1, "c")), "201");
  EXPECT_EQ(status_of(create("", in1, "d")), "201");
  EXPECT_EQ(status_of(create(east, in1, "e")), "403/3");
  EXPECT_EQ(status_of(upsert(east, in1)), "403/3");
  EXPECT_EQ(status_of(replace(west, in1)), "200");

  // Reads stay where they were.
  EXPECT_EQ(status_of(read(north, in0, false, t0, "a")), "200");
  EXPECT_EQ(status_of(read(east, in1)), "200");
}

TEST_F(EnginePpaf, MovedRange_AcceptedWriteReplicatesLikeAnyOther) {
  eng->set_replication_lag(5s);
  ASSERT_TRUE(eng->move_partition_write_region("d", "c", "0", east));
  auto w = create(east, in0, "late");
  ASSERT_EQ(w.status, 201) << w.body;
  EXPECT_EQ(status_of(read(east, in0, false, t0, "late")), "200");
  EXPECT_EQ(status_of(read(west, in0, false, t0, "late")), "404");
  EXPECT_EQ(status_of(read(north, in0, false, t0 + 4s, "late")), "404");
  EXPECT_EQ(status_of(read(west, in0, false, t0 + 5s, "late")), "200");
  EXPECT_EQ(status_of(read(north, in0, false, t0 + 5s, "late")), "200");
}

TEST_F(EnginePpaf, HubOnlyRead_AnsweredByTheRangesWriteRegionOnly) {
  // Not moved: the hub is the account write region.
  EXPECT_EQ(status_of(read(west, in0, true)), "200");
  EXPECT_EQ(status_of(read(east, in0, true)), "403/3");
  EXPECT_EQ(status_of(read(east, in0, false)), "200");

  ASSERT_TRUE(eng->move_partition_write_region("d", "c", "0", east));
  EXPECT_EQ(status_of(read(east, in0, true)), "200");
  EXPECT_EQ(status_of(read(west, in0, true)), "403/3");
  EXPECT_EQ(status_of(read(north, in0, true)), "403/3");
  EXPECT_EQ(status_of(read(west, in0, false)), "200");
  EXPECT_EQ(status_of(read(north, in0, false)), "200");
  // The other range's hub stays West.
  EXPECT_EQ(status_of(read(west, in1, true)), "200");
  EXPECT_EQ(status_of(read(east, in1, true)), "403/3");
  // A feed of one range; a query over both has two hubs, so no region is
  // the hub of all of it.
  EXPECT_EQ(status_of(feed(east, "0", true)), "200");
  EXPECT_EQ(status_of(feed(west, "0", true)), "403/3");
  EXPECT_EQ(status_of(feed(west, "1", true)), "200");
  EXPECT_EQ(status_of(query(west, true)), "403/3");
  EXPECT_EQ(status_of(query(east, true)), "403/3");
  EXPECT_EQ(status_of(query(north, false)), "200");
}

TEST_F(EnginePpaf, MoveBack_WritesReturnToTheAccountWriteRegion) {
  ASSERT_TRUE(eng->move_partition_write_region("d", "c", "0", north));
  EXPECT_EQ(status_of(create(north, in0, "a")), "201");
  auto cleared = eng->clear_partition_write_region("d", "c", "0");
  ASSERT_TRUE(cleared) << cleared.error().what;
  EXPECT_TRUE(*cleared);
  EXPECT_EQ(status_of(create(north, in0, "b")), "403/3");
  EXPECT_EQ(status_of(create(west, in0, "b")), "201");
  EXPECT_EQ(status_of(read(north, in0, true)), "403/3");
  EXPECT_EQ(status_of(read(west, in0, true)), "200");
  EXPECT_TRUE(eng->partition_write_regions().empty());
  // Nothing left to clear.
  auto again = eng->clear_partition_write_region("d", "c", "0");
  ASSERT_TRUE(again);
  EXPECT_FALSE(*again);
}

TEST_F(EnginePpaf, Move_IsListed_LatestWins_SurvivesAnAccountFailover) {
  ASSERT_TRUE(eng->move_partition_write_region("d", "c", "1", north));
  ASSERT_TRUE(eng->move_partition_write_region("d", "c", "1", east));
  EXPECT_EQ(
      eng->partition_write_regions(),
      (std::vector<partition_write_region>{{"dbs/d/colls/c", "1", east}}));
  // An account failover moves the unmoved range only.
  ASSERT_TRUE(eng->set_write_regions({north}));
  EXPECT_EQ(status_of(create(north, in0, "a")), "201");
  EXPECT_EQ(status_of(create(west, in0, "b")), "403/3");
  EXPECT_EQ(status_of(create(east, in1, "c")), "201");
  EXPECT_EQ(status_of(create(north, in1, "d")), "403/3");
}

TEST_F(EnginePpaf, MovedToRegionRemoved_MoveNotInForceUntilRestored) {
  ASSERT_TRUE(eng->move_partition_write_region("d", "c", "0", east));
  ASSERT_TRUE(eng->remove_region(east));
  EXPECT_EQ(status_of(create(west, in0, "a")), "201");
  EXPECT_EQ(hub("0"), west);
  ASSERT_TRUE(eng->restore_region(east));
  EXPECT_EQ(status_of(create(west, in0, "b")), "403/3");
  EXPECT_EQ(status_of(create(east, in0, "b")), "201");
  // A removed region cannot be moved to.
  ASSERT_TRUE(eng->remove_region(north));
  auto r = eng->move_partition_write_region("d", "c", "1", north);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().what.rfind("region:", 0), 0u) << r.error().what;
}

TEST_F(EnginePpaf, Counters_ShowThe403sByRegionAndRange) {
  ASSERT_TRUE(eng->move_partition_write_region("d", "c", "0", east));
  create(west, in0, "a");
  create(west, in0, "b");
  create(east, in0, "c");
  create(east, in1, "d");
  auto c = eng->counters();
  EXPECT_EQ(c[west][403], 2u);
  EXPECT_EQ(c[east][403], 1u);
  EXPECT_EQ(c[east][201], 1u);
  auto by_range = eng->counters_by_range();
  EXPECT_EQ((by_range[{west, "dbs/d/colls/c", "0"}].by_status[403]), 2u);
  EXPECT_EQ((by_range[{east, "dbs/d/colls/c", "0"}].by_status[201]), 1u);
  EXPECT_EQ((by_range[{east, "dbs/d/colls/c", "1"}].by_status[403]), 1u);
}

// -- refusals and bad names
// -----------------------------------------------------

TEST_F(EnginePpaf, MultiWriteAccount_MoveRefused) {
  eng->set_multi_write(true);
  auto r = eng->move_partition_write_region("d", "c", "0", east);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().what.rfind("account:", 0), 0u) << r.error().what;
  EXPECT_NE(r.error().what.find("single-write"), std::string::npos);
  EXPECT_TRUE(eng->partition_write_regions().empty());
  // Every region writes, as before.
  EXPECT_EQ(status_of(create(north, in0, "a")), "201");
  EXPECT_EQ(status_of(read(north, in0, true)), "200");
}

TEST_F(EnginePpaf, MultiWriteLater_MoveKeptButNotInForce) {
  ASSERT_TRUE(eng->move_partition_write_region("d", "c", "0", east));
  eng->set_multi_write(true);
  EXPECT_EQ(status_of(create(west, in0, "a")), "201");
  EXPECT_EQ(status_of(create(north, in0, "b")), "201");
  eng->set_multi_write(false);
  EXPECT_EQ(status_of(create(west, in0, "c")), "403/3");
  EXPECT_EQ(status_of(create(east, in0, "c")), "201");
}

TEST_F(EnginePpaf, BadNames_ProblemNamesTheField) {
  auto starts = [](const result<bool>& r, const std::string& field) {
    return !r && r.error().what.rfind(field, 0) == 0;
  };
  auto m = [&](const std::string& db, const std::string& coll,
               const std::string& range, const std::string& region) {
    return eng->move_partition_write_region(db, coll, range, region);
  };
  EXPECT_TRUE(starts(m("x", "c", "0", east), "db:"));
  EXPECT_TRUE(starts(m("d", "x", "0", east), "coll:"));
  auto unknown_range = m("d", "c", "7", east);
  EXPECT_TRUE(starts(unknown_range, "range:"));
  EXPECT_NE(unknown_range.error().what.find("'0', '1'"), std::string::npos)
      << unknown_range.error().what;
  auto unknown_region = m("d", "c", "0", "Mars");
  EXPECT_TRUE(starts(unknown_region, "region:"));
  EXPECT_NE(unknown_region.error().what.find("Mars"), std::string::npos);
  EXPECT_TRUE(starts(eng->clear_partition_write_region("x", "c", "0"), "db:"));
  EXPECT_TRUE(
      starts(eng->clear_partition_write_region("d", "c", "7"), "range:"));
  EXPECT_FALSE(eng->write_region_of("d", "x", "0"));
  EXPECT_TRUE(eng->partition_write_regions().empty());
}

// -- splits
// ---------------------------------------------------------------------

TEST_F(EnginePpaf, Split_ChildrenInheritTheWriteRegion) {
  ASSERT_TRUE(eng->move_partition_write_region("d", "c", "0", east));
  auto children = eng->split_range("d", "c", "0");
  ASSERT_TRUE(children) << children.error().what;
  ASSERT_EQ(children->size(), 2u);
  for (const auto& id : *children)
    EXPECT_EQ(hub(id), east) << id;
  EXPECT_EQ(eng->partition_write_regions(),
            (std::vector<partition_write_region>{
                {"dbs/d/colls/c", (*children)[0], east},
                {"dbs/d/colls/c", (*children)[1], east}}));
  // The parent is gone: it can no longer be named.
  auto gone = eng->clear_partition_write_region("d", "c", "0");
  ASSERT_FALSE(gone);
  EXPECT_NE(gone.error().what.find("gone"), std::string::npos);

  // in0 now lives in a child, still written at East only.
  auto child = range_of(in0);
  EXPECT_NE(child, "0");
  EXPECT_EQ(status_of(create(east, in0, "a")), "201");
  EXPECT_EQ(status_of(create(west, in0, "b")), "403/3");
  EXPECT_EQ(status_of(read(east, in0, true)), "200");
  EXPECT_EQ(status_of(create(west, in1, "c")), "201");

  // Each child moves back on its own.
  ASSERT_TRUE(eng->clear_partition_write_region("d", "c", child));
  EXPECT_EQ(status_of(create(west, in0, "d")), "201");
  EXPECT_EQ(eng->partition_write_regions().size(), 1u);
}

} // namespace
} // namespace engine_ppaf_test
