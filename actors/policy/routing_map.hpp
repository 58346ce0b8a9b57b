#pragma once

// The partition-key-range map of one collection (.NET CollectionRoutingMap
// (src/Routing/CollectionRoutingMap.cs), CollectionRoutingMap): an immutable,
// complete, sorted set of ranges [min_inclusive, max_exclusive) that tiles ["",
// "FF") exactly, plus the ids of the ranges that split away (the gone set) and
// the change-feed etag that the next incremental read sends as If-None-Match.
//
// A map is built whole or not at all: `create_complete` and `try_combine`
// return a problem (overlap, gap, missing first or last range) instead of a
// partial map. The pkrange cache swaps snapshots of this type.
//
// EPK order. Every EPK comparison here uses `epk_compare` (epk.hpp): the
// length-aware order in which a partial EPK equals its zero-padded form
// ("05C1" == "05C100"), i.e. ordinal comparison after trimming trailing '0's.
// This is the .NET SDK's default (LengthAwareMin/MaxComparer, which
// TrimEnd('0')), applied consistently to lookups, binary searches and overlap
// checks alike — the direction of dotnet-v3 PR #5956 and issue #5897, which
// fix the SDK's own mix of length-aware search and ordinal overlap checks.
// Consequences:
//   - an EPK equal to a boundary, in any padding, lands in the range that
//     starts there: with ranges "1" = [.., 06AB…34AB0000…) and "2" =
//     [06AB…34AB0000…, ..), the partial key 06AB…34AB resolves to "2" (the
//     SDK test TestCollectionRoutingMapWithLengthAwareRangeComparators; the
//     legacy ordinal comparer answers "1" and "2" for [06AB…34AB,
//     06AB…34ABFF));
//   - open question: dotnet-v3 PR #5850 claims the service orders ordinally,
//     so a 96-char full HPK EPK equal to a 128-char split boundary minus its
//     32 trailing zeros lives in the range that ends there (the SDK's own
//     test of that case expects "1"). We follow the consistent length-aware
//     rule, which answers the range that starts there; per that discussion a
//     wrong range draws a 410 from the backend rather than a silent empty
//     result, and this map never answers "no range" for an EPK below "FF".
// Completeness checks stay exact, as in the SDK: each max must equal the next
// min character for character, and ranges are sorted by min ordinally (the
// ordinal order refines the length-aware one, so the sort serves both).

#include "georoute/actors/policy/model.hpp"
#include "georoute/actors/policy/result.hpp"

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace georoute {

/// An immutable, complete partition-key-range map of one collection.
class routing_map {
public:
  /// Builds a map from a full pkranges listing (a cold load). Ranges whose id
  /// appears in any range's `parents` are gone and dropped; of equal ids the
  /// last wins; the rest is sorted by min and must tile ["", "FF") exactly.
  /// Problems: no ranges; a range id that is not an integer; an empty or
  /// inverted range; "ranges overlap: ..."; "gap between ... and ...";
  /// a first min other than "" or a last max other than "FF".
  static result<routing_map>
  create_complete(std::vector<partition_key_range> ranges, std::string etag);

  /// Applies an incremental pkranges read (a warm load): gone = the new
  /// ranges' parents ∪ this map's gone set; the old ranges that are not gone
  /// are kept, the new ranges that are not gone are added or replace old ones
  /// of the same id; the result must be complete, as for `create_complete`.
  /// On success the new map carries `etag`; this map is unchanged either way.
  result<routing_map>
  try_combine(const std::vector<partition_key_range>& new_ranges,
              std::string etag) const;

  /// The range that holds `epk` (min <= epk < max), or nullptr when
  /// epk >= "FF". "" is the first range's min, so it maps to the first range.
  const partition_key_range* range_by_epk(std::string_view epk) const;

  /// The range with this id (exact match), or nullptr.
  const partition_key_range* range_by_id(std::string_view id) const;

  /// The ranges that share at least one EPK with `r`, sorted by min, each
  /// once. `r` honours its inclusive/exclusive ends: [a, b) overlaps a range
  /// [min, max) iff a < max && min < b; with `r.max_inclusive`, min <= b.
  /// An empty `r` (a > b, or a == b without both ends inclusive) overlaps
  /// nothing.
  std::vector<partition_key_range> overlapping(const epk_range& r) const;

  /// The union of `overlapping` over several ranges (a query plan's
  /// `queryRanges`), sorted by min, each range once.
  std::vector<partition_key_range>
  overlapping(const std::vector<epk_range>& rs) const;

  /// The change-feed etag to send as If-None-Match on the next refresh.
  const std::string& etag() const { return etag_; }

  /// The ranges in increasing EPK order.
  const std::vector<partition_key_range>& ranges() const { return ranges_; }

  /// The ids of ranges that split or merged away, sorted, each once.
  const std::vector<std::string>& gone_ids() const { return gone_; }

  /// Whether `id` is in the gone set.
  bool is_gone(std::string_view id) const;

  /// The highest integer range id among ranges that are not offline
  /// (status compared case-insensitively), or -1 when every range is
  /// offline. Ids are validated as integers when the map is built.
  long long highest_range_id() const { return highest_id_; }

private:
  routing_map() = default;

  static result<routing_map>
  build(std::unordered_map<std::string, partition_key_range> by_id,
        std::vector<std::string> gone, std::string etag);

  /// Index of the first range whose max is above `epk` (the one holding
  /// `epk` when epk < "FF"), by binary search.
  std::size_t index_of(std::string_view epk) const;

  /// Appends to `hits` the indexes of the ranges overlapping `r`.
  void collect(const epk_range& r, std::vector<std::size_t>& hits) const;

  std::vector<partition_key_range> ranges_;
  std::unordered_map<std::string, std::size_t> by_id_;
  std::vector<std::string> gone_;
  std::string etag_;
  long long highest_id_ = -1;
};

} // namespace georoute
