#include "georoute/actors/policy/query_merge.hpp"

#include <algorithm>
#include <cctype>
#include <gtest/gtest.h>
#include <limits>
#include <optional>
#include <ostream>
#include <random>
#include <set>
#include <string>
#include <vector>

using namespace georoute;
using nlohmann::json;

namespace {

constexpr size_t no_split = std::numeric_limits<size_t>::max();

json J(const char* text) {
  return json::parse(text);
}

// -- query plans -------------------------------------------------------------

query_info order_by(std::vector<std::string> directions) {
  query_info q;
  for (size_t i = 0; i < directions.size(); ++i)
    q.order_by_expressions.push_back("c.k" + std::to_string(i));
  q.order_by = std::move(directions);
  q.rewritten_query = "SELECT c._rid, [...] AS orderByItems, c AS payload";
  return q;
}

query_info plain() {
  query_info q;
  q.rewritten_query = "SELECT * FROM c";
  return q;
}

query_info aggregate(std::string name) {
  query_info q;
  q.aggregates = {std::move(name)};
  q.has_select_value = true;
  q.rewritten_query = "SELECT VALUE [{\"item\": ...}] FROM c";
  return q;
}

query_info top(query_info q, int64_t n) {
  q.top = n;
  return q;
}

query_info window(query_info q, int64_t offset, int64_t limit) {
  q.offset = offset;
  q.limit = limit;
  return q;
}

query_info distinct(query_info q, std::string type) {
  q.distinct_type = std::move(type);
  return q;
}

// -- rows
// ----------------------------------------------------------------------

/// An ORDER BY row with sort keys `keys` (JSON array text; `{}` is an
/// undefined key) and `payload`.
json obp(const std::string& rid, const char* keys, json payload) {
  json items = json::array();
  for (const auto& k : json::parse(keys))
    items.push_back(k.is_object() && k.empty() ? json::object()
                                               : json{{"item", k}});
  return {{"_rid", rid}, {"orderByItems", items}, {"payload", payload}};
}

/// An ORDER BY row whose payload is its rid.
json ob(const std::string& rid, const char* keys) {
  return obp(rid, keys, rid);
}

json no_payload(const std::string& rid, const char* keys) {
  auto r = ob(rid, keys);
  r.erase("payload");
  return r;
}

/// One aggregate row as a range returns it (the emulator: an array of one
/// object).
json agg(const char* element) {
  return json::array({json::parse(element)});
}

using rows = std::vector<json>;
using pages = std::vector<rows>;

std::string id_of(const json& row) {
  if (row.is_string()) return row.get<std::string>();
  if (row.is_object() && row.contains("_rid"))
    return row["_rid"].get<std::string>();
  return row.dump();
}

/// The pages a child of a split sends for the parent's continuations: the
/// parent's pages restricted to the child's documents.
pages child_pages(const pages& parent, const std::set<std::string>& first,
                  bool is_first) {
  pages out;
  for (const auto& p : parent) {
    rows kept;
    for (const auto& r : p)
      if ((first.count(id_of(r)) > 0) == is_first) kept.push_back(r);
    out.push_back(std::move(kept));
  }
  return out;
}

std::string dump(const std::vector<json>& out) {
  return json(out).dump();
}

// -- a caller that follows ranges_needed()
// -------------------------------------

/// How a test caller feeds pages: only what ranges_needed() asks for; every
/// page of every range first; or one page of the next open range in turn
/// whenever a drain gives nothing (an asynchronous caller).
enum class drive { needed, prefetch, round_robin };

std::ostream& operator<<(std::ostream& os, drive d) {
  return os << (d == drive::needed     ? "needed"
                : d == drive::prefetch ? "prefetch"
                                       : "round robin");
}

const drive all_drives[] = {drive::needed, drive::prefetch, drive::round_robin};

/// Pages are named by their index: continuation "p<k>" fetches page k.
struct driver {
  query_merger m;
  std::vector<pages> scripts; ///< parallel to m's ranges
  std::vector<json> out;
  size_t turn = 0; ///< round robin: the range to feed next

  void feed(size_t i) {
    const auto& token = m.continuation_of(i);
    size_t k = token ? std::stoul(token->substr(1)) : 0;
    const auto& ps = scripts[i];
    rows page = k < ps.size() ? ps[k] : rows{};
    std::optional<std::string> next;
    if (k + 1 < ps.size()) next = "p" + std::to_string(k + 1);
    auto p = m.add_page(i, page, next);
    ASSERT_FALSE(p) << p->what;
  }

  /// One action: feed one page or drain one result. False once finished.
  bool step(drive how) {
    if (m.finished()) return false;
    if (how == drive::round_robin) {
      auto got = m.drain(1);
      out.insert(out.end(), got.begin(), got.end());
      if (!got.empty()) return true;
      for (size_t n = 0; n < m.range_count(); ++n) {
        size_t i = (turn + n) % m.range_count();
        if (!m.range_done(i)) {
          turn = i + 1;
          feed(i);
          return true;
        }
      }
      if (!m.finished()) ADD_FAILURE() << "stuck: every range done";
      return false;
    }
    if (how == drive::prefetch)
      for (size_t i = 0; i < m.range_count(); ++i)
        if (!m.range_done(i)) {
          feed(i);
          return true;
        }
    auto needed = m.ranges_needed();
    if (!needed.empty()) {
      feed(needed.front());
      return true;
    }
    // drain may consume rows that DISTINCT or OFFSET swallow and then wait
    // for a page: stuck only if it then needs nothing either.
    auto got = m.drain(1);
    if (got.empty() && !m.finished() && m.ranges_needed().empty()) {
      ADD_FAILURE() << "stuck: nothing needed, nothing to drain";
      return false;
    }
    out.insert(out.end(), got.begin(), got.end());
    return true;
  }

  size_t run(drive how, size_t max_steps = 10000) {
    size_t n = 0;
    while (n < max_steps && step(how))
      ++n;
    return n;
  }

  void split(size_t index, const std::set<std::string>& first) {
    auto parent = m.range(index);
    auto p = m.replace_range(index,
                             {query_range{parent.id + "a", parent.min, "80"},
                              query_range{parent.id + "b", "80", parent.max}});
    ASSERT_FALSE(p) << p->what;
    auto script = scripts[index];
    scripts.erase(scripts.begin() + static_cast<ptrdiff_t>(index));
    scripts.insert(
        scripts.begin() + static_cast<ptrdiff_t>(index),
        {child_pages(script, first, true), child_pages(script, first, false)});
  }
};

std::vector<query_range> ranges_of(size_t n) {
  std::vector<query_range> out;
  for (size_t i = 0; i < n; ++i)
    out.push_back(query_range{std::to_string(i), "", "FF"});
  return out;
}

driver fresh(const query_info& info, const std::vector<pages>& scripts) {
  auto m = query_merger::create(info, ranges_of(scripts.size()));
  EXPECT_TRUE(m) << m.error().what;
  return driver{std::move(*m), scripts, {}};
}

/// Takes the continuation of `d`, sends it through its text form and
/// continues in a new merger with the same ranges.
std::optional<driver> resumed(const query_info& info, const driver& d,
                              std::string* text) {
  auto c = d.m.continuation();
  EXPECT_TRUE(c) << c.error().what;
  if (!c) return std::nullopt;
  *text = encode_continuation(*c);
  auto back = decode_continuation(*text);
  EXPECT_TRUE(back) << back.error().what << "\n" << *text;
  if (!back) return std::nullopt;
  auto m = query_merger::resume(info, *back);
  EXPECT_TRUE(m) << m.error().what << "\n" << *text;
  if (!m) return std::nullopt;
  return driver{std::move(*m), d.scripts, d.out};
}

// -- the merge table
// -------------------------------------------------------------

struct merge_row {
  merge_row(std::string name, query_info info, std::vector<pages> ranges,
            std::string expected, size_t split = no_split,
            std::set<std::string> first_child = {})
      : name(std::move(name)), info(std::move(info)), ranges(std::move(ranges)),
        expected(std::move(expected)), split(split),
        first_child(std::move(first_child)) {}

