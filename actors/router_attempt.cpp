// Attempts: an operation's start, its attempt loop carried out, the
// budget.

#include "georoute/actors/router_state.hpp"

namespace georoute::router_detail {

std::vector<std::string> excluded_for(const router_state& st,
                                      const data_operation& op) {
  return merged_exclusions(st.cfg.excluded_regions,
                           op.req.options.excluded_regions);
}

void schedule_attempt(self_ptr self, uint64_t id,
                      std::chrono::milliseconds delay) {
  auto& op = self->state.ops.at(id);
  op.waiting = waiting_for::backoff;
  if (delay.count() > 0) {
    ++self->state.stats.timers_armed;
    self->delayed_send(self, delay, rt_attempt{id});
  } else
    self->send(self, rt_attempt{id});
}

void attempt(self_ptr self, uint64_t id) {
  auto& st = self->state;
  auto i = st.ops.find(id);
  if (i == st.ops.end()) return;
  auto& op = i->second;
  if (op.budget_spent) {
    finish_failure(self, id,
                   "operation budget of " + format_duration(op.budget) +
                       " spent");
    return;
  }
  if (!st.snap.table()) {
    op.waiting = waiting_for::snapshot;
    st.table_waiters.push_back(id);
    return;
  }
  // The one place where endpoint choice happens: the attempt loop resolves
  // on the router's snapshot and asks the circuit breaker of the range.
  set_partition(op, *op.loop);
  auto plan = op.loop->next_attempt(*st.snap.table(), self->clock().now());
  note_transitions(st, &op);
  if (!plan) {
    // The loop refuses another attempt (its cap). With no failure to
    // report, both planes say so as `attempts_exhausted`.
    if (!op.last_failure)
      finish_error(self, id, errc::attempts_exhausted,
                   describe(op) + ": " + plan.error().what);
    else
      finish_failure(self, id, plan.error().what);
    return;
  }
  op.endpoint = plan->endpoint;
  op.region = plan->region;
  wire_target t;
  t.collection_link = op.link;
  t.endpoint = op.endpoint;
  t.session_token = session_token_for(st, op);
  t.hub_header = plan->hub_header;
  t.timeout = plan->timeout;
  auto req = to_wire(op.req, t);
  ++st.stats.attempts;
  op.waiting = waiting_for::response;
  op.climbing = false;
  op.primary_out = true;
  op.attempt_started = self->clock().now();
  attempt_record rec;
  rec.region = op.region;
  rec.endpoint = op.endpoint;
  rec.started_us = micros(op.attempt_started - op.started);
  note_admission(st, rec, *plan);
  op.primary_record = op.diag.attempts.size();
  op.diag.attempts.push_back(std::move(rec));
  auto hdl = caf::actor_cast<caf::actor>(self);
  st.with.http->send(std::move(req), [hdl, id](transport::outcome o) {
    caf::anon_send(hdl, rt_http_done{id, 0, std::move(o)});
  });
  if (plan->number == 1) plan_hedge(self, id);
}

// Carries out the side effects of a step: they always run, whether the
// operation goes on or not (its budget may be spent, its caller gone). When
// the step waits for the refresh (`after_refresh`), the retry follows its
// answer, on the table the refresh produced (see take_current_table): on an
// older table a single-master write would go back to the hub of a
// single-write view the refresh has replaced.
void carry_out(self_ptr self, uint64_t id, const loop_step& s) {
  auto& st = self->state;
  auto& op = st.ops.at(id);
  auto from = origin_of(st, op.last_failure ? &*op.last_failure : nullptr,
                        op.budget_spent);
  if (s.next != loop_next::after_refresh) {
    apply_effects(self, s.effects, from);
    return;
  }
  auto delay = s.delay;
  auto retry = [=] {
    auto& st = self->state;
    auto i = st.ops.find(id);
    if (i == st.ops.end() || i->second.waiting != waiting_for::refresh) return;
    schedule_attempt(self, id, delay);
  };
  if (apply_effects(self, s.effects, from, retry)) {
    op.waiting = waiting_for::refresh;
    op.waiting_on = st.with.endpoints.address();
    op.resume_after = delay;
  }
}

void on_outcome(self_ptr self, uint64_t id, uint32_t arm,
                transport::outcome& o) {
  auto& st = self->state;
  auto i = st.ops.find(id);
  if (i == st.ops.end()) {
    on_late_answer(self, id, arm, o);
    return;
  }
  if (arm == read_back_arm) {
    on_read_back(self, id, o);
    return;
  }
  if (i->second.echo) {
    // A read-back decides this write now: another arm's success ends it,
    // its failure cannot (it would end the operation before the read-back
    // tells whether the echo was its own first copy). What an answer saw
    // still counts: a hedge arm's reaches the hedge (the arm is no longer
    // out; the breaker hears of it), the primary's reaches its loop and the
    // breaker, and their failures mark; no further attempt starts.
    auto& op = i->second;
    auto& rec =
        op.diag
            .attempts[arm == 0 ? op.primary_record : op.arms[arm - 1].record];
    record_answer(self, op, rec, o,
                  arm == 0 ? op.attempt_started : op.arms[arm - 1].started);
    capture_session(st, op, o);
    if (arm > 0 && op.hedge) {
      op.diag.hedge_charge += o.request_charge;
      st.stats.hedge_charge += o.request_charge;
      auto answer = op.hedge->on_arm_result(
          arm, attempt_result_of(o), o.request_charge, env_of(st), *op.loop,
          false, *st.snap.table(), self->clock().now(), op.budget_spent);
      note_transitions(st, &op);
      apply_effects(self, answer.effects, origin_of(st, &o, op.budget_spent));
    }
    if (arm == 0) {
      op.primary_out = false;
      report_to_breaker(st, &op, *op.loop, o, self->clock().now());
      if (!o.success()) {
        auto step = op.loop->on_result(attempt_result_of(o), *st.snap.table(),
                                       self->clock().now(), op.budget_spent);
        apply_effects(self, step.effects, origin_of(st, &o, op.budget_spent));
      }
    }
    if (o.success() && !success_body_problem(op.req.op, o)) {
      if (arm == 0) op.waiting = waiting_for::nothing; // it answered
      finish_ok(self, id, o, arm);
    }
    return;
  }
  if (arm > 0) {
    on_hedge_outcome(self, id, arm, o);
    return;
  }
  auto& op = i->second;
  op.waiting = waiting_for::nothing;
  op.primary_out = false;
  auto& rec = op.diag.attempts[op.primary_record];
  record_answer(self, op, rec, o, op.attempt_started);
  capture_session(st, op, o);
  report_to_breaker(st, &op, *op.loop, o, self->clock().now());
  if (o.success()) {
    // The loop hears of it too: a success confirms where per-partition
    // failover sent the range (without it an override was never confirmed
    // and its failback walked on instead of going home; the drill's S8).
    op.loop->on_result(attempt_result_of(o), *st.snap.table(),
                       self->clock().now(), op.budget_spent);
    // A broken body is the gateway breaking the protocol: an error, never a
    // success the caller cannot parse. Not retried: a write was applied.
    if (auto bad = success_body_problem(op.req.op, o)) {
      auto why = *bad;
      if (is_write(op.req.op))
        why += "; the write may have been applied: read it back before "
               "retrying";
      finish_error(
          self, id, errc::protocol_violation,
          failure_text(o, op.region, op.loop->attempts(), describe(op), why));
      return;
    }
    finish_ok(self, id, o);
    return;
  }
  op.last_failure = o;
  op.last_region = op.region;
  auto step = op.loop->on_result(attempt_result_of(o), *st.snap.table(),
                                 self->clock().now(), op.budget_spent);
  op.climbing = step.ladder_climb;
  if (st.cfg.log.enabled(log_level::debug))
    st.cfg.log.log(
        log_level::debug, router_state::name, "operation.retry",
        describe(op) + ": " + describe_outcome(o) + " from " + op.region +
            " (" + o.endpoint + "); " +
            (step.reason.empty() ? std::string{"no retry"} : step.reason));
  switch (step.next) {
  case loop_next::refresh_ranges:
    // Range gone: refresh the map and re-route; a targeted range that is
    // gone fails now.
    rec.retry_reason = step.reason;
    ++st.stats.metadata_refreshes;
    op.range_refreshed = true;
    resolve_range(self, id, true);
    return;
  case loop_next::refresh_collection:
    rec.retry_reason = step.reason;
    ++st.stats.metadata_refreshes;
    op.epk.clear();
    resolve_collection(self, id, true);
    return;
  default:
    break;
  }
  carry_out(self, id, step);
  bool gives_up =
      step.next == loop_next::fail || step.next == loop_next::fail_budget;
  if (gives_up && materialize_hedge(self, op)) {
    // The primary gave up; a hedge may still win, or start at once.
    auto hs = op.hedge->primary_gave_up(attempt_result_of(o), o.request_charge,
                                        env_of(st), *op.loop, *st.snap.table(),
                                        self->clock().now(), op.budget_spent);
    if (hs) {
      op.last_answer = o;
      op.last_answer_region = op.region;
      carry_out_hedge(self, id, *hs);
      return;
    }
  }
  switch (step.next) {
  case loop_next::fail:
    primary_final(st, op, self->clock().now());
    if (take_echo(self, id, o, op.region)) return;
    finish_failure(self, id, step.reason);
    return;
  case loop_next::fail_budget:
    rec.retry_reason = step.reason;
    finish_failure(self, id,
                   "operation budget of " + format_duration(op.budget) +
                       " spent");
    return;
  default:
    rec.retry_reason = step.reason;
    if (op.waiting != waiting_for::refresh)
      schedule_attempt(self, id, step.delay);
    return;
  }
}

void arm_budget_tick(self_ptr self, std::optional<clock_type::time_point> at) {
  arm_deadline_tick<rt_budget_tick>(self, at, &self->state.stats.timers_armed);
}

// Ends the budget of every operation whose deadline has come, and starts
// the hedges that are due.
void on_budget_tick(self_ptr self, clock_type::time_point due) {
  auto fired = self->state.deadlines.on_timer(due, self->clock().now());
  for (auto key : fired.expired) {
    if (key.slot == deadline_slot::end) {
      on_budget(self, key.op);
      continue;
    }
    auto i = self->state.ops.find(key.op);
    if (i == self->state.ops.end()) continue;
    i->second.hedge_due.reset();
    advance_hedge(self, key.op);
  }
  arm_budget_tick(self, fired.arm);
}

void on_budget(self_ptr self, uint64_t id) {
  auto& st = self->state;
  auto i = st.ops.find(id);
  if (i == st.ops.end()) return;
  auto& op = i->second;
  op.budget_spent = true;
  if (on_end(end_kind::budget, op.waiting == waiting_for::response) ==
      end_action::wait_for_attempt)
    return;
  finish_failure(
      self, id, "operation budget of " + format_duration(op.budget) + " spent");
}

// An engine that cannot keep up says so at once rather than queueing
// without bound: the caller can back off, shed load or try another engine.
std::optional<caf::error> refuse_if_overloaded(self_ptr self) {
  auto& st = self->state;
  if (st.ops.size() < st.cfg.max_in_flight) return std::nullopt;
  ++st.stats.rejected_overloaded;
  return make_error(errc::overloaded,
                    "the request router has " + std::to_string(st.ops.size()) +
                        " operations in flight, its limit "
                        "(georoute.max-operations-in-flight): the engine "
                        "cannot keep up; retry after a back-off, send less, "
                        "or raise the limit");
}

caf::result<data_response> start(self_ptr self, data_request& req) {
  auto& st = self->state;
  if (auto problem = validate(req))
    return make_error(errc::validation_error, *problem);
  if (req.op == data_op::query && req.options.partition_key_json.empty() &&
      req.range_id.empty()) {
    if (!st.with.plans || !st.with.collections || !st.with.pkranges)
      return make_error(errc::validation_error,
                        "a cross-partition query needs the engine's query "
                        "plans and metadata caches");
    if (auto refused = refuse_if_overloaded(self)) return std::move(*refused);
    auto executor = spawn_query_executor(
        self->system(),
        {caf::actor_cast<router_actor>(self), st.with.collections,
         st.with.pkranges, st.with.plans, st.cfg.query_parallelism});
    self->delegate(executor, route_atom_v, std::move(req));
    return caf::delegated<data_response>{}; // the executor answers
  }
  auto link = normalize_collection_link(req.collection_link);
  if (!link)
    return make_error(errc::validation_error,
                      "'" + req.collection_link +
                          "' is not a collection link (dbs/{db}/colls/{coll})");
  if (!st.with.http)
    return make_error(errc::validation_error, "the router has no HTTP port");
  if (auto refused = refuse_if_overloaded(self)) return std::move(*refused);
  // Writes that survive a hang: the request's setting wins.
  auto tracking = plan_write_tracking(req.op, req.options.write_retries,
                                      st.cfg.write_retries);
  std::string tracking_id;
  if (tracking.tracked) {
    tracking_id = make_tracking_id(st.rng(), st.rng());
    auto body = with_tracking_id(req.body, tracking_id);
    if (!body)
      return make_error(errc::validation_error, std::string{to_string(req.op)} +
                                                    " of " + *link + ": " +
                                                    body.error().what);
    req.body = std::move(*body);
  }
  auto id = st.next_id++;
  ++st.stats.operations;
  data_operation op;
  op.req = std::move(req);
  op.write_retries = tracking.retries;
  op.tracking_id = std::move(tracking_id);
  op.link = std::move(*link);
  op.rp = self->make_response_promise<data_response>();
  op.started = self->clock().now();
  op.budget = effective_budget(op.req.options.budget, st.cfg.default_budget);
  loop_environment env;
  env.client = st.cfg.client;
  env.attempt_cap = st.cfg.attempt_cap;
  env.breaker = st.breaker ? &*st.breaker : nullptr;
  env.ppaf = &st.ppaf;
  op.loop.emplace(data_plane_loop(kind_of(op.req.op), access_of(op.req.op),
                                  op.write_retries, excluded_for(st, op), env),
                  st.cfg.ladders);
  op.deadline = op.started + op.budget;
  auto rp = op.rp;
  auto arm = st.deadlines.add({id, deadline_slot::end}, op.deadline);
  st.ops.emplace(id, std::move(op));
  arm_budget_tick(self, arm);
  resolve_collection(self, id, false);
  return rp;
}

} // namespace georoute::router_detail
