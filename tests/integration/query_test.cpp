// Cross-partition queries through the engine against the emulator (issue 8,
// item 6): fan-out over the ranges, ORDER BY as a k-way merge, TOP,
// OFFSET/LIMIT, VALUE aggregates and DISTINCT across ranges, paging with a
// continuation that a second engine resumes, and a split in the middle of
// an ORDER BY query without duplicates or losses.

#include "tests/integration/engine_fixture.hpp"

#include <nlohmann/json.hpp>
#include <set>

// Named after the file as well: the unity build (tests/CMakeLists.txt)
// compiles it in one translation unit with other tests.
namespace query_test {
namespace {

using namespace georoute;
using namespace georoute::test;
using namespace std::chrono_literals;

constexpr int doc_count = 30;

class Query : public engine_test {
protected:
  void SetUp() override {
    engine_test::SetUp();
    for (int i = 0; i < doc_count; ++i) {
      data_request r;
      r.op = data_op::create;
      r.collection_link = "dbs/d/colls/c";
      auto pk = "p" + std::to_string(i % 10);
      r.body = nlohmann::json{
          {"id", "d" + std::to_string(i)},
          {"pk", pk},
          {"n", (i * 7) % doc_count},
          {"g",
           i % 3}}.dump();
      r.options.partition_key_json = "[\"" + pk + "\"]";
      auto c = ask<data_response>(eng->router(), 10s, route_atom_v, r);
      ASSERT_TRUE(c) << sys->render(c.error());
    }
  }

  caf::expected<data_response> page(const std::string& query,
                                    int max_items = -1,
                                    std::string continuation = {},
                                    const router_actor* via = nullptr) {
    data_request r;
    r.op = data_op::query;
    r.collection_link = "dbs/d/colls/c";
    r.body = nlohmann::json{{"query", query}}.dump();
    r.options.max_item_count = max_items;
    r.options.continuation = std::move(continuation);
    return ask<data_response>(via ? *via : eng->router(), 20s, route_atom_v, r);
  }

  // Every result of `query`, page by page; `pages` counts them.
  std::vector<nlohmann::json> all(const std::string& query, int max_items,
                                  int* pages = nullptr) {
    std::vector<nlohmann::json> out;
    std::string token;
    for (int n = 0; n < 100; ++n) {
      auto p = page(query, max_items, token);
      EXPECT_TRUE(p) << sys->render(p.error());
      if (!p) break;
      auto body = nlohmann::json::parse(p->body);
      for (auto& d : body["Documents"])
        out.push_back(d);
      if (pages) ++*pages;
      token = p->continuation;
      if (token.empty()) break;
    }
    return out;
  }

  static std::vector<int> ns(const std::vector<nlohmann::json>& docs) {
    std::vector<int> r;
    for (const auto& d : docs)
      r.push_back(d["n"].get<int>());
    return r;
  }

  static std::vector<int> range(int from, int to) {
    std::vector<int> r;
    for (int i = from; i < to; ++i)
      r.push_back(i);
    return r;
  }