  std::string name;
  query_info info;
  std::vector<pages> ranges;
  std::string expected;              ///< JSON array of the results
  size_t split;                      ///< the range the split sweeps split
  std::set<std::string> first_child; ///< rows of the split's first child
};

void PrintTo(const merge_row& row, std::ostream* os) {
  *os << row.name;
}

class MergeTable : public testing::TestWithParam<merge_row> {
protected:
  std::string want() const { return J(GetParam().expected.c_str()).dump(); }
};

TEST_P(MergeTable, FollowingRangesNeeded_Expected) {
  auto d = fresh(GetParam().info, GetParam().ranges);
  d.run(drive::needed);
  EXPECT_TRUE(d.m.finished());
  EXPECT_EQ(dump(d.out), want());
}

TEST_P(MergeTable, RoundRobinFeedsGreedyDrains_Expected) {
  auto d = fresh(GetParam().info, GetParam().ranges);
  d.run(drive::round_robin);
  EXPECT_TRUE(d.m.finished());
  EXPECT_EQ(dump(d.out), want());
}

TEST_P(MergeTable, EverythingPrefetchedDrainedAtOnce_Expected) {
  auto d = fresh(GetParam().info, GetParam().ranges);
  for (size_t i = 0; i < d.m.range_count(); ++i)
    while (!d.m.range_done(i))
      d.feed(i);
  EXPECT_TRUE(d.m.ranges_needed().empty());
  d.out = d.m.drain(1000);
  EXPECT_TRUE(d.m.finished());
  EXPECT_EQ(dump(d.out), want());
}

TEST_P(MergeTable, ResumedAfterEveryStep_Expected) {
  const auto& row = GetParam();
  for (auto how : all_drives) {
    size_t total = fresh(row.info, row.ranges).run(how);
    for (size_t k = 0; k <= total; ++k) {
      auto d = fresh(row.info, row.ranges);
      d.run(how, k);
      std::string text;
      auto d2 = resumed(row.info, d, &text);
      ASSERT_TRUE(d2);
      d2->run(how);
      EXPECT_EQ(dump(d2->out), want())
          << how << ", resumed after " << k << " steps from " << text;
    }
  }
}

TEST_P(MergeTable, ResumedTwiceAtEveryPairOfSteps_Expected) {
  const auto& row = GetParam();
  for (auto how : all_drives) {
    size_t total = fresh(row.info, row.ranges).run(how);
    for (size_t k1 = 0; k1 <= total; ++k1) {
      for (size_t k2 = 0; k2 <= total - k1 + 1; ++k2) {
        auto d = fresh(row.info, row.ranges);
        d.run(how, k1);
        std::string first;
        auto d2 = resumed(row.info, d, &first);
        ASSERT_TRUE(d2);
        d2->run(how, k2);
        std::string second;
        auto d3 = resumed(row.info, *d2, &second);
        ASSERT_TRUE(d3);
        d3->run(how);
        EXPECT_EQ(dump(d3->out), want())
            << how << ", resumed after " << k1 << " steps from " << first
            << ", again after " << k2 << " more from " << second;
      }
    }
  }
}

TEST_P(MergeTable, SplitAfterEveryStep_Expected) {
  const auto& row = GetParam();
  if (row.split == no_split) return;
  for (auto how : all_drives) {
    size_t total = fresh(row.info, row.ranges).run(how);
    for (size_t k = 0; k <= total; ++k) {
      auto d = fresh(row.info, row.ranges);
      d.run(how, k);
      d.split(row.split, row.first_child);
      d.run(how);
      EXPECT_EQ(dump(d.out), want())
          << how << ", split after " << k << " steps";
    }
  }
}

TEST_P(MergeTable, SplitThenResumedAtEveryStep_Expected) {
  const auto& row = GetParam();
  if (row.split == no_split) return;
  for (auto how : all_drives) {
    size_t total = fresh(row.info, row.ranges).run(how);
    for (size_t k1 = 0; k1 <= total; ++k1) {
      for (size_t k2 = 0; k2 <= total - k1 + 1; ++k2) {
        auto d = fresh(row.info, row.ranges);
        d.run(how, k1);
        d.split(row.split, row.first_child);
        d.run(how, k2);
        std::string text;
        auto d2 = resumed(row.info, d, &text);
        ASSERT_TRUE(d2);
        d2->run(how);
        EXPECT_EQ(dump(d2->out), want())
            << how << ", split after " << k1 << " steps, resumed after " << k2
            << " more from " << text;
      }
    }
  }
}

TEST_P(MergeTable, ResumedThenSplit_Expected) {
  const auto& row = GetParam();
  if (row.split == no_split) return;
  for (auto how : all_drives) {
    size_t total = fresh(row.info, row.ranges).run(how);
    for (size_t k = 0; k <= total; ++k) {
      auto d = fresh(row.info, row.ranges);
      d.run(how, k);
      std::string text;
      auto d2 = resumed(row.info, d, &text);
      ASSERT_TRUE(d2);
      d2->split(row.split, row.first_child);
      d2->run(how);
      EXPECT_EQ(dump(d2->out), want())
          << how << ", resumed after " << k << " steps from " << text
          << ", then split";
    }
  }
}

const auto asc = order_by({"Ascending"});
const auto desc = order_by({"Descending"});

INSTANTIATE_TEST_SUITE_P(
    OrderBy, MergeTable,
    testing::Values(
        merge_row{"OrderBy_TwoRangesAscending_Interleaved",
                  asc,
                  {{{ob("a", "[1]"), ob("c", "[3]")}, {ob("e", "[5]")}},
                   {{ob("b", "[2]")}, {ob("d", "[4]"), ob("f", "[6]")}}},
                  R"(["a","b","c","d","e","f"])",
                  1,
                  {"b", "f"}},
        merge_row{"OrderBy_Descending_Interleaved",
                  desc,
                  {{{ob("c", "[9]"), ob("a", "[5]")}, {ob("e", "[1]")}},
                   {{ob("b", "[7]")}, {ob("d", "[3]")}}},
                  R"(["c","b","a","d","e"])",
                  0,
                  {"c", "e"}},
        merge_row{"OrderBy_TieAcrossRanges_EarlierRangeFirst",
                  asc,
                  {{{ob("a", "[1]")}, {ob("c", "[2]")}},
                   {{ob("b", "[1]"), ob("d", "[2]")}}},
                  R"(["a","b","c","d"])",
                  1,
                  {"b"}},
        merge_row{"OrderBy_TieRunsAcrossPages_RangeThenStreamOrder",
                  asc,
                  {{{ob("a1", "[1]"), ob("a2", "[1]")},
                    {ob("a3", "[1]"), ob("a4", "[2]")}},
                   {{ob("b1", "[1]")}, {ob("b2", "[1]"), ob("b3", "[2]")}},
                   {{ob("c1", "[0]"), ob("c2", "[1]")}}},
                  R"(["c1","a1","a2","a3","b1","b2","c2","a4","b3"])",
                  1,
                  {"b1"}},
        merge_row{"OrderBy_TiesSplitRangeFirstChildLeads_Kept",
                  asc,
                  {{{ob("a1", "[1]"), ob("a2", "[1]")},
                    {ob("a3", "[1]"), ob("a4", "[2]")}},
                   {{ob("b1", "[1]")}}},
                  R"(["a1","a2","a3","b1","a4"])",
                  0,
                  {"a1", "a2", "a3"}},
        merge_row{"OrderBy_TwoKeysSecondDescending_SortedByBoth",
                  order_by({"Ascending", "Descending"}),
                  {{{ob("b", R"([1,"y"])"), ob("d", R"([2,"x"])")}},
                   {{ob("a", R"([1,"z"])"), ob("c", R"([2,"y"])")}}},
                  R"(["a","b","c","d"])",
                  0,
                  {"b"}},
        merge_row{"OrderBy_MixedTypes_CosmosTypeOrder",
                  asc,
                  {{{ob("u", "[{}]"), ob("f", "[false]"), ob("n2", "[2]"),
                     ob("s", R"(["10"])")}},
                   {{ob("nl", "[null]"), ob("t", "[true]"), ob("n10", "[10]"),
                     ob("sa", R"(["a"])")}}},
                  R"(["u","nl","f","t","n2","n10","s","sa"])",
                  1,
                  {"nl", "n10"}},
        merge_row{"OrderBy_IntegersAndFractions_Numerically",
                  asc,
                  {{{ob("x", "[1.5]"), ob("y", "[10]")}},
                   {{ob("z", "[2]"), ob("w", "[9.75]")}}},
                  R"(["x","z","w","y"])"},
        merge_row{"OrderBy_NextRowInUnfetchedPage_WaitsForIt",
                  asc,
                  {{{ob("a", "[1]")}, {ob("c", "[5]")}},
                   {{ob("b", "[2]")}, {ob("d", "[3]")}}},
                  R"(["a","b","d","c"])",
                  1,
                  {"d"}},
        merge_row{"OrderBy_EmptyRangeAndEmptyPages_Ignored",
                  asc,
                  {{}, {{}, {ob("a", "[1]")}, {}}, {{ob("b", "[0]")}}},
                  R"(["b","a"])",
                  1,
                  {"a"}},
        merge_row{"OrderBy_Top3_FirstThree",
                  top(asc, 3),
                  {{{ob("a", "[1]"), ob("c", "[3]"), ob("e", "[5]")}},
                   {{ob("b", "[2]"), ob("d", "[4]")}}},
                  R"(["a","b","c"])",
                  0,
                  {"a"}},
        merge_row{"OrderBy_Offset2Limit3_WindowAcrossRanges",
                  window(asc, 2, 3),
                  {{{ob("a", "[1]"), ob("c", "[3]")},
                    {ob("e", "[5]"), ob("g", "[7]")}},
                   {{ob("b", "[2]"), ob("d", "[4]")}, {ob("f", "[6]")}}},
                  R"(["c","d","e"])",
                  0,
                  {"c", "g"}},
        merge_row{"OrderBy_OffsetBeyondEnd_Empty",
                  window(asc, 10, 5),
                  {{{ob("a", "[1]")}}, {{ob("b", "[2]")}}},
                  "[]"},
        merge_row{
            "OrderBy_Top0_Empty", top(asc, 0), {{{ob("a", "[1]")}}}, "[]"},
        merge_row{"OrderBy_Limit0_Empty",
                  window(asc, 0, 0),
                  {{{ob("a", "[1]")}}},
                  "[]"},
        merge_row{
            "OrderBy_OrderedDistinct_RepeatsDropped",
            distinct(asc, "Ordered"),
            {{{obp("r1", R"(["a"])", "a"), obp("r2", R"(["b"])", "b"),
               obp("r3", R"(["b"])", "b")}},
             {{obp("r4", R"(["a"])", "a")}, {obp("r5", R"(["c"])", "c")}}},
            R"(["a","b","c"])",
            0,
            {"r1", "r2"}},
        merge_row{"OrderBy_UnorderedDistinct_LaterRepeatsDropped",
                  distinct(asc, "Unordered"),
                  {{{obp("x", "[1]", "p"), obp("y", "[3]", "q")}},
                   {{obp("z", "[2]", "q"), obp("w", "[4]", "p")}}},
                  R"(["p","q"])",
                  1,
                  {"z"}},
        merge_row{"OrderBy_DistinctThenOffset_OffsetCountsDistinctResults",
                  window(distinct(asc, "Ordered"), 1, 1),
                  {{{obp("r1", R"(["a"])", "a"), obp("r2", R"(["b"])", "b")}},
                   {{obp("r3", R"(["a"])", "a"), obp("r4", R"(["c"])", "c")}}},
                  R"(["b"])"},
        merge_row{"OrderBy_RowWithoutPayload_SkippedNotCounted",
                  top(asc, 2),
                  {{{ob("a", "[1]"), no_payload("u", "[2]"), ob("c", "[3]")}}},
                  R"(["a","c"])"}));

// Without ORDER BY results come in range order, so after a split a child's
// rows come before its sibling's: the first child holds a prefix of the
// parent's rows here, to keep one expected order for every split point.
INSTANTIATE_TEST_SUITE_P(
    Parallel, MergeTable,
    testing::Values(
        merge_row{"Parallel_ThreeRanges_RangeOrder",
                  plain(),
                  {{{"a", "b"}, {"c"}}, {{"d"}}, {{}, {"e", "f"}}},
                  R"(["a","b","c","d","e","f"])",
                  0,
                  {"a", "b"}},
        merge_row{"Parallel_SplitRangeOfThreePages_ParentRowsFirst",
                  plain(),
                  {{{"a"}, {"b"}, {"c"}}, {{"d"}}},
                  R"(["a","b","c","d"])",
                  0,
                  {"a", "b"}},
        merge_row{"Parallel_Top3_StopsAtThree",
                  top(plain(), 3),
                  {{{"a", "b"}, {"c"}}, {{"d"}}, {{}, {"e", "f"}}},
                  R"(["a","b","c"])",
                  0,
                  {"a"}},
        merge_row{"Parallel_Offset2Limit3_AcrossRanges",
                  window(plain(), 2, 3),
                  {{{"a", "b"}, {"c"}}, {{"d"}}, {{}, {"e", "f"}}},
                  R"(["c","d","e"])",
                  2,
                  {"e"}},
        merge_row{"Parallel_UnorderedDistinct_CanonicalJson",
                  distinct(plain(), "Unordered"),
                  {{{J(R"({"a":1,"b":2})"), J(R"({"a":1})")}},
                   {{J(R"({"b":2,"a":1.0})"), J(R"({"a":2})")}}},
                  R"([{"a":1,"b":2},{"a":1},{"a":2}])"},
        merge_row{"Parallel_DistinctNumbers_IntegerAndFloatSame",
                  distinct(plain(), "Unordered"),
                  {{{J("1"), J("2.0")}}, {{J("2"), J("1.0"), J("3")}}},
                  "[1,2.0,3]"},
        merge_row{"Parallel_UnorderedDistinctRepeatsAcrossRangesAndPages_"
                  "FirstOccurrences",
                  distinct(plain(), "Unordered"),
                  {{{"a", "b"}, {"a", "c"}},
                   {{"b"}, {"d", "a"}},
                   {{}, {"c", "e"}, {"b"}}},
                  R"(["a","b","c","d","e"])",
                  0,
                  {"a", "b"}},
        merge_row{"Parallel_UnorderedDistinctTop3_StopsAtThreeValues",
                  top(distinct(plain(), "Unordered"), 3),
                  {{{"a", "a"}, {"b"}}, {{"a", "c", "d"}}},
                  R"(["a","b","c"])",
                  1,
                  {"a"}}));

INSTANTIATE_TEST_SUITE_P(
    Aggregate, MergeTable,
    testing::Values(
        merge_row{"Count_ThreeRanges_Summed",
                  aggregate("Count"),
                  {{{agg(R"({"item":3})")}},
                   {{agg(R"({"item":0})")}},
                   {{agg(R"({"item":4})")}}},
                  "[7]"},
        merge_row{"Count_PartialsOnTwoPages_Summed",
                  aggregate("Count"),
                  {{{agg(R"({"item":2})")}, {agg(R"({"item":3})")}},
                   {{agg(R"({"item":1})")}}},
                  "[6]"},
        merge_row{"Count_AllRangesZero_Zero",
                  aggregate("Count"),
                  {{{agg(R"({"item":0})")}}, {{agg(R"({"item":0})")}}},
                  "[0]"},
        merge_row{
            "Count_NoRowsAtAll_Zero", aggregate("Count"), {{}, {}}, "[0]"},
        merge_row{"Count_Offset1_NoResult",
                  window(aggregate("Count"), 1, 1),
                  {{{agg(R"({"item":3})")}}},
                  "[]"},
        merge_row{"Sum_IntegralTotalOfFractions_PrintedAsInteger",
                  aggregate("Sum"),
                  {{{agg(R"({"item":1.5})")}}, {{agg(R"({"item":2.5})")}}},
                  "[4]"},
        merge_row{"Sum_OneRangeUndefined_NoResult",
                  aggregate("Sum"),
                  {{{agg(R"({"item":3})")}}, {{agg("{}")}}},
                  "[]"},
        merge_row{"Sum_AllRangesEmpty_Zero",
                  aggregate("Sum"),
                  {{{agg(R"({"item":0})")}}, {{agg(R"({"item":0})")}}},
                  "[0]"},
        merge_row{"Average_SumOfSumsOverSumOfCounts_NotAverageOfAverages",
                  aggregate("Average"),
                  {{{agg(R"({"item":{"sum":10,"count":1}})")}},
                   {{agg(R"({"item":{"sum":2,"count":2}})")}}},
                  "[4]"},
        merge_row{"Average_EmptyRangeAmongOthers_Fraction",
                  aggregate("Average"),
                  {{{agg(R"({"item":{"sum":1,"count":2}})")}},
                   {{agg(R"({"item":{"sum":0,"count":0}})")}}},
                  "[0.5]"},
        merge_row{"Average_AllCountsZero_NoResult",
                  aggregate("Average"),
                  {{{agg(R"({"item":{"sum":0,"count":0}})")}},
                   {{agg(R"({"item":{"sum":0,"count":0}})")}}},
                  "[]"},
        merge_row{"Average_SumMissingInOneRange_NoResult",
                  aggregate("Average"),
                  {{{agg(R"({"item":{"count":2}})")}},
                   {{agg(R"({"item":{"sum":4,"count":2}})")}}},
                  "[]"},
        merge_row{"Min_MixedTypesAcrossRanges_CosmosOrder",
                  aggregate("Min"),
                  {{{agg(R"({"item":"a","item2":{"min":"a","count":1}})")}},
                   {{agg(R"({"item":5,"item2":{"min":5,"count":2}})")}},
                   {{agg(R"({"item":true,"item2":{"min":true,"count":1}})")}}},
                  "[true]"},
        merge_row{"Min_NullAndFalse_Null",
                  aggregate("Min"),
                  {{{agg(R"({"item":false,"item2":{"min":false,"count":1}})")}},
                   {{agg(R"({"item":null,"item2":{"min":null,"count":1}})")}}},
                  "[null]"},
        merge_row{"Max_StringAndNumber_String",
                  aggregate("Max"),
                  {{{agg(R"({"item":100,"item2":{"max":100,"count":1}})")}},
                   {{agg(R"({"item":"0","item2":{"max":"0","count":1}})")}}},
                  R"(["0"])"},
        merge_row{"Max_NineAndTen_TenNumerically",
                  aggregate("Max"),
                  {{{agg(R"({"item":10,"item2":{"max":10,"count":1}})")}},
                   {{agg(R"({"item":9,"item2":{"max":9,"count":1}})")}}},
                  "[10]"},
        merge_row{"Min_EmptyRangeCountZero_Skipped",
                  aggregate("Min"),
                  {{{agg(R"({"item2":{"count":0}})")}},
                   {{agg(R"({"item":3,"item2":{"min":3,"count":1}})")}}},
                  "[3]"},
        merge_row{"Min_AllRangesEmpty_NoResult",
                  aggregate("Min"),
                  {{{agg(R"({"item2":{"count":0}})")}},
                   {{agg(R"({"item2":{"count":0}})")}}},
                  "[]"},
        merge_row{"Min_CountedValuesWithoutMin_NoResult",
                  aggregate("Min"),
                  {{{agg(R"({"item2":{"count":2}})")}},
                   {{agg(R"({"item":1,"item2":{"min":1,"count":1}})")}}},
                  "[]"},
        merge_row{"Max_LegacyItemOnly_Used",
                  aggregate("Max"),
                  {{{agg(R"({"item":7})")}}, {{agg(R"({"item":9})")}}},
                  "[9]"}));

// -- the order of values
// -----------------------------------------------------------

struct compare_row {
  std::string name;
  std::string a; ///< JSON text, "undefined" for no value
  std::string b;
  int expected; ///< -1, 0 or 1
};

void PrintTo(const compare_row& row, std::ostream* os) {
  *os << row.name;
}

class CompareTable : public testing::TestWithParam<compare_row> {};

TEST_P(CompareTable, Compares) {
  const auto& row = GetParam();
  std::optional<json> a;
  std::optional<json> b;
  if (row.a != "undefined") a = json::parse(row.a);
  if (row.b != "undefined") b = json::parse(row.b);
  const json* pa = a ? &*a : nullptr;
  const json* pb = b ? &*b : nullptr;
  auto norm = [](int c) { return c < 0 ? -1 : (c > 0 ? 1 : 0); };
  EXPECT_EQ(norm(compare_query_values(pa, pb)), row.expected);
  EXPECT_EQ(norm(compare_query_values(pb, pa)), -row.expected);
}

INSTANTIATE_TEST_SUITE_P(
    Table, CompareTable,
    testing::Values(
        compare_row{"Compare_UndefinedVsNull_Less", "undefined", "null", -1},
        compare_row{"Compare_UndefinedVsUndefined_Equal", "undefined",
                    "undefined", 0},
        compare_row{"Compare_NullVsFalse_Less", "null", "false", -1},
        compare_row{"Compare_FalseVsTrue_Less", "false", "true", -1},
        compare_row{"Compare_TrueVsNegativeNumber_Less", "true", "-5", -1},
        compare_row{"Compare_NumberVsString_Less", "1000", "\"0\"", -1},
        compare_row{"Compare_TwoVsTen_Numerically", "2", "10", -1},
        compare_row{"Compare_IntegerVsEqualFloat_Equal", "1", "1.0", 0},
        compare_row{"Compare_NegativeVsUnsigned_Less", "-1",
                    "18446744073709551615", -1},
        compare_row{"Compare_IntegersPast2Pow53_Exact", "9007199254740993",
                    "9007199254740992", 1},
        compare_row{"Compare_FractionVsInteger_Less", "1.5", "2", -1},
        compare_row{"Compare_StringsByBytes_UppercaseFirst", "\"B\"", "\"a\"",
                    -1},
        compare_row{"Compare_StringPrefix_Less", "\"ab\"", "\"abc\"", -1},
        compare_row{"Compare_StringVsArray_Less", "\"z\"", "[]", -1},
        compare_row{"Compare_ArrayVsObject_Less", "[1]", "{}", -1},
        compare_row{"Compare_TwoArrays_Equal", "[1]", "[2]", 0},
        compare_row{"Compare_TwoObjects_Equal", R"({"a":1})", R"({"b":2})",
                    0}));

struct canonical_row {
  std::string name;
  std::string input;
  std::string expected;
};

void PrintTo(const canonical_row& row, std::ostream* os) {
  *os << row.name;
}

class CanonicalTable : public testing::TestWithParam<canonical_row> {};

TEST_P(CanonicalTable, Canonicalizes) {
  EXPECT_EQ(canonical_json(json::parse(GetParam().input)), GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(
    Table, CanonicalTable,
    testing::Values(
        canonical_row{"Canonical_KeysInAnyOrder_Sorted", R"({"b":1,"a":2})",
                      R"({"a":2,"b":1})"},
        canonical_row{"Canonical_IntegralFloat_Integer", "2.0", "2"},
        canonical_row{"Canonical_NegativeZero_Zero", "-0.0", "0"},
        canonical_row{"Canonical_Fraction_Kept", "1.5", "1.5"},
        canonical_row{"Canonical_IntegralFloatPast2Pow53_Integer",
                      "9007199254740994.0", "9007199254740994"},
        canonical_row{"Canonical_FloatPast2Pow63_StaysFloat", "1e19", "1e+19"},
        canonical_row{"Canonical_Nested_Normalized", R"([{"y":[3.0],"x":1}])",
                      R"([{"x":1,"y":[3]}])"}));

// -- ranges_needed and finished
// ------------------------------------------------------

struct feed {
  size_t range;
  rows page;
  std::optional<std::string> continuation;
};

struct needed_row {
  std::string name;
  query_info info;
  size_t ranges;
  std::vector<feed> feeds;
  size_t drains;       ///< drain(1) calls after the feeds
  std::string drained; ///< JSON array of what they gave
  std::vector<size_t> needed;
  bool finished;
};

void PrintTo(const needed_row& row, std::ostream* os) {
  *os << row.name;
}

class NeededTable : public testing::TestWithParam<needed_row> {};

TEST_P(NeededTable, Needs) {
  const auto& row = GetParam();
  auto m = query_merger::create(row.info, ranges_of(row.ranges));
  ASSERT_TRUE(m) << m.error().what;
  for (const auto& f : row.feeds) {
    auto p = m->add_page(f.range, f.page, f.continuation);
    ASSERT_FALSE(p) << p->what;
  }
  std::vector<json> out;
  for (size_t i = 0; i < row.drains; ++i)
    for (auto& r : m->drain(1))
      out.push_back(std::move(r));
  EXPECT_EQ(dump(out), J(row.drained.c_str()).dump());
  EXPECT_EQ(m->ranges_needed(), row.needed);
  EXPECT_EQ(m->finished(), row.finished);
}

const auto count_info = aggregate("Count");

INSTANTIATE_TEST_SUITE_P(
    Table, NeededTable,
    testing::Values(
        needed_row{"Needed_OrderByNothingFed_AllRanges",
                   asc,
                   3,
                   {},
                   0,
                   "[]",
                   {0, 1, 2},
                   false},
        needed_row{"Needed_OrderByOneRangeFed_TheOthers",
                   asc,
                   3,
                   {{1, {ob("a", "[1]")}, "p1"}},
                   0,
                   "[]",
                   {0, 2},
                   false},
        needed_row{"Needed_OrderByRangeNotFetched_NothingDrained",
                   asc,
                   2,
                   {{0, {ob("a", "[1]")}, "p1"}},
                   1,
                   "[]",
                   {1},
                   false},
        needed_row{"Needed_OrderByHeadDrained_ThatRangeAgain",
                   asc,
                   2,
                   {{0, {ob("a", "[1]")}, "p1"}, {1, {ob("b", "[2]")}, "p1"}},
                   2,
                   R"(["a"])",
                   {0},
                   false},
        needed_row{"Needed_OrderByRangeDone_NotAskedAgain",
                   asc,
                   2,
                   {{0, {ob("a", "[1]")}, std::nullopt}},
                   0,
                   "[]",
                   {1},
                   false},
        needed_row{"Needed_OrderByEmptyPageWithContinuation_StillNeeded",
                   asc,
                   2,
                   {{0, {}, "p1"}, {1, {ob("b", "[2]")}, "p1"}},
                   1,
                   "[]",
                   {0},
                   false},
        needed_row{"Needed_OrderByEmptyContinuation_RangeDone",
                   asc,
                   1,
                   {{0, {ob("a", "[1]")}, ""}},
                   1,
                   R"(["a"])",
                   {},
                   true},
        needed_row{"Needed_ParallelNothingFed_FirstOnly",
                   plain(),
                   3,
                   {},
                   0,
                   "[]",
                   {0},
                   false},
        needed_row{"Needed_ParallelFirstHasRows_None",
                   plain(),
                   3,
                   {{0, {"x"}, "p1"}},
                   0,
                   "[]",
                   {},
                   false},
        needed_row{"Needed_ParallelFirstDone_Second",
                   plain(),
                   3,
                   {{0, {}, std::nullopt}},
                   0,
                   "[]",
                   {1},
                   false},
        needed_row{"Needed_ParallelLaterRangePrefetched_HeldForFirst",
                   plain(),
                   3,
                   {{1, {"x"}, std::nullopt}},
                   1,
                   "[]",
                   {0},
                   false},
        needed_row{"Needed_AggregateOneDone_TheOpenOnes",
                   count_info,
                   3,
                   {{1, {agg(R"({"item":1})")}, std::nullopt}},
                   1,
                   "[]",
                   {0, 2},
                   false},
        needed_row{"Needed_AggregateAllDoneNotDrained_NoneNotFinished",
                   count_info,
                   1,
                   {{0, {agg(R"({"item":1})")}, std::nullopt}},
                   0,
                   "[]",
                   {},
                   false},
        needed_row{"Needed_AggregateAllDoneDrained_Finished",
                   count_info,
                   1,
                   {{0, {agg(R"({"item":1})")}, std::nullopt}},
                   1,
                   "[1]",
                   {},
                   true},
        needed_row{"Needed_ParallelTopReached_NoneAndFinished",
                   top(plain(), 1),
                   2,
                   {{0, {"x", "y"}, "p1"}},
                   1,
                   R"(["x"])",
                   {},
                   true},
        needed_row{"Needed_Top0_FinishedAtOnce",
                   top(asc, 0),
                   2,
                   {},
                   0,
                   "[]",
                   {},
                   true}));

// -- problems
// -----------------------------------------------------------------------

struct create_row {
  std::string name;
  query_info info;
  size_t ranges;
  std::string problem; ///< a part of the message; "" means accepted
};

void PrintTo(const create_row& row, std::ostream* os) {
  *os << row.name;
}

class CreateTable : public testing::TestWithParam<create_row> {};

TEST_P(CreateTable, Creates) {
  const auto& row = GetParam();
  auto m = query_merger::create(row.info, ranges_of(row.ranges));
  if (row.problem.empty()) {
    EXPECT_TRUE(m) << m.error().what;
    return;
  }
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().what.find(row.problem), std::string::npos)
      << m.error().what;
}

query_info with(query_info q, void (*edit)(query_info&)) {
  edit(q);
  return q;
}

INSTANTIATE_TEST_SUITE_P(
    Table, CreateTable,
    testing::Values(
        create_row{"Create_OrderByTwoRanges_Accepted", asc, 2, ""},
        create_row{"Create_CountIf_Accepted", aggregate("CountIf"), 1, ""},
        create_row{"Create_NoRanges_Problem", asc, 0, "at least one range"},
        create_row{"Create_TwoAggregates_Problem",
                   with(aggregate("Count"),
                        [](query_info& q) { q.aggregates.push_back("Sum"); }),
                   1, "only one VALUE aggregate"},
        create_row{"Create_AggregateWithoutValue_Problem",
                   with(aggregate("Count"),
                        [](query_info& q) { q.has_select_value = false; }),
                   1, "VALUE keyword"},
        create_row{"Create_UnknownAggregate_Problem", aggregate("Median"), 1,
                   "'Median'"},
        create_row{"Create_AggregateWithOrderBy_Problem",
                   with(aggregate("Count"),
                        [](query_info& q) { q.order_by = {"Ascending"}; }),
                   1, "both aggregates and orderBy"},
        create_row{"Create_UnknownDirection_Problem",
                   order_by({"Ascending", "Up"}), 1, "orderBy[1] 'Up'"},
        create_row{"Create_UnknownDistinct_Problem",
                   distinct(plain(), "Sometimes"), 1,
                   "distinctType 'Sometimes'"},
        create_row{"Create_TopBelowMinusOne_Problem", top(plain(), -2), 1,
                   "top -2"}));

struct add_row {
  std::string name;
  query_info info;
  size_t ranges;
  std::vector<feed> setup;
  feed bad;
  std::string problem;
  std::vector<feed> then; ///< fed after the problem; the query must finish
  std::string expected;   ///< JSON array of the results
};

void PrintTo(const add_row& row, std::ostream* os) {
  *os << row.name;
}

class AddPageTable : public testing::TestWithParam<add_row> {};

TEST_P(AddPageTable, RejectsAndKeepsState) {
  const auto& row = GetParam();
  auto m = query_merger::create(row.info, ranges_of(row.ranges));
  ASSERT_TRUE(m) << m.error().what;
  for (const auto& f : row.setup)
    ASSERT_FALSE(m->add_page(f.range, f.page, f.continuation));
  auto received = m->counters().rows_received;
  auto p = m->add_page(row.bad.range, row.bad.page, row.bad.continuation);
  ASSERT_TRUE(p);
  EXPECT_NE(p->what.find(row.problem), std::string::npos) << p->what;
  EXPECT_EQ(m->counters().rows_received, received);
  for (const auto& f : row.then)
    ASSERT_FALSE(m->add_page(f.range, f.page, f.continuation));
  EXPECT_EQ(dump(m->drain(100)), J(row.expected.c_str()).dump());
  EXPECT_TRUE(m->finished());
}

INSTANTIATE_TEST_SUITE_P(
    Table, AddPageTable,
    testing::Values(
        add_row{"AddPage_IndexOutOfRange_Problem",
                asc,
                2,
                {},
                {5, {}, std::nullopt},
                "range index 5 is out of 2",
                {{0, {}, std::nullopt}, {1, {}, std::nullopt}},
                "[]"},
        add_row{"AddPage_RangeDone_Problem",
                asc,
                1,
                {{0, {ob("a", "[1]")}, std::nullopt}},
                {0, {ob("b", "[2]")}, std::nullopt},
                "already returned its last page",
                {},
                R"(["a"])"},
        add_row{"AddPage_OrderByRowNotObject_Problem",
                asc,
                1,
                {},
                {0, {"x"}, std::nullopt},
                "expected an ORDER BY row",
                {{0, {ob("a", "[1]")}, std::nullopt}},
                R"(["a"])"},
        add_row{"AddPage_OrderByItemsMissing_Problem",
                asc,
                1,
                {},
                {0, {J(R"({"_rid":"a","payload":1})")}, std::nullopt},
                "orderByItems: expected an array",
                {{0, {}, std::nullopt}},
                "[]"},
        add_row{"AddPage_OrderByItemsWrongCount_Problem",
                asc,
                1,
                {},
                {0, {ob("a", "[1,2]")}, std::nullopt},
                "has 2 entries, the plan sorts by 1",
                {{0, {}, std::nullopt}},
                "[]"},
        add_row{"AddPage_OrderByItemNotObject_Problem",
                asc,
                1,
                {},
                {0,
                 {J(R"({"_rid":"a","orderByItems":[1],"payload":1})")},
                 std::nullopt},
                "orderByItems[0]: expected",
                {{0, {}, std::nullopt}},
                "[]"},
        add_row{"AddPage_RidNotString_Problem",
                asc,
                1,
                {},
                {0,
                 {J(R"({"_rid":7,"orderByItems":[{"item":1}],"payload":1})")},
                 std::nullopt},
                "_rid: expected a string",
                {{0, {}, std::nullopt}},
                "[]"},
        add_row{"AddPage_BadRowAfterGoodRow_NothingTaken",
                asc,
                1,
                {},
                {0, {ob("a", "[1]"), J("3")}, std::nullopt},
                "row 1",
                {{0, {ob("b", "[2]")}, std::nullopt}},
                R"(["b"])"},
        add_row{"AddPage_AggregateRowScalar_Problem",
                count_info,
                1,
                {},
                {0, {J("3")}, std::nullopt},
                "expected an aggregate row",
                {{0, {agg(R"({"item":1})")}, std::nullopt}},
                "[1]"},
        add_row{"AddPage_AggregateEmptyArray_Problem",
                count_info,
                1,
                {},
                {0, {J("[]")}, std::nullopt},
                "empty array",
                {{0, {}, std::nullopt}},
                "[0]"},
        add_row{"AddPage_CountNotInteger_Problem",
                count_info,
                1,
                {},
                {0, {agg(R"({"item":"3"})")}, std::nullopt},
                "expected a count",
                {{0, {agg(R"({"item":1})")}, std::nullopt}},
                "[1]"},
        add_row{"AddPage_AverageWithoutCount_Problem",
                aggregate("Average"),
                1,
                {},
                {0, {agg(R"({"item":{"sum":3}})")}, std::nullopt},
                "expected {\"sum\": s, \"count\": n}",
                {{0, {agg(R"({"item":{"sum":3,"count":2}})")}, std::nullopt}},
                "[1.5]"},
        add_row{"AddPage_BadSecondAggregateRow_FirstNotCounted",
                count_info,
                1,
                {},
                {0, {agg(R"({"item":2})"), J("true")}, std::nullopt},
                "row 1",
                {{0, {agg(R"({"item":1})")}, std::nullopt}},
                "[1]"}));

// -- splits
// --------------------------------------------------------------------------

TEST(QueryMergeSplit, Split_ChildrenTakeParentsPlace_ContinueFromParentToken) {
  auto m = query_merger::create(asc, ranges_of(2));
  ASSERT_TRUE(m);
  ASSERT_FALSE(m->add_page(1, {ob("b", "[2]")}, "p1"));
  ASSERT_FALSE(m->replace_range(
      1, {query_range{"3", "", "80"}, query_range{"4", "80", "FF"}}));
  ASSERT_EQ(m->range_count(), 3u);
  EXPECT_EQ(m->range(1).id, "3");
  EXPECT_EQ(m->range(2).id, "4");
  EXPECT_EQ(m->continuation_of(1), std::optional<std::string>("p1"));
  EXPECT_EQ(m->continuation_of(2), std::optional<std::string>("p1"));
  EXPECT_EQ(m->counters().splits, 1u);
}

struct split_problem_row {
  std::string name;
  size_t index;
  std::vector<query_range> children;
  std::string problem;
};

void PrintTo(const split_problem_row& row, std::ostream* os) {
  *os << row.name;
}

class SplitProblemTable : public testing::TestWithParam<split_problem_row> {};

TEST_P(SplitProblemTable, Rejects) {
  auto m = query_merger::create(asc, ranges_of(2));
  ASSERT_TRUE(m);
  auto p = m->replace_range(GetParam().index, GetParam().children);
  ASSERT_TRUE(p);
  EXPECT_NE(p->what.find(GetParam().problem), std::string::npos) << p->what;
  EXPECT_EQ(m->range_count(), 2u);
}

INSTANTIATE_TEST_SUITE_P(
    Table, SplitProblemTable,
    testing::Values(split_problem_row{"Split_IndexOutOfRange_Problem",
                                      2,
                                      {query_range{"3", "", "FF"}},
                                      "range index 2 is out of 2"},
                    split_problem_row{"Split_NoChildren_Problem",
                                      0,
                                      {},
                                      "at least one child"}));

TEST(QueryMergeSplit, Split_AggregateRange_ChildrenPartialsAdded) {
  auto m = query_merger::create(count_info, ranges_of(2));
  ASSERT_TRUE(m);
  ASSERT_FALSE(m->add_page(0, {agg(R"({"item":2})")}, "p1"));
  ASSERT_FALSE(m->replace_range(
      0, {query_range{"2", "", "40"}, query_range{"3", "40", "80"}}));
  ASSERT_FALSE(m->add_page(0, {agg(R"({"item":1})")}, std::nullopt));
  EXPECT_EQ(m->ranges_needed(), (std::vector<size_t>{1, 2}));
  ASSERT_FALSE(m->add_page(1, {agg(R"({"item":4})")}, std::nullopt));
  ASSERT_FALSE(m->add_page(2, {agg(R"({"item":3})")}, std::nullopt));
  EXPECT_EQ(dump(m->drain(10)), "[10]");
}

// -- continuation tokens
// ---------------------------------------------------------------

TEST(QueryContinuation, Continuation_EncodedDecodedEncoded_SameText) {
  query_continuation c;
  c.query_hash = 0x0123456789abcdefull;
  c.position = 7;
  c.order_by_items = J(R"([{"item":"x"},{}])");
  c.rid = "rid==";
  c.last_distinct = R"({"cat":"x"})";
  c.distinct_seen = {0, 5, 0xffffffffffffffffull};
  c.aggregate.undefined = false;
  c.aggregate.sum = 2.5;
  c.aggregate.count = 3;
  c.aggregate.best = J("null");
  c.ranges.push_back(range_resume{
      query_range{"0", "", "80"}, "tok\"0", false, {1, 0xffffffffffffffffull}});
  c.ranges.push_back(
      range_resume{query_range{"1", "80", "FF"}, std::nullopt, true, {}});
  auto text = encode_continuation(c);
  auto back = decode_continuation(text);
  ASSERT_TRUE(back) << back.error().what;
  EXPECT_EQ(encode_continuation(*back), text);
  EXPECT_EQ(back->query_hash, c.query_hash);
  EXPECT_EQ(back->position, 7);
  EXPECT_EQ(back->ranges[0].token, std::optional<std::string>("tok\"0"));
  EXPECT_EQ(back->ranges[0].skip, c.ranges[0].skip);
  EXPECT_EQ(back->distinct_seen, c.distinct_seen);
  EXPECT_FALSE(back->ranges[1].token);
  EXPECT_TRUE(back->ranges[1].done);
  ASSERT_TRUE(back->aggregate.best);
  EXPECT_TRUE(back->aggregate.best->is_null());
}

TEST(QueryContinuation, Continuation_NonAsciiRangeId_AsciiText) {
  query_continuation c;
  c.ranges.push_back(
      range_resume{query_range{"\xc3\xa9", "", "FF"}, std::nullopt, false, {}});
  auto text = encode_continuation(c);
  for (unsigned char ch : text)
    EXPECT_LT(ch, 0x80) << text;
  auto back = decode_continuation(text);
  ASSERT_TRUE(back) << back.error().what;
  EXPECT_EQ(back->ranges[0].range.id, "\xc3\xa9");
}

struct decode_row {
  std::string name;
  std::string text;
  std::string problem;
};

void PrintTo(const decode_row& row, std::ostream* os) {
  *os << row.name;
}

class DecodeTable : public testing::TestWithParam<decode_row> {};

TEST_P(DecodeTable, Rejects) {
  auto r = decode_continuation(GetParam().text);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().what.find(GetParam().problem), std::string::npos)
      << r.error().what;
  EXPECT_EQ(r.error().what.rfind("continuation: ", 0), 0u) << r.error().what;
}

#define TOKEN_HEAD R"({"v":1,"q":"00000000000000ab","pos":0,)"
#define ONE_RANGE R"("ranges":[{"id":"0","min":"","max":"FF","token":null}])"

INSTANTIATE_TEST_SUITE_P(
    Table, DecodeTable,
    testing::Values(
        decode_row{"Decode_Empty_Problem", "", "empty"},
        decode_row{"Decode_NotJson_Problem", "{\"v\":", "not JSON"},
        decode_row{"Decode_Array_Problem", "[1]",
                   "expected an object, got array"},
        decode_row{"Decode_VersionMissing_Problem", R"({"q":"1"})",
                   "v: version (missing)"},
        decode_row{"Decode_Version2_Problem", R"({"v":2})",
                   "version 2 is not supported"},
        decode_row{"Decode_QueryHashNotHex_Problem",
                   R"({"v":1,"q":"xyz","pos":0})", "q: expected"},
        decode_row{"Decode_QueryHashTooLong_Problem",
                   R"({"v":1,"q":"00000000000000001","pos":0})", "q: expected"},
        decode_row{"Decode_PositionNegative_Problem",
                   R"({"v":1,"q":"ab","pos":-1})",
                   "pos: expected a non-negative integer"},
        decode_row{"Decode_RangesEmpty_Problem", TOKEN_HEAD R"("ranges":[]})",
                   "ranges: expected a non-empty array"},
        decode_row{"Decode_RangeNotObject_Problem",
                   TOKEN_HEAD R"("ranges":[3]})",
                   "ranges[0]: expected an object"},
        decode_row{"Decode_RangeIdMissing_Problem",
                   TOKEN_HEAD R"("ranges":[{"min":"","max":"FF"}]})",
                   "ranges[0].id: expected a string"},
        decode_row{"Decode_TokenNumber_Problem",
                   TOKEN_HEAD R"("ranges":[{"id":"0","min":"","max":"80"},)"
                              R"({"id":"1","min":"80","max":"FF","token":5}]})",
                   "ranges[1].token: expected a string or null"},
        decode_row{"Decode_DoneString_Problem",
                   TOKEN_HEAD
                   R"("ranges":[{"id":"0","min":"","max":"FF","done":"y"}]})",
                   "ranges[0].done: expected true or false"},
        decode_row{"Decode_SkipNotHex_Problem",
                   TOKEN_HEAD R"("ranges":[{"id":"0","min":"","max":"FF",)"
                              R"("skip":["ab","zz"]}]})",
                   "ranges[0].skip[1]"},
        decode_row{"Decode_SkipSeventeenDigits_Problem",
                   TOKEN_HEAD R"("ranges":[{"id":"0","min":"","max":"FF",)"
                              R"("skip":["00000000000000001"]}]})",
                   "ranges[0].skip[0]"},
        decode_row{"Decode_OrderItemsNotArray_Problem",
                   TOKEN_HEAD ONE_RANGE R"(,"order":{"items":1}})",
                   "order.items: expected an array"},
        decode_row{"Decode_DistinctNumber_Problem",
                   TOKEN_HEAD ONE_RANGE R"(,"distinct":1})",
                   "distinct: expected a string"},
        decode_row{"Decode_SeenNotObject_Problem",
                   TOKEN_HEAD ONE_RANGE R"(,"seen":[1]})",
                   "seen: expected an object"},
        decode_row{"Decode_SeenCountZero_Problem",
                   TOKEN_HEAD ONE_RANGE
                   R"(,"seen":{"n":0,"data":"","sum":"0"}})",
                   "seen.n: expected the number of values, 1 to 1024, got 0"},
        decode_row{"Decode_SeenCountOverBound_Problem",
                   TOKEN_HEAD ONE_RANGE
                   R"(,"seen":{"n":1025,"data":"","sum":"0"}})",
                   "seen.n: expected the number of values, 1 to 1024, got "
                   "1025"},
        decode_row{"Decode_SeenCountFraction_Problem",
                   TOKEN_HEAD ONE_RANGE
                   R"(,"seen":{"n":1.5,"data":"","sum":"0"}})",
                   "seen.n: expected"},
        decode_row{"Decode_SeenDataNumber_Problem",
                   TOKEN_HEAD ONE_RANGE
                   R"(,"seen":{"n":1,"data":5,"sum":"0"}})",
                   "seen.data: expected a string"},
        decode_row{"Decode_SeenSumMissing_Problem",
                   TOKEN_HEAD ONE_RANGE
                   R"(,"seen":{"n":1,"data":"AAAAAAAAAAA"}})",
                   "seen.sum: expected the set's checksum"},
        decode_row{"Decode_SeenDataNotBase64url_Problem",
                   TOKEN_HEAD ONE_RANGE
                   R"(,"seen":{"n":1,"data":"AAAA=AAAAAA","sum":"0"}})",
                   "seen.data: character 4 ('=') is not base64url"},
        decode_row{"Decode_SeenDataTruncated_Problem",
                   TOKEN_HEAD ONE_RANGE
                   R"(,"seen":{"n":2,"data":"AAAA","sum":"0"}})",
                   "seen.data: the text ends inside value 0 of 2"},
        decode_row{"Decode_SeenSumWrong_Problem",
                   TOKEN_HEAD ONE_RANGE
                   R"(,"seen":{"n":1,"data":"AAAAAAAAAAA","sum":"0"}})",
                   "seen: the set of values already returned fails its "
                   "checksum"},
        decode_row{"Decode_AggCountNegative_Problem",
                   TOKEN_HEAD ONE_RANGE
                   R"(,"agg":{"undefined":false,"sum":0,"count":-1}})",
                   "agg.count"}));

struct resume_row {
  std::string name;
  query_info token_info; ///< the query the continuation was made for
  query_info info;       ///< the query it is resumed with
  std::string order_items;
  size_t ranges;
  std::string problem;
};

void PrintTo(const resume_row& row, std::ostream* os) {
  *os << row.name;
}

class ResumeTable : public testing::TestWithParam<resume_row> {};

TEST_P(ResumeTable, Resumes) {
  const auto& row = GetParam();
  query_continuation c;
  c.query_hash = query_fingerprint(row.token_info);
  c.order_by_items = J(row.order_items.c_str());
  for (size_t i = 0; i < row.ranges; ++i)
    c.ranges.push_back(range_resume{
        query_range{std::to_string(i), "", "FF"}, std::nullopt, false, {}});
  auto m = query_merger::resume(row.info, c);
  if (row.problem.empty()) {
    EXPECT_TRUE(m) << m.error().what;
    return;
  }
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().what.find(row.problem), std::string::npos)
      << m.error().what;
}

