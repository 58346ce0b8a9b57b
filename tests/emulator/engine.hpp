#pragma once

// The emulator's engine: an in-memory multi-region Cosmos DB account that
// answers gateway-protocol requests. No Beast: the servers (server.cpp) parse
// HTTP into `http_request` and call `handle`. Thread-safe (one mutex): the
// region servers call it from their io threads.
//
// What it models (issue 3): the account and its region lists, databases,
// collections with hash partitioning v2 on one path, partition-key ranges with
// splits and the incremental pkranges feed, documents with CRUD and etags, the
// SQL subset (sql.hpp) per partition and per range, query plans, replication
// with a configurable lag and vector session tokens, write-region order and
// multi-write, removed regions, a request-unit budget per region, master-key
// auth, injected status codes, and per-region counters.

#include "actors/policy/result.hpp"
#include "tests/emulator/http_types.hpp"

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace georoute::emulator {

/// The well-known key of the emulator (the public Cosmos emulator key).
constexpr const char* default_master_key =
    "C2y6yDjf5/"
    "R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/"
    "Jw==";

/// Options of an engine.
struct engine_options {
  /// Region names, in account order. Every region is readable.
  std::vector<std::string> regions{"West US", "East US", "North Europe"};
  /// Multi-write: every region accepts writes. Single-write: only the first
  /// of the write order.
  bool multi_write = false;
  /// Never "localhost": the Node.js SDK ignores the region lists then.
  std::string account_id = "georoute-emulator";
  /// Base64 master key.
  std::string master_key = default_master_key;
  /// Partition-key ranges of a new collection.
  size_t initial_ranges = 2;
  /// Delay before a write reaches the other regions.
  std::chrono::milliseconds replication_lag{0};
  /// Request units per second per region; 0 = unlimited.
  double ru_per_second = 0;
  /// Verify master-key signatures (tests of the engine alone may turn it off;
  /// the servers always verify).
  bool verify_auth = true;
  /// Added to the current time when the engine checks a request's x-ms-date
  /// (the server's clock is this far ahead; negative: behind). Past the
  /// allowed skew of 15 minutes every signed request gets 403.
  std::chrono::milliseconds clock_offset{0};
};

/// Internal between the engine and the servers: a response carrying this
/// header is cut by the server (the header itself is never sent). See
/// `fault_rule::truncate`.
constexpr const char* truncate_marker = "x-georoute-emulator-truncate";

/// An injected failure: requests matching every non-empty field answer
/// `status`/`substatus` instead of being served.
///
/// Bad responses (the "bad input" tests): with `body`, the answer is `status`
/// with exactly that body (content-type application/json) and `headers`,
/// instead of the gateway error body. With `truncate`, the server announces
/// the full Content-Length, writes only the first half of the body (half of
/// the header block when the body is empty), then closes the connection;
/// without `body` the request IS served first (a write is applied) and its
/// real response is cut, as when the connection drops on the way back.
struct fault_rule {
  std::string region; ///< "" = any region (and the global endpoint)
  std::string method; ///< "" = any, else "GET", "POST", ...
  std::string
      resource_type; ///< "" = any, else "", "dbs", "colls", "docs", "pkranges"
  /// "" = any, else one of: read, write, query, query_plan, feed, account.
  std::string operation;
  std::string path_contains; ///< "" = any
  int status = 503;
  int substatus = 0;
  int64_t retry_after_ms = -1; ///< adds x-ms-retry-after-ms when >= 0
  int64_t count = -1;          ///< remaining matches; -1 = unlimited
  double probability = 1.0;    ///< chance that a matching request fails
  /// When set: the response body, verbatim, instead of the error body.
  std::optional<std::string> body;
  /// Extra headers of an injected response (an etag for a pkranges page).
  std::vector<std::pair<std::string, std::string>> headers;
  bool truncate = false; ///< cut the response short (see above)
};

/// Requests served per region and status ("" is the global endpoint).
using status_counters = std::map<std::string, std::map<int, uint64_t>>;

/// See the file comment.
class engine {
public:
  using clock = std::chrono::system_clock;

  explicit engine(engine_options opts);
  ~engine();

  engine(const engine&) = delete;
  engine& operator=(const engine&) = delete;

  /// The base URL of each region ("http://127.0.0.1:4301/"), as published in
  /// the account's location lists. Set by the servers once they listen.
  void set_endpoints(std::map<std::string, std::string> region_endpoints);

  /// Handles one request that arrived at `region` ("" = global endpoint).
  http_response handle(const std::string& region, const http_request& req,
                       clock::time_point now = clock::now());

  // -- topology control (reversible) ----------------------------------------

  /// New write-region order. Single-write: the first is the write region and
  /// the old one answers writes with 403/3. Unknown names are an error.
  result<bool> set_write_regions(const std::vector<std::string>& order);
  void set_multi_write(bool on);
  /// A removed region answers every request with 403/1008 and disappears
  /// from the account's lists; `restore_region` brings it back.
  result<bool> remove_region(const std::string& region);
  result<bool> restore_region(const std::string& region);
  void set_replication_lag(std::chrono::milliseconds lag);
  /// See `engine_options::clock_offset`.
  void set_clock_offset(std::chrono::milliseconds offset);
  /// Request units per second for `region` ("" = every region); 0 = off.
  void set_throughput(const std::string& region, double ru_per_second);
  /// Splits a range of collection `dbs/{db}/colls/{coll}` into two children;
  /// returns their ids.
  result<std::vector<std::string>> split_range(const std::string& db,
                                               const std::string& coll,
                                               const std::string& range_id);

  /// Arms a split of range `range_id` of `dbs/{db}/colls/{coll}`: the next
  /// query page the range serves (a query addressed to it by range id) is
  /// answered, and then the range splits, as if the split landed while that
  /// page was on its way back. The client's next request to the range finds
  /// it gone. Errors: an unknown collection, a range that is not live.
  result<bool> split_after_next_query(const std::string& db,
                                      const std::string& coll,
                                      const std::string& range_id);

  // -- fault injection --------------------------------------------------------

  uint64_t add_fault(fault_rule rule);
  void remove_fault(uint64_t id);
  void clear_faults();

  // -- observation ------------------------------------------------------------

  status_counters counters() const;
  void reset_counters();
  /// The account document as served by `GET /`.
  std::string account_json() const;
  /// Current write regions in order (single-write: the first is the writer).
  std::vector<std::string> write_regions() const;
  /// A copy of the options as they are now (taken under the lock: the
  /// control calls change multi-write and the replication lag).
  engine_options options() const;

private:
  struct state;
  std::unique_ptr<state> state_;
};

} // namespace georoute::emulator
