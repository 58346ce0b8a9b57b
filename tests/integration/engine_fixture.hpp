#pragma once

// The engine against the embedded emulator, in real time: an emulator on
// 127.0.0.1 (ephemeral ports), three regions, a collection "dbs/d/colls/c"
// partitioned on /pk, and an engine on CAF's normal scheduler with short
// ladders and pauses so that a failover takes well under a second. Shared
// by the engine and data-plane tests.

#include "georoute/actors/engine.hpp"
#include "georoute/messages/error.hpp"
#include "georoute/messages/types.hpp"
#include "georoute/transport/auth.hpp"
#include "georoute/transport/http_client.hpp"
#include "tests/emulator/emulator.hpp"
#include "tests/engine_loop_choice.hpp"

#include <caf/all.hpp>
#include <chrono>
#include <functional>
#include <future>
#include <gtest/gtest.h>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

namespace georoute::test {

using namespace std::chrono_literals;

struct engine_config : caf::actor_system_config {
  engine_config() {
    register_types(*this);
    // GEOROUTE_ENGINE_LOOP=1 runs the suite on the engine loop.
    if (!load_chosen_scheduler(*this, false)) set("scheduler.max-threads", 2);
  }
};

// What callers got, shared with the test thread.
struct replies {
  std::mutex mtx;
  std::vector<std::string> got;

  void add(std::string s) {
    std::lock_guard<std::mutex> guard{mtx};
    got.push_back(std::move(s));
  }
  std::vector<std::string> all() {
    std::lock_guard<std::mutex> guard{mtx};
    return got;
  }
};

inline std::string describe(const caf::error& e) {
  if (e == caf::sec::request_timeout) return "timeout";
  return std::string{to_string(code_of(e))} + ": " + context_of(e);
}

// Asks the collection cache with its own timeout, records the answer, quits.
inline caf::behavior collection_caller(caf::event_based_actor* self,
                                       collection_cache_actor cache,
                                       caf::timespan timeout,
                                       std::shared_ptr<replies> out) {
  self->request(cache, timeout, by_name_atom_v, std::string{"dbs/d/colls/c"},
                false, std::string{})
      .then(
          [=](collection_info& c) {
            out->add("ok " + c.id);
            self->quit();
          },
          [=](caf::error& e) {
            out->add(describe(e));
            self->quit();
          });
  return {[](caf::ok_atom) {}};
}

// A point operation on document `id` of dbs/d/colls/c; writes carry
// {"id", "pk", "n": 1}.
inline data_request point(data_op op, std::string id, std::string pk = "p0") {
  data_request r;
  r.op = op;
  r.collection_link = "dbs/d/colls/c";
  r.id = id;
  r.options.partition_key_json = "[\"" + pk + "\"]";
  if (op == data_op::create || op == data_op::upsert || op == data_op::replace)
    r.body = nlohmann::json{{"id", id}, {"pk", pk}, {"n", 1}}.dump();
  return r;
}

class engine_test : public ::testing::Test {
protected:
  std::unique_ptr<emulator::emulator> emu;
  engine_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  std::optional<engine> eng;
  config::settings settings;

  /// Changed by a test before `start`.
  emulator::emulator_options emu_options;

  /// Hook: adjust `settings` before the engine starts.
  virtual void configure() {}
  /// Hook: adjust the engine's options (a log sink, restart limits)
  /// before it starts.
  virtual void configure_engine(engine_options&) {}

  void SetUp() override { start(); }

