// Configuration: defaults, INI, CLI precedence, environment fallbacks and
// every validation error. Each error must name the key, the value and what is
// allowed, in one line.

#include "georoute/config/georoute_config.hpp"
#include "georoute/transport/auth.hpp"

#include <caf/config_value.hpp>
#include <caf/deep_to_string.hpp>
#include <fstream>
#include <functional>
#include <gtest/gtest.h>
#include <map>

namespace {

using namespace georoute::config;
using namespace std::chrono_literals;

env_lookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& k) -> std::optional<std::string> {
    auto i = vars.find(k);
    if (i == vars.end()) return std::nullopt;
    return i->second;
  };
}

load_result load(const std::string& ini, std::vector<std::string> args = {},
                 std::map<std::string, std::string> env = {}) {
  georoute_config cfg;
  return cfg.load(std::move(args), env_of(std::move(env)), ini);
}

std::string all_errors(const load_result& r) {
  std::string s;
  for (const auto& e : r.errors)
    s += e + "\n";
  return s;
}

// A valid base64 master key (the emulator's well-known test key).
const std::string test_key =
    "C2y6yDjf5/"
    "R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/"
    "Jw==";

TEST(Config, Defaults_MatchTheReference) {
  auto r = load("");
  ASSERT_TRUE(r.ok()) << all_errors(r);
  const auto& s = r.values;
  EXPECT_TRUE(s.location.endpoint_discovery);
  EXPECT_TRUE(s.location.use_multiple_write_locations);
  EXPECT_EQ(s.refresh.background_interval, 300s);
  EXPECT_EQ(s.refresh.min_interval, 15s);
  EXPECT_EQ(s.location.unavailable_region_expiry, 300s);
  EXPECT_EQ(s.retry.metadata_hard_deadline, 300s);
  EXPECT_EQ(s.retry.metadata_attempt_cap, 200u);
  EXPECT_EQ(s.retry.failover_retries, 120u);
  EXPECT_EQ(s.retry.failover_retry_interval, 1s);
  EXPECT_EQ(s.retry.throttle_retries, 9u);
  EXPECT_EQ(s.retry.throttle_max_wait, 30s);
  EXPECT_EQ(s.http.response_body_limit, 64u * 1024 * 1024);
  EXPECT_EQ(s.http.ladders.hot_path.size(), 3u);
  EXPECT_EQ(s.http.ladders.hot_path[0].timeout, 1s);
  EXPECT_EQ(s.http.ladders.control_plane_read[1].delay_after, 1s);
  EXPECT_GE(s.scheduler_threads, 1u);
  EXPECT_TRUE(s.account_key.empty());
  EXPECT_TRUE(r.warnings.empty());
}

TEST(Config, Ini_ValuesAreApplied) {
  auto r = load(R"([georoute]
account-endpoint="http://127.0.0.1:4301/"
preferred-regions=["East US", "West US"]
excluded-regions=["North Europe"]
endpoint-discovery=false
background-refresh-interval=2s
metadata-attempt-cap=7
[georoute.http]
max-connections-per-endpoint=4
ladder-hot-path=["500ms/0s", "2s/1s"]
)");
  ASSERT_TRUE(r.ok()) << all_errors(r);
  const auto& s = r.values;
  EXPECT_EQ(s.account_endpoint, "http://127.0.0.1:4301/");
  EXPECT_EQ(s.location.preferred_regions,
            (std::vector<std::string>{"East US", "West US"}));
  EXPECT_EQ(s.location.excluded_regions,
            (std::vector<std::string>{"North Europe"}));
  EXPECT_FALSE(s.location.endpoint_discovery);
  EXPECT_EQ(s.refresh.background_interval, 2s);
  EXPECT_EQ(s.retry.metadata_attempt_cap, 7u);
  EXPECT_EQ(s.http.max_connections_per_endpoint, 4u);
  ASSERT_EQ(s.http.ladders.hot_path.size(), 2u);
  EXPECT_EQ(s.http.ladders.hot_path[0].timeout, 500ms);
  EXPECT_EQ(s.http.ladders.hot_path[1].delay_after, 1s);
}

TEST(Config, Cli_OverridesIni) {
  auto r =
      load("[georoute]\nmetadata-attempt-cap=7\npreferred-regions=[\"A\"]\n",
           {"--georoute.metadata-attempt-cap=9",
            "--georoute.preferred-regions=[\"West US\"]"});
  ASSERT_TRUE(r.ok()) << all_errors(r);
  EXPECT_EQ(r.values.retry.metadata_attempt_cap, 9u);
  EXPECT_EQ(r.values.location.preferred_regions,
            std::vector<std::string>{"West US"});
}

TEST(Config, Ini_WrongType_IsReportedNotIgnored) {
  auto r = load("[georoute]\nmetadata-attempt-cap=\"7\"\n");
  ASSERT_EQ(r.errors.size(), 1u) << all_errors(r);
  EXPECT_NE(r.errors[0].find("georoute.metadata-attempt-cap"),
            std::string::npos);
  EXPECT_NE(r.errors[0].find("\"7\""), std::string::npos);
  EXPECT_NE(r.errors[0].find("expected an integer"), std::string::npos);
}

