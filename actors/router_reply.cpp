// Replying to callers: answers and their request timeouts, the end of an
// operation, counters and histograms.

#include "georoute/actors/router_state.hpp"

namespace georoute::router_detail {

int64_t micros(clock_type::duration d) {
  return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
}

std::string describe(const data_payload& op) {
  auto what = std::string{to_string(op.req.op)} + " of ";
  if (op.req.op == data_op::change_feed || op.req.op == data_op::bulk)
    return what + op.link +
           (op.req.range_id.empty() ? std::string{}
                                    : " range " + op.req.range_id);
  if (op.req.op == data_op::query || op.req.op == data_op::create ||
      op.req.op == data_op::upsert || op.req.op == data_op::batch)
    return what + op.link;
  return what + op.link + "/docs/" + op.req.id;
}

// -- counters and histograms --------------------------------------------------

router_stats current_stats(const router_state& st) {
  auto s = st.stats;
  const auto& c = st.counts;
  s.failover_decisions = c.decisions;
  s.failover_decisions_completed = c.decisions_completed;
  s.decisions_after_budget = c.decisions_after_end;
  s.marks = c.marks;
  s.refreshes = c.refreshes;
  s.late_answers = c.late_answers;
  s.timers_armed = c.timers_armed;
  s.stale_snapshots = st.snap.stale();
  s.live = st.driver.live();
  s.deadlines_tracked = st.driver.deadlines_tracked();
  s.deadline_timers_pending = st.driver.deadline_timers_pending();
  if (st.breaker) {
    const auto& c = st.breaker->counters();
    s.breaker_opened = c.opened;
    s.breaker_probes = c.probes_started;
    s.breaker_closed = c.closed;
    s.breaker_reopened = c.reopened;
    s.breaker_tracked = st.breaker->size();
  }
  return s;
}

operation_series to_series(const operation_histogram& h) {
  operation_series s;
  s.operation = operation_name(h.operation);
  s.region = h.region;
  s.status_code = h.status;
  if (h.error != 0) s.error_type = to_string(static_cast<errc>(h.error));
  s.count = h.count;
  s.duration_sum = h.duration_sum;
  s.duration_buckets.assign(h.duration.begin(), h.duration.end());
  s.request_charge_sum = h.charge_sum;
  s.request_charge_buckets.assign(h.charge.begin(), h.charge.end());
  return s;
}

// One finished operation into the histograms: its whole duration, every
// attempt's charge, under the region whose answer ended it.
void record_operation(router_state& st, const data_payload& op,
                      const std::string& region, int status, errc code,
                      clock_type::time_point now) {
  auto seconds = std::chrono::duration<double>(now - op.started).count();
  st.histograms.record(op.req.op, region, status, static_cast<uint8_t>(code),
                       seconds, op.diag.request_charge);
}

// Delivers an operation's answer, and the caller's request timeout goes
// with it (actors/timeout_cancels.hpp).
template <class T>
void answer(self_ptr self, caf::response_promise& rp, T&& x) {
  self->state.cancels.answer(self, rp, std::forward<T>(x));
}

// Takes `o`'s body and headers into the response: callers do not read it
// afterwards.
void finish_ok(self_ptr self, uint64_t id, transport::outcome& o,
               uint32_t arm) {
  auto& st = self->state;
  auto* found = st.driver.find(id);
  if (found == nullptr) return;
  auto& op = *found;
  auto r = to_response(std::move(o));
  auto rec = arm == 0 ? op.primary_record : op.arms[arm - 1].record;
  if (op.hedge && op.hedge->hedges_sent() > 0) {
    op.diag.attempts[rec].winner = true;
    if (arm > 0) ++st.stats.hedges_won;
  }
  // (A hedge's win against arm 0 was recorded when its answer came.)
  auto now = self->clock().now();
  if (arm == 0) primary_final(st, op, now);
  op.diag.total_us = micros(now - op.started);
  record_operation(st, op,
                   rec < op.diag.attempts.size() ? op.diag.attempts[rec].region
                                                 : op.region,
                   r.status, errc::none, now);
  op.diag.metadata_refreshes = op.loop ? op.loop->metadata_refreshes() : 0;
  st.driver.finish(id, std::move(r));
}

void finish_error(self_ptr self, uint64_t id, errc code, std::string text) {
  auto& st = self->state;
  auto* found = st.driver.find(id);
  if (found == nullptr) return;
  auto& op = *found;
  auto now = self->clock().now();
  op.diag.total_us = micros(now - op.started);
  // The region and status of the last answer (none: the last attempt's
  // region, or no region when nothing was sent).
  const std::string* region = &op.last_region;
  if (region->empty() && !op.diag.attempts.empty())
    region = &op.diag.attempts.back().region;
  record_operation(st, op, *region,
                   op.last_failure ? op.last_failure->status : 0, code, now);
  op.diag.metadata_refreshes = op.loop ? op.loop->metadata_refreshes() : 0;
  if (st.cfg.log.enabled(log_level::debug))
    st.cfg.log.log(log_level::debug, router_state::name, "operation.failed",
                   std::string{to_string(code)} + ": " + text);
  st.driver.finish(id, op_failed{code, std::move(text)});
}

// The caller's answer, once what the operation left behind is abandoned
// (the diagnostics count it).
void data_plane::reply(uint64_t, data_operation& op, data_response&& r) {
  auto& st = self->state;
  r.diag = std::move(op.diag);
  r.request_charge = r.diag.request_charge;
  r.hedge_charge = r.diag.hedge_charge;
  if (st.cfg.log.enabled(log_level::trace))
    st.cfg.log.log(log_level::trace, router_state::name, "operation.done",
                   describe(op) + ": " + std::to_string(r.status) + " after " +
                       std::to_string(r.diag.attempts.size()) +
                       " attempts in " + std::to_string(r.diag.total_us) +
                       "us");
  answer(self, op.rp, std::move(r));
  ++st.stats.succeeded;
}

void data_plane::reply(uint64_t, data_operation& op, op_failed&& f) {
  auto& st = self->state;
  answer(self, op.rp, make_error(f.code, std::move(f.text), op.diag));
  ++st.stats.failed;
}

// The last underlying failure, said so that people can act on it.
void finish_failure(self_ptr self, uint64_t id, const std::string& why) {
  auto& op = self->state.driver.at(id);
  if (!op.last_failure) {
    finish_error(self, id, errc::deadline_exceeded,
                 describe(op) + ": no attempt finished; " + why);
    return;
  }
  const auto& o = *op.last_failure;
  auto attempts = op.loop->attempts() +
                  static_cast<uint32_t>(op.hedge ? op.hedge->hedges_sent() : 0);
  auto text = failure_text(o, op.last_region, attempts, describe(op), why);
  if (write_outcome_unknown(op)) {
    finish_error(self, id, errc::outcome_unknown,
                 with_outcome_unknown_advice(std::move(text)));
    return;
  }
  finish_error(self, id, classify_outcome(o), std::move(text));
}

// Why a region is marked, for the location cache's log; built only when
// that line can be logged.
effect_origin origin_of(const router_state& st, const transport::outcome* why,
                        bool after_end) {
  effect_origin from;
  from.why = why;
  from.plane = " (router)";
  from.log_reason = st.cfg.log.enabled(log_level::warn);
  from.after_end = after_end;
  return from;
}

} // namespace georoute::router_detail
