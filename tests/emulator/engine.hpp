#pragma once

// The emulator's engine: an in-memory multi-region Cosmos DB account that
// answers gateway-protocol requests. No Beast: the servers (server.cpp) parse
// HTTP into `http_request` and call `handle`. Thread-safe (one mutex): the
// region servers call it from their io threads.
//
// What it models (issue 3): the account and its region lists, databases,
// collections with hash partitioning v2 on one path, partition-key ranges with
// splits, merges and the incremental pkranges feed, documents with CRUD and
// etags, partial updates (PATCH), transactional batches and bulk requests
// (engine_patch.cpp, engine_batch.cpp, engine_bulk.cpp), the change feed in
// latest-version mode (engine_feed.cpp), the SQL
// subset (sql.hpp) per partition and per range, query plans, replication
// with a configurable lag (and extra lag per region) and vector session
// tokens, write-region order and
// multi-write, removed regions, a request-unit budget per region, master-key
// auth, injected status codes, hangs and delays (per region, operation, and
// partition-key range: the grey failures of issue 18), counters per region
// and per (region, collection, range), and per-partition automatic failover
// (issue 19: the account property and a write region per range).

#include "georoute/actors/policy/result.hpp"
#include "tests/emulator/http_types.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
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
  /// The account property `enablePerPartitionFailoverBehavior`: std::nullopt
  /// leaves it out of the account (the default), else true or false. See
  /// `engine::set_per_partition_failover`.
  std::optional<bool> per_partition_failover;
  /// A bulk response holds at most this many bytes of operation results;
  /// the operations past it answer 413/3402 unexecuted (the first operation
  /// always runs). See `engine::set_bulk_response_cap`.
  size_t bulk_response_cap_bytes = size_t{4} * 1024 * 1024;
};

/// A partition-key range whose writes the service moved to another region
/// (per-partition automatic failover; see
/// `engine::move_partition_write_region`).
struct partition_write_region {
  std::string collection; ///< "dbs/{db}/colls/{coll}"
  std::string range_id;
  std::string region; ///< the range's write region (its hub)

  friend bool operator==(const partition_write_region& x,
                         const partition_write_region& y) {
    return std::tie(x.collection, x.range_id, x.region) ==
           std::tie(y.collection, y.range_id, y.region);
  }
};

/// Internal between the engine and the servers: a response carrying this
/// header is cut by the server (the header itself is never sent). See
/// `fault_rule::truncate`.
constexpr const char* truncate_marker = "x-georoute-emulator-truncate";

/// Internal between the engine and the servers, like `truncate_marker`: a
/// response carrying this header (the id of the hang rule) is never sent;
/// the server holds the request, its connection open, until the rule is
/// lifted. Its status is 0.
constexpr const char* hang_marker = "x-georoute-emulator-hang";

/// Internal between the engine and the servers: the server waits this many
/// milliseconds before it writes the response (the header is never sent).
constexpr const char* delay_marker = "x-georoute-emulator-delay-ms";

/// What a matching `fault_rule` does with a request.
enum class fault_action {
  /// Answer `status`/`substatus` (or `body`) instead of serving; the
  /// default.
  status,
  /// Never answer: the server holds the request with its connection open
  /// until the rule is lifted (`remove_fault` of its id, `clear_faults`),
  /// then closes the connection. The request is not served.
  hang,
  /// Serve the request now and answer it `delay` later (a slow replica:
  /// a write is applied at once, its answer comes late).
  delay,
};

const char* to_string(fault_action x);
result<fault_action> parse_fault_action(const std::string& text);

