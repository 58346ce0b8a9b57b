// The partition-key-range map: building, completeness, gone ranges,
// incremental combine, lookups and overlap queries, with boundary sweeps
// (every edge, edge minus one, the minimum and the maximum key).

#include "georoute/actors/policy/epk.hpp"
#include "georoute/actors/policy/routing_map.hpp"

#include <algorithm>
#include <gtest/gtest.h>
#include <stdexcept>
#include <string>
#include <vector>

using namespace georoute;

namespace {

partition_key_range rng(std::string id, std::string min, std::string max,
                        std::vector<std::string> parents = {},
                        std::string status = "online") {
  partition_key_range r;
  r.id = std::move(id);
  r.min_inclusive = std::move(min);
  r.max_exclusive = std::move(max);
  r.parents = std::move(parents);
  r.status = std::move(status);
  return r;
}

std::vector<std::string> ids(const std::vector<partition_key_range>& rs) {
  std::vector<std::string> out;
  for (const auto& r : rs)
    out.push_back(r.id);
  return out;
}

std::string id_at(const routing_map& m, std::string_view epk) {
  const auto* r = m.range_by_epk(epk);
  return r ? r->id : "<none>";
}

/// The greatest hex string, at least 32 digits long, that is below `hex` in
/// the EPK order: drop trailing '0's (they do not change the value),
/// decrement the last digit, then fill with 'F'. "7F" -> "7EFFFF…",
/// "FF" -> "FEFFFF…" (32 digits), "05C100" -> "05C0FFFF…".
std::string predecessor(std::string hex) {
  const std::size_t width = std::max<std::size_t>(32, hex.size());
  while (!hex.empty() && hex.back() == '0')
    hex.pop_back();
  if (hex.empty())
    throw std::invalid_argument("the minimum EPK has no predecessor");
  char& last = hex.back();
  last = last == 'A' ? '9' : static_cast<char>(last - 1);
  hex.resize(width, 'F');
  return hex;
}

epk_range span(std::string min, std::string max, bool min_inclusive = true,
               bool max_inclusive = false) {
  return epk_range{std::move(min), std::move(max), min_inclusive,
                   max_inclusive};
}

/// The SDK's classic four-range map (CollectionRoutingMapTest), unsorted.
routing_map sdk_map() {
  auto m = routing_map::create_complete(
      {rng("2", "0000000050", "0000000070"), rng("0", "", "0000000030"),
       rng("1", "0000000030", "0000000050"), rng("3", "0000000070", "FF")},
      "etag-1");
  EXPECT_TRUE(m.ok()) << m.error().what;
  return std::move(m).value();
}

/// Four quarters with short boundaries, as an emulator might split.
routing_map quarter_map() {
  auto m =
      routing_map::create_complete({rng("0", "", "3F"), rng("1", "3F", "7F"),
                                    rng("2", "7F", "BF"), rng("3", "BF", "FF")},
                                   "q");
  EXPECT_TRUE(m.ok()) << m.error().what;
  return std::move(m).value();
}

/// Every edge lands in the range starting there (also zero-padded), every
/// edge minus one in the range before, "" in the first range, the maximum
/// just below "FF" in the last, and "FF" itself nowhere.
void sweep_boundaries(const routing_map& m) {
  const auto& rs = m.ranges();
  ASSERT_FALSE(rs.empty());
  EXPECT_EQ(id_at(m, ""), rs.front().id);
  EXPECT_EQ(id_at(m, "FEFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF"), rs.back().id);
  EXPECT_EQ(id_at(m, predecessor("FF")), rs.back().id);
  EXPECT_EQ(m.range_by_epk("FF"), nullptr);
  EXPECT_EQ(m.range_by_epk("FF00"), nullptr);
  EXPECT_EQ(m.range_by_epk("FF01"), nullptr);
  EXPECT_EQ(m.range_by_epk("FFFFFFFF"), nullptr);
  for (std::size_t i = 0; i < rs.size(); ++i) {
    const auto& r = rs[i];
    SCOPED_TRACE("range " + r.id + " [" + r.min_inclusive + ", " +
                 r.max_exclusive + ")");
    EXPECT_EQ(id_at(m, r.min_inclusive), r.id);
    EXPECT_EQ(id_at(m, r.min_inclusive + "0000"), r.id);
    EXPECT_EQ(id_at(m, predecessor(r.max_exclusive)), r.id);
    if (i > 0) {
      EXPECT_EQ(id_at(m, predecessor(r.min_inclusive)), rs[i - 1].id);
    }
    // A point query finds exactly the range, at both of its ends.
    EXPECT_EQ(
        ids(m.overlapping(span(r.min_inclusive, r.min_inclusive, true, true))),
        std::vector<std::string>{r.id});
    EXPECT_EQ(
        ids(m.overlapping(span(predecessor(r.max_exclusive),
                               predecessor(r.max_exclusive), true, true))),
        std::vector<std::string>{r.id});
    // The range itself, as a query, overlaps only itself.
    EXPECT_EQ(ids(m.overlapping(span(r.min_inclusive, r.max_exclusive))),
              std::vector<std::string>{r.id});
  }
}

std::string problem_of(const result<routing_map>& m) {
  EXPECT_FALSE(m.ok()) << "expected a problem, got a map";
  return m.ok() ? std::string{} : m.error().what;
}

} // namespace

