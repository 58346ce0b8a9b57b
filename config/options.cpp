#include "georoute/config/options.hpp"

#include "georoute/actors/policy/fleet_subject.hpp"
#include "georoute/transport/auth.hpp"
#include "georoute/transport/url.hpp"

#include <algorithm>
#include <caf/actor_system_config.hpp>
#include <caf/config_option_set.hpp>
#include <caf/config_value.hpp>
#include <caf/deep_to_string.hpp>
#include <caf/settings.hpp>
#include <caf/timespan.hpp>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <type_traits>
#include <utility>

namespace georoute::config {

namespace {

using caf::timespan;
using string_list = std::vector<std::string>;

constexpr const char general[] = "georoute";
constexpr const char http[] = "georoute.http";
constexpr const char hedging[] = "georoute.hedging";
constexpr const char breaker[] = "georoute.circuit-breaker";
constexpr const char ppaf[] = "georoute.per-partition-failover";
constexpr const char fleet[] = "georoute.fleet-health";

const milliseconds day = seconds{86400};

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

std::string quote(const std::string& s) {
  return "\"" + s + "\"";
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

std::optional<std::string> regions_problem(const std::string& key,
                                           const string_list& xs) {
  std::vector<std::string> seen;
  for (const auto& name : xs) {
    if (!valid_region_name(name))
      return key + " = " + join(xs) + ": region " + quote(name) +
             " is not a region name (letters and digits in words separated "
             "by single spaces, at most 64 characters, e.g. \"West US 2\")";
    auto l = lower(name);
    if (std::find(seen.begin(), seen.end(), l) != seen.end())
      return key + " = " + join(xs) + ": region " + quote(name) +
             " is listed twice";
    seen.push_back(l);
  }
  return std::nullopt;
}

std::optional<std::string> endpoint_problem(const std::string& key,
                                            const std::string& ep) {
  auto parsed = transport::parse_url(ep);
  if (auto err = std::get_if<std::string>(&parsed))
    return key + " = " + quote(ep) + ": " + *err +
           " (expected e.g. \"https://acct.documents.azure.com:443/\")";
  const auto& u = std::get<transport::url>(parsed);
  if (!u.tls() && !transport::is_loopback_host(u.host))
    return key + " = " + quote(ep) +
           ": plain http is allowed only for loopback hosts (127.0.0.0/8, "
           "::1, localhost); use https";
  if (u.path != "/")
    return key + " = " + quote(ep) + ": an endpoint has no path (expected \"" +
           u.origin() + "/\")";
  return std::nullopt;
}

std::string between(const std::string& lo, const std::string& hi) {
  return "must be between " + lo + " and " + hi;
}

// Whether `v` (any integer type) lies in [lo, hi], without the wrap-around
// of comparing an unsigned field with a negative bound.
template <class T>
bool within(T v, int64_t lo, int64_t hi) {
  if constexpr (std::is_signed_v<T>) {
    return v >= lo && v <= hi;
  } else {
    if (hi < 0) return false;
    return (lo <= 0 || v >= static_cast<uint64_t>(lo)) &&
           v <= static_cast<uint64_t>(hi);
  }
}

// How a duration appears in a problem line: the INI spelling when it is a
// whole number of milliseconds (every value settings can hold), CAF's
// otherwise.
std::string duration_text(timespan ts) {
  if (ts % std::chrono::milliseconds{1} == timespan{0})
    return format_duration(std::chrono::duration_cast<milliseconds>(ts));
  return caf::deep_to_string(ts);
}

option row(const char* section, const char* name, option_type type,
           const char* help) {
  option o;
  o.section = section;
  o.name = name;
  o.type = type;
  o.help = help;
  o.read = [](const caf::settings&, settings&) { return std::nullopt; };
  o.check = [](const settings&) { return std::nullopt; };
  return o;
}

// `field` is a generic lambda `(auto& s) -> auto&` naming the settings
// member, so one accessor serves reading (const) and writing.
#define GEOROUTE_FIELD(path)                                                   \
  [](auto& s) -> auto& {                                                       \
    return s.path;                                                             \
  }

template <class Field>
option integer(const char* section, const char* name, Field field, int64_t lo,
               int64_t hi, const char* help) {
  auto o = row(section, name, option_type::integer, help);
  o.bounds = std::to_string(lo) + " to " + std::to_string(hi);
  auto key = o.key();
  auto bound = between(std::to_string(lo), std::to_string(hi));
  o.text = [field](const settings& s) { return std::to_string(field(s)); };
  o.read = [=](const caf::settings& content,
               settings& s) -> std::optional<std::string> {
    auto v = caf::get_if<int64_t>(&content, key);
    if (!v) return std::nullopt;
    if (*v < lo || *v > hi)
      return key + " = " + std::to_string(*v) + ": " + bound;
    using value_type = std::remove_reference_t<decltype(field(s))>;
    field(s) = static_cast<value_type>(*v);
    return std::nullopt;
  };
  o.check = [=](const settings& s) -> std::optional<std::string> {
    auto v = field(s);
    if (within(v, lo, hi)) return std::nullopt;
    return key + " = " + std::to_string(v) + ": " + bound;
  };
  return o;
}

template <class Field>
option duration(const char* section, const char* name, Field field,
                milliseconds lo, milliseconds hi, const char* help) {
  auto o = row(section, name, option_type::duration, help);
  o.bounds = format_duration(lo) + " to " + format_duration(hi);
  auto key = o.key();
  auto bound = between(format_duration(lo), format_duration(hi));
  o.text = [field](const settings& s) { return format_duration(field(s)); };
  o.read = [=](const caf::settings& content,
               settings& s) -> std::optional<std::string> {
    auto ts = caf::get_if<timespan>(&content, key);
    if (!ts) return std::nullopt;
    if (*ts < timespan{lo} || *ts > timespan{hi})
      return key + " = " + duration_text(*ts) + ": " + bound;
    field(s) = std::chrono::duration_cast<milliseconds>(*ts);
    return std::nullopt;
  };
  o.check = [=](const settings& s) -> std::optional<std::string> {
    milliseconds v = field(s);
    if (v >= lo && v <= hi) return std::nullopt;
    return key + " = " + format_duration(v) + ": " + bound;
  };
  return o;
}

template <class Field>
option flag(const char* section, const char* name, Field field,
            const char* help) {
  auto o = row(section, name, option_type::flag, help);
  auto key = o.key();
  o.text = [field](const settings& s) -> std::string {
    return field(s) ? "true" : "false";
  };
  o.read = [=](const caf::settings& content,
               settings& s) -> std::optional<std::string> {
    if (auto v = caf::get_if<bool>(&content, key)) field(s) = *v;
    return std::nullopt;
  };
  return o;
}

// A string; `problem(key, value)` is the row's own rule, if any.
template <class Field, class Problem>
option text(const char* section, const char* name, Field field, Problem problem,
            const char* help) {
  auto o = row(section, name, option_type::text, help);
  auto key = o.key();
  o.text = [field](const settings& s) { return quote(field(s)); };
  o.read = [=](const caf::settings& content,
               settings& s) -> std::optional<std::string> {
    if (auto v = caf::get_if<std::string>(&content, key)) field(s) = *v;
    return std::nullopt;
  };
  o.check = [=](const settings& s) { return problem(key, field(s)); };
  return o;
}

// A list of strings; `regions` adds the region-name rule.
template <class Field>
option string_list_row(const char* section, const char* name, Field field,
                       const char* help) {
  auto o = row(section, name, option_type::strings, help);
  auto key = o.key();
  o.text = [field](const settings& s) { return join(field(s)); };
  o.read = [=](const caf::settings& content,
               settings& s) -> std::optional<std::string> {
    if (auto v = caf::get_if<string_list>(&content, key)) field(s) = *v;
    return std::nullopt;
  };
  return o;
}

template <class Field>
option regions(const char* section, const char* name, Field field,
               const char* help) {
  auto o = string_list_row(section, name, field, help);
  auto key = o.key();
  o.check = [=](const settings& s) { return regions_problem(key, field(s)); };
  return o;
}

string_list ladder_steps(const timeout_ladder& l) {
  string_list steps;
  for (const auto& step : l)
    steps.push_back(to_string(step));
  return steps;
}

// A timeout ladder, written as a list of "<timeout>/<delay>" steps. Read and
// check both go through parse_ladder, so a hand-built ladder is held to the
// same rules (1 to 10 steps, positive timeouts) as a written one.
template <class Field>
option ladder(const char* name, Field field, const char* help) {
  auto o = row(http, name, option_type::strings, help);
  o.bounds = "1 to 10 steps";
  auto key = o.key();
  o.text = [field](const settings& s) { return join(ladder_steps(field(s))); };
  o.read = [=](const caf::settings& content,
               settings& s) -> std::optional<std::string> {
    auto steps = caf::get_if<string_list>(&content, key);
    if (!steps) return std::nullopt;
    auto parsed = parse_ladder(*steps);
    if (!parsed) return key + " = " + join(*steps) + ": " + parsed.error().what;
    field(s) = std::move(*parsed);
    return std::nullopt;
  };
  o.check = [=](const settings& s) -> std::optional<std::string> {
    auto steps = ladder_steps(field(s));
    auto parsed = parse_ladder(steps);
    if (parsed) return std::nullopt;
    return key + " = " + join(steps) + ": " + parsed.error().what;
  };
  return o;
}

std::optional<std::string> endpoint_rule(const std::string& key,
                                         const std::string& ep) {
  if (ep.empty()) return std::nullopt; // the engine alone needs one
  return endpoint_problem(key, ep);
}

std::optional<std::string> readable_file(const std::string& key,
                                         const std::string& path) {
  if (path.empty() || read_file(path)) return std::nullopt;
  return key + " = " + quote(path) + ": cannot read the file";
}

// Where the key file named in the settings is: `account_key_source` says
// "key-file <path>" when the key came from one.
std::string key_file_of(const settings& s) {
  const std::string prefix = "key-file ";
  if (s.account_key_source.rfind(prefix, 0) == 0)
    return s.account_key_source.substr(prefix.size());
  return {};
}

std::optional<std::string> token_rule(const std::string& key,
                                      const std::string& v) {
  if (v.empty() || is_fleet_token(v)) return std::nullopt;
  return key + " = " + quote(v) +
         ": not a subject token (lower-case letters, digits, '_' and '-')";
}

std::optional<std::string> no_rule(const std::string&, const std::string&) {
  return std::nullopt;
}

// A NATS server URL: "tls://host:port", or "nats://" on loopback only.
std::optional<std::string> nats_server_problem(const std::string& key,
                                               const std::string& url) {
  auto sep = url.find("://");
  auto scheme = sep == std::string::npos ? "" : lower(url.substr(0, sep));
  if (scheme != "tls" && scheme != "nats")
    return key + " = " + quote(url) +
           ": expected \"tls://host:port\" (or \"nats://\" on loopback)";
  auto rest = url.substr(sep + 3);
  auto colon = rest.rfind(':');
  if (rest.empty() || colon == std::string::npos || colon + 1 == rest.size())
    return key + " = " + quote(url) + ": needs a host and a port";
  auto host = rest.substr(0, colon);
  if (scheme == "nats" && !transport::is_loopback_host(host))
    return key + " = " + quote(url) +
           ": plain nats is allowed only for loopback hosts; use tls://";
  return std::nullopt;
}

// [georoute.fleet-health] across its keys, only when it is on.
void fleet_problems(const settings& s, std::vector<std::string>& out) {
  const auto& f = s.fleet;
  if (!f.enabled) return;
  std::string k = std::string{fleet} + ".";
  if (f.servers.empty())
    out.push_back(k + "servers: needed when " + k +
                  "enabled = true (e.g. [\"tls://nats.internal:4222\"])");
  bool tls = false;
  for (const auto& url : f.servers) {
    if (auto p = nats_server_problem(k + "servers", url)) out.push_back(*p);
    tls = tls || lower(url).rfind("tls://", 0) == 0;
  }
  if (f.reporter.empty())
    out.push_back(k + "reporter: needed when " + k +
                  "enabled = true: this process's NATS user");
  if (f.fleet.empty()) out.push_back(k + "fleet: must not be empty");
  if (tls && f.ca_file.empty())
    out.push_back(k + "ca-file: needed for tls:// servers (the CA that "
                      "signed the server's certificate)");
  if (f.nkey.empty() != f.nkey_seed_file.empty())
    out.push_back(k + "nkey and " + k + "nkey-seed-file: give both or neither");
  if (!f.nkey.empty() && (f.nkey.size() != 56 || f.nkey.front() != 'U'))
    out.push_back(k + "nkey = " + quote(f.nkey) +
                  ": not a user's public NKey (56 characters, starting "
                  "with 'U')");
  if (f.cert_file.empty() != f.key_file.empty())
    out.push_back(k + "cert-file and " + k + "key-file: give both or neither");
  for (auto [name, path] : {std::pair<const char*, const std::string*>{
                                "nkey-seed-file", &f.nkey_seed_file},
                            {"ca-file", &f.ca_file},
                            {"cert-file", &f.cert_file},
                            {"key-file", &f.key_file}})
    if (auto p = readable_file(k + name, *path)) out.push_back(*p);
  if (f.claim_ttl < f.window / 2)
    out.push_back(k + "claim-ttl = " + format_duration(f.claim_ttl) +
                  ": shorter than half the window (" +
                  format_duration(f.window) +
                  "): claims would lapse between refreshes");
}

std::vector<option> build_table() {
  std::vector<option> t;
  const char* g = general;
  // [georoute]
  t.push_back(text(g, "account-endpoint", GEOROUTE_FIELD(account_endpoint),
                   endpoint_rule,
                   "account (global) endpoint URL; http only on loopback"));
  {
    // Read by read_settings with the environment (the key is set once);
    // the dump shows the file the key came from.
    auto o = row(g, "key-file", option_type::text,
                 "file holding the base64 master key (or set "
                 "GEOROUTE_ACCOUNT_KEY)");
    o.text = [](const settings& s) { return quote(key_file_of(s)); };
    t.push_back(std::move(o));
  }
  t.push_back(regions(g, "preferred-regions",
                      GEOROUTE_FIELD(location.preferred_regions),
                      "regions to use first, in order"));
  t.push_back(regions(g, "excluded-regions",
                      GEOROUTE_FIELD(location.excluded_regions),
                      "regions never to route to"));
  t.push_back(flag(g, "endpoint-discovery",
                   GEOROUTE_FIELD(location.endpoint_discovery),
                   "follow the account's regions"));
  t.push_back(flag(g, "use-multiple-write-locations",
                   GEOROUTE_FIELD(location.use_multiple_write_locations),
                   "write to every write region of a multi-write account"));
  t.push_back(duration(g, "background-refresh-interval",
                       GEOROUTE_FIELD(refresh.background_interval),
                       milliseconds{100}, day,
                       "account topology refresh period"));
  t.push_back(duration(g, "min-refresh-interval",
                       GEOROUTE_FIELD(refresh.min_interval), milliseconds{0},
                       seconds{3600},
                       "minimum gap between non-forced refreshes"));
  t.push_back(duration(g, "unavailable-region-expiry",
                       GEOROUTE_FIELD(location.unavailable_region_expiry),
                       seconds{1}, day,
                       "how long a failed region stays demoted"));
  {
    // Loaded values are clamped into the bounds with a warning (and may come
    // from the environment): read_settings handles the key. Hand-built
    // settings outside them are refused.
    auto o = duration(g, "metadata-hard-deadline",
                      GEOROUTE_FIELD(retry.metadata_hard_deadline),
                      min_metadata_hard_deadline, max_metadata_hard_deadline,
                      "hard deadline of a detached metadata operation, "
                      "clamped into the bounds");
    o.read = [](const caf::settings&, settings&) { return std::nullopt; };
    t.push_back(std::move(o));
  }
  t.push_back(integer(g, "metadata-attempt-cap",
                      GEOROUTE_FIELD(retry.metadata_attempt_cap), 1, 100000,
                      "attempts per detached metadata operation"));
  t.push_back(integer(g, "failover-retries",
                      GEOROUTE_FIELD(retry.failover_retries), 0, 10000,
                      "endpoint-failure retries"));
  t.push_back(duration(g, "failover-retry-interval",
                       GEOROUTE_FIELD(retry.failover_retry_interval),
                       milliseconds{0}, seconds{60},
                       "pause before a failover (none after a refused "
                       "connection while a region is untried)"));
  t.push_back(integer(g, "throttle-retries",
                      GEOROUTE_FIELD(retry.throttle_retries), 0, 1000,
                      "429 retries"));
  t.push_back(duration(g, "throttle-max-wait",
                       GEOROUTE_FIELD(retry.throttle_max_wait), milliseconds{0},
                       seconds{3600}, "cumulative 429 back-off"));
  t.push_back(duration(g, "operation-budget",
                       GEOROUTE_FIELD(retry.operation_budget), milliseconds{1},
                       day, "budget of one data-plane operation"));
  t.push_back(flag(g, "write-retries", GEOROUTE_FIELD(retry.write_retries),
                   "retry writes that may have been applied, with a "
                   "_trackingId property added to the document"));
  t.push_back(integer(g, "scheduler-threads", GEOROUTE_FIELD(scheduler_threads),
                      0, 256,
                      "CAF worker threads of the georoute program; 0 = one "
                      "per core (a host's own scheduler settings are left "
                      "alone)"));
  t.push_back(integer(g, "query-plan-cache-size",
                      GEOROUTE_FIELD(query_plan_cache_size), 1, 1'000'000,
                      "query plans kept"));
  t.push_back(integer(g, "collection-cache-size",
                      GEOROUTE_FIELD(collection_cache_size), 1, 10'000'000,
                      "collections kept per index"));
  t.push_back(integer(g, "pkrange-cache-size",
                      GEOROUTE_FIELD(pkrange_cache_size), 1, 10'000'000,
                      "routing maps kept, one per collection"));
  t.push_back(integer(g, "cache-max-waiters", GEOROUTE_FIELD(cache_max_waiters),
                      1, 10'000'000,
                      "callers that may wait for one metadata fetch"));
  t.push_back(integer(g, "max-operations-in-flight",
                      GEOROUTE_FIELD(max_operations_in_flight), 1, 10'000'000,
                      "data-plane operations in flight per engine; more are "
                      "refused at once with 'overloaded'"));
  // [georoute.http]
  t.push_back(integer(http, "max-connections-per-endpoint",
                      GEOROUTE_FIELD(http.max_connections_per_endpoint), 1,
                      1024, "keep-alive connections per endpoint"));
  t.push_back(integer(http, "response-body-limit",
                      GEOROUTE_FIELD(http.response_body_limit), 1024,
                      int64_t{1} << 30, "largest response body, bytes"));
  t.push_back(text(http, "tls-ca-file", GEOROUTE_FIELD(http.tls_ca_file),
                   readable_file,
                   "PEM file of trusted CAs; empty = the system store"));
  t.push_back(integer(http, "io-threads", GEOROUTE_FIELD(http.io_threads), 1,
                      16, "HTTP io threads"));
  const char* ladder_help = "timeout ladder, e.g. [\"5s/0s\", \"10s/1s\"]";
  t.push_back(ladder("ladder-control-plane-read",
                     GEOROUTE_FIELD(http.ladders.control_plane_read),
                     ladder_help));
  t.push_back(ladder("ladder-hot-path", GEOROUTE_FIELD(http.ladders.hot_path),
                     ladder_help));
  t.push_back(ladder("ladder-default",
                     GEOROUTE_FIELD(http.ladders.default_ladder), ladder_help));
  t.push_back(ladder("ladder-partition-failover",
                     GEOROUTE_FIELD(http.ladders.partition_failover),
                     ladder_help));
  t.push_back(ladder("ladder-no-retry", GEOROUTE_FIELD(http.ladders.no_retry),
                     ladder_help));
  // [georoute.hedging]
  t.push_back(flag(hedging, "enabled", GEOROUTE_FIELD(hedging.enabled),
                   "hedge reads to the next region"));
  t.push_back(flag(hedging, "writes", GEOROUTE_FIELD(hedging.hedge_writes),
                   "also hedge upserts and unconditional replaces on a "
                   "multi-write account"));
  {
    // Unset (the default) is written 0s: min(1 s, first read-ladder
    // timeout / 2).
    auto o = row(hedging, "threshold", option_type::duration,
                 "when the first hedge starts; 0s = min(1s, first "
                 "read-ladder timeout / 2)");
    const milliseconds hi = seconds{3600};
    o.bounds = "0s to " + format_duration(hi);
    auto key = o.key();
    auto bound = between("0s", format_duration(hi));
    auto value = [](const settings& s) {
      return s.hedging.threshold.value_or(milliseconds{0});
    };
    o.text = [value](const settings& s) { return format_duration(value(s)); };
    o.read = [=](const caf::settings& content,
                 settings& s) -> std::optional<std::string> {
      auto ts = caf::get_if<timespan>(&content, key);
      if (!ts) return std::nullopt;
      if (*ts < timespan{0} || *ts > timespan{hi})
        return key + " = " + duration_text(*ts) + ": " + bound;
      auto v = std::chrono::duration_cast<milliseconds>(*ts);
      if (v.count() > 0)
        s.hedging.threshold = v;
      else
        s.hedging.threshold.reset();
      return std::nullopt;
    };
    o.check = [=](const settings& s) -> std::optional<std::string> {
      auto v = value(s);
      if (v >= milliseconds{0} && v <= hi) return std::nullopt;
      return key + " = " + format_duration(v) + ": " + bound;
    };
    t.push_back(std::move(o));
  }
  t.push_back(duration(hedging, "step", GEOROUTE_FIELD(hedging.step),
                       milliseconds{1}, seconds{3600}, "between later hedges"));
  {
    auto o = row(hedging, "mode", option_type::text,
                 "threshold: static or adaptive");
    auto key = o.key();
    o.text = [](const settings& s) {
      return quote(s.hedging.mode == hedge_threshold_mode::adaptive ? "adaptive"
                                                                    : "static");
    };
    o.read = [key](const caf::settings& content,
                   settings& s) -> std::optional<std::string> {
      auto v = caf::get_if<std::string>(&content, key);
      if (!v) return std::nullopt;
      if (*v == "adaptive")
        s.hedging.mode = hedge_threshold_mode::adaptive;
      else if (*v == "static")
        s.hedging.mode = hedge_threshold_mode::static_threshold;
      else
        return key + " = " + quote(*v) + ": expected static or adaptive";
      return std::nullopt;
    };
    t.push_back(std::move(o));
  }
  {
    // Settings hold a share (0 to 1); the file a percentage.
    auto o = row(hedging, "budget-percent", option_type::integer,
                 "hedges at most this share of reads over 10 s");
    o.bounds = "0 to 100";
    auto key = o.key();
    auto percent = [](const settings& s) {
      return static_cast<int64_t>(std::llround(s.hedging.budget.share * 100));
    };
    o.text = [percent](const settings& s) {
      return std::to_string(percent(s));
    };
    o.read = [key](const caf::settings& content,
                   settings& s) -> std::optional<std::string> {
      auto v = caf::get_if<int64_t>(&content, key);
      if (!v) return std::nullopt;
      if (*v < 0 || *v > 100)
        return key + " = " + std::to_string(*v) + ": " + between("0", "100");
      s.hedging.budget.share = static_cast<double>(*v) / 100.0;
      return std::nullopt;
    };
    o.check = [key, percent](const settings& s) -> std::optional<std::string> {
      auto share = s.hedging.budget.share;
      if (share >= 0 && share <= 1) return std::nullopt;
      return key + " = " +
             (std::isfinite(share) ? std::to_string(percent(s)) : "nan") +
             ": " + between("0", "100");
    };
    t.push_back(std::move(o));
  }
  t.push_back(duration(hedging, "metadata-threshold",
                       GEOROUTE_FIELD(hedging.metadata.threshold),
                       milliseconds{1}, seconds{3600},
                       "when a slow metadata request (collection read, query "
                       "plan, first pkranges page) is hedged"));
  t.push_back(integer(hedging, "metadata-max-concurrent",
                      GEOROUTE_FIELD(hedging.metadata.max_concurrent), 0,
                      100'000, "metadata hedges in flight at once; 0 = off"));
  // [georoute.circuit-breaker]
  t.push_back(flag(breaker, "enabled", GEOROUTE_FIELD(circuit_breaker_enabled),
                   "per-partition circuit breaker of the data plane"));
  t.push_back(integer(breaker, "read-failures",
                      GEOROUTE_FIELD(circuit_breaker.read_failure_threshold), 1,
                      1'000'000,
                      "consecutive failed reads of a range in a region that "
                      "open its breaker"));
  t.push_back(integer(breaker, "write-failures",
                      GEOROUTE_FIELD(circuit_breaker.write_failure_threshold),
                      1, 1'000'000,
                      "the same for writes on multi-write accounts"));
  t.push_back(integer(breaker, "hedge-wins",
                      GEOROUTE_FIELD(circuit_breaker.hedge_win_threshold), 1,
                      1'000'000,
                      "consecutive hedge wins against a region that open it"));
  t.push_back(duration(
      breaker, "open-period", GEOROUTE_FIELD(circuit_breaker.open_period),
      milliseconds{1}, day, "first open period before the probe"));
  t.push_back(duration(breaker, "max-open-period",
                       GEOROUTE_FIELD(circuit_breaker.max_open_period),
                       milliseconds{1}, day,
                       "cap of the open period, doubled per failed probe"));
  t.push_back(duration(breaker, "probe-timeout",
                       GEOROUTE_FIELD(circuit_breaker.probe_timeout),
                       milliseconds{1}, seconds{3600},
                       "a probe unanswered this long has failed"));
  t.push_back(integer(breaker, "half-open-steps",
                      GEOROUTE_FIELD(circuit_breaker.half_open_steps), 0, 16,
                      "after a probe, one request in 2^steps returns, "
                      "doubling per answer"));
  t.push_back(integer(breaker, "capacity",
                      GEOROUTE_FIELD(circuit_breaker.capacity), 1, 10'000'000,
                      "(range, region) entries tracked"));
  // [georoute.per-partition-failover]
  t.push_back(flag(ppaf, "enabled",
                   GEOROUTE_FIELD(per_partition_failover.enabled),
                   "follow the account's per-partition failover of "
                   "single-write accounts' writes"));
  t.push_back(integer(ppaf, "timeout-threshold",
                      GEOROUTE_FIELD(per_partition_failover.timeout_threshold),
                      1, 1'000'000,
                      "client timeouts of one range's writes within the "
                      "window that move the range to the next region"));
  t.push_back(duration(ppaf, "timeout-window",
                       GEOROUTE_FIELD(per_partition_failover.timeout_window),
                       milliseconds{1}, day, "the window of those timeouts"));
  t.push_back(integer(ppaf, "max-ranges",
                      GEOROUTE_FIELD(per_partition_failover.max_ranges), 1,
                      10'000'000, "ranges tracked at most"));
  // [georoute.fleet-health]
  t.push_back(flag(fleet, "enabled", GEOROUTE_FIELD(fleet.enabled),
                   "share region health with the fleet over NATS"));
  t.push_back(string_list_row(fleet, "servers", GEOROUTE_FIELD(fleet.servers),
                              "NATS servers, \"tls://host:port\""));
  t.push_back(text(fleet, "fleet", GEOROUTE_FIELD(fleet.fleet), token_rule,
                   "the fleet's name in subjects"));
  t.push_back(text(fleet, "reporter", GEOROUTE_FIELD(fleet.reporter),
                   token_rule, "this process's NATS user (reporter id)"));
  t.push_back(text(fleet, "account", GEOROUTE_FIELD(fleet.account), token_rule,
                   "the account's token; empty: from the endpoint"));
  t.push_back(text(fleet, "nkey", GEOROUTE_FIELD(fleet.nkey), no_rule,
                   "public NKey of this process (\"U...\")"));
  t.push_back(text(fleet, "nkey-seed-file",
                   GEOROUTE_FIELD(fleet.nkey_seed_file), no_rule,
                   "file holding the NKey seed"));
  t.push_back(text(fleet, "ca-file", GEOROUTE_FIELD(fleet.ca_file), no_rule,
                   "CA of the server's certificate (TLS on when set)"));
  t.push_back(text(fleet, "cert-file", GEOROUTE_FIELD(fleet.cert_file), no_rule,
                   "client certificate (optional)"));
  t.push_back(text(fleet, "key-file", GEOROUTE_FIELD(fleet.key_file), no_rule,
                   "its private key"));
  t.push_back(integer(fleet, "min-reporters",
                      GEOROUTE_FIELD(fleet.min_reporters), 1, 1000,
                      "distinct reporters whose claims demote a region"));
  t.push_back(duration(fleet, "claim-ttl", GEOROUTE_FIELD(fleet.claim_ttl),
                       seconds{1}, seconds{15},
                       "how long a claim is believed"));
  t.push_back(duration(fleet, "window", GEOROUTE_FIELD(fleet.window),
                       seconds{1}, seconds{300}, "the evidence window"));
  t.push_back(integer(fleet, "threshold-waits",
                      GEOROUTE_FIELD(fleet.threshold_waits), 1, 1000,
                      "reads that waited for the hedge threshold in the "
                      "window before a region is claimed down"));
  t.push_back(duration(fleet, "probe-interval",
                       GEOROUTE_FIELD(fleet.probe_interval), milliseconds{100},
                       seconds{300},
                       "how often a region awaiting this process's probe "
                       "is probed"));
  t.push_back(duration(fleet, "startup-wait",
                       GEOROUTE_FIELD(fleet.startup_wait), milliseconds{0},
                       seconds{10},
                       "at start, data requests wait at most this long for "
                       "the fleet's view; 0: never"));
  return t;
}

#undef GEOROUTE_FIELD

// CAF 0.17 keeps a configuration's option set protected and offers no
// public way to add to it; a host's config class is not ours to derive from.
// Naming the member through a derived class yields a pointer to the base's
// member, which applies to any actor_system_config.
struct option_set_access : caf::actor_system_config {
  static caf::config_option_set& of(caf::actor_system_config& cfg) {
    return cfg.*(&option_set_access::custom_options_);
  }
};

// The rules across keys, run once every key is within its own bounds (so a
// value already refused does not also trip its neighbours' rule).
void check_across(const settings& s, std::vector<std::string>& out) {
  for (const auto& problem : s.hedging.validate())
    out.push_back(problem);
  if (auto problem = s.circuit_breaker.validate())
    out.push_back(breaker_problem(problem->what));
  fleet_problems(s, out);
}

void check_each(const settings& s, std::vector<std::string>& out) {
  for (const auto& o : option_table())
    if (auto problem = o.check(s)) out.push_back(*problem);
}

} // namespace

const std::vector<option>& option_table() {
  static const std::vector<option> table = build_table();
  return table;
}

const option* find_option(const std::string& key) {
  for (const auto& o : option_table())
    if (o.key() == key) return &o;
  return nullptr;
}

env_lookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    if (const char* v = std::getenv(name.c_str())) return std::string{v};
    return std::nullopt;
  };
}

void add_options(caf::actor_system_config& cfg) {
  auto& set = option_set_access::of(cfg);
  const settings defaults;
  for (const auto& o : option_table()) {
    auto help = o.help;
    if (!o.bounds.empty()) help += "; " + o.bounds;
    help += " (" + o.text(defaults) + ")";
    switch (o.type) {
    case option_type::text:
      set.add<std::string>(o.section, o.name, help);
      break;
    case option_type::strings:
      set.add<string_list>(o.section, o.name, help);
      break;
    case option_type::flag:
      set.add<bool>(o.section, o.name, help);
      break;
    case option_type::integer:
      set.add<int64_t>(o.section, o.name, help);
      break;
    case option_type::duration:
      set.add<timespan>(o.section, o.name, help);
      break;
    }
  }
}

std::optional<std::string> account_key_problem(const secret& key) {
  auto parsed = transport::parse_master_key(key.reveal());
  if (parsed) return std::nullopt;
  return parsed.error().what;
}

load_result read_settings(const caf::settings& content, const env_lookup& env) {
  load_result out;
  auto& s = out.values;
  for (const auto& o : option_table())
    if (auto problem = o.read(content, s)) out.errors.push_back(*problem);
  const std::string g = general;

  // The key: environment or key file, never the configuration text, never
  // printed.
  std::string key_file;
  if (auto v = caf::get_if<std::string>(&content, g + ".key-file"))
    key_file = *v;
  auto env_key = env(account_key_env);
  if (env_key && !key_file.empty()) {
    out.errors.push_back(g + ".key-file = " + quote(key_file) +
                         ": the account key is set twice (also in " +
                         account_key_env + "); set it once");
  } else if (env_key) {
    s.account_key = secret{trim(*env_key)};
    s.account_key_source = account_key_env;
    if (auto why = account_key_problem(s.account_key))
      out.errors.push_back(std::string{account_key_env} +
                           " = <redacted>: not a base64 master key (" + *why +
                           ")");
  } else if (!key_file.empty()) {
    if (auto k = read_file(key_file)) {
      s.account_key = secret{trim(*k)};
      s.account_key_source = "key-file " + key_file;
      if (auto why = account_key_problem(s.account_key))
        out.errors.push_back(g + ".key-file = " + quote(key_file) +
                             ": the file does not hold a base64 master key (" +
                             *why + ")");
    } else {
      out.errors.push_back(g + ".key-file = " + quote(key_file) +
                           ": cannot read the file");
    }
  }

  // The hard deadline: file or command line, else the environment; clamped
  // into its bounds with a warning.
  auto& rt = s.retry;
  const auto deadline_key = g + ".metadata-hard-deadline";
  std::optional<milliseconds> deadline;
  std::string deadline_origin;
  if (auto ts = caf::get_if<timespan>(&content, deadline_key)) {
    if (*ts < timespan{0})
      out.errors.push_back(deadline_key + " = " + duration_text(*ts) +
                           ": must not be negative");
    else
      deadline = std::chrono::duration_cast<milliseconds>(*ts);
    deadline_origin = deadline_key;
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

  // The same rules as for hand-built settings. A value `read` refused left
  // its default in place, which passes; the key was checked above, in words
  // that say where it came from.
  check_each(s, out.errors);
  if (out.errors.empty()) check_across(s, out.errors);

  if (s.scheduler_threads == 0)
    s.scheduler_threads = std::max(1u, std::thread::hardware_concurrency());
  return out;
}

std::vector<std::string> check_settings(const settings& s) {
  std::vector<std::string> out;
  const std::string g = general;
  if (s.account_endpoint.empty())
    out.push_back("the engine needs " + g + ".account-endpoint");
  if (!s.account_key.empty())
    if (auto why = account_key_problem(s.account_key))
      out.push_back(
          "the account key (" + std::string{account_key_env} + " or " + g +
          ".key-file) is not usable: not a base64 master key (" + *why + ")");
  auto before = out.size();
  check_each(s, out);
  if (out.size() == before) check_across(s, out);
  return out;
}

} // namespace georoute::config
