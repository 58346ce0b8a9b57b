// NKeys made with OpenSSL (transport/nats/nkey.hpp): the encoding against
// a pair from the cnats test suite, and against cnats itself, which must
// sign with a generated seed exactly as OpenSSL does with the raw seed.

#include "georoute/transport/nats/nkey.hpp"
#include "tests/transport/test_pki.hpp"

#include <cstdlib>
#include <gtest/gtest.h>
#include <memory>
#include <nats/nats.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <vector>

namespace georoute::nkey_test {
namespace {

// A seed and its public key as the cnats 3.4.1 test suite uses them
// (test/test.c, the NKey-from-seed test).
constexpr const char* known_seed =
    "SUACSSL3UAHUDXKFSNVUZRF5UHPMWZ6BFDTJ7M6USDXIEDNPPQYYYCU3VY";
constexpr const char* known_public =
    "UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4";

TEST(UserNkey, TheKnownPairRoundTrips) {
  auto k = user_nkey_from_seed(known_seed);
  ASSERT_TRUE(k) << k.error().what;
  EXPECT_EQ(k->public_key, known_public);
  EXPECT_EQ(k->seed, known_seed);
  EXPECT_TRUE(is_user_public_nkey(known_public));
}

TEST(UserNkey, GeneratedPairsHaveTheShapeAndDiffer) {
  auto a = generate_user_nkey();
  auto b = generate_user_nkey();
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->public_key.size(), 56u);
  EXPECT_EQ(a->seed.size(), 58u);
  EXPECT_EQ(a->public_key[0], 'U');
  EXPECT_EQ(a->seed.substr(0, 2), "SU");
  EXPECT_TRUE(is_user_public_nkey(a->public_key));
  EXPECT_NE(a->public_key, b->public_key);
  EXPECT_NE(a->seed, b->seed);
  auto again = user_nkey_from_seed(a->seed);
  ASSERT_TRUE(again) << again.error().what;
  EXPECT_EQ(again->public_key, a->public_key);
}

// Ed25519 signatures are deterministic: cnats decoding our seed to the same
// 32 bytes signs exactly as OpenSSL does with them.
TEST(UserNkey, CnatsSignsWithTheSeedAsOpenSslDoesWithTheRawKey) {
  std::array<unsigned char, 32> raw;
  ASSERT_EQ(RAND_bytes(raw.data(), static_cast<int>(raw.size())), 1);
  auto k = user_nkey_from_raw_seed(raw);
  ASSERT_TRUE(k) << k.error().what;
  const std::string nonce = "georoute nonce 1234";
  // nats_Sign needs the library opened (its base32 tables), which a channel
  // would do.
  ASSERT_EQ(nats_Open(-1), NATS_OK);

  unsigned char* sig = nullptr;
  int sig_len = 0;
  ASSERT_EQ(nats_Sign(k->seed.c_str(), nonce.c_str(), &sig, &sig_len), NATS_OK)
      << nats_GetLastError(nullptr);
  std::vector<unsigned char> by_cnats(sig, sig + sig_len);
  std::free(sig);

  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key{
      EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nullptr, raw.data(),
                                   raw.size()),
      EVP_PKEY_free};
  ASSERT_TRUE(key);
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx{EVP_MD_CTX_new(),
                                                              EVP_MD_CTX_free};
  ASSERT_EQ(EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key.get()),
            1);
  std::vector<unsigned char> by_openssl(64);
  size_t len = by_openssl.size();
  ASSERT_EQ(EVP_DigestSign(ctx.get(), by_openssl.data(), &len,
                           reinterpret_cast<const unsigned char*>(nonce.data()),
                           nonce.size()),
            1);
  by_openssl.resize(len);
  EXPECT_EQ(by_cnats, by_openssl);
}

TEST(UserNkey, BadSeedsAreRefused) {
  std::string flipped = known_seed;
  flipped[20] = flipped[20] == 'A' ? 'B' : 'A';
  struct row {
    std::string seed;
    std::string names;
  };
  const std::vector<row> rows = {
      {flipped, "bad checksum"},
      {std::string{known_seed}.substr(0, 57), "expected 58 characters"},
      {std::string{known_seed} + "A", "expected 58 characters"},
      {"su" + std::string{known_seed}.substr(2), "not base32"},
      {std::string{known_seed}.substr(0, 57) + "1", "not base32"},
      // A public key in the place of a seed (padded to the length).
      {std::string{known_public} + "AA", "bad checksum"},
  };
  for (const auto& r : rows) {
    auto k = user_nkey_from_seed(r.seed);
    ASSERT_FALSE(k) << r.seed;
    EXPECT_NE(k.error().what.find(r.names), std::string::npos)
        << k.error().what;
    EXPECT_EQ(k.error().what.find(r.seed), std::string::npos)
        << "the seed shows in the problem";
  }
}

TEST(UserNkey, WhatIsNotAUserPublicKey) {
  std::string flipped = known_public;
  flipped[30] = flipped[30] == 'A' ? 'B' : 'A';
  for (std::string s :
       {flipped, std::string{known_seed}, std::string{known_public}.substr(1),
        std::string{""}, "A" + std::string{known_public}.substr(1)})
    EXPECT_FALSE(is_user_public_nkey(s)) << s;
}

TEST(UserNkey, TheSeedFileIsNewAndPrivate) {
  georoute::testing::test_pki dir; // a temp directory that cleans up
  auto path = dir.dir() + "/p01.nk";
  auto p = write_nkey_seed_file(path, known_seed);
  ASSERT_FALSE(p) << p->what;
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::ifstream f{path};
  std::string line;
  std::getline(f, line);
  EXPECT_EQ(line, known_seed);
  auto again = write_nkey_seed_file(path, known_seed);
  ASSERT_TRUE(again) << "an existing file was overwritten";
  EXPECT_NE(again->what.find(path), std::string::npos) << again->what;
}

} // namespace
} // namespace georoute::nkey_test
