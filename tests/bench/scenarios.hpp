#pragma once

// The parts of `georoute bench` that run georoute and the peer side by
// side outside the throughput rounds: the set-up of the emulator's
// collections, the pre-signed read of the raw client, failover under a
// fault (the same admin calls for both clients), and the peer's cold start
// (georoute's is georoute_driver::cold_start).

#include "tests/bench/bench_options.hpp"
#include "tests/bench/child_emulator.hpp"
#include "tests/bench/measure.hpp"
#include "tests/bench/peer.hpp"
#include "tests/bench/raw_client.hpp"

#include <functional>
#include <string>
#include <vector>

namespace georoute::bench {

/// Creates the database, the collections and the document; "" or what
/// failed.
std::string set_up(child_emulator& emu, const options& o);

/// The pre-signed read the raw client sends to the first preferred region.
result<raw_request> raw_read(child_emulator& emu);

/// The admin calls that start and end one fault.
struct fault {
  std::string name;
  std::function<result<std::string>()> start;
  std::function<result<std::string>()> end;
  bool writes = false; ///< the load is upserts, not reads
};

/// Region hang, region refusing connections (both on the first preferred
/// region), and a write-region switch (the first write region moves last).
std::vector<fault> faults(child_emulator& emu);

/// A fresh engine, `in_flight` callers, 1 s before the fault, the fault for
/// --fault-seconds, 1 s after (both shorter when the fault is).
failover_figures georoute_failover(child_emulator& emu, const fault& f,
                                   const options& o, size_t in_flight);

/// The same through the peer (a fresh CosmosClient); `why` when there is
/// no peer.
failover_figures peer_failover(node_peer* peer, const std::string& why,
                               const fault& f, const options& o,
                               size_t in_flight);

/// `k` reads at once on a fresh CosmosClient for an uncached collection.
cold_figures peer_cold(node_peer* peer, const std::string& why, size_t k);

/// The change feed of the feed collection drained from the beginning by the
/// peer (a fresh CosmosClient, `getChangeFeedIterator`); `why` when there
/// is no peer.
/// The peer's `executeBulkOperations` of `count` creates into `coll`.
bulk_figures peer_bulk(node_peer* peer, const std::string& why,
                       const std::string& coll, size_t count);
feed_figures peer_feed(node_peer* peer, const std::string& why,
                       const options& o, int round);

} // namespace georoute::bench
