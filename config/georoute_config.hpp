#pragma once

// The CAF configuration of georoute: every option under [georoute] and
// [georoute.http], read from caf-application.ini (or --config-file), the
// command line (--georoute.preferred-regions=...) and, for two values, the
// environment; then validated once into an immutable `settings`.
//
// CAF 0.17 silently drops INI values of the wrong type and keeps unknown keys;
// `load` reads the file a second time without the option schema and reports
// both, so a typo never falls back to a default unnoticed.

#include "config/settings.hpp"

#include <caf/actor_system_config.hpp>
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

/// What `load` produced: settings and warnings, or one line per invalid
/// value.
struct load_result {
  settings values;
  std::vector<std::string> warnings;
  std::vector<std::string> errors;
  bool ok() const { return errors.empty(); }
};

/// The rules `load` applies that also hold for settings an embedding program
/// built by hand: the account endpoint (present, an absolute URL, plain http
/// only on loopback, no path), a key in base64, no empty ladder. One line per
/// problem, as `load` words them; the key never appears. `engine::start`
/// refuses settings that fail.
std::vector<std::string> check_settings(const settings& s);

/// See the file comment.
class georoute_config : public caf::actor_system_config {
public:
  georoute_config();

  /// Parses `args` (without the program name) and validates. `ini_text`
  /// replaces the configuration file (tests); without it the file named by
  /// --config-file, else caf-application.ini in the working directory, is
  /// read (a missing default file is not an error).
  load_result load(std::vector<std::string> args, const env_lookup& env,
                   std::optional<std::string> ini_text = std::nullopt);

  /// True if --dump-config was given (georoute prints its own dump, with the
  /// key redacted, instead of CAF's).
  bool dump_config_requested = false;

  /// The configuration file that was read, or empty.
  std::string config_file_used;

private:
  const caf::config_option* option_named(const std::string& name) const;
  void check_raw_file(const std::string& text, load_result& out);
  void check_section(const caf::settings& section, const std::string& prefix,
                     load_result& out);
};

} // namespace georoute::config
