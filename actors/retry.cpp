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

// Messages only this file can name: the next attempt of an operation, its
// hard deadline, and an HTTP completion.
struct retry_attempt {
  uint64_t op = 0;
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

// One loop-mode operation.
struct operation {
  metadata_request req;
  caf::typed_response_promise<transport::outcome> rp;
  // The attempt loop: endpoint choice, ladder, retry policy (built with the
  // operation; its policy takes the first snapshot it resolves on).
  std::optional<attempt_loop> loop;
  bool in_flight = false;
  std::optional<transport::outcome> last_failure;
  std::string last_region;
  caf::actor_clock::time_point deadline; // the hard deadline
  // Metadata hedging: the decisions are the pure metadata_hedge's
  // (metadata_hedge.hpp); the actor keeps what the wire needs.
  std::optional<metadata_hedge> hedge;
  // When the hedge is due (held in the deadline queue).
  std::optional<caf::actor_clock::time_point> hedge_due;
  // A definitive error of the hedge, kept until the primary decides.
  std::optional<transport::outcome> hedge_held;
  // The primary's last attempt timed out and its next ladder step waits.
  bool climbing = false;
};

// A detach-only operation: the router works, we wait.
struct detached_op {
  caf::typed_response_promise<transport::outcome> rp;
  std::string what;    // "POST /dbs/d/colls/c/docs"
  caf::actor_addr via; // the router that runs it
};

struct retry_state {
  retry_config cfg;
  retry_collaborators with;
  snapshot_holder snap; // the table, never older than what we marked
  std::map<uint64_t, operation> ops;
  // Attempts of ended operations still out, by (operation, arm): the answer
  // is dropped, but a failure still carries out its loop's effects, and a
  // timeout goes on up the ladder until the endpoint is marked (as the
  // router's abandoned arms do).
  late_attempts<metadata_request> late;
  // Operations waiting for an account refresh, with the endpoint manager
  // asked (its down message may come after the supervisor re-wired us to a
  // successor, so it is matched against this, not the current handle) and
  // the decision's pause before the next attempt.
  struct refresh_wait {
    caf::actor_addr via;
    std::chrono::milliseconds delay{0};
  };
  std::map<uint64_t, refresh_wait> awaiting_refresh;
  std::map<uint64_t, detached_op> detached;
  std::vector<uint64_t> waiting_for_snapshot;
  // The hard deadlines and hedge times of the live operations, served by
  // one timer message (no timer per operation that outlives it).
  deadline_queue deadlines;
  // Metadata hedges in flight, for every operation of this actor.
  metadata_hedge_budget hedge_slots;
  uint64_t next_id = 1;
  retry_stats stats;
  // What applying decisions counted (folded into `stats` when asked).
  driver_counters counts;
  static inline const char* name = "georoute.retry";
};

using self_ptr = retry_impl_actor::stateful_pointer<retry_state>;

void update_live(retry_state& st) {
  st.stats.live = st.ops.size() + st.detached.size();
}

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
  return s;
}

// Who decided, for `apply_effects`: the metadata plane clears the session
// of a name-based collection.
effect_origin origin_of(const retry_state& st, const metadata_request& req,
                        const transport::outcome* why, bool after_end) {
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
                                 op.req.method + " " + op.req.path, why));
}

// Keeps the hedge's place in the deadline queue equal to its due time.
void sync_hedge_due(self_ptr self, uint64_t op_id, operation& op);

void send_request(self_ptr self, uint64_t op_id, uint32_t arm,
                  const metadata_request& r, const attempt_plan& plan);

// Sends the next ladder step of an abandoned attempt, unless its endpoint
// is marked meanwhile (the region is known bad) or there is none.
void climb_late(self_ptr self, uint64_t op_id, uint32_t arm,
                late_attempt<metadata_request> late) {
  auto& st = self->state;
  if (!st.snap.table()) return;
  auto plan = continue_abandoned_climb(late.loop, *st.snap.table(),
                                       self->clock().now());
  if (!plan) return;
  send_request(self, op_id, arm, late.what, *plan);
  st.late.file(op_id, arm, std::move(late));
}

