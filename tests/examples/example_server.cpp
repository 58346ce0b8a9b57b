// An actor server that embeds georoute: order-desk actors of its own send
// requests to the engine's router, react to the replies and to their own
// timeouts; a blocking client (for code that is not an actor) reads the
// result; the engine stops as one unit before the actor system goes.
//
//   georoute_example_server [ACCOUNT_ENDPOINT]   (key: GEOROUTE_ACCOUNT_KEY)
//
// Given an endpoint, it talks to that account (a Cosmos DB gateway, or
// `georoute emulator`). Without one, in georoute's own build
// (GEOROUTE_EXAMPLE_EMULATOR), it starts the embedded multi-region emulator
// on 127.0.0.1 (ephemeral ports), so it runs anywhere. Exit status 0 when
// every order went through. It needs only the installed package:
// tests/examples/CMakeLists.txt builds it with find_package(georoute).

#include <georoute/actors/client.hpp>
#include <georoute/actors/engine.hpp>
#include <georoute/messages/error.hpp>
#include <georoute/messages/types.hpp>
#include <georoute/transport/auth.hpp>
#include <georoute/transport/http_client.hpp>
#ifdef GEOROUTE_EXAMPLE_EMULATOR
#  include "tests/emulator/emulator.hpp"
#endif

#include <caf/all.hpp>
#include <cstdlib>
#include <future>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

namespace {

using namespace std::chrono_literals;
using namespace georoute;

const std::string orders = "dbs/shop/colls/orders";

// What a desk reports when its order did not go through.
using failed_atom = caf::atom_constant<caf::atom("failed")>;
constexpr failed_atom failed_atom_v = failed_atom{};

struct server_config : caf::actor_system_config {
  server_config() {
    register_types(*this);
    set("scheduler.max-threads", 2);
  }
};

// Where the account is and its master key.
struct account {
  std::string endpoint;
  std::string key;
};

// The database and collection, created through the REST API (an existing
// one, 409, is fine).
bool create_collection(const account& acc) {
  auto key = transport::parse_master_key(acc.key);
  if (!key) return false;
  transport::http_client http{transport::http_client_options{}};
  for (
      auto [target, body] :
      {std::pair<std::string, std::string>{"/dbs", R"({"id":"shop"})"},
       {"/dbs/shop/colls",
        R"({"id":"orders","partitionKey":{"paths":["/customer"],"kind":"Hash","version":2}})"}}) {
    transport::request r;
    r.method = "POST";
    r.endpoint = acc.endpoint;
    r.target = target;
    r.body = body;
    r.headers = {{"content-type", "application/json"}};
    r.timeout = 5s;
    transport::sign_request(r, *key, std::chrono::system_clock::now());
    std::promise<transport::outcome> p;
    auto f = p.get_future();
    http.send(std::move(r),
              [&p](transport::outcome o) { p.set_value(std::move(o)); });
    auto status = f.get().status;
    if (status != 201 && status != 409) return false;
  }
  return true;
}

// An order desk: places one order, reads it back, reports to `boss`. Its
// own timeouts are its only way to give up; georoute's failover decisions
// run on regardless.
caf::behavior order_desk(caf::event_based_actor* self, router_actor router,
                         caf::actor boss, int n) {
  auto customer = "customer-" + std::to_string(n % 4);
  data_request place;
  place.op = data_op::create;
  place.collection_link = orders;
  place.body = nlohmann::json{
      {"id", "order-" + std::to_string(n)},
      {"customer", customer},
      {"total",
       10 * n}}.dump();
  place.options = pk(customer);
  self->request(router, 2s, route_atom_v, place)
      .then(
          [=](data_response& placed) {
            data_request check;
            check.op = data_op::read;
            check.collection_link = orders;
            check.id = "order-" + std::to_string(n);
            check.options = pk(customer);
            self->request(router, 2s, route_atom_v, check)
                .then(
                    [=](data_response& got) {
                      self->send(boss, caf::ok_atom_v,
                                 "order " + std::to_string(n) + " placed in " +
                                     placed.diag.attempts.back().region +
                                     ", read back (" +
                                     std::to_string(got.diag.attempts.size()) +
                                     " attempt) from " +
                                     got.diag.attempts.back().region);
                      self->quit();
                    },
                    [=](caf::error& e) {
                      self->send(boss, failed_atom_v,
                                 "order " + std::to_string(n) +
                                     ": read back failed: " +
                                     self->system().render(e));
                      self->quit();
                    });
          },
          [=](caf::error& e) {
            // Our own timeout, or the engine's answer.
            auto what = e == caf::sec::request_timeout
                            ? std::string{"gave up after 2 s"}
                            : self->system().render(e);
            self->send(boss, failed_atom_v,
                       "order " + std::to_string(n) + ": " + what);
            self->quit();
          });
  return {[](caf::ok_atom) {}};
}

} // namespace

