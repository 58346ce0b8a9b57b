// Query parameters and the TOP/OFFSET/LIMIT counts: binding the body's
// `parameters`, checking that a query uses only bound names, and resolving
// counts given as parameters.

#include "tests/emulator/sql_ast.hpp"

#include <string>
#include <vector>

namespace georoute::emulator::sql {

using nlohmann::json;

namespace {

void parameters_of(const expr& e, std::vector<const expr*>& out) {
  if (e.kind == expr_kind::parameter) out.push_back(&e);
  for (const auto& o : e.operands)
    parameters_of(*o, out);
}

} // namespace

problem error_at(size_t pos, const std::string& what) {
  return problem{"Error at position " + std::to_string(pos) + ": " + what};
}

result<bound_parameters> bind_parameters(const json& params) {
  bound_parameters out;
  if (params.is_null()) return out;
  if (!params.is_array())
    return problem{"parameters: expected an array of {name, value}"};
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& p = params[i];
    auto where = "parameters[" + std::to_string(i) + "]";
    if (!p.is_object()) return problem{where + ": expected an object"};
    auto name = p.find("name");
    if (name == p.end() || !name->is_string())
      return problem{where + ".name: expected a string"};
    auto v = p.find("value");
    value bound_value;
    if (v != p.end()) bound_value = *v;
    auto n = name->get<std::string>();
    if (!find_parameter(out, n)) out.emplace_back(n, std::move(bound_value));
  }
  return out;
}

const value* find_parameter(const bound_parameters& params,
                            const std::string& name) {
  for (const auto& [n, v] : params)
    if (n == name) return &v;
  return nullptr;
}

result<bool> check_parameters(const query& q, const bound_parameters& params) {
  std::vector<const expr*> used;
  if (q.value) parameters_of(*q.value, used);
  for (const auto& item : q.items)
    parameters_of(*item.e, used);
  if (q.where) parameters_of(*q.where, used);
  for (const auto& o : q.order_by)
    parameters_of(*o.e, used);
  for (const expr* p : used)
    if (!find_parameter(params, p->name))
      return error_at(p->pos, "parameter " + p->name + " is not defined");
  return true;
}

result<int64_t> resolve_count(const count_arg& c, const char* clause,
                              const bound_parameters& params) {
  if (!c.present) return int64_t{-1};
  if (c.parameter.empty()) return c.literal;
  const value* v = find_parameter(params, c.parameter);
  if (!v)
    return error_at(c.pos, "parameter " + c.parameter + " is not defined");
  if (*v && (*v)->is_number_integer() && (*v)->get<int64_t>() >= 0)
    return (*v)->get<int64_t>();
  if (*v && (*v)->is_number_unsigned())
    return error_at(c.pos, std::string(clause) + " count is out of range");
  return error_at(c.pos, std::string(clause) +
                             " expects a non-negative "
                             "integer, parameter " +
                             c.parameter + " is not one");
}

result<bound_query> bind_query(const query& q, const json& params) {
  auto bound = bind_parameters(params);
  if (!bound) return bound.error();
  if (auto ok = check_parameters(q, *bound); !ok) return ok.error();
  bound_query out;
  out.params = std::move(*bound);
  auto top = resolve_count(q.top, "TOP", out.params);
  if (!top) return top.error();
  auto offset = resolve_count(q.offset, "OFFSET", out.params);
  if (!offset) return offset.error();
  auto limit = resolve_count(q.limit, "LIMIT", out.params);
  if (!limit) return limit.error();
  out.top = *top;
  out.offset = *offset;
  out.limit = *limit;
  return out;
}

} // namespace georoute::emulator::sql
