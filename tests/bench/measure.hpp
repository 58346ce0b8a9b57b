#pragma once

// What every load of `georoute bench` records, and how a round is turned
// into figures. Plain C++: shared by the raw Beast client, the georoute
// callers and the figures the Node peer reports.
//
// A load records one `op_event` per completed operation (start and end in
// microseconds since the load's epoch, and whether it succeeded). A
// throughput round is the events that ended inside the measured window; a
// failover scenario is every event around the fault.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace georoute::bench {

using steady = std::chrono::steady_clock;

/// One completed operation.
struct op_event {
  int64_t start_us = 0;
  int64_t end_us = 0;
  bool ok = false;
};

/// Collects events from many threads. Each writer appends to its own slot
/// (no lock on the hot path); `take` is called once every writer is done.
/// A log made with `keep_events = false` only counts (`tally`, readable while
/// the writers run): a long load then holds no memory per operation.
class event_log {
public:
  explicit event_log(size_t writers, steady::time_point epoch = steady::now(),
                     bool keep_events = true);

  steady::time_point epoch() const { return epoch_; }

  /// Microseconds since the epoch.
  int64_t now_us() const { return us_since_epoch(steady::now()); }
  int64_t us_since_epoch(steady::time_point t) const;

  /// Appends to writer `slot`'s own list (one thread per slot at a time).
  void record(size_t slot, int64_t start_us, int64_t end_us, bool ok) {
    if (tallies_) {
      auto& t = tallies_[slot];
      (ok ? t.ok : t.failed).fetch_add(1, std::memory_order_relaxed);
      return;
    }
    slots_[slot].push_back(op_event{start_us, end_us, ok});
  }

  /// Every event, sorted by end time (none when events are not kept).
  std::vector<op_event> take();

  /// Operations recorded so far (succeeded, failed); only when events are
  /// not kept (else zeroes).
  std::pair<uint64_t, uint64_t> tally() const;

private:
  struct alignas(64) slot_tally {
    std::atomic<uint64_t> ok{0};
    std::atomic<uint64_t> failed{0};
  };
  steady::time_point epoch_;
  std::vector<std::vector<op_event>> slots_;
  size_t writers_;
  std::unique_ptr<slot_tally[]> tallies_;
};

/// CPU seconds this process has used (every thread).
double process_cpu_seconds();

/// CPU seconds another process has used (utime + stime from /proc), or a
/// negative value when it cannot be read.
double process_cpu_seconds(int pid);

/// Resident set size of this process in bytes (from /proc/self/statm).
uint64_t resident_bytes();

/// The figures of one throughput round.
/// Scheduler counts summed over every thread of this process.
struct thread_totals {
  uint64_t runs = 0; ///< times a thread got the CPU (schedstat's 3rd field)
  uint64_t voluntary_switches = 0; ///< a thread went to sleep
  uint64_t involuntary_switches = 0;
  size_t threads = 0;
};
thread_totals process_threads();

/// What one read costs, counted over a window of reads (the bench's
/// accounting part).
struct accounting_row {
  std::string client;
  size_t in_flight = 0;
  uint64_t reads = 0;
  double cpu_us = 0;         ///< process CPU per read
  double runs = 0;           ///< thread runs (wake-ups) per read
  double sleeps = 0;         ///< voluntary context switches per read
  double allocations = -1;   ///< per read; -1 when not counted
  double alloc_bytes = -1;   ///< per read
  double router_timers = -1; ///< timers the router armed, per read
  size_t threads = 0;        ///< threads of the process during the window
  std::string skipped;
};

struct round_figures {
  std::string client; ///< "raw", "georoute", "peer"
  size_t in_flight = 0;
  int round = 0; ///< repetition index
  double seconds = 0;
  uint64_t ok = 0;
  uint64_t failed = 0;
  double requests_per_second = 0;
  double p50_ms = 0;
  double p99_ms = 0;
  double cpu_seconds = 0; ///< of the process doing the work, in the window
  double cpu_seconds_per_1k = 0;
  double emulator_cpu_seconds = -1; ///< of the emulator process (-1: unknown)
  std::string skipped;              ///< non-empty: why there are no figures
};

/// Figures of the events that ended in [t0_us, t1_us), with `cpu_seconds`
/// spent in that window.
round_figures figures_of(const std::vector<op_event>& events, int64_t t0_us,
                         int64_t t1_us, double cpu_seconds);

/// The `q`-quantile (0..1) of sorted latencies in microseconds, in ms.
double quantile_ms(const std::vector<int64_t>& sorted_us, double q);