TEST(Config, Ini_WrongTypeForDuration_NamesTheUnit) {
  auto r = load("[georoute]\nbackground-refresh-interval=300\n");
  ASSERT_EQ(r.errors.size(), 1u) << all_errors(r);
  EXPECT_NE(r.errors[0].find("georoute.background-refresh-interval = 300"),
            std::string::npos);
  EXPECT_NE(r.errors[0].find("duration with a unit"), std::string::npos);
}

TEST(Config, Ini_WrongTypeInHttpSection_IsReported) {
  auto r = load("[georoute.http]\nmax-connections-per-endpoint=true\n");
  ASSERT_EQ(r.errors.size(), 1u) << all_errors(r);
  EXPECT_NE(
      r.errors[0].find("georoute.http.max-connections-per-endpoint = true"),
      std::string::npos);
}

TEST(Config, Ini_UnknownKey_IsReported) {
  auto r = load("[georoute]\nprefered-regions=[\"West US\"]\n");
  ASSERT_EQ(r.errors.size(), 1u) << all_errors(r);
  EXPECT_NE(r.errors[0].find("georoute.prefered-regions"), std::string::npos);
  EXPECT_NE(r.errors[0].find("unknown key"), std::string::npos);
}

TEST(Config, Ini_AccountKey_IsRejectedAndNotEchoed) {
  auto r = load("[georoute]\naccount-key=\"" + test_key + "\"\n");
  ASSERT_EQ(r.errors.size(), 1u) << all_errors(r);
  EXPECT_NE(r.errors[0].find("GEOROUTE_ACCOUNT_KEY"), std::string::npos);
  EXPECT_EQ(r.errors[0].find(test_key), std::string::npos);
}

TEST(Config, Ini_SyntaxError_IsReported) {
  auto r = load("[georoute]\naccount-endpoint=http://unquoted\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(all_errors(r).find("configuration file"), std::string::npos);
}

TEST(Config, Cli_WrongType_NamesArgumentAndType) {
  auto r = load("", {"--georoute.metadata-attempt-cap=abc"});
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("--georoute.metadata-attempt-cap=abc"),
            std::string::npos);
  EXPECT_NE(r.errors[0].find("expected an integer"), std::string::npos);
}

TEST(Config, Cli_UnknownOption_IsReported) {
  auto r = load("", {"--georoute.nope=1"});
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("--georoute.nope=1"), std::string::npos);
  EXPECT_NE(r.errors[0].find("unknown option"), std::string::npos);
}

struct range_row {
  std::string ini;
  std::string key;
  std::string allowed;
};

class ConfigRange : public ::testing::TestWithParam<range_row> {};

TEST_P(ConfigRange, OutOfRange_NamesKeyValueAndBounds) {
  const auto& row = GetParam();
  auto r = load(row.ini);
  ASSERT_EQ(r.errors.size(), 1u) << all_errors(r);
  EXPECT_NE(r.errors[0].find(row.key), std::string::npos) << r.errors[0];
  EXPECT_NE(r.errors[0].find(row.allowed), std::string::npos) << r.errors[0];
}

INSTANTIATE_TEST_SUITE_P(
    Rows, ConfigRange,
    ::testing::Values(
        range_row{"[georoute]\nmetadata-attempt-cap=0\n",
                  "georoute.metadata-attempt-cap = 0", "between 1 and 100000"},
        range_row{"[georoute]\nfailover-retries=-1\n",
                  "georoute.failover-retries = -1", "between 0 and 10000"},
        range_row{"[georoute]\nthrottle-retries=5000\n",
                  "georoute.throttle-retries = 5000", "between 0 and 1000"},
        range_row{"[georoute]\nbackground-refresh-interval=10ms\n",
                  "georoute.background-refresh-interval",
                  "between 100ms and 24h"},
        range_row{"[georoute]\nunavailable-region-expiry=0s\n",
                  "georoute.unavailable-region-expiry", "between 1s and 24h"},
        range_row{"[georoute.http]\nmax-connections-per-endpoint=0\n",
                  "georoute.http.max-connections-per-endpoint = 0",
                  "between 1 and 1024"},
        range_row{"[georoute.http]\nresponse-body-limit=10\n",
                  "georoute.http.response-body-limit = 10", "between 1024"},
        range_row{"[georoute.http]\nladder-hot-path=[\"1s\"]\n",
                  "georoute.http.ladder-hot-path",
                  "expected <timeout>/<delay>"},
        range_row{"[georoute.http]\nladder-default=[]\n",
                  "georoute.http.ladder-default", "at least one step"},
        range_row{"[georoute.http]\ntls-ca-file=\"/nonexistent/ca.pem\"\n",
                  "georoute.http.tls-ca-file", "cannot read"},
        range_row{"[georoute]\npreferred-regions=[\"West_US\"]\n",
                  "georoute.preferred-regions", "not a region name"},
        range_row{"[georoute]\nexcluded-regions=[\"West US\", \"west us\"]\n",
                  "georoute.excluded-regions", "listed twice"},
        range_row{"[georoute]\npreferred-regions=[\"\"]\n",
                  "georoute.preferred-regions", "not a region name"},
        range_row{"[georoute]\naccount-endpoint=\"http://10.1.2.3:443/\"\n",
                  "georoute.account-endpoint = \"http://10.1.2.3:443/\"",
                  "only for loopback"},
        range_row{"[georoute]\naccount-endpoint=\"ftp://x/\"\n",
                  "georoute.account-endpoint", "unsupported scheme"},
        range_row{
            "[georoute]\naccount-endpoint=\"https://acct.example:99999/\"\n",
            "georoute.account-endpoint", "outside 1..65535"},
        range_row{"[georoute]\naccount-endpoint=\"https://acct.example/dbs\"\n",
                  "georoute.account-endpoint", "has no path"}));

