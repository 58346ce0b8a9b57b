// What the router tells the fleet actor (actors/fleet.hpp): per region, how
// its own requests fared. Only with region health shared; otherwise every
// function here returns at its first line.

#include "georoute/actors/router_state.hpp"

#include <algorithm>

namespace georoute::router_detail {

namespace {

// Each count stops here between two flushes: the sender's rules need a few
// events per window, not the traffic.
constexpr uint16_t tally_cap = 16;

void bump(uint16_t& n) {
  if (n < tally_cap) ++n;
}

} // namespace

void fleet_note(router_state& st, const std::string& region, fleet_event e) {
  if (!st.cfg.fleet || region.empty()) return;
  auto i =
      std::find_if(st.fleet_tallies.begin(), st.fleet_tallies.end(),
                   [&](const fleet_tally& t) { return t.region == region; });
  if (i == st.fleet_tallies.end()) {
    st.fleet_tallies.push_back(fleet_tally{region});
    i = std::prev(st.fleet_tallies.end());
  }
  switch (e) {
  case fleet_event::threshold_wait:
    bump(i->threshold_waits);
    break;
  case fleet_event::breaker_opened:
  case fleet_event::marked: // the fleet actor sees marks itself
    bump(i->breaker_opened);
    break;
  case fleet_event::refused:
    bump(i->refused);
    break;
  case fleet_event::error:
    bump(i->errors);
    break;
  case fleet_event::success:
    bump(i->successes);
    break;
  }
}

void fleet_answer(router_state& st, data_payload& op, const std::string& region,
                  const transport::outcome& o, clock_type::duration took) {
  if (!st.cfg.fleet) return;
  bool read = access_of(op.req.op) == op_kind::read;
  bool slow = took >= st.cfg.fleet_threshold;
  if (read && slow && !op.fleet_waited) {
    // Once per read: its hedge may have counted the wait already.
    op.fleet_waited = true;
    fleet_note(st, region, fleet_event::threshold_wait);
  }
  if (o.error == transport::failure::refused) {
    fleet_note(st, region, fleet_event::refused);
  } else if (o.error != transport::failure::none || o.status == 408 ||
             o.status >= 500) {
    fleet_note(st, region, fleet_event::error);
  } else if (o.success() && !slow) {
    fleet_note(st, region, fleet_event::success);
  }
}

void fleet_flush(self_ptr self) {
  auto& st = self->state;
  if (!st.cfg.fleet) return;
  if (!st.fleet_tallies.empty()) {
    fleet_observations obs;
    obs.tallies.swap(st.fleet_tallies);
    caf::anon_send(st.cfg.fleet, std::move(obs));
  }
  self->delayed_send(self, st.cfg.fleet_flush, rt_fleet_flush{});
}

// The startup wait: a process started during an incident the fleet already
// knows learns of it before its first reads go out. The fleet actor answers
// once its channel connected and the peers had a moment to answer its ask
// (or at once when the first connection failed); the request's timeout is
// the bound. Either way the operations that waited go on, in order.
void close_fleet_gate(self_ptr self) {
  auto& st = self->state;
  if (!st.cfg.fleet || st.cfg.fleet_startup_wait.count() <= 0) return;
  st.fleet_gate = true;
  auto open = [self] {
    auto& s = self->state;
    if (!s.fleet_gate) return;
    s.fleet_gate = false;
    auto waiting = std::move(s.fleet_gate_waiters);
    s.fleet_gate_waiters.clear();
    for (auto id : waiting)
      if (s.driver.find(id) != nullptr) resolve_collection(self, id, false);
  };
  self->request(st.cfg.fleet, st.cfg.fleet_startup_wait, fleet_sync_atom_v)
      .then([open](caf::ok_atom) { open(); }, [open](caf::error&) { open(); });
}

bool park_at_fleet_gate(self_ptr self, uint64_t id) {
  auto& st = self->state;
  if (!st.fleet_gate) return false;
  st.fleet_gate_waiters.push_back(id);
  return true;
}

} // namespace georoute::router_detail
