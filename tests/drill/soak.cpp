// The soak: random faults from the whole menu at random times while the
// workload runs, one at a time (at least two regions always healthy), each
// held 1-4 s with 1-3 s of calm after it; then memory, leaks and the common
// criteria.

#include "tests/drill/criteria.hpp"

#include <algorithm>
#include <caf/all.hpp>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <sstream>

namespace georoute::drill {

namespace {

using emulator::region_state;

// How fast memory may rise over the second half of a soak, in MiB per
// minute. From ten minutes on the limits are tight: a day at the resident
// limit adds ~140 MiB, and at the drill's 200 operations a second the heap
// limit is ~4 bytes kept per operation. A shorter run's second half still
// holds the tail of its warm-up, and that tail rises by as much as a leak of
// tens of bytes per operation would: the two-minute soak at 150 operations
// a second measured a heap slope of 0.17 MiB/min on a quiet machine, 0.35
// beside two busy threads, 1.04 once in CI; a four-minute run with 16 bytes
// kept per operation measured 0.54. So the short-run limits catch only a leak
// of a few hundred bytes per operation (2 MiB/min is ~230 bytes at 150 a
// second); a smaller one needs the long run. Below `min_judged` the second half
// is too short for a fit to mean anything: reported, not judged.
struct slope_limits {
  double rss = 0;
  double heap = 0;
};
constexpr slope_limits long_run_limits{0.1, 0.05};
constexpr slope_limits short_run_limits{2.0, 2.0};
constexpr std::chrono::minutes long_run{10};
constexpr std::chrono::seconds min_judged{100};

using memory_field = double memory_point::*;

// The median of one memory series between two fractions of the run.
double median_of(const scenario_run& run, memory_field field, double from,
                 double to) {
  std::vector<double> xs;
  for (const auto& m : run.memory())
    if (m.t_ms >= run.at_ms(from) && m.t_ms < run.at_ms(to))
      xs.push_back(m.*field);
  if (xs.empty()) return 0.0;
  auto mid = xs.begin() + static_cast<ptrdiff_t>(xs.size() / 2);
  std::nth_element(xs.begin(), mid, xs.end());
  return *mid;
}

std::string fixed1(double x) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(x != 0 && std::abs(x) < 0.1 ? 3 : 1);
  os << x;
  return os.str();
}

std::string tenths(const scenario_run& run, memory_field field) {
  std::string out;
  for (int k = 0; k < 10; ++k)
    out += " " + fixed1(median_of(run, field, k / 10.0, (k + 1) / 10.0));
  return out;
}

void require_flat_memory(scenario_run& run) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // AddressSanitizer keeps freed memory in its quarantine (256 MiB by
  // default) and its shadow grows with it; ThreadSanitizer keeps a history
  // and shadow per thread and access: the curve says nothing about the
  // engine there. Reported, not judged.
  constexpr bool judged = false;
#else
  constexpr bool judged = true;
#endif
  // Resident memory is sampled after the allocator's free pages went back
  // to the system (scenario_run::sample_memory); as `top` saw it before
  // that, for the reader.
  run.note("resident MiB, median of each tenth:" +
           tenths(run, &memory_point::rss_mib));
  run.note("resident MiB before free pages were returned, median of each "
           "tenth:" +
           tenths(run, &memory_point::rss_untrimmed_mib));
  if (judged) {
    run.note("heap in use MiB, median of each tenth:" +
             tenths(run, &memory_point::heap_mib));
    // How far the heap swings within the judged half, for the reader of a
    // slope: a slope of a few hundredths of a MiB a minute means little
    // beside a swing of several MiB (a CPU hog makes hangs hold requests).
    double low = 0, high = 0;
    bool any = false;
    for (const auto& m : run.memory())
      if (m.t_ms >= run.at_ms(0.5)) {
        low = any ? std::min(low, m.heap_mib) : m.heap_mib;
        high = any ? std::max(high, m.heap_mib) : m.heap_mib;
        any = true;
      }
    if (any)
      run.note("heap in use over the second half: " + fixed1(low) + " to " +
               fixed1(high) + " MiB");
  }
  // The level: the first fifth is warm-up; the second is the baseline.
  auto early = median_of(run, &memory_point::rss_mib, 0.2, 0.4);
  auto late = median_of(run, &memory_point::rss_mib, 0.8, 1.0);
  auto allowed = std::max(16.0, early * 0.10);
  auto level = fixed1(early) + " MiB -> " + fixed1(late) + " MiB (allowed +" +
               fixed1(allowed) + ")";
  // The slope: a level allowance cannot see a steady leak that stays under
  // it for the length of the run, a line fitted to the second half can.
  // Fitted to memory less the drill's own records: those grow with every
  // failure the faults cause (timed-out writes are kept whole to be judged)
  // and say nothing of the engines or the emulator. Memory is judged rising
  // only when the slope is above its limit by more than two standard errors
  // (memory_slope): beside a CPU hog the heap swings by several MiB as hangs
  // hold requests, and a slope a hundredth above the limit is that swing,
  // not a leak. A steady leak's line is straight and its error small.
  auto rss_slope = slope_per_min(
      run.memory(),
      [](const memory_point& m) { return m.rss_mib - m.records_mib; },
      run.at_ms(0.5));
  auto heap_slope = slope_per_min(
      run.memory(),
      [](const memory_point& m) { return m.heap_mib - m.records_mib; },
      run.at_ms(0.5));
  constexpr double error_margin = 2.0; // standard errors
  auto length = std::chrono::milliseconds{run.at_ms(1.0)};
  auto limits = length >= long_run ? long_run_limits : short_run_limits;
  auto slope_text = [](std::optional<memory_slope> s, double limit) {
    if (!s) return std::string{"too few samples"};
    std::ostringstream os;
    os.setf(std::ios::fixed);
    os.precision(3);
    os << s->per_min << " +- " << s->std_error << " MiB/min, at least "
       << s->at_least(error_margin) << " (allowed " << limit << ")";
    return os.str();
  };
  auto flat = [&](std::optional<memory_slope> s, double limit) {
    return s && s->at_least(error_margin) <= limit;
  };
  // The drill's own records, for the reader: what of the heap is not the
  // engines' and the emulator's.
  if (!run.memory().empty())
    run.note("of the heap, the drill's own records at the end: " +
             fixed1(run.memory().back().records_mib) + " MiB");
  if (!judged) {
    run.note("memory not judged under a sanitizer: " + level +
             ", resident slope over the second half " +
             slope_text(rss_slope, limits.rss));
    return;
  }
  run.require("resident memory flat after warm-up (median of 20-40% vs "
              "80-100% of the run)",
              level, early > 0 && late - early <= allowed);
  if (length < min_judged) {
    run.note("memory slopes over the second half (not judged below " +
             std::to_string(min_judged.count()) + " s): resident " +
             slope_text(rss_slope, limits.rss) + ", heap " +
             slope_text(heap_slope, limits.heap));
    return;
  }
  run.require("resident memory does not keep rising (least-squares slope "
              "over the second half, less the drill's records, less two "
              "standard errors)",
              slope_text(rss_slope, limits.rss), flat(rss_slope, limits.rss));
  run.require("heap in use does not keep rising (least-squares slope over "
              "the second half, less the drill's records, less two "
              "standard errors)",
              slope_text(heap_slope, limits.heap),
              flat(heap_slope, limits.heap));
}

} // namespace

