// Query plans: which queries need one, the queryInfo and rewritten query of
// each shape (the service's, as the .NET SDK's query-plan baselines record
// them), the narrowing of queryRanges to one EPK point, and that every
// rewritten query runs on the emulator once the SDK fills the placeholder.

#include "georoute/actors/policy/epk.hpp"
#include "tests/emulator/sql.hpp"
#include "tests/emulator/sql_ast.hpp"

#include <gtest/gtest.h>
#include <string>
#include <vector>

using namespace georoute;
using namespace georoute::emulator::sql;
using nlohmann::json;

namespace {

const std::string ph = "{documentdb-formattableorderbyquery-filter}";

partition_key_definition hash_pk(std::string path = "/pk") {
  partition_key_definition pk;
  pk.paths = {std::move(path)};
  return pk;
}

/// The plan of `text` (fails the test on error). Every non-empty rewritten
/// query must parse once the placeholder is replaced the way the SDK does.
query_plan plan_of(const std::string& text, const json& params = json(),
                   const partition_key_definition& pk = hash_pk()) {
  auto q = parse(text);
  EXPECT_TRUE(q.ok()) << text;
  if (!q.ok()) return {};
  auto p = make_plan(**q, text, pk, params);
  EXPECT_TRUE(p.ok()) << text << " -> " << (p.ok() ? "" : p.error().what);
  if (!p.ok()) return {};
  auto rewritten = p->info.rewritten_query;
  if (!rewritten.empty()) {
    auto at = rewritten.find(ph);
    if (at != std::string::npos) rewritten.replace(at, ph.size(), "true");
    auto again = parse(rewritten);
    EXPECT_TRUE(again.ok())
        << rewritten << " -> " << (again.ok() ? "" : again.error().what);
  }
  return *p;
}

bool full_range(const query_plan& p) {
  return p.query_ranges.size() == 1 && p.query_ranges[0].min.empty() &&
         p.query_ranges[0].max == "FF" && p.query_ranges[0].min_inclusive &&
         !p.query_ranges[0].max_inclusive;
}

bool point_range(const query_plan& p, const std::string& epk) {
  return p.query_ranges.size() == 1 && p.query_ranges[0].min == epk &&
         p.query_ranges[0].max == epk && p.query_ranges[0].min_inclusive &&
         p.query_ranges[0].max_inclusive;
}

json params(const char* name, json value) {
  return json::array({{{"name", name}, {"value", std::move(value)}}});
}

} // namespace

TEST(SqlPlan, NeedsQueryPlan_OnlyForClientSideMerging) {
  struct row {
    std::string text;
    bool want;
  };
  const std::vector<row> rows = {
      {"SELECT * FROM c", false},
      {"SELECT * FROM c WHERE c.pk = 'a' AND c.n > 1", false},
      {"SELECT c.a, c.b AS x FROM c", false},
      {"SELECT VALUE c.a FROM c", false},
      {"SELECT * FROM c ORDER BY c.n", true},
      {"SELECT VALUE COUNT(1) FROM c", true},
      {"SELECT VALUE AVG(c.n) FROM c WHERE c.pk = 'a'", true},
      {"SELECT DISTINCT c.a FROM c", true},
      {"SELECT TOP 1 * FROM c", true},
      {"SELECT * FROM c OFFSET 0 LIMIT 1", true},
  };
  for (const auto& r : rows) {
    auto q = parse(r.text);
    ASSERT_TRUE(q.ok()) << r.text;
    EXPECT_EQ(needs_query_plan(**q), r.want) << r.text;
  }
}

TEST(SqlPlan, PlainQuery_HasNoRewriteAndTheFullRange) {
  auto p = plan_of("SELECT * FROM c WHERE c.n > 1");
  EXPECT_EQ(p.version, 2);
  EXPECT_TRUE(full_range(p));
  EXPECT_EQ(p.info.rewritten_query, "");
  EXPECT_EQ(p.info.distinct_type, "None");
  EXPECT_EQ(p.info.top, -1);
  EXPECT_EQ(p.info.offset, -1);
  EXPECT_EQ(p.info.limit, -1);
  EXPECT_TRUE(p.info.order_by.empty());
  EXPECT_TRUE(p.info.aggregates.empty());
  EXPECT_FALSE(p.info.has_select_value);
}

