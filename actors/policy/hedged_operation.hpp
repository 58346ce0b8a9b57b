#pragma once

// The hedge of one data-plane operation as a state machine, without actors:
// whether the operation is hedged and to which regions, when each arm goes
// (its schedule, at once after a non-final answer, or not at all once the
// hedge budget is spent or the operation's budget is), the arms' own attempt
// loops (one attempt each, confined to their region, consulting the circuit
// breaker), what an arm's answer means for the operation, and what an arm
// that is still out when the operation ends goes on doing.
//
// Arm 0 is the operation's own attempt loop (`attempt_loop`, with its
// retries); the actor owns it and hands it in where a rule needs it. Arm
// i >= 1 is owned here. Events in, next steps out:
//
//   intend(env, ask, primary, table, first_send) at arm 0's first attempt:
//       when the first hedge is due, or nullopt (not hedged); no regions yet
//   materialize(env, ask, intent, ..., now)      that time came (or arm 0
//       gave up first): a hedged_operation with the regions as they are
//       now, or nullopt (fewer than two left)
//   plan(...)                                    both at once
//   advance(env, primary, table, now, spent)     a timer fired (or after
//       any event): `hedge_step` = arms to send (arm, plan), the next
//       time to wake up, or every arm answered without a final result
//   on_arm_result(arm, result, charge, ...)      arm i >= 1 answered:
//       `arm_answer` = the operation ends with this arm's answer, or the
//       marks its failure asks for and the arms that start at once
//   primary_gave_up(result, charge, ...)         arm 0's loop gave up: the
//       hedge takes over (a `hedge_step`) or nullopt (the operation ends)
//   abandon()                                    the operation ended: the
//       arms still in flight, to be settled by `settle_late_attempt`
//
// The actor carries the steps out (the wire, diagnostics, counters, marks,
// its timer). The rules:
//   - the first final answer of any arm (`classify_for_hedging`) is the
//     operation's; a final answer from arm i >= 1 while arm 0 is still out
//     in another region is a hedge win against arm 0's region (the breaker
//     counts it);
//   - a non-final answer still has the effects its arm's loop asks for (a
//     mark, an account refresh; no retry: an arm makes one attempt) and
//     starts the next arm at once;
//   - each arm i >= 1 takes one unit of the engine's hedge budget, except
//     the first hedge of an operation whose arm 0 went to a region the
//     breaker has since taken out of its range (the read was sent before
//     the breaker knew; its hedge is what keeps it alive); a refused unit
//     stops the plan (no later arm goes either);
//   - an arm whose region the breaker now blocks is not sent and counts as
//     a non-final answer, so the next arm may go; so does an arm with no
//     endpoint to go to;
//   - a spent operation budget stops the plan; arms already out still
//     answer.
// Nothing here reads a clock: every time is a `now` argument.

#include "georoute/actors/policy/attempt_loop.hpp"
#include "georoute/actors/policy/hedge_budget.hpp"
#include "georoute/actors/policy/hedge_plan.hpp"
#include "georoute/actors/policy/hedging.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace georoute {

/// What the operations of one actor share. Owned by the actor; must outlive
/// every hedged_operation built with it.
struct hedge_env {
  const hedging_options* options = nullptr;
  /// The share of hedged operations.
  hedge_budget* budget = nullptr;
  /// Answer times per region, for the adaptive threshold; null: static.
  const region_latencies* latencies = nullptr;
  const timeout_ladders* ladders = nullptr;
  /// The per-partition circuit breaker; null: none.
  const partition_breaker* breaker = nullptr;
};

/// What the operation asks of hedging.
struct hedge_ask {
  op_kind op = op_kind::read;
  /// The request's switch: -1 the engine's setting, 0 off, 1 on (for a
  /// write: also opts it in).
  int hedge = -1;
  /// The request's threshold; 0: the engine's.
  std::chrono::milliseconds threshold{0};
  /// A write whose second copy cannot apply twice (`write_copy_safe`).
  bool write_copy_safe = false;
  /// Regions excluded for the operation (the engine's and its own).
  std::vector<std::string> excluded;
};

/// An arm to send now.
struct arm_send {
  std::size_t arm = 0;
  attempt_plan plan;
};

