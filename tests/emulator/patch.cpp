// The patch operations: their checks and their application (see patch.hpp).

#include "tests/emulator/patch.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>

namespace georoute::emulator::detail {

namespace {

using json = nlohmann::json;

const char* const system_properties[] = {"_rid", "_ts", "_etag", "_self",
                                         "_attachments"};
const char* const op_names[] = {"add",    "set",  "replace",
                                "remove", "incr", "move"};

/// "operation 2 (set /a/b)" for messages.
std::string which(size_t i, const json& op) {
  std::string out = "patch operation " + std::to_string(i);
  auto name = op.find("op");
  auto path = op.find("path");
  if (name != op.end() && name->is_string() && path != op.end() &&
      path->is_string())
    out +=
        " (" + name->get<std::string>() + " " + path->get<std::string>() + ")";
  return out;
}

bool is_prefix(const std::vector<std::string>& a,
               const std::vector<std::string>& b) {
  return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
}

/// Whether a pointer may be patched; the problem names it and why not.
result<std::vector<std::string>>
check_path(const std::string& field, const json& op, size_t i,
           const std::vector<std::string>& protected_paths) {
  auto p = op.find(field);
  if (p == op.end() || !p->is_string())
    return problem{
        which(i, op) + ": \"" + field + "\" must be a string " +
        (p == op.end() ? std::string{"(missing)"} : "(got " + p->dump() + ")")};
  const auto& text = p->get<std::string>();
  auto segs = parse_pointer(text);
  if (!segs) return problem{which(i, op) + ": " + segs.error().what};
  if (segs->empty())
    return problem{which(i, op) + ": \"" + field +
                   "\" names the whole document; patch a property"};
  for (const char* sys : system_properties)
    if ((*segs)[0] == sys)
      return problem{which(i, op) + ": " + text + " is the system property " +
                     sys + ", which cannot be patched"};
  for (const auto& guarded : protected_paths) {
    auto g = parse_pointer(guarded);
    if (!g || g->empty()) continue;
    if (is_prefix(*segs, *g) || is_prefix(*g, *segs))
      return problem{which(i, op) + ": " + text +
                     (guarded == "/id"
                          ? std::string{" touches /id, which cannot be "
                                        "patched"}
                          : " touches the partition key path " + guarded +
                                ", which cannot be patched")};
  }
  return std::move(*segs);
}

/// An array index segment: digits, below `limit` (or equal to it when
/// `append` allows; "-" then means the end). std::nullopt otherwise.
std::optional<size_t> array_index(const std::string& seg, size_t size,
                                  bool append) {
  if (append && seg == "-") return size;
  if (seg.empty() || seg.size() > 18 ||
      seg.find_first_not_of("0123456789") != std::string::npos ||
      (seg.size() > 1 && seg[0] == '0'))
    return std::nullopt;
  auto i = static_cast<size_t>(std::stoull(seg));
  if (i > size || (i == size && !append)) return std::nullopt;
  return i;
}

std::string pointer_text(const std::vector<std::string>& segs, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out += '/';
    for (char c : segs[i]) {
      if (c == '~')
        out += "~0";
      else if (c == '/')
        out += "~1";
      else
        out += c;
    }
  }
  return out.empty() ? "/" : out;
}

/// The container holding the last segment of `segs`; a problem when a
/// parent is missing or not a container.
result<json*> parent_of(json& doc, const std::vector<std::string>& segs,
                        const std::string& what) {
  json* at = &doc;
  for (size_t i = 0; i + 1 < segs.size(); ++i) {
    const auto& seg = segs[i];
    json* next = nullptr;
    if (at->is_object()) {
      auto it = at->find(seg);
      if (it != at->end()) next = &*it;
    } else if (at->is_array()) {
      if (auto k = array_index(seg, at->size(), false)) next = &(*at)[*k];
    }
    if (next == nullptr || !(next->is_object() || next->is_array()))
      return problem{what + ": the parent " + pointer_text(segs, i + 1) +
                     (next == nullptr ? " does not exist"
                                      : " is not an object or an array") +
                     " (a patch does not create paths recursively)"};
    at = next;
  }
  if (!at->is_object() && !at->is_array())
    return problem{what + ": the parent is not an object or an array"};
  return at;
}

/// The value at `segs`, or nullptr.
json* find_at(json& doc, const std::vector<std::string>& segs) {
  json* at = &doc;
  for (const auto& seg : segs) {
    if (at->is_object()) {
      auto it = at->find(seg);
      if (it == at->end()) return nullptr;
      at = &*it;
    } else if (at->is_array()) {
      auto k = array_index(seg, at->size(), false);
      if (!k) return nullptr;
      at = &(*at)[*k];
    } else {
      return nullptr;
    }
  }
  return at;
}

json add_numbers(const json& a, const json& b) {
  if (a.is_number_integer() && b.is_number_integer() &&
      !(a.is_number_unsigned() &&
        a.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max())) &&
      !(b.is_number_unsigned() &&
        b.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))) {
    int64_t sum = 0;
    if (!__builtin_add_overflow(a.get<int64_t>(), b.get<int64_t>(), &sum))
      return sum;
  }
  return a.get<double>() + b.get<double>();
}