/// An injected failure: requests matching every non-empty field answer
/// `status`/`substatus` instead of being served (or hang, or answer late:
/// see `action`).
///
/// Grey failures: `collection` and `range_id` scope a rule to one
/// partition-key range of one collection (with `region`: one range failing
/// in one region while the rest of the region serves). A document request
/// is for the range its partition key (x-ms-documentdb-partitionkey) falls
/// in, or the range it names (x-ms-documentdb-partitionkeyrangeid); a query
/// or feed with neither is for every range of the collection. Only current
/// ranges match: once the range splits, the rule matches nothing.
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
  /// "" = any, else one of: read, write, query, query_plan, feed, account,
  /// or one kind of write: patch (PATCH of a document), batch (a
  /// transactional batch), bulk (a non-atomic batch); `write` matches those
  /// three too.
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
  /// "" = any, else a collection by name, "dbs/{db}/colls/{coll}"; only
  /// document requests (reads, writes, queries, feeds) match.
  std::string collection;
  /// "" = any, else a partition-key range id of `collection`.
  std::string range_id;
  fault_action action = fault_action::status;
  /// With `status` or `delay`: the answer goes out this much later. Not
  /// with `hang`.
  std::chrono::milliseconds delay{0};
};

/// Where a document request was headed: the region it arrived at ("" = the
/// global endpoint), its collection by name and one range it was for.
struct range_key {
  std::string region;
  std::string collection; ///< "dbs/{db}/colls/{coll}"
  std::string range_id;

  friend bool operator<(const range_key& x, const range_key& y) {
    return std::tie(x.region, x.collection, x.range_id) <
           std::tie(y.region, y.collection, y.range_id);
  }
  friend bool operator==(const range_key& x, const range_key& y) {
    return std::tie(x.region, x.collection, x.range_id) ==
           std::tie(y.region, y.collection, y.range_id);
  }
};

/// What happened to the requests of one range in one region.
struct range_tally {
  std::map<int, uint64_t> by_status; ///< answered, by status
  uint64_t held = 0;                 ///< held by a hang rule (never answered)
};

/// Document requests that passed auth, per (region, collection, range). A
/// query or feed over several ranges counts once under each of them.
using range_counters = std::map<range_key, range_tally>;

/// Requests answered per region and status ("" is the global endpoint). A
/// request held by a hang rule is never answered, so not counted here (see
/// `range_tally::held`).
using status_counters = std::map<std::string, std::map<int, uint64_t>>;

/// Requests answered per region, kind and status. The kind is the finest
/// the engine tells apart: account, read, write, query, query_plan, feed,
/// or, for the writes that are one, patch, batch (transactional) and bulk.
using kind_counters =
    std::map<std::string, std::map<std::string, std::map<int, uint64_t>>>;

/// The operations inside batch and bulk requests, by their own status.
struct op_tally {
  std::map<int, uint64_t> batch; ///< ops of transactional batches
  std::map<int, uint64_t> bulk;  ///< ops of bulk requests
};

/// Per (region the request arrived at, collection, range): a batch under
/// the range of its partition key, a bulk request under the range it names.
using op_counters = std::map<range_key, op_tally>;

/// An injected failure of single operations inside bulk requests (the
/// non-atomic batches `x-ms-cosmos-batch-atomic: false`): each matching
/// operation answers `status`/`substatus` (with `retryAfterMilliseconds`
/// when `retry_after_ms` >= 0) in the response array, unexecuted, while the
/// others run. Checked after the operation's range (410/1002) and before the
/// ops budget. `engine::clear_faults` lifts these too.
struct bulk_op_fault {
  std::string region;     ///< "" = any; else the region the request arrived at
  std::string collection; ///< "" = any, else "dbs/{db}/colls/{coll}"
  std::string range_id;   ///< "" = any, else the range the request names
  /// "" = any, else Create, Upsert, Read, Replace, Delete or Patch.
  std::string operation_type;
  int status = 429;
  int substatus = 3200;
  int64_t retry_after_ms = 100; ///< -1 = no retryAfterMilliseconds
  int64_t count = -1;           ///< operations left to fail; -1 = unlimited
};

/// A budget of bulk operations per second for each partition-key range
/// (what a bulk client's congestion control is measured against). Every
/// matching range gets its own token bucket: `ops_per_second` tokens a
/// second, holding at most `burst`. Each bulk operation addressed to the
/// range takes one token when it runs; an operation that finds none answers
/// 429/3200 with `retryAfterMilliseconds`: with `spread` (the default) the
/// time the bucket needs to earn a token for it, counting the operations
/// turned away before it in the same request (the k-th waits k tokens, so a
/// request's retries come back spread out); without, the time to the next
/// token, the same for every operation of the request. The first matching
/// budget applies (by id). Budgets are limits, like the request-unit
/// throughput: `clear_faults` and the admin reset leave them.
struct range_ops_budget {
  std::string region;        ///< "" = every region; else the serving one
  std::string collection;    ///< "" = every collection
  std::string range_id;      ///< "" = every range (each its own bucket)
  double ops_per_second = 0; ///< > 0
  double burst = 0;          ///< bucket size in ops; 0 = ops_per_second, >= 1
  bool spread = true;        ///< see above
};

