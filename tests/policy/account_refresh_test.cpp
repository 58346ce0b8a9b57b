#include "georoute/actors/policy/account_refresh.hpp"

#include <gtest/gtest.h>

namespace {

using namespace georoute;
using namespace std::chrono_literals;

struct gate_row {
  const char* name;
  bool force, in_flight, known;
  std::chrono::seconds since;
  refresh_action expected;
};

TEST(RefreshGate, Table) {
  const gate_row rows[] = {
      {"NonForced_WithinInterval_Known_Skips", false, false, true, 5s,
       refresh_action::skip},
      {"NonForced_WithinInterval_InFlight_Skips", false, true, true, 5s,
       refresh_action::skip},
      {"NonForced_WithinInterval_Unknown_Fetches", false, false, false, 5s,
       refresh_action::fetch},
      {"NonForced_AfterInterval_Fetches", false, false, true, 15s,
       refresh_action::fetch},
      {"NonForced_AfterInterval_InFlight_Joins", false, true, true, 20s,
       refresh_action::join},
      {"Forced_WithinInterval_Fetches", true, false, true, 1s,
       refresh_action::fetch},
      {"Forced_InFlight_Joins", true, true, true, 1s, refresh_action::join},
  };
  for (const auto& r : rows)
    EXPECT_EQ(decide_refresh(r.force, r.in_flight, r.known, r.since, 15s),
              r.expected)
        << r.name;
}

database_account three_regions() {
  database_account a;
  a.writable = {{"West US", "http://127.0.0.1:1/"}};
  a.readable = {{"West US", "http://127.0.0.1:1/"},
                {"East US", "http://127.0.0.1:2/"},
                {"North Europe", "http://127.0.0.1:3/"}};
  return a;
}

TEST(SweepCandidates, NoAccount_GlobalOnly) {
  EXPECT_EQ(sweep_candidates("http://127.0.0.1:9/", nullptr, {"East US"}),
            std::vector<std::string>{"http://127.0.0.1:9/"});
}

TEST(SweepCandidates, PreferredFirst_CaseInsensitive_ThenAccountOrder) {
  auto a = three_regions();
  auto c =
      sweep_candidates("http://127.0.0.1:9/", &a, {"north europe", "East US"});
  EXPECT_EQ(c, (std::vector<std::string>{
                   "http://127.0.0.1:9/", "http://127.0.0.1:3/",
                   "http://127.0.0.1:2/", "http://127.0.0.1:1/"}));
}

TEST(SweepCandidates, GlobalEqualToARegion_AppearsOnce) {
  auto a = three_regions();
  auto c = sweep_candidates("http://127.0.0.1:1/", &a, {});
  EXPECT_EQ(c.size(), 3u);
  EXPECT_EQ(c.front(), "http://127.0.0.1:1/");
}

TEST(DiffAccounts, First_IsAChange) {
  auto d = diff_accounts(nullptr, three_regions());
  EXPECT_TRUE(d.first);
  EXPECT_TRUE(d.any());
}

TEST(DiffAccounts, Same_IsNoChange) {
  auto a = three_regions();
  EXPECT_FALSE(diff_accounts(&a, a).any());
}

TEST(DiffAccounts, WriteRegionSwitch_MultiWriteFlip_RegionsAddedAndRemoved) {
  auto a = three_regions();
  auto b = a;
  b.writable = {{"East US", "http://127.0.0.1:2/"}};
  b.enable_multiple_write_locations = true;
  b.readable.pop_back();
  b.readable.push_back({"UK South", "http://127.0.0.1:4/"});
  auto d = diff_accounts(&a, b);
  EXPECT_TRUE(d.write_region_switched);
  EXPECT_TRUE(d.write_order_changed);
  EXPECT_TRUE(d.multi_write_changed);
  EXPECT_EQ(d.added, std::vector<std::string>{"UK South"});
  EXPECT_EQ(d.removed, std::vector<std::string>{"North Europe"});
}

TEST(DiffAccounts, EndpointMoved_IsAChange) {
  auto a = three_regions();
  auto b = a;
  b.readable[1].endpoint = "http://127.0.0.1:7/";
  auto d = diff_accounts(&a, b);
  EXPECT_TRUE(d.endpoints_changed);
  EXPECT_FALSE(d.write_region_switched);
}

} // namespace

TEST(RefusedTopology, NoWritableRegionAfterSome_Refused) {
  auto held = three_regions();
  auto empty = held;
  empty.writable.clear();
  empty.readable.clear();
  auto why = refused_topology(&held, empty);
  EXPECT_NE(why.find("writableLocations is empty"), std::string::npos) << why;
  EXPECT_NE(why.find("last topology is kept"), std::string::npos) << why;
  // Only the readable list empty: reads use the write regions; taken.
  auto reads_gone = held;
  reads_gone.readable.clear();
  EXPECT_EQ(refused_topology(&held, reads_gone), "");
  // The first read, and a read after one without regions, are taken.
  EXPECT_EQ(refused_topology(nullptr, empty), "");
  EXPECT_EQ(refused_topology(&empty, empty), "");
  EXPECT_EQ(refused_topology(&held, held), "");
}
