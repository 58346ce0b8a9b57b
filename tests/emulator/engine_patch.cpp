// Item operations: the one place that decides what create, upsert, read,
// replace, delete and patch do to a document. Point writes
// (engine_documents.cpp), PATCH (here), transactional batches
// (engine_batch.cpp) and bulk requests (engine_bulk.cpp) all run them.
//
// An operation sees what the write set already staged (a batch's earlier
// operations), else the version the serving region sees, and stages its own
// write; nothing is committed here. A failure stages nothing.
//
// PATCH: the body is {"condition"?, "operations"} or a bare array
// (patch.hpp). The condition is a SQL filter, "FROM c WHERE ...", run as
// SELECT * FROM c WHERE ... over the one stored document: no row is 412.
// The id and the partition-key paths cannot be patched (400 naming them).

#include "tests/emulator/engine_impl.hpp"
#include "tests/emulator/patch.hpp"
#include "tests/emulator/sql.hpp"

#include <algorithm>
#include <cctype>

namespace georoute::emulator {

using detail::error_response;

namespace {

detail::op_result failure(int status, int substatus, std::string message) {
  detail::op_result r;
  r.status = status;
  r.substatus = substatus;
  r.message = std::move(message);
  r.charge = 1;
  return r;
}

const std::string not_found_text =
    "Entity with the specified id does not exist in the system.";

/// The condition as a full query: "FROM c WHERE ..." gets "SELECT * ".
std::string condition_query(const std::string& condition) {
  auto b = condition.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return condition;
  auto head = detail::lower(condition.substr(b, 6));
  if (head == "select") return condition;
  return "SELECT * " + condition.substr(b);
}

} // namespace

std::optional<detail::op_result>
engine::state::check_resource(const detail::collection& coll, const json& body,
                              const std::vector<pk_component>& key) const {
  if (!body.is_object())
    return failure(400, 0, "a document must be a JSON object");
  auto i = body.find("id");
  if (i == body.end() || !i->is_string() || i->get<std::string>().empty())
    return failure(400, 0,
                   "The input content is invalid because the required "
                   "properties - 'id; ' - are missing");
  auto id = i->get<std::string>();
  if (id.find_first_of("/\\?#") != std::string::npos || id.size() > 1023)
    return failure(400, 0,
                   "the id '" + id +
                       "' contains '/', '\\', '?' or '#' or is longer than "
                       "1023 characters");
  if (key.empty()) return std::nullopt;
  auto from_doc = detail::pk_from_document(body, coll.pk.paths);
  if (!from_doc) return failure(400, 0, from_doc.error().what);
  if (*from_doc != key)
    return failure(400, 1001,
                   "PartitionKey extracted from document " +
                       detail::pk_text(*from_doc) +
                       " doesn't match the one specified in the header " +
                       detail::pk_text(key));
  return std::nullopt;
}

detail::op_result engine::state::run_op(request_ctx& ctx,
                                        detail::collection& coll,
                                        detail::item_op op,
                                        const std::vector<pk_component>& key,
                                        detail::write_set& ws) {
  using detail::op_kind;
  bool has_body = op.kind == op_kind::create || op.kind == op_kind::upsert ||
                  op.kind == op_kind::replace;
  std::string id = op.id;
  if (has_body) {
    if (auto bad = check_resource(coll, op.body, key)) return *bad;
    auto body_id = op.body.at("id").get<std::string>();
    if (op.kind == op_kind::replace && !id.empty() && body_id != id)
      return failure(400, 0,
                     "the id in the body ('" + body_id +
                         "') differs from the id in the path ('" + id + "')");
    id = body_id;
  } else if (id.empty()) {
    return failure(400, 0, "the operation names no document id");
  }

  // The document as this operation sees it.
  detail::doc_key dk{detail::pk_identity(key), id};
  bool alive = false;
  const json* current = nullptr;
  std::string current_etag;
  if (const auto* s = ws.find(dk)) {
    alive = !s->deleted;
    current = &s->body;
    current_etag = s->etag;
  } else if (auto it = coll.docs.find(dk); it != coll.docs.end()) {
    if (const auto* v = view(it->second, ctx.region_index, ctx.now)) {
      alive = !v->deleted;
      current = &v->body;
      current_etag = v->etag;
    }
  }
  auto precondition = [&](const std::string& header, const std::string& value) {
    return failure(412, 0,
                   "Operation cannot be performed because one of the "
                   "specified precondition is not met (" +
                       header + " " + value + ", current etag " + current_etag +
                       ").");
  };
  if (op.kind == op_kind::create) {
    if (alive)
      return failure(409, 0,
                     "Entity with the specified id already exists in the "
                     "system.");
  } else if (op.kind == op_kind::upsert) {
    if (alive && !op.if_match.empty() && op.if_match != current_etag)
      return precondition("if-match", op.if_match);
  } else {
    if (!alive) return failure(404, 0, not_found_text);
    if (!op.if_match.empty() && op.if_match != current_etag)
      return precondition("if-match", op.if_match);
  }
  if (!op.if_none_match.empty() && alive &&
      (op.if_none_match == "*" || op.if_none_match == current_etag)) {
    if (op.kind != op_kind::read)
      return precondition("if-none-match", op.if_none_match);
    detail::op_result r;
    r.status = 304;
    r.etag = current_etag;
    r.charge = 1;
    return r;
  }
  if (op.kind == op_kind::read) {
    detail::op_result r;
    r.status = 200;
    r.etag = current_etag;
    r.body = current;
    r.charge = 1;
    return r;
  }

  json next;
  if (has_body) {
    next = std::move(op.body);
  } else if (op.kind == op_kind::patch) {
    std::vector<std::string> guarded{"/id"};
    guarded.insert(guarded.end(), coll.pk.paths.begin(), coll.pk.paths.end());
    auto spec = detail::parse_patch(op.body, guarded);
    if (!spec) return failure(400, 0, spec.error().what);
    if (spec->condition) {
      auto q = sql::parse(condition_query(*spec->condition));
      if (!q)
        return failure(400, 0,
                       "the patch condition '" + *spec->condition +
                           "' is not a filter like \"FROM c WHERE c.n > "
                           "0\": " +
                           q.error().what);
      auto rows = sql::execute(**q, {*current}, json::array());
      if (!rows)
        return failure(400, 0,
                       "the patch condition '" + *spec->condition +
                           "' failed: " + rows.error().what);
      if (rows->empty())
        return failure(412, 0,
                       "Precondition Failed: the patch condition '" +
                           *spec->condition + "' is false for the document");
    }
    auto patched = detail::apply_patch(*current, spec->operations);
    if (!patched) return failure(400, 0, patched.error().what);
    // A partition key stays where it is even when an operation reached it
    // through a path the checks did not foresee.
    auto moved = detail::pk_from_document(*patched, coll.pk.paths);
    if (!moved || *moved != key)
      return failure(400, 0,
                     "the patch would change the partition key (" +
                         detail::pk_text(key) +
                         "); the partition key path cannot be patched");
    next = std::move(*patched);
  }

  // Stage the write.
  auto* s = ws.find(dk);
  if (s == nullptr) {
    detail::staged_write w;
    w.key = dk;
    w.id = id;
    w.pk = key;
    w.epk = epk_of(coll, key);
    if (auto it = coll.docs.find(dk); it != coll.docs.end()) {
      w.seq = it->second.seq;
      w.rid = it->second.rid;
    } else {
      w.seq = coll.next_doc_seq++;
      w.rid = doc_rid(coll, w.seq);
    }
    ws.index[dk] = ws.writes.size();
    ws.writes.push_back(std::move(w));
    s = &ws.writes.back();
  }
  s->etag = new_etag();
  s->deleted = op.kind == op_kind::remove;
  s->body = s->deleted ? json{}
                       : doc_json(coll, s->id, s->rid, std::move(next), s->etag,
                                  detail::unix_seconds(ctx.now));
  ++s->ops;
  detail::op_result r;
  r.etag = s->etag;
  r.charge = 5;
  r.wrote = true;
  if (s->deleted) {
    r.status = 204;
  } else {
    r.body = &s->body;
    r.status =
        op.kind == op_kind::create || (op.kind == op_kind::upsert && !alive)
            ? 201
            : 200;
  }
  return r;
}

http_response engine::state::patch_doc(request_ctx& ctx,
                                       detail::collection& coll,
                                       const std::string& id) {
  ctx.charge = 1;
  if (auto forbidden = check_write_region(ctx, coll))
    return std::move(*forbidden);
  // Whatever the Content-Type says (.NET: application/json-patch+json, JS:
  // none), the body is JSON.
  auto parsed = detail::parse_body(ctx.req.body);
  if (!parsed) return error_response(400, 0, parsed.error().what);
  auto target = point_target(ctx, coll);
  if (auto* err = std::get_if<http_response>(&target)) return std::move(*err);
  const auto& key = std::get<0>(target).first;
  auto* range = std::get<0>(target).second;
  detail::item_op op;
  op.kind = detail::op_kind::patch;
  op.id = id;
  op.body = std::move(*parsed);
  op.if_match = ctx.req.header("if-match");
  return point_write(ctx, coll, *range, std::move(op), key);
}

} // namespace georoute::emulator
