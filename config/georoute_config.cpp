#include "config/georoute_config.hpp"

#include "transport/url.hpp"

#include <algorithm>
#include <caf/config_option.hpp>
#include <caf/config_option_set.hpp>
#include <caf/config_value.hpp>
#include <caf/deep_to_string.hpp>
#include <caf/settings.hpp>
#include <caf/timespan.hpp>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>

namespace georoute::config {

namespace {

using caf::timespan;
using string_list = std::vector<std::string>;

// Arrays, not pointers: with clang, CAF 0.17's string_view converts only from
// a char array (its `const char*` constructor exists for GCC only).
constexpr const char general[] = "georoute";
constexpr const char http[] = "georoute.http";
constexpr const char hedging[] = "georoute.hedging";
constexpr const char breaker[] = "georoute.circuit-breaker";
constexpr const char ppaf[] = "georoute.per-partition-failover";

// The circuit breaker's keys by the option field each sets, so that a
// problem `partition_breaker_options::validate` names by field is reported
// under the key the user wrote.
constexpr std::pair<const char*, const char*> breaker_fields[] = {
    {"read_failure_threshold", "read-failures"},
    {"write_failure_threshold", "write-failures"},
    {"hedge_win_threshold", "hedge-wins"},
    {"max_open_period", "max-open-period"},
    {"open_period", "open-period"},
    {"probe_timeout", "probe-timeout"},
    {"half_open_steps", "half-open-steps"},
    {"transition_log_capacity", "transition-log-capacity"},
    {"capacity", "capacity"},
};

// "open_period: must be positive" -> "georoute.circuit-breaker.open-period:
// must be positive".
std::string breaker_problem(const std::string& what) {
  for (const auto& [field, key] : breaker_fields) {
    std::string prefix = std::string{field} + ":";
    if (what.rfind(prefix, 0) == 0)
      return std::string{breaker} + "." + key + what.substr(std::strlen(field));
  }
  return std::string{breaker} + ": " + what;
}

// The ladder keys and where their values land.
struct ladder_key {
  const char* name;
  timeout_ladder timeout_ladders::*member;
};

constexpr ladder_key ladder_keys[] = {
    {"ladder-control-plane-read", &timeout_ladders::control_plane_read},
    {"ladder-hot-path", &timeout_ladders::hot_path},
    {"ladder-default", &timeout_ladders::default_ladder},
    {"ladder-partition-failover", &timeout_ladders::partition_failover},
    {"ladder-no-retry", &timeout_ladders::no_retry},
};

std::string quote(const std::string& s) {
  return "\"" + s + "\"";
}

std::string describe_type(caf::string_view caf_type) {
  std::string t(caf_type.begin(), caf_type.end());
  if (t.find("timespan") != std::string::npos ||
      t.find("duration") != std::string::npos)
    return "a duration with a unit, e.g. 300s or 1500ms";
  if (t.find("vector") != std::string::npos ||
      t.find("list") != std::string::npos)
    return "a list of strings, e.g. [\"West US\", \"East US\"]";
  if (t.find("bool") != std::string::npos) return "true or false";
  if (t.find("int") != std::string::npos) return "an integer";
  if (t.find("string") != std::string::npos)
    return "a \"double-quoted\" string";
  return t;
}

std::string join(const string_list& xs) {
  std::string r = "[";
  for (size_t i = 0; i < xs.size(); ++i) {
    if (i > 0) r += ", ";
    r += quote(xs[i]);
  }
  return r + "]";
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool valid_region_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  if (name.front() == ' ' || name.back() == ' ') return false;
  for (size_t i = 0; i < name.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(name[i]);
    if (c == ' ') {
      if (name[i - 1] == ' ') return false;
    } else if (std::isalnum(c) == 0) {
      return false;
    }
  }
  return true;
}

bool valid_base64(const std::string& s) {
  if (s.empty() || s.size() % 4 != 0) return false;
  size_t pad = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '=') {
      ++pad;
      continue;
    }
    if (pad > 0) return false; // data after padding
    if (std::isalnum(c) == 0 && c != '+' && c != '/') return false;
  }
  return pad <= 2;
}

