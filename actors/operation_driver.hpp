#pragma once

// How operations' attempt loops are carried out, for both planes:
//
//   - `operation_driver<Plane>` (below): the operation table, the next
//     attempt, the primary's answer, waits (a first table, an account
//     refresh), end times, the end of an operation and what it left
//     behind. The retry actor (the metadata plane) runs on it; the request
//     router (the data plane) still carries out its loop itself, with the
//     pieces that follow;
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
  self->request(st.with.endpoints, caf::infinite, refresh_atom_v,
                fx.force_refresh)
      .then([go_on](const database_account&) { go_on(); },
            [go_on](const caf::error&) { go_on(); });
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

// -- the operation driver ----------------------------------------------------
//
// `operation_driver<Plane>` carries out operations' attempt loops: it owns
// the operation table, the end-time and hedge keys in the deadline queue,
// the next attempt's message, waiting for a first table or for an account
// refresh, the primary's answer, the end of an operation (what it still has
// out is abandoned, not forgotten) and the answers that come after it.
// A plane supplies what differs: its part of an operation, the wire, what a
// success and a final failure mean, its hedge machine.
//
// A plane is a small class over its actor:
//
//   using self_ptr;     the actor; its state has `driver` (this), `counts`,
//                       `snap`, `with.locations`, `with.endpoints`,
//                       `with.http` and `stats.attempts`
//   using payload;      the plane's part of an operation; has `rp`, the
//                       caller's response promise
//   using late_wire;    what an abandoned attempt keeps to send its next
//                       ladder step
//   using attempt_msg;  {uint64_t op; uint32_t gen;}: the next attempt
//   using tick_msg;     {time_point due;}: the deadline queue's timer
//   using http_msg;     {uint64_t op; uint32_t arm; transport::outcome}
//   static constexpr end_kind end;   a budget or a hard deadline
//   self_ptr self;
//
//   transport::request wire(const op&, const attempt_plan&);   the primary
//   transport::request wire(const late_wire&, const attempt_plan&);
//   late_wire late_wire_of(const op&);
//   effect_origin origin(const payload& | const late_wire&,
//                        const transport::outcome* why, bool after_end);
//   bool defer_primary(op&);              the hedge holds the primary back
//   void on_sent(uint64_t, op&, const attempt_plan&);   the primary went
//   void on_hedge_due(uint64_t, op&);
//   void on_arm_answer(uint64_t, op&, uint32_t arm, transport::outcome&);
//   void on_primary_success(uint64_t, op&, transport::outcome&);
//   primary_hedge on_primary_failure(uint64_t, op&, const transport::outcome&,
//                                    const loop_step&);
//   void take_held(uint64_t, op&);        the hedge's held answer ends it
//   void on_metadata_step(uint64_t, op&, const loop_step&);
//   void on_final_failure(uint64_t, op&, const transport::outcome&,
//                         const loop_step&);
//   void on_refused(uint64_t, op&, const std::string& why);  no attempt may
//                                         start (the loop's cap)
//   void on_end_reached(uint64_t, op&);   its time ended
//   void abandon_arms(uint64_t, op&);     file the hedge's arms still out
//   void reply(uint64_t, op&, verdict&&); the caller's answer
//   void on_new_table();
//
// The hooks that end an operation do so by calling `finish` (it may also
// keep going: a read-back, a hedge); the driver never touches an operation
// after handing it to such a hook.

/// Where an operation stands between the driver's steps.
enum class op_phase : uint8_t {
  idle,     ///< created, or held by its plane (resolution, a hedge)
  table,    ///< waits for a first location table
  response, ///< waits for an answer: its primary's, or its plane's own
            ///< request (its end time waits for it, as for an attempt)
  backoff,  ///< its next attempt is a message on its way (`gen`)
  refresh,  ///< waits for an account refresh (`waiting_on`, `gen`)
};

/// What the hedge makes of the primary's failure, before its side effects
/// run.
enum class primary_hedge : uint8_t {
  as_loop_says,  ///< the loop's step goes ahead
  take_held,     ///< the hedge's held answer is the operation's
  wait_for_arms, ///< if the loop gives up, a hedge arm may still answer
};

