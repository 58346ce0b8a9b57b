// Writes that survive a hang: the read-back of a possible echo.

#include "georoute/actors/router_state.hpp"

namespace georoute::router_detail {

// The pure rule (`write_copy_safe`, write_copy.hpp) on a request; reads
// and queries are not writes and are never asked.
bool write_copy_safe(const data_operation& op) {
  const auto& o = op.req.options;
  return write_copy_safe(op.req.op, !o.if_match.empty(),
                         !o.if_none_match.empty(), !op.tracking_id.empty());
}

// A final answer of a write that may be the echo of its own first copy
// (`classify_write_echo`): a create's 409 or a conditional replace's 412
// is checked by reading the document (its tracking id decides); a remove's
// 404 is reported as what it is. Returns true when it took the operation.
bool take_echo(self_ptr self, uint64_t id, const transport::outcome& o,
               const std::string& region) {
  auto& st = self->state;
  auto& op = st.ops.at(id);
  if (!op.write_retries || o.error != transport::failure::none) return false;
  bool maybe_applied =
      op.loop->maybe_applied() || (op.hedge && op.hedge->hedges_sent() > 0);
  auto echo = classify_write_echo(op.req.op,
                                  !op.req.options.if_match.empty(),
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
  op.waiting = waiting_for::response;
  op.echo_started = self->clock().now();
  ++st.stats.attempts;
  auto hdl = caf::actor_cast<caf::actor>(self);
  st.with.http->send(to_wire(rr, t), [hdl, id](transport::outcome r) {
    caf::anon_send(hdl, rt_http_done{id, read_back_arm, std::move(r)});
  });
  return true;
}

// The read-back answered: the document carries this write's tracking id
// (its first copy was applied: the write succeeded) or not (the echo is
// somebody else's document: the 409/412 stands).
void on_read_back(self_ptr self, uint64_t id, transport::outcome& o) {
  auto& st = self->state;
  auto& op = st.ops.at(id);
  op.waiting = waiting_for::nothing;
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
  finish_error(self, id, classify_outcome(echo),
               failure_text(echo, op.echo_region, op.loop->attempts(),
                            describe(op), verdict.why));
}

} // namespace georoute::router_detail
