#pragma once

// The whole metadata plane against the embedded emulator, in real time: an
// emulator on 127.0.0.1 (ephemeral ports), the Beast client, and the actors
// on CAF's normal scheduler. Ladders and intervals are shortened so a test
// takes about a second; nothing asserts on elapsed time.
//
// Teardown order matters: actors are told to exit and awaited, then the HTTP
// client (and its io threads) goes, then the actor system, then the emulator.

#include "georoute/actors/endpoint_manager.hpp"
#include "georoute/actors/location_cache.hpp"
#include "georoute/actors/retry.hpp"
#include "georoute/actors/router.hpp"
#include "georoute/messages/types.hpp"
#include "georoute/transport/auth.hpp"
#include "georoute/transport/http_client.hpp"
#include "georoute/transport/port.hpp"
#include "tests/emulator/emulator.hpp"
#include "tests/engine_loop_choice.hpp"

#include <caf/all.hpp>
#include <chrono>
#include <functional>
#include <future>
#include <gtest/gtest.h>
#include <memory>
#include <thread>

namespace georoute::test {

struct integration_config : caf::actor_system_config {
  integration_config() {
    register_types(*this);
    // GEOROUTE_ENGINE_LOOP=1 runs the suite on the engine loop.
    if (!load_chosen_scheduler(*this, false)) set("scheduler.max-threads", 2);
  }
};

class stack_test : public ::testing::Test {
protected:
  // Declared in construction order; destroyed in reverse (see TearDown).
  std::unique_ptr<emulator::emulator> emu;
  integration_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  std::shared_ptr<transport::http_client> client;
  transport::port_ptr http;
  std::vector<caf::actor> actors;

  location_cache_actor locations;
  endpoint_manager_actor endpoints;
  retry_actor retry;
  router_actor router;

  std::vector<std::string> regions{"West US", "East US", "North Europe"};

  /// Settings used by every actor: short ladders, short pauses.
  config::settings settings;

  void start_emulator(bool multi_write = false) {
    emulator::emulator_options o;
    o.engine.regions = regions;
    o.engine.multi_write = multi_write;
    auto started = emulator::emulator::start(o);
    ASSERT_TRUE(started) << started.error().what;
    emu = std::move(*started);
    settings.account_endpoint = emu->global_endpoint();
    settings.account_key = config::secret{emu->key()};
    settings.location.preferred_regions = regions;
    settings.refresh.background_interval = std::chrono::seconds{300};
    settings.refresh.min_interval = std::chrono::milliseconds{0};
    settings.retry.failover_retry_interval = std::chrono::milliseconds{50};
    settings.retry.metadata_hard_deadline = std::chrono::seconds{30};
    using std::chrono::milliseconds;
    timeout_ladder short_ladder{{milliseconds{150}, milliseconds{0}},
                                {milliseconds{150}, milliseconds{0}}};
    settings.http.ladders.hot_path = short_ladder;
    settings.http.ladders.default_ladder = short_ladder;
    settings.http.ladders.control_plane_read = short_ladder;
  }

  /// Spawns location cache, endpoint manager, retry actor and router, and
  /// waits for the first account read.
  void start_actors() {
    sys = std::make_unique<caf::actor_system>(cfg);
    transport::http_client_options co;
    co.max_connections_per_endpoint = 4;
    co.loop = engine_loop_io(*sys); // null on CAF's default scheduler
    client = std::make_shared<transport::http_client>(co);
    http = transport::make_gateway_port(client, settings.account_key.reveal());
    locations = spawn_location_cache(*sys, location_options_from(settings));
    auto em_cfg = endpoint_manager_config_from(settings);
    em_cfg.sweep_after = std::chrono::milliseconds{500};
    endpoints = spawn_endpoint_manager(*sys, em_cfg, locations, http);
    router = spawn_router(*sys, router_config_from(settings),
                          {locations, endpoints, {}, {}, http, {}, {}});
    retry = spawn_retry(*sys, retry_config_from(settings),
                        {locations, endpoints, http, router, caf::actor{}, {}});
    for (auto a : {caf::actor_cast<caf::actor>(locations),
                   caf::actor_cast<caf::actor>(endpoints),
                   caf::actor_cast<caf::actor>(retry),
                   caf::actor_cast<caf::actor>(router)})
      actors.push_back(a);
    auto acct = ask<database_account>(endpoints, std::chrono::seconds{10},
                                      account_atom_v);
    ASSERT_TRUE(acct) << sys->render(acct.error());
    // The location cache has the account once it answers a resolve after it.
    wait_for([&] {
      auto r = ask<resolution>(locations, std::chrono::seconds{5},
                               resolve_atom_v, resolve_input{});
      return r && r->endpoint != emu->global_endpoint();
    });
  }

