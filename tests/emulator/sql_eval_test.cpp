// Execution of the SQL subset over one range's documents: filters, Cosmos
// value semantics, ORDER BY across types, TOP, OFFSET/LIMIT, DISTINCT,
// aggregates, and the per-range shapes of the SDK's rewritten queries.

#include "tests/emulator/sql.hpp"

#include <gtest/gtest.h>
#include <string>
#include <vector>

using namespace georoute::emulator::sql;
using nlohmann::json;

// Named after the file as well: the unity build (tests/CMakeLists.txt)
// compiles it in one translation unit with other tests.
namespace sql_eval_test {
namespace {

std::vector<json> docs() {
  return {
      json::parse(R"({"id":"1","_rid":"r1","pk":"a","n":1,"s":"x","b":true,
                    "tags":["t1","t2"],"o":{"k":1}})"),
      json::parse(
          R"({"id":"2","_rid":"r2","pk":"a","n":2.5,"s":"y","b":false})"),
      json::parse(R"({"id":"3","_rid":"r3","pk":"b","n":"3","s":null})"),
      json::parse(R"({"id":"4","_rid":"r4","pk":"b"})"),
      json::parse(R"({"id":"5","_rid":"r5","pk":"c","n":-1,
                    "nested":{"a":{"b":7}}})"),
  };
}

/// Runs `text` over docs() and returns the rows (fails the test on error).
std::vector<json> run(const std::string& text, const json& params = json()) {
  auto q = parse(text);
  EXPECT_TRUE(q.ok()) << text << " -> " << (q.ok() ? "" : q.error().what);
  if (!q.ok()) return {};
  auto rows = execute(**q, docs(), params);
  EXPECT_TRUE(rows.ok()) << text << " -> "
                         << (rows.ok() ? "" : rows.error().what);
  return rows.ok() ? *rows : std::vector<json>{};
}

/// The `id`s selected by `SELECT VALUE c.id FROM c WHERE <where>`.
json ids_where(const std::string& where, const json& params = json()) {
  return json(run("SELECT VALUE c.id FROM c WHERE " + where, params));
}

json params(const char* name, json value) {
  return json::array({{{"name", name}, {"value", std::move(value)}}});
}

TEST(SqlEval, Filters_SelectMatchingDocuments) {
  struct row {
    std::string where;
    json want;
  };
  const std::vector<row> rows = {
      {"c.pk = 'a'", {"1", "2"}},
      {"c.pk = \"b\"", {"3", "4"}},
      {"c.pk != 'a'", {"3", "4", "5"}},
      {"c.pk <> 'a'", {"3", "4", "5"}},
      {"c.n > 1", {"2"}},
      {"c.n >= 1", {"1", "2"}},
      {"c.n < 1", {"5"}},
      {"c.n <= 1", {"1", "5"}},
      {"c.pk = 'a' AND c.n > 2", {"2"}},
      {"c.pk = 'c' OR c.b = false", {"2", "5"}},
      {"(c.pk = 'a' OR c.pk = 'c') AND NOT (c.n = 1)", {"2", "5"}},
      {"c.b", {"1"}},
      {"c.s = null", {"3"}},
      {"c.nested.a.b = 7", {"5"}},
      {"c[\"nested\"][\"a\"].b = 7", {"5"}},
      {"c.tags[1] = 't2'", {"1"}},
      {"c.tags = ['t1', 't2']", {"1"}},
      {"c.o = {\"k\": 1}", {"1"}},
      {"c.n = 1.0", {"1"}},
      {"IS_DEFINED(c.n)", {"1", "2", "3", "5"}},
      {"NOT IS_DEFINED(c.n)", {"4"}},
      {"IS_NUMBER(c.n) AND IS_STRING(c.s)", {"1", "2"}},
      {"IS_NULL(c.s) OR IS_ARRAY(c.tags) OR IS_OBJECT(c.nested)",
       {"1", "3", "5"}},
      {"true", {"1", "2", "3", "4", "5"}},
      {"false", json::array()},
  };
  for (const auto& r : rows)
    EXPECT_EQ(ids_where(r.where), r.want) << r.where;
}

