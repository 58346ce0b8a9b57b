#include "tests/bench/bench_options.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <unistd.h>

namespace georoute::bench {

const char* const usage =
    "usage: georoute bench [options]\n"
    "\n"
    "Point reads against one emulator (a child `georoute emulator`, 3 "
    "regions)\n"
    "by three clients in interleaved rounds: raw (a Beast keep-alive client,\n"
    "pre-signed requests, no routing), georoute (the engine's router, from\n"
    "caller actors) and peer (@azure/cosmos on Node.js), with a baseline,\n"
    "caf-echo: the same callers asking an actor that answers at once (no\n"
    "I/O), the cost of CAF's default scheduler alone. Then failover (region\n"
    "hang, region refusing connections, write-region switch), cold-start\n"
    "metadata amplification, cache memory, resident memory under a\n"
    "sustained load in both scheduling modes, and a change-feed drain.\n"
    "georoute also runs with hedging the other way round, on CAF's default\n"
    "scheduler, and with fleet health on and its NATS server absent.\n"
    "\n"
    "options:\n"
    "  --seconds=S            measured window per round (default 3)\n"
    "  --warmup=S             warm-up before each window (default 0.5)\n"
    "  --rounds=N             repetitions of every client and level "
    "(default 2)\n"
    "  --in-flight=1,16,64    concurrency levels\n"
    "  --fault-seconds=S      how long each fault lasts (default 5)\n"
    "  --cold=1,100,1000      callers of the cold-start trials\n"
    "  --memory-collections=N cached collections (default 10000; 0 = skip)\n"
    "  --memory-ranges=N      ranges per collection (default 100)\n"
    "  --sustain=S            sustained load per mode at the highest level,\n"
    "                         resident memory sampled (default 60; 0 = skip)\n"
    "  --feed-docs=N          documents of the change-feed drain (default\n"
    "                         100000; 0 = skip)\n"
    "  --feed-page=N          documents per change-feed page (default 1000)\n"
    "  --bulk-docs=N          creates of each bulk load (default 20000; 0: no\n"
    "                         bulk rows)\n"
    "  --bulk-budget=N        ops a second each range takes in the rows under\n"
    "                         429 (default 2000)\n"
    "  --skip=LIST            any of raw,georoute,caf-echo,peer,failover,\n"
    "                         cold,memory,accounting,sustain,feed,bulk,\n"
    "                         georoute-fleet-down\n"
    "  --peer-dir=DIR         where npm installs @azure/cosmos (default: in "
    "the\n"
    "                         build tree)\n"
    "  --json=FILE            also write every figure as JSON\n";

namespace {

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    auto comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    if (comma > pos) out.push_back(text.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return out;
}

bool parse_count(const std::string& text, size_t min, size_t max, size_t& out) {
  size_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size() ||
      v < min || v > max)
    return false;
  out = v;
  return true;
}

bool parse_seconds(const std::string& text, double min, double max,
                   double& out) {
  try {
    size_t used = 0;
    double v = std::stod(text, &used);
    if (used != text.size() || !(v >= min && v <= max)) return false;
    out = v;
    return true;
  } catch (...) {
    return false;
  }
}

} // namespace

