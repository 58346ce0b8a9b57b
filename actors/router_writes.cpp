// Writes that survive a hang: the read-back of a possible echo.

#include "georoute/actors/router_state.hpp"

namespace georoute::router_detail {

// The pure rule (`write_copy_safe`, write_copy.hpp) on a request; reads
// and queries are not writes and are never asked.
bool write_copy_safe(const data_payload& op) {
  const auto& o = op.req.options;
  return write_copy_safe(op.req.op, !o.if_match.empty(),
                         !o.if_none_match.empty(), !op.tracking_id.empty());
}

// Whatever ends the write now, one of its copies may have been applied:
// an attempt timed out, lost its connection after it was sent, or answered
// 408; or a hedge arm went out (a hedged write that failed everywhere may
// still have been applied by an arm whose answer never came).
bool write_outcome_unknown(const data_operation& op) {
  if (!is_write(op.req.op)) return false;
  return (op.loop && op.loop->maybe_applied()) ||
         (op.hedge && op.hedge->hedges_sent() > 0);
}

// A final answer of a write that may be the echo of its own first copy
// (`classify_write_echo`): a create's 409 or a conditional replace's 412
// is checked by reading the document (its tracking id decides); a remove's
// 404 is reported as what it is. Returns true when it took the operation.
bool take_echo(self_ptr self, uint64_t id, const transport::outcome& o,
               const std::string& region) {
  auto& st = self->state;
  auto& op = st.driver.at(id);
  if (!op.write_retries || o.error != transport::failure::none) return false;
  bool maybe_applied =
      op.loop->maybe_applied() || (op.hedge && op.hedge->hedges_sent() > 0);
  auto echo = classify_write_echo(op.req.op, !op.req.options.if_match.empty(),
                                  maybe_applied, o.status);
  switch (echo) {
  case write_echo::none:
    return false;
  case write_echo::deleted_maybe_by_self:
    op.last_failure = o;
    op.last_region = region;
    finish_error(self, id, classify_outcome(o),
                 failure_text(o, region, op.loop->attempts(), describe(op),
                              "the document is gone, possibly deleted by "
                              "this remove: an earlier attempt of it may "
                              "have been applied (it timed out or lost its "
                              "connection after it was sent)"));
    return true;
  case write_echo::check_tracking:
    break;
  }
  if (op.tracking_id.empty()) return false;
  // Read the document where the echo came from (it is there).
  op.echo = o;
  op.echo_region = region;
  data_request rr = op.req;
  rr.op = data_op::read;
  rr.body.clear();
  rr.options.if_match.clear();
  rr.options.if_none_match.clear();
  wire_target t;
  t.collection_link = op.link;
  t.endpoint = o.endpoint.empty() ? op.endpoint : o.endpoint;
  t.timeout = read_back_timeout(st.cfg.ladders);
  attempt_record rec;
  rec.region = region;
  rec.endpoint = t.endpoint;
  rec.started_us = micros(self->clock().now() - op.started);
  rec.retry_reason = "read back: the " + std::to_string(o.status) +
                     " may be this write's own first copy";
  op.echo_record = op.diag.attempts.size();
  op.diag.attempts.push_back(std::move(rec));
  // The operation's end waits for the read-back as for an attempt.
  op.phase = op_phase::response;
  op.echo_started = self->clock().now();
  st.driver.send(id, read_back_arm, to_attempt(rr, std::move(t)));
  return true;
}

// The read-back answered: the document carries this write's tracking id
// (its first copy was applied: the write succeeded) or not (the echo is
// somebody else's document: the 409/412 stands).
void on_read_back(self_ptr self, uint64_t id, transport::outcome& o) {
  auto& op = self->state.driver.at(id);
  op.phase = op_phase::idle;
  auto& rec = op.diag.attempts[op.echo_record];
  record_answer(self, op, rec, o, op.echo_started);
  auto echo = *op.echo;
  auto verdict = judge_read_back(
      op.req.op, o.success(),
      o.success() && carries_tracking_id(o.body, op.tracking_id), o.status);
  if (verdict.applied) {
    transport::outcome won = o;
    won.status = verdict.status;
    rec.retry_reason += "; it carries this write's tracking id: applied";
    finish_ok(self, id, won);
    return;
  }
  op.last_failure = echo;
  op.last_region = op.echo_region;
  auto text = failure_text(echo, op.echo_region, op.loop->attempts(),
                           describe(op), verdict.why);
  if (!o.success()) {
    // The read-back could not tell: the first copy may have been applied.
    finish_error(self, id, errc::outcome_unknown,
                 with_outcome_unknown_advice(std::move(text)));
    return;
  }
  finish_error(self, id, classify_outcome(echo), std::move(text));
}

// An answer while a read-back decides this write: another arm's success
// ends it, its failure cannot (it would end the operation before the
// read-back tells whether the echo was its own first copy). What an answer
// saw still counts: a hedge arm's reaches the hedge (the arm is no longer
// out; the breaker hears of it), the primary's reaches its loop and the
// breaker, and their failures mark; no further attempt starts.
void on_answer_during_read_back(self_ptr self, uint64_t id, data_operation& op,
                                uint32_t arm, transport::outcome& o) {
  auto& st = self->state;
  auto& rec =
      op.diag.attempts[arm == 0 ? op.primary_record : op.arms[arm - 1].record];
  record_answer(self, op, rec, o,
                arm == 0 ? op.attempt_started : op.arms[arm - 1].started);
  capture_session(st, op, o);
  if (arm > 0 && op.hedge) {
    op.diag.hedge_charge += o.request_charge;
    st.stats.hedge_charge += o.request_charge;
    auto answer = op.hedge->on_arm_result(
        arm, attempt_result_of(o), o.request_charge, env_of(st), *op.loop,
        false, *st.snap.table(), self->clock().now(), op.end_reached);
    note_transitions(st, &op);
    apply_effects(self, answer.effects, origin_of(st, &o, op.end_reached));
  }
  if (arm == 0) {
    op.primary_out = false;
    report_to_breaker(st, &op, *op.loop, o, self->clock().now());
    if (!o.success()) {
      auto step = op.loop->on_result(attempt_result_of(o), *st.snap.table(),
                                     self->clock().now(), op.end_reached);
      apply_effects(self, step.effects, origin_of(st, &o, op.end_reached));
    }
  }
  if (o.success() && !success_body_problem(op.req.op, o)) {
    if (arm == 0) op.phase = op_phase::idle; // it answered
    finish_ok(self, id, o, arm);
  }
}

} // namespace georoute::router_detail