TEST(Config, Endpoint_HttpsAndLoopbackHttp_AreAccepted) {
  for (auto ep :
       {"https://acct.documents.azure.com:443/", "http://127.0.0.1:8081/",
        "http://localhost:8081/", "http://[::1]:8081/"}) {
    auto r = load(std::string{"[georoute]\naccount-endpoint=\""} + ep + "\"\n");
    EXPECT_TRUE(r.ok()) << ep << ": " << all_errors(r);
  }
}

TEST(Config, Key_FromEnvironment_IsRedactedInDump) {
  auto r = load("", {}, {{"GEOROUTE_ACCOUNT_KEY", test_key}});
  ASSERT_TRUE(r.ok()) << all_errors(r);
  EXPECT_EQ(r.values.account_key.reveal(), test_key);
  EXPECT_EQ(r.values.account_key_source, "GEOROUTE_ACCOUNT_KEY");
  auto dump = render(r.values);
  EXPECT_EQ(dump.find(test_key), std::string::npos);
  EXPECT_NE(dump.find("<redacted>"), std::string::npos);
  std::ostringstream os;
  os << r.values.account_key;
  EXPECT_EQ(os.str(), "<redacted>");
}

TEST(Config, Key_FromKeyFile_IsTrimmed) {
  auto path = ::testing::TempDir() + "georoute_key.txt";
  std::ofstream(path) << test_key << "\n";
  auto r = load("[georoute]\nkey-file=\"" + path + "\"\n");
  ASSERT_TRUE(r.ok()) << all_errors(r);
  EXPECT_EQ(r.values.account_key.reveal(), test_key);
  EXPECT_EQ(r.values.account_key_source, "key-file " + path);
}

TEST(Config, Key_Invalid_IsReportedWithoutTheValue) {
  auto r = load("", {}, {{"GEOROUTE_ACCOUNT_KEY", "not base64!!"}});
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("not a base64 master key"), std::string::npos);
  EXPECT_EQ(r.errors[0].find("not base64!!"), std::string::npos);
}

TEST(Config, Key_SetTwice_IsAnError) {
  auto path = ::testing::TempDir() + "georoute_key2.txt";
  std::ofstream(path) << test_key;
  auto r = load("[georoute]\nkey-file=\"" + path + "\"\n", {},
                {{"GEOROUTE_ACCOUNT_KEY", test_key}});
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("set twice"), std::string::npos);
}

TEST(Config, Key_MissingKeyFile_IsAnError) {
  auto r = load("[georoute]\nkey-file=\"/nonexistent/key\"\n");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("cannot read"), std::string::npos);
}

TEST(Config, HardDeadline_FromEnvironment_WhenFileAndCliLeaveItUnset) {
  auto r = load("", {}, {{"GEOROUTE_METADATA_HARD_DEADLINE_SECONDS", "600"}});
  ASSERT_TRUE(r.ok()) << all_errors(r);
  EXPECT_EQ(r.values.retry.metadata_hard_deadline, 600s);
  EXPECT_TRUE(r.warnings.empty());
}

TEST(Config, HardDeadline_FileWinsOverEnvironment) {
  auto r = load("[georoute]\nmetadata-hard-deadline=120s\n", {},
                {{"GEOROUTE_METADATA_HARD_DEADLINE_SECONDS", "600"}});
  ASSERT_TRUE(r.ok()) << all_errors(r);
  EXPECT_EQ(r.values.retry.metadata_hard_deadline, 120s);
}

TEST(Config, HardDeadline_TooSmall_IsClampedWithOneWarning) {
  auto r = load("", {}, {{"GEOROUTE_METADATA_HARD_DEADLINE_SECONDS", "5"}});
  ASSERT_TRUE(r.ok()) << all_errors(r);
  EXPECT_EQ(r.values.retry.metadata_hard_deadline, 30s);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("clamped to 30s"), std::string::npos);
}

TEST(Config, HardDeadline_TooLarge_IsClampedWithOneWarning) {
  auto r = load("[georoute]\nmetadata-hard-deadline=1000000s\n");
  ASSERT_TRUE(r.ok()) << all_errors(r);
  EXPECT_EQ(r.values.retry.metadata_hard_deadline, 86400s);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("georoute.metadata-hard-deadline"),
            std::string::npos);
}

