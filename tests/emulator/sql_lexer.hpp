#pragma once

// The tokenizer of the emulator's SQL subset. Keywords are recognised case-
// insensitively; identifiers keep their spelling. Strings are single- or
// double-quoted with JSON-style escapes (\" \' \\ \/ \b \f \n \r \t \uXXXX,
// surrogate pairs joined) and must be valid UTF-8. Numbers may carry a sign,
// a fraction and an exponent. `--` starts a comment up to the end of the line.

#include "georoute/actors/policy/result.hpp"

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace georoute::emulator::sql {

enum class token_kind {
  end,        ///< past the last token
  identifier, ///< `text` as written
  keyword,    ///< `text` as written, `keyword` in upper case
  number,     ///< `number`; `text` as written
  string,     ///< `text` decoded
  parameter,  ///< `text` = "@name"
  lparen,
  rparen,
  lbracket,
  rbracket,
  lbrace,
  rbrace,
  comma,
  dot,
  colon,
  star,
  eq, ///< =
  ne, ///< != or <>
  lt,
  le,
  gt,
  ge,
};

struct token {
  token_kind kind = token_kind::end;
  std::string text;
  std::string keyword;   ///< upper case, for keywords
  nlohmann::json number; ///< integer when integral and in range, else double
  size_t pos = 0;        ///< 0-based offset of the first character
};

/// True if `upper` (already upper case) is a reserved word.
bool is_keyword(std::string_view upper);

/// Splits `text` into tokens, the last of kind `end`. On failure a problem
/// "Syntax error at position N: ...".
result<std::vector<token>> tokenize(std::string_view text);

/// "Syntax error at position N: what".
problem syntax_error(size_t pos, const std::string& what);

/// How a token reads in an error message: `'x'`, or "end of query".
std::string describe(const token& t);

} // namespace georoute::emulator::sql
