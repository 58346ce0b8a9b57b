// The deadline queue: one timer serves every deadline of one length; an
// ended operation leaves nothing behind; a shorter deadline after longer
// ones gets a timer of its own and still ends on time.

#include "georoute/actors/policy/deadline_queue.hpp"

#include <gtest/gtest.h>

// Named after the file as well: the unity build (tests/CMakeLists.txt)
// compiles it in one translation unit with other tests.
namespace deadline_queue_test {
namespace {

using namespace georoute;
using namespace std::chrono_literals;
using tp = deadline_queue::time_point;

const tp t0{};

deadline_key end_of(uint64_t op) {
  return {op, deadline_slot::end};
}
deadline_key hedge_of(uint64_t op) {
  return {op, deadline_slot::hedge};
}

std::vector<deadline_key> ends(std::initializer_list<uint64_t> ops) {
  std::vector<deadline_key> out;
  for (auto op : ops)
    out.push_back(end_of(op));
  return out;
}

// What an operation does when its end time comes: only a budget waits, and
// only for an attempt in flight.
TEST(DeadlineQueue, OnEnd_Table) {
  EXPECT_EQ(on_end(end_kind::budget, true), end_action::wait_for_attempt);
  EXPECT_EQ(on_end(end_kind::budget, false), end_action::end_now);
  EXPECT_EQ(on_end(end_kind::hard, true), end_action::end_now);
  EXPECT_EQ(on_end(end_kind::hard, false), end_action::end_now);
}

TEST(DeadlineQueue, SameLengthDeadlines_OneTimerServesAll) {
  deadline_queue q;
  auto arm = q.add(end_of(1), t0 + 60s);
  ASSERT_TRUE(arm);
  EXPECT_EQ(*arm, t0 + 60s);
  for (uint64_t id = 2; id <= 1000; ++id)
    EXPECT_FALSE(q.add(end_of(id), t0 + 60s + std::chrono::milliseconds(id)))
        << "operation " << id << " armed a timer of its own";
  EXPECT_EQ(q.timers_pending(), 1u);
  EXPECT_EQ(q.size(), 1000u);
}

TEST(DeadlineQueue, EndedOperations_LeaveNothingBehind) {
  deadline_queue q;
  for (uint64_t id = 1; id <= 100; ++id)
    q.add(end_of(id), t0 + 60s + std::chrono::milliseconds(id));
  for (uint64_t id = 1; id <= 100; ++id)
    q.remove(end_of(id), t0 + 60s + std::chrono::milliseconds(id));
  EXPECT_EQ(q.size(), 0u);
  // The one pending timer fires into an empty queue and arms nothing.
  auto f = q.on_timer(t0 + 60s + 1ms, t0 + 60s + 1ms);
  EXPECT_TRUE(f.expired.empty());
  EXPECT_FALSE(f.arm);
  EXPECT_EQ(q.timers_pending(), 0u);
}

TEST(DeadlineQueue, TimerFires_ExpiresDueOnes_ArmsForTheNext) {
  deadline_queue q;
  q.add(end_of(1), t0 + 10s);
  q.add(end_of(2), t0 + 10s);
  q.add(end_of(3), t0 + 15s);
  auto f = q.on_timer(t0 + 10s, t0 + 10s);
  EXPECT_EQ(f.expired, ends({1, 2}));
  ASSERT_TRUE(f.arm);
  EXPECT_EQ(*f.arm, t0 + 15s);
  EXPECT_EQ(q.timers_pending(), 1u);
  auto g = q.on_timer(t0 + 15s, t0 + 15s + 3ms);
  EXPECT_EQ(g.expired, ends({3}));
  EXPECT_FALSE(g.arm);
  EXPECT_EQ(q.timers_pending(), 0u);
}

TEST(DeadlineQueue, ShorterDeadlineAfterLongerOnes_GetsItsOwnTimer) {
  deadline_queue q;
  ASSERT_TRUE(q.add(end_of(1), t0 + 60s));
  auto arm = q.add(end_of(2), t0 + 400ms);
  ASSERT_TRUE(arm) << "the short deadline would wait for the 60 s timer";
  EXPECT_EQ(*arm, t0 + 400ms);
  EXPECT_EQ(q.timers_pending(), 2u);
  auto f = q.on_timer(t0 + 400ms, t0 + 400ms);
  EXPECT_EQ(f.expired, ends({2}));
  // The 60 s timer is still pending: nothing new to arm.
  EXPECT_FALSE(f.arm);
  auto g = q.on_timer(t0 + 60s, t0 + 60s);
  EXPECT_EQ(g.expired, ends({1}));
  EXPECT_EQ(q.timers_pending(), 0u);
}

TEST(DeadlineQueue, EarlierOperationEnded_LaterOneStillExpires) {
  deadline_queue q;
  q.add(end_of(1), t0 + 1s);
  q.add(end_of(2), t0 + 5s);
  q.remove(end_of(1), t0 + 1s);
  // The timer armed for 1 s finds nothing due and arms one for 5 s.
  auto f = q.on_timer(t0 + 1s, t0 + 1s);
  EXPECT_TRUE(f.expired.empty());
  ASSERT_TRUE(f.arm);
  EXPECT_EQ(*f.arm, t0 + 5s);
  auto g = q.on_timer(t0 + 5s, t0 + 5s);
  EXPECT_EQ(g.expired, ends({2}));
}

TEST(DeadlineQueue, StaleTimer_DoesNotDisturbThePendingOne) {
  deadline_queue q;
  q.add(end_of(1), t0 + 60s);
  q.add(end_of(2), t0 + 1s); // second timer, due at 1 s
  q.on_timer(t0 + 1s, t0 + 1s);
  q.add(end_of(3), t0 + 61s); // the 60 s timer is still pending: no new one
  EXPECT_EQ(q.timers_pending(), 1u);
  auto f = q.on_timer(t0 + 60s, t0 + 60s);
  EXPECT_EQ(f.expired, ends({1}));
  ASSERT_TRUE(f.arm);
  EXPECT_EQ(*f.arm, t0 + 61s);
}

// An operation's end and its hedge are two entries: each comes back named
// for what it is, and removing one leaves the other.
TEST(DeadlineQueue, EndAndHedgeOfOneOperation_ComeBackNamed) {
  deadline_queue q;
  q.add(end_of(7), t0 + 60s);
  q.add(hedge_of(7), t0 + 1s);
  q.add(hedge_of(8), t0 + 1s);
  q.remove(hedge_of(8), t0 + 1s);
  auto f = q.on_timer(t0 + 1s, t0 + 1s);
  ASSERT_EQ(f.expired.size(), 1u);
  EXPECT_EQ(f.expired[0].op, 7u);
  EXPECT_EQ(f.expired[0].slot, deadline_slot::hedge);
  EXPECT_EQ(q.size(), 1u);
  auto g = q.on_timer(t0 + 60s, t0 + 60s);
  EXPECT_EQ(g.expired, ends({7}));
}

TEST(EffectiveBudget, TheRequestsWhenItNamesOne) {
  EXPECT_EQ(effective_budget(2s, 60s), 2s);
  EXPECT_EQ(effective_budget(0s, 60s), 60s);
}

} // namespace
} // namespace deadline_queue_test