TEST(Config, HardDeadline_AbsurdlyLargeEnvironment_IsClamped) {
  auto r = load(
      "", {}, {{"GEOROUTE_METADATA_HARD_DEADLINE_SECONDS", "99999999999999"}});
  ASSERT_TRUE(r.ok()) << all_errors(r);
  EXPECT_EQ(r.values.retry.metadata_hard_deadline, 86400s);
  EXPECT_EQ(r.warnings.size(), 1u);
}

TEST(Config, HardDeadline_UnparsableEnvironment_IsAnError) {
  for (auto bad : {"abc", "30s", "", "-5", "1e3", "999999999999999999999999"}) {
    auto r = load("", {}, {{"GEOROUTE_METADATA_HARD_DEADLINE_SECONDS", bad}});
    ASSERT_EQ(r.errors.size(), 1u) << "value '" << bad << "'";
    EXPECT_NE(r.errors[0].find("GEOROUTE_METADATA_HARD_DEADLINE_SECONDS"),
              std::string::npos);
    EXPECT_NE(r.errors[0].find("whole number of seconds"), std::string::npos);
  }
}

TEST(Config, DumpConfig_IsRecognizedAndRendersEveryKey) {
  georoute_config cfg;
  auto r = cfg.load({"--dump-config"}, env_of({}), std::string{});
  ASSERT_TRUE(r.ok()) << all_errors(r);
  EXPECT_TRUE(cfg.dump_config_requested);
  auto dump = render(r.values);
  for (auto key : {"account-endpoint",
                   "preferred-regions",
                   "excluded-regions",
                   "endpoint-discovery",
                   "use-multiple-write-locations",
                   "background-refresh-interval",
                   "min-refresh-interval",
                   "unavailable-region-expiry",
                   "metadata-hard-deadline",
                   "metadata-attempt-cap",
                   "failover-retries",
                   "failover-retry-interval",
                   "throttle-retries",
                   "throttle-max-wait",
                   "scheduler-threads",
                   "max-connections-per-endpoint",
                   "response-body-limit",
                   "tls-ca-file",
                   "ladder-hot-path",
                   "ladder-control-plane-read"})
    EXPECT_NE(dump.find(key), std::string::npos) << key;
}

TEST(Config, SchedulerThreads_DefaultsToCoreCount) {
  georoute_config cfg;
  auto r = cfg.load({}, env_of({}), std::string{});
  ASSERT_TRUE(r.ok());
  auto n = caf::get_or(caf::content(cfg), "scheduler.max-threads", size_t{0});
  EXPECT_EQ(n, r.values.scheduler_threads);
}

TEST(Config, ConfigFile_MissingExplicitFile_IsAnError) {
  georoute_config cfg;
  auto r = cfg.load({"--config-file=/nonexistent/georoute.ini"}, env_of({}));
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("/nonexistent/georoute.ini"), std::string::npos);
}

TEST(Config, ShippedIni_IsValid) {
  georoute_config cfg;
  auto r =
      cfg.load({"--config-file=" GEOROUTE_SOURCE_DIR "/config/georoute.ini"},
               env_of({}));
  ASSERT_TRUE(r.ok()) << all_errors(r);
  // The shipped file documents the defaults; loading it changes nothing.
  EXPECT_EQ(render(r.values), render(load("").values));
}

} // namespace

// The rules engine::start applies to settings built by hand: the same as
// `load`'s, one line each, and the key never in them.
TEST(CheckSettings, HandBuiltSettings_LoadRulesOneLineEach) {
  settings good;
  good.account_endpoint = "http://127.0.0.1:8081/";
  good.account_key = secret{"a2V5a2V5a2V5"};
  EXPECT_TRUE(check_settings(good).empty());
  struct row {
    const char* name;
    std::function<void(settings&)> edit;
    const char* expected;
  };
  const std::vector<row> rows = {
      {"no endpoint", [](settings& s) { s.account_endpoint.clear(); },
       "the engine needs georoute.account-endpoint"},
      {"not a URL", [](settings& s) { s.account_endpoint = "not a url"; },
       "georoute.account-endpoint = \"not a url\""},
      {"plain http off loopback",
       [](settings& s) { s.account_endpoint = "http://example.com/"; },
       "plain http is allowed only for loopback hosts"},
      {"a path", [](settings& s) { s.account_endpoint += "dbs/"; },
       "an endpoint has no path"},
      {"key not base64",
       [](settings& s) { s.account_key = secret{"not base64 !"}; },
       "the account key (GEOROUTE_ACCOUNT_KEY or georoute.key-file) is not "
       "usable"},
      {"empty ladder", [](settings& s) { s.http.ladders.no_retry = {}; },
       "georoute.http.ladder-no-retry = []: a ladder needs at least one step"},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    auto s = good;
    r.edit(s);
    auto problems = check_settings(s);
    ASSERT_EQ(problems.size(), 1u);
    EXPECT_NE(problems[0].find(r.expected), std::string::npos) << problems[0];
    EXPECT_EQ(problems[0].find("not base64 !"), std::string::npos);
  }
}

