#pragma once

// A throwaway PKI for the TLS tests, made at test time with the OpenSSL 3 C
// API: a self-signed CA, a server certificate for IP:127.0.0.1 and
// DNS:localhost, and a second server certificate for a name the tests never
// connect to (to prove host name verification is on). Everything lives in a
// fresh temp directory that the destructor removes.

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdexcept>
#include <string>

namespace georoute::testing {

namespace pki_detail {

struct pkey_free {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct x509_free {
  void operator()(X509* p) const { X509_free(p); }
};
struct bio_free {
  void operator()(BIO* p) const { BIO_free(p); }
};
using pkey_ptr = std::unique_ptr<EVP_PKEY, pkey_free>;
using x509_ptr = std::unique_ptr<X509, x509_free>;
using bio_ptr = std::unique_ptr<BIO, bio_free>;

inline void check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string{"test PKI: "} + what);
}

inline pkey_ptr make_key() {
  pkey_ptr key{EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256")};
  check(key != nullptr, "EC key generation");
  return key;
}

inline void add_ext(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  check(ext != nullptr, value);
  bool ok = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  check(ok, value);
}

/// A CA certificate when `issuer` is null, else a server certificate with
/// subjectAltName `san` signed by `issuer`.
inline x509_ptr make_cert(EVP_PKEY* key, const char* cn, X509* issuer,
                          EVP_PKEY* issuer_key, const char* san, long serial) {
  x509_ptr x{X509_new()};
  check(x != nullptr, "X509_new");
  X509* c = x.get();
  X509_set_version(c, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(c), serial);
  X509_gmtime_adj(X509_getm_notBefore(c), -3600);
  X509_gmtime_adj(X509_getm_notAfter(c), 24 * 3600);
  X509_set_pubkey(c, key);
  X509_NAME* name = X509_get_subject_name(c);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn), -1, -1,
                             0);
  bool ca = issuer == nullptr;
  X509_set_issuer_name(c, ca ? name : X509_get_subject_name(issuer));
  X509* signer = ca ? c : issuer;
  add_ext(c, signer, NID_subject_key_identifier, "hash");
  if (ca) {
    add_ext(c, signer, NID_basic_constraints, "critical,CA:TRUE");
    add_ext(c, signer, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    add_ext(c, signer, NID_basic_constraints, "critical,CA:FALSE");
    add_ext(c, signer, NID_key_usage, "critical,digitalSignature");
    add_ext(c, signer, NID_ext_key_usage, "serverAuth");
    add_ext(c, signer, NID_authority_key_identifier, "keyid:always");
    add_ext(c, signer, NID_subject_alt_name, san);
  }
  check(X509_sign(c, ca ? key : issuer_key, EVP_sha256()) > 0, "X509_sign");
  return x;
}

inline void write_cert(const std::string& path, X509* cert) {
  bio_ptr b{BIO_new_file(path.c_str(), "w")};
  check(b != nullptr, "open certificate file");
  check(PEM_write_bio_X509(b.get(), cert) == 1, "write certificate");
}

inline void write_key(const std::string& path, EVP_PKEY* key) {
  bio_ptr b{BIO_new_file(path.c_str(), "w")};
  check(b != nullptr, "open key file");
  check(PEM_write_bio_PrivateKey(b.get(), key, nullptr, nullptr, 0, nullptr,
                                 nullptr) == 1,
        "write key");
}

} // namespace pki_detail

/// See the file comment. Paths are absolute PEM files.
class test_pki {
public:
  test_pki() {
    using namespace pki_detail;
    auto tmpl =
        (std::filesystem::temp_directory_path() / "georoute-http-test-XXXXXX")
            .string();
    check(mkdtemp(tmpl.data()) != nullptr, "mkdtemp");
    dir_ = tmpl;
    auto ca_key = make_key();
    auto ca = make_cert(ca_key.get(), "georoute test CA", nullptr, nullptr,
                        nullptr, 1);
    auto key = make_key();
    auto cert = make_cert(key.get(), "localhost", ca.get(), ca_key.get(),
                          "IP:127.0.0.1,DNS:localhost", 2);
    auto other_key = make_key();
    auto other = make_cert(other_key.get(), "other.example", ca.get(),
                           ca_key.get(), "DNS:other.example", 3);
    ca_cert = dir_ + "/ca.pem";
    server_cert = dir_ + "/server.pem";
    server_key = dir_ + "/server.key";
    other_cert = dir_ + "/other.pem";
    other_key_file = dir_ + "/other.key";
    write_cert(ca_cert, ca.get());
    write_cert(server_cert, cert.get());
    write_key(server_key, key.get());
    write_cert(other_cert, other.get());
    write_key(other_key_file, other_key.get());
  }

  ~test_pki() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  test_pki(const test_pki&) = delete;
  test_pki& operator=(const test_pki&) = delete;

  const std::string& dir() const { return dir_; }

  std::string ca_cert;
  std::string server_cert;
  std::string server_key;
  std::string other_cert;
  std::string other_key_file;

private:
  std::string dir_;
};

} // namespace georoute::testing
