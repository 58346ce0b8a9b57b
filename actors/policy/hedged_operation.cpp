#include "georoute/actors/policy/hedged_operation.hpp"

#include "georoute/actors/policy/write_copy.hpp"

namespace georoute {

arm_outcome arm_outcome_of(const attempt_result& r) {
  if (r.timed_out) return arm_outcome::timed_out();
  if (r.transport_failure) return arm_outcome::connection_failure();
  return arm_outcome::http(r.status, r.substatus);
}

bool hedge_wanted(const hedging_options& options, op_kind op, int hedge) {
  bool on = resolve_switch(hedge, options.enabled);
  if (!on) return false;
  return op != op_kind::write || hedge > 0 ||
         (hedge < 0 && options.hedge_writes);
}

hedged_operation::hedged_operation(hedge_plan plan, hedge_ask ask)
    : plan_(std::move(plan)), ask_(std::move(ask)) {}

namespace {

hedge_override override_of(const hedge_ask& ask) {
  hedge_override over;
  if (ask.hedge >= 0) {
    over.enabled = ask.hedge > 0;
    if (ask.op == op_kind::write) over.hedge_writes = ask.hedge > 0;
  }
  if (ask.threshold.count() > 0) over.threshold = ask.threshold;
  return over;
}

hedge_request request_of(const hedge_ask& ask, const location_table& table,
                         std::size_t region_count) {
  hedge_request hr;
  hr.op = ask.op;
  if (ask.op == op_kind::write) {
    hr.multi_write_account = table.can_support_multiple_write_locations(true);
    hr.write_retries_safe = ask.write_copy_safe;
  }
  hr.region_count = region_count;
  hr.request = override_of(ask);
  return hr;
}

} // namespace

std::optional<hedge_intent>
hedged_operation::intend(const hedge_env& env, const hedge_ask& ask,
                         const attempt_loop& primary,
                         const location_table& table, policy_time first_send) {
  const auto& opts = *env.options;
  // The cheap check first: an operation that is not hedged pays nothing
  // more.
  if (!hedge_wanted(opts, ask.op, ask.hedge)) return std::nullopt;
  // How many endpoints the operation could go to (the table's cached list
  // without exclusions): fewer than two, no hedge. Marks and the breaker
  // are looked at when the hedge is due.
  std::vector<std::string> scratch;
  bool fell_back = false;
  auto count = primary.region().empty()
                   ? std::size_t{1}
                   : table
                         .applicable_ref(ask.op, ask.excluded, first_send,
                                         fell_back, scratch)
                         .size();
  if (hedge_eligibility(opts, request_of(ask, table, count)) !=
      hedge_skip::none)
    return std::nullopt;
  env.budget->record_operation(first_send);
  std::optional<std::chrono::microseconds> p99;
  if (opts.mode == hedge_threshold_mode::adaptive && env.latencies)
    p99 = env.latencies->percentile(primary.region());
  hedge_intent out;
  out.first_send = first_send;
  out.timing = choose_hedge_timing(opts, override_of(ask),
                                   env.ladders->partition_failover, p99);
  return out;
}

std::optional<hedged_operation> hedged_operation::materialize(
    const hedge_env& env, const hedge_ask& ask, const hedge_intent& intent,
    const attempt_loop& primary, const location_table& table, policy_time now) {
  const auto& first = primary.region();
  std::vector<std::string> regions{first};
  for (auto& r : hedge_regions(table, ask.op, ask.excluded, now)) {
    if (same_region(r, first)) continue;
    // A region whose breaker is open for this range gets no hedge.
    if (env.breaker && !primary.collection_rid().empty() &&
        !primary.range_id().empty() &&
        env.breaker->blocked(
            breaker_key{primary.collection_rid(), primary.range_id(), r}, now))
      continue;
    regions.push_back(std::move(r));
  }
  auto count = first.empty() ? std::size_t{1} : regions.size();
  if (hedge_eligibility(*env.options, request_of(ask, table, count)) !=
      hedge_skip::none)
    return std::nullopt;
  return hedged_operation(
      hedge_plan(std::move(regions), intent.timing, intent.first_send), ask);
}

std::optional<hedged_operation>
hedged_operation::plan(const hedge_env& env, const hedge_ask& ask,
                       const attempt_loop& primary, const location_table& table,
                       policy_time first_send) {
  auto intent = intend(env, ask, primary, table, first_send);
  if (!intent) return std::nullopt;
  return materialize(env, ask, *intent, primary, table, first_send);
}

bool hedged_operation::primary_losing(const hedge_env& env,
                                      const attempt_loop& primary,
                                      policy_time now) const {
  if (!env.breaker || primary.collection_rid().empty() ||
      primary.range_id().empty() || primary.region().empty())
    return false;
  auto v = env.breaker->view(breaker_key{primary.collection_rid(),
                                         primary.range_id(), primary.region()},
                             now);
  return v.state != breaker_state::closed;
}

hedge_step hedged_operation::advance(const hedge_env& env,
                                     const attempt_loop& primary,
                                     const location_table& table,
                                     policy_time now, bool budget_spent) {
  hedge_step out;
  if (budget_spent) plan_.stop();
  for (auto next = plan_.next_start(); next && next->at <= now;
       next = plan_.next_start()) {
    // Only the first hedge (arm 1) leans on arm 0's evidence, and only on
    // a breaker that is no longer closed: hedge wins alone are no evidence
    // (on an overloaded machine everything is slow and every arm wins
    // somewhere, so counting them would let hedges past the budget).
    if (next->arm == 1 && primary_losing(env, primary, now)) {
      ++out.on_evidence;
    } else if (!env.budget->try_take(now)) {
      ++out.refused;
      plan_.stop();
      break;
    }
    if (auto arm = plan_.start_next(now))
      send_arm(env, primary, table, now, *arm, out);
  }
  if (plan_.finished()) {
    auto r = plan_.result_arm();
    out.all_answered =
        r && plan_.arms()[*r].verdict != hedge_class::final_result;
    return out;
  }
  if (auto next = plan_.next_start()) out.wake_at = next->at;
  return out;
}

void hedged_operation::send_arm(const hedge_env& env,
                                const attempt_loop& primary,
                                const location_table& table, policy_time now,
                                std::size_t arm, hedge_step& out) {
  std::vector<std::string> regions;
  regions.reserve(plan_.arm_count());
  for (const auto& r : plan_.arms())
    regions.push_back(r.region);
  attempt_loop_config lc = primary.config();
  lc.excluded_regions = arm_exclusions(ask_.excluded, regions, arm);
  lc.attempt_cap = 1;
  lc.optional_attempt = true;
  if (arms_.size() < arm) arms_.resize(arm);
  auto& a = arms_[arm - 1];
  a.region = regions[arm];
  a.loop.emplace(std::move(lc), *env.ladders);
  a.loop->set_partition(primary.collection_rid(), primary.range_id());
  auto plan = a.loop->next_attempt(table, now);
  if (!plan || plan->skip) {
    // Its region became open for this range after the plan was made (or
    // has no endpoint left): the arm is not sent, and counts as a
    // non-final answer so that the next arm may go.
    ++out.skipped;
    plan_.on_result(arm, arm_outcome::connection_failure(), 0, now);
    return;
  }
  a.region = plan->region;
  a.in_flight = true;
  out.sends.push_back(arm_send{arm, std::move(*plan)});
}

arm_answer hedged_operation::on_arm_result(
    std::size_t arm, const attempt_result& r, double charge,
    const hedge_env& env, attempt_loop& primary, bool primary_out,
    const location_table& table, policy_time now, bool budget_spent) {
  arm_answer out;
  auto& a = arms_.at(arm - 1);
  a.in_flight = false;
  if (a.loop) a.loop->report_outcome(r, now);
  auto verdict = plan_.on_result(arm, arm_outcome_of(r), charge, now);
  if (verdict == hedge_class::final_result) {
    out.ends = arm_answer::end::final_result;
    // Arm 0 is still out in another region: a hedge win against it.
    if (primary_out && !primary_done_ &&
        !same_region(a.region, primary.region()))
      out.hedge_win = primary.record_hedge_loss(now);
    return out;
  }
  // Not final: what the arm's loop asks for still happens (a mark, an
  // account refresh), as for the metadata plane's hedge; no retry (an arm
  // makes one attempt), and the next arm may start at once.
  if (a.loop) out.effects = a.loop->on_result(r, table, now, true).effects;
  if (plan_.finished()) {
    out.ends = arm_answer::end::all_answered;
    return out;
  }
  out.next = advance(env, primary, table, now, budget_spent);
  if (out.next.all_answered) out.ends = arm_answer::end::all_answered;
  return out;
}

std::optional<hedge_step> hedged_operation::primary_gave_up(
    const attempt_result& r, double charge, const hedge_env& env,
    const attempt_loop& primary, const location_table& table, policy_time now,
    bool budget_spent) {
  if (plan_.finished()) return std::nullopt;
  auto verdict = plan_.on_result(0, arm_outcome_of(r), charge, now);
  if (verdict == hedge_class::final_result) return std::nullopt;
  primary_done_ = true;
  if (plan_.finished()) {
    hedge_step out;
    out.all_answered = true;
    return out;
  }
  return advance(env, primary, table, now, budget_spent);
}

std::vector<std::pair<std::size_t, attempt_loop>> hedged_operation::abandon() {
  std::vector<std::pair<std::size_t, attempt_loop>> out;
  for (std::size_t k = 0; k < arms_.size(); ++k) {
    auto& a = arms_[k];
    if (!a.in_flight || !a.loop) continue;
    out.emplace_back(k + 1, std::move(*a.loop));
    a.loop.reset();
    a.in_flight = false;
  }
  return out;
}

std::optional<policy_time> hedged_operation::wake_at() const {
  if (auto next = plan_.next_start()) return next->at;
  return std::nullopt;
}

bool hedged_operation::in_flight(std::size_t arm) const {
  return arm >= 1 && arm <= arms_.size() && arms_[arm - 1].in_flight;
}

const std::string& hedged_operation::arm_region(std::size_t arm) const {
  return arms_.at(arm - 1).region;
}

std::size_t hedged_operation::hedges_sent() const {
  return arms_.size();
}

late_step settle_late_attempt(attempt_loop& loop, const attempt_result& r,
                              const location_table& table, policy_time now) {
  late_step out;
  // The operation is gone, but the breaker still learns what the region did.
  loop.report_outcome(r, now);
  if (r.success()) return out;
  auto step = loop.on_result(r, table, now, false);
  if (step.ladder_climb) {
    if (auto plan = continue_abandoned_climb(loop, table, now)) {
      out.resend = std::move(*plan);
      return out;
    }
  }
  out.effects = step.effects;
  return out;
}

std::optional<attempt_plan>
continue_abandoned_climb(attempt_loop& loop, const location_table& table,
                         policy_time now) {
  if (table.is_unavailable(loop.endpoint(), loop.config().op, now) ||
      loop.pinned_blocked(now))
    return std::nullopt;
  auto plan = loop.next_attempt(table, now);
  if (!plan) return std::nullopt;
  return std::move(*plan);
}

} // namespace georoute
