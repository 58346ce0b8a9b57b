// Grey failures over loopback: a slow region (latency ± jitter) delays only
// its own responses, one range failing in one region (hang, delay) while the
// rest serves, a flapping region, held-request counts, and lifting it all.
// Time bounds are functional and generous (a slow response takes at least
// its latency; an unaffected one well under it), never performance figures.

#include "tests/emulator/server.hpp"
#include "tests/emulator/server_fixture.hpp"

#include <future>
#include <map>
#include <random>
#include <thread>

namespace {

using namespace georoute;
using namespace georoute::emulator_testing;

const std::string east_name = "East US";
const std::string north_name = "North Europe";

class EmulatorGrey : public EmulatorServer {
protected:
  /// Creates dbs/d/colls/c with a document in each of its two ranges;
  /// `pk_in[range]` is that document's partition key ("doc-" + pk its id).
  void create_documents() {
    create_collection();
    for (int i = 0; i < 32 && pk_in.size() < 2; ++i) {
      auto pk = "k" + std::to_string(i);
      auto o =
          send("POST", west(), "/dbs/d/colls/c/docs",
               json{{"id", "doc-" + pk}, {"pk", pk}}.dump(),
               {{"x-ms-documentdb-partitionkey", json::array({pk}).dump()}});
      ASSERT_EQ(o.status, 201) << o.error_detail << o.body;
      // The session token names the range: "{range}:{token}".
      pk_in.emplace(o.session_token.substr(0, o.session_token.find(':')), pk);
    }
    ASSERT_EQ(pk_in.size(), 2u);
  }

  transport::outcome read(const std::string& region, const std::string& range,
                          std::chrono::milliseconds timeout = 5s,
                          transport::http_client* via = nullptr) {
    const auto& pk = pk_in.at(range);
    return send("GET", emu->endpoint(region), "/dbs/d/colls/c/docs/doc-" + pk,
                {},
                {{"x-ms-documentdb-partitionkey", json::array({pk}).dump()}},
                timeout, via);
  }

  /// A read sent now and waited for later.
  std::future<transport::outcome> read_later(const std::string& region,
                                             const std::string& range,
                                             std::chrono::milliseconds timeout,
                                             transport::http_client& via) {
    return std::async(std::launch::async, [this, region, range, timeout, &via] {
      return read(region, range, timeout, &via);
    });
  }

  emulator::fault_rule range_rule(const std::string& region,
                                  const std::string& range) {
    emulator::fault_rule r;
    r.region = region;
    r.collection = "dbs/d/colls/c";
    r.range_id = range;
    return r;
  }

  /// Polls `done` every 5 ms for up to 5 s.
  template <class F>
  static bool eventually(F done) {
    for (int i = 0; i < 1000; ++i) {
      if (done()) return true;
      std::this_thread::sleep_for(5ms);
    }
    return done();
  }

  std::map<std::string, std::string> pk_in;
};

template <class F>
std::chrono::milliseconds timed(F f) {
  auto t0 = steady::now();
  f();
  return std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() -
                                                               t0);
}

// -- a slow region
// -------------------------------------------------------------

TEST_F(EmulatorGrey, SlowRegion_EveryKeepAliveResponseWaits) {
  auto fresh = make_client();
  auto ep = emu->endpoint(north_name);
  ASSERT_EQ(send("GET", ep, "/", {}, {}, 5s, fresh.get()).status, 200);
  ASSERT_TRUE(emu->set_latency(north_name, 300ms));
  for (int i = 0; i < 3; ++i) {
    transport::outcome o;
    auto took =
        timed([&] { o = send("GET", ep, "/", {}, {}, 5s, fresh.get()); });
    EXPECT_EQ(o.status, 200) << o.error_detail;
    EXPECT_GE(took, 290ms) << "request " << i;
  }
  EXPECT_EQ(emu->accepted_connections(north_name), 1u); // one kept-alive
  ASSERT_TRUE(emu->set_latency(north_name, 0ms));
  EXPECT_EQ(emu->get_latency(north_name), 0ms);
}

TEST_F(EmulatorGrey, SlowRegion_OtherRegionAnswersWhileItWaits) {
  // One io thread: a sleeping wait would stall every region.
  ASSERT_TRUE(emu->set_latency(north_name, 1500ms));
  auto slow_client = make_client();
  auto slow = std::async(std::launch::async, [&] {
    transport::outcome o;
    auto took = timed([&] {
      o = send("GET", emu->endpoint(north_name), "/", {}, {}, 10s,
               slow_client.get());
    });
    return std::make_pair(o, took);
  });
  std::this_thread::sleep_for(100ms); // the slow request is in its wait
  transport::outcome fast;
  auto took = timed([&] { fast = send("GET", west(), "/"); });
  EXPECT_EQ(fast.status, 200) << fast.error_detail;
  EXPECT_LT(took, 750ms);
  EXPECT_EQ(slow.wait_for(0s), std::future_status::timeout)
      << "the slow response came before the fast one";
  auto [o, slow_took] = slow.get();
  EXPECT_EQ(o.status, 200) << o.error_detail;
  EXPECT_GE(slow_took, 1490ms);
}

