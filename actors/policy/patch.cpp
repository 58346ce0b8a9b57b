#include "georoute/actors/policy/patch.hpp"

#include <array>
#include <cctype>
#include <nlohmann/json.hpp>
#include <optional>

namespace georoute {

const char* to_string(patch_kind k) {
  switch (k) {
  case patch_kind::add:
    return "add";
  case patch_kind::set:
    return "set";
  case patch_kind::replace:
    return "replace";
  case patch_kind::remove:
    return "remove";
  case patch_kind::incr:
    return "incr";
  case patch_kind::move:
    return "move";
  }
  return "?";
}

namespace {

using json = nlohmann::json;

constexpr std::array<std::pair<std::string_view, patch_kind>, 6> kinds{{
    {"add", patch_kind::add},
    {"set", patch_kind::set},
    {"replace", patch_kind::replace},
    {"remove", patch_kind::remove},
    {"incr", patch_kind::incr},
    {"move", patch_kind::move},
}};

// The first reference token of a pointer, unescaped ("/a~1b/c" -> "a/b").
std::string first_token(std::string_view path) {
  auto end = path.find('/', 1);
  auto raw =
      path.substr(1, end == std::string_view::npos ? path.npos : end - 1);
  std::string out;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '~' && i + 1 < raw.size()) {
      out += raw[i + 1] == '0' ? '~' : '/';
      ++i;
    } else {
      out += raw[i];
    }
  }
  return out;
}

// The last reference token, raw.
std::string_view last_token(std::string_view path) {
  return path.substr(path.rfind('/') + 1);
}

bool is_array_position(std::string_view token) {
  if (token == "-") return true;
  if (token.empty()) return false;
  for (char c : token)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// A path the service refuses to patch: the id and its own properties.
bool reserved(std::string_view path) {
  static constexpr std::array<std::string_view, 6> names{
      "id", "_rid", "_self", "_etag", "_ts", "_attachments"};
  auto top = first_token(path);
  for (auto n : names)
    if (top == n) return true;
  return false;
}

// "FROM <alias> WHERE <predicate>": the alias and the predicate, or
// nothing when the text has another shape.
struct condition_parts {
  std::string alias;
  std::string predicate;
};

bool keyword_at(std::string_view text, size_t at, std::string_view word) {
  if (text.size() - at < word.size()) return false;
  for (size_t i = 0; i < word.size(); ++i)
    if (std::toupper(static_cast<unsigned char>(text[at + i])) != word[i])
      return false;
  return true;
}

std::optional<condition_parts> split_condition(std::string_view text) {
  size_t i = 0;
  auto skip_space = [&] {
    size_t from = i;
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])))
      ++i;
    return i > from;
  };
  skip_space();
  if (!keyword_at(text, i, "FROM")) return std::nullopt;
  i += 4;
  if (!skip_space()) return std::nullopt;
  size_t alias_at = i;
  while (i < text.size() &&
         (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_'))
    ++i;
  if (i == alias_at || std::isdigit(static_cast<unsigned char>(text[alias_at])))
    return std::nullopt;
  condition_parts parts;
  parts.alias = std::string{text.substr(alias_at, i - alias_at)};
  if (!skip_space() || !keyword_at(text, i, "WHERE")) return std::nullopt;
  i += 5;
  if (!skip_space()) return std::nullopt;
  auto predicate = text.substr(i);
  while (!predicate.empty() &&
         std::isspace(static_cast<unsigned char>(predicate.back())))
    predicate.remove_suffix(1);
  if (predicate.empty()) return std::nullopt;
  parts.predicate = std::string{predicate};
  return parts;
}

const json* operations_of(const json& doc) {
  if (doc.is_array()) return &doc;
  auto it = doc.find("operations");
  return it == doc.end() ? nullptr : &*it;
}

} // namespace

bool is_json_pointer(std::string_view path) {
  if (path.size() < 2 || path.front() != '/') return false;
  for (size_t i = 0; i < path.size(); ++i)
    if (path[i] == '~' &&
        (i + 1 == path.size() || (path[i + 1] != '0' && path[i + 1] != '1')))
      return false;
  return true;
}