INSTANTIATE_TEST_SUITE_P(
    Table, ResumeTable,
    testing::Values(
        resume_row{"Resume_SameQuery_Accepted", asc, asc, R"([{"item":1}])", 1,
                   ""},
        resume_row{"Resume_OtherQuery_Problem", asc, desc, "null", 1,
                   "belongs to another query"},
        resume_row{"Resume_OtherTop_Problem", top(asc, 5), top(asc, 6), "null",
                   1, "belongs to another query"},
        resume_row{"Resume_UnorderedDistinctNothingReturned_Accepted",
                   distinct(plain(), "Unordered"),
                   distinct(plain(), "Unordered"), "null", 1, ""},
        resume_row{"Resume_SortKeysWrongCount_Problem", asc, asc,
                   R"([{"item":1},{}])", 1, "do not match the 1 sort keys"},
        resume_row{"Resume_SortKeyNotObject_Problem", asc, asc, "[1]", 1,
                   "do not match"},
        resume_row{"Resume_SortKeysWithoutOrderBy_Problem", plain(), plain(),
                   R"([{"item":1}])", 1, "no ORDER BY"},
        resume_row{"Resume_NoRanges_Problem", asc, asc, "null", 0,
                   "no ranges"}));

// -- counters
// ---------------------------------------------------------------------------

