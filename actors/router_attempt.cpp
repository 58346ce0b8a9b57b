// Attempts: an operation's start, its attempt loop carried out, the
// budget.

#include "georoute/actors/router_state.hpp"

namespace georoute::router_detail {

std::vector<std::string> excluded_for(const router_state& st,
                                      const data_payload& op) {
  return merged_exclusions(st.cfg.excluded_regions,
                           op.req.options.excluded_regions);
}

// -- the data plane's hooks of the operation driver ---------------------------

// One attempt of `req` as the plan says, with `token` as its session token.
transport::attempt attempt_wire(const data_request& req,
                                const std::string& link, std::string token,
                                const attempt_plan& plan) {
  wire_target t;
  t.collection_link = link;
  t.endpoint = plan.endpoint;
  t.proto = plan.protocol;
  t.session_token = std::move(token);
  t.hub_only = plan.hub_header;
  t.timeout = plan.timeout;
  return to_attempt(req, std::move(t));
}

// Each attempt that goes out, at trace level: which arm, where, for which
// range, and how the circuit breaker let it through (what a drill reads to
// tell which request reached a region).
void log_attempt(const router_state& st, const data_request& req,
                 const std::string& link, const char* arm,
                 const std::string& range_id, const attempt_plan& plan) {
  if (!st.cfg.log.enabled(log_level::trace)) return;
  std::string admission = !plan.breaker_consulted ? "not consulted"
                          : plan.admission == admission_kind::probe ? "probe"
                          : plan.admission == admission_kind::trial ? "trial"
                          : plan.admission == admission_kind::fallback
                              ? "fallback"
                              : "pass";
  st.cfg.log.log(log_level::trace, router_state::name, "attempt.sent",
                 std::string{to_string(req.op)} + " of " + link + " range " +
                     (range_id.empty() ? std::string{"?"} : range_id) + ": " +
                     arm + " to " + plan.region + ", breaker " + admission);
}

transport::attempt data_plane::wire(const data_operation& op,
                                    const attempt_plan& plan) const {
  log_attempt(self->state, op.req, op.link, "primary", op.diag.range_id, plan);
  return attempt_wire(op.req, op.link, session_token_for(self->state, op),
                      plan);
}

transport::attempt data_plane::wire(const late_wire& w,
                                    const attempt_plan& plan) const {
  log_attempt(self->state, w.req, w.link, "late ladder step", w.range_id, plan);
  return attempt_wire(w.req, w.link, w.session_token, plan);
}

late_wire data_plane::late_wire_of(const data_operation& op) const {
  return {op.req, op.link, session_token_for(self->state, op),
          op.diag.range_id};
}

effect_origin data_plane::origin(const data_payload&,
                                 const transport::outcome* why,
                                 bool after_end) const {
  return origin_of(self->state, why, after_end);
}

effect_origin data_plane::origin(const late_wire&,
                                 const transport::outcome* why,
                                 bool after_end) const {
  return origin_of(self->state, why, after_end);
}

// The one place where endpoint choice happens: the attempt loop resolves on
// the router's table and asks the circuit breaker of the range.
void data_plane::before_attempt(uint64_t, data_operation& op) {
  set_partition(op, *op.loop);
}

// The primary went: its record in the diagnostics, and at the first attempt
// whether the operation is hedged.
void data_plane::on_sent(uint64_t id, data_operation& op,
                         const attempt_plan& plan) {
  auto& st = self->state;
  note_transitions(st, &op); // an admission may start a probe
  op.endpoint = plan.endpoint;
  op.region = plan.region;
  op.attempt_started = self->clock().now();
  attempt_record rec;
  rec.region = op.region;
  rec.endpoint = op.endpoint;
  rec.started_us = micros(op.attempt_started - op.started);
  note_admission(st, rec, plan);
  op.primary_record = op.diag.attempts.size();
  op.diag.attempts.push_back(std::move(rec));
  if (plan.number == 1) plan_hedge(self, id, op);
}

// The loop refuses another attempt (its cap). With no failure to report,
// both planes say so as `attempts_exhausted`.
void data_plane::on_refused(uint64_t id, data_operation& op,
                            const std::string& why) {
  note_transitions(self->state, &op);
  if (!op.last_failure)
    finish_error(self, id, errc::attempts_exhausted, describe(op) + ": " + why);
  else
    finish_failure(self, id, why);
}

// Every answer of a live operation comes here first. The read-back's, and
// any answer while a read-back decides the write, are the plane's; the
// primary's is recorded (diagnostics, session, breaker) before its loop
// hears of it.
bool data_plane::on_answer(uint64_t id, data_operation& op, uint32_t arm,
                           transport::outcome& o) {
  auto& st = self->state;
  if (arm == read_back_arm) {
    on_read_back(self, id, o);
    return true;
  }
  if (op.echo) {
    on_answer_during_read_back(self, id, op, arm, o);
    return true;
  }
  if (arm != 0) return false;
  auto& rec = op.diag.attempts[op.primary_record];
  record_answer(self, op, rec, o, op.attempt_started);
  capture_session(st, op, o);
  report_to_breaker(st, &op, *op.loop, o, self->clock().now());
  return false;
}

void data_plane::on_primary_success(uint64_t id, data_operation& op,
                                    transport::outcome& o) {
  // The loop hears of it too: a success confirms where per-partition
  // failover sent the range, so that its failback goes home instead of
  // walking on.
  op.loop->on_result(attempt_result_of(o), *self->state.snap.table(),
                     self->clock().now(), op.end_reached);
  // A broken body is the gateway breaking the protocol: an error, never a
  // success the caller cannot parse. Not retried: a write was applied.
  if (auto bad = success_body_problem(op.req.op, o)) {
    auto text =
        failure_text(o, op.region, op.loop->attempts(), describe(op), *bad);
    // A write's answer that cannot be read cannot say what was applied.
    if (is_write(op.req.op))
      finish_error(self, id, errc::outcome_unknown,
                   with_outcome_unknown_advice(std::move(text)));
    else
      finish_error(self, id, errc::protocol_violation, std::move(text));
    return;
  }
  finish_ok(self, id, o);
}

namespace {

void log_retry(const router_state& st, const data_operation& op,
               const transport::outcome& o, const loop_step& step) {
  if (!st.cfg.log.enabled(log_level::debug)) return;
  st.cfg.log.log(
      log_level::debug, router_state::name, "operation.retry",
      describe(op) + ": " + describe_outcome(o) + " from " + op.region + " (" +
          o.endpoint + "); " +
          (step.reason.empty() ? std::string{"no retry"} : step.reason));
}

} // namespace

// The range is gone (refresh the map and re-route; a targeted range that
// is gone fails then) or the collection was recreated.
void data_plane::on_metadata_step(uint64_t id, data_operation& op,
                                  const loop_step& step) {
  auto& st = self->state;
  log_retry(st, op, *op.last_failure, step);
  op.diag.attempts[op.primary_record].retry_reason = step.reason;
  ++st.stats.metadata_refreshes;
  if (step.next == loop_next::refresh_ranges) {
    op.range_refreshed = true;
    resolve_range(self, id, true);
    return;
  }
  op.epk.clear();
  resolve_collection(self, id, true);
}

// The primary failed and its loop decided; before the decision's side
// effects run, a hedge may take over from a primary that gave up (a hedge
// arm may still win, or start at once).
primary_hedge data_plane::on_primary_failure(uint64_t, data_operation& op,
                                             const transport::outcome& o,
                                             const loop_step& step) {
  auto& st = self->state;
  log_retry(st, op, o, step);
  bool gives_up =
      step.next == loop_next::fail || step.next == loop_next::fail_budget;
  if (gives_up && materialize_hedge(self, op)) {
    auto hs = op.hedge->primary_gave_up(attempt_result_of(o), o.request_charge,
                                        env_of(st), *op.loop, *st.snap.table(),
                                        self->clock().now(), op.end_reached);
    if (hs) {
      op.last_answer = o;
      op.last_answer_region = op.region;
      op.handover = std::move(*hs);
      return primary_hedge::takes_over;
    }
  }
  if (step.next != loop_next::fail)
    op.diag.attempts[op.primary_record].retry_reason = step.reason;
  return primary_hedge::as_loop_says;
}

void data_plane::on_final_failure(uint64_t id, data_operation& op,
                                  const transport::outcome& o,
                                  const loop_step& step) {
  if (step.next == loop_next::fail_budget) {
    finish_failure(self, id,
                   "operation budget of " + format_duration(op.budget) +
                       " spent");
    return;
  }
  primary_final(self->state, op, self->clock().now());
  if (take_echo(self, id, o, op.region)) return;
  finish_failure(self, id, step.reason);
}

// The budget is spent (and no attempt is in flight any more).
void data_plane::on_end_reached(uint64_t id, data_operation& op) {
  finish_failure(
      self, id, "operation budget of " + format_duration(op.budget) + " spent");
}

// An engine that cannot keep up says so at once rather than queueing
// without bound: the caller can back off, shed load or try another engine.
std::optional<caf::error> refuse_if_overloaded(self_ptr self) {
  auto& st = self->state;
  if (st.driver.live() < st.cfg.max_in_flight) return std::nullopt;
  ++st.stats.rejected_overloaded;
  return make_error(errc::overloaded,
                    "the request router has " +
                        std::to_string(st.driver.live()) +
                        " operations in flight, its limit "
                        "(georoute.max-operations-in-flight): the engine "
                        "cannot keep up; retry after a back-off, send less, "
                        "or raise the limit");
}

caf::result<change_feed_page> start_feed(self_ptr self,
                                         change_feed_request& req) {
  auto& st = self->state;
  auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  if (auto problem = check_change_feed_request(req, now_ms))
    return make_error(errc::validation_error, *problem);
  if (!st.with.collections || !st.with.pkranges)
    return make_error(errc::validation_error,
                      "a change feed needs the engine's metadata caches");
  if (auto refused = refuse_if_overloaded(self)) return std::move(*refused);
  auto executor = spawn_change_feed_executor(
      self->system(), {caf::actor_cast<router_actor>(self), st.with.collections,
                       st.with.pkranges});
  self->delegate(executor, route_atom_v, std::move(req));
  return caf::delegated<change_feed_page>{}; // the executor answers
}

caf::result<batch_response> start_batch(self_ptr self, batch_request& req) {
  auto what = [&] { return "batch on '" + req.collection_link + "': "; };
  if (req.partition_key_json.empty())
    return make_error(errc::validation_error,
                      what() + "a batch needs its partition key "
                               "(partition_key_json, e.g. [\"p0\"])");
  if (auto pk = parse_partition_key_json(req.partition_key_json); !pk)
    return make_error(errc::validation_error,
                      what() + "the partition key " + req.partition_key_json +
                          " is not valid: " + pk.error().what);
  auto body = batch_wire_body(req.operations, req.partition_key_json);
  if (!body)
    return make_error(errc::validation_error, what() + body.error().what);
  data_request d;
  d.op = data_op::batch;
  d.collection_link = std::move(req.collection_link);
  d.body = std::move(*body);
  d.options = unresent_write_options(std::move(req.options));
  d.options.partition_key_json = std::move(req.partition_key_json);
  auto count = req.operations.size();
  auto rp = self->make_response_promise<batch_response>();
  // One operation of the driver like any write; the answer is read here.
  self->request(caf::actor_cast<router_actor>(self), caf::infinite,
                route_atom_v, std::move(d))
      .then(
          [rp, count](data_response& r) mutable {
            auto results = parse_batch_results(r.body, count);
            if (!results) {
              rp.deliver(
                  make_error(errc::protocol_violation,
                             "batch answered " + std::to_string(r.status) +
                                 " but " + results.error().what +
                                 (r.status == 200 ? "; it was applied" : "")));
              return;
            }
            batch_response b;
            b.status = r.status;
            b.results = std::move(*results);
            b.request_charge = r.request_charge;
            b.session_token = std::move(r.session_token);
            b.diag = std::move(r.diag);
            rp.deliver(std::move(b));
          },
          [rp](caf::error& e) mutable { rp.deliver(std::move(e)); });
  return rp;
}

caf::result<caf::actor> open_bulk(self_ptr self, bulk_open& req) {
  auto& st = self->state;
  auto link = normalize_collection_link(req.collection_link);
  if (!link)
    return make_error(errc::validation_error,
                      "bulk on '" + req.collection_link +
                          "': not a collection link (dbs/{db}/colls/{coll})");
  auto what = "bulk on " + *link + ": ";
  if (auto problem = check_bulk_options(req.options))
    return make_error(errc::validation_error, what + *problem);
  const std::pair<const char*, const std::string*> header_options[] = {
      {"consistency_level", &req.request.consistency_level},
      {"session_token", &req.request.session_token}};
  for (const auto& [name, value] : header_options)
    if (value->find_first_of(std::string_view{"\r\n\0", 3}) !=
        std::string::npos)
      return make_error(errc::validation_error,
                        what + "request." + name +
                            " contains a CR, LF or NUL character; it is "
                            "sent as an HTTP header value, which must be "
                            "one line");
  if (!st.with.collections || !st.with.pkranges)
    return make_error(errc::validation_error,
                      what + "bulk needs the engine's metadata caches");
  bulk_session s;
  s.collection_link = std::move(*link);
  s.options = req.options;
  if (s.options.max_pending_operations == 0)
    s.options.max_pending_operations = static_cast<uint32_t>(
        std::min<size_t>(st.cfg.max_in_flight, UINT32_MAX));
  if (s.options.budget_ms == 0)
    s.options.budget_ms = st.cfg.default_budget.count();
  s.request = std::move(req.request);
  s.throttle = st.cfg.client.throttle;
  s.opener = caf::actor_cast<caf::actor_addr>(self->current_sender());
  return spawn_bulk_executor(self->system(),
                             {caf::actor_cast<router_actor>(self),
                              st.with.collections, st.with.pkranges},
                             std::move(s));
}

caf::result<std::vector<partition_key_range>>
feed_ranges(self_ptr self, const std::string& link) {
  auto& st = self->state;
  auto normal = normalize_collection_link(link);
  if (!normal)
    return make_error(errc::validation_error,
                      "feed ranges: '" + link +
                          "' is not a collection link (dbs/{db}/colls/{coll})");
  if (!st.with.collections || !st.with.pkranges)
    return make_error(errc::validation_error,
                      "feed ranges need the engine's metadata caches");
  auto rp = self->make_response_promise<std::vector<partition_key_range>>();
  auto pkranges = st.with.pkranges;
  auto what = "feed ranges of " + *normal;
  self->request(st.with.collections, caf::infinite, by_name_atom_v, *normal,
                false, std::string{})
      .then(
          [=](collection_info& c) mutable {
            self->request(pkranges, caf::infinite, overlap_atom_v, c.rid,
                          epk_range{"", "FF", true, false}, false)
                .then(
                    [=](std::vector<partition_key_range>& rs) mutable {
                      rp.deliver(std::move(rs));
                    },
                    [=](caf::error& e) mutable {
                      rp.deliver(make_error(
                          code_of(e) == errc::none ? errc::collaborator_down
                                                   : code_of(e),
                          what +
                              ": the partition-key ranges: " + context_of(e)));
                    });
          },
          [=](caf::error& e) mutable {
            rp.deliver(make_error(
                code_of(e) == errc::none ? errc::collaborator_down : code_of(e),
                what + ": the collection: " + context_of(e)));
          });
  return rp;
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
  std::optional<patch_spec> patch;
  if (req.op == data_op::patch) {
    patch = std::move(*parse_patch(req.body)); // checked by validate()
    tracking =
        plan_patch_tracking(*patch, resolve_switch(req.options.write_retries,
                                                   st.cfg.write_retries));
  }
  std::string tracking_id;
  if (tracking.tracked) {
    tracking_id = make_tracking_id(st.rng(), st.rng());
    auto body = patch ? with_patch_tracking(req.body, *patch, tracking_id)
                      : with_tracking_id(req.body, tracking_id);
    if (!body)
      return make_error(errc::validation_error, std::string{to_string(req.op)} +
                                                    " of " + *link + ": " +
                                                    body.error().what);
    req.body = std::move(*body);
  }
  ++st.stats.operations;
  data_payload op;
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
  auto rp = op.rp;
  auto budget = op.budget;
  auto config = data_plane_loop(kind_of(op.req.op), access_of(op.req.op),
                                op.write_retries, excluded_for(st, op), env);
  auto id =
      st.driver.admit(std::move(op), budget, std::move(config), st.cfg.ladders);
  if (park_at_fleet_gate(self, id)) return rp;
  resolve_collection(self, id, false);
  return rp;
}

} // namespace georoute::router_detail