void finish(self_ptr self, uint64_t op_id,
            caf::expected<transport::outcome> r) {
  auto& st = self->state;
  auto i = st.ops.find(op_id);
  if (i == st.ops.end()) return;
  auto& op = i->second;
  if (r)
    op.rp.deliver(std::move(*r));
  else
    op.rp.deliver(r.error());
  st.deadlines.remove({op_id, deadline_slot::end}, op.deadline);
  if (op.hedge_due)
    st.deadlines.remove({op_id, deadline_slot::hedge}, *op.hedge_due);
  // Attempts still out are abandoned, not forgotten, whatever ended the
  // operation (a hedge's answer, the hard deadline): a failure still marks.
  // A primary between two steps of its ladder sends the next one all the
  // same, so that a hung region is found out. (A hard deadline is not a
  // budget: the metadata loop never stops climbing for it.)
  if (op.loop) {
    switch (abandon_primary(op.in_flight, op.climbing, false)) {
    case primary_fate::settle_in_flight:
      st.late.file(op_id, 0, {std::move(*op.loop), op.req});
      break;
    case primary_fate::climb_now:
      climb_late(self, op_id, 0, {std::move(*op.loop), op.req});
      break;
    case primary_fate::nothing:
      break;
    }
  }
  if (op.hedge) {
    if (auto loop = op.hedge->abandon(st.hedge_slots))
      st.late.file(op_id, 1, {std::move(*loop), op.req});
    st.stats.metadata_hedge_slots = st.hedge_slots.in_use();
  }
  st.ops.erase(i);
  st.awaiting_refresh.erase(op_id);
  update_live(st);
}

void schedule_attempt(self_ptr self, uint64_t op_id,
                      std::chrono::milliseconds delay) {
  // Even a zero back-off goes through the mailbox: other messages
  // interleave, and the attempt cap bounds the loop.
  if (delay.count() > 0)
    self->delayed_send(self, delay, retry_attempt{op_id});
  else
    self->send(self, retry_attempt{op_id});
}

std::vector<std::string> excluded_for(const retry_state& st,
                                      const metadata_request& req) {
  return merged_exclusions(st.cfg.excluded_regions, req.excluded_regions);
}

attempt_loop make_loop(const retry_state& st, const metadata_request& req) {
  loop_environment env;
  env.client = st.cfg.client;
  env.attempt_cap = st.cfg.attempt_cap;
  return attempt_loop{metadata_loop(req.kind, req.op, req.policy,
                                    !req.collection_name.empty(),
                                    excluded_for(st, req), env),
                      st.cfg.ladders};
}

void arm_deadline_timer(self_ptr self,
                        std::optional<caf::actor_clock::time_point> at);

// Sends one attempt of an operation: its primary (arm 0), its hedge (arm
// 1), or an abandoned attempt's next ladder step (under its arm).
void send_request(self_ptr self, uint64_t op_id, uint32_t arm,
                  const metadata_request& r, const attempt_plan& plan) {
  auto& st = self->state;
  transport::request req;
  req.method = r.method;
  req.endpoint = plan.endpoint;
  // Names in the path (database, collection, document ids) may hold what a
  // path cannot carry as it is: encoded here, decoded again for signing.
  // Ids cannot hold '?': a query string, if any, goes as it is.
  auto query = std::min(r.path.find('?'), r.path.size());
  req.target.clear();
  req.target.reserve(r.path.size());
  transport::append_encoded_path(
      req.target, std::string_view{r.path}.substr(0, query), true);
  req.target.append(r.path, query, std::string::npos);
  req.headers = r.headers;
  req.body = r.body;
  req.rid_based = r.rid_based;
  req.timeout = plan.timeout;
  ++st.stats.attempts;
  auto hdl = caf::actor_cast<caf::actor>(self);
  st.with.http->send(std::move(req), [hdl, op_id, arm](transport::outcome o) {
    caf::anon_send(hdl, retry_http_done{op_id, arm, std::move(o)});
  });
}

// At the first attempt: whether the operation is hedged, and where to. The
// hedge's time goes into the deadline queue, not a timer of its own.
void plan_hedge(self_ptr self, uint64_t op_id, operation& op) {
  auto& st = self->state;
  // The cheap check first: most kinds are never hedged.
  if (!metadata_hedge_applies(st.cfg.metadata_hedge, op.req.kind,
                              op.req.first_page, 2))
    return;
  metadata_hedge_ask ask;
  ask.kind = op.req.kind;
  ask.op = op.req.op;
  ask.first_page = op.req.first_page;
  ask.excluded = excluded_for(st, op.req);
  op.hedge =
      metadata_hedge::plan(st.cfg.metadata_hedge, std::move(ask), *op.loop,
                           *st.snap.table(), self->clock().now());
  sync_hedge_due(self, op_id, op);
}

