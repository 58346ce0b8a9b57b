#pragma once

// The client side of a cross-partition query: merges the pages that every
// partition-key range returns for the plan's rewritten query into the
// query's result, the way the SDK pipelines do (JS
// `pipelinedQueryExecutionContext`: ORDER BY merge or range order, then the
// aggregate, DISTINCT, OFFSET/LIMIT and TOP stages). Pure: no I/O, no clock.
//
// What the ranges send (tests/emulator/sql_plan.cpp builds the rewrites,
// sql_eval.cpp evaluates them):
// - ORDER BY: rows {"_rid": r, "orderByItems": [{"item": v}, ...], "payload":
//   p}, sorted per range; an undefined sort value is an item without "item".
//   The result is `payload`.
// - VALUE aggregates: one row per range, an array of one object:
//   COUNT [{"item": n}], SUM [{"item": s}] (0 over no rows, `{}` when a value
//   is not a number), AVG [{"item": {"sum": s, "count": n}}] ("sum" missing
//   when a value is not a number), MIN/MAX [{"item": m, "item2": {"min": m,
//   "count": n}}] ("min"/"max" missing over no rows or on arrays/objects).
// - anything else: the rows themselves, emitted in range order.
//
// The order of values (ORDER BY, MIN, MAX) is Cosmos DB's: undefined < null <
// false < true < numbers (numerically) < strings (by UTF-8 bytes) < arrays <
// objects; two arrays or two objects tie. Ties between ranges go to the range
// that comes first.
//
// Pipeline order after the merge: aggregate, DISTINCT (on the canonical JSON
// of the result; "Ordered" drops repeats of the previous result, "Unordered"
// keeps the set of their hashes), then OFFSET/LIMIT, then TOP: the order the
// emulator applies to one range (sql_eval.cpp), so that a merge equals a
// single-range run.
//
// A split during the query: `replace_range` puts the children in the
// parent's place. The rows already received from the parent stay and come
// first; the children continue from the parent's continuation.
//
// Resuming in another process (`continuation()`, `encode_continuation`,
// `decode_continuation`, `query_merger::resume`; the token's format is in
// query_continuation.hpp): every range restarts at the first page that still
// holds rows not consumed (or after its last page), and drops again what it
// already delivered: for ORDER BY every row that sorts before the last
// consumed sort key, and the rows with that very key whose hashes the token
// lists; otherwise the rows whose hashes the token lists. The hashes are
// those of the consumed rows of the restart page(s) only, so the token stays
// about one page per range. Exact as long as a range sends the same rows for
// the same continuation. One limit: without ORDER BY, when a range splits
// before its restart page is read again, two identical rows in different
// children cannot be told apart (rows carry no key there), so one identical
// row may be dropped once. Rows are named by a 64-bit FNV-1a hash; a
// collision matters only between rows of one range's restart page.
//
// Unordered DISTINCT keeps the `row_hash` of every result it passed, and the
// token carries that set (as the .NET SDK's does), so a resumed query drops
// every value already returned, whatever its ranges send again (its ranges
// carry no skip lists, then: a row sent again repeats a value of the set, and
// the split limit above does not apply; counted as `distinct_dropped`). Two
// different results with the same hash make DISTINCT drop the later one:
// if FNV-1a spreads the values like a random function the odds are about
// n^2 / 2^65 for n distinct results (3e-14 for 1,024, 3e-8 for a million).
// FNV-1a is no cryptographic hash: values built to collide on purpose can
// be dropped. The token carries at most `max_distinct_carried` (1,024)
// hashes, about 9.3 KiB of it; past that `continuation()` is a problem that
// says to sort by the DISTINCT value (ORDER BY makes DISTINCT ordered: its
// token carries the last value only) or to read the result in one page.
//
// Memory: the buffered pages, the hashes of one page per range, and for
// unordered DISTINCT 8 bytes per distinct result so far (`hash_set64`).
//
// Deviations from the JS SDK, each so that a merge equals the single-range
// answer of the emulator (sql_eval.cpp): an AVG partial without "sum" or a
// MIN/MAX partial that counted values but has no "min"/"max" makes the
// result undefined (the SDK skips that range); arrays and objects are ranked
// after strings (the SDK throws); OFFSET/LIMIT is applied before TOP (the
// SDK applies TOP first; the two differ only for a query with both).

