#pragma once

// The figures of one `georoute bench` run, summarized (medians over the
// rounds, ratios, targets) and rendered as a terminal table or JSON.

#include "tests/bench/measure.hpp"

#include <string>
#include <vector>

namespace georoute::bench {

/// Medians over the rounds of one client at one level.
struct summary_row {
  std::string client;
  size_t in_flight = 0;
  int rounds = 0; ///< rounds with figures
  double requests_per_second = 0;
  double p50_ms = 0;
  double p99_ms = 0;
  double cpu_seconds_per_1k = 0;
  double emulator_cpu_seconds_per_1k = -1;
  std::string skipped;
};

/// georoute against the others at one level.
struct ratio_row {
  size_t in_flight = 0;
  double georoute_over_raw = -1;  ///< throughput; -1 when unknown
  double georoute_over_peer = -1; ///< throughput
  /// CPU per read of georoute minus raw's, in microseconds.
  double cpu_us_over_raw = 0;
  double peer_cpu_over_georoute = -1; ///< CPU per read, peer / georoute
  /// Throughput with hedging on / with it off (nothing slow: the cost of
  /// the machinery); -1 when unknown.
  double hedging_on_over_off = -1;
  /// Throughput with fleet health on and its server absent / "georoute"
  /// (sharing off); -1 when unknown.
  double fleet_down_over_off = -1;
  /// The engine on CAF's default scheduler: throughput over raw and CPU per
  /// read over raw's.
  double default_over_raw = -1;
  double default_cpu_us_over_raw = 0;
  /// Its throughput over the peer's, and the peer's CPU per read over its.
  double default_over_peer = -1;
  double peer_cpu_over_default = -1;
  /// Its CPU per read over raw's plus the echo's: what it costs beside the
  /// limit of the machine and CAF's scheduler alone; -1 when unknown.
  double default_cpu_over_raw_plus_echo = -1;
};

/// What counts as flat under the sustained load: at most this much growth
/// from the settled sample (a sixth into the run) to the end.
constexpr double sustain_flat_bytes = 4.0 * 1048576.0;

/// One target (issues 10 and 20) and whether this run reached it.
struct target_row {
  std::string name;
  std::string measured;
  std::string verdict; ///< "reached", "missed", "not measured"
};

/// "georoute-hedging-off" when the library hedges by default, else
/// "georoute-hedging-on".
std::string alt_client_name();

/// The engine on CAF's default scheduler, measured beside "georoute" (the
/// engine loop).
constexpr const char* default_scheduler_client = "georoute-caf-sched";

/// Its baseline: the same callers on a system configured as its own,
/// asking an actor that answers at once (echo_load.hpp).
constexpr const char* echo_client = "caf-echo";

/// The engine ("georoute"'s options) with fleet health on and its NATS
/// server absent: the cost of sharing when the channel is dead.
constexpr const char* fleet_down_client = "georoute-fleet-down";

struct report {
  std::string command;
  std::string peer_version;
  double seconds_per_round = 0;
  double warmup_seconds = 0;
  int rounds = 0;
  std::vector<size_t> in_flight;
  std::vector<round_figures> rounds_raw;
  std::vector<failover_figures> failover;
  std::vector<cold_figures> cold;
  /// Per-read counts (CPU, thread runs, sleeps, allocations, timers).
  std::vector<accounting_row> accounting;
  bool has_memory = false;
  memory_figures memory;
  /// Resident memory under a sustained load, one row per scheduling mode.
  std::vector<sustain_figures> sustain;
  /// The change-feed drains (georoute and the peer, alternating) and the
  /// documents the drained collection holds.
  std::vector<feed_figures> feed;
  /// The bulk loads, side by side.
  std::vector<bulk_figures> bulk;
  uint64_t feed_documents_written = 0;
  double total_seconds = 0;
  /// The georoute client with hedging the other way round from the
  /// library's default ("georoute" runs the default).
  std::string alt_client = alt_client_name();
  /// What "georoute" ran on: "engine loop" or "CAF default scheduler".
  std::string georoute_scheduler = "engine loop";

  // Filled by summarize().
  std::vector<summary_row> summary;
  std::vector<ratio_row> ratios;
  std::vector<target_row> targets;

  void summarize();
};

/// The machine: CPU model, cores, kernel.
std::string machine_description();

std::string render_text(const report& r);
bool write_json(const report& r, const std::string& file);

} // namespace georoute::bench
