// The fleet actor on virtual time: when it asks its peers for their claims,
// and when it says the fleet's view is in (`fleet_sync_atom`, what a new
// router waits for at start).

#include "georoute/actors/fleet.hpp"
#include "georoute/actors/location_cache.hpp"
#include "georoute/actors/policy/fleet_subject.hpp"
#include "tests/actors/actor_fixture.hpp"

#include <mutex>

// Named after the file as well: the unity build (tests/CMakeLists.txt)
// compiles it in one translation unit with other tests.
namespace fleet_test {
namespace {

using namespace georoute;
using namespace georoute::test;
using namespace std::chrono_literals;

// A link whose state the test sets; it records what was published.
class test_link final : public fleet_link {
public:
  bool publish(const std::string& subject, const std::string&) override {
    std::lock_guard<std::mutex> guard{mtx_};
    if (!up) return false;
    subjects.push_back(subject);
    return true;
  }
  bool connected() const override { return up; }

  size_t asks() {
    std::lock_guard<std::mutex> guard{mtx_};
    size_t n = 0;
    for (const auto& s : subjects)
      n += s.find(fleet_sync_token) != std::string::npos ? 1 : 0;
    return n;
  }

  bool up = false;
  std::vector<std::string> subjects;

private:
  std::mutex mtx_;
};

class FleetActor : public actor_test {
protected:
  std::shared_ptr<test_link> link = std::make_shared<test_link>();
  std::shared_ptr<fleet_inbox> inbox = std::make_shared<fleet_inbox>();
  location_cache_actor locations;
  caf::actor fleet;

  // `with_account`: the account's regions are known from the start.
  void start(bool with_account = true) {
    location_table_options o;
    o.default_endpoint = global_ep;
    o.preferred_regions = {"West US", "East US"};
    locations = spawn_location_cache(sys, o);
    if (with_account) learn_account();
    fleet_config c;
    c.fleet = "f";
    c.account = "acct";
    c.reporter = "r1";
    c.link = link;
    c.inbox = inbox;
    fleet = spawn_fleet(sys, c, locations, http);
    run();
  }

  void learn_account() {
    self->send(locations, account_atom_v, three_region_account());
    run();
  }

  void TearDown() override {
    self->send_exit(fleet, caf::exit_reason::user_shutdown);
    self->send_exit(locations, caf::exit_reason::user_shutdown);
    run();
  }

  // Asks for the fleet's view; the handle answers once it is in.
  auto ask_sync() {
    auto h = self->request(fleet, caf::infinite, fleet_sync_atom_v);
    run();
    return h;
  }
};

// The link connects: the ask goes out at once (not at the next tick), and
// the view counts as in once the peers had their moment to answer.
TEST_F(FleetActor, LinkConnects_AskAtOnce_ViewInAfterTheGrace) {
  start();
  auto h = ask_sync();
  EXPECT_TRUE(self->mailbox().empty()) << "in before the link connected";
  link->up = true;
  inbox->link_status(true);
  run();
  EXPECT_EQ(link->asks(), 1u) << "the peers were not asked at once";
  EXPECT_TRUE(self->mailbox().empty()) << "in before the peers could answer";
  advance(49ms);
  EXPECT_TRUE(self->mailbox().empty());
  advance(1ms);
  receive_now(
      self, h, [](caf::ok_atom) {},
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  // Once in, a later ask (a restarted router's) is answered at once.
  auto again = ask_sync();
  receive_now(
      self, again, [](caf::ok_atom) {},
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
}

// The first connection failed before the actor existed (a server that
// refuses): the inbox keeps that, and nothing waits for the fleet.
TEST_F(FleetActor, FirstConnectionFailedBeforeTheActor_NothingWaits) {
  inbox->link_status(false);
  start();
  auto h = ask_sync();
  receive_now(
      self, h, [](caf::ok_atom) {},
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
  EXPECT_EQ(link->asks(), 0u);
}

// A link that neither connects nor fails (a server that hangs): the view is
// never in; the caller's own timeout is the bound.
TEST_F(FleetActor, LinkHangs_ViewNeverIn) {
  start();
  ask_sync();
  advance(5s);
  EXPECT_TRUE(self->mailbox().empty()) << "in without the fleet";
}

// Connected before the account was read: a claim names its region by a
// token the actor can read only once it knows the account's regions (it
// would drop it), so it asks then, and not before.
TEST_F(FleetActor, ConnectedBeforeTheRegionsAreKnown_AsksOnceTheyAre) {
  start(false);
  link->up = true;
  inbox->link_status(true);
  run();
  advance(300ms);
  EXPECT_EQ(link->asks(), 0u) << "asked before it could read the answers";
  auto h = ask_sync();
  learn_account();
  EXPECT_EQ(link->asks(), 1u) << "the regions came, but no ask went";
  EXPECT_TRUE(self->mailbox().empty());
  advance(50ms);
  receive_now(
      self, h, [](caf::ok_atom) {},
      [](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
}

// Connected before the actor existed: the state is told to it when it
// attaches, and it asks at once.
TEST_F(FleetActor, ConnectedBeforeTheActor_AsksAtOnce) {
  link->up = true;
  inbox->link_status(true);
  start();
  EXPECT_EQ(link->asks(), 1u);
}

} // namespace
} // namespace fleet_test
