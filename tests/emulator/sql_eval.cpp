// Execution of the SQL subset over the documents of one partition-key range,
// with Cosmos DB's value semantics:
//
// - a missing property, an index out of range or a property of a non-object
//   is undefined; undefined values are left out of objects and arrays built
//   by constructors and out of SELECT VALUE results;
// - comparisons involving undefined, or operands of different types, are
//   undefined; = and != compare arrays and objects deeply, the ordering
//   operators leave them undefined;
// - AND/OR/NOT are three-valued (false AND x = false, true OR x = true,
//   anything else that is not boolean is undefined); WHERE keeps a row only
//   when the condition is true;
// - ORDER BY orders undefined < null < false < true < numbers < strings <
//   arrays < objects (the JS SDK's merge comparator only knows the scalar
//   part), ties keep the documents' order;
// - COUNT(e) counts the rows where e is defined; SUM/AVG skip undefined and
//   turn undefined when any other value is not a number; SUM of nothing is 0,
//   AVG of nothing undefined; MIN/MAX use the ORDER BY order and turn
//   undefined on arrays or objects.
//
// The pipeline: WHERE, then aggregates or ORDER BY + projection, DISTINCT
// (first occurrence kept), OFFSET/LIMIT, TOP.

#include "tests/emulator/sql.hpp"
#include "tests/emulator/sql_ast.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <numeric>
#include <set>
#include <utility>

