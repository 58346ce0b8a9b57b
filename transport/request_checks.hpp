#pragma once

// What the HTTP client checks in a request before anything of it is sent,
// and the small text helpers its response and pool code share. Plain C++:
// no Beast, no Asio.

#include "georoute/transport/outcome.hpp"
#include "georoute/transport/url.hpp"

#include <charconv>
#include <string>
#include <string_view>
#include <system_error>

namespace georoute::transport::request_checks {

/// ASCII comparison that ignores case (header names).
bool iequals(std::string_view a, std::string_view b);

/// Headers the client writes itself; a caller's are left out.
bool client_owned(std::string_view name);

/// RFC 9110 token characters (methods, header names).
bool is_token(std::string_view s);

/// What in `r` cannot be written as one well-formed HTTP/1.1 request (a
/// CR or LF would split it and smuggle a header or a second request), or
/// "" when it can. Checked before anything is sent.
std::string request_problem(const request& r);

/// "host:port" of `u` for error texts, an IPv6 host in brackets.
std::string authority_of(const url& u);

/// `s` as a number of type T; `fallback` when it is empty or anything but
/// one whole number.
template <class T>
T parse_number(std::string_view s, T fallback) {
  if (s.empty()) return fallback;
  T value{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc{} || end != s.data() + s.size()) return fallback;
  return value;
}

} // namespace georoute::transport::request_checks
