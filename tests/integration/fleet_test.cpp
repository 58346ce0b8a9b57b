// Region health shared across a fleet (actors/fleet.hpp), with engines of
// one process standing in for the processes of a fleet and an in-process
// bus for NATS: the bus delivers each report to every other member, as a
// NATS server with no-echo does. What is checked is the engine's side:
// its reads tell its fleet actor what they saw, two reporters' claims
// demote a region at a third engine that never read from it, one reporter
// is not enough, a newcomer asks for the claims and pays nothing, and a
// region comes back only after the receiver's own probe.

#include "georoute/actors/fleet.hpp"
#ifdef GEOROUTE_HAVE_NATS
#  include "georoute/actors/nats/fleet_link.hpp"
#  include "georoute/transport/nats/nkey.hpp"
#  include "georoute/transport/nats/server_config.hpp"
#  include "tests/transport/nats/nats_server_process.hpp"
#  include "tests/transport/test_pki.hpp"
#endif
#include "tests/integration/engine_fixture.hpp"

#include <atomic>
#include <map>

namespace {

using namespace georoute;
using namespace georoute::test;
using namespace std::chrono_literals;

// Delivers every report to every other member's inbox, at once, on the
// publisher's thread (the inbox only sends a message).
class fleet_bus {
public:
  class member final : public fleet_link {
  public:
    member(fleet_bus* bus, std::string rid) : bus_(bus), rid_(std::move(rid)) {}
    bool publish(const std::string& subject,
                 const std::string& payload) override {
      if (!connected()) return false;
      ++published;
      bus_->deliver(rid_, subject, payload);
      return true;
    }
    bool connected() const override { return up.load(); }
    std::atomic<bool> up{true};
    std::atomic<int> published{0};

  private:
    fleet_bus* bus_;
    std::string rid_;
  };

  std::pair<std::shared_ptr<member>, std::shared_ptr<fleet_inbox>>
  join(const std::string& rid) {
    auto link = std::make_shared<member>(this, rid);
    auto inbox = std::make_shared<fleet_inbox>();
    std::lock_guard<std::mutex> guard{mtx_};
    members_[rid] = inbox;
    return {link, inbox};
  }

  void deliver(const std::string& from, const std::string& subject,
               const std::string& payload) {
    std::vector<std::shared_ptr<fleet_inbox>> to;
    {
      std::lock_guard<std::mutex> guard{mtx_};
      for (auto& [rid, inbox] : members_)
        if (rid != from) to.push_back(inbox);
    }
    for (auto& inbox : to)
      inbox->deliver(fleet_inbound{subject, payload, false});
  }

private:
  std::mutex mtx_;
  std::map<std::string, std::shared_ptr<fleet_inbox>> members_;
};

class Fleet : public engine_test {
protected:
  fleet_bus bus;
  std::map<std::string, std::shared_ptr<fleet_bus::member>> links;
  std::map<std::string, engine> peers; // every engine but `eng` ("p1")

  void configure() override {
    settings.hedging.threshold = 75ms;
    fleet_settings(settings, "p1");
  }

  virtual void fleet_settings(config::settings& s, const std::string& rid) {
    s.fleet.enabled = true;
    s.fleet.servers = {"nats://127.0.0.1:4222"}; // not used: the bus is
    s.fleet.fleet = "test";
    s.fleet.reporter = rid;
    s.fleet.probe_interval = 200ms;
  }

  // The link and inbox of reporter `rid`, into `eo`.
  virtual void connect(const config::settings&, const std::string& rid,
                       engine_options& eo) {
    auto [link, inbox] = bus.join(rid);
    links[rid] = link;
    eo.fleet = link;
    eo.inbox = inbox;
  }

  void configure_engine(engine_options& eo) override {
    connect(settings, "p1", eo);
  }

