// The SQL subset's tokenizer and parser: every construct parses, the printer
// round-trips, and every rejected input names the right position.

#include "tests/emulator/sql.hpp"
#include "tests/emulator/sql_ast.hpp"
#include "tests/emulator/sql_lexer.hpp"

#include <gtest/gtest.h>
#include <string>
#include <vector>

using namespace georoute::emulator::sql;

namespace {

std::shared_ptr<const query> parsed(const std::string& text) {
  auto r = parse(text);
  EXPECT_TRUE(r.ok()) << text << " -> " << (r.ok() ? "" : r.error().what);
  return r.ok() ? *r : nullptr;
}

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i)
    out += s;
  return out;
}

} // namespace

TEST(SqlParse, EachConstruct_Parses) {
  const char* queries[] = {
      "SELECT * FROM c",
      "select * from c",
      "SeLeCt VaLuE c.n FrOm c",
      "SELECT c.a, c.b AS bee, c.c cee FROM c",
      "SELECT DISTINCT VALUE c.a FROM c",
      "SELECT TOP 5 * FROM c",
      "SELECT TOP @n * FROM c",
      "SELECT DISTINCT TOP 3 c.a FROM c",
      "SELECT * FROM Root r",
      "SELECT * FROM Root AS r WHERE r.a = 1",
      "SELECT * FROM c WHERE c.a = 1 AND (c.b != 'x' OR NOT c.c <> \"y\")",
      "SELECT * FROM c WHERE c.a < 1 OR c.a <= 2 OR c.a > 3 OR c.a >= 4",
      "SELECT * FROM c WHERE c.a = -1.5e3 OR c.a = .5 OR c.a = 1E+2",
      "SELECT * FROM c WHERE c.a = true OR c.a = false OR c.a = null",
      "SELECT * FROM c WHERE c[\"a\"].b[0] = @p",
      "SELECT * FROM c WHERE c.arr[@i] = c['x y']",
      "SELECT VALUE {\"item\": c.n, k: [1, 2, []], \"e\": {}} FROM c",
      "SELECT VALUE COUNT(1) FROM c",
      "SELECT VALUE count(c.n) FROM c",
      "SELECT VALUE SUM(c.n) FROM c",
      "SELECT VALUE MIN(c.n) FROM c",
      "SELECT VALUE MAX(c.n) FROM c",
      "SELECT VALUE AVG(c.n) FROM c",
      "SELECT VALUE [{\"item\": {\"sum\": SUM(c.n), \"count\": COUNT(c.n)}}] "
      "FROM c",
      "SELECT c._rid, [{\"item\": c.n}] AS orderByItems, c AS payload FROM c "
      "WHERE (true) ORDER BY c.n",
      "SELECT * FROM c ORDER BY c.n DESC",
      "SELECT * FROM c ORDER BY c.a ASC, c[\"b\"] DESC",
      "SELECT * FROM c ORDER BY c.arr[0]",
      "SELECT * FROM c OFFSET 1 LIMIT 2",
      "SELECT * FROM c OFFSET @o LIMIT @l",
      "SELECT * FROM c WHERE IS_DEFINED(c.x) AND NOT is_null(c.y)",
      "SELECT * FROM c -- a comment\nWHERE c.a = 1",
      "SELECT * FROM c WHERE c.s = 'it\\'s \\u00e9 \\ud83d\\ude00 \\\\ \\/'",
      "SELECT * FROM c WHERE c.value = 1 AND c.top = 2",
      "  SELECT\t*\nFROM\r\nc  ",
  };
  for (const char* text : queries)
    EXPECT_NE(parsed(text), nullptr) << text;
}

TEST(SqlParse, SelectList_DerivesNamesLikeTheService) {
  auto q = parsed("SELECT c.a, c[\"b c\"], 1, c.arr[0], c.d AS x FROM c");
  ASSERT_NE(q, nullptr);
  ASSERT_EQ(q->items.size(), 5u);
  EXPECT_EQ(q->items[0].name, "a");
  EXPECT_EQ(q->items[1].name, "b c");
  EXPECT_EQ(q->items[2].name, "$1");
  EXPECT_EQ(q->items[3].name, "$2");
  EXPECT_EQ(q->items[4].name, "x");
  EXPECT_TRUE(q->items[4].has_alias);
}

