#pragma once

// Internal to the engine: the state behind `engine` and the helpers that
// engine.cpp (dispatch, auth, faults, throttling, topology),
// engine_resources.cpp (databases, collections, pkranges, splits),
// engine_documents.cpp (documents, replication, sessions) and
// engine_query.cpp (queries, plans, feeds, paging), engine_feed.cpp (the
// change feed), engine_patch.cpp (item operations, PATCH), engine_batch.cpp
// (transactional batches) and engine_bulk.cpp (bulk requests) share. Not
// installed.
//
// Replication model. Every write appends a version to its document (body or
// tombstone, origin region, `visible_at` = commit time + the lag in force at
// commit, plus the extra lag each region had then: engine::set_region_lag),
// an entry to its range's write log (global LSN, origin, local LSN, when each
// region sees it) and an entry to its collection's change log (change LSN,
// the same visibility). A region sees a version or a log entry when it is the
// origin or its own visibility time has come. A region's progress on a range
// is the highest LSN below which it sees every entry (per origin for the
// local LSNs); its change-feed watermark in a collection is the highest
// change LSN below which it sees every change. Entries visible everywhere for
// `prune_margin` are folded away, and a document's old versions only once
// every region's watermark has passed the version that replaced them, so
// `now` may not go back further than that.

#include "georoute/actors/policy/epk.hpp"
#include "georoute/actors/policy/model.hpp"
#include "georoute/actors/policy/session_token.hpp"
#include "georoute/transport/auth.hpp"
#include "tests/emulator/engine.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

namespace georoute::emulator::sql {
struct query; // tests/emulator/sql.hpp
} // namespace georoute::emulator::sql

namespace georoute::emulator::detail {

using json = nlohmann::json;
using time_point = std::chrono::system_clock::time_point;

/// How long a fully replicated write stays in the logs before it is folded.
constexpr std::chrono::seconds prune_margin{10};

/// Page size when the client sends no `x-ms-max-item-count` or -1.
constexpr int64_t default_page_size = 100;

/// Extra replication delay per region index (engine::set_region_lag), as it
/// was when a write committed. Shared by every write of that period; null
/// when no region had any.
using region_lags =
    std::shared_ptr<const std::vector<std::chrono::milliseconds>>;

/// Where a write committed and when each region sees it: the origin at once,
/// every other region at `visible_at` plus its extra lag at commit.
struct replicated {
  size_t origin = 0;     ///< region index of the write
  time_point visible_at; ///< when a region without extra lag sees it
  region_lags extra;     ///< per region index; null = none

