#pragma once

// Parsing of account and regional endpoint URLs. Pure: no Beast, no CAF.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace georoute::transport {

/// A parsed absolute http(s) URL of a Cosmos endpoint.
struct url {
  std::string scheme; ///< "http" or "https", lower case
  std::string host;   ///< lower case; IPv6 literals without brackets
  uint16_t port = 0;  ///< explicit or the scheme's default
  std::string path;   ///< at least "/"

  bool tls() const { return scheme == "https"; }

  /// "scheme://host:port" with brackets around IPv6 literals.
  std::string origin() const;

  /// The value of the Host header: "host" or "host:port".
  std::string host_header() const;
};

/// Either a url or a message saying what is wrong with the input.
using url_result = std::variant<url, std::string>;

/// Parses `text`. Accepts http and https only, requires a host, rejects user
/// info, fragments and ports outside 1..65535.
url_result parse_url(std::string_view text);

/// True for 127.0.0.0/8, ::1 and "localhost".
bool is_loopback_host(std::string_view host);

/// Normalized form used as a map key for endpoints: origin plus "/".
std::string endpoint_key(const url& u);

/// The value of a hex digit (either case), or -1.
int hex_digit_value(char c);

/// Decodes %XX escapes (either hex case). Strict: a '%' not followed by two
/// hex digits is an error (std::nullopt). '+' stays '+'.
std::optional<std::string> percent_decode(std::string_view text);

/// Appends `text` to a request path, percent-encoding (upper-case hex) every
/// byte a path segment cannot carry as it is: all but RFC 3986's unreserved
/// characters, sub-delimiters, ':' and '@' (so a space, '%', quotes and
/// non-ASCII bytes are escaped); '/' stays a separator when `keep_slash`.
/// Signing and the gateway decode each segment, so an id "a b" travels as
/// "a%20b" and is signed as "a b", as the SDKs do.
void append_encoded_path(std::string& out, std::string_view text,
                         bool keep_slash);

} // namespace georoute::transport
