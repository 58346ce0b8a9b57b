// Fuzzes the validation of the georoute settings
// (config/georoute_config.hpp, georoute_config::load with the INI text given
// inline), the user's input at start-up, including CAF's INI parser beneath it.
// Input: the INI text, then optionally NUL and the value of
// GEOROUTE_METADATA_HARD_DEADLINE_SECONDS, then optionally NUL and the value
// of GEOROUTE_ACCOUNT_KEY (default: the emulator's key, which also keeps the
// harness from reading a fuzzed key-file path: both set is an error).
//
// Invariants: never a crash or an escaped exception; a rejection has at
// least one non-empty error line; the account key never appears in an error,
// a warning or the --dump-config text; an accepted configuration's dump
// (render) loads again, with the same environment, to the same dump.

#include "georoute/config/georoute_config.hpp"
#include "tests/fuzz/fuzz_check.hpp"

#include <cctype>
#include <map>

namespace {

using namespace georoute::config;

const std::string emulator_key =
    "C2y6yDjf5/"
    "R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/"
    "Jw==";

load_result load(const std::string& ini,
                 const std::map<std::string, std::string>& vars) {
  georoute_config cfg;
  env_lookup env = [&vars](const std::string& k) -> std::optional<std::string> {
    auto i = vars.find(k);
    if (i == vars.end()) return std::nullopt;
    return i->second;
  };
  return cfg.load({}, env, ini);
}

void check_no_key(const load_result& r, const std::string& key,
                  const std::string& other_input) {
  // Only a key that cannot be ordinary text by chance: 24+ base64 characters
  // (an error may quote messages, key names and the other inputs), and one
  // that is not also part of another input, which may be quoted as such.
  if (key.size() < 24 || other_input.find(key) != std::string::npos) return;
  for (char c : key)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '/' &&
        c != '=')
      return;
  for (const auto* lines : {&r.errors, &r.warnings})
    for (const auto& l : *lines)
      FUZZ_CHECK(l.find(key) == std::string::npos, "key leaked: " + l);
  if (r.ok())
    FUZZ_CHECK(render(r.values).find(key) == std::string::npos,
               "key leaked in the dump");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto text = georoute::fuzz::as_text(data, size);
  auto nul = text.find('\0');
  std::string ini(text.substr(0, nul));
  std::map<std::string, std::string> vars{{account_key_env, emulator_key}};
  if (nul != std::string_view::npos) {
    auto rest = text.substr(nul + 1);
    auto nul2 = rest.find('\0');
    vars[hard_deadline_env] = std::string(rest.substr(0, nul2));
    if (nul2 != std::string_view::npos)
      vars[account_key_env] = std::string(rest.substr(nul2 + 1));
  }

  auto r = load(ini, vars);
  check_no_key(r, vars[account_key_env], ini + '\n' + vars[hard_deadline_env]);
  if (!r.ok()) {
    for (const auto& e : r.errors)
      FUZZ_CHECK(!e.empty(), "an empty error line");
    return 0;
  }
  auto dump = render(r.values);
  auto again = load(dump, vars);
  std::string why;
  for (const auto& e : again.errors)
    why += e + "\n";
  FUZZ_CHECK(again.ok(), "the dump does not load again:\n" + why + dump);
  FUZZ_CHECK(render(again.values) == dump, "the dump changed on reload:\n" +
                                               dump + "\n---\n" +
                                               render(again.values));
  return 0;
}