/// One operation the driver carries out.
template <class Payload>
struct driven_op {
  Payload data;
  /// Endpoint choice, ladder, retry policy, attempt count: the one record
  /// of where the primary went and how often.
  std::optional<attempt_loop> loop;
  op_phase phase = op_phase::idle;
  /// The primary's attempt is out (also while the plane's own request is:
  /// a hedge arm's answer may start one while the primary still waits).
  bool primary_out = false;
  /// Which `attempt_msg` or refresh answer may move the operation on: each
  /// wait takes a new one, so a message of an earlier wait does nothing.
  uint32_t gen = 0;
  /// The primary's last attempt timed out and its next ladder step waits
  /// (`phase == backoff`).
  bool climbing = false;
  /// Its budget or deadline has passed (a budget lets the attempt in flight
  /// answer first).
  bool end_reached = false;
  deadline_queue::time_point end_at{};
  std::optional<deadline_queue::time_point> hedge_at;
  /// While waiting for a refresh: the endpoint manager asked (its down
  /// message may come after the re-wiring to its successor), and the
  /// decision's pause before the next attempt.
  caf::actor_addr waiting_on;
  std::chrono::milliseconds resume_after{0};
  /// The failure the operation reports if it ends without success.
  std::optional<transport::outcome> last_failure;
  std::string last_region;
};

template <class Plane>
class operation_driver {
public:
  using self_ptr = typename Plane::self_ptr;
  using payload = typename Plane::payload;
  using late_wire = typename Plane::late_wire;
  using op_type = driven_op<payload>;
  using time_point = deadline_queue::time_point;

  operation_driver() = default;
  operation_driver(const operation_driver&) = delete;
  operation_driver& operator=(const operation_driver&) = delete;

  /// Once, when the actor's behavior is built.
  void bind(self_ptr self) {
    self_ = self;
    plane_.self = self;
  }

  Plane& plane() { return plane_; }

  // -- the operation table

  /// A new operation, ending `end_after` from now; its first attempt is
  /// the plane's to start (`schedule`, `attempt`).
  uint64_t admit(payload data, attempt_loop loop,
                 std::chrono::milliseconds end_after) {
    auto id = next_id_++;
    auto [i, fresh] = ops_.try_emplace(id);
    (void)fresh;
    auto& op = i->second;
    op.data = std::move(data);
    op.loop.emplace(std::move(loop));
    op.end_at = self_->clock().now() + end_after;
    arm(deadlines_.add({id, deadline_slot::end}, op.end_at));
    return id;
  }

  op_type* find(uint64_t id) {
    auto i = ops_.find(id);
    return i == ops_.end() ? nullptr : &i->second;
  }
  size_t live() const { return ops_.size(); }
  size_t late_out() const { return late_.size(); }
  size_t deadlines_tracked() const { return deadlines_.size(); }
  uint64_t timers_pending() const { return deadlines_.timers_pending(); }

  /// The abandoned attempts of ended operations (for a plane's arms).
  late_attempts<late_wire>& late() { return late_; }

  // -- moving an operation on

  /// The next attempt after `delay`, as a message even when there is no
  /// pause (other messages interleave; the attempt cap bounds the loop).
  void schedule(uint64_t id, op_type& op, std::chrono::milliseconds delay) {
    op.phase = op_phase::backoff;
    auto msg = typename Plane::attempt_msg{id, ++op.gen};
    if (delay.count() > 0)
      self_->delayed_send(self_, delay, std::move(msg));
    else
      self_->send(self_, std::move(msg));
  }

  /// An `attempt_msg`: only the latest of its operation's waits counts.
  void on_attempt(uint64_t id, uint32_t gen) {
    auto* op = find(id);
    if (op == nullptr || op->phase != op_phase::backoff || op->gen != gen)
      return;
    attempt(id, *op);
  }

  /// The primary's next attempt, now.
  void attempt(uint64_t id, op_type& op) {
    auto& st = self_->state;
    if (op.end_reached) {
      plane_.on_end_reached(id, op);
      return;
    }
    if (!st.snap.table()) {
      op.phase = op_phase::table;
      table_waiters_.push_back(id);
      return;
    }
    if (plane_.defer_primary(op)) {
      op.phase = op_phase::idle;
      return;
    }
    auto plan = op.loop->next_attempt(*st.snap.table(), self_->clock().now());
    if (!plan) {
      op.phase = op_phase::idle;
      plane_.on_refused(id, op, plan.error().what);
      return;
    }
    op.phase = op_phase::response;
    op.primary_out = true;
    op.climbing = false;
    send(id, 0, plane_.wire(op, *plan));
    plane_.on_sent(id, op, *plan);
  }

