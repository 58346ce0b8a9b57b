// The admin API of grey failures, over loopback: latency with jitter, a
// flapping region, range-scoped fault rules, per-range counters, reset, and
// the 400 texts of bad input.

#include "tests/emulator/server_fixture.hpp"

#include <thread>

namespace {

using namespace georoute;
using namespace georoute::emulator_testing;

class EmulatorGreyAdmin : public EmulatorServer {
protected:
  /// The error text of a 400 answer.
  std::string error_of(const std::string& method, const std::string& path,
                       const std::string& body = {}) {
    auto o = admin(method, path, body);
    EXPECT_EQ(o.status, 400)
        << method << " " << path << " " << body << ": " << o.body;
    return parse(o).value("error", std::string{});
  }

  /// Writes one document with partition key `pk` at West US; returns the
  /// range it landed in.
  std::string write(const std::string& pk) {
    auto o = send("POST", west(), "/dbs/d/colls/c/docs",
                  json{{"id", "doc-" + pk}, {"pk", pk}}.dump(), pk_header(pk));
    EXPECT_EQ(o.status, 201) << o.error_detail << o.body;
    return o.session_token.substr(0, o.session_token.find(':'));
  }

  static std::vector<std::pair<std::string, std::string>>
  pk_header(const std::string& pk) {
    return {{"x-ms-documentdb-partitionkey", json::array({pk}).dump()}};
  }

