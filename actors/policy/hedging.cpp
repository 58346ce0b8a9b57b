#include "georoute/actors/policy/hedging.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace georoute {

using std::chrono::microseconds;
using std::chrono::milliseconds;

namespace {

bool is_answer(int status) {
  return status >= 100 && status < 400;
}

std::string number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", x);
  return buf;
}

bool contains_region(const std::vector<std::string>& xs, std::string_view x) {
  return std::any_of(xs.begin(), xs.end(),
                     [&](const std::string& y) { return same_region(x, y); });
}

} // namespace

// -- results ---------------------------------------------------------------

hedge_class classify_for_hedging(transport_fault fault, int status,
                                 int substatus) {
  if (fault != transport_fault::none) return hedge_class::start_next;
  if (is_answer(status)) return hedge_class::final_result;
  switch (status) {
  case 400:
  case 401:
  case 405:
  case 409:
  case 412:
  case 413:
  case 422:
  case 451:
  case 501:
  case 505:
    return hedge_class::final_result;
  case 403:
    return substatus == 3 || substatus == 1008 ? hedge_class::start_next
                                               : hedge_class::final_result;
  case 404:
    return substatus == 0 ? hedge_class::final_result : hedge_class::start_next;
  case 429:
    switch (substatus) {
    case 3200:
    case 3210:
    case 3214:
      return hedge_class::final_result;
    case 3092:
      return hedge_class::start_next;
    default:
      return hedge_class::wait_for_timer;
    }
  default:
    return hedge_class::start_next;
  }
}

bool final_for_hedging(transport_fault fault, int status, int substatus) {
  return classify_for_hedging(fault, status, substatus) ==
         hedge_class::final_result;
}

bool starts_next_arm_early(transport_fault fault, int status, int substatus) {
  return classify_for_hedging(fault, status, substatus) ==
         hedge_class::start_next;
}

// -- options ---------------------------------------------------------------

std::vector<std::string> hedging_options::validate() const {
  std::vector<std::string> out;
  auto positive = [&](const char* name, milliseconds d) {
    if (d.count() <= 0)
      out.push_back(std::string{"hedging."} + name + " = " +
                    format_duration(d) + ": must be positive");
  };
  if (threshold) positive("threshold", *threshold);
  positive("step", step);
  const auto& a = adaptive;
  if (!(a.percentile > 0 && a.percentile < 1))
    out.push_back("hedging.adaptive.percentile = " + number(a.percentile) +
                  ": must be above 0 and below 1");
  if (!(a.factor >= 1 && std::isfinite(a.factor)))
    out.push_back("hedging.adaptive.factor = " + number(a.factor) +
                  ": must be at least 1 (below, healthy requests hedge)");
  positive("adaptive.lower_bound", a.lower_bound);
  const bool window_ok = a.window >= 1 && a.window <= 65536;
  if (!window_ok)
    out.push_back("hedging.adaptive.window = " + std::to_string(a.window) +
                  ": must be 1 to 65536 samples");
  else if (a.min_samples < 1 || a.min_samples > a.window)
    out.push_back(
        "hedging.adaptive.min_samples = " + std::to_string(a.min_samples) +
        ": must be 1 to the window (" + std::to_string(a.window) + ")");
  const auto& b = budget;
  if (!(b.share >= 0 && b.share <= 1))
    out.push_back("hedging.budget.share = " + number(b.share) +
                  ": must be 0 to 1");
  positive("budget.window", b.window);
  positive("budget.bucket", b.bucket);
  if (b.window.count() > 0 && b.bucket.count() > 0) {
    if (b.window % b.bucket != milliseconds::zero())
      out.push_back("hedging.budget.window = " + format_duration(b.window) +
                    ": must be a whole number of buckets (" +
                    format_duration(b.bucket) + ")");
    else if (b.window / b.bucket > 3600)
      out.push_back("hedging.budget.window = " + format_duration(b.window) +
                    ": at most 3600 buckets (" + format_duration(b.bucket) +
                    ")");
  }
  positive("metadata.threshold", metadata.threshold);
  return out;
}

// -- eligibility and regions -----------------------------------------------

const char* to_string(hedge_skip x) {
  switch (x) {
  case hedge_skip::none:
    return "none";
  case hedge_skip::disabled:
    return "disabled";
  case hedge_skip::write_not_opted_in:
    return "write_not_opted_in";
  case hedge_skip::write_single_write:
    return "write_single_write";
  case hedge_skip::write_not_retry_safe:
    return "write_not_retry_safe";
  case hedge_skip::single_region:
    return "single_region";
  }
  return "?";
}

