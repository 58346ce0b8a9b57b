#include "georoute/actors/fleet.hpp"

#include "georoute/actors/internal.hpp"
#include "georoute/actors/policy/fleet_subject.hpp"
#include "georoute/actors/policy/location_table.hpp"
#include "georoute/transport/url.hpp"

#include <algorithm>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <chrono>
#include <map>
#include <random>
#include <stdexcept>

namespace georoute {

// -- the inbox ----------------------------------------------------------------

void fleet_inbox::attach(caf::actor_addr target) {
  std::optional<bool> status;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    target_ = target;
    status = last_status_;
  }
  if (auto hdl = caf::actor_cast<caf::actor>(target); hdl && status)
    caf::anon_send(hdl, fleet_link_status{*status});
}

void fleet_inbox::detach(const caf::actor_addr& target) {
  std::lock_guard<std::mutex> guard{mtx_};
  if (target_ == target) target_ = caf::actor_addr{};
}

void fleet_inbox::deliver(fleet_inbound in) {
  caf::actor_addr target;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    target = target_;
  }
  // A weak handle: a fleet actor that is gone gets nothing.
  if (auto hdl = caf::actor_cast<caf::actor>(target))
    caf::anon_send(hdl, std::move(in));
}

void fleet_inbox::link_status(bool connected) {
  caf::actor_addr target;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    target = target_;
    last_status_ = connected;
  }
  if (auto hdl = caf::actor_cast<caf::actor>(target))
    caf::anon_send(hdl, fleet_link_status{connected});
}

namespace {

// The self-timer, with the time it was due (its lateness is evidence of a
// starved process).
struct fl_tick {
  caf::actor_clock::time_point due;
};

// The peers had their moment to answer the ask.
struct fl_synced {};

// A probe answered (or failed).
struct fl_probe_done {
  std::string region;
  caf::actor_clock::time_point sent;
  transport::outcome outcome;
};

} // namespace

} // namespace georoute

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(georoute::fl_tick)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(georoute::fl_synced)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(georoute::fl_probe_done)

