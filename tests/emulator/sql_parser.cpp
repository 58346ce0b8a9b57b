// The recursive-descent parser (grammar in sql.hpp). Precedence, loosest
// first: OR, AND, NOT, comparisons (left-associative), then member access
// (`.name`, `["name"]`, `[0]`, `[@p]`) on a primary (literal, parameter, the
// root alias, a function call, `( expr )`, `{...}`, `[...]`). Every node
// records the offset of its first character for error messages; recursion
// and tree height are bounded by `max_depth`.

#include "tests/emulator/sql_parser.hpp"

#include "tests/emulator/sql.hpp"
#include "tests/emulator/sql_lexer.hpp"

#include <algorithm>
#include <utility>

namespace georoute::emulator::sql {

namespace {

struct function_info {
  std::string_view name;
  bool is_aggregate;
  aggregate_fn aggregate;
};

constexpr function_info functions[] = {
    {"COUNT", true, aggregate_fn::count},
    {"SUM", true, aggregate_fn::sum},
    {"MIN", true, aggregate_fn::min},
    {"MAX", true, aggregate_fn::max},
    {"AVG", true, aggregate_fn::avg},
    {"IS_DEFINED", false, aggregate_fn::count},
    {"IS_NULL", false, aggregate_fn::count},
    {"IS_BOOL", false, aggregate_fn::count},
    {"IS_NUMBER", false, aggregate_fn::count},
    {"IS_STRING", false, aggregate_fn::count},
    {"IS_ARRAY", false, aggregate_fn::count},
    {"IS_OBJECT", false, aggregate_fn::count},
    {"IS_PRIMITIVE", false, aggregate_fn::count},
};

const function_info* find_function(const std::string& upper) {
  for (const auto& f : functions)
    if (f.name == upper) return &f;
  return nullptr;
}

std::string to_upper(std::string s) {
  for (auto& c : s)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  return s;
}

template <class T>
using res = result<T>;

class parser {
public:
  explicit parser(std::vector<token> toks) : toks_(std::move(toks)) {}

  res<std::unique_ptr<query>> run() {
    auto q = std::make_unique<query>();
    if (!accept_keyword("SELECT")) return unexpected(cur(), "SELECT");
    if (accept_keyword("DISTINCT")) q->distinct = true;
    if (at_keyword("TOP")) {
      ++i_;
      auto c = count("TOP");
      if (!c) return c.error();
      q->top = *c;
    }
    if (auto ok = select_clause(*q); !ok) return ok.error();
    if (!accept_keyword("FROM")) return unexpected(cur(), "FROM");
    if (auto ok = from_clause(*q); !ok) return ok.error();
    if (accept_keyword("WHERE")) {
      auto e = expression();
      if (!e) return e.error();
      q->where = std::move(*e);
    }
    if (at_keyword("ORDER")) {
      ++i_;
      if (!accept_keyword("BY")) return unexpected(cur(), "BY");
      if (auto ok = order_by(*q); !ok) return ok.error();
    }
    if (accept_keyword("OFFSET")) {
      auto off = count("OFFSET");
      if (!off) return off.error();
      if (!accept_keyword("LIMIT")) return unexpected(cur(), "LIMIT");
      auto lim = count("LIMIT");
      if (!lim) return lim.error();
      q->offset = *off;
      q->limit = *lim;
    }
    if (cur().kind != token_kind::end) return unexpected(cur(), "");
    return q;
  }

private:
  // -- tokens -----------------------------------------------------------------

  const token& cur() const { return toks_[i_]; }

  const token& ahead(size_t n) const {
    return toks_[std::min(i_ + n, toks_.size() - 1)];
  }

  bool at(token_kind k) const { return cur().kind == k; }

  bool accept(token_kind k) {
    if (!at(k)) return false;
    ++i_;
    return true;
  }

  bool at_keyword(std::string_view kw) const {
    return cur().kind == token_kind::keyword && cur().keyword == kw;
  }

  bool accept_keyword(std::string_view kw) {
    if (!at_keyword(kw)) return false;
    ++i_;
    return true;
  }

  /// An error for token `t` where `expected` was wanted ("" = nothing more).
  /// Reserved words of unsupported constructs get a precise message.
  static problem unexpected(const token& t, const std::string& expected) {
    if (t.kind == token_kind::keyword) {
      const auto& kw = t.keyword;
      if (kw == "GROUP")
        return syntax_error(t.pos, "GROUP BY is not supported");
      if (kw == "JOIN" || kw == "IN" || kw == "BETWEEN" || kw == "LIKE" ||
          kw == "EXISTS" || kw == "ARRAY" || kw == "UNDEFINED" ||
          kw == "RANK" || kw == "ESCAPE")
        return syntax_error(t.pos, kw + " is not supported");
      if (kw == "SELECT" && !expected.empty())
        return syntax_error(t.pos, "subqueries are not supported");
    }
    if (expected.empty())
      return syntax_error(t.pos, "unexpected " + describe(t));
    return syntax_error(t.pos,
                        "expected " + expected + ", found " + describe(t));
  }

