#include "tests/bench/georoute_load.hpp"

#include "georoute/actors/client.hpp"
#include "georoute/actors/engine.hpp"
#include "georoute/actors/engine_loop.hpp"
#include "georoute/actors/home_thread.hpp"
#include "georoute/messages/error.hpp"
#include "georoute/messages/types.hpp"
#include "georoute/transport/http_client.hpp"
#include "tests/engine_loop_choice.hpp"

#ifdef GEOROUTE_BENCH_NATS
#  include "georoute/actors/nats/fleet_link.hpp"
#endif

#include <algorithm>
#include <atomic>
#include <caf/all.hpp>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

namespace georoute::bench {

namespace {

using namespace std::chrono_literals;

/// After a failed operation a caller pauses this long before the next one,
/// so that a fault answered at once does not turn into a busy loop (the
/// peer's callers do the same).
constexpr auto pause_after_failure = 10ms;

/// Counts callers down to zero.
struct load_control {
  std::atomic<bool> stopping{false};
  std::mutex mtx;
  std::condition_variable cv;
  size_t active = 0;
  std::atomic<uint64_t> ok{0};
  std::atomic<uint64_t> failed{0};
  /// With `bounded`: operations left to start (else until `stopping`).
  bool bounded = false;
  std::atomic<int64_t> budget{0};
  /// With `queue`: the requests to send, each once, taken in turn by
  /// whichever caller is free (a sliding window, not waves).
  std::shared_ptr<const std::vector<data_request>> queue;
  std::atomic<size_t> next{0};

  void finished() {
    std::lock_guard<std::mutex> guard{mtx};
    if (--active == 0) cv.notify_all();
  }

  bool wait(std::chrono::milliseconds d) {
    std::unique_lock<std::mutex> guard{mtx};
    return cv.wait_for(guard, d, [this] { return active == 0; });
  }
};

struct caller_ctx {
  route_actor router;
  data_request req;
  event_log* log = nullptr;
  size_t slot = 0;
  std::shared_ptr<load_control> ctl;
  caf::timespan timeout;
  bool once = false; ///< cold start: one operation, then quit
};

void issue(caf::event_based_actor* self, std::shared_ptr<caller_ctx> c);

void after(caf::event_based_actor* self, const std::shared_ptr<caller_ctx>& c,
           bool ok) {
  if (c->ctl->queue) {
    // Failures are counted, not repeated: the next request goes at once.
    if (!c->ctl->stopping.load(std::memory_order_relaxed))
      return issue(self, c);
    c->ctl->finished();
    self->quit();
    return;
  }
  if (c->once || c->ctl->stopping.load(std::memory_order_relaxed) ||
      (c->ctl->bounded &&
       c->ctl->budget.fetch_sub(1, std::memory_order_relaxed) <= 0)) {
    c->ctl->finished();
    self->quit();
    return;
  }
  if (ok)
    issue(self, c);
  else
    self->delayed_send(self, pause_after_failure, caf::ok_atom_v);
}

void issue(caf::event_based_actor* self, std::shared_ptr<caller_ctx> c) {
  auto start = c->log ? c->log->now_us() : 0;
  if (const auto& q = c->ctl->queue) {
    auto i = c->ctl->next.fetch_add(1, std::memory_order_relaxed);
    if (i >= q->size()) {
      c->ctl->finished();
      self->quit();
      return;
    }
    c->req = (*q)[i];
  }
  self->request(c->router, c->timeout, route_atom_v, c->req)
      .then(
          [self, c, start](data_response&) {
            if (c->log) c->log->record(c->slot, start, c->log->now_us(), true);
            ++c->ctl->ok;
            after(self, c, true);
          },
          [self, c, start](caf::error&) {
            if (c->log) c->log->record(c->slot, start, c->log->now_us(), false);
            ++c->ctl->failed;
            after(self, c, false);
          });
}

caf::behavior caller(caf::event_based_actor* self,
                     std::shared_ptr<caller_ctx> c) {
  issue(self, c);
  return {[self, c](caf::ok_atom) { issue(self, c); }};
}

class actor_load : public caller_load {
public:
  explicit actor_load(std::shared_ptr<load_control> ctl)
      : ctl_(std::move(ctl)) {}
  ~actor_load() override { stop(30s); }

