#include "tests/emulator/sql_lexer.hpp"

#include "georoute/actors/policy/utf8.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>

namespace georoute::emulator::sql {

namespace {

// Reserved words: the clauses of the subset, the literals, and the words of
// constructs it rejects (so that `GROUP BY` fails as "not supported").
constexpr std::array<std::string_view, 29> keywords{
    "AND",   "ARRAY",    "AS",        "ASC",    "BETWEEN", "BY",
    "DESC",  "DISTINCT", "ESCAPE",    "EXISTS", "FALSE",   "FROM",
    "GROUP", "IN",       "JOIN",      "LIKE",   "LIMIT",   "NOT",
    "NULL",  "OFFSET",   "OR",        "ORDER",  "RANK",    "SELECT",
    "TOP",   "TRUE",     "UNDEFINED", "VALUE",  "WHERE",
};

bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

bool is_ident_char(char c) {
  return is_ident_start(c) || is_digit(c);
}

std::string to_upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  return out;
}

/// Length of the valid UTF-8 sequence at text[i], or 0 if invalid.
size_t utf8_length(std::string_view text, size_t i) {
  if (static_cast<unsigned char>(text[i]) < 0x80) return 1;
  return utf8_sequence_length(text.substr(i));
}

class lexer {
public:
  explicit lexer(std::string_view text) : text_(text) {}

  result<std::vector<token>> run() {
    std::vector<token> out;
    for (;;) {
      skip_blanks();
      if (i_ >= text_.size()) break;
      auto t = next();
      if (!t) return t.error();
      out.push_back(std::move(*t));
    }
    token end;
    end.pos = text_.size();
    out.push_back(std::move(end));
    return out;
  }

private:
  void skip_blanks() {
    while (i_ < text_.size()) {
      char c = text_[i_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
          c == '\v') {
        ++i_;
      } else if (c == '-' && i_ + 1 < text_.size() && text_[i_ + 1] == '-') {
        while (i_ < text_.size() && text_[i_] != '\n')
          ++i_;
      } else {
        break;
      }
    }
  }

  token simple(token_kind kind, size_t len) {
    token t;
    t.kind = kind;
    t.pos = i_;
    t.text = std::string(text_.substr(i_, len));
    i_ += len;
    return t;
  }

  char peek(size_t ahead) const {
    return i_ + ahead < text_.size() ? text_[i_ + ahead] : '\0';
  }

  result<token> next() {
    char c = text_[i_];
    switch (c) {
    case '(':
      return simple(token_kind::lparen, 1);
    case ')':
      return simple(token_kind::rparen, 1);
    case '[':
      return simple(token_kind::lbracket, 1);
    case ']':
      return simple(token_kind::rbracket, 1);
    case '{':
      return simple(token_kind::lbrace, 1);
    case '}':
      return simple(token_kind::rbrace, 1);
    case ',':
      return simple(token_kind::comma, 1);
    case ':':
      return simple(token_kind::colon, 1);
    case '*':
      return simple(token_kind::star, 1);
    case '=':
      return simple(token_kind::eq, 1);
    case '!':
      if (peek(1) == '=') return simple(token_kind::ne, 2);
      break;
    case '<':
      if (peek(1) == '>') return simple(token_kind::ne, 2);
      if (peek(1) == '=') return simple(token_kind::le, 2);
      return simple(token_kind::lt, 1);
    case '>':
      if (peek(1) == '=') return simple(token_kind::ge, 2);
      return simple(token_kind::gt, 1);
    case '.':
      if (is_digit(peek(1))) return number();
      return simple(token_kind::dot, 1);
    case '-':
      if (is_digit(peek(1)) || (peek(1) == '.' && is_digit(peek(2))))
        return number();
      break;
    case '\'':
    case '"':
      return string();
    case '@':
      return parameter();
    default:
      if (is_digit(c)) return number();
      if (is_ident_start(c)) return word();
    }
    if (static_cast<unsigned char>(c) >= 0x80 || c < 0x20)
      return syntax_error(i_, "unexpected character");
    return syntax_error(i_, std::string("unexpected character '") + c + "'");
  }

  result<token> word() {
    size_t start = i_;
    while (i_ < text_.size() && is_ident_char(text_[i_]))
      ++i_;
    token t;
    t.pos = start;
    t.text = std::string(text_.substr(start, i_ - start));
    auto upper = to_upper(t.text);
    if (is_keyword(upper)) {
      t.kind = token_kind::keyword;
      t.keyword = std::move(upper);
    } else {
      t.kind = token_kind::identifier;
    }
    return t;
  }

