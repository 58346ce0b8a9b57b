#include "georoute/actors/location_cache.hpp"

#include "georoute/actors/internal.hpp"
#include "georoute/config/settings.hpp"

#include <algorithm>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <chrono>
#include <ctime>
#include <map>
#include <memory>
#include <vector>

namespace georoute {

namespace {

// The timer that looks for expired marks (only while one is logged).
struct lc_expiry {};

} // namespace

} // namespace georoute

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(georoute::lc_expiry)

namespace georoute {

namespace {

// A mark as the log knows it: what it covers, when it was last set, why.
struct logged_mark {
  std::string endpoint;
  bool read = false;
  bool write = false;
  policy_time at;
  std::string reason;
};

struct cache_state {
  std::shared_ptr<const location_table> table;
  uint64_t version = 0;
  std::vector<caf::actor> subscribers;
  logger log;
  /// Live marks by normalized endpoint, kept only to log their expiry.
  std::map<std::string, logged_mark> marks;
  bool expiry_timer = false;
  static inline const char* name = "georoute.location_cache";
};

// The cache depends on nobody, but the supervisor tells everyone about a
// restart: the wiring is accepted and ignored.
using cache_impl_actor =
    location_cache_actor::extend<caf::reacts_to<engine_wiring>,
                                 caf::reacts_to<lc_expiry>>;

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

std::string ops_text(bool read, bool write) {
  return read && write ? "reads and writes" : read ? "reads" : "writes";
}

std::string where(const location_table& t, const std::string& endpoint) {
  auto region = t.region_of(endpoint);
  return region.empty() ? endpoint : region + " (" + endpoint + ")";
}

// "2026-12-03T05:55:00Z": the wall-clock time `d` from now.
std::string utc_in(std::chrono::milliseconds d) {
  auto t = std::chrono::system_clock::to_time_t(
      std::chrono::system_clock::now() +
      std::chrono::duration_cast<std::chrono::system_clock::duration>(d));
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Arms the one expiry timer for the earliest logged mark.
void arm_expiry(self_ptr self) {
  auto& st = self->state;
  if (st.expiry_timer || st.marks.empty()) return;
  auto earliest = st.marks.begin()->second.at;
  for (const auto& [key, m] : st.marks)
    earliest = std::min(earliest, m.at);
  auto due = earliest + st.table->options().unavailable_expiry;
  auto now = now_of(self);
  auto wait =
      due > now
          ? std::chrono::duration_cast<std::chrono::milliseconds>(due - now) +
                std::chrono::milliseconds{1}
          : std::chrono::milliseconds{1};
  st.expiry_timer = true;
  self->delayed_send(self, wait, lc_expiry{});
}

// A mark arrived: one warn line when the region becomes unavailable for an
// operation it was available for; a renewal is debug.
void log_mark(self_ptr self, const region_mark& m, bool was_read,
              bool was_write, policy_time now) {
  auto& st = self->state;
  if (!st.log.enabled(log_level::warn)) return; // the least any line needs
  bool fresh = (m.read && !was_read) || (m.write && !was_write);
  auto expiry = st.table->options().unavailable_expiry;
  auto why = m.reason.empty() ? std::string{} : ": " + m.reason;
  if (fresh) {
    st.log.log(log_level::warn, cache_state::name, "region.marked",
               where(*st.table, m.endpoint) + " marked unavailable for " +
                   ops_text(m.read, m.write) + why + "; demoted for " +
                   std::to_string(expiry.count()) + "ms, until " +
                   utc_in(expiry));
  } else if (st.log.enabled(log_level::debug)) {
    st.log.log(log_level::debug, cache_state::name, "region.mark_renewed",
               where(*st.table, m.endpoint) + " mark for " +
                   ops_text(m.read, m.write) + " renewed" + why);
  }
  if (!st.log.enabled(log_level::info)) return;
  auto& lm = st.marks[normalize_endpoint(m.endpoint)];
  if (lm.endpoint.empty()) lm.endpoint = m.endpoint;
  lm.read = lm.read || m.read;
  lm.write = lm.write || m.write;
  lm.at = now;
  if (!m.reason.empty()) lm.reason = m.reason;
  arm_expiry(self);
}

// One info line per logged mark that has expired by `now`.
void sweep_expired(self_ptr self, policy_time now) {
  auto& st = self->state;
  const auto& t = *st.table;
  for (auto i = st.marks.begin(); i != st.marks.end();) {
    const auto& m = i->second;
    if (t.is_unavailable(m.endpoint, op_kind::read, now) ||
        t.is_unavailable(m.endpoint, op_kind::write, now)) {
      ++i;
      continue;
    }
    st.log.log(log_level::info, cache_state::name, "region.mark_expired",
               where(t, m.endpoint) + " available again for " +
                   ops_text(m.read, m.write) + ": its mark expired after " +
                   std::to_string(t.options().unavailable_expiry.count()) +
                   "ms");
    i = st.marks.erase(i);
  }
}

// One info line per region the fleet's evidence demotes or stops demoting.
void log_fleet(self_ptr self, const location_table& before,
               const fleet_demotion& d) {
  auto& st = self->state;
  if (!st.log.enabled(log_level::info)) return;
  auto has = [](const std::vector<std::string>& xs, const std::string& r) {
    return std::any_of(xs.begin(), xs.end(),
                       [&](const std::string& x) { return same_region(x, r); });
  };
  auto report = [&](const std::vector<std::string>& was,
                    const std::vector<std::string>& now, const char* ops) {
    for (const auto& r : now)
      if (!has(was, r))
        st.log.log(log_level::info, cache_state::name, "region.fleet_demoted",
                   r + " moved to the end of the " + ops +
                       " order: reports from the fleet agree it is failing");
    for (const auto& r : was)
      if (!has(now, r))
        st.log.log(log_level::info, cache_state::name, "region.fleet_restored",
                   r + " back in its place in the " + ops + " order");
  };
  report(before.fleet_demoted_reads(), d.reads, "read");
  report(before.fleet_demoted_writes(), d.writes, "write");
}

// The expiry timer.
void on_expiry(self_ptr self) {
  self->state.expiry_timer = false;
  sweep_expired(self, now_of(self));
  arm_expiry(self);
}

cache_impl_actor::behavior_type
location_cache_impl(self_ptr self, location_table_options options, logger log) {
  self->state.log = std::move(log);
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
        auto now = now_of(self);
        auto before = self->state.table;
        bool was_read = before->is_unavailable(m.endpoint, op_kind::read, now);
        bool was_write =
            before->is_unavailable(m.endpoint, op_kind::write, now);
        // A mark that expired before the timer noticed: its line first.
        if (!self->state.marks.empty()) sweep_expired(self, now);
        publish(self, before->with_mark(m.endpoint, m.read, m.write, now));
        if (m.read || m.write) log_mark(self, m, was_read, was_write, now);
        return self->state.version;
      },
      [=](fleet_atom, fleet_demotion& d) {
        auto before = self->state.table;
        log_fleet(self, *before, d);
        publish(self, before->with_fleet_demotions(std::move(d.reads),
                                                   std::move(d.writes),
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
      [=](lc_expiry) { on_expiry(self); },
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
                                          location_table_options options,
                                          logger log) {
  return caf::actor_cast<location_cache_actor>(
      sys.spawn(location_cache_impl, std::move(options), std::move(log)));
}

} // namespace georoute