  /// When `region` (not the origin) sees the write.
  time_point seen_at(size_t region) const {
    if (extra && region < extra->size()) return visible_at + (*extra)[region];
    return visible_at;
  }
  bool seen_by(size_t region, time_point now) const {
    return region == origin || seen_at(region) <= now;
  }
  /// When the last region sees it.
  time_point everywhere_at() const {
    auto t = visible_at;
    if (extra)
      for (auto lag : *extra)
        t = std::max(t, visible_at + lag);
    return t;
  }
};

/// One version of a document.
struct doc_version : replicated {
  json body;            ///< the stored document, system properties included
  bool deleted = false; ///< a tombstone
  std::string etag;     ///< quoted
  int64_t lsn = 0;      ///< its range's global LSN (session tokens)
  /// Its place in the collection's change sequence (the change feed's `_lsn`
  /// and etags); one sequence per collection, so it means the same across
  /// splits, merges and regions.
  int64_t change_lsn = 0;
  time_point committed_at; ///< for If-Modified-Since
};

/// One document (one id in one logical partition) and its history.
struct document {
  std::string id;
  std::vector<pk_component> pk;
  std::string epk;
  std::string rid;
  uint64_t seq = 0; ///< creation order, the order of feeds
  std::vector<doc_version> versions;
  /// Committed writes, ever (each op of a batch or bulk request counts).
  uint64_t writes = 0;
};

/// A document's key in its collection: (hashing encoding of the partition
/// key, id).
using doc_key = std::pair<std::string, std::string>;

/// One write in a range's log.
struct write_entry : replicated {
  int64_t lsn = 0;
  int64_t local_lsn = 0;
  /// The latest `everywhere_at` of this entry and every one before it in
  /// its range's log (`note_everywhere`): from this time on, every region
  /// has seen them all, so a region's progress starts looking after them.
  time_point all_seen_by;
};

/// Sets `all_seen_by` along `log` from entry `from` on (after an append,
/// the last entry; after a merge, all of them).
inline void note_everywhere(std::deque<write_entry>& log, size_t from) {
  for (size_t i = from; i < log.size(); ++i) {
    auto t = log[i].everywhere_at();
    log[i].all_seen_by = i == 0 ? t : std::max(t, log[i - 1].all_seen_by);
  }
}

/// One write in a collection's change log.
struct change_entry : replicated {
  int64_t change_lsn = 0;
};

/// One partition-key range, current or gone.
struct pk_range {
  partition_key_range info;
  bool gone = false;
  uint64_t created_etag = 1;      ///< pkranges etag at which it appeared
  int64_t lsn = 0;                ///< global LSN of the last write
  std::vector<int64_t> local_lsn; ///< per region index
  std::deque<write_entry> log;    ///< writes not yet folded
  /// Per-partition failover: the region its writes were moved to, "" = none
  /// (engine::move_partition_write_region). Children inherit it on a split;
  /// a merged range keeps it when both parents had the same.
  std::string write_region;
};

/// A collection and its documents.
struct collection {
  std::string id;
  std::string rid;
  std::string db_id;
  std::string db_rid;
  std::string etag;
  int64_t ts = 0;
  partition_key_definition pk;
  uint64_t pk_etag = 1; ///< advanced on every split and merge
  long long next_range_id = 0;
  std::vector<pk_range> ranges; ///< all ranges ever, gone ones included
  std::map<doc_key, document> docs;
  std::map<std::string, std::pair<std::string, std::string>> doc_by_rid;
  uint64_t next_doc_seq = 1;
  /// The last change LSN handed out: every committed write takes the next.
  int64_t change_lsn = 0;
  /// Changes some region may not have seen yet (`prune_margin` included).
  std::deque<change_entry> changes;
  /// Every change up to this one is seen by every region (folded away).
  int64_t change_floor = 0;
  /// Change LSN -> the document whose version took it, for every version
  /// still kept (the change feed walks it from a position upwards). A
  /// multimap: the writes of a transactional batch share one LSN.
  std::multimap<int64_t, document*> by_change;

