#include "georoute/actors/policy/epk.hpp"

#include "georoute/actors/policy/utf8.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <optional>
#include <system_error>
#include <type_traits>

namespace georoute {

// -- MurmurHash3 x64 128 ------------------------------------------------------

namespace {

constexpr uint64_t murmur_c1 = 0x87c37b91114253d5ULL;
constexpr uint64_t murmur_c2 = 0x4cf5ad432745937fULL;

constexpr uint64_t rotl64(uint64_t x, int r) {
  return (x << r) | (x >> (64 - r));
}

constexpr uint64_t fmix64(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 33;
  return k;
}

/// Reads 8 bytes as a little-endian integer. memcpy into bytes and assemble
/// them, so the result does not depend on the host's byte order.
uint64_t load_le64(const char* p) {
  unsigned char b[8];
  std::memcpy(b, p, 8);
  uint64_t x = 0;
  for (int i = 7; i >= 0; --i)
    x = (x << 8) | b[i];
  return x;
}

/// The little-endian value of the `n` (< 8) bytes at `p`.
uint64_t load_le_partial(const char* p, std::size_t n) {
  uint64_t x = 0;
  for (std::size_t i = n; i > 0; --i)
    x = (x << 8) | static_cast<unsigned char>(p[i - 1]);
  return x;
}

uint64_t mix_k1(uint64_t k1) {
  k1 *= murmur_c1;
  k1 = rotl64(k1, 31);
  return k1 * murmur_c2;
}

uint64_t mix_k2(uint64_t k2) {
  k2 *= murmur_c2;
  k2 = rotl64(k2, 33);
  return k2 * murmur_c1;
}

} // namespace

std::array<uint64_t, 2> murmur3_x64_128(std::string_view data, uint64_t seed) {
  const std::size_t len = data.size();
  const std::size_t nblocks = len / 16;
  uint64_t h1 = seed;
  uint64_t h2 = seed;
  for (std::size_t i = 0; i < nblocks; ++i) {
    const char* block = data.data() + i * 16;
    h1 ^= mix_k1(load_le64(block));
    h1 = rotl64(h1, 27);
    h1 += h2;
    h1 = h1 * 5 + 0x52dce729;
    h2 ^= mix_k2(load_le64(block + 8));
    h2 = rotl64(h2, 31);
    h2 += h1;
    h2 = h2 * 5 + 0x38495ab5;
  }
  // The tail: up to 15 bytes, the first 8 into k1 and the rest into k2.
  const char* tail = data.data() + nblocks * 16;
  const std::size_t rest = len & 15;
  if (rest > 8) h2 ^= mix_k2(load_le_partial(tail + 8, rest - 8));
  if (rest > 0)
    h1 ^= mix_k1(load_le_partial(tail, std::min<std::size_t>(rest, 8)));
  h1 ^= static_cast<uint64_t>(len);
  h2 ^= static_cast<uint64_t>(len);
  h1 += h2;
  h2 += h1;
  h1 = fmix64(h1);
  h2 = fmix64(h2);
  h1 += h2;
  h2 += h1;
  return {h1, h2};
}

// -- EPK V2 -------------------------------------------------------------------

namespace {

constexpr char hex_digits[] = "0123456789ABCDEF";

void encode_into(std::string& out, const pk_component& c) {
  std::visit(
      [&out](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          out.push_back('\x08');
          out += v;
          out.push_back('\xFF');
        } else if constexpr (std::is_same_v<T, double>) {
          out.push_back('\x05');
          uint64_t bits = 0;
          static_assert(sizeof bits == sizeof v);
          std::memcpy(&bits, &v, sizeof bits);
          for (int i = 0; i < 8; ++i)
            out.push_back(static_cast<char>((bits >> (8 * i)) & 0xFF));
        } else if constexpr (std::is_same_v<T, bool>) {
          out.push_back(v ? '\x03' : '\x02');
        } else if constexpr (std::is_same_v<T, pk_null>) {
          out.push_back('\x01');
        } else {
          static_assert(std::is_same_v<T, pk_undefined>);
          out.push_back('\x00');
        }
      },
      c);
}

/// Steps 2-5: hash, (h1 LE, h2 LE) reversed = h2 big-endian then h1
/// big-endian, top two bits cleared, uppercase hex.
void hash_into(std::string& out, std::string_view bytes) {
  const auto h = murmur3_x64_128(bytes, 0);
  const uint64_t words[2] = {h[1], h[0]};
  bool first = true;
  for (uint64_t w : words) {
    for (int shift = 56; shift >= 0; shift -= 8) {
      auto b = static_cast<unsigned>((w >> shift) & 0xFF);
      if (first) {
        b &= 0x3F;
        first = false;
      }
      out.push_back(hex_digits[b >> 4]);
      out.push_back(hex_digits[b & 0xF]);
    }
  }
}

} // namespace

