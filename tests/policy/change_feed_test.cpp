#include "georoute/actors/policy/change_feed.hpp"

#include <cstdio>
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
  expect_bad(R"({"v":3})", link, "version 3");
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

// -- the continuation carries its scope ---------------------------------------

/// A continuation's checksum computed here, apart from the engine's code:
/// FNV-1a 64 of its JSON without "sum", as 16 lower-case hex digits.
std::string feed_token_sum(json token) {
  token.erase("sum");
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : token.dump()) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

/// `token` with its checksum written again: an edit that only the scope and
/// tiling checks can catch.
std::string resealed(json token) {
  token["sum"] = feed_token_sum(token);
  return token.dump();
}

/// Refused, with a problem that starts "continuation: " and says each of
/// `says`.
void expect_refused(const std::string& token, const feed_scope& asked,
                    const std::vector<std::string>& says,
                    const std::string& row) {
  auto st = change_feed_state::resume(token, asked);
  ASSERT_FALSE(st.ok()) << row << ": accepted " << token;
  EXPECT_EQ(st.error().what.rfind("continuation: ", 0), 0u)
      << row << ": " << st.error().what;
  for (const auto& s : says)
    EXPECT_NE(st.error().what.find(s), std::string::npos)
        << row << ": '" << s << "' not in: " << st.error().what;
}

/// A whole feed after one page, cut into three by a split:
/// [, 40), [40, 80), [80, FF) (the first at "5", now the last in the queue).
change_feed_state three_cursor_feed() {
  auto st = fresh(whole());
  EXPECT_TRUE(st.target({range("1", "", "40"), range("2", "40", "80"),
                         range("3", "80", "FF")})
                  .ok());
  auto page = docs({5});
  EXPECT_TRUE(st.on_page("\"5\"", page).ok());
  EXPECT_EQ(st.size(), 3u);
  return st;
}

/// `token` without its cursor that starts at `min`.
json without_cursor(const std::string& token, const std::string& min) {
  auto j = json::parse(token);
  auto& cs = j["cursors"];
  for (auto it = cs.begin(); it != cs.end(); ++it)
    if ((*it)["min"] == min) {
      cs.erase(it);
      return j;
    }
  ADD_FAILURE() << "no cursor starts at '" << min << "'";
  return j;
}

feed_scope asked_range(std::string min, std::string max) {
  auto s = whole();
  s.range_min = std::move(min);
  s.range_max = std::move(max);
  return s;
}

TEST(FeedContinuation, V2_RoundTripsScopeCursorsAndChecksum) {
  struct row {
    const char* name;
    feed_scope scope;
    std::string min, max;
  };
  auto by_key = whole();
  by_key.partition_key_json = R"(["a"])";
  for (const auto& r : std::vector<row>{
           {"whole collection", whole(), "", "FF"},
           {"EPK range", asked_range("2a", "c0"), "2A", "C0"},
           {"partition key", by_key, "", "FF"},
       }) {
    auto st = fresh(r.scope);
    auto page = docs({3});
    ASSERT_TRUE(st.on_page("\"3\"", page).ok()) << r.name;
    auto token = st.continuation();
    auto j = json::parse(token);
    EXPECT_EQ(j["v"], 2) << r.name;
    EXPECT_EQ(j["scope"], (json{{"min", r.min}, {"max", r.max}})) << r.name;
    ASSERT_TRUE(j["sum"].is_string()) << r.name;
    EXPECT_EQ(j["sum"].get<std::string>().size(), 16u) << r.name;
    EXPECT_EQ(j["sum"], feed_token_sum(j)) << r.name;
    auto again = change_feed_state::resume(token, r.scope);
    ASSERT_TRUE(again.ok()) << r.name << ": " << again.error().what;
    EXPECT_EQ(again->scope_min(), r.min) << r.name;
    EXPECT_EQ(again->scope_max(), r.max) << r.name;
    EXPECT_EQ(again->continuation(), token) << r.name;
    // Written again by another JSON layout (spaces, keys in another
    // order): the same content, still accepted.
    auto spaced = j.dump(2);
    EXPECT_NE(spaced, token);
    EXPECT_TRUE(change_feed_state::resume(spaced, r.scope).ok()) << r.name;
  }
}

TEST(FeedContinuation, CutCursor_IsRefusedNamingTheIntervalNoCursorCovers) {
  auto token = three_cursor_feed().continuation();
  ASSERT_TRUE(change_feed_state::resume(token, link).ok());
  struct row {
    const char* name;
    std::string cut; ///< min of the cursor removed
    std::vector<std::string> says;
  };
  for (const auto& r : std::vector<row>{
           {"first cursor cut", "", {"no cursor covers [, 40)", "first"}},
           {"last cursor cut", "80", {"no cursor covers [80, FF)", "last"}},
           {"middle cursor cut", "40", {"gap", "no cursor covers [40, 80)"}},
       }) {
    auto j = without_cursor(token, r.cut);
    // Cut as it is, and with a checksum made to match the cut (the scope
    // check alone must catch it).
    expect_refused(j.dump(), whole(), r.says, r.name);
    expect_refused(resealed(j), whole(), r.says,
                   std::string{r.name} + ", resealed");
  }
}

