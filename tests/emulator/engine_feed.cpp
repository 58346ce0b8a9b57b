// The change feed in latest-version mode: GET .../docs with
// `A-IM: Incremental Feed`.
//
// Positions are change LSNs. A collection has one change sequence (write_doc
// hands out the next number to every committed write), so an etag means the
// same on every range, on the children of a split, on a merged range and in
// every region. A region serves the collection as it was at its watermark,
// the highest change LSN up to which it has seen every change: each document
// in scope at its latest version up to the watermark, when that version is
// live and newer than the client's position, oldest change first. So a region
// never hands out an etag above its watermark, and a lagging region serves
// the older version of a document it has not yet seen replaced.
//
// Start: `If-None-Match` "<LSN>" (after that change) or `*` (from the
// watermark); else `If-Modified-Since` (the changes committed at or after
// that second); else the beginning. An etag wins over a date (the JS SDK
// sends both on every page after the first).

#include "tests/emulator/engine_impl.hpp"

#include <algorithm>
#include <cctype>

namespace georoute::emulator {

using detail::error_response;
using detail::json_response;

namespace {

/// Where a read of the feed starts.
struct feed_start {
  int64_t after = 0;     ///< changes with a larger change LSN
  bool from_now = false; ///< `*`: after the region's watermark
  std::optional<detail::time_point> since; ///< committed at or after
};

std::string trim(const std::string& text) {
  auto b = text.find_first_not_of(" \t");
  if (b == std::string::npos) return {};
  auto e = text.find_last_not_of(" \t");
  return text.substr(b, e - b + 1);
}

std::variant<feed_start, http_response> read_start(const http_request& req) {
  feed_start start;
  auto ims = trim(req.header("if-modified-since"));
  if (!ims.empty()) {
    auto t = transport::parse_rfc1123(ims);
    if (!t)
      return error_response(400, 0,
                            "If-Modified-Since '" + ims +
                                "' is not an RFC 1123 date like 'Tue, 29 Mar "
                                "2016 02:28:29 GMT'");
    start.since = *t;
  }
  auto inm = trim(req.header("if-none-match"));
  if (inm.empty()) return start;
  start.since.reset(); // the etag wins
  if (inm == "*") {
    start.from_now = true;
    return start;
  }
  auto lsn = inm;
  if (lsn.rfind("W/", 0) == 0) lsn = lsn.substr(2);
  if (lsn.size() >= 2 && lsn.front() == '"' && lsn.back() == '"')
    lsn = lsn.substr(1, lsn.size() - 2);
  if (lsn.empty() || lsn.size() > 18 ||
      lsn.find_first_not_of("0123456789") != std::string::npos)
    return error_response(400, 0,
                          "If-None-Match '" + inm +
                              "' is not a change-feed position: send the "
                              "etag of an earlier page (\"46\"), or * to "
                              "start from now");
  start.after = std::stoll(lsn);
  return start;
}

/// An EPK header's value in upper case, or std::nullopt when it is not hex.
std::optional<std::string> epk_header(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return std::nullopt;
    out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

/// The EPK sub-range the request names ([start, end), both set), nothing
/// when it names none, or a 400.
std::variant<std::optional<detail::epk_span>, http_response>
read_epk_headers(const http_request& req) {
  bool has_start = req.headers.count("x-ms-start-epk") != 0;
  bool has_end = req.headers.count("x-ms-end-epk") != 0;
  if (!has_start && !has_end) return std::optional<detail::epk_span>{};
  if (!has_start || !has_end)
    return error_response(400, 0,
                          std::string{"x-ms-start-epk and x-ms-end-epk go "
                                      "together; "} +
                              (has_start ? "x-ms-end-epk" : "x-ms-start-epk") +
                              " is missing");
  if (!req.header("x-ms-documentdb-partitionkey").empty())
    return error_response(400, 0,
                          "x-ms-start-epk and x-ms-end-epk narrow a partition "
                          "key range (x-ms-documentdb-partitionkeyrangeid); "
                          "they cannot go with x-ms-documentdb-partitionkey");
  if (req.header("x-ms-documentdb-partitionkeyrangeid").empty())
    return error_response(400, 0,
                          "x-ms-start-epk and x-ms-end-epk narrow a partition "
                          "key range: they need "
                          "x-ms-documentdb-partitionkeyrangeid");
  const auto& kind = req.header("x-ms-read-key-type");
  if (detail::lower(kind) != "effectivepartitionkeyrange")
    return error_response(
        400, 0,
        "x-ms-start-epk and x-ms-end-epk need "
        "x-ms-read-key-type: EffectivePartitionKeyRange (got " +
            (kind.empty() ? std::string{"none"} : "'" + kind + "'") + ")");
  auto start = epk_header(req.header("x-ms-start-epk"));
  if (!start)
    return error_response(400, 0,
                          "x-ms-start-epk '" + req.header("x-ms-start-epk") +
                              "' is not an EPK (hex digits)");
  auto end = epk_header(req.header("x-ms-end-epk"));
  if (!end || end->empty())
    return error_response(400, 0,
                          "x-ms-end-epk '" + req.header("x-ms-end-epk") +
                              "' is not an EPK (hex digits, not empty)");
  if (epk_compare(*start, *end) >= 0)
    return error_response(400, 0,
                          "x-ms-start-epk '" + *start +
                              "' is not below x-ms-end-epk '" + *end + "'");
  return std::optional<detail::epk_span>{detail::epk_span{*start, *end}};
}

/// The latest version of `doc` at or below change LSN `upto`, or nullptr.
const detail::doc_version* as_of(const detail::document& doc, int64_t upto) {
  for (auto i = doc.versions.rbegin(); i != doc.versions.rend(); ++i)
    if (i->change_lsn <= upto) return &*i;
  return nullptr;
}

bool pk_prefix_of(const std::vector<pk_component>& prefix,
                  const std::vector<pk_component>& key) {
  return prefix.size() <= key.size() &&
         std::equal(prefix.begin(), prefix.end(), key.begin());
}

std::string quoted(int64_t lsn) {
  return "\"" + std::to_string(lsn) + "\"";
}

} // namespace

http_response engine::state::change_feed(request_ctx& ctx,
                                         detail::collection& coll) {
  ctx.charge = 1;
  auto mode = detail::lower(trim(ctx.req.header("a-im")));
  if (mode == "full-fidelity feed")
    return error_response(400, 0,
                          "A-IM: Full-Fidelity Feed (the all versions and "
                          "deletes change feed) is not supported by the "
                          "emulator; use A-IM: Incremental Feed (latest "
                          "version)");
  if (mode != "incremental feed")
    return error_response(400, 0,
                          "A-IM '" + ctx.req.header("a-im") +
                              "' is not a change feed mode; use Incremental "
                              "Feed");
  auto epk = read_epk_headers(ctx.req);
  if (auto* err = std::get_if<http_response>(&epk)) return std::move(*err);
  auto sub = std::get<std::optional<detail::epk_span>>(epk);
  auto sc = scope_of(ctx, coll);
  if (auto* err = std::get_if<http_response>(&sc)) return std::move(*err);
  auto& s = std::get<detail::query_scope>(sc);
  if (sub) {
    const auto& r = s.ranges.front()->info;
    if (epk_compare(sub->min, r.min_inclusive) < 0 ||
        epk_compare(r.max_exclusive, sub->max) < 0)
      return error_response(400, 0,
                            "the EPK range [\"" + sub->min + "\", \"" +
                                sub->max +
                                "\") of x-ms-start-epk/x-ms-end-epk is not "
                                "inside partition key range '" +
                                r.id + "' [\"" + r.min_inclusive + "\", \"" +
                                r.max_exclusive + "\")");
    s.start_epk = sub->min;
    s.end_epk = sub->max;
  }
  auto st = read_start(ctx.req);
  if (auto* err = std::get_if<http_response>(&st)) return std::move(*err);
  auto start = std::get<feed_start>(st);
  auto size = detail::page_size(ctx.req);
  if (auto* err = std::get_if<http_response>(&size)) return std::move(*err);
  if (auto behind = check_session(ctx, s.ranges)) {
    add_doc_headers(*behind, coll);
    return std::move(*behind);
  }

  auto mark = watermark(coll, ctx.region_index, ctx.now);
  if (start.from_now) start.after = mark;
  std::vector<detail::epk_span> spans;
  for (const auto* range : s.ranges) {
    detail::epk_span span{range->info.min_inclusive, range->info.max_exclusive};
    if (!s.start_epk.empty() && epk_compare(s.start_epk, span.min) > 0)
      span.min = s.start_epk;
    if (!s.end_epk.empty() && epk_compare(s.end_epk, span.max) < 0)
      span.max = s.end_epk;
    spans.push_back(std::move(span));
  }
  // Walk the changes after the position, oldest first; a change counts when
  // its version is the one the region serves (the document's latest up to
  // the watermark), live, and in scope. A page ends after `size` documents,
  // never inside a group that shares a change LSN: the etag is an LSN, so
  // the rest of a cut group would be lost.
  auto limit = static_cast<size_t>(std::get<int64_t>(size));
  std::vector<const detail::doc_version*> changed;
  for (auto it = coll.by_change.upper_bound(start.after);
       it != coll.by_change.end() && it->first <= mark; ++it) {
    if (changed.size() >= limit && it->first != changed.back()->change_lsn)
      break;
    const auto& doc = *it->second;
    if (!s.pk.empty() && !pk_prefix_of(s.pk, doc.pk)) continue;
    if (std::none_of(spans.begin(), spans.end(), [&doc](const auto& sp) {
          return detail::epk_in(doc.epk, sp.min, sp.max);
        }))
      continue;
    const auto* v = as_of(doc, mark);
    if (v == nullptr || v->change_lsn != it->first || v->deleted) continue;
    if (start.since && v->committed_at < *start.since) continue;
    changed.push_back(v);
  }
  auto n = changed.size();

  http_response res;
  if (n == 0) {
    // Nothing new: the position moves up to the watermark, which the client
    // keeps (it saw everything in scope up to there).
    res.status = 304;
    res.set("etag", quoted(mark));
  } else {
    bool envelope =
        !ctx.req.header("x-ms-cosmos-changefeed-wire-format-version").empty();
    nlohmann::json docs = nlohmann::json::array();
    for (size_t i = 0; i < n; ++i) {
      const auto* v = changed[i];
      if (envelope) {
        docs.push_back({{"current", v->body},
                        {"metadata",
                         {{"lsn", v->change_lsn},
                          {"crts", detail::unix_seconds(v->committed_at)}}}});
      } else {
        auto body = v->body;
        body["_lsn"] = v->change_lsn;
        docs.push_back(std::move(body));
      }
    }
    nlohmann::json body{
        {"_rid", coll.rid}, {"Documents", std::move(docs)}, {"_count", n}};
    res = json_response(200, body.dump());
    res.set("etag", quoted(changed[n - 1]->change_lsn));
    ctx.charge = 1 + 0.1 * static_cast<double>(n);
  }
  res.set("x-ms-item-count", std::to_string(n));
  add_scope_headers(res, ctx, coll, s);
  return res;
}

} // namespace georoute::emulator