  result<token> parameter() {
    size_t start = i_++;
    if (i_ >= text_.size() || !is_ident_start(text_[i_]))
      return syntax_error(start, "expected a parameter name after '@'");
    while (i_ < text_.size() && is_ident_char(text_[i_]))
      ++i_;
    token t;
    t.kind = token_kind::parameter;
    t.pos = start;
    t.text = std::string(text_.substr(start, i_ - start));
    return t;
  }

  result<token> number() {
    size_t start = i_;
    bool integral = true;
    if (text_[i_] == '-') ++i_;
    while (i_ < text_.size() && is_digit(text_[i_]))
      ++i_;
    if (i_ < text_.size() && text_[i_] == '.') {
      integral = false;
      ++i_;
      while (i_ < text_.size() && is_digit(text_[i_]))
        ++i_;
    }
    if (i_ < text_.size() && (text_[i_] == 'e' || text_[i_] == 'E')) {
      integral = false;
      ++i_;
      if (i_ < text_.size() && (text_[i_] == '+' || text_[i_] == '-')) ++i_;
      if (i_ >= text_.size() || !is_digit(text_[i_]))
        return syntax_error(start, "malformed number");
      while (i_ < text_.size() && is_digit(text_[i_]))
        ++i_;
    }
    if (i_ < text_.size() && is_ident_char(text_[i_]))
      return syntax_error(start, "malformed number");
    token t;
    t.kind = token_kind::number;
    t.pos = start;
    t.text = std::string(text_.substr(start, i_ - start));
    if (integral) {
      errno = 0;
      char* end = nullptr;
      long long v = std::strtoll(t.text.c_str(), &end, 10);
      if (errno == 0 && end && *end == '\0') {
        t.number = static_cast<int64_t>(v);
        return t;
      }
    }
    errno = 0;
    double d = std::strtod(t.text.c_str(), nullptr);
    if (!std::isfinite(d)) return syntax_error(start, "number out of range");
    t.number = d;
    return t;
  }

  static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  /// Reads 4 hex digits at i_; -1 if malformed.
  long hex4() {
    if (i_ + 4 > text_.size()) return -1;
    long v = 0;
    for (size_t k = 0; k < 4; ++k) {
      int h = hex_value(text_[i_ + k]);
      if (h < 0) return -1;
      v = v * 16 + h;
    }
    i_ += 4;
    return v;
  }

  result<token> string() {
    size_t start = i_;
    char quote = text_[i_++];
    std::string out;
    for (;;) {
      if (i_ >= text_.size())
        return syntax_error(start, "unterminated string literal");
      char c = text_[i_];
      if (c == quote) {
        ++i_;
        break;
      }
      if (c == '\\') {
        size_t esc = i_++;
        if (i_ >= text_.size())
          return syntax_error(start, "unterminated string literal");
        char e = text_[i_++];
        switch (e) {
        case '"':
        case '\'':
        case '\\':
        case '/':
          out.push_back(e);
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
          long cp = hex4();
          if (cp < 0) return syntax_error(esc, "malformed \\u escape");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            long low = -1;
            if (i_ + 1 < text_.size() && text_[i_] == '\\' &&
                text_[i_ + 1] == 'u') {
              i_ += 2;
              low = hex4();
            }
            if (low < 0xDC00 || low > 0xDFFF)
              return syntax_error(esc, "unpaired surrogate in \\u escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return syntax_error(esc, "unpaired surrogate in \\u escape");
          }
          append_utf8(out, static_cast<uint32_t>(cp));
          break;
        }
        default:
          return syntax_error(esc, "invalid escape sequence");
        }
        continue;
      }
      size_t len = utf8_length(text_, i_);
      if (len == 0) return syntax_error(i_, "invalid UTF-8 in string literal");
      out.append(text_.substr(i_, len));
      i_ += len;
    }
    token t;
    t.kind = token_kind::string;
    t.pos = start;
    t.text = std::move(out);
    return t;
  }

  std::string_view text_;
  size_t i_ = 0;
};

} // namespace

bool is_keyword(std::string_view upper) {
  return std::find(keywords.begin(), keywords.end(), upper) != keywords.end();
}

result<std::vector<token>> tokenize(std::string_view text) {
  return lexer{text}.run();
}

problem syntax_error(size_t pos, const std::string& what) {
  return problem{"Syntax error at position " + std::to_string(pos) + ": " +
                 what};
}

std::string describe(const token& t) {
  switch (t.kind) {
  case token_kind::end:
    return "end of query";
  case token_kind::string:
    return "string literal";
  default:
    return "'" + t.text + "'";
  }
}

} // namespace georoute::emulator::sql
