#include "actors/router.hpp"

#include "actors/internal.hpp"

#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace georoute {

namespace {

using router_impl_actor = router_actor::extend<caf::reacts_to<engine_wiring>>;

struct router_state {
  retry_actor pipeline;
  caf::actor_addr supervisor;
  static inline const char* name = "georoute.router";
};

using self_ptr = router_impl_actor::stateful_pointer<router_state>;

router_impl_actor::behavior_type router_impl(self_ptr self,
                                             retry_config pipeline,
                                             retry_collaborators with) {
  self->state.supervisor = with.supervisor;
  with.router = router_actor{}; // the pipeline never detaches
  with.supervisor = self->address(); // it takes re-wiring from us only
  // Linked: the pipeline lives and dies with the router, and its exit
  // handler answers every operation in flight when it goes.
  self->state.pipeline =
      spawn_retry(self->system(), std::move(pipeline), std::move(with));
  self->link_to(self->state.pipeline);
  return {
      [=](route_atom,
          const document_request& req) -> caf::delegated<transport::outcome> {
        return self->delegate(self->state.pipeline, execute_atom_v,
                              to_pipeline_request(req));
      },
      [=](const engine_wiring& w) {
        auto& st = self->state;
        if (!st.supervisor || self->current_sender() != st.supervisor) return;
        caf::unsafe_send_as(self, caf::actor_cast<caf::actor>(st.pipeline), w);
      },
  };
}

} // namespace

metadata_request to_pipeline_request(const document_request& req) {
  metadata_request m;
  m.method = req.method;
  m.path = req.path;
  m.headers = req.headers;
  if (!req.partition_key_json.empty())
    m.headers.emplace_back("x-ms-documentdb-partitionkey",
                           req.partition_key_json);
  m.body = req.body;
  m.kind = req.kind;
  m.op = req.op;
  m.policy = retry_policy_kind::client;
  m.excluded_regions = req.excluded_regions;
  return m;
}

router_actor spawn_router(caf::actor_system& sys, retry_config pipeline,
                          retry_collaborators with) {
  return caf::actor_cast<router_actor>(
      sys.spawn(router_impl, std::move(pipeline), std::move(with)));
}

} // namespace georoute
