// Databases, collections, the pkranges feed and range splits.

#include "tests/emulator/engine_impl.hpp"
#include "georoute/transport/codecs.hpp"

#include <algorithm>

namespace georoute::emulator {

using detail::error_response;
using detail::json_response;

namespace {

/// Ids may not contain the characters the service rejects.
bool valid_id(const std::string& id) {
  return !id.empty() && id.size() <= 255 &&
         id.find_first_of("/\\?#") == std::string::npos && id.back() != ' ';
}

/// A create body's `id`, or a 400.
std::variant<std::string, http_response> body_id(const nlohmann::json& body) {
  if (!body.is_object())
    return error_response(400, 0, "the request body must be a JSON object");
  auto i = body.find("id");
  if (i == body.end() || !i->is_string())
    return error_response(400, 0,
                          "The input content is invalid because the required "
                          "properties - 'id; ' - are missing");
  auto id = i->get<std::string>();
  if (!valid_id(id))
    return error_response(400, 0,
                          "the id '" + id +
                              "' is invalid: it must be 1-255 characters "
                              "without '/', '\\\\', '?', '#' or a trailing "
                              "space");
  return id;
}

http_response write_forbidden(const std::string& region,
                              const std::string& writer) {
  return error_response(403, 3,
                        "region '" + region +
                            "' does not accept writes on this single-write "
                            "account; the write region is '" +
                            writer + "'");
}

} // namespace

// -- lookups and RIDs --------------------------------------------------------

detail::database* engine::state::find_db(const std::string& seg,
                                         bool rid_based) {
  if (rid_based) {
    auto i = db_by_rid.find(seg);
    if (i == db_by_rid.end()) return nullptr;
    auto d = dbs.find(i->second);
    return d == dbs.end() ? nullptr : &d->second;
  }
  auto d = dbs.find(seg);
  return d == dbs.end() ? nullptr : &d->second;
}

detail::collection* engine::state::find_coll(detail::database& db,
                                             const std::string& seg,
                                             bool rid_based) {
  if (rid_based) {
    auto i = coll_by_rid.find(seg);
    if (i == coll_by_rid.end() || i->second.first != db.id) return nullptr;
    auto c = db.colls.find(i->second.second);
    return c == db.colls.end() ? nullptr : &c->second;
  }
  auto c = db.colls.find(seg);
  return c == db.colls.end() ? nullptr : &c->second;
}

std::string engine::state::new_db_rid() {
  for (;;) {
    uint64_t x = id_rng();
    std::vector<unsigned char> bytes{static_cast<unsigned char>(x),
                                     static_cast<unsigned char>(x >> 8),
                                     static_cast<unsigned char>(x >> 16), 0};
    if (bytes[0] == 0 && bytes[1] == 0 && bytes[2] == 0) continue;
    auto rid = detail::rid_text(bytes);
    if (db_by_rid.count(rid) == 0 && dbs.count(rid) == 0) return rid;
  }
}

std::string engine::state::new_coll_rid(const std::string& db_rid) {
  std::string std_alphabet = db_rid;
  std::replace(std_alphabet.begin(), std_alphabet.end(), '-', '/');
  auto db_bytes = transport::base64_decode(std_alphabet);
  for (;;) {
    uint64_t x = id_rng();
    std::vector<unsigned char> bytes;
    if (db_bytes && db_bytes->size() == 4)
      bytes = *db_bytes;
    else
      bytes.assign(4, 1);
    for (int i = 0; i < 4; ++i)
      bytes.push_back(static_cast<unsigned char>(x >> (8 * i)));
    auto rid = detail::rid_text(bytes);
    if (coll_by_rid.count(rid) == 0) return rid;
  }
}

nlohmann::json engine::state::db_json(const detail::database& db) const {
  return json{{"id", db.id},
              {"_rid", db.rid},
              {"_self", "dbs/" + db.rid + "/"},
              {"_etag", db.etag},
              {"_colls", "colls/"},
              {"_users", "users/"},
              {"_ts", db.ts}};
}

collection_info engine::state::coll_info(const detail::collection& c) const {
  collection_info info;
  info.id = c.id;
  info.rid = c.rid;
  info.self = "dbs/" + c.db_rid + "/colls/" + c.rid + "/";
  info.etag = c.etag;
  info.partition_key = c.pk;
  return info;
}

// -- databases ---------------------------------------------------------------

http_response engine::state::handle_dbs(request_ctx& ctx) {
  const auto& method = ctx.req.method;
  ctx.charge = 1;
  if (ctx.segs.size() == 1) {
    if (method == "GET" || ctx.op == "query") {
      std::vector<json> items;
      for (const auto& [id, db] : dbs)
        items.push_back(db_json(db));
      return query_list(ctx, "", "Databases", items);
    }
    if (method != "POST")
      return error_response(405, 0, "dbs supports GET and POST");
    if (!can_write(ctx.region)) return write_forbidden(ctx.region, writer());
    auto body = detail::parse_body(ctx.req.body);
    if (!body) return error_response(400, 0, body.error().what);
    auto id = body_id(*body);
    if (auto* err = std::get_if<http_response>(&id)) return std::move(*err);
    const auto& name = std::get<std::string>(id);
    if (dbs.count(name) != 0)
      return error_response(409, 0,
                            "Resource with specified id or name already "
                            "exists: database '" +
                                name + "'");
    detail::database db;
    db.id = name;
    db.rid = new_db_rid();
    db.etag = new_etag();
    db.ts = detail::unix_seconds(ctx.now);
    db_by_rid[db.rid] = name;
    auto res = json_response(201, db_json(db).dump());
    res.set("x-ms-content-path", db.rid);
    res.set("x-ms-alt-content-path", "dbs/" + name);
    dbs.emplace(name, std::move(db));
    return res;
  }
  auto* db = find_db(ctx.segs[1], ctx.rid_based);
  if (db == nullptr)
    return error_response(404, 0,
                          "database '" + ctx.segs[1] + "' does not exist");
  if (method == "GET") {
    auto res = json_response(200, db_json(*db).dump());
    res.set("etag", db->etag);
    res.set("x-ms-content-path", db->rid);
    res.set("x-ms-alt-content-path", "dbs/" + db->id);
    return res;
  }
  if (method == "DELETE") {
    if (!can_write(ctx.region)) return write_forbidden(ctx.region, writer());
    for (const auto& [id, c] : db->colls)
      coll_by_rid.erase(c.rid);
    db_by_rid.erase(db->rid);
    dbs.erase(db->id);
    http_response res;
    res.status = 204;
    return res;
  }
  return error_response(405, 0, "a database supports GET and DELETE");
}

// -- collections -------------------------------------------------------------

namespace {

/// The partition-key definition of a create body, or a 400.
std::variant<partition_key_definition, http_response>
parse_pk_definition(const nlohmann::json& body) {
  partition_key_definition def;
  auto i = body.find("partitionKey");
  if (i == body.end() || i->is_null()) {
    def.paths = {"/_partitionKey"};
    return def;
  }
  if (!i->is_object())
    return error_response(400, 0, "partitionKey must be an object");
  auto paths = i->find("paths");
  if (paths == i->end() || !paths->is_array() || paths->empty() ||
      paths->size() > 3)
    return error_response(400, 0,
                          "partitionKey.paths must be an array of 1 to 3 "
                          "paths");
  for (const auto& p : *paths) {
    if (!p.is_string() || p.get<std::string>().size() < 2 ||
        p.get<std::string>()[0] != '/')
      return error_response(400, 0,
                            "partitionKey.paths: every path must be a string "
                            "like \"/pk\"");
    def.paths.push_back(p.get<std::string>());
  }
  def.kind = paths->size() > 1 ? "MultiHash" : "Hash";
  if (auto k = i->find("kind"); k != i->end()) {
    if (!k->is_string() || (*k != "Hash" && *k != "MultiHash"))
      return error_response(400, 0,
                            "partitionKey.kind must be \"Hash\" or "
                            "\"MultiHash\"");
    def.kind = k->get<std::string>();
  }
  if (def.kind == "Hash" && def.paths.size() != 1)
    return error_response(400, 0,
                          "partitionKey.kind \"Hash\" takes exactly one path; "
                          "use \"MultiHash\" for hierarchical keys");
  def.version = 2;
  if (auto v = i->find("version"); v != i->end() && !v->is_null()) {
    if (!v->is_number_integer() || (*v != 1 && *v != 2))
      return error_response(400, 0, "partitionKey.version must be 1 or 2");
    if (*v == 1)
      return error_response(400, 0,
                            "partitionKey.version 1 is not supported by the "
                            "emulator; use version 2");
  }
  return def;
}

} // namespace

http_response engine::state::handle_colls(request_ctx& ctx,
                                          detail::database& db) {
  const auto& method = ctx.req.method;
  ctx.charge = 1;
  if (ctx.segs.size() == 3) {
    if (method == "GET" || ctx.op == "query") {
      std::vector<json> items;
      for (const auto& [id, c] : db.colls)
        items.push_back(
            json::parse(transport::encode_collection(coll_info(c))));
      return query_list(ctx, db.rid, "DocumentCollections", items);
    }
    if (method != "POST")
      return error_response(405, 0, "colls supports GET and POST");
    if (!can_write(ctx.region)) return write_forbidden(ctx.region, writer());
    auto body = detail::parse_body(ctx.req.body);
    if (!body) return error_response(400, 0, body.error().what);
    auto id = body_id(*body);
    if (auto* err = std::get_if<http_response>(&id)) return std::move(*err);
    const auto& name = std::get<std::string>(id);
    auto def = parse_pk_definition(*body);
    if (auto* err = std::get_if<http_response>(&def)) return std::move(*err);
    if (db.colls.count(name) != 0)
      return error_response(409, 0,
                            "Resource with specified id or name already "
                            "exists: collection '" +
                                name + "'");
    detail::collection c;
    c.id = name;
    c.db_id = db.id;
    c.db_rid = db.rid;
    c.rid = new_coll_rid(db.rid);
    c.etag = new_etag();
    c.ts = detail::unix_seconds(ctx.now);
    c.pk = std::get<partition_key_definition>(def);
    auto bounds = detail::initial_boundaries(opts.initial_ranges);
    for (size_t i = 0; i < opts.initial_ranges; ++i) {
      detail::pk_range r;
      r.info.id = std::to_string(i);
      r.info.min_inclusive = i == 0 ? "" : bounds[i - 1];
      r.info.max_exclusive = i + 1 == opts.initial_ranges ? "FF" : bounds[i];
      r.local_lsn.assign(regions.size(), 0);
      c.ranges.push_back(std::move(r));
    }
    c.next_range_id = static_cast<long long>(opts.initial_ranges);
    coll_by_rid[c.rid] = {db.id, name};
    auto res = json_response(201, transport::encode_collection(coll_info(c)));
    res.set("etag", c.etag);
    res.set("x-ms-content-path", c.rid);
    res.set("x-ms-alt-content-path", c.name_path());
    db.colls.emplace(name, std::move(c));
    return res;
  }
  auto* c = find_coll(db, ctx.segs[3], ctx.rid_based);
  if (c == nullptr)
    return error_response(404, 0,
                          "collection '" + ctx.segs[3] + "' does not exist");
  if (method == "GET") {
    auto res = json_response(200, transport::encode_collection(coll_info(*c)));
    res.set("etag", c->etag);
    res.set("x-ms-content-path", c->rid);
    res.set("x-ms-alt-content-path", c->name_path());
    return res;
  }
  if (method == "DELETE") {
    if (!can_write(ctx.region)) return write_forbidden(ctx.region, writer());
    coll_by_rid.erase(c->rid);
    db.colls.erase(c->id);
    http_response res;
    res.status = 204;
    return res;
  }
  return error_response(405, 0, "a collection supports GET and DELETE");
}

// -- pkranges ----------------------------------------------------------------

http_response engine::state::handle_pkranges(request_ctx& ctx,
                                             detail::collection& coll) {
  ctx.charge = 1;
  bool incremental =
      detail::lower(ctx.req.header("a-im")) == "incremental feed";
  auto etag = "\"" + std::to_string(coll.pk_etag) + "\"";
  std::optional<uint64_t> since;
  auto inm = ctx.req.header("if-none-match");
  if (inm.rfind("W/", 0) == 0) inm = inm.substr(2);
  if (inm.size() >= 2 && inm.front() == '"' && inm.back() == '"')
    inm = inm.substr(1, inm.size() - 2);
  if (!inm.empty() &&
      std::all_of(inm.begin(), inm.end(),
                  [](char c) { return c >= '0' && c <= '9'; }) &&
      inm.size() < 19)
    since = std::stoull(inm);

  pkranges_page page;
  page.rid = coll.rid;
  page.etag = etag;
  if (incremental && since && *since == coll.pk_etag) {
    http_response res;
    res.status = 304;
    res.set("etag", etag);
    res.set("x-ms-content-path", coll.rid);
    res.set("x-ms-alt-content-path", coll.name_path());
    return res;
  }
  if (incremental && since && *since < coll.pk_etag) {
    // Only what changed since: the ranges created by later splits, gone
    // ones included so that a client can follow the lineage.
    for (const auto& r : coll.ranges)
      if (r.created_etag > *since) page.ranges.push_back(r.info);
  } else {
    for (auto* r : current_ranges(coll))
      page.ranges.push_back(r->info);
  }
  auto res = json_response(200, transport::encode_pkranges(page));
  res.set("etag", etag);
  res.set("x-ms-item-count", std::to_string(page.ranges.size()));
  res.set("x-ms-content-path", coll.rid);
  res.set("x-ms-alt-content-path", coll.name_path());
  return res;
}

// -- splits ------------------------------------------------------------------

result<std::vector<std::string>>
engine::state::split(detail::collection& coll, const std::string& range_id) {
  auto it = std::find_if(coll.ranges.begin(), coll.ranges.end(),
                         [&](const detail::pk_range& r) {
                           return r.info.id == range_id && !r.gone;
                         });
  if (it == coll.ranges.end())
    return problem{"split_range: range '" + range_id + "' of " +
                   coll.name_path() + " does not exist or is already gone"};
  const auto min = it->info.min_inclusive;
  const auto max = it->info.max_exclusive;

  // The median EPK of the range's live documents, if both halves keep one.
  std::vector<std::string> epks;
  for (const auto& [key, doc] : coll.docs)
    if (!doc.versions.empty() && !doc.versions.back().deleted &&
        detail::epk_in(doc.epk, min, max))
      epks.push_back(doc.epk);
  std::sort(epks.begin(), epks.end(), epk_less);
  std::string at;
  if (!epks.empty()) {
    auto candidate = epks[epks.size() / 2];
    if (epk_compare(candidate, epks.front()) == 0) {
      auto next = std::find_if(epks.begin(), epks.end(), [&](const auto& e) {
        return epk_compare(e, epks.front()) > 0;
      });
      candidate = next == epks.end() ? std::string{} : *next;
    }
    at = candidate;
  }
  if (at.empty()) {
    // No documents to balance: the midpoint of the span, with the top of
    // the V2 space at 40 (EPK V2 masks the two top bits).
    const unsigned __int128 cap = static_cast<unsigned __int128>(0x40) << 120;
    auto lo = detail::epk_value(min);
    auto hi = std::min(detail::epk_value(max), cap);
    if (hi <= lo + 1)
      return problem{"split_range: range '" + range_id +
                     "' is too narrow to split"};
    at = detail::epk_text(lo + (hi - lo) / 2);
  }

  auto parent = *it;
  it->gone = true;
  ++coll.pk_etag;
  std::vector<std::string> ids;
  for (int half = 0; half < 2; ++half) {
    detail::pk_range child;
    child.info.id = std::to_string(coll.next_range_id++);
    child.info.min_inclusive = half == 0 ? min : at;
    child.info.max_exclusive = half == 0 ? at : max;
    child.info.parents = parent.info.parents;
    child.info.parents.push_back(parent.info.id);
    child.created_etag = coll.pk_etag;
    child.lsn = parent.lsn;
    child.local_lsn = parent.local_lsn;
    child.log = parent.log;
    child.write_region = parent.write_region; // a moved range stays moved
    ids.push_back(child.info.id);
    coll.ranges.push_back(std::move(child));
  }
  return ids;
}

// -- merges ------------------------------------------------------------------

result<std::string> engine::state::merge_pair(detail::collection& coll,
                                              const std::string& left_id,
                                              const std::string& right_id) {
  auto current = [&] {
    std::string list;
    for (auto* r : current_ranges(coll))
      list += (list.empty() ? "'" : ", '") + r->info.id + "'";
    return list;
  };
  auto find = [&](const std::string& id) -> result<detail::pk_range*> {
    auto* r = range_by_id(coll, id);
    if (r == nullptr || r->gone)
      return problem{"range '" + id + "' of " + coll.name_path() +
                     (r == nullptr ? " does not exist" : " is gone") +
                     " (current: " + current() + ")"};
    return r;
  };
  if (left_id == right_id)
    return problem{"range '" + left_id + "' cannot be merged with itself"};
  auto a = find(left_id);
  if (!a) return a.error();
  auto b = find(right_id);
  if (!b) return b.error();
  // Either order: the lower one is the left.
  auto* left = *a;
  auto* right = *b;
  if (epk_less(right->info.min_inclusive, left->info.min_inclusive))
    std::swap(left, right);
  if (epk_compare(left->info.max_exclusive, right->info.min_inclusive) != 0)
    return problem{"ranges '" + left->info.id + "' [" +
                   left->info.min_inclusive + ", " + left->info.max_exclusive +
                   ") and '" + right->info.id + "' [" +
                   right->info.min_inclusive + ", " +
                   right->info.max_exclusive + ") are not adjacent"};

  // As a split's children start where their parent was, the merged range
  // starts where the further of its parents was: session tokens of either
  // parent are satisfied, and its writes go on above both.
  detail::pk_range merged;
  merged.info.id = std::to_string(coll.next_range_id++);
  merged.info.min_inclusive = left->info.min_inclusive;
  merged.info.max_exclusive = right->info.max_exclusive;
  for (const auto* parent : {left, right}) {
    for (const auto& p : parent->info.parents)
      if (std::find(merged.info.parents.begin(), merged.info.parents.end(),
                    p) == merged.info.parents.end())
        merged.info.parents.push_back(p);
  }
  merged.info.parents.push_back(left->info.id);
  merged.info.parents.push_back(right->info.id);
  merged.lsn = std::max(left->lsn, right->lsn);
  merged.local_lsn = left->local_lsn;
  merged.local_lsn.resize(
      std::max(left->local_lsn.size(), right->local_lsn.size()), 0);
  for (size_t i = 0; i < right->local_lsn.size(); ++i)
    merged.local_lsn[i] = std::max(merged.local_lsn[i], right->local_lsn[i]);
  // Both parents' unreplicated writes, in LSN order: a region's progress on
  // the merged range stays below the first of them it has not seen.
  merged.log = left->log;
  merged.log.insert(merged.log.end(), right->log.begin(), right->log.end());
  std::stable_sort(merged.log.begin(), merged.log.end(),
                   [](const auto& x, const auto& y) { return x.lsn < y.lsn; });
  detail::note_everywhere(merged.log, 0);
  // A per-partition failover move survives only when both halves agree.
  if (left->write_region == right->write_region)
    merged.write_region = left->write_region;
  left->gone = true;
  right->gone = true;
  ++coll.pk_etag;
  merged.created_etag = coll.pk_etag;
  auto id = merged.info.id;
  coll.ranges.push_back(std::move(merged)); // invalidates left and right
  return id;
}

} // namespace georoute::emulator