// -- Test helpers -------------------------------------------------------------

TEST(RoutingMapHelpers, Predecessor_DecrementsAndFills) {
  EXPECT_EQ(predecessor("7F"), "7EFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF");
  EXPECT_EQ(predecessor("FF"), "FEFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF");
  EXPECT_EQ(predecessor("0000000030"), "000000002FFFFFFFFFFFFFFFFFFFFFFF");
  EXPECT_EQ(predecessor("05C100"), "05C0FFFFFFFFFFFFFFFFFFFFFFFFFFFF");
  EXPECT_EQ(predecessor("A0"), "9FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF");
  EXPECT_LT(epk_compare(predecessor("7F"), "7F"), 0);
}

// -- Building -----------------------------------------------------------------

TEST(RoutingMap, CreateComplete_UnsortedInput_SortedByMin) {
  const auto m = sdk_map();
  EXPECT_EQ(ids(m.ranges()), (std::vector<std::string>{"0", "1", "2", "3"}));
  EXPECT_EQ(m.etag(), "etag-1");
  EXPECT_TRUE(m.gone_ids().empty());
}

TEST(RoutingMap, CreateComplete_SingleFullRange_Accepted) {
  auto m = routing_map::create_complete({rng("0", "", "FF")}, "e");
  ASSERT_TRUE(m.ok()) << m.error().what;
  EXPECT_EQ(id_at(*m, ""), "0");
  EXPECT_EQ(id_at(*m, "7F"), "0");
  EXPECT_EQ(m->range_by_epk("FF"), nullptr);
}

TEST(RoutingMap, CreateComplete_DuplicateId_LastWins) {
  auto m = routing_map::create_complete({rng("0", "", "30"),
                                         rng("1", "30", "FF", {}, "splitting"),
                                         rng("1", "30", "FF", {}, "online")},
                                        "e");
  ASSERT_TRUE(m.ok()) << m.error().what;
  ASSERT_EQ(m->ranges().size(), 2u);
  EXPECT_EQ(m->range_by_id("1")->status, "online");
}

TEST(RoutingMap, Incomplete_MissingFirst_Problem) {
  const auto what = problem_of(routing_map::create_complete(
      {rng("1", "0000000030", "0000000050"), rng("2", "0000000050", "FF")},
      "e"));
  EXPECT_NE(what.find("does not start at \"\""), std::string::npos) << what;
  EXPECT_NE(what.find("\"1\""), std::string::npos) << what;
}

