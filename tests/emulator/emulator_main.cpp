// `georoute emulator`: flag parsing, start-up banner and the signal wait.

#include "tests/emulator/emulator_main.hpp"

#include "tests/emulator/emulator.hpp"

#include <algorithm>
#include <charconv>
#include <csignal>
#include <cstdint>
#include <iostream>
#include <limits>
#include <optional>
#include <pthread.h>
#include <string_view>

namespace georoute::emulator {

namespace {

constexpr const char* help_text =
    "usage: georoute emulator [options]\n"
    "\n"
    "Runs the multi-region Cosmos DB gateway emulator on 127.0.0.1 until\n"
    "SIGINT or SIGTERM. One HTTP/1.1 server per region plus the global\n"
    "(account) endpoint, which also serves the admin API under /_emulator/.\n"
    "\n"
    "options:\n"
    "  --regions=A,B,C         region names in account order; the first is "
    "the\n"
    "                          write region (default: West US,East US,North "
    "Europe)\n"
    "  --ports=P1,P2,...       one port per region, 0 = ephemeral\n"
    "                          (default: 4301, 4302, ... in region order)\n"
    "  --global-port=P         port of the global endpoint, 0 = ephemeral\n"
    "                          (default: 4300)\n"
    "  --multi-write           every region accepts writes (default: single "
    "write)\n"
    "  --initial-ranges=N      partition-key ranges of a new collection, "
    "1..256\n"
    "                          (default: 2)\n"
    "  --replication-lag-ms=N  delay before a write reaches the other regions\n"
    "                          (default: 0)\n"
    "  --region-lag=R:N,...    region R sees the other regions' writes N ms\n"
    "                          after the replication lag (default: none)\n"
    "  --ru-per-second=N       request units per second per region, 0 = "
    "unlimited\n"
    "                          (default: 0)\n"
    "  --bulk-response-cap=N   bytes of operation results in one bulk "
    "response;\n"
    "                          the rest answer 413/3402 (default: 4194304)\n"
    "  --io-threads=N          server io threads, 1..64 (default: 1)\n"
    "  --account-id=ID         the account id in GET / (default: "
    "georoute-emulator;\n"
    "                          never \"localhost\")\n"
    "  --key=BASE64            the master key clients sign with (default: the\n"
    "                          well-known public emulator key)\n"
    "  --help                  this text\n"
    "\n"
    "Admin API (JSON, no auth, global endpoint): GET /_emulator/state,\n"
    "POST /_emulator/regions/{name}/state {\"state\":\"online|offline_refuse|\n"
    "offline_reset|hang\"}, .../latency {\"ms\":N,\"jitter_ms\":J} (each\n"
    "response waits N +- J, J <= N), .../remove, .../restore,\n"
    ".../flap {\"down_state\":\"hang|offline_refuse|offline_reset|online\",\n"
    "\"down_latency_ms\":N,\"down_for_ms\":N,\"up_for_ms\":N} (down first, "
    "then\n"
    "up, until DELETE .../flap; online + latency = a region that turns slow),\n"
    "POST /_emulator/write-regions {\"order\":[...]}, /multi-write "
    "{\"enabled\":b},\n"
    "/split {\"db\",\"coll\",\"range\"}, /merge {\"db\",\"coll\",\"ranges\":"
    "[\"1\",\"2\"]},\n"
    "/replication-lag {\"ms\":N}, /region-lag {\"region\",\"lag_ms\":N},\n"
    "/throughput {\"region\",\"ru_per_second\"}, /faults {fault rule} -> "
    "{\"id\"}\n"
    "(grey failures: \"region\", \"collection\":\"dbs/d/colls/c\", "
    "\"range\":\"1\",\n"
    "\"action\":\"status|hang|delay\", \"delay_ms\":N: one range failing in "
    "one\n"
    "region), DELETE /_emulator/faults[/{id}] (a lifted hang closes the\n"
    "connections it held), POST /_emulator/reset (lifts every fault),\n"
    "GET /_emulator/counters, GET /_emulator/counters/ranges (per region,\n"
    "collection and range: responses by status, requests held by a hang),\n"
    "POST /_emulator/counters/reset. Per-partition failover: POST\n"
    "/_emulator/ppaf {\"enabled\":true|false|null} (the account property),\n"
    "/ppaf/move {\"db\",\"coll\",\"range\",\"region\"} (that range's\n"
    "writes go to that region only; others answer 403/3), /ppaf/clear\n"
    "{\"db\",\"coll\",\"range\"}, GET /_emulator/ppaf. Bulk: POST\n"
    "/_emulator/ops-budget {\"collection\",\"range\",\"ops_per_second\":N,\n"
    "\"burst\":B,\"spread\":b} (bulk ops per second per range; the excess\n"
    "429 with retryAfterMilliseconds), /bulk-op-faults {\"collection\",\n"
    "\"range\",\"operation_type\",\"status\",\"retry_after_ms\",\"count\"},\n"
    "/bulk-response-cap {\"bytes\":N}; GET /_emulator/counters/kinds,\n"
    "/counters/ops, /documents/{db}/{coll} (writes per document).\n";

/// One bad flag: printed as a single line, exit status 2.
struct flag_error {
  std::string text;
};

flag_error bad_value(const std::string& flag, const std::string& value,
                     const std::string& allowed) {
  return {"georoute emulator: invalid value '" + value + "' for " + flag +
          ": " + allowed};
}

template <class T>
std::optional<T> parse_uint(std::string_view text, T max) {
  uint64_t v = 0;
  if (text.empty()) return std::nullopt;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size() ||
      v > static_cast<uint64_t>(max))
    return std::nullopt;
  return static_cast<T>(v);
}

std::string trim(std::string_view s) {
  auto b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return {};
  auto e = s.find_last_not_of(" \t");
  return std::string{s.substr(b, e - b + 1)};
}

std::vector<std::string> split_list(std::string_view s) {
  std::vector<std::string> out;
  size_t pos = 0;
  for (;;) {
    auto next = s.find(',', pos);
    out.push_back(trim(s.substr(pos, next - pos)));
    if (next == std::string_view::npos) return out;
    pos = next + 1;
  }
}

/// What the flags produce, before they become emulator_options.
struct command_options {
  emulator_options opts;
  bool help = false;
  bool ports_given = false;
  bool global_port_given = false;
  /// --region-lag, applied once the emulator runs.
  std::vector<std::pair<std::string, std::chrono::milliseconds>> region_lags;
};

std::optional<flag_error> apply_flag(const std::string& arg,
                                     command_options& out) {
  auto eq = arg.find('=');
  std::string flag = arg.substr(0, eq);
  bool has_value = eq != std::string::npos;
  std::string value = has_value ? arg.substr(eq + 1) : std::string{};
  auto& o = out.opts;
  auto need_value = [&]() -> std::optional<flag_error> {
    if (!has_value)
      return flag_error{"georoute emulator: " + flag + " needs a value (" +
                        flag + "=...)"};
    return std::nullopt;
  };
  if (flag == "--help" || flag == "-h") {
    out.help = true;
  } else if (flag == "--multi-write") {
    if (has_value && value != "true" && value != "false")
      return bad_value(flag, value, "expected no value, true or false");
    o.engine.multi_write = !has_value || value == "true";
  } else if (flag == "--regions") {
    if (auto e = need_value()) return e;
    auto names = split_list(value);
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i].empty())
        return bad_value(flag, value,
                         "expected comma-separated non-empty region names");
      for (size_t k = 0; k < i; ++k)
        if (names[k] == names[i])
          return bad_value(flag, value,
                           "region '" + names[i] + "' is listed twice");
    }
    o.engine.regions = std::move(names);
  } else if (flag == "--ports") {
    if (auto e = need_value()) return e;
    o.region_ports.clear();
    for (const auto& p : split_list(value)) {
      auto port = parse_uint<uint16_t>(p, 65535);
      if (!port)
        return bad_value(flag, value,
                         "expected comma-separated ports in 0..65535");
      o.region_ports.push_back(*port);
    }
    out.ports_given = true;
  } else if (flag == "--global-port") {
    if (auto e = need_value()) return e;
    auto port = parse_uint<uint16_t>(value, 65535);
    if (!port) return bad_value(flag, value, "expected a port in 0..65535");
    o.global_port = *port;
    out.global_port_given = true;
  } else if (flag == "--initial-ranges") {
    if (auto e = need_value()) return e;
    auto n = parse_uint<size_t>(value, 256);
    if (!n || *n == 0)
      return bad_value(flag, value, "expected an integer in 1..256");
    o.engine.initial_ranges = *n;
  } else if (flag == "--replication-lag-ms") {
    if (auto e = need_value()) return e;
    auto n = parse_uint<int64_t>(value, int64_t{24} * 3600 * 1000);
    if (!n)
      return bad_value(flag, value, "expected milliseconds in 0..86400000");
    o.engine.replication_lag = std::chrono::milliseconds{*n};
  } else if (flag == "--region-lag") {
    if (auto e = need_value()) return e;
    for (const auto& item : split_list(value)) {
      auto colon = item.rfind(':');
      auto n = colon == std::string::npos
                   ? std::nullopt
                   : parse_uint<int64_t>(trim(item.substr(colon + 1)),
                                         int64_t{24} * 3600 * 1000);
      if (!n || trim(item.substr(0, colon)).empty())
        return bad_value(flag, value,
                         "expected REGION:MILLISECONDS[,...] with "
                         "milliseconds in 0..86400000");
      out.region_lags.emplace_back(trim(item.substr(0, colon)),
                                   std::chrono::milliseconds{*n});
    }
  } else if (flag == "--ru-per-second") {
    if (auto e = need_value()) return e;
    double v = 0;
    auto [end, ec] =
        std::from_chars(value.data(), value.data() + value.size(), v);
    if (value.empty() || ec != std::errc{} ||
        end != value.data() + value.size() || !(v >= 0 && v <= 1e12))
      return bad_value(flag, value, "expected a number >= 0 (0 = unlimited)");
    o.engine.ru_per_second = v;
  } else if (flag == "--bulk-response-cap") {
    if (auto e = need_value()) return e;
    auto n = parse_uint<size_t>(value, size_t{1} << 40);
    if (!n || *n == 0)
      return bad_value(flag, value, "expected bytes in 1..2^40");
    o.engine.bulk_response_cap_bytes = *n;
  } else if (flag == "--io-threads") {
    if (auto e = need_value()) return e;
    auto n = parse_uint<size_t>(value, 64);
    if (!n || *n == 0)
      return bad_value(flag, value, "expected an integer in 1..64");
    o.io_threads = *n;
  } else if (flag == "--account-id") {
    if (auto e = need_value()) return e;
    if (value.empty() || value == "localhost")
      return bad_value(flag, value,
                       "expected a non-empty id other than 'localhost' (the "
                       "JS SDK ignores the region lists of 'localhost')");
    o.engine.account_id = value;
  } else if (flag == "--key") {
    if (auto e = need_value()) return e;
    // Never echo a key: it may be a real one typed by mistake.
    if (value.empty() || value.size() % 4 != 0 ||
        value.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnop"
                                "qrstuvwxyz0123456789+/=") != std::string::npos)
      return flag_error{"georoute emulator: invalid value for --key: expected "
                        "standard base64 (value not shown)"};
    o.engine.master_key = value;
  } else {
    return flag_error{"georoute emulator: unknown flag '" + flag +
                      "' (see georoute emulator --help)"};
  }
  return std::nullopt;
}

} // namespace