/// add / set / move's landing: put `value` at the last segment of `segs`
/// in `parent`. `insert`: an array index shifts (add); else it overwrites
/// (set).
result<bool> put(json& parent, const std::string& seg, json value, bool insert,
                 const std::string& what) {
  if (parent.is_object()) {
    parent[seg] = std::move(value);
    return true;
  }
  auto k = array_index(seg, parent.size(), true);
  if (!k)
    return problem{what + ": array index '" + seg + "' is out of range (" +
                   std::to_string(parent.size()) + " elements)"};
  if (*k == parent.size())
    parent.push_back(std::move(value));
  else if (insert)
    parent.insert(parent.begin() + static_cast<std::ptrdiff_t>(*k),
                  std::move(value));
  else
    parent[*k] = std::move(value);
  return true;
}

/// Removes and returns the value at the last segment in `parent`.
result<json> take(json& parent, const std::string& seg,
                  const std::string& what) {
  if (parent.is_object()) {
    auto it = parent.find(seg);
    if (it == parent.end())
      return problem{what + ": the member '" + seg + "' does not exist"};
    json out = std::move(*it);
    parent.erase(it);
    return out;
  }
  auto k = array_index(seg, parent.size(), false);
  if (!k)
    return problem{what + ": array index '" + seg + "' is out of range (" +
                   std::to_string(parent.size()) + " elements)"};
  json out = std::move(parent[*k]);
  parent.erase(*k);
  return out;
}

} // namespace

result<std::vector<std::string>> parse_pointer(const std::string& pointer) {
  std::vector<std::string> out;
  if (pointer.empty()) return out;
  if (pointer[0] != '/')
    return problem{"path '" + pointer +
                   "' is not a JSON Pointer (it must "
                   "start with '/')"};
  std::string seg;
  for (size_t i = 1; i <= pointer.size(); ++i) {
    if (i == pointer.size() || pointer[i] == '/') {
      out.push_back(std::move(seg));
      seg.clear();
      continue;
    }
    char c = pointer[i];
    if (c == '~') {
      char next = i + 1 < pointer.size() ? pointer[i + 1] : '\0';
      if (next != '0' && next != '1')
        return problem{"path '" + pointer + "' has a '~' that is not ~0 or ~1"};
      seg += next == '0' ? '~' : '/';
      ++i;
      continue;
    }
    seg += c;
  }
  return out;
}

