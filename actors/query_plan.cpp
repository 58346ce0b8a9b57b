#include "georoute/actors/query_plan.hpp"

#include "georoute/actors/internal.hpp"
#include "georoute/actors/policy/lru_cache.hpp"
#include "georoute/messages/error.hpp"
#include "georoute/transport/codecs.hpp"

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace georoute {

namespace {

constexpr const char* who = "the query-plan actor (georoute.query_plan)";

using plan_impl_actor = query_plan_actor::extend<caf::reacts_to<engine_wiring>>;

using plan_promise = caf::typed_response_promise<query_plan>;

// The callers waiting for one plan's fetch; `id` tells its answer from that
// of an abandoned earlier fetch (retry actor down). `via` is the retry actor
// that runs it: its down message may come after the supervisor re-wired us to
// a successor.
struct plan_fetch {
  uint64_t id = 0;
  std::vector<plan_promise> waiters;
  caf::actor_addr via;
};

struct plan_state {
  retry_actor retry;
  caf::actor_addr supervisor;
  size_t max_waiters = 10000;
  lru_cache<std::string, query_plan> cache{1024};
  std::map<std::string, plan_fetch> waiting;
  uint64_t next_fetch = 1;
  query_plan_stats counters;
  static inline const char* name = "georoute.query_plan";
};

using self_ptr = plan_impl_actor::stateful_pointer<plan_state>;

void fail_all(self_ptr self, const std::string& key, uint64_t id,
              const caf::error& err) {
  auto i = self->state.waiting.find(key);
  if (i == self->state.waiting.end() || i->second.id != id) return;
  for (auto& rp : i->second.waiters)
    rp.deliver(err);
  self->state.waiting.erase(i);
}

void land(self_ptr self, const std::string& key, uint64_t id,
          const transport::outcome& o) {
  auto& st = self->state;
  auto i = st.waiting.find(key);
  if (i == st.waiting.end() || i->second.id != id) return; // abandoned
  auto plan = transport::decode_query_plan(o.body);
  if (!plan) {
    ++st.counters.failures;
    fail_all(
        self, key, id,
        make_error(errc::protocol_violation,
                   "query plan from " + o.endpoint + ": " + plan.error().what));
    return;
  }
  if (st.cache.put(key, *plan)) ++st.counters.evictions;
  for (auto& rp : i->second.waiters)
    rp.deliver(*plan);
  st.waiting.erase(i);
}

// Fails the fetches that `gone` ran (all of them if `gone` is null) with
// `err`; returns how many callers it answered.
size_t fail_fetches(self_ptr self, const caf::actor_addr& gone,
                    const caf::error& err) {
  size_t failed = 0;
  take_entries_of(self->state.waiting, gone, [&](plan_fetch& f) {
    for (auto& rp : f.waiters)
      rp.deliver(err);
    failed += f.waiters.size();
  });
  return failed;
}

plan_impl_actor::behavior_type query_plan_impl(self_ptr self, retry_actor retry,
                                               size_t cache_size,
                                               size_t max_waiters,
                                               caf::actor_addr supervisor) {
  auto& st = self->state;
  st.retry = std::move(retry);
  st.cache = lru_cache<std::string, query_plan>{cache_size};
  st.max_waiters = max_waiters;
  st.supervisor = std::move(supervisor);
  if (st.retry) self->monitor(st.retry);
  self->set_down_handler([=](caf::down_msg& dm) {
    if (!dm.source) return;
    self->state.counters.collaborator_failures +=
        fail_fetches(self, dm.source,
                     collaborator_down("the retry actor (georoute.retry)",
                                       dm.reason, "a query-plan fetch"));
  });
  self->set_exit_handler([=](caf::exit_msg& msg) {
    if (!msg.reason) return;
    fail_fetches(self, caf::actor_addr{}, stopped_error(who, msg.reason));
    self->quit(msg.reason);
  });
  return {
      [=](plan_atom, const query_plan_request& req) -> caf::result<query_plan> {
        auto& st = self->state;
        if (req.collection_rid.empty())
          return make_error(errc::validation_error,
                            "a query plan needs the collection rid (plans are "
                            "cached per collection); got an empty rid for '" +
                                req.collection_link + "'");
        auto params = nlohmann::json::parse(req.parameters_json.empty()
                                                ? std::string{"[]"}
                                                : req.parameters_json,
                                            nullptr, false);
        if (params.is_discarded() || !params.is_array())
          return make_error(errc::validation_error,
                            "query parameters must be a JSON array of "
                            "{\"name\": \"@p\", \"value\": ...}, got: " +
                                req.parameters_json.substr(0, 80));
        auto key = query_plan_key(req);
        if (auto hit = st.cache.get(key)) {
          ++st.counters.hits;
          return *hit;
        }
        auto running = st.waiting.find(key);
        if (running != st.waiting.end()) {
          auto& waiters = running->second.waiters;
          if (waiters.size() >= st.max_waiters) {
            ++st.counters.overloaded;
            return make_error(errc::overloaded,
                              std::to_string(waiters.size()) +
                                  " callers already wait for this query "
                                  "plan of collection " +
                                  req.collection_rid +
                                  " (georoute.cache-max-waiters); retry "
                                  "later");
          }
          ++st.counters.misses;
          waiters.push_back(self->make_response_promise<query_plan>());
          return waiters.back();
        }
        ++st.counters.misses;
        ++st.counters.fetches;
        auto id = st.next_fetch++;
        auto& f = st.waiting[key];
        f.id = id;
        f.via = st.retry.address();
        f.waiters.push_back(self->make_response_promise<query_plan>());
        auto rp = f.waiters.back();
        // No timeout here: the retry actor's hard deadline bounds the fetch,
        // and the monitor catches a retry actor that goes down.
        self->request(st.retry, caf::infinite, detach_atom_v,
                      plan_request_for(req))
            .then([=](const transport::outcome& o) { land(self, key, id, o); },
                  [=](const caf::error& e) {
                    auto& st = self->state;
                    auto i = st.waiting.find(key);
                    if (i == st.waiting.end() || i->second.id != id) return;
                    ++st.counters.failures;
                    fail_all(self, key, id, e);
                  });
        return rp;
      },
      [=](stats_atom) { return self->state.counters; },
      [=](const engine_wiring& w) {
        auto& st = self->state;
        if (from_supervisor(self, st.supervisor))
          retarget(self, st.retry, w.retry);
      },
  };
}

} // namespace

document_request plan_request_for(const query_plan_request& req) {
  document_request d;
  d.what.kind = transport::attempt_kind::query_plan;
  d.what.resource = req.collection_link;
  d.what.partition_key_json = req.partition_key_json;
  d.kind = request_kind::query_plan;
  d.op = op_kind::read;
  nlohmann::json body;
  body["query"] = req.query;
  auto params = nlohmann::json::parse(
      req.parameters_json.empty() ? std::string{"[]"} : req.parameters_json,
      nullptr, false);
  // The actor validated the parameters before it got here.
  body["parameters"] = params.is_array() ? params : nlohmann::json::array();
  d.what.body =
      body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return d;
}

std::string query_plan_key(const query_plan_request& r) {
  // Every part length-prefixed: no two requests share a key unless all
  // their parts are equal.
  std::string key;
  for (const auto* part : {&r.collection_rid, &r.query, &r.parameters_json,
                           &r.partition_key_json}) {
    key += std::to_string(part->size());
    key += ':';
    key += *part;
  }
  return key;
}

query_plan_actor spawn_query_plan(caf::actor_system& sys, retry_actor retry,
                                  size_t cache_size, size_t max_waiters,
                                  caf::actor_addr supervisor) {
  return caf::actor_cast<query_plan_actor>(
      sys.spawn(query_plan_impl, std::move(retry), cache_size, max_waiters,
                std::move(supervisor)));
}

} // namespace georoute