  std::string name_path() const { return "dbs/" + db_id + "/colls/" + id; }
};

/// A database.
struct database {
  std::string id;
  std::string rid;
  std::string etag;
  int64_t ts = 0;
  std::map<std::string, collection> colls;
};

/// One region of the account.
struct region_info {
  std::string name;
  std::string endpoint;
  bool removed = false;
  double ru_per_second = 0;
  double tokens = 0;
  time_point last_refill{};
  bool bucket_started = false;
};

/// One range a document request is for (see `fault_rule::range_id`).
struct touched_range {
  std::string id;
  bool gone = false; ///< named by a request after it split
};

/// One request on its way through the engine.
struct request_ctx {
  const http_request& req;
  std::string arrived; ///< the region it arrived at, "" = global endpoint
  std::string region;  ///< the region that serves it
  size_t region_index = 0;
  time_point now;
  std::vector<std::string> segs; ///< decoded path segments
  bool rid_based = false;
  std::string op; ///< account | read | write | query | query_plan | feed
  /// The kind of write: patch, batch, bulk; "" otherwise (fault rules and
  /// counters tell them apart by it).
  std::string kind;
  std::string type; ///< "", dbs, colls, docs, pkranges, ...
  double charge = 0;
  /// Document requests: the collection by name and the ranges the request
  /// is for (`resolve_ranges`); empty otherwise.
  std::string collection;
  std::vector<touched_range> ranges;
};

/// A response and the ranges its request was for (for the counters).
struct served {
  served(http_response r) : res(std::move(r)) {} // NOLINT: implicit on purpose
  served(http_response r, std::string coll, std::vector<touched_range> rs)
      : res(std::move(r)), collection(std::move(coll)), ranges(std::move(rs)) {}
  http_response res;
  std::string collection;
  std::vector<touched_range> ranges;
  std::string kind; ///< the request's kind for the counters; "" = unknown
};

/// What a matching fault rule asks for.
struct fault_hit {
  /// Serve the request, then mark the response (`cut`, `delay`); otherwise
  /// `answer` goes out instead (markers included).
  bool serve = false;
  http_response answer;
  bool cut = false;
  std::chrono::milliseconds delay{0};
};

/// An EPK interval [min, max).
struct epk_span {
  std::string min;
  std::string max;
};

/// A live document and the version of it that a region sees.
struct visible_doc {
  const document* doc = nullptr;
  const json* body = nullptr;
};

/// What a query or feed reads: some ranges, maybe one logical partition (or
/// a prefix of a hierarchical key), maybe an EPK sub-range of one range.
struct query_scope {
  std::vector<pk_range*> ranges; ///< in EPK order
  std::vector<pk_component> pk;  ///< empty = every partition
  std::string start_epk;
  std::string end_epk;
  std::string identity; ///< for continuation hashes
  bool cross_partition = false;
};

/// One item operation: a point write, or one operation of a batch or bulk
/// request (engine_patch.cpp runs them all).
enum class op_kind { create, upsert, read, replace, remove, patch };

struct item_op {
  op_kind kind = op_kind::create;
  /// read, replace, delete, patch: the target; create and upsert take the
  /// id of `body` (replace checks that they agree).
  std::string id;
  json body; ///< create, upsert, replace: the document; patch: the spec
  std::string if_match;
  std::string if_none_match;
};

/// What one item operation did.
struct op_result {
  int status = 200;
  int substatus = 0;
  std::string message; ///< a failure's reason
  std::string etag;
  /// A success's document (a write's new version, a read's): valid until
  /// the write set or the collection changes.
  const json* body = nullptr;
  double charge = 0; ///< before the size of the body
  int64_t retry_after_ms = -1;
  bool wrote = false; ///< staged a write
  bool failed() const { return status >= 400; }
};

/// A write staged and not yet committed.
struct staged_write {
  doc_key key;
  std::string id;
  std::vector<pk_component> pk;
  std::string epk;
  uint64_t seq = 0; ///< a new document's creation number
  std::string rid;
  json body;
  bool deleted = false;
  std::string etag;
  uint64_t ops = 0; ///< writes folded into this one
};

/// Writes staged in order: later operations see earlier ones, one entry per
/// document (its last state).
struct write_set {
  std::vector<staged_write> writes;
  std::map<doc_key, size_t> index;