struct counter_row {
  std::string name;
  query_info info;
  std::vector<pages> ranges;
  size_t resume_after; ///< steps before a resume; 0 = no resume
  bool split_first;    ///< split range 0 before anything
  query_merge_counters expected;
};

void PrintTo(const counter_row& row, std::ostream* os) {
  *os << row.name;
}

class CounterTable : public testing::TestWithParam<counter_row> {};

TEST_P(CounterTable, Counts) {
  const auto& row = GetParam();
  auto d = fresh(row.info, row.ranges);
  if (row.split_first) d.split(0, {});
  if (row.resume_after > 0) {
    d.run(drive::needed, row.resume_after);
    std::string text;
    auto d2 = resumed(row.info, d, &text);
    ASSERT_TRUE(d2);
    d = std::move(*d2);
  }
  d.run(drive::needed);
  const auto& c = d.m.counters();
  const auto& e = row.expected;
  EXPECT_EQ(c.rows_received, e.rows_received);
  EXPECT_EQ(c.rows_emitted, e.rows_emitted);
  EXPECT_EQ(c.resume_dropped, e.resume_dropped);
  EXPECT_EQ(c.distinct_dropped, e.distinct_dropped);
  EXPECT_EQ(c.offset_skipped, e.offset_skipped);
  EXPECT_EQ(c.splits, e.splits);
}

