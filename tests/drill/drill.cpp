#include "tests/drill/drill.hpp"

#include "georoute/actors/policy/timeout_ladder.hpp"
#include "georoute/config/georoute_config.hpp"
#include "georoute/messages/types.hpp"
#include "tests/drill/fleet_drill.hpp"

#include <charconv>
#include <chrono>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>
#include <unistd.h>

namespace georoute::drill {

namespace {

constexpr const char* help_text =
    "usage: georoute drill [drill options] [--georoute.<key>=<value> ...]\n"
    "\n"
    "Runs failover scenarios against the in-process multi-region emulator\n"
    "while callers run reads, writes and cross-partition queries through one\n"
    "engine per region, then reports what the callers saw beside what the\n"
    "emulator served. Exit status 0 only when every scenario passes.\n"
    "\n"
    "drill options:\n"
    "  --scenario=S1a,S3     scenarios to run (default: all): S1a S1b S2 S3\n"
    "                        S4 S5 S6 S7 S8 G1 G2 G3 G4 (KILL on request)\n"
    "  --duration=15s        length of each scenario (3s..1h)\n"
    "  --rate=200            target operations per second, all callers\n"
    "  --callers=16          caller actors, spread over the sites\n"
    "  --regions=3           emulator regions (2..5)\n"
    "  --seed=1              random seed of the workload\n"
    "  --deadline=5s         the callers' request timeout (S6 uses a shorter "
    "one)\n"
    "  --fleet               instead of the scenarios: the fleet drill "
    "(region\n"
    "                        health shared over NATS; own options "
    "--processes=4..8,\n"
    "                        --rate=R reads/s per process, --json=F,\n"
    "                        --keep=DIR keeps each member's lines; needs "
    "libnats\n"
    "                        and nats-server)\n"
    "  --soak=30min          instead of the scenarios: one soak of that "
    "length,\n"
    "                        random faults (hangs, refusals, resets, 503, "
    "429,\n"
    "                        403/3, write-region rotations, splits); 20s..24h\n"
    "  --cpu-hog=4           busy threads beside the run (0..64): an "
    "overloaded\n"
    "                        machine; memory, no loss and no stuck request\n"
    "                        are still judged, user-visible failures only\n"
    "                        reported\n"
    "  --leak-per-op=BYTES   keep BYTES more for every operation until the\n"
    "                        run ends: a deliberate leak, to see the memory\n"
    "                        criteria fail (0: none)\n"
    "  --json=FILE           write the report as JSON\n"
    "  --html=FILE           write the report as HTML with a timeline chart "
    "per\n"
    "                        scenario\n"
    "\n"
    "The engine is configured like the library (--georoute.<key>=<value>,\n"
    "--config-file=F), validated the same way. The drill compresses time and\n"
    "puts these defaults first, so any of them can be overridden:\n";

result<std::chrono::milliseconds> duration_arg(const std::string& name,
                                               const std::string& v,
                                               std::chrono::milliseconds lo,
                                               std::chrono::milliseconds hi) {
  auto d = parse_duration(v);
  if (!d) return problem{"--" + name + ": " + d.error().what};
  if (*d < lo || *d > hi)
    return problem{"--" + name + "=" + v + ": must be between " +
                   format_duration(lo) + " and " + format_duration(hi)};
  return *d;
}

template <class T>
result<T> number_arg(const std::string& name, const std::string& v, T lo,
                     T hi) {
  T n{};
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc{} || ptr != v.data() + v.size())
    return problem{"--" + name + "=" + v + ": not a number"};
  if (n < lo || n > hi)
    return problem{"--" + name + "=" + v + ": must be between " +
                   std::to_string(lo) + " and " + std::to_string(hi)};
  return n;
}

result<double> rate_arg(const std::string& v) {
  try {
    size_t used = 0;
    auto r = std::stod(v, &used);
    if (used != v.size()) throw std::invalid_argument{v};
    if (!(r >= 1 && r <= 100000))
      return problem{"--rate=" + v + ": must be between 1 and 100000"};
    return r;
  } catch (const std::exception&) {
    return problem{"--rate=" + v + ": not a number"};
  }
}

std::string utc_now() {
  auto t =
      std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

bool write_file(const std::string& path, const std::string& text,
                std::string& why) {
  std::ofstream f{path, std::ios::binary | std::ios::trunc};
  if (!f) {
    why = "cannot open " + path + " for writing";
    return false;
  }
  f << text;
  f.close();
  if (!f) {
    why = "writing " + path + " failed";
    return false;
  }
  return true;
}

} // namespace

std::vector<std::string> drill_config_defaults() {
  return {
      // Topology changes without an error (single -> multi-write) are seen
      // by the background refresh: every 5 s instead of 5 min.
      "--georoute.background-refresh-interval=5s",
      "--georoute.min-refresh-interval=1s",
      // Marks expire after 3 s instead of 5 min, so that traffic returns to a
      // region within the scenario.
      "--georoute.unavailable-region-expiry=3s",
      // The emulator answers on loopback in well under a millisecond: the
      // ladders shrink by the same order (reads wait 2 s for a silent
      // region instead of 22 s, a write 1 s instead of 65 s).
      "--georoute.http.ladder-partition-failover=[\"500ms/0s\", \"500ms/0s\", "
      "\"1s/0s\"]",
      "--georoute.http.ladder-default=[\"1s/0s\", \"1s/1s\", \"1s/0s\"]",
  };
}

result<parsed_command> parse_command(std::vector<std::string> args) {
  parsed_command out;
  auto ids = scenario_ids();
  for (size_t i = 0; i < args.size(); ++i) {
    const auto& a = args[i];
    if (a == "--help" || a == "-h") {
      out.help = true;
      continue;
    }
    if (a.rfind("--georoute.", 0) == 0 || a.rfind("--config-file", 0) == 0 ||
        a.rfind("--caf.", 0) == 0) {
      out.config_args.push_back(a);
      continue;
    }
    if (a.rfind("--", 0) != 0)
      return problem{"unexpected argument '" + a +
                     "' (see georoute drill --help)"};
    auto eq = a.find('=');
    auto name =
        a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    static const std::vector<std::string> known{
        "scenario", "duration", "rate", "callers", "regions", "seed",
        "deadline", "json",     "html", "soak",    "cpu-hog", "leak-per-op"};
    if (std::find(known.begin(), known.end(), name) == known.end())
      return problem{"unknown option --" + name +
                     " (see georoute drill --help)"};
    std::string value;
    if (eq != std::string::npos) {
      value = a.substr(eq + 1);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return problem{"--" + name + " needs a value"};
    }
    if (name == "scenario") {
      std::stringstream ss{value};
      std::string id;
      while (std::getline(ss, id, ',')) {
        if (id.empty()) continue;
        // "S1" means both of its variants.
        if (id == "S1") {
          out.options.scenarios.push_back("S1a");
          out.options.scenarios.push_back("S1b");
          continue;
        }
        if (std::find(ids.begin(), ids.end(), id) == ids.end()) {
          std::string all;
          for (const auto& x : ids)
            all += " " + x;
          return problem{"--scenario: unknown scenario '" + id +
                         "' (known:" + all + ")"};
        }
        out.options.scenarios.push_back(id);
      }
      if (out.options.scenarios.empty())
        return problem{"--scenario: no scenario named"};
    } else if (name == "duration") {
      auto d = duration_arg(name, value, std::chrono::seconds{3},
                            std::chrono::hours{1});
      if (!d) return d.error();
      out.options.duration = *d;
    } else if (name == "deadline") {
      auto d = duration_arg(name, value, std::chrono::milliseconds{50},
                            std::chrono::minutes{10});
      if (!d) return d.error();
      out.options.deadline = *d;
    } else if (name == "rate") {
      auto r = rate_arg(value);
      if (!r) return r.error();
      out.options.rate = *r;
    } else if (name == "callers") {
      auto n = number_arg<uint32_t>(name, value, 1, 4096);
      if (!n) return n.error();
      out.options.callers = *n;
    } else if (name == "regions") {
      auto n = number_arg<uint32_t>(name, value, 2, 5);
      if (!n) return n.error();
      out.options.regions = *n;
    } else if (name == "seed") {
      auto n = number_arg<uint64_t>(name, value, 0, UINT64_MAX);
      if (!n) return n.error();
      out.options.seed = *n;
    } else if (name == "soak") {
      auto d = duration_arg(name, value, std::chrono::seconds{20},
                            std::chrono::hours{24});
      if (!d) return d.error();
      out.options.soak = *d;
    } else if (name == "cpu-hog") {
      auto n = number_arg<uint32_t>(name, value, 0, 64);
      if (!n) return n.error();
      out.options.cpu_hog = *n;
    } else if (name == "leak-per-op") {
      auto n = number_arg<uint32_t>(name, value, 0, 1 << 20);
      if (!n) return n.error();
      out.options.leak_per_op = *n;
    } else if (name == "json") {
      out.options.json_file = value;
    } else if (name == "html") {
      out.options.html_file = value;
    }
  }
  return out;
}

int run_drill_command(std::vector<std::string> args) {
  // The fleet drill has processes, a NATS server and options of its own.
  auto fleet = std::find(args.begin(), args.end(), "--fleet");
  if (fleet != args.end()) {
    args.erase(fleet);
    return run_fleet_drill(std::move(args));
  }
  auto parsed = parse_command(std::move(args));
  if (!parsed) {
    std::cerr << "georoute drill: " << parsed.error().what << "\n";
    return 2;
  }
  if (parsed->help) {
    std::cout << help_text;
    for (const auto& d : drill_config_defaults())
      std::cout << "  " << d << "\n";
    return 0;
  }
  auto opts = parsed->options;
  auto config_args = drill_config_defaults();
  config_args.insert(config_args.end(), parsed->config_args.begin(),
                     parsed->config_args.end());
  config::georoute_config cfg;
  register_types(cfg);
  auto loaded = cfg.load(config_args, config::process_environment());
  for (const auto& w : loaded.warnings)
    std::cerr << "georoute drill: warning: " << w << "\n";
  if (!loaded.ok()) {
    for (const auto& e : loaded.errors)
      std::cerr << "georoute drill: invalid configuration: " << e << "\n";
    return 2;
  }
  if (!cfg.remainder.empty()) {
    std::cerr << "georoute drill: unexpected argument '"
              << cfg.remainder.front() << "'\n";
    return 2;
  }
  opts.terminal = isatty(STDERR_FILENO) != 0;
  bool open_line = false;
  auto progress = [&](const std::string& line, bool milestone) {
    if (opts.terminal) {
      std::cerr << "\r\033[K" << line << (milestone ? "\n" : "") << std::flush;
      open_line = !milestone;
    } else if (milestone) {
      std::cerr << line << "\n";
    }
  };
  auto started = utc_now();
  // The grey scenarios run with the user's flags alone: the library's own
  // defaults, not the drill's compressed ones.
  config::georoute_config library_cfg;
  register_types(library_cfg);
  auto library =
      library_cfg.load(parsed->config_args, config::process_environment());
  auto report = run_drill(opts, loaded.values, library.values, progress);
  if (open_line) std::cerr << "\r\033[K" << std::flush;
  report.started_utc = started;
  for (const auto& d : config_args) {
    auto eq = d.find('=');
    if (d.rfind("--georoute.", 0) == 0 && eq != std::string::npos)
      report.settings[d.substr(11, eq - 11)] = d.substr(eq + 1);
  }
  std::cout << render_table(report);
  int rc = report.passed ? 0 : 1;
  std::string why;
  if (!opts.json_file.empty()) {
    if (write_file(opts.json_file, render_json(report), why))
      std::cerr << "georoute drill: JSON report in " << opts.json_file << "\n";
    else {
      std::cerr << "georoute drill: " << why << "\n";
      rc = 1;
    }
  }
  if (!opts.html_file.empty()) {
    if (write_file(opts.html_file, render_html(report), why))
      std::cerr << "georoute drill: HTML report in " << opts.html_file << "\n";
    else {
      std::cerr << "georoute drill: " << why << "\n";
      rc = 1;
    }
  }
  return rc;
}

} // namespace georoute::drill
