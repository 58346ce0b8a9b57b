#include "georoute/actors/policy/lru_cache.hpp"

#include <gtest/gtest.h>
#include <string>

namespace {

using georoute::lru_cache;

TEST(LruCache, Get_Missing_ReturnsNull) {
  lru_cache<std::string, int> c(2);
  EXPECT_EQ(c.get("a"), nullptr);
}

TEST(LruCache, Put_BeyondCapacity_EvictsLeastRecentlyUsed) {
  lru_cache<std::string, int> c(2);
  EXPECT_FALSE(c.put("a", 1));
  EXPECT_FALSE(c.put("b", 2));
  ASSERT_NE(c.get("a"), nullptr); // a is now the most recent
  EXPECT_TRUE(c.put("c", 3));     // evicts b
  EXPECT_EQ(c.get("b"), nullptr);
  EXPECT_EQ(*c.get("a"), 1);
  EXPECT_EQ(*c.get("c"), 3);
  EXPECT_EQ(c.size(), 2u);
}

TEST(LruCache, Put_ExistingKey_ReplacesWithoutEviction) {
  lru_cache<std::string, int> c(2);
  c.put("a", 1);
  c.put("b", 2);
  EXPECT_FALSE(c.put("a", 10));
  EXPECT_EQ(*c.get("a"), 10);
  EXPECT_EQ(c.size(), 2u);
}

TEST(LruCache, Erase_RemovesOnlyThatKey) {
  lru_cache<std::string, int> c(3);
  c.put("a", 1);
  c.put("b", 2);
  EXPECT_TRUE(c.erase("a"));
  EXPECT_FALSE(c.erase("a"));
  EXPECT_EQ(c.get("a"), nullptr);
  EXPECT_EQ(*c.get("b"), 2);
}

TEST(LruCache, ZeroCapacity_HoldsOne) {
  lru_cache<int, int> c(0);
  c.put(1, 1);
  c.put(2, 2);
  EXPECT_EQ(c.size(), 1u);
  EXPECT_EQ(*c.get(2), 2);
}

} // namespace
