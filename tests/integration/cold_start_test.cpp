// An engine that starts while its first preferred region hangs, at the
// library's defaults, in real time. Its caches are cold: the first read needs
// the collection and its partition ranges, and those requests go to the hung
// region first. Each must be hedged or time out on its own rung like any
// metadata request, so that the first reads are answered by the next region
// within a few seconds, not held until the region heals (the fleet drill's
// late starters saw that: every read of their first five seconds timed out
// at the caller's 10 s).

#include "tests/integration/engine_fixture.hpp"

namespace georoute::test {
namespace {

class ColdStart : public engine_test {
protected:
  void SetUp() override {} // each test starts the engine itself

  // The library's defaults, but for the account and the region order.
  void configure() override {
    auto endpoint = settings.account_endpoint;
    auto key = settings.account_key;
    auto preferred = settings.location.preferred_regions;
    settings = config::settings{};
    settings.account_endpoint = endpoint;
    settings.account_key = key;
    settings.location.preferred_regions = preferred;
    seed_document();
    ASSERT_TRUE(emu->set_region_state("West US", emulator::region_state::hang));
  }

  void seed_document() {
    auto o = post_to_emulator("/dbs/d/colls/c/docs", R"({"id":"a","pk":"p0"})",
                              "[\"p0\"]");
    ASSERT_EQ(o.status, 201) << o.body;
  }

  void TearDown() override {
    if (emu) emu->set_region_state("West US", emulator::region_state::online);
    engine_test::TearDown();
  }
};

TEST_F(ColdStart, FirstRegionHangs_FirstReadAnsweredByTheNextRegion) {
  start();
  emu->control().reset_counters();
  caf::scoped_actor self{*sys};
  std::optional<data_response> got;
  std::string error;
  self->request(eng->router(), 10s, route_atom_v, point(data_op::read, "a"))
      .receive([&](data_response& r) { got = std::move(r); },
               [&](caf::error& e) { error = describe(e); });
  // Within the caller's 10 s: the collection read and the first page of
  // the partition ranges are hedged to East US at 1.5 s each, the next
  // page starts there (where the page before was served), and the read
  // itself is hedged at 1 s.
  ASSERT_TRUE(got) << error;
  EXPECT_EQ(got->status, 200);
  ASSERT_FALSE(got->diag.attempts.empty());
  EXPECT_EQ(got->diag.attempts.back().region, "East US");
  // The pkranges feed ended (304) in East US, where its first page was
  // served: the later page did not go back to the hung region.
  auto kinds = emu->control().counters_by_kind();
  EXPECT_EQ(kinds["East US"]["feed"][200], 1u);
  EXPECT_EQ(kinds["East US"]["feed"][304], 1u);
}

} // namespace
} // namespace georoute::test