  transport::outcome read(const std::string& region, const std::string& pk) {
    return send("GET", emu->endpoint(region), "/dbs/d/colls/c/docs/doc-" + pk,
                {}, pk_header(pk));
  }
};

TEST_F(EmulatorGreyAdmin, Latency_WithJitter_RoundTripAndErrors) {
  auto o = admin("POST", "regions/East%20US/latency",
                 R"({"ms":120,"jitter_ms":20})");
  ASSERT_EQ(o.status, 200) << o.body;
  EXPECT_EQ(emu->get_latency("East US"), 120ms);
  EXPECT_EQ(emu->get_jitter("East US"), 20ms);
  auto state = parse(admin("GET", "state"));
  EXPECT_EQ(state["regions"][1]["latency_ms"], 120);
  EXPECT_EQ(state["regions"][1]["jitter_ms"], 20);
  // Without jitter_ms, the jitter is 0 again.
  ASSERT_EQ(admin("POST", "regions/East%20US/latency", R"({"ms":5})").status,
            200);
  EXPECT_EQ(emu->get_jitter("East US"), 0ms);

  EXPECT_EQ(error_of("POST", "regions/East%20US/latency",
                     R"({"ms":10,"jitter_ms":11})")
                .rfind("jitter_ms:", 0),
            0u);
  EXPECT_EQ(error_of("POST", "regions/East%20US/latency", R"({"ms":-1})")
                .rfind("ms:", 0),
            0u);
  EXPECT_NE(
      error_of("POST", "regions/Mars/latency", R"({"ms":1})").find("Mars"),
      std::string::npos);
}

TEST_F(EmulatorGreyAdmin, Flap_StartShownInStateThenDeleteStops) {
  auto o = admin("POST", "regions/North%20Europe/flap",
                 R"({"down_state":"offline_refuse","down_for_ms":60000,)"
                 R"("up_for_ms":500})");
  ASSERT_EQ(o.status, 200) << o.body;
  EXPECT_EQ(send("GET", emu->endpoint("North Europe"), "/").error,
            failure::refused);
  auto flap = parse(admin("GET", "state"))["regions"][2]["flap"];
  ASSERT_TRUE(flap.is_object()) << flap.dump();
  EXPECT_EQ(flap["down"], true);
  EXPECT_EQ(flap["down_state"], "offline_refuse");
  EXPECT_EQ(flap["down_for_ms"], 60000);
  EXPECT_EQ(flap["up_for_ms"], 500);
  EXPECT_EQ(flap["transitions"], 1);
  EXPECT_EQ(parse(admin("GET", "state"))["regions"][2]["state"],
            "offline_refuse");

  ASSERT_EQ(admin("DELETE", "regions/North%20Europe/flap").status, 200);
  EXPECT_TRUE(parse(admin("GET", "state"))["regions"][2]["flap"].is_null());
  EXPECT_EQ(send("GET", emu->endpoint("North Europe"), "/").status, 200);
  EXPECT_EQ(admin("GET", "regions/North%20Europe/flap").status, 405);
}

TEST_F(EmulatorGreyAdmin, Flap_BadInput_400NamingTheField) {
  const std::string path = "regions/East%20US/flap";
  EXPECT_EQ(error_of("POST", path, R"({"down_state":"sleepy"})")
                .rfind("down_state:", 0),
            0u);
  EXPECT_EQ(
      error_of("POST", path, R"({"down_for_ms":5})").rfind("down_for_ms:", 0),
      0u);
  EXPECT_EQ(
      error_of("POST", path, R"({"up_for_ms":"long"})").rfind("up_for_ms:", 0),
      0u);
  EXPECT_EQ(error_of("POST", path, R"({"down_latency_ms":-3})")
                .rfind("down_latency_ms:", 0),
            0u);
  EXPECT_EQ(error_of("POST", path, R"({"down_state":"online"})")
                .rfind("down_latency", 0),
            0u);
  EXPECT_EQ(error_of("POST", path, R"({"period":1})").rfind("period:", 0), 0u);
  EXPECT_NE(error_of("POST", "regions/Mars/flap", "{}").find("Mars"),
            std::string::npos);
  EXPECT_NE(error_of("DELETE", "regions/Mars/flap").find("Mars"),
            std::string::npos);
  EXPECT_EQ(emu->get_region_state("East US"), region_state::online);
}

TEST_F(EmulatorGreyAdmin, RangeFault_OnlyThatRangeInThatRegion_CountedByRange) {
  create_collection();
  std::map<std::string, std::string> pk_in;
  for (int i = 0; i < 32 && pk_in.size() < 2; ++i) {
    auto pk = "k" + std::to_string(i);
    pk_in.emplace(write(pk), pk);
  }
  ASSERT_EQ(pk_in.size(), 2u);
  ASSERT_EQ(admin("POST", "counters/reset").status, 200);
  auto added = admin("POST", "faults",
                     R"({"region":"East US","collection":"dbs/d/colls/c",)"
                     R"("range":"1","status":503,"substatus":21008,)"
                     R"("retry_after_ms":25})");
  ASSERT_EQ(added.status, 200) << added.body;
  auto failed = read("East US", pk_in["1"]);
  EXPECT_EQ(failed.status, 503);
  EXPECT_EQ(failed.substatus, 21008);
  EXPECT_EQ(failed.retry_after_ms, 25);
  EXPECT_EQ(read("East US", pk_in["0"]).status, 200);
  EXPECT_EQ(read("West US", pk_in["1"]).status, 200);

  auto counters = parse(admin("GET", "counters/ranges"));
  const auto& east = counters["East US"]["dbs/d/colls/c"];
  EXPECT_EQ(east["1"]["status"]["503"], 1) << counters.dump();
  EXPECT_EQ(east["1"]["held"], 0) << counters.dump();
  EXPECT_EQ(east["0"]["status"]["200"], 1) << counters.dump();
  EXPECT_EQ(counters["West US"]["dbs/d/colls/c"]["1"]["status"]["200"], 1)
      << counters.dump();

  auto id = parse(added)["id"].get<uint64_t>();
  ASSERT_EQ(admin("DELETE", "faults/" + std::to_string(id)).status, 200);
  EXPECT_EQ(read("East US", pk_in["1"]).status, 200);
  ASSERT_EQ(admin("POST", "counters/reset").status, 200);
  EXPECT_TRUE(parse(admin("GET", "counters/ranges")).empty());
  EXPECT_EQ(admin("POST", "counters/ranges").status, 405);
}

TEST_F(EmulatorGreyAdmin, RangeHang_HeldShownInState_DeleteReleases) {
  create_collection();
  auto range = write("k0");
  auto added = admin("POST", "faults",
                     R"({"region":"East US","collection":"dbs/d/colls/c",)"
                     R"("range":")" +
                         range + R"(","action":"hang"})");
  ASSERT_EQ(added.status, 200) << added.body;
  auto own = make_client();
  auto held = std::async(std::launch::async, [&] {
    return send("GET", emu->endpoint("East US"), "/dbs/d/colls/c/docs/doc-k0",
                {}, pk_header("k0"), 20s, own.get());
  });
  bool shown = false;
  for (int i = 0; i < 500 && !shown; ++i) {
    shown = parse(admin("GET", "state"))["regions"][1]["held_requests"] == 1;
    if (!shown) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(shown);
  ASSERT_EQ(admin("DELETE", "faults").status, 200);
  ASSERT_EQ(held.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(held.get().error, failure::reset);
  auto counters = parse(admin("GET", "counters/ranges"));
  EXPECT_EQ(counters["East US"]["dbs/d/colls/c"][range]["held"], 1)
      << counters.dump();
}

TEST_F(EmulatorGreyAdmin, RangeFault_BadInput_400NamingTheField) {
  create_collection();
  struct row {
    const char* body;
    const char* prefix;
    const char* mentions;
  };
  const row rows[] = {
      {R"({"region":"Mars"})", "region:", "Mars"},
      {R"({"collection":"dbs/d/colls/c","range":"9"})", "range:", "'9'"},
      {R"({"range":"0"})", "range:", "collection"},
      {R"({"collection":"dbs/d/colls/zz","range":"0"})", "collection:", "zz"},
      {R"({"collection":"d/c"})", "collection:", "d/c"},
      {R"({"action":"sleep"})", "action:", "sleep"},
      {R"({"action":"hang","delay_ms":5})", "delay_ms:", "hang"},
      {R"({"action":"delay"})", "delay_ms:", "delay"},
      {R"({"delay_ms":-5})", "delay_ms:", "-5"},
      {R"({"delay_ms":"slow"})", "delay_ms:", "slow"},
      {R"({"range":5})", "range:", "5"},
  };
  for (const auto& r : rows) {
    auto what = error_of("POST", "faults", r.body);
    EXPECT_EQ(what.rfind(r.prefix, 0), 0u) << r.body << ": " << what;
    EXPECT_NE(what.find(r.mentions), std::string::npos)
        << r.body << ": " << what;
  }
  // None of them was added.
  EXPECT_EQ(send("GET", west(), "/").status, 200);
  EXPECT_EQ(send("GET", west(), "/dbs/d/colls/c").status, 200);
}

TEST_F(EmulatorGreyAdmin, Reset_LiftsEveryFault_KeepsTopology) {
  ASSERT_EQ(
      admin("POST", "regions/East%20US/state", R"({"state":"hang"})").status,
      200);
  ASSERT_EQ(
      admin("POST", "regions/North%20Europe/latency", R"({"ms":3000})").status,
      200);
  ASSERT_EQ(admin("POST", "regions/West%20US/flap",
                  R"({"down_state":"offline_reset","down_for_ms":60000})")
                .status,
            200);
  ASSERT_EQ(admin("POST", "faults", R"({"status":500})").status, 200);
  ASSERT_EQ(admin("POST", "write-regions", R"({"order":["East US"]})").status,
            200);
  ASSERT_EQ(admin("POST", "reset").status, 200);
  auto state = parse(admin("GET", "state"));
  for (const auto& r : state["regions"]) {
    EXPECT_EQ(r["state"], "online") << r.dump();
    EXPECT_EQ(r["latency_ms"], 0) << r.dump();
    EXPECT_TRUE(r["flap"].is_null()) << r.dump();
  }
  for (const auto& region : three_regions)
    EXPECT_EQ(send("GET", emu->endpoint(region), "/").status, 200) << region;
  EXPECT_EQ(state["write_regions"][0], "East US"); // topology stays
  EXPECT_EQ(admin("GET", "reset").status, 405);
}

} // namespace