  void start() {
    emulator::emulator_options o = emu_options;
    if (o.engine.regions.empty())
      o.engine.regions = {"West US", "East US", "North Europe"};
    auto started = emulator::emulator::start(o);
    ASSERT_TRUE(started) << started.error().what;
    emu = std::move(*started);
    settings.account_endpoint = emu->global_endpoint();
    settings.account_key = config::secret{emu->key()};
    settings.location.preferred_regions = {"West US", "East US",
                                           "North Europe"};
    settings.refresh.min_interval = 0ms;
    settings.retry.failover_retry_interval = 50ms;
    settings.retry.metadata_hard_deadline = 30s;
    timeout_ladder short_ladder{{150ms, 0ms}, {150ms, 0ms}};
    settings.http.ladders.hot_path = short_ladder;
    settings.http.ladders.default_ladder = short_ladder;
    settings.http.ladders.control_plane_read = short_ladder;
    settings.http.ladders.partition_failover = short_ladder;
    create_collection();
    configure();
    sys = std::make_unique<caf::actor_system>(cfg);
    engine_options eo;
    eo.sweep_after = 500ms;
    configure_engine(eo);
    auto e = engine::start(*sys, settings, eo);
    ASSERT_TRUE(e) << sys->render(e.error());
    eng.emplace(std::move(*e));
    // The first account read lands: requests go to the regions from now on.
    wait_for(
        [&] {
          auto r = ask<resolution>(eng->locations(), 5s, resolve_atom_v,
                                   resolve_input{});
          return r && r->endpoint != emu->global_endpoint();
        },
        "the first account read");
  }

  void TearDown() override {
    if (eng) eng->stop();
    eng.reset();
    sys.reset();
    emu.reset();
  }

  /// A signed POST to the emulator's global endpoint, outside the engine
  /// (`partition_key_json` empty: no partition-key header).
  transport::outcome post_to_emulator(const std::string& target,
                                      const std::string& body,
                                      const std::string& partition_key_json) {
    auto key = transport::parse_master_key(emu->key());
    transport::http_client c{transport::http_client_options{}};
    transport::request r;
    r.method = "POST";
    r.endpoint = emu->global_endpoint();
    r.target = target;
    r.body = body;
    r.headers = {{"content-type", "application/json"}};
    if (!partition_key_json.empty())
      r.headers.emplace_back("x-ms-documentdb-partitionkey",
                             partition_key_json);
    r.timeout = 5s;
    transport::sign_request(r, *key, std::chrono::system_clock::now());
    std::promise<transport::outcome> p;
    auto f = p.get_future();
    c.send(std::move(r),
           [&p](transport::outcome o) { p.set_value(std::move(o)); });
    return f.get();
  }

  void create_collection() {
    for (
        auto [target, body] :
        {std::pair<std::string, std::string>{"/dbs", R"({"id":"d"})"},
         {"/dbs/d/colls",
          R"({"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}})"}}) {
      auto o = post_to_emulator(target, body, "");
      ASSERT_EQ(o.status, 201) << o.body;
    }
  }

  template <class T, class Handle, class... Ts>
  caf::expected<T> ask(const Handle& h, caf::timespan timeout, Ts&&... xs) {
    caf::scoped_actor self{*sys};
    caf::expected<T> result{caf::error{}};
    self->request(h, timeout, std::forward<Ts>(xs)...)
        .receive([&](T& x) { result = std::move(x); },
                 [&](caf::error& e) { result = std::move(e); });
    return result;
  }

  void wait_for(const std::function<bool()>& pred, const char* what) {
    for (int i = 0; i < 500; ++i) {
      if (pred()) return;
      std::this_thread::sleep_for(20ms);
    }
    FAIL() << "timed out waiting for " << what;
  }

  caf::expected<collection_info> read_collection(caf::timespan timeout = 5s) {
    return ask<collection_info>(eng->collections(), timeout, by_name_atom_v,
                                std::string{"dbs/d/colls/c"}, false,
                                std::string{});
  }

  uint64_t live_in_retry() {
    auto s = ask<retry_stats>(eng->retry(), 5s, stats_atom_v);
    return s ? s->live : 0;
  }

  void set_all_regions(emulator::region_state state) {
    for (auto r : {"West US", "East US", "North Europe"})
      EXPECT_TRUE(emu->set_region_state(r, state));
  }

  // Starts a caller whose fetch hangs (every region hangs; 30 s timeout) and
  // waits until the retry actor works on it.
  std::shared_ptr<replies> hung_caller() {
    set_all_regions(emulator::region_state::hang);
    auto out = std::make_shared<replies>();
    sys->spawn(collection_caller, eng->collections(), caf::timespan{30s}, out);
    wait_for([&] { return live_in_retry() > 0; }, "the fetch to start");
    return out;
  }

  void kill(const caf::actor& a) {
    caf::anon_send_exit(a, caf::exit_reason::kill);
  }
};

} // namespace georoute::test