  /// Sends one attempt of operation `id` as `arm` (0: the primary; a
  /// plane's hedge arms; an abandoned attempt's next ladder step under its
  /// own arm); its answer comes back as the plane's `http_msg`.
  void send(uint64_t id, uint32_t arm, transport::request req) {
    auto& st = self_->state;
    ++st.stats.attempts;
    auto hdl = caf::actor_cast<caf::actor>(self_);
    st.with.http->send(std::move(req), [hdl, id, arm](transport::outcome o) {
      caf::anon_send(hdl, typename Plane::http_msg{id, arm, std::move(o)});
    });
  }

  /// An `http_msg`.
  void on_http(uint64_t id, uint32_t arm, transport::outcome& o) {
    auto* op = find(id);
    if (op == nullptr) {
      on_late(id, arm, o);
      return;
    }
    if (arm != 0) {
      plane_.on_arm_answer(id, *op, arm, o);
      return;
    }
    on_primary(id, *op, o);
  }

  // -- hedge wake-ups and end times

  /// Moves operation `id`'s hedge wake-up to `at` (nothing: none).
  void set_hedge_wake(uint64_t id, op_type& op, std::optional<time_point> at) {
    arm(move_wake(deadlines_, id, op.hedge_at, at));
  }

  /// A `tick_msg`: ends what is due and wakes the hedges.
  void on_tick(time_point due) {
    auto fired = deadlines_.on_timer(due, self_->clock().now());
    for (auto key : fired.expired) {
      auto* op = find(key.op);
      if (op == nullptr) continue;
      if (key.slot == deadline_slot::end) {
        end_reached(key.op, *op);
      } else {
        op->hedge_at.reset(); // the queue already dropped it
        plane_.on_hedge_due(key.op, *op);
      }
    }
    arm(fired.arm);
  }

  // -- the end

  /// Ends operation `id` with `v`: what it still has out is abandoned (its
  /// answers still mark regions), then the caller is answered.
  template <class Verdict>
  void finish(uint64_t id, Verdict&& v) {
    auto i = ops_.find(id);
    if (i == ops_.end()) return;
    auto& op = i->second;
    abandon(id, op);
    plane_.reply(id, op, std::forward<Verdict>(v));
    deadlines_.remove({id, deadline_slot::end}, op.end_at);
    if (op.hedge_at)
      deadlines_.remove({id, deadline_slot::hedge}, *op.hedge_at);
    ops_.erase(i);
  }

  /// The actor is told to exit: every waiting caller gets `err`.
  void stop(const caf::error& err) {
    for (auto& entry : ops_)
      entry.second.data.rp.deliver(err);
    ops_.clear();
    late_.clear();
    deadlines_.clear();
    table_waiters_.clear();
  }

  // -- collaborators

  /// A newer location table: what waited for a first one goes on.
  void on_new_table() {
    auto waiting = std::move(table_waiters_);
    table_waiters_.clear();
    for (auto id : waiting)
      if (auto* op = find(id); op != nullptr && op->phase == op_phase::table)
        attempt(id, *op);
    plane_.on_new_table();
  }

  /// An endpoint manager went down: the operations waiting for a refresh
  /// it was asked for go on without it, after their decision's pause (as
  /// after a refresh that answered). Returns how many.
  size_t on_endpoints_down(const caf::actor_addr& gone) {
    std::vector<uint64_t> go_on;
    for (auto& [id, op] : ops_)
      if (op.phase == op_phase::refresh && op.waiting_on == gone)
        go_on.push_back(id);
    for (auto id : go_on) {
      auto& op = ops_.at(id);
      schedule(id, op, op.resume_after);
    }
    return go_on.size();
  }

private:
  void arm(std::optional<time_point> at) {
    arm_deadline_tick<typename Plane::tick_msg>(self_, at);
  }

  void end_reached(uint64_t id, op_type& op) {
    op.end_reached = true;
    if (on_end(Plane::end, op.phase == op_phase::response) ==
        end_action::wait_for_attempt)
      return;
    plane_.on_end_reached(id, op);
  }

