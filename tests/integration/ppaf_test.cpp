// Per-partition automatic failover through the engine against the emulator:
// a single-write account (West US writes; East US and North Europe read)
// whose service moves one partition-key range's write region. The range's
// writes follow it after one 403/3 (no region is marked, no account
// failover), the other range is untouched, moving it back costs one extra
// round trip, and an account that does not say PPAF is not followed.

#include "tests/integration/engine_fixture.hpp"

namespace {

using namespace georoute;
using namespace georoute::test;
using namespace std::chrono_literals;
using strings = std::vector<std::string>;

class PerPartitionFailover : public engine_test {
protected:
  std::optional<bool> account_flag = true;

  void SetUp() override {
    emu_options.engine.per_partition_failover = account_flag;
    start();
  }

  caf::expected<data_response> route(data_request r) {
    return ask<data_response>(eng->router(), 10s, route_atom_v, std::move(r));
  }

  static strings attempts_of(const diagnostics& d) {
    strings out;
    for (const auto& a : d.attempts)
      out.push_back(
          a.region + " " +
          (a.status ? std::to_string(a.status) +
                          (a.substatus ? "/" + std::to_string(a.substatus) : "")
                    : a.failure));
    return out;
  }

  // A partition key of each of the two ranges, found by writing.
  std::map<std::string, std::string> pk_by_range;
  void find_ranges() {
    for (int i = 0; i < 64 && pk_by_range.size() < 2; ++i) {
      auto pk = "p" + std::to_string(i);
      auto r = route(point(data_op::create, "probe-" + pk, pk));
      ASSERT_TRUE(r) << sys->render(r.error());
      pk_by_range.emplace(r->diag.range_id, pk);
    }
    ASSERT_EQ(pk_by_range.size(), 2u);
  }

  caf::expected<data_response> create(const std::string& id,
                                      const std::string& range) {
    return route(point(data_op::create, id, pk_by_range.at(range)));
  }

  router_stats stats() {
    auto s = ask<router_stats>(eng->router(), 5s, stats_atom_v);
    EXPECT_TRUE(s);
    return s ? *s : router_stats{};
  }
};

TEST_F(PerPartitionFailover, RangeMoves_WritesFollow_OtherRangeStays) {
  find_ranges();
  auto it = pk_by_range.begin();
  auto moved = it->first;
  auto other = std::next(it)->first;
  ASSERT_TRUE(
      emu->control().move_partition_write_region("d", "c", moved, "East US"));
  auto marks_before = stats().marks;
  // The first write of the moved range meets 403/3 in West and is retried
  // at once in East (the next of the account's read regions).
  auto a = create("a1", moved);
  ASSERT_TRUE(a) << sys->render(a.error());
  EXPECT_EQ(attempts_of(a->diag), (strings{"West US 403/3", "East US 201"}));
  // Later writes of that range go to East directly; the other range's
  // still go to West.
  auto b = create("a2", moved);
  ASSERT_TRUE(b) << sys->render(b.error());
  EXPECT_EQ(attempts_of(b->diag), (strings{"East US 201"}));
  auto c = create("b1", other);
  ASSERT_TRUE(c) << sys->render(c.error());
  EXPECT_EQ(attempts_of(c->diag), (strings{"West US 201"}));
  // No region was marked: only the range moved.
  EXPECT_EQ(stats().marks, marks_before);
}

TEST_F(PerPartitionFailover, MovedBack_OneExtraRoundTrip) {
  find_ranges();
  auto moved = pk_by_range.begin()->first;
  ASSERT_TRUE(emu->control().move_partition_write_region("d", "c", moved,
                                                         "North Europe"));
  auto a = create("a1", moved);
  ASSERT_TRUE(a) << sys->render(a.error());
  // West 403/3 -> East (next in account order) 403/3 -> North Europe.
  EXPECT_EQ(attempts_of(a->diag),
            (strings{"West US 403/3", "East US 403/3", "North Europe 201"}));
  ASSERT_TRUE(emu->control().clear_partition_write_region("d", "c", moved));
  auto marks_before = stats().marks;
  // The service moved it home: North answers 403/3 and the write region is
  // tried next, not East, by per-partition failover itself (no region is
  // marked: the account-level path would mark one).
  auto b = create("a2", moved);
  ASSERT_TRUE(b) << sys->render(b.error());
  EXPECT_EQ(attempts_of(b->diag),
            (strings{"North Europe 403/3", "West US 201"}));
  ASSERT_FALSE(b->diag.attempts.empty());
  EXPECT_NE(b->diag.attempts.front().retry_reason.find("write region"),
            std::string::npos)
      << b->diag.attempts.front().retry_reason;
  EXPECT_EQ(stats().marks, marks_before);
  auto c = create("a3", moved);
  ASSERT_TRUE(c) << sys->render(c.error());
  EXPECT_EQ(attempts_of(c->diag), (strings{"West US 201"}));
}

class PerPartitionFailoverSilentAccount : public PerPartitionFailover {
protected:
  void SetUp() override {
    account_flag = std::nullopt;
    PerPartitionFailover::SetUp();
  }
};

TEST_F(PerPartitionFailoverSilentAccount, NotFollowed_NoWriteGoesToEast) {
  find_ranges();
  auto moved = pk_by_range.begin()->first;
  ASSERT_TRUE(
      emu->control().move_partition_write_region("d", "c", moved, "East US"));
  auto a = create("a1", moved);
  // The account-level path: West is the account's write region, the write
  // is never sent to East on a guess.
  ASSERT_FALSE(a) << "the write succeeded: "
                  << ::testing::PrintToString(attempts_of(a->diag));
  const auto* d = diagnostics_of(a.error());
  ASSERT_NE(d, nullptr);
  ASSERT_FALSE(d->attempts.empty());
  EXPECT_EQ(attempts_of(*d).front(), "West US 403/3");
  for (const auto& att : attempts_of(*d))
    EXPECT_EQ(att.rfind("East US", 0), std::string::npos) << att;
}

} // namespace
