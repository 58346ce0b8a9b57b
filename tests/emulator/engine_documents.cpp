// Documents: point reads and writes, placement by EPK, replication with a lag,
// LSNs and vector session tokens.

#include "tests/emulator/engine_impl.hpp"

#include <algorithm>

namespace georoute::emulator {

using detail::error_response;
using detail::json_response;

// -- ranges ------------------------------------------------------------------

detail::pk_range* engine::state::range_of(detail::collection& coll,
                                          const std::string& epk) {
  for (auto& r : coll.ranges)
    if (!r.gone &&
        detail::epk_in(epk, r.info.min_inclusive, r.info.max_exclusive))
      return &r;
  return nullptr;
}

std::vector<detail::pk_range*>
engine::state::current_ranges(detail::collection& coll) {
  std::vector<detail::pk_range*> out;
  for (auto& r : coll.ranges)
    if (!r.gone) out.push_back(&r);
  std::sort(out.begin(), out.end(), [](auto* x, auto* y) {
    return epk_less(x->info.min_inclusive, y->info.min_inclusive);
  });
  return out;
}

detail::pk_range* engine::state::range_by_id(detail::collection& coll,
                                             const std::string& id) {
  for (auto& r : coll.ranges)
    if (r.info.id == id) return &r;
  return nullptr;
}

std::optional<http_response>
engine::state::gone_range(const request_ctx& ctx, detail::collection& coll) {
  const auto& id = ctx.req.header("x-ms-documentdb-partitionkeyrangeid");
  if (id.empty()) return std::nullopt;
  auto* range = range_by_id(coll, id);
  if (range == nullptr || !range->gone) return std::nullopt;
  auto res = error_response(410, 1002,
                            "partition key range '" + id +
                                "' is gone (it split or merged); refresh the "
                                "partition key ranges");
  add_doc_headers(res, coll);
  return res;
}

// -- replication and sessions ------------------------------------------------

const detail::doc_version* engine::state::view(const detail::document& doc,
                                               size_t region,
                                               time_point now) const {
  for (auto i = doc.versions.rbegin(); i != doc.versions.rend(); ++i)
    if (i->seen_by(region, now)) return &*i;
  return nullptr;
}

int64_t engine::state::watermark(const detail::collection& coll, size_t region,
                                 time_point now) const {
  // The log is in change-LSN order: the first change the region has not
  // seen bounds what it may serve.
  for (const auto& e : coll.changes)
    if (!e.seen_by(region, now)) return e.change_lsn - 1;
  return coll.change_lsn;
}

vector_session_token engine::state::progress(const detail::pk_range& range,
                                             size_t region,
                                             time_point now) const {
  vector_session_token t;
  // Multi-write tokens carry one local LSN per region, single-write ones
  // none. The SDKs refuse to merge two tokens of the same version whose
  // region sets differ, so the two forms get different versions.
  t.version = opts.multi_write ? 1 : 0;
  t.global_lsn = range.lsn;
  auto locals = range.local_lsn;
  locals.resize(regions.size(), 0);
  // Entries every region has seen say nothing: start after them. The log
  // holds `prune_margin` of writes, so a scan from its front would cost a
  // request time in proportion to the write rate.
  auto first = std::partition_point(
      range.log.begin(), range.log.end(),
      [now](const detail::write_entry& e) { return e.all_seen_by <= now; });
  for (auto it = first; it != range.log.end(); ++it) {
    const auto& e = *it;
    if (e.seen_by(region, now)) continue;
    t.global_lsn = std::min(t.global_lsn, e.lsn - 1);
    if (e.origin < locals.size())
      locals[e.origin] = std::min(locals[e.origin], e.local_lsn - 1);
  }
  if (opts.multi_write)
    for (size_t i = 0; i < locals.size(); ++i)
      t.local_lsns[static_cast<int64_t>(i)] = locals[i];
  return t;
}

std::string engine::state::session_entry(const detail::pk_range& range,
                                         size_t region, time_point now) const {
  return range.info.id + ":" + render(progress(range, region, now));
}

namespace {

/// Whether a region at `seen` may serve a read that requires `required`.
/// Multi-write tokens are judged by their per-region LSNs (the global LSN of
/// one region says nothing about another's writes); others by the global LSN.
bool satisfied(const vector_session_token& seen,
               const vector_session_token& required, bool multi_write) {
  if (multi_write && !required.local_lsns.empty()) {
    for (const auto& [region, lsn] : required.local_lsns) {
      auto i = seen.local_lsns.find(region);
      if (i != seen.local_lsns.end() && i->second < lsn) return false;
    }
    return true;
  }
  return seen.global_lsn >= required.global_lsn;
}

} // namespace

std::optional<http_response>
engine::state::check_session(request_ctx& ctx,
                             const std::vector<detail::pk_range*>& ranges) {
  const auto& text = ctx.req.header("x-ms-session-token");
  if (text.empty()) return std::nullopt;
  auto level = detail::lower(ctx.req.header("x-ms-consistency-level"));
  if (!level.empty() && level != "session") return std::nullopt;
  auto tokens = parse_session_header(text);
  if (!tokens)
    return error_response(400, 0,
                          "invalid x-ms-session-token: " + tokens.error().what);
  for (auto* range : ranges) {
    std::optional<vector_session_token> required;
    auto consider = [&](const std::string& id) {
      auto i = tokens->find(id);
      if (i == tokens->end()) return;
      required = required ? merge(*required, i->second) : i->second;
    };
    consider(range->info.id);
    for (const auto& parent : range->info.parents)
      consider(parent);
    if (!required) continue;
    auto seen = progress(*range, ctx.region_index, ctx.now);
    if (!satisfied(seen, *required, opts.multi_write)) {
      auto res =
          error_response(404, 1002,
                         "The read session is not available for the "
                         "input session token (region '" +
                             ctx.region + "' has range " + range->info.id +
                             " at " + render(seen) + ", the token requires " +
                             render(*required) + ").");
      res.set("x-ms-session-token", range->info.id + ":" + render(seen));
      return res;
    }
  }
  return std::nullopt;
}

// -- partition keys ----------------------------------------------------------

std::variant<std::vector<pk_component>, http_response>
engine::state::header_pk(request_ctx& ctx, const detail::collection& coll,
                         bool required, bool allow_prefix) {
  const auto& text = ctx.req.header("x-ms-documentdb-partitionkey");
  if (text.empty()) {
    if (required)
      return error_response(400, 0,
                            "the x-ms-documentdb-partitionkey header is "
                            "required for point operations on a partitioned "
                            "collection");
    return std::vector<pk_component>{};
  }
  auto pk = parse_partition_key_json(text);
  if (!pk)
    return error_response(
        400, 0, "invalid x-ms-documentdb-partitionkey: " + pk.error().what);
  auto paths = coll.pk.paths.size();
  bool prefix = allow_prefix && coll.pk.kind == "MultiHash" && !pk->empty() &&
                pk->size() < paths;
  if (pk->size() != paths && !prefix)
    return error_response(400, 0,
                          "the partition key " + text + " has " +
                              std::to_string(pk->size()) +
                              " components, the collection's partition key "
                              "has " +
                              std::to_string(paths) + " paths");
  return std::move(*pk);
}

std::variant<std::pair<std::vector<pk_component>, detail::pk_range*>,
             http_response>
engine::state::point_target(request_ctx& ctx, detail::collection& coll) {
  auto pk = header_pk(ctx, coll, true, false);
  if (auto* err = std::get_if<http_response>(&pk)) return std::move(*err);
  auto& key = std::get<std::vector<pk_component>>(pk);
  auto* range = range_of(coll, epk_of(coll, key));
  if (range == nullptr)
    return error_response(500, 0, "no range holds the partition key");
  return std::make_pair(std::move(key), range);
}

std::string engine::state::epk_of(const detail::collection& coll,
                                  const std::vector<pk_component>& pk) const {
  return coll.pk.kind == "MultiHash" ? epk_v2_multihash(pk) : epk_v2(pk);
}

nlohmann::json engine::state::doc_json(const detail::collection& coll,
                                       const std::string& id,
                                       const std::string& rid, json body,
                                       const std::string& etag,
                                       int64_t ts) const {
  for (const char* system :
       {"_rid", "_self", "_etag", "_attachments", "_ts", "_lsn"})
    body.erase(system);
  body["id"] = id;
  body["_rid"] = rid;
  body["_self"] =
      "dbs/" + coll.db_rid + "/colls/" + coll.rid + "/docs/" + rid + "/";
  body["_etag"] = etag;
  body["_attachments"] = "attachments/";
  body["_ts"] = ts;
  return body;
}

void engine::state::add_doc_headers(http_response& res,
                                    const detail::collection& coll) const {
  res.set("x-ms-content-path", coll.rid);
  res.set("x-ms-alt-content-path", coll.name_path());
}

// -- dispatch ----------------------------------------------------------------

http_response engine::state::handle_docs(request_ctx& ctx,
                                         detail::collection& coll) {
  const auto& method = ctx.req.method;
  if (ctx.op == "read" || ctx.op == "query" || ctx.op == "feed")
    if (auto forbidden = check_hub_only(ctx, coll)) {
      add_doc_headers(*forbidden, coll);
      return std::move(*forbidden);
    }
  if (ctx.segs.size() == 5) {
    if (method == "GET") return read_feed(ctx, coll);
    if (method != "POST")
      return error_response(405, 0, "docs supports GET and POST");
    if (!ctx.req.header("a-im").empty())
      return error_response(400, 0,
                            "A-IM '" + ctx.req.header("a-im") +
                                "' applies to GET (the change feed), not to "
                                "POST");
    if (ctx.op == "query_plan") return query_plan(ctx, coll);
    if (ctx.op == "query") return query_docs(ctx, coll);
    if (auto gone = gone_range(ctx, coll)) return std::move(*gone);
    if (ctx.kind == "batch" || ctx.kind == "bulk") return batch_docs(ctx, coll);
    return write_doc(ctx, coll, {});
  }
  if (auto gone = gone_range(ctx, coll)) return std::move(*gone);
  auto id = ctx.segs[5];
  if (ctx.rid_based) {
    auto i = coll.doc_by_rid.find(id);
    if (i == coll.doc_by_rid.end()) {
      auto res = error_response(404, 0,
                                "Entity with the specified id does not exist "
                                "in the system.");
      add_doc_headers(res, coll);
      return res;
    }
    id = i->second.second;
  }
  if (method == "GET") return read_doc(ctx, coll, id);
  if (method == "PUT" || method == "DELETE") return write_doc(ctx, coll, id);
  if (method == "PATCH") return patch_doc(ctx, coll, id);
  return error_response(405, 0,
                        "a document supports GET, PUT, PATCH and DELETE");
}

// -- point reads -------------------------------------------------------------

http_response engine::state::read_doc(request_ctx& ctx,
                                      detail::collection& coll,
                                      const std::string& id) {
  ctx.charge = 1;
  auto target = point_target(ctx, coll);
  if (auto* err = std::get_if<http_response>(&target)) return std::move(*err);
  const auto& key = std::get<0>(target).first;
  auto* range = std::get<0>(target).second;
  if (auto behind = check_session(ctx, {range})) {
    add_doc_headers(*behind, coll);
    return std::move(*behind);
  }
  auto decorate = [&](http_response& res) {
    add_doc_headers(res, coll);
    res.set("x-ms-session-token",
            session_entry(*range, ctx.region_index, ctx.now));
    res.set("lsn", std::to_string(
                       progress(*range, ctx.region_index, ctx.now).global_lsn));
    res.set("x-ms-documentdb-partitionkeyrangeid", range->info.id);
  };
  auto doc = coll.docs.find({detail::pk_identity(key), id});
  const detail::doc_version* v =
      doc == coll.docs.end() ? nullptr
                             : view(doc->second, ctx.region_index, ctx.now);
  if (v == nullptr || v->deleted) {
    auto res = error_response(404, 0,
                              "Entity with the specified id does not exist in "
                              "the system.");
    decorate(res);
    return res;
  }
  http_response res;
  if (!ctx.req.header("if-none-match").empty() &&
      ctx.req.header("if-none-match") == v->etag) {
    res.status = 304;
  } else {
    res = json_response(200, v->body.dump());
  }
  res.set("etag", v->etag);
  decorate(res);
  return res;
}

// -- writes ------------------------------------------------------------------

http_response engine::state::write_doc(request_ctx& ctx,
                                       detail::collection& coll,
                                       const std::string& url_id) {
  const auto& method = ctx.req.method;
  ctx.charge = 1;
  // The region must be the write region of the range (engine_ppaf.cpp).
  if (auto forbidden = check_write_region(ctx, coll))
    return std::move(*forbidden);
  detail::item_op op;
  op.id = url_id;
  op.if_match = ctx.req.header("if-match");
  if (method == "DELETE") {
    op.kind = detail::op_kind::remove;
  } else {
    auto parsed = detail::parse_body(ctx.req.body);
    if (!parsed) return error_response(400, 0, parsed.error().what);
    op.body = std::move(*parsed);
    // The body's own problems come before the header's.
    if (auto bad = check_resource(coll, op.body, {}))
      return error_response(bad->status, bad->substatus, bad->message);
    if (method == "PUT")
      op.kind = detail::op_kind::replace;
    else if (detail::is_true(ctx.req.header("x-ms-documentdb-is-upsert")))
      op.kind = detail::op_kind::upsert;
    else
      op.kind = detail::op_kind::create;
  }
  auto target = point_target(ctx, coll);
  if (auto* err = std::get_if<http_response>(&target)) return std::move(*err);
  const auto& key = std::get<0>(target).first;
  auto* range = std::get<0>(target).second;

  return point_write(ctx, coll, *range, std::move(op), key);
}

http_response engine::state::point_write(request_ctx& ctx,
                                         detail::collection& coll,
                                         detail::pk_range& range,
                                         detail::item_op op,
                                         const std::vector<pk_component>& key) {
  detail::write_set ws;
  auto r = run_op(ctx, coll, std::move(op), key, ws);
  if (r.failed()) {
    auto res = error_response(r.status, r.substatus, r.message);
    add_doc_headers(res, coll);
    return res;
  }
  auto text = r.body == nullptr ? std::string{} : r.body->dump();
  commit(ctx, coll, range, ws);
  ctx.charge = 5 + static_cast<double>(text.size()) / 1024.0;
  http_response res;
  if (r.status == 204)
    res.status = 204;
  else
    res = json_response(r.status, std::move(text));
  res.set("etag", r.etag);
  add_write_headers(res, ctx, coll, range);
  return res;
}

void engine::state::add_write_headers(http_response& res,
                                      const request_ctx& ctx,
                                      const detail::collection& coll,
                                      const detail::pk_range& range) const {
  add_doc_headers(res, coll);
  res.set("x-ms-session-token",
          session_entry(range, ctx.region_index, ctx.now));
  res.set("lsn", std::to_string(range.lsn));
  res.set("x-ms-documentdb-partitionkeyrangeid", range.info.id);
}

std::string engine::state::doc_rid(const detail::collection& coll,
                                   uint64_t seq) const {
  std::string std_alphabet = coll.rid;
  std::replace(std_alphabet.begin(), std_alphabet.end(), '-', '/');
  auto bytes = transport::base64_decode(std_alphabet)
                   .value_or(std::vector<unsigned char>(8, 0));
  for (int i = 0; i < 8; ++i)
    bytes.push_back(static_cast<unsigned char>(seq >> (8 * i)));
  return detail::rid_text(bytes);
}

void engine::state::commit(request_ctx& ctx, detail::collection& coll,
                           detail::pk_range& range, detail::write_set& ws) {
  if (ws.empty()) return;
  // One write: one entry in the range's log (one LSN, so the session token
  // advances once) and one change LSN, whatever the number of documents.
  auto origin = ctx.region_index;
  detail::replicated seen;
  seen.origin = origin;
  seen.visible_at = ctx.now + opts.replication_lag;
  seen.extra = region_lag;
  range.local_lsn.resize(regions.size(), 0);
  detail::write_entry entry;
  static_cast<detail::replicated&>(entry) = seen;
  entry.lsn = ++range.lsn;
  entry.local_lsn = ++range.local_lsn[origin];
  range.log.push_back(entry);
  detail::note_everywhere(range.log, range.log.size() - 1);
  detail::change_entry change;
  static_cast<detail::replicated&>(change) = seen;
  change.change_lsn = ++coll.change_lsn;
  coll.changes.push_back(change);

  std::vector<detail::document*> written;
  for (auto& w : ws.writes) {
    auto existing = coll.docs.find(w.key);
    if (existing == coll.docs.end()) {
      detail::document doc;
      doc.id = w.id;
      doc.pk = w.pk;
      doc.epk = w.epk;
      doc.seq = w.seq;
      doc.rid = w.rid;
      coll.doc_by_rid[doc.rid] = w.key;
      existing = coll.docs.emplace(w.key, std::move(doc)).first;
    }
    auto& doc = existing->second;
    detail::doc_version v;
    static_cast<detail::replicated&>(v) = seen;
    v.etag = std::move(w.etag);
    v.lsn = entry.lsn;
    v.change_lsn = change.change_lsn;
    v.committed_at = ctx.now;
    v.deleted = w.deleted;
    if (!v.deleted) v.body = std::move(w.body);
    coll.by_change.emplace(v.change_lsn, &doc);
    doc.versions.push_back(std::move(v));
    doc.writes += w.ops;
    written.push_back(&doc);
  }
  ws = {};

  // Fold what every region has seen for a while (a region with extra lag
  // sees a write later, and the write is kept until it has). A version goes
  // only once every region's change-feed watermark has passed the version
  // that replaced it: a lagging region's feed serves the collection as of
  // its watermark, and may still need the older one.
  auto horizon = ctx.now - detail::prune_margin;
  while (!range.log.empty() && range.log.front().everywhere_at() <= horizon)
    range.log.pop_front();
  while (!coll.changes.empty() &&
         coll.changes.front().everywhere_at() <= horizon) {
    coll.change_floor = coll.changes.front().change_lsn;
    coll.changes.pop_front();
  }
  for (auto* doc : written) {
    size_t keep_from = 0;
    for (size_t i = 0; i + 1 < doc->versions.size(); ++i)
      if (doc->versions[i + 1].change_lsn <= coll.change_floor)
        keep_from = i + 1;
    for (size_t i = 0; i < keep_from; ++i) {
      auto [from, to] = coll.by_change.equal_range(doc->versions[i].change_lsn);
      for (auto it = from; it != to; ++it)
        if (it->second == doc) {
          coll.by_change.erase(it);
          break;
        }
    }
    if (keep_from == 0) continue;
    doc->versions.erase(doc->versions.begin(),
                        doc->versions.begin() +
                            static_cast<std::ptrdiff_t>(keep_from));
    // A burst of versions (a lagging region holds them all) would otherwise
    // leave every document it touched at its highest capacity ever: memory
    // that creeps up with each rarer burst and reads as a leak in a soak.
    if (doc->versions.capacity() >= 4 * doc->versions.size() + 4)
      doc->versions.shrink_to_fit();
  }
}

} // namespace georoute::emulator