TEST(SqlParse, Clauses_AreRecorded) {
  auto q = parsed("SELECT DISTINCT TOP @t VALUE r.a FROM Root r WHERE r.b = 1 "
                  "ORDER BY r.c DESC OFFSET 2 LIMIT 3");
  ASSERT_NE(q, nullptr);
  EXPECT_TRUE(q->distinct);
  EXPECT_TRUE(q->top.present);
  EXPECT_EQ(q->top.parameter, "@t");
  EXPECT_EQ(q->select, select_kind::value);
  EXPECT_EQ(q->collection, "Root");
  EXPECT_EQ(q->alias, "r");
  EXPECT_EQ(q->root, "r");
  ASSERT_NE(q->where, nullptr);
  ASSERT_EQ(q->order_by.size(), 1u);
  EXPECT_TRUE(q->order_by[0].descending);
  EXPECT_EQ(q->offset.literal, 2);
  EXPECT_EQ(q->limit.literal, 3);
  EXPECT_FALSE(q->has_aggregates);
  EXPECT_TRUE(parsed("SELECT VALUE COUNT(1) FROM c")->has_aggregates);
}

TEST(SqlParse, Literals_KeepTheirJsonType) {
  auto q = parsed("SELECT VALUE [1, -2, 1.5, 1e2, 'a', \"b\", true, null] "
                  "FROM c");
  ASSERT_NE(q, nullptr);
  const auto& ops = q->value->operands;
  EXPECT_TRUE(ops[0]->literal.is_number_integer());
  EXPECT_EQ(ops[1]->literal, -2);
  EXPECT_TRUE(ops[2]->literal.is_number_float());
  EXPECT_EQ(ops[3]->literal, 100.0);
  EXPECT_EQ(ops[4]->literal, "a");
  EXPECT_EQ(ops[5]->literal, "b");
  EXPECT_EQ(ops[6]->literal, true);
  EXPECT_TRUE(ops[7]->literal.is_null());
}

TEST(SqlParse, Printer_RoundTrips) {
  const char* exprs[] = {
      "((c.a = 1) AND (NOT (c[\"b c\"] != \"x\")))",
      "{\"item\": c.n, \"k\": [1, 2.5, null, true]}",
      "IS_DEFINED(c.arr[0])",
      "COUNT(1)",
      "((c.a < @p) OR (c[\"value\"] >= \"it's\\n\"))",
  };
  for (const char* e : exprs) {
    auto q = parsed(std::string("SELECT VALUE ") + e + " FROM c");
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(print(*q->value), e);
  }
}

TEST(SqlParse, Keywords_PrintBracketed) {
  auto q = parsed("SELECT VALUE c.value FROM c");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(print(*q->value), "c[\"value\"]");
}

