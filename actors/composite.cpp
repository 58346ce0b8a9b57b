#include "georoute/actors/composite.hpp"

#include "georoute/actors/policy/timeout_ladder.hpp"

#include <caf/actor_system.hpp>
#include <caf/error.hpp>

namespace georoute {

void merge_diagnostics(diagnostics& into, diagnostics&& from) {
  for (auto& a : from.attempts)
    into.attempts.push_back(std::move(a));
  into.request_charge += from.request_charge;
  into.hedges += from.hedges;
  into.hedge_charge += from.hedge_charge;
  into.abandoned_arms += from.abandoned_arms;
  into.metadata_refreshes += from.metadata_refreshes;
  for (auto& t : from.breaker_transitions)
    into.breaker_transitions.push_back(std::move(t));
}

step_failure failure_of(const caf::error& e, const caf::actor_system& sys) {
  step_failure f;
  f.code = code_of(e) == errc::none ? errc::collaborator_down : code_of(e);
  f.text = context_of(e);
  if (f.text.empty()) f.text = sys.render(e);
  return f;
}

void composite_operation::begin(caf::response_promise rp, time_point now,
                                std::chrono::milliseconds budget,
                                std::string what) {
  rp_ = std::move(rp);
  started_ = now;
  budget_ = budget;
  what_ = std::move(what);
}

std::optional<std::chrono::milliseconds>
composite_operation::next_budget(time_point now) const {
  return sub_budget(
      budget_,
      std::chrono::duration_cast<std::chrono::milliseconds>(now - started_));
}

void composite_operation::take(const caf::error& e) {
  if (const auto* d = diagnostics_of(e)) take(diagnostics{*d});
}

bool composite_operation::fail(errc code, const std::string& text,
                               time_point now) {
  if (done_) return false;
  done_ = true;
  diag_.total_us =
      std::chrono::duration_cast<std::chrono::microseconds>(now - started_)
          .count();
  rp_.deliver(make_error(code, what_ + ": " + text, diag_));
  return true;
}

bool composite_operation::fail(const caf::error& e, const std::string& where,
                               time_point now, const caf::actor_system& sys) {
  auto f = failure_of(e, sys);
  return fail(f.code, where + ": " + f.text, now);
}

bool composite_operation::fail_budget(const std::string& next, time_point now) {
  return fail(errc::deadline_exceeded,
              "operation budget of " + format_duration(budget_) +
                  " spent before " + next,
              now);
}

std::optional<diagnostics> composite_operation::finish(time_point now) {
  if (done_) return std::nullopt;
  done_ = true;
  diag_.total_us =
      std::chrono::duration_cast<std::chrono::microseconds>(now - started_)
          .count();
  return std::move(diag_);
}

} // namespace georoute