namespace georoute {

namespace {

std::string new_epoch() {
  std::random_device rd;
  std::mt19937_64 gen{(static_cast<uint64_t>(rd()) << 32) ^ rd()};
  static const char* hex = "0123456789abcdef";
  auto v = gen();
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i) {
    out[static_cast<size_t>(i)] = hex[v & 0xF];
    v >>= 4;
  }
  return out;
}

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct fleet_state {
  fleet_config cfg;
  std::unique_ptr<fleet_health> health;
  std::unique_ptr<fleet_reporter> reporter;
  location_cache_actor locations;
  transport::port_ptr http;
  std::shared_ptr<const location_table> table;
  uint64_t table_version = 0;
  fleet_demotion applied;            // what the location cache was last told
  std::vector<std::string> to_probe; // lapsed verdicts, as of `evaluate`
  std::vector<std::string> marked;   // read regions marked, last we looked
  bool applied_once = false;
  std::map<std::string, caf::actor_clock::time_point> probe_sent; // by key
  std::map<std::string, bool> probing;                            // by key
  bool was_connected = false;
  bool asked = false; // the peers were asked since the link connected
  // The fleet's view is in (see `fleet_sync_atom`), and who waits for it.
  bool synced = false;
  bool sync_due = false;
  std::vector<caf::response_promise> sync_waiters;
  fleet_stats stats;
  static inline const char* name = "georoute.fleet";
};

using self_ptr = caf::stateful_actor<fleet_state>*;

policy_time now_of(self_ptr self) {
  return self->clock().now();
}

// The account's region (as the account spells it) whose token is `token`.
std::string region_of_token(const fleet_state& st, const std::string& token) {
  if (!st.table) return {};
  for (const auto& r : st.table->available_read_regions())
    if (fleet_token(r) == token) return r;
  for (const auto& r : st.table->available_write_regions())
    if (fleet_token(r) == token) return r;
  return {};
}

// A read region this process's own failover newly marked unavailable is
// first-hand evidence against it (metadata reads, which the router does not
// see, mark too).
void note_marks(self_ptr self) {
  auto& st = self->state;
  if (!st.table) return;
  auto now = now_of(self);
  std::vector<std::string> marked;
  for (const auto& r : st.table->available_read_regions()) {
    auto ep = st.table->account_read_endpoint(r);
    if (ep.empty() || !st.table->is_unavailable(ep, op_kind::read, now))
      continue;
    marked.push_back(r);
    if (std::find(st.marked.begin(), st.marked.end(), r) == st.marked.end()) {
      ++st.stats.seen_marks;
      st.reporter->observe(r, fleet_event::marked, now);
      st.health->local_failure(r, now);
    }
  }
  st.marked = std::move(marked);
}

// The fleet's view at `now`, carried to the location cache when it changed.
void evaluate(self_ptr self) {
  auto& st = self->state;
  if (!st.table || !st.table->has_account()) return;
  auto view = st.health->evaluate(st.table->available_read_regions(),
                                  st.table->can_use_multiple_write_locations(),
                                  now_of(self));
  st.to_probe = view.regions_to_probe;
  fleet_demotion next{view.demoted_for_reads, view.demoted_for_writes};
  st.stats.demoted = view.demoted_for_reads;
  if (st.applied_once && next.reads == st.applied.reads &&
      next.writes == st.applied.writes)
    return;
  st.applied = next;
  st.applied_once = true;
  ++st.stats.demotions_sent;
  // Its answer (the version) is not needed: sent anonymously.
  caf::anon_send(st.locations, fleet_atom_v, std::move(next));
}

void send_probe(self_ptr self, const std::string& region) {
  auto& st = self->state;
  auto endpoint = st.table ? st.table->account_read_endpoint(region) : "";
  if (endpoint.empty() || !st.http) return;
  auto key = fleet_region_key(region);
  auto now = self->clock().now();
  st.probing[key] = true;
  st.probe_sent[key] = now;
  ++st.stats.probes;
  transport::attempt req;
  req.kind = transport::attempt_kind::account_read;
  req.endpoint = endpoint;
  req.resend_after_drop = true;
  req.timeout = st.cfg.probe_timeout;
  auto hdl = caf::actor_cast<caf::actor>(self);
  st.http->send(std::move(req), [hdl, region, now](transport::outcome o) {
    caf::anon_send(hdl, fl_probe_done{region, now, std::move(o)});
  });
}

// Probes what waits for one: demoted regions whose verdict lapsed, and the
// regions this process claims down (their probe takes the claim back).
void probe_due(self_ptr self) {
  auto& st = self->state;
  if (!st.table) return;
  auto now = now_of(self);
  auto wanted = st.reporter->claimed();
  wanted.insert(wanted.end(), st.to_probe.begin(), st.to_probe.end());
  for (const auto& region : wanted) {
    auto key = fleet_region_key(region);
    if (st.probing[key]) continue;
    auto last = st.probe_sent.find(key);
    if (last != st.probe_sent.end() &&
        now - last->second < st.cfg.probe_interval)
      continue;
    send_probe(self, region);
  }
}

void on_probe(self_ptr self, fl_probe_done& m) {
  auto& st = self->state;
  auto key = fleet_region_key(m.region);
  st.probing[key] = false;
  auto now = now_of(self);
  bool ok = m.outcome.error == transport::failure::none &&
            m.outcome.status >= 200 && m.outcome.status < 300 &&
            now - m.sent <= st.cfg.probe_timeout;
  if (ok) {
    ++st.stats.probes_ok;
    st.health->probe_succeeded(m.region, now);
    st.reporter->probe_succeeded(m.region, now);
  } else {
    // A probe that waited out the threshold is one more read that did:
    // evidence the claim still holds.
    bool waited = m.outcome.error == transport::failure::timeout ||
                  now - m.sent >= st.cfg.probe_timeout;
    st.health->local_failure(m.region, now);
    st.reporter->observe(m.region,
                         waited ? fleet_event::threshold_wait
                         : m.outcome.error == transport::failure::refused
                             ? fleet_event::refused
                             : fleet_event::error,
                         now);
  }
  evaluate(self);
}

void publish(self_ptr self, const std::string& subject,
             const std::string& payload) {
  auto& st = self->state;
  if (subject.empty()) {
    ++st.stats.publish_refused;
    return;
  }
  if (st.cfg.link->publish(subject, payload))
    ++st.stats.published;
  else
    ++st.stats.publish_refused;
}

// Notices the link's state. Once connected (at start, or after the link
// was down) and once the account's regions are known (a claim names a
// region by its token: before the first account read it would be
// dropped), asks the peers for their claims, so that this process does not
// pay for an incident the fleet already knows. The link says when it
// connects (`fleet_link_status`), the location cache when the regions
// come; the tick looks too. Returns whether the link is connected.
bool check_link(self_ptr self) {
  auto& st = self->state;
  bool connected = st.cfg.link->connected();
  if (connected && !st.was_connected) {
    st.asked = false;
    if (st.cfg.log.enabled(log_level::info))
      st.cfg.log.log(log_level::info, fleet_state::name, "fleet.connected",
                     "the fleet's channel is connected");
  }
  st.was_connected = connected;
  bool regions_known = st.table && !st.table->available_read_regions().empty();
  if (connected && !st.asked && regions_known) {
    st.asked = true;
    if (st.cfg.log.enabled(log_level::info))
      st.cfg.log.log(log_level::info, fleet_state::name, "fleet.asked",
                     "asking the peers for their claims");
    publish(self,
            fleet_sync_subject(st.cfg.fleet, st.cfg.account, st.cfg.reporter),
            "{}");
    if (!st.synced && !st.sync_due) {
      st.sync_due = true;
      self->delayed_send(self, st.cfg.sync_grace, fl_synced{});
    }
  }
  return connected;
}

// The fleet's view is in, or will not come soon: whoever waits goes on.
void sync_done(self_ptr self) {
  auto& st = self->state;
  st.synced = true;
  for (auto& rp : st.sync_waiters)
    rp.deliver(caf::ok_atom_v);
  st.sync_waiters.clear();
}

// Publishes the reports due now.
void publish_due(self_ptr self, policy_time now, bool connected) {
  auto& st = self->state;
  for (auto& out : st.reporter->due(now, wall_ms(), connected)) {
    publish(self,
            fleet_subject(st.cfg.fleet, st.cfg.account, out.region,
                          st.cfg.reporter),
            fleet_payload(out.claim));
    // This process's own claim is one vote here too: its first-hand
    // evidence and one peer's make a verdict (k = 2), where its local
    // failover alone would wait for the read ladder.
    st.health->receive(st.cfg.reporter, out.region, out.claim, now,
                       out.claim.ts_ms);
  }
}

void on_tick(self_ptr self, caf::actor_clock::time_point due) {
  auto& st = self->state;
  auto now = now_of(self);
  st.reporter->timer_fired(due, now);
  bool connected = check_link(self);
  note_marks(self);
  publish_due(self, now, connected);
  evaluate(self);
  probe_due(self);
  auto next = due + st.cfg.tick;
  if (next <= now) next = now + st.cfg.tick; // late: do not fire in a burst
  self->delayed_send(self, next - now, fl_tick{next});
}

void on_inbound(self_ptr self, fleet_inbound& in) {
  auto& st = self->state;
  ++st.stats.received;
  auto parts = parse_fleet_subject(in.subject, st.cfg.fleet);
  if (!parts || parts->acct != st.cfg.account ||
      parts->rid == st.cfg.reporter) {
    ++st.stats.dropped_subject;
    return;
  }
  auto now = now_of(self);
  if (parts->region == fleet_sync_token) {
    // The ask takes a token from the asker's bucket: a flood of asks is a
    // flood like any other, and the answers count against this process's
    // ten reports a second. Answered at once, not at the next tick: the
    // asker is starting, and its data requests wait for the answers.
    if (st.health->asked(parts->rid, now)) {
      st.reporter->resend_claims();
      publish_due(self, now, check_link(self));
    }
    return;
  }
  if (in.oversized) {
    st.health->malformed(parts->rid, now);
    return;
  }
  auto claim = parse_fleet_claim(in.payload);
  if (!claim) {
    st.health->malformed(parts->rid, now);
    return;
  }
  auto region = region_of_token(st, parts->region);
  if (region.empty()) {
    ++st.stats.dropped_region;
    return;
  }
  if (st.health->receive(parts->rid, region, *claim, now, wall_ms()) ==
      fleet_drop::accepted)
    evaluate(self);
}

void on_observed(self_ptr self, const fleet_observations& obs) {
  auto& st = self->state;
  auto now = now_of(self);
  for (const auto& t : obs.tallies) {
    auto add = [&](uint16_t n, fleet_event e) {
      for (uint16_t i = 0; i < n; ++i)
        st.reporter->observe(t.region, e, now);
    };
    st.stats.seen_threshold_waits += t.threshold_waits;
    st.stats.seen_breaker_opened += t.breaker_opened;
    st.stats.seen_refused += t.refused;
    st.stats.seen_errors += t.errors;
    st.stats.seen_successes += t.successes;
    add(t.threshold_waits, fleet_event::threshold_wait);
    add(t.breaker_opened, fleet_event::breaker_opened);
    add(t.refused, fleet_event::refused);
    add(t.errors, fleet_event::error);
    add(t.successes, fleet_event::success);
    // Within one tally the order is lost: a failure beside successes does
    // not end their veto (the region answered in this very interval).
    if (t.threshold_waits + t.breaker_opened + t.refused + t.errors > 0)
      st.health->local_failure(t.region, now);
    if (t.successes > 0) st.health->local_success(t.region, now);
  }
}

void subscribe(self_ptr self) {
  self->request(self->state.locations, caf::infinite, subscribe_atom_v,
                caf::actor_cast<caf::actor>(self))
      .then([=](location_snapshot& snap) {
        auto& s = self->state;
        if (snap.version > s.table_version || !s.table) {
          s.table = snap.table;
          s.table_version = snap.version;
          check_link(self);
        }
      });
}

caf::behavior fleet_impl(self_ptr self, fleet_config cfg,
                         location_cache_actor locations,
                         transport::port_ptr http, caf::actor_addr supervisor) {
  auto& st = self->state;
  st.health = std::make_unique<fleet_health>(cfg.health);
  st.reporter = std::make_unique<fleet_reporter>(new_epoch(), cfg.report);
  st.cfg = std::move(cfg);
  st.locations = std::move(locations);
  st.http = std::move(http);
  if (st.cfg.inbox) st.cfg.inbox->attach(self->address());
  self->attach_functor([inbox = st.cfg.inbox, addr = self->address()] {
    if (inbox) inbox->detach(addr);
  });
  if (supervisor) {
    // The engine's end is ours.
    self->monitor(supervisor);
    self->set_down_handler([=](const caf::down_msg& dm) {
      if (dm.source == supervisor) self->quit(caf::exit_reason::user_shutdown);
    });
  }
  subscribe(self);
  auto first = self->clock().now() + st.cfg.tick;
  self->delayed_send(self, st.cfg.tick, fl_tick{first});
  return {
      [=](snapshot_atom, location_snapshot& snap) {
        auto& s = self->state;
        // Pushed by the location cache only (its subscribers' rule).
        if (self->current_sender() !=
            caf::actor_cast<caf::strong_actor_ptr>(s.locations))
          return;
        if (snap.version <= s.table_version) return;
        s.table = snap.table;
        s.table_version = snap.version;
        note_marks(self);
        check_link(self); // the regions may have just become known
      },
      [=](const engine_wiring& w) {
        auto& s = self->state;
        if (!supervisor || self->current_sender() == nullptr ||
            self->current_sender()->address() != supervisor)
          return;
        if (!w.locations || w.locations == s.locations) return;
        // A new location cache: subscribe to it, and tell it the demotions
        // at the next evaluation (it starts without any).
        s.locations = w.locations;
        s.table_version = 0;
        s.applied_once = false;
        subscribe(self);
      },
      [=](fleet_observations& obs) { on_observed(self, obs); },
      [=](fleet_inbound& in) { on_inbound(self, in); },
      [=](fleet_link_status s) {
        // A first connection that failed: the server refuses or cannot be
        // reached, and nothing is waited for (the channel keeps trying).
        if (!s.connected && !self->state.was_connected) sync_done(self);
        check_link(self);
      },
      [=](fl_synced) { sync_done(self); },
      [=](fleet_sync_atom) {
        auto& s = self->state;
        auto rp = self->make_response_promise();
        if (s.synced)
          rp.deliver(caf::ok_atom_v);
        else
          s.sync_waiters.push_back(std::move(rp));
      },
      [=](fl_tick t) { on_tick(self, t.due); },
      [=](fl_probe_done& m) { on_probe(self, m); },
      [=](stats_atom) {
        auto& s = self->state;
        s.stats.health = s.health->counters();
        s.stats.report = s.reporter->counters();
        s.stats.local_health = s.reporter->local_health();
        return s.stats;
      },
  };
}

} // namespace

