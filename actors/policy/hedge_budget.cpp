#include "georoute/actors/policy/hedge_budget.hpp"

#include <algorithm>
#include <cmath>

namespace georoute {

using std::chrono::microseconds;
using std::chrono::milliseconds;

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

} // namespace

// -- adaptive latency ------------------------------------------------------

latency_tracker::latency_tracker(std::size_t window)
    : ring_(std::max<std::size_t>(window, 1)) {}

void latency_tracker::record(microseconds latency) {
  ring_[next_] = std::max(latency, microseconds::zero());
  next_ = (next_ + 1) % ring_.size();
  size_ = std::min(size_ + 1, ring_.size());
  ++recorded_;
}

std::optional<microseconds>
latency_tracker::percentile(double p, std::size_t min_samples) const {
  if (size_ == 0 || size_ < min_samples) return std::nullopt;
  // The samples sit at [0, size_) until the ring is full, then everywhere.
  std::vector<microseconds> xs(ring_.begin(),
                               ring_.begin() + static_cast<long>(size_));
  // Nearest rank, 1-based; the epsilon keeps 0.99 * 300 at rank 297.
  auto rank = static_cast<std::size_t>(
      std::ceil(p * static_cast<double>(size_) - 1e-9));
  rank = std::clamp<std::size_t>(rank, 1, size_);
  auto nth = xs.begin() + static_cast<long>(rank - 1);
  std::nth_element(xs.begin(), nth, xs.end());
  return *nth;
}

void region_latencies::record(std::string_view region, microseconds latency) {
  auto key = lower(region);
  auto i = trackers_.find(key);
  if (i == trackers_.end()) {
    if (trackers_.size() >= max_regions) return;
    i = trackers_.emplace(std::move(key), latency_tracker{options_.window})
            .first;
  }
  i->second.record(latency);
}

std::optional<microseconds>
region_latencies::percentile(std::string_view region) const {
  auto i = trackers_.find(lower(region));
  if (i == trackers_.end()) return std::nullopt;
  return i->second.percentile(options_.percentile, options_.min_samples);
}

// -- budgets ---------------------------------------------------------------

hedge_budget::hedge_budget(hedge_budget_options options) : options_(options) {
  if (options_.bucket.count() <= 0) options_.bucket = milliseconds{1000};
  auto n = options_.window / options_.bucket;
  buckets_.resize(static_cast<std::size_t>(std::max<int64_t>(n, 1)));
}

int64_t hedge_budget::epoch_of(policy_time now) const {
  auto d = now.time_since_epoch();
  auto b = std::chrono::duration_cast<policy_clock::duration>(options_.bucket);
  auto q = static_cast<int64_t>(d / b);
  if (d % b < policy_clock::duration::zero()) --q;
  return std::max(q, latest_);
}

hedge_budget::bucket& hedge_budget::current(policy_time now) {
  latest_ = epoch_of(now);
  auto n = static_cast<int64_t>(buckets_.size());
  auto& b = buckets_[static_cast<std::size_t>(((latest_ % n) + n) % n)];
  if (b.epoch != latest_) b = bucket{latest_, 0, 0};
  return b;
}

void hedge_budget::record_operation(policy_time now) {
  ++current(now).operations;
  ++operations_;
}

bool hedge_budget::try_take(policy_time now) {
  auto& b = current(now);
  auto ops = window_operations(now);
  auto hedges = window_hedges(now);
  auto by_share = static_cast<uint64_t>(
      std::floor(options_.share * static_cast<double>(ops) + 1e-9));
  auto allowed = std::max<uint64_t>(options_.min_allowance, by_share);
  if (hedges + 1 > allowed) {
    ++refused_;
    return false;
  }
  ++b.hedges;
  ++taken_;
  return true;
}

uint64_t hedge_budget::window_operations(policy_time now) const {
  auto e = epoch_of(now);
  auto n = static_cast<int64_t>(buckets_.size());
  uint64_t sum = 0;
  for (const auto& b : buckets_)
    if (b.epoch > e - n && b.epoch <= e) sum += b.operations;
  return sum;
}

uint64_t hedge_budget::window_hedges(policy_time now) const {
  auto e = epoch_of(now);
  auto n = static_cast<int64_t>(buckets_.size());
  uint64_t sum = 0;
  for (const auto& b : buckets_)
    if (b.epoch > e - n && b.epoch <= e) sum += b.hedges;
  return sum;
}

bool metadata_hedge_budget::try_acquire() {
  if (in_use_ >= max_) {
    ++refused_;
    return false;
  }
  ++in_use_;
  ++acquired_;
  return true;
}

bool metadata_hedge_budget::release() {
  if (in_use_ == 0) return false;
  --in_use_;
  return true;
}

} // namespace georoute
