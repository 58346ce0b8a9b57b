#include "actors/query_plan.hpp"

#include "actors/policy/lru_cache.hpp"
#include "messages/error.hpp"
#include "transport/codecs.hpp"

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace georoute {

namespace {

using plan_promise = caf::typed_response_promise<query_plan>;

struct plan_state {
  retry_actor retry;
  lru_cache<std::string, query_plan> cache{1024};
  std::map<std::string, std::vector<plan_promise>> waiting;
  query_plan_stats counters;
  static inline const char* name = "georoute.query_plan";
};

using self_ptr = query_plan_actor::stateful_pointer<plan_state>;

std::string key_of(const query_plan_request& r) {
  // Unambiguous: lengths first, then the three parts.
  return std::to_string(r.collection_rid.size()) + ":" + r.collection_rid +
         "|" + std::to_string(r.query.size()) + ":" + r.query + "|" +
         r.parameters_json + "|" + r.partition_key_json;
}

void fail_all(self_ptr self, const std::string& key, const caf::error& err) {
  auto i = self->state.waiting.find(key);
  if (i == self->state.waiting.end()) return;
  for (auto& rp : i->second)
    rp.deliver(err);
  self->state.waiting.erase(i);
}

void land(self_ptr self, const std::string& key, const transport::outcome& o) {
  auto& st = self->state;
  auto plan = transport::decode_query_plan(o.body);
  if (!plan) {
    ++st.counters.failures;
    fail_all(
        self, key,
        make_error(errc::protocol_violation,
                   "query plan from " + o.endpoint + ": " + plan.error().what));
    return;
  }
  if (st.cache.put(key, *plan)) ++st.counters.evictions;
  auto i = st.waiting.find(key);
  if (i == st.waiting.end()) return;
  for (auto& rp : i->second)
    rp.deliver(*plan);
  st.waiting.erase(i);
}

query_plan_actor::behavior_type
query_plan_impl(self_ptr self, retry_actor retry, size_t cache_size) {
  self->state.retry = std::move(retry);
  self->state.cache = lru_cache<std::string, query_plan>{cache_size};
  return {
      [=](plan_atom, const query_plan_request& req) -> caf::result<query_plan> {
        auto& st = self->state;
        auto params = nlohmann::json::parse(req.parameters_json.empty()
                                                ? std::string{"[]"}
                                                : req.parameters_json,
                                            nullptr, false);
        if (params.is_discarded() || !params.is_array())
          return make_error(errc::validation_error,
                            "query parameters must be a JSON array of "
                            "{\"name\": \"@p\", \"value\": ...}, got: " +
                                req.parameters_json.substr(0, 80));
        auto key = key_of(req);
        if (auto hit = st.cache.get(key)) {
          ++st.counters.hits;
          return *hit;
        }
        ++st.counters.misses;
        auto rp = self->make_response_promise<query_plan>();
        auto& waiters = st.waiting[key];
        waiters.push_back(rp);
        if (waiters.size() > 1) return rp; // a fetch for this key is in flight
        ++st.counters.fetches;
        // No timeout here: the retry actor's hard deadline bounds the fetch.
        self->request(st.retry, caf::infinite, detach_atom_v,
                      plan_request_for(req))
            .then([=](const transport::outcome& o) { land(self, key, o); },
                  [=](const caf::error& e) {
                    ++self->state.counters.failures;
                    fail_all(self, key, e);
                  });
        return rp;
      },
      [=](stats_atom) { return self->state.counters; },
  };
}

} // namespace

document_request plan_request_for(const query_plan_request& req) {
  document_request d;
  d.method = "POST";
  d.path = "/" + req.collection_link + "/docs";
  d.kind = request_kind::query_plan;
  d.op = op_kind::read;
  d.headers = {
      {"content-type", "application/query+json"},
      {"x-ms-cosmos-is-query-plan-request", "True"},
      {"x-ms-cosmos-query-version", "1.0"},
      {"x-ms-cosmos-supported-query-features", supported_query_features},
      {"x-ms-documentdb-query-enablecrosspartition", "True"},
  };
  d.partition_key_json = req.partition_key_json;
  nlohmann::json body;
  body["query"] = req.query;
  auto params = nlohmann::json::parse(
      req.parameters_json.empty() ? std::string{"[]"} : req.parameters_json,
      nullptr, false);
  // The actor validated the parameters before it got here.
  body["parameters"] = params.is_array() ? params : nlohmann::json::array();
  d.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return d;
}

query_plan_actor spawn_query_plan(caf::actor_system& sys, retry_actor retry,
                                  size_t cache_size) {
  return sys.spawn(query_plan_impl, std::move(retry), cache_size);
}

} // namespace georoute