  // The primary answered while its operation runs.
  void on_primary(uint64_t id, op_type& op, transport::outcome& o) {
    auto& st = self_->state;
    op.phase = op_phase::idle;
    op.primary_out = false;
    if (o.success()) {
      plane_.on_primary_success(id, op, o);
      return;
    }
    op.last_failure = o;
    op.last_region = op.loop->region();
    auto step = op.loop->on_result(attempt_result_of(o), *st.snap.table(),
                                   self_->clock().now(), op.end_reached);
    op.climbing = step.ladder_climb;
    if (step.next == loop_next::refresh_ranges ||
        step.next == loop_next::refresh_collection) {
      plane_.on_metadata_step(id, op, step);
      return;
    }
    auto hedge = plane_.on_primary_failure(id, op, o, step);
    bool take_held = hedge == primary_hedge::take_held;
    auto from = plane_.origin(op.data, &o, op.end_reached);
    if (step.next == loop_next::after_refresh && !take_held) {
      // The next attempt waits for the account refresh, on the table it
      // produced (see take_current_table), bounded by the operation's end
      // time, which can still come; if the endpoint manager goes down
      // meanwhile, the attempt goes ahead without it (on_endpoints_down).
      auto self = self_;
      auto gen = ++op.gen;
      auto resume = [self, id, gen] {
        self->state.driver.resume_after_refresh(id, gen);
      };
      if (apply_effects(self_, step.effects, from, resume)) {
        op.phase = op_phase::refresh;
        op.waiting_on = st.with.endpoints.address();
        op.resume_after = step.delay;
      } else {
        schedule(id, op, step.delay);
      }
      return;
    }
    apply_effects(self_, step.effects, from);
    if (take_held) {
      plane_.take_held(id, op);
      return;
    }
    if (step.next == loop_next::attempt) {
      schedule(id, op, step.delay);
      return;
    }
    if (hedge == primary_hedge::wait_for_arms) return;
    plane_.on_final_failure(id, op, o, step);
  }

public:
  /// The refresh an operation waited for answered (or failed).
  void resume_after_refresh(uint64_t id, uint32_t gen) {
    auto* op = find(id);
    if (op == nullptr || op->phase != op_phase::refresh || op->gen != gen)
      return;
    schedule(id, *op, op->resume_after);
  }

private:
  // What an ended operation still has out goes to `late_`. The primary
  // follows `abandon_primary`: an attempt in flight is settled when it
  // answers; a ladder step pending after a timeout is sent now (a hung
  // region is still found out), unless a budget was spent.
  void abandon(uint64_t id, op_type& op) {
    if (op.loop) {
      bool spent = Plane::end == end_kind::budget && op.end_reached;
      bool climbing = op.phase == op_phase::backoff && op.climbing;
      switch (abandon_primary(op.primary_out, climbing, spent)) {
      case primary_fate::settle_in_flight:
        late_.file(id, 0, {std::move(*op.loop), plane_.late_wire_of(op)});
        break;
      case primary_fate::climb_now:
        climb_late(id, 0, {std::move(*op.loop), plane_.late_wire_of(op)});
        break;
      case primary_fate::nothing:
        break;
      }
    }
    plane_.abandon_arms(id, op);
  }

  // Sends the next ladder step of an abandoned attempt, unless its endpoint
  // is marked meanwhile (the region is known bad) or there is none.
  void climb_late(uint64_t id, uint32_t arm, late_attempt<late_wire> late) {
    auto& st = self_->state;
    if (!st.snap.table()) return;
    auto plan = continue_abandoned_climb(late.loop, *st.snap.table(),
                                         self_->clock().now());
    if (!plan) return;
    resend_late(id, arm, std::move(late), *plan);
  }

  void resend_late(uint64_t id, uint32_t arm, late_attempt<late_wire> late,
                   const attempt_plan& plan) {
    auto req = plane_.wire(late.what, plan);
    late_.file(id, arm, std::move(late));
    send(id, arm, std::move(req));
  }

  // An attempt of an ended operation answered: dropped, but a failure still
  // marks its region, or a timeout climbs its ladder (`settle_late_attempt`).
  void on_late(uint64_t id, uint32_t arm, const transport::outcome& o) {
    auto& st = self_->state;
    ++st.counts.late_answers;
    auto s = late_.settle(id, arm, attempt_result_of(o), st.snap.table().get(),
                          self_->clock().now());
    if (!s.tracked) return;
    if (s.resend) {
      resend_late(id, arm, std::move(*s.entry), *s.resend);
      return;
    }
    apply_effects(self_, s.effects, plane_.origin(s.entry->what, &o, true));
  }

  self_ptr self_ = nullptr;
  Plane plane_;
  std::map<uint64_t, op_type> ops_;
  deadline_queue deadlines_;
  late_attempts<late_wire> late_;
  std::vector<uint64_t> table_waiters_;
  uint64_t next_id_ = 1;
};

} // namespace georoute
