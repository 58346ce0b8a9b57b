#pragma once

// `georoute drill`: failover scenarios against the in-process multi-region
// emulator while a steady workload runs through the engine, reported from the
// callers' side beside what the emulator served.
//
// Each scenario gets a fresh emulator and one engine per region (an
// application site in that region, preferring its own region first, then the
// others in account order); the callers are spread over the sites. The fault
// script runs on the emulator at fixed fractions of the scenario's duration.
// Afterwards every acknowledged write is read back: a write the engine
// confirmed and the emulator does not hold is a lost write.

#include "georoute/actors/policy/result.hpp"
#include "georoute/config/settings.hpp"
#include "tests/drill/report.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace georoute::drill {

/// Options of a drill run (`georoute drill --help`).
struct drill_options {
  /// Scenario ids to run ("S1a", "S4", ...); empty: every scenario.
  std::vector<std::string> scenarios;
  std::chrono::milliseconds duration{15000}; ///< per scenario
  double rate = 200;     ///< target operations per second, all callers
  uint32_t callers = 16; ///< caller actors, spread over the sites
  uint32_t regions = 3;  ///< emulator regions (2..5)
  uint64_t seed = 1;
  /// The callers' deadline (their CAF request timeout) for normal requests;
  /// S6 uses its own, shorter than the failover path.
  std::chrono::milliseconds deadline{5000};
  /// Instead of the scenarios: one soak of this length (random faults).
  std::chrono::milliseconds soak{0};
  /// Busy threads competing for the cores during the run (0: none): an
  /// overloaded machine, reproducibly. Criteria that only an unloaded
  /// machine can meet (no user-visible failure) are reported, not judged;
  /// memory, no loss and no stuck request still are.
  uint32_t cpu_hog = 0;
  /// A deliberate leak: the recorder keeps this many bytes more for every
  /// operation until the run ends, to show that the memory criteria fail.
  uint32_t leak_per_op = 0;
  std::string json_file;
  std::string html_file;
  /// Progress: a rewritten line on a terminal, plain lines otherwise.
  bool terminal = false;
};

/// The words of `georoute drill ...` split into the drill's own options and
/// the rest (configuration flags for the engine). Errors name the option,
/// the value and what is allowed.
struct parsed_command {
  drill_options options;
  std::vector<std::string> config_args;
  bool help = false;
};
result<parsed_command> parse_command(std::vector<std::string> args);

/// The drill's time-compressed defaults for the engine, as configuration
/// flags that go before the user's own (a user's flag for the same key wins).
std::vector<std::string> drill_config_defaults();

/// The scenario ids in run order.
std::vector<std::string> scenario_ids();

/// Progress: `line` describes where the run is; `milestone` is true for a
/// scenario's start, its faults and its end (what a log should keep), false
/// for the periodic counters (what a terminal shows on one rewritten line).
using progress_fn =
    std::function<void(const std::string& line, bool milestone)>;

/// Runs the selected scenarios with the engine settings `engine` (the
/// account endpoint and key are replaced by the emulator's); the grey
/// scenarios (G*) run with `library`, the same flags without the drill's
/// time compression.
drill_report run_drill(const drill_options& opts,
                       const config::settings& engine,
                       const config::settings& library,
                       const progress_fn& progress);

/// `georoute drill`: parses, validates the configuration the same way as
/// the library, runs, prints, writes the files. Exit status 0 only when every
/// scenario passes; 2 for bad options or configuration; 1 when a scenario
/// fails or a file cannot be written.
int run_drill_command(std::vector<std::string> args);

} // namespace georoute::drill
