#include "georoute/actors/policy/change_feed.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {

using georoute::change_feed_state;
using georoute::feed_origin;
using georoute::feed_scope;
using georoute::partition_key_range;
using json = nlohmann::json;

constexpr int64_t now_ms = 1'700'000'000'000;
const std::string link = "dbs/d/colls/c";

feed_scope whole(feed_origin start = feed_origin::beginning) {
  feed_scope s;
  s.collection_link = link;
  s.start = start;
  return s;
}

change_feed_state fresh(const feed_scope& s) {
  auto st = change_feed_state::fresh(s, now_ms);
  EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().what);
  auto r = std::move(*st);
  EXPECT_FALSE(r.bind("rid0").has_value());
  return r;
}

partition_key_range range(std::string id, std::string min, std::string max) {
  partition_key_range r;
  r.id = std::move(id);
  r.min_inclusive = std::move(min);
  r.max_exclusive = std::move(max);
  return r;
}

std::vector<std::optional<int64_t>> docs(std::initializer_list<int64_t> lsns) {
  return {lsns.begin(), lsns.end()};
}

// -- start positions ----------------------------------------------------------

TEST(ChangeFeedState, Beginning_SendsNoPositionHeaders) {
  auto st = fresh(whole());
  EXPECT_EQ(st.if_none_match(), "");
  EXPECT_EQ(st.if_modified_since(), "");
}

TEST(ChangeFeedState, Now_SendsStarUntilTheFirstEtag) {
  auto st = fresh(whole(feed_origin::now));
  EXPECT_EQ(st.if_none_match(), "*");
  ASSERT_TRUE(st.on_not_modified("\"12\"").ok());
  EXPECT_EQ(st.if_none_match(), "\"12\"");
}

TEST(ChangeFeedState, Time_SendsTheDateUntilTheFirstEtag_ThenOnlyTheEtag) {
  auto s = whole(feed_origin::time);
  s.start_time_ms = 1459218509000; // Tue, 29 Mar 2016 02:28:29 GMT
  auto st = fresh(s);
  EXPECT_EQ(st.if_modified_since(), "Tue, 29 Mar 2016 02:28:29 GMT");
  EXPECT_EQ(st.if_none_match(), "");
  ASSERT_TRUE(st.on_not_modified("\"3\"").ok());
  EXPECT_EQ(st.if_modified_since(), "");
  EXPECT_EQ(st.if_none_match(), "\"3\"");
}

// -- bad input ----------------------------------------------------------------

TEST(ChangeFeedState, FutureStartTime_IsRefusedNamingTheField) {
  auto s = whole(feed_origin::time);
  s.start_time_ms = now_ms + 60'000;
  auto st = change_feed_state::fresh(s, now_ms);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().what.find("start_time_ms"), std::string::npos);
  EXPECT_NE(st.error().what.find("future"), std::string::npos);
}

TEST(ChangeFeedState, StartTimeWithoutTimeStart_IsRefused) {
  auto s = whole(feed_origin::now);
  s.start_time_ms = 5;
  EXPECT_FALSE(change_feed_state::fresh(s, now_ms).ok());
}

TEST(ChangeFeedState, BadFeedRanges_AreRefusedNamingWhatIsWrong) {
  struct bad_case {
    std::string min, max, says;
  };
  for (const auto& c : std::vector<bad_case>{
           {"40", "40", "empty"},
           {"80", "40", "empty"},
           {"", "FF01", "past the end"},
           {"XY", "FF", "not an EPK"},
           {"", "", ""}, // no max: no EPK scope at all, valid
       }) {
    auto s = whole();
    s.range_min = c.min;
    s.range_max = c.max;
    auto st = change_feed_state::fresh(s, now_ms);
    if (c.says.empty()) {
      EXPECT_TRUE(st.ok());
      continue;
    }
    ASSERT_FALSE(st.ok()) << c.min << ".." << c.max;
    EXPECT_NE(st.error().what.find(c.says), std::string::npos)
        << st.error().what;
  }
  auto s = whole();
  s.range_min = "20";
  auto st = change_feed_state::fresh(s, now_ms);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().what.find("range_min"), std::string::npos);
}

TEST(ChangeFeedState, KeyAndRangeTogether_AreRefused) {
  auto s = whole();
  s.partition_key_json = R"(["a"])";
  s.range_max = "FF";
  EXPECT_FALSE(change_feed_state::fresh(s, now_ms).ok());
  s.range_max.clear();
  s.partition_key_json = R"(["a")";
  auto st = change_feed_state::fresh(s, now_ms);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().what.find("partition_key_json"), std::string::npos);
}