std::string trim(std::string s) {
  auto not_space = [](unsigned char c) { return std::isspace(c) == 0; };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// Typed reader over CAF's parsed content that records range errors.
class reader {
public:
  reader(const caf::settings& content, load_result& out)
      : content_(content), out_(out) {}

  bool has(const std::string& key) const {
    return caf::get_if(&content_, key) != nullptr;
  }

  int64_t integer(const std::string& key, int64_t def, int64_t lo, int64_t hi) {
    auto v = caf::get_or(content_, key, def);
    if (v < lo || v > hi) {
      fail(key, std::to_string(v),
           "must be between " + std::to_string(lo) + " and " +
               std::to_string(hi));
      return def;
    }
    return v;
  }

  bool boolean(const std::string& key, bool def) {
    return caf::get_or(content_, key, def);
  }

  milliseconds duration(const std::string& key, milliseconds def,
                        milliseconds lo, milliseconds hi) {
    auto ts = caf::get_or(content_, key, timespan{def});
    auto v = std::chrono::duration_cast<milliseconds>(ts);
    if (ts < timespan{lo} || ts > timespan{hi}) {
      fail(key, caf::deep_to_string(ts),
           "must be between " + format_duration(lo) + " and " +
               format_duration(hi));
      return def;
    }
    return v;
  }

  std::string text(const std::string& key, std::string def = {}) {
    return caf::get_or(content_, key, def);
  }

  string_list strings(const std::string& key, string_list def = {}) {
    if (auto v = caf::get_if<string_list>(&content_, key)) return *v;
    return def;
  }

  void fail(const std::string& key, const std::string& value,
            const std::string& allowed) {
    out_.errors.push_back(key + " = " + value + ": " + allowed);
  }

private:
  const caf::settings& content_;
  load_result& out_;
};

void check_regions(reader& rd, const std::string& key, const string_list& xs) {
  std::vector<std::string> seen;
  for (const auto& name : xs) {
    if (!valid_region_name(name)) {
      rd.fail(key, join(xs),
              "region " + quote(name) +
                  " is not a region name (letters and digits in words "
                  "separated by single spaces, at most 64 characters, e.g. "
                  "\"West US 2\")");
      return;
    }
    auto l = lower(name);
    if (std::find(seen.begin(), seen.end(), l) != seen.end()) {
      rd.fail(key, join(xs), "region " + quote(name) + " is listed twice");
      return;
    }
    seen.push_back(l);
  }
}

void check_endpoint(reader& rd, const std::string& key, const std::string& ep) {
  auto parsed = transport::parse_url(ep);
  if (auto err = std::get_if<std::string>(&parsed)) {
    rd.fail(key, quote(ep),
            *err +
                " (expected e.g. \"https://acct.documents.azure.com:443/\")");
    return;
  }
  const auto& u = std::get<transport::url>(parsed);
  if (!u.tls() && !transport::is_loopback_host(u.host)) {
    rd.fail(key, quote(ep),
            "plain http is allowed only for loopback hosts (127.0.0.0/8, ::1, "
            "localhost); use https");
    return;
  }
  if (u.path != "/")
    rd.fail(key, quote(ep),
            "an endpoint has no path (expected \"" + u.origin() + "/\")");
}

} // namespace

env_lookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    if (const char* v = std::getenv(name.c_str())) return std::string{v};
    return std::nullopt;
  };
}

