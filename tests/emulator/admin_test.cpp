// The emulator's JSON admin API on the global endpoint, over loopback.

#include "tests/emulator/server_fixture.hpp"

#include <fstream>
#include <set>
#include <sstream>

namespace {

using namespace georoute;
using namespace georoute::emulator_testing;

using EmulatorAdmin = EmulatorServer;

// -- admin API
// -----------------------------------------------------------------

TEST_F(EmulatorAdmin, State_ListsRegions) {
  auto o = admin("GET", "state");
  ASSERT_EQ(o.status, 200) << o.error_detail << o.body;
  auto j = parse(o);
  ASSERT_EQ(j["regions"].size(), 3u) << o.body;
  EXPECT_EQ(j["regions"][2]["name"], "North Europe");
  EXPECT_EQ(j["regions"][2]["endpoint"], emu->endpoint("North Europe"));
  EXPECT_EQ(j["regions"][2]["state"], "online");
  EXPECT_EQ(j["regions"][2]["latency_ms"], 0);
  EXPECT_EQ(j["write_regions"][0], "West US");
  EXPECT_EQ(j["multi_write"], false);
  EXPECT_EQ(j["replication_lag_ms"], 0);
}

TEST_F(EmulatorAdmin, WriteRegions_AccountShowsNewOrder) {
  auto o = admin("POST", "write-regions",
                 R"({"order":["East US","West US","North Europe"]})");
  ASSERT_EQ(o.status, 200) << o.body;
  auto account = parse(send("GET", emu->global_endpoint(), "/"));
  ASSERT_FALSE(account["writableLocations"].empty());
  EXPECT_EQ(account["writableLocations"][0]["name"], "East US");
  EXPECT_EQ(account["writableLocations"][0]["databaseAccountEndpoint"],
            emu->endpoint("East US"));
  EXPECT_EQ(parse(admin("GET", "state"))["write_regions"][0], "East US");

  auto unknown = admin("POST", "write-regions", R"({"order":["Mars"]})");
  EXPECT_EQ(unknown.status, 400);
  EXPECT_NE(parse(unknown)["error"].get<std::string>().find("order"),
            std::string::npos);
}

TEST_F(EmulatorAdmin, RegionStateAndLatency_UrlEncodedName) {
  auto o = admin("POST", "regions/North%20Europe/latency", R"({"ms":7})");
  ASSERT_EQ(o.status, 200) << o.body;
  EXPECT_EQ(emu->get_latency("North Europe"), 7ms);
  o = admin("POST", "regions/East%20US/state", R"({"state":"offline_refuse"})");
  ASSERT_EQ(o.status, 200) << o.body;
  EXPECT_EQ(send("GET", emu->endpoint("East US"), "/").error, failure::refused);
  auto state = parse(admin("GET", "state"));
  EXPECT_EQ(state["regions"][1]["state"], "offline_refuse");
  EXPECT_EQ(state["regions"][2]["latency_ms"], 7);
  o = admin("POST", "regions/East%20US/state", R"({"state":"online"})");
  ASSERT_EQ(o.status, 200) << o.body;
  EXPECT_EQ(send("GET", emu->endpoint("East US"), "/").status, 200);
}

TEST_F(EmulatorAdmin, BadRequests_400NamingTheField) {
  auto error_of = [&](const transport::outcome& o) {
    EXPECT_EQ(o.status, 400) << o.body;
    return parse(o).value("error", std::string{});
  };
  EXPECT_NE(
      error_of(admin("POST", "regions/Mars/state", R"({"state":"online"})"))
          .find("Mars"),
      std::string::npos);
  EXPECT_NE(error_of(admin("POST", "regions/West%20US/state",
                           R"({"state":"sleepy"})"))
                .find("state"),
            std::string::npos);
  EXPECT_NE(
      error_of(admin("POST", "regions/West%20US/latency", R"({"ms":"fast"})"))
          .find("ms"),
      std::string::npos);
  EXPECT_NE(error_of(admin("POST", "multi-write", "{not json")).find("body"),
            std::string::npos);
  EXPECT_NE(
      error_of(admin("POST", "faults", R"({"status":42})")).find("status"),
      std::string::npos);
  EXPECT_NE(
      error_of(admin("POST", "faults", R"({"colour":"red"})")).find("colour"),
      std::string::npos);
  EXPECT_EQ(admin("GET", "nothing-here").status, 404);
  EXPECT_EQ(admin("GET", "faults").status, 405);
}

TEST_F(EmulatorAdmin, MultiWriteAndReplicationLag_ShownInState) {
  ASSERT_EQ(admin("POST", "multi-write", R"({"enabled":true})").status, 200);
  ASSERT_EQ(admin("POST", "replication-lag", R"({"ms":250})").status, 200);
  auto state = parse(admin("GET", "state"));
  EXPECT_EQ(state["multi_write"], true);
  EXPECT_EQ(state["replication_lag_ms"], 250);
  auto account = parse(send("GET", emu->global_endpoint(), "/"));
  EXPECT_EQ(account["writableLocations"].size(), 3u);
}

TEST_F(EmulatorAdmin, Fault_InjectedThenDeleted) {
  auto added = admin("POST", "faults",
                     R"({"region":"West US","method":"GET","status":503,)"
                     R"("substatus":21008,"retry_after_ms":10})");
  ASSERT_EQ(added.status, 200) << added.body;
  auto id = parse(added)["id"].get<uint64_t>();
  auto failed = send("GET", west(), "/");
  EXPECT_EQ(failed.status, 503) << failed.body;
  EXPECT_EQ(failed.substatus, 21008);
  EXPECT_EQ(failed.retry_after_ms, 10);
  EXPECT_EQ(send("GET", emu->endpoint("East US"), "/").status, 200);

  ASSERT_EQ(admin("DELETE", "faults/" + std::to_string(id)).status, 200);
  EXPECT_EQ(send("GET", west(), "/").status, 200);

  ASSERT_EQ(admin("POST", "faults", R"({"status":429,"count":1})").status, 200);
  ASSERT_EQ(admin("DELETE", "faults").status, 200);
  EXPECT_EQ(send("GET", west(), "/").status, 200);
}

TEST_F(EmulatorAdmin,
       Fault_BodyHeadersTruncate_ParsedOrRejectedNamingTheField) {
  auto added = admin("POST", "faults",
                     R"({"operation":"account","status":200,"count":1,)"
                     R"("body":"{\"id\": 5}","headers":{"etag":"\"9\""}})");
  ASSERT_EQ(added.status, 200) << added.body;
  auto got = send("GET", west(), "/");
  EXPECT_EQ(got.status, 200);
  EXPECT_EQ(got.body, R"({"id": 5})");
  EXPECT_EQ(got.etag, "\"9\"");
  ASSERT_EQ(admin("POST", "faults",
                  R"({"operation":"account","truncate":true,"count":1})")
                .status,
            200);
  EXPECT_EQ(send("GET", west(), "/").error, failure::reset);
  EXPECT_EQ(send("GET", west(), "/").status, 200);

  auto error_of = [&](const std::string& body) {
    auto o = admin("POST", "faults", body);
    EXPECT_EQ(o.status, 400) << o.body;
    return parse(o).value("error", std::string{});
  };
  EXPECT_EQ(error_of(R"({"body":5})").rfind("body:", 0), 0u);
  EXPECT_EQ(error_of(R"({"headers":"etag"})").rfind("headers:", 0), 0u);
  EXPECT_EQ(error_of(R"({"headers":{"etag":1}})").rfind("headers.etag:", 0),
            0u);
  EXPECT_EQ(error_of(R"({"truncate":"yes"})").rfind("truncate:", 0), 0u);
}

TEST_F(EmulatorAdmin, ClockOffset_SignedRequestsForbiddenUntilReset) {
  ASSERT_EQ(admin("POST", "clock-offset", R"({"ms":-1200000})").status, 200);
  EXPECT_EQ(send("GET", west(), "/").status, 403);
  auto wrong = admin("POST", "clock-offset", R"({"ms":"late"})");
  EXPECT_EQ(wrong.status, 400);
  EXPECT_EQ(parse(wrong).value("error", std::string{}).rfind("ms:", 0), 0u);
  ASSERT_EQ(admin("POST", "clock-offset", R"({"ms":0})").status, 200);
  EXPECT_EQ(send("GET", west(), "/").status, 200);
}

TEST_F(EmulatorAdmin, Split_ChildrenInPkranges) {
  create_collection();
  auto o = admin("POST", "split", R"({"db":"d","coll":"c","range":"0"})");
  ASSERT_EQ(o.status, 200) << o.body;
  auto children = parse(o)["children"];
  ASSERT_EQ(children.size(), 2u) << o.body;
  auto ranges = send("GET", west(), "/dbs/d/colls/c/pkranges");
  ASSERT_EQ(ranges.status, 200) << ranges.body;
  std::set<std::string> ids;
  auto listed = parse(ranges); // a named value: range-for over a temporary's
                               // member would dangle
  for (const auto& r : listed["PartitionKeyRanges"])
    ids.insert(r["id"].get<std::string>());
  for (const auto& c : children)
    EXPECT_EQ(ids.count(c.get<std::string>()), 1u) << ranges.body;

  auto bad = admin("POST", "split", R"({"db":"d","coll":"nope","range":"0"})");
  EXPECT_EQ(bad.status, 400) << bad.body;
}

TEST_F(EmulatorAdmin, Merge_OneRangeInPkranges_OldOnesGone) {
  create_collection();
  auto o =
      admin("POST", "merge", R"({"db":"d","coll":"c","ranges":["1","0"]})");
  ASSERT_EQ(o.status, 200) << o.body;
  auto merged = parse(o)["range"].get<std::string>();
  auto ranges = send("GET", west(), "/dbs/d/colls/c/pkranges");
  ASSERT_EQ(ranges.status, 200) << ranges.body;
  auto listed = parse(ranges);
  ASSERT_EQ(listed["PartitionKeyRanges"].size(), 1u) << ranges.body;
  EXPECT_EQ(listed["PartitionKeyRanges"][0]["id"], merged);
  EXPECT_EQ(listed["PartitionKeyRanges"][0]["parents"], (json{"0", "1"}));

  auto error_of = [&](const std::string& body) {
    auto bad = admin("POST", "merge", body);
    EXPECT_EQ(bad.status, 400) << body << ": " << bad.body;
    return parse(bad).value("error", std::string{});
  };
  EXPECT_EQ(error_of(R"({"db":"d","coll":"c","ranges":["0","1"]})")
                .rfind("ranges:", 0),
            0u)
      << "merged away already";
  EXPECT_EQ(
      error_of(R"({"db":"d","coll":"c","ranges":["0"]})").rfind("ranges:", 0),
      0u);
  EXPECT_EQ(error_of(R"({"db":"d","coll":"c"})").rfind("ranges:", 0), 0u);
  EXPECT_EQ(
      error_of(R"({"db":"d","coll":"x","ranges":["0","1"]})").rfind("coll:", 0),
      0u);
  EXPECT_EQ(
      error_of(R"({"db":"x","coll":"c","ranges":["0","1"]})").rfind("db:", 0),
      0u);
  EXPECT_EQ(error_of(R"({"db":"d","coll":"c","ranges":["0","1"],"x":1})")
                .rfind("x:", 0),
            0u);
}

TEST_F(EmulatorAdmin, RegionLag_ShownInState_UnknownRegionNamed) {
  auto o = admin("POST", "region-lag", R"({"region":"East US","lag_ms":5000})");
  ASSERT_EQ(o.status, 200) << o.body;
  EXPECT_EQ(emu->control().region_lags().at("East US"), 5000ms);
  auto state = parse(admin("GET", "state"));
  EXPECT_EQ(state["region_lag_ms"], (json{{"East US", 5000}}));
  auto bad = admin("POST", "region-lag", R"({"region":"Mars","lag_ms":5})");
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_NE(parse(bad)["error"].get<std::string>().find("Mars"),
            std::string::npos);
  auto negative =
      admin("POST", "region-lag", R"({"region":"East US","lag_ms":-5})");
  EXPECT_EQ(negative.status, 400);
  EXPECT_EQ(parse(negative)["error"].get<std::string>().rfind("lag_ms", 0), 0u);
  ASSERT_EQ(
      admin("POST", "region-lag", R"({"region":"East US","lag_ms":0})").status,
      200);
  EXPECT_EQ(parse(admin("GET", "state"))["region_lag_ms"], json::object());
}

TEST_F(EmulatorAdmin, Counters_CountPerRegionAndStatus_Reset) {
  ASSERT_EQ(admin("POST", "counters/reset").status, 200);
  ASSERT_EQ(send("GET", west(), "/").status, 200);
  ASSERT_EQ(send("GET", west(), "/").status, 200);
  ASSERT_EQ(send("GET", west(), "/dbs/none").status, 404);
  auto counters = parse(admin("GET", "counters"));
  EXPECT_EQ(counters["West US"]["200"], 2) << counters.dump();
  EXPECT_EQ(counters["West US"]["404"], 1) << counters.dump();
  ASSERT_EQ(admin("POST", "counters/reset").status, 200);
  counters = parse(admin("GET", "counters"));
  EXPECT_FALSE(counters.contains("West US") &&
               counters["West US"].value("200", 0) > 0)
      << counters.dump();
}

TEST_F(EmulatorAdmin, RemoveRestore_AccountListsFollow) {
  ASSERT_EQ(admin("POST", "regions/East%20US/remove").status, 200);
  auto account = parse(send("GET", emu->global_endpoint(), "/"));
  EXPECT_EQ(account["readableLocations"].size(), 2u);
  EXPECT_EQ(parse(admin("GET", "state"))["regions"][1]["removed"], true);
  ASSERT_EQ(admin("POST", "regions/East%20US/restore").status, 200);
  account = parse(send("GET", emu->global_endpoint(), "/"));
  EXPECT_EQ(account["readableLocations"].size(), 3u);
}

TEST_F(EmulatorAdmin, OnRegionalEndpoint_NotServed) {
  auto o = send("GET", west(), "/_emulator/state");
  EXPECT_NE(o.status, 200);
  EXPECT_EQ(emu->get_region_state("West US"), region_state::online);
}

} // namespace