int main(int argc, char** argv) {
  account acc;
#ifdef GEOROUTE_EXAMPLE_EMULATOR
  std::unique_ptr<emulator::emulator> emu; // outlives the actor system
#endif
  if (argc > 1) {
    const char* key = std::getenv("GEOROUTE_ACCOUNT_KEY");
    if (key == nullptr || *key == '\0') {
      std::cerr << "example: set GEOROUTE_ACCOUNT_KEY to the master key of "
                << argv[1] << "\n";
      return 2;
    }
    acc = {argv[1], key};
  } else {
#ifdef GEOROUTE_EXAMPLE_EMULATOR
    emulator::emulator_options eo;
    eo.engine.regions = {"West US", "East US", "North Europe"};
    auto started = emulator::emulator::start(eo);
    if (!started) {
      std::cerr << "example: the emulator did not start\n";
      return 1;
    }
    emu = std::move(*started);
    acc = {emu->global_endpoint(), emu->key()};
#else
    std::cerr << "usage: georoute_example_server ACCOUNT_ENDPOINT (the master "
                 "key in GEOROUTE_ACCOUNT_KEY)\n";
    return 2;
#endif
  }
  if (!create_collection(acc)) {
    std::cerr << "example: cannot create dbs/shop/colls/orders at "
              << acc.endpoint << "\n";
    return 1;
  }
  config::settings settings;
  settings.account_endpoint = acc.endpoint;
  settings.account_key = config::secret{acc.key};
  settings.location.preferred_regions = {"East US", "West US"};
  server_config cfg;
  int failed = 0;
  {
    caf::actor_system sys{cfg};
    auto eng = engine::start(sys, settings);
    if (!eng) {
      std::cerr << "example: " << sys.render(eng.error()) << "\n";
      return 1;
    }
    // Ten desks at once; the scoped actor collects what they report.
    caf::scoped_actor boss{sys};
    const int desks = 10;
    for (int n = 0; n < desks; ++n)
      sys.spawn(order_desk, eng->router(), caf::actor{boss}, n);
    for (int i = 0; i < desks; ++i)
      boss->receive([&](caf::ok_atom,
                        const std::string& line) { std::cout << line << "\n"; },
                    [&](failed_atom, const std::string& line) {
                      std::cout << line << "\n";
                      ++failed;
                    },
                    caf::after(30s) >>
                        [&] {
                          std::cout << "a desk never reported\n";
                          ++failed;
                        });
    // Code that is not an actor uses the blocking client.
    client db{sys, *eng, 5s};
    auto o = db.read(orders, "order-3", pk("customer-3"));
    if (o)
      std::cout << "blocking read: " << o->body.substr(0, 60) << "... in "
                << o->diag.total_us << " us\n";
    else
      ++failed, std::cout << "blocking read failed: " << sys.render(o.error())
                          << "\n";
    auto missing = db.read(orders, "no-such-order", pk("customer-0"));
    if (missing || code_of(missing.error()) != errc::not_found)
      ++failed, std::cout << "a missing order was not a not_found error\n";
    eng->stop(); // before the actor system goes
  }
  std::cout << (failed == 0 ? "all orders went through\n"
                            : std::to_string(failed) + " failures\n");
  return failed == 0 ? 0 : 1;
}