  staged_write* find(const doc_key& key) {
    auto i = index.find(key);
    return i == index.end() ? nullptr : &writes[i->second];
  }
  bool empty() const { return writes.empty(); }
};

/// Limits of a batch or bulk request.
constexpr size_t max_batch_operations = 100;
constexpr size_t max_batch_body_bytes = size_t{2} * 1024 * 1024;

/// One operation of a batch or bulk body, as sent.
struct batch_op {
  std::string type; ///< operationType: Create, Upsert, Read, ...
  item_op op;
  /// `partitionKey`: a JSON string holding the key's array text.
  std::optional<std::string> pk_text;
};

/// The operations of a batch or bulk body, or the whole request's 400
/// (not a JSON array of operations, none or more than 100, an unknown
/// operationType, a field of the wrong type) or 413 (over 2 MB).
std::variant<std::vector<batch_op>, http_response>
parse_batch_ops(const std::string& body);

/// One element of a batch or bulk response: statusCode, requestCharge,
/// eTag, resourceBody (a success's document unless `minimal` and a write),
/// subStatusCode, retryAfterMilliseconds, message (a failure's reason).
/// `charge` gets the operation's charge (a write's grows with its size).
std::string op_result_text(const op_result& r, bool minimal, double& charge);

/// `[a,b,...]` of JSON texts.
std::string array_text(const std::vector<std::string>& items);

/// Whether the request's `Prefer` header asks for return=minimal.
bool prefers_minimal(const http_request& req);

/// A token bucket of a range_ops_budget, per (region, collection, range).
struct ops_bucket {
  double tokens = 0;
  time_point last{};
};

// -- helpers (engine_util.cpp) ------------------------------------------------

/// "BadRequest" for 400 and so on.
const char* status_code_name(int status);

/// `{"code":..,"message":..}` with x-ms-substatus when non-zero.
http_response error_response(int status, int substatus, std::string message,
                             std::string additional_error_info = {});

/// A 2xx response with a JSON body.
http_response json_response(int status, std::string body);

/// Parses a request body as JSON; a problem names what is wrong.
result<json> parse_body(const std::string& body);

/// Percent-decodes a path segment; std::nullopt on a malformed escape.

/// ASCII lower case.
std::string lower(std::string text);

/// True for "true"/"True"/"TRUE".
bool is_true(const std::string& text);

/// base64 with '/' written as '-' (the RID alphabet).
std::string rid_text(const std::vector<unsigned char>& bytes);

/// Seconds since the epoch.
int64_t unix_seconds(time_point t);

/// Decimal RU charge, e.g. "5.00".
std::string charge_text(double charge);

/// An EPK as a 128-bit number (first 32 hex digits, right-padded with 0).
unsigned __int128 epk_value(const std::string& epk);

/// The EPK text of a 128-bit number: 32 upper-case hex digits with trailing
/// "00" pairs trimmed.
std::string epk_text(unsigned __int128 value);

/// The boundaries that split [00, 40) into `n` equal ranges (n - 1 of them).
std::vector<std::string> initial_boundaries(size_t n);

/// `min <= epk < max` in the length-aware EPK order.
bool epk_in(const std::string& epk, const std::string& min,
            const std::string& max);

/// FNV-1a 64.
uint64_t fnv1a(const std::string& text);

/// Partition-key components from the document at `paths`; a problem when a
/// value is an object or an array.
result<std::vector<pk_component>>
pk_from_document(const json& doc, const std::vector<std::string>& paths);

/// The identity of a logical partition: the hashing encodings concatenated.
std::string pk_identity(const std::vector<pk_component>& pk);

/// JSON text of partition-key components (`["a",5]`), for messages.
std::string pk_text(const std::vector<pk_component>& pk);

// -- paging (engine_paging.cpp) -----------------------------------------------

/// 16 lower-case hex digits.
std::string hash_text(uint64_t h);

/// The requested page size (x-ms-max-item-count), or a 400.
std::variant<int64_t, http_response> page_size(const http_request& req);

/// What a continuation token says; all zero without a token.
struct resume_point {
  int64_t at = 0; ///< an offset ("o") or a document creation number ("d")
  /// Range-scoped "o" tokens: the span whose query result `at` counts in.
  std::optional<epk_span> scope;
  /// Range-scoped tokens: the span of the request that issued the token.
  std::optional<epk_span> from;
};

/// Reads the request's continuation token: its position under `key` ("o" or
/// "d") and, for a request that reads the EPK span `here` of one range, the
/// span that issued it (which must hold `here`) and, for "o", the span the
/// offset counts in. A 400 says what is wrong.
std::variant<resume_point, http_response>
read_token(const http_request& req, const std::string& hash, const char* key,
           const epk_span* here = nullptr);

/// The token `read_token` reads.
std::string make_token(const char* key, const resume_point& p,
                       const std::string& hash);

/// Answers one page of `rows`: {"_rid", <list_name>: [...], "_count"}, with
/// a continuation bound to `identity` (the query and its scope).
http_response page_of(const http_request& req, std::vector<json> rows,
                      const std::string& rid, const std::string& list_name,
                      const std::string& identity);

} // namespace georoute::emulator::detail

namespace georoute::emulator {

/// The engine's state. All members are guarded by `mutex`; every member
/// function below expects it to be held.
struct engine::state {
  using json = detail::json;
  using time_point = detail::time_point;
  using request_ctx = detail::request_ctx;

  explicit state(engine_options o);