namespace {

// The local address of every listening TCP socket of this process on
// `port`, from the kernel's table (/proc/net/tcp and tcp6: "local
// address" is hex IP:port, state 0A is LISTEN). Reading the table sends
// nothing, so the test needs no non-loopback traffic to prove the point.
std::vector<std::string> listening_addresses(uint16_t port) {
  std::vector<std::string> out;
  for (const char* file : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in{file};
    std::string line;
    std::getline(in, line); // the header
    while (std::getline(in, line)) {
      std::istringstream fields{line};
      std::string slot, local, remote, state;
      fields >> slot >> local >> remote >> state;
      auto colon = local.rfind(':');
      if (state != "0A" || colon == std::string::npos) continue;
      if (std::stoul(local.substr(colon + 1), nullptr, 16) != port) continue;
      out.push_back(local.substr(0, colon));
    }
  }
  return out;
}

uint16_t port_of(const std::string& endpoint) {
  auto colon = endpoint.rfind(':');
  return static_cast<uint16_t>(std::stoul(endpoint.substr(colon + 1)));
}

} // namespace

namespace {

// Issue 11, item 6: the admin API (on the global endpoint) and every
// regional endpoint listen on 127.0.0.1 only, never on a wildcard or an
// external address. 0100007F is 127.0.0.1 in the table's byte order.
TEST_F(EmulatorAdmin, EveryListener_BindsLoopbackOnly) {
  std::vector<std::string> endpoints{emu->global_endpoint(), west(),
                                     emu->endpoint("East US"),
                                     emu->endpoint("North Europe")};
  for (const auto& e : endpoints) {
    auto addresses = listening_addresses(port_of(e));
    ASSERT_EQ(addresses.size(), 1u) << e;
    EXPECT_EQ(addresses[0], "0100007F") << e;
  }
  // And the admin API answers there.
  EXPECT_EQ(admin("GET", "state").status, 200);
}

} // namespace
