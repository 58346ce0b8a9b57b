#include "georoute/actors/policy/metadata_hedge.hpp"

namespace georoute {

metadata_outcome metadata_outcome_of(const attempt_result& r) {
  auto fault = !r.transport_failure ? transport_fault::none
               : r.timed_out        ? transport_fault::timeout
                                    : transport_fault::connection;
  return classify_metadata_outcome(fault, r.status, r.substatus);
}

metadata_hedge::metadata_hedge(metadata_hedge_ask ask,
                               std::string primary_region,
                               std::string hedge_region, policy_time due)
    : ask_(std::move(ask)), primary_region_(std::move(primary_region)),
      hedge_region_(std::move(hedge_region)), due_(due) {}

std::optional<metadata_hedge>
metadata_hedge::plan(const metadata_hedge_options& options,
                     metadata_hedge_ask ask, const attempt_loop& primary,
                     const location_table& table, policy_time now) {
  const auto& first = primary.region();
  // The cheap check first: most kinds are never hedged.
  if (first.empty() ||
      !metadata_hedge_applies(options, ask.kind, ask.first_page, 2))
    return std::nullopt;
  auto regions = hedge_regions(table, ask.op, ask.excluded, now);
  if (!metadata_hedge_applies(options, ask.kind, ask.first_page,
                              regions.size()))
    return std::nullopt;
  auto region = metadata_hedge_region(regions, first);
  if (!region) return std::nullopt;
  return metadata_hedge(std::move(ask), first, std::move(*region),
                        now + options.threshold);
}

void metadata_hedge::rule_out() {
  hedge_region_.reset();
  due_.reset();
}

void metadata_hedge::release(metadata_hedge_budget& slots) {
  if (!holds_slot_) return;
  holds_slot_ = false;
  slots.release();
}

metadata_hedge_start metadata_hedge::start(const attempt_loop& primary,
                                           bool primary_out,
                                           metadata_hedge_budget& slots,
                                           const timeout_ladders& ladders,
                                           const location_table& table,
                                           policy_time now) {
  metadata_hedge_start out;
  due_.reset();
  if (!hedge_region_ || arm_) return out;
  // A primary waiting out a throttle is not slow: the account is busy, and
  // its throughput is the same in every region.
  bool throttled = !primary_out && primary.last_failure() &&
                   primary.last_failure()->status == 429;
  if (primary_ || throttled ||
      !same_region(primary.region(), primary_region_)) {
    rule_out();
    return out;
  }
  if (!slots.try_acquire()) {
    out.refused = true;
    rule_out();
    return out;
  }
  auto lc = primary.config();
  lc.excluded_regions =
      arm_exclusions(ask_.excluded, {primary_region_, *hedge_region_}, 1);
  lc.attempt_cap = 1;
  attempt_loop arm{std::move(lc), ladders};
  auto plan = arm.next_attempt(table, now);
  if (!plan) {
    slots.release();
    rule_out();
    return out;
  }
  holds_slot_ = true;
  in_flight_ = true;
  arm_region_ = plan->region;
  arm_ = std::move(arm);
  out.send = std::move(*plan);
  return out;
}

bool metadata_hedge::defer_primary() {
  if (!primary_ || !in_flight_) return false;
  deferred_ = true;
  return true;
}

metadata_primary_step
metadata_hedge::on_primary_failure(const attempt_result& r,
                                   const loop_step& step) {
  metadata_primary_step out;
  // The primary failed for its region's sake and leaves it (a climb of the
  // ladder stays on the same endpoint and is not leaving).
  bool regional = !step.ladder_climb &&
                  metadata_outcome_of(r) == metadata_outcome::regional_failure;
  if (regional && !primary_) {
    primary_ = metadata_outcome::regional_failure;
    if (!arm_) {
      // Not due yet: the loop's own retry goes to another region instead.
      rule_out();
    } else if (held_ && metadata_hedge_wins(primary_, *held_)) {
      out.take_held = true;
      return out;
    }
  }
  bool goes_on =
      step.next == loop_next::attempt || step.next == loop_next::after_refresh;
  if (!goes_on && regional && in_flight_) {
    gave_up_ = step.reason; // the hedge may still answer
    out.wait_for_hedge = true;
  }
  return out;
}

metadata_hedge_answer
metadata_hedge::on_hedge_result(const attempt_result& r,
                                metadata_hedge_budget& slots,
                                const location_table& table, policy_time now) {
  metadata_hedge_answer out;
  in_flight_ = false;
  release(slots);
  if (!r.success() && arm_)
    out.effects = arm_->on_result(r, table, now, true).effects;
  auto outcome = metadata_outcome_of(r);
  if (outcome != metadata_outcome::regional_failure &&
      metadata_hedge_wins(primary_, outcome)) {
    out.then = metadata_hedge_answer::next::take;
    return out;
  }
  // A definitive error while the primary is out waits for the primary.
  if (outcome == metadata_outcome::definitive_error) {
    held_ = outcome;
    out.hold = true;
  }
  // The hedge's region failed too (or its answer waits): the primary goes
  // on, or ends with what it had.
  if (gave_up_) {
    out.then = metadata_hedge_answer::next::end_primary;
  } else if (deferred_) {
    deferred_ = false;
    out.then = metadata_hedge_answer::next::resume_primary;
  }
  return out;
}

std::optional<attempt_loop>
metadata_hedge::abandon(metadata_hedge_budget& slots) {
  release(slots);
  rule_out();
  if (!in_flight_ || !arm_) return std::nullopt;
  in_flight_ = false;
  auto loop = std::move(*arm_);
  arm_.reset();
  return loop;
}

} // namespace georoute
