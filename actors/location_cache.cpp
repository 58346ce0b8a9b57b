#include "actors/location_cache.hpp"

#include "actors/internal.hpp"
#include "config/settings.hpp"

#include <algorithm>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <memory>
#include <vector>

namespace georoute {

namespace {

struct cache_state {
  std::shared_ptr<const location_table> table;
  uint64_t version = 0;
  std::vector<caf::actor> subscribers;
  static inline const char* name = "georoute.location_cache";
};

// The cache depends on nobody, but the supervisor tells everyone about a
// restart: the wiring is accepted and ignored.
using cache_impl_actor =
    location_cache_actor::extend<caf::reacts_to<engine_wiring>>;

using self_ptr = cache_impl_actor::stateful_pointer<cache_state>;

policy_time now_of(self_ptr self) {
  return self->clock().now();
}

void publish(self_ptr self, location_table next) {
  auto& st = self->state;
  st.table = std::make_shared<const location_table>(std::move(next));
  ++st.version;
  location_snapshot snap{st.table, st.version};
  // Sent under our own identity, not anonymously: subscribers accept
  // snapshots from this actor only.
  for (const auto& sub : st.subscribers)
    caf::unsafe_send_as(self, sub, snapshot_atom_v, snap);
}

cache_impl_actor::behavior_type
location_cache_impl(self_ptr self, location_table_options options) {
  self->state.table =
      std::make_shared<const location_table>(std::move(options));
  self->set_down_handler([=](const caf::down_msg& dm) {
    auto& subs = self->state.subscribers;
    subs.erase(std::remove_if(subs.begin(), subs.end(),
                              [&](const caf::actor& a) {
                                return a.address() == dm.source;
                              }),
               subs.end());
  });
  return {
      [=](account_atom, const database_account& account) {
        publish(self, self->state.table->with_account(account, now_of(self)));
      },
      [=](resolve_atom, const resolve_input& in) {
        return self->state.table->resolve(in, now_of(self));
      },
      [=](mark_atom, const region_mark& m) {
        publish(self, self->state.table->with_mark(m.endpoint, m.read, m.write,
                                                   now_of(self)));
        return self->state.version;
      },
      [=](subscribe_atom, caf::actor& sub) {
        auto& st = self->state;
        if (std::find(st.subscribers.begin(), st.subscribers.end(), sub) ==
            st.subscribers.end()) {
          self->monitor(sub);
          st.subscribers.push_back(sub);
        }
        return location_snapshot{st.table, st.version};
      },
      [=](refresh_atom) {
        return self->state.table->should_refresh_endpoints(now_of(self))
            .refresh;
      },
      [](const engine_wiring&) {},
  };
}

} // namespace

location_table_options location_options_from(const config::settings& s) {
  location_table_options o;
  o.default_endpoint = s.account_endpoint;
  o.preferred_regions = s.location.preferred_regions;
  o.endpoint_discovery = s.location.endpoint_discovery;
  o.use_multiple_write_locations = s.location.use_multiple_write_locations;
  o.unavailable_expiry = s.location.unavailable_region_expiry;
  return o;
}

location_cache_actor spawn_location_cache(caf::actor_system& sys,
                                          location_table_options options) {
  return caf::actor_cast<location_cache_actor>(
      sys.spawn(location_cache_impl, std::move(options)));
}

} // namespace georoute
