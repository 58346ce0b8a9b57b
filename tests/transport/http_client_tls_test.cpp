// http_client over TLS against a loopback server whose certificates are made
// at test time: verification is always on, the CA comes from tls_ca_file or
// the system paths, the peer name is checked, SNI is sent for host names.

#include "tests/transport/client_test_util.hpp"
#include "tests/transport/loopback_server.hpp"
#include "tests/transport/test_pki.hpp"
#include "georoute/transport/http_client.hpp"

#include <fstream>
#include <gtest/gtest.h>
#include <openssl/ssl.h>

namespace georoute::testing {
namespace {

using transport::failure;
using transport::http_client;
using transport::http_client_options;

/// Records the SNI name each handshake carried.
struct sni_log {
  std::mutex mtx;
  std::vector<std::string> names;
};

int on_servername(SSL* s, int*, void* arg) {
  auto* log = static_cast<sni_log*>(arg);
  const char* name = SSL_get_servername(s, TLSEXT_NAMETYPE_host_name);
  std::lock_guard<std::mutex> guard{log->mtx};
  log->names.emplace_back(name != nullptr ? name : "");
  return SSL_TLSEXT_ERR_OK;
}

class HttpClientTls : public ::testing::Test {
protected:
  static void SetUpTestSuite() { pki_ = new test_pki; }
  static void TearDownTestSuite() {
    delete pki_;
    pki_ = nullptr;
  }

  std::shared_ptr<ssl::context> server_tls(const std::string& cert,
                                           const std::string& key) {
    auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
    ctx->use_certificate_chain_file(cert);
    ctx->use_private_key_file(key, ssl::context::pem);
    SSL_CTX_set_tlsext_servername_callback(ctx->native_handle(), on_servername);
    SSL_CTX_set_tlsext_servername_arg(ctx->native_handle(), &sni_);
    return ctx;
  }

  static reply ok() {
    reply r;
    r.body = "secure";
    return r;
  }

  http_client_options with_ca() const {
    http_client_options opts;
    opts.tls_ca_file = pki_->ca_cert;
    return opts;
  }

  static test_pki* pki_;
  sni_log sni_;
};

test_pki* HttpClientTls::pki_ = nullptr;

TEST_F(HttpClientTls, CaConfigured_Succeeds_AndKeepsAlive) {
  loopback_server srv{[](const server_request&) { return ok(); },
                      server_tls(pki_->server_cert, pki_->server_key)};
  http_client client{with_ca()};
  EXPECT_EQ(client.tls_setup_error(), "");
  for (int i = 0; i < 3; ++i) {
    auto o = send_sync(client, get(srv.endpoint()));
    ASSERT_EQ(o.error, failure::none) << o.error_detail;
    EXPECT_EQ(o.status, 200);
    EXPECT_EQ(o.body, "secure");
  }
  EXPECT_EQ(srv.accepted(), 1);
  EXPECT_EQ(client.stats().connections_opened, 1u);
  EXPECT_EQ(client.stats().reused, 2u);
  // An IP literal is not a valid SNI name (RFC 6066): none is sent.
  std::lock_guard<std::mutex> guard{sni_.mtx};
  ASSERT_EQ(sni_.names.size(), 1u);
  EXPECT_EQ(sni_.names.front(), "");
}

TEST_F(HttpClientTls, LocalhostName_SucceedsWithSni) {
  loopback_server srv{[](const server_request&) { return ok(); },
                      server_tls(pki_->server_cert, pki_->server_key)};
  http_client client{with_ca()};
  auto o = send_sync(
      client, get("https://localhost:" + std::to_string(srv.port()) + "/"));
  ASSERT_EQ(o.error, failure::none) << o.error_detail;
  EXPECT_EQ(o.status, 200);
  std::lock_guard<std::mutex> guard{sni_.mtx};
  ASSERT_FALSE(sni_.names.empty());
  EXPECT_EQ(sni_.names.back(), "localhost");
}

TEST_F(HttpClientTls, NoCaConfigured_Tls) {
  loopback_server srv{[](const server_request&) { return ok(); },
                      server_tls(pki_->server_cert, pki_->server_key)};
  http_client client{{}}; // system CAs only: the test CA is unknown
  EXPECT_EQ(client.tls_setup_error(), "");
  auto o = send_sync(client, get(srv.endpoint()));
  EXPECT_EQ(o.error, failure::tls) << o.error_detail;
  EXPECT_NE(o.error_detail.find("TLS handshake with 127.0.0.1"),
            std::string::npos)
      << o.error_detail;
  EXPECT_EQ(srv.requests(), 0);
}

TEST_F(HttpClientTls, HostNameMismatch_Tls) {
  // Trusted CA, but the certificate names only other.example.
  loopback_server srv{[](const server_request&) { return ok(); },
                      server_tls(pki_->other_cert, pki_->other_key_file)};
  http_client client{with_ca()};
  auto o = send_sync(client, get(srv.endpoint()));
  EXPECT_EQ(o.error, failure::tls) << o.error_detail;
  EXPECT_NE(o.error_detail.find("mismatch"), std::string::npos)
      << o.error_detail;
  EXPECT_EQ(srv.requests(), 0);
}

TEST_F(HttpClientTls, MissingCaFile_SetupErrorAndTls) {
  loopback_server srv{[](const server_request&) { return ok(); },
                      server_tls(pki_->server_cert, pki_->server_key)};
  http_client_options opts;
  opts.tls_ca_file = pki_->dir() + "/no-such-ca.pem";
  http_client client{opts};
  EXPECT_NE(client.tls_setup_error().find("no-such-ca.pem': no such file"),
            std::string::npos)
      << client.tls_setup_error();
  auto o = send_sync(client, get(srv.endpoint()));
  EXPECT_EQ(o.error, failure::tls) << o.error_detail;
  EXPECT_EQ(o.error_detail, client.tls_setup_error());
  EXPECT_EQ(srv.accepted(), 0);
  // Plain HTTP does not depend on the TLS setup.
  loopback_server plain{[](const server_request&) { return ok(); }};
  EXPECT_TRUE(send_sync(client, get(plain.endpoint())).success());
}

TEST_F(HttpClientTls, CaFileWithoutCertificates_SetupError) {
  auto path = pki_->dir() + "/empty.pem";
  { std::ofstream{path} << "not a certificate\n"; }
  http_client_options opts;
  opts.tls_ca_file = path;
  http_client client{opts};
  EXPECT_NE(client.tls_setup_error().find("no PEM certificate"),
            std::string::npos)
      << client.tls_setup_error();
}

TEST_F(HttpClientTls, PlainHttpServer_Tls) {
  loopback_server srv{[](const server_request&) { return ok(); }};
  http_client client{with_ca()};
  auto ep = "https://127.0.0.1:" + std::to_string(srv.port()) + "/";
  auto o = send_sync(client, get(ep, "/", 3s));
  EXPECT_EQ(o.error, failure::tls) << o.error_detail;
}

} // namespace
} // namespace georoute::testing
