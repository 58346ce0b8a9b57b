#pragma once

// The option table: every configuration key of georoute in one place, with
// the settings field it sets, its bounds and its help. The table drives
//
//   - registration with CAF (`add_options`: the type CAF parses and the help
//     line of --long-help, the default appended from `settings{}`),
//   - loading (`read_settings`: config values -> `settings`),
//   - checking (`check_settings`, which `read_settings` and `engine::start`
//     both run, so a value is refused with the same line either way),
//   - the configuration dump (`render`), and
//   - the test that config/georoute.ini lists every key with its default.
//
// The defaults themselves stay in settings.hpp, in-class: a row reads its
// default from a default-constructed `settings`, so there is no second copy
// to disagree with.
//
// A host with its own `caf::actor_system_config` calls `add_options(cfg)`
// before parsing and `read_settings(caf::content(cfg))` after; neither
// touches the host's `scheduler.*` (or any other CAF) setting.

#include "georoute/config/settings.hpp"

#include <caf/fwd.hpp>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace georoute::config {

/// Looks up an environment variable; tests pass a map instead of getenv.
using env_lookup =
    std::function<std::optional<std::string>(const std::string& name)>;

/// Reads the process environment.
env_lookup process_environment();

/// Environment variables georoute reads.
constexpr const char* account_key_env = "GEOROUTE_ACCOUNT_KEY";
constexpr const char* hard_deadline_env =
    "GEOROUTE_METADATA_HARD_DEADLINE_SECONDS";

/// What loading produced: settings and warnings, or one line per invalid
/// value.
struct load_result {
  settings values;
  std::vector<std::string> warnings;
  std::vector<std::string> errors;
  bool ok() const { return errors.empty(); }
};

/// The CAF type a key is parsed as.
enum class option_type {
  text,     ///< a "double-quoted" string
  strings,  ///< a list of strings
  flag,     ///< true or false
  integer,  ///< an integer
  duration, ///< a duration with a unit (caf::timespan)
};

/// One row of the table. Rows are built in options.cpp only.
struct option {
  std::string section; ///< "georoute.http"
  std::string name;    ///< "io-threads"
  option_type type = option_type::text;
  std::string help;   ///< one line, without the default
  std::string bounds; ///< "1 to 16", "100ms to 24h", or "" (any value)

  /// "georoute.http.io-threads".
  std::string key() const { return section + "." + name; }

  /// The value of this key in `s`, as INI text ("16", "300s", "\"x\"",
  /// "[\"a\"]"): what the dump prints and what georoute.ini must say for
  /// `settings{}`.
  std::function<std::string(const settings& s)> text;

  /// Sets this key's field from CAF's parsed `content` (the whole
  /// configuration), if the key is there. A value out of bounds or not
  /// understood is a problem line ("key = value: why") and leaves the field
  /// as it was. Rows whose value needs more than the content (the key file,
  /// the hard deadline with its environment fallback) do nothing here;
  /// `read_settings` handles them.
  std::function<std::optional<std::string>(const caf::settings& content,
                                           settings& s)>
      read;

  /// The problem with this key's value in `s`, in the same words as `read`
  /// (so hand-built settings are refused like loaded ones), or nullopt.
  std::function<std::optional<std::string>(const settings& s)> check;
};

/// Every key, in the order of config/georoute.ini.
const std::vector<option>& option_table();

/// The row of `key` ("georoute.http.io-threads"), or null.
const option* find_option(const std::string& key);

/// Registers every key of the table with `cfg` (type and help). Call before
/// `cfg.parse(...)`.
void add_options(caf::actor_system_config& cfg);

/// Builds validated settings from parsed configuration `content` (e.g.
/// `caf::content(cfg)` after `cfg.parse`) and the environment (the account
/// key, the hard-deadline fallback). Runs `check_settings`' rules except the
/// one only the engine needs (an account endpoint). Sets nothing in
/// `content`; `scheduler_threads` is resolved (0 -> one per core) for the
/// caller to apply if it wants.
load_result read_settings(const caf::settings& content,
                          const env_lookup& env = process_environment());

/// The rules that hold for every `settings` georoute runs with, loaded or
/// built by hand: each key of the table within its bounds, the account
/// endpoint present and well-formed, the key decodable (the transport's own
/// base64 decoder), the cross-field rules of hedging and the circuit breaker.
/// One line per problem, worded as `read_settings` words it; the key never
/// appears. `engine::start` refuses settings that fail.
std::vector<std::string> check_settings(const settings& s);

/// The problem with `key`, or nullopt: the transport's own decoder
/// (transport::parse_master_key) decides, so what passes here signs.
std::optional<std::string> account_key_problem(const secret& key);

} // namespace georoute::config