  // Starts another engine of the fleet, reporter `rid`.
  engine& add(const std::string& rid) {
    auto s = settings;
    fleet_settings(s, rid);
    engine_options eo;
    eo.sweep_after = 500ms;
    connect(s, rid, eo);
    auto e = engine::start(*sys, s, eo);
    EXPECT_TRUE(e) << sys->render(e.error());
    auto& ref = peers.emplace(rid, std::move(*e)).first->second;
    wait_for(
        [&] {
          auto r = ask<resolution>(ref.locations(), 5s, resolve_atom_v,
                                   resolve_input{});
          return r && r->endpoint != emu->global_endpoint();
        },
        "the peer's first account read");
    return ref;
  }

  engine& at(const std::string& rid) {
    return rid == "p1" ? *eng : peers.at(rid);
  }

  void TearDown() override {
    for (auto& [rid, e] : peers)
      e.stop();
    peers.clear();
    engine_test::TearDown();
  }

  caf::expected<data_response> read(const std::string& rid,
                                    const std::string& id = "doc1") {
    return ask<data_response>(at(rid).router(), 10s, route_atom_v,
                              point(data_op::read, id));
  }

  // The region the engine's next read goes to first.
  std::string first_read_region(const std::string& rid) {
    resolve_input in;
    in.op = op_kind::read;
    auto r = ask<resolution>(at(rid).locations(), 5s, resolve_atom_v, in);
    return r ? r->region : "?";
  }

  // The fleet actor's counters, for a failure's message.
  std::string fleet_of(const std::string& rid) {
    auto s = ask<fleet_stats>(at(rid).fleet(), 5s, stats_atom_v);
    if (!s) return rid + ": no stats";
    return rid + ": published " + std::to_string(s->published) + " refused " +
           std::to_string(s->publish_refused) + " received " +
           std::to_string(s->received) + " accepted " +
           std::to_string(s->health.accepted) + " sent " +
           std::to_string(s->report.sent) + " withheld(unhealthy " +
           std::to_string(s->report.withheld_unhealthy) + ", many " +
           std::to_string(s->report.withheld_many) + ") lh " +
           std::to_string(s->local_health) + " demoted " +
           std::to_string(s->demoted.size()) + " probes " +
           std::to_string(s->probes) + "/" + std::to_string(s->probes_ok) +
           " dropped(subject " + std::to_string(s->dropped_subject) +
           ", region " + std::to_string(s->dropped_region) + ", malformed " +
           std::to_string(s->health.dropped_malformed) + ", skew " +
           std::to_string(s->health.dropped_clock_skew) + ")";
  }

  static std::string first_arm(const data_response& r) {
    return r.diag.attempts.empty() ? "-" : r.diag.attempts.front().region;
  }

  // One read at each: the collection and its ranges are cached, so that
  // the reads after the hang meet West US in the data plane.
  void warm(std::vector<std::string> rids) {
    for (const auto& rid : rids) {
      auto r = read(rid);
      ASSERT_TRUE(r) << rid << ": " << sys->render(r.error());
      ASSERT_EQ(first_arm(*r), "West US") << rid;
    }
  }