hedge_skip hedge_eligibility(const hedging_options& options,
                             const hedge_request& request) {
  if (!request.request.enabled.value_or(options.enabled))
    return hedge_skip::disabled;
  if (request.op == op_kind::write) {
    if (!request.request.hedge_writes.value_or(options.hedge_writes))
      return hedge_skip::write_not_opted_in;
    if (!request.multi_write_account) return hedge_skip::write_single_write;
    if (!request.write_retries_safe) return hedge_skip::write_not_retry_safe;
  }
  if (request.region_count < 2) return hedge_skip::single_region;
  return hedge_skip::none;
}

std::vector<std::string> hedge_regions(const location_table& table, op_kind op,
                                       const std::vector<std::string>& excluded,
                                       policy_time now) {
  std::vector<std::string> out;
  // The table's cached list: no copy of the endpoints per hedged read.
  std::vector<std::string> scratch;
  bool fell_back = false;
  for (const auto& endpoint :
       table.applicable_ref(op, excluded, now, fell_back, scratch)) {
    // A marked region is known bad: a hedge there would only add load and
    // wait (the table lists it last, as a fallback for plain retries).
    if (table.is_unavailable(endpoint, op, now)) continue;
    auto region = table.region_of(endpoint);
    if (!region.empty() && !contains_region(out, region))
      out.push_back(std::move(region));
  }
  return out;
}

std::vector<std::string>
arm_exclusions(const std::vector<std::string>& request_excluded,
               const std::vector<std::string>& regions, std::size_t arm) {
  auto out = request_excluded;
  if (arm == 0) return out;
  for (std::size_t i = 0; i < regions.size(); ++i)
    if (i != arm && !contains_region(out, regions[i]))
      out.push_back(regions[i]);
  return out;
}

// -- thresholds ------------------------------------------------------------

milliseconds default_hedge_threshold(const timeout_ladder& ladder) {
  const milliseconds cap{1000};
  if (ladder.empty()) return cap;
  return std::clamp(ladder.front().timeout / 2, milliseconds{1}, cap);
}

milliseconds static_hedge_threshold(const hedging_options& options,
                                    const timeout_ladder& read_ladder) {
  return options.threshold ? *options.threshold
                           : default_hedge_threshold(read_ladder);
}

milliseconds adaptive_hedge_threshold(const adaptive_hedge_options& options,
                                      std::optional<microseconds> percentile,
                                      milliseconds static_threshold) {
  if (!percentile) return static_threshold;
  auto scaled =
      options.factor * static_cast<double>(percentile->count()) / 1000.0;
  if (!(scaled < static_cast<double>(static_threshold.count())))
    return static_threshold;
  milliseconds t{static_cast<milliseconds::rep>(std::ceil(scaled))};
  return std::min(std::max(t, options.lower_bound), static_threshold);
}

hedge_timing
choose_hedge_timing(const hedging_options& options,
                    const hedge_override& request,
                    const timeout_ladder& read_ladder,
                    std::optional<microseconds> primary_percentile) {
  hedge_timing out;
  out.step = request.step.value_or(options.step);
  if (request.threshold) {
    out.threshold = *request.threshold;
  } else {
    out.threshold = static_hedge_threshold(options, read_ladder);
    if (options.mode == hedge_threshold_mode::adaptive)
      out.threshold = adaptive_hedge_threshold(
          options.adaptive, primary_percentile, out.threshold);
  }
  return out;
}

// -- metadata hedging ------------------------------------------------------

bool metadata_hedge_applies(const metadata_hedge_options& options,
                            request_kind kind, bool first_page,
                            std::size_t region_count) {
  if (options.max_concurrent == 0 || region_count < 2) return false;
  switch (kind) {
  case request_kind::metadata_read:
  case request_kind::query_plan:
    return true;
  case request_kind::pkranges_read:
    return first_page;
  default:
    return false;
  }
}

std::optional<std::string>
metadata_hedge_region(const std::vector<std::string>& regions,
                      std::string_view primary_region) {
  for (const auto& r : regions)
    if (!same_region(r, primary_region)) return r;
  return std::nullopt;
}

metadata_outcome classify_metadata_outcome(transport_fault fault, int status,
                                           int substatus) {
  if (fault != transport_fault::none || status < 100)
    return metadata_outcome::regional_failure;
  if (is_answer(status)) return metadata_outcome::success;
  switch (status) {
  case 408:
  case 500:
  case 502:
  case 503:
  case 504:
    return metadata_outcome::regional_failure;
  case 410:
    return substatus == 1022 ? metadata_outcome::regional_failure
                             : metadata_outcome::definitive_error;
  case 403:
    return substatus == 1008 ? metadata_outcome::regional_failure
                             : metadata_outcome::definitive_error;
  default:
    return metadata_outcome::definitive_error;
  }
}

bool metadata_hedge_wins(std::optional<metadata_outcome> primary,
                         metadata_outcome hedge) {
  if (!primary) return hedge == metadata_outcome::success;
  return *primary == metadata_outcome::regional_failure;
}

} // namespace georoute
