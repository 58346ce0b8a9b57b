#include "georoute/actors/policy/json_check.hpp"

#include "georoute/actors/policy/utf8.hpp"

#include <bitset>
#include <cmath>
#include <cstdint>
#include <cstdlib>

namespace georoute {

namespace {

class scanner {
public:
  explicit scanner(std::string_view text) : s_(text) {}

  bool document(char open) {
    skip_ws();
    if (at_end() || s_[i_] != open) return false;
    if (!value()) return false;
    skip_ws();
    return at_end();
  }

private:
  bool at_end() const { return i_ >= s_.size(); }
  uint8_t byte(size_t k) const { return static_cast<uint8_t>(s_[k]); }

  void skip_ws() {
    while (!at_end() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' ||
                         s_[i_] == '\r'))
      ++i_;
  }

  bool literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) return false;
    i_ += word.size();
    return true;
  }

  static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // Four hex digits after "\u"; the code unit, or -1.
  long unit() {
    if (i_ + 4 > s_.size()) return -1;
    long v = 0;
    for (size_t k = 0; k < 4; ++k) {
      int d = hex(s_[i_ + k]);
      if (d < 0) return -1;
      v = v * 16 + d;
    }
    i_ += 4;
    return v;
  }

  bool continuation(uint8_t lo = 0x80, uint8_t hi = 0xBF) {
    if (at_end() || byte(i_) < lo || byte(i_) > hi) return false;
    ++i_;
    return true;
  }

  // One UTF-8 sequence whose lead byte is at i_ (>= 0x80).
  bool utf8() {
    uint8_t b = byte(i_++);
    if (b >= 0xC2 && b <= 0xDF) return continuation();
    if (b == 0xE0) return continuation(0xA0, 0xBF) && continuation();
    if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF)
      return continuation() && continuation();
    if (b == 0xED) return continuation(0x80, 0x9F) && continuation();
    if (b == 0xF0)
      return continuation(0x90, 0xBF) && continuation() && continuation();
    if (b >= 0xF1 && b <= 0xF3)
      return continuation() && continuation() && continuation();
    if (b == 0xF4)
      return continuation(0x80, 0x8F) && continuation() && continuation();
    return false;
  }

  // A string; i_ is at the opening quote.
  bool string() {
    ++i_;
    while (!at_end()) {
      uint8_t b = byte(i_);
      if (b == '"') {
        ++i_;
        return true;
      }
      if (b < 0x20) return false;
      if (b >= 0x80) {
        if (!utf8()) return false;
        continue;
      }
      ++i_;
      if (b != '\\') continue;
      if (at_end()) return false;
      char e = s_[i_++];
      if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' ||
          e == 'n' || e == 'r' || e == 't')
        continue;
      if (e != 'u') return false;
      long u = unit();
      if (u < 0) return false;
      if (u >= 0xDC00 && u <= 0xDFFF) return false; // a lone low surrogate
      if (u >= 0xD800 && u <= 0xDBFF) {
        // A high surrogate must be followed by "\u" and a low one.
        if (!literal("\\u")) return false;
        long lo = unit();
        if (lo < 0xDC00 || lo > 0xDFFF) return false;
      }
    }
    return false;
  }

  bool digits() {
    size_t start = i_;
    while (!at_end() && s_[i_] >= '0' && s_[i_] <= '9')
      ++i_;
    return i_ > start;
  }

  // A number; nlohmann also refuses one that overflows a double, so a
  // number that might is checked with strtod (or, if too long for that,
  // left to nlohmann).
  bool number() {
    size_t start = i_;
    if (s_[i_] == '-') ++i_;
    if (at_end()) return false;
    if (s_[i_] == '0') {
      ++i_;
    } else if (s_[i_] >= '1' && s_[i_] <= '9') {
      digits();
    } else {
      return false;
    }
    if (!at_end() && s_[i_] == '.') {
      ++i_;
      if (!digits()) return false;
    }
    bool exponent = !at_end() && (s_[i_] == 'e' || s_[i_] == 'E');
    if (exponent) {
      ++i_;
      if (!at_end() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (!digits()) return false;
    }
    // Without an exponent, up to 300 characters cannot pass DBL_MAX.
    if (!exponent && i_ - start <= 300) return true;
    char buf[64];
    if (i_ - start >= sizeof(buf)) return false;
    s_.copy(buf, i_ - start, start);
    buf[i_ - start] = '\0';
    return std::isfinite(std::strtod(buf, nullptr));
  }

  // A scalar at i_ (not an object or array).
  bool scalar() {
    switch (s_[i_]) {
    case '"':
      return string();
    case 't':
      return literal("true");
    case 'f':
      return literal("false");
    case 'n':
      return literal("null");
    default:
      return number();
    }
  }

  // One value at i_ (after whitespace), iteratively: `in_object_` records,
  // per open container, whether it is an object.
  bool value() {
    size_t depth = 0;
    for (;;) {
      // A value is expected here.
      skip_ws();
      if (at_end()) return false;
      char c = s_[i_];
      if (c == '{' || c == '[') {
        ++i_;
        skip_ws();
        if (at_end()) return false;
        if (s_[i_] == (c == '{' ? '}' : ']')) {
          ++i_; // empty container: a complete value
        } else {
          if (depth == json_check_max_depth) return false;
          in_object_[depth++] = c == '{';
          if (c == '{' && !member_name()) return false;
          continue; // its first value
        }
      } else if (!scalar()) {
        return false;
      }
      // A value is complete: close containers or move to the next element.
      for (;;) {
        if (depth == 0) return true;
        skip_ws();
        if (at_end()) return false;
        char n = s_[i_];
        bool object = in_object_[depth - 1];
        if (n == ',') {
          ++i_;
          if (object) {
            skip_ws();
            if (at_end() || !member_name()) return false;
          }
          break; // the next value
        }
        if (n != (object ? '}' : ']')) return false;
        ++i_;
        --depth;
      }
    }
  }

  // `"name" :` at i_.
  bool member_name() {
    if (at_end() || s_[i_] != '"' || !string()) return false;
    skip_ws();
    if (at_end() || s_[i_] != ':') return false;
    ++i_;
    return true;
  }

  std::string_view s_;
  size_t i_ = 0;
  std::bitset<json_check_max_depth> in_object_;
};

} // namespace