std::string parse(std::vector<std::string> args, options& o) {
  for (size_t i = 0; i < args.size(); ++i) {
    auto arg = args[i];
    auto eq = arg.find('=');
    auto flag = arg.substr(0, eq);
    std::string value;
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else if (flag != "--help" && i + 1 < args.size()) {
      value = args[++i];
    }
    auto bad = [&](const std::string& allowed) {
      return "georoute bench: invalid value '" + value + "' for " + flag +
             ": " + allowed;
    };
    auto list = [&](size_t min, size_t max, std::vector<size_t>& out) {
      out.clear();
      for (const auto& w : split(value)) {
        size_t n = 0;
        if (!parse_count(w, min, max, n)) return false;
        out.push_back(n);
      }
      return !out.empty();
    };
    size_t n = 0;
    if (flag == "--help") {
      return "help";
    } else if (flag == "--seconds") {
      if (!parse_seconds(value, 0.05, 600, o.seconds))
        return bad("seconds in 0.05..600");
    } else if (flag == "--warmup") {
      if (!parse_seconds(value, 0, 60, o.warmup))
        return bad("seconds in 0..60");
    } else if (flag == "--rounds") {
      if (!parse_count(value, 1, 100, n)) return bad("an integer in 1..100");
      o.rounds = static_cast<int>(n);
    } else if (flag == "--in-flight") {
      if (!list(1, 1024, o.in_flight))
        return bad("a comma-separated list of integers in 1..1024");
    } else if (flag == "--fault-seconds") {
      if (!parse_seconds(value, 0.5, 120, o.fault_seconds))
        return bad("seconds in 0.5..120");
    } else if (flag == "--cold") {
      if (!list(1, 10000, o.cold))
        return bad("a comma-separated list of integers in 1..10000");
    } else if (flag == "--memory-collections") {
      if (!parse_count(value, 0, 100000, o.memory_collections))
        return bad("an integer in 0..100000");
    } else if (flag == "--memory-ranges") {
      if (!parse_count(value, 1, 256, o.memory_ranges))
        return bad("an integer in 1..256");
    } else if (flag == "--sustain") {
      if (!parse_seconds(value, 0, 3600, o.sustain))
        return bad("seconds in 0..3600");
    } else if (flag == "--feed-docs") {
      if (!parse_count(value, 0, 1000000, o.feed_documents))
        return bad("an integer in 0..1000000");
    } else if (flag == "--bulk-docs") {
      if (!parse_count(value, 0, 1000000, o.bulk_documents))
        return bad("an integer in 0..1000000");
    } else if (flag == "--bulk-budget") {
      if (!parse_count(value, 1, 1000000, o.bulk_budget))
        return bad("an integer in 1..1000000");
    } else if (flag == "--feed-page") {
      if (!parse_count(value, 1, 10000, o.feed_page))
        return bad("an integer in 1..10000");
    } else if (flag == "--skip") {
      o.skip = split(value);
      for (const auto& s : o.skip)
        if (s != "raw" && s != "georoute" && s != "caf-echo" && s != "peer" &&
            s != "failover" && s != "cold" && s != "memory" &&
            s != "accounting" && s != "sustain" && s != "feed" && s != "bulk" &&
            s != "georoute-fleet-down")
          return bad("any of raw,georoute,caf-echo,peer,failover,cold,memory,"
                     "accounting,sustain,feed,bulk,georoute-fleet-down");
    } else if (flag == "--peer-dir") {
      if (value.empty()) return bad("a directory");
      o.peer_dir = value;
    } else if (flag == "--json") {
      if (value.empty()) return bad("a file name");
      o.json_file = value;
    } else {
      return "georoute bench: unknown flag '" + flag +
             "' (see georoute bench --help)";
    }
  }
  return {};
}

std::string source_dir_default() {
  return GEOROUTE_SOURCE_DIR;
}

std::string work_dir_default() {
  return GEOROUTE_BENCH_WORK_DIR;
}

std::string self_exe() {
  char buf[4096];
  auto n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  return std::string(buf, static_cast<size_t>(n));
}

std::chrono::milliseconds to_ms(double seconds) {
  return std::chrono::milliseconds{static_cast<int64_t>(seconds * 1000.0)};
}

void log(const std::string& line) {
  std::fprintf(stderr, "georoute bench: %s\n", line.c_str());
}

const std::string db = "bench";
const std::string coll = "c";
const std::string link = "dbs/bench/colls/c";
const std::string feed_coll = "feed";
const std::vector<std::string> bulk_colls{"bulk-point", "bulk-georoute",
                                          "bulk-peer", "bulk-429-georoute",
                                          "bulk-429-peer"};
const std::string doc_id = "x";
const std::string doc_pk = "p";
const std::vector<std::string> regions{"West US", "East US", "North Europe"};

std::string cold_name(const std::string& client, size_t k) {
  return "cold-" + client + "-" + std::to_string(k);
}

} // namespace georoute::bench
