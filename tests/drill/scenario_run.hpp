#pragma once

// One scenario's world: a fresh emulator, one engine per region (an
// application site), the callers, the fault script's clock, the backend
// sampler, and the measurements every scenario reports. The scenarios
// (scenarios.cpp) are scripts over this.

#include "georoute/actors/engine.hpp"
#include "georoute/actors/policy/location_table.hpp"
#include "tests/drill/drill.hpp"
#include "tests/drill/feed_consumer.hpp"
#include "tests/drill/readback.hpp"
#include "tests/drill/workload.hpp"
#include "tests/emulator/emulator.hpp"

#include <atomic>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace georoute::drill {

/// How a scenario sets up its world.
struct world_options {
  bool multi_write = true;
  op_mix mix;
  /// The callers' deadline; 0: the drill's `--deadline`.
  std::chrono::milliseconds deadline{0};
  /// Every request excludes every region (S5).
  bool exclude_every_region = false;
  /// Writes and batches upsert bounded sets of documents (see
  /// caller_setup).
  uint32_t write_ids = 0;
  uint32_t batch_ids = 0;
  /// Plain successes are folded into counts instead of kept whole (the
  /// soak); `ops()` then holds only the rest. Scripts that look at
  /// successes (failover instants, who served what) must not set it.
  bool fold_successes = false;
  /// Every request carries its caller's deadline as its operation budget
  /// (`request_options::budget`), as an application that knows its timeout
  /// should: the engine then starts no attempt for a caller that has gone.
  /// Off, the engine's `georoute.operation-budget` (60 s by default) bounds
  /// an operation whose caller gave up after `deadline`.
  bool budget_is_deadline = false;
  /// The account's `enablePerPartitionFailoverBehavior` (S8); unset: the
  /// property is left out of the account.
  std::optional<bool> per_partition_failover;
  /// Keep the per-second engine samples (`engine_samples()`); the grey
  /// scenarios judge the breaker by them. Off, only the newest is kept.
  bool sample_engines = false;
  /// The write order to start with (single-write: its first region takes
  /// the writes); empty: the account order.
  std::vector<std::string> write_order;
  /// More collections of database "d", each partitioned on /pk and empty
  /// (B1 loads one: the workload's cross-partition queries, which the
  /// emulator answers by scanning every document of "c", stay as they are).
  std::vector<std::string> extra_collections;
};

class scenario_run {
public:
  scenario_run(const drill_options& opts, const config::settings& base,
               const progress_fn& progress, scenario_report& out);
  ~scenario_run();

  scenario_run(const scenario_run&) = delete;
  scenario_run& operator=(const scenario_run&) = delete;

  /// Emulator, collection, seed documents, engines (one per region); waits
  /// for every engine's first account read. False (with a note in the
  /// report) when something does not come up.
  bool setup(world_options w);

  /// Starts the callers; the scenario clock starts now.
  void start_workload();

  /// Sleeps until `fraction` of the duration has passed (progress meanwhile).
  void wait_until(double fraction);
  /// Sleeps until `ms` since the start.
  void wait_until_ms(int64_t ms);

  /// Applies a fault now and marks it in the report.
  void fault(const std::string& label, const std::string& region,
             const std::function<void()>& apply);

  /// Stops the callers, waits for every operation to end, lifts every
  /// fault, waits for the engines to go quiet, reads every acknowledged
  /// write back, and fills the common part of the report.
  void finish();

  // -- what the scripts use ---------------------------------------------------

  const std::vector<std::string>& regions() const { return regions_; }
  emulator::emulator& emu() { return *emu_; }
  /// The actor system the sites and the callers run in.
  caf::actor_system& system() { return *sys_; }
  /// The engine of site `i` (the region `regions()[i]`).
  engine& site(size_t i) { return sites_.at(i); }
  int64_t now_ms() const;
  int64_t at_ms(double fraction) const;
  /// Every operation, or with `fold_successes` every one but the plain
  /// successes (those are in `folded()`).
  const std::vector<op_record>& ops() const { return ops_; }
  const folded_ops& folded() const { return folded_; }
  /// Router counters summed over the sites (after `finish`).
  const router_stats& routers() const { return router_totals_; }
  /// The process's memory, sampled once a second (every few seconds in a
  /// long run: the series is thinned to stay bounded).
  const std::vector<memory_point>& memory() const { return memory_; }
  /// Once a second, with `world_options::sample_engines`: the routers'
  /// breaker counters summed over the sites, and the requests that reached
  /// each (region, collection, range) of the emulator so far (answered or
  /// held).
  struct engine_sample {
    int64_t t_ms = 0;
    /// When the emulator's counters were read (after the routers' stats):
    /// `reached` holds what arrived up to then.
    int64_t counted_ms = 0;
    uint64_t breaker_opened = 0, breaker_probes = 0, breaker_closed = 0;
    std::map<emulator::range_key, uint64_t> reached;
  };
  const std::vector<engine_sample>& engine_samples() const {
    return engine_samples_;
  }
  /// The caller deadline in force.
  std::chrono::milliseconds deadline() const { return deadline_; }
  const config::settings& engine_settings() const { return base_; }
  const drill_options& options() const { return opts_; }