TEST(SqlEval, MissingAndMismatchedTypes_AreUndefinedAndFilteredOut) {
  struct row {
    std::string where;
    json want;
  };
  const std::vector<row> rows = {
      // "3" is a string: comparing it to a number is undefined, not false.
      {"c.n > 0", {"1", "2"}},
      {"NOT (c.n > 0)", {"5"}},
      {"c.n = '3'", {"3"}},
      {"NOT (c.n = 1)", {"2", "5"}},
      // Missing property: undefined under every operator, NOT included.
      {"c.missing = null", json::array()},
      {"NOT (c.missing = 1)", json::array()},
      {"c.missing != 1", json::array()},
      {"c.tags[5] = 't'", json::array()},
      {"c.pk.x = 1", json::array()},
      // Three-valued logic: false AND undefined is false, true OR undefined
      // true, and NOT of either keeps that.
      {"NOT (c.missing = 1 AND false)", {"1", "2", "3", "4", "5"}},
      {"c.missing = 1 OR c.pk = 'c'", {"5"}},
      {"NOT (c.missing = 1 OR false)", json::array()},
      // Non-boolean operands of AND/NOT are undefined.
      {"c.n AND true", json::array()},
      {"NOT c.pk", json::array()},
      // Arrays and objects do not order.
      {"c.tags > ['a']", json::array()},
      {"true > false", {"1", "2", "3", "4", "5"}},
      {"null >= null", {"1", "2", "3", "4", "5"}},
  };
  for (const auto& r : rows)
    EXPECT_EQ(ids_where(r.where), r.want) << r.where;
}

TEST(SqlEval, Parameters_AreBound) {
  EXPECT_EQ(ids_where("c.n > @min", params("@min", 0)), json({"1", "2"}));
  EXPECT_EQ(ids_where("c.pk = @pk", params("@pk", "b")), json({"3", "4"}));
  EXPECT_EQ(ids_where("c.tags = @t", params("@t", {"t1", "t2"})), json({"1"}));
  EXPECT_EQ(ids_where("c.tags[@i] = 't2'", params("@i", 1)), json({"1"}));
  EXPECT_EQ(ids_where("c.o[@k] = 1", params("@k", "k")), json({"1"}));
  auto no_value = json::array({{{"name", "@p"}}});
  EXPECT_EQ(ids_where("NOT IS_DEFINED(@p)", no_value),
            json({"1", "2", "3", "4", "5"}));
}

TEST(SqlEval, BadParameters_AreErrors) {
  struct row {
    std::string text;
    json params;
    std::string what;
  };
  const std::vector<row> rows = {
      {"SELECT * FROM c WHERE c.n > @min", json(),
       "Error at position 28: "
       "parameter @min is not "
       "defined"},
      {"SELECT * FROM c WHERE c.n > @min", params("@other", 1), "@min"},
      {"SELECT TOP @t * FROM c", params("@t", -1), "TOP expects"},
      {"SELECT TOP @t * FROM c", params("@t", "5"), "TOP expects"},
      {"SELECT * FROM c OFFSET @o LIMIT 1", json::array(), "@o is not defined"},
      {"SELECT * FROM c", json::object(), "parameters: expected an array"},
      {"SELECT * FROM c", json::array({1}),
       "parameters[0]: expected an object"},
      {"SELECT * FROM c", json::array({{{"value", 1}}}), "parameters[0].name"},
  };
  for (const auto& r : rows) {
    auto q = parse(r.text);
    ASSERT_TRUE(q.ok()) << r.text;
    auto res = execute(**q, docs(), r.params);
    ASSERT_FALSE(res.ok()) << r.text;
    EXPECT_NE(res.error().what.find(r.what), std::string::npos)
        << r.text << " -> " << res.error().what;
  }
}

TEST(SqlEval, Projections_OmitUndefined) {
  EXPECT_EQ(run("SELECT c.id, c.n FROM c WHERE c.id = '4'"),
            std::vector<json>{json::parse(R"({"id":"4"})")});
  EXPECT_EQ(json(run("SELECT VALUE c.n FROM c")), json({1, 2.5, "3", -1}));
  EXPECT_EQ(
      run("SELECT c.n, 1, c.tags[0], c.s AS str FROM c WHERE c.id = '1'"),
      std::vector<json>{json::parse(R"({"n":1,"$1":1,"$2":"t1","str":"x"})")});
  EXPECT_EQ(run("SELECT c.missing FROM c WHERE c.id = '1'"),
            std::vector<json>{json::object()});
  EXPECT_EQ(run("SELECT VALUE {\"a\": c.missing, \"b\": [c.missing, c.n]} "
                "FROM c WHERE c.id = '1'"),
            std::vector<json>{json::parse(R"({"b":[1]})")});
  auto all = run("SELECT * FROM c");
  EXPECT_EQ(all, docs());
  EXPECT_EQ(run("SELECT VALUE c FROM r AS c WHERE c.id = '2'")[0], docs()[1]);
}