TEST(SqlParse, InvalidQuery_ReportsPosition) {
  struct row {
    std::string text;
    std::string marker; ///< the error is at the first occurrence of this
    std::string what;
  };
  const std::vector<row> rows = {
      {"", "", "expected SELECT, found end of query"},
      {"SELECT", "", "found end of query"},
      {"UPDATE c", "UPDATE", "expected SELECT"},
      {"SELECT * FROM c GROUP BY c.a", "GROUP", "GROUP BY is not supported"},
      {"SELECT * FROM c JOIN t IN c.tags", "JOIN", "JOIN is not supported"},
      {"SELECT * FROM c WHERE c.a IN (1, 2)", "IN", "IN is not supported"},
      {"SELECT * FROM c WHERE FOO(c.a)", "FOO", "unknown function 'FOO'"},
      {"SELECT * FROM c WHERE c.a = 'abc", "'abc", "unterminated string"},
      {"SELECT * FROM c WHERE c.a = \"abc", "\"abc", "unterminated string"},
      {"SELECT * FROM c x y", "y", "unexpected 'y'"},
      {"SELECT * FROM c WHERE", "", "expected an expression, found end"},
      {"SELECT TOP -1 * FROM c", "-1", "TOP expects a non-negative integer"},
      {"SELECT TOP 1.5 * FROM c", "1.5", "TOP expects a non-negative integer"},
      {"SELECT * FROM c OFFSET 1", "", "expected LIMIT"},
      {"SELECT * FROM c LIMIT 1", "LIMIT", "unexpected 'LIMIT'"},
      {"SELECT * FROM c WHERE d.a = 1", "d.a", "identifier 'd' could not be"},
      {"SELECT * FROM Root r WHERE Root.a = 1", "Root.a", "could not be"},
      {"SELECT COUNT(1) FROM c", "COUNT", "only supported in SELECT VALUE"},
      {"SELECT * FROM c WHERE COUNT(1) > 1", "COUNT", "SELECT VALUE"},
      {"SELECT VALUE COUNT(SUM(c.a)) FROM c", "SUM", "cannot be nested"},
      {"SELECT VALUE [COUNT(1), c.a] FROM c", "c.a", "outside an aggregate"},
      {"SELECT VALUE COUNT(1) FROM c ORDER BY c.a", "c.a", "aggregates"},
      {"SELECT VALUE COUNT(*) FROM c", "*", "found '*'"},
      {"SELECT VALUE COUNT(1, 2) FROM c", "COUNT", "expects 1 argument"},
      {"SELECT * FROM c ORDER BY 1", "1", "only property paths"},
      {"SELECT * FROM c ORDER BY c DESC", "c DESC", "only property paths"},
      {"SELECT * FROM c WHERE c.a + 1 = 2", "+", "unexpected character '+'"},
      {"SELECT * FROM c WHERE c.a = @", "@", "parameter name"},
      {"SELECT * FROM c WHERE c.a = 1.5e", "1.5e", "malformed number"},
      {"SELECT * FROM c WHERE c.a = 12abc", "12abc", "malformed number"},
      {"SELECT * FROM c WHERE c.s = 'a\\qb'", "\\q", "invalid escape"},
      {"SELECT * FROM c WHERE c.s = '\\ud800'", "\\ud800",
       "unpaired surrogate"},
      {"SELECT * FROM c WHERE c.s = '\\u12'", "\\u12", "malformed \\u escape"},
      {"SELECT * FROM c WHERE c.s = 'x\xff'", "\xff", "invalid UTF-8"},
      {"SELECT c.a, c.b.a FROM c", "c.b.a", "duplicate property name 'a'"},
      {"SELECT VALUE {\"a\": 1, \"a\": 2} FROM c", "\"a\": 2", "duplicate"},
      {"SELECT * FROM c WHERE c[-1] = 1", "-1", "non-negative integer index"},
      {"SELECT * FROM c WHERE (c.a = 1", "", "expected ')'"},
      {"SELECT * FROM c WHERE EXISTS(SELECT 1)", "EXISTS", "not supported"},
      {"SELECT * FROM c WHERE c.a = (SELECT 1)", "SELECT 1", "subqueries"},
      {"SELECT VALUE 1", "", "expected FROM"},
      {"SELECT * FROM", "", "expected a collection"},
  };
  for (const auto& r : rows) {
    auto res = parse(r.text);
    ASSERT_FALSE(res.ok()) << r.text;
    size_t pos = r.marker.empty() ? r.text.size() : r.text.find(r.marker);
    ASSERT_NE(pos, std::string::npos) << r.text;
    auto prefix = "Syntax error at position " + std::to_string(pos) + ": ";
    EXPECT_EQ(res.error().what.rfind(prefix, 0), 0u)
        << r.text << " -> " << res.error().what;
    EXPECT_NE(res.error().what.find(r.what), std::string::npos)
        << r.text << " -> " << res.error().what;
  }
}

