#include "georoute/actors/query_executor.hpp"

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

using clock_type = caf::actor_clock::clock_type;

constexpr size_t default_page = 100;

struct executor_state {
  query_executor_collaborators with;
  data_request req;
  caf::response_promise rp;
  clock_type::time_point started;
  std::string rid;
  query_plan plan;
  nlohmann::json parameters = nlohmann::json::array();
  std::optional<query_merger> merger;
  std::set<std::string> in_flight; // range ids
  std::vector<nlohmann::json> out;
  size_t max_items = default_page;
  diagnostics diag;
  bool done = false;
  static inline const char* name = "georoute.query_executor";
};

using self_ptr = caf::stateful_actor<executor_state>*;

std::string what_of(const executor_state& st) {
  return "cross-partition query of " + st.req.collection_link;
}

void fail(self_ptr self, errc code, const std::string& text) {
  auto& st = self->state;
  if (st.done) return;
  st.done = true;
  st.diag.total_us = std::chrono::duration_cast<std::chrono::microseconds>(
                         self->clock().now() - st.started)
                         .count();
  st.rp.deliver(make_error(code, what_of(st) + ": " + text, st.diag));
  self->quit();
}

void fail(self_ptr self, const caf::error& e, const std::string& where) {
  auto code = code_of(e) == errc::none ? errc::collaborator_down : code_of(e);
  auto text = context_of(e);
  if (text.empty()) text = self->system().render(e);
  fail(self, code, where + ": " + text);
}

void finish(self_ptr self) {
  auto& st = self->state;
  if (st.done) return;
  st.done = true;
  data_response r;
  r.status = 200;
  nlohmann::json body;
  body["_rid"] = st.rid;
  body["Documents"] = std::move(st.out);
  body["_count"] = body["Documents"].size();
  r.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (!st.merger->finished()) {
    auto c = st.merger->continuation();
    if (!c) {
      st.done = false;
      fail(self, errc::validation_error,
           "this query cannot be resumed: " + c.error().what);
      return;
    }
    r.continuation = encode_continuation(*c);
  }
  st.diag.total_us = std::chrono::duration_cast<std::chrono::microseconds>(
                         self->clock().now() - st.started)
                         .count();
  r.request_charge = st.diag.request_charge;
  r.diag = std::move(st.diag);
  st.rp.deliver(std::move(r));
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

void on_split(self_ptr self, const std::string& range_id) {
  auto& st = self->state;
  auto i = index_of(*st.merger, range_id);
  if (!i) return pump(self); // already replaced
  auto parent = st.merger->range(*i);
  epk_range covered{parent.min, parent.max, true, false};
  self->request(st.with.pkranges, caf::infinite, overlap_atom_v, st.rid,
                covered, true)
      .then(
          [=](std::vector<partition_key_range>& now) {
            auto& st = self->state;
            std::vector<query_range> children;
            for (const auto& r : now)
              if (r.id != range_id)
                children.push_back(
                    query_range{r.id, r.min_inclusive, r.max_exclusive});
            auto i = index_of(*st.merger, range_id);
            if (!i || children.empty())
              return fail(self, errc::partition_range_gone,
                          "range " + range_id +
                              " is gone and no range replaces it");
            if (auto p = st.merger->replace_range(*i, std::move(children)))
              return fail(self, errc::protocol_violation, p->what);
            ++st.diag.metadata_refreshes;
            pump(self);
          },
          [=](caf::error& e) {
            fail(self, e, "the ranges replacing range " + range_id);
          });
}

void fetch(self_ptr self, size_t index) {
  auto& st = self->state;
  auto range_id = st.merger->range(index).id;
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
  // What is left of the caller's budget bounds each range query.
  auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(
      self->clock().now() - st.started);
  if (st.req.options.budget.count() > 0)
    r.options.budget =
        std::max(std::chrono::milliseconds{1}, st.req.options.budget - spent);
  self->request(st.with.router, caf::infinite, route_atom_v, std::move(r))
      .then(
          [=](data_response& page) {
            auto& st = self->state;
            st.in_flight.erase(range_id);
            for (auto& a : page.diag.attempts)
              st.diag.attempts.push_back(std::move(a));
            st.diag.request_charge += page.request_charge;
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
            if (auto* d = diagnostics_of(e))
              for (auto a : d->attempts)
                st.diag.attempts.push_back(std::move(a));
            if (code_of(e) == errc::partition_range_gone)
              return on_split(self, range_id);
            fail(self, e, "range " + range_id);
          });
}

void pump(self_ptr self) {
  auto& st = self->state;
  if (st.done) return;
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
        if (st.in_flight.count(st.merger->range(i).id) == 0) fetch(self, i);
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
            st.diag.collection_rid = c.rid;
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
        st.started = self->clock().now();
        st.rp = self->make_response_promise();
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
