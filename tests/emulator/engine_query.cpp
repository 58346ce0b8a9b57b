// Queries, query plans and read feeds (their paging: engine_paging.cpp).

#include "tests/emulator/engine_impl.hpp"
#include "tests/emulator/sql.hpp"
#include "transport/codecs.hpp"

#include <algorithm>

namespace georoute::emulator {

using detail::error_response;
using detail::hash_text;
using detail::json_response;
using detail::make_token;
using detail::page_of;
using detail::page_size;
using detail::resume_at;

namespace {

/// A query request body.
struct query_spec {
  std::string text;
  nlohmann::json params = nlohmann::json::array();
  std::shared_ptr<const sql::query> q;
};

std::variant<query_spec, http_response>
parse_query_body(const std::string& body) {
  auto parsed = detail::parse_body(body);
  if (!parsed) return error_response(400, 0, parsed.error().what);
  query_spec spec;
  if (parsed->is_object()) {
    auto q = parsed->find("query");
    if (q == parsed->end() || !q->is_string())
      return error_response(400, 0,
                            "the query body needs a string \"query\" member");
    spec.text = q->get<std::string>();
    auto p = parsed->find("parameters");
    if (p != parsed->end() && !p->is_null()) {
      if (!p->is_array())
        return error_response(400, 0,
                              "\"parameters\" must be an array of "
                              "{\"name\":..,\"value\":..}");
      spec.params = *p;
    }
  } else if (parsed->is_string()) {
    spec.text = parsed->get<std::string>();
  } else {
    return error_response(400, 0,
                          "the query body must be {\"query\":..,"
                          "\"parameters\":[..]}");
  }
  auto q = sql::parse(spec.text);
  if (!q) return error_response(400, 0, q.error().what);
  spec.q = std::move(*q);
  return spec;
}

} // namespace

namespace {

bool pk_prefix_of(const std::vector<pk_component>& prefix,
                  const std::vector<pk_component>& key) {
  return prefix.size() <= key.size() &&
         std::equal(prefix.begin(), prefix.end(), key.begin());
}

} // namespace

std::variant<detail::query_scope, http_response>
engine::state::scope_of(request_ctx& ctx, detail::collection& coll) {
  detail::query_scope s;
  auto pk = header_pk(ctx, coll, false, true);
  if (auto* err = std::get_if<http_response>(&pk)) return std::move(*err);
  s.pk = std::move(std::get<std::vector<pk_component>>(pk));
  const auto& range_id = ctx.req.header("x-ms-documentdb-partitionkeyrangeid");
  if (!s.pk.empty()) {
    auto epk = epk_of(coll, s.pk);
    if (s.pk.size() == coll.pk.paths.size()) {
      s.ranges = {range_of(coll, epk)};
    } else {
      epk_range r{epk, epk + "FF", true, false};
      for (auto* range : current_ranges(coll))
        if (epk_compare(r.min, range->info.max_exclusive) < 0 &&
            epk_compare(range->info.min_inclusive, r.max) < 0)
          s.ranges.push_back(range);
    }
    s.identity = "pk:" + detail::pk_text(s.pk);
  } else if (!range_id.empty()) {
    auto* range = range_by_id(coll, range_id);
    if (range == nullptr)
      return error_response(400, 0,
                            "partition key range '" + range_id +
                                "' does not exist in " + coll.name_path());
    if (auto gone = gone_range(ctx, coll)) return std::move(*gone);
    s.ranges = {range};
    s.start_epk = ctx.req.header("x-ms-start-epk");
    s.end_epk = ctx.req.header("x-ms-end-epk");
    s.identity = "range:" + range_id + ":" + s.start_epk + ":" + s.end_epk;
  } else {
    s.ranges = current_ranges(coll);
    s.cross_partition = true;
    s.identity = "all";
  }
  if (s.ranges.empty() || s.ranges.front() == nullptr)
    return error_response(500, 0, "no range holds the partition key");
  return s;
}

std::vector<nlohmann::json>
engine::state::gather(const request_ctx& ctx, const detail::collection& coll,
                      const detail::query_scope& s,
                      std::vector<uint64_t>* seqs) const {
  std::vector<nlohmann::json> rows;
  for (const auto* range : s.ranges) {
    std::vector<const detail::document*> docs;
    for (const auto& [key, doc] : coll.docs) {
      if (!detail::epk_in(doc.epk, range->info.min_inclusive,
                          range->info.max_exclusive))
        continue;
      if (!s.pk.empty() && !pk_prefix_of(s.pk, doc.pk)) continue;
      if (!s.start_epk.empty() && epk_compare(doc.epk, s.start_epk) < 0)
        continue;
      if (!s.end_epk.empty() && epk_compare(doc.epk, s.end_epk) >= 0) continue;
      docs.push_back(&doc);
    }
    std::sort(docs.begin(), docs.end(),
              [](auto* x, auto* y) { return x->seq < y->seq; });
    for (const auto* doc : docs) {
      const auto* v = view(*doc, ctx.region_index, ctx.now);
      if (v != nullptr && !v->deleted) {
        rows.push_back(v->body);
        if (seqs != nullptr) seqs->push_back(doc->seq);
      }
    }
  }
  return rows;
}

// A range-scoped query whose rows stream one document at a time (no ORDER
// BY, aggregate, DISTINCT, TOP or OFFSET). Its continuation names the last
// document read, by creation number, and the query, not the range: the
// service's backend tokens stay valid on the children of a split range, and
// the SDKs resume a split range's token on each child (with its EPK bounds).
// The children hold the parent's documents in the same creation order, so
// "after document N" means the same on both.
http_response engine::state::stream_range_query(request_ctx& ctx,
                                                const detail::collection& coll,
                                                const detail::query_scope& s,
                                                const std::string& text,
                                                const json& params,
                                                const sql::query& q) {
  auto hash =
      hash_text(detail::fnv1a("stream\n" + text + "\n" + params.dump()));
  auto size = page_size(ctx.req);
  if (auto* err = std::get_if<http_response>(&size)) return std::move(*err);
  auto resume = resume_at(ctx.req, hash, "d");
  if (auto* err = std::get_if<http_response>(&resume)) return std::move(*err);
  auto after = static_cast<uint64_t>(std::get<int64_t>(resume));
  std::vector<uint64_t> seqs;
  auto docs = gather(ctx, coll, s, &seqs);
  // gather() goes range by range; one range here, already in seq order.
  auto limit = static_cast<size_t>(std::get<int64_t>(size));
  nlohmann::json page = nlohmann::json::array();
  uint64_t last = after;
  bool more = false;
  size_t i = 0;
  while (i < docs.size() && seqs[i] <= after)
    ++i;
  // Documents in chunks of the room left on the page: without a JOIN a
  // document yields at most one row, so a chunk always fits; with one it
  // may not, and that chunk goes one document at a time (a document's
  // rows are never split over two pages).
  while (i < docs.size()) {
    if (page.size() >= limit) {
      more = true;
      break;
    }
    auto room = limit - page.size();
    auto end = std::min(docs.size(), i + room);
    std::vector<nlohmann::json> chunk(
        std::make_move_iterator(docs.begin() + i),
        std::make_move_iterator(docs.begin() + end));
    auto rows = sql::execute(q, chunk, params);
    if (!rows) return error_response(400, 0, rows.error().what);
    if (rows->size() <= room) {
      for (auto& r : *rows)
        page.push_back(std::move(r));
      last = seqs[end - 1];
      i = end;
      continue;
    }
    for (size_t j = 0; j < chunk.size(); ++j) {
      auto one = sql::execute(q, {chunk[j]}, params);
      if (!one) return error_response(400, 0, one.error().what);
      if (!page.empty() && page.size() + one->size() > limit) {
        more = true;
        break;
      }
      for (auto& r : *one)
        page.push_back(std::move(r));
      last = seqs[i + j];
    }
    if (!more) more = end < docs.size();
    break;
  }
  ctx.charge = 2 + 0.1 * static_cast<double>(page.size());
  auto count = page.size();
  nlohmann::json body{
      {"_rid", coll.rid}, {"Documents", std::move(page)}, {"_count", count}};
  auto res = json_response(200, body.dump());
  res.set("x-ms-item-count", std::to_string(count));
  if (more) {
    res.set("x-ms-continuation",
            make_token("d", static_cast<int64_t>(last), hash));
  }
  add_scope_headers(res, ctx, coll, s);
  return res;
}

void engine::state::add_scope_headers(http_response& res,
                                      const request_ctx& ctx,
                                      const detail::collection& coll,
                                      const detail::query_scope& s) const {
  std::string tokens;
  for (const auto* range : s.ranges) {
    if (!tokens.empty()) tokens += ',';
    tokens += session_entry(*range, ctx.region_index, ctx.now);
  }
  res.set("x-ms-session-token", tokens);
  res.set("x-ms-content-path", coll.rid);
  res.set("x-ms-alt-content-path", coll.name_path());
  if (s.ranges.size() == 1) {
    res.set("x-ms-documentdb-partitionkeyrangeid", s.ranges.front()->info.id);
    res.set(
        "lsn",
        std::to_string(
            progress(*s.ranges.front(), ctx.region_index, ctx.now).global_lsn));
  }
}

http_response engine::state::query_plan(request_ctx& ctx,
                                        detail::collection& coll) {
  auto spec = parse_query_body(ctx.req.body);
  if (auto* err = std::get_if<http_response>(&spec)) return std::move(*err);
  auto& s = std::get<query_spec>(spec);
  auto plan = sql::make_plan(*s.q, s.text, coll.pk, s.params);
  if (!plan) return error_response(400, 0, plan.error().what);
  auto res = json_response(200, transport::encode_query_plan(*plan));
  res.set("x-ms-content-path", coll.rid);
  res.set("x-ms-alt-content-path", coll.name_path());
  return res;
}

http_response engine::state::query_docs(request_ctx& ctx,
                                        detail::collection& coll) {
  ctx.charge = 1;
  auto spec = parse_query_body(ctx.req.body);
  if (auto* err = std::get_if<http_response>(&spec)) return std::move(*err);
  auto& q = std::get<query_spec>(spec);
  auto sc = scope_of(ctx, coll);
  if (auto* err = std::get_if<http_response>(&sc)) return std::move(*err);
  auto& s = std::get<detail::query_scope>(sc);
  if (s.cross_partition && sql::needs_query_plan(*q.q)) {
    auto plan = sql::make_plan(*q.q, q.text, coll.pk, q.params);
    if (!plan) return error_response(400, 0, plan.error().what);
    return error_response(
        400, 1004,
        "The provided cross partition query can not be "
        "directly served by the gateway. This is a first "
        "chance (internal) exception that all newer clients "
        "will know how to handle gracefully. (Cross "
        "partition query only supports 'VALUE <AggreateFunc>' "
        "for aggregates.)",
        transport::encode_query_plan(*plan));
  }
  if (auto behind = check_session(ctx, s.ranges)) return std::move(*behind);
  if (s.identity.rfind("range:", 0) == 0 && !sql::needs_query_plan(*q.q))
    return stream_range_query(ctx, coll, s, q.text, q.params, *q.q);
  auto rows = gather(ctx, coll, s);
  ctx.charge = 2 + 0.1 * static_cast<double>(rows.size());
  auto result = sql::execute(*q.q, rows, q.params);
  if (!result) return error_response(400, 0, result.error().what);
  auto res =
      page_of(ctx.req, std::move(*result), coll.rid, "Documents",
              "query\n" + q.text + "\n" + q.params.dump() + "\n" + s.identity);
  add_scope_headers(res, ctx, coll, s);
  return res;
}

http_response engine::state::read_feed(request_ctx& ctx,
                                       detail::collection& coll) {
  ctx.charge = 1;
  if (!ctx.req.header("a-im").empty())
    return error_response(400, 0,
                          "the change feed (A-IM on docs) is not supported by "
                          "the emulator");
  auto sc = scope_of(ctx, coll);
  if (auto* err = std::get_if<http_response>(&sc)) return std::move(*err);
  auto& s = std::get<detail::query_scope>(sc);
  if (auto behind = check_session(ctx, s.ranges)) return std::move(*behind);
  auto rows = gather(ctx, coll, s);
  ctx.charge = 1 + 0.1 * static_cast<double>(rows.size());
  auto res = page_of(ctx.req, std::move(rows), coll.rid, "Documents",
                     "feed\n" + s.identity);
  add_scope_headers(res, ctx, coll, s);
  return res;
}

http_response engine::state::query_list(request_ctx& ctx,
                                        const std::string& rid,
                                        const std::string& list_name,
                                        const std::vector<json>& items) {
  if (ctx.op != "query")
    return page_of(ctx.req, items, rid, list_name, "list\n" + list_name);
  auto spec = parse_query_body(ctx.req.body);
  if (auto* err = std::get_if<http_response>(&spec)) return std::move(*err);
  auto& q = std::get<query_spec>(spec);
  auto result = sql::execute(*q.q, items, q.params);
  if (!result) return error_response(400, 0, result.error().what);
  return page_of(ctx.req, std::move(*result), rid, list_name,
                 "list\n" + list_name + "\n" + q.text + "\n" + q.params.dump());
}

} // namespace georoute::emulator
