#pragma once

// The syntax tree of the emulator's SQL subset (sql.hpp), plus the helpers
// that the evaluator (sql_eval.cpp) and the plan generator (sql_plan.cpp)
// share: the canonical printer and the Cosmos value order. Internal to the
// emulator; callers use sql.hpp.

#include "georoute/actors/policy/result.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace georoute::emulator::sql {

/// The deepest expression (and parenthesis nesting) the parser accepts, so
/// that hostile input cannot exhaust the stack of the parser, the evaluator or
/// the printer.
inline constexpr int max_depth = 128;

/// A value during evaluation: `std::nullopt` is Cosmos' `undefined` (a
/// missing property, a comparison across types, ...).
using value = std::optional<nlohmann::json>;

enum class expr_kind {
  literal,     ///< `literal`
  parameter,   ///< `name` = "@n"
  root,        ///< the FROM alias; `name`
  property,    ///< operands[0].name, or operands[0]["name"] if `bracket`
  index,       ///< operands[0][operands[1]] (a number or a parameter)
  object,      ///< {"keys[i]": operands[i], ...}
  array,       ///< [operands...]
  logical_not, ///< NOT operands[0]
  binary,      ///< operands[0] op operands[1]
  call,        ///< scalar function `name` (upper case), e.g. IS_DEFINED
  aggregate,   ///< `aggregate`(operands[0])
};

enum class binary_op { eq, ne, lt, le, gt, ge, logical_and, logical_or };

enum class aggregate_fn { count, sum, min, max, avg };

struct expr;
using expr_ptr = std::unique_ptr<expr>;

/// One expression node.
struct expr {
  expr_kind kind = expr_kind::literal;
  size_t pos = 0; ///< 0-based offset of its first character in the text
  int height = 1; ///< 1 + the tallest operand
  nlohmann::json literal;
  std::string name;
  bool bracket = false;
  binary_op op = binary_op::eq;
  aggregate_fn aggregate = aggregate_fn::count;
  std::vector<expr_ptr> operands;
  std::vector<std::string> keys;
};

/// TOP, OFFSET or LIMIT: a non-negative integer literal or a parameter.
struct count_arg {
  bool present = false;
  int64_t literal = 0;
  std::string parameter; ///< "@n" when given as a parameter
  size_t pos = 0;
};

enum class select_kind { star, value, list };

/// One item of a select list; `name` is the alias, or the name Cosmos
/// derives (the last property name, else "$1", "$2", ...).
struct select_item {
  expr_ptr e;
  std::string name;
  bool has_alias = false;
};

struct order_item {
  expr_ptr e;
  bool descending = false;
  bool explicit_direction = false; ///< ASC/DESC was written
};

/// A parsed query (the opaque `query` of sql.hpp).
struct query {
  bool distinct = false;
  count_arg top;
  select_kind select = select_kind::star;
  expr_ptr value; ///< select_kind::value
  std::vector<select_item> items;
  std::string collection; ///< FROM <collection> [AS] [alias]
  std::string alias;      ///< "" when absent
  std::string root;       ///< alias, else collection
  expr_ptr where;
  std::vector<order_item> order_by;
  count_arg offset;
  count_arg limit;
  bool has_aggregates = false; ///< the SELECT VALUE expression aggregates
};

// -- shared helpers -----------------------------------------------------------

/// The canonical text of `e`, in the service's style: binary operators in
/// parentheses (`(c.n > 1)`), strings double-quoted, `c["x"]` kept.
std::string print(const expr& e);

/// The text of `s` as a double-quoted SQL string literal (JSON escapes).
std::string quote(const std::string& s);

/// "<collection>" or "<collection> AS <alias>".
std::string print_from(const query& q);

/// The rank of a value's type in the ORDER BY order: undefined 0, null 1,
/// boolean 2, number 3, string 4, array 5, object 6.
int type_rank(const value& v);

/// The ORDER BY / MIN / MAX order: by type rank, then within the type
/// (false < true, numbers numerically, strings ordinally). Arrays and objects
/// of the same type compare equal. Returns <0, 0 or >0.
int order_compare(const value& a, const value& b);

/// Bound query parameters, by name ("@n"); a parameter sent without a value
/// is bound to undefined.
using bound_parameters = std::vector<std::pair<std::string, value>>;

/// Validates the body's `parameters` (null, or an array of {"name","value"}).
result<bound_parameters> bind_parameters(const nlohmann::json& params);

/// The value of parameter `name`, or nullptr when it is not bound.
const value* find_parameter(const bound_parameters& params,
                            const std::string& name);

/// Checks that every parameter `q` references is bound.
result<bool> check_parameters(const query& q, const bound_parameters& params);

/// The value of TOP/OFFSET/LIMIT (a literal or a bound non-negative integer
/// parameter); -1 when absent.
result<int64_t> resolve_count(const count_arg& c, const char* clause,
                              const bound_parameters& params);

/// A query's parameters bound and its TOP/OFFSET/LIMIT resolved (-1 when
/// absent): the first step of both execution and planning.
struct bound_query {
  bound_parameters params;
  int64_t top = -1;
  int64_t offset = -1;
  int64_t limit = -1;
};

/// Binds `params` for `q`, checks every reference, resolves the counts.
result<bound_query> bind_query(const query& q, const nlohmann::json& params);

/// "Error at position N: what" (execution and plan errors).
problem error_at(size_t pos, const std::string& what);

} // namespace georoute::emulator::sql