void soak(scenario_run& run, scenario_report& out, uint64_t seed) {
  world_options w;
  w.multi_write = true;
  // A tenth of the writes are transactional batches of two upserts, a
  // tenth patches of the caller's last written document. A batch that may
  // have been applied is never sent again: it fails, and is excused only
  // where a fault explains it, also with write retries on
  // (allow_ambiguous_writes_during); every pair is read back whole.
  w.mix.batch_pct_of_writes = 10;
  w.mix.patch_pct_of_writes = 10;
  // Upserts of a bounded set of ids: the data set (and the emulator) stay
  // bounded. A caller writes its ids in turn (plain writes and batches each
  // their own), so its data set is complete once it has written each once;
  // short soaks take fewer ids, so that the data set is complete within the
  // first fifth and its growth is not taken for a leak.
  const auto& o = run.options();
  double writes_per_caller_s =
      o.rate * w.mix.write_pct / 100.0 / std::max<uint32_t>(1, o.callers);
  double fifth_s = static_cast<double>(run.at_ms(0.2)) / 1000.0;
  auto ids_at = [&](uint32_t pct, double least, double most) {
    return static_cast<uint32_t>(
        std::clamp(writes_per_caller_s * pct / 100.0 * fifth_s, least, most));
  };
  w.write_ids = ids_at(
      100 - w.mix.batch_pct_of_writes - w.mix.patch_pct_of_writes, 8.0, 200.0);
  w.batch_ids = ids_at(w.mix.batch_pct_of_writes, 2.0, 25.0);
  w.fold_successes = true; // and the recorder too (the memory criterion)
  // Callers give up after their deadline; without a budget the engine would
  // go on with their operations for up to 60 s (georoute.operation-budget).
  // Beside the CPU hog that held 250-300 MiB of operations nobody waited
  // for: an application that knows its timeout says so.
  w.budget_is_deadline = true;
  if (!run.setup(w)) return;
  const auto regions = run.regions();
  std::mt19937_64 rng{seed};
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  auto between = [&](int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo));
  };
  std::vector<std::string> live_ranges{"0", "1"};
  int splits = 0;
  // Hangs and resets: writes in flight to the region may time out or lose
  // their connection after being sent.
  std::vector<std::pair<int64_t, int64_t>> silent;
  // Refusals: a region that starts refusing connections closes the ones it
  // has, so a write in flight there then loses its connection after it was
  // sent (it may have been applied: not retried either).
  std::vector<int64_t> cut_at;
  auto end_ms = run.at_ms(1.0);
  auto& emu = run.emu();
  run.start_workload();
  run.wait_until_ms(std::min<int64_t>(2000, end_ms / 10));
  while (run.now_ms() < end_ms - 4000) {
    auto region = regions[pick(regions.size())];
    std::function<void()> lift;
    auto set_state = [&](region_state st, const char* what) {
      run.fault(region + " " + what, region,
                [&] { emu.set_region_state(region, st); });
      lift = [&emu, region] {
        emu.set_region_state(region, region_state::online);
      };
    };
    auto add_status = [&](int code, int64_t retry_after, double p,
                          const char* what) {
      emulator::fault_rule rule;
      rule.region = region;
      rule.status = code;
      rule.retry_after_ms = retry_after;
      rule.probability = p;
      uint64_t id = 0;
      run.fault(region + " " + what, region,
                [&] { id = emu.control().add_fault(rule); });
      lift = [&emu, id] { emu.control().remove_fault(id); };
    };
    switch (pick(splits < 16 ? 9 : 8)) {
    case 0:
      set_state(region_state::hang, "hangs");
      silent.emplace_back(run.now_ms(), -1);
      break;
    case 1:
      set_state(region_state::offline_refuse, "refuses connections");
      cut_at.push_back(run.now_ms());
      break;
    case 2:
      // A write the region read before resetting may have been applied:
      // like a hang's, it is not retried.
      set_state(region_state::offline_reset, "resets connections");
      silent.emplace_back(run.now_ms(), -1);
      break;
    case 3:
      add_status(503, -1, 0.5, "answers half its requests 503");
      break;
    case 4:
      add_status(429, 50, 0.3, "throttles 30% of its requests (429)");
      break;
    case 5:
      // 403/3 on writes everywhere but the hub for a moment.
      run.fault("single-write for a moment (403/3 outside the hub)", "",
                [&] { emu.control().set_multi_write(false); });
      lift = [&emu] { emu.control().set_multi_write(true); };
      break;
    case 6:
    case 7: {
      auto order = emu.control().write_regions();
      std::rotate(order.begin(), order.begin() + 1, order.end());
      run.fault("write regions rotate: hub " + order.front(), order.front(),
                [&] { emu.control().set_write_regions(order); });
      break;
    }
    default: {
      auto i = pick(live_ranges.size());
      auto id = live_ranges[i];
      run.fault("range " + id + " splits", "", [&] {
        auto r = emu.control().split_range("d", "c", id);
        if (!r) return;
        live_ranges.erase(live_ranges.begin() + static_cast<ptrdiff_t>(i));
        live_ranges.insert(live_ranges.end(), r->begin(), r->end());
        ++splits;
      });
      break;
    }
    }
    auto marker = out.faults.size() - 1;
    run.wait_until_ms(run.now_ms() + between(1000, 4000));
    if (lift) {
      lift();
      out.faults[marker].until_ms = run.now_ms();
    }
    if (!silent.empty() && silent.back().second < 0)
      silent.back().second = run.now_ms();
    run.wait_until_ms(std::min(end_ms, run.now_ms() + between(1000, 3000)));
  }
  run.wait_until(1.0);
  run.finish();
  allow_ambiguous_writes_during(run, out, silent, cut_at);
  run.note(std::to_string(out.faults.size()) + " faults, " +
           std::to_string(splits) + " splits (" +
           std::to_string(live_ranges.size()) + " ranges at the end)");
  require_flat_memory(run);
}

} // namespace georoute::drill