void sync_hedge_due(self_ptr self, uint64_t op_id, operation& op) {
  auto due = op.hedge ? op.hedge->due() : std::nullopt;
  arm_deadline_timer(
      self, move_wake(self->state.deadlines, op_id, op.hedge_due, due));
}

// The hedge's time came: one attempt in the hedge region, if the hedge
// still applies and a budget slot is free (`metadata_hedge::start`).
void start_hedge(self_ptr self, uint64_t op_id) {
  auto& st = self->state;
  auto i = st.ops.find(op_id);
  if (i == st.ops.end()) return;
  auto& op = i->second;
  op.hedge_due.reset(); // the queue already dropped it
  if (!op.hedge || !st.snap.table()) return;
  auto s =
      op.hedge->start(*op.loop, op.in_flight, st.hedge_slots, st.cfg.ladders,
                      *st.snap.table(), self->clock().now());
  if (s.refused) ++st.stats.metadata_hedges_refused;
  st.stats.metadata_hedge_slots = st.hedge_slots.in_use();
  if (!s.send) return;
  send_request(self, op_id, 1, op.req, *s.send);
  ++st.stats.metadata_hedges_started;
}

void attempt(self_ptr self, uint64_t op_id) {
  auto& st = self->state;
  auto i = st.ops.find(op_id);
  if (i == st.ops.end() || i->second.in_flight) return;
  auto& op = i->second;
  if (!st.snap.table()) {
    st.waiting_for_snapshot.push_back(op_id);
    return;
  }
  // The primary left its region while the hedge is out: the hedge's answer
  // will be taken whatever it is, unless its region fails too; only then
  // does the primary go on.
  if (op.hedge && op.hedge->defer_primary()) return;
  auto plan = op.loop->next_attempt(*st.snap.table(), self->clock().now());
  if (!plan) {
    if (op.last_failure)
      finish(self, op_id, failure_error(op, plan.error().what));
    else
      finish(self, op_id,
             make_error(errc::attempts_exhausted, plan.error().what));
    return;
  }
  op.in_flight = true;
  op.climbing = false;
  send_request(self, op_id, 0, op.req, *plan);
  if (plan->number > 1) ++st.stats.retries;
  if (plan->number == 1) plan_hedge(self, op_id, op);
}

// A newer table: what waited for a first table goes.
void on_new_table(self_ptr self) {
  auto waiting = std::move(self->state.waiting_for_snapshot);
  for (auto id : waiting)
    attempt(self, id);
}

void subscribe(self_ptr self) {
  subscribe_to_tables(self, [self] { on_new_table(self); });
}

// Ends the operation with the hedge's answer.
void take_hedge(self_ptr self, uint64_t op_id, transport::outcome o) {
  auto& st = self->state;
  auto& op = st.ops.at(op_id);
  ++st.stats.metadata_hedges_won;
  if (o.success()) {
    finish(self, op_id, std::move(o));
    return;
  }
  op.last_failure = std::move(o);
  op.last_region = op.hedge->hedge_region();
  finish(self, op_id,
         failure_error(op, "the definitive answer of the hedge to " +
                               op.hedge->hedge_region()));
}

// An attempt of an ended operation answered: dropped, but a failure still
// marks its region, or a timeout climbs its ladder (`settle_late_attempt`,
// the rule the router's abandoned arms follow too).
void on_late(self_ptr self, uint64_t op_id, uint32_t arm,
             const transport::outcome& o) {
  auto& st = self->state;
  ++st.counts.late_answers;
  auto s = st.late.settle(op_id, arm, attempt_result_of(o),
                          st.snap.table().get(), self->clock().now());
  if (!s.tracked) return;
  if (s.resend) {
    send_request(self, op_id, arm, s.entry->what, *s.resend);
    st.late.file(op_id, arm, std::move(*s.entry));
    return;
  }
  apply_effects(self, s.effects, origin_of(st, s.entry->what, &o, true));
}

