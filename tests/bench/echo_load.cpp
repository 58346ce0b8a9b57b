#include "tests/bench/echo_load.hpp"

#include "georoute/actors/timeout_cancels.hpp"

#include <caf/all.hpp>

namespace georoute::bench {

namespace {

struct echo_state {
  timeout_cancels cancels;
  static inline const char* name = "georoute.bench.echo";
};

route_actor::behavior_type
echo(route_actor::stateful_pointer<echo_state> self) {
  self->state.cancels = timeout_cancels{self->home_system()};
  return {
      [self](route_atom, data_request&) -> caf::result<data_response> {
        auto rp = self->make_response_promise<data_response>();
        data_response r;
        r.status = 200;
        self->state.cancels.answer(self, rp, std::move(r));
        return rp;
      },
  };
}

} // namespace

echo_driver::echo_driver(size_t threads)
    : cfg_(threads, false), sys_(cfg_), echo_(sys_.spawn(echo)) {}

echo_driver::~echo_driver() {
  caf::anon_send_exit(echo_, caf::exit_reason::user_shutdown);
}

std::unique_ptr<caller_load>
echo_driver::start_load(const data_request& req, size_t in_flight,
                        event_log& log, std::chrono::milliseconds timeout) {
  return start_callers(sys_, echo_, req, in_flight, log, timeout);
}

} // namespace georoute::bench
