#include "georoute/messages/types.hpp"

#include "georoute/messages/error.hpp"

#include <caf/actor_system_config.hpp>

namespace georoute {

void register_types(caf::actor_system_config& cfg) {
  cfg.add_message_types<caf::id_block::georoute>();
  cfg.add_error_category(error_category, render_error);
}

} // namespace georoute
