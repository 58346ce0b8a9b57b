// The node pool behind the router's live operations and the deadline
// queues: a freed node serves the next insert, at most `max_free` are kept,
// and blocks of another size never enter it.

#include "georoute/actors/policy/node_pool.hpp"

#include <gtest/gtest.h>
#include <set>

namespace {

using namespace georoute;

using pooled_set = std::set<int, std::less<int>, pool_allocator<int>>;

TEST(NodePool, FreedNodeServesTheNextInsert) {
  node_pool pool;
  pooled_set s{std::less<int>{}, pool_allocator<int>{&pool}};
  auto* first = &*s.insert(1).first;
  s.erase(1);
  EXPECT_EQ(pool.kept(), 1u);
  auto* second = &*s.insert(2).first;
  EXPECT_EQ(first, second);
  EXPECT_EQ(pool.kept(), 0u);
}

TEST(NodePool, KeepsAtMostMaxFree) {
  node_pool pool{4};
  {
    pooled_set s{std::less<int>{}, pool_allocator<int>{&pool}};
    for (int i = 0; i < 100; ++i)
      s.insert(i);
    s.clear();
    EXPECT_EQ(pool.kept(), 4u);
    for (int i = 0; i < 3; ++i)
      s.insert(i);
    EXPECT_EQ(pool.kept(), 1u);
  } // the set goes first, then the pool frees what it kept (ASan: no leak)
  EXPECT_EQ(pool.kept(), 4u);
}

TEST(NodePool, OtherSizesGoToTheHeap) {
  node_pool pool;
  pool_allocator<int> ints{&pool};
  pool_allocator<double> doubles{ints};
  auto* i = ints.allocate(1);
  ints.deallocate(i, 1);
  EXPECT_EQ(pool.kept(), 1u);
  auto* d = doubles.allocate(1); // another size: not from the pool
  EXPECT_EQ(pool.kept(), 1u);
  doubles.deallocate(d, 1);
  EXPECT_EQ(pool.kept(), 1u);
  auto* many = ints.allocate(3); // arrays never
  ints.deallocate(many, 3);
  EXPECT_EQ(pool.kept(), 1u);
}

} // namespace
