// Transactional batches: POST .../docs with x-ms-cosmos-is-batch-request:
// true and x-ms-cosmos-batch-atomic: true (values compared ignoring case),
// addressed by x-ms-documentdb-partitionkey, and the body format that bulk
// requests (engine_bulk.cpp) share.
//
// The body is a JSON array of 1 to 100 operations {operationType, id?,
// resourceBody?, partitionKey?, ifMatch?, ifNoneMatch?}; over 2 MB is 413.
// The request is checked before anything runs: an operation's partitionKey
// (a JSON string holding the key's array text) must be the header's key, a
// body's key too (400/1001 as for a point write), and read, replace, delete
// and patch need an id. Then the operations run in order on a write set, so
// each sees the ones before it. The first failure (status >= 400) discards
// everything: 207, that operation's status and subStatusCode, 424 for every
// other one. Otherwise every write commits at once, as ONE write: one change
// LSN (the change feed shows the batch as one group) and one session-token
// advance; 200 with one result per operation in request order. `Prefer:
// return=minimal` leaves out the documents of writes. A batch is a write:
// it goes to the write region of its partition (403/3 elsewhere).

#include "tests/emulator/engine_impl.hpp"

#include <cmath>

namespace georoute::emulator {

using detail::error_response;
using detail::json_response;

namespace detail {

namespace {

struct op_type_name {
  const char* name;
  op_kind kind;
};

constexpr op_type_name op_types[] = {
    {"Create", op_kind::create}, {"Upsert", op_kind::upsert},
    {"Read", op_kind::read},     {"Replace", op_kind::replace},
    {"Delete", op_kind::remove}, {"Patch", op_kind::patch},
};

std::string op_label(size_t i, const std::string& type) {
  return "operation " + std::to_string(i) +
         (type.empty() ? std::string{} : " (" + type + ")");
}

} // namespace

std::variant<std::vector<batch_op>, http_response>
parse_batch_ops(const std::string& body) {
  if (body.size() > max_batch_body_bytes)
    return error_response(413, 0,
                          "the batch request body is " +
                              std::to_string(body.size()) +
                              " bytes, over the limit of " +
                              std::to_string(max_batch_body_bytes) + " (2 MB)");
  auto parsed = parse_body(body);
  if (!parsed)
    return error_response(400, 0,
                          "a batch request body is a JSON array of "
                          "operations: " +
                              parsed.error().what);
  if (!parsed->is_array())
    return error_response(400, 0,
                          "a batch request body is a JSON array of "
                          "operations, got a " +
                              std::string{parsed->type_name()});
  if (parsed->empty())
    return error_response(400, 0,
                          "Batch request has no operations (1 to " +
                              std::to_string(max_batch_operations) +
                              " per request).");
  if (parsed->size() > max_batch_operations)
    return error_response(400, 0,
                          "Batch request has more operations than what is "
                          "supported: " +
                              std::to_string(parsed->size()) +
                              " operations, at most " +
                              std::to_string(max_batch_operations) + ".");
  std::vector<batch_op> out;
  out.reserve(parsed->size());
  for (size_t i = 0; i < parsed->size(); ++i) {
    auto& j = (*parsed)[i];
    if (!j.is_object())
      return error_response(
          400, 0, op_label(i, {}) + ": expected an object, got " + j.dump());
    batch_op b;
    auto type = j.find("operationType");
    if (type == j.end() || !type->is_string())
      return error_response(400, 0,
                            op_label(i, {}) +
                                ": operationType must be one of Create, "
                                "Upsert, Read, Replace, Delete, Patch" +
                                (type == j.end()
                                     ? std::string{" (missing)"}
                                     : " (got " + type->dump() + ")"));
    b.type = type->get<std::string>();
    auto known = std::find_if(
        std::begin(op_types), std::end(op_types),
        [&b](const op_type_name& t) { return lower(b.type) == lower(t.name); });
    if (known == std::end(op_types))
      return error_response(400, 0,
                            op_label(i, {}) + ": operationType '" + b.type +
                                "' is not one of Create, Upsert, Read, "
                                "Replace, Delete, Patch");
    b.op.kind = known->kind;
    for (auto [field, dest] :
         {std::pair<const char*, std::string*>{"id", &b.op.id},
          {"ifMatch", &b.op.if_match},
          {"ifNoneMatch", &b.op.if_none_match}}) {
      auto f = j.find(field);
      if (f == j.end() || f->is_null()) continue;
      if (!f->is_string())
        return error_response(400, 0,
                              op_label(i, b.type) + ": " + field +
                                  " must be a string, got " + f->dump());
      *dest = f->get<std::string>();
    }
    if (auto f = j.find("partitionKey"); f != j.end() && !f->is_null()) {
      if (!f->is_string())
        return error_response(400, 0,
                              op_label(i, b.type) +
                                  ": partitionKey must be a JSON string "
                                  "holding the key's array, like "
                                  "\"[\\\"a\\\"]\", got " +
                                  f->dump());
      b.pk_text = f->get<std::string>();
    }
    if (auto f = j.find("resourceBody"); f != j.end())
      b.op.body = std::move(*f);
    bool needs_body =
        b.op.kind == op_kind::create || b.op.kind == op_kind::upsert ||
        b.op.kind == op_kind::replace || b.op.kind == op_kind::patch;
    if (needs_body && b.op.body.is_null())
      return error_response(400, 0,
                            op_label(i, b.type) + ": resourceBody is missing");
    out.push_back(std::move(b));
  }
  return out;
}

std::string op_result_text(const op_result& r, bool minimal, double& charge) {
  std::string body;
  if (r.body != nullptr && !r.failed()) body = r.body->dump();
  charge = r.charge;
  if (r.wrote) charge += static_cast<double>(body.size()) / 1024.0;
  charge = std::round(charge * 100) / 100;
  json head{{"statusCode", r.status}, {"requestCharge", charge}};
  if (!r.etag.empty() && !r.failed()) head["eTag"] = r.etag;
  if (r.substatus != 0) head["subStatusCode"] = r.substatus;
  if (r.retry_after_ms >= 0) head["retryAfterMilliseconds"] = r.retry_after_ms;
  if (r.failed() && !r.message.empty()) head["message"] = r.message;
  auto text = head.dump();
  if (!body.empty() && !(minimal && r.wrote)) {
    text.pop_back();
    text += ",\"resourceBody\":";
    text += body;
    text += '}';
  }
  return text;
}

std::string array_text(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ',';
    out += items[i];
  }
  out += ']';
  return out;
}

bool prefers_minimal(const http_request& req) {
  return lower(req.header("prefer")).find("return=minimal") !=
         std::string::npos;
}

} // namespace detail