  bool stop(std::chrono::milliseconds wait) override {
    ctl_->stopping = true;
    return ctl_->wait(wait);
  }

private:
  std::shared_ptr<load_control> ctl_;
};

} // namespace

bench_config::bench_config(size_t threads, std::optional<bool> loop) {
  register_types(*this);
  if (loop) {
    if (*loop)
      load<engine_loop>();
    else
      set("scheduler.max-threads", static_cast<int>(threads));
    return;
  }
  // The engine loop unless --engine-loop=false
  // (tests/engine_loop_choice.hpp); `threads` only sizes CAF's default
  // scheduler.
  if (!test::load_chosen_scheduler(*this, true))
    set("scheduler.max-threads", static_cast<int>(threads));
}

std::unique_ptr<caller_load> start_callers(caf::actor_system& sys,
                                           const route_actor& to,
                                           const data_request& req,
                                           size_t in_flight, event_log& log,
                                           std::chrono::milliseconds timeout) {
  auto ctl = std::make_shared<load_control>();
  ctl->active = in_flight;
  for (size_t i = 0; i < in_flight; ++i) {
    auto c = std::make_shared<caller_ctx>();
    c->router = to;
    c->req = req;
    c->log = &log;
    c->slot = i;
    c->ctl = ctl;
    c->timeout = timeout;
    sys.spawn(caller, c);
  }
  return std::make_unique<actor_load>(ctl);
}

struct georoute_driver::impl {
  std::unique_ptr<bench_config> cfg;
  std::unique_ptr<caf::actor_system> sys;
  std::shared_ptr<home_thread> home;
  std::shared_ptr<transport::http_client> client;
  std::shared_ptr<counting_port> port;
  /// With `fleet_server`: kept until the engine stopped (destroying the
  /// link closes the channel and joins its thread).
  std::shared_ptr<fleet_link> fleet;
  std::shared_ptr<fleet_inbox> inbox;
  std::optional<engine> eng;