// The account's token in subjects: the endpoint host's first label, and its
// port when it is not the scheme's ("acct", "127-8081").
std::string fleet_account_token(const config::settings& s) {
  if (!s.fleet.account.empty()) return s.fleet.account;
  auto parsed = transport::parse_url(s.account_endpoint);
  const auto* u = std::get_if<transport::url>(&parsed);
  if (u == nullptr) return "account";
  auto label = fleet_token(u->host.substr(0, u->host.find('.')));
  if (label.empty()) label = "account";
  bool default_port =
      (u->tls() && u->port == 443) || (!u->tls() && u->port == 80);
  return default_port ? label : label + "-" + std::to_string(u->port);
}

caf::actor spawn_fleet(caf::actor_system& sys, fleet_config cfg,
                       location_cache_actor locations, transport::port_ptr http,
                       caf::actor_addr supervisor) {
  if (!cfg.link) throw std::invalid_argument("fleet actor: no link");
  if (auto p = cfg.health.validate())
    throw std::invalid_argument("fleet health: " + p->what);
  if (auto p = cfg.report.validate())
    throw std::invalid_argument("fleet reports: " + p->what);
  return sys.spawn(fleet_impl, std::move(cfg), std::move(locations),
                   std::move(http), std::move(supervisor));
}

} // namespace georoute
