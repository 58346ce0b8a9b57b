#pragma once

// `operation_driver<Plane>`: the operation table, the next attempt, the
// primary's answer, waits (a first table, an account refresh), end times,
// the end of an operation and what it left behind, for any plane. The
// retry actor (the metadata plane) and the request router (the data plane)
// run on it. No message from a caller reaches anything here: what was
// decided runs to completion whether the caller still waits or not.

#include "georoute/actors/loop_support.hpp"
#include "georoute/actors/policy/node_pool.hpp"

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace georoute {

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
//   using payload;      the plane's part of an operation (an operation is a
//                       `driven_op<payload>`, which derives from it); has
//                       `rp`, the caller's response promise
//   using late_wire;    what an abandoned attempt keeps to send its next
//                       ladder step
//   using attempt_msg;  {uint64_t op; uint32_t gen;}: the next attempt
//   using tick_msg;     {time_point due;}: the deadline queue's timer
//   using http_msg;     {uint64_t op; uint32_t arm; transport::outcome}
//   static constexpr end_kind end;   a budget or a hard deadline
//   self_ptr self;
//
//   transport::attempt wire(const op&, const attempt_plan&);   the primary
//   transport::attempt wire(const late_wire&, const attempt_plan&);
//   late_wire late_wire_of(const op&);
//   effect_origin origin(const payload& | const late_wire&,
//                        const transport::outcome* why, bool after_end);
//   bool defer_primary(op&);              the hedge holds the primary back
//   void before_attempt(uint64_t, op&);   just before the loop plans one
//   void on_sent(uint64_t, op&, const attempt_plan&);   the primary went
//   bool on_answer(uint64_t, op&, uint32_t arm, transport::outcome&);
//                                         every answer of a live operation,
//                                         first: true if the plane took it
//   void on_hedge_due(uint64_t, op&);
//   void on_arm_answer(uint64_t, op&, uint32_t arm, transport::outcome&);
//   void on_primary_success(uint64_t, op&, transport::outcome&);
//   primary_hedge on_primary_failure(uint64_t, op&, const transport::outcome&,
//                                    const loop_step&);
//   void hedge_takes_over(uint64_t, op&); after the failure's effects: the
//                                         hedge's answer or arms decide
//   void on_metadata_step(uint64_t, op&, const loop_step&);
//   void on_final_failure(uint64_t, op&, const transport::outcome&,
//                         const loop_step&);
//   void on_refused(uint64_t, op&, const std::string& why);  no attempt may
//                                         start (the loop's cap)
//   void on_end_reached(uint64_t, op&);   its time ended
//   void abandon_arms(uint64_t, op&, bool primary_abandoned);
//                                         file the hedge's arms still out
//   void on_late_answer(uint32_t arm, const transport::outcome&);
//                                         an abandoned attempt answered
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
  takes_over,    ///< the hedge decides (`hedge_takes_over`), after the
                 ///< failure's side effects
  wait_for_arms, ///< if the loop gives up, a hedge arm may still answer
};

/// One operation the driver carries out: the plane's part (the base) and
/// the driver's.
template <class Payload>
struct driven_op : Payload {
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

  operation_driver()
      : pool_(std::make_unique<node_pool>(256)),
        ops_(std::less<uint64_t>{}, pool_allocator<entry>{pool_.get()}) {}
  operation_driver(const operation_driver&) = delete;
  operation_driver& operator=(const operation_driver&) = delete;

  /// Once, when the actor's behavior is built.
  void bind(self_ptr self) {
    self_ = self;
    plane_.self = self;
  }

  // -- the operation table

  /// A new operation, ending `end_after` from now, its attempt loop built
  /// from `loop_args`; its first attempt is the plane's to start
  /// (`schedule`, `attempt`).
  template <class... LoopArgs>
  uint64_t admit(payload data, std::chrono::milliseconds end_after,
                 LoopArgs&&... loop_args) {
    auto id = next_id_++;
    auto& op = ops_.try_emplace(id).first->second;
    static_cast<payload&>(op) = std::move(data);
    op.loop.emplace(std::forward<LoopArgs>(loop_args)...);
    op.end_at = self_->clock().now() + end_after;
    arm(deadlines_.add({id, deadline_slot::end}, op.end_at));
    return id;
  }

