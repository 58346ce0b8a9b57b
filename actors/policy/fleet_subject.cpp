#include "georoute/actors/policy/fleet_subject.hpp"

#include <algorithm>
#include <array>
#include <initializer_list>

namespace georoute {

namespace {

constexpr std::string_view subject_prefix = "georoute.h1.";

bool is_lower_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

// The prefix, then `tokens` joined by '.'.
std::string join(std::initializer_list<std::string_view> tokens) {
  std::string out{subject_prefix};
  for (auto t : tokens) {
    if (out.size() > subject_prefix.size()) out += '.';
    out += t;
  }
  return out;
}

bool all_tokens(std::initializer_list<std::string_view> tokens) {
  return std::all_of(tokens.begin(), tokens.end(), is_fleet_token);
}

} // namespace

std::string fleet_token(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (char c : name) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (is_lower_alnum(c)) out += c;
  }
  return out;
}

bool is_fleet_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return is_lower_alnum(c) || c == '_' || c == '-';
  });
}

std::string fleet_subject(std::string_view fleet, std::string_view acct,
                          std::string_view region, std::string_view rid) {
  auto r = fleet_token(region);
  if (!all_tokens({fleet, acct, r, rid})) return {};
  return join({fleet, acct, r, rid});
}

std::string fleet_sync_subject(std::string_view fleet, std::string_view acct,
                               std::string_view rid) {
  if (!all_tokens({fleet, acct, rid})) return {};
  return join({fleet, acct, fleet_sync_token, rid});
}

std::string fleet_subscription(std::string_view fleet, std::string_view acct) {
  if (!all_tokens({fleet, acct})) return {};
  return join({fleet, acct, ">"});
}

std::string fleet_publish_permission(std::string_view fleet,
                                     std::string_view rid) {
  if (!all_tokens({fleet, rid})) return {};
  return join({fleet, "*", "*", rid});
}

std::string fleet_subscribe_permission(std::string_view fleet) {
  if (!is_fleet_token(fleet)) return {};
  return join({fleet, ">"});
}

std::optional<fleet_subject_parts> parse_fleet_subject(std::string_view subject,
                                                       std::string_view fleet) {
  std::array<std::string_view, 6> tokens;
  size_t n = 0;
  size_t start = 0;
  for (;;) {
    auto dot = subject.find('.', start);
    if (n == tokens.size()) return std::nullopt; // a seventh token
    tokens[n++] = subject.substr(start, dot == std::string_view::npos
                                            ? std::string_view::npos
                                            : dot - start);
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  if (n != tokens.size() || tokens[0] != "georoute" || tokens[1] != "h1" ||
      tokens[2] != fleet || !is_fleet_token(fleet))
    return std::nullopt;
  for (size_t i = 3; i < tokens.size(); ++i)
    if (!is_fleet_token(tokens[i])) return std::nullopt;
  return fleet_subject_parts{std::string{tokens[3]}, std::string{tokens[4]},
                             std::string{tokens[5]}};
}

} // namespace georoute
