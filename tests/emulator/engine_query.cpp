// Queries, query plans and plain read feeds (the change feed: engine_feed.cpp;
// engine_paging.cpp), and the armed split of split_after_next_query.

#include "tests/emulator/engine_impl.hpp"
#include "tests/emulator/sql.hpp"
#include "georoute/transport/codecs.hpp"

#include <algorithm>

namespace georoute::emulator {

using detail::error_response;
using detail::hash_text;
using detail::json_response;
using detail::make_token;
using detail::page_of;
using detail::page_size;
using detail::read_token;
using detail::resume_point;

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

/// The EPK span a scope reads of `range`: its bounds, narrowed by the
/// scope's start/end EPK when given.
detail::epk_span span_in(const detail::pk_range& range,
                         const detail::query_scope& s) {
  detail::epk_span span{range.info.min_inclusive, range.info.max_exclusive};
  if (!s.start_epk.empty() && epk_compare(s.start_epk, span.min) > 0)
    span.min = s.start_epk;
  if (!s.end_epk.empty() && epk_compare(s.end_epk, span.max) < 0)
    span.max = s.end_epk;
  return span;
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

std::vector<detail::visible_doc> engine::state::visible_docs(
    const request_ctx& ctx, const detail::collection& coll,
    const detail::epk_span& span, const std::vector<pk_component>& pk) const {
  std::vector<const detail::document*> docs;
  for (const auto& [key, doc] : coll.docs) {
    if (!detail::epk_in(doc.epk, span.min, span.max)) continue;
    if (!pk.empty() && !pk_prefix_of(pk, doc.pk)) continue;
    docs.push_back(&doc);
  }
  std::sort(docs.begin(), docs.end(),
            [](auto* x, auto* y) { return x->seq < y->seq; });
  std::vector<detail::visible_doc> out;
  for (const auto* doc : docs) {
    const auto* v = view(*doc, ctx.region_index, ctx.now);
    if (v != nullptr && !v->deleted) out.push_back({doc, &v->body});
  }
  return out;
}

std::vector<nlohmann::json>
engine::state::gather(const request_ctx& ctx, const detail::collection& coll,
                      const detail::query_scope& s,
                      std::vector<uint64_t>* seqs) const {
  std::vector<nlohmann::json> rows;
  for (const auto* range : s.ranges) {
    for (const auto& d : visible_docs(ctx, coll, span_in(*range, s), s.pk)) {
      rows.push_back(*d.body);
      if (seqs != nullptr) seqs->push_back(d.doc->seq);
    }
  }
  return rows;
}

// A range-scoped query whose rows stream one document at a time (no ORDER
// BY, aggregate, DISTINCT, TOP or OFFSET). Its continuation names the last
// document read, by creation number: the children of a split range hold the
// parent's documents in the same creation order, so "after document N" means
// the same on both, and a child takes its parent's token.
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
  auto here = span_in(*s.ranges.front(), s);
  auto resume = read_token(ctx.req, hash, "d", &here);
  if (auto* err = std::get_if<http_response>(&resume)) return std::move(*err);
  auto after = static_cast<uint64_t>(std::get<resume_point>(resume).at);
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
            make_token("d", {static_cast<int64_t>(last), {}, here}, hash));
  }
  add_scope_headers(res, ctx, coll, s);
  return res;
}

