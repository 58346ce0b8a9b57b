// The change-feed consumer's judging logic (feed_ledger.hpp): reading pages,
// applying them, duplicates, order violations, and the comparison with the
// collection's final state; the report's feed section in the JSON; and the
// consumer actor itself against fake routers (retries, restarts, drain).

#include "georoute/messages/error.hpp"
#include "georoute/messages/types.hpp"
#include "tests/drill/feed_consumer.hpp"
#include "tests/drill/feed_ledger.hpp"
#include "tests/drill/report.hpp"

#include <caf/all.hpp>
#include <functional>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <thread>

namespace {

using namespace georoute::drill;
using json = nlohmann::json;

json doc(const std::string& id, const std::string& pk, int64_t lsn,
         const std::string& etag = {}) {
  return {{"id", id},
          {"pk", pk},
          {"_lsn", lsn},
          {"_etag", etag.empty() ? "\"e" + std::to_string(lsn) + "\"" : etag},
          {"body", 1}};
}

std::string page(std::initializer_list<json> docs) {
  return json(docs).dump();
}

// -- reading a page -----------------------------------------------------------

TEST(FeedPage, ReadsIdPartitionKeyLsnAndEtag) {
  auto p = parse_feed_page(page({doc("a", "p1", 7, "\"x\"")}));
  ASSERT_EQ(p.items.size(), 1u);
  EXPECT_EQ(p.malformed, 0u);
  EXPECT_EQ(p.items[0].id, "a");
  EXPECT_EQ(p.items[0].pk, "p1");
  EXPECT_EQ(p.items[0].lsn, 7);
  EXPECT_EQ(p.items[0].etag, "\"x\"");
}

TEST(FeedPage, LsnInAString_IsRead) {
  auto d = doc("a", "p1", 0);
  d["_lsn"] = "42";
  auto p = parse_feed_page(json::array({d}).dump());
  ASSERT_EQ(p.items.size(), 1u);
  EXPECT_EQ(p.items[0].lsn, 42);
}

TEST(FeedPage, DocumentsMissingAField_AreCountedNotApplied) {
  struct row {
    const char* name;
    std::function<void(json&)> spoil;
  };
  const std::vector<row> rows{
      {"no id", [](json& d) { d.erase("id"); }},
      {"numeric id", [](json& d) { d["id"] = 5; }},
      {"no pk", [](json& d) { d.erase("pk"); }},
      {"no _lsn", [](json& d) { d.erase("_lsn"); }},
      {"_lsn not a number", [](json& d) { d["_lsn"] = "4x"; }},
      {"no _etag", [](json& d) { d.erase("_etag"); }},
  };
  for (const auto& r : rows) {
    auto d = doc("a", "p1", 3);
    r.spoil(d);
    auto p = parse_feed_page(json::array({d, doc("b", "p1", 4)}).dump());
    EXPECT_EQ(p.malformed, 1u) << r.name;
    ASSERT_EQ(p.items.size(), 1u) << r.name;
    EXPECT_EQ(p.items[0].id, "b") << r.name;
    EXPECT_FALSE(p.malformed_example.empty()) << r.name;
  }
}

TEST(FeedPage, NotAnArray_IsOneUnreadable) {
  auto p = parse_feed_page("{\"Documents\": []}");
  EXPECT_EQ(p.malformed, 1u);
  EXPECT_TRUE(p.items.empty());
}

// -- applying -----------------------------------------------------------------

TEST(FeedLedger, PagesInOrder_AppliedWithoutFindings) {
  feed_ledger l;
  l.apply_page(page({doc("a", "p1", 1), doc("b", "p2", 2)}));
  l.apply_page("[]");
  l.apply_page(page({doc("a", "p1", 3), doc("c", "p1", 4)}));
  const auto& c = l.counts();
  EXPECT_EQ(c.pages, 3u);
  EXPECT_EQ(c.pages_with_documents, 2u);
  EXPECT_EQ(c.documents, 4u);
  EXPECT_EQ(c.duplicates, 0u);
  EXPECT_EQ(c.order_violations, 0u);
  ASSERT_NE(l.find("a", "p1"), nullptr);
  EXPECT_EQ(l.find("a", "p1")->lsn, 3);
  EXPECT_EQ(l.find("a", "p1")->etag, "\"e3\"");
  EXPECT_EQ(l.find("a", "p2"), nullptr) << "a document is its id and its key";
}

TEST(FeedLedger, SamePageAppliedTwice_EveryDocumentADuplicate) {
  feed_ledger l;
  auto p = page({doc("a", "p1", 1), doc("b", "p2", 2)});
  l.apply_page(p);
  auto e = l.apply_page(p);
  EXPECT_EQ(e.duplicates, 2u);
  EXPECT_EQ(e.applied, 0u);
  EXPECT_EQ(l.counts().duplicates, 2u);
  EXPECT_EQ(l.counts().order_violations, 0u)
      << "a duplicate is not also an order violation";
  EXPECT_EQ(l.counts().documents, 2u);
  EXPECT_NE(l.counts().duplicate_example.find("a (pk p1) at _lsn 1"),
            std::string::npos)
      << l.counts().duplicate_example;
}

TEST(FeedLedger, LowerLsnInTheSameKey_IsAnOrderViolation_StillApplied) {
  feed_ledger l;
  l.apply_page(page({doc("a", "p1", 5)}));
  auto e = l.apply_page(page({doc("b", "p1", 4)}));
  EXPECT_EQ(e.order_violations, 1u);
  EXPECT_EQ(e.applied, 1u);
  ASSERT_NE(l.find("b", "p1"), nullptr);
  EXPECT_NE(l.counts().order_example.find("after _lsn 5 of the same"),
            std::string::npos)
      << l.counts().order_example;
  // The key's position stays at the highest: 4 did not lower it.
  EXPECT_EQ(l.apply_page(page({doc("c", "p1", 4)})).order_violations, 1u);
}

TEST(FeedLedger, LowerLsnInAnotherKey_IsFine) {
  feed_ledger l;
  l.apply_page(page({doc("a", "p1", 5)}));
  auto e = l.apply_page(page({doc("b", "p2", 3)}));
  EXPECT_EQ(e.order_violations, 0u);
  EXPECT_EQ(e.applied, 1u);
}

TEST(FeedLedger, TwoDocumentsOfOneKeySharingAnLsn_AreOneChange) {
  feed_ledger l;
  auto e = l.apply_page(page({doc("a", "p1", 5), doc("b", "p1", 5)}));
  EXPECT_EQ(e.order_violations, 0u);
  EXPECT_EQ(e.duplicates, 0u);
  EXPECT_EQ(e.applied, 2u);
}

TEST(FeedLedger, ADocumentGoingBack_IsAnOrderViolation_NotApplied) {
  feed_ledger l;
  l.apply_page(page({doc("a", "p1", 1)}));
  l.apply_page(page({doc("a", "p1", 5)}));
  auto e = l.apply_page(page({doc("a", "p1", 1)}));
  EXPECT_EQ(e.order_violations, 1u);
  EXPECT_EQ(e.duplicates, 0u);
  EXPECT_EQ(e.applied, 0u);
  EXPECT_EQ(l.find("a", "p1")->lsn, 5) << "the newer version stays";
  EXPECT_NE(l.counts().order_example.find("after its own _lsn 5"),
            std::string::npos)
      << l.counts().order_example;
}

// A resume from a continuation that was behind replays a page: its
// documents that did not change since are duplicates, and those of a key
// that moved on break its order.
TEST(FeedLedger, ReplayedPageAfterLaterChanges_IsSeen) {
  feed_ledger l;
  auto first = page({doc("a", "p1", 1), doc("b", "p1", 2)});
  l.apply_page(first);
  l.apply_page(page({doc("c", "p1", 3)}));
  l.apply_page(first);
  EXPECT_EQ(l.counts().duplicates, 2u);
  EXPECT_EQ(l.counts().order_violations, 0u);
  EXPECT_EQ(l.counts().documents, 3u);
}

TEST(FeedLedger, UnreadableDocuments_Counted) {
  feed_ledger l;
  auto bad = doc("a", "p1", 1);
  bad.erase("_etag");
  l.apply_page(json::array({bad}).dump());
  l.apply_page("not json");
  EXPECT_EQ(l.counts().malformed, 2u);
  EXPECT_EQ(l.counts().documents, 0u);
  EXPECT_FALSE(l.counts().malformed_example.empty());
}

// The soak upserts a bounded set of documents: applying new versions of the
// same documents for ever must not grow the ledger.
TEST(FeedLedger, NewVersionsOfTheSameDocuments_DoNotGrowIt) {
  feed_ledger l;
  int64_t lsn = 0;
  auto round = [&] {
    json docs = json::array();
    for (int i = 0; i < 200; ++i) {
      ++lsn;
      docs.push_back(doc("soak-w" + std::to_string(i) + "-long-enough-id",
                         "p" + std::to_string(i % 40), lsn,
                         "\"00000000-0000-0000-0000-" +
                             std::to_string(100000000000 + lsn) + "\""));
    }
    l.apply_page(docs.dump());
  };
  round();
  auto after_one = l.bytes_held();
  EXPECT_GT(after_one, 200u * 40u);
  for (int k = 0; k < 50; ++k)
    round();
  EXPECT_EQ(l.bytes_held(), after_one);
  EXPECT_EQ(l.documents().size(), 200u);
  EXPECT_EQ(l.counts().order_violations, 0u);
}

// -- judging against the final state
// --------------------------------------------

struct judged {
  feed_ledger ledger;
  std::vector<final_document> final_state;
  std::set<std::string> acknowledged;
};

judged healthy() {
  judged j;
  j.ledger.apply_page(
      page({doc("seed-0", "p0", 1), doc("w-1", "p1", 2), doc("w-2", "p2", 3)}));
  j.ledger.apply_page(page({doc("w-1", "p1", 4)}));
  j.final_state = {{"seed-0", "p0", "\"e1\""},
                   {"w-1", "p1", "\"e4\""},
                   {"w-2", "p2", "\"e3\""}};
  j.acknowledged = {"w-1\np1", "w-2\np2"};
  return j;
}

TEST(FeedJudge, EverythingSeenAtItsFinalVersion_NothingMissed) {
  auto j = healthy();
  auto v = judge_feed(j.ledger, j.final_state, j.acknowledged);
  EXPECT_EQ(v.acknowledged, 2u);
  EXPECT_EQ(v.acknowledged_missing, 0u);
  EXPECT_EQ(v.final_documents, 3u);
  EXPECT_EQ(v.final_never_seen, 0u);
  EXPECT_EQ(v.final_stale, 0u);
  EXPECT_EQ(v.phantoms, 0u);
}

TEST(FeedJudge, AnAcknowledgedWriteNeverInTheFeed_IsMissing) {
  auto j = healthy();
  j.acknowledged.insert("w-3\np3");
  j.final_state.push_back({"w-3", "p3", "\"e9\""});
  auto v = judge_feed(j.ledger, j.final_state, j.acknowledged);
  EXPECT_EQ(v.acknowledged_missing, 1u);
  EXPECT_EQ(v.acknowledged_example, "w-3 (pk p3)");
  EXPECT_EQ(v.final_never_seen, 1u);
}

TEST(FeedJudge, AnAcknowledgedIdUnderAnotherKey_IsMissing) {
  auto j = healthy();
  j.acknowledged.insert("w-1\np9");
  EXPECT_EQ(
      judge_feed(j.ledger, j.final_state, j.acknowledged).acknowledged_missing,
      1u);
}

TEST(FeedJudge, FinalVersionNeverApplied_IsStale) {
  auto j = healthy();
  j.final_state[1].etag = "\"e7\""; // a later write the feed never showed
  auto v = judge_feed(j.ledger, j.final_state, j.acknowledged);
  EXPECT_EQ(v.final_stale, 1u);
  EXPECT_EQ(v.final_never_seen, 0u);
  EXPECT_EQ(v.acknowledged_missing, 0u) << "the document did appear";
  EXPECT_NE(v.final_example.find("last applied \"e4\" at _lsn 4"),
            std::string::npos)
      << v.final_example;
}

TEST(FeedJudge, ADocumentNeverInTheFeed_IsNeverSeen) {
  auto j = healthy();
  j.final_state.push_back({"seed-1", "p1", "\"e0\""});
  auto v = judge_feed(j.ledger, j.final_state, j.acknowledged);
  EXPECT_EQ(v.final_never_seen, 1u);
  EXPECT_NE(v.final_example.find("never in the feed"), std::string::npos);
}

TEST(FeedJudge, AppliedButNotInTheCollection_IsAPhantom) {
  auto j = healthy();
  j.final_state.erase(j.final_state.begin() + 2);
  auto v = judge_feed(j.ledger, j.final_state, j.acknowledged);
  EXPECT_EQ(v.phantoms, 1u);
  EXPECT_EQ(v.phantom_example, "w-2 at _lsn 3");
}

TEST(FeedJudge, ReadFeedPage_Parsed) {
  std::string problem;
  auto docs = parse_read_feed_page(
      R"({"_rid":"x","Documents":[{"id":"a","pk":"p1","_etag":"\"1\""}],"_count":1})",
      problem);
  ASSERT_TRUE(docs) << problem;
  ASSERT_EQ(docs->size(), 1u);
  EXPECT_EQ((*docs)[0].id, "a");
  EXPECT_EQ((*docs)[0].pk, "p1");
  EXPECT_EQ((*docs)[0].etag, "\"1\"");
  EXPECT_FALSE(
      parse_read_feed_page(R"({"Documents":[{"id":"a","pk":"p1"}]})", problem));
  EXPECT_NE(problem.find("_etag"), std::string::npos) << problem;
  EXPECT_FALSE(parse_read_feed_page("[]", problem));
}