// The hedge answered while its operation runs. Its failure's effects run;
// `metadata_hedge_wins` decides whether its answer is the operation's.
void on_hedge_outcome(self_ptr self, uint64_t op_id, transport::outcome& o) {
  auto& st = self->state;
  auto& op = st.ops.at(op_id);
  if (!st.snap.table()) return;
  auto answer =
      op.hedge->on_hedge_result(attempt_result_of(o), st.hedge_slots,
                                *st.snap.table(), self->clock().now());
  st.stats.metadata_hedge_slots = st.hedge_slots.in_use();
  apply_effects(self, answer.effects, origin_of(st, op.req, &o, false));
  if (answer.hold) op.hedge_held = o;
  using next = metadata_hedge_answer::next;
  switch (answer.then) {
  case next::take:
    take_hedge(self, op_id, std::move(o));
    return;
  case next::end_primary:
    finish(self, op_id, failure_error(op, *op.hedge->primary_gave_up()));
    return;
  case next::resume_primary:
    schedule_attempt(self, op_id, std::chrono::milliseconds{0});
    return;
  case next::nothing:
    return;
  }
}

void on_outcome(self_ptr self, uint64_t op_id, uint32_t arm,
                transport::outcome& o) {
  auto& st = self->state;
  auto i = st.ops.find(op_id);
  if (i == st.ops.end()) {
    // The deadline tripped first, or the other arm of a hedge won.
    on_late(self, op_id, arm, o);
    return;
  }
  if (arm != 0) {
    on_hedge_outcome(self, op_id, o);
    return;
  }
  auto& op = i->second;
  op.in_flight = false;
  if (o.success()) {
    finish(self, op_id, std::move(o));
    return;
  }
  op.last_failure = o;
  op.last_region = op.loop->region();
  auto step = op.loop->on_result(attempt_result_of(o), *st.snap.table(),
                                 self->clock().now(), false);
  op.climbing = step.ladder_climb;
  metadata_primary_step hs;
  if (op.hedge) {
    hs = op.hedge->on_primary_failure(attempt_result_of(o), step);
    sync_hedge_due(self, op_id, op); // a hedge not yet due may be ruled out
  }
  bool take_held = hs.take_held && op.hedge_held;
  auto from = origin_of(st, op.req, &o, false);
  if (step.next == loop_next::after_refresh && !take_held) {
    // The next attempt waits for the account refresh, bounded by the hard
    // deadline, which can still fire; if the endpoint manager goes down
    // meanwhile, the attempt goes ahead without it.
    auto delay = step.delay;
    auto retry = [=] {
      if (self->state.awaiting_refresh.erase(op_id) > 0)
        schedule_attempt(self, op_id, delay);
    };
    if (apply_effects(self, step.effects, from, retry))
      st.awaiting_refresh.emplace(
          op_id, retry_state::refresh_wait{st.with.endpoints.address(), delay});
    else
      schedule_attempt(self, op_id, delay);
    return;
  }
  apply_effects(self, step.effects, from);
  if (take_held) {
    take_hedge(self, op_id, std::move(*op.hedge_held));
    return;
  }
  switch (step.next) {
  case loop_next::attempt:
    schedule_attempt(self, op_id, step.delay);
    return;
  default: // the loop never asks the metadata path for a metadata refresh
    if (step.policy_refused) ++st.stats.policy_refusals;
    if (hs.wait_for_hedge) return; // the hedge may still answer
    finish(self, op_id, failure_error(op, step.reason));
    return;
  }
}

void on_deadline(self_ptr self, uint64_t op_id) {
  auto& st = self->state;
  auto i = st.ops.find(op_id);
  if (i == st.ops.end()) return;
  ++st.stats.deadline_trips;
  auto& op = i->second;
  auto limit = format_duration(st.cfg.hard_deadline);
  if (op.last_failure)
    finish(self, op_id,
           failure_error(op, "hard deadline of " + limit + " reached"));
  else
    finish(self, op_id,
           make_error(errc::deadline_exceeded,
                      "no attempt of " + op.req.method + " " + op.req.path +
                          " finished within the hard deadline of " + limit));
}

