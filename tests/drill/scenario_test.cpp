// Every drill scenario, short (10 s each, the same script at the same
// fractions), asserting its verdict criteria one by one; the JSON of a run
// validated; the command's option and configuration errors.

#include "georoute/config/georoute_config.hpp"
#include "georoute/messages/types.hpp"
#include "tests/drill/drill.hpp"

#include <algorithm>
#include <cstdlib>
#include <future>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

using namespace georoute;
using namespace georoute::drill;
using namespace std::chrono_literals;

// Under AddressSanitizer or ThreadSanitizer the engine and the emulator run
// several times slower on the same two cores: the same scripts at a third of
// the load and with three times the ladders, so that what is measured is the
// engine's behaviour, not the instrumentation (the criteria follow the
// ladders).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool instrumented = true;
#else
constexpr bool instrumented = false;
#endif

// The library's defaults (the grey scenarios).
config::settings library_settings() {
  config::georoute_config cfg;
  register_types(cfg);
  auto loaded = cfg.load(
      {}, [](const std::string&) { return std::optional<std::string>{}; });
  EXPECT_TRUE(loaded.ok()) << (loaded.errors.empty() ? "" : loaded.errors[0]);
  return loaded.values;
}

config::settings drill_settings() {
  config::georoute_config cfg;
  register_types(cfg);
  auto args = drill_config_defaults();
  if (instrumented) {
    args.push_back("--georoute.http.ladder-partition-failover="
                   "[\"1500ms/0s\", \"1500ms/0s\", \"3s/0s\"]");
    args.push_back("--georoute.http.ladder-default="
                   "[\"3s/0s\", \"3s/1s\", \"3s/0s\"]");
  }
  auto loaded = cfg.load(
      args, [](const std::string&) { return std::optional<std::string>{}; });
  EXPECT_TRUE(loaded.ok()) << (loaded.errors.empty() ? "" : loaded.errors[0]);
  return loaded.values;
}

void set_load(drill_options& o) {
  o.rate = instrumented ? 50 : 150;
  o.callers = instrumented ? 6 : 12;
}

drill_report run_one(const std::string& id) {
  drill_options o;
  o.scenarios = {id};
  o.duration = instrumented ? 20s : 10s;
  set_load(o);
  return run_drill(o, drill_settings(), library_settings(),
                   [](const std::string&, bool) {});
}

class Scenario : public ::testing::TestWithParam<std::string> {};

void expect_passed(const drill_report& report) {
  ASSERT_EQ(report.scenarios.size(), 1u);
  const auto& s = report.scenarios.front();
  SCOPED_TRACE(render_table(report));
  for (const auto& c : s.criteria)
    EXPECT_TRUE(c.passed) << c.requirement << ": " << c.measured;
  EXPECT_TRUE(s.passed);
  EXPECT_GT(s.total.ops, instrumented ? 150u : 500u)
      << "the workload did not run at its rate";
  EXPECT_FALSE(s.timeline.empty());
  EXPECT_FALSE(s.backend.empty());
  auto problems = validate_report_json(render_json(report));
  EXPECT_TRUE(problems.empty()) << problems.front();
}