std::string encode_for_hashing_v2(const pk_component& component) {
  std::string out;
  encode_into(out, component);
  return out;
}

std::string epk_v2(const std::vector<pk_component>& key) {
  if (key.empty()) return std::string{epk_min};
  std::string bytes;
  for (const auto& c : key)
    encode_into(bytes, c);
  std::string out;
  out.reserve(32);
  hash_into(out, bytes);
  return out;
}

std::string epk_v2_multihash(const std::vector<pk_component>& key) {
  std::string out;
  out.reserve(32 * key.size());
  for (const auto& c : key)
    hash_into(out, encode_for_hashing_v2(c));
  return out;
}

int epk_compare(std::string_view a, std::string_view b) {
  const std::size_t n = std::max(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) {
    const char x = i < a.size() ? a[i] : '0';
    const char y = i < b.size() ? b[i] : '0';
    if (x != y)
      return static_cast<unsigned char>(x) < static_cast<unsigned char>(y) ? -1
                                                                           : 1;
  }
  return 0;
}

// -- Partition-key header parser ----------------------------------------------

namespace {

class pk_parser {
public:
  explicit pk_parser(std::string_view text) : text_(text) {}

  result<std::vector<pk_component>> run() {
    std::vector<pk_component> out;
    skip_ws();
    if (!eat('['))
      return fail("expected '[' (a partition key is a JSON array)");
    skip_ws();
    if (eat(']')) return finish(std::move(out));
    for (;;) {
      if (out.size() == max_pk_components)
        return fail("expected ']': a partition key has at most " +
                    std::to_string(max_pk_components) + " components");
      auto c = component();
      if (!c) return c.error();
      out.push_back(std::move(*c));
      skip_ws();
      if (eat(']')) return finish(std::move(out));
      if (!eat(',')) return fail("expected ',' or ']'");
      skip_ws();
    }
  }

private:
  result<std::vector<pk_component>> finish(std::vector<pk_component> out) {
    skip_ws();
    if (pos_ != text_.size())
      return fail("expected the end of the text after ']'");
    return out;
  }

  result<pk_component> component() {
    if (at_end())
      return fail("expected a component (string, number, true, false, null "
                  "or {})");
    switch (peek()) {
    case '"': {
      auto s = string_value();
      if (!s) return s.error();
      return pk_component{std::move(*s)};
    }
    case 't':
      return literal("true", pk_component{true});
    case 'f':
      return literal("false", pk_component{false});
    case 'n':
      return literal("null", pk_component{pk_null{}});
    case '{':
      ++pos_;
      skip_ws();
      if (!eat('}'))
        return fail("expected '}': only the empty object {} (undefined) "
                    "is a partition-key component");
      return pk_component{pk_undefined{}};
    case '[':
      return fail("expected a component, not a nested array");
    default:
      if (peek() == '-' || (peek() >= '0' && peek() <= '9')) return number();
      return fail("expected a component (string, number, true, false, null "
                  "or {})");
    }
  }

  result<pk_component> literal(std::string_view word, pk_component value) {
    if (text_.substr(pos_, word.size()) != word)
      return fail("expected '" + std::string{word} + "'");
    pos_ += word.size();
    return value;
  }

  /// JSON number grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
  result<pk_component> number() {
    const std::size_t start = pos_;
    eat('-');
    if (eat('0')) {
      // a leading zero stands alone
    } else if (!digits()) {
      return fail("expected a digit");
    }
    if (eat('.') && !digits()) return fail("expected a digit after '.'");
    if (eat('e') || eat('E')) {
      if (!eat('+')) eat('-');
      if (!digits()) return fail("expected a digit in the exponent");
    }
    const char* first = text_.data() + start;
    const char* last = text_.data() + pos_;
    double value = 0;
    auto [ptr, ec] = std::from_chars(first, last, value);
    if (ec == std::errc::result_out_of_range) {
      // Too small rounds to zero, as JSON readers do; too large is an error.
      if (!below_one({first, static_cast<std::size_t>(last - first)}))
        return fail_at(start, "expected a number within double range, got " +
                                  std::string{first, last});
      return pk_component{*first == '-' ? -0.0 : 0.0};
    }
    if (ec != std::errc{} || ptr != last)
      return fail_at(start, "expected a number");
    return pk_component{value};
  }

