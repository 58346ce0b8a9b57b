#pragma once

// Which scheduler the actor systems of the georoute program (drill, bench)
// and of the integration fixtures run on: the engine loop
// (actors/engine_loop.hpp) or CAF's default scheduler.
//
// GEOROUTE_ENGINE_LOOP=1 chooses the loop, =0 CAF's default; unset, each
// caller's default applies (the georoute program: the loop; the integration
// fixtures: CAF's default, the scheduler they were written for). The
// program's `--engine-loop=true|false` sets the variable for its own process.

#include "georoute/actors/engine_loop.hpp"

#include <caf/actor_system_config.hpp>
#include <cstdlib>
#include <string_view>

namespace georoute::test {

inline bool engine_loop_chosen(bool fallback) {
  const char* v = std::getenv("GEOROUTE_ENGINE_LOOP");
  if (v == nullptr || *v == '\0') return fallback;
  std::string_view s{v};
  return !(s == "0" || s == "false" || s == "no" || s == "off");
}

/// Loads the engine loop into `cfg` when chosen; returns whether it did.
inline bool load_chosen_scheduler(caf::actor_system_config& cfg,
                                  bool fallback) {
  if (!engine_loop_chosen(fallback)) return false;
  cfg.load<engine_loop>();
  return true;
}

} // namespace georoute::test