TEST(ChangeFeedState, MalformedOrForeignContinuations_AreRefusedNamingWhy) {
  auto good = fresh(whole());
  auto page = docs({7});
  ASSERT_TRUE(good.on_page("\"7\"", page).ok());
  auto token = good.continuation();
  ASSERT_TRUE(change_feed_state::resume(token, link).ok());

  auto expect_bad = [](const std::string& t, const std::string& l,
                       const std::string& says) {
    auto st = change_feed_state::resume(t, l);
    ASSERT_FALSE(st.ok()) << t;
    EXPECT_EQ(st.error().what.rfind("continuation: ", 0), 0u)
        << st.error().what;
    EXPECT_NE(st.error().what.find(says), std::string::npos)
        << st.error().what;
  };
  expect_bad("not json", link, "not a change-feed continuation");
  expect_bad(R"({"v":2})", link, "version 2");
  expect_bad(token, "dbs/d/colls/other", "belongs to the feed of");
  auto j = json::parse(token);
  j["cursors"][0]["max"] = "GG";
  expect_bad(j.dump(), link, "cursors[0] max");
  j = json::parse(token);
  j["cursors"].push_back(json{{"min", "80"}, {"max", "FF"}});
  expect_bad(j.dump(), link, "overlap");
  j = json::parse(token);
  j["cursors"][0]["max"] = "40";
  j["cursors"].push_back(json{{"min", "80"}, {"max", "FF"}});
  expect_bad(j.dump(), link, "gap");
  j = json::parse(token);
  j["start"] = "yesterday";
  expect_bad(j.dump(), link, "start 'yesterday'");
}

TEST(ChangeFeedState, ContinuationOfARecreatedCollection_IsRefusedOnBind) {
  auto st = fresh(whole());
  auto again = change_feed_state::resume(st.continuation(), link);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->bind("rid0").has_value());
  auto other = change_feed_state::resume(st.continuation(), link);
  auto p = other->bind("rid1");
  ASSERT_TRUE(p.has_value());
  EXPECT_NE(p->what.find("rid0"), std::string::npos);
}

TEST(ChangeFeedState, ContinuationWithADifferentScope_IsRefused) {
  auto s = whole();
  s.partition_key_json = R"(["a"])";
  auto st = fresh(s);
  auto again = change_feed_state::resume(st.continuation(), link);
  ASSERT_TRUE(again.ok());
  auto same = whole();
  same.partition_key_json = R"([ "a" ])";
  EXPECT_FALSE(again->check_matches(same).has_value());
  auto other = whole();
  other.partition_key_json = R"(["b"])";
  EXPECT_TRUE(again->check_matches(other).has_value());
}

// -- splits and merges --------------------------------------------------------

TEST(ChangeFeedState, Split_CutsTheCursorAndEachPartKeepsTheParentsPosition) {
  auto st = fresh(whole());
  ASSERT_TRUE(st.target({range("0", "", "FF")}).ok());
  auto page = docs({4});
  ASSERT_TRUE(st.on_page("\"4\"", page).ok());
  // The one range split into two, then into three.
  auto t = st.target(
      {range("1", "", "40"), range("3", "40", "80"), range("4", "80", "FF")});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->range_id, "1");
  EXPECT_TRUE(t->end_epk.empty()); // the part is the whole range
  ASSERT_EQ(st.size(), 3u);
  for (const auto& c : st.cursors())
    EXPECT_EQ(c.etag, "\"4\"");
  EXPECT_EQ(st.cursors()[0].max, "40");
  EXPECT_EQ(st.cursors()[1].min, "40");
  EXPECT_EQ(st.cursors()[2].max, "FF");
}

TEST(ChangeFeedState, Merge_ReadsThePartWithEpkHeadersFromItsOwnPosition) {
  auto st = fresh(whole());
  ASSERT_TRUE(st.target({range("1", "", "40"), range("2", "40", "FF")}).ok());
  auto page = docs({9});
  ASSERT_TRUE(st.on_page("\"9\"", page).ok()); // [,40) at 9, now at the back
  // The ranges merged: [40, FF) lies inside the one range 3.
  auto t = st.target({range("3", "", "FF")});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->range_id, "3");
  EXPECT_EQ(t->start_epk, "40");
  EXPECT_EQ(t->end_epk, "FF");
  EXPECT_EQ(st.if_none_match(), ""); // [40, FF) had no position yet
  ASSERT_TRUE(st.on_not_modified("\"9\"").ok());
  t = st.target({range("3", "", "FF")});
  EXPECT_EQ(t->start_epk, "");
  EXPECT_EQ(t->end_epk, "40");
  EXPECT_EQ(st.if_none_match(), "\"9\"");
}

TEST(ChangeFeedState, RoutingMapWithAHole_IsAProblem) {
  auto st = fresh(whole());
  EXPECT_FALSE(st.target({range("1", "", "40"), range("3", "80", "FF")}).ok());
  EXPECT_FALSE(st.target({}).ok());
}

// -- positions never move back --------------------------------------------------

TEST(ChangeFeedState, ALaggingRegionsOlderEtag_DoesNotMoveThePositionBack) {
  auto st = fresh(whole());
  auto page = docs({10});
  ASSERT_TRUE(st.on_page("\"10\"", page).ok());
  auto e = st.on_not_modified("\"6\"");
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(e->held);
  EXPECT_EQ(st.front().etag, "\"10\"");
}

