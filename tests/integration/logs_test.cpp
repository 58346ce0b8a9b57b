// The engine's logs (actors/log.hpp) as a host receives them, against the
// emulator: each operator event once (topology, marks and their expiry,
// breaker transitions, refresh failures and the recovery, restarts), nothing
// at info during plain successful traffic, and never the account key or a
// signature, even at trace.

#include "tests/integration/engine_fixture.hpp"

#include <algorithm>
#include <cctype>

namespace {

using namespace georoute;
using namespace georoute::test;
using namespace std::chrono_literals;

// What the host's sink received; the sink is called on actor threads.
struct capture {
  std::mutex mtx;
  std::vector<log_record> records;

  log_sink sink(std::shared_ptr<capture> self) {
    return [self](const log_record& r) {
      std::lock_guard<std::mutex> guard{self->mtx};
      self->records.push_back(r);
    };
  }
  std::vector<log_record> all() {
    std::lock_guard<std::mutex> guard{mtx};
    return records;
  }
  std::vector<log_record> of(const std::string& event) {
    std::vector<log_record> out;
    for (auto& r : all())
      if (r.event == event) out.push_back(r);
    return out;
  }
  // Events whose name starts with `prefix`, in order.
  std::vector<std::string> events(const std::string& prefix) {
    std::vector<std::string> out;
    for (auto& r : all())
      if (r.event.rfind(prefix, 0) == 0) out.push_back(r.event);
    return out;
  }
};

std::string dump(const std::vector<log_record>& rs) {
  std::string out;
  for (const auto& r : rs)
    out += to_line(r) + "\n";
  return out;
}

class Logs : public engine_test {
protected:
  std::shared_ptr<capture> logs = std::make_shared<capture>();
  log_level level = log_level::info;
  uint32_t max_restarts = 10;

  void configure() override {
    settings.location.unavailable_region_expiry = 1s;
    auto& b = settings.circuit_breaker;
    b.open_period = 1s;
    b.max_open_period = 10s;
    b.probe_timeout = 5s;
    b.half_open_steps = 0; // the probe's answer closes
    settings.hedging.enabled = false;
  }

  void configure_engine(engine_options& eo) override {
    eo.log = logs->sink(logs);
    eo.log_min_level = level;
    eo.max_restarts = max_restarts;
  }

  caf::expected<data_response> route(data_request r,
                                     caf::timespan timeout = 10s) {
    return ask<data_response>(eng->router(), timeout, route_atom_v,
                              std::move(r));
  }

  caf::expected<database_account> refresh() {
    return ask<database_account>(eng->endpoints(), 10s, refresh_atom_v, true);
  }