TEST(FeedContinuation, CutCursorOfAnEpkRange_IsRefused) {
  auto asked = asked_range("20", "C0");
  auto st = fresh(asked);
  ASSERT_TRUE(st.target({range("1", "", "40"), range("2", "40", "80"),
                         range("3", "80", "FF")})
                  .ok());
  auto token = st.continuation();
  ASSERT_TRUE(change_feed_state::resume(token, asked).ok());
  ASSERT_TRUE(change_feed_state::resume(token, link).ok());
  auto first = without_cursor(token, "20");
  expect_refused(resealed(first), asked, {"no cursor covers [20, 40)"},
                 "first of a range");
  // The request naming no range does not make the cut pass.
  expect_refused(resealed(first), whole(), {"no cursor covers [20, 40)"},
                 "first of a range, no range asked");
  auto last = without_cursor(token, "80");
  expect_refused(resealed(last), asked, {"no cursor covers [80, C0)"},
                 "last of a range");
}

TEST(FeedContinuation, EditedOrDamaged_IsRefusedNamingWhatIsWrong) {
  auto token = three_cursor_feed().continuation();
  auto j = json::parse(token);
  struct row {
    const char* name;
    std::string token;
    std::vector<std::string> says;
  };
  auto edit = [&](auto change) {
    auto e = j;
    change(e);
    return e.dump();
  };
  std::vector<row> rows{
      {"scope narrowed",
       edit([](json& e) { e["scope"]["min"] = "40"; }),
       {"cover [, FF), past its scope [40, FF)"}},
      {"scope narrowed at its end",
       edit([](json& e) { e["scope"]["max"] = "C0"; }),
       {"cover [, FF), past its scope [, C0)"}},
      {"scope narrowed with the first cursor cut, checksum not redone",
       edit([&](json& e) {
         e = without_cursor(token, "");
         e["scope"]["min"] = "40";
       }),
       {"checksum", "does not match"}},
      {"checksum edited",
       edit([](json& e) { e["sum"] = "0123456789abcdef"; }),
       {"checksum", "does not match"}},
      {"checksum missing",
       edit([](json& e) { e.erase("sum"); }),
       {"\"sum\" is missing"}},
      {"a cursor's etag edited",
       edit([](json& e) {
         for (auto& c : e["cursors"])
           if (c.contains("etag")) c["etag"] = "\"999\"";
       }),
       {"checksum", "does not match"}},
      {"rid edited",
       edit([](json& e) { e["rid"] = "rid9"; }),
       {"checksum", "does not match"}},
      {"scope missing",
       edit([](json& e) { e.erase("scope"); }),
       {"\"scope\" is missing"}},
      {"scope not an object",
       edit([](json& e) { e["scope"] = "FF"; }),
       {"\"scope\" must be an object"}},
      {"scope without max",
       edit([](json& e) { e["scope"].erase("max"); }),
       {"\"scope\" must be an object"}},
      {"scope min not an EPK",
       edit([](json& e) { e["scope"]["min"] = "zz"; }),
       {"scope min 'zz'"}},
      {"scope empty",
       edit([](json& e) {
         e["scope"] = {{"min", "80"}, {"max", "40"}};
       }),
       {"scope [80, 40) is empty"}},
      {"version lowered to 1 to skip the checksum",
       edit([](json& e) { e["v"] = 1; }),
       {"version was edited"}},
      {"truncated", token.substr(0, token.size() / 2), {"not a JSON object"}},
      {"truncated by one character",
       token.substr(0, token.size() - 1),
       {"not a JSON object"}},
  };
  for (const auto& r : rows)
    expect_refused(r.token, whole(), r.says, r.name);
}

