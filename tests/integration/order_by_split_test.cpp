// A cross-partition ORDER BY query through the engine's public API while the
// collection's ranges split under it: before the first page, between pages
// (after three pages of twenty, when the ranges' continuations are tokens
// the emulator issued, not fresh starts), and during a page (the split lands
// right after a range answered, while the page is still being merged). Every
// case must return the whole sorted sequence once: ascending and descending,
// with and without a WHERE clause, compared with a direct computation.

#include "tests/integration/engine_fixture.hpp"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

namespace {

using namespace georoute;
using namespace georoute::test;
using namespace std::chrono_literals;

constexpr int doc_count = 150;
constexpr int page_size = 20;

/// When the initial ranges split.
enum class stage { before_first_page, between_pages, during_page };

struct split_case {
  bool descending = false;
  bool filtered = false;
  stage when = stage::before_first_page;
};

std::string case_name(const ::testing::TestParamInfo<split_case>& info) {
  const auto& c = info.param;
  std::string name = c.descending ? "Desc" : "Asc";
  name += c.filtered ? "_Where" : "_All";
  switch (c.when) {
  case stage::before_first_page:
    return name + "_SplitBeforeFirstPage";
  case stage::between_pages:
    return name + "_SplitBetweenPages";
  case stage::during_page:
    return name + "_SplitDuringPage";
  }
  return name;
}

// Names the case in failure messages instead of its bytes.
void PrintTo(const split_case& c, std::ostream* os) {
  *os << case_name(::testing::TestParamInfo<split_case>(c, 0));
}

/// One document of the data set: distinct scores (a permutation of
/// 0..149), so the expected order is fully determined.
struct doc {
  std::string id;
  int score = 0;
  int g = 0;
};

doc doc_at(int i) {
  char id[8];
  std::snprintf(id, sizeof id, "d%03d", i);
  return doc{id, (i * 37) % doc_count, i % 3};
}

class OrderBySplit : public engine_test,
                     public ::testing::WithParamInterface<split_case> {
protected:
  void SetUp() override {
    engine_test::SetUp();
    for (int i = 0; i < doc_count; ++i) {
      auto d = doc_at(i);
      data_request r;
      r.op = data_op::create;
      r.collection_link = "dbs/d/colls/c";
      auto pk = "p" + std::to_string(i);
      nlohmann::json body{
          {"id", d.id}, {"pk", pk}, {"score", d.score}, {"g", d.g}};
      r.body = body.dump();
      r.options.partition_key_json = "[\"" + pk + "\"]";
      auto c = ask<data_response>(eng->router(), 10s, route_atom_v, r);
      ASSERT_TRUE(c) << describe(c.error());
    }
  }

  std::string query_text() const {
    std::string q = "SELECT c.id, c.score FROM c";
    if (GetParam().filtered) q += " WHERE c.g != 1 AND c.score >= 10";
    return q + " ORDER BY c.score " + (GetParam().descending ? "DESC" : "ASC");
  }

  /// The ids the query must return, computed from the data directly.
  std::vector<std::string> expected() const {
    std::vector<doc> docs;
    for (int i = 0; i < doc_count; ++i) {
      auto d = doc_at(i);
      if (!GetParam().filtered || (d.g != 1 && d.score >= 10))
        docs.push_back(d);
    }
    std::sort(docs.begin(), docs.end(), [&](const doc& a, const doc& b) {
      return GetParam().descending ? a.score > b.score : a.score < b.score;
    });
    std::vector<std::string> ids;
    for (const auto& d : docs)
      ids.push_back(d.id);
    return ids;
  }

  caf::expected<data_response> page(const std::string& continuation) {
    data_request r;
    r.op = data_op::query;
    r.collection_link = "dbs/d/colls/c";
    r.body = nlohmann::json{{"query", query_text()}}.dump();
    r.options.max_item_count = page_size;
    r.options.continuation = continuation;
    return ask<data_response>(eng->router(), 30s, route_atom_v, r);
  }

  void split_now() {
    for (auto id : {"0", "1"}) {
      auto split = emu->control().split_range("d", "c", id);
      ASSERT_TRUE(split) << split.error().what;
    }
  }

  void split_after_next_query() {
    for (auto id : {"0", "1"}) {
      auto armed = emu->control().split_after_next_query("d", "c", id);
      ASSERT_TRUE(armed) << armed.error().what;
    }
  }

  /// True when the page met a gone range (410/1002) and refreshed the
  /// ranges: the split was handled within it.
  static bool met_split(const data_response& p) {
    bool gone = std::any_of(
        p.diag.attempts.begin(), p.diag.attempts.end(),
        [](const auto& a) { return a.status == 410 && a.substatus == 1002; });
    return gone && p.diag.metadata_refreshes > 0;
  }
};

TEST_P(OrderBySplit, WholeSequence_RangesSplit_NoDuplicatesNoGaps) {
  const auto when = GetParam().when;
  // The page before which the split lands (or, during_page, while which).
  const int split_page = when == stage::before_first_page ? 1
                         : when == stage::between_pages   ? 4
                                                          : 2;
  std::vector<std::string> got;
  std::string token;
  bool split_seen = false;
  for (int n = 1; n <= 100; ++n) {
    if (n == split_page) {
      if (when == stage::during_page)
        split_after_next_query();
      else
        split_now();
    }
    auto p = page(token);
    ASSERT_TRUE(p) << "page " << n << ": " << describe(p.error());
    if (n == split_page) {
      // During a page: both ranges split right after they answered this
      // page's first request to them, so meeting the split here means a
      // range was asked again within the page, with the token its parent
      // had just issued.
      EXPECT_TRUE(met_split(*p))
          << "page " << n << " did not meet the split it staged";
    }
    split_seen = split_seen || met_split(*p);
    auto body = nlohmann::json::parse(p->body); // outlives the range-for
    for (const auto& d : body["Documents"])
      got.push_back(d["id"].get<std::string>());
    token = p->continuation;
    if (token.empty()) break;
    ASSERT_LT(n, 100) << "the query never ends";
  }
  EXPECT_TRUE(split_seen);
  auto want = expected();
  ASSERT_GT(want.size(), static_cast<size_t>(4 * page_size));
  EXPECT_EQ(got, want) << "duplicates, gaps or a wrong order";
}

std::vector<split_case> all_cases() {
  std::vector<split_case> out;
  for (bool desc : {false, true})
    for (bool where : {false, true})
      for (auto when :
           {stage::before_first_page, stage::between_pages, stage::during_page})
        out.push_back(split_case{desc, where, when});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Matrix, OrderBySplit, ::testing::ValuesIn(all_cases()),
                         case_name);

} // namespace
