#include "georoute/transport/nats/nkey.hpp"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <unistd.h>
#include <vector>

namespace georoute {

namespace {

constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

// The type prefixes of the nkeys format: each is a 5-bit letter index
// shifted into the top of a byte, so that it shows as that letter.
constexpr unsigned char prefix_user = 20 << 3; // 'U'
constexpr unsigned char prefix_seed = 18 << 3; // 'S'

constexpr size_t public_chars = 56; // base32 of 1 + 32 + 2 bytes
constexpr size_t seed_chars = 58;   // base32 of 2 + 32 + 2 bytes

struct pkey_free {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
using pkey_ptr = std::unique_ptr<EVP_PKEY, pkey_free>;

// Bytes that are wiped when they go: the raw seed never outlives its use.
struct secret_bytes {
  std::vector<unsigned char> b;
  ~secret_bytes() { OPENSSL_cleanse(b.data(), b.size()); }
};

std::string openssl_error(const char* what) {
  std::string out = std::string{"nkey: "} + what;
  if (auto e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    out += ": ";
    out += buf;
  }
  ERR_clear_error();
  return out;
}

uint16_t crc16_xmodem(const unsigned char* p, size_t n) {
  uint16_t crc = 0;
  for (size_t i = 0; i < n; ++i) {
    crc ^= static_cast<uint16_t>(p[i] << 8);
    for (int bit = 0; bit < 8; ++bit)
      crc = (crc & 0x8000) ? static_cast<uint16_t>((crc << 1) ^ 0x1021)
                           : static_cast<uint16_t>(crc << 1);
  }
  return crc;
}

// Appends the checksum of everything in `b`, low byte first.
void append_crc(std::vector<unsigned char>& b) {
  auto crc = crc16_xmodem(b.data(), b.size());
  b.push_back(static_cast<unsigned char>(crc & 0xff));
  b.push_back(static_cast<unsigned char>(crc >> 8));
}

std::string base32(const std::vector<unsigned char>& b) {
  std::string out;
  out.reserve((b.size() * 8 + 4) / 5);
  uint32_t acc = 0;
  int bits = 0;
  for (auto byte : b) {
    acc = (acc << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += alphabet[(acc >> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += alphabet[(acc << (5 - bits)) & 31];
  return out;
}

// The bytes of unpadded base32 `s`; nothing for a character outside the
// alphabet or an encoding that is not the canonical one (stray low bits).
std::optional<std::vector<unsigned char>> unbase32(std::string_view s) {
  std::vector<unsigned char> out;
  out.reserve(s.size() * 5 / 8);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : s) {
    auto v = alphabet.find(c);
    if (v == std::string_view::npos) return std::nullopt;
    acc = (acc << 5) | static_cast<uint32_t>(v);
    bits += 5;
    if (bits >= 8) {
      out.push_back(static_cast<unsigned char>((acc >> (bits - 8)) & 0xff));
      bits -= 8;
    }
  }
  if (bits >= 5 || (acc & ((1u << bits) - 1)) != 0) return std::nullopt;
  return out;
}

bool crc_ok(const std::vector<unsigned char>& b) {
  if (b.size() < 3) return false;
  auto n = b.size() - 2;
  auto stored = static_cast<uint16_t>(b[n] | (b[n + 1] << 8));
  return crc16_xmodem(b.data(), n) == stored;
}

} // namespace

result<nkey_pair>
user_nkey_from_raw_seed(const std::array<unsigned char, 32>& raw) {
  pkey_ptr key{EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nullptr,
                                            raw.data(), raw.size())};
  if (!key) return problem{openssl_error("Ed25519 key from seed")};
  std::vector<unsigned char> pub(1 + 32);
  size_t pub_len = 32;
  if (EVP_PKEY_get_raw_public_key(key.get(), pub.data() + 1, &pub_len) != 1 ||
      pub_len != 32)
    return problem{openssl_error("Ed25519 public key")};
  pub[0] = prefix_user;
  append_crc(pub);

  // Two prefix bytes: the 5 bits of 'S', then the 8 bits of the key type,
  // then 3 zero bits, so that the text starts with "SU".
  secret_bytes seed;
  seed.b.reserve(2 + 32 + 2);
  seed.b.push_back(
      static_cast<unsigned char>(prefix_seed | (prefix_user >> 5)));
  seed.b.push_back(static_cast<unsigned char>((prefix_user & 31) << 3));
  seed.b.insert(seed.b.end(), raw.begin(), raw.end());
  append_crc(seed.b);
  return nkey_pair{base32(pub), base32(seed.b)};
}

result<nkey_pair> generate_user_nkey() {
  pkey_ptr key{EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519")};
  if (!key) return problem{openssl_error("Ed25519 key generation")};
  std::array<unsigned char, 32> raw;
  size_t len = raw.size();
  bool ok = EVP_PKEY_get_raw_private_key(key.get(), raw.data(), &len) == 1 &&
            len == raw.size();
  auto out = ok ? user_nkey_from_raw_seed(raw)
                : result<nkey_pair>{problem{openssl_error("Ed25519 seed")}};
  OPENSSL_cleanse(raw.data(), raw.size());
  return out;
}

result<nkey_pair> user_nkey_from_seed(std::string_view seed) {
  if (seed.size() != seed_chars)
    return problem{"nkey seed: expected " + std::to_string(seed_chars) +
                   " characters, got " + std::to_string(seed.size())};
  auto decoded = unbase32(seed);
  if (!decoded) return problem{"nkey seed: not base32"};
  secret_bytes b{std::move(*decoded)};
  if (!crc_ok(b.b)) return problem{"nkey seed: bad checksum"};
  if ((b.b[0] & 0xf8) != prefix_seed)
    return problem{"nkey seed: not a seed (it does not start with 'S')"};
  auto type = static_cast<unsigned char>(((b.b[0] & 7) << 5) | (b.b[1] >> 3));
  if (type != prefix_user || (b.b[1] & 7) != 0)
    return problem{"nkey seed: not a user seed (it does not start with 'SU')"};
  std::array<unsigned char, 32> raw;
  std::memcpy(raw.data(), b.b.data() + 2, raw.size());
  auto out = user_nkey_from_raw_seed(raw);
  OPENSSL_cleanse(raw.data(), raw.size());
  return out;
}

bool is_user_public_nkey(std::string_view key) {
  if (key.size() != public_chars || key[0] != 'U') return false;
  auto b = unbase32(key);
  return b && b->size() == 35 && (*b)[0] == prefix_user && crc_ok(*b);
}

std::optional<problem> write_nkey_seed_file(const std::string& path,
                                            const std::string& seed) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    return problem{"nkey seed file " + path + ": " + std::strerror(errno)};
  std::string line = seed + "\n";
  size_t done = 0;
  while (done < line.size()) {
    auto n = ::write(fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      auto err = errno;
      ::close(fd);
      OPENSSL_cleanse(line.data(), line.size());
      return problem{"nkey seed file " + path + ": " + std::strerror(err)};
    }
    done += static_cast<size_t>(n);
  }
  OPENSSL_cleanse(line.data(), line.size());
  if (::close(fd) != 0)
    return problem{"nkey seed file " + path + ": " + std::strerror(errno)};
  return std::nullopt;
}

} // namespace georoute