TEST(EmulatorJitter, Draws_WithinLatencyPlusMinusJitter_SeededRepeatable) {
  struct row {
    std::chrono::milliseconds latency, jitter;
  };
  for (auto r :
       {row{100ms, 0ms}, row{100ms, 40ms}, row{50ms, 50ms}, row{0ms, 0ms}}) {
    std::mt19937_64 a{7};
    std::mt19937_64 b{7};
    std::set<int64_t> seen;
    for (int i = 0; i < 500; ++i) {
      auto d = emulator::jittered(r.latency, r.jitter, a);
      EXPECT_EQ(d, emulator::jittered(r.latency, r.jitter, b));
      EXPECT_GE(d, r.latency - r.jitter);
      EXPECT_LE(d, r.latency + r.jitter);
      EXPECT_GE(d, 0ms);
      seen.insert(d.count());
    }
    // Both sides of the latency are drawn (or exactly it without jitter).
    EXPECT_EQ(*seen.begin() < r.latency.count(), r.jitter > 0ms);
    EXPECT_EQ(*seen.rbegin() > r.latency.count(), r.jitter > 0ms);
  }
}

TEST_F(EmulatorGrey, Latency_JitterOutOfRange_ProblemAndUnchanged) {
  ASSERT_TRUE(emu->set_latency(east_name, 100ms, 30ms));
  EXPECT_EQ(emu->get_jitter(east_name), 30ms);
  for (auto jitter : {-1ms, 101ms}) {
    auto r = emu->set_latency(east_name, 100ms, jitter);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what.rfind("jitter:", 0), 0u) << r.error().what;
  }
  EXPECT_EQ(emu->get_jitter(east_name), 30ms);
  EXPECT_FALSE(emu->set_latency("Mars", 1ms, 0ms));
  EXPECT_EQ(emu->get_jitter("Mars"), 0ms);
}

// -- one range failing in one region
// ---------------------------------------------

TEST_F(EmulatorGrey, RangeHang_HeldOtherRangesServe_LiftClosesTheConnection) {
  create_documents();
  auto id = emu->control().add_checked_fault([&] {
    auto r = range_rule(east_name, "1");
    r.action = emulator::fault_action::hang;
    return r;
  }());
  ASSERT_TRUE(id) << id.error().what;
  // A client of its own: its attempt is on a fresh connection, so the close
  // reaches the caller (a reused one would be re-sent once, as stale).
  auto own = make_client();
  auto held = read_later(east_name, "1", 20s, *own);
  ASSERT_TRUE(eventually([&] { return emu->held_requests(east_name) == 1; }));
  EXPECT_EQ(held.wait_for(200ms), std::future_status::timeout);
  // The rest of the region serves, and the range serves elsewhere.
  EXPECT_EQ(read(east_name, "0").status, 200);
  EXPECT_EQ(read("West US", "1").status, 200);
  EXPECT_EQ(read(north_name, "1").status, 200);
  auto tally =
      emu->control().counters_by_range()[{east_name, "dbs/d/colls/c", "1"}];
  EXPECT_EQ(tally.held, 1u);
  EXPECT_TRUE(tally.by_status.empty());

  emu->control().remove_fault(*id);
  // Closed at the lift, long before the client's 20 s deadline.
  ASSERT_EQ(held.wait_for(5s), std::future_status::ready);
  auto o = held.get();
  EXPECT_EQ(o.error, failure::reset) << o.error_detail;
  EXPECT_EQ(emu->held_requests(east_name), 0u);
  EXPECT_EQ(read(east_name, "1").status, 200);
}

TEST_F(EmulatorGrey, RangeDelay_ThatRangeWaits_OtherRangeAtOnce) {
  create_documents();
  auto rule = range_rule(east_name, "0");
  rule.action = emulator::fault_action::delay;
  rule.delay = 1000ms;
  auto id = emu->control().add_checked_fault(rule);
  ASSERT_TRUE(id) << id.error().what;
  ASSERT_EQ(read(east_name, "1").status, 200); // connect outside the timing
  transport::outcome o;
  auto slow = timed([&] { o = read(east_name, "0"); });
  EXPECT_EQ(o.status, 200) << o.error_detail;
  EXPECT_GE(slow, 990ms);
  auto fast = timed([&] { o = read(east_name, "1"); });
  EXPECT_EQ(o.status, 200) << o.error_detail;
  EXPECT_LT(fast, 500ms);
  fast = timed([&] { o = read("West US", "0"); });
  EXPECT_EQ(o.status, 200) << o.error_detail;
  EXPECT_LT(fast, 500ms);
}