void arm_deadline_timer(self_ptr self,
                        std::optional<caf::actor_clock::time_point> at) {
  arm_deadline_tick<retry_deadline>(self, at);
}

void on_deadline_timer(self_ptr self, caf::actor_clock::time_point due) {
  auto fired = self->state.deadlines.on_timer(due, self->clock().now());
  for (auto key : fired.expired)
    if (key.slot == deadline_slot::end)
      on_deadline(self, key.op);
    else
      start_hedge(self, key.op);
  arm_deadline_timer(self, fired.arm);
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
  update_live(st);
}

caf::result<transport::outcome> detach(self_ptr self, document_request& req) {
  auto& st = self->state;
  if (!st.with.router)
    return make_error(errc::validation_error,
                      "detach-only mode needs a request router");
  auto id = st.next_id++;
  auto rp = self->make_response_promise<transport::outcome>();
  st.detached.emplace(id, detached_op{rp, req.method + " " + req.path,
                                      st.with.router.address()});
  ++st.stats.operations;
  update_live(st);
  // The router's pipeline runs under the same hard deadline and answers the
  // last underlying failure when it trips; our own timeout only catches a
  // router that never answers.
  auto limit = st.cfg.hard_deadline;
  auto what = req.method + " " + req.path;
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
  // answered: go on without them, after the pause the decision asked for
  // (as after a refresh that answered).
  std::vector<std::pair<uint64_t, std::chrono::milliseconds>> go_on;
  for (auto i = st.awaiting_refresh.begin(); i != st.awaiting_refresh.end();) {
    if (i->second.via == dm.source) {
      go_on.emplace_back(i->first, i->second.delay);
      i = st.awaiting_refresh.erase(i);
    } else {
      ++i;
    }
  }
  for (auto [id, delay] : go_on)
    schedule_attempt(self, id, delay);
  // Detached operations the gone router ran fail now, not at their timeout.
  std::vector<detached_op> failed;
  take_entries_of(st.detached, dm.source,
                  [&](detached_op& d) { failed.push_back(std::move(d)); });
  if (failed.empty()) return;
  update_live(st);
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
  fail_all(st.ops, err);
  fail_all(st.detached, err);
  st.late.clear();
  st.deadlines.clear();
  update_live(st);
  self->quit(msg.reason);
}

retry_impl_actor::behavior_type retry_impl(self_ptr self, retry_config cfg,
                                           retry_collaborators with) {
  auto& st = self->state;
  st.cfg = std::move(cfg);
  st.with = std::move(with);
  st.hedge_slots = metadata_hedge_budget{st.cfg.metadata_hedge.max_concurrent};
  self->set_down_handler([=](caf::down_msg& dm) { on_down(self, dm); });
  self->set_exit_handler([=](caf::exit_msg& msg) {
    if (msg.reason) stop(self, msg);
  });
  if (st.with.endpoints) self->monitor(st.with.endpoints);
  if (st.with.router) self->monitor(st.with.router);
  subscribe(self);
  return {
      [=](execute_atom,
          metadata_request& req) -> caf::result<transport::outcome> {
        auto& st = self->state;
        auto id = st.next_id++;
        auto rp = self->make_response_promise<transport::outcome>();
        operation op;
        op.req = std::move(req);
        op.rp = rp;
        op.loop.emplace(make_loop(st, op.req));
        op.deadline = self->clock().now() + st.cfg.hard_deadline;
        auto arm = st.deadlines.add({id, deadline_slot::end}, op.deadline);
        st.ops.emplace(id, std::move(op));
        ++st.stats.operations;
        update_live(st);
        arm_deadline_timer(self, arm);
        schedule_attempt(self, id, std::chrono::milliseconds{0});
        return rp;
      },
      [=](detach_atom, document_request& req)
          -> caf::result<transport::outcome> { return detach(self, req); },
      [=](stats_atom) { return current_stats(self->state); },
      [=](snapshot_atom, location_snapshot& snap) {
        on_pushed_table(self, snap, [self] { on_new_table(self); });
      },
      [=](const engine_wiring& w) { rewire(self, w); },
      [=](retry_attempt m) { attempt(self, m.op); },
      [=](retry_deadline m) { on_deadline_timer(self, m.due); },
      [=](retry_http_done& m) { on_outcome(self, m.op, m.arm, m.outcome); },
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