  // -- clauses ----------------------------------------------------------------

  res<count_arg> count(const char* clause) {
    const auto& t = cur();
    count_arg c;
    c.present = true;
    c.pos = t.pos;
    if (t.kind == token_kind::parameter) {
      c.parameter = t.text;
      ++i_;
      return c;
    }
    if (t.kind == token_kind::number && t.number.is_number_integer() &&
        t.number.get<int64_t>() >= 0) {
      c.literal = t.number.get<int64_t>();
      ++i_;
      return c;
    }
    return syntax_error(t.pos, std::string(clause) +
                                   " expects a non-negative integer or a "
                                   "parameter, found " +
                                   describe(t));
  }

  res<bool> select_clause(query& q) {
    if (accept(token_kind::star)) {
      q.select = select_kind::star;
      return true;
    }
    if (accept_keyword("VALUE")) {
      q.select = select_kind::value;
      auto e = expression();
      if (!e) return e.error();
      q.value = std::move(*e);
      return true;
    }
    q.select = select_kind::list;
    int unnamed = 0;
    for (;;) {
      size_t pos = cur().pos;
      auto e = expression();
      if (!e) return e.error();
      select_item item;
      item.e = std::move(*e);
      if (accept_keyword("AS")) {
        if (!at(token_kind::identifier)) return unexpected(cur(), "an alias");
        item.name = cur().text;
        item.has_alias = true;
        ++i_;
      } else if (at(token_kind::identifier)) {
        item.name = cur().text;
        item.has_alias = true;
        ++i_;
      } else if (item.e->kind == expr_kind::property) {
        item.name = item.e->name;
      } else {
        item.name = "$" + std::to_string(++unnamed);
      }
      for (const auto& other : q.items)
        if (other.name == item.name)
          return syntax_error(pos, "duplicate property name '" + item.name +
                                       "' in the select list");
      q.items.push_back(std::move(item));
      if (!accept(token_kind::comma)) break;
    }
    return true;
  }

  res<bool> from_clause(query& q) {
    if (!at(token_kind::identifier)) return unexpected(cur(), "a collection");
    q.collection = cur().text;
    ++i_;
    if (accept_keyword("AS")) {
      if (!at(token_kind::identifier)) return unexpected(cur(), "an alias");
      q.alias = cur().text;
      ++i_;
    } else if (at(token_kind::identifier)) {
      q.alias = cur().text;
      ++i_;
    }
    q.root = q.alias.empty() ? q.collection : q.alias;
    return true;
  }

  res<bool> order_by(query& q) {
    for (;;) {
      size_t pos = cur().pos;
      auto e = expression();
      if (!e) return e.error();
      if (!is_property_path(**e))
        return syntax_error(pos, "ORDER BY supports only property paths");
      order_item item;
      item.e = std::move(*e);
      if (accept_keyword("ASC")) {
        item.explicit_direction = true;
      } else if (accept_keyword("DESC")) {
        item.descending = true;
        item.explicit_direction = true;
      }
      q.order_by.push_back(std::move(item));
      if (!accept(token_kind::comma)) break;
    }
    return true;
  }

  // -- expressions ------------------------------------------------------------

  /// Counts recursion; past `max_depth` the parse fails.
  struct depth_guard {
    explicit depth_guard(int& d) : depth(d) { ++depth; }
    ~depth_guard() { --depth; }
    depth_guard(const depth_guard&) = delete;
    depth_guard& operator=(const depth_guard&) = delete;
    bool too_deep() const { return depth > max_depth; }
    int& depth;
  };

  static res<expr_ptr> node(expr_kind kind, size_t pos,
                            std::vector<expr_ptr> operands = {}) {
    auto e = std::make_unique<expr>();
    e->kind = kind;
    e->pos = pos;
    for (const auto& o : operands)
      e->height = std::max(e->height, o->height + 1);
    if (e->height > max_depth)
      return syntax_error(pos, "expression is nested too deeply");
    e->operands = std::move(operands);
    return e;
  }

  static std::vector<expr_ptr> ops(expr_ptr a, expr_ptr b = nullptr) {
    std::vector<expr_ptr> v;
    v.push_back(std::move(a));
    if (b) v.push_back(std::move(b));
    return v;
  }