TEST(SqlPlan, OrderBy_RewritesToItemsAndPayload) {
  auto p = plan_of("SELECT * FROM c ORDER BY c.n");
  EXPECT_EQ(p.info.order_by, std::vector<std::string>{"Ascending"});
  EXPECT_EQ(p.info.order_by_expressions, std::vector<std::string>{"c.n"});
  EXPECT_EQ(p.info.rewritten_query,
            "SELECT c._rid, [{\"item\": c.n}] AS orderByItems, c AS payload\n"
            "FROM c\nWHERE (" +
                ph + ")\nORDER BY c.n");
  EXPECT_TRUE(full_range(p));
}

TEST(SqlPlan, OrderByValueWithFilter_RequiresTheValueDefined) {
  auto p = plan_of("SELECT VALUE r.a FROM Root r WHERE r.d = true "
                   "ORDER BY r.b DESC");
  EXPECT_EQ(p.info.order_by, std::vector<std::string>{"Descending"});
  EXPECT_EQ(p.info.order_by_expressions, std::vector<std::string>{"r.b"});
  EXPECT_TRUE(p.info.has_select_value);
  EXPECT_EQ(p.info.rewritten_query,
            "SELECT r._rid, [{\"item\": r.b}] AS orderByItems, r.a AS payload\n"
            "FROM Root AS r\nWHERE (((r.d = true) AND (" +
                ph + ")) AND IS_DEFINED(r.a))\nORDER BY r.b DESC");
}

TEST(SqlPlan, OrderByProjectionAndTop_KeepsTopAndNamesThePayload) {
  auto p = plan_of("SELECT TOP 10 c.id, c[\"n\"], 1 FROM c "
                   "ORDER BY c.n ASC, c.id DESC");
  EXPECT_EQ(p.info.top, 10);
  EXPECT_EQ(p.info.order_by,
            (std::vector<std::string>{"Ascending", "Descending"}));
  EXPECT_EQ(p.info.order_by_expressions,
            (std::vector<std::string>{"c.n", "c.id"}));
  EXPECT_EQ(p.info.rewritten_query,
            "SELECT TOP 10 c._rid, [{\"item\": c.n}, {\"item\": c.id}] AS "
            "orderByItems, {\"id\": c.id, \"n\": c[\"n\"], \"$1\": 1} AS "
            "payload\nFROM c\nWHERE (" +
                ph + ")\nORDER BY c.n ASC, c.id DESC");
}

TEST(SqlPlan, OrderByWithOffsetLimit_AsksEachRangeForOffsetPlusLimit) {
  auto p = plan_of("SELECT * FROM c ORDER BY c.n OFFSET 5 LIMIT 10");
  EXPECT_EQ(p.info.offset, 5);
  EXPECT_EQ(p.info.limit, 10);
  EXPECT_EQ(p.info.rewritten_query,
            "SELECT c._rid, [{\"item\": c.n}] AS orderByItems, c AS payload\n"
            "FROM c\nWHERE (" +
                ph + ")\nORDER BY c.n\nOFFSET 0 LIMIT 15");
}

TEST(SqlPlan, Aggregates_RewriteToTheSdkShapes) {
  struct row {
    std::string select;
    std::string name;
    std::string rewritten_value;
  };
  const std::vector<row> rows = {
      {"COUNT(1)", "Count", "[{\"item\": COUNT(1)}]"},
      {"COUNT(c.n)", "Count", "[{\"item\": COUNT(c.n)}]"},
      {"SUM(c.n)", "Sum", "[{\"item\": SUM(c.n)}]"},
      {"AVG(c.n)", "Average",
       "[{\"item\": {\"sum\": SUM(c.n), \"count\": COUNT(c.n)}}]"},
      {"MIN(c.n)", "Min",
       "[{\"item\": MIN(c.n), \"item2\": {\"min\": MIN(c.n), \"count\": "
       "COUNT(c.n)}}]"},
      {"MAX(c[\"n\"])", "Max",
       "[{\"item\": MAX(c[\"n\"]), \"item2\": {\"max\": MAX(c[\"n\"]), "
       "\"count\": COUNT(c[\"n\"])}}]"},
  };
  for (const auto& r : rows) {
    auto p = plan_of("SELECT VALUE " + r.select + " FROM c");
    EXPECT_EQ(p.info.aggregates, std::vector<std::string>{r.name}) << r.select;
    EXPECT_TRUE(p.info.has_select_value);
    EXPECT_TRUE(p.info.order_by.empty());
    EXPECT_EQ(p.info.rewritten_query,
              "SELECT VALUE " + r.rewritten_value + "\nFROM c")
        << r.select;
    EXPECT_TRUE(full_range(p));
  }
}

