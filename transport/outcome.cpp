#include "georoute/transport/outcome.hpp"

#include <cctype>
#include <string_view>

namespace georoute::transport {

namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

/// The media type of a Content-Type value: before any parameter, trimmed.
std::string_view media_type(std::string_view value) {
  return trim(value.substr(0, value.find(';')));
}

/// Every Content-Type header (one, normally) names the query media type.
bool is_query_post(const request& r) {
  bool query = false;
  for (const auto& [name, value] : r.headers) {
    if (!iequals(name, "content-type")) continue;
    if (!iequals(media_type(value), "application/query+json")) return false;
    query = true;
  }
  return query;
}

} // namespace

bool repeat_safe(const request& r) {
  if (r.method == "GET" || r.method == "HEAD") return true;
  if (r.method == "POST") return is_query_post(r);
  return false;
}

bool resend_after_close(const request& r, send_progress progress) {
  if (progress == send_progress::unsent) return true;
  switch (r.resend) {
  case resend_rule::allowed:
    return true;
  case resend_rule::never:
    return false;
  case resend_rule::by_method:
    break;
  }
  return repeat_safe(r);
}

const char* to_string(failure x) {
  switch (x) {
  case failure::none:
    return "none";
  case failure::refused:
    return "refused";
  case failure::reset:
    return "reset";
  case failure::timeout:
    return "timeout";
  case failure::dns:
    return "dns";
  case failure::tls:
    return "tls";
  case failure::protocol:
    return "protocol";
  case failure::body_too_large:
    return "body_too_large";
  }
  return "unknown";
}

} // namespace georoute::transport