#include "georoute/actors/policy/model.hpp"
#include "georoute/actors/policy/query_continuation.hpp"
#include "georoute/actors/policy/result.hpp"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace georoute {

/// What the merger did, for the caller's counters.
struct query_merge_counters {
  uint64_t rows_received = 0;
  uint64_t rows_emitted = 0;
  uint64_t resume_dropped = 0;   ///< rows a resumed range sent again
  uint64_t distinct_dropped = 0; ///< results DISTINCT removed
  uint64_t offset_skipped = 0;   ///< results OFFSET skipped
  uint64_t splits = 0;           ///< replace_range calls
};

/// Cosmos DB's order of two values; nullptr is undefined. <0, 0 or >0.
int compare_query_values(const nlohmann::json* a, const nlohmann::json* b);

/// The JSON text that equal values share: object keys sorted, integral
/// numbers below 2^63 written as integers (1.0 and 1 are the same value),
/// -0 as 0, invalid UTF-8 replaced.
std::string canonical_json(const nlohmann::json& value);

/// FNV-1a 64 of `canonical_json(row)`: how a continuation names a row.
uint64_t row_hash(const nlohmann::json& row);

/// A hash of the queryInfo fields that shape the merge; binds a
/// continuation to its query.
uint64_t query_fingerprint(const query_info& info);

/// A set of 64-bit hashes at 8 bytes each: sorted runs whose sizes fall
/// from the first to the last, merged like the carries of a binary counter
/// (a new hash is a run of one; while the last run is not longer than the
/// new one they merge). A lookup binary-searches each of at most
/// log2(n) + 1 runs; an insert costs O(log n) amortized; a merge briefly
/// holds the merged runs twice.
class hash_set64 {
public:
  /// Adds `hash`; false if it was already there.
  bool insert(uint64_t hash);
  bool contains(uint64_t hash) const;
  size_t size() const { return size_; }
  /// Every hash, ascending.
  std::vector<uint64_t> sorted() const;
  /// A set of `hashes`, which must ascend without repeats.
  static hash_set64 from_sorted(std::vector<uint64_t> hashes);

private:
  std::vector<std::vector<uint64_t>> runs_; ///< each ascending
  size_t size_ = 0;
};

/// Merges the per-range pages of one cross-partition query. Not thread-safe
/// (one actor owns it).
///
/// Use: while !finished(), fetch a page for each range of ranges_needed()
/// with continuation_of(i), hand it to add_page, then drain(). The caller may
/// also fetch ranges ahead of need.
class query_merger {
public:
  /// A merger for a fresh query. Problems: no ranges, an unknown orderBy
  /// direction, distinct type or aggregate, more than one aggregate,
  /// aggregates without VALUE or together with ORDER BY.
  static result<query_merger> create(query_info info,
                                     std::vector<query_range> ranges);

  /// A merger that continues where `from` stopped. Also a problem: a token
  /// of another query, sort keys that do not match the plan, a set of
  /// DISTINCT hashes for a query without unordered DISTINCT, or one that
  /// does not ascend or does not hold as many values as the position.
  static result<query_merger> resume(query_info info,
                                     const query_continuation& from);

  /// Takes one page of `range`. `continuation` is the response's
  /// x-ms-continuation; nullopt or "" ends the range. Problems (the merger
  /// is left unchanged): a bad index, a range that already ended, rows of
  /// the wrong shape.
  std::optional<problem> add_page(size_t range,
                                  std::vector<nlohmann::json> rows,
                                  std::optional<std::string> continuation);