TEST(SqlEval, OrderBy_SortsAcrossTypes) {
  // undefined < null < false < true < numbers < strings; ties keep order.
  struct row {
    std::string order;
    json want;
  };
  const std::vector<row> rows = {
      {"c.n", {"4", "5", "1", "2", "3"}},
      {"c.n ASC", {"4", "5", "1", "2", "3"}},
      {"c.n DESC", {"3", "2", "1", "5", "4"}},
      {"c.s", {"4", "5", "3", "1", "2"}},
      {"c.b", {"3", "4", "5", "2", "1"}},
      {"c.b DESC", {"1", "2", "3", "4", "5"}},
      {"c.pk DESC, c.id ASC", {"5", "3", "4", "1", "2"}},
      {"c.pk, c.id DESC", {"2", "1", "4", "3", "5"}},
      {"c[\"id\"] DESC", {"5", "4", "3", "2", "1"}},
      {"c.tags[0]", {"2", "3", "4", "5", "1"}},
  };
  for (const auto& r : rows)
    EXPECT_EQ(json(run("SELECT VALUE c.id FROM c ORDER BY " + r.order)), r.want)
        << r.order;
}

TEST(SqlEval, TopAndOffsetLimit_CutTheResult) {
  struct row {
    std::string text;
    json params;
    json want;
  };
  const std::vector<row> rows = {
      {"SELECT TOP 2 VALUE c.id FROM c ORDER BY c.id DESC", json(), {"5", "4"}},
      {"SELECT TOP 0 VALUE c.id FROM c", json(), json::array()},
      {"SELECT TOP 9 VALUE c.id FROM c", json(), {"1", "2", "3", "4", "5"}},
      {"SELECT TOP @t VALUE c.id FROM c", params("@t", 1), {"1"}},
      {"SELECT VALUE c.id FROM c ORDER BY c.id OFFSET 1 LIMIT 2",
       json(),
       {"2", "3"}},
      {"SELECT VALUE c.id FROM c OFFSET 4 LIMIT 5", json(), {"5"}},
      {"SELECT VALUE c.id FROM c OFFSET 9 LIMIT 5", json(), json::array()},
      {"SELECT VALUE c.id FROM c OFFSET 0 LIMIT 0", json(), json::array()},
      {"SELECT VALUE c.id FROM c OFFSET @o LIMIT @l",
       json::array(
           {{{"name", "@o"}, {"value", 3}}, {{"name", "@l"}, {"value", 1}}}),
       {"4"}},
      {"SELECT DISTINCT TOP 2 VALUE c.pk FROM c", json(), {"a", "b"}},
  };
  for (const auto& r : rows)
    EXPECT_EQ(json(run(r.text, r.params)), r.want) << r.text;
}

TEST(SqlEval, Distinct_KeepsFirstOccurrences) {
  EXPECT_EQ(json(run("SELECT DISTINCT VALUE c.pk FROM c")),
            json({"a", "b", "c"}));
  EXPECT_EQ(json(run("SELECT DISTINCT c.pk FROM c")),
            json::parse(R"([{"pk":"a"},{"pk":"b"},{"pk":"c"}])"));
  EXPECT_EQ(json(run("SELECT DISTINCT c.missing FROM c")), json::parse("[{}]"));
  EXPECT_EQ(json(run("SELECT DISTINCT VALUE c.pk FROM c ORDER BY c.pk DESC")),
            json({"c", "b", "a"}));
  EXPECT_EQ(json(run("SELECT DISTINCT VALUE c.pk FROM c OFFSET 1 LIMIT 1")),
            json({"b"}));
}

TEST(SqlEval, Aggregates_ComputeOverFilteredRows) {
  struct row {
    std::string text;
    json want; ///< the rows
  };
  const std::vector<row> rows = {
      {"SELECT VALUE COUNT(1) FROM c", {5}},
      {"SELECT VALUE COUNT(c.n) FROM c", {4}},
      {"SELECT VALUE COUNT(c.s) FROM c", {3}},
      {"SELECT VALUE SUM(c.n) FROM c WHERE IS_NUMBER(c.n)", {2.5}},
      {"SELECT VALUE SUM(c.n) FROM c WHERE c.pk = 'a' OR c.pk = 'c'", {2.5}},
      {"SELECT VALUE SUM(c.nested.a.b) FROM c", {7}},
      {"SELECT VALUE SUM(c.n) FROM c", json::array()}, // "3" is not a number
      {"SELECT VALUE AVG(c.n) FROM c WHERE c.id = '1' OR c.id = '5'", {0}},
      {"SELECT VALUE AVG(c.n) FROM c WHERE c.id = '1' OR c.id = '2'", {1.75}},
      {"SELECT VALUE AVG(c.n) FROM c", json::array()},
      {"SELECT VALUE MIN(c.n) FROM c", {-1}},
      {"SELECT VALUE MAX(c.n) FROM c", {"3"}},
      {"SELECT VALUE MAX(c.n) FROM c WHERE IS_NUMBER(c.n)", {2.5}},
      {"SELECT VALUE MIN(c.s) FROM c", {nullptr}},
      {"SELECT VALUE MAX(c.b) FROM c", {true}},
      {"SELECT VALUE MIN(c.tags) FROM c", json::array()},
      {"SELECT VALUE MIN(c.o) FROM c", json::array()},
      // Empty input: COUNT and SUM are 0, the others undefined.
      {"SELECT VALUE COUNT(1) FROM c WHERE false", {0}},
      {"SELECT VALUE SUM(c.n) FROM c WHERE false", {0}},
      {"SELECT VALUE AVG(c.n) FROM c WHERE false", json::array()},
      {"SELECT VALUE MIN(c.n) FROM c WHERE false", json::array()},
      {"SELECT VALUE MAX(c.n) FROM c WHERE false", json::array()},
      {"SELECT TOP 0 VALUE COUNT(1) FROM c", json::array()},
      {"SELECT VALUE {\"n\": COUNT(1), \"k\": @k} FROM c",
       {{{"n", 5}, {"k", 1}}}},
  };
  for (const auto& r : rows)
    EXPECT_EQ(json(run(r.text, params("@k", 1))), r.want) << r.text;
}