result<patch_spec>
parse_patch(const json& body, const std::vector<std::string>& protected_paths) {
  patch_spec spec;
  if (body.is_array()) {
    spec.operations = body;
  } else if (body.is_object()) {
    auto ops = body.find("operations");
    if (ops == body.end() || !ops->is_array())
      return problem{"invalid patch specification: \"operations\" must be an "
                     "array of patch operations" +
                     (ops == body.end() ? std::string{" (missing)"}
                                        : " (got " + ops->dump() + ")")};
    spec.operations = *ops;
    auto cond = body.find("condition");
    if (cond != body.end() && !cond->is_null()) {
      if (!cond->is_string())
        return problem{"invalid patch specification: \"condition\" must be a "
                       "string like \"FROM c WHERE c.n > 0\" (got " +
                       cond->dump() + ")"};
      spec.condition = cond->get<std::string>();
    }
  } else {
    return problem{"invalid patch specification: expected "
                   "{\"operations\":[...]} or an array of operations"};
  }
  const auto& ops = spec.operations;
  if (ops.empty())
    return problem{"invalid patch specification: the list of patch "
                   "operations is empty"};
  if (ops.size() > max_patch_operations)
    return problem{"The number of patch operations can't exceed " +
                   std::to_string(max_patch_operations) + " (got " +
                   std::to_string(ops.size()) + ")."};
  for (size_t i = 0; i < ops.size(); ++i) {
    const auto& op = ops[i];
    if (!op.is_object())
      return problem{"patch operation " + std::to_string(i) +
                     ": expected an object, got " + op.dump()};
    auto name = op.find("op");
    if (name == op.end() || !name->is_string() ||
        std::none_of(std::begin(op_names), std::end(op_names),
                     [&name](const char* n) { return *name == n; }))
      return problem{which(i, op) + ": \"op\" " +
                     (name == op.end()
                          ? std::string{"is missing"}
                          : name->dump() + " is not a patch operation") +
                     " (add, set, replace, remove, incr, move)"};
    auto kind = name->get<std::string>();
    auto path = check_path("path", op, i, protected_paths);
    if (!path) return path.error();
    if (kind == "move") {
      auto from = check_path("from", op, i, protected_paths);
      if (!from) return from.error();
      if (from->size() < path->size() && is_prefix(*from, *path))
        return problem{which(i, op) +
                       ": \"path\" lies under \"from\"; a value cannot move "
                       "into itself"};
      continue;
    }
    if (kind == "remove") continue; // "value" absent or null, or ignored
    auto value = op.find("value");
    if (value == op.end())
      return problem{which(i, op) + ": \"value\" is missing"};
    if (kind == "incr" && !value->is_number())
      return problem{which(i, op) + ": incr needs a number, got " +
                     value->dump()};
  }
  return spec;
}

result<json> apply_patch(json doc, const json& operations) {
  for (size_t i = 0; i < operations.size(); ++i) {
    const auto& op = operations[i];
    auto what = which(i, op);
    auto kind = op.at("op").get<std::string>();
    auto segs = parse_pointer(op.at("path").get<std::string>());
    if (!segs || segs->empty()) return problem{what + ": bad path"};
    const auto& last = segs->back();
    if (kind == "move") {
      auto from = parse_pointer(op.at("from").get<std::string>());
      if (!from || from->empty()) return problem{what + ": bad from"};
      if (*from == *segs) {
        if (find_at(doc, *from) == nullptr)
          return problem{what + ": \"from\" " +
                         op.at("from").get<std::string>() + " does not exist"};
        continue;
      }
      auto src = parent_of(doc, *from, what);
      if (!src) return src.error();
      auto value = take(**src, from->back(), what + " (from)");
      if (!value) return value.error();
      auto dst = parent_of(doc, *segs, what);
      if (!dst) return dst.error();
      if (auto ok = put(**dst, last, std::move(*value), true, what); !ok)
        return ok.error();
      continue;
    }
    auto parent = parent_of(doc, *segs, what);
    if (!parent) return parent.error();
    json& p = **parent;
    if (kind == "add" || kind == "set") {
      if (auto ok = put(p, last, op.at("value"), kind == "add", what); !ok)
        return ok.error();
    } else if (kind == "replace") {
      json* target = find_at(p, {last});
      if (target == nullptr)
        return problem{what + ": the target does not exist (replace never "
                              "creates it)"};
      *target = op.at("value");
    } else if (kind == "remove") {
      if (auto gone = take(p, last, what); !gone) return gone.error();
    } else { // incr
      const auto& by = op.at("value");
      json* target = find_at(p, {last});
      if (target == nullptr) {
        if (p.is_array())
          return problem{what + ": array index '" + last +
                         "' is out of range (" + std::to_string(p.size()) +
                         " elements)"};
        p[last] = by;
      } else if (!target->is_number()) {
        return problem{what + ": the target is not a number (it is " +
                       target->dump() + ")"};
      } else {
        *target = add_numbers(*target, by);
      }
    }
  }
  return doc;
}

} // namespace georoute::emulator::detail
