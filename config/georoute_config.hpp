#pragma once

// The configuration of the georoute program: every key of the option table
// (config/options.hpp), read from caf-application.ini (or --config-file), the
// command line (--georoute.preferred-regions=...) and, for two values, the
// environment; then validated once into an immutable `settings`.
//
// CAF 0.17 silently drops INI values of the wrong type and keeps unknown keys;
// `load` reads the file a second time without the option schema and reports
// both, so a typo never falls back to a default unnoticed.
//
// This class is a whole program's configuration: it also applies
// georoute.scheduler-threads to CAF's scheduler. A host with its own
// `actor_system_config` uses `add_options` and `read_settings` instead, which
// leave its scheduler settings alone.

#include "georoute/config/options.hpp"
#include "georoute/config/settings.hpp"

#include <caf/actor_system_config.hpp>
#include <optional>
#include <string>
#include <vector>

namespace georoute::config {

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
