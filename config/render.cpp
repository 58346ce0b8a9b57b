#include "georoute/config/options.hpp"
#include "georoute/config/settings.hpp"

#include <sstream>

namespace georoute::config {

// Every key of the option table, in the table's (and georoute.ini's) order,
// as INI text. The key itself is a comment that says only where it came from.
std::string render(const settings& s) {
  std::ostringstream o;
  std::string section;
  for (const auto& opt : option_table()) {
    if (opt.section != section) {
      if (!section.empty()) o << "\n";
      section = opt.section;
      o << "[" << section << "]\n";
    }
    o << opt.name << "=" << opt.text(s) << "\n";
    if (opt.key() == "georoute.key-file")
      o << "; account-key " << s.account_key
        << (s.account_key_source.empty()
                ? ""
                : " (from " + s.account_key_source + ")")
        << "\n";
  }
  return o.str();
}

} // namespace georoute::config
