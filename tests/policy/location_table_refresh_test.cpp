// The location table's refresh verdict (LocationCache.ShouldRefreshEndpoints),
// one case per row, and a port of LocationCacheTests.ValidateAsync (.NET
// LocationCacheTests): with the first k regions marked, the verdict, the lists,
// the resolution, and the revert after the marks expire.

#include "georoute/actors/policy/location_table.hpp"
#include "tests/policy/location_fixture.hpp"

#include <gtest/gtest.h>
#include <ostream>
#include <string>
#include <vector>

using namespace georoute;
using namespace georoute::location_fixture;

// -- should_refresh_endpoints (LocationCache.ShouldRefreshEndpoints), one case
// per row ---------------------

namespace {

struct refresh_row {
  const char* name;
  location_table table;
  refresh_verdict expected;
};

database_account one_region_account() {
  database_account a;
  a.writable = {{"East US", east}};
  a.readable = {{"East US", east}};
  return a;
}

std::vector<refresh_row> refresh_rows() {
  database_account writes_only;
  writes_only.enable_multiple_write_locations = true;
  writes_only.writable = {{"East US", east}, {"West US", west}};
  auto single_client_multi_account =
      location_table(options(false, true, preferred3))
          .with_account(fixture_account(true), t0);
  auto wants_multi_account_single =
      location_table(options(true, true, preferred3))
          .with_account(fixture_account(false), t0);
  auto all_read_marked = fixture(false)
                             .with_mark(east, true, false, t0)
                             .with_mark(west, true, false, t0)
                             .with_mark(north, true, false, t0);
  return {
      {"Row0_DiscoveryOff_NoRefresh", fixture(false, false), {false, true, 0}},
      {"Row0_DiscoveryOffFirstReadMarked_NoRefresh",
       fixture(false, false).with_mark(east, true, true, t0),
       {false, true, 0}},
      {"Row1_FirstReadDownOthersLeft_Background",
       all_read_marked,
       {true, true, 1}},
      {"Row1_OnlyReadRegionDown_Foreground",
       location_table(options(false, true, {"East US"}))
           .with_account(one_region_account(), t0)
           .with_mark(east, true, false, t0),
       {true, false, 1}},
      {"Row2_MostPreferredReadDemoted_Refresh",
       fixture(false).with_mark(east, true, false, t0),
       {true, true, 2}},
      {"Row3_MostPreferredNotReadable_Refresh",
       fixture(false, true, {"Mars"}),
       {true, true, 3}},
      {"Row4_FirstWriteDownOthersLeft_Background",
       fixture(false).with_mark(east, false, true, t0),
       {true, true, 4}},
      {"Row4_OnlyWriteRegionDown_Foreground",
       location_table(options(false, true, {"East US"}))
           .with_account(one_region_account(), t0)
           .with_mark(east, false, true, t0),
       {true, false, 4}},
      {"Row5_SingleWriteHealthy_NoRefresh", fixture(false), {false, true, 5}},
      {"Row5_ClientOptsOutAccountMulti_NoRefresh",
       single_client_multi_account,
       {false, true, 5}},
      {"Row5_ClientWantsMultiAccountSingle_Refresh",
       wants_multi_account_single,
       {true, true, 5}},
      {"Row6_MultiWriteHealthy_NoRefresh", fixture(true), {false, true, 6}},
      {"Row6_MultiWriteMostPreferredDemoted_Refresh",
       fixture(true).with_mark(east, false, true, t0),
       {true, true, 6}},
      {"Row7_MostPreferredReadOnlyRegion_Refresh",
       fixture(true, true, {"Southeast Asia", "East US"}),
       {true, true, 7}},
      {"Row8_NoPreferredRegionAtAll_NoRefresh",
       location_table(options(true, true, {})).with_account(writes_only, t0),
       {false, true, 8}},
  };
}

void PrintTo(const refresh_row& r, std::ostream* os) {
  *os << r.name;
}

class ShouldRefresh : public ::testing::TestWithParam<refresh_row> {};

} // namespace

TEST_P(ShouldRefresh, Row) {
  const auto& r = GetParam();
  auto v = r.table.should_refresh_endpoints(t0);
  EXPECT_EQ(v.row, r.expected.row);
  EXPECT_EQ(v.refresh, r.expected.refresh);
  EXPECT_EQ(v.can_refresh_in_background, r.expected.can_refresh_in_background);
}