  /// Whether the magnitude of a validated, non-zero JSON number token is
  /// below 1 (its decimal order of magnitude is negative).
  static bool below_one(std::string_view token) {
    if (token.front() == '-') token.remove_prefix(1);
    const std::size_t e = token.find_first_of("eE");
    long long exponent = 0;
    if (e != std::string_view::npos) {
      std::size_t i = e + 1;
      const bool negative = token[i] == '-';
      if (token[i] == '-' || token[i] == '+') ++i;
      for (; i < token.size() && exponent < 1000000; ++i)
        exponent = exponent * 10 + (token[i] - '0');
      if (negative) exponent = -exponent;
    }
    const std::string_view mantissa = token.substr(0, e);
    const std::size_t dot = mantissa.find('.');
    const std::string_view int_part = mantissa.substr(0, dot);
    if (int_part != "0")
      return static_cast<long long>(int_part.size()) - 1 + exponent < 0;
    if (dot == std::string_view::npos) return true;
    const std::size_t nz = mantissa.find_first_not_of('0', dot + 1);
    if (nz == std::string_view::npos) return true;
    return -static_cast<long long>(nz - dot) + exponent < 0;
  }

  bool digits() {
    const std::size_t start = pos_;
    while (!at_end() && peek() >= '0' && peek() <= '9')
      ++pos_;
    return pos_ > start;
  }

  result<std::string> string_value() {
    ++pos_; // the opening quote
    std::string out;
    for (;;) {
      if (at_end()) return fail("expected '\"' to close the string");
      const char c = peek();
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c == '\\') {
        if (auto p = escape(out)) return *p;
        continue;
      }
      const auto u = static_cast<unsigned char>(c);
      if (u < 0x20)
        return fail("expected a printable character (control characters "
                    "must be escaped in a string)");
      if (u < 0x80) {
        out.push_back(c);
        ++pos_;
        continue;
      }
      const std::size_t n = utf8_sequence_length(text_.substr(pos_));
      if (n == 0) return fail("expected well-formed UTF-8");
      out.append(text_.substr(pos_, n));
      pos_ += n;
    }
  }

  /// Decodes the escape at pos_ into `out`; nothing on success.
  std::optional<problem> escape(std::string& out) {
    const std::size_t start = pos_;
    ++pos_; // the backslash
    if (at_end()) return fail("expected an escape character after '\\'");
    const char c = text_[pos_++];
    switch (c) {
    case '"':
    case '\\':
    case '/':
      out.push_back(c);
      return std::nullopt;
    case 'b':
      out.push_back('\b');
      return std::nullopt;
    case 'f':
      out.push_back('\f');
      return std::nullopt;
    case 'n':
      out.push_back('\n');
      return std::nullopt;
    case 'r':
      out.push_back('\r');
      return std::nullopt;
    case 't':
      out.push_back('\t');
      return std::nullopt;
    case 'u':
      break;
    default:
      return fail_at(start, "expected one of \\\" \\\\ \\/ \\b \\f \\n \\r "
                            "\\t \\uXXXX");
    }
    uint32_t cp = 0;
    if (!hex4(cp)) return fail("expected 4 hex digits after \\u");
    if (cp >= 0xDC00 && cp <= 0xDFFF)
      return fail_at(start, "expected a high surrogate before low surrogate "
                            "\\u" +
                                hex_of(cp));
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      const std::size_t low_start = pos_;
      uint32_t low = 0;
      if (!(eat('\\') && eat('u') && hex4(low) && low >= 0xDC00 &&
            low <= 0xDFFF))
        return fail_at(low_start, "expected a low surrogate \\uDC00-\\uDFFF "
                                  "after high surrogate \\u" +
                                      hex_of(cp));
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    append_utf8(out, cp);
    return std::nullopt;
  }

  bool hex4(uint32_t& cp) {
    if (text_.size() - pos_ < 4) return false;
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_ + i];
      v <<= 4;
      if (c >= '0' && c <= '9')
        v |= static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f')
        v |= static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        v |= static_cast<uint32_t>(c - 'A' + 10);
      else
        return false;
    }
    pos_ += 4;
    cp = v;
    return true;
  }

  static std::string hex_of(uint32_t cp) {
    std::string s(4, '0');
    for (int i = 3; i >= 0; --i, cp >>= 4)
      s[i] = hex_digits[cp & 0xF];
    return s;
  }

  void skip_ws() {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\n' ||
                         peek() == '\r'))
      ++pos_;
  }

  bool eat(char c) {
    if (at_end() || peek() != c) return false;
    ++pos_;
    return true;
  }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return text_[pos_]; }

  problem fail(const std::string& what) const { return fail_at(pos_, what); }

  problem fail_at(std::size_t at, const std::string& what) const {
    return problem{"partition key JSON at offset " + std::to_string(at) + ": " +
                   what};
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

} // namespace

result<std::vector<pk_component>>
parse_partition_key_json(std::string_view text) {
  return pk_parser{text}.run();
}

result<std::string> epk_for(const partition_key_definition& def,
                            std::string_view key_json) {
  auto key = parse_partition_key_json(key_json);
  if (!key) return key.error();
  if (def.kind == "MultiHash") return epk_v2_multihash(*key);
  if (def.version != 2)
    return problem{"the collection uses hash version " +
                   std::to_string(def.version) +
                   "; georoute supports version 2"};
  return epk_v2(*key);
}

} // namespace georoute