// The grey scenarios (G*) judge latency at the library's defaults (a read's
// p99 within the hedge threshold + 200 ms), 45 s each: they run as ctest
// `drill.grey` (DrillGrey below), away from the other tests. The copies gtest
// discovery lists here skip unless GEOROUTE_GREY_TEST is set.
TEST_P(Scenario, PassesEveryCriterion) {
  if (GetParam()[0] == 'G' && std::getenv("GEOROUTE_GREY_TEST") == nullptr)
    GTEST_SKIP() << "runs as drill.grey, alone";
  expect_passed(run_one(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Drill, Scenario, ::testing::ValuesIn(scenario_ids()),
                         [](const auto& info) { return info.param; });

// The grey scenarios two at a time: each mostly waits on a hung or slow
// region (its callers send 150 requests a second), so a pair shares the 2
// cores without moving a p99 that is judged to within 200 ms, and the pair
// costs the suite half the time of running them one after the other. (A
// deferred one runs when its result is asked for, after the first.)
TEST(DrillGrey, InPairs_PassEveryCriterion) {
  if (std::getenv("GEOROUTE_GREY_TEST") == nullptr)
    GTEST_SKIP() << "runs as drill.grey, alone";
  std::vector<std::string> grey;
  for (const auto& id : scenario_ids())
    if (id[0] == 'G') grey.push_back(id);
  ASSERT_FALSE(grey.empty());
  for (size_t i = 0; i < grey.size(); i += 2) {
    // Under a sanitizer each scenario needs both cores: one at a time.
    std::future<drill_report> second;
    if (i + 1 < grey.size())
      second =
          std::async(instrumented ? std::launch::deferred : std::launch::async,
                     run_one, grey[i + 1]);
    auto first = run_one(grey[i]);
    {
      SCOPED_TRACE(grey[i]);
      expect_passed(first);
    }
    if (second.valid()) {
      SCOPED_TRACE(grey[i + 1]);
      expect_passed(second.get());
    }
  }
}

// Writes that survive a hang (issue 19): S1a with write retries on. A
// write that timed out in the hung region goes again to another write
// region, so nothing is excused (user-visible failures = 0 outright), and
// every acknowledged write's stored document carries its own tracking id.
TEST(DrillWriteRetries, S1a_NoWriteFailure_EveryDocumentItsOwn) {
  drill_options o;
  o.scenarios = {"S1a"};
  o.duration = instrumented ? 20s : 10s;
  set_load(o);
  auto settings = drill_settings();
  settings.retry.write_retries = true;
  auto report = run_drill(o, settings, library_settings(),
                          [](const std::string&, bool) {});
  expect_passed(report);
  const auto& s = report.scenarios.front();
  bool tracked = false, strict = false;
  for (const auto& c : s.criteria) {
    if (c.requirement.rfind("acknowledged writes that are somebody else's",
                            0) == 0)
      tracked = true;
    if (c.requirement == "user-visible failures = 0") strict = true;
  }
  EXPECT_TRUE(tracked) << "the tracking ids were not checked";
  EXPECT_TRUE(strict) << "timed-out writes were excused";
}

namespace {

bool has_criterion(const scenario_report& s, const std::string& prefix) {
  return std::any_of(
      s.criteria.begin(), s.criteria.end(),
      [&](const criterion& c) { return c.requirement.rfind(prefix, 0) == 0; });
}

const criterion* find_criterion(const scenario_report& s,
                                const std::string& prefix) {
  for (const auto& c : s.criteria)
    if (c.requirement.rfind(prefix, 0) == 0) return &c;
  return nullptr;
}

drill_report two_minute_soak(uint32_t leak_per_op, bool write_retries) {
  drill_options o;
  o.soak = 120s;
  set_load(o);
  o.seed = 7;
  o.leak_per_op = leak_per_op;
  auto settings = drill_settings();
  settings.retry.write_retries = write_retries;
  return run_drill(o, settings, library_settings(),
                   [](const std::string&, bool) {});
}

} // namespace

// The soak, two minutes: random faults from the whole menu. It runs with
// write retries on: no timed-out write is excused, and every acknowledged
// document carries the tracking id of its last acknowledged write. (The
// overload soak below runs without them.) Two minutes, so that the memory
// slopes are judged (their short-run limits).
TEST(DrillSoak, TwoMinutes_PassesEveryCriterion) {
  auto report = two_minute_soak(0, true);
  ASSERT_EQ(report.scenarios.size(), 1u);
  const auto& s = report.scenarios.front();
  SCOPED_TRACE(render_table(report));
  EXPECT_GE(s.faults.size(), 16u) << "the soak applied too few faults";
  for (const auto& c : s.criteria)
    EXPECT_TRUE(c.passed) << c.requirement << ": " << c.measured;
  if (!instrumented) {
    EXPECT_TRUE(has_criterion(s, "resident memory does not keep rising"));
    EXPECT_TRUE(has_criterion(s, "heap in use does not keep rising"));
  }
  EXPECT_GE(s.memory.size(), 100u) << "a memory sample a second";
  auto problems = validate_report_json(render_json(report));
  EXPECT_TRUE(problems.empty()) << problems.front();
}

// The same soak with a deliberate leak of 512 bytes kept per operation
// (~4.5 MiB/min at 150 operations a second): the heap's slope over the
// second half fails, while the level criterion (the median of 20-40 %
// against 80-100 %, +16 MiB allowed) cannot see it. A leak of tens of bytes
// hides in a two-minute run's warm-up (soak.cpp, the slope limits).
TEST(DrillSoak, LeakOf512BytesPerOperation_FailsTheHeapSlope) {
  if (instrumented) GTEST_SKIP() << "memory is not judged under a sanitizer";
  auto report = two_minute_soak(512, false);
  ASSERT_EQ(report.scenarios.size(), 1u);
  const auto& s = report.scenarios.front();
  SCOPED_TRACE(render_table(report));
  const auto* heap = find_criterion(s, "heap in use does not keep rising");
  ASSERT_NE(heap, nullptr);
  EXPECT_FALSE(heap->passed) << heap->measured;
  const auto* level = find_criterion(s, "resident memory flat after warm-up");
  ASSERT_NE(level, nullptr);
  EXPECT_TRUE(level->passed) << level->measured;
  EXPECT_FALSE(s.passed);
}

// The same soak beside 4 busy threads on the 2 cores: the machine cannot
// keep up, and the criteria that still hold are judged (no loss, every write
// verified, memory flat, no stuck request, clear errors).
// It runs alone (ctest `drill.overload_soak`, RUN_SERIAL): beside other
// tests its hog would overload them too. The copy gtest discovery lists
// skips unless GEOROUTE_OVERLOAD_TEST is set.
TEST(DrillSoak, UnderCpuHog_MemoryNoLossAndVerificationHold) {
  if (std::getenv("GEOROUTE_OVERLOAD_TEST") == nullptr)
    GTEST_SKIP() << "runs as drill.overload_soak, alone";
  drill_options o;
  o.soak = 60s;
  set_load(o);
  o.seed = 977;
  o.cpu_hog = 4;
  auto report = run_drill(o, drill_settings(), library_settings(),
                          [](const std::string&, bool) {});
  ASSERT_EQ(report.scenarios.size(), 1u);
  const auto& s = report.scenarios.front();
  SCOPED_TRACE(render_table(report));
  for (const auto& c : s.criteria)
    EXPECT_TRUE(c.passed) << c.requirement << ": " << c.measured;
  auto judged = [&](const std::string& prefix) {
    return has_criterion(s, prefix);
  };
  EXPECT_TRUE(judged("acknowledged writes lost = 0"));
  EXPECT_TRUE(judged("every acknowledged write verified"));
  EXPECT_TRUE(judged("every operation ends by its caller's deadline"));
  if (!instrumented) {
    EXPECT_TRUE(judged("resident memory flat"));
  }
  EXPECT_FALSE(judged("user-visible failures = 0"))
      << "under --cpu-hog failures are reported, not judged";
}

TEST(DrillCommand, CpuHog_ParsedAndBounded) {
  auto r = parse_command({"--soak=1min", "--cpu-hog=4"});
  ASSERT_TRUE(r) << r.error().what;
  EXPECT_EQ(r->options.cpu_hog, 4u);
  auto bad = parse_command({"--cpu-hog=65"});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().what.find("--cpu-hog"), std::string::npos);
}

TEST(DrillCommand, UnknownOption_NamesIt) {
  auto r = parse_command({"--bogus=1"});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().what.find("--bogus"), std::string::npos);
}