query_merge_counters counts(uint64_t received, uint64_t emitted,
                            uint64_t resumed, uint64_t distinct_dropped,
                            uint64_t offset, uint64_t splits) {
  return {received, emitted, resumed, distinct_dropped, offset, splits};
}

INSTANTIATE_TEST_SUITE_P(
    Table, CounterTable,
    testing::Values(
        counter_row{"Counters_DistinctAndOffset_Counted",
                    window(distinct(asc, "Ordered"), 1, 5),
                    {{{obp("r1", R"(["a"])", "a"), obp("r2", R"(["b"])", "b")}},
                     {{obp("r3", R"(["a"])", "a")}}},
                    0,
                    false,
                    counts(3, 1, 0, 1, 1, 0)},
        // Resumed after feeding both ranges and draining "a": range 0 sends
        // its page again and "a" is dropped once.
        counter_row{"Counters_ResumedMidPage_DroppedRowCounted",
                    asc,
                    {{{ob("a", "[1]"), ob("c", "[3]")}}, {{ob("b", "[2]")}}},
                    3,
                    false,
                    counts(3, 2, 1, 0, 0, 0)},
        counter_row{"Counters_Split_Counted",
                    plain(),
                    {{{"a"}}},
                    0,
                    true,
                    counts(1, 1, 0, 0, 0, 1)}));

