#pragma once

// A blocking facade over the engine's request router, for code that is not
// an actor (a main thread, a thread pool, a test). Every call waits at most
// its timeout, returns a result or an error and never throws across the
// actor boundary. Actors should send `(route_atom, data_request)` to
// `engine::router()` themselves instead (messages/interfaces.hpp).
//
//   georoute::client db{sys, eng};
//   auto doc = db.read("dbs/shop/colls/orders", "o1", pk("o1"));
//   if (!doc) std::cerr << sys.render(doc.error()) << "\n";

#include "georoute/actors/engine.hpp"
#include "georoute/messages/interfaces.hpp"

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace georoute {

/// Options with just the partition key set: `pk("o1")` is `["o1"]`.
request_options pk(const std::string& value);

/// Where `client::bulk` takes its operations from: the next chunk, each
/// operation with its own partition key; an empty vector when there are no
/// more.
using bulk_source = std::function<std::vector<batch_operation>()>;
/// Where `client::bulk` hands each chunk's results, in the order the chunks
/// were taken: `first` is the index of the chunk's first operation in the
/// whole stream, `results` one per operation.
using bulk_sink =
    std::function<void(uint64_t first, std::vector<bulk_op_result>& results)>;

/// See the file comment. Cheap to copy; thread-safe.
class client {
public:
  /// Routes through the engine's current router (a restarted router is
  /// picked up). `timeout` bounds each call: the caller's own deadline; the
  /// engine's failover decisions run to completion regardless.
  client(caf::actor_system& sys, const engine& eng,
         caf::timespan timeout = std::chrono::seconds{30});

  caf::expected<data_response> create(const std::string& collection_link,
                                      std::string document,
                                      request_options options);
  caf::expected<data_response> upsert(const std::string& collection_link,
                                      std::string document,
                                      request_options options);
  caf::expected<data_response> read(const std::string& collection_link,
                                    const std::string& id,
                                    request_options options);
  caf::expected<data_response> replace(const std::string& collection_link,
                                       const std::string& id,
                                       std::string document,
                                       request_options options);
  caf::expected<data_response> remove(const std::string& collection_link,
                                      const std::string& id,
                                      request_options options);
  /// A query in one logical partition (`options.partition_key_json` set):
  /// `spec` is `{"query": "...", "parameters": [...]}`; page with
  /// `options.max_item_count` and `options.continuation`.
  caf::expected<data_response> query(const std::string& collection_link,
                                     std::string spec, request_options options);

  /// A partial update of document `id`: `patch` is the service's patch
  /// body, `[{"op": "incr", "path": "/n", "value": 1}]` or `{"condition":
  /// "FROM c WHERE c.n < 10", "operations": [...]}` (at most ten
  /// operations; actors/policy/README.md says when a patch is resent).
  caf::expected<data_response> patch(const std::string& collection_link,
                                     const std::string& id, std::string patch,
                                     request_options options);

  /// A transactional batch (see `batch_request`): `committed()` when all
  /// its operations were applied; otherwise none was, and each result
  /// says why (the failing one its status, the others 424).
  caf::expected<batch_response> batch(batch_request req);

  /// Bulk: every operation `next` hands over, grouped per partition-key
  /// range and sent as non-atomic batches (actors/bulk_executor.hpp);
  /// each one's result goes to `done`. At most `chunks_in_flight` chunks
  /// (1 to 16) are held at once, so memory stays bounded however many
  /// operations `next` has. The answer is the session's counters; an error
  /// is one of the session's (the client timeout bounds opening it), or a
  /// chunk refused before any of it was sent: its context names the
  /// chunk's first operation in the stream, and every other chunk's results
  /// reached `done` first. Each chunk is waited for as long as its
  /// operations' budget (`bulk_options::budget_ms`) and the last request.
  /// A chunk is answered once its slowest range is through: when one range
  /// is throttled harder than the others, more chunks in flight keep the
  /// others busy.
  ///
  ///   size_t n = 0;
  ///   auto summary = db.bulk(bulk_open{"dbs/shop/colls/orders"},
  ///       [&] { return next_thousand_orders(n); },
  ///       [&](uint64_t first, std::vector<bulk_op_result>& rs) {
  ///         for (size_t i = 0; i < rs.size(); ++i)
  ///           if (!rs[i].ok()) report(first + i, rs[i]);
  ///       });
  caf::expected<bulk_summary> bulk(bulk_open open, const bulk_source& next,
                                   const bulk_sink& done,
                                   size_t chunks_in_flight = 4);

  /// Any request.
  caf::expected<data_response> execute(data_request req);

  /// One page of a change feed (see `change_feed_request`): the first call
  /// names the scope and the start, every later one passes the page's
  /// continuation. A page with `caught_up` has no documents: ask again
  /// later with its continuation. On an error, keep the continuation you
  /// sent and try again: nothing is lost.
  ///
  ///   change_feed_request req{"dbs/shop/colls/orders"};
  ///   for (;;) {
  ///     auto page = db.read_change_feed(req);
  ///     if (!page) { /* back off, retry the same req */ continue; }
  ///     apply(page->documents);          // then remember the position:
  ///     req.continuation = page->continuation;
  ///     if (page->caught_up) sleep_a_while();
  ///   }
  caf::expected<change_feed_page> read_change_feed(change_feed_request req);

  /// The collection's ranges now, in EPK order: each one's bounds
  /// (`min_inclusive`, `max_exclusive`) are a feed range that one consumer
  /// can read (`change_feed_request::range_min`/`range_max`).
  caf::expected<std::vector<partition_key_range>>
  feed_ranges(const std::string& collection_link);

private:
  caf::actor_system* sys_;
  const engine* engine_;
  caf::timespan timeout_;
};

} // namespace georoute
