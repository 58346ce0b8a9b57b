#pragma once

// The client side of a change feed (latest-version mode): where a feed
// stands, range by range, and what to send next. Pure: the feed executor
// (actors/change_feed_executor.hpp) does the I/O and asks this for every
// decision.
//
// A feed reads a scope: the whole collection, an EPK range, or one logical
// partition. Its state is a queue of cursors, each an EPK interval with the
// service's position in it (the etag of the last page, an LSN in quotes).
// Cursors are kept by EPK bounds, never by range id, so a continuation
// outlives the topology it was made under:
//
// - Before each read the front cursor is laid on the current routing map.
//   Spanning several ranges (a split since it was made), it is cut into one
//   cursor per range, each starting from the parent's position: the
//   service's positions are per collection, so a parent's position is valid
//   in its children. Lying inside one range (a merge made it a part of a
//   wider range, or the caller asked for a part), it is read with the EPK
//   headers that narrow the range to it.
// - A read answers a page (the cursor takes the page's etag and goes to the
//   back of the queue) or 304, nothing new (the same, without documents).
//   A request returns the first page with documents, or "caught up" after
//   every cursor answered 304 in a row.
// - A position never moves back. A region that lags may answer a 304 whose
//   etag is behind the cursor, or (a misbehaving service) documents at or
//   below it: the cursor keeps its position and such documents are dropped,
//   so nothing is applied twice and nothing is skipped.
//
// The continuation is JSON, version 2:
//
//   {"v":2,"coll":..,"rid":..,"start":..,["time":ms,]["pk":..,]
//    "scope":{"min":..,"max":..},"cursors":[{"min":..,"max":..,["etag":..]}],
//    "sum":..}
//
// It is bound to the collection by name and by rid: a continuation of
// another collection, or of one that was deleted and created again, is
// refused. It carries its own scope, the EPK interval the feed reads, fixed
// when the feed starts: the whole collection ["", "FF"), the caller's EPK
// range, or for a partition key the interval of its one cursor (["", "FF");
// it is read by the key header and never cut). The cursors must tile the
// scope exactly, in whatever pieces splits have cut them into since. A
// token that lost a cursor (the first, the last or one between) is refused:
// read as a feed of what is left, the changes of the lost interval would
// never be delivered, and nothing would say so.
//
// "sum" is a 64-bit FNV-1a, 16 lower-case hex digits, of the token's JSON
// as nlohmann::json writes it without "sum" (keys sorted, no spaces), so
// that a token a caller's JSON library wrote again in another layout still
// checks. A token changed after it was written (an etag moved, a scope
// narrowed along with its cursors) is refused. FNV-1a is no cryptographic
// hash: it catches damage and edits, not a forger who computes it again;
// the tiling check does not depend on it.
//
// Version 1 (written by older engines: no scope, no sum) is still read when
// its scope is known all the same: its cursors tile the whole collection, it
// is a partition key's feed (one cursor), or the request names an EPK range
// (range_min/range_max) that its cursors tile exactly. Any other version-1
// token is refused, telling the caller to send the range it was made for or
// to start the feed again: it cannot be told from a whole feed's token that
// lost its first or last cursor, and a refusal the caller can act on is
// better than changes lost in silence. A version-1 token with "scope" or
// "sum" is refused too (no older engine wrote them: it is a version-2 token
// edited to skip the checksum). The next page's continuation is version 2.

