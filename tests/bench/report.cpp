#include "tests/bench/report.hpp"

#include "georoute/actors/policy/hedging.hpp"
#include "georoute/config/settings.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <sys/utsname.h>
#include <thread>

namespace georoute::bench {

namespace {

using json = nlohmann::json;

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  auto n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

const summary_row* find(const std::vector<summary_row>& rows,
                        const std::string& client, size_t n) {
  for (const auto& r : rows)
    if (r.client == client && r.in_flight == n && r.rounds > 0) return &r;
  return nullptr;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string pad(const std::string& s, size_t w, bool right = true) {
  if (s.size() >= w) return s;
  return right ? std::string(w - s.size(), ' ') + s
               : s + std::string(w - s.size(), ' ');
}

} // namespace

std::string alt_client_name() {
  return config::settings{}.hedging.enabled ? "georoute-hedging-off"
                                            : "georoute-hedging-on";
}

void report::summarize() {
  summary.clear();
  ratios.clear();
  targets.clear();
  for (auto n : in_flight) {
    for (const std::string& client :
         {std::string{"raw"}, std::string{"georoute"},
          std::string{default_scheduler_client}, std::string{echo_client},
          alt_client, std::string{"peer"}, std::string{fleet_down_client}}) {
      summary_row s;
      s.client = client;
      s.in_flight = n;
      std::vector<double> rps, p50, p99, cpu, emu;
      for (const auto& r : rounds_raw) {
        if (r.client != client || r.in_flight != n) continue;
        if (!r.skipped.empty()) {
          s.skipped = r.skipped;
          continue;
        }
        rps.push_back(r.requests_per_second);
        p50.push_back(r.p50_ms);
        p99.push_back(r.p99_ms);
        cpu.push_back(r.cpu_seconds_per_1k);
        if (r.emulator_cpu_seconds >= 0 && r.ok > 0)
          emu.push_back(r.emulator_cpu_seconds * 1000.0 /
                        static_cast<double>(r.ok));
      }
      s.rounds = static_cast<int>(rps.size());
      s.requests_per_second = median(rps);
      s.p50_ms = median(p50);
      s.p99_ms = median(p99);
      s.cpu_seconds_per_1k = median(cpu);
      if (!emu.empty()) s.emulator_cpu_seconds_per_1k = median(emu);
      summary.push_back(s);
    }
    ratio_row q;
    q.in_flight = n;
    auto* raw = find(summary, "raw", n);
    auto* geo = find(summary, "georoute", n);
    auto* peer = find(summary, "peer", n);
    if (geo && raw && raw->requests_per_second > 0) {
      q.georoute_over_raw = geo->requests_per_second / raw->requests_per_second;
      q.cpu_us_over_raw =
          (geo->cpu_seconds_per_1k - raw->cpu_seconds_per_1k) * 1000.0;
    }
    if (geo && peer && peer->requests_per_second > 0)
      q.georoute_over_peer =
          geo->requests_per_second / peer->requests_per_second;
    if (geo && peer && geo->cpu_seconds_per_1k > 0)
      q.peer_cpu_over_georoute =
          peer->cpu_seconds_per_1k / geo->cpu_seconds_per_1k;
    auto* def = find(summary, default_scheduler_client, n);
    if (def && raw && raw->requests_per_second > 0 && def->rounds > 0) {
      q.default_over_raw = def->requests_per_second / raw->requests_per_second;
      q.default_cpu_us_over_raw =
          (def->cpu_seconds_per_1k - raw->cpu_seconds_per_1k) * 1000.0;
    }
    if (def && peer && peer->requests_per_second > 0 && def->rounds > 0) {
      q.default_over_peer =
          def->requests_per_second / peer->requests_per_second;
      if (def->cpu_seconds_per_1k > 0)
        q.peer_cpu_over_default =
            peer->cpu_seconds_per_1k / def->cpu_seconds_per_1k;
    }
    auto* echo = find(summary, echo_client, n);
    if (def && raw && echo &&
        raw->cpu_seconds_per_1k + echo->cpu_seconds_per_1k > 0)
      q.default_cpu_over_raw_plus_echo =
          def->cpu_seconds_per_1k /
          (raw->cpu_seconds_per_1k + echo->cpu_seconds_per_1k);
    auto* alt = find(summary, alt_client, n);
    if (geo && alt && geo->rounds > 0 && alt->rounds > 0) {
      bool on_default = config::settings{}.hedging.enabled;
      auto* on = on_default ? geo : alt;
      auto* off = on_default ? alt : geo;
      if (off->requests_per_second > 0)
        q.hedging_on_over_off =
            on->requests_per_second / off->requests_per_second;
    }
    auto* fleet = find(summary, fleet_down_client, n);
    if (geo && fleet && geo->rounds > 0 && fleet->rounds > 0 &&
        geo->requests_per_second > 0)
      q.fleet_down_over_off =
          fleet->requests_per_second / geo->requests_per_second;
    ratios.push_back(q);
  }
  for (const auto& q : ratios) {
    if (q.in_flight != 16 && q.in_flight != 64) continue;
    auto level = " at " + std::to_string(q.in_flight) + " in flight";
    auto verdict = [](bool known, bool ok) {
      return !known ? "not measured" : ok ? "reached" : "missed";
    };
    // Both modes against the peer (issue 20 asks it of both).
    targets.push_back(
        {"engine loop throughput >= 10x peer" + level,
         q.georoute_over_peer < 0 ? "-" : fmt("%.1fx", q.georoute_over_peer),
         verdict(q.georoute_over_peer >= 0, q.georoute_over_peer >= 10.0)});
    targets.push_back(
        {"CAF default scheduler throughput >= 10x peer" + level,
         q.default_over_peer < 0 ? "-" : fmt("%.1fx", q.default_over_peer),
         verdict(q.default_over_peer >= 0, q.default_over_peer >= 10.0)});
    // Issue 20: the engine loop within 0.9x / 0.8x of raw and 10 us of CPU
    // per read; CAF's default scheduler within 0.6x and 25 us.
    double loop_goal = q.in_flight == 16 ? 0.9 : 0.8;
    targets.push_back(
        {"engine loop >= " + fmt("%.1f", loop_goal) + "x raw" + level,
         q.georoute_over_raw < 0 ? "-" : fmt("%.2fx", q.georoute_over_raw),
         verdict(q.georoute_over_raw >= 0, q.georoute_over_raw >= loop_goal)});
    targets.push_back(
        {"engine loop adds <= 10 us CPU per read" + level,
         q.georoute_over_raw < 0 ? "-" : fmt("%.1f us", q.cpu_us_over_raw),
         verdict(q.georoute_over_raw >= 0, q.cpu_us_over_raw <= 10.0)});
    targets.push_back(
        {"CAF default scheduler >= 0.6x raw" + level,
         q.default_over_raw < 0 ? "-" : fmt("%.2fx", q.default_over_raw),
         verdict(q.default_over_raw >= 0, q.default_over_raw >= 0.6)});
    targets.push_back(
        {"CAF default scheduler adds <= 25 us CPU per read" + level,
         q.default_over_raw < 0 ? "-"
                                : fmt("%.1f us", q.default_cpu_us_over_raw),
         verdict(q.default_over_raw >= 0, q.default_cpu_us_over_raw <= 25.0)});
    if (q.in_flight == 16)
      targets.push_back(
          {"hedging on costs < 5 % of reads/s when nothing is slow" + level,
           q.hedging_on_over_off < 0 ? "-"
                                     : fmt("%.3fx", q.hedging_on_over_off),
           q.hedging_on_over_off < 0       ? "not measured"
           : q.hedging_on_over_off >= 0.95 ? "reached"
                                           : "missed"});
    if (q.in_flight == 16)
      targets.push_back(
          {"fleet health on with its NATS server down costs < 5 % of "
           "reads/s" +
               level,
           q.fleet_down_over_off < 0 ? "-"
                                     : fmt("%.3fx", q.fleet_down_over_off),
           q.fleet_down_over_off < 0       ? "not measured"
           : q.fleet_down_over_off >= 0.95 ? "reached"
                                           : "missed"});
  }
  for (const auto& f : failover) {
    if (f.client != "georoute" || f.scenario != "region-hang") continue;
    auto threshold = static_cast<double>(
        static_hedge_threshold(
            config::settings{}.hedging,
            config::settings{}.http.ladders.partition_failover)
            .count());
    bool met = f.skipped.empty() && f.failed == 0 &&
               f.max_latency_after_failover_ms >= 0 &&
               f.max_latency_after_failover_ms <= threshold + 100;
    targets.push_back(
        {"region hang at the library's defaults: after the first hedge no "
         "read slower than the threshold + 100 ms (" +
             fmt("%.0f", threshold + 100) + " ms), none failed",
         f.skipped.empty() ? fmt("%.0f ms", f.max_latency_after_failover_ms) +
                                 ", " + std::to_string(f.failed) + " failed"
                           : f.skipped,
         f.skipped.empty() ? (met ? "reached" : "missed") : "not measured"});
  }
  for (const auto& c : cold) {
    if (c.client != "georoute") continue;
    // One load each: one collection read, one pkranges page (plus the 304
    // that ends the change feed, which every load reads up to).
    bool one = c.skipped.empty() && c.collection_reads == 1 &&
               c.pkranges_reads - c.pkranges_not_modified == 1 && c.failed == 0;
    targets.push_back(
        {"metadata amplification exactly 1, " + std::to_string(c.callers) +
             " callers",
         std::to_string(c.collection_reads) + " collection read, " +
             std::to_string(c.pkranges_reads) + " pkranges requests (" +
             std::to_string(c.pkranges_not_modified) +
             " of them the 304 "
             "that ends the feed)",
         c.skipped.empty() ? (one ? "reached" : "missed") : "not measured"});
  }
  for (const auto& f : sustain) {
    auto verdict = [](bool known, bool ok) {
      return !known ? "not measured" : ok ? "reached" : "missed";
    };
    bool known = f.skipped.empty() && f.ok > 0;
    auto mib = [](double b) { return fmt("%.1f", b / 1048576.0); };
    targets.push_back(
        {"resident memory flat (<= " + mib(sustain_flat_bytes) +
             " MiB growth after the first sixth), none failed, " +
             fmt("%.0f", f.seconds) + " s at " + std::to_string(f.in_flight) +
             " in flight, " + f.client,
         known
             ? mib(static_cast<double>(f.rss_settled)) + " -> " +
                   mib(static_cast<double>(f.rss_end)) + " MiB (" +
                   (f.growth_bytes() >= 0 ? "+" : "") + mib(f.growth_bytes()) +
                   "), " + std::to_string(f.failed) + " failed"
             : (f.skipped.empty() ? std::string{"no read succeeded"}
                                  : f.skipped),
         verdict(known,
                 f.failed == 0 && f.growth_bytes() <= sustain_flat_bytes)});
  }
  if (has_memory)
    targets.push_back(
        {"resident memory, " + std::to_string(memory.collections) +
             " collections x " + std::to_string(memory.ranges_per_collection) +
             " ranges, measured",
         memory.skipped.empty()
             ? fmt("%.0f bytes per range", memory.bytes_per_range)
             : memory.skipped,
         memory.skipped.empty() ? "reached" : "not measured"});
}

std::string machine_description() {
  std::string model;
  std::ifstream cpuinfo{"/proc/cpuinfo"};
  std::string line;
  while (std::getline(cpuinfo, line))
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  utsname u{};
  uname(&u);
  std::ostringstream s;
  s << (model.empty() ? "unknown CPU" : model) << ", "
    << std::thread::hardware_concurrency() << " CPUs, " << u.sysname << " "
    << u.release;
  return s.str();
}

std::string render_text(const report& r) {
  std::ostringstream o;
  o << "\ngeoroute bench: point reads of one small document (~100 B), "
       "3-region emulator in a child process\n"
    << "machine: " << machine_description() << "\n"
    << "rounds: " << r.rounds << " x " << fmt("%.1f", r.seconds_per_round)
    << " s per client and level (after " << fmt("%.1f", r.warmup_seconds)
    << " s warm-up), interleaved; medians over rounds\n"
    << "peer: " << (r.peer_version.empty() ? "-" : r.peer_version) << "\n\n";
  o << "in flight | client   |    req/s |  p50 ms |  p99 ms | CPU s/1k req "
       "| emulator CPU s/1k\n"
    << "----------|----------|----------|---------|---------|-------------"
       "-|------------------\n";
  for (const auto& s : r.summary) {
    o << pad(std::to_string(s.in_flight), 9) << " | " << pad(s.client, 8, false)
      << " | ";
    if (s.rounds == 0) {
      o << "skipped: " << s.skipped << "\n";
      continue;
    }
    o << pad(fmt("%.0f", s.requests_per_second), 8) << " | "
      << pad(fmt("%.3f", s.p50_ms), 7) << " | " << pad(fmt("%.3f", s.p99_ms), 7)
      << " | " << pad(fmt("%.3f", s.cpu_seconds_per_1k), 12) << " | "
      << pad(s.emulator_cpu_seconds_per_1k < 0
                 ? std::string{"-"}
                 : fmt("%.3f", s.emulator_cpu_seconds_per_1k),
             17)
      << "\n";
  }
  o << "\nin flight | georoute/raw req/s | georoute/peer req/s | georoute CPU "
       "over raw, us/read | peer CPU / georoute CPU\n"
    << "----------|--------------------|---------------------|---------------"
       "---------------|------------------------\n";
  for (const auto& q : r.ratios)
    o << pad(std::to_string(q.in_flight), 9) << " | "
      << pad(q.georoute_over_raw < 0 ? "-" : fmt("%.2f", q.georoute_over_raw),
             18)
      << " | "
      << pad(q.georoute_over_peer < 0 ? "-" : fmt("%.1f", q.georoute_over_peer),
             19)
      << " | " << pad(fmt("%.1f", q.cpu_us_over_raw), 28) << " | "
      << pad(q.peer_cpu_over_georoute < 0
                 ? "-"
                 : fmt("%.1f", q.peer_cpu_over_georoute),
             22)
      << "\n";
  o << "\n(georoute ran on the " << r.georoute_scheduler << "; "
    << default_scheduler_client << " is the same engine on CAF's default "
    << "scheduler, " << echo_client << " the same callers on it asking an "
    << "actor that answers at once)\n"
    << "in flight | " << default_scheduler_client
    << "/raw req/s | its CPU over raw, us/read | its req/s over peer's | "
       "peer CPU / its CPU | its CPU / (raw + "
    << echo_client << " CPU)\n"
    << "----------|----------------------------|---------------------------|"
       "-----------------------|--------------------|"
       "------------------------------\n";
  for (const auto& q : r.ratios)
    o << pad(std::to_string(q.in_flight), 9) << " | "
      << pad(q.default_over_raw < 0 ? "-" : fmt("%.2f", q.default_over_raw), 26)
      << " | "
      << pad(q.default_over_raw < 0 ? "-"
                                    : fmt("%.1f", q.default_cpu_us_over_raw),
             25)
      << " | "
      << pad(q.default_over_peer < 0 ? "-" : fmt("%.1f", q.default_over_peer),
             21)
      << " | "
      << pad(q.peer_cpu_over_default < 0 ? "-"
                                         : fmt("%.1f", q.peer_cpu_over_default),
             18)
      << " | "
      << (q.default_cpu_over_raw_plus_echo < 0
              ? "-"
              : fmt("%.2f", q.default_cpu_over_raw_plus_echo))
      << "\n";
  if (!r.failover.empty()) {
    o << "\nfailover (16 in flight; fault on the first preferred / write "
         "region)\n"
      << "scenario      | client   | fault s | failover ms | failed ops | ok "
         "ops | max latency ms | ops > 100 ms | max ms after failover\n"
      << "--------------|----------|---------|-------------|------------|----"
         "----|----------------|--------------|----------------------\n";
    for (const auto& f : r.failover) {
      o << pad(f.scenario, 13, false) << " | " << pad(f.client, 8, false)
        << " | ";
      if (!f.skipped.empty()) {
        o << "skipped: " << f.skipped << "\n";
        continue;
      }
      o << pad(fmt("%.1f", f.fault_seconds), 7) << " | "
        << pad(f.failover_ms < 0 ? std::string{"none"}
                                 : fmt("%.0f", f.failover_ms),
               11)
        << " | " << pad(std::to_string(f.failed), 10) << " | "
        << pad(std::to_string(f.ok), 6) << " | "
        << pad(fmt("%.0f", f.max_latency_ms), 14) << " | "
        << pad(std::to_string(f.slow), 12) << " | "
        << pad(f.max_latency_after_failover_ms < 0
                   ? std::string{"-"}
                   : fmt("%.0f", f.max_latency_after_failover_ms),
               21)
        << (f.note.empty() ? "" : "  ") << f.note << "\n";
    }
  }
  if (!r.accounting.empty()) {
    o << "\nper read (one window each, counted over the whole process; "
         "allocations = malloc/calloc/realloc calls)\n"
      << "client   | in flight | reads  | CPU us | thread runs | sleeps | "
         "allocations | alloc bytes | router timers\n"
      << "---------|-----------|--------|--------|-------------|--------|"
         "-------------|-------------|--------------\n";
    auto opt = [](double v, const char* f) {
      return v < 0 ? std::string{"-"} : fmt(f, v);
    };
    for (const auto& a : r.accounting) {
      o << pad(a.client, 8, false) << " | "
        << pad(std::to_string(a.in_flight), 9) << " | ";
      if (!a.skipped.empty()) {
        o << "skipped: " << a.skipped << "\n";
        continue;
      }
      o << pad(std::to_string(a.reads), 6) << " | "
        << pad(fmt("%.1f", a.cpu_us), 6) << " | "
        << pad(fmt("%.2f", a.runs), 11) << " | "
        << pad(fmt("%.2f", a.sleeps), 6) << " | "
        << pad(opt(a.allocations, "%.1f"), 11) << " | "
        << pad(opt(a.alloc_bytes, "%.0f"), 11) << " | "
        << opt(a.router_timers, "%.4f") << "\n";
    }
  }
  if (!r.feed.empty()) {
    o << "\nchange feed: " << r.feed_documents_written
      << " documents drained from the beginning over every range, one page "
         "at a time\n"
      << "round | client   | documents | pages | seconds | docs/s  | CPU "
         "us/doc\n"
      << "------|----------|-----------|-------|---------|---------|---------"
         "--\n";
    std::map<std::string, std::vector<double>> rates, cpus;
    for (const auto& f : r.feed) {
      o << pad(std::to_string(f.round + 1), 5) << " | "
        << pad(f.client, 8, false) << " | ";
      if (!f.skipped.empty()) {
        o << "skipped: " << f.skipped << "\n";
        continue;
      }
      o << pad(std::to_string(f.documents), 9) << " | "
        << pad(std::to_string(f.pages), 5) << " | "
        << pad(fmt("%.2f", f.seconds), 7) << " | "
        << pad(fmt("%.0f", f.documents_per_second), 7) << " | "
        << fmt("%.2f", f.cpu_us_per_document)
        << (f.error.empty() ? std::string{} : "  stopped: " + f.error) << "\n";
      if (f.error.empty()) {
        rates[f.client].push_back(f.documents_per_second);
        cpus[f.client].push_back(f.cpu_us_per_document);
      }
    }
    auto median = [](std::vector<double> v) {
      if (v.empty()) return 0.0;
      std::sort(v.begin(), v.end());
      auto n = v.size();
      return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    };
    if (!rates["georoute"].empty() && !rates["peer"].empty()) {
      auto gr = median(rates["georoute"]), pr = median(rates["peer"]);
      auto gc = median(cpus["georoute"]), pc = median(cpus["peer"]);
      o << "median: georoute " << fmt("%.0f", gr) << " docs/s, "
        << fmt("%.2f", gc) << " CPU us/doc; peer " << fmt("%.0f", pr)
        << " docs/s, " << fmt("%.2f", pc) << " CPU us/doc; georoute/peer "
        << fmt("%.2f", pr > 0 ? gr / pr : 0) << "x the rate, "
        << fmt("%.2f", pc > 0 ? gc / pc : 0) << "x the CPU per document\n";
    }
  }
  if (!r.bulk.empty()) {
    o << "\nbulk: creates of about 250 bytes into an empty collection, each "
         "key its own\n"
      << "client   | mode           | ok      | seconds | ops/s   | CPU us/op "
         "| 429s    | share of allowed\n"
      << "---------|----------------|---------|---------|---------|----------"
         "-|---------|-----------------\n";
    double point = 0, bulk_g = 0, bulk_p = 0;
    for (const auto& b : r.bulk) {
      o << pad(b.client, 8, false) << " | " << pad(b.mode, 14, false) << " | ";
      if (!b.skipped.empty()) {
        o << "skipped: " << b.skipped << "\n";
        continue;
      }
      o << pad(std::to_string(b.ok), 7) << " | "
        << pad(fmt("%.2f", b.seconds), 7) << " | "
        << pad(fmt("%.0f", b.ops_per_second), 7) << " | "
        << pad(fmt("%.2f", b.cpu_us_per_op), 9) << " | "
        << pad(b.client == "georoute" ? std::to_string(b.throttled) : "-", 7)
        << " | "
        << (b.allowed_per_second > 0
                ? fmt("%.1f", 100 * b.share_of_allowed) + " % of " +
                      fmt("%.0f", b.allowed_per_second) + "/s"
                : std::string{"-"})
        << (b.error.empty() ? std::string{} : "  error: " + b.error) << "\n";
      if (b.mode == "point creates") point = b.ops_per_second;
      if (b.mode == "bulk" && b.client == "georoute") bulk_g = b.ops_per_second;
      if (b.mode == "bulk" && b.client == "peer") bulk_p = b.ops_per_second;
    }
    if (point > 0 && bulk_g > 0)
      o << "georoute bulk / point creates: " << fmt("%.2f", bulk_g / point)
        << "x";
    if (bulk_p > 0 && bulk_g > 0)
      o << "; georoute bulk / peer bulk: " << fmt("%.2f", bulk_g / bulk_p)
        << "x";
    if (point > 0 || bulk_p > 0) o << "\n";
  }
  if (!r.cold.empty()) {
    o << "\ncold start: K callers at once, uncached collection\n"
      << "callers | client   | collection reads | pkranges reads | document "
         "reads | account/other | ok | failed | seconds\n"
      << "--------|----------|------------------|----------------|----------"
         "------|---------------|----|--------|--------\n";
    for (const auto& c : r.cold) {
      o << pad(std::to_string(c.callers), 7) << " | " << pad(c.client, 8, false)
        << " | ";
      if (!c.skipped.empty()) {
        o << "skipped: " << c.skipped << "\n";
        continue;
      }
      o << pad(std::to_string(c.collection_reads), 16) << " | "
        << pad(std::to_string(c.pkranges_reads) +
                   (c.pkranges_not_modified
                        ? " (" + std::to_string(c.pkranges_not_modified) +
                              " 304)"
                        : std::string{}),
               14)
        << " | " << pad(std::to_string(c.document_reads), 14) << " | "
        << pad(std::to_string(c.other), 13) << " | "
        << pad(std::to_string(c.ok), 2) << " | "
        << pad(std::to_string(c.failed), 6) << " | "
        << pad(fmt("%.3f", c.seconds), 7) << "\n";
    }
  }
  if (!r.sustain.empty()) {
    o << "\nsustained load: resident memory of this process (MiB), sampled "
         "at twelve even steps; growth counted from the sample a sixth in\n"
      << "client   | in flight | seconds | reads/s | failed | settled -> end "
         "(max) | samples\n"
      << "---------|-----------|---------|---------|--------|---------------"
         "-------|--------\n";
    for (const auto& f : r.sustain) {
      o << pad(f.client, 8, false) << " | "
        << pad(std::to_string(f.in_flight), 9) << " | ";
      if (!f.skipped.empty()) o << "(" << f.skipped << ") ";
      o << pad(fmt("%.0f", f.seconds), 7) << " | "
        << pad(fmt("%.0f", f.requests_per_second), 7) << " | "
        << pad(std::to_string(f.failed), 6) << " | "
        << fmt("%.1f", f.rss_settled / 1048576.0) << " -> "
        << fmt("%.1f", f.rss_end / 1048576.0) << " ("
        << fmt("%.1f", f.rss_max / 1048576.0) << ") |";
      for (const auto& [t, rss] : f.samples)
        o << " " << fmt("%.1f", rss / 1048576.0);
      o << "\n";
    }
  }
  if (r.has_memory) {
    const auto& m = r.memory;
    o << "\nmemory: " << m.collections << " collections x "
      << m.ranges_per_collection << " ranges: ";
    if (!m.skipped.empty())
      o << "skipped: " << m.skipped << "\n";
    else
      o << m.collections_cached << " collections and " << m.maps_cached
        << " routing maps cached, RSS " << fmt("%.1f", m.rss_before / 1048576.0)
        << " -> " << fmt("%.1f", m.rss_after / 1048576.0)
        << " MiB = " << fmt("%.0f", m.bytes_per_range) << " bytes per range\n";
  }
  o << "\ntargets (issues 10 and 20):\n";
  for (const auto& t : r.targets)
    o << "  " << pad(t.verdict, 12, false) << " " << t.name << ": "
      << t.measured << "\n";
  o << "\ntotal " << fmt("%.0f", r.total_seconds) << " s\n";
  return o.str();
}

bool write_json(const report& r, const std::string& file) {
  json j;
  j["command"] = r.command;
  j["machine"] = machine_description();
  j["peer"] = r.peer_version;
  j["seconds_per_round"] = r.seconds_per_round;
  j["warmup_seconds"] = r.warmup_seconds;
  j["rounds"] = r.rounds;
  j["in_flight"] = r.in_flight;
  j["total_seconds"] = r.total_seconds;
  for (const auto& x : r.rounds_raw)
    j["round_figures"].push_back(
        {{"client", x.client},
         {"in_flight", x.in_flight},
         {"round", x.round},
         {"seconds", x.seconds},
         {"ok", x.ok},
         {"failed", x.failed},
         {"requests_per_second", x.requests_per_second},
         {"p50_ms", x.p50_ms},
         {"p99_ms", x.p99_ms},
         {"cpu_seconds", x.cpu_seconds},
         {"cpu_seconds_per_1k", x.cpu_seconds_per_1k},
         {"emulator_cpu_seconds", x.emulator_cpu_seconds},
         {"skipped", x.skipped}});
  for (const auto& s : r.summary)
    j["summary"].push_back(
        {{"client", s.client},
         {"in_flight", s.in_flight},
         {"rounds", s.rounds},
         {"requests_per_second", s.requests_per_second},
         {"p50_ms", s.p50_ms},
         {"p99_ms", s.p99_ms},
         {"cpu_seconds_per_1k", s.cpu_seconds_per_1k},
         {"emulator_cpu_seconds_per_1k", s.emulator_cpu_seconds_per_1k},
         {"skipped", s.skipped}});
  for (const auto& q : r.ratios)
    j["ratios"].push_back(
        {{"in_flight", q.in_flight},
         {"default_scheduler_over_raw", q.default_over_raw},
         {"default_scheduler_cpu_us_over_raw", q.default_cpu_us_over_raw},
         {"georoute_over_raw", q.georoute_over_raw},
         {"default_scheduler_over_peer", q.default_over_peer},
         {"peer_cpu_over_default_scheduler", q.peer_cpu_over_default},
         {"default_scheduler_cpu_over_raw_plus_echo",
          q.default_cpu_over_raw_plus_echo},
         {"georoute_over_peer", q.georoute_over_peer},
         {"cpu_us_over_raw", q.cpu_us_over_raw},
         {"peer_cpu_over_georoute", q.peer_cpu_over_georoute},
         {"hedging_on_over_off", q.hedging_on_over_off},
         {"fleet_down_over_off", q.fleet_down_over_off}});
  for (const auto& f : r.failover)
    j["failover"].push_back(
        {{"scenario", f.scenario},
         {"client", f.client},
         {"fault_seconds", f.fault_seconds},
         {"failover_ms", f.failover_ms},
         {"failed", f.failed},
         {"ok", f.ok},
         {"max_latency_ms", f.max_latency_ms},
         {"max_latency_after_failover_ms", f.max_latency_after_failover_ms},
         {"slow", f.slow},
         {"skipped", f.skipped},
         {"note", f.note}});
  for (const auto& a : r.accounting)
    j["accounting"].push_back({{"client", a.client},
                               {"in_flight", a.in_flight},
                               {"reads", a.reads},
                               {"cpu_us", a.cpu_us},
                               {"thread_runs", a.runs},
                               {"sleeps", a.sleeps},
                               {"allocations", a.allocations},
                               {"alloc_bytes", a.alloc_bytes},
                               {"router_timers", a.router_timers},
                               {"threads", a.threads},
                               {"skipped", a.skipped}});
  for (const auto& f : r.feed)
    j["change_feed"].push_back(
        {{"client", f.client},
         {"round", f.round},
         {"documents", f.documents},
         {"documents_written", r.feed_documents_written},
         {"pages", f.pages},
         {"seconds", f.seconds},
         {"cpu_seconds", f.cpu_seconds},
         {"documents_per_second", f.documents_per_second},
         {"cpu_us_per_document", f.cpu_us_per_document},
         {"error", f.error},
         {"skipped", f.skipped}});
  for (const auto& b : r.bulk)
    j["bulk"].push_back({{"client", b.client},
                         {"mode", b.mode},
                         {"operations", b.operations},
                         {"ok", b.ok},
                         {"throttled", b.throttled},
                         {"seconds", b.seconds},
                         {"cpu_seconds", b.cpu_seconds},
                         {"ops_per_second", b.ops_per_second},
                         {"cpu_us_per_op", b.cpu_us_per_op},
                         {"allowed_per_second", b.allowed_per_second},
                         {"share_of_allowed", b.share_of_allowed},
                         {"error", b.error},
                         {"skipped", b.skipped}});
  for (const auto& c : r.cold)
    j["cold_start"].push_back(
        {{"client", c.client},
         {"callers", c.callers},
         {"collection_reads", c.collection_reads},
         {"pkranges_reads", c.pkranges_reads},
         {"pkranges_not_modified", c.pkranges_not_modified},
         {"document_reads", c.document_reads},
         {"other_requests", c.other},
         {"ok", c.ok},
         {"failed", c.failed},
         {"seconds", c.seconds},
         {"skipped", c.skipped}});
  for (const auto& f : r.sustain) {
    json samples = json::array();
    for (const auto& [t, rss] : f.samples)
      samples.push_back({{"seconds", t}, {"rss", rss}});
    j["sustain"].push_back({{"client", f.client},
                            {"in_flight", f.in_flight},
                            {"seconds", f.seconds},
                            {"ok", f.ok},
                            {"failed", f.failed},
                            {"requests_per_second", f.requests_per_second},
                            {"rss_settled", f.rss_settled},
                            {"rss_end", f.rss_end},
                            {"rss_max", f.rss_max},
                            {"growth_bytes", f.growth_bytes()},
                            {"reads_after_settled", f.reads_after_settled},
                            {"samples", samples},
                            {"skipped", f.skipped}});
  }
  if (r.has_memory) {
    const auto& m = r.memory;
    j["memory"] = {{"collections", m.collections},
                   {"ranges_per_collection", m.ranges_per_collection},
                   {"collections_cached", m.collections_cached},
                   {"maps_cached", m.maps_cached},
                   {"rss_before", m.rss_before},
                   {"rss_after", m.rss_after},
                   {"bytes_per_range", m.bytes_per_range},
                   {"seconds", m.seconds},
                   {"skipped", m.skipped}};
  }
  for (const auto& t : r.targets)
    j["targets"].push_back(
        {{"name", t.name}, {"measured", t.measured}, {"verdict", t.verdict}});
  std::ofstream out{file};
  out << j.dump(2) << "\n";
  return out.good();
}

} // namespace georoute::bench
