#include "georoute/transport/url.hpp"

#include <algorithm>
#include <cctype>

namespace georoute::transport {

namespace {

std::string lower(std::string_view s) {
  std::string r(s);
  std::transform(r.begin(), r.end(), r.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return r;
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isdigit(c) != 0;
  });
}

bool valid_host_char(unsigned char c) {
  return std::isalnum(c) != 0 || c == '-' || c == '.' || c == '_';
}

} // namespace

std::string url::origin() const {
  std::string r = scheme + "://";
  r += host.find(':') != std::string::npos ? "[" + host + "]" : host;
  r += ':';
  r += std::to_string(port);
  return r;
}

std::string url::host_header() const {
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  bool default_port =
      (scheme == "http" && port == 80) || (scheme == "https" && port == 443);
  return default_port ? h : h + ":" + std::to_string(port);
}

url_result parse_url(std::string_view text) {
  auto sep = text.find("://");
  if (sep == std::string_view::npos)
    return std::string{"missing scheme (expected http:// or https://)"};
  url u;
  u.scheme = lower(text.substr(0, sep));
  if (u.scheme != "http" && u.scheme != "https")
    return "unsupported scheme '" + u.scheme + "' (expected http or https)";
  auto rest = text.substr(sep + 3);
  if (rest.find('#') != std::string_view::npos)
    return std::string{"fragments are not allowed"};
  auto slash = rest.find('/');
  auto authority = rest.substr(0, slash);
  u.path =
      slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  if (authority.find('@') != std::string_view::npos)
    return std::string{"user info is not allowed in an endpoint"};
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos)
      return std::string{"unterminated IPv6 literal"};
    u.host = lower(authority.substr(1, close - 1));
    auto after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':')
        return std::string{"unexpected text after IPv6 literal"};
      port_text = after.substr(1);
      if (port_text.empty()) return std::string{"empty port"};
    }
    if (u.host.empty() ||
        u.host.find_first_not_of("0123456789abcdef:.") != std::string::npos)
      return std::string{"invalid IPv6 literal"};
  } else {
    auto colon = authority.rfind(':');
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
      authority = authority.substr(0, colon);
      if (port_text.empty()) return std::string{"empty port"};
    }
    u.host = lower(authority);
    if (u.host.empty()) return std::string{"missing host"};
    if (!std::all_of(u.host.begin(), u.host.end(),
                     [](unsigned char c) { return valid_host_char(c); }))
      return "invalid character in host '" + u.host + "'";
  }
  if (!port_text.empty()) {
    if (!all_digits(port_text) || port_text.size() > 5)
      return "invalid port '" + std::string(port_text) + "'";
    auto p = std::stoul(std::string(port_text));
    if (p == 0 || p > 65535)
      return "port " + std::string(port_text) + " outside 1..65535";
    u.port = static_cast<uint16_t>(p);
  } else {
    u.port = u.tls() ? 443 : 80;
  }
  return u;
}

bool is_loopback_host(std::string_view host) {
  if (host == "localhost" || host == "::1") return true;
  // 127.0.0.0/8 written as a dotted quad.
  if (host.substr(0, 4) != "127.") return false;
  int parts = 0;
  size_t pos = 0;
  while (pos <= host.size()) {
    auto dot = host.find('.', pos);
    auto part =
        host.substr(pos, dot == std::string_view::npos ? std::string_view::npos
                                                       : dot - pos);
    if (!all_digits(part) || part.size() > 3 ||
        std::stoi(std::string(part)) > 255)
      return false;
    ++parts;
    if (dot == std::string_view::npos) break;
    pos = dot + 1;
  }
  return parts == 4;
}

std::string endpoint_key(const url& u) {
  return u.origin() + "/";
}

int hex_digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<std::string> percent_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    int hi = hex_digit_value(text[i + 1]);
    int lo = hex_digit_value(text[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

void append_encoded_path(std::string& out, std::string_view text,
                         bool keep_slash) {
  static constexpr char hex[] = "0123456789ABCDEF";
  static constexpr std::string_view marks = "-._~!$&'()*+,;=:@";
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    bool safe = (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') ||
                (u >= '0' && u <= '9') ||
                (u != 0 && marks.find(c) != std::string_view::npos) ||
                (keep_slash && c == '/');
    if (safe) {
      out += c;
    } else {
      out += '%';
      out += hex[u >> 4];
      out += hex[u & 0xF];
    }
  }
}

} // namespace georoute::transport
