// georoute_micro_bench, the actor parts: one CAF request/response round
// trip between two actors (the floor of any actor hop), and the router's
// whole CPU cost per point read on a cache hit, with the transport replaced
// by an immediate answer (engine_port: an in-process emulator engine, the
// document read replayed from the first answer, signing as the real port
// does). Both measure the CPU time of the whole process (every CAF worker)
// per operation, with the real time next to it.
//
// And the clock's part of a request: request timeouts in the engine loop's
// clock against CAF's own (real time per operation).

#include "georoute/actors/engine_loop.hpp"
#include "tests/bench/engine_port.hpp"
#include "tests/bench/georoute_load.hpp"

#include <benchmark/benchmark.h>
#include <caf/all.hpp>
#include <caf/detail/simple_actor_clock.hpp>
#include <future>
#include <random>
#include <vector>

namespace {

using namespace georoute;
using namespace georoute::bench;

/// Process CPU and real time per operation since (cpu0, t0), in
/// microseconds: the figures the bench reports.
void per_op_counters(benchmark::State& state, double cpu0,
                     steady::time_point t0, double ops) {
  auto cpu = process_cpu_seconds() - cpu0;
  auto wall = std::chrono::duration<double>(steady::now() - t0).count();
  state.SetItemsProcessed(static_cast<int64_t>(ops));
  state.counters["cpu_us_per_op"] = cpu * 1e6 / ops;
  state.counters["wall_us_per_op"] = wall * 1e6 / ops;
}

struct rtt_config : caf::actor_system_config {
  rtt_config() { set("scheduler.max-threads", 2); }
};

caf::behavior pong(caf::event_based_actor*) {
  return {[](int32_t x) { return x + 1; }};
}

/// Sends `n` requests to `peer` one after the other, then fulfils `done`.
void ping_loop(caf::event_based_actor* self, caf::actor peer, int64_t n,
               std::shared_ptr<std::promise<void>> done) {
  if (n == 0) {
    done->set_value();
    self->quit();
    return;
  }
  self->request(peer, caf::infinite, int32_t{1}).then([=](int32_t) {
    ping_loop(self, peer, n - 1, done);
  });
}

caf::behavior ping(caf::event_based_actor* self, caf::actor peer, int64_t n,
                   std::shared_ptr<std::promise<void>> done) {
  ping_loop(self, peer, n, done);
  return {[](caf::ok_atom) {}};
}

void BM_CafRequestResponse(benchmark::State& state) {
  rtt_config cfg;
  caf::actor_system sys{cfg};
  auto p = sys.spawn(pong);
  constexpr int64_t batch = 10000;
  auto cpu0 = process_cpu_seconds();
  auto t0 = steady::now();
  for (auto _ : state) {
    auto done = std::make_shared<std::promise<void>>();
    auto f = done->get_future();
    sys.spawn(ping, p, batch, done);
    f.wait();
  }
  per_op_counters(state, cpu0, t0,
                  static_cast<double>(state.iterations() * batch));
  caf::anon_send_exit(p, caf::exit_reason::user_shutdown);
}
BENCHMARK(BM_CafRequestResponse)
    ->MeasureProcessCPUTime()
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

/// One engine over an in-process emulator engine, shared by the runs.
struct router_fixture {
  std::unique_ptr<emulator::engine> emu;
  std::shared_ptr<engine_port> port;
  std::unique_ptr<georoute_driver> driver;
  data_request read;