  nlohmann::json value_of(const std::string& query) {
    auto p = page(query);
    EXPECT_TRUE(p) << sys->render(p.error());
    if (!p) return {};
    auto docs = nlohmann::json::parse(p->body)["Documents"];
    EXPECT_EQ(docs.size(), 1u) << docs.dump();
    return docs.empty() ? nlohmann::json{} : docs[0];
  }
};

TEST_F(Query, OrderBy_AcrossRanges_PageByPage_InOrder) {
  int pages = 0;
  auto docs = all("SELECT * FROM c ORDER BY c.n", 7, &pages);
  EXPECT_EQ(ns(docs), range(0, doc_count));
  EXPECT_EQ(pages, 5); // 7 + 7 + 7 + 7 + 2
  auto desc = all("SELECT * FROM c ORDER BY c.n DESC", 100);
  auto expected = range(0, doc_count);
  std::reverse(expected.begin(), expected.end());
  EXPECT_EQ(ns(desc), expected);
}

TEST_F(Query, FansOutOverEveryRange) {
  auto p = page("SELECT * FROM c ORDER BY c.n");
  ASSERT_TRUE(p) << sys->render(p.error());
  std::set<std::string> regions_and_ranges;
  for (const auto& a : p->diag.attempts)
    regions_and_ranges.insert(a.region);
  EXPECT_GE(p->diag.attempts.size(), 2u); // one per range at least
  EXPECT_EQ(nlohmann::json::parse(p->body)["_count"], doc_count);
}

TEST_F(Query, TopAndOffsetLimit_AcrossRanges) {
  EXPECT_EQ(ns(all("SELECT TOP 5 * FROM c ORDER BY c.n DESC", 2)),
            (std::vector<int>{29, 28, 27, 26, 25}));
  EXPECT_EQ(ns(all("SELECT * FROM c ORDER BY c.n OFFSET 3 LIMIT 4", 3)),
            (std::vector<int>{3, 4, 5, 6}));
}

TEST_F(Query, ValueAggregates_CombinedAcrossRanges) {
  EXPECT_EQ(value_of("SELECT VALUE COUNT(1) FROM c"), doc_count);
  EXPECT_EQ(value_of("SELECT VALUE SUM(c.n) FROM c"),
            doc_count * (doc_count - 1) / 2);
  EXPECT_DOUBLE_EQ(value_of("SELECT VALUE AVG(c.n) FROM c").get<double>(),
                   (doc_count - 1) / 2.0);
  EXPECT_EQ(value_of("SELECT VALUE MIN(c.n) FROM c"), 0);
  EXPECT_EQ(value_of("SELECT VALUE MAX(c.n) FROM c"), doc_count - 1);
}

TEST_F(Query, Distinct_AcrossRanges) {
  auto docs = all("SELECT DISTINCT VALUE c.g FROM c ORDER BY c.g", 100);
  ASSERT_EQ(docs.size(), 3u);
  EXPECT_EQ(docs[0], 0);
  EXPECT_EQ(docs[1], 1);
  EXPECT_EQ(docs[2], 2);
}

TEST_F(Query, Continuation_ResumesInAnotherEngine) {
  auto first = page("SELECT * FROM c ORDER BY c.n", 10);
  ASSERT_TRUE(first) << sys->render(first.error());
  ASSERT_FALSE(first->continuation.empty());
  auto got = ns(nlohmann::json::parse(first->body)["Documents"]);
  // A second engine (as a new process would have) continues from the token.
  engine_options eo;
  eo.sweep_after = 500ms;
  auto other = engine::start(*sys, settings, eo);
  ASSERT_TRUE(other) << sys->render(other.error());
  auto router = other->router();
  std::string token = first->continuation;
  while (!token.empty()) {
    auto p = page("SELECT * FROM c ORDER BY c.n", 10, token, &router);
    ASSERT_TRUE(p) << sys->render(p.error());
    for (auto n : ns(nlohmann::json::parse(p->body)["Documents"]))
      got.push_back(n);
    token = p->continuation;
  }
  EXPECT_EQ(got, range(0, doc_count));
  other->stop();
}

TEST_F(Query, SplitDuringOrderBy_NoDuplicatesNoLosses) {
  auto first = page("SELECT * FROM c ORDER BY c.n", 8);
  ASSERT_TRUE(first) << sys->render(first.error());
  auto got = ns(nlohmann::json::parse(first->body)["Documents"]);
  // Both initial ranges split under the running query.
  for (auto id : {"0", "1"}) {
    auto split = emu->control().split_range("d", "c", id);
    ASSERT_TRUE(split) << split.error().what;
  }
  std::string token = first->continuation;
  uint32_t refreshes = 0;
  while (!token.empty()) {
    auto p = page("SELECT * FROM c ORDER BY c.n", 8, token);
    ASSERT_TRUE(p) << caf::to_string(p.error()) << " / "
                   << context_of(p.error());
    refreshes += p->diag.metadata_refreshes;
    for (auto n : ns(nlohmann::json::parse(p->body)["Documents"]))
      got.push_back(n);
    token = p->continuation;
  }
  EXPECT_EQ(got, range(0, doc_count)) << "duplicates or losses";
  // Each of the two splits is seen once, by one range query's 410, and
  // costs that query's one refresh of the map (the executor forces none).
  EXPECT_EQ(refreshes, 2u) << "a split is one refresh";
}

} // namespace
} // namespace query_test
