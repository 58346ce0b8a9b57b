#pragma once

// Internal to the codecs (included by codecs.cpp only): non-throwing JSON
// parsing with a nesting guard, and a field reader whose problems name the
// field path ("writableLocations[1].name: expected string, got number").

#include "georoute/actors/policy/result.hpp"
#include "georoute/transport/codecs.hpp"

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace georoute::transport::codec_detail {

using json = nlohmann::json;

// -- error text --------------------------------------------------------------

// At most `limit` bytes of untrusted text, unprintable bytes as '?'.
inline std::string sanitize(std::string_view text, size_t limit) {
  std::string r;
  for (size_t i = 0; i < text.size() && i < limit; ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    r += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
  }
  if (text.size() > limit) r += "...";
  return r;
}

inline std::string quote(std::string_view text) {
  return "'" + sanitize(text, 64) + "'";
}

inline std::string name(const std::string& path) {
  return path.empty() ? "document" : path;
}

inline std::string at(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

inline std::string at(const std::string& path, size_t index) {
  return name(path) + "[" + std::to_string(index) + "]";
}

// -- parsing -----------------------------------------------------------------

// Rejects documents nested deeper than max_json_depth before the parser
// sees them, counting brackets outside strings.
inline std::optional<problem> check_depth(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_json_depth)
        return problem{"document: nested deeper than " +
                       std::to_string(max_json_depth) + " levels at offset " +
                       std::to_string(i)};
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return std::nullopt;
}

// A SAX consumer that only remembers why parsing failed. Used for a second
// pass over input the DOM parser rejected, to say where and why.
class error_locator : public nlohmann::json_sax<json> {
public:
  std::string message;

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& ex) override {
    // ex.what() can quote the offending token: sanitize and bound it.
    std::string what = ex.what();
    auto tag = what.find("] ");
    if (tag != std::string::npos) what = what.substr(tag + 2);
    message = "byte " + std::to_string(position) + ": " + sanitize(what, 160);
    return false;
  }
};

inline result<json> parse_document(std::string_view text) {
  if (text.empty()) return problem{"document: empty body, expected JSON"};
  if (auto p = check_depth(text)) return *p;
  auto doc = json::parse(text.begin(), text.end(), nullptr, false);
  if (doc.is_discarded()) {
    error_locator loc;
    json::sax_parse(text.begin(), text.end(), &loc);
    return problem{"document: invalid JSON" + (loc.message.empty()
                                                   ? std::string{}
                                                   : " (" + loc.message + ")")};
  }
  return doc;
}

// -- typed field access ------------------------------------------------------

// Reads fields and remembers the first problem; later reads after a problem
// are harmless and return defaults, so decoders read straight through and
// check `failed()` once per container.
class reader {
public:
  bool failed() const { return error_.has_value(); }
  problem take() { return problem{std::move(*error_)}; }

  void fail(const std::string& path, const std::string& what) {
    if (!error_) error_ = name(path) + ": " + what;
  }

  bool expect(const json& j, const std::string& path, bool ok,
              const char* expected) {
    if (!ok)
      fail(path,
           std::string("expected ") + expected + ", got " + j.type_name());
    return ok;
  }

  /// The member `key` of object `obj`, or nullptr when absent or null (an
  /// absent required member is a problem; a null one is left to the caller's
  /// type check).
  const json* member(const json& obj, const std::string& path, const char* key,
                     bool required) {
    auto it = obj.find(key);
    if (it == obj.end()) {
      if (required) fail(at(path, key), "missing");
      return nullptr;
    }
    if (it->is_null() && !required) return nullptr;
    return &*it;
  }

  bool object(const json& j, const std::string& path) {
    return expect(j, path, j.is_object(), "object");
  }

  const json* object(const json& obj, const std::string& path, const char* key,
                     bool required) {
    auto* m = member(obj, path, key, required);
    return m && object(*m, at(path, key)) ? m : nullptr;
  }

  const json* array(const json& obj, const std::string& path, const char* key,
                    bool required) {
    auto* m = member(obj, path, key, required);
    return m && expect(*m, at(path, key), m->is_array(), "array") ? m : nullptr;
  }

  std::string string(const json& obj, const std::string& path, const char* key,
                     bool required, std::string fallback = {}) {
    auto* m = member(obj, path, key, required);
    if (!m || !expect(*m, at(path, key), m->is_string(), "string"))
      return fallback;
    return m->get<std::string>();
  }

  std::string non_empty_string(const json& obj, const std::string& path,
                               const char* key) {
    auto r = string(obj, path, key, true);
    if (!failed() && r.empty()) fail(at(path, key), "must not be empty");
    return r;
  }

  bool boolean(const json& obj, const std::string& path, const char* key,
               bool fallback) {
    auto* m = member(obj, path, key, false);
    if (!m || !expect(*m, at(path, key), m->is_boolean(), "boolean"))
      return fallback;
    return m->get<bool>();
  }

  int64_t integer(const json& j, const std::string& path, int64_t min,
                  int64_t max) {
    if (!expect(j, path, j.is_number(), "integer")) return min;
    if (j.is_number_float()) {
      fail(path, "expected integer, got a fractional or out-of-range number");
      return min;
    }
    if (j.is_number_unsigned() &&
        j.get<uint64_t>() >
            static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      fail(path, "integer out of range");
      return min;
    }
    auto v = j.get<int64_t>();
    if (v < min || v > max) {
      fail(path, std::to_string(v) + " outside " + std::to_string(min) + ".." +
                     std::to_string(max));
      return min;
    }
    return v;
  }

  /// An optional non-negative integer where null or absent means -1.
  int64_t optional_count(const json& obj, const std::string& path,
                         const char* key) {
    auto* m = member(obj, path, key, false);
    if (!m) return -1;
    return integer(*m, at(path, key), 0, std::numeric_limits<int64_t>::max());
  }

  std::vector<std::string> strings(const json& obj, const std::string& path,
                                   const char* key, bool required) {
    std::vector<std::string> r;
    auto* a = array(obj, path, key, required);
    if (!a) return r;
    for (size_t i = 0; i < a->size() && !failed(); ++i) {
      const auto& e = (*a)[i];
      if (expect(e, at(at(path, key), i), e.is_string(), "string"))
        r.push_back(e.get<std::string>());
    }
    return r;
  }

  void one_of(const std::string& value, const std::string& path,
              std::initializer_list<const char*> allowed) {
    if (failed()) return;
    for (auto* a : allowed)
      if (value == a) return;
    std::string list;
    for (auto* a : allowed)
      list += (list.empty() ? "" : ", ") + std::string(a);
    fail(path, quote(value) + " is not one of " + list);
  }

private:
  std::optional<std::string> error_;
};

} // namespace georoute::transport::codec_detail
