#pragma once

// The continuation of a cross-partition query: what a new process needs to
// continue it (`query_merger::continuation()` fills it in,
// `query_merger::resume` reads it), and its text form, compact ASCII JSON
// fit for an HTTP header:
//
//   {"v": 1, "q": query hash (hex), "pos": results that passed DISTINCT,
//    "ranges": [{"id", "min", "max", "token": string or null,
//                "done": true (only when set), "skip": [row hash (hex)]}],
//    "order": {"items": orderByItems, "rid": _rid}    (ORDER BY)
//    "distinct": canonical JSON of the last result    (ordered DISTINCT)
//    "seen": {"n": count, "data": coded set, "sum": checksum (hex)}
//                                                     (unordered DISTINCT)
//    "agg": {"undefined", "sum", "count", "best"}}    (VALUE aggregates)
//
// "seen" is the set of `row_hash`es of every result an unordered DISTINCT
// query returned so far, so that a resumed query drops them again. It is a
// Golomb-Rice coded sorted set: the hashes ascending, each gap to the
// previous one minus one (the first: the hash itself), written as its high
// bits in unary (that many 1s, then a 0) and its low k bits as they are,
// k = 64 - bit width of n. The bits go most significant first, six to a
// base64url character; the last character's unused bits are 0. Uniformly
// spread hashes take about k + 2 bits each (56 bits, 9.3 characters, at
// 1,024 values). Whatever the hashes, the high parts of the gaps add up to
// less than 2^(64-k) <= 2n, so n values never take more than
// n(k+1) + 2^(64-k) - 1 bits (`distinct_set_max_chars`). "sum" is FNV-1a 64
// over the query hash, "pos" and the values: a set that was altered,
// truncated or taken from another token fails it. Decoding is strict: every
// set has exactly one text.

#include "georoute/actors/policy/model.hpp"
#include "georoute/actors/policy/result.hpp"

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace georoute {

/// The most results of an unordered DISTINCT query whose hashes a
/// continuation carries. Their set then takes at most 7,168 bytes: 9,558
/// base64url characters of the token (`distinct_set_max_chars(1024)`),
/// beside the ranges' own state (their tokens, and up to a page of row
/// hashes each). Past it `query_merger::continuation()` is a problem that
/// says what to do instead.
constexpr size_t max_distinct_carried = 1024;

/// One partition-key range a cross-partition query reads.
struct query_range {
  std::string id;  ///< pkrange id; may be "" when the caller targets by EPK
  std::string min; ///< EPK, inclusive ("" for the first range)
  std::string max; ///< EPK, exclusive ("FF" for the last range)
};

/// The partial state of a VALUE aggregate, as it travels in a continuation.
struct aggregate_state {
  bool undefined = false; ///< a range saw a value the aggregate rejects
  double sum = 0;         ///< Sum and Average
  int64_t count = 0;      ///< Count and Average
  std::optional<nlohmann::json> best; ///< Min and Max
};

/// Where one range stands in a resumable query.
struct range_resume {
  query_range range;
  /// The `x-ms-continuation` of the next request; nullopt starts the range.
  std::optional<std::string> token;
  bool done = false;
  /// Hashes (`row_hash`) of rows the range will send again that were
  /// already consumed; each is dropped once.
  std::vector<uint64_t> skip;
};

/// Everything a new process needs to continue a cross-partition query.
struct query_continuation {
  uint64_t query_hash = 0; ///< `query_fingerprint` of the plan's queryInfo
  std::vector<range_resume> ranges;
  /// Results that passed DISTINCT so far: where OFFSET/LIMIT/TOP stand.
  int64_t position = 0;
  /// ORDER BY: `orderByItems` of the last consumed row, null before any.
  nlohmann::json order_by_items;
  std::string rid; ///< ORDER BY: `_rid` of that row (for diagnostics)
  /// Ordered DISTINCT: canonical JSON of the last result that passed.
  std::optional<std::string> last_distinct;
  /// Unordered DISTINCT: `row_hash` of every result that passed, ascending,
  /// no repeats (as many as `position`).
  std::vector<uint64_t> distinct_seen;
  aggregate_state aggregate;
};

/// A hash as the token writes it: 16 lowercase hex digits.
std::string hash_hex(uint64_t value);

/// The continuation as compact ASCII JSON (fit for an HTTP header).
std::string encode_continuation(const query_continuation& c);

/// Parses `encode_continuation`'s output; the problem names the field.
result<query_continuation> decode_continuation(std::string_view text);

/// The coded text of a set of hashes (see the file comment); repeats count
/// once, "" for none.
std::string encode_hash_set(std::vector<uint64_t> hashes);

/// Reads `count` hashes (at most `max_distinct_carried`) back from
/// `encode_hash_set`'s text, ascending. The problem says what is wrong with
/// the text; the caller names the field.
result<std::vector<uint64_t>> decode_hash_set(std::string_view text,
                                              size_t count);

/// The longest text `encode_hash_set` makes for `count` hashes
/// (`count` <= `max_distinct_carried`).
size_t distinct_set_max_chars(size_t count);

} // namespace georoute
