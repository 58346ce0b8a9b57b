// The location table (.NET LocationCache, src/Routing/LocationCache.cs):
// account order and preference order, demotion and expiry of marks, resolution
// (LocationCache.ResolveServiceEndpoint), exclusions and their fallback
// (LocationCache.GetApplicableEndpoints), and region names (LocationCache's
// region-name helpers).

#include "georoute/actors/policy/location_table.hpp"
#include "tests/policy/location_fixture.hpp"

#include <gtest/gtest.h>
#include <string>
#include <vector>

using namespace georoute;
using namespace georoute::location_fixture;

// -- endpoint keys and region names ----------------------------------------

TEST(NormalizeEndpoint, Spellings_SameKey) {
  struct row {
    std::string in;
    std::string key;
  };
  const std::vector<row> rows = {
      {"http://127.0.0.1:4301/", "http://127.0.0.1:4301/"},
      {"http://127.0.0.1:4301", "http://127.0.0.1:4301/"},
      {"HTTP://Contoso.Example:8081/", "http://contoso.example:8081/"},
      {"https://contoso.example", "https://contoso.example:443/"},
      {"https://contoso.example:443/", "https://contoso.example:443/"},
      {"http://contoso.example/", "http://contoso.example:80/"},
      {"http://[::1]:4301", "http://[::1]:4301/"},
      {"http://[::1]", "http://[::1]:80/"},
      {"https://h/Path", "https://h:443/Path/"},
      {"not a url", "not a url/"},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.in);
    EXPECT_EQ(normalize_endpoint(r.in), r.key);
  }
}

TEST(SameRegion, CaseDiffers_Equal) {
  EXPECT_TRUE(same_region("West US", "west us"));
  EXPECT_TRUE(same_region("WEST US", "West US"));
  EXPECT_FALSE(same_region("West US", "West US 2"));
  EXPECT_FALSE(same_region("West US", "WestUS"));
}

// -- before and after the account read -------------------------------------

TEST(LocationTable, Lists_BeforeAccountRead_DefaultEndpointOnly) {
  location_table t(options(true, true, preferred3));
  EXPECT_FALSE(t.has_account());
  EXPECT_EQ(t.read_endpoints(t0), strings{global_ep});
  EXPECT_EQ(t.write_endpoints(t0), strings{global_ep});
  EXPECT_EQ(t.hub_endpoint(), global_ep);
  EXPECT_EQ(t.region_of(global_ep), "");
  EXPECT_EQ(resolve_ep(t, req(op_kind::read)), global_ep);
  EXPECT_EQ(resolve_ep(t, req(op_kind::write)), global_ep);
  EXPECT_TRUE(t.available_read_regions().empty());
}

TEST(LocationTable, Account_BadEntriesAndDuplicates_SkippedOrLastWins) {
  database_account a = fixture_account(false);
  a.readable = {{"", east},
                {"West US", "127.0.0.1:4302"}, // not absolute
                {"East US", east},
                {"North Europe", north},
                {"east us", asia}}; // duplicate name, other case
  auto t = location_table(options(false, true, {})).with_account(a, t0);
  EXPECT_EQ(t.available_read_regions(),
            (strings{"East US", "North Europe", "east us"}));
  // The map entry of "East US" now points at the last endpoint, and the
  // walk over the account order lists it twice (the SDK's behaviour).
  EXPECT_EQ(t.read_endpoints(t0), (strings{asia, north, asia}));
  EXPECT_EQ(t.region_of(asia), "East US");
  EXPECT_EQ(t.region_of(west), "West US"); // from the write list
}

TEST(LocationTable, AvailableRegions_AccountOrder_Kept) {
  auto t = fixture(false, true, {"Southeast Asia"});
  EXPECT_EQ(t.available_write_regions(),
            (strings{"East US", "West US", "North Europe"}));
  EXPECT_EQ(t.available_read_regions(),
            (strings{"East US", "West US", "North Europe", "Southeast Asia"}));
}

// ValidateWriteEndpointOrderWithClientSideDisableMultipleWriteLocation.
TEST(LocationTable, WriteEndpoints_ClientOptsOutOfMultiWrite_AccountOrder) {
  auto t = location_table(options(false, true, {"North Europe", "West US"}))
               .with_account(fixture_account(true), t0);
  EXPECT_FALSE(t.can_use_multiple_write_locations());
  EXPECT_EQ(t.write_endpoints(t0), (strings{east, west, north}));
  // No availability ordering for single-write writes.
  auto marked = t.with_mark(east, false, true, t0);
  EXPECT_EQ(marked.write_endpoints(t0), (strings{east, west, north}));
}

