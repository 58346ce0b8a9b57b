#include "tests/bench/measure.hpp"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>
#include <unistd.h>

namespace georoute::bench {

event_log::event_log(size_t writers, steady::time_point epoch, bool keep_events)
    : epoch_(epoch), writers_(writers) {
  if (!keep_events) {
    tallies_ = std::make_unique<slot_tally[]>(writers);
    return;
  }
  slots_.resize(writers);
  for (auto& s : slots_)
    s.reserve(1 << 14);
}

std::pair<uint64_t, uint64_t> event_log::tally() const {
  std::pair<uint64_t, uint64_t> sum{0, 0};
  if (!tallies_) return sum;
  for (size_t i = 0; i < writers_; ++i) {
    sum.first += tallies_[i].ok.load(std::memory_order_relaxed);
    sum.second += tallies_[i].failed.load(std::memory_order_relaxed);
  }
  return sum;
}

int64_t event_log::us_since_epoch(steady::time_point t) const {
  return std::chrono::duration_cast<std::chrono::microseconds>(t - epoch_)
      .count();
}

std::vector<op_event> event_log::take() {
  std::vector<op_event> all;
  size_t n = 0;
  for (const auto& s : slots_)
    n += s.size();
  all.reserve(n);
  for (auto& s : slots_) {
    all.insert(all.end(), s.begin(), s.end());
    s.clear();
  }
  std::sort(all.begin(), all.end(), [](const op_event& a, const op_event& b) {
    return a.end_us < b.end_us;
  });
  return all;
}

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

double process_cpu_seconds(int pid) {
  std::ifstream stat{"/proc/" + std::to_string(pid) + "/stat"};
  std::string line;
  if (!std::getline(stat, line)) return -1;
  auto close = line.rfind(')');
  if (close == std::string::npos || close + 2 > line.size()) return -1;
  // After the ")" that ends the name: field 3 (state) ... 14 utime, 15 stime.
  std::istringstream in{line.substr(close + 2)};
  std::string field;
  double utime = 0;
  double stime = 0;
  for (int i = 3; i <= 15 && in >> field; ++i) {
    if (i == 14) utime = std::stod(field);
    if (i == 15) stime = std::stod(field);
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

uint64_t resident_bytes() {
  std::ifstream statm{"/proc/self/statm"};
  uint64_t size = 0;
  uint64_t resident = 0;
  statm >> size >> resident;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

thread_totals process_threads() {
  thread_totals t;
  std::error_code ec;
  for (const auto& entry :
       std::filesystem::directory_iterator{"/proc/self/task", ec}) {
    ++t.threads;
    std::ifstream sched{entry.path() / "schedstat"};
    uint64_t run_ns = 0;
    uint64_t wait_ns = 0;
    uint64_t runs = 0;
    if (sched >> run_ns >> wait_ns >> runs) t.runs += runs;
    std::ifstream status{entry.path() / "status"};
    std::string line;
    while (std::getline(status, line)) {
      auto value = [&](std::string_view key) -> std::optional<uint64_t> {
        if (line.rfind(key, 0) != 0) return std::nullopt;
        return std::stoull(line.substr(key.size()));
      };
      if (auto v = value("voluntary_ctxt_switches:"))
        t.voluntary_switches += *v;
      else if (auto v = value("nonvoluntary_ctxt_switches:"))
        t.involuntary_switches += *v;
    }
  }
  return t;
}

double quantile_ms(const std::vector<int64_t>& sorted_us, double q) {
  if (sorted_us.empty()) return 0;
  // Nearest rank: the smallest value with at least q of the sample at or
  // below it.
  auto rank =
      static_cast<size_t>(std::ceil(q * static_cast<double>(sorted_us.size())));
  rank = std::clamp<size_t>(rank, 1, sorted_us.size());
  return static_cast<double>(sorted_us[rank - 1]) / 1000.0;
}

round_figures figures_of(const std::vector<op_event>& events, int64_t t0_us,
                         int64_t t1_us, double cpu_seconds) {
  round_figures f;
  std::vector<int64_t> lat;
  lat.reserve(events.size());
  for (const auto& e : events) {
    if (e.end_us < t0_us || e.end_us >= t1_us) continue;
    if (e.ok) {
      ++f.ok;
      lat.push_back(e.end_us - e.start_us);
    } else {
      ++f.failed;
    }
  }
  std::sort(lat.begin(), lat.end());
  f.seconds = static_cast<double>(t1_us - t0_us) / 1e6;
  f.requests_per_second =
      f.seconds > 0 ? static_cast<double>(f.ok) / f.seconds : 0;
  f.p50_ms = quantile_ms(lat, 0.50);
  f.p99_ms = quantile_ms(lat, 0.99);
  f.cpu_seconds = cpu_seconds;
  f.cpu_seconds_per_1k =
      f.ok > 0 ? cpu_seconds * 1000.0 / static_cast<double>(f.ok) : 0;
  return f;
}

failover_figures failover_of(const std::vector<op_event>& events,
                             int64_t fault_us, int64_t restore_us) {
  failover_figures f;
  f.fault_seconds = static_cast<double>(restore_us - fault_us) / 1e6;
  int64_t first_ok = -1;
  for (const auto& e : events) {
    if (e.end_us < fault_us) continue;
    e.ok ? ++f.ok : ++f.failed;
    auto lat = e.end_us - e.start_us;
    f.max_latency_ms =
        std::max(f.max_latency_ms, static_cast<double>(lat) / 1000.0);
    if (lat > 100000) ++f.slow;
    if (e.ok && e.start_us >= fault_us && (first_ok < 0 || e.end_us < first_ok))
      first_ok = e.end_us;
  }
  if (first_ok >= 0) {
    f.failover_ms = static_cast<double>(first_ok - fault_us) / 1000.0;
    for (const auto& e : events)
      if (e.start_us >= first_ok && e.start_us <= restore_us)
        f.max_latency_after_failover_ms =
            std::max(f.max_latency_after_failover_ms,
                     static_cast<double>(e.end_us - e.start_us) / 1000.0);
  }
  return f;
}

} // namespace georoute::bench