georoute_config::georoute_config() {
  const settings d;
  opt_group{custom_options_, general}
      .add<std::string>("account-endpoint",
                        "account (global) endpoint URL; http only on loopback")
      .add<std::string>("key-file",
                        "file holding the base64 master key (or set "
                        "GEOROUTE_ACCOUNT_KEY)")
      .add<string_list>("preferred-regions", "regions to use first, in order")
      .add<string_list>("excluded-regions", "regions never to route to")
      .add<bool>("endpoint-discovery", "follow the account's regions (true)")
      .add<bool>("use-multiple-write-locations",
                 "write to every write region of a multi-write account (true)")
      .add<timespan>("background-refresh-interval",
                     "account topology refresh period (300s)")
      .add<timespan>("min-refresh-interval",
                     "minimum gap between non-forced refreshes (15s)")
      .add<timespan>("unavailable-region-expiry",
                     "how long a failed region stays demoted (300s)")
      .add<timespan>("metadata-hard-deadline",
                     "hard deadline of a detached metadata operation (300s, "
                     "clamped into [30s, 86400s])")
      .add<int64_t>("metadata-attempt-cap",
                    "attempts per detached metadata operation (200)")
      .add<int64_t>("failover-retries", "endpoint-failure retries (120)")
      .add<timespan>("failover-retry-interval", "pause before a failover (1s)")
      .add<int64_t>("throttle-retries", "429 retries (9)")
      .add<timespan>("throttle-max-wait", "cumulative 429 back-off (30s)")
      .add<timespan>("operation-budget",
                     "budget of one data-plane operation (60s)")
      .add<bool>("write-retries",
                 "retry writes that may have been applied, with a "
                 "_trackingId property added to the document (false)")
      .add<int64_t>("scheduler-threads",
                    "CAF worker threads; 0 = one per core (0)")
      .add<int64_t>("query-plan-cache-size", "query plans kept (1024)")
      .add<int64_t>("collection-cache-size",
                    "collections kept per index (10000)")
      .add<int64_t>("pkrange-cache-size",
                    "routing maps kept, one per collection (10000)")
      .add<int64_t>("cache-max-waiters",
                    "callers that may wait for one metadata fetch (10000)")
      .add<int64_t>("max-operations-in-flight",
                    "data-plane operations in flight per engine; more are "
                    "refused at once with 'overloaded' (10000)");
  auto grp = opt_group{custom_options_, http};
  grp.add<int64_t>("max-connections-per-endpoint",
                   "keep-alive connections per endpoint (16)")
      .add<int64_t>("response-body-limit",
                    "largest response body, bytes (64 MiB)")
      .add<std::string>("tls-ca-file", "PEM file of trusted CAs (system store)")
      .add<int64_t>("io-threads", "HTTP io threads (1)");
  for (const auto& lk : ladder_keys)
    grp.add<string_list>(caf::string_view{lk.name, std::strlen(lk.name)},
                         "timeout ladder, e.g. [\"5s/0s\", \"10s/1s\"]");
  opt_group{custom_options_, hedging}
      .add<bool>("enabled", "hedge reads to the next region (true)")
      .add<bool>("writes", "also hedge upserts and unconditional replaces on a "
                           "multi-write account (false)")
      .add<timespan>("threshold",
                     "when the first hedge starts; 0s = min(1s, first "
                     "read-ladder timeout / 2) (0s)")
      .add<timespan>("step", "between later hedges (500ms)")
      .add<std::string>("mode", "threshold: static or adaptive (static)")
      .add<int64_t>("budget-percent",
                    "hedges at most this share of reads over 10 s (10)")
      .add<timespan>("metadata-threshold",
                     "when a slow metadata request (collection read, query "
                     "plan, first pkranges page) is hedged (1500ms)")
      .add<int64_t>("metadata-max-concurrent",
                    "metadata hedges in flight at once; 0 = off (32)");
  opt_group{custom_options_, breaker}
      .add<bool>("enabled",
                 "per-partition circuit breaker of the data plane (true)")
      .add<int64_t>("read-failures",
                    "consecutive failed reads of a range in a region that "
                    "open its breaker (10)")
      .add<int64_t>("write-failures",
                    "the same for writes on multi-write accounts (5)")
      .add<int64_t>("hedge-wins",
                    "consecutive hedge wins against a region that open it (5)")
      .add<timespan>("open-period", "first open period before the probe (5s)")
      .add<timespan>("max-open-period",
                     "cap of the open period, doubled per failed probe (300s)")
      .add<timespan>("probe-timeout",
                     "a probe unanswered this long has failed (10s)")
      .add<int64_t>("half-open-steps",
                    "after a probe, one request in 2^steps returns, doubling "
                    "per answer (3)")
      .add<int64_t>("capacity", "(range, region) entries tracked (10000)");
  opt_group{custom_options_, ppaf}
      .add<bool>("enabled", "follow the account's per-partition failover of "
                            "single-write accounts' writes (true)")
      .add<int64_t>("timeout-threshold",
                    "client timeouts of one range's writes within the window "
                    "that move the range to the next region (5)")
      .add<timespan>("timeout-window", "the window of those timeouts (60s)")
      .add<int64_t>("max-ranges", "ranges tracked at most (10000)");
}