  mutable std::mutex mutex;
  engine_options opts;
  std::optional<transport::master_key> key;
  std::string key_problem;
  std::vector<detail::region_info> regions;
  std::vector<std::string> write_order;
  std::map<std::string, detail::database> dbs;
  std::map<std::string, std::string> db_by_rid;
  std::map<std::string, std::pair<std::string, std::string>> coll_by_rid;
  std::map<uint64_t, fault_rule> faults;
  uint64_t next_fault_id = 1;
  /// Hang rules that have held a request (lifting one releases them).
  std::set<uint64_t> holding_rules;
  std::function<void(std::optional<uint64_t>)> lift_listener;
  status_counters counts;
  range_counters range_counts;
  kind_counters kind_counts;
  op_counters op_counts;
  std::map<uint64_t, bulk_op_fault> op_faults;
  std::map<uint64_t, range_ops_budget> budgets;
  /// (budget id, region index, collection, range id) -> its bucket.
  std::map<std::tuple<uint64_t, size_t, std::string, std::string>,
           detail::ops_bucket>
      buckets;
  std::map<std::string, uint64_t> user_agents; // requests per User-Agent
  std::mt19937_64 fault_rng{0x6765'6f72'6f75'7465};
  std::mt19937_64 id_rng{0x656d'756c'6174'6f72};
  uint64_t etag_seq = 0;
  /// (collection rid, range id): split after its next query page (see
  /// engine::split_after_next_query).
  std::vector<std::pair<std::string, std::string>> armed_splits;
  /// The extra lag of each region (engine::set_region_lag); null = none.
  detail::region_lags region_lag;

  // -- engine.cpp: dispatch, topology --------------------------------------

  detail::served serve(const std::string& region, const http_request& req,
                       time_point now);
  int region_index(const std::string& name) const;
  /// The region that takes writes on a single-write account (the first
  /// non-removed one of the write order).
  std::string writer() const;
  bool can_write(const std::string& region) const;
  database_account account() const;
  /// The account document of `GET /` (account() encoded, plus the PPAF
  /// property when set).
  std::string account_text() const;
  std::string new_guid();
  std::string new_etag();
  std::optional<http_response> check_auth(request_ctx& ctx);
  std::optional<detail::fault_hit> check_faults(request_ctx& ctx);
  std::optional<http_response> check_budget(request_ctx& ctx, double estimate);
  void spend(request_ctx& ctx);
  http_response dispatch(request_ctx& ctx);

  // -- engine_grey.cpp: range-scoped faults and counters ---------------------

  /// Fills ctx.collection and ctx.ranges for a document request.
  void resolve_ranges(request_ctx& ctx);
  /// Whether `rule`'s collection and range match the request.
  bool range_matches(const fault_rule& rule, const request_ctx& ctx) const;
  /// The checks of `add_checked_fault`.
  result<bool> check_rule(const fault_rule& rule);
  /// Counts one answered (or held) response.
  void count(const std::string& region, const detail::served& s, bool held);

  // -- engine_ppaf.cpp: per-partition automatic failover ----------------------

  /// The region that takes `range`'s writes now: its moved-to region when it
  /// has one in force, else the account writer. `range` may be null.
  std::string hub_of(const detail::pk_range* range) const;
  /// 403/3 when the write in `ctx` arrived at a region that is not the hub
  /// of its range (single-write accounts only).
  std::optional<http_response> check_write_region(request_ctx& ctx,
                                                  detail::collection& coll);
  /// 403/3 when a read, query or feed carrying the hub-region-only header
  /// arrived at a region that is not the hub of every range it is for.
  std::optional<http_response> check_hub_only(request_ctx& ctx,
                                              detail::collection& coll);
  /// The collection `dbs/{db}/colls/{coll}` by name; "db:"/"coll:" problems.
  result<detail::collection*> named_collection(const std::string& db,
                                               const std::string& coll);
  /// A current range of `coll`; a "range:" problem naming the current ones.
  result<detail::pk_range*> named_range(detail::collection& coll,
                                        const std::string& range_id);

  // -- engine_resources.cpp -------------------------------------------------

  detail::database* find_db(const std::string& seg, bool rid_based);
  detail::collection* find_coll(detail::database& db, const std::string& seg,
                                bool rid_based);
  http_response handle_dbs(request_ctx& ctx);
  http_response handle_colls(request_ctx& ctx, detail::database& db);
  http_response handle_pkranges(request_ctx& ctx, detail::collection& coll);
  std::string new_db_rid();
  std::string new_coll_rid(const std::string& db_rid);
  json db_json(const detail::database& db) const;
  collection_info coll_info(const detail::collection& coll) const;
  result<std::vector<std::string>> split(detail::collection& coll,
                                         const std::string& range_id);
  /// Merges two adjacent current ranges into a new one; returns its id.
  result<std::string> merge_pair(detail::collection& coll,
                                 const std::string& left,
                                 const std::string& right);

  // -- engine_documents.cpp -------------------------------------------------

  http_response handle_docs(request_ctx& ctx, detail::collection& coll);
  http_response read_doc(request_ctx& ctx, detail::collection& coll,
                         const std::string& id);
  http_response write_doc(request_ctx& ctx, detail::collection& coll,
                          const std::string& url_id);
  /// The current range holding `epk`.
  detail::pk_range* range_of(detail::collection& coll, const std::string& epk);
  std::vector<detail::pk_range*> current_ranges(detail::collection& coll);
  /// 410/1002 when the request names a range (partitionkeyrangeid header)
  /// that split away.
  std::optional<http_response> gone_range(const request_ctx& ctx,
                                          detail::collection& coll);
  detail::pk_range* range_by_id(detail::collection& coll,
                                const std::string& id);
  /// The version of `doc` that `region` sees at `now`, or nullptr.
  const detail::doc_version* view(const detail::document& doc, size_t region,
                                  time_point now) const;
  /// What `region` has applied of `range` at `now`.
  vector_session_token progress(const detail::pk_range& range, size_t region,
                                time_point now) const;
  /// The change-feed watermark of `region` in `coll` at `now`: the highest
  /// change LSN such that the region sees every change up to it.
  int64_t watermark(const detail::collection& coll, size_t region,
                    time_point now) const;
  /// `{range}:{token}` as the response header renders it.
  std::string session_entry(const detail::pk_range& range, size_t region,
                            time_point now) const;
  /// 400 for a malformed session header, 404/1002 when a range in `ranges`
  /// is behind the header's token for it; nullopt when the read may go on.
  std::optional<http_response>
  check_session(request_ctx& ctx, const std::vector<detail::pk_range*>& ranges);
  /// The partition key of a point operation (the header, required) and the
  /// range holding it, or the 400 (500 when no range holds it).
  std::variant<std::pair<std::vector<pk_component>, detail::pk_range*>,
               http_response>
  point_target(request_ctx& ctx, detail::collection& coll);
  /// The partition key of a point operation or query, or a 400.
  std::variant<std::vector<pk_component>, http_response>
  header_pk(request_ctx& ctx, const detail::collection& coll, bool required,
            bool allow_prefix);
  std::string epk_of(const detail::collection& coll,
                     const std::vector<pk_component>& pk) const;
  json doc_json(const detail::collection& coll, const std::string& id,
                const std::string& rid, json body, const std::string& etag,
                int64_t ts) const;
  /// The RID of the document with creation number `seq`.
  std::string doc_rid(const detail::collection& coll, uint64_t seq) const;
  /// Commits `ws` (documents of `range` only) as one write: one LSN of the
  /// range, one change LSN, one log entry each, a version per document; then
  /// folds what every region has seen. Nothing happens for an empty set.
  void commit(request_ctx& ctx, detail::collection& coll,
              detail::pk_range& range, detail::write_set& ws);

  // -- engine_patch.cpp: item operations, PATCH ------------------------------

  /// Runs `op` in the logical partition `key` against what `ws` staged,
  /// else what the region sees, and stages its write in `ws`. Failures
  /// stage nothing.
  detail::op_result run_op(request_ctx& ctx, detail::collection& coll,
                           detail::item_op op,
                           const std::vector<pk_component>& key,
                           detail::write_set& ws);
  /// The checks of a document body against the partition key `key`; a 400
  /// result when one fails.
  std::optional<detail::op_result>
  check_resource(const detail::collection& coll, const json& body,
                 const std::vector<pk_component>& key) const;
  /// PATCH .../docs/{id}.
  http_response patch_doc(request_ctx& ctx, detail::collection& coll,
                          const std::string& id);

  // -- engine_batch.cpp, engine_bulk.cpp --------------------------------------

  /// POST .../docs with x-ms-cosmos-is-batch-request: true.
  http_response batch_docs(request_ctx& ctx, detail::collection& coll);
  http_response transactional_batch(request_ctx& ctx, detail::collection& coll);
  http_response bulk(request_ctx& ctx, detail::collection& coll);
  /// The bulk-op fault for one operation, if one matches (its count taken).
  std::optional<detail::op_result> bulk_op_fault_for(const request_ctx& ctx,
                                                     const std::string& type,
                                                     const std::string& range);
  /// Takes a token of the ops budget of `range`; a 429 result when there is
  /// none (`turned_away` counts the ones before it in this request).
  std::optional<detail::op_result> take_op_token(const request_ctx& ctx,
                                                 const detail::collection& coll,
                                                 const std::string& range,
                                                 int64_t& turned_away);
  /// Gives back a token taken by take_op_token (an operation that did not
  /// run after all).
  void return_op_token(const request_ctx& ctx, const detail::collection& coll,
                       const std::string& range);
  /// Counts the operations of a batch or bulk request.
  void count_ops(const request_ctx& ctx, const std::string& collection,
                 const std::string& range, const std::vector<int>& statuses);
  void add_doc_headers(http_response& res,
                       const detail::collection& coll) const;
  /// A write's answer headers: the document headers, the range's session
  /// token, LSN and id.
  void add_write_headers(http_response& res, const request_ctx& ctx,
                         const detail::collection& coll,
                         const detail::pk_range& range) const;
  /// Runs the point write `op` (create, upsert, replace, delete, patch) in
  /// `range` and answers it: the error, or the document (204 for a delete)
  /// with its etag, session token and LSN.
  http_response point_write(request_ctx& ctx, detail::collection& coll,
                            detail::pk_range& range, detail::item_op op,
                            const std::vector<pk_component>& key);

  // -- engine_query.cpp ------------------------------------------------------

  http_response query_docs(request_ctx& ctx, detail::collection& coll);
  http_response query_plan(request_ctx& ctx, detail::collection& coll);
  http_response read_feed(request_ctx& ctx, detail::collection& coll);

  // -- engine_feed.cpp -------------------------------------------------------

  /// GET .../docs with A-IM: the change feed (latest-version mode).
  http_response change_feed(request_ctx& ctx, detail::collection& coll);
  /// The scope of a query or feed from its headers, or an error response.
  std::variant<detail::query_scope, http_response>
  scope_of(request_ctx& ctx, detail::collection& coll);
  /// The documents in `span` (and under the partition key or key prefix
  /// `pk`, unless empty) that the region sees, in creation order.
  std::vector<detail::visible_doc>
  visible_docs(const request_ctx& ctx, const detail::collection& coll,
               const detail::epk_span& span,
               const std::vector<pk_component>& pk) const;
  /// The documents of `s` the region sees, range by range, each range in
  /// creation order.
  /// With `seqs`, each row's document creation number goes there too.
  std::vector<json> gather(const request_ctx& ctx,
                           const detail::collection& coll,
                           const detail::query_scope& s,
                           std::vector<uint64_t>* seqs = nullptr) const;
  /// A query on one range that needs no client-side merging, paged by
  /// document position so that its continuation survives a split.
  http_response stream_range_query(request_ctx& ctx,
                                   const detail::collection& coll,
                                   const detail::query_scope& s,
                                   const std::string& text, const json& params,
                                   const sql::query& q);
  /// A query on one range that the client merges (ORDER BY, aggregates,
  /// DISTINCT, TOP, OFFSET), paged by offset into the result over the span
  /// the query started on, so that its continuation survives a split.
  http_response offset_range_query(request_ctx& ctx,
                                   const detail::collection& coll,
                                   const detail::query_scope& s,
                                   const std::string& text, const json& params,
                                   const sql::query& q);
  /// Splits `range` if engine::split_after_next_query armed it.
  void split_if_armed(detail::collection& coll, const detail::pk_range& range);
  void add_scope_headers(http_response& res, const request_ctx& ctx,
                         const detail::collection& coll,
                         const detail::query_scope& s) const;
  http_response query_list(request_ctx& ctx, const std::string& rid,
                           const std::string& list_name,
                           const std::vector<json>& items);
};

} // namespace georoute::emulator
