#pragma once

// Keys and the reference date shared by the auth tests.

#include "georoute/transport/auth.hpp"

#include <chrono>
#include <gtest/gtest.h>

namespace georoute::test {

// The public, well-known Cosmos DB emulator key (not a secret).
constexpr const char* emulator_key =
    "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEc"
    "aGQy67XIw/Jw==";

// base64("secret-key-1"), a second key so that a wrong key is detectable.
constexpr const char* other_key = "c2VjcmV0LWtleS0x";

constexpr const char* date = "Sun, 29 Nov 2026 18:59:20 GMT";

// `date` as a time point:
//   node -e 'console.log(Date.UTC(2026,10,29,18,59,20)/1000)'
inline const auto date_tp =
    std::chrono::system_clock::time_point{std::chrono::seconds{1795978760}};

inline transport::master_key key(const char* text) {
  auto k = transport::parse_master_key(text);
  EXPECT_TRUE(k.ok());
  return k ? *k : transport::master_key{{}};
}

} // namespace georoute::test