namespace {

TEST(Config, Hedging_DefaultsAndKeys) {
  auto d = load("");
  ASSERT_TRUE(d.ok()) << all_errors(d);
  EXPECT_TRUE(d.values.hedging.enabled);
  EXPECT_FALSE(d.values.hedging.threshold);
  EXPECT_EQ(d.values.hedging.step, std::chrono::milliseconds{500});
  EXPECT_EQ(d.values.hedging.mode,
            georoute::hedge_threshold_mode::static_threshold);
  auto r = load("[georoute.hedging]\nenabled=true\nthreshold=250ms\n"
                "step=100ms\nmode=\"adaptive\"\nbudget-percent=5\n");
  ASSERT_TRUE(r.ok()) << all_errors(r);
  EXPECT_TRUE(r.values.hedging.enabled);
  ASSERT_TRUE(r.values.hedging.threshold);
  EXPECT_EQ(*r.values.hedging.threshold, std::chrono::milliseconds{250});
  EXPECT_EQ(r.values.hedging.step, std::chrono::milliseconds{100});
  EXPECT_EQ(r.values.hedging.mode, georoute::hedge_threshold_mode::adaptive);
  EXPECT_DOUBLE_EQ(r.values.hedging.budget.share, 0.05);
}

// CAF takes a boolean only as a bare flag; --key=true and --key=false work
// too, on the command line over the file, and other values are named.
TEST(Config, BooleanFlags_TakeTrueAndFalseOnTheCommandLine) {
  auto on = load("[georoute.hedging]\nenabled=false\n",
                 {"--georoute.hedging.enabled=true"});
  ASSERT_TRUE(on.ok()) << all_errors(on);
  EXPECT_TRUE(on.values.hedging.enabled);
  auto bare = load("[georoute.hedging]\nenabled=false\n",
                   {"--georoute.hedging.enabled"});
  ASSERT_TRUE(bare.ok()) << all_errors(bare);
  EXPECT_TRUE(bare.values.hedging.enabled);
  auto off = load("[georoute.hedging]\nenabled=true\n",
                  {"--georoute.hedging.enabled=false"});
  ASSERT_TRUE(off.ok()) << all_errors(off);
  EXPECT_FALSE(off.values.hedging.enabled);
  auto bad = load("", {"--georoute.hedging.enabled=maybe"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(all_errors(bad).find("--georoute.hedging.enabled=maybe: expected "
                                 "true or false"),
            std::string::npos)
      << all_errors(bad);
}

TEST(Config, Hedging_BadValues_NameTheKey) {
  for (auto [ini, key] : std::vector<std::pair<std::string, std::string>>{
           {"[georoute.hedging]\nmode=\"sometimes\"\n",
            "georoute.hedging.mode"},
           {"[georoute.hedging]\nbudget-percent=101\n",
            "georoute.hedging.budget-percent"},
           {"[georoute.hedging]\nstep=0s\n", "georoute.hedging.step"}}) {
    auto r = load(ini);
    ASSERT_FALSE(r.ok()) << ini;
    EXPECT_NE(all_errors(r).find(key), std::string::npos) << all_errors(r);
  }
}

TEST(Config, MetadataHedging_OnByDefault_KeysParse_AndRender) {
  auto d = load("");
  ASSERT_TRUE(d.ok()) << all_errors(d);
  EXPECT_EQ(d.values.hedging.metadata.threshold,
            std::chrono::milliseconds{1500});
  EXPECT_EQ(d.values.hedging.metadata.max_concurrent, 32u);
  auto r = load("[georoute.hedging]\nenabled=false\nmetadata-threshold=2s\n"
                "metadata-max-concurrent=4\n");
  ASSERT_TRUE(r.ok()) << all_errors(r);
  EXPECT_EQ(r.values.hedging.metadata.threshold, std::chrono::seconds{2});
  EXPECT_EQ(r.values.hedging.metadata.max_concurrent, 4u);
  // The data-plane switch does not touch metadata hedging.
  EXPECT_FALSE(r.values.hedging.enabled);
  auto off = load("[georoute.hedging]\nmetadata-max-concurrent=0\n");
  ASSERT_TRUE(off.ok()) << all_errors(off);
  EXPECT_EQ(off.values.hedging.metadata.max_concurrent, 0u);
  auto dump = render(r.values);
  EXPECT_NE(dump.find("metadata-threshold=2s\n"), std::string::npos) << dump;
  EXPECT_NE(dump.find("metadata-max-concurrent=4\n"), std::string::npos)
      << dump;
}

TEST(Config, HedgedWrites_OffByDefault_KeyParses_AndRenders) {
  auto d = load("");
  ASSERT_TRUE(d.ok()) << all_errors(d);
  EXPECT_FALSE(d.values.hedging.hedge_writes);
  auto r = load("[georoute.hedging]\nwrites=true\n");
  ASSERT_TRUE(r.ok()) << all_errors(r);
  EXPECT_TRUE(r.values.hedging.hedge_writes);
  EXPECT_TRUE(r.values.hedging.enabled);
  auto dump = render(r.values);
  EXPECT_NE(dump.find("writes=true\n"), std::string::npos) << dump;
  auto bad = load("[georoute.hedging]\nwrites=\"sometimes\"\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(all_errors(bad).find("georoute.hedging.writes"), std::string::npos)
      << all_errors(bad);
}

TEST(Config, MetadataHedging_BadValues_NameTheKey) {
  for (auto [ini, key] : std::vector<std::pair<std::string, std::string>>{
           {"[georoute.hedging]\nmetadata-threshold=0s\n",
            "georoute.hedging.metadata-threshold"},
           {"[georoute.hedging]\nmetadata-threshold=2h\n",
            "georoute.hedging.metadata-threshold"},
           {"[georoute.hedging]\nmetadata-max-concurrent=-1\n",
            "georoute.hedging.metadata-max-concurrent"},
           {"[georoute.hedging]\nmetadata-max-concurrent=100001\n",
            "georoute.hedging.metadata-max-concurrent"}}) {
    auto r = load(ini);
    ASSERT_FALSE(r.ok()) << ini;
    EXPECT_NE(all_errors(r).find(key), std::string::npos) << all_errors(r);
  }
}

} // namespace

namespace {

TEST(Config, CircuitBreaker_DefaultsAndKeys) {
  using std::chrono::milliseconds;
  auto d = load("");
  ASSERT_TRUE(d.ok()) << all_errors(d);
  const auto& bd = d.values.circuit_breaker;
  EXPECT_TRUE(d.values.circuit_breaker_enabled);
  EXPECT_EQ(bd.read_failure_threshold, 10u);
  EXPECT_EQ(bd.write_failure_threshold, 5u);
  EXPECT_EQ(bd.hedge_win_threshold, 5u);
  EXPECT_EQ(bd.open_period, milliseconds{5000});
  EXPECT_EQ(bd.max_open_period, milliseconds{300000});
  EXPECT_EQ(bd.probe_timeout, milliseconds{10000});
  EXPECT_EQ(bd.half_open_steps, 3u);
  EXPECT_EQ(bd.capacity, 10000u);
  auto r = load("[georoute.circuit-breaker]\nenabled=false\nread-failures=3\n"
                "write-failures=2\nhedge-wins=4\nopen-period=200ms\n"
                "max-open-period=2s\nprobe-timeout=1s\nhalf-open-steps=0\n"
                "capacity=64\n");
  ASSERT_TRUE(r.ok()) << all_errors(r);
  const auto& b = r.values.circuit_breaker;
  EXPECT_FALSE(r.values.circuit_breaker_enabled);
  EXPECT_EQ(b.read_failure_threshold, 3u);
  EXPECT_EQ(b.write_failure_threshold, 2u);
  EXPECT_EQ(b.hedge_win_threshold, 4u);
  EXPECT_EQ(b.open_period, milliseconds{200});
  EXPECT_EQ(b.max_open_period, milliseconds{2000});
  EXPECT_EQ(b.probe_timeout, milliseconds{1000});
  EXPECT_EQ(b.half_open_steps, 0u);
  EXPECT_EQ(b.capacity, 64u);
}

TEST(Config, CircuitBreaker_BadValues_NameTheKey) {
  const std::string sec = "[georoute.circuit-breaker]\n";
  for (auto [ini, key] : std::vector<std::pair<std::string, std::string>>{
           {sec + "read-failures=0\n",
            "georoute.circuit-breaker.read-failures"},
           {sec + "write-failures=-1\n",
            "georoute.circuit-breaker.write-failures"},
           {sec + "hedge-wins=0\n", "georoute.circuit-breaker.hedge-wins"},
           {sec + "open-period=0s\n", "georoute.circuit-breaker.open-period"},
           {sec + "open-period=10s\nmax-open-period=5s\n",
            "georoute.circuit-breaker.max-open-period"},
           {sec + "probe-timeout=2h\n",
            "georoute.circuit-breaker.probe-timeout"},
           {sec + "half-open-steps=17\n",
            "georoute.circuit-breaker.half-open-steps"},
           {sec + "capacity=0\n", "georoute.circuit-breaker.capacity"}}) {
    auto r = load(ini);
    ASSERT_FALSE(r.ok()) << ini;
    EXPECT_NE(all_errors(r).find(key), std::string::npos) << all_errors(r);
  }
}

TEST(Config, CircuitBreaker_CheckSettings_NamesTheKey) {
  auto d = load("");
  ASSERT_TRUE(d.ok()) << all_errors(d);
  auto s = d.values;
  s.account_endpoint = "https://acct.documents.azure.com:443/";
  s.circuit_breaker.max_open_period = std::chrono::milliseconds{1};
  auto problems = check_settings(s);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("georoute.circuit-breaker.max-open-period"),
            std::string::npos)
      << problems[0];
}

// [georoute.fleet-health]: off by default with nothing required; on, its
// keys are checked together, each problem naming its key.
TEST(Config, FleetHealth_OffByDefault_OnNeedsServersAndAReporter) {
  auto d = load("");
  ASSERT_TRUE(d.ok()) << all_errors(d);
  auto s = d.values;
  s.account_endpoint = "https://acct.documents.azure.com:443/";
  EXPECT_FALSE(s.fleet.enabled);
  EXPECT_TRUE(check_settings(s).empty());
  auto keys = load(R"([georoute.fleet-health]
enabled=true
servers=["nats://127.0.0.1:4222"]
reporter="p01"
fleet="drill-7"
min-reporters=3
)");
  ASSERT_TRUE(keys.ok()) << all_errors(keys);
  EXPECT_TRUE(keys.values.fleet.enabled);
  EXPECT_EQ(keys.values.fleet.reporter, "p01");
  EXPECT_EQ(keys.values.fleet.min_reporters, 3u);
  struct row {
    std::function<void(settings&)> change;
    std::string names;
  };
  const std::vector<row> rows = {
      {[](settings& x) { x.fleet.servers.clear(); },
       "georoute.fleet-health.servers: needed"},
      {[](settings& x) { x.fleet.reporter.clear(); },
       "georoute.fleet-health.reporter: needed"},
      {[](settings& x) { x.fleet.reporter = "P 1"; },
       "georoute.fleet-health.reporter = \"P 1\": not a subject token"},
      {[](settings& x) { x.fleet.servers = {"nats://nats.example:4222"}; },
       "plain nats is allowed only for loopback hosts"},
      {[](settings& x) { x.fleet.servers = {"tls://nats.example:4222"}; },
       "georoute.fleet-health.ca-file: needed for tls:// servers"},
      {[](settings& x) { x.fleet.servers = {"http://127.0.0.1:4222"}; },
       "expected \"tls://host:port\""},
      {[](settings& x) { x.fleet.nkey_seed_file = "/etc/hostname"; },
       "give both or neither"},
      {[](settings& x) { x.fleet.ca_file = "/nonexistent/ca.pem"; },
       "georoute.fleet-health.ca-file = \"/nonexistent/ca.pem\": cannot read"},
      {[](settings& x) { x.fleet.claim_ttl = std::chrono::seconds{1}; },
       "georoute.fleet-health.claim-ttl = 1s: shorter than half the window"},
  };
  for (const auto& r : rows) {
    auto x = keys.values;
    x.account_endpoint = s.account_endpoint;
    EXPECT_TRUE(check_settings(x).empty());
    r.change(x);
    auto problems = check_settings(x);
    ASSERT_FALSE(problems.empty()) << r.names;
    EXPECT_NE(problems[0].find(r.names), std::string::npos) << problems[0];
  }
}

} // namespace

// -- the option table (config/options.hpp) -----------------------------------

namespace {

// config/georoute.ini as (key, value text) in file order: "[section]" lines
// and "name=value" lines, comments skipped.
std::vector<std::pair<std::string, std::string>> shipped_ini_keys() {
  std::ifstream in(GEOROUTE_SOURCE_DIR "/config/georoute.ini");
  std::vector<std::pair<std::string, std::string>> keys;
  std::string line, section;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == ';') continue;
    if (line[0] == '[') {
      section = line.substr(1, line.find(']') - 1);
      continue;
    }
    auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    keys.emplace_back(section + "." + line.substr(0, eq), line.substr(eq + 1));
  }
  return keys;
}

// Every key of the table is in georoute.ini with the default of `settings{}`,
// in the table's order, and the file has no key the table lacks. Values are
// compared as CAF parses them ("300s" and "5min" are one duration).
TEST(OptionTable, ShippedIni_ListsEveryKeyWithItsDefault_AndNoOther) {
  auto ini = shipped_ini_keys();
  const auto& table = option_table();
  ASSERT_FALSE(ini.empty());
  const settings defaults;
  size_t i = 0;
  for (const auto& opt : table) {
    SCOPED_TRACE(opt.key());
    ASSERT_LT(i, ini.size()) << "missing from georoute.ini";
    EXPECT_EQ(ini[i].first, opt.key()) << "georoute.ini lists keys in another "
                                          "order, or lacks this one";
    if (ini[i].first != opt.key()) break;
    auto in_file = caf::config_value::parse(ini[i].second);
    auto in_table = caf::config_value::parse(opt.text(defaults));
    ASSERT_TRUE(in_file) << ini[i].second;
    ASSERT_TRUE(in_table) << opt.text(defaults);
    EXPECT_EQ(caf::deep_to_string(*in_file), caf::deep_to_string(*in_table))
        << "georoute.ini says " << ini[i].second << ", settings{} says "
        << opt.text(defaults);
    ++i;
  }
  for (; i < ini.size(); ++i)
    ADD_FAILURE() << ini[i].first << " is in georoute.ini, not in the table";
}

// The defaults pass the table's own checks, and every row's text reads back
// into the same value (the dump can be fed back as a configuration file).
TEST(OptionTable, Defaults_PassTheirChecks_AndTheDumpReadsBack) {
  const settings defaults;
  for (const auto& opt : option_table())
    EXPECT_EQ(opt.check(defaults), std::nullopt) << opt.key();
  auto r = load("[georoute]\npreferred-regions=[\"East US\"]\n"
                "[georoute.hedging]\nthreshold=250ms\nmode=\"adaptive\"\n");
  ASSERT_TRUE(r.ok()) << all_errors(r);
  auto dump = render(r.values);
  auto again = load(dump);
  ASSERT_TRUE(again.ok()) << all_errors(again) << dump;
  EXPECT_EQ(render(again.values), dump);
}

// Hand-built settings are held to the bounds loaded ones are, in the same
// words.
TEST(OptionTable, HandBuiltOutOfBounds_RefusedInTheWordsOfTheFile) {
  auto loaded = load("[georoute]\nfailover-retries=20000\n");
  ASSERT_EQ(loaded.errors.size(), 1u) << all_errors(loaded);
  settings s;
  s.account_endpoint = "https://acct.documents.azure.com:443/";
  s.retry.failover_retries = 20000;
  auto problems = check_settings(s);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0], loaded.errors[0]);
  EXPECT_EQ(problems[0],
            "georoute.failover-retries = 20000: must be between 0 and 10000");
}

