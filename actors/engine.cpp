#include "georoute/actors/engine.hpp"

#include "georoute/actors/collection_cache.hpp"
#include "georoute/actors/endpoint_manager.hpp"
#include "georoute/actors/engine_loop.hpp"
#include "georoute/actors/fleet.hpp"
#include "georoute/actors/home_thread.hpp"
#include "georoute/actors/internal.hpp"
#include "georoute/actors/location_cache.hpp"
#include "georoute/actors/pkrange_cache.hpp"
#include "georoute/actors/policy/hedging.hpp"
#include "georoute/actors/query_plan.hpp"
#include "georoute/actors/retry.hpp"
#include "georoute/actors/router.hpp"
#include "georoute/config/options.hpp"
#include "georoute/messages/error.hpp"
#include "georoute/transport/http_client.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <deque>
#include <map>
#include <mutex>

namespace georoute {

namespace {

// The port every actor of the engine sends through. `close` (at stop, once
// the actors are gone) destroys the Beast client it owns, which joins its io
// threads and ends every connection; anything sent afterwards completes at
// once with a reset "engine stopped".
class closable_port : public transport::port {
public:
  closable_port(transport::port_ptr inner,
                std::shared_ptr<transport::http_client> client,
                std::shared_ptr<home_thread> home)
      : inner_(std::move(inner)), client_(std::move(client)),
        home_(std::move(home)) {}

  void send(transport::attempt req, completion done) override {
    {
      std::lock_guard<std::mutex> guard{mtx_};
      if (inner_) {
        inner_->send(std::move(req), std::move(done));
        return;
      }
    }
    transport::outcome o;
    o.error = transport::failure::reset;
    o.error_detail = "engine stopped";
    o.endpoint = req.endpoint;
    done(std::move(o));
  }

  void close() {
    transport::port_ptr inner;
    std::shared_ptr<transport::http_client> client;
    {
      std::lock_guard<std::mutex> guard{mtx_};
      inner = std::move(inner_);
      client = std::move(client_);
    }
    inner.reset();
    // Joins the io threads, or closes the sockets on the loop or the home
    // thread that drives them; in-flight requests complete.
    client.reset();
    // The home thread drove the client's sockets until here; a router still
    // alive (a stop that timed out) goes on on CAF's workers.
    if (home_) home_->stop();
  }

private:
  std::mutex mtx_;
  transport::port_ptr inner_;
  std::shared_ptr<transport::http_client> client_;
  const std::shared_ptr<home_thread> home_;
};

enum class part {
  locations,
  endpoints,
  router,
  retry,
  collections,
  pkranges,
  plans
};

constexpr part all_parts[] = {
    part::locations,   part::endpoints, part::router, part::retry,
    part::collections, part::pkranges,  part::plans};

} // namespace

namespace detail {

struct engine_state {
  caf::actor_system* sys = nullptr;
  config::settings settings;
  engine_options options;
  logger log;
  std::shared_ptr<closable_port> port;
  /// Where the router runs, or null (see `engine_options::home_thread`).
  std::shared_ptr<home_thread> home;
  caf::actor supervisor;
  mutable std::mutex mtx;
  engine_wiring wiring;
  engine_stats stats;
  bool running = true;
  /// The fleet actor, with fleet health on (not restarted: if it dies the
  /// process goes on detecting alone).
  caf::actor fleet;
};

} // namespace detail

namespace {

using detail::engine_state;

// Sent by the actor that closed the port (see `close_port`).
struct port_closed {};

} // namespace

} // namespace georoute

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(georoute::port_closed)