  // No depth_guard here: not_expr counts the level. Every cycle of the
  // recursion (parentheses, constructors, call arguments) passes through
  // not_expr once, so a text may nest as deep as the tree printed from it;
  // counting here too would make the printer's fully parenthesized rewrite
  // of a valid query (65 ORs) fail to parse (a case the corpus of
  // tests/fuzz/sql keeps).
  res<expr_ptr> expression() { return or_expr(); }

  res<expr_ptr> binary_chain(std::string_view kw, binary_op op,
                             res<expr_ptr> (parser::*operand)()) {
    auto left = (this->*operand)();
    if (!left) return left;
    while (at_keyword(kw)) {
      size_t pos = (*left)->pos;
      ++i_;
      auto right = (this->*operand)();
      if (!right) return right;
      auto n = node(expr_kind::binary, pos,
                    ops(std::move(*left), std::move(*right)));
      if (!n) return n;
      (*n)->op = op;
      left = std::move(n);
    }
    return left;
  }

  res<expr_ptr> or_expr() {
    return binary_chain("OR", binary_op::logical_or, &parser::and_expr);
  }

  res<expr_ptr> and_expr() {
    return binary_chain("AND", binary_op::logical_and, &parser::not_expr);
  }

  // A run of NOTs is a loop, not a recursion: the printer writes a NOT as
  // "(NOT x)", one level of text per level of the tree, as it does for
  // every operator, so that what it prints parses again. Recursing here
  // would count a printed NOT twice (its parenthesis and itself).
  res<expr_ptr> not_expr() {
    depth_guard guard{depth_};
    if (guard.too_deep())
      return syntax_error(cur().pos, "expression is nested too deeply");
    std::vector<size_t> nots;
    while (at_keyword("NOT")) {
      nots.push_back(cur().pos);
      ++i_;
    }
    auto e = comparison();
    for (auto pos = nots.rbegin(); e && pos != nots.rend(); ++pos)
      e = node(expr_kind::logical_not, *pos, ops(std::move(*e)));
    return e;
  }

  static bool comparison_op(token_kind k, binary_op& op) {
    switch (k) {
    case token_kind::eq:
      op = binary_op::eq;
      return true;
    case token_kind::ne:
      op = binary_op::ne;
      return true;
    case token_kind::lt:
      op = binary_op::lt;
      return true;
    case token_kind::le:
      op = binary_op::le;
      return true;
    case token_kind::gt:
      op = binary_op::gt;
      return true;
    case token_kind::ge:
      op = binary_op::ge;
      return true;
    default:
      return false;
    }
  }

  res<expr_ptr> comparison() {
    auto left = postfix();
    if (!left) return left;
    binary_op op;
    while (comparison_op(cur().kind, op)) {
      size_t pos = (*left)->pos;
      ++i_;
      auto right = postfix();
      if (!right) return right;
      auto n = node(expr_kind::binary, pos,
                    ops(std::move(*left), std::move(*right)));
      if (!n) return n;
      (*n)->op = op;
      left = std::move(n);
    }
    return left;
  }

  res<expr_ptr> postfix() {
    auto base = primary();
    if (!base) return base;
    for (;;) {
      size_t pos = (*base)->pos;
      if (accept(token_kind::dot)) {
        if (!at(token_kind::identifier) && !at(token_kind::keyword))
          return unexpected(cur(), "a property name");
        std::string name = cur().text;
        ++i_;
        auto n = node(expr_kind::property, pos, ops(std::move(*base)));
        if (!n) return n;
        (*n)->name = std::move(name);
        base = std::move(n);
      } else if (at(token_kind::lbracket)) {
        ++i_;
        auto n = subscript(std::move(*base), pos);
        if (!n) return n;
        if (!accept(token_kind::rbracket)) return unexpected(cur(), "']'");
        base = std::move(n);
      } else {
        return base;
      }
    }
  }

  /// After `base[`: a string (property), an integer (index) or a parameter.
  res<expr_ptr> subscript(expr_ptr base, size_t pos) {
    const auto& t = cur();
    if (t.kind == token_kind::string) {
      auto n = node(expr_kind::property, pos, ops(std::move(base)));
      if (!n) return n;
      (*n)->name = t.text;
      (*n)->bracket = true;
      ++i_;
      return n;
    }
    if (t.kind == token_kind::parameter ||
        (t.kind == token_kind::number && t.number.is_number_integer() &&
         t.number.get<int64_t>() >= 0)) {
      auto index = node(t.kind == token_kind::number ? expr_kind::literal
                                                     : expr_kind::parameter,
                        t.pos);
      if (!index) return index;
      if (t.kind == token_kind::number)
        (*index)->literal = t.number;
      else
        (*index)->name = t.text;
      ++i_;
      return node(expr_kind::index, pos,
                  ops(std::move(base), std::move(*index)));
    }
    return syntax_error(t.pos, "expected a property name or a non-negative "
                               "integer index, found " +
                                   describe(t));
  }