TEST(LocationTable, MultiWrite_ClientAndAccount_PreferenceOrder) {
  auto t = fixture(true, true, {"North Europe", "East US"});
  EXPECT_TRUE(t.can_use_multiple_write_locations());
  EXPECT_TRUE(t.can_use_multiple_write_locations(true));
  EXPECT_FALSE(t.can_use_multiple_write_locations(false));
  EXPECT_TRUE(t.can_support_multiple_write_locations(true));
  EXPECT_EQ(t.write_endpoints(t0), (strings{north, east}));
  EXPECT_EQ(t.read_endpoints(t0), (strings{north, east}));
}

TEST(LocationTable, Preferences_NamesInOtherCase_Matched) {
  auto t = fixture(false, true, {"west us", "EAST US"});
  EXPECT_EQ(t.read_endpoints(t0), (strings{west, east}));
}

TEST(LocationTable, WithPreferences_NewList_EffectiveImmediately) {
  auto t = fixture(false, true, preferred3)
               .with_preferences({"North Europe", "East US"}, t0);
  EXPECT_EQ(t.read_endpoints(t0), (strings{north, east}));
  EXPECT_EQ(t.effective_preferred_regions(),
            (strings{"North Europe", "East US"}));
  EXPECT_EQ(resolve_ep(t, req(op_kind::read)), north);
}

TEST(LocationTable, EffectivePreferred_EmptyList_ReadRegionsOrRegionalDefault) {
  auto t = fixture(false, true, {});
  EXPECT_EQ(t.effective_preferred_regions(), t.available_read_regions());
  EXPECT_EQ(t.preferred_location_count(), 4u);
  // A regional default endpoint narrows the effective list to its region.
  auto r = location_table(options(true, true, {}, west))
               .with_account(fixture_account(true), t0);
  EXPECT_EQ(r.effective_preferred_regions(), strings{"West US"});
  EXPECT_EQ(r.preferred_location_count(), 1u);
}

TEST(LocationTable, RegionalDefaultEndpoint_NoPreferences_PinsClient) {
  auto t = location_table(options(true, true, {}, west))
               .with_account(fixture_account(true), t0);
  EXPECT_EQ(t.write_endpoints(t0), strings{west});
  EXPECT_EQ(t.read_endpoints(t0), strings{west});
  EXPECT_EQ(resolve_ep(t, req(op_kind::read, 1)), west);
  EXPECT_EQ(t.region_of(west), "West US");
  EXPECT_FALSE(t.should_refresh_endpoints(t0).refresh);
}

// -- region names (ValidateGetLocation, LocationCache's region-name helpers)
// ------------------------------

TEST(LocationTable, RegionOf_EveryEndpoint_OwnRegionOrFirstWriteRegion) {
  auto t = fixture(false);
  EXPECT_EQ(t.region_of(global_ep), "East US");
  EXPECT_EQ(t.region_of(east), "East US");
  EXPECT_EQ(t.region_of(west), "West US");
  EXPECT_EQ(t.region_of(north), "North Europe");
  EXPECT_EQ(t.region_of(asia), "Southeast Asia");
  EXPECT_EQ(t.region_of("HTTP://127.0.0.1:4304"), "Southeast Asia");
  EXPECT_EQ(t.region_of("http://127.0.0.1:4999/"), "");
}

TEST(LocationTable, RegionOf_GlobalEndpointAfterWriteSwitch_NewWriteRegion) {
  auto t = fixture(false);
  database_account switched = fixture_account(false);
  switched.writable = {{"West US", west}, {"East US", east}};
  auto after = t.with_account(switched, t0 + 1s);
  EXPECT_EQ(after.region_of(global_ep), "West US");
  EXPECT_EQ(after.region_of(east), "East US");
  EXPECT_EQ(after.hub_endpoint(), west);
  EXPECT_EQ(after.resolve(req(op_kind::write), t0).region, "West US");
}

// -- marks: demotion and expiry --------------------------------------------