// -- the report's feed section ------------------------------------------------

drill_report report_with_feed() {
  drill_report r;
  r.regions = {"West US", "East US"};
  scenario_report s;
  s.id = "S1a";
  feed_report f;
  f.site = "East US";
  f.pages = 10;
  f.documents = 30;
  f.ranges_at_end = 4;
  f.caught_up = true;
  f.served_by = {{"East US", 8}, {"West US", 2}};
  s.feed = f;
  s.criteria.push_back({"x", "y", true});
  s.passed = true;
  r.scenarios.push_back(s);
  r.passed = true;
  return r;
}

TEST(FeedReport, JsonCarriesTheFeed_AndValidates) {
  auto r = report_with_feed();
  auto text = render_json(r);
  auto j = json::parse(text);
  const auto& f = j["scenarios"][0]["feed"];
  EXPECT_EQ(f["site"], "East US");
  EXPECT_EQ(f["ranges_at_end"], 4);
  EXPECT_EQ(f["served_by"]["West US"], 2);
  auto problems = validate_report_json(text);
  EXPECT_TRUE(problems.empty()) << problems.front();
  // A wrong type is named.
  j["scenarios"][0]["feed"]["duplicates"] = "none";
  problems = validate_report_json(j.dump());
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("scenarios[0].feed.duplicates"), std::string::npos)
      << problems[0];
  // Without a feed it is null, and valid.
  r.scenarios[0].feed.reset();
  text = render_json(r);
  EXPECT_TRUE(json::parse(text)["scenarios"][0]["feed"].is_null());
  EXPECT_TRUE(validate_report_json(text).empty());
}