TEST_F(EmulatorGrey, RangeStatus_OnlyThatRangeInThatRegion) {
  create_documents();
  auto rule = range_rule(east_name, "1");
  rule.status = 503;
  rule.retry_after_ms = 10;
  ASSERT_TRUE(emu->control().add_checked_fault(rule));
  auto failed = read(east_name, "1");
  EXPECT_EQ(failed.status, 503);
  EXPECT_EQ(failed.retry_after_ms, 10);
  EXPECT_EQ(read(east_name, "0").status, 200);
  EXPECT_EQ(read("West US", "1").status, 200);
}

// -- a flapping region
// -------------------------------------------------------------

TEST_F(EmulatorGrey, Flap_Refuse_AlternatesUntilStopped) {
  auto ep = emu->endpoint(east_name);
  emulator::flap_schedule f;
  f.down_state = region_state::offline_refuse;
  f.down_for = 200ms;
  f.up_for = 200ms;
  ASSERT_TRUE(emu->start_flap(east_name, f));
  EXPECT_EQ(emu->get_region_state(east_name), region_state::offline_refuse);
  bool saw_refused = false;
  bool saw_served = false;
  for (int i = 0; i < 300 && !(saw_refused && saw_served); ++i) {
    auto o = send("GET", ep, "/", {}, {}, 1s);
    saw_refused |= o.error == failure::refused;
    saw_served |= o.status == 200;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(saw_refused);
  EXPECT_TRUE(saw_served);
  ASSERT_TRUE(
      eventually([&] { return emu->get_flap(east_name).transitions >= 3; }));
  EXPECT_TRUE(emu->get_flap(east_name).active);

  ASSERT_TRUE(emu->stop_flap(east_name));
  EXPECT_FALSE(emu->get_flap(east_name).active);
  // Longer than a whole period: no phase end fires any more.
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(emu->get_region_state(east_name), region_state::online);
    EXPECT_EQ(send("GET", ep, "/").status, 200) << i;
    std::this_thread::sleep_for(100ms);
  }
}

TEST_F(EmulatorGrey, Flap_Hang_HeldRequestClosedWhenTheRegionComesUp) {
  emulator::flap_schedule f;
  f.down_state = region_state::hang;
  f.down_for = 2s; // time for the request to arrive on a loaded machine
  f.up_for = 60s;
  ASSERT_TRUE(emu->start_flap(north_name, f));
  auto own = make_client();
  auto held = std::async(std::launch::async, [&] {
    return send("GET", emu->endpoint(north_name), "/", {}, {}, 30s, own.get());
  });
  ASSERT_TRUE(eventually([&] { return emu->held_requests(north_name) == 1; }));
  // Closed by the up phase, long before the client's deadline.
  ASSERT_EQ(held.wait_for(10s), std::future_status::ready);
  auto o = held.get();
  EXPECT_EQ(o.error, failure::reset) << o.error_detail;
  EXPECT_EQ(emu->held_requests(north_name), 0u);
  EXPECT_EQ(emu->get_region_state(north_name), region_state::online);
  EXPECT_FALSE(emu->get_flap(north_name).down);
  EXPECT_EQ(emu->get_flap(north_name).transitions, 2u);
  EXPECT_EQ(send("GET", emu->endpoint(north_name), "/").status, 200);
}

TEST_F(EmulatorGrey, Flap_Slow_DownPhaseAddsLatency_StopRemovesIt) {
  auto ep = emu->endpoint(north_name);
  ASSERT_EQ(send("GET", ep, "/").status, 200);
  emulator::flap_schedule f;
  f.down_state = region_state::online;
  f.down_latency = 1000ms;
  f.down_for = 60s;
  ASSERT_TRUE(emu->start_flap(north_name, f));
  EXPECT_TRUE(emu->get_flap(north_name).down);
  transport::outcome o;
  auto slow = timed([&] { o = send("GET", ep, "/"); });
  EXPECT_EQ(o.status, 200) << o.error_detail;
  EXPECT_GE(slow, 990ms);
  ASSERT_TRUE(emu->stop_flap(north_name));
  auto fast = timed([&] { o = send("GET", ep, "/"); });
  EXPECT_EQ(o.status, 200) << o.error_detail;
  EXPECT_LT(fast, 500ms);
}