TEST(SqlParse, HostileNesting_IsAnErrorNotACrash) {
  const std::vector<std::string> texts = {
      "SELECT * FROM c WHERE " + repeat("(", 200) + "true" + repeat(")", 200),
      "SELECT * FROM c WHERE " + repeat("(", 100000),
      "SELECT * FROM c WHERE " + repeat("NOT ", 100000) + "true",
      "SELECT VALUE c" + repeat(".a", 100000) + " FROM c",
      "SELECT VALUE c" + repeat("[0]", 100000) + " FROM c",
      "SELECT VALUE " + repeat("[", 100000) + " FROM c",
      "SELECT VALUE " + repeat("{\"a\":", 100000) + " FROM c",
      "SELECT * FROM c WHERE true" + repeat(" AND true", 1000),
  };
  for (const auto& t : texts) {
    auto res = parse(t);
    ASSERT_FALSE(res.ok());
    EXPECT_NE(res.error().what.find("nested too deeply"), std::string::npos)
        << res.error().what;
  }
}

TEST(SqlParse, ModerateNesting_Parses) {
  EXPECT_NE(parsed("SELECT * FROM c WHERE " + repeat("(", 50) + "true" +
                   repeat(")", 50)),
            nullptr);
  // One level of the text is one level of the limit (max_depth 128).
  EXPECT_NE(parsed("SELECT * FROM c WHERE " + repeat("(", 120) + "true" +
                   repeat(")", 120)),
            nullptr);
  EXPECT_NE(parsed("SELECT * FROM c WHERE true" + repeat(" AND true", 60)),
            nullptr);
}

// A tree as tall as the limit prints (every operator in parentheses) as
// text one level deeper than the tree, and that text parses to the same
// tree; one level taller is refused. The query plan's rewrite depends on it
// (heights 127 and 128, an edge tests/fuzz/sql probes).
TEST(SqlParse, TreeAtTheHeightLimit_PrintsTextThatParsesAgain) {
  const std::vector<std::pair<std::string, std::string>> shapes = {
      // A leaf is height 1: 127 levels over `true` make max_depth (128).
      {"", repeat(" AND true", 127)},              // a left-deep chain
      {repeat("NOT ", 127), ""},                   // NOT of NOT of ...
      {repeat("[", 127), repeat("]", 127)},        // arrays in arrays
      {repeat("IS_NULL(", 127), repeat(")", 127)}, // calls in calls
  };
  for (const auto& [before, after] : shapes) {
    auto text = "SELECT * FROM c WHERE " + before + "true" + after;
    auto q = parsed(text);
    ASSERT_NE(q, nullptr) << text.substr(0, 80);
    ASSERT_EQ(q->where->height, max_depth) << text.substr(0, 80);
    auto printed = print(*q->where);
    auto again = parsed("SELECT * FROM c WHERE " + printed);
    ASSERT_NE(again, nullptr) << printed.substr(0, 80);
    EXPECT_EQ(print(*again->where), printed);
    // One more level is refused, as text and as tree.
    auto taller = "SELECT * FROM c WHERE " + before + "NOT true" + after;
    auto res = parse(taller);
    ASSERT_FALSE(res.ok()) << taller.substr(0, 80);
    EXPECT_NE(res.error().what.find("nested too deeply"), std::string::npos);
  }
}

TEST(SqlLexer, Tokens_HavePositionsAndKinds) {
  auto toks = tokenize("SELECT c.a<>@p, -2.5e1 'x' != <= >= ");
  ASSERT_TRUE(toks.ok());
  std::vector<token_kind> kinds;
  std::vector<size_t> positions;
  for (const auto& t : *toks) {
    kinds.push_back(t.kind);
    positions.push_back(t.pos);
  }
  std::vector<token_kind> want = {
      token_kind::keyword,    token_kind::identifier, token_kind::dot,
      token_kind::identifier, token_kind::ne,         token_kind::parameter,
      token_kind::comma,      token_kind::number,     token_kind::string,
      token_kind::ne,         token_kind::le,         token_kind::ge,
      token_kind::end};
  EXPECT_EQ(kinds, want);
  std::vector<size_t> want_pos = {0,  7,  8,  9,  10, 12, 14,
                                  16, 23, 27, 30, 33, 36};
  EXPECT_EQ(positions, want_pos);
  EXPECT_EQ((*toks)[7].number, -25.0);
  EXPECT_EQ((*toks)[8].text, "x");
}
