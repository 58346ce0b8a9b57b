#include "tests/drill/criteria.hpp"

#include <sstream>

namespace georoute::drill {

std::string secs(int64_t ms) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(1);
  os << static_cast<double>(ms) / 1000.0 << " s";
  return os.str();
}

int64_t read_silence_ms(const config::settings& s) {
  int64_t total = 0;
  for (const auto& step : s.http.ladders.partition_failover)
    total += ms_of(step.timeout) + ms_of(step.delay_after);
  return total;
}

int64_t write_silence_ms(const config::settings& s) {
  const auto& l = s.http.ladders.default_ladder;
  return l.empty() ? 0 : ms_of(l.front().timeout);
}

bool timed_out_in_engine(const op_record& op) {
  return op.result == op_result::failure &&
         (op.error.find("timeout") != std::string::npos ||
          op.error.find("may have been applied") != std::string::npos);
}

std::string region_list(const std::map<std::string, uint64_t>& m) {
  std::string out;
  for (const auto& [r, n] : m)
    out += (out.empty() ? "" : ", ") + r + " " + std::to_string(n);
  return out.empty() ? "none" : out;
}

void require_failover(scenario_run& run, scenario_report& out, int64_t bound_ms,
                      const std::string& why) {
  run.require("failover within " + secs(bound_ms) + " (" + why + ")",
              out.failover_ms ? secs(*out.failover_ms) : "no failover seen",
              out.failover_ms && *out.failover_ms <= bound_ms);
}

namespace {

// Replaces the common failure criterion by one that excludes the writes
// `ambiguous` picks (answered "may have been applied"), and requires each
// of them to be `explained` by the fault script.
template <class Ambiguous, class Explained>
void exclude_writes(scenario_run& run, scenario_report& out,
                    Ambiguous ambiguous_write, Explained explained,
                    const std::string& kind, const std::string& label,
                    const std::string& adjective,
                    const std::string& unexplained_as,
                    const std::string& requirement) {
  // With write retries on, a write that may have been applied goes again
  // where another region takes it: nothing is excused, the common
  // criterion (user-visible failures = 0) stands as it is.
  if (run.engine_settings().retry.write_retries) {
    run.require("write retries on: " + kind + " are not excused",
                "see user-visible failures", true);
    return;
  }
  uint64_t ambiguous = 0, unexplained = 0;
  for (const auto& op : run.ops())
    if (op.type == op_type::write && ambiguous_write(op)) {
      ++ambiguous;
      if (!explained(op)) ++unexplained;
    }
  for (auto& c : out.criteria)
    if (c.requirement.rfind("user-visible failures = 0", 0) == 0) {
      auto others = out.total.failures - ambiguous;
      c.requirement = "user-visible failures = 0, besides " + kind;
      c.measured = std::to_string(others) + " (+" + std::to_string(ambiguous) +
                   " " + label + ")";
      c.passed = others == 0;
    }
  run.require(requirement,
              std::to_string(ambiguous) + " " + adjective + ", " +
                  std::to_string(unexplained) + " " + unexplained_as,
              unexplained == 0);
}

// The common criterion with timed-out writes excluded, each required to
// start inside `windows` (+0.5 s each side).
void exclude_timed_out_writes(
    scenario_run& run, scenario_report& out,
    const std::vector<std::pair<int64_t, int64_t>>& windows,
    const std::string& requirement) {
  exclude_writes(
      run, out, timed_out_in_engine,
      [&](const op_record& op) {
        auto start = op.start_us / 1000;
        return std::any_of(windows.begin(), windows.end(), [&](const auto& w) {
          return start >= w.first - 500 && start <= w.second + 500;
        });
      },
      "writes that timed out in flight", "timed-out writes", "timed out",
      "started outside", requirement);
}

} // namespace

void allow_ambiguous_writes(scenario_run& run, scenario_report& out,
                            const std::vector<int64_t>& silent_at) {
  auto wait = write_silence_ms(run.engine_settings());
  std::vector<std::pair<int64_t, int64_t>> windows;
  for (auto at : silent_at)
    windows.emplace_back(at - wait, at + wait);
  exclude_timed_out_writes(
      run, out, windows,
      "timed-out writes all started before the region was known silent "
      "(its fault + " +
          secs(wait) + ")");
}

void allow_ambiguous_writes_during(
    scenario_run& run, scenario_report& out,
    const std::vector<std::pair<int64_t, int64_t>>& silent) {
  exclude_timed_out_writes(
      run, out, silent,
      "timed-out writes all started while a region hung or reset");
}

void allow_writes_cut_at(scenario_run& run, scenario_report& out,
                         const std::vector<int64_t>& cut_at) {
  exclude_writes(
      run, out,
      [](const op_record& op) {
        return op.result == op_result::failure &&
               op.error.find("may have been applied") != std::string::npos &&
               op.error.find("timeout") == std::string::npos;
      },
      [&](const op_record& op) {
        auto start = op.start_us / 1000, end = op.end_us / 1000;
        return std::any_of(cut_at.begin(), cut_at.end(), [&](int64_t t) {
          return start <= t + 500 && end >= t - 500;
        });
      },
      "writes whose connection the fault cut after they were sent",
      "cut writes", "cut", "not in flight at the cut",
      "writes cut after they were sent were all in flight when a region "
      "dropped its connections (+-0.5 s)");
}

} // namespace georoute::drill