/// What to do after a hedge event.
struct hedge_step {
  std::vector<arm_send> sends;
  /// When to call `advance` next; nullopt: no arm is scheduled.
  std::optional<policy_time> wake_at;
  /// Every arm answered (arm 0 included) and none was final: the operation
  /// fails with the last answer.
  bool all_answered = false;
  // For the counters.
  uint32_t refused = 0;     ///< the hedge budget refused an arm
  uint32_t on_evidence = 0; ///< first hedges outside the budget
  uint32_t skipped = 0;     ///< arms the breaker (or no endpoint) left out
};

/// What an arm's answer does to the operation.
struct arm_answer {
  enum class end : uint8_t {
    none,         ///< goes on: carry out `effects` and `next`
    final_result, ///< this answer is the operation's result
    all_answered, ///< every arm answered, none final: fail with this one
  };
  end ends = end::none;
  /// The marks the arm's failure asks for (run whatever comes next).
  loop_effects effects;
  /// Arms that start at once, and the next wake-up.
  hedge_step next;
  /// A final answer of this arm won while arm 0 was out elsewhere: the
  /// breaker counted a hedge win against arm 0's region.
  bool hedge_win = false;
};

/// Whether an operation of kind `op` with the request's switch `hedge`
/// (-1 the engine's setting, 0 off, 1 on) is a candidate at all: hedging
/// on (the request's switch wins), and a write opted in (the request's
/// switch or `hedge_writes`). Cheap: no region list. `plan` asks it first.
bool hedge_wanted(const hedging_options& options, op_kind op, int hedge);

/// What is decided at arm 0's first attempt, before any region list: the
/// operation may be hedged, and when its first hedge is due. The regions
/// are chosen when that time comes (`hedged_operation::materialize`), so
/// the many reads that answer first never build them.
struct hedge_intent {
  policy_time first_send;
  hedge_timing timing;
  /// When the first hedge is due.
  policy_time due() const { return first_send + timing.threshold; }
};

/// `transport::outcome`-free view of an arm's result for `hedge_plan`.
arm_outcome arm_outcome_of(const attempt_result& r);

class hedged_operation {
public:
  /// At arm 0's first attempt (`primary` has planned it; `first_send` is
  /// when it went): whether the operation may be hedged — hedging on for
  /// it, a write opted in, safe to copy and on a multi-write account, and
  /// more than one region applicable to it — and when. Records the
  /// operation in the hedge budget when it may be. No region list: the
  /// applicable endpoints are only counted.
  static std::optional<hedge_intent> intend(const hedge_env& env,
                                            const hedge_ask& ask,
                                            const attempt_loop& primary,
                                            const location_table& table,
                                            policy_time first_send);

  /// The intent's time came (or arm 0 gave up first), at `now`: the
  /// regions — arm 0's current region, then the applicable regions for the
  /// operation after its exclusions, marks and the breaker of its range, as
  /// they are now. nullopt: fewer than two regions are left (the operation
  /// still counted in the budget).
  static std::optional<hedged_operation>
  materialize(const hedge_env& env, const hedge_ask& ask,
              const hedge_intent& intent, const attempt_loop& primary,
              const location_table& table, policy_time now);

  /// `intend`, then `materialize` at once (at `first_send`).
  static std::optional<hedged_operation>
  plan(const hedge_env& env, const hedge_ask& ask, const attempt_loop& primary,
       const location_table& table, policy_time first_send);

  /// Starts the arms that are due at `now`, within the hedge budget.
  /// `budget_spent`: the operation's budget is spent; no arm starts.
  hedge_step advance(const hedge_env& env, const attempt_loop& primary,
                     const location_table& table, policy_time now,
                     bool budget_spent);

  /// Arm `arm` (>= 1) answered `r`, charged `charge` RU. The breaker hears
  /// of it (the arm's ticket). `primary_out`: arm 0's attempt is in flight.
  arm_answer on_arm_result(std::size_t arm, const attempt_result& r,
                           double charge, const hedge_env& env,
                           attempt_loop& primary, bool primary_out,
                           const location_table& table, policy_time now,
                           bool budget_spent);

