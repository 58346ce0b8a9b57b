// The subjects of the fleet's region-health reports
// (actors/policy/fleet_subject.hpp): tokens, building, parsing.

#include "georoute/actors/policy/fleet_subject.hpp"

#include <gtest/gtest.h>
#include <string>
#include <vector>

namespace georoute::fleet_subject_test {
namespace {

TEST(FleetToken, Table) {
  struct row {
    std::string name;
    std::string token;
  };
  const std::vector<row> rows = {
      {"West US 2", "westus2"},
      {"westus2", "westus2"},
      {"North-Europe", "northeurope"},
      {"AZ_09", "az09"},
      {"a.b*c>d e\tf", "abcdef"},
      {"Zürich", "zrich"}, // bytes outside ASCII are left out
      {"", ""},
      {" .-_", ""},
  };
  for (const auto& r : rows)
    EXPECT_EQ(fleet_token(r.name), r.token) << "name '" << r.name << "'";
}

TEST(IsFleetToken, Table) {
  struct row {
    std::string s;
    bool token;
  };
  const std::vector<row> rows = {
      {"p01", true}, {"a", true},    {"z9", true},   {"_-", true},
      {"", false},   {"A", false},   {"a.b", false}, {"*", false},
      {">", false},  {"a b", false}, {"a\n", false}, {"é", false},
  };
  for (const auto& r : rows)
    EXPECT_EQ(is_fleet_token(r.s), r.token) << "'" << r.s << "'";
}

TEST(FleetSubject, Table) {
  struct row {
    std::string fleet, acct, region, rid;
    std::string subject;
  };
  const std::vector<row> rows = {
      {"f1", "acct", "West US 2", "p01", "georoute.h1.f1.acct.westus2.p01"},
      {"f1", "my-acct", "eastus", "p_2", "georoute.h1.f1.my-acct.eastus.p_2"},
      {"", "acct", "West US", "p01", ""},
      {"F1", "acct", "West US", "p01", ""},
      {"f1", "a.b", "West US", "p01", ""},
      {"f1", "acct", "...", "p01", ""}, // the region squeezes to nothing
      {"f1", "acct", "West US", "*", ""},
      {"f1", "acct", "West US", ">", ""},
      {"f1", "acct", "West US", "", ""},
  };
  for (const auto& r : rows)
    EXPECT_EQ(fleet_subject(r.fleet, r.acct, r.region, r.rid), r.subject)
        << r.fleet << "/" << r.acct << "/" << r.region << "/" << r.rid;
}

TEST(FleetSubscription, Table) {
  EXPECT_EQ(fleet_subscription("f1", "acct"), "georoute.h1.f1.acct.>");
  EXPECT_EQ(fleet_subscription("f1", "*"), "");
  EXPECT_EQ(fleet_subscription("f.1", "acct"), "");
  EXPECT_EQ(fleet_subscription("f1", ""), "");
}

TEST(FleetPermissions, Table) {
  EXPECT_EQ(fleet_publish_permission("f1", "p01"), "georoute.h1.f1.*.*.p01");
  EXPECT_EQ(fleet_publish_permission("f1", ">"), "");
  EXPECT_EQ(fleet_publish_permission("f1", "p.01"), "");
  EXPECT_EQ(fleet_publish_permission("", "p01"), "");
  EXPECT_EQ(fleet_subscribe_permission("f1"), "georoute.h1.f1.>");
  EXPECT_EQ(fleet_subscribe_permission("*"), "");
}

TEST(ParseFleetSubject, Table) {
  struct row {
    std::string subject;
    bool ok;
    fleet_subject_parts parts;
  };
  const std::vector<row> rows = {
      {"georoute.h1.f1.acct.westus2.p01", true, {"acct", "westus2", "p01"}},
      {"georoute.h1.f1.my-acct.east_us.p-2",
       true,
       {"my-acct", "east_us", "p-2"}},
      {"georoute.h1.f2.acct.westus2.p01", false, {}},   // another fleet
      {"georoute.h2.f1.acct.westus2.p01", false, {}},   // another version
      {"geoRoute.h1.f1.acct.westus2.p01", false, {}},   // case matters
      {"georoute.h1.f1.acct.westus2", false, {}},       // 5 tokens
      {"georoute.h1.f1.acct.westus2.p01.x", false, {}}, // 7 tokens
      {"georoute.h1.f1.acct.westus2.p01.", false, {}},  // empty 7th
      {"georoute.h1.f1.acct..p01", false, {}},          // empty region
      {".georoute.h1.f1.acct.westus2", false, {}},
      {"georoute.h1.f1.acct.West US.p01", false, {}},
      {"georoute.h1.f1.acct.westus2.*", false, {}},
      {"georoute.h1.f1.acct.westus2.>", false, {}},
      {"georoute.h1.f1.ACCT.westus2.p01", false, {}},
      {"", false, {}},
  };
  for (const auto& r : rows) {
    auto p = parse_fleet_subject(r.subject, "f1");
    ASSERT_EQ(p.has_value(), r.ok) << r.subject;
    if (!p) continue;
    EXPECT_EQ(p->acct, r.parts.acct) << r.subject;
    EXPECT_EQ(p->region, r.parts.region) << r.subject;
    EXPECT_EQ(p->rid, r.parts.rid) << r.subject;
  }
}

TEST(ParseFleetSubject, AFleetThatIsNotATokenMatchesNothing) {
  EXPECT_FALSE(parse_fleet_subject("georoute.h1.f.1.acct.westus2", "f.1"));
  EXPECT_FALSE(parse_fleet_subject("georoute.h1..acct.westus2.p01", ""));
}

TEST(ParseFleetSubject, RoundTripsWhatFleetSubjectBuilds) {
  auto s = fleet_subject("f1", "acct", "North Europe", "p07");
  auto p = parse_fleet_subject(s, "f1");
  ASSERT_TRUE(p) << s;
  EXPECT_EQ(p->acct, "acct");
  EXPECT_EQ(p->region, "northeurope");
  EXPECT_EQ(p->rid, "p07");
}

} // namespace
// The newcomer's ask: within the reporter's permission, parsed back with
// a region token no region name can have.
TEST(FleetSyncSubject, BuiltParsedAndNeverARegionsToken) {
  EXPECT_EQ(fleet_sync_subject("f1", "acct", "p01"),
            "georoute.h1.f1.acct._sync.p01");
  EXPECT_EQ(fleet_sync_subject("f1", "acct", "P 1"), "");
  auto parts =
      parse_fleet_subject(fleet_sync_subject("f1", "acct", "p01"), "f1");
  ASSERT_TRUE(parts);
  EXPECT_EQ(parts->region, fleet_sync_token);
  EXPECT_NE(fleet_token("_sync"), fleet_sync_token);
}

} // namespace georoute::fleet_subject_test