bool is_json_object_text(std::string_view text) {
  return scanner{text}.document('{');
}

bool is_json_array_text(std::string_view text) {
  return scanner{text}.document('[');
}

size_t json_skip_ws(std::string_view text, size_t pos) {
  while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' ||
                               text[pos] == '\n' || text[pos] == '\r'))
    ++pos;
  return pos;
}

size_t json_value_end(std::string_view text, size_t pos) {
  size_t depth = 0;
  bool in_string = false;
  for (; pos < text.size(); ++pos) {
    char c = text[pos];
    if (in_string) {
      if (c == '\\') {
        ++pos;
      } else if (c == '"') {
        in_string = false;
        if (depth == 0) return pos + 1;
      }
      continue;
    }
    switch (c) {
    case '"':
      in_string = true;
      break;
    case '{':
    case '[':
      ++depth;
      break;
    case '}':
    case ']':
      if (depth == 0) return pos; // a scalar ended by its container
      if (--depth == 0) return pos + 1;
      break;
    case ',':
    case ':':
    case ' ':
    case '\t':
    case '\n':
    case '\r':
      if (depth == 0) return pos; // a scalar's end
      break;
    default:
      break;
    }
  }
  return text.size();
}

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Four hex digits at `at`; the code unit, or -1.
long hex_unit(std::string_view s, size_t at) {
  if (at + 4 > s.size()) return -1;
  long v = 0;
  for (size_t k = 0; k < 4; ++k) {
    int d = hex_digit(s[at + k]);
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

} // namespace

bool json_string_value(std::string_view token, std::string& out) {
  if (token.size() < 2 || token.front() != '"' || token.back() != '"')
    return false;
  auto body = token.substr(1, token.size() - 2);
  out.clear();
  if (body.find('\\') == std::string_view::npos) {
    out.assign(body);
    return true;
  }
  out.reserve(body.size());
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c != '\\') {
      out.push_back(c);
      continue;
    }
    if (++i >= body.size()) return false;
    switch (body[i]) {
    case '"':
    case '\\':
    case '/':
      out.push_back(body[i]);
      break;
    case 'b':
      out.push_back('\b');
      break;
    case 'f':
      out.push_back('\f');
      break;
    case 'n':
      out.push_back('\n');
      break;
    case 'r':
      out.push_back('\r');
      break;
    case 't':
      out.push_back('\t');
      break;
    case 'u': {
      long u = hex_unit(body, i + 1);
      if (u < 0) return false;
      i += 4;
      uint32_t cp = static_cast<uint32_t>(u);
      if (u >= 0xD800 && u <= 0xDBFF) {
        if (i + 2 >= body.size() || body[i + 1] != '\\' || body[i + 2] != 'u')
          return false;
        long lo = hex_unit(body, i + 3);
        if (lo < 0xDC00 || lo > 0xDFFF) return false;
        i += 6;
        cp = 0x10000 + ((static_cast<uint32_t>(u) - 0xD800) << 10) +
             (static_cast<uint32_t>(lo) - 0xDC00);
      } else if (u >= 0xDC00 && u <= 0xDFFF) {
        return false;
      }
      append_utf8(out, cp);
      break;
    }
    default:
      return false;
    }
  }
  return true;
}

bool append_json_string(std::string& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  auto mark = out.size();
  out.reserve(out.size() + s.size() + 2);
  out.push_back('"');
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<uint8_t>(s[i]);
    if (c >= 0x80) {
      auto n = utf8_sequence_length(s.substr(i));
      if (n == 0) {
        out.resize(mark);
        return false;
      }
      out.append(s.substr(i, n));
      i += n;
      continue;
    }
    ++i;
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\f':
      out += "\\f";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (c < 0x20) {
        out += "\\u00";
        out.push_back(hex[c >> 4]);
        out.push_back(hex[c & 0xF]);
      } else {
        out.push_back(static_cast<char>(c));
      }
    }
  }
  out.push_back('"');
  return true;
}

} // namespace georoute
