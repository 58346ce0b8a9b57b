// The end of a scenario's change-feed consumer: drain, stop, list the
// collection from the emulator itself, judge, report.

#include "tests/drill/criteria.hpp"
#include "tests/drill/scenario_run.hpp"

#include <caf/all.hpp>
#include <thread>

namespace georoute::drill {

namespace {

using namespace std::chrono_literals;

// The drain is bounded: a feed that cannot catch up within this long after
// the workload stopped has a problem worth failing on.
constexpr std::chrono::milliseconds drain_limit{30000};

struct listing {
  std::vector<final_document> docs;
  std::string problem; ///< empty: complete
  uint64_t pages = 0;
};

// Every document of the collection, by a plain read feed (no A-IM) paged by
// x-ms-continuation, sent to `endpoint`. A page that does not come back 200
// is asked again, a few times, before the listing gives up.
listing list_collection(
    const std::function<transport::outcome(transport::request)>& send,
    const std::string& endpoint) {
  listing out;
  std::string continuation;
  for (;;) {
    transport::outcome o;
    for (int attempt = 0; attempt < 5; ++attempt) {
      if (attempt > 0) std::this_thread::sleep_for(1s);
      transport::request r;
      r.method = "GET";
      r.endpoint = endpoint;
      r.target = "/dbs/d/colls/c/docs";
      r.timeout = 10s;
      r.headers.emplace_back("x-ms-max-item-count", "1000");
      if (!continuation.empty())
        r.headers.emplace_back("x-ms-continuation", continuation);
      o = send(std::move(r));
      if (o.error == transport::failure::none && o.status == 200) break;
    }
    if (o.error != transport::failure::none || o.status != 200) {
      out.problem = "page " + std::to_string(out.pages + 1) + ": " +
                    describe_outcome_short(o);
      return out;
    }
    ++out.pages;
    std::string problem;
    auto page = parse_read_feed_page(o.body, problem);
    if (!page) {
      out.problem = "page " + std::to_string(out.pages) + ": " + problem;
      return out;
    }
    out.docs.insert(out.docs.end(), page->begin(), page->end());
    if (o.continuation.empty()) return out;
    continuation = o.continuation;
  }
}

} // namespace

void scenario_run::finish_feed(
    const std::set<std::string>& acknowledged,
    const std::function<transport::outcome(transport::request)>& send) {
  if (!feed_ || !feed_log_) return;
  feed_report f;
  f.site = regions_.at(std::min<size_t>(1, regions_.size() - 1));
  // Once the writes have replicated (the lag has passed), two caught-up
  // pages in a row mean every range was read up to date twice.
  auto lag = emu_->control().options().replication_lag;
  auto started = recorder::clock::now();
  f.caught_up =
      feed_paused_ && drain_feed_consumer(*sys_, feed_, lag, drain_limit + lag);
  f.drain_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                   recorder::clock::now() - started)
                   .count();
  if (!feed_paused_)
    note("the change-feed consumer did not stop its page in flight within " +
         secs((opts_.deadline + 5s).count()) + " (not drained)");
  caf::anon_send_exit(feed_, caf::exit_reason::user_shutdown);
  feed_ = caf::actor{};
  auto listed = list_collection(
      send, emu_->endpoint(emu_->control().write_regions().front()));
  feed_listing_problem_ = listed.problem;
  std::lock_guard<std::mutex> guard{feed_log_->mtx};
  const auto& log = *feed_log_;
  const auto& c = log.ledger.counts();
  f.pages = c.pages;
  f.pages_with_documents = c.pages_with_documents;
  f.documents = c.documents;
  f.duplicates = c.duplicates;
  f.order_violations = c.order_violations;
  f.malformed = c.malformed;
  f.failed_pages = log.failed_pages;
  f.timed_out_pages = log.timed_out_pages;
  f.restarts = log.restarts;
  f.restarts_elsewhere = log.restarts_elsewhere;
  f.pages_discarded = log.pages_discarded;
  f.served_by = log.served_by;
  f.ranges_at_end = log.ranges;
  if (listed.problem.empty())
    feed_verdict_ = judge_feed(log.ledger, listed.docs, acknowledged);
  else
    feed_verdict_.acknowledged = acknowledged.size();
  f.acknowledged = feed_verdict_.acknowledged;
  f.acknowledged_missing = feed_verdict_.acknowledged_missing;
  f.final_documents = feed_verdict_.final_documents;
  f.final_never_seen = feed_verdict_.final_never_seen;
  f.final_stale = feed_verdict_.final_stale;
  f.phantoms = feed_verdict_.phantoms;
  if (log.failed_pages > 0)
    note("change feed: " + std::to_string(log.failed_pages) +
         " pages failed and were asked again; first: " + log.first_error +
         (log.failed_pages > 1 ? "; last: " + log.last_error : ""));
  if (feed_verdict_.phantoms > 0)
    note("change feed: " + std::to_string(feed_verdict_.phantoms) +
         " documents applied that the collection does not hold (first: " +
         feed_verdict_.phantom_example + ")");
  out_.feed = std::move(f);
}

