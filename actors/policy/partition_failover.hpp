#pragma once

// Per-partition automatic failover (PPAF) on single-write accounts, the pure
// state: which region takes the writes of one partition-key range when the
// service moved that range's write primary away from the account's write
// region without an account failover.
//
// The account says whether it does this (`enablePerPartitionFailoverBehavior`,
// explicit values only, re-read on every refresh; the client can force it
// off). When it applies — a document write on a single-write account with
// more than one read region, its range known — the attempt loop asks
// `override_for` where the range's writes go (nothing: the account's write
// region) and reports what happened there:
//
//   403/3 (write forbidden)   the range is not (or no longer) here: move on
//                             and retry at once;
//   503, a server 408         the region cannot take the range's writes now:
//                             move on (a 503 is retried once, a 408 not:
//                             the write may have been applied);
//   client timeouts           counted per range; `timeout_threshold` of them
//                             within `timeout_window` move it;
//   403/1008 from an override the region left the account: the override is
//                             dropped at once (so is every override whose
//                             region leaves the account, `retain_regions`);
//   success                   confirms where the range is.
//
// Moving walks the account's read regions in account order (not the
// client's preferred order, and not filtered by excluded regions: the
// service decides where a range's primary is), skipping those that failed
// since the range's place was last confirmed. When every region failed the
// entry is dropped and the request falls back to the account-level path
// (mark the region, refresh the account).
//
// Failback, better than the reference SDKs: they keep an override until
// its region answers 403/3 and then walk every remaining region (up to N-1
// wasted round trips when the service moved the range home). Here a 403/3
// from an override region sends the next try to the account's current
// write region first: a range that went home costs one extra round trip.
//
// Bounded: at most `max_ranges` entries (least recently used dropped).
// Nothing here reads a clock: every time is a `now` argument.

#include "georoute/actors/policy/location_table.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace georoute {

struct partition_failover_options {
  /// Follow the account's `enablePerPartitionFailoverBehavior`; false never
  /// does (`georoute.per-partition-failover.enabled`).
  bool enabled = true;
  /// Client timeouts of one range's writes within `timeout_window` that
  /// move the range (the .NET SDK moves after more than 5 in 5 minutes,
  /// Java after 10 in 60 s).
  uint32_t timeout_threshold = 5;
  std::chrono::milliseconds timeout_window{std::chrono::seconds{60}};
  /// Ranges tracked at most.
  std::size_t max_ranges = 10000;

  /// Problems, one per bad field; empty when valid.
  std::vector<std::string> validate() const;
};

/// Whether PPAF applies to a request: on in the options and on the
/// account, a document write, an account that writes in one region, and
/// more than one read region to move to.
bool ppaf_applies(const partition_failover_options& options,
                  const location_table& table, op_kind op, bool is_document);

/// What happened to a range's write in a region.
enum class ppaf_trigger : uint8_t {
  write_forbidden,     ///< 403/3
  service_unavailable, ///< 503
  server_timeout,      ///< a 408 answer
  client_timeout,      ///< no answer within the attempt's timeout
  account_not_found,   ///< 403/1008: the region is not in the account
};

/// The trigger of an attempt's failure, if it is one.
std::optional<ppaf_trigger> ppaf_trigger_of(bool transport_failure,
                                            bool timed_out, int status,
                                            int substatus);

const char* to_string(ppaf_trigger x);

/// What a failure did to the range's override.
struct ppaf_move {
  enum class kind : uint8_t {
    none,      ///< nothing changed (a counted timeout, or not applicable)
    moved,     ///< the range's writes go to `region` now
    homing,    ///< an override answered 403/3: try the write region first
    dropped,   ///< the override is gone (403/1008): the write region again
    exhausted, ///< every region failed: entry dropped, account-level path
  };
  kind what = kind::none;
  std::string region;
};

struct partition_failover_counters {
  uint64_t moves = 0;
  uint64_t homings = 0;
  uint64_t drops = 0;
  uint64_t exhausted = 0;
  uint64_t confirmed = 0;
  uint64_t evicted = 0;
};

class partition_failover {
public:
  explicit partition_failover(partition_failover_options options = {});

  /// The region the writes of range `range_id` of `collection_rid` go to;
  /// nullopt: the account's write region.
  std::optional<std::string> override_for(std::string_view collection_rid,
                                          std::string_view range_id) const;

  /// A write of the range failed in `tried` with `trigger`.
  /// `account_read_regions`: the account's read regions in account order;
  /// `write_region`: the account's current write region.
  ppaf_move on_failure(std::string_view collection_rid,
                       std::string_view range_id, std::string_view tried,
                       ppaf_trigger trigger,
                       const std::vector<std::string>& account_read_regions,
                       std::string_view write_region, policy_time now);

  /// A write of the range succeeded in `region`.
  void on_success(std::string_view collection_rid, std::string_view range_id,
                  std::string_view region, std::string_view write_region);

  /// Drops the overrides whose region is not in `account_read_regions`.
  std::size_t
  retain_regions(const std::vector<std::string>& account_read_regions);

  /// Drops the entry of one range (it split or merged).
  bool forget_range(std::string_view collection_rid, std::string_view range_id);

  std::size_t size() const { return entries_.size(); }
  const partition_failover_counters& counters() const { return counters_; }
  const partition_failover_options& options() const { return options_; }

private:
  struct entry {
    /// Where the range's writes go; empty: the write region (counting
    /// timeouts only, or homing).
    std::string current;
    /// Regions that failed since the range's place was last confirmed.
    std::vector<std::string> failed;
    /// The write region was tried first since the range's place was last
    /// confirmed (once per walk, not after every override's 403/3).
    bool home_tried = false;
    policy_time window_start{};
    uint32_t timeouts = 0;
    std::list<std::string>::iterator lru;
  };

  static std::string key_of(std::string_view rid, std::string_view range);
  entry& touch(const std::string& key);
  void erase(const std::string& key);
  ppaf_move walk(const std::string& key, entry& e, std::string_view tried,
                 const std::vector<std::string>& regions);

  partition_failover_options options_;
  std::map<std::string, entry> entries_;
  std::list<std::string> lru_; ///< most recent first
  partition_failover_counters counters_;
};

} // namespace georoute
