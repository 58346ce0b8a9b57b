#include "georoute/actors/router.hpp"

#include "georoute/actors/router_state.hpp"

namespace georoute {

namespace router_detail {

// -- collaborators -----------------------------------------------------------

// A newer table: the regions it no longer has are forgotten, and what
// waited for a first table goes.
void on_new_table(self_ptr self) {
  forget_departed_regions(self->state);
  self->state.driver.on_new_table();
}

void subscribe(self_ptr self) {
  subscribe_to_tables(self, [self] { on_new_table(self); });
}

// The operations whose resolution waits for `what` from the collaborator
// `gone` fail at once.
void fail_waiting(self_ptr self, resolving what, const caf::down_msg& dm,
                  const std::string& whom) {
  std::vector<uint64_t> ids;
  self->state.driver.for_each([&](uint64_t id, data_operation& op) {
    if (op.phase == op_phase::idle && op.resolves == what &&
        op.waiting_on == dm.source)
      ids.push_back(id);
  });
  for (auto id : ids) {
    auto err =
        collaborator_down(whom, dm.reason, describe(self->state.driver.at(id)));
    finish_error(self, id, code_of(err), context_of(err));
  }
}

// A collaborator went down: whoever waits for it is told at once. Matched by
// the address each operation asked, since the supervisor's re-wiring to the
// successor may arrive first.
void on_down(self_ptr self, const caf::down_msg& dm) {
  if (!dm.source) return;
  fail_waiting(self, resolving::collection, dm,
               "the collection cache (georoute.collection_cache)");
  fail_waiting(self, resolving::ranges, dm,
               "the partition-range cache (georoute.pkrange_cache)");
  // Refreshes asked of an endpoint manager that is gone will never be
  // answered: go on without them, after the pause the decision asked for
  // (as after a refresh that answered).
  self->state.driver.on_endpoints_down(dm.source);
}

void rewire(self_ptr self, const engine_wiring& w) {
  auto& st = self->state;
  if (!from_supervisor(self, st.with.supervisor)) return;
  retarget(self, st.with.collections, w.collections);
  retarget(self, st.with.pkranges, w.pkranges);
  retarget(self, st.with.endpoints, w.endpoints);
  if (w.plans) st.with.plans = w.plans;
  rewire_tables(self, w.locations, [self] { on_new_table(self); });
  caf::unsafe_send_as(self, caf::actor_cast<caf::actor>(st.pipeline), w);
}

router_impl_actor::behavior_type router_impl(self_ptr self, router_config cfg,
                                             router_collaborators with) {
  auto& st = self->state;
  st.driver.bind(self);
  st.cfg = std::move(cfg);
  st.with = std::move(with);
  st.collections =
      lru_cache<std::string, std::shared_ptr<const collection_info>>{
          st.cfg.collection_capacity};
  st.maps = lru_cache<std::string, map_ptr>{st.cfg.collection_capacity};
  st.hedge_allowance = hedge_budget{st.cfg.hedging.budget};
  st.latencies = region_latencies{st.cfg.hedging.adaptive};
  if (st.cfg.breaker_enabled) st.breaker.emplace(st.cfg.breaker);
  st.ppaf = partition_failover{st.cfg.ppaf};
  st.cancels = timeout_cancels{self->home_system()};
  // The raw path's pipeline: linked, it lives and dies with the router and
  // takes re-wiring from us only.
  st.pipeline = spawn_retry(self->system(), st.cfg.pipeline,
                            {st.with.locations, st.with.endpoints, st.with.http,
                             router_actor{}, caf::actor{}, self->address()});
  self->link_to(st.pipeline);
  for (auto h : {caf::actor_cast<caf::actor>(st.with.collections),
                 caf::actor_cast<caf::actor>(st.with.pkranges),
                 caf::actor_cast<caf::actor>(st.with.endpoints)})
    if (h) self->monitor(h);
  self->set_down_handler([=](caf::down_msg& dm) { on_down(self, dm); });
  if (st.cfg.fleet) {
    self->delayed_send(self, st.cfg.fleet_flush, rt_fleet_flush{});
    close_fleet_gate(self);
  }
  self->set_exit_handler([=](caf::exit_msg& msg) {
    if (!msg.reason) return;
    self->state.driver.stop(stopped_error(who, msg.reason));
    self->quit(msg.reason);
  });
  subscribe(self);
  return {
      [=](route_atom, data_request& req) -> caf::result<data_response> {
        return start(self, req);
      },
      [=](route_atom, change_feed_request& req)
          -> caf::result<change_feed_page> { return start_feed(self, req); },
      [=](route_atom, batch_request& req) -> caf::result<batch_response> {
        return start_batch(self, req);
      },
      [=](route_atom, bulk_open& req) -> caf::result<caf::actor> {
        return open_bulk(self, req);
      },
      [=](feed_ranges_atom, const std::string& link)
          -> caf::result<std::vector<partition_key_range>> {
        return feed_ranges(self, link);
      },
      [=](route_atom,
          const document_request& req) -> caf::delegated<transport::outcome> {
        return self->delegate(self->state.pipeline, execute_atom_v,
                              to_pipeline_request(req));
      },
      [=](snapshot_atom, location_snapshot& snap) {
        on_pushed_table(self, snap, [self] { on_new_table(self); });
      },
      [=](const engine_wiring& w) { rewire(self, w); },
      [=](rt_attempt m) { self->state.driver.on_attempt(m.op, m.gen); },
      [=](rt_budget_tick m) { self->state.driver.on_tick(m.due); },
      [=](stats_atom) { return current_stats(self->state); },
      [=](metrics_atom) {
        const auto& st = self->state;
        router_metrics m;
        m.stats = current_stats(st);
        m.operations.reserve(st.histograms.series().size());
        for (const auto& h : st.histograms.series())
          m.operations.push_back(to_series(h));
        return m;
      },
      [=](rt_http_done& m) {
        self->state.driver.on_http(m.op, m.arm, m.outcome);
      },
      [=](rt_fleet_flush) { fleet_flush(self); },
  };
}

} // namespace router_detail

using router_detail::router_impl;
using router_detail::router_impl_actor;
using router_detail::router_state;

metadata_request to_pipeline_request(const document_request& req) {
  metadata_request m;
  m.what = req.what;
  m.kind = req.kind;
  m.op = req.op;
  m.policy = loop_policy::client;
  m.excluded_regions = req.excluded_regions;
  return m;
}

router_config router_config_from(const config::settings& s) {
  router_config c;
  c.pipeline = retry_config_from(s);
  c.client = c.pipeline.client;
  c.ladders = s.http.ladders;
  c.excluded_regions = s.location.excluded_regions;
  c.default_budget = s.retry.operation_budget;
  c.collection_capacity = s.collection_cache_size;
  c.max_in_flight = s.max_operations_in_flight;
  c.hedging = s.hedging;
  c.breaker_enabled = s.circuit_breaker_enabled;
  c.breaker = s.circuit_breaker;
  c.ppaf = s.per_partition_failover;
  c.write_retries = s.retry.write_retries;
  return c;
}

namespace {

/// The router kept on a home thread.
class homed_router final
    : public pinned<
          caf::stateful_actor<router_state, router_impl_actor::base>> {
public:
  using super =
      pinned<caf::stateful_actor<router_state, router_impl_actor::base>>;

  homed_router(caf::actor_config& cfg, std::shared_ptr<home_thread> home,
               router_config rc, router_collaborators with)
      : super(cfg, std::move(home)), rc_(std::move(rc)),
        with_(std::move(with)) {}

  behavior_type make_behavior() override {
    return router_impl(this, std::move(rc_), std::move(with_));
  }

private:
  router_config rc_;
  router_collaborators with_;
};

} // namespace

router_actor spawn_router(caf::actor_system& sys, router_config cfg,
                          router_collaborators with,
                          std::shared_ptr<home_thread> home) {
  if (home)
    return caf::actor_cast<router_actor>(sys.spawn<homed_router>(
        std::move(home), std::move(cfg), std::move(with)));
  return caf::actor_cast<router_actor>(
      sys.spawn(router_impl, std::move(cfg), std::move(with)));
}

} // namespace georoute