namespace georoute {

namespace {

// The supervisor's own interface: the public one plus what only this file
// sends it (its first message, the port's closing).
using supervisor_impl_actor =
    engine_supervisor_actor::extend<caf::reacts_to<caf::ok_atom>,
                                    caf::reacts_to<port_closed>>;

struct supervisor_state {
  std::shared_ptr<engine_state> shared;
  engine_wiring wiring;
  std::map<part, std::deque<caf::actor_clock::time_point>> restarts;
  std::map<part, bool> alive;
  bool stopping = false;
  bool closing = false;
  std::vector<caf::typed_response_promise<caf::ok_atom>> stop_waiters;
  static inline const char* name = "georoute.engine";
};

using sup_ptr = supervisor_impl_actor::stateful_pointer<supervisor_state>;

const char* name_of(part p) {
  switch (p) {
  case part::locations:
    return "georoute.location_cache";
  case part::endpoints:
    return "georoute.endpoint_manager";
  case part::router:
    return "georoute.router";
  case part::retry:
    return "georoute.retry";
  case part::collections:
    return "georoute.collection_cache";
  case part::pkranges:
    return "georoute.pkrange_cache";
  case part::plans:
    return "georoute.query_plan";
  }
  return "?";
}

caf::actor handle_of(const engine_wiring& w, part p) {
  switch (p) {
  case part::locations:
    return caf::actor_cast<caf::actor>(w.locations);
  case part::endpoints:
    return caf::actor_cast<caf::actor>(w.endpoints);
  case part::router:
    return caf::actor_cast<caf::actor>(w.router);
  case part::retry:
    return caf::actor_cast<caf::actor>(w.retry);
  case part::collections:
    return caf::actor_cast<caf::actor>(w.collections);
  case part::pkranges:
    return caf::actor_cast<caf::actor>(w.pkranges);
  case part::plans:
    return caf::actor_cast<caf::actor>(w.plans);
  }
  return {};
}

// The hedge threshold as the fleet's rules use it (the static one, as the
// hedge of a point read computes it): a read that took this long "waited
// for the threshold", a probe slower than it failed.
std::chrono::milliseconds fleet_threshold_of(const config::settings& s) {
  return static_hedge_threshold(s.hedging, s.http.ladders.partition_failover);
}

// Spawns `p` wired to the collaborators in `w` and records it there. `me` is
// the supervisor: the only sender whose re-wiring the new actor accepts.
void spawn_part(caf::actor_system& sys, const engine_state& shared,
                engine_wiring& w, const caf::actor_addr& me, part p) {
  const auto& s = shared.settings;
  auto http = std::static_pointer_cast<transport::port>(shared.port);
  switch (p) {
  case part::locations:
    w.locations =
        spawn_location_cache(sys, location_options_from(s), shared.log);
    break;
  case part::endpoints: {
    auto cfg = endpoint_manager_config_from(s);
    cfg.sweep_after = shared.options.sweep_after;
    cfg.log = shared.log;
    w.endpoints = spawn_endpoint_manager(sys, cfg, w.locations, http, me);
    break;
  }
  case part::router: {
    // On the first start the caches do not exist yet: the wiring sent once
    // everything is spawned fills them in.
    auto cfg = router_config_from(s);
    cfg.log = shared.log;
    cfg.pipeline.log = shared.log;
    cfg.fleet = shared.fleet;
    cfg.fleet_threshold = fleet_threshold_of(s);
    cfg.fleet_startup_wait = s.fleet.startup_wait;
    w.router = spawn_router(sys, std::move(cfg),
                            {w.locations, w.endpoints, w.collections,
                             w.pkranges, http, w.plans, me},
                            shared.home);
    break;
  }
  case part::retry: {
    auto cfg = retry_config_from(s);
    cfg.log = shared.log;
    w.retry = spawn_retry(
        sys, std::move(cfg),
        {w.locations, w.endpoints, http, w.router, caf::actor{}, me});
    break;
  }
  case part::collections:
    w.collections = spawn_collection_cache(
        sys, w.retry, caf::actor{},
        collection_cache_config{s.collection_cache_size, s.cache_max_waiters},
        me);
    break;
  case part::pkranges: {
    pkrange_cache_config cfg;
    cfg.load_deadline = s.retry.metadata_hard_deadline;
    cfg.capacity = s.pkrange_cache_size;
    cfg.max_waiters = s.cache_max_waiters;
    w.pkranges = spawn_pkrange_cache(sys, w.retry, cfg, me);
    break;
  }
  case part::plans:
    w.plans = spawn_query_plan(sys, w.retry, s.query_plan_cache_size,
                               s.cache_max_waiters, me);
    break;
  }
}

void publish(sup_ptr self) {
  auto& st = self->state;
  std::lock_guard<std::mutex> guard{st.shared->mtx};
  st.shared->wiring = st.wiring;
}

// A restart is allowed while fewer than max_restarts happened within the
// window.
bool may_restart(sup_ptr self, part p) {
  auto& st = self->state;
  const auto& opts = st.shared->options;
  auto now = self->clock().now();
  auto& times = st.restarts[p];
  while (!times.empty() && now - times.front() > opts.restart_window)
    times.pop_front();
  if (times.size() >= opts.max_restarts) return false;
  times.push_back(now);
  return true;
}

// Every actor is gone: close the port, then answer. Closing destroys the
// Beast client, which joins its io threads; that wait must not hold a CAF
// worker (on a one-worker scheduler it would hold the only one), so a
// detached actor -- a thread of its own -- does it and reports back.
void close_port(sup_ptr self) {
  auto& st = self->state;
  if (st.closing) return;
  st.closing = true;
  auto port = st.shared->port;
  caf::actor_addr sup = self->address();
  self->spawn<caf::detached>([port, sup](caf::event_based_actor* closer) {
    port->close();
    closer->send(caf::actor_cast<caf::actor>(sup), port_closed{});
    closer->quit();
  });
}

void all_parts_down(sup_ptr self) {
  auto& st = self->state;
  for (auto p : all_parts)
    if (st.alive[p]) return;
  close_port(self);
}

// The engine is down: the handles go, every stop request is answered and
// the supervisor exits (which monitors and links see).
void engine_down(sup_ptr self) {
  auto& st = self->state;
  // The engine lets go of the supervisor here, not in `stop()`: after a stop
  // by message the program may destroy its actor system before the engine
  // object, and the engine must then have nothing left to touch. (The
  // scheduler holds the actor while this handler runs.)
  caf::actor me;
  {
    std::lock_guard<std::mutex> guard{st.shared->mtx};
    st.shared->running = false;
    st.shared->wiring = engine_wiring{};
    st.shared->fleet = caf::actor{};
    me = std::move(st.shared->supervisor);
  }
  for (auto& rp : st.stop_waiters)
    rp.deliver(caf::ok_atom_v);
  st.stop_waiters.clear();
  self->quit(caf::exit_reason::user_shutdown);
}

void begin_stop(sup_ptr self, const caf::error& reason) {
  auto& st = self->state;
  if (st.stopping) return;
  st.stopping = true;
  // The actors stop in order (their waiters get "engine stopped", or the
  // reason a linked actor exited with); never with `kill`, which would skip
  // that.
  caf::error why = reason;
  if (!why || why == caf::exit_reason::kill)
    why = caf::exit_reason::user_shutdown;
  for (auto p : all_parts)
    if (st.alive[p]) self->send_exit(handle_of(st.wiring, p), why);
  all_parts_down(self);
}

void on_down(sup_ptr self, const caf::down_msg& dm) {
  auto& st = self->state;
  for (auto p : all_parts) {
    auto h = handle_of(st.wiring, p);
    if (!h || h.address() != dm.source) continue;
    st.alive[p] = false;
    if (st.stopping) break;
    const auto& opts = st.shared->options;
    if (!may_restart(self, p)) {
      {
        std::lock_guard<std::mutex> guard{st.shared->mtx};
        ++st.shared->stats.gave_up;
      }
      if (st.shared->log.enabled(log_level::error))
        st.shared->log.log(
            log_level::error, supervisor_state::name, "engine.gave_up",
            std::string{name_of(p)} + " exited (" + describe_reason(dm.reason) +
                ") after " + std::to_string(opts.max_restarts) +
                " restarts within " +
                std::to_string(opts.restart_window.count()) +
                "ms; it stays down and requests to it fail at once");
      break;
    }
    spawn_part(self->system(), *st.shared, st.wiring, self->address(), p);
    self->monitor(handle_of(st.wiring, p));
    st.alive[p] = true;
    {
      std::lock_guard<std::mutex> guard{st.shared->mtx};
      ++st.shared->stats.restarts;
    }
    if (st.shared->log.enabled(log_level::warn))
      st.shared->log.log(
          log_level::warn, supervisor_state::name, "engine.restart",
          std::string{name_of(p)} + " exited (" + describe_reason(dm.reason) +
              "); restarted (" + std::to_string(st.restarts[p].size()) +
              " of " + std::to_string(opts.max_restarts) + " within " +
              std::to_string(opts.restart_window.count()) + "ms)");
    publish(self);
    // Everyone learns the successor; each takes what concerns it.
    for (auto q : all_parts)
      if (q != p && st.alive[q])
        // Untyped: the wiring is in each actor's own interface only.
        caf::send_as(caf::actor_cast<caf::actor>(self), handle_of(st.wiring, q),
                     st.wiring);
    if (st.shared->fleet)
      caf::send_as(caf::actor_cast<caf::actor>(self), st.shared->fleet,
                   st.wiring);
    break;
  }
  if (st.stopping) all_parts_down(self);
}

// -- metrics ---------------------------------------------------------------

// One metrics snapshot being joined: the answers still to come, and the
// caller's promise. Every callback runs in the supervisor.
struct metrics_join {
  engine_metrics m;
  size_t pending = 1; // the fan-out itself, until every request is out
  caf::typed_response_promise<engine_metrics> rp;
};

using join_ptr = std::shared_ptr<metrics_join>;

void metrics_answered(const join_ptr& j) {
  if (--j->pending > 0) return;
  // `missing` in the one order of metrics_actor_names, however the answers
  // came.
  std::vector<std::string> ordered;
  for (const char* name : metrics_actor_names)
    for (const auto& m : j->m.missing)
      if (m == name) ordered.emplace_back(name);
  j->m.missing = std::move(ordered);
  j->rp.deliver(std::move(j->m));
}

// Asks `h` for its counters into `field`, or names `actor` missing.
template <class Handle, class Stats>
void ask_stats(sup_ptr self, const join_ptr& j, const Handle& h, bool alive,
               const char* actor, Stats engine_metrics::*field) {
  if (!h || !alive) {
    j->m.missing.emplace_back(actor);
    return;
  }
  ++j->pending;
  self->request(h, self->state.shared->options.metrics_timeout, stats_atom_v)
      .then(
          [j, field](Stats& s) {
            j->m.*field = s;
            metrics_answered(j);
          },
          [j, actor](caf::error&) {
            j->m.missing.emplace_back(actor);
            metrics_answered(j);
          });
}

caf::typed_response_promise<engine_metrics> collect_metrics(sup_ptr self) {
  auto& st = self->state;
  auto j = std::make_shared<metrics_join>();
  j->rp = self->make_response_promise<engine_metrics>();
  {
    std::lock_guard<std::mutex> guard{st.shared->mtx};
    j->m.engine = st.shared->stats;
  }
  const auto& w = st.wiring;
  const auto* names = metrics_actor_names;
  // The router answers its counters and histograms in one message.
  if (w.router && st.alive[part::router]) {
    ++j->pending;
    self->request(w.router, st.shared->options.metrics_timeout, metrics_atom_v)
        .then(
            [j](router_metrics& r) {
              j->m.router = r.stats;
              j->m.operations = std::move(r.operations);
              metrics_answered(j);
            },
            [j, names](caf::error&) {
              j->m.missing.emplace_back(names[0]);
              metrics_answered(j);
            });
  } else {
    j->m.missing.emplace_back(names[0]);
  }
  ask_stats(self, j, w.retry, st.alive[part::retry], names[1],
            &engine_metrics::retry);
  ask_stats(self, j, w.endpoints, st.alive[part::endpoints], names[2],
            &engine_metrics::endpoint_manager);
  ask_stats(self, j, w.collections, st.alive[part::collections], names[3],
            &engine_metrics::collection_cache);
  ask_stats(self, j, w.pkranges, st.alive[part::pkranges], names[4],
            &engine_metrics::pkrange_cache);
  ask_stats(self, j, w.plans, st.alive[part::plans], names[5],
            &engine_metrics::query_plan);
  auto rp = j->rp;
  metrics_answered(j); // the fan-out is out; answers at once if none went
  return rp;
}

// Spawned lazily: this runs on the supervisor's first message, which
// `engine::start` sends once it has spawned the graph (as the supervisor,
// whose address it needed first) and published the wiring.
supervisor_impl_actor::behavior_type
supervisor_impl(sup_ptr self, std::shared_ptr<engine_state> shared) {
  auto& st = self->state;
  st.shared = std::move(shared);
  {
    std::lock_guard<std::mutex> guard{st.shared->mtx};
    st.wiring = st.shared->wiring;
  }
  // An actor that died already is reported at once by `monitor`.
  for (auto p : all_parts) {
    self->monitor(handle_of(st.wiring, p));
    st.alive[p] = true;
  }
  self->set_down_handler([=](caf::down_msg& dm) { on_down(self, dm); });
  // A stop by exit message: an actor linked to the supervisor exited, or
  // somebody sent the supervisor an exit message.
  self->set_exit_handler(
      [=](caf::exit_msg& msg) { begin_stop(self, msg.reason); });
  return {
      [](caf::ok_atom) {},
      [=](stop_atom) -> caf::result<caf::ok_atom> {
        auto rp = self->make_response_promise<caf::ok_atom>();
        self->state.stop_waiters.push_back(rp);
        begin_stop(self, caf::exit_reason::user_shutdown);
        return rp;
      },
      [=](port_closed) { engine_down(self); },
      [=](metrics_atom) -> caf::result<engine_metrics> {
        return collect_metrics(self);
      },
  };
}

fleet_config fleet_config_from(const engine_state& s) {
  const auto& f = s.settings.fleet;
  fleet_config c;
  c.fleet = f.fleet;
  c.account = fleet_account_token(s.settings);
  c.reporter = f.reporter;
  c.health.min_reporters = f.min_reporters;
  c.health.max_claim_ttl = f.claim_ttl;
  c.report.window = f.window;
  c.report.min_threshold_waits = f.threshold_waits;
  c.report.ttl = f.claim_ttl;
  c.probe_interval = f.probe_interval;
  c.probe_timeout = fleet_threshold_of(s.settings);
  c.link = s.options.fleet;
  c.inbox = s.options.inbox;
  c.log = s.log;
  return c;
}

// Spawns the graph from the calling thread, without waiting for any actor:
// the supervisor first (lazily, so that it starts only once the graph
// exists), then every part with the supervisor as the one sender of its
// re-wiring, then the wiring itself, sent as the supervisor before `start`
// returns -- so it is in every mailbox ahead of any request of the caller.
void launch(caf::actor_system& sys, const std::shared_ptr<engine_state>& s) {
  auto sup = sys.spawn<caf::lazy_init>(supervisor_impl, s);
  s->supervisor = caf::actor_cast<caf::actor>(sup);
  engine_wiring w;
  w.supervisor = s->supervisor.address();
  for (auto p : all_parts) {
    spawn_part(sys, *s, w, w.supervisor, p);
    // The router tells the fleet actor what it saw: it must exist first.
    if (p == part::locations && s->options.fleet)
      s->fleet = spawn_fleet(sys, fleet_config_from(*s), w.locations,
                             std::static_pointer_cast<transport::port>(s->port),
                             w.supervisor);
  }
  {
    std::lock_guard<std::mutex> guard{s->mtx};
    s->wiring = w;
  }
  for (auto p : all_parts)
    caf::send_as(s->supervisor, handle_of(w, p), w);
  caf::anon_send(s->supervisor, caf::ok_atom_v);
}

} // namespace

caf::expected<engine> engine::start(caf::actor_system& sys,
                                    const config::settings& settings,
                                    engine_options options) {
  if (auto problems = config::check_settings(settings); !problems.empty())
    return make_error(errc::validation_error, problems.front());
  if (settings.fleet.enabled && !options.fleet)
    return make_error(
        errc::validation_error,
        "georoute.fleet-health.enabled = true, but the engine was given no "
        "fleet link: build georoute with libnats (libnats-dev) and let the "
        "host make one (make_nats_fleet_link), or pass engine_options::fleet");
  if (!settings.fleet.enabled) {
    options.fleet.reset(); // off means off: nothing of it runs
    options.inbox.reset();
  }
  auto s = std::make_shared<engine_state>();
  s->sys = &sys;
  s->settings = settings;
  s->options = options;
  s->log = logger{options.log, options.log_min_level};
  if (options.http) {
    s->port = std::make_shared<closable_port>(options.http, nullptr, nullptr);
    s->home = options.home;
  } else {
    transport::http_client_options co;
    co.max_connections_per_endpoint =
        settings.http.max_connections_per_endpoint;
    co.max_response_body = settings.http.response_body_limit;
    co.tls_ca_file = settings.http.tls_ca_file;
    co.io_threads = settings.http.io_threads;
    // On the engine loop the client's sockets share the actors' thread (no
    // io threads); under CAF's default scheduler they share the router's
    // home thread, or have io threads of their own.
    co.loop = engine_loop_io(sys);
    if (!co.loop && options.home_thread) {
      s->home = std::make_shared<home_thread>(sys, "georoute.home");
      co.loop = s->home->io();
    }
    auto client = std::make_shared<transport::http_client>(co);
    if (!client->tls_setup_error().empty())
      return make_error(errc::validation_error, "georoute.http.tls-ca-file: " +
                                                    client->tls_setup_error());
    s->port = std::make_shared<closable_port>(
        transport::make_gateway_port(client, settings.account_key.reveal()),
        client, s->home);
  }
  launch(sys, s);
  return engine{std::move(s)};
}

engine::engine(std::shared_ptr<engine_state> s) : s_(std::move(s)) {}
engine::engine(engine&&) noexcept = default;
engine& engine::operator=(engine&& other) noexcept {
  if (this != &other) {
    stop();
    s_ = std::move(other.s_);
  }
  return *this;
}

engine::~engine() {
  stop();
}

#define GEOROUTE_WIRING_GETTER(type, fn, member)                               \
  type engine::fn() const {                                                    \
    std::lock_guard<std::mutex> guard{s_->mtx};                                \
    return s_->wiring.member;                                                  \
  }

GEOROUTE_WIRING_GETTER(router_actor, router, router)
GEOROUTE_WIRING_GETTER(query_plan_actor, query_plans, plans)
GEOROUTE_WIRING_GETTER(collection_cache_actor, collections, collections)
GEOROUTE_WIRING_GETTER(pkrange_cache_actor, pkranges, pkranges)
GEOROUTE_WIRING_GETTER(location_cache_actor, locations, locations)
GEOROUTE_WIRING_GETTER(endpoint_manager_actor, endpoints, endpoints)
GEOROUTE_WIRING_GETTER(retry_actor, retry, retry)

#undef GEOROUTE_WIRING_GETTER

engine_supervisor_actor engine::supervisor() const {
  std::lock_guard<std::mutex> guard{s_->mtx};
  return caf::actor_cast<engine_supervisor_actor>(s_->supervisor);
}

caf::actor engine::fleet() const {
  std::lock_guard<std::mutex> guard{s_->mtx};
  return s_->fleet;
}

engine_stats engine::stats() const {
  std::lock_guard<std::mutex> guard{s_->mtx};
  return s_->stats;
}

engine_metrics engine::metrics() const {
  engine_metrics out;
  for (const char* name : metrics_actor_names)
    out.missing.emplace_back(name);
  if (!s_) return out;
  caf::actor sup;
  {
    std::lock_guard<std::mutex> guard{s_->mtx};
    out.engine = s_->stats;
    sup = s_->supervisor;
  }
  if (!sup) return out;
  // The supervisor answers within its own per-actor timeout; the second on
  // top is for its mailbox.
  caf::scoped_actor self{*s_->sys, true};
  self->request(sup, s_->options.metrics_timeout + std::chrono::seconds{1},
                metrics_atom_v)
      .receive([&](engine_metrics& m) { out = std::move(m); },
               [](caf::error&) {});
  return out;
}

bool engine::running() const {
  if (!s_) return false;
  std::lock_guard<std::mutex> guard{s_->mtx};
  return s_->running;
}

bool engine::stop() {
  if (!s_) return true;
  caf::actor sup;
  {
    std::lock_guard<std::mutex> guard{s_->mtx};
    sup = std::move(s_->supervisor);
  }
  if (!sup) return true;
  bool ended = true;
  {
    // The same stop as an actor's: one way down. A supervisor that is gone
    // already (stopped by message, or by an actor linked to it) answers
    // `request_receiver_down`: the engine is down.
    caf::scoped_actor self{*s_->sys, true};
    self->request(sup, s_->options.stop_timeout, stop_atom_v)
        .receive([](caf::ok_atom) {},
                 [&](caf::error& e) {
                   if (e != caf::sec::request_receiver_down) ended = false;
                 });
  }
  // Closed already when the supervisor answered; not if it was killed or
  // did not answer in time.
  s_->port->close();
  std::lock_guard<std::mutex> guard{s_->mtx};
  s_->running = false;
  s_->wiring = engine_wiring{};
  return ended;
}

} // namespace georoute