void georoute_config::check_section(const caf::settings& section,
                                    const std::string& prefix,
                                    load_result& out) {
  for (const auto& kv : section) {
    auto name = prefix + "." + kv.first;
    if (auto sub = caf::get_if<caf::settings>(&kv.second)) {
      check_section(*sub, name, out);
      continue;
    }
    if (kv.first == "account-key") {
      out.errors.push_back(name + " = <redacted>: the account key is never "
                                  "read from the configuration file; set "
                                  "GEOROUTE_ACCOUNT_KEY or georoute.key-file");
      continue;
    }
    auto opt = custom_options_.qualified_name_lookup(prefix, kv.first);
    if (opt == nullptr) {
      out.errors.push_back(name + " = " + caf::deep_to_string(kv.second) +
                           ": unknown key (see config/georoute.ini for the "
                           "keys of [" +
                           prefix + "])");
      continue;
    }
    if (opt->check(kv.second))
      out.errors.push_back(name + " = " + caf::deep_to_string(kv.second) +
                           ": expected " + describe_type(opt->type_name()));
  }
}

void georoute_config::check_raw_file(const std::string& text,
                                     load_result& out) {
  std::istringstream in(text);
  auto raw = parse_config(in);
  if (!raw) {
    out.errors.push_back("configuration file " + config_file_used + ": " +
                         render(raw.error()));
    return;
  }
  auto it = raw->find(general);
  if (it == raw->end()) return;
  if (auto section = caf::get_if<caf::settings>(&it->second))
    check_section(*section, general, out);
}

// By its full name, "georoute.hedging.enabled": the category is everything
// before the last dot.
const caf::config_option*
georoute_config::option_named(const std::string& name) const {
  auto dot = name.rfind('.');
  if (dot == std::string::npos) return nullptr;
  return custom_options_.qualified_name_lookup(
      caf::string_view{name.data(), dot},
      caf::string_view{name.data() + dot + 1, name.size() - dot - 1});
}