// -- unordered DISTINCT across pages and processes
// -----------------------------------------------

const auto unordered = distinct(plain(), "Unordered");

/// Values repeat inside a page, across the pages of a range and across
/// ranges; 1 and 1.0, and objects with their keys in another order, are the
/// same value.
const std::vector<pages> distinct_scripts = {
    {{J("1"), J(R"("x")"), J("1")},
     {J("2"), J(R"({"a":1,"b":2})")},
     {J("3"), J(R"("x")")}},
    {{J("2.0"), J("4")}, {J("1.0"), J(R"("y")")}},
    {{}, {J(R"({"b":2,"a":1})"), J("5")}, {J("3"), J("6"), J("4")}},
    {{J("null"), J(R"("x")")}, {J("[1,2]"), J("7")}},
};

const char* distinct_expected = R"([1,"x",2,{"a":1,"b":2},3,4,"y",5,6,null,)"
                                R"([1,2],7])";

/// Pages of at most `page_size` results, the way the query executor makes
/// them, each page from a new merger resumed from the previous page's
/// continuation text (a new process per page). `tokens`: those texts.
std::vector<std::vector<json>> paged(const query_info& info,
                                     const std::vector<pages>& scripts,
                                     size_t page_size, drive how,
                                     std::vector<std::string>* tokens) {
  std::vector<std::vector<json>> out;
  auto d = fresh(info, scripts);
  for (size_t n = 0; n < 1000; ++n) {
    d.out.clear();
    while (d.out.size() < page_size && d.step(how)) {
    }
    out.push_back(d.out);
    if (d.m.finished()) return out;
    auto c = d.m.continuation();
    if (!c) {
      ADD_FAILURE() << "page " << n << ": " << c.error().what;
      return out;
    }
    tokens->push_back(encode_continuation(*c));
    auto back = decode_continuation(tokens->back());
    if (!back) {
      ADD_FAILURE() << back.error().what << "\n" << tokens->back();
      return out;
    }
    auto m = query_merger::resume(info, *back);
    if (!m) {
      ADD_FAILURE() << m.error().what << "\n" << tokens->back();
      return out;
    }
    d = driver{std::move(*m), scripts, {}};
  }
  ADD_FAILURE() << "more than 1000 pages";
  return out;
}