TEST(RoutingMap, Incomplete_MissingLast_Problem) {
  const auto what = problem_of(routing_map::create_complete(
      {rng("0", "", "0000000030"), rng("1", "0000000030", "0000000050")}, "e"));
  EXPECT_NE(what.find("does not end at \"FF\""), std::string::npos) << what;
}

TEST(RoutingMap, Incomplete_Gap_Problem) {
  const auto what = problem_of(routing_map::create_complete(
      {rng("2", "", "0000000030"), rng("3", "0000000031", "FF")}, "e"));
  EXPECT_EQ(what.rfind("gap between", 0), 0u) << what;
  EXPECT_NE(what.find("\"2\""), std::string::npos) << what;
  EXPECT_NE(what.find("\"3\""), std::string::npos) << what;
}

TEST(RoutingMap, Incomplete_SameRangesWithoutGap_Accepted) {
  EXPECT_TRUE(
      routing_map::create_complete(
          {rng("2", "", "0000000030"), rng("3", "0000000030", "FF")}, "e")
          .ok());
}

TEST(RoutingMap, Overlap_Problem) {
  const auto what = problem_of(
      routing_map::create_complete({rng("1", "0000000020", "0000000030"),
                                    rng("2", "0000000025", "0000000035")},
                                   "e"));
  EXPECT_EQ(what.rfind("ranges overlap:", 0), 0u) << what;
}

TEST(RoutingMap, OverlapInCompleteCover_Problem) {
  const auto what = problem_of(routing_map::create_complete(
      {rng("0", "", "40"), rng("1", "30", "FF")}, "e"));
  EXPECT_EQ(what.rfind("ranges overlap:", 0), 0u) << what;
}

TEST(RoutingMap, BoundaryWrittenTwoWays_Problem) {
  const auto what = problem_of(routing_map::create_complete(
      {rng("0", "", "05C100"), rng("1", "05C1", "FF")}, "e"));
  EXPECT_NE(what.find("written two ways"), std::string::npos) << what;
}

TEST(RoutingMap, NoRanges_Problem) {
  const auto what = problem_of(routing_map::create_complete({}, "e"));
  EXPECT_NE(what.find("no partition key ranges"), std::string::npos) << what;
}

TEST(RoutingMap, EmptyRange_Problem) {
  const auto what = problem_of(routing_map::create_complete(
      {rng("0", "", "30"), rng("1", "30", "3000"), rng("2", "30", "FF")}, "e"));
  EXPECT_NE(what.find("empty or inverted"), std::string::npos) << what;
}

TEST(RoutingMap, NonIntegerId_Problem) {
  const auto what =
      problem_of(routing_map::create_complete({rng("zero", "", "FF")}, "e"));
  EXPECT_NE(what.find("\"zero\" is not a 32-bit integer"), std::string::npos)
      << what;
}

// -- Gone ranges
// ----------------------------------------------------------------

TEST(RoutingMap, GoneRanges_UnionOfParents) {
  auto m =
      routing_map::create_complete({rng("2", "", "0000000030", {"1", "0"}),
                                    rng("3", "0000000030", "0000000032", {"5"}),
                                    rng("4", "0000000032", "FF")},
                                   "e");
  ASSERT_TRUE(m.ok()) << m.error().what;
  EXPECT_EQ(m->gone_ids(), (std::vector<std::string>{"0", "1", "5"}));
  for (const char* id : {"0", "1", "5"})
    EXPECT_TRUE(m->is_gone(id)) << id;
  for (const char* id : {"2", "3", "4", "100"})
    EXPECT_FALSE(m->is_gone(id)) << id;
}

