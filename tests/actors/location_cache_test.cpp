// Location cache actor: snapshots pushed to subscribers, marks, resolution.

#include "georoute/actors/location_cache.hpp"
#include "tests/actors/actor_fixture.hpp"

// Named after the file as well: the unity build (tests/CMakeLists.txt)
// compiles it in one translation unit with other tests.
namespace location_cache_test {
namespace {

using namespace georoute;
using namespace georoute::test;
using namespace std::chrono_literals;

database_account account() {
  database_account a;
  a.id = "acct";
  a.writable = {{"West US", west_ep}};
  a.readable = {{"West US", west_ep}, {"East US", east_ep}};
  return a;
}

struct pushes {
  std::vector<location_snapshot> got;
};

caf::behavior subscriber(caf::event_based_actor*, std::shared_ptr<pushes> log) {
  return {
      [log](snapshot_atom, location_snapshot& s) { log->got.push_back(s); }};
}

class LocationCache : public actor_test {
protected:
  location_cache_actor cache;
  std::shared_ptr<pushes> log = std::make_shared<pushes>();
  caf::actor sub;

  void SetUp() override {
    location_table_options o;
    o.default_endpoint = global_ep;
    o.preferred_regions = {"West US", "East US"};
    o.unavailable_expiry = 300s;
    cache = spawn_location_cache(sys, o);
    sub = sys.spawn(subscriber, log);
    run();
  }

  void TearDown() override {
    self->send_exit(cache, caf::exit_reason::user_shutdown);
    self->send_exit(sub, caf::exit_reason::user_shutdown);
    run();
  }

  resolution resolve_read() {
    resolution r;
    auto h =
        self->request(cache, caf::infinite, resolve_atom_v, resolve_input{});
    run();
    h.receive([&](resolution x) { r = x; }, [](caf::error&) {});
    return r;
  }
};

TEST_F(LocationCache, BeforeAnyAccount_ResolvesTheDefaultEndpoint) {
  EXPECT_EQ(resolve_read().endpoint, global_ep);
}

TEST_F(LocationCache, Subscribe_ReturnsCurrent_ThenPushesEveryNewSnapshot) {
  auto h = self->request(cache, caf::infinite, subscribe_atom_v, sub);
  run();
  uint64_t first_version = 99;
  h.receive([&](location_snapshot s) { first_version = s.version; },
            [](caf::error&) { ADD_FAILURE(); });
  EXPECT_EQ(first_version, 0u);
  self->send(cache, account_atom_v, account());
  run();
  ASSERT_EQ(log->got.size(), 1u);
  EXPECT_EQ(log->got[0].version, 1u);
  ASSERT_TRUE(log->got[0].table);
  EXPECT_TRUE(log->got[0].table->has_account());
  self->send(cache, mark_atom_v, region_mark{west_ep, true, false});
  run();
  ASSERT_EQ(log->got.size(), 2u);
  EXPECT_EQ(log->got[1].version, 2u);
}

TEST_F(LocationCache, Mark_DemotesTheRegion_UntilTheExpiry) {
  self->send(cache, account_atom_v, account());
  run();
  EXPECT_EQ(resolve_read().region, "West US");
  self->send(cache, mark_atom_v, region_mark{west_ep, true, true});
  run();
  EXPECT_EQ(resolve_read().region, "East US");
  advance(301s); // marks expire by time: no message needed
  EXPECT_EQ(resolve_read().region, "West US");
}

// The log: a region newly unavailable is one warn line, a renewal none at
// info, and the expiry one info line when the last renewal's mark ends.
TEST_F(LocationCache, MarkAndExpiry_LoggedOnceEach) {
  std::vector<log_record> got;
  location_table_options o;
  o.default_endpoint = global_ep;
  o.unavailable_expiry = 300s;
  auto logged = spawn_location_cache(
      sys, o,
      logger{[&](const log_record& r) { got.push_back(r); }, log_level::info});
  self->send(logged, account_atom_v, account());
  run();
  auto events = [&] {
    std::vector<std::string> out;
    for (const auto& r : got)
      if (r.event.rfind("region.", 0) == 0) out.push_back(r.event);
    return out;
  };
  self->send(logged, mark_atom_v,
             region_mark{west_ep, true, false, "refused (router)"});
  run();
  ASSERT_EQ(events(), std::vector<std::string>{"region.marked"});
  EXPECT_NE(got.back().message.find("West US"), std::string::npos);
  EXPECT_NE(got.back().message.find("for reads: refused (router)"),
            std::string::npos)
      << got.back().message;
  advance(100s);
  self->send(logged, mark_atom_v, region_mark{west_ep, true, false});
  run();
  EXPECT_EQ(events().size(), 1u); // renewed: nothing at info
  advance(201s);                  // 301 s after the first mark
  EXPECT_EQ(events().size(), 1u); // the renewal holds until 400 s
  advance(100s);
  EXPECT_EQ(events(),
            (std::vector<std::string>{"region.marked", "region.mark_expired"}));
  advance(500s);
  EXPECT_EQ(events().size(), 2u);
  self->send_exit(logged, caf::exit_reason::user_shutdown);
  run();
}

} // namespace
} // namespace location_cache_test
