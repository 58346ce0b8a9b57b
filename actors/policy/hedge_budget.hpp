#pragma once

// The engine-wide state of hedging: the answer times per region that the
// adaptive threshold reads, the data-plane hedge budget and the metadata
// hedge budget. One of each per engine, owned by the actor that runs the
// operations; every time is a `now` argument.

#include "georoute/actors/policy/hedging.hpp"
#include "georoute/actors/policy/location_table.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace georoute {

// -- adaptive latency ------------------------------------------------------

/// The last `window` answer times of one region, in a ring. Memory is
/// constant; a region that stops answering keeps its last estimate, so a
/// hung region goes on being hedged early.
class latency_tracker {
public:
  explicit latency_tracker(std::size_t window = 256);

  /// Records one answer time (negative counts as 0).
  void record(std::chrono::microseconds latency);

  /// The nearest-rank percentile `p` (0 < p < 1) of the samples held: the
  /// smallest sample at least a share p of them do not exceed. nullopt with
  /// fewer than `min_samples` samples (or none).
  std::optional<std::chrono::microseconds>
  percentile(double p, std::size_t min_samples) const;

  /// Samples held (at most the window).
  std::size_t size() const { return size_; }
  /// Samples ever recorded.
  uint64_t recorded() const { return recorded_; }

private:
  std::vector<std::chrono::microseconds> ring_;
  std::size_t next_ = 0;
  std::size_t size_ = 0;
  uint64_t recorded_ = 0;
};

/// One tracker per region (names compared ignoring ASCII case). Record the
/// answer times of final results (the time from sending an attempt to its
/// answer), of every arm that answered in time; timeouts and failures carry
/// no latency. An abandoned arm's answer time is censored (never seen, or
/// seen late): `adaptive_hedge_options::factor` keeps the missing tail from
/// pulling the estimate down.
class region_latencies {
public:
  /// Regions tracked at most; further names are ignored. Accounts have a
  /// handful of regions; this only bounds memory against garbage names.
  static constexpr std::size_t max_regions = 64;

  explicit region_latencies(adaptive_hedge_options options = {})
      : options_(options) {}

  void record(std::string_view region, std::chrono::microseconds latency);

  /// The configured percentile of `region`; nullopt when unknown or with
  /// too few samples.
  std::optional<std::chrono::microseconds>
  percentile(std::string_view region) const;

  std::size_t region_count() const { return trackers_.size(); }

private:
  adaptive_hedge_options options_;
  std::map<std::string, latency_tracker> trackers_; ///< by lower-case name
};

// -- budgets ---------------------------------------------------------------

/// The data-plane hedge budget over a sliding window of buckets. The
/// denominator is the hedge-eligible operations started in the window
/// (`record_operation`); each hedge arm takes one unit. An arm is allowed
/// while the arms taken in the window, this one included, stay within
/// max(min_allowance, share * operations). The window is the current bucket
/// and the `window / bucket - 1` before it, so 9 to 10 s by default; a call
/// with a time before the latest seen counts in the latest bucket.
class hedge_budget {
public:
  explicit hedge_budget(hedge_budget_options options = {});

  /// A hedge-eligible operation started.
  void record_operation(policy_time now);

  /// Takes one hedge from the budget; false (counted) when spent.
  bool try_take(policy_time now);

  /// Operations and hedges in the window at `now`.
  uint64_t window_operations(policy_time now) const;
  uint64_t window_hedges(policy_time now) const;

  /// Totals since construction.
  uint64_t operations() const { return operations_; }
  uint64_t taken() const { return taken_; }
  uint64_t refused() const { return refused_; }

private:
  struct bucket {
    int64_t epoch = -1;
    uint64_t operations = 0;
    uint64_t hedges = 0;
  };

  int64_t epoch_of(policy_time now) const;
  bucket& current(policy_time now);

  hedge_budget_options options_;
  std::vector<bucket> buckets_;
  int64_t latest_ = 0;
  uint64_t operations_ = 0;
  uint64_t taken_ = 0;
  uint64_t refused_ = 0;
};

/// Metadata hedges in flight, engine-wide. An operation refused a slot does
/// not queue: it goes on with its primary alone.
class metadata_hedge_budget {
public:
  /// 0 disables metadata hedging.
  explicit metadata_hedge_budget(uint32_t max_concurrent = 32)
      : max_(max_concurrent) {}

  /// Takes a slot; false (counted) when all are in use or the budget is 0.
  bool try_acquire();
  /// Gives a slot back; false when none was held.
  bool release();

  uint32_t in_use() const { return in_use_; }
  uint32_t capacity() const { return max_; }
  uint64_t acquired() const { return acquired_; }
  uint64_t refused() const { return refused_; }

private:
  uint32_t max_;
  uint32_t in_use_ = 0;
  uint64_t acquired_ = 0;
  uint64_t refused_ = 0;
};

} // namespace georoute
