#include "georoute/transport/nats/server_config.hpp"

#include "georoute/actors/policy/fleet_subject.hpp"
#include "georoute/transport/nats/nkey.hpp"

#include <set>
#include <sstream>

namespace georoute {

namespace {

// A value the configuration quotes: no quote, backslash or control
// character can end the string early or smuggle in a directive.
bool quotable(const std::string& s) {
  for (unsigned char c : s)
    if (c == '"' || c == '\\' || c < 0x20 || c == 0x7f) return false;
  return true;
}

std::string quoted(const std::string& s) {
  return '"' + s + '"';
}

} // namespace

result<std::string> nats_server_config(const nats_server_config_options& o) {
  if (!is_fleet_token(o.fleet))
    return problem{"nats server config: fleet '" + o.fleet +
                   "' is not a token ([a-z0-9_-])"};
  if (o.host.empty() || !quotable(o.host) ||
      o.host.find_first_of(" :") != std::string::npos)
    return problem{"nats server config: host '" + o.host + "' is not a host"};
  if (o.port != -1 && (o.port < 1 || o.port > 65535))
    return problem{"nats server config: port " + std::to_string(o.port) +
                   " is not -1 or 1..65535"};
  if (o.max_payload == 0)
    return problem{"nats server config: max_payload must be positive"};
  if (o.tls_cert_file.empty() || o.tls_key_file.empty())
    return problem{"nats server config: tls_cert_file and tls_key_file are "
                   "required (clients speak TLS only)"};
  for (auto [name, value] : {std::pair{"tls_cert_file", &o.tls_cert_file},
                             std::pair{"tls_key_file", &o.tls_key_file},
                             std::pair{"tls_ca_file", &o.tls_ca_file}}) {
    if (!quotable(*value))
      return problem{std::string{"nats server config: "} + name +
                     ": a quote, backslash or control character"};
  }
  if (o.verify_client_certificates && o.tls_ca_file.empty())
    return problem{"nats server config: verify_client_certificates needs "
                   "tls_ca_file"};
  if (o.users.empty())
    return problem{"nats server config: no users (nobody could connect)"};

  std::set<std::string> rids, keys;
  std::ostringstream users;
  for (size_t i = 0; i < o.users.size(); ++i) {
    const auto& u = o.users[i];
    auto where = "nats server config: users[" + std::to_string(i) + "]";
    if (!is_fleet_token(u.rid))
      return problem{where + ": rid '" + u.rid + "' is not a token"};
    if (!is_user_public_nkey(u.nkey_public))
      return problem{where + ": '" + u.nkey_public +
                     "' is not a user public NKey"};
    if (!rids.insert(u.rid).second)
      return problem{where + ": rid '" + u.rid + "' listed twice"};
    if (!keys.insert(u.nkey_public).second)
      return problem{where + ": the NKey of rid '" + u.rid +
                     "' is another reporter's too"};
    users << "    { nkey: " << quoted(u.nkey_public)
          << "\n      permissions: {\n        publish: { allow: ["
          << quoted(fleet_publish_permission(o.fleet, u.rid))
          << "] }\n        subscribe: { allow: ["
          << quoted(fleet_subscribe_permission(o.fleet)) << "] }\n      }\n"
          << "    }\n";
  }

  std::ostringstream out;
  out << "# georoute fleet '" << o.fleet
      << "': one NKey user per reporter (generated)\n"
      << "listen: " << quoted(o.host + ":" + std::to_string(o.port)) << "\n"
      << "max_payload: " << o.max_payload << "\n"
      << "tls {\n"
      << "  cert_file: " << quoted(o.tls_cert_file) << "\n"
      << "  key_file: " << quoted(o.tls_key_file) << "\n";
  if (!o.tls_ca_file.empty())
    out << "  ca_file: " << quoted(o.tls_ca_file) << "\n";
  out << "  verify: " << (o.verify_client_certificates ? "true" : "false")
      << "\n"
      << "  timeout: 2\n"
      << "}\n"
      << "authorization {\n"
      << "  users = [\n"
      << users.str() << "  ]\n"
      << "}\n";
  return out.str();
}

} // namespace georoute
