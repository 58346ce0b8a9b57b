#pragma once

// The drill's workload: caller actors that issue point reads, writes and
// cross-partition queries through an engine's router at a target rate, each
// with its own deadline (a CAF request timeout, nothing else), and a recorder
// that keeps every operation's outcome as the caller saw it (or, for long
// runs, folds the unremarkable ones into counts).

#include "georoute/messages/error.hpp"
#include "georoute/messages/interfaces.hpp"

#include <array>
#include <atomic>
#include <caf/actor_system.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace georoute::drill {

enum class op_type : uint8_t { read, write, query };
enum class op_result : uint8_t { success, failure, timeout };

const char* to_string(op_type x);
const char* to_string(op_result x);

/// One operation as its caller saw it.
struct op_record {
  op_type type = op_type::read;
  op_result result = op_result::success;
  int site = 0;         ///< which application site (engine) issued it
  int64_t start_us = 0; ///< since the scenario started
  int64_t end_us = 0;
  /// Who served it (the last attempt): a region name, or "(global)" for the
  /// account endpoint. Empty for a timeout (the caller never heard).
  std::string region;
  /// Every attempt's region, in order (successes and failures; a timed-out
  /// operation's attempts are unknown to its caller).
  std::vector<std::string> attempted;
  /// Reads and writes: every attempt's answer, in the order of `attempted`
  /// (from the engine's diagnostics; queries leave it empty).
  struct attempt_outcome {
    int status = 0; ///< 0: no response came
    int substatus = 0;
    /// When it was sent and answered, since the scenario started: the
    /// caller's start of the operation plus the engine's offsets.
    int64_t sent_us = 0;
    int64_t answered_us = 0;
    std::string retry_reason; ///< why the next attempt happened
    std::string endpoint;
    std::string failure; ///< the transport's failure kind, "" for a response
    /// The HTTP client's connection (0: none) and the requests it had
    /// answered before this one (0: fresh).
    uint64_t connection = 0;
    uint64_t connection_served = 0;
    /// Where its time went (microseconds, -1: not reached): the client's
    /// pool, a fresh connection's connect, the write, the wait for the
    /// answer (`attempt_record`).
    int64_t queued_us = -1;
    int64_t connect_us = -1;
    int64_t write_us = -1;
    int64_t wait_us = -1;
  };
  std::vector<attempt_outcome> outcomes;
  /// The partition-key range the engine routed it to ("" when unknown).
  std::string range_id;
  /// A hedge went out (an arm after the primary), and it won.
  bool hedged = false;
  bool hedge_won = false;
  std::string error; ///< failures: the engine's error text
  /// Failures: the engine's `errc` (`errc::none` for an error of CAF's).
  errc error_code = errc::none;
  /// Writes that succeeded: "id\npk".
  std::string written_id;
  /// Their `_trackingId` when they carried one (write retries on).
  std::string tracking_id;
  /// Transactional batches, answered or not: the pair of documents they
  /// upsert ("id\npk"; the documents are id + "a" and id + "b") and the
  /// batch's own value of their `batch` property.
  std::string batch_pair;
  std::string batch_id;
  /// Queries that completed: the seed documents returned, duplicates among
  /// them and seed documents missing.
  size_t rows = 0;
  size_t duplicates = 0;
  size_t missing = 0;
};

/// Latencies in logarithmic buckets 1 % wide: percentiles within 1 % in
/// constant memory, however long the run.
class latency_histogram {
public:
  void add(int64_t us);
  uint64_t count() const { return count_; }
  /// The `p` quantile in milliseconds (the same rank rule as the drill's
  /// exact percentile: round(p * (n - 1))); 0 when empty.
  double percentile_ms(double p) const;

private:
  std::map<int32_t, uint64_t> buckets_;
  uint64_t count_ = 0;
};

/// A group of failures with the same text once numbers are blanked: how
/// many, and the first one's text as an example.
struct failure_group {
  uint64_t count = 0;
  std::string example;
};

/// The key failures are grouped by: the operation's type, then the first 160
/// characters of the error with every run of digits made one '#'.
std::string failure_group_key(op_type type, const std::string& error);

/// What a folding recorder keeps of the operations it does not keep whole:
/// plain successes (served by a region, queries complete and exact), caller
/// timeouts, and the failures of reads and queries. Failed writes stay whole
/// (the soak judges each one: may it have been applied, and why) unless the
/// run does not judge them.
struct folded_ops {
  std::map<op_type, uint64_t> successes;
  std::map<op_type, uint64_t> failures;
  std::map<op_type, uint64_t> timeouts;
  std::map<std::string, uint64_t> served_by;
  /// Folded operations by the second they ended in (since the start),
  /// indexed by `op_result`.
  std::vector<std::array<uint64_t, 3>> per_second;
  latency_histogram latency;
  /// Acknowledged writes ("id\npk"), each once: bounded when the callers
  /// upsert a bounded set (`caller_setup::write_ids`).
  std::set<std::string> written_ids;
  /// Per written id, the tracking id of its last acknowledged write (by
  /// end time), when writes carried one.
  std::map<std::string, std::pair<int64_t, std::string>> last_tracking;
  /// Every pair a transactional batch wrote to or may have (`batch_pair`),
  /// each once; the recorder keeps it whether it folds the batch or not.
  std::set<std::string> batch_pairs;
  uint64_t complete_queries = 0;
  /// The folded failures by `failure_group_key`; at most `max_groups`
  /// texts, the rest counted under `other_texts`.
  static constexpr size_t max_groups = 256;
  std::map<std::string, failure_group> failure_texts;
  uint64_t other_texts = 0;
  /// The folded failure that ended first: its end and its error.
  int64_t first_failure_us = -1;
  std::string first_failure;
  /// Folded failures whose error says too little to act on (shorter than
  /// `unclear_below` characters), and the first such text.
  static constexpr size_t unclear_below = 20;
  uint64_t unclear = 0;
  std::string unclear_example;
};