/// How a client came through one fault.
struct failover_figures {
  std::string scenario;     ///< "region-hang", "region-refuse", "write-switch"
  std::string client;       ///< "georoute", "peer"
  double fault_seconds = 0; ///< how long the fault lasted
  uint64_t ok = 0;          ///< operations that succeeded from the fault on
  uint64_t failed = 0;      ///< operations that failed from the fault on
  /// From the fault to the first success of an operation started after
  /// it; negative when no operation started after the fault succeeded.
  double failover_ms = -1;
  /// The slowest operation that ended after the fault.
  double max_latency_ms = 0;
  /// Operations that ended after the fault and took longer than 100 ms.
  uint64_t slow = 0;
  /// The slowest operation that started at or after the failover instant
  /// (with hedging: after the first hedge won); -1 when there was none.
  double max_latency_after_failover_ms = -1;
  std::string skipped;
  std::string note;
};

/// Failover figures of the events around a fault that started at
/// `fault_us` and lasted until `restore_us`.
failover_figures failover_of(const std::vector<op_event>& events,
                             int64_t fault_us, int64_t restore_us);

/// Cold-start amplification: K callers asked at once for an uncached
/// collection; what reached the emulator.
struct cold_figures {
  std::string client;
  size_t callers = 0;
  uint64_t collection_reads = 0;
  uint64_t pkranges_reads = 0;
  uint64_t pkranges_not_modified = 0; ///< of those, 304s (end of the feed)
  uint64_t document_reads = 0; ///< the callers' own requests, retries included
  uint64_t other = 0;          ///< anything else (account reads, ...)
  uint64_t ok = 0;             ///< callers that got their document
  uint64_t failed = 0;         ///< callers that got an error
  double seconds = 0;          ///< until the last caller had its answer
  std::string skipped;
};

/// Resident memory of this process under a long load (`--sustain`): the
/// engine at the highest level, sampled at even steps.
struct sustain_figures {
  std::string client;
  size_t in_flight = 0;
  double seconds = 0;
  uint64_t ok = 0;
  uint64_t failed = 0;
  double requests_per_second = 0;
  /// (seconds since the load started, resident bytes), the first before it.
  std::vector<std::pair<double, uint64_t>> samples;
  /// The sample at a sixth of the window (the 10th second of a minute):
  /// where the growth is counted from, once pools and connections are warm.
  uint64_t rss_settled = 0;
  uint64_t rss_end = 0;
  uint64_t rss_max = 0;
  uint64_t reads_after_settled = 0;
  std::string skipped;

  /// Growth from the settled sample to the end (negative: it shrank).
  double growth_bytes() const {
    return static_cast<double>(rss_end) - static_cast<double>(rss_settled);
  }
};

/// A change feed drained from the beginning: every document of a
/// collection, page after page over all its ranges, until caught up.
struct feed_figures {
  std::string client;
  int round = 0;
  uint64_t documents = 0; ///< documents the pages held
  uint64_t pages = 0;     ///< pages asked for (the last, caught up, included)
  double seconds = 0;     ///< from the first request to the caught-up page
  double cpu_seconds = 0; ///< of the client's process, over `seconds`
  double documents_per_second = 0;
  double cpu_us_per_document = 0;
  std::string error; ///< why the drain stopped short ("" when complete)
  std::string skipped;
};

/// One bulk load: `operations` creates of about 250 bytes into an empty
/// collection, by one client, in one way (`mode`).
struct bulk_figures {
  std::string client;
  std::string mode;        ///< "point creates", "bulk", "bulk under 429"
  uint64_t operations = 0; ///< handed over
  uint64_t ok = 0;         ///< answered 201
  uint64_t throttled = 0;  ///< per-operation 429s the client saw (georoute)
  double seconds = 0;      ///< from the first operation to the last answer
  double cpu_seconds = 0;  ///< of the client's process, over `seconds`
  double ops_per_second = 0;
  double cpu_us_per_op = 0;
  /// Under 429: the operations a second the service allowed (its budget
  /// per range times the ranges) and the share of it reached.
  double allowed_per_second = 0;
  double share_of_allowed = 0;
  std::string error;
  std::string skipped;

  void finish() {
    if (seconds > 0) ops_per_second = ok / seconds;
    if (ok > 0) cpu_us_per_op = cpu_seconds * 1e6 / ok;
    if (allowed_per_second > 0)
      share_of_allowed = ops_per_second / allowed_per_second;
  }
};

/// Resident memory of the caches.
struct memory_figures {
  size_t collections = 0;
  size_t ranges_per_collection = 0;
  uint64_t collections_cached = 0; ///< by the collection cache (its counters)
  uint64_t maps_cached = 0;        ///< routing maps loaded
  uint64_t rss_before = 0;
  uint64_t rss_after = 0;
  double bytes_per_range = 0;
  double seconds = 0;
  std::string skipped;
};

} // namespace georoute::bench
