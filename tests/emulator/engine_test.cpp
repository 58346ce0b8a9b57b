// The emulator's engine, called directly with signed requests and explicit
// clock values (no sockets, no sleeping): account, resources, documents,
// placement by EPK, pkranges and splits, queries and plans, replication and
// session tokens, write regions, throttling, auth, status faults, counters.

#include "georoute/actors/policy/epk.hpp"
#include "georoute/actors/policy/routing_map.hpp"
#include "tests/emulator/engine.hpp"
#include "georoute/transport/auth.hpp"
#include "georoute/transport/codecs.hpp"

#include <algorithm>
#include <chrono>
#include <gtest/gtest.h>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace {

using namespace georoute;
using namespace georoute::emulator;
using namespace std::chrono_literals;
using json = nlohmann::json;
using headers_t = std::vector<std::pair<std::string, std::string>>;

/// A fixed instant (2030-03-17), so dates and lags are exact.
const engine::clock::time_point t0 =
    engine::clock::time_point{} + std::chrono::seconds{1'900'000'000};

const std::string west = "West US";
const std::string east = "East US";
const std::string north = "North Europe";

std::string lower(std::string s) {
  for (auto& c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::vector<unsigned char> rid_bytes(std::string rid) {
  std::replace(rid.begin(), rid.end(), '-', '/');
  auto bytes = transport::base64_decode(rid);
  EXPECT_TRUE(bytes.has_value()) << rid;
  return bytes.value_or(std::vector<unsigned char>{});
}

class Engine : public testing::Test {
protected:
  void SetUp() override { make(engine_options{}); }

  void make(engine_options o) {
    eng = std::make_unique<engine>(std::move(o));
    eng->set_endpoints({{west, "http://127.0.0.1:4301/"},
                        {east, "http://127.0.0.1:4302/"},
                        {north, "http://127.0.0.1:4303/"}});
  }

  /// Signs (master key, at `now` unless `signed_at` is set) and handles.
  http_response send(const std::string& region, const std::string& method,
                     const std::string& target, std::string body = {},
                     headers_t headers = {}, engine::clock::time_point now = t0,
                     bool rid_based = false) {
    transport::request r;
    r.method = method;
    r.target = target;
    r.body = std::move(body);
    r.headers = std::move(headers);
    if (!r.body.empty() &&
        std::none_of(r.headers.begin(), r.headers.end(),
                     [](auto& h) { return lower(h.first) == "content-type"; }))
      r.headers.emplace_back("content-type", "application/json");
    if (sign)
      transport::sign_request(r, signing_key, signed_at.value_or(now),
                              rid_based);
    http_request h;
    h.method = r.method;
    h.target = r.target;
    h.body = r.body;
    for (auto& [name, value] : r.headers)
      h.headers[lower(name)] = value;
    return eng->handle(region, h, now);
  }

  static json body(const http_response& res) {
    return json::parse(res.body, nullptr, false);
  }

  void create_db(const std::string& db = "d") {
    auto res = send(west, "POST", "/dbs", json{{"id", db}}.dump());
    ASSERT_EQ(res.status, 201) << res.body;
  }

  void create_coll(const std::string& db = "d", const std::string& coll = "c") {
    json spec{{"id", coll},
              {"partitionKey",
               {{"paths", {"/pk"}}, {"kind", "Hash"}, {"version", 2}}}};
    auto res = send(west, "POST", "/dbs/" + db + "/colls", spec.dump());
    ASSERT_EQ(res.status, 201) << res.body;
  }

  void setup_coll() {
    create_db();
    create_coll();
  }

  http_response create_doc(const std::string& region, const json& pk,
                           const std::string& id, int n = 0,
                           engine::clock::time_point now = t0) {
    json doc{{"id", id}, {"pk", pk}, {"n", n}};
    return send(region, "POST", "/dbs/d/colls/c/docs", doc.dump(),
                {{"x-ms-documentdb-partitionkey", json::array({pk}).dump()}},
                now);
  }

  http_response read_doc(const std::string& region, const json& pk,
                         const std::string& id, headers_t extra = {},
                         engine::clock::time_point now = t0) {
    extra.emplace_back("x-ms-documentdb-partitionkey",
                       json::array({pk}).dump());
    return send(region, "GET", "/dbs/d/colls/c/docs/" + id, {}, extra, now);
  }

  http_response query(const std::string& region, const std::string& text,
                      headers_t extra = {}, json params = json::array()) {
    extra.emplace_back("x-ms-documentdb-isquery", "true");
    extra.emplace_back("content-type", "application/query+json");
    return send(region, "POST", "/dbs/d/colls/c/docs",
                json{{"query", text}, {"parameters", params}}.dump(), extra);
  }

  http_response pkranges(headers_t extra = {}) {
    return send(west, "GET", "/dbs/d/colls/c/pkranges", {}, extra);
  }

  std::unique_ptr<engine> eng;
  transport::master_key signing_key =
      *transport::parse_master_key(default_master_key);
  bool sign = true;
  std::optional<engine::clock::time_point> signed_at;
};

// -- account -----------------------------------------------------------------

TEST_F(Engine, Account_SingleWrite_ListsWriterAndEveryReadableRegion) {
  for (const auto& region : {std::string{}, west, east, north}) {
    auto res = send(region, "GET", "/");
    ASSERT_EQ(res.status, 200) << region << ": " << res.body;
    auto account = transport::decode_database_account(res.body);
    ASSERT_TRUE(account) << account.error().what;
    EXPECT_EQ(account->id, "georoute-emulator");
    EXPECT_FALSE(account->enable_multiple_write_locations);
    EXPECT_EQ(account->default_consistency, "Session");
    ASSERT_EQ(account->writable.size(), 1u);
    EXPECT_EQ(account->writable[0].name, west);
    EXPECT_EQ(account->writable[0].endpoint, "http://127.0.0.1:4301/");
    ASSERT_EQ(account->readable.size(), 3u);
    EXPECT_EQ(account->readable[1].name, east);
    EXPECT_EQ(account->readable[2].endpoint, "http://127.0.0.1:4303/");
  }
  auto j = json::parse(eng->account_json());
  EXPECT_NE(j["id"], "localhost");
  for (const char* field : {"userReplicationPolicy", "systemReplicationPolicy",
                            "readPolicy", "queryEngineConfiguration", "_dbs"})
    EXPECT_TRUE(j.contains(field)) << field;
}

TEST_F(Engine, Account_AfterSetWriteRegions_ListsNewWriterOnly) {
  ASSERT_TRUE(eng->set_write_regions({east, west}));
  auto account =
      transport::decode_database_account(send(west, "GET", "/").body);
  ASSERT_TRUE(account);
  ASSERT_EQ(account->writable.size(), 1u);
  EXPECT_EQ(account->writable[0].name, east);
  EXPECT_EQ(account->readable.size(), 3u);
  EXPECT_EQ(eng->write_regions(),
            (std::vector<std::string>{east, west, north}));
}

TEST_F(Engine, Account_MultiWrite_ListsEveryRegionInWriteOrder) {
  eng->set_multi_write(true);
  ASSERT_TRUE(eng->set_write_regions({north, east}));
  auto account = transport::decode_database_account(send("", "GET", "/").body);
  ASSERT_TRUE(account);
  EXPECT_TRUE(account->enable_multiple_write_locations);
  ASSERT_EQ(account->writable.size(), 3u);
  EXPECT_EQ(account->writable[0].name, north);
  EXPECT_EQ(account->writable[1].name, east);
  EXPECT_EQ(account->writable[2].name, west);
}

TEST_F(Engine, Account_RemovedRegion_LeavesListsAndAnswers403_1008) {
  ASSERT_TRUE(eng->remove_region(east));
  auto account =
      transport::decode_database_account(send(west, "GET", "/").body);
  ASSERT_TRUE(account);
  ASSERT_EQ(account->readable.size(), 2u);
  EXPECT_EQ(account->readable[1].name, north);
  auto res = send(east, "GET", "/");
  EXPECT_EQ(res.status, 403);
  EXPECT_EQ(res.get("x-ms-substatus"), "1008");
  EXPECT_EQ(body(res)["code"], "Forbidden");
  ASSERT_TRUE(eng->restore_region(east));
  EXPECT_EQ(send(east, "GET", "/").status, 200);
}

TEST_F(Engine, Account_RemovedWriter_NextInWriteOrderTakesWrites) {
  setup_coll();
  ASSERT_TRUE(eng->remove_region(west));
  EXPECT_EQ(eng->write_regions().front(), east);
  EXPECT_EQ(create_doc(east, "p", "a").status, 201);
}

TEST_F(Engine, Topology_UnknownRegion_IsProblem) {
  EXPECT_FALSE(eng->set_write_regions({"Mars"}));
  EXPECT_FALSE(eng->set_write_regions({}));
  EXPECT_FALSE(eng->set_write_regions({east, east}));
  EXPECT_FALSE(eng->remove_region("Mars"));
  EXPECT_FALSE(eng->split_range("d", "c", "0"));
}

// -- databases and collections ---------------------------------------------

TEST_F(Engine, Database_CreateReadDelete_RoundTrips) {
  create_db();
  EXPECT_EQ(send(west, "POST", "/dbs", R"({"id":"d"})").status, 409);
  auto read = send(east, "GET", "/dbs/d");
  ASSERT_EQ(read.status, 200);
  auto db = body(read);
  EXPECT_EQ(db["id"], "d");
  EXPECT_EQ(rid_bytes(db["_rid"]).size(), 4u);
  EXPECT_EQ(db["_self"], "dbs/" + db["_rid"].get<std::string>() + "/");
  auto list = body(send(west, "GET", "/dbs"));
  EXPECT_EQ(list["_count"], 1);
  EXPECT_EQ(list["Databases"][0]["id"], "d");
  EXPECT_EQ(send(west, "DELETE", "/dbs/d").status, 204);
  EXPECT_EQ(send(west, "GET", "/dbs/d").status, 404);
}

TEST_F(Engine, Collection_Create_HasEightByteRidSelfAndContentPaths) {
  create_db();
  create_coll();
  auto res = send(east, "GET", "/dbs/d/colls/c");
  ASSERT_EQ(res.status, 200) << res.body;
  auto coll = transport::decode_collection(res.body);
  ASSERT_TRUE(coll) << coll.error().what;
  auto db_rid = body(send(west, "GET", "/dbs/d"))["_rid"].get<std::string>();
  auto bytes = rid_bytes(coll->rid);
  ASSERT_EQ(bytes.size(), 8u);
  EXPECT_TRUE(
      std::equal(bytes.begin(), bytes.begin() + 4, rid_bytes(db_rid).begin()));
  EXPECT_EQ(coll->self, "dbs/" + db_rid + "/colls/" + coll->rid + "/");
  EXPECT_EQ(coll->partition_key.paths, std::vector<std::string>{"/pk"});
  EXPECT_EQ(coll->partition_key.version, 2);
  EXPECT_EQ(res.get("x-ms-content-path"), coll->rid);
  EXPECT_EQ(res.get("x-ms-alt-content-path"), "dbs/d/colls/c");
  EXPECT_EQ(send(west, "POST", "/dbs/d/colls", R"({"id":"c"})").status, 409);
}

TEST_F(Engine, Collection_RidBasedPaths_ServedAndSignedByRid) {
  setup_coll();
  auto coll =
      transport::decode_collection(send(west, "GET", "/dbs/d/colls/c").body);
  ASSERT_TRUE(coll);
  auto db_rid = body(send(west, "GET", "/dbs/d"))["_rid"].get<std::string>();
  auto base = "/dbs/" + db_rid + "/colls/" + coll->rid;
  auto res = send(west, "GET", base, {}, {}, t0, true);
  ASSERT_EQ(res.status, 200) << res.body;
  EXPECT_EQ(body(res)["id"], "c");
  auto ranges = send(west, "GET", base + "/pkranges", {}, {}, t0, true);
  ASSERT_EQ(ranges.status, 200) << ranges.body;
  EXPECT_EQ(body(ranges)["_count"], 2);
  // A rid-based path signed as a name-based one is rejected.
  EXPECT_EQ(send(west, "GET", base, {}, {}, t0, false).status, 401);
}

TEST_F(Engine, Collection_Delete_ThenNotFound) {
  setup_coll();
  EXPECT_EQ(send(west, "DELETE", "/dbs/d/colls/c").status, 204);
  EXPECT_EQ(send(west, "GET", "/dbs/d/colls/c").status, 404);
  EXPECT_EQ(create_doc(west, "p", "a").status, 404);
}

TEST_F(Engine, Collection_HashVersion1_Rejected400) {
  create_db();
  json spec{{"id", "c"},
            {"partitionKey", {{"paths", {"/pk"}}, {"version", 1}}}};
  EXPECT_EQ(send(west, "POST", "/dbs/d/colls", spec.dump()).status, 400);
}

// -- documents ---------------------------------------------------------------

TEST_F(Engine, Document_CreateReadReplaceDelete_RoundTrips) {
  setup_coll();
  auto created = create_doc(west, "p1", "a", 1);
  ASSERT_EQ(created.status, 201) << created.body;
  auto doc = body(created);
  for (const char* field : {"_rid", "_self", "_etag", "_attachments", "_ts"})
    EXPECT_TRUE(doc.contains(field)) << field;
  EXPECT_EQ(doc["_ts"], 1'900'000'000);
  auto etag = created.get("etag");
  EXPECT_EQ(doc["_etag"], etag);
  EXPECT_EQ(etag.front(), '"');
  EXPECT_FALSE(created.get("x-ms-session-token").empty());
  EXPECT_FALSE(created.get("x-ms-request-charge").empty());
  EXPECT_FALSE(created.get("x-ms-activity-id").empty());
  EXPECT_EQ(created.get("x-ms-content-path"),
            body(send(west, "GET", "/dbs/d/colls/c"))["_rid"]);

  auto read = read_doc(west, "p1", "a");
  ASSERT_EQ(read.status, 200);
  EXPECT_EQ(body(read)["n"], 1);
  EXPECT_EQ(read.get("etag"), etag);
  EXPECT_EQ(read_doc(west, "p1", "a", {{"if-none-match", etag}}).status, 304);

  json changed{{"id", "a"}, {"pk", "p1"}, {"n", 2}};
  auto pk = headers_t{{"x-ms-documentdb-partitionkey", R"(["p1"])"}};
  auto stale = pk;
  stale.emplace_back("if-match", "\"not-the-etag\"");
  EXPECT_EQ(
      send(west, "PUT", "/dbs/d/colls/c/docs/a", changed.dump(), stale).status,
      412);
  auto with_etag = pk;
  with_etag.emplace_back("if-match", etag);
  auto replaced =
      send(west, "PUT", "/dbs/d/colls/c/docs/a", changed.dump(), with_etag);
  ASSERT_EQ(replaced.status, 200) << replaced.body;
  EXPECT_NE(replaced.get("etag"), etag);
  EXPECT_EQ(body(read_doc(west, "p1", "a"))["n"], 2);
  EXPECT_EQ(read_doc(west, "p1", "a", {{"if-none-match", etag}}).status, 200);

  auto deleted = send(west, "DELETE", "/dbs/d/colls/c/docs/a", {}, pk);
  EXPECT_EQ(deleted.status, 204);
  EXPECT_TRUE(deleted.body.empty());
  EXPECT_EQ(read_doc(west, "p1", "a").status, 404);
  EXPECT_EQ(send(west, "DELETE", "/dbs/d/colls/c/docs/a", {}, pk).status, 404);
  EXPECT_EQ(
      send(west, "PUT", "/dbs/d/colls/c/docs/a", changed.dump(), pk).status,
      404);
}

TEST_F(Engine, Document_DuplicateIdInPartition_Returns409) {
  setup_coll();
  ASSERT_EQ(create_doc(west, "p1", "a").status, 201);
  auto dup = create_doc(west, "p1", "a");
  EXPECT_EQ(dup.status, 409);
  EXPECT_EQ(body(dup)["code"], "Conflict");
  EXPECT_EQ(create_doc(west, "p2", "a").status, 201); // other partition
}

TEST_F(Engine, Document_Upsert_Creates201ThenReplaces200) {
  setup_coll();
  headers_t h{{"x-ms-documentdb-partitionkey", R"(["p"])"},
              {"x-ms-documentdb-is-upsert", "true"}};
  auto first = send(west, "POST", "/dbs/d/colls/c/docs",
                    R"({"id":"u","pk":"p","n":1})", h);
  EXPECT_EQ(first.status, 201);
  auto second = send(west, "POST", "/dbs/d/colls/c/docs",
                     R"({"id":"u","pk":"p","n":2})", h);
  EXPECT_EQ(second.status, 200);
  EXPECT_EQ(body(read_doc(west, "p", "u"))["n"], 2);
}

TEST_F(Engine, Document_NoPartitionKeyHeader_Returns400) {
  setup_coll();
  auto res =
      send(west, "POST", "/dbs/d/colls/c/docs", R"({"id":"a","pk":"p"})");
  EXPECT_EQ(res.status, 400);
  EXPECT_EQ(body(res)["code"], "BadRequest");
  EXPECT_EQ(send(west, "GET", "/dbs/d/colls/c/docs/a").status, 400);
}

TEST_F(Engine, Document_PartitionKeyMismatch_Returns400_1001) {
  setup_coll();
  auto res = send(west, "POST", "/dbs/d/colls/c/docs", R"({"id":"a","pk":"p"})",
                  {{"x-ms-documentdb-partitionkey", R"(["q"])"}});
  EXPECT_EQ(res.status, 400);
  EXPECT_EQ(res.get("x-ms-substatus"), "1001");
  // A document without the property has the undefined key [{}].
  auto none = send(west, "POST", "/dbs/d/colls/c/docs", R"({"id":"b"})",
                   {{"x-ms-documentdb-partitionkey", R"([{}])"}});
  EXPECT_EQ(none.status, 201) << none.body;
}

TEST_F(Engine, Document_MissingIdOrBadJson_Returns400NamingProblem) {
  setup_coll();
  headers_t pk{{"x-ms-documentdb-partitionkey", R"(["p"])"}};
  auto no_id = send(west, "POST", "/dbs/d/colls/c/docs", R"({"pk":"p"})", pk);
  EXPECT_EQ(no_id.status, 400);
  EXPECT_NE(body(no_id)["message"].get<std::string>().find("id"),
            std::string::npos);
  auto bad = send(west, "POST", "/dbs/d/colls/c/docs", R"({"id":"a",)", pk);
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(body(bad)["message"].get<std::string>().find("not valid JSON"),
            std::string::npos);
  auto bad_pk = send(west, "POST", "/dbs/d/colls/c/docs", R"({"id":"a"})",
                     {{"x-ms-documentdb-partitionkey", "[p"}});
  EXPECT_EQ(bad_pk.status, 400);
}

TEST_F(Engine, Document_Placement_FollowsV2Epk) {
  setup_coll();
  // EPK("redmond") = 22E342F3... >= "20": the second of two ranges;
  // EPK(5.0) = 19C08621... < "20": the first.
  auto redmond = create_doc(west, "redmond", "r");
  ASSERT_EQ(redmond.status, 201);
  EXPECT_EQ(redmond.get("x-ms-documentdb-partitionkeyrangeid"), "1");
  EXPECT_EQ(redmond.get("x-ms-session-token"), "1:0#1");
  json five{{"id", "f"}, {"pk", 5.0}};
  auto f = send(west, "POST", "/dbs/d/colls/c/docs", five.dump(),
                {{"x-ms-documentdb-partitionkey", "[5.0]"}});
  ASSERT_EQ(f.status, 201) << f.body;
  EXPECT_EQ(f.get("x-ms-documentdb-partitionkeyrangeid"), "0");
  auto in1 = query(west, "SELECT * FROM c",
                   {{"x-ms-documentdb-partitionkeyrangeid", "1"}});
  ASSERT_EQ(in1.status, 200) << in1.body;
  ASSERT_EQ(body(in1)["Documents"].size(), 1u);
  EXPECT_EQ(body(in1)["Documents"][0]["id"], "r");
  auto in0 = query(west, "SELECT * FROM c",
                   {{"x-ms-documentdb-partitionkeyrangeid", "0"}});
  ASSERT_EQ(body(in0)["Documents"].size(), 1u);
  EXPECT_EQ(body(in0)["Documents"][0]["id"], "f");
}

TEST_F(Engine, Document_RidBasedRead_Served) {
  setup_coll();
  auto doc = body(create_doc(west, "p", "a"));
  auto self = doc["_self"].get<std::string>();
  auto res = send(west, "GET", "/" + self.substr(0, self.size() - 1), {},
                  {{"x-ms-documentdb-partitionkey", R"(["p"])"}}, t0, true);
  ASSERT_EQ(res.status, 200) << res.body;
  EXPECT_EQ(body(res)["id"], "a");
}

// -- pkranges and splits -----------------------------------------------------

TEST_F(Engine, PkRanges_NewCollection_TileTheV2SpaceEvenly) {
  engine_options o;
  o.initial_ranges = 4;
  make(o);
  setup_coll();
  auto res = pkranges();
  ASSERT_EQ(res.status, 200);
  auto page = transport::decode_pkranges(res.body, res.get("etag"));
  ASSERT_TRUE(page) << page.error().what;
  ASSERT_EQ(page->ranges.size(), 4u);
  std::vector<std::string> bounds;
  for (const auto& r : page->ranges)
    bounds.push_back(r.min_inclusive + "-" + r.max_exclusive);
  EXPECT_EQ(bounds,
            (std::vector<std::string>{"-10", "10-20", "20-30", "30-FF"}));
  EXPECT_TRUE(routing_map::create_complete(page->ranges, page->etag));
}

TEST_F(Engine, PkRanges_IncrementalWithCurrentEtag_Returns304) {
  setup_coll();
  auto first = pkranges({{"a-im", "Incremental Feed"}});
  ASSERT_EQ(first.status, 200);
  auto etag = first.get("etag");
  auto again =
      pkranges({{"a-im", "Incremental Feed"}, {"if-none-match", etag}});
  EXPECT_EQ(again.status, 304);
  EXPECT_EQ(again.get("etag"), etag);
  // Without A-IM the whole list comes back.
  EXPECT_EQ(pkranges({{"if-none-match", etag}}).status, 200);
}

TEST_F(Engine, PkRanges_AfterSplit_IncrementalReturnsOnlyChildren) {
  setup_coll();
  auto first = pkranges({{"a-im", "Incremental Feed"}});
  auto old_page = transport::decode_pkranges(first.body, first.get("etag"));
  ASSERT_TRUE(old_page);
  auto old_map = routing_map::create_complete(old_page->ranges, old_page->etag);
  ASSERT_TRUE(old_map) << old_map.error().what;

  auto children = eng->split_range("d", "c", "0");
  ASSERT_TRUE(children) << children.error().what;
  EXPECT_EQ(*children, (std::vector<std::string>{"2", "3"}));

  auto delta = pkranges(
      {{"a-im", "Incremental Feed"}, {"if-none-match", first.get("etag")}});
  ASSERT_EQ(delta.status, 200);
  EXPECT_NE(delta.get("etag"), first.get("etag"));
  auto page = transport::decode_pkranges(delta.body, delta.get("etag"));
  ASSERT_TRUE(page) << page.error().what;
  ASSERT_EQ(page->ranges.size(), 2u);
  for (const auto& r : page->ranges)
    EXPECT_EQ(r.parents, std::vector<std::string>{"0"}) << r.id;
  auto combined = old_map->try_combine(page->ranges, page->etag);
  ASSERT_TRUE(combined) << combined.error().what;
  EXPECT_EQ(combined->ranges().size(), 3u);
  EXPECT_TRUE(combined->is_gone("0"));
  EXPECT_EQ(pkranges({{"a-im", "Incremental Feed"},
                      {"if-none-match", delta.get("etag")}})
                .status,
            304);

  auto full = body(pkranges());
  std::set<std::string> ids;
  for (const auto& r : full["PartitionKeyRanges"])
    ids.insert(r["id"].get<std::string>());
  EXPECT_EQ(ids, (std::set<std::string>{"1", "2", "3"}));
}

TEST_F(Engine, Split_EmptyRanges_SplitAtSpanMidpoint) {
  setup_coll();
  ASSERT_TRUE(eng->split_range("d", "c", "0"));
  ASSERT_TRUE(eng->split_range("d", "c", "1"));
  auto page = transport::decode_pkranges(pkranges().body, "");
  ASSERT_TRUE(page) << page.error().what;
  std::vector<std::string> bounds;
  for (const auto& r : page->ranges)
    bounds.push_back(r.id + ":" + r.min_inclusive + "-" + r.max_exclusive);
  EXPECT_EQ(bounds, (std::vector<std::string>{"2:-10", "3:10-20", "4:20-30",
                                              "5:30-FF"}));
  // A grandchild lists its whole lineage.
  auto again = eng->split_range("d", "c", "3");
  ASSERT_TRUE(again);
  auto full = body(pkranges());
  for (const auto& r : full["PartitionKeyRanges"]) {
    if (r["id"] == "6") {
      EXPECT_EQ(r["parents"], json::array({"0", "3"}));
    }
  }
  EXPECT_FALSE(eng->split_range("d", "c", "3")); // gone now
}

TEST_F(Engine, Split_WithDocuments_SplitsAtMedianEpkKeepingBothHalves) {
  setup_coll();
  std::vector<std::string> epks;
  for (int i = 0; i < 40; ++i) {
    auto pk = "k" + std::to_string(i);
    auto res = create_doc(west, pk, "x");
    ASSERT_EQ(res.status, 201);
    if (res.get("x-ms-documentdb-partitionkeyrangeid") == "0")
      epks.push_back(epk_v2({pk_component{pk}}));
  }
  ASSERT_GE(epks.size(), 4u);
  ASSERT_TRUE(eng->split_range("d", "c", "0"));
  auto page = transport::decode_pkranges(pkranges().body, "");
  ASSERT_TRUE(page);
  std::string at;
  for (const auto& r : page->ranges)
    if (r.id == "2") at = r.max_exclusive;
  EXPECT_NE(std::find(epks.begin(), epks.end(), at), epks.end()) << at;
  for (const auto* id : {"2", "3"}) {
    auto res = query(west, "SELECT * FROM c",
                     {{"x-ms-documentdb-partitionkeyrangeid", id}});
    ASSERT_EQ(res.status, 200) << res.body;
    EXPECT_GE(body(res)["_count"].get<int>(), 1) << id;
  }
  // Documents are still found by point reads after the split.
  EXPECT_EQ(read_doc(west, "k0", "x").status, 200);
}

// The SDKs resume a split range's continuation on each child: the token of
// a streaming range query names a document position, not the range, so the
// children together return exactly what the parent had left.
TEST_F(Engine, Query_ParentContinuationOnChildren_NoDuplicatesNoLosses) {
  setup_coll();
  std::set<std::string> in_range0;
  for (int i = 0; i < 40; ++i) {
    auto pk = "k" + std::to_string(i);
    auto res = create_doc(west, pk, "d" + std::to_string(i));
    ASSERT_EQ(res.status, 201);
    if (res.get("x-ms-documentdb-partitionkeyrangeid") == "0")
      in_range0.insert("d" + std::to_string(i));
  }
  ASSERT_GE(in_range0.size(), 6u);
  auto first = query(west, "SELECT c.id FROM c",
                     {{"x-ms-documentdb-partitionkeyrangeid", "0"},
                      {"x-ms-max-item-count", "3"}});
  ASSERT_EQ(first.status, 200) << first.body;
  auto token = first.get("x-ms-continuation");
  ASSERT_FALSE(token.empty());
  std::vector<std::string> got;
  auto first_body = body(first); // range-for over a temporary's member: UB
  for (auto& d : first_body["Documents"])
    got.push_back(d["id"].get<std::string>());
  ASSERT_TRUE(eng->split_range("d", "c", "0"));
  for (const auto* child : {"2", "3"}) {
    auto next = token;
    for (int n = 0; n < 50 && !next.empty(); ++n) {
      auto page = query(west, "SELECT c.id FROM c",
                        {{"x-ms-documentdb-partitionkeyrangeid", child},
                         {"x-ms-max-item-count", "3"},
                         {"x-ms-continuation", next}});
      ASSERT_EQ(page.status, 200) << child << ": " << page.body;
      auto page_body = body(page);
      for (auto& d : page_body["Documents"])
        got.push_back(d["id"].get<std::string>());
      next = page.get("x-ms-continuation");
    }
  }
  std::multiset<std::string> all(got.begin(), got.end());
  EXPECT_EQ(all.size(), in_range0.size());
  EXPECT_EQ(std::set<std::string>(got.begin(), got.end()), in_range0);
  // Another query's token is still refused.
  auto other = query(west, "SELECT * FROM c",
                     {{"x-ms-documentdb-partitionkeyrangeid", "2"},
                      {"x-ms-continuation", token}});
  EXPECT_EQ(other.status, 400);
}

TEST_F(Engine, Query_GoneRangeId_Returns410_1002AndUnknownId400) {
  setup_coll();
  ASSERT_TRUE(eng->split_range("d", "c", "1"));
  auto gone = query(west, "SELECT * FROM c",
                    {{"x-ms-documentdb-partitionkeyrangeid", "1"}});
  EXPECT_EQ(gone.status, 410);
  EXPECT_EQ(gone.get("x-ms-substatus"), "1002");
  auto unknown = query(west, "SELECT * FROM c",
                       {{"x-ms-documentdb-partitionkeyrangeid", "77"}});
  EXPECT_EQ(unknown.status, 400);
  // A point operation addressed to the gone range too.
  auto point = read_doc(west, "redmond", "r",
                        {{"x-ms-documentdb-partitionkeyrangeid", "1"}});
  EXPECT_EQ(point.status, 410);
  EXPECT_EQ(point.get("x-ms-substatus"), "1002");
  EXPECT_EQ(query(west, "SELECT * FROM c",
                  {{"x-ms-documentdb-partitionkeyrangeid", "3"}})
                .status,
            200);
}

// -- queries -----------------------------------------------------------------

TEST_F(Engine, Query_SinglePartition_ReturnsThatPartitionOnly) {
  setup_coll();
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(create_doc(west, "a", "a" + std::to_string(i), i).status, 201);
  ASSERT_EQ(create_doc(west, "b", "b0", 7).status, 201);
  auto res = query(west, "SELECT * FROM c WHERE c.n >= @n",
                   {{"x-ms-documentdb-partitionkey", R"(["a"])"}},
                   json::array({{{"name", "@n"}, {"value", 1}}}));
  ASSERT_EQ(res.status, 200) << res.body;
  auto b = body(res);
  EXPECT_EQ(b["_count"], 2);
  EXPECT_EQ(res.get("x-ms-item-count"), "2");
  EXPECT_EQ(b["_rid"], body(send(west, "GET", "/dbs/d/colls/c"))["_rid"]);
  for (const auto& d : b["Documents"])
    EXPECT_EQ(d["pk"], "a");
  EXPECT_TRUE(res.get("x-ms-continuation").empty());
}

TEST_F(Engine, Query_PerRangeWithPaging_FollowsContinuation) {
  setup_coll();
  int in_range_1 = 0;
  for (int i = 0; i < 30; ++i) {
    auto res = create_doc(west, "k" + std::to_string(i), "x", i);
    in_range_1 += res.get("x-ms-documentdb-partitionkeyrangeid") == "1";
  }
  ASSERT_GE(in_range_1, 3);
  std::set<std::string> seen;
  std::string continuation;
  int pages = 0;
  do {
    headers_t h{{"x-ms-documentdb-partitionkeyrangeid", "1"},
                {"x-ms-max-item-count", "2"}};
    if (!continuation.empty())
      h.emplace_back("x-ms-continuation", continuation);
    auto res = query(west, "SELECT * FROM c", h);
    ASSERT_EQ(res.status, 200) << res.body;
    auto b = body(res);
    EXPECT_LE(b["_count"].get<int>(), 2);
    for (const auto& d : b["Documents"])
      seen.insert(d["pk"].get<std::string>());
    continuation = res.get("x-ms-continuation");
    ++pages;
  } while (!continuation.empty() && pages < 100);
  EXPECT_EQ(static_cast<int>(seen.size()), in_range_1);
  EXPECT_EQ(pages, (in_range_1 + 1) / 2);

  auto bogus = query(west, "SELECT * FROM c",
                     {{"x-ms-documentdb-partitionkeyrangeid", "1"},
                      {"x-ms-continuation", "not-a-token"}});
  EXPECT_EQ(bogus.status, 400);
}

TEST_F(Engine, Query_ContinuationOfOtherQuery_Returns400) {
  setup_coll();
  for (int i = 0; i < 5; ++i)
    create_doc(west, "a", "a" + std::to_string(i), i);
  headers_t h{{"x-ms-documentdb-partitionkey", R"(["a"])"},
              {"x-ms-max-item-count", "2"}};
  auto first = query(west, "SELECT * FROM c", h);
  ASSERT_FALSE(first.get("x-ms-continuation").empty());
  h.emplace_back("x-ms-continuation", first.get("x-ms-continuation"));
  EXPECT_EQ(query(west, "SELECT * FROM c WHERE c.n > 0", h).status, 400);
}

TEST_F(Engine, Query_CrossPartitionSimple_ServedOverAllRanges) {
  setup_coll();
  for (int i = 0; i < 10; ++i)
    create_doc(west, "k" + std::to_string(i), "x", i);
  auto res = query(west, "SELECT * FROM c WHERE c.n < 5");
  ASSERT_EQ(res.status, 200) << res.body;
  EXPECT_EQ(body(res)["_count"], 5);
}

TEST_F(Engine, Query_CrossPartitionOrderBy_Returns400_1004WithPlan) {
  setup_coll();
  auto res = query(west, "SELECT * FROM c ORDER BY c.n");
  ASSERT_EQ(res.status, 400) << res.body;
  EXPECT_EQ(res.get("x-ms-substatus"), "1004");
  auto err = transport::decode_error_body(res.body);
  ASSERT_TRUE(err) << err.error().what;
  auto plan = transport::decode_query_plan(err->additional_error_info);
  ASSERT_TRUE(plan) << plan.error().what << " in " << res.body;
  EXPECT_EQ(plan->info.order_by, std::vector<std::string>{"Ascending"});
  EXPECT_FALSE(plan->info.rewritten_query.empty());
  // The same query scoped to a partition is served.
  EXPECT_EQ(query(west, "SELECT * FROM c ORDER BY c.n",
                  {{"x-ms-documentdb-partitionkey", R"(["a"])"}})
                .status,
            200);
}

TEST_F(Engine, QueryPlan_Request_Returns200PlanNotExecuted) {
  setup_coll();
  create_doc(west, "a", "a");
  auto res = send(west, "POST", "/dbs/d/colls/c/docs",
                  R"({"query":"SELECT * FROM c ORDER BY c.n DESC"})",
                  {{"x-ms-cosmos-is-query-plan-request", "True"},
                   {"content-type", "application/query+json"}});
  ASSERT_EQ(res.status, 200) << res.body;
  auto plan = transport::decode_query_plan(res.body);
  ASSERT_TRUE(plan) << plan.error().what;
  EXPECT_EQ(plan->info.order_by, std::vector<std::string>{"Descending"});
  EXPECT_FALSE(body(res).contains("Documents"));
}

TEST_F(Engine, Query_SyntaxError_Returns400BadRequest) {
  setup_coll();
  auto res = query(west, "SELEC * FROM c");
  EXPECT_EQ(res.status, 400);
  auto b = body(res);
  EXPECT_EQ(b["code"], "BadRequest");
  EXPECT_FALSE(b["message"].get<std::string>().empty());
}

TEST_F(Engine, Query_StartAndEndEpk_NarrowTheRange) {
  setup_coll();
  ASSERT_EQ(create_doc(west, "redmond", "r").status, 201);
  for (int i = 0; i < 20; ++i)
    create_doc(west, "k" + std::to_string(i), "x", i);
  auto epk = epk_v2({pk_component{std::string{"redmond"}}});
  auto res = query(west, "SELECT * FROM c",
                   {{"x-ms-documentdb-partitionkeyrangeid", "1"},
                    {"x-ms-start-epk", epk},
                    {"x-ms-end-epk", epk + "00"}});
  ASSERT_EQ(res.status, 200) << res.body;
  // [epk, epk00) is empty in the length-aware order; [epk, epk01) is not.
  EXPECT_EQ(body(res)["_count"], 0);
  res = query(west, "SELECT * FROM c",
              {{"x-ms-documentdb-partitionkeyrangeid", "1"},
               {"x-ms-start-epk", epk},
               {"x-ms-end-epk", epk + "01"}});
  ASSERT_EQ(body(res)["_count"], 1);
  EXPECT_EQ(body(res)["Documents"][0]["id"], "r");
}

TEST_F(Engine, ReadFeed_Paged_ReturnsEveryDocumentOnce) {
  setup_coll();
  for (int i = 0; i < 7; ++i)
    create_doc(west, "k" + std::to_string(i), "x", i);
  std::set<std::string> seen;
  std::string continuation;
  int pages = 0;
  do {
    headers_t h{{"x-ms-max-item-count", "3"}};
    if (!continuation.empty())
      h.emplace_back("x-ms-continuation", continuation);
    auto res = send(west, "GET", "/dbs/d/colls/c/docs", {}, h);
    ASSERT_EQ(res.status, 200) << res.body;
    auto page = body(res);
    for (const auto& d : page["Documents"])
      seen.insert(d["pk"].get<std::string>());
    continuation = res.get("x-ms-continuation");
    ++pages;
  } while (!continuation.empty() && pages < 10);
  EXPECT_EQ(seen.size(), 7u);
  EXPECT_EQ(pages, 3);
}

TEST_F(Engine, Query_Databases_ServedOverTheList) {
  create_db("d1");
  create_db("d2");
  auto res = send(west, "POST", "/dbs",
                  R"({"query":"SELECT * FROM r WHERE r.id = @id",)"
                  R"("parameters":[{"name":"@id","value":"d2"}]})",
                  {{"x-ms-documentdb-isquery", "true"},
                   {"content-type", "application/query+json"}});
  ASSERT_EQ(res.status, 200) << res.body;
  ASSERT_EQ(body(res)["Databases"].size(), 1u);
  EXPECT_EQ(body(res)["Databases"][0]["id"], "d2");
}

// -- replication and sessions ------------------------------------------------

TEST_F(Engine, Session_ReadBeforeReplication_Returns404_1002ThenServes) {
  engine_options o;
  o.replication_lag = 500ms;
  make(o);
  setup_coll();
  auto written = create_doc(west, "p", "a", 1, t0);
  ASSERT_EQ(written.status, 201);
  auto token = written.get("x-ms-session-token");
  ASSERT_FALSE(token.empty());
  headers_t session{{"x-ms-session-token", token},
                    {"x-ms-consistency-level", "Session"}};
  auto early = read_doc(east, "p", "a", session, t0 + 100ms);
  EXPECT_EQ(early.status, 404);
  EXPECT_EQ(early.get("x-ms-substatus"), "1002");
  // Without a token the replica simply has not got it yet.
  auto plain = read_doc(east, "p", "a", {}, t0 + 100ms);
  EXPECT_EQ(plain.status, 404);
  EXPECT_TRUE(plain.get("x-ms-substatus").empty());
  // The writer reads its own write at once.
  EXPECT_EQ(read_doc(west, "p", "a", session, t0 + 100ms).status, 200);
  auto late = read_doc(east, "p", "a", session, t0 + 600ms);
  EXPECT_EQ(late.status, 200) << late.body;
  EXPECT_EQ(body(late)["n"], 1);
}

TEST_F(Engine, Session_QueryBehindToken_Returns404_1002) {
  engine_options o;
  o.replication_lag = 500ms;
  make(o);
  setup_coll();
  auto token = create_doc(west, "p", "a", 1, t0).get("x-ms-session-token");
  headers_t h{{"x-ms-session-token", token},
              {"x-ms-documentdb-partitionkey", R"(["p"])"}};
  auto res = query(north, "SELECT * FROM c", h);
  EXPECT_EQ(res.status, 404);
  EXPECT_EQ(res.get("x-ms-substatus"), "1002");
  auto bad = read_doc(west, "p", "a", {{"x-ms-session-token", "garbage"}});
  EXPECT_EQ(bad.status, 400);
}

TEST_F(Engine, Session_TokenOfSplitParent_AppliesToChildren) {
  engine_options o;
  o.replication_lag = 500ms;
  make(o);
  setup_coll();
  auto written = create_doc(west, "redmond", "a", 1, t0);
  ASSERT_EQ(written.get("x-ms-documentdb-partitionkeyrangeid"), "1");
  ASSERT_TRUE(eng->split_range("d", "c", "1"));
  headers_t session{{"x-ms-session-token", written.get("x-ms-session-token")}};
  EXPECT_EQ(read_doc(east, "redmond", "a", session, t0 + 100ms).status, 404);
  EXPECT_EQ(read_doc(east, "redmond", "a", session, t0 + 600ms).status, 200);
}

TEST_F(Engine, Session_MultiWrite_OwnRegionServesOtherRegionWaits) {
  engine_options o;
  o.multi_write = true;
  o.replication_lag = 500ms;
  make(o);
  setup_coll();
  ASSERT_EQ(create_doc(west, "redmond", "w", 1, t0).status, 201);
  auto written = create_doc(east, "redmond", "e", 1, t0);
  ASSERT_EQ(written.status, 201) << written.body;
  headers_t session{{"x-ms-session-token", written.get("x-ms-session-token")}};
  EXPECT_EQ(read_doc(east, "redmond", "e", session, t0 + 1ms).status, 200);
  auto other = read_doc(west, "redmond", "e", session, t0 + 1ms);
  EXPECT_EQ(other.status, 404);
  EXPECT_EQ(other.get("x-ms-substatus"), "1002");
  EXPECT_EQ(read_doc(west, "redmond", "e", session, t0 + 501ms).status, 200);
  // Multi-write tokens carry a local LSN per region (version 1).
  auto token = written.get("x-ms-session-token");
  EXPECT_EQ(token.substr(0, 4), "1:1#") << token;
  EXPECT_EQ(std::count(token.begin(), token.end(), '='), 3) << token;
}

// -- write regions -----------------------------------------------------------

TEST_F(Engine, Write_NonWriteRegion_Returns403_3ReadsStillServed) {
  setup_coll();
  ASSERT_EQ(create_doc(west, "p", "a").status, 201);
  auto res = create_doc(east, "p", "b");
  EXPECT_EQ(res.status, 403);
  EXPECT_EQ(res.get("x-ms-substatus"), "3");
  EXPECT_EQ(read_doc(east, "p", "a").status, 200);
  EXPECT_EQ(send(east, "POST", "/dbs", R"({"id":"e"})").status, 403);
  // The global endpoint serves at the write region.
  EXPECT_EQ(create_doc("", "p", "c").status, 201);
}

TEST_F(Engine, Write_AfterSetWriteRegions_OldWriter403NewWriterAccepts) {
  setup_coll();
  ASSERT_TRUE(eng->set_write_regions({east}));
  auto old_writer = create_doc(west, "p", "a");
  EXPECT_EQ(old_writer.status, 403);
  EXPECT_EQ(old_writer.get("x-ms-substatus"), "3");
  EXPECT_EQ(create_doc(east, "p", "a").status, 201);
}

TEST_F(Engine, Write_MultiWrite_AcceptedInEveryRegion) {
  setup_coll();
  eng->set_multi_write(true);
  EXPECT_EQ(create_doc(west, "p", "a").status, 201);
  EXPECT_EQ(create_doc(east, "p", "b").status, 201);
  EXPECT_EQ(create_doc(north, "p", "c").status, 201);
}

// -- throttling --------------------------------------------------------------

TEST_F(Engine, Throttle_OverBudget_Returns429WithRetryAfter) {
  setup_coll();
  eng->set_throughput(west, 12);
  EXPECT_EQ(create_doc(west, "p", "a", 0, t0).status, 201);
  EXPECT_EQ(create_doc(west, "p", "b", 0, t0).status, 201);
  auto throttled = create_doc(west, "p", "c", 0, t0);
  ASSERT_EQ(throttled.status, 429);
  EXPECT_EQ(throttled.get("x-ms-substatus"), "3200");
  auto wait = std::stoll(throttled.get("x-ms-retry-after-ms"));
  EXPECT_GT(wait, 0);
  EXPECT_LE(wait, 1000);
  // Other regions have their own budget.
  EXPECT_EQ(read_doc(east, "p", "a", {}, t0).status, 200);
  auto later = t0 + std::chrono::milliseconds{wait};
  EXPECT_EQ(create_doc(west, "p", "c", 0, later).status, 201);
  // Metadata is not metered.
  EXPECT_EQ(send(west, "GET", "/dbs/d/colls/c", {}, {}, later).status, 200);
}

// -- auth --------------------------------------------------------------------

TEST_F(Engine, Auth_NoHeader_Returns401) {
  sign = false;
  auto res = send(west, "GET", "/");
  EXPECT_EQ(res.status, 401);
  EXPECT_EQ(body(res)["code"], "Unauthorized");
  EXPECT_FALSE(res.get("x-ms-activity-id").empty());
}

TEST_F(Engine, Auth_WrongKey_Returns401) {
  signing_key = *transport::parse_master_key(
      "dGhpcyBpcyBub3QgdGhlIGtleSBvZiB0aGUgZW11bGF0b3IgYXQgYWxsIQ==");
  EXPECT_EQ(send(west, "GET", "/").status, 401);
}

TEST_F(Engine, Auth_DateSixteenMinutesOld_Returns403) {
  signed_at = t0 - 16min;
  auto res = send(west, "GET", "/");
  EXPECT_EQ(res.status, 403);
  EXPECT_EQ(body(res)["code"], "Forbidden");
  signed_at = t0 - 14min;
  EXPECT_EQ(send(west, "GET", "/").status, 200);
}

TEST_F(Engine, Auth_LowercaseHexEscapes_Accepted) {
  transport::request r;
  r.target = "/";
  transport::sign_request(r, signing_key, t0);
  http_request h;
  h.method = "GET";
  h.target = "/";
  for (auto& [name, value] : r.headers) {
    auto v = value;
    if (lower(name) == "authorization")
      for (size_t i = 0; i + 2 < v.size(); ++i)
        if (v[i] == '%') {
          v[i + 1] = static_cast<char>(std::tolower(v[i + 1]));
          v[i + 2] = static_cast<char>(std::tolower(v[i + 2]));
        }
    h.headers[lower(name)] = v;
  }
  EXPECT_EQ(eng->handle(west, h, t0).status, 200);
}

TEST_F(Engine, Auth_VerifyOff_UnsignedServed) {
  engine_options o;
  o.verify_auth = false;
  make(o);
  sign = false;
  EXPECT_EQ(send(west, "GET", "/").status, 200);
}

// -- status faults -----------------------------------------------------------

TEST_F(Engine, Fault_CountLimited_FiresCountTimesThenStops) {
  setup_coll();
  create_doc(west, "p", "a");
  fault_rule rule;
  rule.region = east;
  rule.resource_type = "docs";
  rule.status = 503;
  rule.substatus = 21008;
  rule.retry_after_ms = 250;
  rule.count = 2;
  eng->add_fault(rule);
  for (int i = 0; i < 2; ++i) {
    auto res = read_doc(east, "p", "a");
    EXPECT_EQ(res.status, 503);
    EXPECT_EQ(res.get("x-ms-substatus"), "21008");
    EXPECT_EQ(res.get("x-ms-retry-after-ms"), "250");
    EXPECT_EQ(body(res)["code"], "ServiceUnavailable");
  }
  EXPECT_EQ(read_doc(east, "p", "a").status, 200);
  EXPECT_EQ(read_doc(west, "p", "a").status, 200);
}

TEST_F(Engine, Fault_ByOperationKind_OnlyMatchingRequestsFail) {
  setup_coll();
  fault_rule rule;
  rule.operation = "write";
  rule.status = 408;
  auto id = eng->add_fault(rule);
  EXPECT_EQ(create_doc(west, "p", "a").status, 408);
  EXPECT_EQ(read_doc(west, "p", "a").status, 404);
  EXPECT_EQ(send(west, "GET", "/").status, 200);
  EXPECT_EQ(query(west, "SELECT * FROM c").status, 200);
  eng->remove_fault(id);
  EXPECT_EQ(create_doc(west, "p", "a").status, 201);

  fault_rule plan;
  plan.operation = "query_plan";
  plan.status = 503;
  eng->add_fault(plan);
  auto res = send(west, "POST", "/dbs/d/colls/c/docs",
                  R"({"query":"SELECT * FROM c"})",
                  {{"x-ms-cosmos-is-query-plan-request", "True"},
                   {"content-type", "application/query+json"}});
  EXPECT_EQ(res.status, 503);
  EXPECT_EQ(query(west, "SELECT * FROM c").status, 200);
  fault_rule account;
  account.operation = "account";
  account.status = 500;
  eng->add_fault(account);
  EXPECT_EQ(send(west, "GET", "/").status, 500);
  eng->clear_faults();
  EXPECT_EQ(send(west, "GET", "/").status, 200);
}

TEST_F(Engine, Fault_Probability_DeterministicAndPartial) {
  auto run = [this] {
    make(engine_options{});
    fault_rule rule;
    rule.operation = "account";
    rule.probability = 0.5;
    eng->add_fault(rule);
    std::vector<int> out;
    for (int i = 0; i < 100; ++i)
      out.push_back(send(west, "GET", "/").status);
    return out;
  };
  auto first = run();
  auto second = run();
  EXPECT_EQ(first, second);
  auto failed = std::count(first.begin(), first.end(), 503);
  EXPECT_GT(failed, 20);
  EXPECT_LT(failed, 80);
}

TEST_F(Engine, Fault_Body_AnsweredVerbatimWithHeaders_NothingServed) {
  setup_coll();
  fault_rule rule;
  rule.operation = "write";
  rule.status = 201;
  rule.body = R"({"id": 5, not json)";
  rule.headers = {{"etag", "\"7\""}};
  rule.count = 1;
  eng->add_fault(rule);
  auto res = create_doc(west, "p", "a");
  EXPECT_EQ(res.status, 201);
  EXPECT_EQ(res.body, R"({"id": 5, not json)");
  EXPECT_EQ(res.get("content-type"), "application/json");
  EXPECT_EQ(res.get("etag"), "\"7\"");
  EXPECT_EQ(res.get(truncate_marker), "");
  // The request was answered, not served: the document does not exist.
  EXPECT_EQ(read_doc(west, "p", "a").status, 404);
  EXPECT_EQ(create_doc(west, "p", "a").status, 201);
}

TEST_F(Engine, Fault_Truncate_ServedThenMarkedForTheServer) {
  setup_coll();
  fault_rule rule;
  rule.operation = "write";
  rule.truncate = true;
  rule.count = 1;
  eng->add_fault(rule);
  auto res = create_doc(west, "p", "a");
  // Served (the write is applied), the real response marked to be cut.
  EXPECT_EQ(res.status, 201);
  EXPECT_EQ(body(res)["id"], "a");
  EXPECT_EQ(res.get(truncate_marker), "1");
  EXPECT_EQ(read_doc(west, "p", "a").status, 200);
  EXPECT_EQ(read_doc(west, "p", "a").get(truncate_marker), "");
  // With a body: that body is answered (not served) and marked.
  rule.operation = "read";
  rule.status = 200;
  rule.body = R"({"id":"zz"})";
  eng->add_fault(rule);
  auto cut = read_doc(west, "p", "nope");
  EXPECT_EQ(cut.status, 200);
  EXPECT_EQ(cut.body, R"({"id":"zz"})");
  EXPECT_EQ(cut.get(truncate_marker), "1");
}

TEST_F(Engine, ClockOffset_PastTheAllowedSkew_Returns403_Reversible) {
  eng->set_clock_offset(16min);
  auto res = send(west, "GET", "/");
  EXPECT_EQ(res.status, 403);
  EXPECT_NE(body(res)["message"].get<std::string>().find("current time"),
            std::string::npos)
      << res.body;
  eng->set_clock_offset(-14min);
  EXPECT_EQ(send(west, "GET", "/").status, 200);
  eng->set_clock_offset(-16min);
  EXPECT_EQ(send(west, "GET", "/").status, 403);
  eng->set_clock_offset(0min);
  EXPECT_EQ(send(west, "GET", "/").status, 200);
}

// -- counters and robustness -------------------------------------------------

TEST_F(Engine, Counters_EveryResponse_CountedByRegionAndStatus) {
  setup_coll(); // 2 x 201 at West US
  send("", "GET", "/");
  send(east, "GET", "/dbs/d/colls/c");
  sign = false;
  send(east, "GET", "/");
  sign = true;
  fault_rule rule;
  rule.status = 503;
  rule.count = 1;
  eng->add_fault(rule);
  send(north, "GET", "/");
  auto c = eng->counters();
  EXPECT_EQ(c[west][201], 2u);
  EXPECT_EQ(c[""][200], 1u);
  EXPECT_EQ(c[east][200], 1u);
  EXPECT_EQ(c[east][401], 1u);
  EXPECT_EQ(c[north][503], 1u);
  eng->reset_counters();
  EXPECT_TRUE(eng->counters().empty());
}

TEST_F(Engine, Handle_UnknownRegionOrPath_AnswersWithoutThrowing) {
  EXPECT_EQ(send("Mars", "GET", "/").status, 500);
  EXPECT_EQ(send(west, "GET", "/offers").status, 404);
  EXPECT_EQ(send(west, "GET", "/dbs/nope/colls/c").status, 404);
  EXPECT_EQ(send(west, "PATCH", "/dbs").status, 405);
  EXPECT_EQ(eng->counters()["Mars"][500], 1u);
}

TEST_F(Engine, Handle_ActivityId_EchoedOrGenerated) {
  auto echoed = send(west, "GET", "/", {}, {{"x-ms-activity-id", "abc-123"}});
  EXPECT_EQ(echoed.get("x-ms-activity-id"), "abc-123");
  auto generated = send(west, "GET", "/");
  EXPECT_EQ(generated.get("x-ms-activity-id").size(), 36u);
}

} // namespace