int run_emulator_command(std::vector<std::string> args) {
  command_options cmd;
  for (const auto& arg : args) {
    if (auto err = apply_flag(arg, cmd)) {
      std::cerr << err->text << "\n";
      return 2;
    }
  }
  if (cmd.help) {
    std::cout << help_text;
    return 0;
  }
  auto& o = cmd.opts;
  if (!cmd.ports_given) {
    for (size_t i = 0; i < o.engine.regions.size(); ++i)
      o.region_ports.push_back(
          static_cast<uint16_t>(i + 4301 <= 65535 ? i + 4301 : 0));
  } else if (o.region_ports.size() != o.engine.regions.size()) {
    std::cerr << "georoute emulator: invalid value for --ports: "
              << o.region_ports.size() << " ports for "
              << o.engine.regions.size()
              << " regions: give one port per region, in --regions order\n";
    return 2;
  }
  if (!cmd.global_port_given) o.global_port = 4300;
  for (const auto& [name, lag] : cmd.region_lags) {
    if (std::find(o.engine.regions.begin(), o.engine.regions.end(), name) ==
        o.engine.regions.end()) {
      std::cerr << "georoute emulator: invalid value for --region-lag: "
                   "unknown region '"
                << name << "' (see --regions)\n";
      return 2;
    }
  }

  // Block the signals before any io thread exists, so that every thread
  // inherits the mask and only sigwait() below sees them.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  auto started = emulator::start(o);
  if (!started) {
    std::cerr << "georoute emulator: cannot start: " << started.error().what
              << "\n";
    return 1;
  }
  auto& emu = **started;
  for (const auto& [name, lag] : cmd.region_lags)
    (void)emu.control().set_region_lag(name, lag); // names checked above
  std::cout << "georoute emulator: account '" << o.engine.account_id << "', "
            << (o.engine.multi_write ? "multi-write" : "single-write") << ", "
            << o.io_threads << " io thread" << (o.io_threads == 1 ? "" : "s")
            << "\n"
            << "  global endpoint: " << emu.global_endpoint() << "\n";
  for (const auto& name : o.engine.regions)
    std::cout << "  region " << name << ": " << emu.endpoint(name) << "\n";
  std::cout << "  admin API:       " << emu.global_endpoint() << "_emulator/\n";
  // The emulator's key is a test key; printing it is the point.
  if (o.engine.master_key == default_master_key)
    std::cout << "  key (the well-known emulator key): " << emu.key() << "\n";
  else
    std::cout << "  key: the one given with --key\n";
  std::cout << "stop with Ctrl-C (SIGINT) or SIGTERM" << std::endl;

  int sig = 0;
  while (sigwait(&set, &sig) != 0) {
  }
  std::cout << "georoute emulator: " << (sig == SIGINT ? "SIGINT" : "SIGTERM")
            << ", shutting down" << std::endl;
  started->reset();
  std::cout << "georoute emulator: stopped" << std::endl;
  return 0;
}

} // namespace georoute::emulator
