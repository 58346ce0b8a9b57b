#pragma once

// What both planes use in carrying out operations' attempt loops, through
// `operation_driver` (operation_driver.hpp) and in their own hooks:
//
//   - `apply_effects`: the one place where a decision's side effects are
//     applied (mark a region, refresh the account, clear a session), with
//     their counters, whoever decided: an operation's primary, a hedge arm,
//     an attempt its operation left behind;
//   - `late_attempts`: the attempts of ended operations, keyed by
//     (operation, arm), settled by `settle_late_attempt`;
//   - the location tables (`take_table` and the functions after it), the
//     deadline queue's one timer (`arm_deadline_tick`) and an operation's
//     hedge wake-up in it (`move_wake`).
//
// Each actor's state holds a `driver_counters counts`, a `snapshot_holder
// snap` and collaborators `with.locations` / `with.endpoints`; its stats fold
// the counters in. No message from a caller reaches anything here: what was
// decided runs to completion whether the caller still waits or not.

#include "georoute/actors/internal.hpp"
#include "georoute/actors/policy/attempt_loop.hpp"
#include "georoute/actors/policy/deadline_queue.hpp"
#include "georoute/actors/policy/hedged_operation.hpp"
#include "georoute/messages/interfaces.hpp"
#include "georoute/transport/outcome.hpp"

#include <caf/actor.hpp>
#include <caf/send.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

namespace georoute {

/// What applying decisions counted, in either plane.
struct driver_counters {
  /// Decisions with a side effect (a mark, a refresh asked of an endpoint
  /// manager), those whose side effects all completed (the mark confirmed,
  /// the refresh answered or failed), and those made after the operation's
  /// budget or deadline ended. Once the engine is quiet, decisions ==
  /// completed, whatever the callers did meanwhile.
  uint64_t decisions = 0;
  uint64_t decisions_completed = 0;
  uint64_t decisions_after_end = 0;
  uint64_t marks = 0;
  /// Account refreshes asked of an endpoint manager. A decision that asks
  /// for a refresh in an engine without one counts nothing here.
  uint64_t refreshes = 0;
  uint64_t session_clears = 0;
  /// Answers that came after their operation ended, whether or not an
  /// abandoned attempt of it was waiting for them.
  uint64_t late_answers = 0;
  /// Timer messages armed: a paused next attempt, the deadline queue's
  /// timer.
  uint64_t timers_armed = 0;
};

/// Who decided, for the side effects' logs and counters.
struct effect_origin {
  /// The failure behind the decision (for the location cache's log); none
  /// for a decision with no answer behind it.
  const transport::outcome* why = nullptr;
  /// Appended to the mark's reason: " (router)", " (metadata)".
  const char* plane = "";
  /// Whether the location cache logs marks at all (the reason is built only
  /// then).
  bool log_reason = false;
  /// Where a session clear goes, and the name-based collection it clears;
  /// no clear without both.
  caf::actor session_sink;
  std::string session_name;
  /// The operation's budget or deadline had ended (or the operation had).
  bool after_end = false;
};

/// Applies `fx`: marks at once in the actor's own snapshot and in the
/// location cache, clears a session, asks the endpoint manager for a
/// refresh. When `after_refresh` is given and a refresh is asked, it runs
/// once the refresh answered (or failed) and the location cache's current
/// table was taken (see `take_current_table`), and this returns true;
/// otherwise it is not called and this returns false (no refresh: the
/// caller goes on itself).
///
/// `Self`'s state has `counts` (driver_counters), `snap` and
/// `with.locations` / `with.endpoints`.
template <class Self, class AfterRefresh>
bool apply_effects(Self* self, const loop_effects& fx,
                   const effect_origin& from, AfterRefresh after_refresh) {
  auto& st = self->state;
  auto& c = st.counts;
  if (fx.clear_session && from.session_sink && !from.session_name.empty()) {
    ++c.session_clears;
    caf::anon_send(from.session_sink, clear_session_atom_v, from.session_name);
  }
  bool mark = fx.marks();
  bool refresh = fx.refresh_account && st.with.endpoints;
  if (!mark && !refresh) return false;
  ++c.decisions;
  if (from.after_end) ++c.decisions_after_end;
  auto pending = std::make_shared<int>(int{mark} + int{refresh});
  auto one_done = [self, pending] {
    if (--*pending == 0) ++self->state.counts.decisions_completed;
  };
  if (mark) {
    ++c.marks;
    std::string reason;
    if (from.why != nullptr && from.log_reason)
      reason = describe_outcome(*from.why) + from.plane;
    mark_region(self, fx.mark_endpoint, fx.mark_read, fx.mark_write, one_done,
                std::move(reason));
  }
  if (!refresh) return false;
  ++c.refreshes;
  constexpr bool waits =
      !std::is_same_v<std::decay_t<AfterRefresh>, std::nullptr_t>;
  auto go_on = [self, one_done, after_refresh] {
    one_done();
    if constexpr (waits) take_current_table(self, after_refresh);
  };
  auto answered = [go_on](auto&& handle) {
    handle.then([go_on](const database_account&) { go_on(); },
                [go_on](const caf::error&) { go_on(); });
  };
  if (fx.fresh_refresh)
    answered(self->request(st.with.endpoints, caf::infinite, refresh_atom_v,
                           fresh_atom_v));
  else
    answered(self->request(st.with.endpoints, caf::infinite, refresh_atom_v,
                           fx.force_refresh));
  return waits;
}

/// Applies `fx` with nobody waiting for the refresh.
template <class Self>
void apply_effects(Self* self, const loop_effects& fx,
                   const effect_origin& from) {
  apply_effects(self, fx, from, nullptr);
}

/// An attempt still out when its operation ended: its loop (for
/// `settle_late_attempt`) and what the plane needs to send its next ladder
/// step (`Wire`).
template <class Wire>
struct late_attempt {
  attempt_loop loop;
  Wire what;
};

/// What became of a late answer (`late_attempts::settle`).
template <class Wire>
struct late_settlement {
  /// An abandoned attempt was waiting for this answer.
  bool tracked = false;
  /// Send its next ladder step (then file it again under the same key).
  std::optional<attempt_plan> resend;
  /// Otherwise the side effects its failure asks for.
  loop_effects effects;
  /// The entry, taken out of the store.
  std::optional<late_attempt<Wire>> entry;
};

/// The attempts of ended operations still out, by (operation, arm): at most
/// one request is out per key.
template <class Wire>
class late_attempts {
public:
  using key = std::pair<uint64_t, uint32_t>;