TEST(FeedReport, TableAndHtmlShowTheCounts) {
  auto r = report_with_feed();
  auto table = render_table(r);
  EXPECT_NE(table.find("change feed"), std::string::npos) << table;
  EXPECT_NE(table.find("4 ranges at the end"), std::string::npos) << table;
  auto html = render_html(r);
  EXPECT_NE(html.find("change feed (read through East US)"), std::string::npos);
}

// -- the consumer actor
// ---------------------------------------------------------

// A feed that grows by one document every 2 ms up to `cap`, served by fake
// routers that share it: the continuation is "c<position>", each page holds
// up to 4 documents after the position, every third request fails.
struct fake_feed {
  std::mutex mtx;
  std::chrono::steady_clock::time_point start =
      std::chrono::steady_clock::now();
  int cap = 200;
  struct sent {
    int router = 0;
    std::string continuation;
    bool failed = false;
  };
  std::vector<sent> requests;

  int total() const {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::steady_clock::now() - start)
                  .count();
    return static_cast<int>(std::min<int64_t>(cap, ms / 2));
  }
};

georoute::router_actor::behavior_type
fake_router(georoute::router_actor::pointer, int id,
            std::shared_ptr<fake_feed> feed) {
  using georoute::errc;
  using georoute::make_error;
  return {
      [](georoute::route_atom,
         georoute::data_request&) -> caf::result<georoute::data_response> {
        return make_error(errc::validation_error, "not used here");
      },
      [id, feed](georoute::route_atom, georoute::change_feed_request& req)
          -> caf::result<georoute::change_feed_page> {
        std::lock_guard<std::mutex> guard{feed->mtx};
        bool fail = (feed->requests.size() + 1) % 3 == 0;
        feed->requests.push_back({id, req.continuation, fail});
        if (fail) return make_error(errc::service_unavailable, "fake 503");
        int at = req.continuation.empty()
                     ? 0
                     : std::stoi(req.continuation.substr(1));
        int total = feed->total();
        georoute::change_feed_page p;
        auto docs = json::array();
        for (int i = at + 1; i <= std::min(total, at + 4); ++i)
          docs.push_back(
              doc("d" + std::to_string(i), "p" + std::to_string(i % 3), i));
        p.count = static_cast<uint32_t>(docs.size());
        p.documents = docs.dump();
        p.caught_up = docs.empty();
        p.continuation =
            "c" + std::to_string(at + static_cast<int>(docs.size()));
        p.ranges = 2;
        georoute::attempt_record a;
        a.region = "R" + std::to_string(id);
        p.diag.attempts.push_back(a);
        return p;
      },
      [](georoute::route_atom,
         georoute::batch_request&) -> caf::result<georoute::batch_response> {
        return make_error(errc::validation_error, "not used here");
      },
      [](georoute::route_atom,
         georoute::bulk_open&) -> caf::result<caf::actor> {
        return make_error(errc::validation_error, "not used here");
      },
      [](georoute::feed_ranges_atom, std::string&)
          -> caf::result<std::vector<georoute::partition_key_range>> {
        return make_error(errc::validation_error, "not used here");
      },
      [](georoute::route_atom, georoute::document_request&)
          -> caf::result<georoute::transport::outcome> {
        return make_error(errc::validation_error, "not used here");
      },
      [](georoute::stats_atom) { return georoute::router_stats{}; },
      [](georoute::metrics_atom) { return georoute::router_metrics{}; },
  };
}

