// Paging of queries, feeds and lists: the one reader and writer of
// continuation tokens.
//
// Continuation: base64 of a JSON object. Most tokens are {"o": offset, "h":
// hash}, where the hash (FNV-1a of the query text, its parameters and its
// scope) ties the token to the query that produced it. Every page re-runs
// the query over what the region sees now and returns rows [o, o + page
// size): simple, and stable as long as the data does not change between
// pages.
//
// A query addressed to one partition-key range must survive a split of that
// range: the SDKs hand a split range's continuation to each child, and the
// service lets a child continue from its parent's position, restricted to
// the child's own EPK sub-range. So a range-scoped token also names the EPK
// span of the request that issued it ("from"), and is accepted on that span
// and on any range inside it, nowhere else; its hash covers the query, not
// the range. Two kinds (engine_query.cpp serves them):
// - "d": the creation number of the last document read, for queries whose
//   rows stream in document order;
// - "o" with "scope": an offset into the result of the query over the EPK
//   span "scope", the range the query started on (ORDER BY, aggregates,
//   DISTINCT, TOP, OFFSET). A child re-runs the query over that whole span,
//   which holds its documents, skips to the offset and keeps the rows of its
//   own documents; its tokens keep the scope and name the child as "from".

#include "tests/emulator/engine_impl.hpp"
#include "georoute/transport/codecs.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string_view>

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

namespace {

std::string span_text(const epk_span& s) {
  return "[\"" + s.min + "\", \"" + s.max + "\")";
}

bool inside(const epk_span& inner, const epk_span& outer) {
  return epk_compare(outer.min, inner.min) <= 0 &&
         epk_compare(inner.max, outer.max) <= 0;
}

std::optional<epk_span> span_member(const json& token, const char* key) {
  auto it = token.find(key);
  if (it == token.end() || !it->is_array() || it->size() != 2 ||
      !(*it)[0].is_string() || !(*it)[1].is_string())
    return std::nullopt;
  return epk_span{(*it)[0].get<std::string>(), (*it)[1].get<std::string>()};
}

} // namespace

std::variant<resume_point, http_response> read_token(const http_request& req,
                                                     const std::string& hash,
                                                     const char* key,
                                                     const epk_span* here) {
  const auto& token = req.header("x-ms-continuation");
  if (token.empty()) return resume_point{};
  auto bad = [&](const std::string& why) {
    return error_response(400, 0, "invalid x-ms-continuation: " + why);
  };
  auto bytes = transport::base64_decode(token);
  if (!bytes) return bad("not a token of this emulator");
  auto parsed = json::parse(bytes->begin(), bytes->end(), nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object() || !parsed.contains(key) ||
      !parsed[key].is_number_integer() || !parsed.contains("h") ||
      !parsed["h"].is_string())
    return bad("not a token of this emulator");
  if (parsed["h"] != hash)
    return bad("the token belongs to another query or scope");
  resume_point p;
  p.at = parsed[key].get<int64_t>();
  if (p.at < 0) return bad("negative position");
  if (here == nullptr) return p;
  p.from = span_member(parsed, "from");
  if (!p.from) return bad("not a token of this emulator (no \"from\" span)");
  if (!inside(*here, *p.from))
    return bad("the token was issued by EPK range " + span_text(*p.from) +
               " and this request reads " + span_text(*here) +
               ", which is not inside it");
  if (std::string_view{key} == "o") {
    p.scope = span_member(parsed, "scope");
    if (!p.scope || !inside(*p.from, *p.scope))
      return bad("not a token of this emulator (no \"scope\" span around "
                 "its \"from\" span)");
  }
  return p;
}

std::string make_token(const char* key, const resume_point& p,
                       const std::string& hash) {
  json token{{key, p.at}, {"h", hash}};
  if (p.scope) token["scope"] = {p.scope->min, p.scope->max};
  if (p.from) token["from"] = {p.from->min, p.from->max};
  auto text = token.dump();
  return transport::base64_encode(
      reinterpret_cast<const unsigned char*>(text.data()), text.size());
}

http_response page_of(const http_request& req, std::vector<nlohmann::json> rows,
                      const std::string& rid, const std::string& list_name,
                      const std::string& identity) {
  auto hash = hash_text(detail::fnv1a(identity));
  auto size = page_size(req);
  if (auto* err = std::get_if<http_response>(&size)) return std::move(*err);
  auto resume = read_token(req, hash, "o");
  if (auto* err = std::get_if<http_response>(&resume)) return std::move(*err);
  auto begin = std::min<size_t>(
      static_cast<size_t>(std::get<resume_point>(resume).at), rows.size());
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
            make_token("o", {static_cast<int64_t>(end), {}, {}}, hash));
  }
  return res;
}

} // namespace georoute::emulator::detail