/// One document as the write region holds it: the engine's record of how
/// often it was written (to verify "applied exactly once").
struct document_record {
  std::string id;
  std::string pk;      ///< the partition key as JSON, ["a"]
  uint64_t writes = 0; ///< committed writes, every batch or bulk op counted
  bool live = false;   ///< the latest version is not a delete
  std::string etag;    ///< of the latest version
};

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

  /// Merges two adjacent current ranges of `dbs/{db}/colls/{coll}` (either
  /// order) into one new range: a new id, both as its parents, both gone
  /// (410/1002 when named), listed by the pkranges feed as a split's
  /// children are. Its session LSNs start at the larger of its parents'.
  /// Returns the new id. Errors start with the field: "db: ...",
  /// "coll: ...", "ranges: ..." (unknown, gone, the same twice, not
  /// adjacent).
  result<std::string> merge_ranges(const std::string& db,
                                   const std::string& coll,
                                   const std::string& left_id,
                                   const std::string& right_id);
  /// Extra delay, on top of the replication lag, before `region` sees the
  /// writes of the other regions (0 = none). It applies to the writes
  /// committed from now on, as the replication lag does: document reads,
  /// queries, the change feed and session tokens all follow it. Unknown
  /// region, or a negative lag: an error naming it.
  result<bool> set_region_lag(const std::string& region,
                              std::chrono::milliseconds lag);
  /// The extra lag of every region that has one.
  std::map<std::string, std::chrono::milliseconds> region_lags() const;

  /// Arms a split of range `range_id` of `dbs/{db}/colls/{coll}`: the next
  /// query page the range serves (a query addressed to it by range id) is
  /// answered, and then the range splits, as if the split landed while that
  /// page was on its way back. The client's next request to the range finds
  /// it gone. Errors: an unknown collection, a range that is not live.
  result<bool> split_after_next_query(const std::string& db,
                                      const std::string& coll,
                                      const std::string& range_id);

  // -- per-partition automatic failover (PPAF) -------------------------------
  //
  // On a single-write account the service may move the write primary of one
  // partition-key range to another region without an account failover. While
  // moved, a document write (create, upsert, replace, delete, patch, a
  // transactional batch of that key, a bulk request naming the range; the
  // emulator has no stored procedures) whose partition key falls in the
  // range is accepted only by that region; every other region, the
  // account write region and the global endpoint included, answers 403/3
  // (WriteForbidden) as a non-write region always does. Writes to the other
  // ranges go to the account write region as usual. A write accepted by the
  // moved-to region replicates like any other (origin = that region, seen by
  // the others after the replication lag).
  //
  // The hub of a range is its write region: the moved-to region, else the
  // account write region. A document read, query or feed carrying
  // `x-ms-cosmos-hub-region-processing-only: True` is answered only by the
  // hub of every (current) range it is for; elsewhere 403/3. A request for
  // no resolvable range has the account write region as its hub. Multi-write
  // accounts ignore the header (every region takes writes).
  //
  // Choices: the account property does not gate a move (the service moves
  // ranges; the property only tells clients to follow per-range overrides).
  // A split passes the parent's write region to both children. A move is
  // topology: `emulator::reset_faults` and `set_write_regions` (an account
  // failover) leave it. While the moved-to region is removed
  // (`remove_region`) or the account is multi-write (`set_multi_write`), the
  // move is kept but not in force: the range writes where the account does.

  /// Sets (true, false) or omits (std::nullopt) the account property
  /// `enablePerPartitionFailoverBehavior`; clients see it on their next
  /// account read.
  void set_per_partition_failover(std::optional<bool> enabled);
  std::optional<bool> per_partition_failover() const;
  /// Moves the writes of range `range_id` of `dbs/{db}/colls/{coll}` to
  /// `region` (again: the latest move wins; to the account write region:
  /// pinned there, even across an account failover). Errors, each starting
  /// with the field's name: "account: ..." on a multi-write account, "db:",
  /// "coll:", "range:" (unknown, or split and gone), "region:" (unknown or
  /// removed).
  result<bool> move_partition_write_region(const std::string& db,
                                           const std::string& coll,
                                           const std::string& range_id,
                                           const std::string& region);
  /// Moves them back: the range writes in the account write region again and
  /// the region that held it answers 403/3. True when a move was lifted,
  /// false when the range had none. Errors as above ("db:", "coll:",
  /// "range:").
  result<bool> clear_partition_write_region(const std::string& db,
                                            const std::string& coll,
                                            const std::string& range_id);
  /// Every move of a current range, by collection and range id.
  std::vector<partition_write_region> partition_write_regions() const;
  /// The region that takes the range's writes now (its hub); multi-write:
  /// "" (every region). Errors as `clear_partition_write_region`.
  result<std::string> write_region_of(const std::string& db,
                                      const std::string& coll,
                                      const std::string& range_id) const;

  // -- fault injection --------------------------------------------------------

  /// Adds `rule` as it is (a rule naming an unknown region or range simply
  /// never matches). Returns its id.
  uint64_t add_fault(fault_rule rule);
  /// Checks `rule` first: a named region, collection and range must exist
  /// (the range current), the numbers in range, and the action's fields
  /// consistent. The problem starts with the field's name ("range: ...").
  /// The admin API adds faults through this.
  result<uint64_t> add_checked_fault(fault_rule rule);
  /// Lifts rule `id`. Requests it holds (a hang) are released: their
  /// connections close, also after the rule used up its `count`.
  void remove_fault(uint64_t id);
  /// Lifts every rule and releases every request held by one.
  void clear_faults();
  /// Adds a failure of single bulk operations (see bulk_op_fault), checked
  /// like `add_checked_fault`: the problem starts with the field's name.
  result<uint64_t> add_bulk_op_fault(bulk_op_fault rule);
  /// Lifts one (`clear_faults` lifts them all).
  void remove_bulk_op_fault(uint64_t id);
  /// Every bulk-op fault in force, by id.
  std::map<uint64_t, bulk_op_fault> bulk_op_faults() const;

  /// Adds a per-range budget of bulk operations (see range_ops_budget);
  /// the problem starts with the field's name.
  result<uint64_t> add_ops_budget(range_ops_budget budget);
  /// Lifts one budget; false when there was none with this id.
  bool remove_ops_budget(uint64_t id);
  /// Lifts every budget.
  void clear_ops_budgets();
  /// Every budget in force, by id.
  std::map<uint64_t, range_ops_budget> ops_budgets() const;

  /// See `engine_options::bulk_response_cap_bytes`; at least 1.
  void set_bulk_response_cap(size_t bytes);

  /// Called after a lift that may release held requests, outside the
  /// engine's lock: with the rule's id (`remove_fault`) or std::nullopt for
  /// every rule (`clear_faults`). The emulator's servers set it at start.
  void on_hang_lifted(std::function<void(std::optional<uint64_t>)> listener);

  // -- observation ------------------------------------------------------------

  status_counters counters() const;
  /// Document requests per (region, collection, range); see range_counters.
  range_counters counters_by_range() const;
  /// Requests per region, kind (patch, batch and bulk among them) and status.
  kind_counters counters_by_kind() const;
  /// The operations of batch and bulk requests by their own status.
  op_counters counters_by_op() const;
  /// Every document ever written to `dbs/{db}/colls/{coll}` (deleted ones
  /// too), in creation order, with its count of committed writes. Errors
  /// start with the field: "db: ...", "coll: ...".
  result<std::vector<document_record>> documents(const std::string& db,
                                                 const std::string& coll) const;
  /// Requests per `User-Agent` value ("" for requests without one).
  std::map<std::string, uint64_t> user_agents() const;
  /// Clears every kind of counter and the User-Agent tally.
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
