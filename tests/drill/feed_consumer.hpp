#pragma once

// The drill's change-feed consumer: an actor that reads the whole collection's
// change feed from the beginning, page by page, through a site engine's
// router, for as long as the workload runs, and applies each page to a
// `feed_ledger` (feed_ledger.hpp), as an application keeping a copy of the
// collection would.
//
//   consumer --(route_atom, change_feed_request)--> a site engine's router
//            <-- change_feed_page | error (its own request timeout)
//   pause_feed_consumer  --> consumer: no new page after the one in flight
//   drain_feed_consumer  --> consumer: reads until caught up twice in a row
//   (exit)               --> consumer: gone
//
// - Each page is a request with its own timeout (the caller's deadline). A
//   page that fails or times out changed nothing: it is asked again from the
//   same continuation after a short pause, and counted.
// - The checkpoint is the continuation of the last page applied, saved right
//   after applying it. Caught up, the consumer waits a moment and asks again.
// - It restarts like a process that was killed: every `restart_every`
//   (whether its pages succeed or fail) it drops what it holds beyond its
//   checkpoint (every other time the page that just arrived, unapplied) and
//   goes on from the checkpoint; every
//   `elsewhere_every`-th time through another site's engine, which never saw
//   the feed, so the continuation must resume anywhere.
// - The ledger and the counters live in a `feed_log` shared with the drill,
//   which reads them under its mutex.

#include "georoute/messages/interfaces.hpp"
#include "tests/drill/feed_ledger.hpp"

#include <caf/actor_system.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace georoute::drill {

/// What a consumer did, beside its ledger. Read under `mtx`.
struct feed_log {
  mutable std::mutex mtx;
  feed_ledger ledger;
  uint64_t failed_pages = 0;    ///< answered with an error (retried)
  uint64_t timed_out_pages = 0; ///< of those, the consumer's own timeout
  uint64_t restarts = 0;
  uint64_t restarts_elsewhere = 0; ///< resumed through another site
  uint64_t pages_discarded = 0;    ///< arrived and dropped by a restart
  /// Pages applied, by the region that answered their last read.
  std::map<std::string, uint64_t> served_by;
  uint32_t ranges = 0;     ///< cursors of the last page applied
  std::string checkpoint;  ///< the continuation of the last page applied
  std::string first_error; ///< the first failed page's error, short
  std::string last_error;
};

/// How a consumer runs.
struct feed_consumer_setup {
  /// Each site's current router (the engine's `router()`, which names the
  /// successor after a restart), by site.
  std::vector<std::function<router_actor()>> sites;
  size_t home = 0; ///< the site it reads through, most of the time
  std::string collection_link;
  std::chrono::milliseconds deadline{5000}; ///< per page
  std::vector<std::string> excluded_regions;
  int32_t page_size = 100;
  std::chrono::milliseconds idle{100};        ///< after a caught-up page
  std::chrono::milliseconds retry_pause{200}; ///< after a failed page
  std::chrono::milliseconds restart_every{2000};
  uint32_t elsewhere_every = 3;
  std::shared_ptr<feed_log> log;
};

/// Spawns a consumer; it starts reading at once.
caf::actor spawn_feed_consumer(caf::actor_system& sys,
                               feed_consumer_setup setup);

/// Asks the consumer to stop reading once its page in flight (if any) has
/// come back; true when it said so within `timeout`. Not from a CAF worker.
bool pause_feed_consumer(caf::actor_system& sys, const caf::actor& consumer,
                         std::chrono::milliseconds timeout);

/// Has it read (without restarts) until two caught-up pages in a row, each
/// sent at least `settle` after this call, came back; then it reads no
/// more. True when that happened within `timeout`. Not from a CAF worker.
bool drain_feed_consumer(caf::actor_system& sys, const caf::actor& consumer,
                         std::chrono::milliseconds settle,
                         std::chrono::milliseconds timeout);

} // namespace georoute::drill
