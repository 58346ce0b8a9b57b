// Bulk requests: POST .../docs with x-ms-cosmos-is-batch-request: true and
// x-ms-cosmos-batch-atomic: false, addressed to one partition-key range by
// x-ms-documentdb-partitionkeyrangeid (required; unknown: 400; split or
// merged away: 410/1002 for the whole request, answered before this file).
// The body is the batch body (engine_batch.cpp); every operation carries
// its own partitionKey.
//
// The operations are independent and run in order, each committed on its
// own (one change LSN, one session-token advance each). Per operation, in
// this order: its key must lie in the addressed range (else 410/1002, never
// written); a bulk-op fault may answer it; the range's ops budget may turn
// it away (429/3200 with retryAfterMilliseconds); then it runs. With
// x-ms-cosmos-batch-continue-on-error: false (default true) the first
// failure stops the request: the rest answer 424. The results together hold
// at most engine_options::bulk_response_cap_bytes: an operation whose result
// would pass that is undone and it and every later one answer 413/3402,
// unexecuted (the first operation always runs). 200 when every operation
// succeeded (2xx), else 207.

#include "tests/emulator/engine_impl.hpp"

#include <cmath>
#include <cstdio>

namespace georoute::emulator {

using detail::error_response;
using detail::json_response;

namespace {

detail::op_result refusal(int status, int substatus, std::string message,
                          int64_t retry_after_ms = -1) {
  detail::op_result r;
  r.status = status;
  r.substatus = substatus;
  r.message = std::move(message);
  r.retry_after_ms = retry_after_ms;
  return r;
}

const char* const unexecuted_424 = R"({"statusCode":424,"requestCharge":0})";

std::string capped_413(size_t cap) {
  return R"({"statusCode":413,"requestCharge":0,"subStatusCode":3402,)"
         R"("message":"the response reached its size limit of )" +
         std::to_string(cap) + R"( bytes; send the operation again"})";
}

} // namespace

std::optional<detail::op_result> engine::state::bulk_op_fault_for(
    const request_ctx& ctx, const std::string& type, const std::string& range) {
  for (auto it = op_faults.begin(); it != op_faults.end(); ++it) {
    auto& f = it->second;
    if (!f.region.empty() && f.region != ctx.arrived) continue;
    if (!f.collection.empty() && f.collection != ctx.collection) continue;
    if (!f.range_id.empty() && f.range_id != range) continue;
    if (!f.operation_type.empty() &&
        detail::lower(f.operation_type) != detail::lower(type))
      continue;
    auto r = refusal(f.status, f.substatus,
                     "injected bulk-op fault (rule " +
                         std::to_string(it->first) + ")",
                     f.retry_after_ms);
    if (f.count > 0 && --f.count == 0) op_faults.erase(it);
    return r;
  }
  return std::nullopt;
}

namespace {

double bucket_size(const range_ops_budget& b) {
  return b.burst > 0 ? b.burst : std::max(1.0, b.ops_per_second);
}

} // namespace

std::optional<detail::op_result>
engine::state::take_op_token(const request_ctx& ctx,
                             const detail::collection& coll,
                             const std::string& range, int64_t& turned_away) {
  auto name = coll.name_path();
  for (const auto& [id, b] : budgets) {
    if (!b.region.empty() && b.region != ctx.region) continue;
    if (!b.collection.empty() && b.collection != name) continue;
    if (!b.range_id.empty() && b.range_id != range) continue;
    auto size = bucket_size(b);
    auto [it, fresh] = buckets.try_emplace({id, ctx.region_index, name, range});
    auto& bucket = it->second;
    if (fresh) {
      bucket.tokens = size;
      bucket.last = ctx.now;
    } else if (ctx.now > bucket.last) {
      std::chrono::duration<double> elapsed = ctx.now - bucket.last;
      bucket.tokens =
          std::min(size, bucket.tokens + elapsed.count() * b.ops_per_second);
      bucket.last = ctx.now;
    }
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return std::nullopt;
    }
    // Spread: the k-th operation turned away in this request waits for the
    // k-th token to come; else every one for the next token.
    ++turned_away;
    auto needed = b.spread ? static_cast<double>(turned_away) : 1.0;
    auto wait = static_cast<int64_t>(
        std::ceil((needed - bucket.tokens) / b.ops_per_second * 1000.0));
    char rate[32];
    std::snprintf(rate, sizeof rate, "%g", b.ops_per_second);
    return refusal(429, 3200,
                   "Request rate is large: partition key range " + range +
                       " takes " + rate +
                       " bulk operations per second (ops budget " +
                       std::to_string(id) + "); retry later",
                   std::max<int64_t>(1, wait));
  }
  return std::nullopt;
}

