// The checks the service makes on a parsed query before it runs it:
// identifiers resolve to the FROM alias, aggregates appear only in the
// SELECT VALUE expression (not nested, not beside property references, not
// with ORDER BY). Errors use the syntax-error format with the position of the
// offending node.

#include "tests/emulator/sql_lexer.hpp"
#include "tests/emulator/sql_parser.hpp"

namespace georoute::emulator::sql {

namespace {

struct check_context {
  const std::string& root;
  bool aggregates_allowed = false; ///< inside the SELECT VALUE expression
  bool in_aggregate = false;
  bool found_aggregate = false;
  const expr* outside_reference = nullptr; ///< first root use outside one
};

result<bool> check(const expr& e, check_context& ctx) {
  if (e.kind == expr_kind::root) {
    if (e.name != ctx.root)
      return syntax_error(e.pos,
                          "identifier '" + e.name + "' could not be resolved");
    if (!ctx.in_aggregate && !ctx.outside_reference) ctx.outside_reference = &e;
  }
  bool entered = false;
  if (e.kind == expr_kind::aggregate) {
    if (!ctx.aggregates_allowed)
      return syntax_error(e.pos, "aggregate " + e.name +
                                     " is only supported in SELECT VALUE");
    if (ctx.in_aggregate)
      return syntax_error(e.pos, "aggregates cannot be nested");
    ctx.found_aggregate = true;
    ctx.in_aggregate = true;
    entered = true;
  }
  for (const auto& o : e.operands) {
    auto ok = check(*o, ctx);
    if (!ok) return ok;
  }
  if (entered) ctx.in_aggregate = false;
  return true;
}

} // namespace

result<bool> check_query(query& q) {
  check_context ctx{q.root};
  if (q.value) {
    check_context vctx{q.root};
    vctx.aggregates_allowed = true;
    auto ok = check(*q.value, vctx);
    if (!ok) return ok;
    if (vctx.found_aggregate) {
      q.has_aggregates = true;
      if (vctx.outside_reference)
        return syntax_error(vctx.outside_reference->pos,
                            "a property reference outside an aggregate "
                            "cannot be combined with aggregates");
    }
  }
  for (const auto& item : q.items)
    if (auto ok = check(*item.e, ctx); !ok) return ok;
  if (q.where)
    if (auto ok = check(*q.where, ctx); !ok) return ok;
  for (const auto& o : q.order_by)
    if (auto ok = check(*o.e, ctx); !ok) return ok;
  if (q.has_aggregates && !q.order_by.empty())
    return syntax_error(q.order_by.front().e->pos,
                        "ORDER BY cannot be combined with aggregates");
  return true;
}

bool is_property_path(const expr& e) {
  const expr* cur = &e;
  bool segment = false;
  for (;;) {
    if (cur->kind == expr_kind::root) return segment;
    if (cur->kind == expr_kind::property) {
      cur = cur->operands[0].get();
    } else if (cur->kind == expr_kind::index &&
               cur->operands[1]->kind == expr_kind::literal) {
      cur = cur->operands[0].get();
    } else {
      return false;
    }
    segment = true;
  }
}

} // namespace georoute::emulator::sql
