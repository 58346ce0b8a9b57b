// The nats-server configuration of a fleet (transport/nats/server_config.hpp):
// what it grants each reporter, what it refuses to write, and nats-server's
// own check of the text.

#include "georoute/transport/nats/nkey.hpp"
#include "georoute/transport/nats/server_config.hpp"
#include "tests/transport/nats/nats_server_process.hpp"
#include "tests/transport/test_pki.hpp"

#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <string>
#include <vector>

namespace georoute::server_config_test {
namespace {

constexpr const char* key1 =
    "UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4";

nats_server_config_options two_reporters() {
  auto k2 = generate_user_nkey();
  EXPECT_TRUE(k2);
  nats_server_config_options o;
  o.fleet = "f1";
  o.tls_cert_file = "/etc/georoute/server.pem";
  o.tls_key_file = "/etc/georoute/server.key";
  o.tls_ca_file = "/etc/georoute/ca.pem";
  o.users = {{"p01", key1}, {"p02", k2 ? k2->public_key : ""}};
  return o;
}

// How many lines of `text` are exactly `line`.
size_t lines_equal(const std::string& text, const std::string& line) {
  std::istringstream in{text};
  size_t n = 0;
  for (std::string l; std::getline(in, l);)
    n += l == line ? 1 : 0;
  return n;
}

TEST(NatsServerConfig, EachReporterPublishesOnItsOwnSubjectsOnly) {
  auto o = two_reporters();
  auto text = nats_server_config(o);
  ASSERT_TRUE(text) << text.error().what;
  const auto& t = *text;
  EXPECT_NE(t.find("listen: \"127.0.0.1:-1\"\n"), std::string::npos) << t;
  EXPECT_NE(t.find("max_payload: 4096\n"), std::string::npos) << t;
  EXPECT_NE(t.find("cert_file: \"/etc/georoute/server.pem\""),
            std::string::npos);
  EXPECT_NE(t.find("verify: false"), std::string::npos) << t;
  EXPECT_NE(
      t.find(std::string{"{ nkey: \""} + key1 +
             "\"\n      permissions: "
             "{\n        publish: { allow: [\"georoute.h1.f1.*.*.p01\"] }"),
      std::string::npos)
      << t;
  EXPECT_NE(t.find("publish: { allow: [\"georoute.h1.f1.*.*.p02\"] }"),
            std::string::npos)
      << t;
  EXPECT_EQ(
      lines_equal(t, "        subscribe: { allow: [\"georoute.h1.f1.>\"] }"),
      2u)
      << t;
  EXPECT_EQ(lines_equal(t, "    { nkey: \"" + o.users[1].nkey_public + "\""),
            1u)
      << t;
  // Nothing that could let a client in without its own credentials.
  for (const char* never : {"no_auth_user", "accounts", "password", "token"})
    EXPECT_EQ(t.find(never), std::string::npos) << never;

  o.verify_client_certificates = true;
  o.port = 4222;
  auto verified = nats_server_config(o);
  ASSERT_TRUE(verified);
  EXPECT_NE(verified->find("verify: true"), std::string::npos);
  EXPECT_NE(verified->find("listen: \"127.0.0.1:4222\""), std::string::npos);
}

TEST(NatsServerConfig, ProblemsNameTheField) {
  struct row {
    std::function<void(nats_server_config_options&)> change;
    std::string names;
  };
  const std::vector<row> rows = {
      {[](auto& o) { o.fleet = "F1"; }, "fleet 'F1'"},
      {[](auto& o) { o.fleet = "f.1"; }, "fleet 'f.1'"},
      {[](auto& o) { o.host = ""; }, "host"},
      {[](auto& o) { o.host = "::1"; }, "host '::1'"},
      {[](auto& o) { o.port = 0; }, "port 0"},
      {[](auto& o) { o.port = 65536; }, "port 65536"},
      {[](auto& o) { o.max_payload = 0; }, "max_payload"},
      {[](auto& o) { o.tls_cert_file.clear(); },
       "tls_cert_file and tls_key_file"},
      {[](auto& o) { o.tls_key_file.clear(); },
       "tls_cert_file and tls_key_file"},
      {[](auto& o) { o.tls_key_file = "a\"b"; }, "tls_key_file: a quote"},
      {[](auto& o) { o.tls_ca_file = "a\nverify: false"; }, "tls_ca_file"},
      {[](auto& o) {
         o.tls_ca_file.clear();
         o.verify_client_certificates = true;
       },
       "verify_client_certificates needs tls_ca_file"},
      {[](auto& o) { o.users.clear(); }, "no users"},
      {[](auto& o) { o.users[1].rid = "*"; }, "users[1]: rid '*'"},
      {[](auto& o) { o.users[1].rid = "p.2"; }, "users[1]: rid 'p.2'"},
      {[](auto& o) { o.users[1].rid = "p01"; },
       "users[1]: rid 'p01' listed twice"},
      {[](auto& o) { o.users[1].nkey_public = key1; }, "another reporter's"},
      {[](auto& o) { o.users[0].nkey_public = "U123"; },
       "users[0]: 'U123' is not a user public NKey"},
  };
  for (const auto& r : rows) {
    auto o = two_reporters();
    r.change(o);
    auto text = nats_server_config(o);
    ASSERT_FALSE(text) << "accepted; expected a problem naming " << r.names;
    EXPECT_NE(text.error().what.find(r.names), std::string::npos)
        << text.error().what;
  }
}

TEST(NatsServerConfig, NatsServerAcceptsTheText) {
  auto server = georoute::testing::nats_server_path();
  if (server.empty())
    GTEST_SKIP() << "nats-server was not found when the build was configured";
  georoute::testing::test_pki pki;
  auto o = two_reporters();
  o.tls_cert_file = pki.server_cert;
  o.tls_key_file = pki.server_key;
  o.tls_ca_file = pki.ca_cert;
  auto text = nats_server_config(o);
  ASSERT_TRUE(text) << text.error().what;
  auto path = pki.dir() + "/server.conf";
  std::ofstream{path} << *text;
  auto out = pki.dir() + "/check.txt";
  auto cmd = server + " -t -c " + path + " > " + out + " 2>&1";
  int rc = std::system(cmd.c_str());
  std::ifstream f{out};
  std::string said{std::istreambuf_iterator<char>{f}, {}};
  EXPECT_EQ(rc, 0) << said << "\n" << *text;
  EXPECT_NE(said.find("is valid"), std::string::npos) << said;
}

} // namespace
} // namespace georoute::server_config_test
