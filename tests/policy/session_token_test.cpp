#include "georoute/actors/policy/session_token.hpp"

#include <gtest/gtest.h>
#include <ostream>
#include <string>
#include <vector>

using namespace georoute;

// Named after the file as well: the unity build (tests/CMakeLists.txt)
// compiles it in one translation unit with other tests.
namespace session_token_test {
namespace {

vector_session_token token(const std::string& text) {
  auto r = parse_vector_token(text);
  EXPECT_TRUE(r.ok()) << text << ": " << (r ? "" : r.error().what);
  return r ? *r : vector_session_token{};
}

session_token_set header(const std::string& text) {
  auto r = parse_session_header(text);
  EXPECT_TRUE(r.ok()) << text << ": " << (r ? "" : r.error().what);
  return r ? *r : session_token_set{};
}

// -- one range's token -------------------------------------------------------

struct token_row {
  std::string name;
  std::string input;
  int64_t version;
  int64_t global_lsn;
  std::map<int64_t, int64_t> local_lsns;
};

// ctest shows the row by this name (gtest_discover_tests pretty values).
void PrintTo(const token_row& row, std::ostream* os) {
  *os << row.name;
}

class ParseVectorToken : public testing::TestWithParam<token_row> {};

TEST_P(ParseVectorToken, Parses) {
  const auto& row = GetParam();
  auto r = parse_vector_token(row.input);
  ASSERT_TRUE(r.ok()) << r.error().what;
  EXPECT_EQ(r->version, row.version);
  EXPECT_EQ(r->global_lsn, row.global_lsn);
  EXPECT_EQ(r->local_lsns, row.local_lsns);
  EXPECT_EQ(render(*r), row.input);
}

INSTANTIATE_TEST_SUITE_P(
    Table, ParseVectorToken,
    testing::Values(
        token_row{"Token_GatewayInitialVersion_Parsed", "-1#12", -1, 12, {}},
        token_row{
            "Token_TwoRegions_Parsed", "1#9#4=8#5=7", 1, 9, {{4, 8}, {5, 7}}},
        token_row{"Token_ZeroLsn_Parsed", "0#0", 0, 0, {}},
        token_row{"Token_Int64Max_Parsed",
                  "1#9223372036854775807",
                  1,
                  INT64_C(9223372036854775807),
                  {}},
        token_row{"Token_RegionZero_Parsed", "3#100#0=0", 3, 100, {{0, 0}}}));

TEST(SessionToken, Token_RegionsOutOfOrder_RenderedAscending) {
  EXPECT_EQ(render(token("1#9#5=7#4=8")), "1#9#4=8#5=7");
}

// -- whole header: valid -----------------------------------------------------

struct header_row {
  std::string name;
  std::string input;
  std::string rendered; ///< canonical form after parse
};

// ctest shows the row by this name (gtest_discover_tests pretty values).
void PrintTo(const header_row& row, std::ostream* os) {
  *os << row.name;
}

class ParseSessionHeader : public testing::TestWithParam<header_row> {};

TEST_P(ParseSessionHeader, ParsesAndRenders) {
  const auto& row = GetParam();
  auto r = parse_session_header(row.input);
  ASSERT_TRUE(r.ok()) << r.error().what;
  EXPECT_EQ(render(*r), row.rendered);
  // The canonical form is a fixed point.
  auto again = parse_session_header(row.rendered);
  ASSERT_TRUE(again.ok()) << again.error().what;
  EXPECT_EQ(*again, *r);
}

INSTANTIATE_TEST_SUITE_P(
    Table, ParseSessionHeader,
    testing::Values(
        header_row{"Header_SingleRange_Parsed", "0:-1#12", "0:-1#12"},
        header_row{"Header_RegionalLsns_Parsed", "0:1#9#4=8#5=7",
                   "0:1#9#4=8#5=7"},
        header_row{"Header_TwoRanges_Parsed", "0:-1#12,1:1#9#4=8#5=7",
                   "0:-1#12,1:1#9#4=8#5=7"},
        header_row{"Header_NumericIds_SortedNumerically", "10:1#5,2:1#3,1:1#4",
                   "1:1#4,2:1#3,10:1#5"},
        header_row{"Header_SpacesAroundEntries_Trimmed", " 0:1#5 ,\t1:1#6 ",
                   "0:1#5,1:1#6"},
        header_row{"Header_DuplicateRange_Merged", "0:1#5#1=9,0:1#9#1=2",
                   "0:1#9#1=9"},
        header_row{"Header_NonNumericId_SortedAfterNumbers",
                   "b:1#1,a:1#2,3:1#3", "3:1#3,a:1#2,b:1#1"}));

// -- malformed input ---------------------------------------------------------

struct bad_row {
  std::string name;
  std::string input;
  std::vector<std::string> mentions; ///< substrings the problem must contain
};

// ctest shows the row by this name (gtest_discover_tests pretty values).
void PrintTo(const bad_row& row, std::ostream* os) {
  *os << row.name;
}

class MalformedSessionHeader : public testing::TestWithParam<bad_row> {};

TEST_P(MalformedSessionHeader, IsProblemNamingTheBadPart) {
  const auto& row = GetParam();
  auto r = parse_session_header(row.input);
  ASSERT_FALSE(r.ok()) << "accepted: " << render(*r);
  for (const auto& m : row.mentions)
    EXPECT_NE(r.error().what.find(m), std::string::npos)
        << "problem '" << r.error().what << "' does not mention '" << m << "'";
}

INSTANTIATE_TEST_SUITE_P(
    Table, MalformedSessionHeader,
    testing::Values(
        bad_row{"Header_Empty_Problem", "", {"empty"}},
        bad_row{"Header_Blank_Problem", "  \t", {"empty"}},
        bad_row{"Header_MissingColon_Problem", "0-1#12", {"entry 1", "':'"}},
        bad_row{
            "Header_LegacyFormWithoutHash_Problem", "0:12", {"'12'", "no '#'"}},
        bad_row{"Header_NonNumericVersion_Problem", "0:x#12", {"version 'x'"}},
        bad_row{"Header_PlusSignVersion_Problem", "0:+1#12", {"version '+1'"}},
        bad_row{"Header_NonNumericGlobalLsn_Problem",
                "0:1#abc",
                {"global LSN 'abc'", "not a decimal"}},
        bad_row{
            "Header_TrailingGarbage_Problem", "0:1#5x", {"global LSN '5x'"}},
        bad_row{
            "Header_EmptyGlobalLsn_Problem", "0:1#", {"global LSN is empty"}},
        bad_row{"Header_NegativeGlobalLsn_Problem",
                "0:1#-5",
                {"global LSN '-5'", "negative"}},
        bad_row{"Header_RegionWithoutEquals_Problem",
                "0:1#5#4",
                {"region entry '4'"}},
        bad_row{
            "Header_EmptyRegionEntry_Problem", "0:1#5#", {"region entry ''"}},
        bad_row{"Header_NonNumericRegionId_Problem",
                "0:1#5#x=1",
                {"region id 'x'"}},
        bad_row{"Header_NegativeLocalLsn_Problem",
                "0:1#5#4=-1",
                {"local LSN '-1'", "negative"}},
        bad_row{"Header_DuplicateRegion_Problem",
                "0:1#5#4=1#4=2",
                {"region 4 appears twice"}},
        bad_row{"Header_GlobalLsnOverflow_Problem",
                "0:1#99999999999999999999",
                {"global LSN", "64 bits"}},
        bad_row{"Header_VersionOverflow_Problem",
                "0:-99999999999999999999#1",
                {"version", "64 bits"}},
        bad_row{"Header_LocalLsnOverflow_Problem",
                "0:1#1#2=9223372036854775808",
                {"local LSN", "64 bits"}},
        bad_row{"Header_EmptyMiddleEntry_Problem",
                "0:1#5,,1:1#6",
                {"entry 2 at offset 6", "empty"}},
        bad_row{"Header_TrailingComma_Problem", "0:1#5,", {"entry 2", "empty"}},
        bad_row{"Header_SecondEntryBad_Problem",
                "0:1#5,1:1#x",
                {"entry 2 at offset 6", "'1:1#x'", "global LSN 'x'"}},
        bad_row{"Header_EmptyRangeId_Problem", ":1#5", {"range id ''"}},
        bad_row{
            "Header_RangeIdWithSpace_Problem", "a b:1#5", {"range id 'a b'"}},
        bad_row{"Header_BinaryBytes_ProblemWithoutRawBytes",
                std::string("0:1#\xff\x01", 6),
                {"global LSN '?"
                 "?'"}}));

TEST(SessionToken, Header_HugeInput_ProblemQuotesOnlyAPrefix) {
  std::string input = "0:1#" + std::string(10000, '7') + "x";
  auto r = parse_session_header(input);
  ASSERT_FALSE(r.ok());
  EXPECT_LT(r.error().what.size(), 400u) << r.error().what;
  EXPECT_NE(r.error().what.find("..."), std::string::npos);
}

TEST(SessionToken, VectorToken_WithoutHash_Problem) {
  auto r = parse_vector_token("12");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().what.find("no '#'"), std::string::npos);
}

// -- merge -------------------------------------------------------------------

struct merge_row {
  std::string name;
  std::string a;
  std::string b;
  std::string merged;
};

// ctest shows the row by this name (gtest_discover_tests pretty values).
void PrintTo(const merge_row& row, std::ostream* os) {
  *os << row.name;
}

class MergeTokens : public testing::TestWithParam<merge_row> {};

TEST_P(MergeTokens, KeepsHigherProgressInEitherOrder) {
  const auto& row = GetParam();
  auto a = token(row.a);
  auto b = token(row.b);
  EXPECT_EQ(render(merge(a, b)), row.merged);
  EXPECT_EQ(render(merge(b, a)), row.merged);
}

INSTANTIATE_TEST_SUITE_P(
    Table, MergeTokens,
    testing::Values(
        merge_row{"Merge_SameVersion_HigherGlobalLsn", "1#5", "1#9", "1#9"},
        merge_row{"Merge_GatewayVersion_HigherGlobalLsn", "-1#12", "-1#5",
                  "-1#12"},
        merge_row{"Merge_SameVersion_MaxPerRegion", "1#5#1=3#2=9",
                  "1#7#1=4#2=2", "1#7#1=4#2=9"},
        merge_row{"Merge_SameVersionDisjointRegions_Union", "1#5#1=3",
                  "1#5#2=4", "1#5#1=3#2=4"},
        // Higher version: its region set; shared regions take the max; the
        // global LSN is the max of both whichever version it came with (SDK
        // rule).
        merge_row{"Merge_HigherVersion_RegionSetOfHigher", "1#9#1=3#2=9",
                  "2#7#1=1#3=5", "2#9#1=3#3=5"},
        merge_row{"Merge_HigherVersionLowerGlobal_GlobalIsMax", "1#20", "2#10",
                  "2#20"},
        merge_row{"Merge_Equal_Unchanged", "3#4#1=1", "3#4#1=1", "3#4#1=1"}));

TEST(SessionToken, MergeInto_DisjointRanges_Union) {
  auto set = header("0:1#5");
  merge_into(set, header("1:1#6"));
  EXPECT_EQ(render(set), "0:1#5,1:1#6");
}

TEST(SessionToken, MergeInto_OverlappingRanges_KeepsHigherLsns) {
  auto set = header("0:1#5#1=2,1:1#9");
  merge_into(set, header("0:1#7#1=1,2:-1#3"));
  EXPECT_EQ(render(set), "0:1#7#1=2,1:1#9,2:-1#3");
}

TEST(SessionToken, Render_EmptySet_EmptyString) {
  EXPECT_EQ(render(session_token_set{}), "");
}

// -- covers (emulator's 404/1002 decision) -----------------------------------

struct covers_row {
  std::string name;
  std::string seen;
  std::string required;
  bool covered;
};

// ctest shows the row by this name (gtest_discover_tests pretty values).
void PrintTo(const covers_row& row, std::ostream* os) {
  *os << row.name;
}

class CoversToken : public testing::TestWithParam<covers_row> {};

TEST_P(CoversToken, Decides) {
  const auto& row = GetParam();
  EXPECT_EQ(covers(token(row.seen), token(row.required)), row.covered);
}

INSTANTIATE_TEST_SUITE_P(
    Table, CoversToken,
    testing::Values(
        covers_row{"Covers_EqualTokens_True", "-1#12", "-1#12", true},
        covers_row{"Covers_SeenAhead_True", "-1#13", "-1#12", true},
        covers_row{"Covers_SeenBehindByOne_False", "-1#11", "-1#12", false},
        covers_row{"Covers_SeenLowerVersion_False", "1#50", "2#10", false},
        covers_row{"Covers_SeenHigherVersion_True", "3#50", "2#10", true},
        covers_row{"Covers_LocalLsnBehind_False", "1#10#1=4", "1#10#1=5",
                   false},
        covers_row{"Covers_LocalLsnAhead_True", "1#10#1=6", "1#10#1=5", true},
        covers_row{"Covers_RegionUnknownToSeen_True", "2#10#1=6", "1#10#7=5",
                   true}));

// -- range id order ----------------------------------------------------------

TEST(SessionToken, RangeIdLess_Numeric_ByValue) {
  range_id_less less;
  EXPECT_TRUE(less("2", "10"));
  EXPECT_FALSE(less("10", "2"));
  EXPECT_TRUE(less("99", "100"));
  EXPECT_TRUE(less("10", "a"));
  EXPECT_FALSE(less("a", "10"));
  // Distinct spellings of one number stay distinct keys, ordered.
  EXPECT_TRUE(less("01", "1") != less("1", "01"));
  // Longer than 64 bits still compares by value.
  EXPECT_TRUE(less("99999999999999999999", "100000000000000000000"));
}

} // namespace
} // namespace session_token_test