  // Reads at `rid` until West US (hung) made two of them wait for the
  // threshold and East answered them.
  void witness(const std::string& rid) {
    for (int i = 0; i < 2; ++i) {
      auto r = read(rid);
      ASSERT_TRUE(r) << sys->render(r.error());
    }
  }
};

TEST_F(Fleet, TwoReportersDemoteTheRegionAtAThird_ItsFirstReadSkipsIt) {
  ASSERT_TRUE(ask<data_response>(eng->router(), 10s, route_atom_v,
                                 point(data_op::create, "doc1")));
  add("p2");
  add("p3");
  warm({"p1", "p2", "p3"});
  ASSERT_EQ(first_read_region("p3"), "West US");
  ASSERT_TRUE(emu->set_region_state("West US", emulator::region_state::hang));
  witness("p1");
  // What p1's reads saw reached its fleet actor: two waits for the
  // threshold on West, the hedges' answers from East.
  wait_for(
      [&] {
        auto s = ask<fleet_stats>(eng->fleet(), 5s, stats_atom_v);
        return s && s->seen_threshold_waits >= 2 && s->seen_successes >= 2;
      },
      "p1's router to tell its fleet actor what its reads saw");
  // One reporter: a claim, but no verdict at p3.
  wait_for([&] { return links["p1"]->published.load() >= 2; },
           "p1's ask and claim");
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(first_read_region("p3"), "West US") << "one vote is not enough";
  witness("p2");
  wait_for([&] { return first_read_region("p3") == "East US"; },
           "p3 to move West US after East US on the fleet's word");
  if (HasFailure())
    std::cerr << fleet_of("p1") << "\n"
              << fleet_of("p2") << "\n"
              << fleet_of("p3") << "\n";
  // p1's own claim is one vote at p1: with p2's it makes a verdict there
  // too.
  wait_for(
      [&] {
        auto s = ask<fleet_stats>(eng->fleet(), 5s, stats_atom_v);
        return s && s->demoted == std::vector<std::string>{"West US"};
      },
      "p1 to demote West US on its own claim and p2's");
  // p3 never read from West: its first read goes to East, without a wait.
  auto r = read("p3");
  ASSERT_TRUE(r) << sys->render(r.error());
  EXPECT_EQ(first_arm(*r), "East US");
  EXPECT_EQ(r->diag.hedges, 0u);
  // A soft demotion, not a mark: West is still in p3's list, last.
  resolve_input last;
  last.op = op_kind::read;
  last.location_index = 2;
  auto lr =
      ask<resolution>(peers.at("p3").locations(), 5s, resolve_atom_v, last);
  ASSERT_TRUE(lr);
  EXPECT_EQ(lr->region, "West US");

  // West recovers: the reporters' probes answer, their claims are taken
  // back, and p3 restores West only after its own probe answered.
  ASSERT_TRUE(emu->set_region_state("West US", emulator::region_state::online));
  // The verdict holds 5 s at least, then waits for p3's probe.
  for (int i = 0; i < 1500 && first_read_region("p3") != "West US"; ++i)
    std::this_thread::sleep_for(20ms);
  ASSERT_EQ(first_read_region("p3"), "West US")
      << "p3 to restore West US after its own probe";
  auto back = read("p3");
  ASSERT_TRUE(back) << sys->render(back.error());
  EXPECT_EQ(first_arm(*back), "West US");
}

TEST_F(Fleet, ANewcomerAsksForTheClaims_ItsFirstReadSkipsTheRegion) {
  ASSERT_TRUE(ask<data_response>(eng->router(), 10s, route_atom_v,
                                 point(data_op::create, "doc1")));
  add("p2");
  warm({"p1", "p2"});
  ASSERT_TRUE(emu->set_region_state("West US", emulator::region_state::hang));
  witness("p1");
  witness("p2");
  wait_for([&] { return links["p2"]->published.load() >= 2; }, "p2's claim");
  // Started after the claims went out: its ask brings them again.
  add("p4");
  wait_for([&] { return first_read_region("p4") == "East US"; },
           "the newcomer to know of West US");
  auto r = read("p4");
  ASSERT_TRUE(r) << sys->render(r.error());
  EXPECT_EQ(first_arm(*r), "East US");
  EXPECT_EQ(r->diag.hedges, 0u);
}

TEST_F(Fleet, LinkDown_NothingIsSent_ReadsAsWithoutSharing) {
  ASSERT_TRUE(ask<data_response>(eng->router(), 10s, route_atom_v,
                                 point(data_op::create, "doc1")));
  auto fleet = caf::actor_cast<caf::actor>(eng->fleet());
  links["p1"]->up = false;
  // The link was up until now: the newcomer's ask may have gone out on the
  // first tick (a slow build gets there before the link goes down). The
  // stats' answer comes after the handler that was running, so any publish
  // that saw the link up is counted by then.
  auto before = ask<fleet_stats>(fleet, 5s, stats_atom_v);
  ASSERT_TRUE(before);
  auto sent_before = links["p1"]->published.load();
  ASSERT_TRUE(emu->set_region_state("West US", emulator::region_state::hang));
  witness("p1");
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(links["p1"]->published.load(), sent_before);
  auto s = ask<fleet_stats>(fleet, 5s, stats_atom_v);
  ASSERT_TRUE(s);
  EXPECT_GT(s->report.dropped_disconnected,
            before->report.dropped_disconnected);
  EXPECT_EQ(s->published, before->published);
}

#ifdef GEOROUTE_HAVE_NATS

// The same fleet over a real nats-server: TLS, one NKey user per engine,
// each allowed to publish on its own subjects only, and the engine's link
// made by make_nats_fleet_link from the settings, as a host makes it.
class FleetOverNats : public Fleet {
protected:
  std::unique_ptr<georoute::testing::test_pki> pki;
  std::unique_ptr<georoute::testing::nats_server_process> server;
  std::map<std::string, nkey_pair> keys;
  std::map<std::string, nats_fleet> nats_links;