TEST(ChangeFeedState, ReplayedDocuments_AreDropped_NewOnesKept) {
  auto st = fresh(whole());
  auto first = docs({3, 5});
  ASSERT_TRUE(st.on_page("\"5\"", first).ok());
  auto again = docs({4, 5, 6});
  auto e = st.on_page("\"6\"", again);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->kept, 1u);
  EXPECT_EQ(e->dropped, 2u);
  EXPECT_EQ(e->drop, (std::vector<bool>{true, true, false}));
}

TEST(ChangeFeedState, APageWithoutReplays_DropsNothing) {
  auto st = fresh(whole());
  auto first = docs({3});
  ASSERT_TRUE(st.on_page("\"3\"", first).ok());
  std::vector<std::optional<int64_t>> page{4, std::nullopt, 9};
  auto e = st.on_page("\"9\"", page);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->kept, 3u);
  EXPECT_EQ(e->dropped, 0u);
  EXPECT_TRUE(e->drop.empty());
}

// -- reading a page's body ------------------------------------------------------

TEST(ScanFeedPage, FindsTheArrayTextAndEachDocumentsLsn) {
  std::string body =
      R"({"_rid":"a\"Documents\"","Documents":[{"id":"x","_lsn":4,)"
      R"("nested":{"_lsn":99,"Documents":[1]}},{"id":"y","_lsn":"7"},)"
      R"({"id":"z"},5],"_count":4})";
  auto page = georoute::scan_feed_page(body);
  ASSERT_TRUE(page.ok()) << page.error().what;
  EXPECT_EQ(page->lsns, (std::vector<std::optional<int64_t>>{
                            4, 7, std::nullopt, std::nullopt}));
  auto docs = json::parse(page->documents);
  ASSERT_TRUE(docs.is_array());
  EXPECT_EQ(docs.size(), 4u);
  EXPECT_EQ(docs[0]["nested"]["_lsn"], 99);
}

TEST(ScanFeedPage, BadBodies_AreProblems) {
  EXPECT_FALSE(georoute::scan_feed_page("").ok());
  EXPECT_FALSE(georoute::scan_feed_page("{\"Documents\":[").ok());
  EXPECT_FALSE(georoute::scan_feed_page(R"({"Docs":[]})").ok());
  EXPECT_FALSE(georoute::scan_feed_page(R"({"x":{"Documents":[]}})").ok());
  auto empty = georoute::scan_feed_page(R"({"Documents":[],"_count":0})");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->documents, "[]");
  EXPECT_TRUE(empty->lsns.empty());
}

TEST(ChangeFeedState, AnswersWithoutAnEtag_AreProblems) {
  auto st = fresh(whole(feed_origin::now));
  EXPECT_FALSE(st.on_not_modified("").ok());
  auto page = docs({1});
  EXPECT_FALSE(st.on_page("", page).ok());
}

// -- caught up ------------------------------------------------------------------

TEST(ChangeFeedState, CaughtUp_OnlyAfterEveryCursorAnswered304InARow) {
  auto st = fresh(whole());
  ASSERT_TRUE(st.target({range("1", "", "80"), range("2", "80", "FF")}).ok());
  st.begin_request();
  ASSERT_TRUE(st.on_not_modified("\"1\"").ok());
  EXPECT_FALSE(st.caught_up());
  auto page = docs({2});
  ASSERT_TRUE(st.on_page("\"2\"", page).ok()); // a change resets the count
  ASSERT_TRUE(st.on_not_modified("\"2\"").ok());
  EXPECT_FALSE(st.caught_up());
  ASSERT_TRUE(st.on_not_modified("\"2\"").ok());
  EXPECT_TRUE(st.caught_up());
}

TEST(ChangeFeedState, Continuation_ResumesEveryCursorAndItsPosition) {
  auto st = fresh(whole());
  ASSERT_TRUE(st.target({range("1", "", "80"), range("2", "80", "FF")}).ok());
  auto page = docs({7});
  ASSERT_TRUE(st.on_page("\"7\"", page).ok());
  auto again = change_feed_state::resume(st.continuation(), link);
  ASSERT_TRUE(again.ok()) << again.error().what;
  ASSERT_EQ(again->size(), 2u);
  EXPECT_EQ(again->front().min, "80"); // the queue's order is kept
  EXPECT_EQ(again->cursors()[1].etag, "\"7\"");
  EXPECT_EQ(again->continuation(), st.continuation());
}

TEST(ChangeFeedState, FeedLsnOf_ReadsTheEtagShapes) {
  EXPECT_EQ(georoute::feed_lsn_of("\"46\""), 46);
  EXPECT_EQ(georoute::feed_lsn_of("46"), 46);
  EXPECT_EQ(georoute::feed_lsn_of("W/\"46\""), 46);
  EXPECT_FALSE(georoute::feed_lsn_of("\"\"").has_value());
  EXPECT_FALSE(georoute::feed_lsn_of("\"4x\"").has_value());
  EXPECT_FALSE(georoute::feed_lsn_of("*").has_value());
}

} // namespace
