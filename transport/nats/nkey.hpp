#pragma once

// NATS user NKeys, made with OpenSSL: cnats can sign with a seed but cannot
// make one. An NKey is an Ed25519 key pair written the way the NATS nkeys
// library writes it: base32 (RFC 4648 alphabet, no padding) of a prefix, the
// 32 key bytes and a CRC-16 (XMODEM: polynomial 0x1021, initial value 0) of
// the prefix and key, stored little-endian.
//
//   public key  "U..." (56 characters): one prefix byte, 20 << 3 ('U'), then
//               the Ed25519 public key
//   seed        "SU..." (58 characters): two prefix bytes that spell 'S'
//               (18 << 3) and the user type (20), then the 32-byte private
//               seed
//
// The seed is the secret: it goes into a file of mode 0600 that only the
// reporter's process reads (nats_channel_options::nkey_seed_file); the
// server's configuration names the public key alone.

#include "georoute/actors/policy/result.hpp"

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace georoute {

/// A user NKey, encoded.
struct nkey_pair {
  std::string public_key; ///< "U...", what the server's config names
  std::string seed;       ///< "SU...", the secret
};

/// A new random user NKey (OpenSSL's Ed25519 key generation).
result<nkey_pair> generate_user_nkey();

/// The user NKey of the 32-byte Ed25519 private seed `raw`.
result<nkey_pair>
user_nkey_from_raw_seed(const std::array<unsigned char, 32>& raw);

/// The user NKey of an encoded seed "SU...": checks the alphabet, the length,
/// the prefix and the checksum, and derives the public key.
result<nkey_pair> user_nkey_from_seed(std::string_view seed);

/// Whether `key` reads as a user public key: 56 characters of the base32
/// alphabet starting with 'U', with a valid checksum.
bool is_user_public_nkey(std::string_view key);

/// Writes `seed` and a newline to a new file `path` of mode 0600 (refused
/// when the file exists). Nothing on success, else what went wrong.
std::optional<problem> write_nkey_seed_file(const std::string& path,
                                            const std::string& seed);

} // namespace georoute