#include "georoute/actors/policy/model.hpp"
#include "georoute/actors/policy/result.hpp"

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace georoute {

/// Where a feed without a continuation starts (mirrors `feed_start` of the
/// messages, which the pure layer cannot see).
enum class feed_origin : uint8_t { beginning = 0, now = 1, time = 2 };

/// One EPK interval of a feed and its position.
struct feed_cursor {
  std::string min; ///< inclusive, upper-case hex ("" the lowest)
  std::string max; ///< exclusive ("FF" the end)
  /// The service's position, an etag ("\"46\""); "" before the first answer
  /// for this interval: the feed's start applies.
  std::string etag;
};

/// What a new feed reads and from where. Checked by `change_feed_state::
/// fresh`.
struct feed_scope {
  std::string collection_link;    ///< normalized "dbs/d/colls/c"
  std::string partition_key_json; ///< one logical partition, or ""
  std::string range_min;          ///< an EPK range, when range_max is set
  std::string range_max;
  feed_origin start = feed_origin::beginning;
  int64_t start_time_ms = 0;
};

/// Where the front cursor's read goes.
struct feed_target {
  std::string range_id;
  /// Set when the cursor is a strict part of the range: `end_epk` always,
  /// `start_epk` "" when the part starts at the lowest EPK.
  std::string start_epk;
  std::string end_epk;
};

/// What a page did to the feed.
struct feed_page_effect {
  size_t kept = 0;    ///< documents past the cursor's position
  size_t dropped = 0; ///< documents at or below it (a replay), not returned
  bool held = false;  ///< the page's etag was behind the cursor: kept its own
  /// With `dropped`: which documents, by position in the page.
  std::vector<bool> drop;
};

/// A change-feed page's body as read without building it: the text of its
/// `Documents` array and each document's `_lsn` (std::nullopt when one has
/// none, or is not an object).
struct feed_page_text {
  std::string_view documents;
  std::vector<std::optional<int64_t>> lsns;
};

/// Reads a page's body: a check that it is one JSON object, then one scan
/// that finds the array and each document's `_lsn` (nothing is built). A
/// problem when the body is not a JSON object or has no `Documents` array.
result<feed_page_text> scan_feed_page(std::string_view body);

/// The parsed position of an etag: the LSN in `"46"` (also `46`, `W/"46"`);
/// std::nullopt for anything else.
std::optional<int64_t> feed_lsn_of(std::string_view etag);

/// True for an EPK bound: upper-case hex digits, at most 64 of them.
bool is_epk_text(const std::string& text);

/// RFC 1123 GMT text of milliseconds since the epoch ("Tue, 29 Mar 2016
/// 02:28:29 GMT"), as `If-Modified-Since` wants it.
std::string http_date_of(int64_t unix_ms);

/// See the file comment.
class change_feed_state {
public:
  /// A new feed. `now_ms`: the current time, for the start-time check.
  /// Problems name the field ("range_max: ...", "start_time_ms: ...").
  static result<change_feed_state> fresh(const feed_scope& scope,
                                         int64_t now_ms);

  /// A feed resumed from `token` for the request `asked`: its collection
  /// (`collection_link`, normalized) and the scope it names, if any (a
  /// partition key or an EPK range; the start fields are not read, the
  /// token carries its start). Problems with the token start with
  /// "continuation: " and name what is wrong; a request whose scope differs
  /// from the token's gets `check_matches`' problem.
  static result<change_feed_state> resume(const std::string& token,
                                          const feed_scope& asked);

  /// The same for a request that names no scope of its own.
  static result<change_feed_state> resume(const std::string& token,
                                          const std::string& link);

  /// Whether a request's own scope fields agree with the feed's scope; a
  /// problem names the field that differs.
  std::optional<problem> check_matches(const feed_scope& scope) const;

  /// Binds the feed to the collection's rid (the first read of a fresh
  /// feed), or checks it (a resumed one): a problem when the continuation
  /// was made for another collection of that name.
  std::optional<problem> bind(const std::string& rid);

  const std::string& partition_key_json() const { return pk_; }
  bool by_partition_key() const { return !pk_.empty(); }
  const std::string& collection_rid() const { return rid_; }
  /// The EPK interval the feed reads, which its cursors tile.
  const std::string& scope_min() const { return scope_min_; }
  const std::string& scope_max() const { return scope_max_; }
  size_t size() const { return cursors_.size(); }
  const feed_cursor& front() const { return cursors_.front(); }
  const std::deque<feed_cursor>& cursors() const { return cursors_; }

  /// Lays the front cursor on `overlapping`, the current ranges that
  /// overlap it in EPK order: cuts it when it spans several (the front is
  /// then the first part) and says where its read goes. A problem when the
  /// ranges do not cover the cursor (a routing map with a hole).
  result<feed_target>
  target(const std::vector<partition_key_range>& overlapping);

  /// The position headers of the front cursor's read: `If-None-Match` (its
  /// etag, or "*" for a feed that starts now and has none yet) and
  /// `If-Modified-Since` (a feed that starts at a time, before its first
  /// etag). Empty when not sent.
  std::string if_none_match() const;
  std::string if_modified_since() const;

  /// Starts a request: the count of 304s in a row begins again.
  void begin_request() { not_modified_in_a_row_ = 0; }

  /// A 200 for the front cursor with `etag` and the `_lsn` of each of its
  /// documents: says which ones are replays (at or below the cursor's
  /// position), advances the cursor and moves it to the back. A problem
  /// for a page without an etag.
  result<feed_page_effect>
  on_page(const std::string& etag,
          const std::vector<std::optional<int64_t>>& lsns);

  /// A 304 for the front cursor: the same without documents. A problem for
  /// a 304 without an etag (a feed that starts now would otherwise send "*"
  /// again and skip what changed in between).
  result<feed_page_effect> on_not_modified(const std::string& etag);

  /// Every cursor answered 304 in a row since `begin_request`.
  bool caught_up() const { return not_modified_in_a_row_ >= cursors_.size(); }

  /// The continuation of the feed as it stands.
  std::string continuation() const;

private:
  change_feed_state() = default;
  /// Advances the front cursor to `etag` unless that is behind it; true
  /// when it held its own position.
  bool advance_front(const std::string& etag);

  std::string link_;
  std::string rid_;
  std::string pk_;
  std::string scope_min_;
  std::string scope_max_;
  feed_origin start_ = feed_origin::beginning;
  int64_t start_time_ms_ = 0;
  std::deque<feed_cursor> cursors_;
  size_t not_modified_in_a_row_ = 0;
};

} // namespace georoute