struct feed_system_config : caf::actor_system_config {
  feed_system_config() { georoute::register_types(*this); }
};

// Failed pages are asked again from the same continuation, restarts resume
// from the checkpoint (on either router), a page dropped by a restart is read
// again, and nothing is applied twice or out of order; the drain ends once
// caught up twice.
TEST(FeedConsumer, RetriesRestartsAndDrain_EveryDocumentOnceInOrder) {
  feed_system_config cfg;
  caf::actor_system sys{cfg};
  auto feed = std::make_shared<fake_feed>();
  std::vector<georoute::router_actor> routers{sys.spawn(fake_router, 0, feed),
                                              sys.spawn(fake_router, 1, feed)};
  feed_consumer_setup setup;
  for (const auto& r : routers)
    setup.sites.push_back([r] { return r; });
  setup.home = 0;
  setup.collection_link = "dbs/d/colls/c";
  setup.deadline = std::chrono::seconds{2};
  setup.idle = std::chrono::milliseconds{2};
  setup.retry_pause = std::chrono::milliseconds{2};
  setup.restart_every = std::chrono::milliseconds{20};
  setup.elsewhere_every = 2;
  setup.log = std::make_shared<feed_log>();
  auto log = setup.log;
  auto consumer = spawn_feed_consumer(sys, setup);
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds{20};
  for (;;) {
    {
      std::lock_guard<std::mutex> guard{log->mtx};
      if ((log->ledger.documents().size() == 200 && log->restarts >= 6 &&
           log->pages_discarded >= 2 && log->restarts_elsewhere >= 2) ||
          std::chrono::steady_clock::now() > give_up)
        break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  }
  EXPECT_TRUE(pause_feed_consumer(sys, consumer, std::chrono::seconds{5}));
  EXPECT_TRUE(drain_feed_consumer(sys, consumer, std::chrono::milliseconds{0},
                                  std::chrono::seconds{5}));
  caf::anon_send_exit(consumer, caf::exit_reason::user_shutdown);
  for (const auto& r : routers)
    caf::anon_send_exit(r, caf::exit_reason::user_shutdown);

  std::lock_guard<std::mutex> guard{log->mtx};
  const auto& c = log->ledger.counts();
  EXPECT_EQ(log->ledger.documents().size(), 200u);
  EXPECT_EQ(c.documents, 200u);
  EXPECT_EQ(c.duplicates, 0u) << c.duplicate_example;
  EXPECT_EQ(c.order_violations, 0u) << c.order_example;
  EXPECT_GE(log->restarts, 6u);
  EXPECT_GE(log->restarts_elsewhere, 2u);
  EXPECT_GE(log->pages_discarded, 2u);
  EXPECT_GT(log->failed_pages, 0u);
  EXPECT_EQ(log->checkpoint, "c200");
  EXPECT_NE(log->first_error.find("fake 503"), std::string::npos)
      << log->first_error;
  EXPECT_GT(log->served_by["R0"], 0u);
  EXPECT_GT(log->served_by["R1"], 0u);
  std::lock_guard<std::mutex> feed_guard{feed->mtx};
  const auto& sent = feed->requests;
  ASSERT_GT(sent.size(), 10u);
  // A failed page changed nothing: the next request carries its
  // continuation again; and a position never goes back.
  auto position = [](const std::string& t) {
    return t.empty() ? 0 : std::stoi(t.substr(1));
  };
  for (size_t i = 0; i + 1 < sent.size(); ++i) {
    if (sent[i].failed) {
      EXPECT_EQ(sent[i + 1].continuation, sent[i].continuation) << i;
    }
    EXPECT_LE(position(sent[i].continuation),
              position(sent[i + 1].continuation))
        << i;
  }
}

} // namespace
