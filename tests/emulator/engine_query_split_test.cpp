// Range-scoped query continuations across a split, on the engine alone (no
// sockets, no signing): a token issued by a range is accepted on that range
// and on every range inside it, and the children together continue exactly
// where the parent stopped; it is refused for another query and on a range
// outside the one that issued it. Also the row provenance that makes this
// possible (sql::execute_traced) and the armed split of
// engine::split_after_next_query.

#include "tests/emulator/engine.hpp"
#include "tests/emulator/sql.hpp"

#include <algorithm>
#include <gtest/gtest.h>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace {

using namespace georoute;
using namespace georoute::emulator;
using json = nlohmann::json;

constexpr int doc_count = 60;

/// One page of a range query: its ids and its continuation.
struct page_result {
  int status = 0;
  std::string error; ///< the body when status != 200
  std::vector<std::string> ids;
  std::string token;
};

class EngineQuerySplit : public testing::Test {
protected:
  void SetUp() override {
    engine_options o;
    o.verify_auth = false;
    eng = std::make_unique<engine>(std::move(o));
    ASSERT_EQ(send("POST", "/dbs", json{{"id", "d"}}.dump()).status, 201);
    json coll{{"id", "c"},
              {"partitionKey",
               {{"paths", {"/pk"}}, {"kind", "Hash"}, {"version", 2}}}};
    ASSERT_EQ(send("POST", "/dbs/d/colls", coll.dump()).status, 201);
    // Distinct sort keys (n is a permutation of 0..59), so that the order of
    // every result is fully determined.
    for (int i = 0; i < doc_count; ++i) {
      auto pk = "k" + std::to_string(i);
      json doc{{"id", "d" + std::to_string(i)},
               {"pk", pk},
               {"n", (i * 7) % doc_count},
               {"g", i % 3}};
      auto res = send("POST", "/dbs/d/colls/c/docs", doc.dump(),
                      {{"x-ms-documentdb-partitionkey", json{pk}.dump()}});
      ASSERT_EQ(res.status, 201) << res.body;
    }
  }

  http_response send(const std::string& method, const std::string& target,
                     std::string body,
                     std::map<std::string, std::string> headers = {}) {
    http_request r;
    r.method = method;
    r.target = target;
    r.body = std::move(body);
    r.headers = std::move(headers);
    r.headers["content-type"] = "application/json";
    return eng->handle("West US", r);
  }

  /// One page of `text` on range `range`.
  page_result page(const std::string& text, const std::string& range,
                   const std::string& token = {}, int size = 4) {
    std::map<std::string, std::string> h{
        {"x-ms-documentdb-isquery", "true"},
        {"x-ms-documentdb-partitionkeyrangeid", range},
        {"x-ms-max-item-count", std::to_string(size)}};
    if (!token.empty()) h["x-ms-continuation"] = token;
    auto res =
        send("POST", "/dbs/d/colls/c/docs",
             json{{"query", text}, {"parameters", json::array()}}.dump(), h);
    page_result p;
    p.status = res.status;
    if (res.status != 200) {
      p.error = res.body;
      return p;
    }
    auto body = json::parse(res.body); // not a temporary in the range-for
    for (const auto& d : body["Documents"])
      p.ids.push_back(d.contains("payload") ? d["payload"]["id"] : d["id"]);
    p.token = res.get("x-ms-continuation");
    return p;
  }

  /// Every id of `text` on `range` from `token` on, page by page.
  std::vector<std::string> rest(const std::string& text,
                                const std::string& range, std::string token,
                                int size = 4) {
    std::vector<std::string> out;
    for (int n = 0; n < 100; ++n) {
      auto p = page(text, range, token, size);
      EXPECT_EQ(p.status, 200) << range << ": " << p.error;
      if (p.status != 200) break;
      out.insert(out.end(), p.ids.begin(), p.ids.end());
      token = p.token;
      if (token.empty()) break;
    }
    return out;
  }

  /// The ids a range holds.
  std::set<std::string> ids_of(const std::string& range) {
    auto all = rest("SELECT c.id FROM c", range, {}, 1000);
    return {all.begin(), all.end()};
  }

  static std::vector<std::string> only(const std::vector<std::string>& ids,
                                       const std::set<std::string>& in) {
    std::vector<std::string> out;
    std::copy_if(ids.begin(), ids.end(), std::back_inserter(out),
                 [&](const auto& id) { return in.count(id) != 0; });
    return out;
  }