/// Every operation of one scenario; thread-safe. A folding recorder (the
/// soak) keeps whole only the failed writes, the first
/// `kept_other_failures` failed reads and queries (so that the report can
/// say what each went through), and the successes that are not plain, so
/// that its memory does not grow with the run's length, nor with an
/// overloaded machine's timeouts, and the memory curves show the engine's.
class recorder {
public:
  using clock = std::chrono::steady_clock;

  /// `fold_failed_writes` (with `fold`): failed writes are folded too, for
  /// runs that do not judge them one by one (the soak under --cpu-hog).
  explicit recorder(clock::time_point start, bool fold = false,
                    uint32_t leak_per_op = 0, bool fold_failed_writes = false)
      : start_(start), fold_(fold), fold_failed_writes_(fold_failed_writes),
        leak_per_op_(leak_per_op) {}

  int64_t now_us() const;
  clock::time_point start() const { return start_; }
  void add(op_record r);
  /// The operations kept whole (every one unless folding).
  std::vector<op_record> all() const;
  /// What was folded (empty unless folding).
  folded_ops folded() const;
  /// About how many heap bytes the records hold (the whole operations kept,
  /// the folded aggregates): the drill's own share of the process's memory.
  size_t bytes_held() const;
  bool folding() const { return fold_; }

  /// Failed reads and queries kept whole, at most (the rest are folded).
  static constexpr uint32_t kept_other_failures = 50;

  /// Operations issued and not answered (nor timed out) yet.
  std::atomic<int64_t> outstanding{0};
  std::atomic<uint64_t> ok{0};
  std::atomic<uint64_t> failed{0};
  std::atomic<uint64_t> timed_out{0};

private:
  clock::time_point start_;
  bool fold_;
  bool fold_failed_writes_;
  uint32_t other_failures_kept_ = 0;
  /// `drill_options::leak_per_op`: bytes kept per operation in `leaked_`.
  uint32_t leak_per_op_;
  std::vector<std::unique_ptr<char[]>> leaked_;
  size_t kept_bytes_ = 0; ///< heap held by the strings of `ops_`
  mutable std::mutex mtx_;
  std::vector<op_record> ops_;
  folded_ops folded_;
};

/// The documents every scenario starts with: what reads read and what the
/// cross-partition query must return exactly once each.
struct seed_set {
  std::vector<std::pair<std::string, std::string>> docs; ///< (id, pk)
};

/// Operation mix, in percent (the rest are reads).
struct op_mix {
  uint32_t write_pct = 25;
  uint32_t query_pct = 5;
  /// Of the writes, the share (percent) sent as a transactional batch of
  /// two upserts on one partition key, and as a patch of a document the
  /// caller wrote before (both counted as writes; the soak uses them).
  uint32_t batch_pct_of_writes = 0;
  uint32_t patch_pct_of_writes = 0;
};

/// What one caller needs.
struct caller_setup {
  int site = 0;
  int index = 0; ///< caller number (unique across sites)
  router_actor router;
  /// When set, asked before every request (the engine's `router()`, which
  /// names the successor after a restart); `router` is then unused.
  std::function<router_actor()> current_router;
  std::shared_ptr<recorder> rec;
  std::shared_ptr<const seed_set> seeds;
  std::string collection_link;
  std::string global_endpoint; ///< attempts there are labelled "(global)"
  std::string tag;             ///< prefix of written ids ("S3")
  op_mix mix;
  double rate = 10; ///< operations per second of this caller
  std::chrono::milliseconds deadline{5000};
  /// Every request's `budget` is what is left of its deadline
  /// (`world_options::budget_is_deadline`).
  bool budget_is_deadline = false;
  std::vector<std::string> excluded_regions; ///< on every request
  /// 0: every write creates a new document. N: writes upsert one of N
  /// documents of this caller, in turn (the soak: the data set stays
  /// bounded).
  uint32_t write_ids = 0;
  /// The same for transactional batches: 0, each upserts a pair of its own;
  /// N, one of N pairs, in turn.
  uint32_t batch_ids = 0;
  uint64_t seed = 1;
};

/// Spawns a caller; it issues operations (Poisson arrivals at `rate`) until
/// it gets `stop_caller`, then quits once every operation has ended.
caf::actor spawn_caller(caf::actor_system& sys, caller_setup setup);

/// Tells a caller to stop issuing.
void stop_caller(const caf::actor& caller);

/// The query the workload runs: every seed document, across partitions.
std::string seed_query();

} // namespace georoute::drill