TEST(LocationTable, ReadEndpoints_MarkedRegions_DemotedInOrder) {
  struct row {
    strings marked;
    strings expected;
  };
  const std::vector<row> rows = {
      {{}, {east, west, north}},
      {{east}, {west, north, east}},
      {{west}, {east, north, west}},
      {{east, west}, {north, east, west}},
      {{north, east}, {west, east, north}}, // demoted in preference order
      // All preferred regions down: the fallback (write_endpoints[0]) leads,
      // the rest stay demoted behind it.
      {{east, west, north}, {east, west, north}},
  };
  for (const auto& r : rows) {
    auto t = fixture(false);
    for (const auto& ep : r.marked)
      t = t.with_mark(ep, true, false, t0);
    SCOPED_TRACE(::testing::PrintToString(r.marked));
    EXPECT_EQ(t.read_endpoints(t0), r.expected);
  }
}

TEST(LocationTable, WriteEndpoints_MultiWriteMarked_Demoted) {
  auto t = fixture(true).with_mark(east, false, true, t0);
  EXPECT_EQ(t.write_endpoints(t0), (strings{west, north, east}));
  EXPECT_EQ(t.read_endpoints(t0), (strings{east, west, north}));
}

// Every write region marked on a multi-write account: the reference would
// lead with the account endpoint (its fallback); georoute keeps to the
// known regions, in preference order, and so do reads once every region is
// marked for them too. Nothing resolves to the region-agnostic endpoint.
TEST(LocationTable,
     EveryRegionMarked_MultiWrite_MarkedRegionsNotTheAccountEndpoint) {
  auto t = fixture(true);
  for (const auto& ep : {east, west, north})
    t = t.with_mark(ep, true, true, t0);
  EXPECT_EQ(t.write_endpoints(t0), (strings{east, west, north}));
  EXPECT_EQ(t.read_endpoints(t0), (strings{east, west, north}));
  for (uint32_t i = 0; i < 3; ++i) {
    EXPECT_NE(resolve_ep(t, req(op_kind::write, i)), global_ep) << i;
    EXPECT_NE(resolve_ep(t, req(op_kind::read, i)), global_ep) << i;
  }
  // Once the marks expire, the order is the preference again.
  EXPECT_EQ(t.write_endpoints(t0 + expiry + 1ms), (strings{east, west, north}));
}

// The fleet's soft demotion: after every healthy region, before the marked
// ones, never removed, never the fallback's way in, and only on the write
// list of a multi-write account.
TEST(LocationTable, FleetDemotion_ReadOrder_AfterHealthyBeforeMarked) {
  struct row {
    strings demoted; // region names
    strings marked;  // endpoints
    strings expected;
  };
  const std::vector<row> rows = {
      {{}, {}, {east, west, north}},
      {{"East US"}, {}, {west, north, east}},
      {{"east us"}, {}, {west, north, east}},            // names ignore case
      {{"West US", "East US"}, {}, {north, east, west}}, // preference order
      {{"East US"}, {west}, {north, east, west}},
      // Every healthy region demoted: they still come before the fallback,
      // in preference order.
      {{"East US", "West US", "North Europe"}, {}, {east, west, north}},
      {{"East US", "West US"}, {north}, {east, west, north}},
      {{"Nowhere"}, {}, {east, west, north}}, // an unknown name: no effect
  };
  for (const auto& r : rows) {
    auto t = fixture(false);
    for (const auto& ep : r.marked)
      t = t.with_mark(ep, true, false, t0);
    t = t.with_fleet_demotions(r.demoted, {}, t0);
    SCOPED_TRACE(::testing::PrintToString(r.demoted) + " marked " +
                 ::testing::PrintToString(r.marked));
    EXPECT_EQ(t.read_endpoints(t0), r.expected);
    EXPECT_EQ(resolve_ep(t, req(op_kind::read, 0)), r.expected.front());
    // A demotion is an order, not a mark.
    for (const auto& name : r.demoted)
      EXPECT_FALSE(
          t.is_unavailable(t.account_read_endpoint(name), op_kind::read, t0));
  }
}

TEST(LocationTable, FleetDemotion_Writes_OnlyOnMultiWrite) {
  auto single = fixture(false).with_fleet_demotions({}, {"East US"}, t0);
  EXPECT_EQ(single.write_endpoints(t0), (strings{east, west, north}));
  EXPECT_EQ(resolve_ep(single, req(op_kind::write, 0)), east);
  auto multi = fixture(true).with_fleet_demotions({}, {"East US"}, t0);
  EXPECT_EQ(multi.write_endpoints(t0), (strings{west, north, east}));
  EXPECT_EQ(multi.read_endpoints(t0), (strings{east, west, north}));
  // The next call replaces the demotions; an empty one restores the order.
  auto back = multi.with_fleet_demotions({}, {}, t0);
  EXPECT_EQ(back.write_endpoints(t0), (strings{east, west, north}));
  EXPECT_TRUE(back.fleet_demoted_writes().empty());
  // A new account read keeps them: they are the fleet's, not the account's.
  auto reread = fixture(false)
                    .with_fleet_demotions({"East US"}, {}, t0)
                    .with_account(fixture_account(false), t0);
  EXPECT_EQ(reread.read_endpoints(t0), (strings{west, north, east}));
}

