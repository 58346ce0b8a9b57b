#include "georoute/config/georoute_config.hpp"

#include <caf/config_option.hpp>
#include <caf/config_option_set.hpp>
#include <caf/config_value.hpp>
#include <caf/deep_to_string.hpp>
#include <caf/settings.hpp>
#include <caf/timespan.hpp>
#include <fstream>
#include <sstream>
#include <utility>

namespace georoute::config {

namespace {

// An array, not a pointer: with clang, CAF 0.17's string_view converts only
// from a char array (its `const char*` constructor exists for GCC only).
constexpr const char general[] = "georoute";

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

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

} // namespace

georoute_config::georoute_config() {
  add_options(*this);
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
  auto read = read_settings(content, env);
  out.values = std::move(read.values);
  for (auto& w : read.warnings)
    out.warnings.push_back(std::move(w));
  for (auto& e : read.errors)
    out.errors.push_back(std::move(e));

  // CAF's own default of max(4, cores) workers puts more workers than cores
  // on a small machine, each polling for work. Only this program's
  // configuration does this; read_settings leaves a host's scheduler alone.
  if (out.ok() && caf::get_if(&content, "scheduler.max-threads") == nullptr)
    set("scheduler.max-threads", out.values.scheduler_threads);
  return out;
}

} // namespace georoute::config
