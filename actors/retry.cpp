#include "georoute/actors/retry.hpp"

#include "georoute/actors/internal.hpp"
#include "georoute/actors/operation_driver.hpp"
#include "georoute/actors/policy/attempt_loop.hpp"
#include "georoute/actors/policy/deadline_queue.hpp"
#include "georoute/actors/policy/hedge_budget.hpp"
#include "georoute/actors/policy/hedged_operation.hpp"
#include "georoute/actors/policy/hedging.hpp"
#include "georoute/actors/policy/loop_config.hpp"
#include "georoute/actors/policy/metadata_hedge.hpp"
#include "georoute/actors/policy/metadata_rules.hpp"
#include "georoute/actors/policy/snapshot_holder.hpp"
#include "georoute/messages/error.hpp"
#include "georoute/transport/url.hpp"

#include <algorithm>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <map>
#include <memory>
#include <optional>
#include <variant>

namespace georoute {

namespace {

// Messages only this file can name: the next attempt of an operation, the
// deadline queue's timer, and an HTTP completion.
struct retry_attempt {
  uint64_t op = 0;
  uint32_t gen = 0;
};
struct retry_deadline {
  caf::actor_clock::time_point due;
};
struct retry_http_done {
  uint64_t op = 0;
  uint32_t arm = 0; // 0: the primary; 1: the hedge
  transport::outcome outcome;
};

} // namespace

} // namespace georoute

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(georoute::retry_attempt)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(georoute::retry_deadline)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(georoute::retry_http_done)

namespace georoute {

namespace {

constexpr const char* who = "the retry actor (georoute.retry)";

using retry_impl_actor = retry_actor::extend<
    caf::reacts_to<snapshot_atom, location_snapshot>,
    caf::reacts_to<engine_wiring>, caf::reacts_to<retry_attempt>,
    caf::reacts_to<retry_deadline>, caf::reacts_to<retry_http_done>>;

struct retry_state;
using self_ptr = retry_impl_actor::stateful_pointer<retry_state>;

// The metadata plane's part of a loop-mode operation.
struct metadata_payload {
  metadata_request req;
  caf::typed_response_promise<transport::outcome> rp;
  // Metadata hedging: the decisions are the pure metadata_hedge's
  // (metadata_hedge.hpp); the actor keeps what the wire needs.
  std::optional<metadata_hedge> hedge;
  // A definitive error of the hedge, kept until the primary decides.
  std::optional<transport::outcome> hedge_held;
};

using operation = driven_op<metadata_payload>;

// What the metadata plane supplies to the operation driver (see
// operation_driver.hpp): the wire of a metadata request, its one hedge arm,
// what its answers and its hard deadline mean.
struct metadata_plane {
  using self_ptr = georoute::self_ptr;
  using payload = metadata_payload;
  using late_wire = metadata_request;
  using attempt_msg = retry_attempt;
  using tick_msg = retry_deadline;
  using http_msg = retry_http_done;
  static constexpr end_kind end = end_kind::hard;

  self_ptr self = nullptr;