  std::unique_ptr<engine> eng;
};

// The parent's remaining sequence, cut by its token after page one, is what
// the two children return from that same token, each its own share in the
// parent's order: ascending, descending, filtered, and with TOP (whose rows
// are the parent's top rows, not each child's own).
TEST_F(EngineQuerySplit, ParentToken_OnEachChild_ChildrenReturnParentsRest) {
  const std::vector<std::string> queries{
      "SELECT c.id, c.n FROM c ORDER BY c.n",
      "SELECT c.id, c.n FROM c ORDER BY c.n DESC",
      "SELECT c.id FROM c WHERE c.g != 1 AND c.n >= 10 ORDER BY c.n DESC",
      "SELECT TOP 13 c.id FROM c ORDER BY c.n",
      "SELECT c._rid, [{\"item\": c.n}] AS orderByItems, c AS payload FROM c "
      "WHERE true ORDER BY c.n ASC",
  };
  // Before the split: each query's full sequence on range 0 and the token
  // after its first page.
  std::vector<std::vector<std::string>> whole;
  std::vector<page_result> first;
  for (const auto& q : queries) {
    whole.push_back(rest(q, "0", {}));
    first.push_back(page(q, "0"));
    ASSERT_EQ(first.back().status, 200) << q << ": " << first.back().error;
    ASSERT_FALSE(first.back().token.empty()) << q;
    ASSERT_GE(whole.back().size(), 8u) << q;
  }
  auto children = eng->split_range("d", "c", "0");
  ASSERT_TRUE(children) << children.error().what;
  ASSERT_EQ(*children, (std::vector<std::string>{"2", "3"}));
  auto in2 = ids_of("2");
  auto in3 = ids_of("3");
  ASSERT_FALSE(in2.empty());
  ASSERT_FALSE(in3.empty());
  for (size_t i = 0; i < queries.size(); ++i) {
    SCOPED_TRACE(queries[i]);
    std::vector<std::string> left(whole[i].begin() + 4, whole[i].end());
    EXPECT_EQ(rest(queries[i], "2", first[i].token), only(left, in2));
    EXPECT_EQ(rest(queries[i], "3", first[i].token), only(left, in3));
  }
}

// A child's own token stays valid when the child splits again (the
// grandchild lies inside it), and the grandchildren finish the sequence.
TEST_F(EngineQuerySplit, ChildToken_OnGrandchildren_FinishesTheSequence) {
  const std::string q = "SELECT c.id FROM c ORDER BY c.n DESC";
  auto whole = rest(q, "0", {});
  auto first = page(q, "0");
  ASSERT_TRUE(eng->split_range("d", "c", "0"));
  auto in2 = ids_of("2");
  auto second = page(q, "2", first.token);
  ASSERT_EQ(second.status, 200) << second.error;
  ASSERT_FALSE(second.token.empty());
  // Child 2's share of what the parent had left, in the parent's order.
  std::vector<std::string> left(whole.begin() + 4, whole.end());
  auto share = only(left, in2);
  ASSERT_GT(share.size(), 4u);
  EXPECT_EQ(second.ids,
            std::vector<std::string>(share.begin(), share.begin() + 4));
  std::vector<std::string> after_second(share.begin() + 4, share.end());
  auto grandchildren = eng->split_range("d", "c", "2");
  ASSERT_TRUE(grandchildren) << grandchildren.error().what;
  size_t total = 0;
  for (const auto& g : *grandchildren) {
    auto more = rest(q, g, second.token);
    EXPECT_EQ(more, only(after_second, ids_of(g))) << g;
    total += more.size();
  }
  EXPECT_EQ(total, after_second.size());
}

