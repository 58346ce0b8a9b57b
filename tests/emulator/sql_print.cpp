// The canonical printer of the SQL subset, in the style of the service's
// rewritten queries: every binary operator in parentheses, string literals
// double-quoted with JSON escapes, `c["x"]` kept as written. Its output parses
// back to the same tree (tested), which the rewritten queries of a plan rely
// on.

#include "tests/emulator/sql_ast.hpp"
#include "tests/emulator/sql_lexer.hpp"

#include <string>

namespace georoute::emulator::sql {

namespace {

const char* op_text(binary_op op) {
  switch (op) {
  case binary_op::eq:
    return "=";
  case binary_op::ne:
    return "!=";
  case binary_op::lt:
    return "<";
  case binary_op::le:
    return "<=";
  case binary_op::gt:
    return ">";
  case binary_op::ge:
    return ">=";
  case binary_op::logical_and:
    return "AND";
  case binary_op::logical_or:
    return "OR";
  }
  return "?";
}

bool plain_identifier(const std::string& s) {
  if (s.empty()) return false;
  auto first = s[0];
  if (!((first >= 'a' && first <= 'z') || (first >= 'A' && first <= 'Z') ||
        first == '_'))
    return false;
  std::string upper;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
    upper.push_back(c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A')
                                         : c);
  }
  return !is_keyword(upper);
}

std::string dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void print_to(std::string& out, const expr& e) {
  switch (e.kind) {
  case expr_kind::literal:
    out += dump(e.literal);
    return;
  case expr_kind::parameter:
  case expr_kind::root:
    out += e.name;
    return;
  case expr_kind::property: {
    // `31.n` would lex as a malformed number: write `(31).n` (tests/fuzz).
    const auto& base = *e.operands[0];
    bool number = base.kind == expr_kind::literal && base.literal.is_number();
    if (number) out += '(';
    print_to(out, base);
    if (number) out += ')';
    if (!e.bracket && plain_identifier(e.name)) {
      out += '.';
      out += e.name;
    } else {
      out += '[';
      out += quote(e.name);
      out += ']';
    }
    return;
  }
  case expr_kind::index:
    print_to(out, *e.operands[0]);
    out += '[';
    print_to(out, *e.operands[1]);
    out += ']';
    return;
  case expr_kind::object:
    out += '{';
    for (size_t i = 0; i < e.operands.size(); ++i) {
      if (i > 0) out += ", ";
      out += quote(e.keys[i]);
      out += ": ";
      print_to(out, *e.operands[i]);
    }
    out += '}';
    return;
  case expr_kind::array:
    out += '[';
    for (size_t i = 0; i < e.operands.size(); ++i) {
      if (i > 0) out += ", ";
      print_to(out, *e.operands[i]);
    }
    out += ']';
    return;
  case expr_kind::logical_not:
    out += "(NOT ";
    print_to(out, *e.operands[0]);
    out += ')';
    return;
  case expr_kind::binary:
    out += '(';
    print_to(out, *e.operands[0]);
    out += ' ';
    out += op_text(e.op);
    out += ' ';
    print_to(out, *e.operands[1]);
    out += ')';
    return;
  case expr_kind::call:
  case expr_kind::aggregate:
    out += e.name;
    out += '(';
    print_to(out, *e.operands[0]);
    out += ')';
    return;
  }
}

} // namespace

std::string print(const expr& e) {
  std::string out;
  print_to(out, e);
  return out;
}

std::string quote(const std::string& s) {
  return dump(nlohmann::json(s));
}

std::string print_from(const query& q) {
  if (q.alias.empty()) return q.collection;
  return q.collection + " AS " + q.alias;
}

} // namespace georoute::emulator::sql