TEST(SqlPlan, AggregateWithFilterAndTop_KeepsTopOutOfTheRewrite) {
  auto p = plan_of("SELECT TOP 5 VALUE COUNT(1) FROM c WHERE c.blah = 5");
  EXPECT_EQ(p.info.top, 5);
  EXPECT_EQ(p.info.rewritten_query,
            "SELECT VALUE [{\"item\": COUNT(1)}]\nFROM c\nWHERE (c.blah = 5)");
}

TEST(SqlPlan, CompositeAggregate_IsAnError) {
  auto q = parse("SELECT VALUE {\"n\": COUNT(1)} FROM c");
  ASSERT_TRUE(q.ok());
  auto p = make_plan(**q, "", hash_pk(), json());
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().what.rfind("Error at position 13: ", 0), 0u)
      << p.error().what;
}

TEST(SqlPlan, Distinct_IsOrderedOnlyWhenSortedByTheProjection) {
  auto unordered = plan_of("SELECT DISTINCT c.blah FROM c");
  EXPECT_EQ(unordered.info.distinct_type, "Unordered");
  EXPECT_EQ(unordered.info.rewritten_query, "");

  auto ordered = plan_of("SELECT DISTINCT VALUE c.blah FROM c ORDER BY c.blah");
  EXPECT_EQ(ordered.info.distinct_type, "Ordered");
  EXPECT_EQ(ordered.info.rewritten_query,
            "SELECT c._rid, [{\"item\": c.blah}] AS orderByItems, c.blah AS "
            "payload\nFROM c\nWHERE ((" +
                ph + ") AND IS_DEFINED(c.blah))\nORDER BY c.blah");

  auto other = plan_of("SELECT DISTINCT VALUE c.a FROM c ORDER BY c.b");
  EXPECT_EQ(other.info.distinct_type, "Unordered");

  auto top = plan_of("SELECT DISTINCT TOP 5 VALUE c.name FROM c");
  EXPECT_EQ(top.info.distinct_type, "Unordered");
  EXPECT_EQ(top.info.top, 5);
  EXPECT_EQ(top.info.rewritten_query, "SELECT DISTINCT VALUE c.name\nFROM c");

  auto window = plan_of("SELECT DISTINCT * FROM c WHERE c.x = 5 "
                        "OFFSET 1 LIMIT 2");
  EXPECT_EQ(window.info.offset, 1);
  EXPECT_EQ(window.info.limit, 2);
  EXPECT_EQ(window.info.rewritten_query,
            "SELECT DISTINCT *\nFROM c\nWHERE (c.x = 5)");
}

TEST(SqlPlan, OffsetLimitAndTop_MoveToTheClient) {
  auto p = plan_of("SELECT * FROM c WHERE c.blah = 5 OFFSET 1 LIMIT 2");
  EXPECT_EQ(p.info.offset, 1);
  EXPECT_EQ(p.info.limit, 2);
  EXPECT_EQ(p.info.rewritten_query,
            "SELECT *\nFROM c\nWHERE (c.blah = 5)\nOFFSET 0 LIMIT 3");

  auto par = plan_of("SELECT c.name FROM c OFFSET @o LIMIT @l",
                     json::array({{{"name", "@o"}, {"value", 42}},
                                  {{"name", "@l"}, {"value", 1337}}}));
  EXPECT_EQ(par.info.offset, 42);
  EXPECT_EQ(par.info.limit, 1337);
  EXPECT_EQ(par.info.rewritten_query,
            "SELECT c.name\nFROM c\nOFFSET 0 LIMIT 1379");

  auto top = plan_of("SELECT TOP @t * FROM c", params("@t", 42));
  EXPECT_EQ(top.info.top, 42);
  EXPECT_EQ(top.info.rewritten_query, "");
}