  res<expr_ptr> literal(nlohmann::json v) {
    auto n = node(expr_kind::literal, cur().pos);
    if (!n) return n;
    (*n)->literal = std::move(v);
    ++i_;
    return n;
  }

  res<expr_ptr> primary() {
    const auto& t = cur();
    switch (t.kind) {
    case token_kind::number:
      return literal(t.number);
    case token_kind::string:
      return literal(t.text);
    case token_kind::parameter: {
      auto n = node(expr_kind::parameter, t.pos);
      if (!n) return n;
      (*n)->name = t.text;
      ++i_;
      return n;
    }
    case token_kind::keyword:
      if (t.keyword == "TRUE") return literal(true);
      if (t.keyword == "FALSE") return literal(false);
      if (t.keyword == "NULL") return literal(nullptr);
      return unexpected(t, "an expression");
    case token_kind::identifier:
      if (ahead(1).kind == token_kind::lparen) return call();
      {
        auto n = node(expr_kind::root, t.pos);
        if (!n) return n;
        (*n)->name = t.text;
        ++i_;
        return n;
      }
    case token_kind::lparen: {
      ++i_;
      auto e = expression();
      if (!e) return e;
      if (!accept(token_kind::rparen)) return unexpected(cur(), "')'");
      return e;
    }
    case token_kind::lbrace:
      return object();
    case token_kind::lbracket:
      return array();
    default:
      return unexpected(t, "an expression");
    }
  }

  res<expr_ptr> call() {
    const auto& name_tok = cur();
    size_t pos = name_tok.pos;
    auto upper = to_upper(name_tok.text);
    const auto* f = find_function(upper);
    if (!f)
      return syntax_error(pos, "unknown function '" + name_tok.text + "'");
    i_ += 2; // name and '('
    std::vector<expr_ptr> args;
    if (!at(token_kind::rparen)) {
      for (;;) {
        auto e = expression();
        if (!e) return e;
        args.push_back(std::move(*e));
        if (!accept(token_kind::comma)) break;
      }
    }
    if (!accept(token_kind::rparen)) return unexpected(cur(), "')'");
    if (args.size() != 1)
      return syntax_error(pos, "function " + upper + " expects 1 argument");
    auto n = node(f->is_aggregate ? expr_kind::aggregate : expr_kind::call, pos,
                  std::move(args));
    if (!n) return n;
    (*n)->name = upper;
    (*n)->aggregate = f->aggregate;
    return n;
  }

  res<expr_ptr> object() {
    size_t pos = cur().pos;
    ++i_;
    std::vector<expr_ptr> values;
    std::vector<std::string> keys;
    if (!at(token_kind::rbrace)) {
      for (;;) {
        const auto& k = cur();
        if (k.kind != token_kind::string && k.kind != token_kind::identifier)
          return unexpected(k, "a property name");
        if (std::find(keys.begin(), keys.end(), k.text) != keys.end())
          return syntax_error(k.pos, "duplicate property name '" + k.text +
                                         "' in object constructor");
        keys.push_back(k.text);
        ++i_;
        if (!accept(token_kind::colon)) return unexpected(cur(), "':'");
        auto e = expression();
        if (!e) return e;
        values.push_back(std::move(*e));
        if (!accept(token_kind::comma)) break;
      }
    }
    if (!accept(token_kind::rbrace)) return unexpected(cur(), "'}'");
    auto n = node(expr_kind::object, pos, std::move(values));
    if (!n) return n;
    (*n)->keys = std::move(keys);
    return n;
  }

  res<expr_ptr> array() {
    size_t pos = cur().pos;
    ++i_;
    std::vector<expr_ptr> values;
    if (!at(token_kind::rbracket)) {
      for (;;) {
        auto e = expression();
        if (!e) return e;
        values.push_back(std::move(*e));
        if (!accept(token_kind::comma)) break;
      }
    }
    if (!accept(token_kind::rbracket)) return unexpected(cur(), "']'");
    return node(expr_kind::array, pos, std::move(values));
  }

  std::vector<token> toks_;
  size_t i_ = 0;
  int depth_ = 0;
};

} // namespace

result<std::shared_ptr<const query>> parse_query(std::string_view text) {
  auto toks = tokenize(text);
  if (!toks) return toks.error();
  auto q = parser{std::move(*toks)}.run();
  if (!q) return q.error();
  if (auto ok = check_query(**q); !ok) return ok.error();
  return std::shared_ptr<const query>(std::move(*q));
}

result<std::shared_ptr<const query>> parse(std::string_view text) {
  try {
    return parse_query(text);
  } catch (const std::exception& e) {
    return problem{std::string("Syntax error at position 0: ") + e.what()};
  }
}

} // namespace georoute::emulator::sql