// "QUJ=" has the shape of base64 (four characters of its alphabet, padded)
// but is not canonical: its last character has bits the padding drops. The
// transport refuses it when it signs, so loading and checking the settings
// ask the transport's decoder too, and refuse it in the same words.
TEST(OptionTable, AKeyTheTransportRefuses_LoadAndCheckSettingsRefuseIt) {
  const std::string bad_key = "QUJ=";
  auto transport_says = georoute::transport::parse_master_key(bad_key);
  ASSERT_FALSE(transport_says);
  const auto& reason = transport_says.error().what;
  auto loaded = load("", {}, {{"GEOROUTE_ACCOUNT_KEY", bad_key}});
  ASSERT_EQ(loaded.errors.size(), 1u) << all_errors(loaded);
  EXPECT_NE(loaded.errors[0].find(reason), std::string::npos)
      << loaded.errors[0];
  settings s;
  s.account_endpoint = "https://acct.documents.azure.com:443/";
  s.account_key = secret{bad_key};
  auto problems = check_settings(s);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find(reason), std::string::npos) << problems[0];
  // A key the transport takes passes both.
  s.account_key = secret{test_key};
  EXPECT_TRUE(check_settings(s).empty());
  EXPECT_TRUE(load("", {}, {{"GEOROUTE_ACCOUNT_KEY", test_key}}).ok());
}

