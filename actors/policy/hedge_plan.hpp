#pragma once

// The arms of one hedged operation (`hedge_plan`) and their RU accounting.
// See hedging.hpp for the caller's sequence.

#include "georoute/actors/policy/hedging.hpp"
#include "georoute/actors/policy/location_table.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace georoute {

// -- arms ------------------------------------------------------------------

/// Where an arm is.
enum class arm_state : uint8_t {
  not_started,
  in_flight,
  answered,  ///< its result arrived before the operation finished
  abandoned, ///< still in flight when the operation finished
  late,      ///< answered after the operation finished (charge recorded)
};

/// One arm, for diagnostics and RU accounting.
struct hedge_arm_record {
  std::string region;
  /// When the arm was sent, after arm 0.
  std::chrono::microseconds start_offset{0};
  arm_state state = arm_state::not_started;
  /// Its result, when `answered` or `late`.
  arm_outcome outcome;
  hedge_class verdict = hedge_class::start_next;
  /// The RU its answer reported; 0 while no answer came.
  double request_charge = 0;
  /// Its result is the operation's.
  bool winner = false;
};

/// The RU a hedged operation cost, for diagnostics and counters.
struct hedge_summary {
  /// What the caller is told: the winning arm's charge.
  double winner_charge = 0;
  /// What the hedges (arms >= 1) were charged, winner or not.
  double hedge_charge = 0;
  /// Every arm's charge.
  double total_charge = 0;
  uint32_t hedges_started = 0;
  /// 1 when an arm >= 1 produced the operation's result, else 0.
  uint32_t hedges_won = 0;

  /// What hedging added to the bill: total - winner.
  double extra_charge() const { return total_charge - winner_charge; }
};

/// Sums a list of arm records.
hedge_summary summarize(const std::vector<hedge_arm_record>& arms);

/// The next arm to send and when.
struct arm_start {
  std::size_t arm = 0;
  policy_time at;
  /// Due because an arm ended with a non-final result, not by schedule.
  bool early = false;
};

/// The arms of one hedged operation: a value, changed only by its members.
class hedge_plan {
public:
  /// Arm 0 goes to `regions[0]` at `first_send`. `regions` must not be
  /// empty; with one region the plan never hedges.
  hedge_plan(std::vector<std::string> regions, hedge_timing timing,
             policy_time first_send);

  /// 0 for arm 0, threshold + step * (arm - 1) after it.
  std::chrono::milliseconds scheduled_offset(std::size_t arm) const;

  /// The next arm and when it is due: at once (the time of the non-final
  /// result that made it due) after a non-final result that
  /// `starts_next_arm_early`, one per such result; else on its schedule.
  /// nullopt once finished, stopped, or with every arm sent.
  std::optional<arm_start> next_start() const;

  /// Sends the next arm if it is due at `now`; returns its index.
  std::optional<std::size_t> start_next(policy_time now);

  /// Sends no further arm (budget refused, caller gave up). If no arm is in
  /// flight, the operation finishes with the last answer.
  void stop();

  /// An arm answered with `outcome`, charged `charge` RU. Returns its class;
  /// nullopt (and no change) for an arm that is not in flight or abandoned.
  std::optional<hedge_class> on_result(std::size_t arm,
                                       const arm_outcome& outcome,
                                       double charge, policy_time now);

  /// A final result arrived, or every arm that will ever be sent answered.
  bool finished() const { return result_arm_.has_value(); }
  /// The arm whose result is the operation's, once finished.
  std::optional<std::size_t> result_arm() const { return result_arm_; }

  std::size_t arm_count() const { return arms_.size(); }
  std::size_t started() const { return started_; }
  std::size_t in_flight() const;
  bool stopped() const { return stopped_; }
  const hedge_timing& timing() const { return timing_; }
  policy_time first_send() const { return first_send_; }
  const std::vector<hedge_arm_record>& arms() const { return arms_; }
  hedge_summary summary() const { return summarize(arms_); }

private:
  void finish(std::size_t arm);

  std::vector<hedge_arm_record> arms_;
  hedge_timing timing_;
  policy_time first_send_;
  std::size_t started_ = 1;
  bool stopped_ = false;
  std::optional<std::size_t> result_arm_;
  std::optional<std::size_t> last_answered_;
  /// When each early-starting result arrived; `early_used_` of them have
  /// started an arm.
  std::vector<policy_time> early_due_;
  std::size_t early_used_ = 0;
};

} // namespace georoute