  /// Follows every site's location cache from now on: each table it
  /// publishes, kept with the instant it arrived. Call after `setup`.
  void watch_locations();
  /// Whether site `site`'s engine had `endpoint` marked unavailable for
  /// `op` at `at_us` (since the start), by the last table it published at
  /// least `grace` earlier (a request sent within `grace` of a new table
  /// may still have been routed by the one before). False when unwatched.
  bool was_marked(int site, const std::string& endpoint, op_kind op,
                  int64_t at_us, std::chrono::milliseconds grace) const;
  /// The first instant (ms since the start, after `from_ms`) at which a
  /// table of site `site` marked `endpoint` for `op`.
  std::optional<int64_t> first_marked(int site, const std::string& endpoint,
                                      op_kind op, int64_t from_ms) const;

  /// Fills failover_ms / failover_at_ms: the first success after `fault_ms`
  /// of an operation matching `affected`, served by a region other than
  /// `from` (and not by the account endpoint).
  void failover_after(int64_t fault_ms, const std::string& from,
                      const std::function<bool(const op_record&)>& affected);

  void require(const std::string& requirement, const std::string& measured,
               bool passed);
  void note(const std::string& line);

private:
  void sample_backend();
  void sample_memory(int64_t t_ms);
  void teardown();
  void summarize();
  void common_criteria();
  void verify_batches(const std::string& writer);
  /// The change-feed consumer's end (scenario_feed.cpp): drains it, stops
  /// it, lists the collection from the emulator's write region through
  /// `send` (signed, straight to the emulator) and judges the feed. After
  /// the workload and its faults; `acknowledged`: "id\npk" of every
  /// acknowledged write.
  void finish_feed(
      const std::set<std::string>& acknowledged,
      const std::function<transport::outcome(transport::request)>& send);
  void feed_criteria();
  uint64_t account_fetches();

  drill_options opts_;
  config::settings base_;
  progress_fn progress_;
  scenario_report& out_;
  world_options world_;
  std::chrono::milliseconds deadline_{0};
  std::vector<std::string> regions_;
  std::unique_ptr<emulator::emulator> emu_;
  std::unique_ptr<caf::actor_system_config> cfg_;
  std::unique_ptr<caf::actor_system> sys_;
  std::vector<engine> sites_;
  std::shared_ptr<seed_set> seeds_;
  std::shared_ptr<recorder> rec_;
  /// The workload's start (steady clock, ns), for the engines' log lines
  /// (`GEOROUTE_LOG_LEVEL`): 0 until it starts.
  std::shared_ptr<std::atomic<int64_t>> log_epoch_ =
      std::make_shared<std::atomic<int64_t>>(0);
  std::vector<caf::actor> callers_;
  struct table_log {
    mutable std::mutex mtx;
    std::vector<std::pair<std::chrono::steady_clock::time_point,
                          std::shared_ptr<const location_table>>>
        tables;
  };
  std::vector<std::shared_ptr<table_log>> table_logs_; // by site
  std::vector<caf::actor> watchers_;
  std::thread sampler_;
  std::atomic<bool> sampling_{false};
  // One second of the backend view, kept compact while the run lasts (a
  // timeline_bucket of maps is ~1 KiB a second) and expanded for the report
  // once it ended.
  struct backend_count {
    uint16_t region = 0; ///< index into backend_regions_
    int16_t status = 0;
    uint32_t count = 0;
  };
  struct backend_second {
    int64_t t_ms = 0;
    std::vector<backend_count> counts;
    /// Per region (index into regions_): connections the emulator accepted
    /// in this second; at its end, requests a hang held, connections
    /// waiting in the accept queue, and connections open.
    struct region_connections {
      uint32_t accepted = 0, held = 0, queued = 0, open = 0;
    };
    std::vector<region_connections> connections;
    uint32_t breaker_opened = 0, breaker_closed = 0;
  };
  std::vector<std::string> backend_regions_;
  std::vector<backend_second> backend_seconds_;
  size_t backend_counts_bytes_ = 0; ///< what their `counts` hold
  std::vector<memory_point> memory_;
  int memory_every_ = 1; ///< seconds between two kept memory samples
  int memory_tick_ = 0;
  std::vector<engine_sample> engine_samples_;
  uint64_t fetches_at_start_ = 0;
  std::vector<op_record> ops_;
  folded_ops folded_;
  router_stats router_totals_;
  readback_result readback_;
  batch_pair_result batch_pairs_;
  /// The change-feed consumer (from the start of the workload until the
  /// end of `finish`) and what it leaves for the judge.
  caf::actor feed_;
  std::shared_ptr<feed_log> feed_log_;
  feed_verdict feed_verdict_;
  std::string feed_listing_problem_; ///< the final listing failed: why
  bool feed_paused_ = false;
};

/// B1, bulk ingestion under 429 bursts, a split and a region hang
/// (scenario_bulk.cpp).
void bulk_ingestion(scenario_run& run, scenario_report& out);

} // namespace georoute::drill