  /// The ranges whose next page blocks progress: for ORDER BY every open
  /// range without a buffered row, for aggregates every open range, else
  /// the first range in order that is open and empty. Empty when finished
  /// or when drain() can make progress.
  std::vector<size_t> ranges_needed() const;

  /// Up to `max_items` results, in order.
  std::vector<nlohmann::json> drain(size_t max_items);

  /// True once every result has been drained (or TOP/LIMIT is reached).
  bool finished() const;

  /// Replaces range `index` (split) by `children`, in EPK order. They take
  /// its place; the rows it had buffered stay in front; each child continues
  /// from the parent's continuation. A problem for a bad index or no child.
  std::optional<problem> replace_range(size_t index,
                                       std::vector<query_range> children);

  size_t range_count() const { return streams_.size(); }
  const query_range& range(size_t index) const { return streams_[index].range; }
  /// The x-ms-continuation to send on range `index`'s next request.
  const std::optional<std::string>& continuation_of(size_t index) const {
    return streams_[index].next_token;
  }
  bool range_done(size_t index) const { return streams_[index].done; }

  /// The state to resume from elsewhere. A problem for an unordered
  /// DISTINCT query that returned more than `max_distinct_carried` values:
  /// it names the limit and what to do instead.
  result<query_continuation> continuation() const;

  const query_merge_counters& counters() const { return counters_; }

private:
  enum class mode { parallel, order_by, aggregate };
  enum class aggregate_kind { none, count, sum, average, min, max };

  struct row {
    nlohmann::json value;
    uint64_t hash = 0;
  };

  struct page {
    uint64_t serial = 0; ///< global fetch order
    uint64_t owner = 0;  ///< key of the stream that fetched it
    std::optional<std::string> request_token;
    std::vector<row> rows;
    size_t next = 0; ///< first row not consumed
  };

  struct stream {
    query_range range;
    std::vector<uint64_t> lineage; ///< own key last, ancestors before it
    std::deque<page> pages;
    std::optional<std::string> next_token;
    bool done = false;
    bool filtering = false; ///< resumed: dropping what it sent before
    std::unordered_map<uint64_t, size_t> skip;
  };

  /// A consumed row that a restart may deliver again.
  struct consumed {
    uint64_t hash;
    uint64_t serial;
    uint64_t owner;
  };

  query_merger(query_info info, mode m, aggregate_kind agg);

  static result<query_merger> make(query_info info);
  std::optional<problem> check_rows(size_t range,
                                    const std::vector<nlohmann::json>& rows,
                                    aggregate_state* agg) const;
  std::optional<problem> fold(const nlohmann::json& row,
                              aggregate_state& agg) const;
  std::optional<nlohmann::json> aggregate_result() const;
  bool has_head(const stream& s) const;
  int compare_keys(const nlohmann::json& a, const nlohmann::json& b) const;
  bool drop_on_resume(stream& s, const row& r);
  std::optional<row> next_row();
  void note_consumed(const row& r, const page& p);
  /// `hash`: the result's `row_hash` when the caller has it already.
  void offer(nlohmann::json result, std::optional<uint64_t> hash,
             std::vector<nlohmann::json>& out);
  int64_t window_end() const;
  bool window_done() const { return position_ >= window_end(); }
  const page* anchor(const stream& s) const;
  bool in_lineage(const stream& s, uint64_t owner) const;
  void prune();

  query_info info_;
  mode mode_;
  aggregate_kind agg_kind_;
  bool ordered_distinct_ = false;
  bool unordered_distinct_ = false;
  std::vector<stream> streams_;
  uint64_t next_serial_ = 1;
  uint64_t next_key_ = 1;
  int64_t position_ = 0;
  nlohmann::json last_key_; ///< orderByItems of the last consumed row
  std::string last_rid_;
  std::vector<consumed> consumed_;
  std::optional<std::string> last_distinct_;
  hash_set64 seen_; ///< unordered DISTINCT: row_hash of each result passed
  aggregate_state agg_;
  bool agg_computed_ = false;
  query_merge_counters counters_;
};

} // namespace georoute