  template <class T, class Handle, class... Ts>
  caf::expected<T> ask(const Handle& h, caf::timespan timeout, Ts&&... xs) {
    caf::scoped_actor self{*sys};
    caf::expected<T> result{caf::error{}};
    self->request(h, timeout, std::forward<Ts>(xs)...)
        .receive([&](T& x) { result = std::move(x); },
                 [&](caf::error& e) { result = std::move(e); });
    return result;
  }
};

georoute_driver::georoute_driver() : impl_(std::make_unique<impl>()) {}

georoute_driver::~georoute_driver() {
  if (impl_->eng) impl_->eng->stop();
  impl_->eng.reset();
  impl_->fleet.reset(); // after the engine: its channel's thread is joined
  impl_->inbox.reset();
  impl_->port.reset();
  impl_->client.reset(); // joins the io threads while the system lives
  impl_->home.reset();   // after the client: it drove the client's sockets
  impl_->sys.reset();
}

result<std::unique_ptr<georoute_driver>>
georoute_driver::start(driver_options opts) {
  std::unique_ptr<georoute_driver> d{new georoute_driver};
  auto& m = *d->impl_;
  config::settings s;
  s.account_endpoint = opts.global_endpoint;
  s.account_key = config::secret{opts.key};
  s.location.preferred_regions = opts.preferred_regions;
  s.http.max_connections_per_endpoint = opts.connections;
  s.scheduler_threads = opts.scheduler_threads;
  if (opts.hedging) s.hedging.enabled = *opts.hedging;
  if (!opts.fleet_server.empty()) {
    s.fleet.enabled = true;
    s.fleet.servers = {opts.fleet_server};
    s.fleet.reporter = "bench";
#ifdef GEOROUTE_BENCH_NATS
    auto link = make_nats_fleet_link(s);
    if (!link) return problem{"the fleet's link: " + link.error().what};
    m.fleet = std::move(link->link);
    m.inbox = std::move(link->inbox);
#else
    return problem{"fleet health needs libnats, which this build lacks"};
#endif
  }
  // The system first: on the engine loop the client shares its thread.
  m.cfg =
      std::make_unique<bench_config>(opts.scheduler_threads, opts.engine_loop);
  m.sys = std::make_unique<caf::actor_system>(*m.cfg);
  transport::port_ptr inner = opts.port;
  if (!inner) {
    transport::http_client_options co;
    co.max_connections_per_endpoint = s.http.max_connections_per_endpoint;
    co.max_response_body = s.http.response_body_limit;
    co.io_threads = s.http.io_threads;
    co.loop = engine_loop_io(*m.sys);
    // On CAF's scheduler the router and the sockets share a home thread,
    // as in an engine that builds its own client.
    if (!co.loop && opts.home_thread) {
      m.home = std::make_shared<home_thread>(*m.sys, "georoute.home");
      co.loop = m.home->io();
    }
    m.client = std::make_shared<transport::http_client>(co);
    inner = transport::make_gateway_port(m.client, s.account_key.reveal());
  }
  m.port = std::make_shared<counting_port>(inner);
  engine_options eo;
  eo.http = m.port;
  eo.home = m.home;
  eo.sweep_after = opts.sweep_after;
  eo.fleet = m.fleet;
  eo.inbox = m.inbox;
  auto e = engine::start(*m.sys, s, eo);
  if (!e) return problem{"engine::start: " + m.sys->render(e.error())};
  m.eng.emplace(std::move(*e));
  // Ready once the first account read landed: requests go to the regions.
  for (int i = 0; i < 500; ++i) {
    auto r = m.ask<resolution>(m.eng->locations(), 5s, resolve_atom_v,
                               resolve_input{});
    if (r && r->endpoint != opts.global_endpoint) return d;
    std::this_thread::sleep_for(20ms);
  }
  return problem{"the engine did not read the account within 10 s"};
}

std::unique_ptr<caller_load>
georoute_driver::start_load(const data_request& req, size_t in_flight,
                            event_log& log, std::chrono::milliseconds timeout) {
  return start_callers(*impl_->sys, impl_->eng->router(), req, in_flight, log,
                       timeout);
}

cold_figures georoute_driver::cold_start(const data_request& req,
                                         size_t callers) {
  cold_figures f;
  f.client = "georoute";
  f.callers = callers;
  impl_->port->counts().reset();
  auto ctl = std::make_shared<load_control>();
  ctl->active = callers;
  auto router = impl_->eng->router();
  auto t0 = steady::now();
  for (size_t i = 0; i < callers; ++i) {
    auto c = std::make_shared<caller_ctx>();
    c->router = router;
    c->req = req;
    c->ctl = ctl;
    c->timeout = 60s;
    c->once = true;
    impl_->sys->spawn(caller, c);
  }
  if (!ctl->wait(90s)) f.skipped = "callers still waiting after 90 s";
  f.seconds = std::chrono::duration<double>(steady::now() - t0).count();
  f.ok = ctl->ok;
  f.failed = ctl->failed;
  f.collection_reads = impl_->port->counts().collection_reads;
  f.pkranges_reads = impl_->port->counts().pkranges_reads;
  f.pkranges_not_modified = impl_->port->counts().pkranges_not_modified;
  f.document_reads = impl_->port->counts().documents;
  f.other = impl_->port->counts().other + impl_->port->counts().account;
  return f;
}

std::pair<uint64_t, uint64_t>
georoute_driver::route_many(const std::vector<data_request>& reqs,
                            size_t in_flight) {
  if (reqs.empty()) return {0, 0};
  auto ctl = std::make_shared<load_control>();
  ctl->queue = std::make_shared<const std::vector<data_request>>(reqs);
  in_flight = std::min(in_flight, reqs.size());
  ctl->active = in_flight;
  auto router = impl_->eng->router();
  for (size_t i = 0; i < in_flight; ++i) {
    auto c = std::make_shared<caller_ctx>();
    c->router = router;
    c->ctl = ctl;
    c->timeout = 60s;
    impl_->sys->spawn(caller, c);
  }
  // Each request has its own 60-s timeout; past this, a caller is stuck.
  if (!ctl->wait(std::chrono::seconds{90 + 60 * reqs.size() / in_flight})) {
    ctl->stopping = true;
    ctl->wait(70s);
  }
  return {ctl->ok.load(), ctl->failed.load()};
}

uint64_t georoute_driver::run_ops(const data_request& req, size_t total,
                                  size_t in_flight) {
  auto ctl = std::make_shared<load_control>();
  in_flight = std::min(in_flight, total);
  ctl->active = in_flight;
  // Every caller starts one operation; the rest are started as answers
  // come.
  ctl->bounded = true;
  ctl->budget = static_cast<int64_t>(total - in_flight);
  auto router = impl_->eng->router();
  for (size_t i = 0; i < in_flight; ++i) {
    auto c = std::make_shared<caller_ctx>();
    c->router = router;
    c->req = req;
    c->ctl = ctl;
    c->timeout = 30s;
    impl_->sys->spawn(caller, c);
  }
  ctl->wait(300s);
  return ctl->ok;
}

bool georoute_driver::route_once(const data_request& req, std::string* error) {
  auto r =
      impl_->ask<data_response>(impl_->eng->router(), 30s, route_atom_v, req);
  if (r) return true;
  if (error) *error = impl_->sys->render(r.error());
  return false;
}

feed_figures georoute_driver::drain_feed(const std::string& link,
                                         int32_t page_size) {
  feed_figures f;
  f.client = "georoute";
  change_feed_request req;
  req.collection_link = link;
  req.start = feed_start::beginning;
  req.max_item_count = page_size;
  auto t0 = std::chrono::steady_clock::now();
  auto cpu0 = process_cpu_seconds();
  for (;;) {
    auto p = impl_->ask<change_feed_page>(impl_->eng->router(), 60s,
                                          route_atom_v, req);
    ++f.pages;
    if (!p) {
      f.error = impl_->sys->render(p.error());
      break;
    }
    f.documents += p->count;
    req.continuation = std::move(p->continuation);
    if (p->caught_up) break;
  }
  f.cpu_seconds = process_cpu_seconds() - cpu0;
  f.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  if (f.seconds > 0) f.documents_per_second = f.documents / f.seconds;
  if (f.documents > 0)
    f.cpu_us_per_document = f.cpu_seconds * 1e6 / f.documents;
  return f;
}

namespace {

// Create number `n` of a bulk load: about 250 bytes, its own key.
batch_operation bulk_doc(size_t n) {
  static const std::string filler(200, 'x');
  batch_operation o;
  o.kind = batch_op_kind::create;
  auto id = "b" + std::to_string(n);
  o.body = nlohmann::json{{"id", id}, {"pk", id}, {"v", filler}}.dump();
  o.partition_key_json = nlohmann::json::array({id}).dump();
  return o;
}

} // namespace

bulk_figures georoute_driver::bulk_load(const std::string& link, size_t count) {
  bulk_figures f;
  f.client = "georoute";
  f.mode = "bulk";
  f.operations = count;
  client db{*impl_->sys, *impl_->eng, 120s};
  size_t next = 0;
  auto t0 = std::chrono::steady_clock::now();
  auto cpu0 = process_cpu_seconds();
  auto s = db.bulk(
      bulk_open{link},
      [&] {
        std::vector<batch_operation> ops;
        for (; next < count && ops.size() < 1000; ++next)
          ops.push_back(bulk_doc(next));
        return ops;
      },
      [&](uint64_t, std::vector<bulk_op_result>& rs) {
        for (const auto& r : rs)
          if (r.status == 201) ++f.ok;
      });
  f.cpu_seconds = process_cpu_seconds() - cpu0;
  f.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  if (!s)
    f.error = impl_->sys->render(s.error());
  else
    f.throttled = s->throttled;
  f.finish();
  return f;
}

bulk_figures georoute_driver::point_load(const std::string& link, size_t count,
                                         size_t in_flight) {
  bulk_figures f;
  f.client = "georoute";
  f.mode = "point creates";
  f.operations = count;
  std::vector<data_request> reqs;
  reqs.reserve(count);
  for (size_t n = 0; n < count; ++n) {
    auto op = bulk_doc(n);
    data_request r;
    r.op = data_op::create;
    r.collection_link = link;
    r.body = std::move(op.body);
    r.options.partition_key_json = std::move(op.partition_key_json);
    reqs.push_back(std::move(r));
  }
  auto t0 = std::chrono::steady_clock::now();
  auto cpu0 = process_cpu_seconds();
  auto [ok, failed] = route_many(reqs, in_flight);
  f.cpu_seconds = process_cpu_seconds() - cpu0;
  f.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  f.ok = ok;
  if (failed > 0) f.error = std::to_string(failed) + " creates failed";
  f.finish();
  return f;
}

size_t georoute_driver::ranges_of(const std::string& link) {
  auto r = impl_->ask<std::vector<partition_key_range>>(
      impl_->eng->router(), 10s, feed_ranges_atom_v, link);
  return r ? r->size() : 0;
}

port_counts& georoute_driver::counts() {
  return impl_->port->counts();
}

std::pair<uint64_t, uint64_t> georoute_driver::cache_loads() {
  auto c = impl_->ask<collection_cache_stats>(impl_->eng->collections(), 10s,
                                              stats_atom_v);
  auto p = impl_->ask<pkrange_cache_stats>(impl_->eng->pkranges(), 10s,
                                           stats_atom_v);
  return {c ? c->misses - c->evictions : 0, p ? p->misses - p->evictions : 0};
}

georoute::router_stats georoute_driver::router_counters() {
  auto r = impl_->ask<router_stats>(impl_->eng->router(), 10s, stats_atom_v);
  return r ? *r : router_stats{};
}

data_request point_read(const std::string& link, const std::string& id,
                        const std::string& pk) {
  data_request r;
  r.op = data_op::read;
  r.collection_link = link;
  r.id = id;
  r.options.partition_key_json = "[\"" + pk + "\"]";
  return r;
}

data_request point_upsert(const std::string& link, const std::string& id,
                          const std::string& pk) {
  auto r = point_read(link, id, pk);
  r.op = data_op::upsert;
  r.body = "{\"id\":\"" + id + "\",\"pk\":\"" + pk + "\",\"n\":1}";
  return r;
}

} // namespace georoute::bench
