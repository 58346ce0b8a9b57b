#pragma once

// The session tokens a client has seen, per collection and per
// partition-key range: what it sends as `x-ms-session-token` so that a read
// sees its own writes (gateway protocol A10; JS `session/sessionContainer.ts`,
// .NET `SessionContainer`).
//
// - Tokens are kept under the collection rid (`x-ms-content-path`), with the
//   collection's name path (`x-ms-alt-content-path`) mapped to every rid seen
//   under it, so that a recreated collection can be forgotten by name.
// - A captured header is merged range by range (`merge`, session_token.hpp):
//   a token never goes backwards, whatever order responses arrive in.
// - After a split a child range that has no token of its own reads with its
//   parents' tokens merged (.NET `ResolvePartitionLocalSessionToken`).
// - Malformed entries are skipped and counted; nothing here throws.
// - At most `max_collections` collections are kept; the least recently
//   captured one goes first.
//
// Pure and single-threaded: one actor owns it.

#include "georoute/actors/policy/session_token.hpp"

#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace georoute {

/// What the container did, for the owner's counters.
struct session_container_counters {
  uint64_t captured = 0;  ///< range tokens merged in
  uint64_t malformed = 0; ///< header entries skipped because they did not parse
  uint64_t ignored = 0;   ///< headers skipped because the rid was empty
  uint64_t evicted = 0;   ///< collections dropped by the bound
  uint64_t cleared = 0;   ///< collections dropped by clear_by_rid/_name
};

/// `dbs/d/colls/c` for `/dbs/d/colls/c/`, `dbs/d/colls/c/docs/x` and the
/// like: the collection a name path belongs to. Other text comes back
/// without its outer slashes.
std::string collection_name_path(std::string_view name);

class session_container {
public:
  /// `max_collections` of 0 is treated as 1.
  explicit session_container(size_t max_collections = 1024);

  /// Merges a response's `x-ms-session-token` ("range:token[,range:token]")
  /// into the tokens of `collection_rid`, and remembers `collection_name`
  /// (may be empty) as a name of that rid. Returns the number of entries
  /// merged; malformed entries are skipped and counted.
  size_t capture(std::string_view collection_rid,
                 std::string_view collection_name, std::string_view header);

  /// The token to send on a read of `range_id`: its own, else the merge of
  /// the tokens of `parent_range_ids` (the range's `parents`), else none.
  std::optional<vector_session_token>
  token_for(std::string_view collection_rid, const std::string& range_id,
            const std::vector<std::string>& parent_range_ids) const;

  /// `token_for` as a header value, "{range_id}:{token}", or "" for none.
  std::string
  header_for(std::string_view collection_rid, const std::string& range_id,
             const std::vector<std::string>& parent_range_ids) const;

  /// Every range token of the collection as one header value ("" if none).
  std::string header_for_all(std::string_view collection_rid) const;

  /// Forgets one collection. True if it was known.
  bool clear_by_rid(std::string_view collection_rid);

  /// Forgets every rid seen under the name (a deleted and recreated
  /// collection). Returns how many were dropped.
  size_t clear_by_name(std::string_view collection_name);

  size_t size() const { return index_.size(); }
  size_t capacity() const { return capacity_; }
  const session_container_counters& counters() const { return counters_; }

private:
  struct collection {
    std::list<std::string>::iterator position; ///< in order_
    std::string name;
    session_token_set tokens;
    /// The last header merged, and what it gave. Merging is idempotent, so
    /// the same header again (every read's answer while nothing is
    /// written) changes nothing and is not parsed again.
    std::string last_header;
    size_t last_merged = 0;
    size_t last_malformed = 0;
    /// Bumped by every merge; `header_for`'s last answer holds while it
    /// is unchanged.
    uint64_t version = 0;
    mutable uint64_t rendered_version = 0;
    mutable std::string rendered_range;
    mutable std::string rendered; ///< empty: nothing cached
  };

  /// `index_.find` without a string built per call.
  std::unordered_map<std::string, collection>::iterator
  find_rid(std::string_view rid);
  std::unordered_map<std::string, collection>::const_iterator
  find_rid(std::string_view rid) const;

  void forget(std::unordered_map<std::string, collection>::iterator it);

  size_t capacity_;
  std::list<std::string> order_; ///< rids, most recently captured first
  std::unordered_map<std::string, collection> index_;
  std::unordered_map<std::string, std::set<std::string>> rids_by_name_;
  session_container_counters counters_;
  mutable std::string key_buf_;
};

/// Where a request's session token comes from, decided in one place.
enum class session_source : uint8_t {
  none,      ///< send none: a write, or a read at another consistency
  caller,    ///< the caller's own token (it knows best what it has seen)
  container, ///< the container's merged token of the request's range
};

/// Writes send no session token; reads send one only at Session
/// consistency (or at the account default, `consistency_level` empty): the
/// caller's own when it gives one, otherwise the container's.
session_source session_token_source(bool is_write,
                                    std::string_view consistency_level,
                                    bool caller_has_token);

} // namespace georoute
