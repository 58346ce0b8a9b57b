#include "georoute/transport/request_checks.hpp"

#include <cctype>

namespace georoute::transport::request_checks {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    auto x = static_cast<unsigned char>(a[i]);
    auto y = static_cast<unsigned char>(b[i]);
    if (x != y && std::tolower(x) != std::tolower(y)) return false;
  }
  return true;
}

bool client_owned(std::string_view name) {
  return iequals(name, "host") || iequals(name, "user-agent") ||
         iequals(name, "content-length") || iequals(name, "connection") ||
         iequals(name, "transfer-encoding");
}

bool is_token(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) continue;
    if (std::string_view{"!#$%&'*+-.^_`|~"}.find(c) == std::string_view::npos)
      return false;
  }
  return true;
}

std::string request_problem(const request& r) {
  if (!is_token(r.method))
    return "the method '" + r.method + "' is not an HTTP token";
  for (char c : r.target) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f)
      return "the target contains a space or a control character";
  }
  for (const auto& [name, value] : r.headers) {
    if (!is_token(name))
      return "the header name '" + name + "' is not an HTTP token";
    for (char c : value)
      if (c == '\r' || c == '\n' || c == '\0')
        return "the value of header '" + name +
               "' contains a CR, LF or NUL character";
  }
  return {};
}

std::string authority_of(const url& u) {
  auto host =
      u.host.find(':') != std::string::npos ? "[" + u.host + "]" : u.host;
  return host + ":" + std::to_string(u.port);
}

} // namespace georoute::transport::request_checks