  void wait_for_event(const std::string& event, const char* what) {
    wait_for([&] { return !logs->of(event).empty(); }, what);
  }
};

TEST_F(Logs, PlainTraffic_OnlyTheFirstAccountAtInfo) {
  // The fixture waited for the first account read.
  auto first = logs->of("topology.first_account");
  ASSERT_EQ(first.size(), 1u) << dump(logs->all());
  EXPECT_EQ(first[0].level, log_level::info);
  EXPECT_EQ(first[0].component, "georoute.endpoint_manager");
  EXPECT_NE(first[0].message.find("West US"), std::string::npos)
      << first[0].message;
  for (int i = 0; i < 5; ++i) {
    auto w = route(point(data_op::upsert, "doc" + std::to_string(i)));
    ASSERT_TRUE(w) << sys->render(w.error());
  }
  for (int i = 0; i < 50; ++i) {
    auto r = route(point(data_op::read, "doc" + std::to_string(i % 5)));
    ASSERT_TRUE(r) << sys->render(r.error());
  }
  // Not one line per request at info, nor a background refresh's.
  EXPECT_EQ(logs->all().size(), 1u) << dump(logs->all());
}

TEST_F(Logs, WriteRegionMoved_OnceWithOldAndNew) {
  ASSERT_TRUE(route(point(data_op::create, "doc1")));
  ASSERT_TRUE(
      emu->control().set_write_regions({"East US", "West US", "North Europe"}));
  // A write meets the move (403/3) and refreshes; two more refreshes see
  // the same topology.
  auto w = route(point(data_op::upsert, "doc1"));
  ASSERT_TRUE(w) << sys->render(w.error());
  ASSERT_TRUE(refresh());
  ASSERT_TRUE(refresh());
  auto moved = logs->of("topology.write_region_moved");
  ASSERT_EQ(moved.size(), 1u) << dump(logs->all());
  EXPECT_EQ(moved[0].level, log_level::warn);
  EXPECT_NE(moved[0].message.find("West US -> East US"), std::string::npos)
      << moved[0].message;
  EXPECT_TRUE(logs->of("topology.regions_changed").empty());
}

TEST_F(Logs, RegionRemoved_OnceNamingIt) {
  ASSERT_TRUE(emu->control().remove_region("North Europe"));
  ASSERT_TRUE(refresh());
  ASSERT_TRUE(refresh());
  auto changed = logs->of("topology.regions_changed");
  ASSERT_EQ(changed.size(), 1u) << dump(logs->all());
  EXPECT_NE(changed[0].message.find("removed [North Europe]"),
            std::string::npos)
      << changed[0].message;
}

TEST_F(Logs, MultiWriteSwitched_Once) {
  emu->control().set_multi_write(true);
  ASSERT_TRUE(refresh());
  ASSERT_TRUE(refresh());
  auto switched = logs->of("topology.multi_write");
  ASSERT_EQ(switched.size(), 1u) << dump(logs->all());
  EXPECT_NE(switched[0].message.find("multi-write switched on"),
            std::string::npos)
      << switched[0].message;
}

TEST_F(Logs, RegionMarked_OnceThenItsExpiryOnce) {
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(route(point(data_op::create, "doc" + std::to_string(i))));
  ASSERT_TRUE(
      emu->set_region_state("West US", emulator::region_state::offline_refuse));
  for (int i = 0; i < 10; ++i) {
    auto r = route(point(data_op::read, "doc" + std::to_string(i % 3)));
    ASSERT_TRUE(r) << sys->render(r.error());
  }
  auto marked = logs->of("region.marked");
  ASSERT_EQ(marked.size(), 1u) << dump(logs->all());
  EXPECT_EQ(marked[0].level, log_level::warn);
  EXPECT_EQ(marked[0].component, "georoute.location_cache");
  EXPECT_NE(marked[0].message.find("West US"), std::string::npos);
  EXPECT_NE(marked[0].message.find("reads"), std::string::npos);
  EXPECT_NE(marked[0].message.find("refused"), std::string::npos)
      << marked[0].message; // why
  EXPECT_NE(marked[0].message.find("until"), std::string::npos);
  EXPECT_TRUE(logs->of("region.mark_expired").empty());
  // Back online: the mark expires (1 s) and says so, once.
  ASSERT_TRUE(emu->set_region_state("West US", emulator::region_state::online));
  wait_for_event("region.mark_expired", "the mark's expiry");
  std::this_thread::sleep_for(1500ms);
  auto expired = logs->of("region.mark_expired");
  ASSERT_EQ(expired.size(), 1u) << dump(logs->all());
  EXPECT_EQ(expired[0].level, log_level::info);
  EXPECT_NE(expired[0].message.find("West US"), std::string::npos);
  EXPECT_EQ(logs->of("region.marked").size(), 1u);
}

// Through the engine's sink: the breaker's opening, once. Its later
// transitions (probe, reopened, half-open, closed) depend on time and are
// checked in virtual time
// (actors.Router.Breaker_OpenProbeReopenHalfOpenClosed).
TEST_F(Logs, BreakerOpened_Once) {
  auto c = route(point(data_op::create, "doc1"));
  ASSERT_TRUE(c) << sys->render(c.error());
  emulator::fault_rule rule;
  rule.region = "West US";
  rule.collection = "dbs/d/colls/c";
  rule.range_id = c->diag.range_id;
  rule.operation = "read";
  rule.status = 503;
  emu->control().add_fault(rule);
  // The 10th failure opens; the reads after it skip West and log nothing.
  for (int i = 0; i < 15; ++i)
    ASSERT_TRUE(route(point(data_op::read, "doc1")));
  EXPECT_EQ(logs->events("breaker."),
            (std::vector<std::string>{"breaker.opened"}))
      << dump(logs->all());
  auto opened = logs->of("breaker.opened");
  ASSERT_EQ(opened.size(), 1u);
  EXPECT_EQ(opened[0].level, log_level::warn);
  EXPECT_EQ(opened[0].component, "georoute.router");
  EXPECT_NE(opened[0].message.find("West US range " + c->diag.range_id),
            std::string::npos)
      << opened[0].message;
}

TEST_F(Logs, RefreshFailures_TheFirstThenTheRecovery) {
  emulator::fault_rule rule;
  rule.operation = "account";
  rule.status = 503;
  auto fault = emu->control().add_fault(rule);
  for (int i = 0; i < 3; ++i)
    EXPECT_FALSE(refresh());
  auto failed = logs->of("account.refresh_failed");
  ASSERT_EQ(failed.size(), 1u) << dump(logs->all());
  EXPECT_EQ(failed[0].level, log_level::warn);
  EXPECT_NE(failed[0].message.find("503"), std::string::npos)
      << failed[0].message;
  emu->control().remove_fault(fault);
  ASSERT_TRUE(refresh());
  ASSERT_TRUE(refresh());
  auto recovered = logs->of("account.refresh_recovered");
  ASSERT_EQ(recovered.size(), 1u) << dump(logs->all());
  EXPECT_NE(recovered[0].message.find("after 3 failed"), std::string::npos)
      << recovered[0].message;
  EXPECT_EQ(logs->of("account.refresh_failed").size(), 1u);
}

TEST_F(Logs, ActorRestart_Once) {
  kill(caf::actor_cast<caf::actor>(eng->router()));
  wait_for_event("engine.restart", "the restart");
  std::this_thread::sleep_for(200ms);
  auto restarts = logs->of("engine.restart");
  ASSERT_EQ(restarts.size(), 1u) << dump(logs->all());
  EXPECT_EQ(restarts[0].level, log_level::warn);
  EXPECT_EQ(restarts[0].component, "georoute.engine");
  EXPECT_NE(restarts[0].message.find("georoute.router exited (kill)"),
            std::string::npos)
      << restarts[0].message;
  // The successor serves.
  EXPECT_TRUE(route(point(data_op::upsert, "doc1")));
}

// No restart allowed: the supervisor gives up on the actor, and says so.
class LogsNoRestart : public Logs {
protected:
  LogsNoRestart() { max_restarts = 0; }
};

TEST_F(LogsNoRestart, ActorGivenUp_OnceAtError) {
  kill(caf::actor_cast<caf::actor>(eng->retry()));
  wait_for_event("engine.gave_up", "the give-up");
  std::this_thread::sleep_for(200ms);
  auto gave_up = logs->of("engine.gave_up");
  ASSERT_EQ(gave_up.size(), 1u) << dump(logs->all());
  EXPECT_EQ(gave_up[0].level, log_level::error);
  EXPECT_NE(gave_up[0].message.find("georoute.retry exited (kill)"),
            std::string::npos)
      << gave_up[0].message;
  EXPECT_TRUE(logs->of("engine.restart").empty());
}

// Trace, the most verbose level: requests are logged now, and still no line
// carries the key, a signature or an Authorization header.
class LogsVerbose : public Logs {
protected:
  LogsVerbose() { level = log_level::trace; }
};

TEST_F(LogsVerbose, EveryLevel_NeverTheKeyOrASignature) {
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(route(point(data_op::create, "doc" + std::to_string(i))));
  ASSERT_TRUE(
      emu->set_region_state("West US", emulator::region_state::offline_refuse));
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(route(point(data_op::read, "doc" + std::to_string(i % 3))));
  ASSERT_TRUE(emu->set_region_state("West US", emulator::region_state::online));
  ASSERT_TRUE(
      emu->control().set_write_regions({"East US", "West US", "North Europe"}));
  ASSERT_TRUE(route(point(data_op::upsert, "doc1")));
  EXPECT_FALSE(route(point(data_op::read, "nope")));
  emulator::fault_rule rule;
  rule.operation = "account";
  rule.status = 401;
  auto fault = emu->control().add_fault(rule);
  EXPECT_FALSE(refresh());
  emu->control().remove_fault(fault);
  ASSERT_TRUE(refresh());

  auto all = logs->all();
  // Per request at trace and debug, and the events.
  EXPECT_GE(logs->of("operation.done").size(), 9u) << dump(all);
  EXPECT_FALSE(logs->of("operation.retry").empty()) << dump(all);
  EXPECT_FALSE(logs->of("region.marked").empty()) << dump(all);
  EXPECT_FALSE(logs->of("topology.write_region_moved").empty()) << dump(all);
  EXPECT_FALSE(logs->of("account.refresh_failed").empty()) << dump(all);
  const auto key = emu->key();
  ASSERT_FALSE(key.empty());
  for (const auto& r : all) {
    auto line = to_line(r);
    auto lower = line;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char ch) { return std::tolower(ch); });
    EXPECT_EQ(line.find(key), std::string::npos) << line;
    EXPECT_EQ(lower.find("authorization"), std::string::npos) << line;
    EXPECT_EQ(lower.find("sig="), std::string::npos) << line;
    EXPECT_EQ(lower.find("type%3dmaster"), std::string::npos) << line;
  }
}

} // namespace
