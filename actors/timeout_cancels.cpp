#include "georoute/actors/timeout_cancels.hpp"

#include "georoute/actors/engine_loop.hpp"

#include <caf/actor_cast.hpp>
#include <caf/actor_clock.hpp>
#include <caf/actor_system.hpp>

namespace georoute {

timeout_cancels::timeout_cancels(caf::actor_system& sys)
    : on_loop_clock_(engine_loop_io(sys) != nullptr) {
  if (!on_loop_clock_) pending_.reserve(batch);
}

void timeout_cancels::cancel(caf::local_actor* self,
                             const caf::strong_actor_ptr& caller,
                             caf::message_id id) {
  if (on_loop_clock_) {
    self->clock().cancel_request_timeout(
        caf::actor_cast<caf::abstract_actor*>(caller), id);
    return;
  }
  pending_.emplace_back(caf::actor_cast<caf::actor_addr>(caller), id);
  if (pending_.size() >= batch) flush(self);
}

void timeout_cancels::flush(caf::local_actor* self) {
  for (auto& [addr, id] : pending_)
    if (auto caller = caf::actor_cast<caf::strong_actor_ptr>(addr))
      self->clock().cancel_request_timeout(
          caf::actor_cast<caf::abstract_actor*>(caller), id);
  pending_.clear();
}

} // namespace georoute
