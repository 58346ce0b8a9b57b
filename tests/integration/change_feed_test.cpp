// The change feed through the engine's public API against the embedded
// emulator: every start position, a partition key and a feed range, splits
// and merges while a consumer reads, a resume in a fresh engine, a region
// failure and a lagging region, and bad input (a cut continuation too)
// refused before any trip. Each test reads like a consumer: page after
// page, applying what comes, keeping the continuation, and checks that
// every change arrives and none twice.

#include "tests/integration/engine_fixture.hpp"

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace {

using namespace georoute;
using namespace georoute::test;
using namespace std::chrono_literals;
using json = nlohmann::json;

const std::string link = "dbs/d/colls/c";

class ChangeFeed : public engine_test {
protected:
  /// Writes document `id` in partition `pk` with value `n`.
  void put(const std::string& id, const std::string& pk, int n = 1) {
    data_request r;
    r.op = data_op::upsert;
    r.collection_link = link;
    r.body = json{{"id", id}, {"pk", pk}, {"n", n}}.dump();
    r.options.partition_key_json = json::array({pk}).dump();
    auto w = ask<data_response>(eng->router(), 10s, route_atom_v, r);
    ASSERT_TRUE(w) << describe(w.error());
  }

  caf::expected<change_feed_page> read(const change_feed_request& req) {
    return ask<change_feed_page>(eng->router(), 30s, route_atom_v, req);
  }

  /// What a consumer saw: every (id, n) in order, and the pages.
  struct consumer {
    explicit consumer(change_feed_request r) : req(std::move(r)) {}
    change_feed_request req;
    std::vector<std::pair<std::string, int>> seen;
    int pages = 0;
    uint32_t ranges = 0;
    uint32_t refreshes = 0; ///< routing-map refreshes, as the pages count them
  };

  /// Reads pages until one is caught up (at most `limit`).
  void drain(consumer& c, int limit = 200) {
    for (int i = 0; i < limit; ++i) {
      auto p = read(c.req);
      ASSERT_TRUE(p) << describe(p.error());
      ASSERT_FALSE(p->continuation.empty());
      c.req.continuation = p->continuation;
      c.ranges = p->ranges;
      c.refreshes += p->diag.metadata_refreshes;
      ++c.pages;
      auto docs = json::parse(p->documents);
      ASSERT_TRUE(docs.is_array());
      EXPECT_EQ(docs.size(), p->count);
      for (const auto& d : docs)
        c.seen.emplace_back(d["id"].get<std::string>(), d["n"].get<int>());
      if (p->caught_up) {
        EXPECT_EQ(p->count, 0u);
        return;
      }
    }
    FAIL() << "the feed never caught up";
  }

  static std::multiset<std::string> ids(const consumer& c) {
    std::multiset<std::string> out;
    for (const auto& [id, n] : c.seen)
      out.insert(id);
    return out;
  }

  static change_feed_request whole(feed_start start = feed_start::beginning) {
    change_feed_request r;
    r.collection_link = link;
    r.start = start;
    r.max_item_count = 7;
    return r;
  }

  uint64_t attempts() {
    auto s = ask<router_stats>(eng->router(), 5s, stats_atom_v);
    return s ? s->attempts : 0;
  }
};

std::set<std::string> expected_ids(int n, const char* prefix = "d") {
  std::set<std::string> out;
  for (int i = 0; i < n; ++i)
    out.insert(prefix + std::to_string(i));
  return out;
}

TEST_F(ChangeFeed, FromTheBeginning_EveryDocumentOnce_ThenOnlyWhatChanged) {
  for (int i = 0; i < 40; ++i)
    put("d" + std::to_string(i), "p" + std::to_string(i % 9));
  consumer c{whole()};
  drain(c);
  auto got = ids(c);
  EXPECT_EQ(got.size(), 40u) << "a document came twice or was lost";
  EXPECT_EQ(std::set<std::string>(got.begin(), got.end()), expected_ids(40));
  EXPECT_GT(c.pages, 40 / 7); // paged by max_item_count
  // Two updates and one new document: exactly those, at their new version.
  put("d3", "p3", 2);
  put("d17", "p8", 2);
  put("new", "p1", 5);
  c.seen.clear();
  drain(c);
  std::map<std::string, int> latest(c.seen.begin(), c.seen.end());
  EXPECT_EQ(c.seen.size(), 3u);
  EXPECT_EQ(latest,
            (std::map<std::string, int>{{"d3", 2}, {"d17", 2}, {"new", 5}}));
}

TEST_F(ChangeFeed, FromNow_SeesOnlyLaterChanges) {
  put("old", "p0");
  consumer c{whole(feed_start::now)};
  drain(c);
  EXPECT_TRUE(c.seen.empty());
  put("later", "p1");
  drain(c);
  ASSERT_EQ(c.seen.size(), 1u);
  EXPECT_EQ(c.seen[0].first, "later");
}

TEST_F(ChangeFeed, FromATime_SeesWhatWasWrittenSince) {
  put("before", "p0");
  // The service's precision is a second: start well after the first write.
  std::this_thread::sleep_for(1100ms);
  auto t = std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
               .count();
  std::this_thread::sleep_for(1100ms);
  put("after", "p1");
  auto req = whole(feed_start::time);
  req.start_time_ms = t;
  consumer c{req};
  drain(c);
  ASSERT_EQ(c.seen.size(), 1u);
  EXPECT_EQ(c.seen[0].first, "after");
}

TEST_F(ChangeFeed, OnePartitionKey_OnlyItsDocuments) {
  for (int i = 0; i < 12; ++i)
    put("d" + std::to_string(i),
        i % 3 == 0 ? "pick" : "other" + std::to_string(i));
  auto req = whole();
  req.partition_key_json = R"(["pick"])";
  consumer c{req};
  drain(c);
  EXPECT_EQ(ids(c), (std::multiset<std::string>{"d0", "d3", "d6", "d9"}));
  EXPECT_EQ(c.ranges, 1u);
}

TEST_F(ChangeFeed, FeedRanges_OneConsumerEach_TogetherEverythingOnce) {
  for (int i = 0; i < 30; ++i)
    put("d" + std::to_string(i), "p" + std::to_string(i));
  auto ranges = ask<std::vector<partition_key_range>>(eng->router(), 10s,
                                                      feed_ranges_atom_v, link);
  ASSERT_TRUE(ranges) << describe(ranges.error());
  ASSERT_GE(ranges->size(), 2u);
  std::multiset<std::string> all;
  for (const auto& r : *ranges) {
    auto req = whole();
    req.range_min = r.min_inclusive;
    req.range_max = r.max_exclusive;
    consumer c{req};
    drain(c);
    EXPECT_FALSE(c.seen.empty()) << "range " << r.id << " had nothing";
    for (const auto& id : ids(c))
      all.insert(id);
  }
  EXPECT_EQ(all.size(), 30u);
  EXPECT_EQ(std::set<std::string>(all.begin(), all.end()), expected_ids(30));
}

TEST_F(ChangeFeed, SplitWhileReading_NothingLostNothingRepeated) {
  for (int i = 0; i < 50; ++i)
    put("d" + std::to_string(i), "p" + std::to_string(i));
  consumer c{whole()};
  for (int i = 0; i < 3; ++i) { // part of the feed, then the split
    auto p = read(c.req);
    ASSERT_TRUE(p) << describe(p.error());
    c.req.continuation = p->continuation;
    for (const auto& d : json::parse(p->documents))
      c.seen.emplace_back(d["id"].get<std::string>(), 1);
  }
  EXPECT_EQ(c.seen.size(), 21u);
  for (auto id : {"0", "1"}) {
    auto split = emu->control().split_range("d", "c", id);
    ASSERT_TRUE(split) << split.error().what;
  }
  for (int i = 50; i < 60; ++i) // written after the split
    put("d" + std::to_string(i), "p" + std::to_string(i));
  drain(c);
  auto got = ids(c);
  EXPECT_EQ(got.size(), 60u) << "a document came twice or was lost";
  EXPECT_EQ(std::set<std::string>(got.begin(), got.end()), expected_ids(60));
  EXPECT_EQ(c.ranges, 4u) << "the continuation tracks each child";
  // The first read of a split range meets 410/1002 and the router refreshes
  // the map, which then holds both splits: every later cursor is laid on it
  // before its read. One refresh in all (the executor forces none).
  EXPECT_EQ(c.refreshes, 1u);
}

TEST_F(ChangeFeed, MergeWhileReading_EachPartFromItsOwnPosition) {
  for (int i = 0; i < 40; ++i)
    put("d" + std::to_string(i), "p" + std::to_string(i));
  consumer c{whole()};
  for (int i = 0; i < 2; ++i) { // one page from each range
    auto p = read(c.req);
    ASSERT_TRUE(p) << describe(p.error());
    c.req.continuation = p->continuation;
    for (const auto& d : json::parse(p->documents))
      c.seen.emplace_back(d["id"].get<std::string>(), 1);
  }
  ASSERT_EQ(c.seen.size(), 14u);
  auto merged = emu->control().merge_ranges("d", "c", "0", "1");
  ASSERT_TRUE(merged) << merged.error().what;
  for (int i = 40; i < 45; ++i) // written after the merge
    put("d" + std::to_string(i), "p" + std::to_string(i));
  drain(c);
  auto got = ids(c);
  EXPECT_EQ(got.size(), 45u) << "a document came twice or was lost";
  EXPECT_EQ(std::set<std::string>(got.begin(), got.end()), expected_ids(45));
  // Both parts stay apart, each with its own position, in the one range.
  EXPECT_EQ(c.ranges, 2u);
}

TEST_F(ChangeFeed, ResumedInAFreshEngine_GoesOnWhereTheOldOneStopped) {
  for (int i = 0; i < 20; ++i)
    put("d" + std::to_string(i), "p" + std::to_string(i));
  consumer c{whole()};
  drain(c);
  ASSERT_EQ(c.seen.size(), 20u);
  // A new process: a new engine, the continuation carried over.
  eng->stop();
  eng.reset();
  engine_options eo;
  auto e = engine::start(*sys, settings, eo);
  ASSERT_TRUE(e) << sys->render(e.error());
  eng.emplace(std::move(*e));
  put("d20", "p20");
  c.seen.clear();
  drain(c);
  ASSERT_EQ(c.seen.size(), 1u);
  EXPECT_EQ(c.seen[0].first, "d20");
}

TEST_F(ChangeFeed, FeedReadGets503_FailsOverAndKeepsItsPosition) {
  for (int i = 0; i < 10; ++i)
    put("d" + std::to_string(i), "p" + std::to_string(i));
  consumer c{whole()};
  drain(c);
  ASSERT_EQ(c.seen.size(), 10u);
  put("d10", "p10");
  emulator::fault_rule f;
  f.region = "West US";
  f.operation = "feed";
  f.status = 503;
  emu->control().add_fault(f);
  c.seen.clear();
  auto p = read(c.req);
  ASSERT_TRUE(p) << describe(p.error());
  bool failed_over = false;
  for (size_t i = 0; i + 1 < p->diag.attempts.size(); ++i)
    if (p->diag.attempts[i].region == "West US" &&
        p->diag.attempts[i].status == 503 &&
        p->diag.attempts[i + 1].region != "West US")
      failed_over = true;
  EXPECT_TRUE(failed_over) << "no read moved away from West US's 503";
  c.req.continuation = p->continuation;
  for (const auto& d : json::parse(p->documents))
    c.seen.emplace_back(d["id"].get<std::string>(), 1);
  drain(c);
  ASSERT_EQ(c.seen.size(), 1u);
  EXPECT_EQ(c.seen[0].first, "d10");
}

TEST_F(ChangeFeed, LaggingRegion_PositionNeverMovesBack_NothingRepeated) {
  emu->control().set_replication_lag(1500ms);
  for (int i = 0; i < 10; ++i)
    put("d" + std::to_string(i), "p" + std::to_string(i));
  // West US wrote them and sees them at once.
  consumer c{whole()};
  drain(c);
  ASSERT_EQ(c.seen.size(), 10u);
  // Now read where the writes have not arrived yet: nothing new, and the
  // lagging region's older position is not taken.
  // (Eventual: a session token from West US would send the read back to
  // the write region, as session consistency must.)
  c.req.options.excluded_regions = {"West US"};
  c.req.options.consistency_level = "Eventual";
  c.seen.clear();
  drain(c);
  EXPECT_TRUE(c.seen.empty());
  auto cursors = json::parse(c.req.continuation)["cursors"];
  for (const auto& cur : cursors)
    EXPECT_TRUE(cur.contains("etag"));
  // Once East US has caught up, one new write comes, the old ones do not.
  std::this_thread::sleep_for(1600ms);
  put("d10", "p10");
  std::this_thread::sleep_for(1600ms);
  drain(c);
  ASSERT_EQ(c.seen.size(), 1u);
  EXPECT_EQ(c.seen[0].first, "d10");
}

TEST_F(ChangeFeed, ContinuationWithoutItsFirstCursor_IsRefused_NothingLost) {
  for (int i = 0; i < 20; ++i)
    put("d" + std::to_string(i), "p" + std::to_string(i));
  // Read until the feed holds a cursor per range (the collection has two).
  consumer c{whole()};
  json token;
  for (int i = 0; i < 10; ++i) {
    auto p = read(c.req);
    ASSERT_TRUE(p) << describe(p.error());
    c.req.continuation = p->continuation;
    for (const auto& d : json::parse(p->documents))
      c.seen.emplace_back(d["id"].get<std::string>(), 1);
    token = json::parse(p->continuation);
    if (token["cursors"].size() >= 2) break;
  }
  ASSERT_GE(token["cursors"].size(), 2u);
  EXPECT_EQ(token["v"], 2);
  // The token cut: its first cursor (the next to be read) removed. Read as
  // a feed of the ranges left, it would never deliver the changes of the
  // one removed.
  auto cut = token;
  cut["cursors"].erase(cut["cursors"].begin());
  auto before = attempts();
  auto req = c.req;
  req.continuation = cut.dump();
  auto p = read(req);
  ASSERT_FALSE(p) << "a cut continuation was accepted: " << cut.dump();
  EXPECT_EQ(code_of(p.error()), errc::validation_error);
  EXPECT_NE(context_of(p.error()).find("continuation: no cursor covers"),
            std::string::npos)
      << context_of(p.error());
  EXPECT_EQ(attempts(), before) << "a request went out for a cut token";
  // The continuation as the page returned it goes on: every change once.
  drain(c);
  auto got = ids(c);
  EXPECT_EQ(got.size(), 20u) << "a document came twice or was lost";
  EXPECT_EQ(std::set<std::string>(got.begin(), got.end()), expected_ids(20));
}

TEST_F(ChangeFeed, BadInput_IsRefusedNamingTheField_BeforeAnyTrip) {
  auto before = attempts();
  auto expect_refused = [&](change_feed_request req, const std::string& says) {
    auto p = read(req);
    ASSERT_FALSE(p) << "accepted: " << says;
    EXPECT_EQ(code_of(p.error()), errc::validation_error);
    EXPECT_NE(context_of(p.error()).find(says), std::string::npos)
        << context_of(p.error());
  };
  auto req = whole();
  req.continuation = "not a token";
  expect_refused(req, "continuation");
  req = whole();
  req.continuation =
      R"({"v":1,"coll":"dbs/d/colls/other","rid":"x","start":"beginning",)"
      R"("cursors":[{"min":"","max":"FF"}]})";
  expect_refused(req, "belongs to the feed of 'dbs/d/colls/other'");
  req = whole();
  req.range_min = "80";
  req.range_max = "40";
  expect_refused(req, "empty");
  req = whole(feed_start::time);
  req.start_time_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(
          (std::chrono::system_clock::now() + 1h).time_since_epoch())
          .count();
  expect_refused(req, "future");
  req = whole();
  req.max_item_count = 0;
  expect_refused(req, "max_item_count");
  req = whole();
  req.collection_link = "dbs/d";
  expect_refused(req, "not a collection link");
  EXPECT_EQ(attempts(), before) << "a request went out for bad input";
}

} // namespace
