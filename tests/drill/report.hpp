#pragma once

// The drill's report: what the callers saw, what the emulator served, and the
// verdict of every scenario. Plain data (no CAF, no Beast), rendered as a
// terminal table, JSON and an HTML page with one inline-SVG timeline per
// scenario.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace georoute::drill {

/// Counts of one kind of operation ("read", "write", "query") or of all.
struct op_counts {
  uint64_t ops = 0;
  uint64_t successes = 0;
  /// Failed before its caller's deadline: the engine gave up although the
  /// caller would still have waited (a user-visible failure).
  uint64_t failures = 0;
  /// The caller's own request timeout fired first.
  uint64_t timeouts = 0;
};

/// A fault or topology change the scenario script applied.
struct fault_marker {
  int64_t at_ms = 0;  ///< since the scenario started
  std::string label;  ///< "East US hangs", "write region -> East US"
  std::string region; ///< the region it is about ("" when none)
  /// When the script lifted it, since the scenario started; -1: never, or
  /// a change that is not lifted (a split, a rotation). Not in the JSON.
  int64_t until_ms = -1;
};

/// One second of the scenario.
struct timeline_bucket {
  int64_t t_ms = 0; ///< the bucket's start, since the scenario started
  /// The backend view: responses the emulator sent, region -> status ->
  /// count ("(global)" is the account endpoint). Requests to a hanging or
  /// refusing region are never answered and so never counted here.
  std::map<std::string, std::map<int, uint64_t>> backend;
  /// The callers' view: operations that ended in this second, by outcome
  /// ("success", "failure", "timeout").
  std::map<std::string, uint64_t> callers;
  /// Connections the emulator accepted in this second, per region (absent:
  /// none).
  std::map<std::string, uint64_t> accepted{};
  /// Requests held by a hang at the end of this second, per region.
  std::map<std::string, uint64_t> held{};
  /// At the end of this second, per region: connections the kernel
  /// completed that the emulator had not accepted yet (its accept queue),
  /// and connections open.
  std::map<std::string, uint64_t> queued{};
  std::map<std::string, uint64_t> open{};
};

/// The process's memory at one instant of the scenario (drill and engines
/// share the process; the emulator too).
struct memory_point {
  int64_t t_ms = 0; ///< since the scenario started
  double rss_mib = 0;
  double heap_mib = 0; ///< the allocator's bytes in use; 0: not known
  /// Of those, about how much the drill's own records hold (operations
  /// kept whole, aggregates, these series): the rest is the engines' and
  /// the emulator's.
  double records_mib = 0;
  /// Resident memory before the allocator's free pages went back to the
  /// system (`rss_mib` is after): what `top` would have shown.
  double rss_untrimmed_mib = 0;
};

/// The change-feed consumer that ran beside the workload: what it read and
/// applied, and how that compares with the collection at the end.
struct feed_report {
  std::string site;   ///< the region of the site it read through (mostly)
  uint64_t pages = 0; ///< pages applied, caught-up (empty) ones included
  uint64_t pages_with_documents = 0;
  uint64_t documents = 0; ///< documents applied
  /// A document at the `_lsn` it was already applied at.
  uint64_t duplicates = 0;
  /// A document whose `_lsn` is below the last one applied for its
  /// partition key, or below its own.
  uint64_t order_violations = 0;
  /// Documents without a usable id, partition key, `_lsn` or `_etag`.
  uint64_t malformed = 0;
  /// Pages answered with an error or not at all within the consumer's
  /// timeout (counted among the failed); each asked again.
  uint64_t failed_pages = 0;
  uint64_t timed_out_pages = 0;
  uint64_t restarts = 0;           ///< resumed from the checkpoint
  uint64_t restarts_elsewhere = 0; ///< of those, through another site
  uint64_t pages_discarded = 0;    ///< arrived, dropped unapplied by a restart
  /// Pages applied by the region that answered their last read.
  std::map<std::string, uint64_t> served_by;
  uint32_t ranges_at_end = 0;        ///< cursors the last continuation tracks
  bool caught_up = false;            ///< the final drain caught up
  int64_t drain_ms = 0;              ///< how long the final drain took
  uint64_t acknowledged = 0;         ///< acknowledged writes (documents)
  uint64_t acknowledged_missing = 0; ///< never in the feed
  uint64_t final_documents = 0;      ///< documents the collection holds
  uint64_t final_never_seen = 0;     ///< never in the feed
  uint64_t final_stale = 0;          ///< only an older version applied
  uint64_t phantoms = 0; ///< applied, but not in the collection at the end
};

/// One verdict criterion: what is required, what was measured.
struct criterion {
  std::string requirement; ///< "user-visible failures = 0"
  std::string measured;    ///< "0"
  bool passed = false;
};

/// One scenario's result.
struct scenario_report {
  std::string id;    ///< "S1"
  std::string title; ///< "multi-write, a secondary region hangs"
  std::string description;
  int64_t duration_ms = 0;
  std::map<std::string, op_counts> by_kind; ///< "read", "write", "query"
  op_counts total;
  double success_pct = 0; ///< successes / ops * 100
  /// Fault -> first success elsewhere; empty when the scenario has no
  /// failover or none happened.
  std::optional<int64_t> failover_ms;
  /// The instant of that first success, since the scenario started.
  std::optional<int64_t> failover_at_ms;
  double p50_ms = 0; ///< latency of successful operations
  double p99_ms = 0;
  uint64_t account_refreshes = 0; ///< account reads started by the engines
  /// The backend view over the whole scenario: region -> status -> count.
  std::map<std::string, std::map<int, uint64_t>> backend;
  /// The callers' view: successes by the region that served them.
  std::map<std::string, uint64_t> served_by;
  std::vector<fault_marker> faults;
  std::vector<timeline_bucket> timeline;
  /// Sampled once a second (thinned in long runs).
  std::vector<memory_point> memory;
  /// The change-feed consumer; empty when the scenario did not get as far.
  std::optional<feed_report> feed;
  std::vector<criterion> criteria;
  /// Facts worth a line under the table ("3 failover decisions, 0
  /// pre-empted").
  std::vector<std::string> notes;
  bool passed = false;
};

/// The whole run.
struct drill_report {
  std::vector<std::string> regions;
  uint32_t callers = 0;
  double rate = 0; ///< target operations per second, all callers
  int64_t duration_ms = 0;
  uint64_t seed = 0;
  std::string started_utc; ///< ISO 8601
  /// Settings worth printing (the drill's time-compressed defaults and
  /// anything the user set), key -> value.
  std::map<std::string, std::string> settings;
  std::vector<scenario_report> scenarios;
  bool passed = false;
};

/// The terminal table: one block per scenario with its criteria, then the
/// overall verdict.
std::string render_table(const drill_report& r);

/// JSON: every field of the model under its own (snake_case) name, in the
/// order of the structs; statuses are string keys ("200"), an empty optional
/// is null.
std::string render_json(const drill_report& r);

/// The problems of a JSON report (empty: valid), each naming where it is,
/// "scenarios[2].criteria[0].passed: missing": the text parses, every key of
/// the model is present with its type (unknown keys are allowed), status keys
/// are integers, success_pct is total.successes / total.ops * 100 within 0.01
/// (any value in [0, 100] when there were no operations), every scenario's
/// passed is the AND of its criteria and the top-level passed the AND of the
/// scenarios.
std::vector<std::string> validate_report_json(const std::string& text);

/// A standalone HTML page: a summary table and one inline-SVG chart per
/// scenario (requests per second per region, stacked by status, the fault
/// markers and the failover instant). No script, no network.
std::string render_html(const drill_report& r);

} // namespace georoute::drill