TEST(RoutingMap, GoneRanges_ParentInListingDropped) {
  // A full listing during a split still holds the parent; it is gone.
  auto m = routing_map::create_complete({rng("0", "", "FF"),
                                         rng("1", "", "80", {"0"}),
                                         rng("2", "80", "FF", {"0"})},
                                        "e");
  ASSERT_TRUE(m.ok()) << m.error().what;
  EXPECT_EQ(ids(m->ranges()), (std::vector<std::string>{"1", "2"}));
  EXPECT_EQ(m->range_by_id("0"), nullptr);
  EXPECT_TRUE(m->is_gone("0"));
}

// -- Combine
// ----------------------------------------------------------------------

TEST(RoutingMap, TryCombine_SplitOfZero_Works) {
  auto m = routing_map::create_complete(
      {rng("0", "", "80"), rng("1", "80", "FF")}, "etag-1");
  ASSERT_TRUE(m.ok()) << m.error().what;
  auto next = m->try_combine(
      {rng("2", "", "40", {"0"}), rng("3", "40", "80", {"0"})}, "etag-2");
  ASSERT_TRUE(next.ok()) << next.error().what;
  EXPECT_EQ(ids(next->ranges()), (std::vector<std::string>{"2", "3", "1"}));
  EXPECT_EQ(next->etag(), "etag-2");
  EXPECT_EQ(next->gone_ids(), std::vector<std::string>{"0"});
  EXPECT_EQ(next->range_by_id("0"), nullptr);
  EXPECT_EQ(id_at(*next, "3F"), "2");
  EXPECT_EQ(id_at(*next, "40"), "3");
  EXPECT_EQ(id_at(*next, "7FFF"), "3");
  EXPECT_EQ(id_at(*next, "80"), "1");
  EXPECT_EQ(next->highest_range_id(), 3);
  sweep_boundaries(*next);
  // The old snapshot is untouched.
  EXPECT_EQ(ids(m->ranges()), (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(m->etag(), "etag-1");
}

TEST(RoutingMap, TryCombine_HalfOfSplit_GapProblem) {
  auto m = routing_map::create_complete(
      {rng("0", "", "80"), rng("1", "80", "FF")}, "etag-1");
  ASSERT_TRUE(m.ok()) << m.error().what;
  const auto what =
      problem_of(m->try_combine({rng("2", "", "40", {"0"})}, "etag-2"));
  EXPECT_EQ(what.rfind("gap between", 0), 0u) << what;
  EXPECT_EQ(m->etag(), "etag-1");
}

TEST(RoutingMap, TryCombine_NothingNew_KeepsRangesTakesEtag) {
  const auto m = sdk_map();
  auto next = m.try_combine({}, "etag-2");
  ASSERT_TRUE(next.ok()) << next.error().what;
  EXPECT_EQ(ids(next->ranges()), ids(m.ranges()));
  EXPECT_EQ(next->etag(), "etag-2");
}

TEST(RoutingMap, TryCombine_ReplacesSameId) {
  const auto m = sdk_map();
  auto next = m.try_combine(
      {rng("1", "0000000030", "0000000050", {}, "offline")}, "etag-2");
  ASSERT_TRUE(next.ok()) << next.error().what;
  EXPECT_EQ(next->range_by_id("1")->status, "offline");
  EXPECT_EQ(m.range_by_id("1")->status, "online");
}

TEST(RoutingMap, TryCombine_SdkSequence) {
  const auto m = sdk_map();
  // "0" splits into "4" and "5".
  auto a = m.try_combine({rng("4", "", "0000000010", {"0"}),
                          rng("5", "0000000010", "0000000030", {"0"})},
                         "e");
  ASSERT_TRUE(a.ok()) << a.error().what;
  EXPECT_EQ(ids(a->ranges()),
            (std::vector<std::string>{"4", "5", "1", "2", "3"}));
  // The first map learns of the grandchildren directly.
  auto b = m.try_combine({rng("6", "", "0000000005", {"0", "4"}),
                          rng("7", "0000000005", "0000000010", {"0", "4"}),
                          rng("8", "0000000010", "0000000015", {"0", "5"}),
                          rng("9", "0000000015", "0000000030", {"0", "5"})},
                         "e");
  ASSERT_TRUE(b.ok()) << b.error().what;
  EXPECT_EQ(ids(b->ranges()),
            (std::vector<std::string>{"6", "7", "8", "9", "1", "2", "3"}));
  EXPECT_EQ(b->gone_ids(), (std::vector<std::string>{"0", "4", "5"}));
  // Only one grandchild: the rest of "0" is missing.
  const auto what = problem_of(
      m.try_combine({rng("10", "", "0000000002", {"0", "4", "6"})}, "e"));
  EXPECT_EQ(what.rfind("gap between", 0), 0u) << what;
}

TEST(RoutingMap, TryCombine_OldGoneStaysGone) {
  auto m = routing_map::create_complete(
      {rng("1", "", "80", {"0"}), rng("2", "80", "FF", {"0"})}, "e1");
  ASSERT_TRUE(m.ok()) << m.error().what;
  // A stale copy of "0" in a later page must not come back.
  auto next = m->try_combine({rng("0", "", "FF")}, "e2");
  ASSERT_TRUE(next.ok()) << next.error().what;
  EXPECT_EQ(ids(next->ranges()), (std::vector<std::string>{"1", "2"}));
  EXPECT_TRUE(next->is_gone("0"));
}

// -- Highest id
// -----------------------------------------------------------------

TEST(RoutingMap, HighestRangeId_Table) {
  struct row {
    const char* name;
    std::vector<partition_key_range> ranges;
    long long expected;
  };
  const std::vector<row> rows = {
      {"sdk map", {rng("0", "", "30"), rng("3", "30", "FF")}, 3},
      {"numeric not lexical", {rng("9", "", "30"), rng("10", "30", "FF")}, 10},
      {"offline skipped",
       {rng("0", "", "30"), rng("7", "30", "60", {}, "Offline"),
        rng("3", "60", "FF")},
       3},
      {"all offline", {rng("4", "", "FF", {}, "offline")}, -1},
  };
  for (const auto& r : rows) {
    auto m = routing_map::create_complete(r.ranges, "e");
    ASSERT_TRUE(m.ok()) << r.name << ": " << m.error().what;
    EXPECT_EQ(m->highest_range_id(), r.expected) << r.name;
  }
}

// -- Lookups
// --------------------------------------------------------------------

TEST(RoutingMap, RangeById_KnownAndUnknown) {
  const auto m = sdk_map();
  ASSERT_NE(m.range_by_id("0"), nullptr);
  EXPECT_EQ(m.range_by_id("0")->max_exclusive, "0000000030");
  EXPECT_EQ(m.range_by_id("1")->min_inclusive, "0000000030");
  EXPECT_EQ(m.range_by_id("4"), nullptr);
  EXPECT_EQ(m.range_by_id(""), nullptr);
  EXPECT_EQ(m.range_by_id("01"), nullptr);
}

TEST(RoutingMap, RangeByEpk_Table) {
  const auto m = sdk_map();
  struct row {
    const char* epk;
    const char* id;
  };
  const row rows[] = {
      {"", "0"},
      {"00", "0"},
      {"0000000000", "0"},
      {"0000000003", "0"},
      {"000000002FFFFFFF", "0"},
      {"0000000030", "1"},
      {"000000003000000000", "1"},
      {"0000000031", "1"},
      {"0000000049", "1"},
      {"0000000050", "2"},
      {"0000000071", "3"},
      {"7F", "3"},
      {"FE", "3"},
      {"FEFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF", "3"},
      {"FF", "<none>"},
      {"FF00", "<none>"},
      {"FFFF", "<none>"},
  };
  for (const auto& r : rows)
    EXPECT_EQ(id_at(m, r.epk), r.id) << r.epk;
}

TEST(RoutingMap, BoundarySweep_SdkMap) {
  sweep_boundaries(sdk_map());
}

TEST(RoutingMap, BoundarySweep_QuarterMap) {
  sweep_boundaries(quarter_map());
}

TEST(RoutingMap, BoundarySweep_RealEpks) {
  // Boundaries that are real V2 EPKs of single keys, as a split might pick.
  std::vector<std::string> cuts = {
      epk_v2({pk_component{5.0}}),
      epk_v2({pk_component{std::string{"redmond"}}}),
      epk_v2({pk_component{true}}), epk_v2({pk_component{pk_null{}}})};
  std::sort(cuts.begin(), cuts.end());
  std::vector<partition_key_range> rs;
  std::string prev;
  for (std::size_t i = 0; i < cuts.size(); ++i) {
    rs.push_back(rng(std::to_string(i), prev, cuts[i]));
    prev = cuts[i];
  }
  rs.push_back(rng(std::to_string(cuts.size()), prev, "FF"));
  auto m = routing_map::create_complete(rs, "e");
  ASSERT_TRUE(m.ok()) << m.error().what;
  sweep_boundaries(*m);
  EXPECT_EQ(id_at(*m, "22E342F38A486A088463DFF7838A5963"),
            m->range_by_epk(cuts[2])->id);
}

// -- Length-aware comparison
// ------------------------------------------------------

TEST(RoutingMap, LengthAware_PartialEpkAtPaddedBoundary_RangeStartingThere) {
  auto m = routing_map::create_complete(
      {rng("0", "", "05C100"), rng("1", "05C100", "FF")}, "e");
  ASSERT_TRUE(m.ok()) << m.error().what;
  EXPECT_EQ(epk_compare("05C1", "05C100"), 0);
  EXPECT_EQ(id_at(*m, "05C1"), "1");
  EXPECT_EQ(id_at(*m, "05C100"), "1");
  EXPECT_EQ(id_at(*m, "05C0FF"), "0");
  EXPECT_EQ(ids(m->overlapping(span("05C1", "05C1", true, true))),
            std::vector<std::string>{"1"});
  EXPECT_EQ(ids(m->overlapping(span("05C0", "05C1"))),
            std::vector<std::string>{"0"});
}

namespace {

/// The map of the SDK's
/// TestCollectionRoutingMapWithLengthAwareRangeComparators, mixing 32- and
/// 64-digit boundaries; `pad` right-pads every boundary but "" and "FF" to 128
/// digits (the test's "fully specified" variant).
routing_map length_aware_map(bool pad) {
  const std::vector<std::string> cuts = {
      "03559A67F2724111B5E565DFA8711A00",
      "06AB34CFE4E482236BCACBBF50E234AB00000000000000000000000000000000",
      "0BD3FBE846AF75790CE63F78B1A81620",
      "0BD3FBE846AF75790CE63F78B1A8163100000000000000000000000000000000",
      "0BD3FBE846AF75790CE63F78B1A81631FF",
      "0D4DC2CD8F49C65A8E0C5306B61B4343",
      "0D4EC2CD8F49C65A8E0C5306B61B4343",
      "0D5DC2CD8F49C65A8E0C5306B61B4343",
      "0DCEB8CE51C6BFE84F4BD9409F69B9BB2164DEBD78C50C850E0C1E3E3F0579ED",
      "1080F600C27CF98DC13F8639E94E7676",
  };
  const char* range_ids[] = {"0", "1",  "2",  "3", "11", "12",
                             "4", "44", "24", "5", "9"};
  auto padded = [pad](std::string s) {
    if (pad && !s.empty() && s != "FF") s.resize(128, '0');
    return s;
  };
  std::vector<partition_key_range> rs;
  std::string prev;
  for (std::size_t i = 0; i <= cuts.size(); ++i) {
    const std::string next = i < cuts.size() ? cuts[i] : "FF";
    rs.push_back(rng(range_ids[i], padded(prev), padded(next)));
    prev = next;
  }
  auto m = routing_map::create_complete(rs, "e");
  EXPECT_TRUE(m.ok()) << m.error().what;
  return std::move(m).value();
}

} // namespace

TEST(RoutingMap, LengthAware_SdkScenarios_MatchSdk) {
  for (bool pad : {false, true}) {
    SCOPED_TRACE(pad ? "fully specified" : "mixed lengths");
    const auto m = length_aware_map(pad);
    sweep_boundaries(m);
    // 1.1: a partial EPK equal to the padded max of "1" / min of "2": only
    // "2" (the legacy ordinal comparer also returns "1").
    EXPECT_EQ(ids(m.overlapping(span("06AB34CFE4E482236BCACBBF50E234AB",
                                     "06AB34CFE4E482236BCACBBF50E234ABFF"))),
              std::vector<std::string>{"2"});
    EXPECT_EQ(id_at(m, "06AB34CFE4E482236BCACBBF50E234AB"), "2");
    // 1.2: the prefix range of a boundary is exactly range "11".
    EXPECT_EQ(ids(m.overlapping(span("0BD3FBE846AF75790CE63F78B1A81631",
                                     "0BD3FBE846AF75790CE63F78B1A81631FF"))),
              std::vector<std::string>{"11"});
    EXPECT_EQ(
        ids(m.overlapping(span(
            "0D4DC2CD8F49C65A8E0C5306B61B43440D4DC2CD8F49C65A8E0C5306B61B4343",
            "0D4DC2CD8F49C65A8E0C5306B61B43440D4DC2CD8F49C65A8E0C5306B61B434"
            "4"))),
        std::vector<std::string>{"4"});
    EXPECT_EQ(ids(m.overlapping(span("0BD3FBE846AF75790CE63F78B1A81620",
                                     "0BD3FBE846AF75790CE63F78B1A81631"))),
              std::vector<std::string>{"3"});
    // 1.3: a partial EPK spanning two ranges.
    EXPECT_EQ(ids(m.overlapping(span("0DCEB8CE51C6BFE84F4BD9409F69B9BB",
                                     "0DCEB8CE51C6BFE84F4BD9409F69B9BBFF"))),
              (std::vector<std::string>{"24", "5"}));
    // 1.4 and 1.5: points inside a range.
    EXPECT_EQ(ids(m.overlapping(span("02559A67F2724111B5E565DFA8711A00",
                                     "02559A67F2724111B5E565DFA8711A00", true,
                                     true))),
              std::vector<std::string>{"0"});
    EXPECT_EQ(ids(m.overlapping(span("0D4DC2CD8F49C65A8E0C5306B61B4345",
                                     "0D4DC2CD8F49C65A8E0C5306B61B4345", true,
                                     true))),
              std::vector<std::string>{"4"});
    // 1.6: a padded query against the (possibly partial) range "4".
    EXPECT_EQ(
        ids(m.overlapping(span(
            "0D4DC2CD8F49C65A8E0C5306B61B434300000000000000000000000000000000",
            "0D4EC2CD8F49C65A8E0C5306B61B43430000000000000000000000000000000"
            "0"))),
        std::vector<std::string>{"4"});
  }
}

TEST(RoutingMap, LengthAware_FullHpkEpkAtTrimmedBoundary_RangeStartingThere) {
  // A 128-digit split boundary = 3 hashes + 32 zeros. The 96-digit EPK of a
  // full 3-level key equal to its first 96 digits resolves to the range that
  // starts at the boundary under the consistent length-aware order. (dotnet
  // PR #5850 argues the service orders ordinally and would place it in "1";
  // see routing_map.hpp.) Either way the answer is one range, never none.
  const std::string boundary =
      "20D8EBCDF57AFA2EF9C0E7058BC2A6352816441F2F87193E9FCC5F9B374B0A58"
      "2816441F2F87193E9FCC5F9B374B0A5800000000000000000000000000000000";
  auto m = routing_map::create_complete(
      {rng("1", "", boundary), rng("2", boundary, "FF")}, "e");
  ASSERT_TRUE(m.ok()) << m.error().what;
  const std::string epk96 = boundary.substr(0, 96);
  EXPECT_EQ(id_at(*m, epk96), "2");
  EXPECT_EQ(ids(m->overlapping(span(epk96, epk96, true, true))),
            std::vector<std::string>{"2"});
  const std::string before =
      "00EB57A7EE7D5CAFE2751C18938111BC33F19FD36AD3B8EFC4A4AA4A09878654"
      "AABBCCDDAABBCCDDAABBCCDD00000000";
  EXPECT_EQ(ids(m->overlapping(span(before, before, true, true))),
            std::vector<std::string>{"1"});
  const std::string prefix = before.substr(0, 64);
  EXPECT_EQ(ids(m->overlapping(span(prefix, prefix + "FF", true, true))),
            std::vector<std::string>{"1"});
}

// -- Overlapping
// -------------------------------------------------------------------

TEST(RoutingMap, Overlapping_FullRange_AllRanges) {
  const auto m = sdk_map();
  EXPECT_EQ(ids(m.overlapping(span("", "FF"))),
            (std::vector<std::string>{"0", "1", "2", "3"}));
  EXPECT_EQ(ids(m.overlapping(span("", "FF", true, true))),
            (std::vector<std::string>{"0", "1", "2", "3"}));
}

TEST(RoutingMap, Overlapping_Table) {
  const auto m = sdk_map();
  struct row {
    const char* name;
    epk_range r;
    std::vector<std::string> expected;
  };
  const std::vector<row> rows = {
      {"empty at min", span("", "", false, false), {}},
      {"half-open empty", span("0000000040", "0000000040"), {}},
      {"min-open empty", span("0000000040", "0000000040", false, true), {}},
      {"inverted", span("0000000050", "0000000040", true, true), {}},
      {"at FF", span("FF", "FFFF"), {}},
      {"point", span("0000000040", "0000000040", true, true), {"1"}},
      {"point at edge", span("0000000050", "0000000050", true, true), {"2"}},
      {"point at min", span("", "", true, true), {"0"}},
      {"up to edge, exclusive", span("0000000040", "0000000050"), {"1"}},
      {"up to edge, inclusive",
       span("0000000040", "0000000050", true, true),
       {"1", "2"}},
      {"from edge, exclusive",
       span("0000000030", "0000000031", false, false),
       {"1"}},
      {"from below edge, exclusive",
       span("000000002F", "0000000031", false, false),
       {"0", "1"}},
      {"spanning three", span("000000002F", "0000000051"), {"0", "1", "2"}},
      {"last range", span("0000000070", "FF", true, true), {"3"}},
      {"beyond FF", span("0000000080", "FFFF"), {"3"}},
      {"padded edge inclusive",
       span("00000000300000", "0000000050000000", true, true),
       {"1", "2"}},
  };
  for (const auto& r : rows)
    EXPECT_EQ(ids(m.overlapping(r.r)), r.expected) << r.name;
}

TEST(RoutingMap, Overlapping_SeveralRanges_SortedDeduplicated) {
  const auto m = sdk_map();
  EXPECT_EQ(ids(m.overlapping(std::vector<epk_range>{
                span("0000000040", "0000000045", true, true),
                span("0000000045", "0000000046", true, true),
                span("0000000046", "0000000050", true, true)})),
            (std::vector<std::string>{"1", "2"}));
  EXPECT_EQ(ids(m.overlapping(std::vector<epk_range>{
                span("0000000071", "0000000072"), span("", "0000000001"),
                span("0000000072", "0000000073")})),
            (std::vector<std::string>{"0", "3"}));
  EXPECT_TRUE(m.overlapping(std::vector<epk_range>{}).empty());
}
