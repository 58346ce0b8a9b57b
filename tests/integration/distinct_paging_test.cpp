// An unordered DISTINCT query (DISTINCT without an ORDER BY on the value)
// across partitions, page by page through the engine against the emulator:
// every distinct value comes exactly once, in one engine and when a second
// engine (as a new process would have) resumes from a page's continuation.
// The continuation carries the hashes of the values already returned.

#include "georoute/actors/policy/query_continuation.hpp"
#include "tests/integration/engine_fixture.hpp"

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {

using namespace georoute;
using namespace georoute::test;
using namespace std::chrono_literals;

class DistinctPaging : public engine_test {
protected:
  /// Writes documents "d0".."d<count-1>" spread over 11 logical
  /// partitions, with `field` set to `value_of(i)`. Upserts, each tried up
  /// to three times: the fixture's 150 ms ladder does not retry a write
  /// that timed out, and a loaded machine (ASan, a parallel ctest) times
  /// out one of a thousand now and then; the seed is not what is tested.
  void seed(int count, const std::string& field,
            const std::function<nlohmann::json(int)>& value_of) {
    for (int i = 0; i < count; ++i) {
      data_request r;
      r.op = data_op::upsert;
      r.collection_link = "dbs/d/colls/c";
      auto pk = "p" + std::to_string(i % 11);
      r.body = nlohmann::json{{"id", "d" + std::to_string(i)},
                              {"pk", pk},
                              {field, value_of(i)}}
                   .dump();
      r.options.partition_key_json = "[\"" + pk + "\"]";
      auto c = ask<data_response>(eng->router(), 10s, route_atom_v, r);
      for (int again = 0; !c && again < 2; ++again)
        c = ask<data_response>(eng->router(), 10s, route_atom_v, r);
      ASSERT_TRUE(c) << sys->render(c.error());
    }
  }

  caf::expected<data_response> page(const std::string& query, int max_items,
                                    const std::string& continuation,
                                    const router_actor& via) {
    data_request r;
    r.op = data_op::query;
    r.collection_link = "dbs/d/colls/c";
    r.body = nlohmann::json{{"query", query}}.dump();
    r.options.max_item_count = max_items;
    r.options.continuation = continuation;
    return ask<data_response>(via, 20s, route_atom_v, r);
  }

  struct run {
    std::vector<nlohmann::json> values;
    std::vector<size_t> page_sizes;
    std::vector<std::string> tokens; ///< the continuation of each page
  };

  /// Pages of `query` from `continuation` on until the query ends, or
  /// `max_pages` pages.
  run pages(const std::string& query, int max_items, const router_actor& via,
            std::string continuation = {}, size_t max_pages = 1000) {
    run out;
    for (size_t n = 0; n < max_pages; ++n) {
      auto p = page(query, max_items, continuation, via);
      EXPECT_TRUE(p) << "page " << n << ": " << describe(p.error());
      if (!p) break;
      auto docs = nlohmann::json::parse(p->body)["Documents"];
      out.page_sizes.push_back(docs.size());
      for (auto& d : docs)
        out.values.push_back(std::move(d));
      out.tokens.push_back(p->continuation);
      continuation = p->continuation;
      if (continuation.empty()) break;
    }
    return out;
  }

  /// How often each value came.
  static std::map<std::string, int>
  counts(const std::vector<nlohmann::json>& values) {
    std::map<std::string, int> out;
    for (const auto& v : values)
      ++out[v.dump()];
    return out;
  }

  /// A second engine on the same actor system, as a new process would
  /// start one: it knows nothing but the settings and the token.
  std::optional<engine> second_engine() {
    engine_options eo;
    eo.sweep_after = 500ms;
    auto other = engine::start(*sys, settings, eo);
    EXPECT_TRUE(other) << sys->render(other.error());
    if (!other) return std::nullopt;
    return std::move(*other);
  }
};

// The distinct values 0..n-1 in JSON text, each once.
std::map<std::string, int> each_once(int n,
                                     const std::function<std::string(int)>& f) {
  std::map<std::string, int> out;
  for (int i = 0; i < n; ++i)
    out[f(i)] = 1;
  return out;
}

const char* seven_query = "SELECT DISTINCT VALUE c.cat FROM c";
const char* three_hundred_query = "SELECT DISTINCT VALUE c.n FROM c";

std::string cat(int i) {
  return "cat" + std::to_string(i % 7);
}

TEST_F(DistinctPaging, SevenValuesPagesOfThree_EveryValueOnce) {
  // Each value in four documents, in four logical partitions.
  seed(28, "cat", [](int i) { return nlohmann::json(cat(i)); });
  auto want = each_once(7, [](int i) { return nlohmann::json(cat(i)).dump(); });
  auto got = pages(seven_query, 3, eng->router());
  EXPECT_EQ(counts(got.values), want);
  ASSERT_GE(got.page_sizes.size(), 3u);
  for (size_t i = 0; i < got.page_sizes.size(); ++i)
    EXPECT_LE(got.page_sizes[i], 3u) << "page " << i;
  EXPECT_EQ(got.page_sizes[0], 3u);
  EXPECT_EQ(got.page_sizes[1], 3u);
}

TEST_F(DistinctPaging, SevenValuesPagesOfThree_ResumedInASecondEngine) {
  seed(28, "cat", [](int i) { return nlohmann::json(cat(i)); });
  auto want = each_once(7, [](int i) { return nlohmann::json(cat(i)).dump(); });
  auto first = pages(seven_query, 3, eng->router(), {}, 1);
  ASSERT_EQ(first.values.size(), 3u);
  ASSERT_FALSE(first.tokens[0].empty());
  auto other = second_engine();
  ASSERT_TRUE(other);
  auto rest = pages(seven_query, 3, other->router(), first.tokens[0]);
  auto all = first.values;
  all.insert(all.end(), rest.values.begin(), rest.values.end());
  EXPECT_EQ(counts(all), want);
  other->stop();
}

TEST_F(DistinctPaging, ThreeHundredValuesDefaultPage_EveryValueOnce) {
  // Each value in two documents, in different logical partitions.
  seed(600, "n", [](int i) { return nlohmann::json(i % 300); });
  auto want = each_once(300, [](int i) { return std::to_string(i); });
  auto got = pages(three_hundred_query, -1, eng->router());
  EXPECT_EQ(counts(got.values), want);
  ASSERT_GE(got.page_sizes.size(), 3u);
  for (size_t i = 0; i < got.page_sizes.size(); ++i)
    EXPECT_LE(got.page_sizes[i], 100u) << "page " << i;
  EXPECT_EQ(got.page_sizes[0], 100u);
  EXPECT_EQ(got.page_sizes[1], 100u);

  // Two pages here, the rest in a second engine from the second page's
  // continuation (it carries the 200 values already returned).
  auto first = pages(three_hundred_query, -1, eng->router(), {}, 2);
  ASSERT_EQ(first.values.size(), 200u);
  ASSERT_FALSE(first.tokens[1].empty());
  auto other = second_engine();
  ASSERT_TRUE(other);
  auto rest = pages(three_hundred_query, -1, other->router(), first.tokens[1]);
  auto all = first.values;
  all.insert(all.end(), rest.values.begin(), rest.values.end());
  EXPECT_EQ(counts(all), want);
  other->stop();
}

TEST_F(DistinctPaging, PastTheBound_ValidationErrorAndItsRemediesWork) {
  constexpr int n = static_cast<int>(max_distinct_carried) + 6;
  seed(n, "n", [](int i) { return nlohmann::json(i); });
  auto want = each_once(n, [](int i) { return std::to_string(i); });
  const int bound = static_cast<int>(max_distinct_carried);

  // A page that leaves the query unfinished after 1,025 values: its
  // continuation would have to carry more than the bound.
  auto over = page(three_hundred_query, bound + 1, {}, eng->router());
  ASSERT_FALSE(over);
  EXPECT_EQ(code_of(over.error()), errc::validation_error);
  auto text = context_of(over.error());
  for (const char* part : {"cannot be resumed", "carries at most 1024 values",
                           "has returned 1025", "ORDER BY", "max_item_count"})
    EXPECT_NE(text.find(part), std::string::npos) << part << ": " << text;

  // At the bound the token carries all 1,024 hashes, compactly: as JSON
  // strings of hex digits they alone would take 19,456 characters.
  auto at = pages(three_hundred_query, bound, eng->router());
  EXPECT_EQ(counts(at.values), want);
  ASSERT_GE(at.tokens.size(), 2u);
  EXPECT_LT(at.tokens[0].size(),
            distinct_set_max_chars(max_distinct_carried) + 1000)
      << at.tokens[0].size();

  // The remedies the error names: one page for everything, or DISTINCT
  // ordered by the value (its token carries the last value only).
  auto one = pages(three_hundred_query, n, eng->router());
  EXPECT_EQ(counts(one.values), want);
  EXPECT_EQ(one.page_sizes.size(), 1u);
  auto sorted =
      pages("SELECT DISTINCT VALUE c.n FROM c ORDER BY c.n", -1, eng->router());
  EXPECT_EQ(counts(sorted.values), want);
  EXPECT_GE(sorted.page_sizes.size(), 11u);
}

} // namespace