TEST(SqlPlan, PartitionKeyEqualityLiteral_NarrowsToOnePoint) {
  auto p = plan_of("SELECT * FROM c WHERE c.pk = 'a' ORDER BY c.n");
  EXPECT_TRUE(point_range(p, epk_v2({pk_component{std::string("a")}})));
  // One logical partition sorts by itself: no merge, original query per range.
  EXPECT_TRUE(p.info.order_by.empty());
  EXPECT_EQ(p.info.rewritten_query, "");

  auto num = plan_of("SELECT * FROM r WHERE r.x > 1 AND (5 = r.pk) "
                     "OFFSET 1 LIMIT 2");
  EXPECT_TRUE(point_range(num, epk_v2({pk_component{5.0}})));
  EXPECT_EQ(num.info.offset, -1);
  EXPECT_EQ(num.info.limit, -1);

  auto top = plan_of("SELECT TOP 5 * FROM c WHERE c.pk = true");
  EXPECT_TRUE(point_range(top, epk_v2({pk_component{true}})));
  EXPECT_EQ(top.info.top, 5);

  auto nul = plan_of("SELECT * FROM c WHERE c[\"pk\"] = null");
  EXPECT_TRUE(point_range(nul, epk_v2({pk_component{pk_null{}}})));
}

TEST(SqlPlan, PartitionKeyEqualityParameter_NarrowsAndKeepsAggregates) {
  auto p = plan_of("SELECT VALUE COUNT(1) FROM c WHERE c.x > 1 AND @p = c.pk",
                   params("@p", "v"));
  EXPECT_TRUE(point_range(p, epk_v2({pk_component{std::string("v")}})));
  EXPECT_EQ(p.info.aggregates, std::vector<std::string>{"Count"});
  EXPECT_EQ(p.info.rewritten_query,
            "SELECT VALUE [{\"item\": COUNT(1)}]\nFROM c\n"
            "WHERE ((c.x > 1) AND (@p = c.pk))");

  auto d =
      plan_of("SELECT DISTINCT c.a FROM c WHERE c.pk = @p", params("@p", 7));
  EXPECT_TRUE(point_range(d, epk_v2({pk_component{7.0}})));
  EXPECT_EQ(d.info.distinct_type, "Unordered");
}

TEST(SqlPlan, NestedPartitionKeyPath_MatchesTheWholePath) {
  auto pk = hash_pk("/a/b");
  auto p = plan_of("SELECT * FROM c WHERE c.a.b = 'x'", json(), pk);
  EXPECT_TRUE(point_range(p, epk_v2({pk_component{std::string("x")}})));
  EXPECT_TRUE(
      full_range(plan_of("SELECT * FROM c WHERE c.a = 'x'", json(), pk)));
  EXPECT_TRUE(
      full_range(plan_of("SELECT * FROM c WHERE c.a.b.c = 'x'", json(), pk)));
}

TEST(SqlPlan, NonNarrowableFilters_KeepTheFullRange) {
  const char* queries[] = {
      "SELECT * FROM c WHERE c.pk = 'a' OR c.pk = 'b' ORDER BY c.n",
      "SELECT * FROM c WHERE c.pk = 'a' OR c.x = 1",
      "SELECT * FROM c WHERE NOT (c.pk = 'a')",
      "SELECT * FROM c WHERE c.pk > 'a'",
      "SELECT * FROM c WHERE c.pk != 'a'",
      "SELECT * FROM c WHERE c.pk = c.other",
      "SELECT * FROM c WHERE c.pk = [1]",
      "SELECT * FROM c WHERE c.other = 'a'",
      "SELECT * FROM c WHERE c.pk.sub = 'a'",
      "SELECT * FROM c WHERE c.pk = @obj",
  };
  for (const char* text : queries) {
    auto p = plan_of(text, params("@obj", json::object()));
    EXPECT_TRUE(full_range(p)) << text;
  }
  // The ORDER BY survives when the range is not a point.
  auto p = plan_of(queries[0]);
  EXPECT_EQ(p.info.order_by, std::vector<std::string>{"Ascending"});
}

TEST(SqlPlan, OtherPartitionKeyKinds_NarrowOnlyWhenComputable) {
  partition_key_definition multi;
  multi.kind = "MultiHash";
  multi.paths = {"/a", "/b"};
  auto both =
      plan_of("SELECT * FROM c WHERE c.b = 2 AND c.a = 'x'", json(), multi);
  EXPECT_TRUE(point_range(
      both,
      epk_v2_multihash({pk_component{std::string("x")}, pk_component{2.0}})));
  EXPECT_TRUE(
      full_range(plan_of("SELECT * FROM c WHERE c.a = 'x'", json(), multi)));

  auto v1 = hash_pk();
  v1.version = 1;
  EXPECT_TRUE(
      full_range(plan_of("SELECT * FROM c WHERE c.pk = 'a'", json(), v1)));
}