  router_fixture() {
    emulator::engine_options eo;
    eo.verify_auth = false; // the port signs; checking is the server's work
    emu = std::make_unique<emulator::engine>(eo);
    const std::string global = "http://127.0.0.1:9/";
    std::map<std::string, std::string> endpoints{
        {"West US", "http://127.0.0.1:10/"},
        {"East US", "http://127.0.0.1:11/"},
        {"North Europe", "http://127.0.0.1:12/"}};
    emu->set_endpoints(endpoints);
    auto post = [&](const std::string& target, const std::string& body,
                    std::map<std::string, std::string> headers = {}) {
      emulator::http_request r;
      r.method = "POST";
      r.target = target;
      r.body = body;
      r.headers = std::move(headers);
      r.headers["content-type"] = "application/json";
      return emu->handle("West US", r).status;
    };
    post("/dbs", R"({"id":"bench"})");
    post("/dbs/bench/colls",
         R"({"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash",)"
         R"("version":2}})");
    post("/dbs/bench/colls/c/docs",
         R"({"id":"x","pk":"p","payload":"0123456789abcdef"})",
         {{"x-ms-documentdb-partitionkey", R"(["p"])"}});
    port = std::make_shared<engine_port>(
        *emu, global, endpoints, emulator::default_master_key, true, true);
    driver_options o;
    o.global_endpoint = global;
    o.key = emulator::default_master_key;
    o.preferred_regions = {"West US", "East US", "North Europe"};
    o.port = port;
    auto d = georoute_driver::start(o);
    if (!d) {
      std::fprintf(stderr, "router fixture: %s\n", d.error().what.c_str());
      std::abort();
    }
    driver = std::move(*d);
    read = point_read("dbs/bench/colls/c", "x", "p");
    std::string err;
    if (!driver->route_once(read, &err)) {
      std::fprintf(stderr, "router fixture: first read: %s\n", err.c_str());
      std::abort();
    }
  }
};

/// Built on first use, destroyed by main() before static destruction
/// (the actor system must end while everything it uses is alive).
std::unique_ptr<router_fixture>& fixture_slot() {
  static std::unique_ptr<router_fixture> f;
  return f;
}

router_fixture& fixture() {
  auto& f = fixture_slot();
  if (!f) f = std::make_unique<router_fixture>();
  return *f;
}

void BM_RouterPointRead_CacheHit(benchmark::State& state) {
  auto& f = fixture();
  auto in_flight = static_cast<size_t>(state.range(0));
  constexpr size_t batch = 4000;
  uint64_t ok = 0;
  auto replayed0 = f.port->replayed();
  auto cpu0 = process_cpu_seconds();
  auto t0 = steady::now();
  for (auto _ : state)
    ok += f.driver->run_ops(f.read, batch, in_flight);
  auto ops = static_cast<double>(state.iterations() * batch);
  if (ok != state.iterations() * batch)
    state.SkipWithError("some routed reads failed");
  if (f.port->replayed() - replayed0 < ok)
    state.SkipWithError("a read was not answered from the port's cache");
  per_op_counters(state, cpu0, t0, ops);
}
BENCHMARK(BM_RouterPointRead_CacheHit)
    ->Arg(1)
    ->Arg(16)
    ->MeasureProcessCPUTime()
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

/// The clock's work for request timeouts, with `window` of them pending for
/// one actor: each op cancels one (the oldest, as if it fired; or a random
/// one, a reply in any order) and sets a new one 10 s ahead in its place.
/// Firing itself (a message to the actor) is the same in both clocks and
/// not measured.
class timeout_churn {
public:
  timeout_churn(caf::actor_clock& clk, caf::abstract_actor* self, size_t window,
                bool random)
      : clk_(clk), self_(self), random_(random) {
    live_.reserve(window);
    for (size_t i = 0; i < window; ++i)
      live_.push_back(set_one());
  }

  ~timeout_churn() {
    for (auto id : live_)
      clk_.cancel_request_timeout(self_, id);
  }

  timeout_churn(const timeout_churn&) = delete;
  timeout_churn& operator=(const timeout_churn&) = delete;

  void op() {
    auto pos = random_ ? rng_() % live_.size() : k_++ % live_.size();
    clk_.cancel_request_timeout(self_, live_[pos]);
    live_[pos] = set_one();
  }

private:
  caf::message_id set_one() {
    auto id = caf::message_id{caf::message_id::default_async_value + ++n_}
                  .response_id();
    clk_.set_request_timeout(clk_.now() + std::chrono::seconds{10}, self_, id);
    return id;
  }

  caf::actor_clock& clk_;
  caf::abstract_actor* self_;
  bool random_;
  std::vector<caf::message_id> live_;
  uint64_t n_ = 0;
  size_t k_ = 0;
  std::mt19937_64 rng_{1};
};

/// CAF's `simple_actor_clock`, which CAF's clock thread uses (and the loop
/// for every timer but request timeouts), driven from this thread.
void BM_RequestTimeouts_CafClock(benchmark::State& state) {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  caf::detail::simple_actor_clock clk;
  timeout_churn c{clk, self.ptr(), static_cast<size_t>(state.range(0)),
                  state.range(1) != 0};
  for (auto _ : state)
    c.op();
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RequestTimeouts_CafClock)
    ->ArgNames({"held", "random"})
    ->ArgsProduct({{64, 20000, 200000}, {0, 1}})
    ->UseRealTime();

/// The engine loop's clock, from an actor on the loop thread (where a
/// caller's `request` sets its timeout); this thread only waits.
void BM_RequestTimeouts_EngineLoop(benchmark::State& state) {
  caf::actor_system_config cfg;
  cfg.load<engine_loop>();
  caf::actor_system sys{cfg};
  std::promise<void> done;
  sys.spawn([&](caf::event_based_actor* me) {
    {
      timeout_churn c{me->clock(), me, static_cast<size_t>(state.range(0)),
                      state.range(1) != 0};
      for (auto _ : state)
        c.op();
      state.SetItemsProcessed(state.iterations());
    }
    done.set_value();
    me->quit();
  });
  done.get_future().wait();
}
BENCHMARK(BM_RequestTimeouts_EngineLoop)
    ->ArgNames({"held", "random"})
    ->ArgsProduct({{64, 20000, 200000}, {0, 1}})
    ->UseRealTime();

} // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  fixture_slot().reset();
  benchmark::Shutdown();
  return 0;
}
