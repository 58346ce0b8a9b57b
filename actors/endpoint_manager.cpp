#include "georoute/actors/endpoint_manager.hpp"

#include "georoute/actors/internal.hpp"
#include "georoute/actors/policy/account_refresh.hpp"
#include "georoute/messages/error.hpp"
#include "georoute/transport/codecs.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <map>
#include <optional>

namespace georoute {

namespace {

// Messages only this file can name: the background tick, the 5 s switch to
// the regional sweep, a delayed ladder step, an HTTP completion.
struct em_tick {};
struct em_fresh_due {};
struct em_sweep {
  uint64_t fetch = 0;
};
struct em_attempt {
  uint64_t id = 0;
};
struct em_http_done {
  uint64_t id = 0;
  transport::outcome outcome;
};

} // namespace

} // namespace georoute

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(georoute::em_tick)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(georoute::em_fresh_due)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(georoute::em_sweep)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(georoute::em_attempt)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(georoute::em_http_done)

namespace georoute {

namespace {

using manager_impl_actor = endpoint_manager_actor::extend<
    caf::reacts_to<engine_wiring>, caf::reacts_to<em_tick>,
    caf::reacts_to<em_fresh_due>, caf::reacts_to<em_sweep>,
    caf::reacts_to<em_attempt>, caf::reacts_to<em_http_done>>;

using clock_type = caf::actor_clock::clock_type;

// One fetch of the account: a list of candidate endpoints walked by at most
// two walkers (the second starts when the first is slow).
struct fetch_state {
  uint64_t id = 0;
  std::vector<std::string> candidates;
  size_t next_candidate = 0;
  size_t active = 0;
  std::vector<caf::typed_response_promise<database_account>> waiters;
  caf::error last_error;
};

// One HTTP attempt against one endpoint, at one step of the ladder.
struct attempt_state {
  uint64_t fetch_id = 0;
  std::string endpoint;
  size_t step = 0;
};

struct manager_state {
  endpoint_manager_config cfg;
  location_cache_actor locations;
  transport::port_ptr http;
  caf::actor_addr supervisor;
  std::optional<database_account> account;
  std::optional<clock_type::time_point> last_fetch_start;
  std::optional<fetch_state> fetch;
  /// Fresh refreshes waiting for the next fetch to start (see
  /// request_fresh); `fresh_due` when its start is scheduled.
  std::vector<caf::typed_response_promise<database_account>> fresh_waiters;
  bool fresh_due = false;
  std::map<uint64_t, attempt_state> attempts;
  uint64_t next_id = 1;
  endpoint_manager_stats stats;
  /// Failed account reads since the last success (logged: the first one,
  /// then the recovery).
  uint64_t failures_in_row = 0;
  static inline const char* name = "georoute.endpoint_manager";
};

using self_ptr = manager_impl_actor::stateful_pointer<manager_state>;

ladder_choice account_ladder(const manager_state& st) {
  return choose_ladder(st.cfg.ladders, request_kind::account_read);
}

caf::error failure_of(const transport::outcome& o) {
  auto code = classify_outcome(o);
  if (o.error != transport::failure::none)
    return make_error(code, "account read from " + o.endpoint + ": " +
                                o.error_detail);
  std::string what =
      "account read from " + o.endpoint + " answered " +
      std::to_string(o.status) +
      (o.substatus != 0 ? "/" + std::to_string(o.substatus) : std::string{});
  if (code == errc::unauthorized)
    what += ": the account key was rejected; check GEOROUTE_ACCOUNT_KEY or "
            "georoute.key-file";
  else if (code == errc::forbidden)
    what += ": access denied (is the clock of this machine right?)";
  return make_error(code, std::move(what));
}

void start_attempt(self_ptr self, uint64_t attempt_id) {
  auto& st = self->state;
  auto i = st.attempts.find(attempt_id);
  if (i == st.attempts.end()) return;
  transport::attempt req;
  req.kind = transport::attempt_kind::account_read;
  req.endpoint = i->second.endpoint;
  req.resend_after_drop = true;
  const auto& ladder = *account_ladder(st).ladder;
  req.timeout = ladder[std::min(i->second.step, ladder.size() - 1)].timeout;
  ++st.stats.attempts;
  auto hdl = caf::actor_cast<caf::actor>(self);
  st.http->send(std::move(req), [hdl, attempt_id](transport::outcome o) {
    caf::anon_send(hdl, em_http_done{attempt_id, std::move(o)});
  });
}

// Starts one walker on the next candidate; false if none is left.
bool launch_next(self_ptr self) {
  auto& st = self->state;
  auto& f = *st.fetch;
  if (f.next_candidate >= f.candidates.size()) return false;
  auto id = st.next_id++;
  st.attempts.emplace(id,
                      attempt_state{f.id, f.candidates[f.next_candidate++], 0});
  ++f.active;
  start_attempt(self, id);
  return true;
}

std::string names_of(const std::vector<account_region>& regions) {
  std::string out = "[";
  for (const auto& r : regions) {
    if (out.size() > 1) out += ", ";
    out += r.name;
  }
  return out + "]";
}

std::string names_of(const std::vector<std::string>& names) {
  std::string out = "[";
  for (const auto& n : names) {
    if (out.size() > 1) out += ", ";
    out += n;
  }
  return out + "]";
}

std::string first_write_region(const database_account* a) {
  if (a == nullptr || a->writable.empty()) return "(none)";
  return a->writable.front().name;
}

// One line per kind of change (the policy's diff says what changed).
void log_topology(const manager_state& st, const database_account* before,
                  const database_account& after,
                  const topology_change& change) {
  const auto& log = st.cfg.log;
  if (!log.enabled(log_level::info)) return;
  const char* me = manager_state::name;
  if (change.first) {
    log.log(log_level::info, me, "topology.first_account",
            "account " + after.id + ": write regions " +
                names_of(after.writable) + ", read regions " +
                names_of(after.readable) + ", multi-write " +
                (after.enable_multiple_write_locations ? "on" : "off"));
    return;
  }
  if (change.write_region_switched)
    log.log(log_level::warn, me, "topology.write_region_moved",
            "write region moved: " + first_write_region(before) + " -> " +
                first_write_region(&after) + " (write regions now " +
                names_of(after.writable) + ")");
  if (!change.added.empty() || !change.removed.empty())
    log.log(log_level::info, me, "topology.regions_changed",
            "read regions added " + names_of(change.added) + ", removed " +
                names_of(change.removed) + "; now " + names_of(after.readable));
  if (change.multi_write_changed)
    log.log(log_level::info, me, "topology.multi_write",
            std::string{"multi-write switched "} +
                (after.enable_multiple_write_locations ? "on" : "off") +
                " (write regions " + names_of(after.writable) + ")");
}

void log_fetch_result(manager_state& st, const caf::error* failure) {
  const auto& log = st.cfg.log;
  const char* me = manager_state::name;
  if (failure != nullptr) {
    if (st.failures_in_row++ == 0) {
      if (log.enabled(log_level::warn))
        log.log(log_level::warn, me, "account.refresh_failed",
                "account read failed: " + context_of(*failure) +
                    "; the last known topology stays, reads are retried "
                    "(further failures are logged at debug until one "
                    "succeeds)");
    } else if (log.enabled(log_level::debug)) {
      log.log(log_level::debug, me, "account.refresh_failed",
              "account read failed again (" +
                  std::to_string(st.failures_in_row) +
                  " in a row): " + context_of(*failure));
    }
    return;
  }
  if (st.failures_in_row > 0 && log.enabled(log_level::info))
    log.log(log_level::info, me, "account.refresh_recovered",
            "account read succeeded after " +
                std::to_string(st.failures_in_row) + " failed reads");
  st.failures_in_row = 0;
}

void finish_fetch(self_ptr self, caf::expected<database_account> result) {
  auto& st = self->state;
  auto waiters = std::move(st.fetch->waiters);
  st.fetch.reset();
  if (!result) {
    ++st.stats.fetches_failed;
    log_fetch_result(st, &result.error());
    for (auto& w : waiters)
      w.deliver(result.error());
    return;
  }
  ++st.stats.fetches_succeeded;
  log_fetch_result(st, nullptr);
  auto change = diff_accounts(st.account ? &*st.account : nullptr, *result);
  log_topology(st, st.account ? &*st.account : nullptr, *result, change);
  if (change.any()) {
    ++st.stats.topology_changes;
    st.stats.write_region_switches += change.write_region_switched ? 1 : 0;
    st.stats.multi_write_changes += change.multi_write_changed ? 1 : 0;
    st.stats.regions_added += change.added.size();
    st.stats.regions_removed += change.removed.size();
    self->send(st.locations, account_atom_v, *result);
  }
  st.account = *result;
  for (auto& w : waiters)
    w.deliver(*result);
}

void start_fetch(self_ptr self) {
  auto& st = self->state;
  ++st.stats.fetches_started;
  st.last_fetch_start = self->clock().now();
  fetch_state f;
  f.id = st.next_id++;
  f.candidates = sweep_candidates(st.cfg.account_endpoint,
                                  st.account ? &*st.account : nullptr,
                                  st.cfg.preferred_regions);
  st.fetch = std::move(f);
  // Whoever waits for a fetch newer than what they saw gets this one.
  for (auto& w : st.fresh_waiters)
    st.fetch->waiters.push_back(std::move(w));
  st.fresh_waiters.clear();
  launch_next(self);
  self->delayed_send(self, st.cfg.sweep_after, em_sweep{st.fetch->id});
}

// Routes a request through the refresh gate; returns the promise to answer.
caf::result<database_account> request_refresh(self_ptr self, bool force) {
  auto& st = self->state;
  auto since = st.last_fetch_start ? self->clock().now() - *st.last_fetch_start
                                   : clock_type::duration::max();
  switch (decide_refresh(force, st.fetch.has_value(), st.account.has_value(),
                         since, st.cfg.refresh.min_interval)) {
  case refresh_action::skip:
    ++st.stats.refreshes_skipped;
    return *st.account;
  case refresh_action::fetch:
    start_fetch(self);
    [[fallthrough]];
  case refresh_action::join:
    break;
  }
  auto rp = self->make_response_promise<database_account>();
  st.fetch->waiters.push_back(rp);
  return rp;
}

// A fresh refresh: the fetch in flight, a fetch started now, or the next
// fetch, started once `fresh_refresh_spacing` has passed since the last.
caf::result<database_account> request_fresh(self_ptr self) {
  auto& st = self->state;
  auto now = self->clock().now();
  auto spacing = std::min<clock_type::duration>(fresh_refresh_spacing,
                                                st.cfg.refresh.min_interval);
  if (!st.fetch && st.last_fetch_start &&
      now - *st.last_fetch_start < spacing) {
    ++st.stats.refreshes_deferred;
    auto rp = self->make_response_promise<database_account>();
    st.fresh_waiters.push_back(rp);
    if (!st.fresh_due) {
      st.fresh_due = true;
      self->delayed_send(self, *st.last_fetch_start + spacing - now,
                         em_fresh_due{});
    }
    return rp;
  }
  if (!st.fetch) start_fetch(self);
  auto rp = self->make_response_promise<database_account>();
  st.fetch->waiters.push_back(rp);
  return rp;
}

void on_outcome(self_ptr self, uint64_t attempt_id, transport::outcome& o) {
  auto& st = self->state;
  auto i = st.attempts.find(attempt_id);
  if (i == st.attempts.end()) return;
  auto attempt = i->second;
  st.attempts.erase(i);
  if (!st.fetch || st.fetch->id != attempt.fetch_id)
    return; // a walker of a fetch that already ended
  auto& f = *st.fetch;
  if (o.success()) {
    auto account = transport::decode_database_account(o.body);
    std::string refused;
    if (account) {
      refused = refused_topology(st.account ? &*st.account : nullptr, *account);
      if (refused.empty()) {
        finish_fetch(self, std::move(*account));
        return;
      }
    }
    f.last_error = make_error(errc::protocol_violation,
                              "account read from " + attempt.endpoint + ": " +
                                  (account ? refused : account.error().what));
  } else {
    f.last_error = failure_of(o);
    auto code = code_of(f.last_error);
    if (code == errc::unauthorized || code == errc::forbidden) {
      finish_fetch(self, f.last_error); // stops the sweep at once
      return;
    }
    // A timed-out attempt climbs the account-read ladder on the same
    // endpoint.
    auto ladder =
        decide_ladder(account_ladder(st), attempt.step,
                      o.error == transport::failure::timeout, o.status);
    if (ladder.climb) {
      auto delay = ladder.delay;
      auto id = st.next_id++;
      st.attempts.emplace(id, attempt_state{attempt.fetch_id, attempt.endpoint,
                                            attempt.step + 1});
      if (delay.count() > 0)
        self->delayed_send(self, delay, em_attempt{id});
      else
        self->send(self, em_attempt{id});
      return;
    }
  }
  --f.active;
  if (!launch_next(self) && f.active == 0) {
    auto err = f.last_error;
    finish_fetch(self, err);
  }
}

void rewire(self_ptr self, const engine_wiring& w) {
  auto& st = self->state;
  if (!from_supervisor(self, st.supervisor)) return;
  if (w.locations == st.locations) return;
  st.locations = w.locations;
  // A restarted location cache knows no account: tell it ours.
  if (st.locations && st.account)
    self->send(st.locations, account_atom_v, *st.account);
}

manager_impl_actor::behavior_type
endpoint_manager_impl(self_ptr self, endpoint_manager_config cfg,
                      location_cache_actor locations, transport::port_ptr http,
                      caf::actor_addr supervisor) {
  auto& st = self->state;
  st.cfg = std::move(cfg);
  st.locations = std::move(locations);
  st.http = std::move(http);
  st.supervisor = std::move(supervisor);
  self->set_exit_handler([=](caf::exit_msg& msg) {
    if (!msg.reason) return;
    auto& st = self->state;
    if (st.fetch) {
      auto err = stopped_error(
          "the endpoint manager (georoute.endpoint_manager)", msg.reason);
      for (auto& w : st.fetch->waiters)
        w.deliver(err);
      st.fetch.reset();
    }
    if (!st.fresh_waiters.empty()) {
      auto err = stopped_error(
          "the endpoint manager (georoute.endpoint_manager)", msg.reason);
      for (auto& w : st.fresh_waiters)
        w.deliver(err);
      st.fresh_waiters.clear();
    }
    self->quit(msg.reason);
  });
  // Initial read, then the background loop.
  start_fetch(self);
  self->delayed_send(self, st.cfg.refresh.background_interval, em_tick{});
  return {
      [=](refresh_atom, bool force) -> caf::result<database_account> {
        return request_refresh(self, force);
      },
      [=](refresh_atom, fresh_atom) -> caf::result<database_account> {
        return request_fresh(self);
      },
      [=](em_fresh_due) {
        auto& st = self->state;
        st.fresh_due = false;
        // A fetch that started since took the waiters (start_fetch).
        if (!st.fresh_waiters.empty() && !st.fetch) start_fetch(self);
      },
      [=](account_atom) -> caf::result<database_account> {
        auto& st = self->state;
        if (st.account) return *st.account;
        return request_refresh(self, true);
      },
      [=](stats_atom) { return self->state.stats; },
      [=](const engine_wiring& w) { rewire(self, w); },
      [=](em_tick) {
        auto& st = self->state;
        // Re-arm first: nothing below may stop the loop. Only this actor can
        // send an em_tick, so exactly one tick is ever pending.
        self->delayed_send(self, st.cfg.refresh.background_interval, em_tick{});
        ++st.stats.background_ticks;
        // The tick is the background refresh itself: it fetches unless a fetch
        // is already in flight (the minimum interval gates on-demand requests).
        if (!st.fetch) start_fetch(self);
      },
      [=](em_sweep m) {
        auto& st = self->state;
        // The global endpoint is slow: add a second walker.
        if (st.fetch && st.fetch->id == m.fetch && st.fetch->active < 2)
          launch_next(self);
      },
      [=](em_attempt m) { start_attempt(self, m.id); },
      [=](em_http_done& m) { on_outcome(self, m.id, m.outcome); },
  };
}

} // namespace

endpoint_manager_config
endpoint_manager_config_from(const config::settings& s) {
  endpoint_manager_config cfg;
  cfg.account_endpoint = s.account_endpoint;
  cfg.preferred_regions = s.location.preferred_regions;
  cfg.refresh = s.refresh;
  cfg.ladders = s.http.ladders;
  return cfg;
}

endpoint_manager_actor spawn_endpoint_manager(caf::actor_system& sys,
                                              endpoint_manager_config cfg,
                                              location_cache_actor locations,
                                              transport::port_ptr http,
                                              caf::actor_addr supervisor) {
  return caf::actor_cast<endpoint_manager_actor>(
      sys.spawn(endpoint_manager_impl, std::move(cfg), std::move(locations),
                std::move(http), std::move(supervisor)));
}

} // namespace georoute