void scenario_run::feed_criteria() {
  if (!out_.feed) return;
  const auto& f = *out_.feed;
  const auto& v = feed_verdict_;
  auto counts = std::to_string(f.pages) + " pages, " +
                std::to_string(f.documents) + " documents applied, " +
                std::to_string(f.restarts) + " restarts (" +
                std::to_string(f.restarts_elsewhere) + " through another site)";
  require("the change-feed consumer caught up at the end (two caught-up "
          "pages in a row, within " +
              secs(drain_limit.count()) + ")",
          (f.caught_up ? "yes, after " : "no, gave up after ") +
              secs(f.drain_ms) + "; " + counts + "; " +
              std::to_string(f.ranges_at_end) + " ranges at the end",
          f.caught_up);
  const auto& listing_problem = feed_listing_problem_;
  auto unknown = "final state unknown: listing the collection failed (" +
                 listing_problem + ")";
  require("every acknowledged write's document appeared in the change feed",
          listing_problem.empty()
              ? std::to_string(v.acknowledged_missing) + " of " +
                    std::to_string(v.acknowledged) + " never in the feed" +
                    (v.acknowledged_example.empty()
                         ? ""
                         : " (first: " + v.acknowledged_example + ")")
              : unknown,
          listing_problem.empty() && v.acknowledged > 0 &&
              v.acknowledged_missing == 0);
  require(
      "every document's final version (its _etag at the end) was applied "
      "from the change feed at least once",
      listing_problem.empty()
          ? std::to_string(v.final_never_seen + v.final_stale) + " of " +
                std::to_string(v.final_documents) + " missed (" +
                std::to_string(v.final_never_seen) + " never in the feed, " +
                std::to_string(v.final_stale) + " only an older version)" +
                (v.final_example.empty() ? ""
                                         : " (first: " + v.final_example + ")")
          : unknown,
      listing_problem.empty() && v.final_documents > 0 &&
          v.final_never_seen + v.final_stale == 0);
  std::string order_example, duplicate_example, malformed_example;
  {
    std::lock_guard<std::mutex> guard{feed_log_->mtx};
    const auto& c = feed_log_->ledger.counts();
    order_example = c.order_example;
    duplicate_example = c.duplicate_example;
    malformed_example = c.malformed_example;
  }
  require("change-feed order per partition key: order violations = 0 (each "
          "document's _lsn above the last applied for its key and its own), "
          "and every document readable (id, pk, _lsn, _etag)",
          std::to_string(f.order_violations) + " violations" +
              (order_example.empty() ? "" : " (first: " + order_example + ")") +
              ", " + std::to_string(f.malformed) + " unreadable" +
              (malformed_example.empty()
                   ? ""
                   : " (first: " + malformed_example + ")"),
          f.order_violations == 0 && f.malformed == 0);
  require("no change-feed document applied twice (the same id at the same "
          "_lsn), across restarts from the checkpoint: duplicates = 0",
          std::to_string(f.duplicates) + " duplicates over " +
              std::to_string(f.restarts) + " restarts (" +
              std::to_string(f.pages_discarded) +
              " pages dropped unapplied and read again)" +
              (duplicate_example.empty()
                   ? ""
                   : " (first: " + duplicate_example + ")"),
          f.duplicates == 0);
}

} // namespace georoute::drill
