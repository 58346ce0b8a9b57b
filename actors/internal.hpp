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

#include "messages/error.hpp"
#include "messages/interfaces.hpp"

#include <caf/actor_addr.hpp>
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

} // namespace georoute

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(georoute::engine_wiring)
