#pragma once

// The deadlines of an actor's live operations, served by one timer.
//
// An actor that bounds each operation by a deadline (the router's operation
// budget, the retry actor's hard deadline) must not register a timer per
// operation: CAF 0.17 cannot cancel a delayed message, so a timer per
// operation outlives a fast operation by the whole deadline (a minute's
// worth of reads held in the clock, and a stale message to drop later).
// Instead the actor keeps every deadline here and arms one timer message
// for the earliest; when it fires, the queue hands back the operations
// whose deadline has come and the time of the next timer, if one is needed.
//
// With deadlines of one length the earliest only moves forward, so a single
// timer is pending at any time. A deadline earlier than the pending timer
// (a shorter budget after longer ones) needs a timer of its own; the one
// already pending then fires as a no-op. Pure: time is a parameter.
//
// An operation holds up to one entry per slot: when it ends (`end`: the
// router's budget, the retry actor's hard deadline) and when its hedge is
// due (`hedge`). The key says which, so a fired entry needs no decoding.

#include "georoute/actors/policy/node_pool.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace georoute {

/// Which of an operation's times an entry is.
enum class deadline_slot : uint8_t {
  end = 0,   ///< the operation's budget or hard deadline
  hedge = 1, ///< its hedge's next wake-up
};

/// An entry's owner: the operation and which of its times.
struct deadline_key {
  uint64_t op = 0;
  deadline_slot slot = deadline_slot::end;

  friend bool operator==(deadline_key a, deadline_key b) {
    return a.op == b.op && a.slot == b.slot;
  }
  friend bool operator<(deadline_key a, deadline_key b) {
    return a.op != b.op ? a.op < b.op : a.slot < b.slot;
  }
};

/// What an operation's end time is: the data plane's budget, or the
/// metadata plane's hard deadline.
enum class end_kind : uint8_t { budget, hard };

/// What the operation does when its end time comes.
enum class end_action : uint8_t {
  wait_for_attempt, ///< its attempt in flight answers first (its decision
                    ///< runs, and nothing new starts)
  end_now,          ///< it ends at once
};

/// A budget lets the attempt in flight finish, so that its failover decision
/// is made on what it saw; a hard deadline ends the operation at once (its
/// attempt is abandoned, and settled when it answers). Anything else that
/// waits (a pause, a refresh, a first table) ends at once either way.
constexpr end_action on_end(end_kind kind, bool attempt_in_flight) {
  return kind == end_kind::budget && attempt_in_flight
             ? end_action::wait_for_attempt
             : end_action::end_now;
}

/// An operation's budget: the request's own when it names one (> 0), else
/// the engine's.
constexpr std::chrono::milliseconds
effective_budget(std::chrono::milliseconds requested,
                 std::chrono::milliseconds engine) {
  return requested.count() > 0 ? requested : engine;
}

class deadline_queue {
public:
  using time_point = std::chrono::steady_clock::time_point;

  /// What a fired timer yields.
  struct fired {
    /// Entries whose time has come, earliest first; no longer held.
    std::vector<deadline_key> expired;
    /// Arm a timer for this time (nothing when no timer is needed).
    std::optional<time_point> arm;
  };

  /// Holds `key`'s time `at`; returns when to arm a timer, if a new one
  /// is needed (no pending timer is due at or before `at`).
  std::optional<time_point> add(deadline_key key, time_point at);

  /// Forgets `key`'s time (the operation ended first, the hedge moved). No
  /// timer changes: a pending one fires and finds nothing, or the next one.
  void remove(deadline_key key, time_point at);

  /// The timer armed for `due` fired at `now`.
  fired on_timer(time_point due, time_point now);

  /// Deadlines held.
  size_t size() const { return deadlines_.size(); }
  bool empty() const { return deadlines_.empty(); }
  /// Timer messages armed and not yet fired.
  uint64_t timers_pending() const { return pending_; }
  /// Forgets every deadline (the actor stops; its timers fire into nothing).
  void clear() { deadlines_.clear(); }

private:
  std::optional<time_point> arm_for_earliest();

  using entry = std::pair<time_point, deadline_key>;
  // Entries come and go with every operation: their nodes are reused.
  std::unique_ptr<node_pool> pool_ = std::make_unique<node_pool>();
  std::set<entry, std::less<entry>, pool_allocator<entry>> deadlines_{
      std::less<entry>{}, pool_allocator<entry>{pool_.get()}};
  /// Due times of the timers armed and not fired, earliest first.
  std::multiset<time_point> armed_;
  uint64_t pending_ = 0;
};

} // namespace georoute