// A range-scoped query that needs the client's merge (ORDER BY, aggregate,
// DISTINCT, TOP, OFFSET): its rows come from the whole span at once, so a
// token is an offset into the result over the span the query started on.
// After a split, a child re-runs the query over that span (the documents
// are the same, in the same creation order, so the result is too), skips to
// the offset and keeps the rows of its own documents.
http_response engine::state::offset_range_query(request_ctx& ctx,
                                                const detail::collection& coll,
                                                const detail::query_scope& s,
                                                const std::string& text,
                                                const json& params,
                                                const sql::query& q) {
  auto hash =
      hash_text(detail::fnv1a("range query\n" + text + "\n" + params.dump()));
  auto size = page_size(ctx.req);
  if (auto* err = std::get_if<http_response>(&size)) return std::move(*err);
  auto here = span_in(*s.ranges.front(), s);
  auto resume = read_token(ctx.req, hash, "o", &here);
  if (auto* err = std::get_if<http_response>(&resume)) return std::move(*err);
  const auto& from = std::get<resume_point>(resume);
  auto scope = from.scope ? *from.scope : here;
  auto docs = visible_docs(ctx, coll, scope, {});
  std::vector<json> bodies;
  bodies.reserve(docs.size());
  for (const auto& d : docs)
    bodies.push_back(*d.body);
  auto result = sql::execute_traced(q, bodies, params);
  if (!result) return error_response(400, 0, result.error().what);
  auto& rows = result->rows;
  // An aggregate's row has no single document; it is never split over
  // pages (one row), so it belongs to whoever asks.
  auto ours = [&](size_t i) {
    auto src = result->sources[i];
    return src == sql::no_source ||
           detail::epk_in(docs[src].doc->epk, here.min, here.max);
  };
  auto limit = static_cast<size_t>(std::get<int64_t>(size));
  nlohmann::json page = nlohmann::json::array();
  size_t i = std::min(static_cast<size_t>(from.at), rows.size());
  for (; i < rows.size() && page.size() < limit; ++i)
    if (ours(i)) page.push_back(std::move(rows[i]));
  bool more = false;
  for (size_t j = i; j < rows.size() && !more; ++j)
    more = ours(j);
  ctx.charge = 2 + 0.1 * static_cast<double>(docs.size());
  auto count = page.size();
  nlohmann::json body{
      {"_rid", coll.rid}, {"Documents", std::move(page)}, {"_count", count}};
  auto res = json_response(200, body.dump());
  res.set("x-ms-item-count", std::to_string(count));
  if (more)
    res.set("x-ms-continuation",
            make_token("o", {static_cast<int64_t>(i), scope, here}, hash));
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
  if (s.identity.rfind("range:", 0) == 0) {
    auto res = sql::needs_query_plan(*q.q)
                   ? offset_range_query(ctx, coll, s, q.text, q.params, *q.q)
                   : stream_range_query(ctx, coll, s, q.text, q.params, *q.q);
    if (res.status == 200) split_if_armed(coll, *s.ranges.front());
    return res;
  }
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
  if (!ctx.req.header("a-im").empty()) return change_feed(ctx, coll);
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

void engine::state::split_if_armed(detail::collection& coll,
                                   const detail::pk_range& range) {
  auto id = range.info.id; // split() reallocates coll.ranges
  auto it = std::find(armed_splits.begin(), armed_splits.end(),
                      std::pair{coll.rid, id});
  if (it == armed_splits.end()) return;
  armed_splits.erase(it);
  // A range that split_range retired meanwhile has nothing left to split.
  (void)split(coll, id);
}

result<bool> engine::split_after_next_query(const std::string& db,
                                            const std::string& coll,
                                            const std::string& range_id) {
  std::lock_guard<std::mutex> guard{state_->mutex};
  const auto where = "split_after_next_query: ";
  auto d = state_->dbs.find(db);
  if (d == state_->dbs.end())
    return problem{where + ("database '" + db + "' does not exist")};
  auto c = d->second.colls.find(coll);
  if (c == d->second.colls.end())
    return problem{where + ("collection 'dbs/" + db + "/colls/" + coll +
                            "' does not exist")};
  auto* range = state_->range_by_id(c->second, range_id);
  if (range == nullptr || range->gone)
    return problem{where +
                   ("range '" + range_id + "' of " + c->second.name_path() +
                    " does not exist or is already gone")};
  state_->armed_splits.emplace_back(c->second.rid, range_id);
  return true;
}

} // namespace georoute::emulator