TEST(SqlEval, RewrittenAggregates_ReturnWhatTheSdkReads) {
  struct row {
    std::string text;
    json want;
  };
  const std::string numbers = " FROM c WHERE IS_NUMBER(c.n)";
  const std::string none = " FROM c WHERE false";
  const std::string min = "SELECT VALUE [{\"item\": MIN(c.n), \"item2\": "
                          "{\"min\": MIN(c.n), \"count\": COUNT(c.n)}}]";
  const std::string avg = "SELECT VALUE [{\"item\": {\"sum\": SUM(c.n), "
                          "\"count\": COUNT(c.n)}}]";
  const std::vector<row> rows = {
      {"SELECT VALUE [{\"item\": COUNT(1)}]" + numbers,
       json::parse(R"([[{"item":3}]])")},
      {"SELECT VALUE [{\"item\": COUNT(1)}]" + none,
       json::parse(R"([[{"item":0}]])")},
      {"SELECT VALUE [{\"item\": SUM(c.n)}]" + none,
       json::parse(R"([[{"item":0}]])")},
      {"SELECT VALUE [{\"item\": SUM(c.n)}] FROM c", json::parse(R"([[{}]])")},
      {min + numbers,
       json::parse(R"([[{"item":-1,"item2":{"min":-1,"count":3}}]])")},
      {min + none, json::parse(R"([[{"item2":{"count":0}}]])")},
      {avg + numbers, json::parse(R"([[{"item":{"sum":2.5,"count":3}}]])")},
      {avg + none, json::parse(R"([[{"item":{"sum":0,"count":0}}]])")},
  };
  for (const auto& r : rows)
    EXPECT_EQ(json(run(r.text)), r.want) << r.text;
}

TEST(SqlEval, RewrittenOrderBy_ReturnsRidItemsAndPayload) {
  auto rows = run("SELECT c._rid, [{\"item\": c.n}] AS orderByItems, "
                  "c AS payload\nFROM c\nWHERE (true)\nORDER BY c.n");
  ASSERT_EQ(rows.size(), 5u);
  auto all = docs();
  const size_t order[] = {3, 4, 0, 1, 2};
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& doc = all[order[i]];
    json items = json::array({json::object()});
    if (doc.contains("n")) items[0]["item"] = doc["n"];
    EXPECT_EQ(rows[i], json({{"_rid", doc["_rid"]},
                             {"orderByItems", items},
                             {"payload", doc}}))
        << i;
  }
  // A continuation filter as the SDK writes it.
  auto rest = run("SELECT c._rid, [{\"item\": c.n}] AS orderByItems, "
                  "{\"id\": c.id} AS payload FROM c WHERE ((c.n > 1)) "
                  "ORDER BY c.n DESC");
  EXPECT_EQ(json(rest), json::parse(R"([
    {"_rid":"r2","orderByItems":[{"item":2.5}],"payload":{"id":"2"}}])"));
}

TEST(SqlEval, DeepDocuments_DoNotMatter) {
  json deep = 1;
  for (int i = 0; i < 200; ++i)
    deep = json{{"a", deep}};
  auto q = parse("SELECT VALUE c.a.a.a FROM c WHERE IS_DEFINED(c.a)");
  ASSERT_TRUE(q.ok());
  auto rows = execute(**q, {deep}, json());
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->size(), 1u);
}

} // namespace
} // namespace sql_eval_test