TEST(LocationTable, Mark_AtExpiryBoundary_LiveThenGone) {
  auto t = fixture(false).with_mark(east, true, false, t0);
  EXPECT_TRUE(t.is_unavailable(east, op_kind::read, t0 + expiry));
  EXPECT_FALSE(t.is_unavailable(east, op_kind::read, t0 + expiry + 1ms));
  EXPECT_FALSE(t.is_unavailable(east, op_kind::write, t0));
  EXPECT_EQ(t.read_endpoints(t0 + expiry), (strings{west, north, east}));
  EXPECT_EQ(t.read_endpoints(t0 + expiry + 1ms), (strings{east, west, north}));
}

// The table keeps its lists as of its last rebuild; a mark that expires
// later must still stop counting at its expiry, in resolve (the hot path)
// and in the breaker's candidate list as in read_endpoints.
TEST(LocationTable, Resolve_MarkExpiresWithoutRebuild_FirstRegionAgain) {
  auto t = fixture(false).with_mark(east, true, false, t0);
  auto in = req(op_kind::read, 0);
  EXPECT_EQ(t.resolve(in, t0 + expiry).endpoint, west);
  EXPECT_EQ(t.resolve(in, t0 + expiry + 1ms).endpoint, east);
  bool fell_back = true;
  strings scratch;
  EXPECT_EQ(
      t.applicable_ref(op_kind::read, {}, t0 + expiry, fell_back, scratch),
      (strings{west, north, east}));
  EXPECT_FALSE(fell_back);
  EXPECT_EQ(t.applicable_ref(op_kind::read, {}, t0 + expiry + 1ms, fell_back,
                             scratch),
            (strings{east, west, north}));
}

TEST(LocationTable, Mark_RemarkLive_OrsFlagsAndRefreshesTime) {
  auto t = fixture(false)
               .with_mark(east, true, false, t0)
               .with_mark("HTTP://127.0.0.1:4301", false, true, t0 + 100s);
  EXPECT_EQ(t.mark_count(), 1u);
  EXPECT_TRUE(t.is_unavailable(east, op_kind::read, t0 + 100s + expiry));
  EXPECT_TRUE(t.is_unavailable(east, op_kind::write, t0 + 100s + expiry));
}

TEST(LocationTable, Mark_RemarkExpired_ReplacesFlags) {
  auto t = fixture(false)
               .with_mark(east, true, false, t0)
               .with_mark(east, false, true, t0 + expiry + 1s);
  EXPECT_FALSE(t.is_unavailable(east, op_kind::read, t0 + expiry + 1s));
  EXPECT_TRUE(t.is_unavailable(east, op_kind::write, t0 + expiry + 1s));
}

TEST(LocationTable, Mark_NoFlags_NoChange) {
  auto t = fixture(false).with_mark(east, false, false, t0);
  EXPECT_EQ(t.mark_count(), 0u);
}

TEST(LocationTable, ExpiredMarksDropped_OnlyExpiredGo) {
  auto t = fixture(false)
               .with_mark(east, true, false, t0)
               .with_mark(west, true, false, t0 + 200s);
  EXPECT_EQ(t.mark_count(), 2u);
  auto later = t.with_expired_marks_dropped(t0 + expiry + 1s);
  EXPECT_EQ(later.mark_count(), 1u);
  EXPECT_TRUE(later.is_unavailable(west, op_kind::read, t0 + expiry + 1s));
  EXPECT_EQ(t.mark_count(), 2u); // the original is unchanged
}

// -- resolution (LocationCache.ResolveServiceEndpoint)
// -----------------------------------------------------

