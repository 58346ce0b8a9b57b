#pragma once

// UTF-8: encoding one code point, shared by the partition-key parser, the
// JSON walker and the emulator's SQL lexer (all decode \uXXXX escapes), and
// the length of one well-formed sequence.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace georoute {

/// Appends the UTF-8 encoding of `cp` (at most U+10FFFF) to `out`.
inline void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

/// The length of the well-formed multi-byte UTF-8 sequence at the start of
/// `s`, or 0 (also for an ASCII byte or an empty `s`).
/// Rejects overlong forms, surrogates and code points above U+10FFFF.
inline std::size_t utf8_sequence_length(std::string_view s) {
  if (s.empty()) return 0;
  auto byte = [&s](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char b0 = byte(0);
  std::size_t n = 0;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) lo = 0xA0; // overlong
    if (b0 == 0xED) hi = 0x9F; // surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) lo = 0x90; // overlong
    if (b0 == 0xF4) hi = 0x8F; // above U+10FFFF
  } else {
    return 0;
  }
  if (s.size() < n) return 0;
  if (byte(1) < lo || byte(1) > hi) return 0;
  for (std::size_t i = 2; i < n; ++i)
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  return n;
}

} // namespace georoute
