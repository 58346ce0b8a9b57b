// The per-partition circuit breaker, as the router consults it.

#include "georoute/actors/router_state.hpp"

namespace georoute::router_detail {

// -- the circuit breaker ------------------------------------------------------

// Moves the breaker's transitions into `op`'s diagnostics (when an
// operation caused them); the counters in `router_stats` count them all.
void log_transition(const router_state& st, const breaker_transition& t) {
  const auto& log = st.cfg.log;
  // Every transition is an event of the range in the region, never of a
  // request: at most one per open period.
  const char* event = "breaker.opened"; // closed -> open
  auto level = log_level::warn;
  switch (t.to) {
  case breaker_state::probing:
    event = "breaker.probe";
    level = log_level::info;
    break;
  case breaker_state::half_open:
    event = "breaker.half_open";
    level = log_level::info;
    break;
  case breaker_state::closed:
    event = "breaker.closed";
    level = log_level::info;
    break;
  case breaker_state::open:
    if (t.from != breaker_state::closed) event = "breaker.reopened";
    break;
  }
  if (!log.enabled(level)) return;
  log.log(level, router_state::name, event,
          t.key.region + " range " + t.key.range_id + " of collection " +
              t.key.collection_rid + ": " + to_string(t.from) + " -> " +
              to_string(t.to) + " (" + to_string(t.reason) + ")");
}

void note_transitions(router_state& st, data_operation* op) {
  if (!st.breaker) return;
  for (auto& t : st.breaker->drain_transitions()) {
    log_transition(st, t);
    if (t.to == breaker_state::open && t.from == breaker_state::closed)
      fleet_note(st, t.key.region, fleet_event::breaker_opened);
    if (op == nullptr) continue;
    op->diag.breaker_transitions.push_back(
        t.key.region + " range " + t.key.range_id + ": " + to_string(t.from) +
        " -> " + to_string(t.to) + " (" + to_string(t.reason) + ")");
  }
}

// What the breaker said about an attempt, for its record.
void note_admission(router_state& st, attempt_record& rec,
                    const attempt_plan& plan) {
  rec.breaker_skipped = plan.breaker_skipped;
  if (!plan.breaker_skipped.empty()) ++st.stats.breaker_skips;
  switch (plan.admission) {
  case admission_kind::probe:
    rec.breaker_admission = "probe";
    break;
  case admission_kind::trial:
    rec.breaker_admission = "trial";
    break;
  case admission_kind::fallback:
    rec.breaker_admission = "fallback";
    break;
  default:
    break;
  }
}

// Hands one attempt's outcome to the breaker (the loop holds its ticket).
void report_to_breaker(router_state& st, data_operation* op, attempt_loop& loop,
                       const transport::outcome& o, policy_time now) {
  if (!st.breaker) return;
  loop.report_outcome(attempt_result_of(o), now);
  note_transitions(st, op);
}

// The range the operation's next attempts are for.
void set_partition(data_operation& op, attempt_loop& loop) {
  if (op.coll && op.range)
    loop.set_partition(op.coll->rid, op.range->id);
  else
    loop.set_partition({}, {});
}

// The primary's answer is the operation's result.
void primary_final(router_state& st, data_operation& op, policy_time now) {
  if (!st.breaker || !op.loop) return;
  op.loop->record_final(now);
  note_transitions(st, &op);
}

} // namespace georoute::router_detail
