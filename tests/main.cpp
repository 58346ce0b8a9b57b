// georoute: the command-line entry point.
//
//   georoute [command] [--config-file=F] [--georoute.<key>=<value> ...]
//
// The drill and the bench run their actors on the engine loop
// (actors/engine_loop.hpp) unless `--engine-loop=false` chooses CAF's
// default scheduler; the flag sets GEOROUTE_ENGINE_LOOP for this process
// (tests/engine_loop_choice.hpp), so it works with every command and in any
// position.
//
// `--log-level=trace|debug|info|warn|error` (any position) sends the
// drill's engines' logs (actors/log.hpp) to stderr, through
// GEOROUTE_LOG_LEVEL like the engine-loop flag.
//
// Every command first loads and validates the configuration; an invalid value
// prints one line naming the key, the value and what is allowed, and the
// process exits with status 2 before any actor starts.

#include "georoute/actors/log.hpp"
#include "georoute/config/georoute_config.hpp"
#include "georoute/messages/types.hpp"
#include "tests/bench/bench_command.hpp"
#include "tests/drill/drill.hpp"
#include "tests/drill/fleet_drill.hpp"
#include "tests/emulator/emulator_main.hpp"

#include <caf/actor_system.hpp>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

namespace {

constexpr const char* usage =
    "usage: georoute [command] [options]\n"
    "\n"
    "commands:\n"
    "  bench          georoute against a raw client and @azure/cosmos, side\n"
    "                 by side (georoute bench --help; reads no configuration)\n"
    "  check-config   validate the configuration and exit (default)\n"
    "  drill          run the disaster-recovery drill (georoute drill --help)\n"
    "  emulator       run the multi-region gateway emulator (own flags: see\n"
    "                 georoute emulator --help; reads no configuration)\n"
    "\n"
    "options:\n"
    "  --config-file=F           INI file (default: caf-application.ini)\n"
    "  --dump-config             print the effective configuration, key "
    "redacted\n"
    "  --engine-loop=false       drill and bench on CAF's default scheduler\n"
    "                            (default: the engine loop, one thread for\n"
    "                            actors, timers and sockets)\n"
    "  --georoute.<key>=<value>  override a key of config/georoute.ini\n"
    "  --log-level=L             the drill's engines log to stderr at L and\n"
    "                            above: trace, debug, info, warn, error\n"
    "  --long-help               list every option\n"
    "\n"
    "The account key comes from GEOROUTE_ACCOUNT_KEY or georoute.key-file.\n";

/// Takes `--engine-loop[=true|false]` out of `args` and records the choice
/// in the environment; false on a value it does not know.
bool take_engine_loop_flag(std::vector<std::string>& args) {
  for (auto i = args.begin(); i != args.end();) {
    const std::string& a = *i;
    if (a != "--engine-loop" && a.rfind("--engine-loop=", 0) != 0) {
      ++i;
      continue;
    }
    std::string v = a == "--engine-loop" ? "true" : a.substr(14);
    if (v == "true" || v == "1" || v == "yes" || v == "on")
      setenv("GEOROUTE_ENGINE_LOOP", "1", 1);
    else if (v == "false" || v == "0" || v == "no" || v == "off")
      setenv("GEOROUTE_ENGINE_LOOP", "0", 1);
    else {
      std::cerr << "georoute: --engine-loop takes true or false, not '" << v
                << "'\n";
      return false;
    }
    i = args.erase(i);
  }
  return true;
}

/// Takes `--log-level=L` out of `args` into GEOROUTE_LOG_LEVEL; false on a
/// level it does not know.
bool take_log_level_flag(std::vector<std::string>& args) {
  for (auto i = args.begin(); i != args.end();) {
    if (i->rfind("--log-level=", 0) != 0) {
      ++i;
      continue;
    }
    auto v = i->substr(12);
    if (!georoute::parse_log_level(v)) {
      std::cerr << "georoute: --log-level takes trace, debug, info, warn, "
                   "error or off, not '"
                << v << "'\n";
      return false;
    }
    setenv("GEOROUTE_LOG_LEVEL", v.c_str(), 1);
    i = args.erase(i);
  }
  return true;
}

} // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!take_engine_loop_flag(args)) return 2;
  if (!take_log_level_flag(args)) return 2;
  std::string command = "check-config";
  if (!args.empty() && !args.front().empty() && args.front()[0] != '-') {
    command = args.front();
    args.erase(args.begin());
  }
  // The emulator has its own flags and reads no georoute configuration.
  if (command == "emulator")
    return georoute::emulator::run_emulator_command(std::move(args));
  if (command == "bench")
    return georoute::bench::run_bench_command(std::move(args));
  // The drill reads the configuration itself, after its own options.
  if (command == "drill")
    return georoute::drill::run_drill_command(std::move(args));
  // One process of the fleet drill (started by it; not for people).
  if (command == "fleet-member")
    return georoute::drill::run_fleet_member(std::move(args));
  if (command == "help" || (!args.empty() && args.front() == "--help")) {
    std::cout << usage;
    return 0;
  }
  georoute::config::georoute_config cfg;
  georoute::register_types(cfg);
  auto loaded = cfg.load(args, georoute::config::process_environment());
  for (const auto& w : loaded.warnings)
    std::cerr << "georoute: warning: " << w << "\n";
  if (!loaded.ok()) {
    for (const auto& e : loaded.errors)
      std::cerr << "georoute: invalid configuration: " << e << "\n";
    return 2;
  }
  if (cfg.cli_helptext_printed) return 0;
  if (!cfg.remainder.empty()) {
    std::cerr << "georoute: unexpected argument '" << cfg.remainder.front()
              << "'\n"
              << usage;
    return 2;
  }
  if (cfg.dump_config_requested) {
    std::cout << georoute::config::render(loaded.values);
    return 0;
  }
  if (command == "check-config") {
    std::cout << "configuration ok"
              << (cfg.config_file_used.empty()
                      ? std::string{" (defaults, no file)"}
                      : " (" + cfg.config_file_used + ")")
              << "\n";
    return 0;
  }
  std::cerr << "georoute: unknown command '" << command << "'\n" << usage;
  return 2;
}