TEST_F(EmulatorGrey, Flap_BadInput_ProblemNamesTheField) {
  emulator::flap_schedule f;
  auto unknown = emu->start_flap("Mars", f);
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().what.find("Mars"), std::string::npos);
  f.down_state = region_state::online;
  auto never_fails = emu->start_flap(east_name, f);
  ASSERT_FALSE(never_fails);
  EXPECT_EQ(never_fails.error().what.rfind("down_latency:", 0), 0u)
      << never_fails.error().what;
  f = {};
  f.up_for = 5ms;
  auto too_short = emu->start_flap(east_name, f);
  ASSERT_FALSE(too_short);
  EXPECT_EQ(too_short.error().what.rfind("up_for:", 0), 0u);
  f = {};
  f.down_latency = -1ms;
  EXPECT_FALSE(emu->start_flap(east_name, f));
  EXPECT_FALSE(emu->get_flap(east_name).active);
  EXPECT_EQ(emu->get_region_state(east_name), region_state::online);
  EXPECT_FALSE(emu->stop_flap("Mars"));
  EXPECT_TRUE(emu->stop_flap(east_name)); // not flapping: nothing to do
}

TEST_F(EmulatorGrey, SetRegionState_EndsAFlap) {
  emulator::flap_schedule f;
  f.down_for = 100ms;
  f.up_for = 100ms;
  ASSERT_TRUE(emu->start_flap(east_name, f));
  ASSERT_TRUE(emu->set_region_state(east_name, region_state::offline_reset));
  EXPECT_FALSE(emu->get_flap(east_name).active);
  std::this_thread::sleep_for(350ms); // past a few phase ends
  EXPECT_EQ(emu->get_region_state(east_name), region_state::offline_reset);
}

// -- lifting everything
// ---------------------------------------------------------------

TEST_F(EmulatorGrey, ResetFaults_EveryFaultLifted_HeldRequestsReleased) {
  create_documents();
  ASSERT_TRUE(emu->set_latency(north_name, 2000ms, 100ms));
  emulator::flap_schedule f;
  f.down_state = region_state::offline_refuse;
  f.down_for = 60s;
  ASSERT_TRUE(emu->start_flap("West US", f));
  ASSERT_TRUE(emu->control().add_checked_fault(range_rule(east_name, "0")));
  auto hang = range_rule(east_name, "1");
  hang.action = emulator::fault_action::hang;
  ASSERT_TRUE(emu->control().add_checked_fault(hang));
  auto own = make_client();
  auto held = read_later(east_name, "1", 20s, *own);
  ASSERT_TRUE(eventually([&] { return emu->held_requests(east_name) == 1; }));

  ASSERT_TRUE(emu->reset_faults());
  ASSERT_EQ(held.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(held.get().error, failure::reset);
  EXPECT_EQ(emu->held_requests(east_name), 0u);
  EXPECT_FALSE(emu->get_flap("West US").active);
  EXPECT_EQ(emu->get_latency(north_name), 0ms);
  EXPECT_EQ(emu->get_jitter(north_name), 0ms);
  for (const auto& region : three_regions)
    for (const auto& range : {"0", "1"}) {
      EXPECT_EQ(emu->get_region_state(region), region_state::online);
      auto o = read(region, range);
      EXPECT_EQ(o.status, 200) << region << " " << range << o.error_detail;
    }
}

TEST_F(EmulatorGrey, Destroy_WithRangeHeldAndDelayedRequests_ClosesThem) {
  create_documents();
  auto hang = range_rule(east_name, "1");
  hang.action = emulator::fault_action::hang;
  ASSERT_TRUE(emu->control().add_checked_fault(hang));
  auto delay = range_rule(east_name, "0");
  delay.action = emulator::fault_action::delay;
  delay.delay = 30s;
  ASSERT_TRUE(emu->control().add_checked_fault(delay));
  auto a = make_client();
  auto b = make_client();
  auto held = read_later(east_name, "1", 30s, *a);
  auto delayed = read_later(east_name, "0", 30s, *b);
  ASSERT_TRUE(eventually([&] { return emu->held_requests(east_name) == 1; }));
  ASSERT_TRUE(eventually([&] {
    return emu->control()
               .counters_by_range()[{east_name, "dbs/d/colls/c", "0"}]
               .by_status[200] == 1;
  }));
  emu.reset();
  ASSERT_EQ(held.wait_for(10s), std::future_status::ready);
  ASSERT_EQ(delayed.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(held.get().error, failure::reset);
  EXPECT_EQ(delayed.get().error, failure::reset);
}

} // namespace
