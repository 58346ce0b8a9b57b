#include "georoute/actors/policy/composite.hpp"

#include <gtest/gtest.h>

namespace georoute {
namespace {

using std::chrono::milliseconds;

struct sub_budget_row {
  const char* name;
  milliseconds budget;
  milliseconds spent;
  std::optional<milliseconds> expected;
};

TEST(SubBudget, Table) {
  const sub_budget_row rows[] = {
      {"NoBudget_ZeroPassedOn", milliseconds{0}, milliseconds{5000},
       milliseconds{0}},
      {"NothingSpent_AllOfIt", milliseconds{300}, milliseconds{0},
       milliseconds{300}},
      {"PartSpent_TheRest", milliseconds{300}, milliseconds{120},
       milliseconds{180}},
      {"OneMillisecondLeft_One", milliseconds{300}, milliseconds{299},
       milliseconds{1}},
      {"ExactlySpent_None", milliseconds{300}, milliseconds{300}, std::nullopt},
      {"Overspent_None", milliseconds{300}, milliseconds{301}, std::nullopt},
  };
  for (const auto& r : rows)
    EXPECT_EQ(sub_budget(r.budget, r.spent), r.expected) << r.name;
}

TEST(GoneStreaks, FourInARow_ThenGivesUp) {
  gone_streaks g;
  for (int i = 1; i <= max_gone_in_a_row; ++i) {
    EXPECT_EQ(g.gone("0"), gone_step::successors) << "gone answer " << i;
    EXPECT_EQ(g.streak("0"), i);
  }
  EXPECT_EQ(g.gone("0"), gone_step::give_up);
  EXPECT_EQ(g.streak("0"), max_gone_in_a_row);
}

TEST(GoneStreaks, APageEndsTheStreak) {
  gone_streaks g;
  for (int i = 0; i < max_gone_in_a_row; ++i)
    g.gone("0");
  g.answered("0");
  EXPECT_EQ(g.streak("0"), 0);
  EXPECT_EQ(g.gone("0"), gone_step::successors);
}

TEST(GoneStreaks, ChildrenCarryTheParentsStreak_EachEndsItsOwn) {
  gone_streaks g;
  g.gone("0");
  g.gone("0");
  g.replaced("0", {"1", "2"});
  EXPECT_EQ(g.streak("0"), 0) << "the parent's streak outlived it";
  EXPECT_EQ(g.streak("1"), 2);
  EXPECT_EQ(g.streak("2"), 2);
  g.answered("1");
  EXPECT_EQ(g.streak("1"), 0);
  EXPECT_EQ(g.streak("2"), 2) << "a sibling's page ended another's streak";
  EXPECT_EQ(g.gone("2"), gone_step::successors);
  EXPECT_EQ(g.gone("2"), gone_step::successors);
  EXPECT_EQ(g.gone("2"), gone_step::give_up);
}

TEST(GoneStreaks, RangesAreIndependent) {
  gone_streaks g;
  for (int i = 0; i < max_gone_in_a_row; ++i)
    g.gone("0");
  EXPECT_EQ(g.gone("1"), gone_step::successors);
  EXPECT_EQ(g.gone("0"), gone_step::give_up);
}

TEST(GoneStreaks, ReplacingARangeWithNoStreak_ChildrenStartAtZero) {
  gone_streaks g;
  g.replaced("0", {"1"});
  EXPECT_EQ(g.streak("1"), 0);
}

} // namespace
} // namespace georoute