  void file(uint64_t op, uint32_t arm, late_attempt<Wire> late) {
    entries_.insert_or_assign(key{op, arm}, std::move(late));
  }

  /// The answer of (op, arm), whose operation ended: takes out its entry
  /// and settles it on `table` (the breaker hears of it through the loop).
  late_settlement<Wire> settle(uint64_t op, uint32_t arm,
                               const attempt_result& r,
                               const location_table* table, policy_time now) {
    late_settlement<Wire> s;
    auto i = entries_.find(key{op, arm});
    if (i == entries_.end()) return s;
    s.tracked = true;
    s.entry = std::move(i->second);
    entries_.erase(i);
    if (table == nullptr) return s;
    auto step = settle_late_attempt(s.entry->loop, r, *table, now);
    s.resend = std::move(step.resend);
    s.effects = step.effects;
    return s;
  }

  size_t size() const { return entries_.size(); }
  void clear() { entries_.clear(); }

private:
  std::map<key, late_attempt<Wire>> entries_;
};

// -- the location cache's tables -------------------------------------------
//
// Both planes resolve on their own snapshot of the location table. Every
// table, whether it answers the subscription or is pushed later, goes
// through `take_table`: applied only if newer than the one held (with the
// actor's unconfirmed marks on top), and then `on_new_table` runs: the
// plane resumes what waited for a first table and forgets what the new one
// no longer has.

/// Applies `s` to the actor's snapshot and runs `on_new_table` if it was
/// newer (the snapshot counts the stale ones).
template <class Self, class OnNewTable>
void take_table(Self* self, const location_snapshot& s,
                OnNewTable on_new_table) {
  if (self->state.snap.apply(s.table, s.version)) on_new_table();
}

/// Monitors the location cache (if the actor has one) and subscribes to its
/// tables; the answer goes through `take_table`.
template <class Self, class OnNewTable>
void subscribe_to_tables(Self* self, OnNewTable on_new_table) {
  auto& st = self->state;
  if (!st.with.locations) return;
  self->monitor(st.with.locations);
  self->request(st.with.locations, caf::infinite, subscribe_atom_v,
                caf::actor_cast<caf::actor>(self))
      .then(
          [=](location_snapshot& snap) {
            take_table(self, snap, on_new_table);
          },
          [](caf::error&) {
            // The location cache went down before it answered: the
            // supervisor re-wires us to its successor.
          });
}

/// A pushed table: taken only from the actor's location cache.
template <class Self, class OnNewTable>
void on_pushed_table(Self* self, const location_snapshot& s,
                     OnNewTable on_new_table) {
  auto& st = self->state;
  if (!st.with.locations ||
      self->current_sender() != st.with.locations.address())
    return; // only the location cache publishes tables
  take_table(self, s, on_new_table);
}

/// Re-wiring: a new location cache counts its versions from scratch, so the
/// actor subscribes afresh. A null handle changes nothing (re-wiring names
/// every collaborator; null means "not part of this engine").
template <class Self, class OnNewTable>
void rewire_tables(Self* self, const location_cache_actor& next,
                   OnNewTable on_new_table) {
  auto& st = self->state;
  if (!next || next == st.with.locations) return;
  st.with.locations = next;
  st.snap.reset_source();
  subscribe_to_tables(self, on_new_table);
}

/// The actor is told to exit: every waiting caller gets `err` (the
/// promises of `ops`' values, in `rp`).
template <class Map>
void fail_all(Map& ops, const caf::error& err) {
  for (auto& entry : ops)
    entry.second.rp.deliver(err);
  ops.clear();
}

/// Arms the timer message `Tick{at}` for the deadline queue's next due
/// time, if there is one; counts it in `armed` when given.
template <class Tick, class Self>
void arm_deadline_tick(Self* self, std::optional<deadline_queue::time_point> at,
                       uint64_t* armed = nullptr) {
  if (!at) return;
  auto now = self->clock().now();
  auto delay = *at > now ? *at - now : caf::timespan::zero();
  if (armed != nullptr) ++*armed;
  self->delayed_send(self, delay, Tick{*at});
}

/// Moves operation `op`'s hedge wake-up in `q` from `current` to `at`
/// (nothing: none); returns when to arm a timer, if a new one is needed.
inline std::optional<deadline_queue::time_point>
move_wake(deadline_queue& q, uint64_t op,
          std::optional<deadline_queue::time_point>& current,
          std::optional<deadline_queue::time_point> at) {
  if (current == at) return std::nullopt;
  if (current) q.remove({op, deadline_slot::hedge}, *current);
  current = at;
  if (!at) return std::nullopt;
  return q.add({op, deadline_slot::hedge}, *at);
}

} // namespace georoute