TEST(SqlPlan, UnboundParameters_AreErrors) {
  auto q = parse("SELECT * FROM c WHERE c.pk = @p");
  ASSERT_TRUE(q.ok());
  auto p = make_plan(**q, "", hash_pk(), json::array());
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().what,
            "Error at position 29: parameter @p is not defined");
}

TEST(SqlPlan, RewrittenOrderBy_RunsPerRangeWithTheSdkFilter) {
  const std::vector<json> range = {
      json::parse(R"({"id":"1","_rid":"a","n":3})"),
      json::parse(R"({"id":"2","_rid":"b","n":1})"),
      json::parse(R"({"id":"3","_rid":"c"})"),
  };
  auto p = plan_of("SELECT c.id FROM c WHERE c.id != '9' ORDER BY c.n DESC");
  auto text = p.info.rewritten_query;
  auto first = text;
  first.replace(first.find(ph), ph.size(), "true");
  auto q = parse(first);
  ASSERT_TRUE(q.ok()) << first;
  auto rows = execute(**q, range, json());
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(json(*rows), json::parse(R"([
    {"_rid":"a","orderByItems":[{"item":3}],"payload":{"id":"1"}},
    {"_rid":"b","orderByItems":[{"item":1}],"payload":{"id":"2"}},
    {"_rid":"c","orderByItems":[{}],"payload":{"id":"3"}}])"));
  // The continuation filter the SDK builds for a descending sort.
  auto next = text;
  next.replace(next.find(ph), ph.size(), "(c.n < 3)");
  q = parse(next);
  ASSERT_TRUE(q.ok()) << next;
  rows = execute(**q, range, json());
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0]["_rid"], "b");
}

TEST(SqlPlan, RewrittenAggregate_RunsPerRange) {
  const std::vector<json> range = {json::parse(R"({"n":2})"),
                                   json::parse(R"({"n":4})"),
                                   json::parse(R"({"m":1})")};
  auto p = plan_of("SELECT VALUE AVG(c.n) FROM c");
  auto q = parse(p.info.rewritten_query);
  ASSERT_TRUE(q.ok());
  auto rows = execute(**q, range, json());
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(json(*rows), json::parse(R"([[{"item":{"sum":6,"count":2}}]])"));
}

// The rewrite prints every binary operator in parentheses, so a flat chain
// of n ORs nests n levels deep: it must still parse (tests/fuzz/sql).
TEST(SqlPlan, LongOrChain_RewriteParses) {
  std::string where = "c.n = 0";
  for (int i = 1; i < 120; ++i)
    where += " OR c.n = " + std::to_string(i);
  for (const auto& text : {"SELECT VALUE SUM(c.n) FROM c WHERE " + where,
                           "SELECT * FROM c WHERE " + where + " ORDER BY c.n"})
    EXPECT_FALSE(plan_of(text).info.rewritten_query.empty()) << text;
}

// `31.n` is a malformed number: the rewrite writes `(31).n`
// (tests/fuzz/sql).
TEST(SqlPlan, PropertyOfANumber_RewriteParses) {
  auto p = plan_of("SELECT VALUE SUM(c.n) FROM c WHERE c.n = (31).n");
  EXPECT_NE(p.info.rewritten_query.find("(31).n"), std::string::npos)
      << p.info.rewritten_query;
}

namespace {

// A WHERE as tall as the parser allows (max_depth): the ORDER BY rewrite
// nests it one level deeper, which the parser would refuse. The plan is a
// clear error instead of a rewrite every range refuses; a little lower, the
// plan and its rewrite are fine (an edge tests/fuzz/sql probes).
TEST(SqlPlan, WhereAtTheHeightLimit_RewriteTooDeep_IsAClearError) {
  // NOT^(k-1) over `true`: height k (a leaf is 1).
  auto where = [](int height) {
    std::string w = "true";
    for (int i = 1; i < height; ++i)
      w = "NOT " + w;
    return w;
  };
  auto tall = "SELECT * FROM c WHERE " + where(max_depth) + " ORDER BY c.n";
  auto q = parse(tall);
  ASSERT_TRUE(q.ok()) << q.error().what;
  ASSERT_EQ((*q)->where->height, max_depth);
  auto p = make_plan(**q, tall, hash_pk(), json());
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().what.find("nested too deeply to be rewritten"),
            std::string::npos)
      << p.error().what;

  auto lower =
      "SELECT * FROM c WHERE " + where(max_depth - 1) + " ORDER BY c.n";
  EXPECT_FALSE(plan_of(lower).info.rewritten_query.empty());
}

} // namespace
