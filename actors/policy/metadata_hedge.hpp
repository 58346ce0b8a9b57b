#pragma once

// The one hedge of a metadata operation (a collection read, a query plan,
// the first page of the partition-range feed) as a state machine, without
// actors. The operation's own attempt loop is the primary; the actor owns
// it and hands it in. Events in, next steps out:
//
//   plan(options, ask, primary, table, now)   at the primary's first
//       attempt: a metadata_hedge (due at `due()`), or nullopt
//   start(primary, primary_out, slots, ...)   the due time came: send the
//       hedge (a plan), or it is ruled out (refused: no budget slot)
//   defer_primary()                           before the primary's next
//       attempt: true = wait for the hedge's answer instead
//   on_primary_failure(result, step)          the primary's attempt failed
//       and its loop decided `step`: take the held hedge answer, wait for
//       the hedge, or go on as the loop says
//   on_hedge_result(result, slots, ...)       the hedge answered: take it,
//       hold it, end with the primary's reason, resume the primary, or
//       nothing; plus the effects its failure asks for
//   abandon(slots)                            the operation ended: the
//       hedge's loop if still out (see `settle_late_attempt`)
//
// The rules (`metadata_hedge_wins` decides who wins):
//   - the hedge goes once, `threshold` after the primary's first attempt,
//     to the first applicable region other than the primary's, only while
//     the primary is still in its first region and has not failed there
//     for the region's sake, is not waiting out a 429 (the account is busy,
//     every region alike), and a slot of the engine's metadata hedge budget
//     is free;
//   - the primary is authoritative: while it runs only a hedge's success is
//     taken; a hedge's definitive error (401, 404, ...) is held until the
//     primary decides; once the primary failed regionally, the hedge's
//     answer (a held one included) is taken whatever it is;
//   - after a regional failure the primary's next attempt waits for the
//     hedge's answer (it would only go where the hedge already is); if the
//     primary gives up meanwhile, the hedge may still answer, and when it
//     cannot win the operation ends with the primary's reason.
// Nothing here reads a clock: every time is a `now` argument.

#include "georoute/actors/policy/attempt_loop.hpp"
#include "georoute/actors/policy/hedge_budget.hpp"
#include "georoute/actors/policy/hedging.hpp"

#include <optional>
#include <string>
#include <vector>

namespace georoute {

/// What the operation asks of metadata hedging.
struct metadata_hedge_ask {
  request_kind kind = request_kind::metadata_read;
  op_kind op = op_kind::read;
  /// The first page of the partition-range feed (later pages stay on the
  /// region that served the first).
  bool first_page = true;
  /// Regions excluded for the operation (the engine's and its own).
  std::vector<std::string> excluded;
};

/// The hedge's due time came.
struct metadata_hedge_start {
  /// Send the hedge: where and how.
  std::optional<attempt_plan> send;
  /// No budget slot was free (counted; the hedge is ruled out).
  bool refused = false;
};

/// The primary's attempt failed.
struct metadata_primary_step {
  /// The hedge's held answer is now the operation's.
  bool take_held = false;
  /// The loop gave up, but the hedge is out and may still answer: wait.
  bool wait_for_hedge = false;
};

/// The hedge answered.
struct metadata_hedge_answer {
  enum class next : uint8_t {
    nothing,        ///< the primary goes on as it was
    take,           ///< this answer is the operation's
    end_primary,    ///< the primary had given up: end with its reason
    resume_primary, ///< the primary's deferred attempt goes now
  };
  next then = next::nothing;
  /// Keep this answer (a definitive error): once the primary fails for its
  /// region's sake, it is the operation's (`take_held`).
  bool hold = false;
  /// What the hedge's failure asks for (marks, a refresh, clearing a
  /// session), carried out whatever comes next.
  loop_effects effects;
};

class metadata_hedge {
public:
  /// At the primary's first attempt (`primary` has planned it): whether the
  /// operation is hedged, and where to. `now` is when the attempt went.
  static std::optional<metadata_hedge>
  plan(const metadata_hedge_options& options, metadata_hedge_ask ask,
       const attempt_loop& primary, const location_table& table,
       policy_time now);

  /// When `start` is due; nullopt once started or ruled out.
  std::optional<policy_time> due() const { return due_; }

  /// The due time came. `primary_out`: the primary's attempt is in flight.
  metadata_hedge_start start(const attempt_loop& primary, bool primary_out,
                             metadata_hedge_budget& slots,
                             const timeout_ladders& ladders,
                             const location_table& table, policy_time now);

  /// Before the primary's next attempt: true when it must wait for the
  /// hedge's answer (`on_hedge_result` says `resume_primary`).
  bool defer_primary();

  /// The primary's attempt failed with `r`, and its loop decided `step`.
  metadata_primary_step on_primary_failure(const attempt_result& r,
                                           const loop_step& step);

  /// The hedge answered `r`. Gives its budget slot back.
  metadata_hedge_answer on_hedge_result(const attempt_result& r,
                                        metadata_hedge_budget& slots,
                                        const location_table& table,
                                        policy_time now);

  /// The operation ended: gives the slot back and returns the hedge's loop
  /// when its attempt is still out.
  std::optional<attempt_loop> abandon(metadata_hedge_budget& slots);

  bool started() const { return arm_.has_value(); }
  bool in_flight() const { return in_flight_; }
  const std::string& hedge_region() const { return arm_region_; }
  /// The primary's reason when it gave up while the hedge was out.
  const std::optional<std::string>& primary_gave_up() const { return gave_up_; }

private:
  metadata_hedge(metadata_hedge_ask ask, std::string primary_region,
                 std::string hedge_region, policy_time due);
  void rule_out();
  void release(metadata_hedge_budget& slots);

  metadata_hedge_ask ask_;
  std::string primary_region_;
  std::optional<std::string> hedge_region_; ///< reset once ruled out
  std::optional<policy_time> due_;
  std::optional<attempt_loop> arm_;
  std::string arm_region_;
  bool in_flight_ = false;
  bool holds_slot_ = false;
  /// Set once the primary failed for its region's sake (and left it).
  std::optional<metadata_outcome> primary_;
  /// A definitive error of the hedge, kept until the primary decides.
  std::optional<metadata_outcome> held_;
  bool deferred_ = false;
  std::optional<std::string> gave_up_;
};

/// How a failed or successful attempt sorts for metadata hedging.
metadata_outcome metadata_outcome_of(const attempt_result& r);

} // namespace georoute
