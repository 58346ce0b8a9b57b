#pragma once

// The emulator's SQL subset: a real tokenizer and recursive-descent parser,
// an evaluator over JSON documents, and the query-plan generator the gateway
// answers `x-ms-cosmos-is-query-plan-request` with.
//
// Supported: SELECT * | SELECT VALUE <expr> | SELECT <expr> [AS alias], ...;
// DISTINCT; TOP n; FROM c (any alias); WHERE with AND/OR/NOT, parentheses,
// comparisons (= != <> < <= > >=) between property paths (c.a.b, c["x"]),
// literals (numbers, strings, true, false, null, undefined-free) and
// @parameters; aggregates COUNT, SUM, MIN, MAX, AVG (in SELECT VALUE);
// ORDER BY one path ASC|DESC; OFFSET m LIMIT n; and the constructs of the
// gateway's rewritten ORDER BY query (object and array constructors in the
// select list, `c AS payload`, `c._rid`). Everything else is a parse error
// with its position.

#include "georoute/actors/policy/model.hpp"
#include "georoute/actors/policy/result.hpp"

#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace georoute::emulator::sql {

/// A parsed query (opaque AST).
struct query;

/// A parse or evaluation error: message and the 0-based character offset.
struct query_error {
  std::string message;
  size_t position = 0;
};

/// Parses `text`. Parameters (`@name`) are bound at execution.
/// On failure: a problem whose text is "Syntax error at position N: ...".
result<std::shared_ptr<const query>> parse(std::string_view text);

/// Query parameters: [{"name":"@n","value":0}, ...] as sent in the body.
using parameters = nlohmann::json;

/// Executes `q` over the documents of ONE partition-key range (or one
/// logical partition), including ORDER BY, DISTINCT, TOP, OFFSET/LIMIT and
/// aggregates, exactly as the gateway would for a single-range query.
/// Errors: unbound parameter, type errors that the service reports.
result<std::vector<nlohmann::json>>
execute(const query& q, const std::vector<nlohmann::json>& documents,
        const parameters& params);

/// Rows of `execute_traced`, each with the document it was projected from.
struct traced_rows {
  std::vector<nlohmann::json> rows;
  /// Per row: its document's index in `documents`, or `no_source` for the
  /// row of an aggregate (it comes from all of them). DISTINCT keeps the
  /// first occurrence and its document.
  std::vector<size_t> sources;
};

/// The source of a row that no single document produced.
inline constexpr size_t no_source = static_cast<size_t>(-1);

/// `execute`, also telling which document each row came from (the engine
/// restricts a split range's rows to a child's EPK range with it).
result<traced_rows> execute_traced(const query& q,
                                   const std::vector<nlohmann::json>& documents,
                                   const parameters& params);

/// True if a cross-partition execution of `q` needs client-side merging
/// (ORDER BY, aggregates, DISTINCT, TOP, OFFSET/LIMIT): the gateway then
/// answers 400/1004 with the plan.
bool needs_query_plan(const query& q);

/// The query plan of `q` for a collection partitioned on `partition_key`.
/// `queryRanges` is narrowed to one EPK point when the WHERE clause pins
/// every partition-key path with an equality to a literal or parameter
/// (conjunctively); otherwise the full range ["", "FF").
result<query_plan> make_plan(const query& q, const std::string& text,
                             const partition_key_definition& partition_key,
                             const parameters& params);

} // namespace georoute::emulator::sql
