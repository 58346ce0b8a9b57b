// nats_channel_options::validate: the values alone, no file is opened.

#include "georoute/transport/nats/channel.hpp"
#include "georoute/transport/nats/nkey.hpp"

#include <cctype>

namespace georoute {

namespace {

problem bad(const std::string& what) {
  return problem{"nats channel: " + what};
}

bool has_space(const std::string& s) {
  for (unsigned char c : s)
    if (std::isspace(c) || c < 0x20) return true;
  return false;
}

bool starts_with(const std::string& s, const char* prefix) {
  return s.rfind(prefix, 0) == 0;
}

// A subject to subscribe to: non-empty tokens split by '.', no white space,
// '*' standing alone, '>' standing alone and last.
bool valid_subscription(const std::string& s) {
  if (s.empty() || has_space(s)) return false;
  size_t start = 0;
  for (;;) {
    auto dot = s.find('.', start);
    auto tok = s.substr(start, dot == std::string::npos ? std::string::npos
                                                        : dot - start);
    if (tok.empty()) return false;
    bool last = dot == std::string::npos;
    if (tok.find_first_of("*>") != std::string::npos && tok != "*" &&
        tok != ">")
      return false;
    if (tok == ">" && !last) return false;
    if (last) return true;
    start = dot + 1;
  }
}

} // namespace

std::optional<problem> nats_channel_options::validate() const {
  if (servers.empty()) return bad("servers: at least one server URL");
  for (size_t i = 0; i < servers.size(); ++i) {
    const auto& url = servers[i];
    auto where = "servers[" + std::to_string(i) + "] '" + url + "'";
    bool tls = starts_with(url, "tls://");
    if ((!tls && !starts_with(url, "nats://")) || has_space(url) ||
        url.find(',') != std::string::npos || url.size() == (tls ? 6u : 7u))
      return bad(where + ": expected nats://host:port or tls://host:port");
    if (tls && ca_file.empty())
      return bad(where + ": a tls:// server needs ca_file (the server's "
                         "certificate is always verified)");
  }
  if (nkey_public.empty() != nkey_seed_file.empty())
    return bad("nkey_public and nkey_seed_file: both or neither");
  if (!nkey_public.empty() && !is_user_public_nkey(nkey_public))
    return bad("nkey_public: not a user public NKey (56 characters, "
               "\"U...\")");
  if (cert_file.empty() != key_file.empty())
    return bad("cert_file and key_file: both or neither");
  if (!cert_file.empty() && ca_file.empty())
    return bad("cert_file: a client certificate needs TLS (ca_file)");
  if (!expected_hostname.empty() && ca_file.empty())
    return bad("expected_hostname: needs TLS (ca_file)");
  if (!subscribe_subject.empty() && !valid_subscription(subscribe_subject))
    return bad("subscribe_subject '" + subscribe_subject +
               "': not a NATS subject");
  if (publish_queue < 1) return bad("publish_queue: at least 1");
  if (connect_timeout.count() < 1) return bad("connect_timeout: at least 1 ms");
  if (ping_interval.count() < 1) return bad("ping_interval: at least 1 ms");
  if (reconnect_wait.count() < 0) return bad("reconnect_wait: negative");
  if (write_deadline.count() < 1) return bad("write_deadline: at least 1 ms");
  if (max_pings_out < 1) return bad("max_pings_out: at least 1");
  if (pending_msgs < 1) return bad("pending_msgs: at least 1");
  if (pending_bytes < 1) return bad("pending_bytes: at least 1");
  if (max_payload < 1) return bad("max_payload: at least 1");
  return std::nullopt;
}

} // namespace georoute