namespace georoute::drill {

// Faults inside the process: every actor of one site's engine is killed in
// turn while the workload runs; the supervisor restarts it. Every request
// gets an answer or a clear error, none hangs past its caller's deadline,
// and the site serves again within a second of each kill.
void kill_each_actor(scenario_run& run, scenario_report& out) {
  world_options w;
  w.multi_write = true;
  if (!run.setup(w)) return;
  auto& eng = run.site(0);
  auto victims =
      std::vector<std::pair<std::string, std::function<caf::actor()>>>{
          {"location cache",
           [&] { return caf::actor_cast<caf::actor>(eng.locations()); }},
          {"endpoint manager",
           [&] { return caf::actor_cast<caf::actor>(eng.endpoints()); }},
          {"request router",
           [&] { return caf::actor_cast<caf::actor>(eng.router()); }},
          {"retry actor",
           [&] { return caf::actor_cast<caf::actor>(eng.retry()); }},
          {"collection cache",
           [&] { return caf::actor_cast<caf::actor>(eng.collections()); }},
          {"partition-range cache",
           [&] { return caf::actor_cast<caf::actor>(eng.pkranges()); }},
          {"query-plan actor",
           [&] { return caf::actor_cast<caf::actor>(eng.query_plans()); }},
      };
  auto restarts_before = eng.stats().restarts;
  run.start_workload();
  std::vector<int64_t> kills;
  for (size_t i = 0; i < victims.size(); ++i) {
    run.wait_until(0.1 + 0.8 * static_cast<double>(i) /
                             static_cast<double>(victims.size()));
    auto victim = victims[i].second();
    run.fault("kill the " + victims[i].first + " of " + run.regions()[0],
              run.regions()[0],
              [&] { caf::anon_send_exit(victim, caf::exit_reason::kill); });
    kills.push_back(out.faults.back().at_ms);
  }
  run.wait_until(1.0);
  auto restarts = eng.stats().restarts - restarts_before;
  run.finish();
  run.require("the supervisor restarted every killed actor",
              std::to_string(restarts) + " restarts for " +
                  std::to_string(victims.size()) + " kills",
              restarts == victims.size());
  // Serving again: the first success of site 0 started after each kill.
  int64_t worst = -1;
  std::string worst_of;
  for (size_t i = 0; i < kills.size(); ++i) {
    std::optional<int64_t> first;
    for (const auto& op : run.ops())
      if (op.site == 0 && op.result == op_result::success &&
          op.start_us / 1000 >= kills[i] &&
          (!first || op.end_us / 1000 < *first))
        first = op.end_us / 1000;
    auto took = first ? *first - kills[i] : int64_t{1} << 40;
    if (took > worst) {
      worst = took;
      worst_of = victims[i].first;
    }
  }
  run.require("the site serves again within 1 s of every kill",
              "slowest: " + secs(worst) + " (" + worst_of + ")",
              worst >= 0 && worst <= 1000);
  // Failures: only right after a kill, each with an error that says what.
  uint64_t failures = 0, unexplained = 0, unclear = 0;
  std::string example;
  for (const auto& op : run.ops()) {
    if (op.result != op_result::failure) continue;
    ++failures;
    auto start = op.start_us / 1000;
    bool near_kill = std::any_of(kills.begin(), kills.end(), [&](int64_t k) {
      return start >= k - run.deadline().count() && start <= k + 1000;
    });
    if (!near_kill) ++unexplained;
    if (op.error.size() < 20) ++unclear;
    if (example.empty()) example = op.error.substr(0, 200);
  }
  for (auto& c : out.criteria)
    if (c.requirement == "user-visible failures = 0") {
      c.requirement = "failures only around a kill (in flight, or started "
                      "within 1 s after it), each with a clear error";
      c.measured = std::to_string(failures) + " failures, " +
                   std::to_string(unexplained) + " away from a kill, " +
                   std::to_string(unclear) + " unclear" +
                   (example.empty() ? "" : " (e.g. " + example + ")");
      c.passed = unexplained == 0 && unclear == 0;
    }
}

} // namespace georoute::drill