TEST(LocationTable, Resolve_Table_BranchesAndIndices) {
  struct row {
    const char* name;
    bool multi;
    resolve_input in;
    std::string endpoint;
    resolve_route route;
  };
  auto metadata_write = req(op_kind::write, 0, true, {}, false);
  auto hub = req(op_kind::read, 1);
  hub.route_to_hub = true;
  auto pinned = req(op_kind::write, 1);
  pinned.pinned_endpoint = asia;
  const std::vector<row> rows = {
      {"single read 0", false, req(op_kind::read, 0), east,
       resolve_route::applicable},
      {"single read 1", false, req(op_kind::read, 1), west,
       resolve_route::applicable},
      {"single read 4 wraps", false, req(op_kind::read, 4), west,
       resolve_route::applicable},
      {"single write 0", false, req(op_kind::write, 0), east,
       resolve_route::write_regions},
      {"single write 1 flips", false, req(op_kind::write, 1), west,
       resolve_route::write_regions},
      {"single write 2 flops", false, req(op_kind::write, 2), east,
       resolve_route::write_regions},
      {"single write 3", false, req(op_kind::write, 3), west,
       resolve_route::write_regions},
      {"read not preferred", false, req(op_kind::read, 0, false), east,
       resolve_route::write_regions},
      {"read not preferred 1", false, req(op_kind::read, 1, false), west,
       resolve_route::write_regions},
      {"multi write 0", true, req(op_kind::write, 0), east,
       resolve_route::applicable},
      {"multi write 2", true, req(op_kind::write, 2), north,
       resolve_route::applicable},
      {"multi metadata write", true, metadata_write, east,
       resolve_route::write_regions},
      {"hub", true, hub, east, resolve_route::hub},
      {"pinned", false, pinned, asia, resolve_route::pinned},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    auto res = fixture(r.multi).resolve(r.in, t0);
    EXPECT_EQ(res.endpoint, r.endpoint);
    EXPECT_EQ(res.route, r.route);
  }
}

TEST(LocationTable, Resolve_WriteFlipFlopOneWriteRegion_StaysOnIt) {
  database_account a = fixture_account(false);
  a.writable = {{"East US", east}};
  auto t = location_table(options(false, true, preferred3)).with_account(a, t0);
  EXPECT_EQ(resolve_ep(t, req(op_kind::write, 1)), east);
}

TEST(LocationTable, Resolve_SingleWriteMarkedWriteRegion_MarksIgnored) {
  auto t = fixture(false).with_mark(east, true, true, t0);
  EXPECT_EQ(resolve_ep(t, req(op_kind::write, 0)), east);
  EXPECT_EQ(resolve_ep(t, req(op_kind::read, 0)), west);
}

// An endpoint to avoid (the one that just answered 503) is stepped past in
// branch B, wherever the index lands; branch A and a lone applicable
// endpoint keep it.
TEST(LocationTable, Resolve_AvoidEndpoint_StepsPastItInBranchB) {
  auto t = fixture(true);
  auto avoiding = [](resolve_input in, const std::string& ep) {
    in.avoid_endpoint = ep;
    return in;
  };
  EXPECT_EQ(resolve_ep(t, avoiding(req(op_kind::read, 1), west)), north);
  EXPECT_EQ(resolve_ep(t, avoiding(req(op_kind::read, 1), east)), west);
  // Matched like every endpoint: case and the trailing slash do not count.
  EXPECT_EQ(
      resolve_ep(t, avoiding(req(op_kind::read, 0), "HTTP://127.0.0.1:4301")),
      west);
  EXPECT_EQ(resolve_ep(t, avoiding(req(op_kind::read, 3), asia)), east);
  EXPECT_EQ(resolve_ep(t, avoiding(req(op_kind::write, 2), north)), east);
  // The only applicable region: nowhere else to go.
  EXPECT_EQ(resolve_ep(t, avoiding(req(op_kind::read, 1, true,
                                       {"East US", "North Europe"}),
                                   west)),
            west);
  // Single-master writes go to the write region regardless.
  EXPECT_EQ(resolve_ep(fixture(false), avoiding(req(op_kind::write, 0), east)),
            east);
}

TEST(LocationTable, Resolve_DiscoveryOff_DefaultEverywhere) {
  auto t = fixture(true, false);
  EXPECT_EQ(resolve_ep(t, req(op_kind::read, 1)), global_ep);
  EXPECT_EQ(resolve_ep(t, req(op_kind::write, 1)), global_ep);
  EXPECT_EQ(resolve_ep(t, req(op_kind::read, 0, false)), global_ep);
  EXPECT_EQ(resolve_ep(t, req(op_kind::read, 0, true, {"East US"})), global_ep);
  EXPECT_EQ(t.resolve(req(op_kind::read), t0).region, "East US");
}

// -- exclusions (LocationCache.GetApplicableEndpoints,
// VerifyRegionExcludedTest) ---------------------------

