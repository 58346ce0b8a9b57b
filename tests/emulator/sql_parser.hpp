#pragma once

// The recursive-descent parser of the emulator's SQL subset (grammar in
// sql.hpp): tokens (sql_lexer.hpp) to the tree of sql_ast.hpp, followed by
// the checks the service makes before it runs a query (identifiers resolve
// to the FROM alias, aggregates only in SELECT VALUE, ORDER BY on paths,
// unique projection names). Nesting deeper than `max_depth` is an error, not
// a stack overflow.

#include "georoute/actors/policy/result.hpp"
#include "tests/emulator/sql_ast.hpp"

#include <memory>
#include <string_view>

namespace georoute::emulator::sql {

/// Parses and checks `text`; errors read "Syntax error at position N: ...".
result<std::shared_ptr<const query>> parse_query(std::string_view text);

/// The checks after parsing (sql_check.cpp); sets `q.has_aggregates`.
result<bool> check_query(query& q);

/// True if `e` is a property path from the root: `c.a`, `c["a"].b`, `c[0]`.
bool is_property_path(const expr& e);

} // namespace georoute::emulator::sql