TEST(QueryDistinctPaging,
     UnorderedDistinct_SmallPagesEachResumedFromItsToken_EveryValueOnce) {
  for (auto how : all_drives) {
    for (size_t size = 1; size <= 5; ++size) {
      std::vector<std::string> tokens;
      auto pages = paged(unordered, distinct_scripts, size, how, &tokens);
      std::vector<json> all;
      std::set<std::string> once;
      for (size_t i = 0; i < pages.size(); ++i) {
        EXPECT_LE(pages[i].size(), size) << how << ", page " << i;
        if (i + 1 < pages.size()) {
          EXPECT_EQ(pages[i].size(), size) << how << ", page " << i;
        }
        for (const auto& v : pages[i]) {
          EXPECT_TRUE(once.insert(canonical_json(v)).second)
              << how << ", pages of " << size << ": " << v << " twice";
          all.push_back(v);
        }
      }
      EXPECT_EQ(dump(all), J(distinct_expected).dump())
          << how << ", pages of " << size;
      EXPECT_GE(tokens.size(), 12 / size - 1) << how << ", pages of " << size;
      // Each token carries the hash of every value returned before it.
      size_t returned = 0;
      for (size_t i = 0; i < tokens.size(); ++i) {
        returned += pages[i].size();
        auto c = decode_continuation(tokens[i]);
        ASSERT_TRUE(c) << c.error().what;
        EXPECT_EQ(c->distinct_seen.size(), returned) << tokens[i];
        EXPECT_EQ(c->position, static_cast<int64_t>(returned));
      }
    }
  }
}

TEST(QueryDistinctPaging,
     UnorderedDistinct_ValueOfAnEarlierPageSentAfterResume_Dropped) {
  auto d = fresh(unordered, {{{"a", "b"}}, {{"a", "c"}}});
  d.feed(0);
  EXPECT_EQ(dump(d.m.drain(2)), R"(["a","b"])");
  std::string text;
  auto d2 = resumed(unordered, d, &text);
  ASSERT_TRUE(d2);
  d2->out.clear();
  d2->run(drive::needed);
  EXPECT_EQ(dump(d2->out), R"(["c"])") << text;
  EXPECT_EQ(d2->m.counters().distinct_dropped, 1u);
}

TEST(QueryDistinctPaging,
     UnorderedDistinct_TokenInsideAPage_NoSkipListTheSetDropsTheRepeats) {
  auto d = fresh(unordered, {{{"a", "b", "a", "c"}, {"d"}}});
  d.feed(0);
  EXPECT_EQ(dump(d.m.drain(2)), R"(["a","b"])");
  auto c = d.m.continuation();
  ASSERT_TRUE(c) << c.error().what;
  ASSERT_EQ(c->ranges.size(), 1u);
  EXPECT_FALSE(c->ranges[0].token); // the page is read again
  EXPECT_TRUE(c->ranges[0].skip.empty());
  std::string text;
  auto d2 = resumed(unordered, d, &text);
  ASSERT_TRUE(d2);
  d2->run(drive::needed);
  EXPECT_EQ(dump(d2->out), R"(["c","d"])") << text;
  EXPECT_EQ(d2->m.counters().distinct_dropped, 3u); // a, b, a
  EXPECT_EQ(d2->m.counters().resume_dropped, 0u);
}

TEST(QueryDistinctPaging, OrderByUnorderedDistinct_PagesOfOne_EveryValueOnce) {
  auto info = distinct(asc, "Unordered");
  std::vector<pages> scripts = {
      {{obp("r1", "[1]", "p"), obp("r2", "[3]", "q")}, {obp("r5", "[6]", "p")}},
      {{obp("r3", "[2]", "q")}, {obp("r4", "[4]", "s"), obp("r6", "[7]", "t")}},
  };
  for (auto how : all_drives) {
    std::vector<std::string> tokens;
    auto pages = paged(info, scripts, 1, how, &tokens);
    std::vector<json> all;
    for (const auto& p : pages)
      all.insert(all.end(), p.begin(), p.end());
    EXPECT_EQ(dump(all), R"(["p","q","s","t"])") << how;
  }
}

/// One range: page 0 holds `first` distinct numbers 0.., page 1 the number
/// `first` and a repeat of 0, page 2 the number 5000.
driver at_bound(size_t first) {
  rows page0;
  for (size_t i = 0; i < first; ++i)
    page0.push_back(json(i));
  return fresh(unordered, {{page0, {json(first), json(0)}, {json(5000)}}});
}

TEST(QueryDistinctBound, Continuation_AtTheBound_CarriesEveryValue) {
  auto d = at_bound(max_distinct_carried);
  d.feed(0);
  EXPECT_EQ(d.m.drain(5000).size(), max_distinct_carried);
  auto c = d.m.continuation();
  ASSERT_TRUE(c) << c.error().what;
  EXPECT_EQ(c->distinct_seen.size(), max_distinct_carried);
  auto text = encode_continuation(*c);
  auto data = json::parse(text)["seen"]["data"].get<std::string>();
  EXPECT_LE(data.size(), distinct_set_max_chars(max_distinct_carried));
  auto back = decode_continuation(text);
  ASSERT_TRUE(back) << back.error().what;
  auto m = query_merger::resume(unordered, *back);
  ASSERT_TRUE(m) << m.error().what;
  driver d2{std::move(*m), d.scripts, {}};
  d2.run(drive::needed);
  EXPECT_EQ(dump(d2.out), "[1024,5000]");
}

TEST(QueryDistinctBound,
     Continuation_OneValuePastTheBound_ProblemSaysWhatToDo) {
  auto d = at_bound(max_distinct_carried);
  d.feed(0);
  d.m.drain(5000);
  d.feed(0);
  EXPECT_EQ(dump(d.m.drain(5000)), "[1024]");
  ASSERT_FALSE(d.m.finished());
  auto c = d.m.continuation();
  ASSERT_FALSE(c);
  const auto& what = c.error().what;
  for (const char* part : {"carries at most 1024 values", "has returned 1025",
                           "ORDER BY", "max_item_count"})
    EXPECT_NE(what.find(part), std::string::npos) << part << ": " << what;
}

// -- the coded set of hashes
// -------------------------------------------------------------

std::vector<uint64_t> random_hashes(size_t n, uint64_t seed) {
  std::mt19937_64 rng{seed};
  std::vector<uint64_t> out;
  for (size_t i = 0; i < n; ++i)
    out.push_back(rng());
  return out;
}

/// {0, 1, .., n - 2, 2^64 - 1}: one gap takes all the room, the longest text.
std::vector<uint64_t> widest(size_t n) {
  std::vector<uint64_t> out;
  for (size_t i = 0; i + 1 < n; ++i)
    out.push_back(i);
  out.push_back(std::numeric_limits<uint64_t>::max());
  return out;
}

struct set_row {
  std::string name;
  std::vector<uint64_t> hashes;
};

void PrintTo(const set_row& row, std::ostream* os) {
  *os << row.name;
}

class HashSetCodecTable : public testing::TestWithParam<set_row> {};

TEST_P(HashSetCodecTable, EncodedDecoded_SameSetAscending) {
  auto want = GetParam().hashes;
  std::sort(want.begin(), want.end());
  want.erase(std::unique(want.begin(), want.end()), want.end());
  auto text = encode_hash_set(GetParam().hashes);
  EXPECT_LE(text.size(), distinct_set_max_chars(want.size()));
  for (char ch : text)
    EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' ||
                ch == '_')
        << text;
  auto back = decode_hash_set(text, want.size());
  ASSERT_TRUE(back) << back.error().what << "\n" << text;
  EXPECT_EQ(*back, want);
}

INSTANTIATE_TEST_SUITE_P(
    Table, HashSetCodecTable,
    testing::Values(set_row{"Set_Empty", {}}, set_row{"Set_Zero", {0}},
                    set_row{"Set_Max", {std::numeric_limits<uint64_t>::max()}},
                    set_row{"Set_ZeroAndMax",
                            {std::numeric_limits<uint64_t>::max(), 0}},
                    set_row{"Set_NeighboursAtTheTop",
                            {std::numeric_limits<uint64_t>::max() - 1,
                             std::numeric_limits<uint64_t>::max()}},
                    set_row{"Set_Repeats_CountOnce", {7, 3, 7, 3, 3}},
                    set_row{"Set_Consecutive", {5, 1, 2, 3, 4, 0}},
                    set_row{"Set_Random1023", random_hashes(1023, 1)},
                    set_row{"Set_Random1024", random_hashes(1024, 2)},
                    set_row{"Set_Widest1024", widest(1024)},
                    set_row{"Set_Widest3", widest(3)}));