// Refused with a 400 that says why: a token on a range that is not inside
// the issuing one (the other initial range; a child's token on its sibling),
// and a token of another query on a child.
TEST_F(EngineQuerySplit, Token_OutsideIssuerOrOtherQuery_Returns400) {
  const std::string q = "SELECT c.id FROM c ORDER BY c.n";
  auto first = page(q, "0");
  ASSERT_FALSE(first.token.empty());
  auto sibling_range = page(q, "1", first.token);
  EXPECT_EQ(sibling_range.status, 400);
  EXPECT_NE(sibling_range.error.find("is not inside it"), std::string::npos)
      << sibling_range.error;
  ASSERT_TRUE(eng->split_range("d", "c", "0"));
  auto on_child = page(q, "2", first.token);
  ASSERT_EQ(on_child.status, 200) << on_child.error;
  ASSERT_FALSE(on_child.token.empty());
  auto on_sibling = page(q, "3", on_child.token);
  EXPECT_EQ(on_sibling.status, 400);
  EXPECT_NE(on_sibling.error.find("not inside"), std::string::npos)
      << on_sibling.error;
  auto other = page("SELECT c.id FROM c ORDER BY c.n DESC", "2", first.token);
  EXPECT_EQ(other.status, 400);
  EXPECT_NE(other.error.find("another query"), std::string::npos)
      << other.error;
  // A document-position token of a streaming query follows the same rule.
  auto stream = page("SELECT c.id FROM c", "1");
  ASSERT_FALSE(stream.token.empty());
  auto stream_elsewhere = page("SELECT c.id FROM c", "2", stream.token);
  EXPECT_EQ(stream_elsewhere.status, 400);
  EXPECT_NE(stream_elsewhere.error.find("not inside"), std::string::npos)
      << stream_elsewhere.error;
}

// The armed split lands right after the range answered its next page: that
// page comes from the whole range, the next request finds the range gone,
// and the page's token carries on on the children.
TEST_F(EngineQuerySplit, SplitAfterNextQuery_PageServedThenRangeGone) {
  const std::string q = "SELECT c.id FROM c WHERE c.n >= 5 ORDER BY c.n";
  auto whole = rest(q, "1", {});
  auto armed = eng->split_after_next_query("d", "c", "1");
  ASSERT_TRUE(armed) << armed.error().what;
  auto first = page(q, "1");
  ASSERT_EQ(first.status, 200) << first.error;
  EXPECT_EQ(first.ids,
            std::vector<std::string>(whole.begin(), whole.begin() + 4));
  auto gone = page(q, "1", first.token);
  EXPECT_EQ(gone.status, 410) << gone.error;
  std::vector<std::string> got = first.ids;
  for (const auto* child : {"2", "3"}) {
    auto more = rest(q, child, first.token);
    got.insert(got.end(), more.begin(), more.end());
  }
  std::sort(got.begin(), got.end());
  std::sort(whole.begin(), whole.end());
  EXPECT_EQ(got, whole);
  // Arming needs a live range of an existing collection.
  EXPECT_FALSE(eng->split_after_next_query("d", "c", "1"));
  EXPECT_FALSE(eng->split_after_next_query("d", "nope", "0"));
  EXPECT_FALSE(eng->split_after_next_query("nope", "c", "0"));
}

// Each row names the document it came from, through ORDER BY, DISTINCT
// (the first occurrence) and TOP; an aggregate's row names none.
TEST(SqlExecuteTraced, Rows_NameTheirDocuments) {
  std::vector<json> docs{{{"id", "a"}, {"n", 3}, {"g", 1}},
                         {{"id", "b"}, {"n", 1}, {"g", 2}},
                         {{"id", "c"}, {"n", 2}, {"g", 1}},
                         {{"id", "d"}, {"n", 0}, {"g", 2}}};
  auto run = [&](const std::string& text) {
    auto q = sql::parse(text);
    EXPECT_TRUE(q) << q.error().what;
    auto r = sql::execute_traced(**q, docs, json::array());
    EXPECT_TRUE(r) << r.error().what;
    EXPECT_EQ(r->rows.size(), r->sources.size());
    return r->sources;
  };
  EXPECT_EQ(run("SELECT c.id FROM c ORDER BY c.n DESC"),
            (std::vector<size_t>{0, 2, 1, 3}));
  EXPECT_EQ(run("SELECT DISTINCT VALUE c.g FROM c ORDER BY c.n"),
            (std::vector<size_t>{3, 2}));
  EXPECT_EQ(run("SELECT TOP 2 c.id FROM c WHERE c.g = 2"),
            (std::vector<size_t>{1, 3}));
  EXPECT_EQ(run("SELECT VALUE COUNT(1) FROM c"),
            (std::vector<size_t>{sql::no_source}));
}

} // namespace
