#pragma once

// The nats-server (2.9) configuration of one fleet: every reporter is an
// NKey user that may publish only on its own subjects
// ("georoute.h1.<fleet>.*.*.<rid>") and subscribe only to the fleet's
// ("georoute.h1.<fleet>.>"). Clients must speak TLS; the server asks for a
// client certificate only when `verify_client_certificates` is set.
//
// Never written: `no_auth_user` (it would let a client in without
// credentials) and an `accounts` block (with the authorization block,
// nats-server before 2.9.23 let clients in without credentials when the
// accounts block held only the system account, CVE-2023-47090).

#include "georoute/actors/policy/result.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace georoute {

/// One reporter: its id (the last token of its subjects) and its NKey.
struct nats_fleet_user {
  std::string rid;         ///< a fleet token, e.g. "p01"
  std::string nkey_public; ///< "U..."
};

struct nats_server_config_options {
  std::string fleet; ///< a fleet token, e.g. "f1"
  std::string host = "127.0.0.1";
  int port = -1; ///< -1: a free port the server picks
  std::size_t max_payload = 4096;
  std::string tls_cert_file; ///< required (PEM)
  std::string tls_key_file;  ///< required (PEM)
  std::string tls_ca_file;   ///< trust anchor for client certificates
  bool verify_client_certificates = false; ///< needs tls_ca_file
  std::vector<nats_fleet_user> users;      ///< at least one
};

/// The configuration file's text, or a problem naming the offending field.
result<std::string> nats_server_config(const nats_server_config_options& opts);

} // namespace georoute
