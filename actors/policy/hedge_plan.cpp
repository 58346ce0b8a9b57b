#include "georoute/actors/policy/hedge_plan.hpp"

#include <algorithm>

namespace georoute {

using std::chrono::microseconds;
using std::chrono::milliseconds;

// -- arms ------------------------------------------------------------------

hedge_summary summarize(const std::vector<hedge_arm_record>& arms) {
  hedge_summary out;
  for (std::size_t i = 0; i < arms.size(); ++i) {
    const auto& a = arms[i];
    out.total_charge += a.request_charge;
    if (a.winner) out.winner_charge = a.request_charge;
    if (i == 0) continue;
    out.hedge_charge += a.request_charge;
    if (a.state != arm_state::not_started) ++out.hedges_started;
    if (a.winner) out.hedges_won = 1;
  }
  return out;
}

hedge_plan::hedge_plan(std::vector<std::string> regions, hedge_timing timing,
                       policy_time first_send)
    : timing_(timing), first_send_(first_send) {
  if (regions.empty()) regions.emplace_back();
  arms_.reserve(regions.size());
  for (auto& r : regions) {
    hedge_arm_record a;
    a.region = std::move(r);
    arms_.push_back(std::move(a));
  }
  arms_.front().state = arm_state::in_flight;
}

milliseconds hedge_plan::scheduled_offset(std::size_t arm) const {
  if (arm == 0) return milliseconds::zero();
  return timing_.threshold +
         timing_.step * static_cast<milliseconds::rep>(arm - 1);
}

std::optional<arm_start> hedge_plan::next_start() const {
  if (finished() || stopped_ || started_ >= arms_.size()) return std::nullopt;
  arm_start out{started_, first_send_ + scheduled_offset(started_), false};
  if (early_used_ < early_due_.size() && early_due_[early_used_] <= out.at) {
    out.at = early_due_[early_used_];
    out.early = true;
  }
  return out;
}

std::optional<std::size_t> hedge_plan::start_next(policy_time now) {
  auto next = next_start();
  if (!next || next->at > now) return std::nullopt;
  if (next->early) ++early_used_;
  auto& a = arms_[next->arm];
  a.state = arm_state::in_flight;
  a.start_offset = std::chrono::duration_cast<microseconds>(now - first_send_);
  ++started_;
  return next->arm;
}

void hedge_plan::stop() {
  stopped_ = true;
  if (!finished() && in_flight() == 0 && last_answered_)
    finish(*last_answered_);
}

std::optional<hedge_class> hedge_plan::on_result(std::size_t arm,
                                                 const arm_outcome& outcome,
                                                 double charge,
                                                 policy_time now) {
  if (arm >= arms_.size()) return std::nullopt;
  auto& a = arms_[arm];
  if (a.state != arm_state::in_flight && a.state != arm_state::abandoned)
    return std::nullopt;
  auto verdict = classify_for_hedging(outcome);
  a.outcome = outcome;
  a.verdict = verdict;
  a.request_charge = charge;
  if (a.state == arm_state::abandoned) {
    a.state = arm_state::late;
    return verdict;
  }
  a.state = arm_state::answered;
  last_answered_ = arm;
  if (verdict == hedge_class::final_result) {
    finish(arm);
    return verdict;
  }
  const bool more = !stopped_ && started_ < arms_.size();
  if (verdict == hedge_class::start_next && more) early_due_.push_back(now);
  if (!more && in_flight() == 0) finish(arm);
  return verdict;
}

std::size_t hedge_plan::in_flight() const {
  return static_cast<std::size_t>(
      std::count_if(arms_.begin(), arms_.end(), [](const auto& a) {
        return a.state == arm_state::in_flight;
      }));
}

void hedge_plan::finish(std::size_t arm) {
  result_arm_ = arm;
  arms_[arm].winner = true;
  for (auto& a : arms_)
    if (a.state == arm_state::in_flight) a.state = arm_state::abandoned;
}

} // namespace georoute