load_result georoute_config::load(std::vector<std::string> args,
                                  const env_lookup& env,
                                  std::optional<std::string> ini_text) {
  load_result out;
  // Take out what georoute handles itself.
  std::string file_arg;
  bool explicit_file = false;
  string_list rest;
  std::vector<std::pair<std::string, bool>> bool_args;
  // "--name=value" for a boolean option: (name, the value if it is true or
  // false); nullopt for anything else.
  auto bool_assignment = [this](const std::string& a)
      -> std::optional<std::pair<std::string, std::optional<bool>>> {
    auto eq = a.find('=');
    if (a.rfind("--", 0) != 0 || eq == std::string::npos) return std::nullopt;
    auto name = a.substr(2, eq - 2);
    auto opt = option_named(name);
    if (!opt || !opt->is_flag()) return std::nullopt;
    auto v = a.substr(eq + 1);
    std::optional<bool> value;
    if (v == "true") value = true;
    if (v == "false") value = false;
    return std::make_pair(name, value);
  };
  for (auto& a : args) {
    if (a == "--dump-config") {
      dump_config_requested = true;
    } else if (a.rfind("--config-file=", 0) == 0) {
      file_arg = a.substr(14);
      explicit_file = true;
    } else if (auto flag = bool_assignment(a)) {
      // CAF takes a boolean option only as a bare flag (--x, meaning true):
      // --x=true and --x=false are set after parsing instead.
      if (!flag->second) {
        out.errors.push_back(a + ": expected true or false");
        return out;
      }
      bool_args.emplace_back(flag->first, *flag->second);
    } else {
      rest.push_back(std::move(a));
    }
  }
  std::string text;
  if (ini_text) {
    text = *ini_text;
    config_file_used = "<inline>";
  } else {
    auto path = explicit_file ? file_arg : std::string{"caf-application.ini"};
    if (auto content = read_file(path)) {
      text = std::move(*content);
      config_file_used = path;
    } else if (explicit_file) {
      out.errors.push_back("--config-file=" + path +
                           ": cannot read the file (does it exist?)");
      return out;
    }
  }
  check_raw_file(text, out);
  std::istringstream ini(text);
  if (auto err = parse(rest, ini)) {
    // CAF names the offending argument; add what the option expects.
    auto line = render(err);
    std::string arg;
    const auto& ctx = err.context();
    for (const auto& a : rest)
      if (line.find(a) != std::string::npos) arg = a;
    if (!arg.empty()) {
      auto name = arg.substr(2, arg.find('=') - 2);
      auto opt = option_named(name);
      line = arg + ": " +
             (opt ? "expected " + describe_type(opt->type_name())
                  : std::string{"unknown option"});
    }
    static_cast<void>(ctx);
    out.errors.push_back(line);
    return out;
  }
  if (cli_helptext_printed || !out.errors.empty()) return out;
  for (const auto& [name, value] : bool_args)
    caf::put(content, name, value);

  const auto& content = caf::content(*this);
  reader rd(content, out);
  auto& s = out.values;
  const std::string g = general;
  const std::string h = http;

  s.account_endpoint = rd.text(g + ".account-endpoint");
  if (!s.account_endpoint.empty())
    check_endpoint(rd, g + ".account-endpoint", s.account_endpoint);

  // The key: environment or key file, never the INI text, never printed.
  auto key_file = rd.text(g + ".key-file");
  auto env_key = env(account_key_env);
  if (env_key && !key_file.empty()) {
    out.errors.push_back(g + ".key-file = " + quote(key_file) +
                         ": the account key is set twice (also in " +
                         account_key_env + "); set it once");
  } else if (env_key) {
    auto k = trim(*env_key);
    if (!valid_base64(k))
      out.errors.push_back(std::string{account_key_env} +
                           " = <redacted>: not a base64 master key");
    s.account_key = secret{k};
    s.account_key_source = account_key_env;
  } else if (!key_file.empty()) {
    if (auto k = read_file(key_file)) {
      auto key = trim(*k);
      if (!valid_base64(key))
        out.errors.push_back(g + ".key-file = " + quote(key_file) +
                             ": the file does not hold a base64 master key");
      s.account_key = secret{key};
      s.account_key_source = "key-file " + key_file;
    } else {
      out.errors.push_back(g + ".key-file = " + quote(key_file) +
                           ": cannot read the file");
    }
  }

  auto& loc = s.location;
  loc.preferred_regions = rd.strings(g + ".preferred-regions");
  check_regions(rd, g + ".preferred-regions", loc.preferred_regions);
  loc.excluded_regions = rd.strings(g + ".excluded-regions");
  check_regions(rd, g + ".excluded-regions", loc.excluded_regions);
  loc.endpoint_discovery =
      rd.boolean(g + ".endpoint-discovery", loc.endpoint_discovery);
  loc.use_multiple_write_locations = rd.boolean(
      g + ".use-multiple-write-locations", loc.use_multiple_write_locations);
  const milliseconds day = seconds{86400};
  loc.unavailable_region_expiry =
      rd.duration(g + ".unavailable-region-expiry",
                  loc.unavailable_region_expiry, seconds{1}, day);

  auto& rf = s.refresh;
  rf.background_interval =
      rd.duration(g + ".background-refresh-interval", rf.background_interval,
                  milliseconds{100}, day);
  rf.min_interval = rd.duration(g + ".min-refresh-interval", rf.min_interval,
                                milliseconds{0}, seconds{3600});

  auto& rt = s.retry;
  // Hard deadline: file or CLI, else the environment; clamped with a warning.
  std::optional<milliseconds> deadline;
  std::string deadline_origin;
  if (rd.has(g + ".metadata-hard-deadline")) {
    auto ts = caf::get_or(content, g + ".metadata-hard-deadline",
                          timespan{rt.metadata_hard_deadline});
    if (ts < timespan{0})
      rd.fail(g + ".metadata-hard-deadline", caf::deep_to_string(ts),
              "must not be negative");
    else
      deadline = std::chrono::duration_cast<milliseconds>(ts);
    deadline_origin = g + ".metadata-hard-deadline";
  } else if (auto v = env(hard_deadline_env)) {
    auto t = trim(*v);
    char* end = nullptr;
    errno = 0;
    long long n = t.empty() ? 0 : std::strtoll(t.c_str(), &end, 10);
    if (t.empty() || *end != '\0' || errno == ERANGE || n < 0)
      out.errors.push_back(std::string{hard_deadline_env} + " = " + quote(*v) +
                           ": expected a whole number of seconds, e.g. 300");
    else
      deadline = seconds{std::min<long long>(n, 1'000'000'000LL)};
    deadline_origin = hard_deadline_env;
  }
  if (deadline) {
    auto clamped = std::clamp(*deadline, min_metadata_hard_deadline,
                              max_metadata_hard_deadline);
    if (clamped != *deadline)
      out.warnings.push_back(deadline_origin + " = " +
                             format_duration(*deadline) + " clamped to " +
                             format_duration(clamped) +
                             " (allowed: 30s to 86400s)");
    rt.metadata_hard_deadline = clamped;
  }
  rt.metadata_attempt_cap = static_cast<uint32_t>(rd.integer(
      g + ".metadata-attempt-cap", rt.metadata_attempt_cap, 1, 100000));
  rt.failover_retries = static_cast<uint32_t>(
      rd.integer(g + ".failover-retries", rt.failover_retries, 0, 10000));
  rt.failover_retry_interval =
      rd.duration(g + ".failover-retry-interval", rt.failover_retry_interval,
                  milliseconds{0}, seconds{60});
  rt.throttle_retries = static_cast<uint32_t>(
      rd.integer(g + ".throttle-retries", rt.throttle_retries, 0, 1000));
  rt.throttle_max_wait =
      rd.duration(g + ".throttle-max-wait", rt.throttle_max_wait,
                  milliseconds{0}, seconds{3600});
  rt.operation_budget =
      rd.duration(g + ".operation-budget", rt.operation_budget, milliseconds{1},
                  seconds{86400});
  rt.write_retries = rd.boolean(g + ".write-retries", rt.write_retries);

  auto threads = rd.integer(g + ".scheduler-threads", 0, 0, 256);
  s.scheduler_threads = threads > 0
                            ? static_cast<size_t>(threads)
                            : std::max(1u, std::thread::hardware_concurrency());
  s.query_plan_cache_size = static_cast<size_t>(
      rd.integer(g + ".query-plan-cache-size",
                 static_cast<int64_t>(s.query_plan_cache_size), 1, 1'000'000));
  s.collection_cache_size = static_cast<size_t>(
      rd.integer(g + ".collection-cache-size",
                 static_cast<int64_t>(s.collection_cache_size), 1, 10'000'000));
  s.pkrange_cache_size = static_cast<size_t>(
      rd.integer(g + ".pkrange-cache-size",
                 static_cast<int64_t>(s.pkrange_cache_size), 1, 10'000'000));
  s.cache_max_waiters = static_cast<size_t>(
      rd.integer(g + ".cache-max-waiters",
                 static_cast<int64_t>(s.cache_max_waiters), 1, 10'000'000));
  s.max_operations_in_flight = static_cast<size_t>(rd.integer(
      g + ".max-operations-in-flight",
      static_cast<int64_t>(s.max_operations_in_flight), 1, 10'000'000));

  const std::string hg = hedging;
  auto& he = s.hedging;
  he.enabled = rd.boolean(hg + ".enabled", he.enabled);
  he.hedge_writes = rd.boolean(hg + ".writes", he.hedge_writes);
  auto threshold = rd.duration(hg + ".threshold", milliseconds{0},
                               milliseconds{0}, seconds{3600});
  if (threshold.count() > 0) he.threshold = threshold;
  he.step = rd.duration(hg + ".step", he.step, milliseconds{1}, seconds{3600});
  auto mode = rd.text(hg + ".mode", "static");
  if (mode == "adaptive")
    he.mode = hedge_threshold_mode::adaptive;
  else if (mode != "static")
    rd.fail(hg + ".mode", quote(mode), "expected static or adaptive");
  he.budget.share =
      static_cast<double>(rd.integer(hg + ".budget-percent", 10, 0, 100)) /
      100.0;
  auto& mh = he.metadata;
  mh.threshold = rd.duration(hg + ".metadata-threshold", mh.threshold,
                             milliseconds{1}, seconds{3600});
  mh.max_concurrent = static_cast<uint32_t>(
      rd.integer(hg + ".metadata-max-concurrent",
                 static_cast<int64_t>(mh.max_concurrent), 0, 100'000));
  for (const auto& problem : he.validate())
    out.errors.push_back(problem);

  const std::string cb = breaker;
  s.circuit_breaker_enabled =
      rd.boolean(cb + ".enabled", s.circuit_breaker_enabled);
  auto& bo = s.circuit_breaker;
  bo.read_failure_threshold = static_cast<uint32_t>(rd.integer(
      cb + ".read-failures", bo.read_failure_threshold, 1, 1'000'000));
  bo.write_failure_threshold = static_cast<uint32_t>(rd.integer(
      cb + ".write-failures", bo.write_failure_threshold, 1, 1'000'000));
  bo.hedge_win_threshold = static_cast<uint32_t>(
      rd.integer(cb + ".hedge-wins", bo.hedge_win_threshold, 1, 1'000'000));
  bo.open_period = rd.duration(cb + ".open-period", bo.open_period,
                               milliseconds{1}, seconds{86400});
  bo.max_open_period = rd.duration(cb + ".max-open-period", bo.max_open_period,
                                   milliseconds{1}, seconds{86400});
  bo.probe_timeout = rd.duration(cb + ".probe-timeout", bo.probe_timeout,
                                 milliseconds{1}, seconds{3600});
  bo.half_open_steps = static_cast<uint32_t>(
      rd.integer(cb + ".half-open-steps", bo.half_open_steps, 0, 16));
  bo.capacity = static_cast<size_t>(rd.integer(
      cb + ".capacity", static_cast<int64_t>(bo.capacity), 1, 10'000'000));
  // What the single keys cannot see (max-open-period below open-period).
  if (auto problem = bo.validate())
    out.errors.push_back(breaker_problem(problem->what));

  const std::string pf = ppaf;
  auto& po = s.per_partition_failover;
  po.enabled = rd.boolean(pf + ".enabled", po.enabled);
  po.timeout_threshold = static_cast<uint32_t>(rd.integer(
      pf + ".timeout-threshold", po.timeout_threshold, 1, 1'000'000));
  po.timeout_window = rd.duration(pf + ".timeout-window", po.timeout_window,
                                  milliseconds{1}, seconds{86400});
  po.max_ranges = static_cast<size_t>(rd.integer(
      pf + ".max-ranges", static_cast<int64_t>(po.max_ranges), 1, 10'000'000));

  auto& hp = s.http;
  hp.max_connections_per_endpoint = static_cast<size_t>(rd.integer(
      h + ".max-connections-per-endpoint",
      static_cast<int64_t>(hp.max_connections_per_endpoint), 1, 1024));
  hp.response_body_limit = static_cast<size_t>(rd.integer(
      h + ".response-body-limit", static_cast<int64_t>(hp.response_body_limit),
      1024, int64_t{1} << 30));
  hp.io_threads = static_cast<size_t>(rd.integer(
      h + ".io-threads", static_cast<int64_t>(hp.io_threads), 1, 16));
  hp.tls_ca_file = rd.text(h + ".tls-ca-file");
  if (!hp.tls_ca_file.empty() && !read_file(hp.tls_ca_file))
    rd.fail(h + ".tls-ca-file", quote(hp.tls_ca_file), "cannot read the file");
  for (const auto& lk : ladder_keys) {
    auto key = h + "." + lk.name;
    if (!rd.has(key)) continue;
    auto steps = rd.strings(key);
    auto ladder = parse_ladder(steps);
    if (!ladder)
      rd.fail(key, join(steps), ladder.error().what);
    else
      hp.ladders.*lk.member = std::move(*ladder);
  }

  // CAF's own default of max(4, cores) workers costs ~35% on 2 cores.
  if (out.ok() && caf::get_if(&content, "scheduler.max-threads") == nullptr)
    set("scheduler.max-threads", s.scheduler_threads);
  return out;
}

std::vector<std::string> check_settings(const settings& s) {
  const caf::settings none;
  load_result out;
  reader rd{none, out};
  const std::string g = general;
  if (s.account_endpoint.empty())
    out.errors.push_back("the engine needs " + g + ".account-endpoint");
  else
    check_endpoint(rd, g + ".account-endpoint", s.account_endpoint);
  if (!s.account_key.empty() && !valid_base64(s.account_key.reveal()))
    out.errors.push_back("the account key (" + std::string{account_key_env} +
                         " or " + g +
                         ".key-file) is not usable: not a base64 master key");
  for (const auto& lk : ladder_keys)
    if ((s.http.ladders.*lk.member).empty())
      out.errors.push_back(std::string{http} + "." + lk.name +
                           " = []: a ladder needs at least one step");
  for (const auto& problem : s.hedging.validate())
    out.errors.push_back(problem);
  if (auto problem = s.circuit_breaker.validate())
    out.errors.push_back(breaker_problem(problem->what));
  if (s.max_operations_in_flight == 0)
    out.errors.push_back(g + ".max-operations-in-flight = 0: the engine "
                             "would refuse every request; at least 1");
  return out.errors;
}

} // namespace georoute::config
