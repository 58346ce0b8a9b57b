#pragma once

// What the composite operations (the query executor's cross-partition
// page, the change-feed executor's page) share: each sends the router one
// request per sub-operation and answers its caller once.
//
// - The budget: each sub-operation gets what is left of the caller's
//   (`sub_budget`, actors/policy/composite.hpp); once it is spent, no new
//   sub-operation starts and the composite fails `errc::deadline_exceeded`.
// - Diagnostics: every sub-operation's, answered or failed, are added to
//   the composite's (`merge_diagnostics`).
// - A range gone: the router refreshed the routing map before it answered
//   `errc::partition_range_gone`; the composite looks the successors up in
//   the partition-range cache without forcing it (`gone_streaks` says when
//   to give up). A split costs one map refresh.
// - Errors: a failure of a step is the composite's, with the step's code
//   (`collaborator_down` for one that is not georoute's) and the
//   composite's diagnostics.

#include "georoute/actors/policy/composite.hpp"
#include "georoute/messages/error.hpp"
#include "georoute/messages/payloads.hpp"

#include <caf/actor_clock.hpp>
#include <caf/fwd.hpp>
#include <caf/response_promise.hpp>
#include <chrono>
#include <optional>
#include <string>

namespace georoute {

/// Adds a sub-operation's diagnostics to its composite's: every attempt,
/// the charge (a failed sub-operation's too), hedges and their charge,
/// abandoned arms, map refreshes, breaker transitions. The composite's own
/// collection rid, range id and total time are left as they are.
void merge_diagnostics(diagnostics& into, diagnostics&& from);

/// The code and words of a failed step: its georoute code, or
/// `collaborator_down` for any other error (an actor that exited, a CAF
/// error); its context, or `sys`'s rendering of it.
struct step_failure {
  errc code = errc::none;
  std::string text;
};
step_failure failure_of(const caf::error& e, const caf::actor_system& sys);

/// One composite operation as its executor keeps it: the caller's promise,
/// the clock and budget, the diagnostics, the range-gone streaks. It
/// answers once; `fail` and `finish` say whether this was the answer (the
/// executor then quits).
class composite_operation {
public:
  using time_point = caf::actor_clock::time_point;

  /// `what` names the operation in every error ("cross-partition query of
  /// dbs/d/colls/c").
  void begin(caf::response_promise rp, time_point now,
             std::chrono::milliseconds budget, std::string what);

  bool done() const { return done_; }
  diagnostics& diag() { return diag_; }
  gone_streaks& gone() { return gone_; }

  /// The budget of the next sub-operation; `std::nullopt` once the
  /// caller's is spent.
  std::optional<std::chrono::milliseconds> next_budget(time_point now) const;

  /// Adds a sub-operation's answer's diagnostics.
  void take(diagnostics&& d) { merge_diagnostics(diag_, std::move(d)); }

  /// Adds the diagnostics a sub-operation's error carries, if any.
  void take(const caf::error& e);

  /// Answers `code` with "<what>: <text>" and the diagnostics; false when
  /// already answered.
  bool fail(errc code, const std::string& text, time_point now);

  /// Answers a step's failure `e` as "<what>: <where>: <its words>".
  bool fail(const caf::error& e, const std::string& where, time_point now,
            const caf::actor_system& sys);

  /// Answers `errc::deadline_exceeded`: the budget is spent before
  /// `next` could start.
  bool fail_budget(const std::string& next, time_point now);

  /// Marks the operation answered and hands out its diagnostics, their
  /// total time set; `std::nullopt` when already answered. The executor
  /// delivers its answer through `promise()`.
  std::optional<diagnostics> finish(time_point now);

  caf::response_promise& promise() { return rp_; }

private:
  caf::response_promise rp_;
  time_point started_;
  std::chrono::milliseconds budget_{0};
  std::string what_;
  diagnostics diag_;
  gone_streaks gone_;
  bool done_ = false;
};

} // namespace georoute
