// The change feed (latest-version mode), range merges and per-region
// replication lag, on the engine alone: requests handed to engine::handle
// with explicit clock values (virtual time: no sockets, no sleeping).

#include "georoute/transport/auth.hpp"
#include "tests/emulator/engine.hpp"

#include <algorithm>
#include <chrono>
#include <gtest/gtest.h>
#include <map>
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
using headers_t = std::map<std::string, std::string>;

/// A fixed instant, so dates and lags are exact.
const engine::clock::time_point t0 =
    engine::clock::time_point{} + std::chrono::seconds{1'900'000'000};

const std::string west = "West US";
const std::string east = "East US";
const std::string north = "North Europe";

/// One change-feed answer, taken apart.
struct feed_page {
  int status = 0;
  int substatus = 0;
  std::string etag;
  std::string error; ///< the body of a non-2xx answer
  std::vector<std::string> ids;
  std::vector<int64_t> lsns;
  json docs = json::array();
  http_response raw;
};

class EngineFeed : public testing::Test {
protected:
  void SetUp() override { make(engine_options{}); }

  void make(engine_options o) {
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
    http_request r;
    r.method = method;
    r.target = target;
    r.body = std::move(body);
    r.headers = std::move(headers);
    if (!r.body.empty()) r.headers["content-type"] = "application/json";
    return eng->handle(region, r, now);
  }

  /// Creates (or with `method` PUT replaces, DELETE deletes) document `id`
  /// in partition `pk`, its `n` set to `n`.
  http_response write(const std::string& id, const std::string& pk, int n = 0,
                      engine::clock::time_point now = t0,
                      const std::string& method = "POST",
                      const std::string& region = west) {
    json doc{{"id", id}, {"pk", pk}, {"n", n}};
    auto target = std::string{"/dbs/d/colls/c/docs"};
    if (method != "POST") target += "/" + id;
    auto res = send(region, method, target,
                    method == "DELETE" ? std::string{} : doc.dump(),
                    {{"x-ms-documentdb-partitionkey", json{pk}.dump()}}, now);
    EXPECT_LT(res.status, 300) << method << " " << id << ": " << res.body;
    return res;
  }

  /// One read of the change feed.
  feed_page feed(headers_t h = {}, engine::clock::time_point now = t0,
                 const std::string& region = west) {
    if (h.count("a-im") == 0) h["a-im"] = "Incremental Feed";
    auto res = send(region, "GET", "/dbs/d/colls/c/docs", {}, h, now);
    feed_page p;
    p.raw = res;
    p.status = res.status;
    auto sub = res.get("x-ms-substatus");
    p.substatus = sub.empty() ? 0 : std::stoi(sub);
    p.etag = res.get("etag");
    if (res.status != 200) {
      p.error = res.body;
      return p;
    }
    auto body = json::parse(res.body);
    p.docs = body["Documents"];
    for (const auto& d : p.docs) {
      bool envelope = d.contains("current");
      p.ids.push_back(envelope ? d["current"]["id"] : d["id"]);
      p.lsns.push_back(envelope ? d["metadata"]["lsn"] : d["_lsn"]);
    }
    return p;
  }

  /// The feed of range `range` (from `etag` when set), page after page of
  /// `size`, until the 304; the ids in order.
  std::vector<std::string> drain(headers_t h, const std::string& etag,
                                 int size = 1000,
                                 engine::clock::time_point now = t0) {
    std::vector<std::string> out;
    h["x-ms-max-item-count"] = std::to_string(size);
    if (!etag.empty()) h["if-none-match"] = etag;
    for (int i = 0; i < 100; ++i) {
      auto p = feed(h, now);
      EXPECT_TRUE(p.status == 200 || p.status == 304) << p.error;
      if (p.status != 200) break;
      out.insert(out.end(), p.ids.begin(), p.ids.end());
      h["if-none-match"] = p.etag;
    }
    return out;
  }

  /// Current ranges of the collection: id -> [min, max).
  std::map<std::string, std::pair<std::string, std::string>> ranges() {
    auto res = send(west, "GET", "/dbs/d/colls/c/pkranges");
    std::map<std::string, std::pair<std::string, std::string>> out;
    auto body = json::parse(res.body);
    for (const auto& r : body["PartitionKeyRanges"])
      out[r["id"]] = {r["minInclusive"], r["maxExclusive"]};
    return out;
  }

  std::unique_ptr<engine> eng;
};

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// -- start positions
// ------------------------------------------------------------

TEST_F(EngineFeed, FromBeginning_EveryLiveDocumentInChangeOrder) {
  for (int i = 0; i < 5; ++i)
    write("d" + std::to_string(i), "p" + std::to_string(i), i, t0 + i * 1s);
  auto p = feed();
  ASSERT_EQ(p.status, 200) << p.error;
  EXPECT_EQ(p.ids, (std::vector<std::string>{"d0", "d1", "d2", "d3", "d4"}));
  EXPECT_EQ(p.lsns, (std::vector<int64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(p.etag, "\"5\"");
  EXPECT_EQ(p.raw.get("x-ms-item-count"), "5");
  auto body = json::parse(p.raw.body);
  EXPECT_EQ(body["_count"], 5);
  EXPECT_FALSE(body["_rid"].get<std::string>().empty());
  EXPECT_EQ(body["_rid"], p.raw.get("x-ms-content-path"));
  // System properties are there, and the document as written.
  EXPECT_EQ(p.docs[2]["n"], 2);
  EXPECT_EQ(p.docs[2]["pk"], "p2");
  for (const char* field : {"_rid", "_self", "_etag", "_ts"})
    EXPECT_TRUE(p.docs[2].contains(field)) << field;
  // A session token per range read, a charge and an activity id.
  auto tokens = p.raw.get("x-ms-session-token");
  EXPECT_EQ(std::count(tokens.begin(), tokens.end(), ',') + 1,
            static_cast<long>(ranges().size()))
      << tokens;
  EXPECT_FALSE(p.raw.get("x-ms-request-charge").empty());
  EXPECT_FALSE(p.raw.get("x-ms-activity-id").empty());
}

TEST_F(EngineFeed, FromNow_304WithTheWatermarkThenOnlyNewerChanges) {
  write("a", "p1");
  write("b", "p2");
  auto now = feed({{"if-none-match", "*"}});
  ASSERT_EQ(now.status, 304) << now.raw.body;
  EXPECT_EQ(now.etag, "\"2\"");
  EXPECT_EQ(now.raw.body, "");
  EXPECT_EQ(now.raw.get("x-ms-item-count"), "0");
  EXPECT_FALSE(now.raw.get("x-ms-session-token").empty());
  EXPECT_FALSE(now.raw.get("x-ms-request-charge").empty());
  EXPECT_FALSE(now.raw.get("x-ms-activity-id").empty());

  write("c", "p3");
  auto next = feed({{"if-none-match", now.etag}});
  ASSERT_EQ(next.status, 200) << next.error;
  EXPECT_EQ(next.ids, std::vector<std::string>{"c"});
  EXPECT_EQ(next.etag, "\"3\"");
  // Caught up: 304 again, at the new watermark.
  auto done = feed({{"if-none-match", next.etag}});
  EXPECT_EQ(done.status, 304);
  EXPECT_EQ(done.etag, "\"3\"");
}

TEST_F(EngineFeed, IfModifiedSince_ChangesCommittedAtOrAfterThatSecond) {
  write("early", "p1", 0, t0);
  write("early", "p1", 1, t0 + 1s, "PUT"); // its latest version: before T
  write("edge", "p2", 0, t0 + 10s);
  write("late", "p3", 0, t0 + 20s);
  auto since = transport::rfc1123_date(t0 + 10s);
  auto p = feed({{"if-modified-since", since}}, t0 + 21s);
  ASSERT_EQ(p.status, 200) << p.error;
  EXPECT_EQ(p.ids, (std::vector<std::string>{"edge", "late"}));
  // One second later the edge is out.
  p = feed({{"if-modified-since", transport::rfc1123_date(t0 + 11s)}},
           t0 + 21s);
  EXPECT_EQ(p.ids, std::vector<std::string>{"late"});
  // A date after every change: nothing, at the watermark.
  p = feed({{"if-modified-since", transport::rfc1123_date(t0 + 30s)}},
           t0 + 31s);
  EXPECT_EQ(p.status, 304);
  EXPECT_EQ(p.etag, "\"4\"");
}

TEST_F(EngineFeed, EtagAndDate_TheEtagWins) {
  write("a", "p1", 0, t0);
  write("b", "p2", 0, t0 + 10s);
  write("c", "p3", 0, t0 + 20s);
  // The date alone would give only c; the etag "1" gives b and c.
  auto p = feed({{"if-none-match", "\"1\""},
                 {"if-modified-since", transport::rfc1123_date(t0 + 20s)}},
                t0 + 21s);
  ASSERT_EQ(p.status, 200) << p.error;
  EXPECT_EQ(p.ids, (std::vector<std::string>{"b", "c"}));
}

TEST_F(EngineFeed, Etag_QuotedUnquotedOrWeak_MalformedIs400) {
  for (int i = 0; i < 4; ++i)
    write("d" + std::to_string(i), "p" + std::to_string(i));
  for (const char* etag : {"\"2\"", "2", "W/\"2\"", " \"2\" "}) {
    auto p = feed({{"if-none-match", etag}});
    ASSERT_EQ(p.status, 200) << etag << ": " << p.error;
    EXPECT_EQ(p.ids, (std::vector<std::string>{"d2", "d3"})) << etag;
  }
  for (const char* etag :
       {"abc", "-1", "\"\"", "\"3", "1.5", "99999999999999999999"}) {
    auto p = feed({{"if-none-match", etag}});
    EXPECT_EQ(p.status, 400) << etag;
    EXPECT_NE(p.error.find("If-None-Match"), std::string::npos) << p.error;
  }
  auto p = feed({{"if-modified-since", "yesterday"}});
  EXPECT_EQ(p.status, 400);
  EXPECT_NE(p.error.find("If-Modified-Since"), std::string::npos) << p.error;
}

// -- pages
// ------------------------------------------------------------------------

TEST_F(EngineFeed, MaxItemCount_PagesInOrderWithoutLossOrRepeat) {
  std::vector<std::string> want;
  for (int i = 0; i < 7; ++i) {
    want.push_back("d" + std::to_string(i));
    write(want.back(), "p" + std::to_string(i % 3));
  }
  headers_t h{{"x-ms-max-item-count", "3"}};
  auto p1 = feed(h);
  ASSERT_EQ(p1.status, 200) << p1.error;
  EXPECT_EQ(p1.ids, (std::vector<std::string>{"d0", "d1", "d2"}));
  EXPECT_EQ(p1.etag, "\"3\"");
  EXPECT_EQ(p1.raw.get("x-ms-item-count"), "3");
  h["if-none-match"] = p1.etag;
  auto p2 = feed(h);
  EXPECT_EQ(p2.ids, (std::vector<std::string>{"d3", "d4", "d5"}));
  h["if-none-match"] = p2.etag;
  auto p3 = feed(h);
  EXPECT_EQ(p3.ids, std::vector<std::string>{"d6"});
  EXPECT_EQ(p3.etag, "\"7\"");
  h["if-none-match"] = p3.etag;
  EXPECT_EQ(feed(h).status, 304);
  EXPECT_EQ(drain({}, {}, 2), want);
  EXPECT_EQ(feed({{"x-ms-max-item-count", "0"}}).status, 400);
  EXPECT_EQ(feed({{"x-ms-max-item-count", "-1"}}).ids.size(), 7u);
}

TEST_F(EngineFeed, LatestVersionOnly_AnUpdateMovesToTheEnd_ADeleteRemoves) {
  write("a", "p1", 1);
  write("b", "p2", 1);
  write("c", "p3", 1);
  auto seen = feed();
  ASSERT_EQ(seen.etag, "\"3\"");
  write("a", "p1", 2, t0, "PUT");
  auto p = feed();
  EXPECT_EQ(p.ids, (std::vector<std::string>{"b", "c", "a"}));
  EXPECT_EQ(p.lsns, (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(p.docs[2]["n"], 2) << "the latest version";
  write("b", "p2", 0, t0, "DELETE");
  p = feed();
  EXPECT_EQ(p.ids, (std::vector<std::string>{"c", "a"}));
  // From the first page's etag: only the update; the delete is not shown.
  p = feed({{"if-none-match", seen.etag}});
  EXPECT_EQ(p.ids, std::vector<std::string>{"a"});
  EXPECT_EQ(p.etag, "\"4\"");
  // An upsert of a deleted document brings it back, at its new place.
  auto up = send(west, "POST", "/dbs/d/colls/c/docs",
                 json{{"id", "b"}, {"pk", "p2"}, {"n", 9}}.dump(),
                 {{"x-ms-documentdb-partitionkey", R"(["p2"])"},
                  {"x-ms-documentdb-is-upsert", "true"}});
  ASSERT_EQ(up.status, 201) << up.body;
  p = feed({{"if-none-match", "\"4\""}});
  EXPECT_EQ(p.ids, std::vector<std::string>{"b"});
  EXPECT_EQ(p.lsns, std::vector<int64_t>{6});
}

TEST_F(EngineFeed, WireFormatHeader_ItemsInTheEnvelope) {
  write("a", "p1", 1, t0 + 2s);
  auto p = feed({{"x-ms-cosmos-changefeed-wire-format-version", "2021-09-15"}},
                t0 + 3s);
  ASSERT_EQ(p.status, 200) << p.error;
  ASSERT_EQ(p.docs.size(), 1u);
  const auto& item = p.docs[0];
  EXPECT_EQ(item["current"]["id"], "a");
  EXPECT_EQ(item["metadata"]["lsn"], 1);
  EXPECT_EQ(item["metadata"]["crts"],
            std::chrono::duration_cast<std::chrono::seconds>(
                (t0 + 2s).time_since_epoch())
                .count());
}

// -- scope
// --------------------------------------------------------------------------

TEST_F(EngineFeed, PartitionKeyScope_OnlyThatPartition) {
  write("a", "p1");
  write("b", "p2");
  write("c", "p1");
  write("d", "p3");
  auto p = feed({{"x-ms-documentdb-partitionkey", R"(["p1"])"}});
  ASSERT_EQ(p.status, 200) << p.error;
  EXPECT_EQ(p.ids, (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(p.etag, "\"3\"");
  // Its 304 still carries the collection's watermark.
  auto done = feed({{"x-ms-documentdb-partitionkey", R"(["p1"])"},
                    {"if-none-match", p.etag}});
  EXPECT_EQ(done.status, 304);
  EXPECT_EQ(done.etag, "\"4\"");
}

TEST_F(EngineFeed, HierarchicalKeyPrefix_OnlyThatPrefix) {
  json coll{{"id", "h"},
            {"partitionKey",
             {{"paths", {"/a", "/b"}}, {"kind", "MultiHash"}, {"version", 2}}}};
  ASSERT_EQ(send(west, "POST", "/dbs/d/colls", coll.dump()).status, 201);
  auto put = [&](const std::string& id, const std::string& a,
                 const std::string& b) {
    auto res = send(west, "POST", "/dbs/d/colls/h/docs",
                    json{{"id", id}, {"a", a}, {"b", b}}.dump(),
                    {{"x-ms-documentdb-partitionkey", json{a, b}.dump()}});
    ASSERT_EQ(res.status, 201) << res.body;
  };
  put("1", "x", "1");
  put("2", "y", "1");
  put("3", "x", "2");
  auto res = send(west, "GET", "/dbs/d/colls/h/docs", {},
                  {{"a-im", "Incremental Feed"},
                   {"x-ms-documentdb-partitionkey", R"(["x"])"}});
  ASSERT_EQ(res.status, 200) << res.body;
  std::vector<std::string> ids;
  auto body = json::parse(res.body);
  for (const auto& d : body["Documents"])
    ids.push_back(d["id"]);
  EXPECT_EQ(ids, (std::vector<std::string>{"1", "3"}));
}

TEST_F(EngineFeed, RangeId_OnlyThatRange_UnknownIs400) {
  std::map<std::string, std::vector<std::string>> by_range;
  for (int i = 0; i < 20; ++i) {
    auto id = "d" + std::to_string(i);
    auto res = write(id, "k" + std::to_string(i));
    by_range[res.get("x-ms-documentdb-partitionkeyrangeid")].push_back(id);
  }
  ASSERT_EQ(by_range.size(), 2u);
  for (const auto& [range, ids] : by_range) {
    auto p = feed({{"x-ms-documentdb-partitionkeyrangeid", range}});
    ASSERT_EQ(p.status, 200) << p.error;
    EXPECT_EQ(p.ids, ids) << range;
    EXPECT_EQ(p.raw.get("x-ms-documentdb-partitionkeyrangeid"), range);
  }
  auto unknown = feed({{"x-ms-documentdb-partitionkeyrangeid", "42"}});
  EXPECT_EQ(unknown.status, 400);
  EXPECT_NE(unknown.error.find("42"), std::string::npos) << unknown.error;
}

TEST_F(EngineFeed, EpkSubRange_OnlyTheDocumentsInIt) {
  for (int i = 0; i < 20; ++i)
    write("d" + std::to_string(i), "k" + std::to_string(i));
  auto r = ranges();
  const auto [min, max] = r.at("0");
  auto all = feed({{"x-ms-documentdb-partitionkeyrangeid", "0"}});
  ASSERT_GE(all.ids.size(), 4u);
  // A boundary between range 0's documents: where a split puts it (the
  // median); merged back, the range reads its two halves by EPK.
  auto children = eng->split_range("d", "c", "0");
  ASSERT_TRUE(children) << children.error().what;
  auto mid = ranges().at((*children)[0]).second;
  auto merged = eng->merge_ranges("d", "c", (*children)[0], (*children)[1]);
  ASSERT_TRUE(merged) << merged.error().what;
  auto half = [&](const std::string& from, const std::string& to) {
    return feed({{"x-ms-documentdb-partitionkeyrangeid", *merged},
                 {"x-ms-read-key-type", "EffectivePartitionKeyRange"},
                 {"x-ms-start-epk", from},
                 {"x-ms-end-epk", to}});
  };
  auto left = half(min, mid);
  auto right = half(mid, max);
  ASSERT_EQ(left.status, 200) << left.error;
  ASSERT_EQ(right.status, 200) << right.error;
  EXPECT_FALSE(left.ids.empty());
  EXPECT_FALSE(right.ids.empty());
  auto both = left.ids;
  both.insert(both.end(), right.ids.begin(), right.ids.end());
  EXPECT_EQ(sorted(both), sorted(all.ids));
  // Hex digits in lower case mean the same.
  auto lower = [](std::string x) {
    for (auto& c : x)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return x;
  };
  EXPECT_EQ(half(lower(mid), lower(max)).ids, right.ids);
}

TEST_F(EngineFeed, EpkHeaders_BadCombinations_400NamingTheHeader) {
  write("a", "p1");
  auto r = ranges();
  const auto& [min, max] = r.at("1");
  auto with = [&](headers_t h) {
    h.emplace("x-ms-documentdb-partitionkeyrangeid", "1");
    return feed(h);
  };
  auto expect_400 = [](const feed_page& p, const std::string& names) {
    EXPECT_EQ(p.status, 400) << p.error;
    EXPECT_NE(p.error.find(names), std::string::npos)
        << "want '" << names << "' in " << p.error;
  };
  // No read-key type, or a wrong one.
  expect_400(with({{"x-ms-start-epk", min}, {"x-ms-end-epk", max}}),
             "x-ms-read-key-type");
  expect_400(with({{"x-ms-start-epk", min},
                   {"x-ms-end-epk", max},
                   {"x-ms-read-key-type", "PartitionKey"}}),
             "x-ms-read-key-type");
  // One bound without the other.
  expect_400(with({{"x-ms-start-epk", min},
                   {"x-ms-read-key-type", "EffectivePartitionKeyRange"}}),
             "x-ms-end-epk");
  // Outside the addressed range (range 1 starts at `min`; "" is range 0's).
  expect_400(with({{"x-ms-start-epk", ""},
                   {"x-ms-end-epk", max},
                   {"x-ms-read-key-type", "EffectivePartitionKeyRange"}}),
             "not inside partition key range '1'");
  // Empty, inverted or not hex.
  expect_400(with({{"x-ms-start-epk", max},
                   {"x-ms-end-epk", min},
                   {"x-ms-read-key-type", "EffectivePartitionKeyRange"}}),
             "x-ms-start-epk");
  expect_400(with({{"x-ms-start-epk", min},
                   {"x-ms-end-epk", "XYZ"},
                   {"x-ms-read-key-type", "EffectivePartitionKeyRange"}}),
             "x-ms-end-epk");
  // Without a range id.
  expect_400(feed({{"x-ms-start-epk", min},
                   {"x-ms-end-epk", max},
                   {"x-ms-read-key-type", "EffectivePartitionKeyRange"}}),
             "x-ms-documentdb-partitionkeyrangeid");
  // The whole range by EPK, lower-case type name: fine.
  auto ok = with({{"x-ms-start-epk", min},
                  {"x-ms-end-epk", max},
                  {"x-ms-read-key-type", "effectivepartitionkeyrange"}});
  EXPECT_NE(ok.status, 400) << ok.error;
}

// -- modes
// ----------------------------------------------------------------------------

TEST_F(EngineFeed, AllVersionsAndDeletes_400SaysItIsNotSupported) {
  write("a", "p1");
  auto avad = feed({{"a-im", "Full-Fidelity Feed"}});
  EXPECT_EQ(avad.status, 400);
  EXPECT_NE(avad.error.find("Full-Fidelity Feed"), std::string::npos)
      << avad.error;
  EXPECT_NE(avad.error.find("not supported"), std::string::npos) << avad.error;
  auto other = feed({{"a-im", "Everything"}});
  EXPECT_EQ(other.status, 400);
  EXPECT_NE(other.error.find("Everything"), std::string::npos) << other.error;
  // The mode compares case-insensitively (REST's own docs write "feed").
  EXPECT_EQ(feed({{"a-im", "Incremental feed"}}).status, 200);
  EXPECT_EQ(feed({{"a-im", "INCREMENTAL FEED"}}).status, 200);
  // A-IM on a write is refused, the write not applied.
  auto post = send(west, "POST", "/dbs/d/colls/c/docs",
                   json{{"id", "z"}, {"pk", "p1"}}.dump(),
                   {{"x-ms-documentdb-partitionkey", R"(["p1"])"},
                    {"a-im", "Incremental Feed"}});
  EXPECT_EQ(post.status, 400) << post.body;
  EXPECT_EQ(feed().ids, std::vector<std::string>{"a"});
}

TEST_F(EngineFeed, WithoutAIm_ThePlainReadFeed) {
  write("a", "p1");
  write("a", "p1", 2, t0, "PUT");
  write("b", "p2");
  auto res = send(west, "GET", "/dbs/d/colls/c/docs");
  ASSERT_EQ(res.status, 200) << res.body;
  auto body = json::parse(res.body);
  ASSERT_EQ(body["Documents"].size(), 2u);
  EXPECT_EQ(body["Documents"][0]["id"], "a") << "creation order, not changes";
  EXPECT_FALSE(body["Documents"][0].contains("_lsn"));
  EXPECT_TRUE(res.get("etag").empty());
}

// -- regions
// --------------------------------------------------------------------------

TEST_F(EngineFeed, LaggingRegion_ServesUpToItsWatermark_OlderVersions) {
  engine_options o;
  o.replication_lag = 5s;
  make(o);
  write("a", "p1", 1, t0);             // change 1, East sees it at t0 + 5 s
  write("a", "p1", 2, t0 + 1s, "PUT"); // change 2, at t0 + 6 s
  // Before anything arrived: nothing, at watermark 0.
  auto early = feed({}, t0 + 1s, east);
  EXPECT_EQ(early.status, 304);
  EXPECT_EQ(early.etag, "\"0\"");
  // The writer sees both at once.
  auto at_west = feed({}, t0 + 1s, west);
  EXPECT_EQ(at_west.lsns, std::vector<int64_t>{2});
  EXPECT_EQ(at_west.docs[0]["n"], 2);
  // East between the two: the older version, and never an etag above 1.
  auto mid = feed({}, t0 + 5500ms, east);
  ASSERT_EQ(mid.status, 200) << mid.error;
  EXPECT_EQ(mid.lsns, std::vector<int64_t>{1});
  EXPECT_EQ(mid.docs[0]["n"], 1);
  EXPECT_EQ(mid.etag, "\"1\"");
  auto caught_up = feed({{"if-none-match", "\"1\""}}, t0 + 5500ms, east);
  EXPECT_EQ(caught_up.status, 304);
  EXPECT_EQ(caught_up.etag, "\"1\"");
  // A position from the writer, above East's watermark: 304 with the
  // watermark (the client keeps its own, larger one).
  auto ahead = feed({{"if-none-match", at_west.etag}}, t0 + 5500ms, east);
  EXPECT_EQ(ahead.status, 304);
  EXPECT_EQ(ahead.etag, "\"1\"");
  // Then the update arrives.
  auto later = feed({{"if-none-match", mid.etag}}, t0 + 6s, east);
  ASSERT_EQ(later.status, 200) << later.error;
  EXPECT_EQ(later.lsns, std::vector<int64_t>{2});
  EXPECT_EQ(later.docs[0]["n"], 2);
}

TEST_F(EngineFeed, MultiWrite_TheWatermarkWaitsForAnotherRegionsEarlierChange) {
  engine_options o;
  o.multi_write = true;
  o.replication_lag = 5s;
  make(o);
  write("from-west", "p1", 0, t0, "POST", west); // change 1
  write("from-east", "p2", 0, t0, "POST", east); // change 2
  // East reads its own write at once, but its feed may not pass change 1.
  auto read = send(east, "GET", "/dbs/d/colls/c/docs/from-east", {},
                   {{"x-ms-documentdb-partitionkey", R"(["p2"])"}}, t0 + 1s);
  EXPECT_EQ(read.status, 200);
  auto p = feed({}, t0 + 1s, east);
  EXPECT_EQ(p.status, 304);
  EXPECT_EQ(p.etag, "\"0\"");
  p = feed({}, t0 + 5s, east);
  EXPECT_EQ(p.ids, (std::vector<std::string>{"from-west", "from-east"}));
}

TEST_F(EngineFeed, RegionLag_OnlyThatRegionLags_ReadsFeedsAndSessions) {
  engine_options o;
  o.replication_lag = 1s;
  make(o);
  write("before", "p1", 0, t0); // committed before the region lag
  ASSERT_TRUE(eng->set_region_lag(east, 5000ms));
  EXPECT_EQ(eng->region_lags(),
            (std::map<std::string, std::chrono::milliseconds>{{east, 5000ms}}));
  auto w = write("after", "p1", 0, t0 + 1s); // East sees it at t0 + 7 s
  auto token = w.get("x-ms-session-token");
  auto read = [&](const std::string& region, const std::string& id,
                  engine::clock::time_point now, headers_t h = {}) {
    h["x-ms-documentdb-partitionkey"] = R"(["p1"])";
    return send(region, "GET", "/dbs/d/colls/c/docs/" + id, {}, h, now);
  };
  // The earlier write kept the lag of its time.
  EXPECT_EQ(read(east, "before", t0 + 1s).status, 200);
  // North has it after the account lag, East 5 s later still.
  EXPECT_EQ(read(north, "after", t0 + 2s).status, 200);
  EXPECT_EQ(read(east, "after", t0 + 2s).status, 404);
  EXPECT_EQ(read(east, "after", t0 + 6900ms).status, 404);
  EXPECT_EQ(read(east, "after", t0 + 7s).status, 200);
  // Session tokens follow: East cannot serve the writer's token yet.
  auto session = read(
      east, "after", t0 + 2s,
      {{"x-ms-session-token", token}, {"x-ms-consistency-level", "Session"}});
  EXPECT_EQ(session.status, 404);
  EXPECT_EQ(session.get("x-ms-substatus"), "1002");
  EXPECT_EQ(read(east, "after", t0 + 7s,
                 {{"x-ms-session-token", token},
                  {"x-ms-consistency-level", "Session"}})
                .status,
            200);
  // So does the feed.
  EXPECT_EQ(feed({}, t0 + 2s, north).etag, "\"2\"");
  EXPECT_EQ(feed({}, t0 + 2s, east).etag, "\"1\"");
  EXPECT_EQ(feed({}, t0 + 7s, east).etag, "\"2\"");
  // Back to none.
  ASSERT_TRUE(eng->set_region_lag(east, 0ms));
  EXPECT_TRUE(eng->region_lags().empty());
  write("third", "p1", 0, t0 + 8s);
  EXPECT_EQ(read(east, "third", t0 + 9s).status, 200);
}

TEST_F(EngineFeed, RegionLag_UnknownRegionOrNegative_ErrorNamesIt) {
  auto r = eng->set_region_lag("Mars", 10ms);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().what.find("Mars"), std::string::npos) << r.error().what;
  EXPECT_EQ(r.error().what.rfind("region:", 0), 0u) << r.error().what;
  auto n = eng->set_region_lag(east, -1ms);
  ASSERT_FALSE(n);
  EXPECT_EQ(n.error().what.rfind("lag_ms:", 0), 0u) << n.error().what;
}

TEST_F(EngineFeed, RegionLag_LongerThanThePruneMargin_NothingFoldedTooSoon) {
  // East sees writes a minute late; the engine folds a version away 10 s
  // after its successor reached every region. East must still find the
  // versions it has not got past.
  ASSERT_TRUE(eng->set_region_lag(east, 60s));
  auto first = write("a", "p1", 1, t0); // East: t0 + 60 s
  write("a", "p1", 2, t0 + 30s, "PUT"); // East: t0 + 90 s
  write("a", "p1", 3, t0 + 45s, "PUT"); // folds what may be folded
  write("b", "p2", 1, t0 + 45s);
  // East's session progress still stops before the first write: a read
  // there with its token is a session miss, not a plain not-found.
  auto miss = send(east, "GET", "/dbs/d/colls/c/docs/a", {},
                   {{"x-ms-documentdb-partitionkey", R"(["p1"])"},
                    {"x-ms-session-token", first.get("x-ms-session-token")},
                    {"x-ms-consistency-level", "Session"}},
                   t0 + 50s);
  EXPECT_EQ(miss.status, 404);
  EXPECT_EQ(miss.get("x-ms-substatus"), "1002") << miss.body;
  auto read = send(east, "GET", "/dbs/d/colls/c/docs/a", {},
                   {{"x-ms-documentdb-partitionkey", R"(["p1"])"}}, t0 + 70s);
  ASSERT_EQ(read.status, 200) << read.body;
  EXPECT_EQ(json::parse(read.body)["n"], 1);
  auto p = feed({}, t0 + 70s, east);
  ASSERT_EQ(p.status, 200) << p.error;
  EXPECT_EQ(p.ids, std::vector<std::string>{"a"});
  EXPECT_EQ(p.docs[0]["n"], 1);
  EXPECT_EQ(p.etag, "\"1\"");
  // Long after, everything has arrived and old versions may go.
  write("a", "p1", 4, t0 + 200s, "PUT");
  p = feed({}, t0 + 261s, east);
  EXPECT_EQ(p.ids, (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(p.docs[1]["n"], 4);
}

// -- splits and merges
// ------------------------------------------------------------------

TEST_F(EngineFeed,
       Split_OldRangeIs410_ItsEtagOnEachChildLosesAndRepeatsNothing) {
  std::vector<std::string> in_zero;
  for (int i = 0; i < 30; ++i) {
    auto id = "d" + std::to_string(i);
    if (write(id, "k" + std::to_string(i))
            .get("x-ms-documentdb-partitionkeyrangeid") == "0")
      in_zero.push_back(id);
  }
  ASSERT_GE(in_zero.size(), 6u);
  // Half of range 0 read, then it splits.
  auto first = feed({{"x-ms-documentdb-partitionkeyrangeid", "0"},
                     {"x-ms-max-item-count", "3"}});
  ASSERT_EQ(first.ids,
            std::vector<std::string>(in_zero.begin(), in_zero.begin() + 3));
  auto children = eng->split_range("d", "c", "0");
  ASSERT_TRUE(children) << children.error().what;
  // Later changes in the parent's span, on both sides.
  for (int i = 30; i < 60; ++i) {
    auto id = "d" + std::to_string(i);
    auto r = write(id, "k" + std::to_string(i))
                 .get("x-ms-documentdb-partitionkeyrangeid");
    if (r == (*children)[0] || r == (*children)[1]) in_zero.push_back(id);
  }
  auto gone = feed({{"x-ms-documentdb-partitionkeyrangeid", "0"},
                    {"if-none-match", first.etag}});
  EXPECT_EQ(gone.status, 410);
  EXPECT_EQ(gone.substatus, 1002);
  std::vector<std::string> rest;
  for (const auto& child : *children) {
    auto ids =
        drain({{"x-ms-documentdb-partitionkeyrangeid", child}}, first.etag, 2);
    EXPECT_FALSE(ids.empty()) << child;
    rest.insert(rest.end(), ids.begin(), ids.end());
  }
  EXPECT_EQ(sorted(rest), sorted(std::vector<std::string>(in_zero.begin() + 3,
                                                          in_zero.end())));
}

TEST_F(EngineFeed, Merge_ChildEtagOnTheMergedRangeWithEpkHeaders) {
  std::map<std::string, std::vector<std::string>> by_range;
  for (int i = 0; i < 20; ++i) {
    auto id = "d" + std::to_string(i);
    by_range[write(id, "k" + std::to_string(i))
                 .get("x-ms-documentdb-partitionkeyrangeid")]
        .push_back(id);
  }
  auto before = ranges();
  ASSERT_EQ(before.size(), 2u);
  auto zero_etag = feed({{"x-ms-documentdb-partitionkeyrangeid", "0"},
                         {"x-ms-max-item-count", "2"}})
                       .etag;
  auto pk_etag = send(west, "GET", "/dbs/d/colls/c/pkranges").get("etag");
  auto merged = eng->merge_ranges("d", "c", "1", "0"); // either order
  ASSERT_TRUE(merged) << merged.error().what;
  // The merged range replaces both, with both as parents.
  auto after = ranges();
  ASSERT_EQ(after.size(), 1u);
  ASSERT_EQ(after.count(*merged), 1u);
  EXPECT_EQ(after[*merged].first, "");
  EXPECT_EQ(after[*merged].second, "FF");
  auto inc = send(west, "GET", "/dbs/d/colls/c/pkranges", {},
                  {{"a-im", "Incremental Feed"}, {"if-none-match", pk_etag}});
  ASSERT_EQ(inc.status, 200) << inc.body;
  auto listed = json::parse(inc.body)["PartitionKeyRanges"];
  ASSERT_EQ(listed.size(), 1u) << inc.body;
  EXPECT_EQ(listed[0]["id"], *merged);
  EXPECT_EQ(listed[0]["parents"], (json{"0", "1"}));
  EXPECT_NE(inc.get("etag"), pk_etag);
  // Both old ids are gone.
  for (const char* old : {"0", "1"}) {
    auto g = feed({{"x-ms-documentdb-partitionkeyrangeid", old}});
    EXPECT_EQ(g.status, 410) << old;
    EXPECT_EQ(g.substatus, 1002) << old;
  }
  // Range 0's reader goes on in the merged range, narrowed to range 0's
  // span, from its etag: the rest of range 0 and nothing of range 1.
  write("new-in-1", "k1000"); // in range 0's span or not: see `full0`
  const auto& [min0, max0] = before.at("0");
  auto rest = drain({{"x-ms-documentdb-partitionkeyrangeid", *merged},
                     {"x-ms-read-key-type", "EffectivePartitionKeyRange"},
                     {"x-ms-start-epk", min0},
                     {"x-ms-end-epk", max0}},
                    zero_etag, 3);
  std::vector<std::string> want(by_range["0"].begin() + 2, by_range["0"].end());
  auto full0 = drain({{"x-ms-documentdb-partitionkeyrangeid", *merged},
                      {"x-ms-read-key-type", "EffectivePartitionKeyRange"},
                      {"x-ms-start-epk", min0},
                      {"x-ms-end-epk", max0}},
                     {});
  if (std::find(full0.begin(), full0.end(), "new-in-1") != full0.end())
    want.push_back("new-in-1");
  EXPECT_EQ(rest, want);
  auto w = write("after-merge", "k1");
  EXPECT_EQ(w.get("x-ms-documentdb-partitionkeyrangeid"), *merged);
}

TEST_F(EngineFeed, Merge_Errors_NameTheField) {
  auto same = eng->merge_ranges("d", "c", "0", "0");
  ASSERT_FALSE(same);
  EXPECT_EQ(same.error().what.rfind("ranges:", 0), 0u) << same.error().what;
  auto unknown = eng->merge_ranges("d", "c", "0", "9");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().what.find("'9'"), std::string::npos);
  EXPECT_EQ(eng->merge_ranges("x", "c", "0", "1").error().what.rfind("db:", 0),
            0u);
  EXPECT_EQ(
      eng->merge_ranges("d", "x", "0", "1").error().what.rfind("coll:", 0), 0u);
  // Not adjacent: after a split of 0 into 2 and 3, 2 and 1 are apart.
  auto children = eng->split_range("d", "c", "0");
  ASSERT_TRUE(children);
  auto apart = eng->merge_ranges("d", "c", (*children)[0], "1");
  ASSERT_FALSE(apart);
  EXPECT_NE(apart.error().what.find("not adjacent"), std::string::npos)
      << apart.error().what;
  auto gone = eng->merge_ranges("d", "c", "0", "1");
  ASSERT_FALSE(gone);
  EXPECT_NE(gone.error().what.find("gone"), std::string::npos);
  // The children merge back.
  EXPECT_TRUE(eng->merge_ranges("d", "c", (*children)[0], (*children)[1]));
}

TEST_F(EngineFeed, Merge_TheMergedRangeStartsAtTheLargerParentLsn) {
  // Five writes to one range, one to the other: the merged range's session
  // LSN must cover a token of either.
  std::map<std::string, std::string> token_of;
  std::map<std::string, int64_t> lsn_of;
  auto note = [&](const http_response& w) {
    auto range = w.get("x-ms-documentdb-partitionkeyrangeid");
    token_of[range] = w.get("x-ms-session-token");
    lsn_of[range] = std::stoll(w.get("lsn"));
    return range;
  };
  std::pair<std::string, std::string> in_zero; // (id, pk) of a document
  for (int i = 0; i < 12; ++i) {
    auto id = "d" + std::to_string(i);
    auto pk = "k" + std::to_string(i);
    if (note(write(id, pk)) == "0") in_zero = {id, pk};
  }
  ASSERT_EQ(lsn_of.size(), 2u);
  // Range 0 well ahead of range 1.
  for (int i = 0; i < 8; ++i)
    note(write(in_zero.first, in_zero.second, i, t0, "PUT"));
  ASSERT_GT(lsn_of["0"], lsn_of["1"]);
  auto merged = eng->merge_ranges("d", "c", "0", "1");
  ASSERT_TRUE(merged);
  for (const auto& [range, token] : token_of) {
    auto p = feed({{"x-ms-documentdb-partitionkeyrangeid", *merged},
                   {"x-ms-session-token", token},
                   {"x-ms-consistency-level", "Session"}});
    EXPECT_EQ(p.status, 200) << range << ": " << p.error;
  }
  auto p = feed({{"x-ms-documentdb-partitionkeyrangeid", *merged}});
  auto max_lsn = std::max(lsn_of["0"], lsn_of["1"]);
  EXPECT_EQ(p.raw.get("x-ms-session-token"),
            *merged + ":0#" + std::to_string(max_lsn));
}

// -- faults
// ------------------------------------------------------------------------------

TEST_F(EngineFeed, FaultRules_AFeedReadIsOperationFeedOfItsRange) {
  write("a", "p1");
  fault_rule rule;
  rule.operation = "feed";
  rule.collection = "dbs/d/colls/c";
  rule.range_id = "1";
  rule.status = 503;
  auto id = eng->add_checked_fault(rule);
  ASSERT_TRUE(id) << id.error().what;
  EXPECT_EQ(feed({{"x-ms-documentdb-partitionkeyrangeid", "1"}}).status, 503);
  auto zero = feed({{"x-ms-documentdb-partitionkeyrangeid", "0"}});
  EXPECT_NE(zero.status, 503);
  // A collection-wide feed is for every range, so range 1's rule matches.
  EXPECT_EQ(feed().status, 503);
  eng->remove_fault(*id);
  // A rule for reads does not match the feed.
  rule.operation = "read";
  rule.range_id.clear();
  auto reads = eng->add_checked_fault(rule);
  ASSERT_TRUE(reads);
  EXPECT_EQ(feed().status, 200);
  eng->remove_fault(*reads);
  // The per-range counters count the feed under its range.
  eng->reset_counters();
  feed({{"x-ms-documentdb-partitionkeyrangeid", "1"}});
  auto counts = eng->counters_by_range();
  auto key = range_key{west, "dbs/d/colls/c", "1"};
  ASSERT_EQ(counts.count(key), 1u);
  EXPECT_EQ(counts[key].by_status.size(), 1u);
}

} // namespace
