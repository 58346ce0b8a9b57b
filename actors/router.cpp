#include "actors/router.hpp"

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace georoute {

namespace {

struct router_state {
  retry_actor pipeline;
  static inline const char* name = "georoute.router";
};

using self_ptr = router_actor::stateful_pointer<router_state>;

router_actor::behavior_type router_impl(self_ptr self, retry_config pipeline,
                                        retry_collaborators with) {
  with.router = router_actor{}; // the pipeline never detaches
  // Linked: the pipeline lives and dies with the router.
  self->state.pipeline =
      spawn_retry(self->system(), std::move(pipeline), std::move(with));
  self->link_to(self->state.pipeline);
  return {
      [=](route_atom,
          const document_request& req) -> caf::delegated<transport::outcome> {
        return self->delegate(self->state.pipeline, execute_atom_v,
                              to_pipeline_request(req));
      },
      [=](http_done_atom, uint64_t, transport::outcome&) {
        // The pipeline owns every HTTP exchange; nothing arrives here.
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
  return sys.spawn(router_impl, std::move(pipeline), std::move(with));
}

} // namespace georoute