  op_type* find(uint64_t id) {
    auto i = ops_.find(id);
    return i == ops_.end() ? nullptr : &i->second;
  }
  /// A live operation (it must be one).
  op_type& at(uint64_t id) { return ops_.at(id); }
  /// Calls `f(id, op)` for every live operation (`f` must not end any).
  template <class F>
  void for_each(F&& f) {
    for (auto& [id, op] : ops_)
      f(id, op);
  }
  size_t live() const { return ops_.size(); }
  size_t late_out() const { return late_.size(); }
  size_t deadlines_tracked() const { return deadlines_.size(); }
  size_t deadline_timers_pending() const { return deadlines_.timers_pending(); }

  /// The abandoned attempts of ended operations (for a plane's arms).
  late_attempts<late_wire>& late() { return late_; }

  // -- moving an operation on

  /// The next attempt after `delay`, as a message even when there is no
  /// pause (other messages interleave; the attempt cap bounds the loop).
  void schedule(uint64_t id, op_type& op, std::chrono::milliseconds delay) {
    op.phase = op_phase::backoff;
    auto msg = typename Plane::attempt_msg{id, ++op.gen};
    if (delay.count() > 0) {
      ++self_->state.counts.timers_armed;
      self_->delayed_send(self_, delay, std::move(msg));
    } else
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
    plane_.before_attempt(id, op);
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
  void send(uint64_t id, uint32_t arm, transport::attempt a) {
    auto& st = self_->state;
    ++st.stats.attempts;
    auto hdl = caf::actor_cast<caf::actor>(self_);
    st.with.http->send(std::move(a), [hdl, id, arm](transport::outcome o) {
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
    if (plane_.on_answer(id, *op, arm, o)) return;
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
      entry.second.rp.deliver(err);
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
    arm_deadline_tick<typename Plane::tick_msg>(
        self_, at, &self_->state.counts.timers_armed);
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
    bool takes_over = hedge == primary_hedge::takes_over;
    auto from = plane_.origin(op, &o, op.end_reached);
    if (step.next == loop_next::after_refresh && !takes_over) {
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
    if (takes_over) {
      plane_.hedge_takes_over(id, op);
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
    bool filed = false;
    if (op.loop) {
      bool spent = Plane::end == end_kind::budget && op.end_reached;
      bool climbing = op.phase == op_phase::backoff && op.climbing;
      switch (abandon_primary(op.primary_out, climbing, spent)) {
      case primary_fate::settle_in_flight:
        late_.file(id, 0, {std::move(*op.loop), plane_.late_wire_of(op)});
        filed = true;
        break;
      case primary_fate::climb_now:
        filed = climb_late(id, 0, op);
        break;
      case primary_fate::nothing:
        break;
      }
    }
    plane_.abandon_arms(id, op, filed);
  }

  // Sends the next ladder step of the ended operation's primary, unless its
  // endpoint is marked meanwhile (the region is known bad) or there is
  // none. True if it went.
  bool climb_late(uint64_t id, uint32_t arm, op_type& op) {
    auto& st = self_->state;
    if (!st.snap.table()) return false;
    auto plan = continue_abandoned_climb(*op.loop, *st.snap.table(),
                                         self_->clock().now());
    if (!plan) return false;
    resend_late(id, arm, {std::move(*op.loop), plane_.late_wire_of(op)}, *plan);
    return true;
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
    plane_.on_late_answer(arm, o);
    if (s.resend) {
      resend_late(id, arm, std::move(*s.entry), *s.resend);
      return;
    }
    apply_effects(self_, s.effects, plane_.origin(s.entry->what, &o, true));
  }

  using entry = std::pair<const uint64_t, op_type>;

  self_ptr self_ = nullptr;
  Plane plane_;
  // An operation is large; its node is reused (a few hundred kept).
  std::unique_ptr<node_pool> pool_;
  std::map<uint64_t, op_type, std::less<uint64_t>, pool_allocator<entry>> ops_;
  deadline_queue deadlines_;
  late_attempts<late_wire> late_;
  std::vector<uint64_t> table_waiters_;
  uint64_t next_id_ = 1;
};

} // namespace georoute
