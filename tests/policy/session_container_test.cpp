#include "georoute/actors/policy/session_container.hpp"

#include <gtest/gtest.h>
#include <ostream>
#include <string>
#include <vector>

using namespace georoute;

namespace {

// -- what a read sends, after a sequence of captures and clears
// ----------------

enum class op_kind { capture, clear_rid, clear_name };

struct op {
  op_kind kind;
  std::string rid;
  std::string name;
  std::string header;
};

op capture(std::string rid, std::string name, std::string header) {
  return {op_kind::capture, std::move(rid), std::move(name), std::move(header)};
}

op clear_rid(std::string rid) {
  return {op_kind::clear_rid, std::move(rid), "", ""};
}

op clear_name(std::string name) {
  return {op_kind::clear_name, "", std::move(name), ""};
}

/// What a read of `range` (with `parents`) in `rid` sends.
struct read_check {
  std::string rid;
  std::string range;
  std::vector<std::string> parents;
  std::string header; ///< "" for no token
};

struct session_row {
  std::string name;
  size_t capacity;
  std::vector<op> ops;
  std::vector<read_check> reads;
  std::vector<size_t> results; ///< what each op returned, in order
  session_container_counters counters;
};

void PrintTo(const session_row& row, std::ostream* os) {
  *os << row.name;
}

class SessionTable : public testing::TestWithParam<session_row> {};

TEST_P(SessionTable, Sends) {
  const auto& row = GetParam();
  session_container s(row.capacity);
  std::vector<size_t> results;
  for (const auto& o : row.ops) {
    switch (o.kind) {
    case op_kind::capture:
      results.push_back(s.capture(o.rid, o.name, o.header));
      break;
    case op_kind::clear_rid:
      results.push_back(s.clear_by_rid(o.rid) ? 1 : 0);
      break;
    case op_kind::clear_name:
      results.push_back(s.clear_by_name(o.name));
      break;
    }
  }
  EXPECT_EQ(results, row.results);
  for (const auto& r : row.reads)
    EXPECT_EQ(s.header_for(r.rid, r.range, r.parents), r.header)
        << r.rid << " range " << r.range;
  const auto& c = s.counters();
  EXPECT_EQ(c.captured, row.counters.captured);
  EXPECT_EQ(c.malformed, row.counters.malformed);
  EXPECT_EQ(c.ignored, row.counters.ignored);
  EXPECT_EQ(c.evicted, row.counters.evicted);
  EXPECT_EQ(c.cleared, row.counters.cleared);
}

session_container_counters counts(uint64_t captured, uint64_t malformed = 0,
                                  uint64_t ignored = 0, uint64_t evicted = 0,
                                  uint64_t cleared = 0) {
  return {captured, malformed, ignored, evicted, cleared};
}

const std::string coll = "dbs/d/colls/c";

INSTANTIATE_TEST_SUITE_P(
    Capture, SessionTable,
    testing::Values(
        session_row{"Session_OneCapture_OwnToken",
                    8,
                    {capture("A", coll, "0:1#5")},
                    {{"A", "0", {}, "0:1#5"}},
                    {1},
                    counts(1)},
        session_row{"Session_LowerLsnLater_KeepsHigher",
                    8,
                    {capture("A", coll, "0:1#9"), capture("A", coll, "0:1#5")},
                    {{"A", "0", {}, "0:1#9"}},
                    {1, 1},
                    counts(2)},
        session_row{"Session_HigherVersionLater_VersionAndMaxLsns",
                    8,
                    {capture("A", coll, "0:1#9#1=4"),
                     capture("A", coll, "0:2#7#1=3#2=2")},
                    {{"A", "0", {}, "0:2#9#1=4#2=2"}},
                    {1, 1},
                    counts(2)},
        session_row{"Session_MultiEntryHeader_EachRangeOwnToken",
                    8,
                    {capture("A", coll, "0:1#5,1:1#7")},
                    {{"A", "0", {}, "0:1#5"}, {"A", "1", {}, "1:1#7"}},
                    {2},
                    counts(2)},
        session_row{"Session_SpacesAroundEntries_Parsed",
                    8,
                    {capture("A", coll, " 0:1#5 ,\t1:1#6 ")},
                    {{"A", "1", {}, "1:1#6"}},
                    {2},
                    counts(2)},
        session_row{"Session_SameRangeTwiceInHeader_Merged",
                    8,
                    {capture("A", coll, "0:1#5#1=9,0:1#8#1=2")},
                    {{"A", "0", {}, "0:1#8#1=9"}},
                    {1},
                    counts(1)},
        session_row{"Session_UnknownRange_NoToken",
                    8,
                    {capture("A", coll, "0:1#5")},
                    {{"A", "1", {}, ""}},
                    {1},
                    counts(1)},
        session_row{"Session_UnknownCollection_NoToken",
                    8,
                    {capture("A", coll, "0:1#5")},
                    {{"B", "0", {}, ""}},
                    {1},
                    counts(1)},
        session_row{"Session_TwoCollections_KeptApart",
                    8,
                    {capture("A", coll, "0:1#5"),
                     capture("B", "dbs/d/colls/e", "0:1#9")},
                    {{"A", "0", {}, "0:1#5"}, {"B", "0", {}, "0:1#9"}},
                    {1, 1},
                    counts(2)}));

INSTANTIATE_TEST_SUITE_P(
    Split, SessionTable,
    testing::Values(
        session_row{"Session_ChildWithoutToken_ParentsTokenUnderChildId",
                    8,
                    {capture("A", coll, "0:1#5")},
                    {{"A", "1", {"0"}, "1:1#5"}},
                    {1},
                    counts(1)},
        session_row{"Session_ChildWithOwnToken_OwnWins",
                    8,
                    {capture("A", coll, "0:1#9,3:1#4")},
                    {{"A", "3", {"0"}, "3:1#4"}},
                    {2},
                    counts(2)},
        session_row{"Session_TwoParents_Merged",
                    8,
                    {capture("A", coll, "1:1#5#1=3,2:1#8#1=2")},
                    {{"A", "3", {"1", "2"}, "3:1#8#1=3"}},
                    {2},
                    counts(2)},
        session_row{"Session_AncestorsOnePresent_ThatOne",
                    8,
                    {capture("A", coll, "2:1#6")},
                    {{"A", "5", {"0", "2"}, "5:1#6"}},
                    {1},
                    counts(1)},
        session_row{"Session_ParentsUnknown_NoToken",
                    8,
                    {capture("A", coll, "0:1#5")},
                    {{"A", "4", {"7", "8"}, ""}},
                    {1},
                    counts(1)}));

INSTANTIATE_TEST_SUITE_P(
    Malformed, SessionTable,
    testing::Values(
        session_row{"Session_BadEntriesAmongGood_GoodKeptBadCounted",
                    8,
                    {capture("A", coll, "0:1#5,bad,1:x#y,2:1#6")},
                    {{"A", "0", {}, "0:1#5"}, {"A", "2", {}, "2:1#6"}},
                    {2},
                    counts(2, 2)},
        session_row{"Session_LegacyToken_Ignored",
                    8,
                    {capture("A", coll, "0:12")},
                    {{"A", "0", {}, ""}},
                    {0},
                    counts(0, 1)},
        session_row{"Session_MalformedAfterGood_GoodNotLost",
                    8,
                    {capture("A", coll, "0:1#5"), capture("A", coll, "0:1#")},
                    {{"A", "0", {}, "0:1#5"}},
                    {1, 0},
                    counts(1, 1)},
        session_row{"Session_TrailingComma_EmptyEntryCounted",
                    8,
                    {capture("A", coll, "0:1#5,")},
                    {{"A", "0", {}, "0:1#5"}},
                    {1},
                    counts(1, 1)},
        session_row{"Session_EmptyHeader_NothingCounted",
                    8,
                    {capture("A", coll, ""), capture("A", coll, "  ")},
                    {{"A", "0", {}, ""}},
                    {0, 0},
                    counts(0)},
        session_row{"Session_EmptyRid_IgnoredCounted",
                    8,
                    {capture("", coll, "0:1#5")},
                    {{"", "0", {}, ""}},
                    {0},
                    counts(0, 0, 1)},
        session_row{"Session_BinaryGarbage_CountedNoThrow",
                    8,
                    {capture("A", coll, std::string("0:\x01\xff#\0", 6))},
                    {{"A", "0", {}, ""}},
                    {0},
                    counts(0, 1)}));

INSTANTIATE_TEST_SUITE_P(
    Clear, SessionTable,
    testing::Values(
        session_row{"Clear_ByRid_OnlyThatCollection",
                    8,
                    {capture("A", coll, "0:1#5"),
                     capture("B", "dbs/d/colls/e", "0:1#6"), clear_rid("A")},
                    {{"A", "0", {}, ""}, {"B", "0", {}, "0:1#6"}},
                    {1, 1, 1},
                    counts(2, 0, 0, 0, 1)},
        session_row{"Clear_ByUnknownRid_False",
                    8,
                    {capture("A", coll, "0:1#5"), clear_rid("Z")},
                    {{"A", "0", {}, "0:1#5"}},
                    {1, 0},
                    counts(1)},
        session_row{
            "Clear_ByNameOfRecreatedCollection_EveryRidSeenUnderIt",
            8,
            {capture("A", coll, "0:1#5"), capture("B", coll, "0:1#1"),
             capture("C", "dbs/d/colls/e", "0:1#7"), clear_name(coll)},
            {{"A", "0", {}, ""}, {"B", "0", {}, ""}, {"C", "0", {}, "0:1#7"}},
            {1, 1, 1, 2},
            counts(3, 0, 0, 0, 2)},
        session_row{"Clear_ByNameOtherSpellings_SameCollection",
                    8,
                    {capture("A", "/dbs/d/colls/c/", "0:1#5"),
                     clear_name("dbs/d/colls/c/docs/x")},
                    {{"A", "0", {}, ""}},
                    {1, 1},
                    counts(1, 0, 0, 0, 1)},
        session_row{"Clear_CapturedUnderDocumentLink_SameCollection",
                    8,
                    {capture("A", "dbs/d/colls/c/docs/x", "0:1#5"),
                     clear_name("dbs/d/colls/c")},
                    {{"A", "0", {}, ""}},
                    {1, 1},
                    counts(1, 0, 0, 0, 1)},
        session_row{"Clear_ByUnknownName_Zero",
                    8,
                    {capture("A", coll, "0:1#5"), clear_name("dbs/d/colls/z")},
                    {{"A", "0", {}, "0:1#5"}},
                    {1, 0},
                    counts(1)},
        session_row{"Clear_RidSeenUnderNewName_OldNameLeavesIt",
                    8,
                    {capture("A", "dbs/d/colls/old", "0:1#5"),
                     capture("A", "dbs/d/colls/new", "0:1#6"),
                     clear_name("dbs/d/colls/old")},
                    {{"A", "0", {}, "0:1#6"}},
                    {1, 1, 0},
                    counts(2)},
        session_row{"Clear_RidClearedThenBackUnderNewName_OldNameLeavesIt",
                    8,
                    {capture("A", coll, "0:1#5"), clear_rid("A"),
                     capture("A", "dbs/d/colls/new", "0:1#6"),
                     clear_name(coll)},
                    {{"A", "0", {}, "0:1#6"}},
                    {1, 1, 1, 0},
                    counts(2, 0, 0, 0, 1)},
        session_row{"Clear_RidCapturedWithoutName_KeepsName",
                    8,
                    {capture("A", coll, "0:1#5"), capture("A", "", "0:1#6"),
                     clear_name(coll)},
                    {{"A", "0", {}, ""}},
                    {1, 1, 1},
                    counts(2, 0, 0, 0, 1)},
        session_row{
            "Clear_ByRidThenByName_NameForgotten",
            8,
            {capture("A", coll, "0:1#5"), clear_rid("A"), clear_name(coll)},
            {{"A", "0", {}, ""}},
            {1, 1, 0},
            counts(1, 0, 0, 0, 1)},
        session_row{"Clear_ThenCaptureAgain_StartsFresh",
                    8,
                    {capture("A", coll, "0:1#9"), clear_rid("A"),
                     capture("A", coll, "0:1#2")},
                    {{"A", "0", {}, "0:1#2"}},
                    {1, 1, 1},
                    counts(2, 0, 0, 0, 1)}));

INSTANTIATE_TEST_SUITE_P(
    Bound, SessionTable,
    testing::Values(
        session_row{"Lru_AtCapacity_NothingEvicted",
                    2,
                    {capture("A", "", "0:1#1"), capture("B", "", "0:1#2")},
                    {{"A", "0", {}, "0:1#1"}, {"B", "0", {}, "0:1#2"}},
                    {1, 1},
                    counts(2)},
        session_row{"Lru_OverCapacity_LeastRecentEvicted",
                    2,
                    {capture("A", "", "0:1#1"), capture("B", "", "0:1#2"),
                     capture("C", "", "0:1#3")},
                    {{"A", "0", {}, ""},
                     {"B", "0", {}, "0:1#2"},
                     {"C", "0", {}, "0:1#3"}},
                    {1, 1, 1},
                    counts(3, 0, 0, 1)},
        session_row{"Lru_RecapturedCollection_Survives",
                    2,
                    {capture("A", "", "0:1#1"), capture("B", "", "0:1#2"),
                     capture("A", "", "0:1#4"), capture("C", "", "0:1#3")},
                    {{"A", "0", {}, "0:1#4"},
                     {"B", "0", {}, ""},
                     {"C", "0", {}, "0:1#3"}},
                    {1, 1, 1, 1},
                    counts(4, 0, 0, 1)},
        session_row{"Lru_MalformedCapture_DoesNotRefresh",
                    2,
                    {capture("A", "", "0:1#1"), capture("B", "", "0:1#2"),
                     capture("A", "", "junk"), capture("C", "", "0:1#3")},
                    {{"A", "0", {}, ""}, {"B", "0", {}, "0:1#2"}},
                    {1, 1, 0, 1},
                    counts(3, 1, 0, 1)},
        session_row{"Lru_ZeroCapacity_KeepsOne",
                    0,
                    {capture("A", "", "0:1#1"), capture("B", "", "0:1#2")},
                    {{"A", "0", {}, ""}, {"B", "0", {}, "0:1#2"}},
                    {1, 1},
                    counts(2, 0, 0, 1)},
        session_row{"Lru_EvictedRidBackUnderNewName_OldNameLeavesIt",
                    1,
                    {capture("A", coll, "0:1#1"),
                     capture("B", "dbs/d/colls/e", "0:1#2"),
                     capture("A", "dbs/d/colls/new", "0:1#3"),
                     clear_name(coll)},
                    {{"A", "0", {}, "0:1#3"}},
                    {1, 1, 1, 0},
                    counts(3, 0, 0, 2)},
        session_row{"Lru_EvictedCollection_NameForgotten",
                    1,
                    {capture("A", coll, "0:1#1"),
                     capture("B", "dbs/d/colls/e", "0:1#2"), clear_name(coll)},
                    {{"B", "0", {}, "0:1#2"}},
                    {1, 1, 0},
                    counts(2, 0, 0, 1)}));

// -- the rest of the interface
// -----------------------------------------------------

TEST(SessionContainer, HeaderForAll_EveryRange_RangeOrder) {
  session_container s;
  s.capture("A", coll, "10:1#3,2:1#2");
  s.capture("A", coll, "0:1#1");
  EXPECT_EQ(s.header_for_all("A"), "0:1#1,2:1#2,10:1#3");
  EXPECT_EQ(s.header_for_all("B"), "");
  EXPECT_EQ(s.size(), 1u);
}

TEST(SessionContainer, TokenFor_ChildOfTwoParents_MergedToken) {
  session_container s;
  s.capture("A", coll, "1:2#5#1=3,2:1#8#1=9#2=4");
  auto t = s.token_for("A", "3", {"1", "2"});
  ASSERT_TRUE(t);
  // The higher version's regions; the global LSN is the max of both.
  EXPECT_EQ(t->version, 2);
  EXPECT_EQ(t->global_lsn, 8);
  EXPECT_EQ(t->local_lsns, (std::map<int64_t, int64_t>{{1, 9}}));
}

// The same header again (a read's answer while nothing was written) is not
// parsed again; everything observable stays as if it had been merged.
TEST(SessionContainer, SameHeaderAgain_CountedAsMerged_NothingElseChanges) {
  session_container s;
  EXPECT_EQ(s.capture("A", coll, "0:1#5,bad,1:1#3"), 2u);
  EXPECT_EQ(s.capture("A", coll, "0:1#5,bad,1:1#3"), 2u);
  EXPECT_EQ(s.counters().captured, 4u);
  EXPECT_EQ(s.counters().malformed, 2u);
  EXPECT_EQ(s.header_for("A", "0", {}), "0:1#5");
  // A newer token, then the older header again: no step back.
  s.capture("A", coll, "0:1#9");
  s.capture("A", coll, "0:1#5,bad,1:1#3");
  EXPECT_EQ(s.header_for("A", "0", {}), "0:1#9");
}

// What a read sends follows every merge (its rendering is kept between
// merges only).
TEST(SessionContainer, HeaderFor_FollowsEveryMerge) {
  session_container s;
  s.capture("A", coll, "0:1#5");
  EXPECT_EQ(s.header_for("A", "0", {}), "0:1#5");
  EXPECT_EQ(s.header_for("A", "0", {}), "0:1#5");
  s.capture("A", coll, "0:1#7");
  EXPECT_EQ(s.header_for("A", "0", {}), "0:1#7");
  s.capture("A", coll, "1:1#2");
  EXPECT_EQ(s.header_for("A", "1", {}), "1:1#2");
  EXPECT_EQ(s.header_for("A", "0", {}), "0:1#7");
  s.clear_by_rid("A");
  EXPECT_EQ(s.header_for("A", "0", {}), "");
  // Known again after the clear: the same header is merged anew.
  s.capture("A", coll, "0:1#7");
  EXPECT_EQ(s.header_for("A", "0", {}), "0:1#7");
}

// The same header under another name still records the name, and still
// counts as a capture for the bound's recency.
TEST(SessionContainer, SameHeaderAgain_NewNameAndRecencyStillTaken) {
  session_container s(2);
  s.capture("A", coll, "0:1#5");
  s.capture("A", "dbs/d/colls/renamed", "0:1#5");
  EXPECT_EQ(s.clear_by_name("dbs/d/colls/renamed"), 1u);
  EXPECT_EQ(s.header_for("A", "0", {}), "");

  s.capture("A", coll, "0:1#5");
  s.capture("B", coll, "0:1#6");
  s.capture("A", coll, "0:1#5"); // A is the most recent again
  s.capture("C", coll, "0:1#7"); // B goes
  EXPECT_EQ(s.header_for("A", "0", {}), "0:1#5");
  EXPECT_EQ(s.header_for("B", "0", {}), "");
  EXPECT_EQ(s.header_for("C", "0", {}), "0:1#7");
}

struct name_row {
  std::string name;
  std::string input;
  std::string expected;
};

void PrintTo(const name_row& row, std::ostream* os) {
  *os << row.name;
}

class NamePathTable : public testing::TestWithParam<name_row> {};

TEST_P(NamePathTable, Normalizes) {
  EXPECT_EQ(collection_name_path(GetParam().input), GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(
    Table, NamePathTable,
    testing::Values(
        name_row{"NamePath_Plain_Unchanged", "dbs/d/colls/c", "dbs/d/colls/c"},
        name_row{"NamePath_OuterSlashes_Dropped", "/dbs/d/colls/c/",
                 "dbs/d/colls/c"},
        name_row{"NamePath_DocumentPath_CollectionPart", "dbs/d/colls/c/docs/x",
                 "dbs/d/colls/c"},
        name_row{"NamePath_DoubledSlashes_Collapsed", "dbs//d/colls/c",
                 "dbs/d/colls/c"},
        name_row{"NamePath_DatabaseOnly_Trimmed", "/dbs/d/", "dbs/d"},
        name_row{"NamePath_Empty_Empty", "", ""}));

} // namespace

namespace {

using georoute::session_source;
using georoute::session_token_source;

TEST(SessionTokenSource, OneDecisionForEveryRequest) {
  struct row {
    bool is_write;
    const char* level;
    bool caller_has_token;
    session_source want;
  };
  for (auto r : std::vector<row>{
           {true, "", true, session_source::none},
           {true, "Session", false, session_source::none},
           {false, "", false, session_source::container},
           {false, "", true, session_source::caller},
           {false, "Session", false, session_source::container},
           {false, "Session", true, session_source::caller},
           {false, "Eventual", true, session_source::none},
           {false, "Strong", false, session_source::none},
           {false, "BoundedStaleness", false, session_source::none},
       })
    EXPECT_EQ(session_token_source(r.is_write, r.level, r.caller_has_token),
              r.want)
        << (r.is_write ? "write" : "read") << " at '" << r.level << "'"
        << (r.caller_has_token ? " with the caller's token" : "");
}

} // namespace
