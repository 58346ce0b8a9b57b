#pragma once

// The location snapshot a subscriber of the location cache resolves on (the
// retry actor, the request router), with the rule that keeps it from going
// back in time: a pushed snapshot is applied only if it is newer than the
// one held, and the subscriber's own marks that the cache has not confirmed
// yet are re-applied on top of it. Without that, a push the cache sent
// before it applied our mark would briefly un-mark the region for the next
// attempt. Pure; one actor owns it.

#include "georoute/actors/policy/location_table.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace georoute {

/// See the file comment.
class snapshot_holder {
public:
  using table_ptr = std::shared_ptr<const location_table>;

  /// The table to resolve on; null before the first snapshot.
  const table_ptr& table() const { return table_; }

  /// Applies `table` at `version` unless it is no newer than the held one;
  /// returns whether it was applied. The first snapshot (and the first after
  /// `reset_source`) is always applied.
  bool apply(table_ptr table, uint64_t version);

  /// The next snapshot comes from a new location cache, which counts its
  /// versions from scratch. Until it publishes a table with an account, the
  /// held table (if it has one) is kept: a restart never sends requests to
  /// the region-agnostic account endpoint.
  void reset_source() { accept_any_ = true; }

  /// Marks `endpoint` locally at `now` until the cache confirms it; returns
  /// the mark's sequence number for `confirm`.
  uint64_t mark(const std::string& endpoint, bool read, bool write,
                policy_time now);

  /// The cache answered the mark `seq` (or went away): stop re-applying it.
  void confirm(uint64_t seq);

  /// Marks not confirmed yet.
  size_t pending_marks() const { return pending_.size(); }

  /// Snapshots refused as no newer than the held one.
  uint64_t stale() const { return stale_; }

private:
  struct pending_mark {
    uint64_t seq;
    std::string endpoint;
    bool read;
    bool write;
    policy_time at;
  };

  table_ptr table_;
  uint64_t version_ = 0;
  bool accept_any_ = true;
  std::vector<pending_mark> pending_;
  uint64_t next_seq_ = 1;
  uint64_t stale_ = 0;
};

} // namespace georoute