// A host with its own configuration class: add_options registers georoute's
// keys, read_settings reads them, and neither touches the host's scheduler.
struct host_config : caf::actor_system_config {
  host_config() {
    opt_group{custom_options_, "host"}.add<int64_t>("port", "the host's own");
    add_options(*this);
  }
};

TEST(OptionTable, HostConfig_AddOptionsAndReadSettings_LeaveTheSchedulerAlone) {
  host_config cfg;
  std::istringstream ini{"[host]\nport=8080\n[scheduler]\nmax-threads=3\n"
                         "[georoute]\nfailover-retries=7\n"
                         "scheduler-threads=16\n"
                         "[georoute.hedging]\nenabled=false\n"};
  ASSERT_FALSE(cfg.parse({"--georoute.throttle-retries=8"}, ini));
  auto r = read_settings(caf::content(cfg), env_of({}));
  ASSERT_TRUE(r.ok()) << all_errors(r);
  EXPECT_EQ(r.values.retry.failover_retries, 7u);
  EXPECT_EQ(r.values.retry.throttle_retries, 8u);
  EXPECT_EQ(r.values.scheduler_threads, 16u);
  EXPECT_FALSE(r.values.hedging.enabled);
  EXPECT_EQ(caf::get_or(caf::content(cfg), "scheduler.max-threads", size_t{0}),
            3u);
  EXPECT_EQ(caf::get_or(caf::content(cfg), "host.port", int64_t{0}), 8080);
  // Without a scheduler section the host's stays unset (CAF's default).
  host_config plain;
  std::istringstream none{"[georoute]\nscheduler-threads=16\n"};
  ASSERT_FALSE(plain.parse({}, none));
  ASSERT_TRUE(read_settings(caf::content(plain), env_of({})).ok());
  EXPECT_EQ(caf::get_if(&caf::content(plain), "scheduler.max-threads"),
            nullptr);
}

// The help text of every key comes from the table, with its bounds and its
// default.
struct help_of : georoute_config {
  const caf::config_option_set& options() const { return custom_options_; }
};

TEST(OptionTable, Help_NamesBoundsAndDefault) {
  help_of cfg;
  const auto* opt =
      cfg.options().qualified_name_lookup("georoute.http", "io-threads");
  ASSERT_NE(opt, nullptr);
  auto help = std::string{opt->description().begin(), opt->description().end()};
  EXPECT_EQ(help, "HTTP io threads; 1 to 16 (1)");
}

} // namespace
