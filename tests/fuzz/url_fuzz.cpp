// Fuzzes the endpoint URL parser and percent decoding (transport/url.hpp):
// endpoints come from the account document and the user's configuration.
// Invariants: never a crash; a rejection says why; an accepted URL is http(s)
// with a host, a port in 1..65535 and a path starting with '/', and its
// endpoint key parses back to the same origin.

#include "tests/fuzz/fuzz_check.hpp"
#include "georoute/transport/url.hpp"

#include <variant>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace georoute::transport;
  auto text = georoute::fuzz::as_text(data, size);

  auto parsed = parse_url(text);
  if (auto* why = std::get_if<std::string>(&parsed)) {
    FUZZ_CHECK(!why->empty(), "a rejection without a reason");
  } else {
    const auto& u = std::get<url>(parsed);
    FUZZ_CHECK(u.scheme == "http" || u.scheme == "https", u.scheme);
    FUZZ_CHECK(!u.host.empty(), "empty host");
    FUZZ_CHECK(u.port != 0, "port 0");
    FUZZ_CHECK(!u.path.empty() && u.path[0] == '/', u.path);
    auto key = endpoint_key(u);
    auto again = parse_url(key);
    auto* v = std::get_if<url>(&again);
    FUZZ_CHECK(v != nullptr, "endpoint key does not parse: " + key);
    FUZZ_CHECK(v->scheme == u.scheme && v->host == u.host &&
                   v->port == u.port && v->path == "/",
               "endpoint key changed the origin: " + key);
    FUZZ_CHECK(endpoint_key(*v) == key, "endpoint key is not stable: " + key);
    FUZZ_CHECK(v->origin() == u.origin(), "origin");
    (void)u.host_header();
    (void)is_loopback_host(u.host);
  }

  (void)is_loopback_host(text);
  auto decoded = percent_decode(text);
  if (decoded)
    FUZZ_CHECK(decoded->size() <= text.size(), "decoding grew the text");
  for (char c : text) {
    int v = hex_digit_value(c);
    FUZZ_CHECK(v >= -1 && v < 16, "hex digit value");
  }
  return 0;
}