  /// Arm 0's loop gave up with `r` (a failure that its retries did not
  /// get past). nullopt: the operation ends with it (`r` is final, or the
  /// hedge had already finished); otherwise the hedge goes on and the step
  /// says what starts now (or that every arm has answered).
  std::optional<hedge_step> primary_gave_up(const attempt_result& r,
                                            double charge, const hedge_env& env,
                                            const attempt_loop& primary,
                                            const location_table& table,
                                            policy_time now, bool budget_spent);

  /// The operation ended: the arms (>= 1) still in flight, with their loops,
  /// which are moved out.
  std::vector<std::pair<std::size_t, attempt_loop>> abandon();

  /// When `advance` is due next (the next arm's time); nullopt: never.
  std::optional<policy_time> wake_at() const;
  /// Arm 0 has given up; only the hedges are left.
  bool primary_done() const { return primary_done_; }
  /// Whether arm `arm` (>= 1) is in flight.
  bool in_flight(std::size_t arm) const;
  /// The region and endpoint arm `arm` (>= 1) went to.
  const std::string& arm_region(std::size_t arm) const;
  /// Arms >= 1 sent so far.
  std::size_t hedges_sent() const;
  const hedge_plan& arms() const { return plan_; }

private:
  struct arm {
    std::optional<attempt_loop> loop;
    std::string region;
    bool in_flight = false;
  };

  hedged_operation(hedge_plan plan, hedge_ask ask);
  void send_arm(const hedge_env& env, const attempt_loop& primary,
                const location_table& table, policy_time now, std::size_t arm,
                hedge_step& out);
  bool primary_losing(const hedge_env& env, const attempt_loop& primary,
                      policy_time now) const;

  hedge_plan plan_;
  hedge_ask ask_;
  std::vector<arm> arms_; ///< arms_[i - 1] is arm i
  bool primary_done_ = false;
};

/// What an attempt still out when its operation ended does with its answer.
struct late_step {
  /// Climb the timeout ladder on the same endpoint: send this (the answer
  /// is dropped again).
  std::optional<attempt_plan> resend;
  /// Otherwise: the side effects its failure asks for (marks, a refresh,
  /// clearing a session), carried out although nobody waits.
  loop_effects effects;
};

/// An abandoned attempt (a hedge's arm, or a metadata operation's primary
/// or hedge) answered `r`: its answer is dropped, but the breaker hears of
/// it, and a timeout goes on up the ladder on the same endpoint while
/// nobody has marked that endpoint and the breaker does not keep the range
/// out of its region — so a hung region is still found silent and marked,
/// as without hedging. Anything else ends it with its effects.
late_step settle_late_attempt(attempt_loop& loop, const attempt_result& r,
                              const location_table& table, policy_time now);

/// Whether a hedge arm's failure that did not end the operation becomes the
/// failure the operation reports if it ends in failure: only when there is
/// none yet, or the primary has given up (its own failure is older news).
constexpr bool replaces_reported_failure(bool have_one, bool primary_done) {
  return !have_one || primary_done;
}

/// The next ladder step of an abandoned attempt whose last step timed out,
/// or nothing: an abandoned attempt climbs only while nobody has marked its
/// endpoint (once marked, the region is known bad and nothing more goes
/// there) and while the breaker lets its range into that region.
std::optional<attempt_plan>
continue_abandoned_climb(attempt_loop& loop, const location_table& table,
                         policy_time now);

/// What becomes of an operation's primary attempt when the operation ends
/// before its loop does (another arm won, a deadline passed, the budget
/// was spent). One rule for both planes, hedged or not: the primary's
/// decisions and their side effects run to completion though nobody waits
/// for its answer. `budget_spent`: the operation's budget ended it; its
/// loop climbs no ladder once the budget is spent (`attempt_loop::
/// on_result`), so a pending step is dropped rather than sent.
enum class primary_fate : uint8_t {
  nothing,          ///< nothing out and no step pending: nothing to carry on
  settle_in_flight, ///< an attempt is out: settle it when it answers
  climb_now,        ///< a ladder step is pending: send it now, then settle it
};

constexpr primary_fate abandon_primary(bool in_flight, bool climbing,
                                       bool budget_spent) {
  if (in_flight) return primary_fate::settle_in_flight;
  if (climbing && !budget_spent) return primary_fate::climb_now;
  return primary_fate::nothing;
}

} // namespace georoute
