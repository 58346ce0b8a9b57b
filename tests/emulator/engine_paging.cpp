// Paging of queries, feeds and lists: the one reader and writer of
// continuation tokens.
//
// Continuation: base64 of {"o": offset, "h": hash}, where the hash (FNV-1a of
// the query text, its parameters and its scope) ties the token to the query
// that produced it. Every page re-runs the query over what the region sees
// now and returns rows [o, o + page size): simple, and stable as long as the
// data does not change between pages.

#include "tests/emulator/engine_impl.hpp"
#include "transport/codecs.hpp"

#include <algorithm>
#include <cstdio>

namespace georoute::emulator::detail {

std::string hash_text(uint64_t h) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::variant<int64_t, http_response> page_size(const http_request& req) {
  const auto& text = req.header("x-ms-max-item-count");
  if (text.empty()) return default_page_size;
  int64_t n = 0;
  try {
    size_t used = 0;
    n = std::stoll(text, &used);
    if (used != text.size()) throw std::invalid_argument("trailing text");
  } catch (const std::exception&) {
    return error_response(
        400, 0, "x-ms-max-item-count '" + text + "' is not an integer");
  }
  if (n == -1) return default_page_size;
  if (n <= 0)
    return error_response(
        400, 0, "x-ms-max-item-count must be -1 or positive, got " + text);
  return n;
}

std::variant<int64_t, http_response>
resume_at(const http_request& req, const std::string& hash, const char* key) {
  const auto& token = req.header("x-ms-continuation");
  if (token.empty()) return int64_t{0};
  auto bad = [&](const std::string& why) {
    return error_response(400, 0, "invalid x-ms-continuation: " + why);
  };
  auto bytes = transport::base64_decode(token);
  if (!bytes) return bad("not a token of this emulator");
  auto parsed =
      nlohmann::json::parse(bytes->begin(), bytes->end(), nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object() || !parsed.contains(key) ||
      !parsed[key].is_number_integer() || !parsed.contains("h") ||
      !parsed["h"].is_string())
    return bad("not a token of this emulator");
  if (parsed["h"] != hash)
    return bad("the token belongs to another query or scope");
  auto at = parsed[key].get<int64_t>();
  if (at < 0) return bad("negative position");
  return at;
}

std::string make_token(const char* key, int64_t at, const std::string& hash) {
  auto token = nlohmann::json{{key, at}, {"h", hash}}.dump();
  return transport::base64_encode(
      reinterpret_cast<const unsigned char*>(token.data()), token.size());
}

http_response page_of(const http_request& req, std::vector<nlohmann::json> rows,
                      const std::string& rid, const std::string& list_name,
                      const std::string& identity) {
  auto hash = hash_text(detail::fnv1a(identity));
  auto size = page_size(req);
  if (auto* err = std::get_if<http_response>(&size)) return std::move(*err);
  auto offset = resume_at(req, hash);
  if (auto* err = std::get_if<http_response>(&offset)) return std::move(*err);
  auto begin = std::min<size_t>(static_cast<size_t>(std::get<int64_t>(offset)),
                                rows.size());
  auto end = std::min<size_t>(
      begin + static_cast<size_t>(std::get<int64_t>(size)), rows.size());
  nlohmann::json page = nlohmann::json::array();
  for (size_t i = begin; i < end; ++i)
    page.push_back(std::move(rows[i]));
  nlohmann::json body{
      {"_rid", rid}, {list_name, std::move(page)}, {"_count", end - begin}};
  auto res = json_response(200, body.dump());
  res.set("x-ms-item-count", std::to_string(end - begin));
  if (end < rows.size()) {
    res.set("x-ms-continuation",
            make_token("o", static_cast<int64_t>(end), hash));
  }
  return res;
}

} // namespace georoute::emulator::detail
