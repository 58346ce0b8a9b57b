// Hedging: arms, their answers, and the attempts of ended operations.
//
// The decisions live in the pure hedged_operation (hedged_operation.hpp):
// whether an operation is hedged and where to, when each arm goes, what an
// arm's answer means, what an abandoned arm does with its answer. The
// handlers here carry its steps out: the wire, diagnostics, counters, marks
// and the hedge's place in the deadline queue.

#include "georoute/actors/router_state.hpp"

namespace georoute::router_detail {

// What an ended operation's hedge still had out goes to the driver's late
// attempts: their answers still mark regions. Counts the hedges and every
// abandoned arm (the primary too) into the diagnostics.
void data_plane::abandon_arms(uint64_t id, data_operation& op,
                              bool primary_abandoned) {
  if (primary_abandoned) ++op.diag.abandoned_arms;
  if (!op.hedge) return;
  auto& st = self->state;
  auto token = session_token_for(st, op);
  for (auto& [arm, loop] : op.hedge->abandon()) {
    st.driver.late().file(
        id, static_cast<uint32_t>(arm),
        {std::move(loop), {op.req, op.link, token, op.diag.range_id}});
    ++op.diag.abandoned_arms;
  }
  op.diag.hedges = static_cast<uint32_t>(op.hedge->hedges_sent());
}

// What the operations of the router share, for the hedge.
hedge_env env_of(router_state& st) {
  hedge_env env;
  env.options = &st.cfg.hedging;
  env.budget = &st.hedge_allowance;
  env.latencies = &st.latencies;
  env.ladders = &st.cfg.ladders;
  env.breaker = st.breaker ? &*st.breaker : nullptr;
  return env;
}

// Puts the hedge's next wake-up into the driver's deadline queue.
void arm_hedge_timer(self_ptr self, uint64_t id, data_operation& op,
                     std::optional<policy_time> at) {
  self->state.driver.set_hedge_wake(id, op, at);
}

// Sends one arm (>= 1) the hedge started.
void send_arm(self_ptr self, uint64_t id, data_operation& op,
              const arm_send& s) {
  auto& st = self->state;
  auto now = self->clock().now();
  if (op.arms.size() < s.arm) op.arms.resize(s.arm);
  auto& w = op.arms[s.arm - 1];
  w.started = now;
  attempt_record rec;
  rec.region = s.plan.region;
  rec.endpoint = s.plan.endpoint;
  rec.started_us = micros(now - op.started);
  rec.arm = static_cast<uint32_t>(s.arm);
  note_admission(st, rec, s.plan);
  w.record = op.diag.attempts.size();
  op.diag.attempts.push_back(std::move(rec));
  ++st.stats.hedges_started;
  log_attempt(st, op.req, op.link, "hedge", op.diag.range_id, s.plan);
  st.driver.send(
      id, static_cast<uint32_t>(s.arm),
      attempt_wire(op.req, op.link, session_token_for(st, op), s.plan));
}

// Every arm answered and none was final: the last answer is the result.
void end_all_answered(self_ptr self, uint64_t id) {
  auto& op = self->state.driver.at(id);
  // A success is always final, so the last answer is a failure.
  finish_failure(self, id,
                 "no region gave a final answer (" +
                     std::to_string(op.hedge->arms().started()) +
                     " hedged arms)");
}

// Carries out a hedge step: counts, sends the arms it started, ends the
// operation when every arm answered, or sets the next wake-up. Returns
// false when the operation ended.
bool carry_out_hedge(self_ptr self, uint64_t id, const hedge_step& step) {
  auto& st = self->state;
  auto& op = st.driver.at(id);
  note_transitions(st, &op); // an arm's admission may start a probe
  st.stats.hedges_on_evidence += step.on_evidence;
  st.stats.hedges_refused += step.refused;
  st.stats.breaker_skips += step.skipped;
  for (const auto& s : step.sends)
    send_arm(self, id, op, s);
  if (step.all_answered) {
    end_all_answered(self, id);
    return false;
  }
  arm_hedge_timer(self, id, op, step.wake_at);
  return true;
}

// What the operation asks of hedging.
hedge_ask ask_of(const router_state& st, const data_operation& op) {
  hedge_ask ask;
  ask.op = access_of(op.req.op);
  ask.hedge = op.req.options.hedge;
  ask.threshold = op.req.options.hedge_threshold;
  if (ask.op == op_kind::write) ask.write_copy_safe = write_copy_safe(op);
  ask.excluded = excluded_for(st, op);
  return ask;
}

// Decides at the first attempt whether the operation may be hedged, and
// when; its regions wait for that time (materialize_hedge).
void plan_hedge(self_ptr self, uint64_t id, data_operation& op) {
  auto& st = self->state;
  if (!st.snap.table()) return;
  // The cheap check first: an operation that is not hedged pays nothing
  // more (no exclusion list).
  if (!hedge_wanted(st.cfg.hedging, access_of(op.req.op), op.req.options.hedge))
    return;
  op.hedge_pending =
      hedged_operation::intend(env_of(st), ask_of(st, op), *op.loop,
                               *st.snap.table(), op.attempt_started);
  if (op.hedge_pending) arm_hedge_timer(self, id, op, op.hedge_pending->due());
}

// The first hedge is due, or arm 0 gave up before: the regions now. False:
// the operation is not hedged (fewer than two regions left).
bool materialize_hedge(self_ptr self, data_operation& op) {
  if (op.hedge) return true;
  auto& st = self->state;
  if (!op.hedge_pending || !st.snap.table()) return false;
  auto intent = *op.hedge_pending;
  op.hedge_pending.reset();
  op.hedge = hedged_operation::materialize(env_of(st), ask_of(st, op), intent,
                                           *op.loop, *st.snap.table(),
                                           self->clock().now());
  return op.hedge.has_value();
}

// The hedge's time came (or an event may have made an arm due).
void data_plane::on_hedge_due(uint64_t id, data_operation& op) {
  auto& st = self->state;
  if (!st.snap.table()) return;
  if (st.cfg.fleet && op.primary_out && !op.fleet_waited &&
      self->clock().now() - op.attempt_started >= st.cfg.fleet_threshold) {
    // The read waited for the threshold: what the fleet hears about first.
    op.fleet_waited = true;
    fleet_note(st, op.region, fleet_event::threshold_wait);
  }
  if (!materialize_hedge(self, op)) return;
  auto step = op.hedge->advance(env_of(st), *op.loop, *st.snap.table(),
                                self->clock().now(), op.end_reached);
  carry_out_hedge(self, id, step);
}

// The primary gave up and the hedge took over (`on_primary_failure`): its
// step, now that the failure's side effects ran.
void data_plane::hedge_takes_over(uint64_t id, data_operation& op) {
  auto step = std::move(*op.handover);
  op.handover.reset();
  carry_out_hedge(self, id, step);
}

// Takes the outcome's activity id (nothing after this reads it).
void record_answer(self_ptr self, data_payload& op, attempt_record& rec,
                   transport::outcome& o, clock_type::time_point sent) {
  auto now = self->clock().now();
  rec.activity_id = std::move(o.activity_id);
  rec.connection = o.connection;
  rec.connection_served = o.connection_served;
  rec.queued_us = o.queued_us;
  rec.connect_us = o.connect_us;
  rec.write_us = o.write_us;
  rec.wait_us = o.wait_us;
  rec.status = o.status;
  rec.substatus = o.substatus;
  rec.failure = o.error == transport::failure::none
                    ? std::string{}
                    : std::string{transport::to_string(o.error)};
  rec.elapsed_us = micros(now - sent);
  rec.request_charge = o.request_charge;
  op.diag.request_charge += o.request_charge;
  fleet_answer(self->state, op, rec.region, o, now - sent);
  // Answer times feed only the adaptive threshold: nothing to do otherwise.
  const auto& hc = self->state.cfg.hedging;
  if (o.success() && hc.enabled && hc.mode == hedge_threshold_mode::adaptive)
    self->state.latencies.record(
        rec.region,
        std::chrono::duration_cast<std::chrono::microseconds>(now - sent));
}

// A hedge arm answered (its operation still runs).
void data_plane::on_arm_answer(uint64_t id, data_operation& op, uint32_t arm,
                               transport::outcome& o) {
  auto& st = self->state;
  auto& rec = op.diag.attempts[op.arms[arm - 1].record];
  record_answer(self, op, rec, o, op.arms[arm - 1].started);
  op.diag.hedge_charge += o.request_charge;
  st.stats.hedge_charge += o.request_charge;
  capture_session(st, op, o);
  auto now = self->clock().now();
  const auto& region = op.hedge->arm_region(arm);
  auto answer = op.hedge->on_arm_result(
      arm, attempt_result_of(o), o.request_charge, env_of(st), *op.loop,
      op.primary_out, *st.snap.table(), now, op.end_reached);
  note_transitions(st, &op);
  op.last_answer = o;
  op.last_answer_region = region;
  if (answer.ends == arm_answer::end::final_result) {
    if (o.success() && !success_body_problem(op.req.op, o)) {
      finish_ok(self, id, o, arm);
      return;
    }
    op.last_failure = o;
    op.last_region = region;
    if (take_echo(self, id, o, region)) return;
    finish_error(self, id, classify_outcome(o),
                 failure_text(o, region, op.loop->attempts() + arm,
                              describe(op), "a final answer of a hedge"));
    return;
  }
  apply_effects(self, answer.effects, origin_of(st, &o, op.end_reached));
  if (replaces_reported_failure(op.last_failure.has_value(),
                                op.hedge->primary_done())) {
    op.last_failure = o;
    op.last_region = region;
  }
  if (answer.ends == arm_answer::end::all_answered) {
    end_all_answered(self, id);
    return;
  }
  carry_out_hedge(self, id, answer.next);
}

// An abandoned attempt of an ended operation answered (the driver settles
// it): a hedge arm's charge counts, and the breaker may have moved.
void data_plane::on_late_answer(uint32_t arm, const transport::outcome& o) {
  auto& st = self->state;
  if (arm > 0) st.stats.hedge_charge += o.request_charge;
  note_transitions(st, nullptr);
}

} // namespace georoute::router_detail