  void SetUp() override {
    if (georoute::testing::nats_server_path().empty())
      GTEST_SKIP() << "nats-server not installed";
    pki = std::make_unique<georoute::testing::test_pki>();
    std::vector<nats_fleet_user> users;
    for (const char* rid : {"p1", "p2", "p3"}) {
      auto k = generate_user_nkey();
      ASSERT_TRUE(k) << k.error().what;
      keys[rid] = *k;
      auto file = pki->dir() + "/" + rid + ".nk";
      ASSERT_FALSE(write_nkey_seed_file(file, k->seed));
      users.push_back({rid, k->public_key});
    }
    nats_server_config_options so;
    so.fleet = "test";
    so.tls_cert_file = pki->server_cert;
    so.tls_key_file = pki->server_key;
    so.users = users;
    server = std::make_unique<georoute::testing::nats_server_process>(
        pki->dir(), [so](int port) {
          auto o = so;
          o.port = port;
          auto text = nats_server_config(o);
          return text ? *text : std::string{};
        });
    ASSERT_TRUE(server->start()) << server->error();
    Fleet::SetUp();
  }

  void TearDown() override {
    Fleet::TearDown();
    nats_links.clear(); // after the engines stopped
    server.reset();
    pki.reset();
  }

  void fleet_settings(config::settings& s, const std::string& rid) override {
    Fleet::fleet_settings(s, rid);
    s.fleet.servers = {server->url()};
    s.fleet.nkey = keys[rid].public_key;
    s.fleet.nkey_seed_file = pki->dir() + "/" + rid + ".nk";
    s.fleet.ca_file = pki->ca_cert;
  }

  void connect(const config::settings& s, const std::string& rid,
               engine_options& eo) override {
    auto made = make_nats_fleet_link(s);
    ASSERT_TRUE(made) << made.error().what;
    eo.fleet = made->link;
    eo.inbox = made->inbox;
    nats_links[rid] = std::move(*made);
  }

  bool all_connected() {
    for (auto& [rid, l] : nats_links)
      if (!l.link->connected()) return false;
    return true;
  }
};

TEST_F(FleetOverNats, TwoReportersDemoteTheRegionAtAThird) {
  ASSERT_TRUE(ask<data_response>(eng->router(), 10s, route_atom_v,
                                 point(data_op::create, "doc1")));
  add("p2");
  add("p3");
  wait_for([&] { return all_connected(); }, "every link to connect");
  warm({"p1", "p2", "p3"});
  ASSERT_TRUE(emu->set_region_state("West US", emulator::region_state::hang));
  witness("p1");
  witness("p2");
  wait_for([&] { return first_read_region("p3") == "East US"; },
           "p3 to move West US after East US on the fleet's word");
  auto r = read("p3");
  ASSERT_TRUE(r) << sys->render(r.error());
  EXPECT_EQ(first_arm(*r), "East US");
  EXPECT_EQ(r->diag.hedges, 0u);
  auto st = ask<fleet_stats>(peers.at("p3").fleet(), 5s, stats_atom_v);
  ASSERT_TRUE(st);
  EXPECT_GE(st->health.accepted, 2u) << "claims of p1 and p2, over NATS";
  EXPECT_EQ(st->dropped_subject, 0u);
}

#endif

} // namespace
