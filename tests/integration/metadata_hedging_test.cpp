// Metadata hedging against the emulator, in real time (issue 18, item 3): a
// collection read whose region hangs is answered by the next region after
// the threshold, not after the ladder; with every region healthy a metadata
// operation costs exactly one request.

#include "georoute/messages/error.hpp"
#include "tests/integration/stack_fixture.hpp"

namespace {

using namespace georoute;
using namespace georoute::test;
using namespace std::chrono_literals;

class MetadataHedging : public stack_test {
protected:
  metadata_request read_collection() {
    metadata_request r;
    r.what.kind = transport::attempt_kind::resource_read;
    r.what.resource = "/dbs/d/colls/c";
    r.kind = request_kind::metadata_read;
    return r;
  }

  uint64_t served_anywhere() {
    uint64_t n = 0;
    for (const auto& r : regions)
      n += served_by(r);
    return n;
  }
};

TEST_F(MetadataHedging, HungRegion_HedgeAnswersAfterThreshold_RegionMarked) {
  start_emulator();
  create_collection("d", "c");
  // One long rung: without the hedge the read would wait 2 s for West.
  settings.http.ladders.hot_path = {{2s, 0ms}};
  settings.hedging.metadata.threshold = 200ms;
  settings.hedging.metadata.max_concurrent = 32;
  start_actors();
  ASSERT_TRUE(emu->set_region_state("West US", emulator::region_state::hang));
  emu->control().reset_counters();
  auto t0 = std::chrono::steady_clock::now();
  auto got =
      ask<transport::outcome>(retry, 5s, execute_atom_v, read_collection());
  auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(got) << sys->render(got.error());
  EXPECT_EQ(got->status, 200);
  EXPECT_GE(took, 200ms);
  EXPECT_LT(took, 1500ms);
  EXPECT_EQ(served_by("East US"), 1u);
  auto rs = retry_stats_now();
  EXPECT_EQ(rs.metadata_hedges_started, 1u);
  EXPECT_EQ(rs.metadata_hedges_won, 1u);
  EXPECT_EQ(rs.metadata_hedge_slots, 0u);
  // West's abandoned attempt times out after its 2 s: West is marked.
  resolve_input read;
  read.op = op_kind::read;
  wait_for(
      [&] {
        auto r = ask<resolution>(locations, 5s, resolve_atom_v, read);
        return r && r->region == "East US";
      },
      "West US to be marked");
  EXPECT_GE(retry_stats_now().marks, 1u);
  ASSERT_TRUE(emu->set_region_state("West US", emulator::region_state::online));
}

TEST_F(MetadataHedging, HealthyRegions_OneRequestPerMetadataOperation) {
  start_emulator();
  create_collection("d", "c");
  start_actors(); // the library's defaults: 1.5 s, 32 slots
  emu->control().reset_counters();
  for (int i = 0; i < 5; ++i) {
    auto got =
        ask<transport::outcome>(retry, 5s, execute_atom_v, read_collection());
    ASSERT_TRUE(got) << sys->render(got.error());
    EXPECT_EQ(got->status, 200);
  }
  // That nothing follows past the threshold once answered is checked in
  // virtual time
  // (actors.RetryHedge.FastPrimary_NoHedge_OneRequestPerOperation).
  EXPECT_EQ(served_anywhere(), 5u);
  auto rs = retry_stats_now();
  EXPECT_EQ(rs.metadata_hedges_started, 0u);
  EXPECT_EQ(rs.metadata_hedges_refused, 0u);
  EXPECT_EQ(rs.attempts, 5u);
}

} // namespace