  void TearDown() override {
    if (sys) {
      caf::scoped_actor self{*sys};
      for (auto& a : actors) {
        self->monitor(a);
        self->send_exit(a, caf::exit_reason::user_shutdown);
      }
      for (size_t i = 0; i < actors.size(); ++i)
        self->receive([](const caf::down_msg&) {},
                      caf::after(std::chrono::seconds{10}) >>
                          [] { ADD_FAILURE() << "an actor did not exit"; });
    }
    actors.clear();
    locations = nullptr;
    endpoints = nullptr;
    retry = nullptr;
    router = nullptr;
    http.reset();
    client.reset(); // joins the io threads; late completions are dropped
    sys.reset();    // awaits every actor
    emu.reset();    // closes the servers
  }

  /// A blocking request with a timeout (the caller's only way to give up).
  template <class T, class Handle, class... Ts>
  caf::expected<T> ask(const Handle& h, caf::timespan timeout, Ts&&... xs) {
    caf::scoped_actor self{*sys};
    caf::expected<T> result{caf::error{}};
    self->request(h, timeout, std::forward<Ts>(xs)...)
        .receive([&](T& x) { result = std::move(x); },
                 [&](caf::error& e) { result = std::move(e); });
    return result;
  }

  /// Polls `pred` every 20 ms for up to 10 s.
  void wait_for(const std::function<bool()>& pred,
                const char* what = "condition") {
    for (int i = 0; i < 500; ++i) {
      if (pred()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds{20});
    }
    FAIL() << "timed out waiting for " << what;
  }

  /// Sends one signed request to the emulator directly (test set-up).
  transport::outcome direct(const std::string& method,
                            const std::string& target, std::string body) {
    auto key = transport::parse_master_key(emu->key());
    transport::request r;
    r.method = method;
    r.endpoint = emu->global_endpoint();
    r.target = target;
    r.body = std::move(body);
    r.headers = {{"content-type", "application/json"}};
    r.timeout = std::chrono::seconds{5};
    transport::sign_request(r, *key, std::chrono::system_clock::now());
    transport::http_client c{transport::http_client_options{}};
    std::promise<transport::outcome> p;
    auto f = p.get_future();
    c.send(std::move(r),
           [&p](transport::outcome o) { p.set_value(std::move(o)); });
    return f.get();
  }

  void create_collection(const std::string& db, const std::string& coll) {
    auto d = direct("POST", "/dbs", R"({"id":")" + db + R"("})");
    ASSERT_TRUE(d.status == 201 || d.status == 409) << d.status << d.body;
    auto c = direct(
        "POST", "/dbs/" + db + "/colls",
        R"({"id":")" + coll +
            R"(","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}})");
    ASSERT_EQ(c.status, 201) << c.body;
  }

  /// Requests served by `region` so far, any status.
  uint64_t served_by(const std::string& region) {
    auto counters = emu->control().counters();
    uint64_t n = 0;
    for (const auto& [status, count] : counters[region])
      n += count;
    return n;
  }

  retry_stats retry_stats_now() {
    auto s = ask<retry_stats>(retry, std::chrono::seconds{5}, stats_atom_v);
    return s ? *s : retry_stats{};
  }
};

} // namespace georoute::test