TEST(HashSetCodec, MaxChars_AtTheBound_Is9558AndTheWidestSetTakesIt) {
  EXPECT_EQ(distinct_set_max_chars(max_distinct_carried), 9558u);
  EXPECT_EQ(encode_hash_set(widest(max_distinct_carried)).size(), 9558u);
  // Uniform hashes take about 9.3 characters each.
  EXPECT_LT(encode_hash_set(random_hashes(1024, 3)).size(), 9558u);
}

/// Base64url of a string of '0'/'1' bits (spaces ignored), unused bits 0.
std::string bits(const std::string& text) {
  static const char* alphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string b;
  for (char c : text)
    if (c != ' ') b += c;
  while (b.size() % 6 != 0)
    b += '0';
  std::string out;
  for (size_t i = 0; i < b.size(); i += 6)
    out += alphabet[std::stoi(b.substr(i, 6), nullptr, 2)];
  return out;
}

struct set_decode_row {
  std::string name;
  size_t count;
  std::string text;
  std::string problem;
};

void PrintTo(const set_decode_row& row, std::ostream* os) {
  *os << row.name;
}

class HashSetDecodeTable : public testing::TestWithParam<set_decode_row> {};

TEST_P(HashSetDecodeTable, Rejects) {
  auto r = decode_hash_set(GetParam().text, GetParam().count);
  ASSERT_FALSE(r) << GetParam().text;
  EXPECT_NE(r.error().what.find(GetParam().problem), std::string::npos)
      << r.error().what;
}

// Four values: 61 low bits each; {0, 1, 2, 3} is 248 zero bits, 42
// characters with four unused bits.
INSTANTIATE_TEST_SUITE_P(
    Table, HashSetDecodeTable,
    testing::Values(
        set_decode_row{"SetDecode_NotBase64url_Problem", 1, "AAAAA+AAAAA",
                       "character 5 ('+') is not base64url"},
        set_decode_row{"SetDecode_EmptySetWithText_Problem", 0, "A",
                       "characters for an empty set"},
        set_decode_row{"SetDecode_CountPastTheBound_Problem", 1025, "",
                       "at most 1024"},
        set_decode_row{"SetDecode_LongerThanAnySet_Problem", 1, "AAAAAAAAAAAA",
                       "12 characters, more than"},
        set_decode_row{"SetDecode_EndsInFirstValue_Problem", 2, "AAAA",
                       "ends inside value 0 of 2"},
        set_decode_row{"SetDecode_EndsInSecondValue_Problem", 2, "AAAAAAAAAAA",
                       "ends inside value 1 of 2"},
        set_decode_row{"SetDecode_CharacterAfterLastValue_Problem", 4,
                       std::string(43, 'A'),
                       "1 characters after the last value"},
        set_decode_row{"SetDecode_UnusedBitsSet_Problem", 4,
                       std::string(41, 'A') + "B",
                       "unused bits after the last value are not 0"},
        // One value, 63 low bits: high part 2 would be 2^64.
        set_decode_row{"SetDecode_HighPartPast2To64_Problem", 1, bits("110"),
                       "value 0 is past 2^64"},
        // Two values, 62 low bits: 2^64 - 1, then one more.
        set_decode_row{
            "SetDecode_SecondValuePast2To64_Problem", 2,
            bits("1110" + std::string(62, '1') + "0" + std::string(62, '0')),
            "value 1 is past 2^64"}));

TEST(HashSetCodec, Decode_FourZeroValues_Accepted) {
  // The rows above change one thing of this text.
  auto r = decode_hash_set(std::string(42, 'A'), 4);
  ASSERT_TRUE(r) << r.error().what;
  EXPECT_EQ(*r, (std::vector<uint64_t>{0, 1, 2, 3}));
}

// -- the set in the token
// ----------------------------------------------------------------

query_continuation with_set(uint64_t query_hash, std::vector<uint64_t> set) {
  query_continuation c;
  c.query_hash = query_hash;
  c.position = static_cast<int64_t>(set.size());
  c.distinct_seen = std::move(set);
  c.ranges.push_back(
      range_resume{query_range{"0", "", "FF"}, std::string("t"), false, {}});
  return c;
}

TEST(QueryContinuation, SeenSet_AnyCharacterChanged_DecodeNamesTheSet) {
  auto text = encode_continuation(with_set(7, random_hashes(12, 4)));
  auto doc = json::parse(text);
  auto data = doc["seen"]["data"].get<std::string>();
  size_t tried = 0;
  for (size_t i = 0; i < data.size(); ++i) {
    for (char ch : {'A', 'f', '_'}) {
      if (data[i] == ch) continue;
      auto changed = doc;
      auto d = data;
      d[i] = ch;
      changed["seen"]["data"] = d;
      auto r = decode_continuation(changed.dump());
      ++tried;
      ASSERT_FALSE(r) << "character " << i << " -> " << ch;
      EXPECT_EQ(r.error().what.rfind("continuation: seen", 0), 0u)
          << r.error().what;
    }
  }
  EXPECT_GT(tried, 200u);
}

TEST(QueryContinuation, SeenSet_OtherSetSameCount_ChecksumProblem) {
  auto doc = json::parse(encode_continuation(with_set(7, {1, 2, 3})));
  doc["seen"]["data"] = encode_hash_set({1, 2, 4});
  auto r = decode_continuation(doc.dump());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().what.find("seen: the set of values already returned "
                                "fails its checksum"),
            std::string::npos)
      << r.error().what;
}

TEST(QueryContinuation, SeenSet_FromAnotherQuerysToken_ChecksumProblem) {
  auto mine = json::parse(encode_continuation(with_set(7, {1, 2, 3})));
  auto other = json::parse(encode_continuation(with_set(8, {4, 5, 6})));
  mine["seen"] = other["seen"];
  auto r = decode_continuation(mine.dump());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().what.find("fails its checksum"), std::string::npos)
      << r.error().what;
}

TEST(QueryContinuation, SeenSet_FromAnEarlierPageOfTheSameQuery_Problem) {
  // Same query, same count, another position: the checksum binds "pos".
  auto later = with_set(7, {1, 2, 3});
  later.position = 5;
  auto mine = json::parse(encode_continuation(later));
  auto earlier = json::parse(encode_continuation(with_set(7, {1, 2, 3})));
  mine["seen"] = earlier["seen"];
  auto r = decode_continuation(mine.dump());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().what.find("fails its checksum"), std::string::npos)
      << r.error().what;
}

struct seen_resume_row {
  std::string name;
  query_info info;
  std::vector<uint64_t> set;
  int64_t position;
  std::string problem; ///< "" = accepted
};

void PrintTo(const seen_resume_row& row, std::ostream* os) {
  *os << row.name;
}

class SeenResumeTable : public testing::TestWithParam<seen_resume_row> {};

TEST_P(SeenResumeTable, Resumes) {
  const auto& row = GetParam();
  auto c = with_set(query_fingerprint(row.info), row.set);
  c.position = row.position;
  auto m = query_merger::resume(row.info, c);
  if (row.problem.empty()) {
    EXPECT_TRUE(m) << m.error().what;
    return;
  }
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().what.find(row.problem), std::string::npos)
      << m.error().what;
}

INSTANTIATE_TEST_SUITE_P(
    Table, SeenResumeTable,
    testing::Values(
        seen_resume_row{
            "Resume_SetAsLongAsPosition_Accepted", unordered, {1, 2, 3}, 3, ""},
        seen_resume_row{"Resume_SetShorterThanPosition_Problem",
                        unordered,
                        {1, 2},
                        3,
                        "set holds 2 DISTINCT values, but its position says "
                        "3"},
        seen_resume_row{"Resume_NoSetAfterResults_Problem",
                        unordered,
                        {},
                        2,
                        "set holds 0 DISTINCT values"},
        seen_resume_row{"Resume_SetNotAscending_Problem",
                        unordered,
                        {2, 1},
                        2,
                        "does not ascend without repeats"},
        seen_resume_row{"Resume_SetWithRepeat_Problem",
                        unordered,
                        {1, 1},
                        2,
                        "does not ascend without repeats"},
        seen_resume_row{"Resume_SetForQueryWithoutDistinct_Problem",
                        plain(),
                        {1},
                        1,
                        "DISTINCT is not unordered"},
        seen_resume_row{"Resume_SetForOrderedDistinct_Problem",
                        distinct(asc, "Ordered"),
                        {1},
                        1,
                        "DISTINCT is not unordered"}));

// -- hash_set64
// ----------------------------------------------------------------------------

TEST(HashSet64, Insert_RandomWithRepeats_SameAsStdSet) {
  std::mt19937_64 rng{5};
  hash_set64 s;
  std::set<uint64_t> want;
  for (size_t i = 0; i < 5000; ++i) {
    // Small values repeat often, large ones rarely.
    uint64_t h = (i % 3 == 0) ? rng() % 500 : rng();
    EXPECT_EQ(s.insert(h), want.insert(h).second) << i;
    ASSERT_EQ(s.size(), want.size());
  }
  EXPECT_EQ(s.sorted(), std::vector<uint64_t>(want.begin(), want.end()));
  for (uint64_t h = 0; h < 600; ++h)
    EXPECT_EQ(s.contains(h), want.count(h) > 0) << h;
}

TEST(HashSet64, FromSortedThenInserts_KeepsBoth) {
  auto s = hash_set64::from_sorted({10, 20, 30});
  EXPECT_FALSE(s.insert(20));
  EXPECT_TRUE(s.insert(15));
  for (uint64_t h = 0; h < 100; ++h)
    s.insert(h * 7);
  EXPECT_TRUE(s.contains(30));
  EXPECT_TRUE(s.contains(15));
  EXPECT_FALSE(s.contains(16));
  auto all = s.sorted();
  EXPECT_TRUE(std::is_sorted(all.begin(), all.end()));
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end());
  EXPECT_EQ(all.size(), s.size());
  EXPECT_EQ(s.size(), 104u); // 10, 15, 20, 30 and 100 multiples of 7
}

} // namespace