  static transport::attempt wire(const metadata_request& r,
                                 const attempt_plan& plan);
  static transport::attempt wire(const operation& op,
                                 const attempt_plan& plan) {
    return wire(op.req, plan);
  }
  static metadata_request late_wire_of(const operation& op) { return op.req; }
  effect_origin origin(const metadata_payload& p, const transport::outcome* why,
                       bool after_end) const {
    return origin(p.req, why, after_end);
  }
  effect_origin origin(const metadata_request& req,
                       const transport::outcome* why, bool after_end) const;
  bool defer_primary(operation& op) {
    // The primary left its region while the hedge is out: the hedge's
    // answer will be taken whatever it is, unless its region fails too;
    // only then does the primary go on.
    return op.hedge && op.hedge->defer_primary();
  }
  void on_sent(uint64_t id, operation& op, const attempt_plan& plan);
  void on_hedge_due(uint64_t id, operation& op);
  void on_arm_answer(uint64_t id, operation& op, uint32_t arm,
                     transport::outcome& o);
  void on_primary_success(uint64_t id, operation& op, transport::outcome& o);
  primary_hedge on_primary_failure(uint64_t id, operation& op,
                                   const transport::outcome& o,
                                   const loop_step& step);
  void hedge_takes_over(uint64_t id, operation& op);
  void on_metadata_step(uint64_t id, operation& op, const loop_step& step);
  void on_final_failure(uint64_t id, operation& op, const transport::outcome& o,
                        const loop_step& step);
  void on_refused(uint64_t id, operation& op, const std::string& why);
  void on_end_reached(uint64_t id, operation& op);
  void abandon_arms(uint64_t id, operation& op, bool primary_abandoned);
  void on_late_answer(uint32_t, const transport::outcome&) {}
  void reply(uint64_t id, operation& op, caf::expected<transport::outcome> r);
  void on_new_table() {}
  // Nothing of its own before an attempt or ahead of the driver's answers.
  void before_attempt(uint64_t, operation&) {}
  bool on_answer(uint64_t, operation&, uint32_t, transport::outcome&) {
    return false;
  }
};

// A detach-only operation: the router works, we wait.
struct detached_op {
  caf::typed_response_promise<transport::outcome> rp;
  std::string what;    // "query plan of dbs/d/colls/c"
  caf::actor_addr via; // the router that runs it
};

struct retry_state {
  retry_config cfg;
  retry_collaborators with;
  snapshot_holder snap; // the table, never older than what we marked
  // Loop-mode operations: their table, hard deadlines, hedge times, waits
  // and the attempts they left behind.
  operation_driver<metadata_plane> driver;
  std::map<uint64_t, detached_op> detached;
  uint64_t next_detached = 1;
  // Metadata hedges in flight, for every operation of this actor.
  metadata_hedge_budget hedge_slots;
  retry_stats stats;
  // What applying decisions counted (folded into `stats` when asked).
  driver_counters counts;
  static inline const char* name = "georoute.retry";
};

retry_stats current_stats(const retry_state& st) {
  auto s = st.stats;
  const auto& c = st.counts;
  s.failover_decisions = c.decisions;
  s.failover_decisions_completed = c.decisions_completed;
  s.decisions_after_deadline = c.decisions_after_end;
  s.marks = c.marks;
  s.refreshes = c.refreshes;
  s.session_clears = c.session_clears;
  s.late_completions = c.late_answers;
  s.stale_snapshots = st.snap.stale();
  s.live = st.driver.live() + st.detached.size();
  return s;
}

// Who decided, for `apply_effects`: the metadata plane clears the session
// of a name-based collection.
effect_origin metadata_plane::origin(const metadata_request& req,
                                     const transport::outcome* why,
                                     bool after_end) const {
  const auto& st = self->state;
  effect_origin from;
  from.why = why;
  from.plane = " (metadata)";
  from.log_reason = st.cfg.log.enabled(log_level::warn);
  from.session_sink = st.with.session_sink;
  from.session_name = req.collection_name;
  from.after_end = after_end;
  return from;
}

// The last underlying failure, said so that people can act on it.
caf::error failure_error(const operation& op, const std::string& why) {
  return make_error(classify_outcome(*op.last_failure),
                    failure_text(*op.last_failure, op.last_region,
                                 op.loop->attempts(),
                                 transport::describe(op.req.what), why));
}

std::vector<std::string> excluded_for(const retry_state& st,
                                      const metadata_request& req) {
  return merged_exclusions(st.cfg.excluded_regions, req.excluded_regions);
}

attempt_loop make_loop(const retry_state& st, const metadata_request& req) {
  loop_environment env;
  env.client = st.cfg.client;
  env.attempt_cap = st.cfg.attempt_cap;
  auto cfg =
      metadata_loop(req.kind, req.op, req.policy, !req.collection_name.empty(),
                    excluded_for(st, req), env);
  cfg.start_endpoint = req.start_endpoint;
  return attempt_loop{std::move(cfg), st.cfg.ladders};
}

} // namespace

bool metadata_resend_after_drop(const metadata_request& r) {
  if (r.what.kind != transport::attempt_kind::raw)
    return transport::reads_only(r.what.kind);
  return r.op == op_kind::read && transport::repeat_safe(r.what.raw);
}

namespace {

transport::attempt metadata_plane::wire(const metadata_request& r,
                                        const attempt_plan& plan) {
  transport::attempt a = r.what;
  a.endpoint = plan.endpoint;
  a.proto = plan.protocol;
  a.timeout = plan.timeout;
  a.resend_after_drop = metadata_resend_after_drop(r);
  return a;
}

// Keeps the hedge's place in the deadline queue equal to its due time.
void sync_hedge_due(self_ptr self, uint64_t id, operation& op) {
  auto due = op.hedge ? op.hedge->due() : std::nullopt;
  self->state.driver.set_hedge_wake(id, op, due);
}

// At the first attempt: whether the operation is hedged, and where to. The
// hedge's time goes into the deadline queue, not a timer of its own.
void plan_hedge(self_ptr self, uint64_t id, operation& op) {
  auto& st = self->state;
  const auto& req = op.req;
  // The cheap check first: most kinds are never hedged.
  if (!metadata_hedge_applies(st.cfg.metadata_hedge, req.kind, req.first_page,
                              2))
    return;
  metadata_hedge_ask ask;
  ask.kind = req.kind;
  ask.op = req.op;
  ask.first_page = req.first_page;
  ask.excluded = excluded_for(st, req);
  op.hedge =
      metadata_hedge::plan(st.cfg.metadata_hedge, std::move(ask), *op.loop,
                           *st.snap.table(), self->clock().now());
  sync_hedge_due(self, id, op);
}

void metadata_plane::on_sent(uint64_t id, operation& op,
                             const attempt_plan& plan) {
  if (plan.number > 1) ++self->state.stats.retries;
  if (plan.number == 1) plan_hedge(self, id, op);
}

// The hedge's time came: one attempt in the hedge region, if the hedge
// still applies and a budget slot is free (`metadata_hedge::start`).
void metadata_plane::on_hedge_due(uint64_t id, operation& op) {
  auto& st = self->state;
  if (!op.hedge || !st.snap.table()) return;
  auto s =
      op.hedge->start(*op.loop, op.primary_out, st.hedge_slots, st.cfg.ladders,
                      *st.snap.table(), self->clock().now());
  if (s.refused) ++st.stats.metadata_hedges_refused;
  st.stats.metadata_hedge_slots = st.hedge_slots.in_use();
  if (!s.send) return;
  st.driver.send(id, 1, wire(op, *s.send));
  ++st.stats.metadata_hedges_started;
}

// Ends the operation with the hedge's answer.
void take_hedge(self_ptr self, uint64_t id, operation& op,
                transport::outcome o) {
  auto& st = self->state;
  ++st.stats.metadata_hedges_won;
  if (o.success()) {
    st.driver.finish(id, caf::expected<transport::outcome>{std::move(o)});
    return;
  }
  op.last_failure = std::move(o);
  op.last_region = op.hedge->hedge_region();
  st.driver.finish(id, failure_error(op, "the definitive answer of the hedge "
                                         "to " +
                                             op.hedge->hedge_region()));
}

// The hedge answered while its operation runs. Its failure's effects run;
// `metadata_hedge_wins` decides whether its answer is the operation's.
void metadata_plane::on_arm_answer(uint64_t id, operation& op, uint32_t,
                                   transport::outcome& o) {
  auto& st = self->state;
  if (!st.snap.table()) return;
  auto answer =
      op.hedge->on_hedge_result(attempt_result_of(o), st.hedge_slots,
                                *st.snap.table(), self->clock().now());
  st.stats.metadata_hedge_slots = st.hedge_slots.in_use();
  apply_effects(self, answer.effects, origin(op, &o, false));
  if (answer.hold) op.hedge_held = o;
  using next = metadata_hedge_answer::next;
  switch (answer.then) {
  case next::take:
    take_hedge(self, id, op, std::move(o));
    return;
  case next::end_primary:
    st.driver.finish(id, failure_error(op, *op.hedge->primary_gave_up()));
    return;
  case next::resume_primary:
    st.driver.schedule(id, op, std::chrono::milliseconds{0});
    return;
  case next::nothing:
    return;
  }
}

void metadata_plane::on_primary_success(uint64_t id, operation&,
                                        transport::outcome& o) {
  self->state.driver.finish(id,
                            caf::expected<transport::outcome>{std::move(o)});
}

primary_hedge metadata_plane::on_primary_failure(uint64_t id, operation& op,
                                                 const transport::outcome& o,
                                                 const loop_step& step) {
  metadata_primary_step hs;
  if (op.hedge) {
    hs = op.hedge->on_primary_failure(attempt_result_of(o), step);
    sync_hedge_due(self, id, op); // a hedge not yet due may be ruled out
  }
  if (hs.take_held && op.hedge_held) return primary_hedge::takes_over;
  if (step.policy_refused) ++self->state.stats.policy_refusals;
  return hs.wait_for_hedge ? primary_hedge::wait_for_arms
                           : primary_hedge::as_loop_says;
}

// The hedge's held answer is the operation's.
void metadata_plane::hedge_takes_over(uint64_t id, operation& op) {
  auto held = std::move(*op.hedge_held);
  op.hedge_held.reset();
  take_hedge(self, id, op, std::move(held));
}

// The loop never asks the metadata plane for a metadata refresh: its
// reason ends the operation.
void metadata_plane::on_metadata_step(uint64_t id, operation& op,
                                      const loop_step& step) {
  self->state.driver.finish(id, failure_error(op, step.reason));
}

void metadata_plane::on_final_failure(uint64_t id, operation& op,
                                      const transport::outcome&,
                                      const loop_step& step) {
  self->state.driver.finish(id, failure_error(op, step.reason));
}

void metadata_plane::on_refused(uint64_t id, operation& op,
                                const std::string& why) {
  if (op.last_failure)
    self->state.driver.finish(id, failure_error(op, why));
  else
    self->state.driver.finish(id, make_error(errc::attempts_exhausted, why));
}

// The hard deadline: the operation ends at once with its last underlying
// failure (its attempt in flight is abandoned, and settled when it answers).
void metadata_plane::on_end_reached(uint64_t id, operation& op) {
  auto& st = self->state;
  ++st.stats.deadline_trips;
  auto limit = format_duration(st.cfg.hard_deadline);
  if (op.last_failure)
    st.driver.finish(
        id, failure_error(op, "hard deadline of " + limit + " reached"));
  else
    st.driver.finish(id, make_error(errc::deadline_exceeded,
                                    "no attempt of " +
                                        transport::describe(op.req.what) +
                                        " finished within the hard deadline "
                                        "of " +
                                        limit));
}

// The hedge's arm still out is abandoned like the primary: its answer
// still marks.
void metadata_plane::abandon_arms(uint64_t id, operation& op, bool) {
  auto& st = self->state;
  if (!op.hedge) return;
  if (auto loop = op.hedge->abandon(st.hedge_slots))
    st.driver.late().file(id, 1, {std::move(*loop), op.req});
  st.stats.metadata_hedge_slots = st.hedge_slots.in_use();
}

void metadata_plane::reply(uint64_t, operation& op,
                           caf::expected<transport::outcome> r) {
  if (r)
    op.rp.deliver(std::move(*r));
  else
    op.rp.deliver(r.error());
}

void on_new_table(self_ptr self) {
  self->state.driver.on_new_table();
}

void end_detached(self_ptr self, uint64_t id,
                  caf::expected<transport::outcome> r) {
  auto& st = self->state;
  auto i = st.detached.find(id);
  if (i == st.detached.end()) return; // already failed (router down)
  if (r)
    i->second.rp.deliver(std::move(*r));
  else
    i->second.rp.deliver(r.error());
  st.detached.erase(i);
}

caf::result<transport::outcome> detach(self_ptr self, document_request& req) {
  auto& st = self->state;
  if (!st.with.router)
    return make_error(errc::validation_error,
                      "detach-only mode needs a request router");
  auto id = st.next_detached++;
  auto rp = self->make_response_promise<transport::outcome>();
  st.detached.emplace(id, detached_op{rp, transport::describe(req.what),
                                      st.with.router.address()});
  ++st.stats.operations;
  // The router's pipeline runs under the same hard deadline and answers the
  // last underlying failure when it trips; our own timeout only catches a
  // router that never answers.
  auto limit = st.cfg.hard_deadline;
  auto what = transport::describe(req.what);
  self->request(st.with.router, limit + st.cfg.detach_grace, route_atom_v,
                std::move(req))
      .then(
          [=](transport::outcome& o) { end_detached(self, id, std::move(o)); },
          [=](caf::error& e) {
            if (e == caf::sec::request_timeout) {
              ++self->state.stats.deadline_trips;
              e = make_error(errc::deadline_exceeded,
                             "the request router did not answer " + what +
                                 " within the hard deadline of " +
                                 format_duration(limit));
            }
            end_detached(self, id, std::move(e));
          });
  return rp;
}

// A collaborator went down: what waits for it goes on or fails at once.
// Matched by the address each operation asked, since the supervisor's
// re-wiring to the successor may arrive first. A location cache that went
// down needs nothing: our snapshot stays usable until the supervisor re-wires
// us to its successor.
void on_down(self_ptr self, const caf::down_msg& dm) {
  auto& st = self->state;
  if (!dm.source) return;
  // Refreshes asked of an endpoint manager that is gone will never be
  // answered: their operations go on without them.
  st.driver.on_endpoints_down(dm.source);
  // Detached operations the gone router ran fail now, not at their timeout.
  std::vector<detached_op> failed;
  take_entries_of(st.detached, dm.source,
                  [&](detached_op& d) { failed.push_back(std::move(d)); });
  for (auto& d : failed)
    d.rp.deliver(collaborator_down("the request router (georoute.router)",
                                   dm.reason, d.what));
}

void rewire(self_ptr self, const engine_wiring& w) {
  auto& st = self->state;
  if (!from_supervisor(self, st.with.supervisor)) return;
  retarget(self, st.with.endpoints, w.endpoints);
  // The router's own pipeline is wired without a router (it never detaches).
  if (st.with.router) retarget(self, st.with.router, w.router);
  rewire_tables(self, w.locations, [self] { on_new_table(self); });
}

void stop(self_ptr self, const caf::exit_msg& msg) {
  auto& st = self->state;
  auto err = stopped_error(who, msg.reason);
  st.driver.stop(err);
  fail_all(st.detached, err);
  self->quit(msg.reason);
}

retry_impl_actor::behavior_type retry_impl(self_ptr self, retry_config cfg,
                                           retry_collaborators with) {
  auto& st = self->state;
  st.cfg = std::move(cfg);
  st.with = std::move(with);
  st.driver.bind(self);
  st.hedge_slots = metadata_hedge_budget{st.cfg.metadata_hedge.max_concurrent};
  self->set_down_handler([=](caf::down_msg& dm) { on_down(self, dm); });
  self->set_exit_handler([=](caf::exit_msg& msg) {
    if (msg.reason) stop(self, msg);
  });
  if (st.with.endpoints) self->monitor(st.with.endpoints);
  if (st.with.router) self->monitor(st.with.router);
  subscribe_to_tables(self, [self] { on_new_table(self); });
  return {
      [=](execute_atom,
          metadata_request& req) -> caf::result<transport::outcome> {
        auto& st = self->state;
        auto rp = self->make_response_promise<transport::outcome>();
        auto loop = make_loop(st, req);
        metadata_payload data;
        data.req = std::move(req);
        data.rp = rp;
        auto id = st.driver.admit(std::move(data), st.cfg.hard_deadline,
                                  std::move(loop));
        ++st.stats.operations;
        st.driver.schedule(id, *st.driver.find(id),
                           std::chrono::milliseconds{0});
        return rp;
      },
      [=](detach_atom, document_request& req)
          -> caf::result<transport::outcome> { return detach(self, req); },
      [=](stats_atom) { return current_stats(self->state); },
      [=](snapshot_atom, location_snapshot& snap) {
        on_pushed_table(self, snap, [self] { on_new_table(self); });
      },
      [=](const engine_wiring& w) { rewire(self, w); },
      [=](retry_attempt m) { self->state.driver.on_attempt(m.op, m.gen); },
      [=](retry_deadline m) { self->state.driver.on_tick(m.due); },
      [=](retry_http_done& m) {
        self->state.driver.on_http(m.op, m.arm, m.outcome);
      },
  };
}

} // namespace

retry_config retry_config_from(const config::settings& s) {
  retry_config c;
  c.hard_deadline = s.retry.metadata_hard_deadline;
  c.attempt_cap = s.retry.metadata_attempt_cap;
  c.client.max_failover_retries = s.retry.failover_retries;
  c.client.failover_retry_interval = s.retry.failover_retry_interval;
  c.client.throttle.max_attempts = s.retry.throttle_retries;
  c.client.throttle.max_wait = s.retry.throttle_max_wait;
  c.ladders = s.http.ladders;
  c.excluded_regions = s.location.excluded_regions;
  c.metadata_hedge = s.hedging.metadata;
  return c;
}

retry_actor spawn_retry(caf::actor_system& sys, retry_config cfg,
                        retry_collaborators with) {
  return caf::actor_cast<retry_actor>(
      sys.spawn(retry_impl, std::move(cfg), std::move(with)));
}

} // namespace georoute