TEST(LocationTable, Exclusions_Table_PreferredMinusExcluded) {
  struct row {
    const char* name;
    bool multi;
    op_kind op;
    strings preferred;
    strings excluded;
    strings expected;
  };
  const std::vector<row> rows = {
      {"read none excluded",
       false,
       op_kind::read,
       preferred3,
       {},
       {east, west, north}},
      {"read first excluded",
       false,
       op_kind::read,
       preferred3,
       {"East US"},
       {west, north}},
      {"read lower case",
       false,
       op_kind::read,
       preferred3,
       {"east us"},
       {west, north}},
      {"read upper case",
       false,
       op_kind::read,
       preferred3,
       {"WEST US", "north europe"},
       {east}},
      {"read unknown name",
       false,
       op_kind::read,
       preferred3,
       {"Mars"},
       {east, west, north}},
      {"read no preferences",
       false,
       op_kind::read,
       {},
       {"West US"},
       {east, north, asia}},
      {"multi write",
       true,
       op_kind::write,
       preferred3,
       {"West US"},
       {east, north}},
      // Nothing left: write_endpoints[0], even though it is excluded.
      {"multi write nothing left",
       true,
       op_kind::write,
       {"Southeast Asia", "North Europe"},
       {"north europe"},
       {north}},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    auto t = fixture(r.multi, true, r.preferred);
    EXPECT_EQ(t.applicable_endpoints(r.op, r.excluded, t0), r.expected);
  }
}

TEST(LocationTable, Exclusions_MarkedRegion_MarksNotConsulted) {
  auto t = fixture(false).with_mark(west, true, false, t0);
  EXPECT_EQ(t.applicable_endpoints(op_kind::read, {"East US"}, t0),
            (strings{west, north}));
  EXPECT_EQ(t.applicable_endpoints(op_kind::read, {}, t0),
            (strings{east, north, west}));
}

TEST(LocationTable, Exclusions_ResolveIndex_WrapsOverApplicable) {
  auto t = fixture(false);
  EXPECT_EQ(resolve_ep(t, req(op_kind::read, 0, true, {"east US"})), west);
  EXPECT_EQ(resolve_ep(t, req(op_kind::read, 1, true, {"east US"})), north);
  EXPECT_EQ(resolve_ep(t, req(op_kind::read, 2, true, {"east US"})), west);
}

TEST(LocationTable, Exclusions_SingleMasterWrite_Ignored) {
  auto t = fixture(false);
  auto res = t.resolve(req(op_kind::write, 0, true, {"East US"}), t0);
  EXPECT_EQ(res.endpoint, east);
  EXPECT_EQ(res.route, resolve_route::write_regions);
}

TEST(LocationTable, Exclusions_AllReadRegions_CurrentFirstWriteEndpoint) {
  const strings all = {"east us", "West US", "NORTH EUROPE", "Southeast Asia"};
  auto t = fixture(false);
  auto res = t.resolve(req(op_kind::read, 0, true, all), t0);
  EXPECT_EQ(res.endpoint, east);
  EXPECT_EQ(res.route, resolve_route::exclusion_fallback);
  EXPECT_EQ(res.region, "East US");
  EXPECT_NE(res.endpoint, global_ep);
  EXPECT_EQ(resolve_ep(t, req(op_kind::read, 3, true, all)), east);
}

// The seed bug: after a write-region switch the fallback must follow the new
// write region, not the static default endpoint or the old write region.
TEST(LocationTable, Exclusions_AllExcludedAfterWriteSwitch_NewWriteRegion) {
  const strings all = {"East US", "West US", "North Europe", "Southeast Asia"};
  database_account switched = fixture_account(false);
  switched.writable = {{"West US", west}, {"East US", east}};
  auto t = fixture(false).with_account(switched, t0 + 1s);
  auto res = t.resolve(req(op_kind::read, 0, true, all), t0 + 1s);
  EXPECT_EQ(res.endpoint, west);
  EXPECT_EQ(res.region, "West US");
  EXPECT_EQ(res.route, resolve_route::exclusion_fallback);
}

TEST(LocationTable, Exclusions_AllWriteRegionsMultiWrite_FirstWriteEndpoint) {
  auto t = fixture(true, true, {"North Europe", "West US"});
  auto res =
      t.resolve(req(op_kind::write, 1, true, {"North Europe", "West US"}), t0);
  EXPECT_EQ(res.endpoint, north); // write_endpoints[0]
  EXPECT_EQ(res.route, resolve_route::exclusion_fallback);
}
