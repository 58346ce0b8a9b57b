#pragma once

// What the scenario scripts share: the engine's failover paths from its
// settings, and the criteria built from the operations the callers saw.

#include "georoute/config/settings.hpp"
#include "tests/drill/report.hpp"
#include "tests/drill/scenario_run.hpp"
#include "tests/drill/workload.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace georoute::drill {

/// "1.5 s".
std::string secs(int64_t ms);

inline int64_t ms_of(std::chrono::milliseconds d) {
  return d.count();
}

/// The longest a read waits for a silent region before failing over: the
/// whole partition-failover ladder (its steps retry the same endpoint).
int64_t read_silence_ms(const config::settings& s);

/// A write waits for one attempt of the default ladder (timeouts of writes
/// are not retried).
int64_t write_silence_ms(const config::settings& s);

/// A write the engine answered `errc::outcome_unknown`: it may have been
/// applied (recognised by its code, never by its text).
bool outcome_unknown(const op_record& op);

/// A failure because an attempt timed out inside the engine, or lost its
/// connection after the request went out: a write that may have been
/// applied, and is therefore not retried.
bool timed_out_in_engine(const op_record& op);

/// "West US 12, East US 3", or "none".
std::string region_list(const std::map<std::string, uint64_t>& m);

/// How many operations match `pred`.
template <class Pred>
uint64_t count(const std::vector<op_record>& ops, Pred pred) {
  return static_cast<uint64_t>(std::count_if(ops.begin(), ops.end(), pred));
}

/// Successful operations matching `pred`, by serving region.
template <class Pred>
std::map<std::string, uint64_t> served(const std::vector<op_record>& ops,
                                       Pred pred) {
  std::map<std::string, uint64_t> m;
  for (const auto& op : ops)
    if (op.result == op_result::success && pred(op)) ++m[op.region];
  return m;
}

/// Per site: when its first operation matching `pred` succeeded after
/// `after_ms` (each site's engine learns a change on its own).
template <class Pred>
std::map<int, int64_t> settled_per_site(const std::vector<op_record>& ops,
                                        int64_t after_ms, Pred pred) {
  std::map<int, int64_t> first;
  for (const auto& op : ops) {
    if (op.result != op_result::success || op.end_us / 1000 < after_ms ||
        !pred(op))
      continue;
    auto end = op.end_us / 1000;
    auto [i, fresh] = first.emplace(op.site, end);
    if (!fresh) i->second = std::min(i->second, end);
  }
  return first;
}

/// Requires a failover (`out.failover_ms`) within `bound_ms`.
void require_failover(scenario_run& run, scenario_report& out, int64_t bound_ms,
                      const std::string& why);

/// The common criterion counts every failure. A write in flight to a
/// region when it went silent times out inside the engine and is not
/// retried (it may have been applied): reported on its own and excluded,
/// provided every one of them started within one write timeout (+0.5 s) of
/// an instant in `silent_at`, i.e. before the engine could know and mark
/// the region.
void allow_ambiguous_writes(scenario_run& run, scenario_report& out,
                            const std::vector<int64_t>& silent_at);

/// The same for the soak, where a region may hang longer than a mark
/// lives: every timed-out write must have sent its ambiguous attempt inside
/// one of the `silent` intervals (a hang's start to its end, +0.5 s each
/// side); a write whose connection was cut (no timeout) may instead have
/// been in flight (+-0.5 s) at an instant of `cut_at` (a region starting to
/// refuse connections closes the ones it has).
void allow_ambiguous_writes_during(
    scenario_run& run, scenario_report& out,
    const std::vector<std::pair<int64_t, int64_t>>& silent,
    const std::vector<int64_t>& cut_at = {});

/// One line about an operation for the report: its times and error, every
/// attempt (region, endpoint, when sent, what came back, the connection and
/// whether it was reused), and the nearest fault before and after the
/// attempt that failed.
std::string describe_op(const op_record& op,
                        const std::vector<fault_marker>& faults);

/// Whether the write's ambiguous attempt (the last that got no answer) was
/// sent inside one of `windows` (+0.5 s each side).
bool sent_inside(const op_record& op,
                 const std::vector<std::pair<int64_t, int64_t>>& windows);

/// Whether that attempt was in flight (+-0.5 s) at one of `instants`.
bool in_flight_at(const op_record& op, const std::vector<int64_t>& instants);

/// A region that starts refusing connections closes the ones it has: a
/// write sent on one just before gets "connection lost after the write was
/// sent" (it may have been applied, so it is not resent). Such writes are
/// reported on their own and excluded, provided each was in flight (+-0.5 s)
/// at an instant in `cut_at`. Timeouts are not excused by this.
void allow_writes_cut_at(scenario_run& run, scenario_report& out,
                         const std::vector<int64_t>& cut_at);

/// A straight line fitted to one memory series: its slope in MiB per
/// minute, and the slope's standard error. The samples are a second apart
/// and what pushes one up (requests held by a hang, a burst of versions in
/// the emulator) pushes the next ones up too: the error counts that, by the
/// residuals' lag-1 autocorrelation rho, as (1 + rho) / (1 - rho) times
/// fewer independent samples (rho taken between 0 and 0.95).
struct memory_slope {
  double per_min = 0;
  double std_error = 0;
  /// The slope less `k` standard errors: how fast memory rises at least,
  /// at that confidence.
  double at_least(double k) const { return per_min - k * std_error; }
};

/// The least-squares line through one memory series
/// (`&memory_point::rss_mib`, `heap_mib`, or any value of a sample) over its
/// samples from `from_ms` on; nullopt with fewer than 8 such samples.
std::optional<memory_slope>
slope_per_min(const std::vector<memory_point>& series,
              const std::function<double(const memory_point&)>& value,
              int64_t from_ms);

/// The soak (soak.cpp).
void soak(scenario_run& run, scenario_report& out, uint64_t seed);

/// Kills every actor of one site's engine in turn under load (soak.cpp).
void kill_each_actor(scenario_run& run, scenario_report& out);

} // namespace georoute::drill