TEST(DrillCommand, BadValues_NameTheOptionAndTheRange) {
  for (auto [arg, want] :
       {std::pair<const char*, const char*>{"--duration=1s", "between"},
        {"--duration=abc", "duration"},
        {"--rate=0", "between"},
        {"--callers=x", "not a number"},
        {"--regions=9", "between 2 and 5"},
        {"--scenario=S9", "unknown scenario 'S9'"},
        {"--json", "needs a value"},
        {"--soak=5s", "between"}}) {
    auto r = parse_command({arg});
    ASSERT_FALSE(r) << arg;
    EXPECT_NE(r.error().what.find(want), std::string::npos)
        << arg << " -> " << r.error().what;
  }
}

TEST(DrillCommand, OptionsAndConfigFlagsAreSeparated) {
  auto r =
      parse_command({"--scenario=S1,S3", "--rate", "50",
                     "--georoute.min-refresh-interval=2s", "--json=out.json"});
  ASSERT_TRUE(r) << r.error().what;
  EXPECT_EQ(r->options.scenarios,
            (std::vector<std::string>{"S1a", "S1b", "S3"}));
  EXPECT_EQ(r->options.rate, 50);
  EXPECT_EQ(r->options.json_file, "out.json");
  EXPECT_EQ(r->config_args,
            std::vector<std::string>{"--georoute.min-refresh-interval=2s"});
}

TEST(DrillCommand, InvalidConfiguration_ExitsWith2BeforeRunning) {
  EXPECT_EQ(run_drill_command({"--georoute.min-refresh-interval=soon"}), 2);
  EXPECT_EQ(run_drill_command({"--scenario=nope"}), 2);
}

TEST(DrillCommand, DefaultsAreValidConfiguration_AndUserFlagsWin) {
  config::georoute_config cfg;
  register_types(cfg);
  auto args = drill_config_defaults();
  args.push_back("--georoute.unavailable-region-expiry=7s");
  auto loaded = cfg.load(
      args, [](const std::string&) { return std::optional<std::string>{}; });
  ASSERT_TRUE(loaded.ok()) << loaded.errors.front();
  EXPECT_EQ(loaded.values.location.unavailable_region_expiry, 7s);
  EXPECT_EQ(loaded.values.refresh.background_interval, 5s);
  EXPECT_EQ(loaded.values.http.ladders.partition_failover.size(), 3u);
}

} // namespace