namespace georoute::emulator::sql {

using nlohmann::json;

namespace {

struct eval_context {
  const json* doc = nullptr;
  const bound_parameters* params = nullptr;
  const std::vector<std::pair<const expr*, value>>* aggregates = nullptr;
};

value eval(const expr& e, const eval_context& ctx);

/// The value of `e` without copying when it is a path into the document or a
/// parameter; other expressions are evaluated into `scratch`. nullptr is
/// undefined.
const json* lookup(const expr& e, const eval_context& ctx, value& scratch) {
  switch (e.kind) {
  case expr_kind::root:
    return ctx.doc;
  case expr_kind::parameter: {
    const value* v = find_parameter(*ctx.params, e.name);
    return v && *v ? &**v : nullptr;
  }
  case expr_kind::property: {
    const json* base = lookup(*e.operands[0], ctx, scratch);
    if (!base || !base->is_object()) return nullptr;
    auto it = base->find(e.name);
    return it == base->end() ? nullptr : &*it;
  }
  case expr_kind::index: {
    const json* base = lookup(*e.operands[0], ctx, scratch);
    if (!base) return nullptr;
    value index_scratch;
    const json* index = lookup(*e.operands[1], ctx, index_scratch);
    if (!index) return nullptr;
    if (index->is_string() && base->is_object()) {
      auto it = base->find(index->get<std::string>());
      return it == base->end() ? nullptr : &*it;
    }
    if (index->is_number_integer() && base->is_array()) {
      auto i = index->get<int64_t>();
      if (i < 0 || static_cast<uint64_t>(i) >= base->size()) return nullptr;
      return &(*base)[static_cast<size_t>(i)];
    }
    return nullptr;
  }
  default:
    scratch = eval(e, ctx);
    return scratch ? &*scratch : nullptr;
  }
}

int rank(const json* v) {
  if (!v) return 0;
  switch (v->type()) {
  case json::value_t::null:
    return 1;
  case json::value_t::boolean:
    return 2;
  case json::value_t::number_integer:
  case json::value_t::number_unsigned:
  case json::value_t::number_float:
    return 3;
  case json::value_t::string:
    return 4;
  case json::value_t::array:
    return 5;
  default:
    return 6;
  }
}

int compare_ptr(const json* a, const json* b) {
  int ra = rank(a);
  int rb = rank(b);
  if (ra != rb) return ra < rb ? -1 : 1;
  switch (ra) {
  case 2: {
    bool x = a->get<bool>();
    bool y = b->get<bool>();
    return x == y ? 0 : (x ? 1 : -1);
  }
  case 3: {
    double x = a->get<double>();
    double y = b->get<double>();
    return x == y ? 0 : (x < y ? -1 : 1);
  }
  case 4: {
    int c = a->get_ref<const std::string&>().compare(
        b->get_ref<const std::string&>());
    return c == 0 ? 0 : (c < 0 ? -1 : 1);
  }
  default:
    return 0;
  }
}

value comparison(binary_op op, const json* a, const json* b) {
  if (!a || !b) return std::nullopt;
  int ra = rank(a);
  if (ra != rank(b)) return std::nullopt;
  if (op == binary_op::eq || op == binary_op::ne) {
    bool equal = ra >= 5 ? *a == *b : compare_ptr(a, b) == 0;
    return json(op == binary_op::eq ? equal : !equal);
  }
  if (ra >= 5) return std::nullopt;
  int c = compare_ptr(a, b);
  switch (op) {
  case binary_op::lt:
    return json(c < 0);
  case binary_op::le:
    return json(c <= 0);
  case binary_op::gt:
    return json(c > 0);
  case binary_op::ge:
    return json(c >= 0);
  default:
    return std::nullopt;
  }
}

/// 1 true, 0 false, -1 anything else.
int truth(const value& v) {
  if (!v || !v->is_boolean()) return -1;
  return v->get<bool>() ? 1 : 0;
}

value logical(binary_op op, const expr& lhs, const expr& rhs,
              const eval_context& ctx) {
  int l = truth(eval(lhs, ctx));
  bool is_and = op == binary_op::logical_and;
  if (is_and && l == 0) return json(false);
  if (!is_and && l == 1) return json(true);
  int r = truth(eval(rhs, ctx));
  if (is_and) {
    if (r == 0) return json(false);
    if (l == 1 && r == 1) return json(true);
  } else {
    if (r == 1) return json(true);
    if (l == 0 && r == 0) return json(false);
  }
  return std::nullopt;
}

value type_check(const std::string& fn, const json* v) {
  if (fn == "IS_DEFINED") return json(v != nullptr);
  if (!v) return json(false);
  if (fn == "IS_NULL") return json(v->is_null());
  if (fn == "IS_BOOL") return json(v->is_boolean());
  if (fn == "IS_NUMBER") return json(v->is_number());
  if (fn == "IS_STRING") return json(v->is_string());
  if (fn == "IS_ARRAY") return json(v->is_array());
  if (fn == "IS_OBJECT") return json(v->is_object());
  if (fn == "IS_PRIMITIVE")
    return json(v->is_null() || v->is_boolean() || v->is_number() ||
                v->is_string());
  return std::nullopt;
}

value eval(const expr& e, const eval_context& ctx) {
  switch (e.kind) {
  case expr_kind::literal:
    return e.literal;
  case expr_kind::root:
  case expr_kind::parameter:
  case expr_kind::property:
  case expr_kind::index: {
    value scratch;
    const json* v = lookup(e, ctx, scratch);
    if (!v) return std::nullopt;
    if (scratch && v == &*scratch) return scratch;
    return *v;
  }
  case expr_kind::object: {
    json out = json::object();
    for (size_t i = 0; i < e.operands.size(); ++i)
      if (auto v = eval(*e.operands[i], ctx)) out[e.keys[i]] = std::move(*v);
    return out;
  }
  case expr_kind::array: {
    json out = json::array();
    for (const auto& o : e.operands)
      if (auto v = eval(*o, ctx)) out.push_back(std::move(*v));
    return out;
  }
  case expr_kind::logical_not: {
    int t = truth(eval(*e.operands[0], ctx));
    if (t < 0) return std::nullopt;
    return json(t == 0);
  }
  case expr_kind::binary: {
    if (e.op == binary_op::logical_and || e.op == binary_op::logical_or)
      return logical(e.op, *e.operands[0], *e.operands[1], ctx);
    value ls;
    value rs;
    const json* l = lookup(*e.operands[0], ctx, ls);
    const json* r = lookup(*e.operands[1], ctx, rs);
    return comparison(e.op, l, r);
  }
  case expr_kind::call: {
    value scratch;
    return type_check(e.name, lookup(*e.operands[0], ctx, scratch));
  }
  case expr_kind::aggregate:
    if (ctx.aggregates)
      for (const auto& [node, v] : *ctx.aggregates)
        if (node == &e) return v;
    return std::nullopt;
  }
  return std::nullopt;
}

/// A number as the service prints it: integral values as integers.
value number(double d) {
  if (!std::isfinite(d)) return std::nullopt;
  if (std::floor(d) == d && std::fabs(d) < 9007199254740992.0)
    return json(static_cast<int64_t>(d));
  return json(d);
}

value aggregate(const expr& agg, const std::vector<const json*>& rows,
                const eval_context& base) {
  eval_context ctx = base;
  int64_t count = 0;
  double sum = 0;
  bool invalid = false;
  value best;
  for (const json* doc : rows) {
    ctx.doc = doc;
    value scratch;
    const json* v = lookup(*agg.operands[0], ctx, scratch);
    if (!v) continue;
    ++count;
    switch (agg.aggregate) {
    case aggregate_fn::count:
      break;
    case aggregate_fn::sum:
    case aggregate_fn::avg:
      if (v->is_number())
        sum += v->get<double>();
      else
        invalid = true;
      break;
    case aggregate_fn::min:
    case aggregate_fn::max: {
      if (v->is_array() || v->is_object()) {
        invalid = true;
        break;
      }
      const json* cur = best ? &*best : nullptr;
      int c = compare_ptr(v, cur);
      if (!best || (agg.aggregate == aggregate_fn::min ? c < 0 : c > 0))
        best = *v;
      break;
    }
    }
  }
  switch (agg.aggregate) {
  case aggregate_fn::count:
    return json(count);
  case aggregate_fn::sum:
    return invalid ? std::nullopt : number(sum);
  case aggregate_fn::avg:
    if (invalid || count == 0) return std::nullopt;
    return number(sum / static_cast<double>(count));
  case aggregate_fn::min:
  case aggregate_fn::max:
    return invalid ? std::nullopt : best;
  }
  return std::nullopt;
}

void collect_aggregates(const expr& e, std::vector<const expr*>& out) {
  if (e.kind == expr_kind::aggregate) {
    out.push_back(&e);
    return;
  }
  for (const auto& o : e.operands)
    collect_aggregates(*o, out);
}

json project(const query& q, const eval_context& ctx, bool& defined) {
  defined = true;
  switch (q.select) {
  case select_kind::star:
    return *ctx.doc;
  case select_kind::value: {
    auto v = eval(*q.value, ctx);
    defined = v.has_value();
    return v ? std::move(*v) : json();
  }
  case select_kind::list:
    break;
  }
  json out = json::object();
  for (const auto& item : q.items)
    if (auto v = eval(*item.e, ctx)) out[item.name] = std::move(*v);
  return out;
}

traced_rows run_rows(const query& q, const std::vector<json>& documents,
                     const eval_context& base) {
  eval_context ctx = base;
  std::vector<const json*> rows;
  for (const auto& doc : documents) {
    ctx.doc = &doc;
    if (!q.where || truth(eval(*q.where, ctx)) == 1) rows.push_back(&doc);
  }
  traced_rows out;
  if (q.has_aggregates) {
    std::vector<const expr*> nodes;
    collect_aggregates(*q.value, nodes);
    std::vector<std::pair<const expr*, value>> results;
    for (const expr* n : nodes)
      results.emplace_back(n, aggregate(*n, rows, base));
    eval_context agg_ctx = base;
    agg_ctx.aggregates = &results;
    if (auto v = eval(*q.value, agg_ctx)) {
      out.rows.push_back(std::move(*v));
      out.sources.push_back(no_source);
    }
    return out;
  }
  if (!q.order_by.empty()) {
    std::vector<std::vector<value>> keys(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      ctx.doc = rows[i];
      for (const auto& o : q.order_by)
        keys[i].push_back(eval(*o.e, ctx));
    }
    std::vector<size_t> order(rows.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      for (size_t k = 0; k < q.order_by.size(); ++k) {
        int c = order_compare(keys[a][k], keys[b][k]);
        if (c != 0) return q.order_by[k].descending ? c > 0 : c < 0;
      }
      return false;
    });
    std::vector<const json*> sorted;
    for (size_t i : order)
      sorted.push_back(rows[i]);
    rows = std::move(sorted);
  }
  for (const json* doc : rows) {
    ctx.doc = doc;
    bool defined = false;
    auto row = project(q, ctx, defined);
    if (defined) {
      out.rows.push_back(std::move(row));
      out.sources.push_back(static_cast<size_t>(doc - documents.data()));
    }
  }
  return out;
}

void apply_distinct(traced_rows& t) {
  std::set<json> seen;
  traced_rows kept;
  for (size_t i = 0; i < t.rows.size(); ++i)
    if (seen.insert(t.rows[i]).second) {
      kept.rows.push_back(std::move(t.rows[i]));
      kept.sources.push_back(t.sources[i]);
    }
  t = std::move(kept);
}

void apply_window(traced_rows& t, int64_t skip, int64_t take) {
  size_t begin = std::min(t.rows.size(), static_cast<size_t>(skip));
  size_t end = take < 0
                   ? t.rows.size()
                   : std::min(t.rows.size(), begin + static_cast<size_t>(take));
  t.rows = std::vector<json>(std::make_move_iterator(t.rows.begin() + begin),
                             std::make_move_iterator(t.rows.begin() + end));
  t.sources =
      std::vector<size_t>(t.sources.begin() + begin, t.sources.begin() + end);
}

result<traced_rows> execute_checked(const query& q,
                                    const std::vector<json>& documents,
                                    const parameters& params) {
  auto bound = bind_query(q, params);
  if (!bound) return bound.error();
  eval_context ctx;
  ctx.params = &bound->params;
  auto rows = run_rows(q, documents, ctx);
  if (q.distinct) apply_distinct(rows);
  if (bound->offset >= 0) apply_window(rows, bound->offset, bound->limit);
  if (bound->top >= 0) apply_window(rows, 0, bound->top);
  return rows;
}

} // namespace

// -- shared helpers (sql_ast.hpp) ---------------------------------------------

int type_rank(const value& v) {
  return rank(v ? &*v : nullptr);
}

int order_compare(const value& a, const value& b) {
  return compare_ptr(a ? &*a : nullptr, b ? &*b : nullptr);
}

// -- sql.hpp ------------------------------------------------------------------

result<traced_rows> execute_traced(const query& q,
                                   const std::vector<json>& documents,
                                   const parameters& params) {
  try {
    return execute_checked(q, documents, params);
  } catch (const std::exception& e) {
    return error_at(0, std::string("internal error: ") + e.what());
  }
}

result<std::vector<json>> execute(const query& q,
                                  const std::vector<json>& documents,
                                  const parameters& params) {
  auto traced = execute_traced(q, documents, params);
  if (!traced) return traced.error();
  return std::move(traced->rows);
}

} // namespace georoute::emulator::sql