INSTANTIATE_TEST_SUITE_P(LocationTable, ShouldRefresh,
                         ::testing::ValuesIn(refresh_rows()),
                         [](const auto& info) {
                           return std::string(info.param.name);
                         });

TEST(LocationTable, ShouldRefresh_MarksExpired_BackToHealthyRow) {
  auto t = fixture(false).with_mark(east, true, true, t0);
  EXPECT_EQ(t.should_refresh_endpoints(t0).row, 2);
  auto v = t.should_refresh_endpoints(t0 + expiry + 1ms);
  EXPECT_EQ(v.row, 5);
  EXPECT_FALSE(v.refresh);
}

// -- ValidateAsync (LocationCacheTests L1102): the first k regions marked ---

namespace {

struct async_config {
  bool multi;
  bool discovery;
  bool preferred_empty;
};

} // namespace

TEST(LocationTable, ValidateAsync_FirstRegionsMarked_RowsResolutionRevert) {
  const strings reads_all = {east, west, north, asia};
  const strings writes_all = {east, west, north};
  for (bool multi : {false, true}) {
    for (bool discovery : {false, true}) {
      for (bool preferred_empty : {false, true}) {
        const std::size_t max_read = preferred_empty ? 4 : 3;
        for (std::size_t w = 0; w < 3; ++w) {
          for (std::size_t r = 0; r < max_read; ++r) {
            SCOPED_TRACE(::testing::Message()
                         << "multi=" << multi << " discovery=" << discovery
                         << " preferred_empty=" << preferred_empty
                         << " write_marked=" << w << " read_marked=" << r);
            auto base = fixture(multi, discovery,
                                preferred_empty ? strings{} : preferred3);
            auto t = base;
            for (std::size_t i = 0; i < r; ++i)
              t = t.with_mark(reads_all[i], true, false, t0);
            for (std::size_t i = 0; i < w; ++i)
              t = t.with_mark(writes_all[i], false, true, t0);
            const auto now = t0 + 1s;
            const strings eff_eps =
                preferred_empty ? reads_all : strings{east, west, north};
            strings reads = discovery ? rotate(eff_eps, r) : strings{global_ep};
            strings writes = !discovery ? strings{global_ep}
                             : multi    ? rotate(writes_all, w)
                                        : writes_all;
            EXPECT_EQ(t.read_endpoints(now), reads);
            EXPECT_EQ(t.write_endpoints(now), writes);

            auto v = t.should_refresh_endpoints(now);
            if (!discovery) {
              EXPECT_EQ(v.row, 0);
              EXPECT_FALSE(v.refresh);
            } else if (r > 0) {
              EXPECT_EQ(v.row, 2);
              EXPECT_TRUE(v.refresh);
              EXPECT_TRUE(v.can_refresh_in_background);
            } else if (!multi) {
              EXPECT_EQ(v.row, w > 0 ? 4 : 5);
              EXPECT_EQ(v.refresh, w > 0);
              EXPECT_TRUE(v.can_refresh_in_background);
            } else {
              EXPECT_EQ(v.row, 6);
              EXPECT_EQ(v.refresh, w > 0);
            }

            // LocationCache.ResolveServiceEndpoint resolution for document
            // reads and writes.
            EXPECT_EQ(resolve_ep(t, req(op_kind::read, 0), now), reads[0]);
            EXPECT_EQ(resolve_ep(t, req(op_kind::read, 1), now),
                      reads[1 % reads.size()]);
            const std::string write0 = !discovery ? global_ep
                                       : multi    ? writes[0]
                                                  : east;
            const std::string write1 = !discovery ? global_ep
                                       : multi    ? writes[1]
                                                  : west;
            EXPECT_EQ(resolve_ep(t, req(op_kind::write, 0), now), write0);
            EXPECT_EQ(resolve_ep(t, req(op_kind::write, 1), now), write1);
            EXPECT_EQ(resolve_ep(t, req(op_kind::read, 1, false), now),
                      discovery ? west : global_ep);

            // After twice the expiry the lists revert.
            const auto later = t0 + 2 * expiry;
            EXPECT_EQ(t.read_endpoints(later), base.read_endpoints(later));
            EXPECT_EQ(t.write_endpoints(later), base.write_endpoints(later));
            EXPECT_FALSE(t.should_refresh_endpoints(later).refresh);
          }
        }
      }
    }
  }
}
