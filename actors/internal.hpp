#pragma once

// The engine-internal protocol: what the engine's supervisor tells its actors,
// and the helpers every actor uses to fail its waiters with a clear error when
// a collaborator dies or the engine stops. Not part of `messages/`: no
// application sends any of this.
//
// Each actor's implementation runs a typed interface that extends its public
// one (messages/interfaces.hpp) with messages only its own .cpp can name
// (types in an anonymous namespace: timers, HTTP completions) and with
// `engine_wiring`, which it accepts only from the supervisor that spawned it.
// Spawn functions hand out the public handle.

#include "georoute/actors/policy/attempt_loop.hpp"
#include "georoute/messages/error.hpp"
#include "georoute/messages/interfaces.hpp"
#include "georoute/transport/outcome.hpp"

#include <caf/actor_addr.hpp>
#include <caf/actor_cast.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/error.hpp>
#include <caf/exit_reason.hpp>
#include <caf/fwd.hpp>
#include <string>

namespace georoute {

/// Every collaborator as the supervisor last spawned it. Sent to every actor
/// after a restart ("re-wiring"); a null handle means "not part of this
/// engine". Accepted only from `supervisor`.
struct engine_wiring {
  caf::actor_addr supervisor;
  location_cache_actor locations;
  endpoint_manager_actor endpoints;
  retry_actor retry;
  router_actor router;
  collection_cache_actor collections;
  pkrange_cache_actor pkranges;
  query_plan_actor plans;
};

/// The error for work that was waiting on `who` (an actor's name, e.g.
/// "georoute.retry") when it went down with `reason`: "the retry actor
/// (georoute.retry) exited (<reason>) while <what> was in flight; the next
/// request starts afresh".
caf::error collaborator_down(const std::string& who, const caf::error& reason,
                             const std::string& what);

/// The error every waiter gets when its actor is told to exit: "engine
/// stopped" for a regular stop (`user_shutdown`), otherwise the actor's name
/// and the exit reason.
caf::error stopped_error(const std::string& who, const caf::error& reason);

/// Renders an exit reason for people ("user_shutdown", "kill", ...).
std::string describe_reason(const caf::error& reason);

/// An attempt's outcome for people: "503/3", "refused (connection
/// refused)".
std::string describe_outcome(const transport::outcome& o);

/// The text of an operation's last underlying failure: "503 from East US
/// (http://...) after 3 attempts for <what>; <why>".
std::string failure_text(const transport::outcome& last,
                         const std::string& region, uint32_t attempts,
                         const std::string& what, const std::string& why);

/// What the attempt loop needs of an attempt's outcome.
attempt_result attempt_result_of(const transport::outcome& o);

/// True if the message being handled comes from `supervisor` (and there is
/// one): the only sender whose re-wiring an actor accepts.
template <class Self>
bool from_supervisor(Self* self, const caf::actor_addr& supervisor) {
  return supervisor && self->current_sender() == supervisor;
}

/// Takes out of `entries` (a map whose values name, in `via`, the
/// collaborator running their work) every entry that `gone` ran, or every
/// entry if `gone` is null, and hands each to `fail`; returns how many.
/// A down message is matched this way, not against the current handle: the
/// supervisor's re-wiring to a successor comes from another actor than the
/// down message and may arrive first.
template <class Map, class Fail>
size_t take_entries_of(Map& entries, const caf::actor_addr& gone, Fail fail) {
  size_t taken = 0;
  for (auto i = entries.begin(); i != entries.end();) {
    if (gone && i->second.via != gone) {
      ++i;
      continue;
    }
    auto entry = std::move(i->second);
    i = entries.erase(i);
    fail(entry);
    ++taken;
  }
  return taken;
}

/// Re-targets `current` to `next` (if it is a new actor) and monitors it.
template <class Self, class Handle>
void retarget(Self* self, Handle& current, const Handle& next) {
  if (!next || next == current) return;
  current = next;
  self->monitor(current);
}

/// Marks `endpoint` in the subscriber's own snapshot at once and in the
/// location cache; the local mark is re-applied on every newer snapshot
/// until the cache confirms it (CAF keeps the order between two actors, so
/// every push after the confirmation carries the mark). `Self` is a
/// stateful actor whose state has `snap` (snapshot_holder) and
/// `with.locations`.
/// `done` runs once the mark is confirmed (or the cache failed to answer).
/// `reason` (the failure that caused the mark) goes to the cache's log.
template <class Self, class Done>
void mark_region(Self* self, const std::string& endpoint, bool read, bool write,
                 Done done, std::string reason = {}) {
  auto& st = self->state;
  auto seq = st.snap.mark(endpoint, read, write, self->clock().now());
  if (!st.with.locations) {
    st.snap.confirm(seq);
    done();
    return;
  }
  self->request(st.with.locations, caf::infinite, mark_atom_v,
                region_mark{endpoint, read, write, std::move(reason)})
      .then(
          [=](uint64_t) {
            self->state.snap.confirm(seq);
            done();
          },
          [=](caf::error&) {
            self->state.snap.confirm(seq);
            done();
          });
}

template <class Self>
void mark_region(Self* self, const std::string& endpoint, bool read, bool write,
                 std::string reason = {}) {
  mark_region(
      self, endpoint, read, write, [] {}, std::move(reason));
}

/// Takes the location cache's current table into the subscriber's own
/// snapshot, then runs `done` (also when the cache fails to answer or there
/// is none). Called between an account refresh and the retry that waited
/// for it: the endpoint manager answers once it has sent the account to the
/// cache, whose push of the new table comes a hop later, so a retry
/// resolved at once would use the table from before the refresh. This
/// request queues behind the account in the cache's mailbox, so its answer
/// has it. `Self` as for `mark_region`.
template <class Self, class Done>
void take_current_table(Self* self, Done done) {
  auto& st = self->state;
  if (!st.with.locations) {
    done();
    return;
  }
  self->request(st.with.locations, caf::infinite, subscribe_atom_v,
                caf::actor_cast<caf::actor>(self))
      .then(
          [=](location_snapshot& snap) {
            self->state.snap.apply(snap.table, snap.version);
            done();
          },
          [=](caf::error&) { done(); });
}

} // namespace georoute

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(georoute::engine_wiring)