result<patch_spec> parse_patch(std::string_view body) {
  auto doc = json::parse(body, nullptr, false);
  if (doc.is_discarded()) return problem{"the patch is not valid JSON"};
  if (!doc.is_object() && !doc.is_array())
    return problem{"the patch must be {\"operations\": [...], \"condition\": "
                   "...} or an array of operations"};
  patch_spec spec;
  if (doc.is_object()) {
    for (const auto& [key, value] : doc.items())
      if (key != "operations" && key != "condition")
        return problem{"the patch has an unknown member \"" + key +
                       "\" (expected \"operations\" and \"condition\")"};
    if (auto c = doc.find("condition"); c != doc.end() && !c->is_null()) {
      if (!c->is_string())
        return problem{"the patch's condition must be a string, \"FROM c "
                       "WHERE <predicate>\""};
      spec.condition = c->get<std::string>();
      if (!split_condition(spec.condition))
        return problem{"the patch's condition \"" +
                       spec.condition.substr(0, 80) +
                       "\" is not \"FROM <alias> WHERE <predicate>\""};
    }
  }
  const json* ops = operations_of(doc);
  if (ops == nullptr || !ops->is_array())
    return problem{"the patch needs \"operations\", an array"};
  if (ops->empty()) return problem{"the patch has no operations"};
  if (ops->size() > max_patch_operations)
    return problem{"the patch has " + std::to_string(ops->size()) +
                   " operations; the service takes at most " +
                   std::to_string(max_patch_operations)};
  for (size_t n = 0; n < ops->size(); ++n) {
    const auto& op = (*ops)[n];
    auto where = "patch operation " + std::to_string(n);
    if (!op.is_object()) return problem{where + " is not a JSON object"};
    auto kind_it = op.find("op");
    if (kind_it == op.end() || !kind_it->is_string())
      return problem{where + " has no \"op\" (add, set, replace, remove, "
                             "incr or move)"};
    const auto& name = kind_it->get_ref<const std::string&>();
    patch_operation po;
    bool known = false;
    for (const auto& [text, kind] : kinds)
      if (name == text) {
        po.kind = kind;
        known = true;
      }
    if (!known)
      return problem{where + ": \"" + name.substr(0, 40) +
                     "\" is not a patch operation (add, set, replace, "
                     "remove, incr or move)"};
    where += " (" + name + ")";
    auto path = op.find("path");
    if (path == op.end() || !path->is_string())
      return problem{where + " has no \"path\""};
    po.path = path->get<std::string>();
    if (!is_json_pointer(po.path))
      return problem{where + ": the path \"" + po.path.substr(0, 80) +
                     "\" is not a JSON Pointer (\"/a/b\", with ~0 for ~ and "
                     "~1 for /)"};
    if (reserved(po.path))
      return problem{where + ": \"" + po.path.substr(0, 80) +
                     "\" cannot be patched (the id and the service's "
                     "properties are not the caller's)"};
    auto value = op.find("value");
    bool has_value = value != op.end();
    switch (po.kind) {
    case patch_kind::add:
    case patch_kind::set:
    case patch_kind::replace:
      if (!has_value) return problem{where + " needs a \"value\""};
      break;
    case patch_kind::incr:
      if (!has_value || !value->is_number())
        return problem{
            where + " needs a number as its \"value\"" +
            (has_value ? " (it has " + std::string{value->type_name()} + ")"
                       : std::string{})};
      break;
    case patch_kind::remove:
      break;
    case patch_kind::move: {
      auto from = op.find("from");
      if (from == op.end() || !from->is_string())
        return problem{where + " needs \"from\", the path it moves"};
      po.from = from->get<std::string>();
      if (!is_json_pointer(po.from))
        return problem{where + ": from \"" + po.from.substr(0, 80) +
                       "\" is not a JSON Pointer"};
      if (reserved(po.from))
        return problem{where + ": \"" + po.from.substr(0, 80) +
                       "\" cannot be moved"};
      if (po.path == po.from ||
          (po.path.size() > po.from.size() &&
           po.path.compare(0, po.from.size(), po.from) == 0 &&
           po.path[po.from.size()] == '/'))
        return problem{where + ": \"" + po.path.substr(0, 80) +
                       "\" lies inside \"" + po.from.substr(0, 80) +
                       "\", which it moves"};
      break;
    }
    }
    spec.operations.push_back(std::move(po));
  }
  return spec;
}

bool patch_resend_safe(const patch_spec& spec) {
  for (const auto& op : spec.operations) {
    switch (op.kind) {
    case patch_kind::set:
    case patch_kind::replace:
      break;
    case patch_kind::add:
      if (is_array_position(last_token(op.path))) return false;
      break;
    case patch_kind::remove:
    case patch_kind::incr:
    case patch_kind::move:
      return false;
    }
  }
  return true;
}

namespace {

bool touches_tracking(const patch_spec& spec) {
  const std::string property{tracking_property};
  for (const auto& op : spec.operations)
    if (first_token(op.path) == property ||
        (!op.from.empty() && first_token(op.from) == property))
      return true;
  return false;
}

} // namespace

write_tracking_plan plan_patch_tracking(const patch_spec& spec, bool on) {
  write_tracking_plan p;
  if (!on) return p;
  p.tracked = patch_trackable(spec) && !touches_tracking(spec);
  p.retries = p.tracked || patch_resend_safe(spec);
  return p;
}

result<std::string> with_patch_tracking(std::string_view body,
                                        const patch_spec& spec,
                                        std::string_view id) {
  if (!patch_trackable(spec))
    return problem{"a patch of " + std::to_string(max_patch_operations) +
                   " operations leaves no room for the tracking operation"};
  const std::string property{tracking_property};
  if (touches_tracking(spec))
    return problem{"the patch touches /" + property +
                   ", the engine's own property while write retries are "
                   "on"};
  auto doc = nlohmann::ordered_json::parse(body, nullptr, false);
  nlohmann::ordered_json ops =
      doc.is_array() ? doc : doc.value("operations", nlohmann::ordered_json{});
  ops.push_back({{"op", "set"}, {"path", "/" + property}, {"value", id}});
  std::string alias = "c";
  std::string predicate;
  if (!spec.condition.empty()) {
    auto parts = split_condition(spec.condition);
    alias = parts->alias;
    predicate = "(" + parts->predicate + ") AND ";
  }
  // The id is 32 hex digits: nothing in it needs escaping.
  auto guard = "(NOT IS_DEFINED(" + alias + "." + property + ") OR " + alias +
               "." + property + " != \"" + std::string{id} + "\")";
  nlohmann::ordered_json out;
  out["condition"] = "FROM " + alias + " WHERE " + predicate + guard;
  out["operations"] = std::move(ops);
  return out.dump();
}

} // namespace georoute