void engine::state::return_op_token(const request_ctx& ctx,
                                    const detail::collection& coll,
                                    const std::string& range) {
  auto name = coll.name_path();
  for (const auto& [id, b] : budgets) {
    if (!b.region.empty() && b.region != ctx.region) continue;
    if (!b.collection.empty() && b.collection != name) continue;
    if (!b.range_id.empty() && b.range_id != range) continue;
    auto it = buckets.find({id, ctx.region_index, name, range});
    if (it != buckets.end())
      it->second.tokens = std::min(bucket_size(b), it->second.tokens + 1);
    return;
  }
}

http_response engine::state::bulk(request_ctx& ctx, detail::collection& coll) {
  const auto& range_id = ctx.req.header("x-ms-documentdb-partitionkeyrangeid");
  if (range_id.empty())
    return error_response(400, 0,
                          "a bulk request (x-ms-cosmos-batch-atomic: false) "
                          "needs x-ms-documentdb-partitionkeyrangeid: it is "
                          "addressed to one partition key range");
  auto* range = range_by_id(coll, range_id);
  if (range == nullptr)
    return error_response(400, 0,
                          "partition key range '" + range_id +
                              "' does not exist in " + coll.name_path());
  auto parsed = detail::parse_batch_ops(ctx.req.body);
  if (auto* err = std::get_if<http_response>(&parsed)) return std::move(*err);
  auto& ops = std::get<std::vector<detail::batch_op>>(parsed);
  bool continue_on_error =
      detail::lower(ctx.req.header("x-ms-cosmos-batch-continue-on-error")) !=
      "false";
  bool minimal = detail::prefers_minimal(ctx.req);
  auto cap = std::max<size_t>(1, opts.bulk_response_cap_bytes);
  const auto& span = range->info;

  std::vector<std::string> texts;
  std::vector<int> statuses;
  double total = 0;
  size_t used = 2; // "[]"
  bool ran_one = false;
  bool capped = false;
  bool stopped = false;
  int64_t turned_away = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    const auto& b = ops[i];
    if (capped) {
      texts.push_back(capped_413(cap));
      statuses.push_back(413);
      continue;
    }
    if (stopped) {
      texts.emplace_back(unexecuted_424);
      statuses.push_back(424);
      continue;
    }
    auto label = "operation " + std::to_string(i) + " (" + b.type + "): ";
    std::optional<detail::op_result> refused;
    std::vector<pk_component> key;
    bool took_token = false;
    if (!b.pk_text) {
      refused = refusal(400, 0,
                        label + "partitionKey is missing; every bulk "
                                "operation carries its own");
    } else if (auto k = parse_partition_key_json(*b.pk_text); !k) {
      refused = refusal(400, 0,
                        label + "partitionKey '" + *b.pk_text +
                            "' is not a partition key: " + k.error().what);
    } else if (k->size() != coll.pk.paths.size()) {
      refused = refusal(400, 0,
                        label + "partitionKey " + *b.pk_text + " has " +
                            std::to_string(k->size()) +
                            " components, the collection's partition key "
                            "has " +
                            std::to_string(coll.pk.paths.size()) + " paths");
    } else if (auto epk = epk_of(coll, *k);
               !detail::epk_in(epk, span.min_inclusive, span.max_exclusive)) {
      refused = refusal(410, 1002,
                        label + "partitionKey " + *b.pk_text +
                            " is not in partition key range " + span.id +
                            "; refresh the partition key ranges");
    } else if (auto fault = bulk_op_fault_for(ctx, b.type, range_id)) {
      refused = std::move(*fault);
    } else if (auto busy = take_op_token(ctx, coll, range_id, turned_away)) {
      refused = std::move(*busy);
    } else {
      key = std::move(*k);
      took_token = true;
    }
    detail::op_result r;
    detail::write_set ws;
    if (refused)
      r = std::move(*refused);
    else
      r = run_op(ctx, coll, std::move(ops[i].op), key, ws);
    double charge = 0;
    auto text = detail::op_result_text(r, minimal, charge);
    if (ran_one && used + text.size() + 1 > cap) {
      // It does not fit: undone, and the rest wait for another request.
      if (took_token) return_op_token(ctx, coll, range_id);
      capped = true;
      texts.push_back(capped_413(cap));
      statuses.push_back(413);
      continue;
    }
    ran_one = true;
    used += text.size() + 1;
    total += charge;
    commit(ctx, coll, *range, ws);
    texts.push_back(std::move(text));
    statuses.push_back(r.status);
    if (r.failed() && !continue_on_error) stopped = true;
  }

  bool all_ok = std::all_of(statuses.begin(), statuses.end(),
                            [](int s) { return s >= 200 && s < 300; });
  auto body = detail::array_text(texts);
  ctx.charge = std::max(1.0, total);
  count_ops(ctx, coll.name_path(), range_id, statuses);
  auto res = json_response(all_ok ? 200 : 207, std::move(body));
  add_write_headers(res, ctx, coll, *range);
  return res;
}

