#include "actors/engine.hpp"

#include "actors/collection_cache.hpp"
#include "actors/endpoint_manager.hpp"
#include "actors/engine_loop.hpp"
#include "actors/location_cache.hpp"
#include "actors/pkrange_cache.hpp"
#include "actors/query_plan.hpp"
#include "actors/retry.hpp"
#include "actors/router.hpp"
#include "config/georoute_config.hpp"
#include "messages/error.hpp"
#include "transport/http_client.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <deque>
#include <map>
#include <mutex>

namespace georoute {

namespace {

// The port every actor of the engine sends through. `close` (at stop, once
// the actors are gone) destroys the Beast client it owns, which joins its io
// threads and ends every connection; anything sent afterwards completes at
// once with a reset "engine stopped".
class closable_port : public http_port {
public:
  closable_port(http_port_ptr inner,
                std::shared_ptr<transport::http_client> client)
      : inner_(std::move(inner)), client_(std::move(client)) {}

  void send(transport::request req, completion done) override {
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
    http_port_ptr inner;
    std::shared_ptr<transport::http_client> client;
    {
      std::lock_guard<std::mutex> guard{mtx_};
      inner = std::move(inner_);
      client = std::move(client_);
    }
    inner.reset();
    client.reset(); // joins the io threads; in-flight requests complete
  }

private:
  std::mutex mtx_;
  http_port_ptr inner_;
  std::shared_ptr<transport::http_client> client_;
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

struct engine::shared {
  caf::actor_system* sys = nullptr;
  config::settings settings;
  engine_options options;
  std::shared_ptr<closable_port> port;
  caf::actor supervisor;
  mutable std::mutex mtx;
  engine_wiring wiring;
  engine_stats stats;
  bool running = true;
};

namespace {

struct supervisor_state {
  std::shared_ptr<engine::shared> shared;
  engine_wiring wiring;
  std::map<part, std::deque<caf::actor_clock::time_point>> restarts;
  std::map<part, bool> alive;
  bool stopping = false;
  static inline const char* name = "georoute.engine";
};

using sup_ptr = caf::stateful_actor<supervisor_state>*;

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

// Spawns `p` wired to the current collaborators and records it.
void spawn_part(sup_ptr self, part p) {
  auto& st = self->state;
  auto& sys = self->system();
  const auto& s = st.shared->settings;
  auto http = std::static_pointer_cast<http_port>(st.shared->port);
  auto& w = st.wiring;
  auto me = self->address();
  switch (p) {
  case part::locations:
    w.locations = spawn_location_cache(sys, location_options_from(s));
    break;
  case part::endpoints: {
    auto cfg = endpoint_manager_config_from(s);
    cfg.sweep_after = st.shared->options.sweep_after;
    w.endpoints = spawn_endpoint_manager(sys, cfg, w.locations, http, me);
    break;
  }
  case part::router:
    // On the first start the caches do not exist yet: the wiring sent once
    // everything is spawned fills them in.
    w.router = spawn_router(sys, router_config_from(s),
                            {w.locations, w.endpoints, w.collections,
                             w.pkranges, http, w.plans, me});
    break;
  case part::retry:
    w.retry = spawn_retry(
        sys, retry_config_from(s),
        {w.locations, w.endpoints, http, w.router, caf::actor{}, me});
    break;
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
  self->monitor(handle_of(w, p));
  st.alive[p] = true;
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

void on_down(sup_ptr self, const caf::down_msg& dm) {
  auto& st = self->state;
  for (auto p : all_parts) {
    auto h = handle_of(st.wiring, p);
    if (!h || h.address() != dm.source) continue;
    st.alive[p] = false;
    if (st.stopping) break;
    if (!may_restart(self, p)) {
      std::lock_guard<std::mutex> guard{st.shared->mtx};
      ++st.shared->stats.gave_up;
      break;
    }
    spawn_part(self, p);
    {
      std::lock_guard<std::mutex> guard{st.shared->mtx};
      ++st.shared->stats.restarts;
    }
    publish(self);
    // Everyone learns the successor; each takes what concerns it.
    for (auto q : all_parts)
      if (q != p && st.alive[q]) self->send(handle_of(st.wiring, q), st.wiring);
    break;
  }
  if (st.stopping) {
    for (auto p : all_parts)
      if (st.alive[p]) return;
    self->quit(caf::exit_reason::user_shutdown);
  }
}

caf::behavior supervisor_impl(sup_ptr self,
                              std::shared_ptr<engine::shared> shared) {
  auto& st = self->state;
  st.shared = std::move(shared);
  st.wiring.supervisor = self->address();
  for (auto p : all_parts)
    spawn_part(self, p);
  publish(self);
  for (auto p : all_parts)
    self->send(handle_of(st.wiring, p), st.wiring);
  self->set_down_handler([=](caf::down_msg& dm) { on_down(self, dm); });
  self->set_exit_handler([=](caf::exit_msg& msg) {
    auto& st = self->state;
    if (st.stopping) return;
    st.stopping = true;
    bool any = false;
    for (auto p : all_parts)
      if (st.alive[p]) {
        any = true;
        self->send_exit(handle_of(st.wiring, p),
                        msg.reason
                            ? msg.reason
                            : caf::error{caf::exit_reason::user_shutdown});
      }
    if (!any) self->quit(caf::exit_reason::user_shutdown);
  });
  return {[](caf::ok_atom) {}};
}

} // namespace

caf::expected<engine> engine::start(caf::actor_system& sys,
                                    const config::settings& settings,
                                    engine_options options) {
  if (auto problems = config::check_settings(settings); !problems.empty())
    return make_error(errc::validation_error, problems.front());
  auto s = std::make_shared<shared>();
  s->sys = &sys;
  s->settings = settings;
  s->options = options;
  if (options.http) {
    s->port = std::make_shared<closable_port>(options.http, nullptr);
  } else {
    transport::http_client_options co;
    co.max_connections_per_endpoint =
        settings.http.max_connections_per_endpoint;
    co.max_response_body = settings.http.response_body_limit;
    co.tls_ca_file = settings.http.tls_ca_file;
    co.io_threads = settings.http.io_threads;
    // On the engine loop the client's sockets share the actors' thread (no
    // io threads); under CAF's default scheduler it has io threads of its own.
    co.loop = engine_loop_io(sys);
    auto client = std::make_shared<transport::http_client>(co);
    if (!client->tls_setup_error().empty())
      return make_error(errc::validation_error, "georoute.http.tls-ca-file: " +
                                                    client->tls_setup_error());
    s->port = std::make_shared<closable_port>(
        make_http_port(client, settings.account_key), client);
  }
  s->supervisor = sys.spawn(supervisor_impl, s);
  // The supervisor spawns the graph and publishes the wiring before it
  // handles its first message: once it answered one, the handles are valid.
  caf::error failed;
  {
    caf::scoped_actor self{sys, true};
    self->request(s->supervisor, caf::infinite, caf::ok_atom_v)
        .receive([] {}, [&](caf::error& e) { failed = std::move(e); });
  }
  if (failed) return failed;
  return engine{std::move(s)};
}

engine::engine(std::shared_ptr<shared> s) : s_(std::move(s)) {}
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

engine_wiring engine::wiring() const {
  std::lock_guard<std::mutex> guard{s_->mtx};
  return s_->wiring;
}

engine_stats engine::stats() const {
  std::lock_guard<std::mutex> guard{s_->mtx};
  return s_->stats;
}

bool engine::running() const {
  if (!s_) return false;
  std::lock_guard<std::mutex> guard{s_->mtx};
  return s_->running;
}

bool engine::stop() {
  if (!s_) return true;
  {
    std::lock_guard<std::mutex> guard{s_->mtx};
    if (!s_->running) return true;
    s_->running = false;
  }
  bool ended = true;
  {
    caf::scoped_actor self{*s_->sys, true};
    self->monitor(s_->supervisor);
    self->send_exit(s_->supervisor, caf::exit_reason::user_shutdown);
    self->receive([](const caf::down_msg&) {},
                  caf::after(s_->options.stop_timeout) >>
                      [&] { ended = false; });
  }
  s_->port->close();
  s_->supervisor = nullptr;
  std::lock_guard<std::mutex> guard{s_->mtx};
  s_->wiring = engine_wiring{};
  return ended;
}

} // namespace georoute
