// The snapshot holder across a location-cache restart.

#include "georoute/actors/policy/snapshot_holder.hpp"
#include "tests/policy/location_fixture.hpp"

#include <gtest/gtest.h>

namespace {

using namespace georoute;
using namespace georoute::location_fixture;

TEST(SnapshotHolder, NewSource_TableWithoutAccount_KeepsTheRegions) {
  snapshot_holder h;
  auto known =
      std::make_shared<const location_table>(fixture(true, true, preferred3));
  ASSERT_TRUE(h.apply(known, 7));
  h.reset_source();
  auto blank =
      std::make_shared<const location_table>(options(true, true, preferred3));
  EXPECT_FALSE(h.apply(blank, 1));
  EXPECT_TRUE(h.table()->has_account());
  // The successor's first table with the account is taken, whatever its
  // version.
  auto fresh =
      std::make_shared<const location_table>(fixture(true, true, preferred3));
  EXPECT_TRUE(h.apply(fresh, 2));
  EXPECT_EQ(h.table(), fresh);
}

TEST(SnapshotHolder, FirstSnapshot_WithoutAccount_IsApplied) {
  snapshot_holder h;
  auto blank =
      std::make_shared<const location_table>(options(true, true, preferred3));
  EXPECT_TRUE(h.apply(blank, 1));
  EXPECT_FALSE(h.table()->has_account());
}

} // namespace