TEST(FeedContinuation, V1_AcceptedOnlyWhereItsScopeIsKnown) {
  auto v1 = [](const std::string& cursors, const std::string& extra = "") {
    return R"({"v":1,"coll":"dbs/d/colls/c","rid":"rid0","start":"beginning",)" +
           extra + R"("cursors":[)" + cursors + "]}";
  };
  const std::string c0 = R"({"min":"","max":"40","etag":"\"5\""})";
  const std::string c1 = R"({"min":"40","max":"80","etag":"\"5\""})";
  const std::string c2 = R"({"min":"80","max":"FF"})";
  auto by_key = whole();
  by_key.partition_key_json = R"(["a"])";
  struct row {
    const char* name;
    std::string token;
    feed_scope asked;
    std::string min, max;          ///< the scope, when accepted
    std::vector<std::string> says; ///< the problem, when refused
  };
  for (const auto& r : std::vector<row>{
           {"whole, one cursor",
            v1(R"({"min":"","max":"FF"})"),
            whole(),
            "",
            "FF",
            {}},
           {"whole, three cursors",
            v1(c2 + "," + c0 + "," + c1),
            whole(),
            "",
            "FF",
            {}},
           {"partition key",
            v1(R"({"min":"","max":"FF","etag":"\"2\""})", R"("pk":"[\"a\"]",)"),
            by_key,
            "",
            "FF",
            {}},
           {"a range, named by the request",
            v1(c1),
            asked_range("40", "80"),
            "40",
            "80",
            {}},
           {"first cursor cut",
            v1(c1 + "," + c2),
            whole(),
            "",
            "",
            {"version 1", "older georoute", "cover only [40, FF)",
             "range_min/range_max", "start = time"}},
           {"last cursor cut",
            v1(c0 + "," + c1),
            whole(),
            "",
            "",
            {"version 1", "cover only [, 80)"}},
           {"a range, the request names another",
            v1(c1),
            asked_range("20", "80"),
            "",
            "",
            {"cover only [40, 80)"}},
           {"a range cut, the request names the whole collection",
            v1(c1 + "," + c2),
            asked_range("", "FF"),
            "",
            "",
            {"cover only [40, FF)"}},
           {"middle cursor cut",
            v1(c0 + "," + c2),
            whole(),
            "",
            "",
            {"gap", "no cursor covers [40, 80)"}},
       }) {
    if (!r.says.empty()) {
      expect_refused(r.token, r.asked, r.says, r.name);
      continue;
    }
    auto st = change_feed_state::resume(r.token, r.asked);
    ASSERT_TRUE(st.ok()) << r.name << ": " << st.error().what;
    EXPECT_EQ(st->scope_min(), r.min) << r.name;
    EXPECT_EQ(st->scope_max(), r.max) << r.name;
    // Its next continuation is version 2 and carries the scope.
    auto next = json::parse(st->continuation());
    EXPECT_EQ(next["v"], 2) << r.name;
    EXPECT_EQ(next["scope"], (json{{"min", r.min}, {"max", r.max}})) << r.name;
    EXPECT_TRUE(change_feed_state::resume(next.dump(), r.asked).ok()) << r.name;
  }
}

TEST(FeedContinuation, WrittenAfterASplit_StillValidates) {
  struct row {
    const char* name;
    feed_scope scope;
  };
  for (const auto& r :
       std::vector<row>{{"whole collection", whole()},
                        {"EPK range", asked_range("20", "C0")}}) {
    auto st = fresh(r.scope);
    ASSERT_TRUE(st.target({range("0", "", "FF")}).ok()) << r.name;
    auto page = docs({4});
    ASSERT_TRUE(st.on_page("\"4\"", page).ok()) << r.name;
    auto before = change_feed_state::resume(st.continuation(), r.scope);
    ASSERT_TRUE(before.ok()) << r.name << ": " << before.error().what;
    // The range split in two, then the left child in two again: the token
    // written before the split is resumed, cut on the new map, written.
    ASSERT_TRUE(
        before->target({range("1", "", "80"), range("2", "80", "FF")}).ok());
    // Round the queue until the left part is in front again.
    ASSERT_TRUE(before->on_not_modified("\"4\"").ok());
    ASSERT_TRUE(before->on_not_modified("\"4\"").ok());
    ASSERT_TRUE(before
                    ->target({range("3", "", "40"), range("4", "40", "80"),
                              range("2", "80", "FF")})
                    .ok());
    EXPECT_EQ(before->size(), 3u) << r.name;
    auto token = before->continuation();
    auto after = change_feed_state::resume(token, r.scope);
    ASSERT_TRUE(after.ok()) << r.name << ": " << after.error().what;
    EXPECT_EQ(after->size(), 3u) << r.name;
    EXPECT_EQ(after->scope_min(), r.scope.range_min) << r.name;
    EXPECT_EQ(after->scope_max(),
              r.scope.range_max.empty() ? std::string{"FF"} : r.scope.range_max)
        << r.name;
    EXPECT_EQ(after->continuation(), token) << r.name;
  }
}

TEST(FeedContinuation, RequestNamingAnotherRange_IsRefusedByTheStoredScope) {
  auto st = fresh(asked_range("20", "C0"));
  // Cut in two by a split: the scope is the token's, whole across the cuts.
  ASSERT_TRUE(st.target({range("1", "", "80"), range("2", "80", "FF")}).ok());
  auto token = st.continuation();
  auto again = change_feed_state::resume(token, link);
  ASSERT_TRUE(again.ok()) << again.error().what;
  EXPECT_FALSE(again->check_matches(asked_range("20", "c0")).has_value());
  auto p = again->check_matches(asked_range("20", "80"));
  ASSERT_TRUE(p.has_value());
  EXPECT_NE(p->what.find("range_min/range_max"), std::string::npos) << p->what;
  EXPECT_NE(p->what.find("[20, C0)"), std::string::npos) << p->what;
  // resume() with the request's scope makes the same check.
  auto refused = change_feed_state::resume(token, asked_range("", "FF"));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().what.find("range_min/range_max"), std::string::npos)
      << refused.error().what;
}

} // namespace