// -- engine: the bulk knobs and what they observe ----------------------------

namespace {

/// A fault_rule carrying the scope fields, for check_rule's checks.
fault_rule scope_rule(const std::string& region, const std::string& collection,
                      const std::string& range_id) {
  fault_rule r;
  r.region = region;
  r.collection = collection;
  r.range_id = range_id;
  return r;
}

} // namespace

result<uint64_t> engine::add_bulk_op_fault(bulk_op_fault rule) {
  std::lock_guard<std::mutex> guard{state_->mutex};
  auto scope = scope_rule(rule.region, rule.collection, rule.range_id);
  scope.status = rule.status;
  scope.substatus = rule.substatus;
  scope.retry_after_ms = rule.retry_after_ms;
  scope.count = rule.count;
  if (auto ok = state_->check_rule(scope); !ok) return ok.error();
  static const char* types[] = {"",        "Create", "Upsert", "Read",
                                "Replace", "Delete", "Patch"};
  if (std::none_of(std::begin(types), std::end(types), [&rule](const char* t) {
        return detail::lower(t) == detail::lower(rule.operation_type);
      }))
    return problem{"operation_type: '" + rule.operation_type +
                   "' is not one of Create, Upsert, Read, Replace, Delete, "
                   "Patch (\"\" = any)"};
  auto id = state_->next_fault_id++;
  state_->op_faults.emplace(id, std::move(rule));
  return id;
}

void engine::remove_bulk_op_fault(uint64_t id) {
  std::lock_guard<std::mutex> guard{state_->mutex};
  state_->op_faults.erase(id);
}

std::map<uint64_t, bulk_op_fault> engine::bulk_op_faults() const {
  std::lock_guard<std::mutex> guard{state_->mutex};
  return state_->op_faults;
}

result<uint64_t> engine::add_ops_budget(range_ops_budget budget) {
  std::lock_guard<std::mutex> guard{state_->mutex};
  if (auto ok = state_->check_rule(
          scope_rule(budget.region, budget.collection, budget.range_id));
      !ok)
    return ok.error();
  if (!(budget.ops_per_second > 0 && budget.ops_per_second <= 1e9))
    return problem{"ops_per_second: " + std::to_string(budget.ops_per_second) +
                   " is outside (0, 1e9]"};
  if (!(budget.burst == 0 || (budget.burst >= 1 && budget.burst <= 1e9)))
    return problem{"burst: " + std::to_string(budget.burst) +
                   " is neither 0 (one second's worth) nor in [1, 1e9]"};
  auto id = state_->next_fault_id++;
  state_->budgets.emplace(id, std::move(budget));
  return id;
}

bool engine::remove_ops_budget(uint64_t id) {
  std::lock_guard<std::mutex> guard{state_->mutex};
  for (auto it = state_->buckets.begin(); it != state_->buckets.end();)
    it = std::get<0>(it->first) == id ? state_->buckets.erase(it) : ++it;
  return state_->budgets.erase(id) != 0;
}

void engine::clear_ops_budgets() {
  std::lock_guard<std::mutex> guard{state_->mutex};
  state_->budgets.clear();
  state_->buckets.clear();
}

std::map<uint64_t, range_ops_budget> engine::ops_budgets() const {
  std::lock_guard<std::mutex> guard{state_->mutex};
  return state_->budgets;
}

void engine::set_bulk_response_cap(size_t bytes) {
  std::lock_guard<std::mutex> guard{state_->mutex};
  state_->opts.bulk_response_cap_bytes = std::max<size_t>(1, bytes);
}

kind_counters engine::counters_by_kind() const {
  std::lock_guard<std::mutex> guard{state_->mutex};
  return state_->kind_counts;
}

op_counters engine::counters_by_op() const {
  std::lock_guard<std::mutex> guard{state_->mutex};
  return state_->op_counts;
}

result<std::vector<document_record>>
engine::documents(const std::string& db, const std::string& coll) const {
  std::lock_guard<std::mutex> guard{state_->mutex};
  auto c = state_->named_collection(db, coll);
  if (!c) return c.error();
  std::vector<const detail::document*> docs;
  for (const auto& [key, doc] : (*c)->docs)
    docs.push_back(&doc);
  std::sort(docs.begin(), docs.end(),
            [](auto* x, auto* y) { return x->seq < y->seq; });
  std::vector<document_record> out;
  for (const auto* doc : docs) {
    document_record r;
    r.id = doc->id;
    r.pk = detail::pk_text(doc->pk);
    r.writes = doc->writes;
    if (!doc->versions.empty()) {
      r.live = !doc->versions.back().deleted;
      r.etag = doc->versions.back().etag;
    }
    out.push_back(std::move(r));
  }
  return out;
}

} // namespace georoute::emulator
