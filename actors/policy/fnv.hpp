#pragma once

// FNV-1a, 64 bits: the one hash the pure code uses to name things (query
// rows, DISTINCT values) and to check its tokens (query and change-feed
// continuations). Not cryptographic: it catches damage and accidents, not a
// forger who computes it again.

#include <cstdint>
#include <string_view>

namespace georoute {

inline constexpr uint64_t fnv1a64_basis = 14695981039346656037ull;
inline constexpr uint64_t fnv1a64_prime = 1099511628211ull;

/// `h` (a running hash, `fnv1a64_basis` to start) with the bytes of `text`.
constexpr uint64_t fnv1a64(std::string_view text,
                           uint64_t h = fnv1a64_basis) {
  for (unsigned char c : text) {
    h ^= c;
    h *= fnv1a64_prime;
  }
  return h;
}

/// `h` with the eight bytes of `v`, lowest first.
constexpr uint64_t fnv1a64_u64(uint64_t v, uint64_t h) {
  for (int i = 0; i < 8; ++i) {
    h ^= (v >> (8 * i)) & 0xff;
    h *= fnv1a64_prime;
  }
  return h;
}

} // namespace georoute