http_response engine::state::batch_docs(request_ctx& ctx,
                                        detail::collection& coll) {
  ctx.charge = 1;
  if (auto forbidden = check_write_region(ctx, coll))
    return std::move(*forbidden);
  if (ctx.kind == "batch") return transactional_batch(ctx, coll);
  return bulk(ctx, coll);
}

http_response engine::state::transactional_batch(request_ctx& ctx,
                                                 detail::collection& coll) {
  if (ctx.req.header("x-ms-documentdb-partitionkey").empty())
    return error_response(400, 0,
                          "a transactional batch (x-ms-cosmos-batch-atomic: "
                          "true) needs x-ms-documentdb-partitionkey: every "
                          "operation is in that one logical partition");
  auto target = point_target(ctx, coll);
  if (auto* err = std::get_if<http_response>(&target)) return std::move(*err);
  const auto& key = std::get<0>(target).first;
  auto* range = std::get<0>(target).second;
  auto parsed = detail::parse_batch_ops(ctx.req.body);
  if (auto* err = std::get_if<http_response>(&parsed)) return std::move(*err);
  auto& ops = std::get<std::vector<detail::batch_op>>(parsed);

  // Every operation belongs to the header's partition, and names its target.
  for (size_t i = 0; i < ops.size(); ++i) {
    const auto& b = ops[i];
    auto label = "operation " + std::to_string(i) + " (" + b.type + ")";
    if (b.pk_text) {
      auto op_key = parse_partition_key_json(*b.pk_text);
      if (!op_key)
        return error_response(
            400, 0,
            label + ": partitionKey '" + *b.pk_text +
                "' is not a partition key: " + op_key.error().what);
      if (*op_key != key)
        return error_response(400, 0,
                              label + ": partitionKey " + *b.pk_text +
                                  " differs from the batch's "
                                  "x-ms-documentdb-partitionkey " +
                                  detail::pk_text(key));
    }
    bool has_body = b.op.kind == detail::op_kind::create ||
                    b.op.kind == detail::op_kind::upsert ||
                    b.op.kind == detail::op_kind::replace;
    if (has_body) {
      if (auto bad = check_resource(coll, b.op.body, key))
        return error_response(bad->status, bad->substatus,
                              label + ": " + bad->message);
    } else if (b.op.id.empty()) {
      return error_response(400, 0, label + ": id is missing");
    }
  }

  bool minimal = detail::prefers_minimal(ctx.req);
  detail::write_set ws;
  std::vector<std::string> texts;
  std::vector<int> statuses;
  double total = 0;
  std::optional<size_t> failed;
  for (size_t i = 0; i < ops.size() && !failed; ++i) {
    auto r = run_op(ctx, coll, std::move(ops[i].op), key, ws);
    double charge = 0;
    texts.push_back(detail::op_result_text(r, minimal, charge));
    statuses.push_back(r.status);
    total += charge;
    if (r.failed()) failed = i;
  }
  int status = 200;
  if (failed) {
    // Nothing commits: the failing operation keeps its answer, every other
    // one (those that ran too) depends on it.
    status = 207;
    auto failing = texts[*failed];
    auto failing_status = statuses[*failed];
    texts.assign(ops.size(), R"({"statusCode":424,"requestCharge":0})");
    statuses.assign(ops.size(), 424);
    texts[*failed] = std::move(failing);
    statuses[*failed] = failing_status;
  } else {
    commit(ctx, coll, *range, ws);
  }
  auto body = detail::array_text(texts);
  ctx.charge = std::max(1.0, total);
  count_ops(ctx, coll.name_path(), range->info.id, statuses);
  auto res = json_response(status, std::move(body));
  add_write_headers(res, ctx, coll, *range);
  return res;
}

void engine::state::count_ops(const request_ctx& ctx,
                              const std::string& collection,
                              const std::string& range,
                              const std::vector<int>& statuses) {
  auto& tally = op_counts[range_key{ctx.arrived, collection, range}];
  auto& by_status = ctx.kind == "batch" ? tally.batch : tally.bulk;
  for (int s : statuses)
    ++by_status[s];
}

} // namespace georoute::emulator
