#pragma once

// The flags of `georoute bench` and what the parts of the bench share: the
// workload's names, the regions, and small helpers.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace georoute::bench {

/// Where the bench was configured from / builds into (compiled in).
std::string source_dir_default();
std::string work_dir_default();

/// Every flag, with its default.
struct options {
  double seconds = 3;
  double warmup = 0.5;
  int rounds = 2;
  std::vector<size_t> in_flight{1, 16, 64};
  double fault_seconds = 5;
  std::vector<size_t> cold{1, 100, 1000};
  size_t memory_collections = 10000;
  size_t memory_ranges = 100;
  /// Seconds of sustained load per scheduling mode (0: none).
  double sustain = 60;
  /// Documents of the change-feed drain's collection (0: no drain), and
  /// the page size both clients ask for.
  size_t feed_documents = 100000;
  size_t feed_page = 1000;
  /// Creates of each bulk load (0: no bulk rows), and the per-range ops
  /// budget of the rows under 429.
  size_t bulk_documents = 20000;
  size_t bulk_budget = 2000;
  std::vector<std::string> skip;
  std::string peer_dir = work_dir_default();
  std::string source_dir = source_dir_default();
  std::string json_file;

  bool skipped(const std::string& part) const {
    return std::find(skip.begin(), skip.end(), part) != skip.end();
  }
};

/// `georoute bench --help`.
extern const char* const usage;

/// Parses the flags into `o`; "" on success, "help" for --help, else the
/// one-line complaint.
std::string parse(std::vector<std::string> args, options& o);

/// This executable (/proc/self/exe).
std::string self_exe();

std::chrono::milliseconds to_ms(double seconds);

/// One progress line on stderr.
void log(const std::string& line);

// -- the workload ---------------------------------------------------------

extern const std::string db;
extern const std::string coll;
extern const std::string link; ///< "dbs/bench/colls/c"
/// The change-feed drain's collection, "feed" ("dbs/bench/colls/feed").
extern const std::string feed_coll;
/// The bulk loads' collections, one per load (each starts empty):
/// "bulk-point", "bulk-georoute", "bulk-peer", "bulk-429-georoute",
/// "bulk-429-peer".
extern const std::vector<std::string> bulk_colls;
extern const std::string doc_id;
extern const std::string doc_pk;
/// In account order; also every client's preference list.
extern const std::vector<std::string> regions;

/// The uncached collection of one cold-start trial.
std::string cold_name(const std::string& client, size_t k);

} // namespace georoute::bench
