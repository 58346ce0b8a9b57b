#include "georoute/actors/query_executor.hpp"

#include "georoute/actors/composite.hpp"
#include "georoute/actors/policy/query_merge.hpp"
#include "georoute/actors/policy/routing_map.hpp"
#include "georoute/messages/error.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

namespace georoute {

namespace {

constexpr size_t default_page = 100;

struct executor_state {
  query_executor_collaborators with;
  data_request req;
  composite_operation op;
  std::string rid;
  query_plan plan;
  nlohmann::json parameters = nlohmann::json::array();
  std::optional<query_merger> merger;
  std::set<std::string> in_flight; // range ids
  std::vector<nlohmann::json> out;
  size_t max_items = default_page;
  static inline const char* name = "georoute.query_executor";
};

using self_ptr = caf::stateful_actor<executor_state>*;

void fail(self_ptr self, errc code, const std::string& text) {
  if (self->state.op.fail(code, text, self->clock().now())) self->quit();
}

void fail(self_ptr self, const caf::error& e, const std::string& where) {
  if (self->state.op.fail(e, where, self->clock().now(), self->system()))
    self->quit();
}

void finish(self_ptr self) {
  auto& st = self->state;
  if (st.op.done()) return;
  data_response r;
  r.status = 200;
  nlohmann::json body;
  body["_rid"] = st.rid;
  body["Documents"] = std::move(st.out);
  body["_count"] = body["Documents"].size();
  r.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (!st.merger->finished()) {
    auto c = st.merger->continuation();
    if (!c)
      return fail(self, errc::validation_error,
                  "this query cannot be resumed: " + c.error().what);
    r.continuation = encode_continuation(*c);
  }
  auto diag = st.op.finish(self->clock().now());
  r.diag = std::move(*diag);
  r.request_charge = r.diag.request_charge;
  r.hedge_charge = r.diag.hedge_charge;
  st.op.promise().deliver(std::move(r));
  self->quit();
}

std::optional<size_t> index_of(const query_merger& m, const std::string& id) {
  for (size_t i = 0; i < m.range_count(); ++i)
    if (m.range(i).id == id) return i;
  return std::nullopt;
}

// The query each range runs: the plan's rewrite, with the ORDER BY filter
// placeholder of a fresh start replaced by `true` (the SDKs do the same).
std::string range_query_body(const executor_state& st) {
  auto text =
      st.plan.info.rewritten_query.empty()
          ? nlohmann::json::parse(st.req.body)["query"].get<std::string>()
          : st.plan.info.rewritten_query;
  const std::string placeholder = "{documentdb-formattableorderbyquery-filter}";
  for (auto at = text.find(placeholder); at != std::string::npos;
       at = text.find(placeholder, at))
    text.replace(at, placeholder.size(), "true");
  nlohmann::json spec;
  spec["query"] = text;
  spec["parameters"] = st.parameters;
  return spec.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void pump(self_ptr self);

// The router refreshed the routing map before it answered that the range
// is gone: its successors are in the partition-range cache, which is not
// forced again.
void on_split(self_ptr self, const std::string& range_id,
              const caf::error& gone) {
  auto& st = self->state;
  auto i = index_of(*st.merger, range_id);
  if (!i) return pump(self); // already replaced
  if (st.op.gone().gone(range_id) == gone_step::give_up)
    return fail(self, gone,
                "range " + range_id + " is still gone after " +
                    std::to_string(max_gone_in_a_row) +
                    " refreshes of the routing map");
  auto parent = st.merger->range(*i);
  epk_range covered{parent.min, parent.max, true, false};
  self->request(st.with.pkranges, caf::infinite, overlap_atom_v, st.rid,
                covered, false)
      .then(
          [=](std::vector<partition_key_range>& now) {
            auto& st = self->state;
            auto i = index_of(*st.merger, range_id);
            if (!i || now.empty())
              return fail(self, errc::partition_range_gone,
                          "range " + range_id +
                              " is gone and no range replaces it");
            std::vector<query_range> children;
            std::vector<std::string> ids;
            for (const auto& r : now) {
              // The cache's map still holds the range: it is read again.
              if (r.id == range_id) return pump(self);
              children.push_back(
                  query_range{r.id, r.min_inclusive, r.max_exclusive});
              ids.push_back(r.id);
            }
            if (auto p = st.merger->replace_range(*i, std::move(children)))
              return fail(self, errc::protocol_violation, p->what);
            st.op.gone().replaced(range_id, ids);
            pump(self);
          },
          [=](caf::error& e) {
            fail(self, e, "the ranges replacing range " + range_id);
          });
}

// Sends range `index`'s next page query; false when the budget is spent
// (the query has failed).
bool fetch(self_ptr self, size_t index) {
  auto& st = self->state;
  auto range_id = st.merger->range(index).id;
  auto budget = st.op.next_budget(self->clock().now());
  if (!budget) {
    if (st.op.fail_budget("the next page of range " + range_id,
                          self->clock().now()))
      self->quit();
    return false;
  }
  st.in_flight.insert(range_id);
  data_request r;
  r.op = data_op::query;
  r.collection_link = st.req.collection_link;
  r.body = range_query_body(st);
  r.range_id = range_id;
  r.options.excluded_regions = st.req.options.excluded_regions;
  r.options.consistency_level = st.req.options.consistency_level;
  r.options.session_token = st.req.options.session_token;
  r.options.max_item_count = static_cast<int32_t>(st.max_items);
  if (const auto& token = st.merger->continuation_of(index))
    r.options.continuation = *token;
  r.options.budget = *budget;
  self->request(st.with.router, caf::infinite, route_atom_v, std::move(r))
      .then(
          [=](data_response& page) {
            auto& st = self->state;
            st.in_flight.erase(range_id);
            st.op.take(std::move(page.diag));
            st.op.gone().answered(range_id);
            auto body = nlohmann::json::parse(page.body, nullptr, false);
            if (body.is_discarded() || !body.contains("Documents") ||
                !body["Documents"].is_array())
              return fail(self, errc::protocol_violation,
                          "range " + range_id +
                              " answered a page without a Documents array");
            auto i = index_of(*st.merger, range_id);
            if (!i) {
              // The range was replaced by its children meanwhile; they read
              // its rows from its continuation: this page is not needed.
              pump(self);
              return;
            }
            std::vector<nlohmann::json> rows;
            for (auto& d : body["Documents"])
              rows.push_back(std::move(d));
            std::optional<std::string> next;
            if (!page.continuation.empty()) next = page.continuation;
            if (auto p = st.merger->add_page(*i, std::move(rows), next))
              return fail(self, errc::protocol_violation,
                          "range " + range_id + ": " + p->what);
            pump(self);
          },
          [=](caf::error& e) {
            auto& st = self->state;
            st.in_flight.erase(range_id);
            st.op.take(e);
            if (code_of(e) == errc::partition_range_gone)
              return on_split(self, range_id, e);
            fail(self, e, "range " + range_id);
          });
  return true;
}

void pump(self_ptr self) {
  auto& st = self->state;
  if (st.op.done()) return;
  for (;;) {
    auto got = st.merger->drain(st.max_items - st.out.size());
    for (auto& x : got)
      st.out.push_back(std::move(x));
    if (st.out.size() >= st.max_items || st.merger->finished())
      return finish(self);
    auto needed = st.merger->ranges_needed();
    if (!needed.empty()) {
      for (auto i : needed) {
        if (st.in_flight.size() >= st.with.parallelism) break;
        if (st.in_flight.count(st.merger->range(i).id) == 0 && !fetch(self, i))
          return;
      }
      return;
    }
    if (!got.empty()) continue; // drain made progress; try again
    if (st.in_flight.empty())
      return fail(self, errc::protocol_violation,
                  "the merge neither progresses nor needs a range");
    return;
  }
}

void start_merge(self_ptr self) {
  auto& st = self->state;
  if (!st.req.options.continuation.empty()) {
    auto c = decode_continuation(st.req.options.continuation);
    if (!c)
      return fail(self, errc::validation_error,
                  "the continuation does not decode: " + c.error().what);
    auto m = query_merger::resume(st.plan.info, *c);
    if (!m)
      return fail(self, errc::validation_error,
                  "the continuation does not fit this query: " +
                      m.error().what);
    st.merger.emplace(std::move(*m));
    return pump(self);
  }
  self->request(st.with.pkranges, caf::infinite, pkranges_atom_v, st.rid,
                std::string{})
      .then(
          [=](routing_snapshot& snap) {
            auto& st = self->state;
            std::vector<query_range> ranges;
            for (const auto& r : snap.map->overlapping(st.plan.query_ranges))
              ranges.push_back(
                  query_range{r.id, r.min_inclusive, r.max_exclusive});
            auto m = query_merger::create(st.plan.info, std::move(ranges));
            if (!m)
              return fail(self, errc::validation_error,
                          "the query plan cannot be merged: " + m.error().what);
            st.merger.emplace(std::move(*m));
            pump(self);
          },
          [=](caf::error& e) { fail(self, e, "the partition-key ranges"); });
}

void start(self_ptr self) {
  auto& st = self->state;
  auto spec = nlohmann::json::parse(st.req.body, nullptr, false);
  if (spec.contains("parameters")) st.parameters = spec["parameters"];
  if (st.req.options.max_item_count > 0)
    st.max_items = static_cast<size_t>(st.req.options.max_item_count);
  self->request(st.with.collections, caf::infinite, by_name_atom_v,
                st.req.collection_link, false, std::string{})
      .then(
          [=](collection_info& c) {
            auto& st = self->state;
            st.rid = c.rid;
            st.op.diag().collection_rid = c.rid;
            query_plan_request q;
            q.collection_link = st.req.collection_link;
            q.collection_rid = c.rid;
            q.query = spec["query"].get<std::string>();
            q.parameters_json = st.parameters.dump();
            self->request(st.with.plans, caf::infinite, plan_atom_v, q)
                .then(
                    [=](query_plan& p) {
                      self->state.plan = std::move(p);
                      start_merge(self);
                    },
                    [=](caf::error& e) { fail(self, e, "the query plan"); });
          },
          [=](caf::error& e) { fail(self, e, "the collection"); });
}

caf::behavior executor_impl(self_ptr self, query_executor_collaborators with) {
  self->state.with = std::move(with);
  return {
      [=](route_atom, data_request& req) -> caf::result<data_response> {
        auto& st = self->state;
        st.req = std::move(req);
        st.op.begin(self->make_response_promise(), self->clock().now(),
                    st.req.options.budget,
                    "cross-partition query of " + st.req.collection_link);
        if (!st.with.collections || !st.with.plans || !st.with.pkranges)
          fail(self, errc::validation_error,
               "the router is not wired to the metadata caches yet");
        else
          start(self);
        return caf::delegated<data_response>{};
      },
  };
}

} // namespace

caf::actor spawn_query_executor(caf::actor_system& sys,
                                query_executor_collaborators with) {
  return sys.spawn(executor_impl, std::move(with));
}

} // namespace georoute
