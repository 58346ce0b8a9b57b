// Small helpers of the engine: error bodies, JSON bodies, RIDs, EPK
// arithmetic, partition-key extraction.

#include "tests/emulator/engine_impl.hpp"
#include "georoute/transport/codecs.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace georoute::emulator::detail {

const char* status_code_name(int status) {
  switch (status) {
  case 200:
    return "OK";
  case 201:
    return "Created";
  case 204:
    return "NoContent";
  case 304:
    return "NotModified";
  case 400:
    return "BadRequest";
  case 401:
    return "Unauthorized";
  case 403:
    return "Forbidden";
  case 404:
    return "NotFound";
  case 405:
    return "MethodNotAllowed";
  case 408:
    return "RequestTimeout";
  case 409:
    return "Conflict";
  case 410:
    return "Gone";
  case 412:
    return "PreconditionFailed";
  case 413:
    return "RequestEntityTooLarge";
  case 429:
    return "TooManyRequests";
  case 449:
    return "RetryWith";
  case 500:
    return "InternalServerError";
  case 503:
    return "ServiceUnavailable";
  default:
    return status >= 500 ? "ServiceError" : "Error";
  }
}

http_response error_response(int status, int substatus, std::string message,
                             std::string additional_error_info) {
  http_response res;
  res.status = status;
  error_body body;
  body.code = status_code_name(status);
  body.message = std::move(message);
  body.additional_error_info = std::move(additional_error_info);
  res.body = transport::encode_error_body(body);
  res.set("content-type", "application/json");
  if (substatus != 0) res.set("x-ms-substatus", std::to_string(substatus));
  return res;
}

http_response json_response(int status, std::string body) {
  http_response res;
  res.status = status;
  res.body = std::move(body);
  res.set("content-type", "application/json");
  return res;
}

result<json> parse_body(const std::string& body) {
  if (body.empty())
    return problem{"the request body is empty; expected a JSON object"};
  if (auto deep = transport::check_json_depth(body))
    return problem{"the request body is rejected: " + deep->what};
  try {
    return json::parse(body);
  } catch (const json::exception& e) {
    return problem{std::string{"the request body is not valid JSON: "} +
                   e.what()};
  }
}

std::string lower(std::string text) {
  for (auto& c : text)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

bool is_true(const std::string& text) {
  return lower(text) == "true";
}

std::string rid_text(const std::vector<unsigned char>& bytes) {
  auto s = transport::base64_encode(bytes.data(), bytes.size());
  std::replace(s.begin(), s.end(), '/', '-');
  return s;
}

int64_t unix_seconds(time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch())
      .count();
}

std::string charge_text(double charge) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", charge);
  return buf;
}

unsigned __int128 epk_value(const std::string& epk) {
  unsigned __int128 v = 0;
  for (size_t i = 0; i < 32; ++i) {
    int digit = 0;
    if (i < epk.size()) {
      char c = epk[i];
      digit = c >= '0' && c <= '9'   ? c - '0'
              : c >= 'A' && c <= 'F' ? c - 'A' + 10
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                     : 0;
    }
    v = (v << 4) | static_cast<unsigned>(digit);
  }
  return v;
}

std::string epk_text(unsigned __int128 value) {
  static constexpr char digits[] = "0123456789ABCDEF";
  std::string out(32, '0');
  for (int i = 31; i >= 0; --i) {
    out[static_cast<size_t>(i)] = digits[static_cast<unsigned>(value & 0xF)];
    value >>= 4;
  }
  while (out.size() >= 2 && out.compare(out.size() - 2, 2, "00") == 0)
    out.resize(out.size() - 2);
  return out;
}

std::vector<std::string> initial_boundaries(size_t n) {
  std::vector<std::string> out;
  const unsigned __int128 top = static_cast<unsigned __int128>(0x40) << 120;
  for (size_t i = 1; i < n; ++i)
    out.push_back(epk_text(top / n * i + (top % n) * i / n));
  return out;
}

bool epk_in(const std::string& epk, const std::string& min,
            const std::string& max) {
  return epk_compare(min, epk) <= 0 && epk_compare(epk, max) < 0;
}

uint64_t fnv1a(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

result<std::vector<pk_component>>
pk_from_document(const json& doc, const std::vector<std::string>& paths) {
  std::vector<pk_component> out;
  for (const auto& path : paths) {
    const json* node = &doc;
    size_t pos = 1;
    bool missing = false;
    while (pos <= path.size() && !missing) {
      auto next = path.find('/', pos);
      auto seg = path.substr(pos, next == std::string::npos ? std::string::npos
                                                            : next - pos);
      if (seg.size() >= 2 && seg.front() == '"' && seg.back() == '"')
        seg = seg.substr(1, seg.size() - 2);
      if (!node->is_object() || !node->contains(seg))
        missing = true;
      else
        node = &(*node)[seg];
      if (next == std::string::npos) break;
      pos = next + 1;
    }
    if (missing) {
      out.emplace_back(pk_undefined{});
    } else if (node->is_string()) {
      out.emplace_back(node->get<std::string>());
    } else if (node->is_number()) {
      out.emplace_back(node->get<double>());
    } else if (node->is_boolean()) {
      out.emplace_back(node->get<bool>());
    } else if (node->is_null()) {
      out.emplace_back(pk_null{});
    } else {
      return problem{"the partition key at " + path +
                     " must be a string, number, boolean or null"};
    }
  }
  return out;
}

std::string pk_identity(const std::vector<pk_component>& pk) {
  std::string out;
  for (const auto& c : pk)
    out += encode_for_hashing_v2(c);
  return out;
}

std::string pk_text(const std::vector<pk_component>& pk) {
  auto arr = json::array();
  for (const auto& c : pk) {
    if (auto* s = std::get_if<std::string>(&c))
      arr.push_back(*s);
    else if (auto* d = std::get_if<double>(&c))
      arr.push_back(*d);
    else if (auto* b = std::get_if<bool>(&c))
      arr.push_back(*b);
    else if (std::holds_alternative<pk_null>(c))
      arr.push_back(nullptr);
    else
      arr.push_back(json::object());
  }
  return arr.dump();
}

} // namespace georoute::emulator::detail
