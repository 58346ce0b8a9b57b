// The per-partition circuit breaker through the engine, against the
// emulator: one partition-key range answers 503 in West US (the first
// preferred region) while the rest of West US serves. After the threshold
// that range's reads skip West with no failure the caller sees, the other
// range keeps reading from West. The breaker's life after that (probe,
// doubled period, half-open, closing) depends on time and is tested in
// virtual time (tests/actors/router_test.cpp); each step is checked before
// the next.

#include "tests/integration/engine_fixture.hpp"

namespace {

using namespace georoute;
using namespace georoute::test;
using namespace std::chrono_literals;

using strings = std::vector<std::string>;

class Breaker : public engine_test {
protected:
  bool hedging = false;

  void configure() override {
    if (hedging) {
      settings.hedging.enabled = true;
      settings.hedging.threshold = 30ms;
      // Every read may hedge twice.
      settings.hedging.budget.share = 1.0;
      settings.hedging.budget.min_allowance = 1000;
      // A slow (300 ms) answer is not a timeout.
      settings.http.ladders.partition_failover =
          timeout_ladder{{2s, 0ms}, {2s, 0ms}};
    }
    auto& b = settings.circuit_breaker;
    b.open_period = 1s;
    b.max_open_period = 10s;
    b.probe_timeout = 5s;
    b.half_open_steps = 1; // after the probe: one read in two, then closed
  }

  caf::expected<data_response> route(data_request r,
                                     caf::timespan timeout = 10s) {
    return ask<data_response>(eng->router(), timeout, route_atom_v,
                              std::move(r));
  }

  router_stats stats() {
    auto s = ask<router_stats>(eng->router(), 5s, stats_atom_v);
    EXPECT_TRUE(s);
    return s ? *s : router_stats{};
  }

  // Document requests range `range` received in `region`, answered or held.
  uint64_t reached(const std::string& region, const std::string& range) {
    auto all = emu->control().counters_by_range();
    auto i = all.find({region, "dbs/d/colls/c", range});
    if (i == all.end()) return 0;
    uint64_t n = i->second.held;
    for (const auto& [status, count] : i->second.by_status)
      n += count;
    return n;
  }

  static strings regions_of(const diagnostics& d) {
    strings out;
    for (const auto& a : d.attempts)
      out.push_back(
          a.region + " " + (a.status ? std::to_string(a.status) : a.failure) +
          (a.breaker_admission.empty() ? "" : " " + a.breaker_admission) +
          (a.winner ? " winner" : ""));
    return out;
  }

  // Documents, one per range: the id of one in `range_a` and one in another.
  std::string doc_a, doc_b, pk_a, pk_b, range_a, range_b;
  // What the creates sent to West for range A (the counters count writes).
  uint64_t base = 0;

  void create_docs() {
    for (int i = 0; i < 16 && (doc_b.empty() || doc_a.empty()); ++i) {
      auto id = "doc" + std::to_string(i);
      auto pk = "p" + std::to_string(i);
      auto r = route(point(data_op::create, id, pk));
      ASSERT_TRUE(r) << sys->render(r.error());
      if (doc_a.empty()) {
        doc_a = id;
        pk_a = pk;
        range_a = r->diag.range_id;
      } else if (r->diag.range_id != range_a && doc_b.empty()) {
        doc_b = id;
        pk_b = pk;
        range_b = r->diag.range_id;
      }
    }
    ASSERT_FALSE(doc_b.empty()) << "no document landed in a second range";
    base = reached("West US", range_a);
  }

  data_request read_a() { return point(data_op::read, doc_a, pk_a); }
  data_request read_b() { return point(data_op::read, doc_b, pk_b); }
};

TEST_F(Breaker, RangeFailsInOneRegion_SkipsIt_OtherRangeStillServed) {
  create_docs();
  emulator::fault_rule rule;
  rule.region = "West US";
  rule.collection = "dbs/d/colls/c";
  rule.range_id = range_a;
  rule.operation = "read";
  rule.status = 503;
  emu->control().add_fault(rule);

  // Closed: every read of range A tries West, gets 503 and is answered by
  // East (the one cross-region retry); the caller sees no failure.
  for (int i = 1; i <= 10; ++i) {
    auto r = route(read_a());
    ASSERT_TRUE(r) << "read " << i << ": " << sys->render(r.error());
    EXPECT_EQ(regions_of(r->diag), (strings{"West US 503", "East US 200"}))
        << "read " << i;
    EXPECT_EQ(stats().breaker_opened, i < 10 ? 0u : 1u) << "read " << i;
  }
  ASSERT_EQ(stats().breaker_opened, 1u);
  EXPECT_EQ(reached("West US", range_a), base + 10);
  EXPECT_EQ(stats().marks, 0u); // a 503 marks no region

  // Open: range A goes straight to East; range B still reads from West.
  for (int i = 0; i < 5; ++i) {
    auto a = route(read_a());
    ASSERT_TRUE(a) << sys->render(a.error());
    EXPECT_EQ(regions_of(a->diag), strings{"East US 200"});
    EXPECT_EQ(a->diag.attempts[0].breaker_skipped, strings{"West US"});
    auto b = route(read_b());
    ASSERT_TRUE(b) << sys->render(b.error());
    EXPECT_EQ(regions_of(b->diag), strings{"West US 200"});
  }
  EXPECT_EQ(reached("West US", range_a),
            base + 10); // nothing reached West for A
  EXPECT_GE(reached("West US", range_b), 5u);
  EXPECT_EQ(stats().breaker_skips, 5u);
  EXPECT_EQ(stats().breaker_tracked, 1u);

  EXPECT_EQ(stats().failed, 0u); // the caller never saw a failure
  // What follows in time (the probe, the doubled period, half-open, closing)
  // runs in virtual time: actors.Router.Breaker_OpenProbeReopenHalfOpenClosed.
}

// A range whose breaker is open splits: the router learns the new map (the
// old one sent a read to the gone range) and forgets the parent's entries;
// its children start closed.
TEST_F(Breaker, Split_ForgetsTheParent) {
  create_docs();
  emulator::fault_rule rule;
  rule.region = "West US";
  rule.collection = "dbs/d/colls/c";
  rule.range_id = range_a;
  rule.operation = "read";
  rule.status = 503;
  emu->control().add_fault(rule);
  for (int i = 0; i < 10; ++i)
    ASSERT_TRUE(route(read_a()));
  ASSERT_EQ(stats().breaker_opened, 1u);
  ASSERT_EQ(stats().breaker_tracked, 1u);
  auto children = emu->control().split_range("d", "c", range_a);
  ASSERT_TRUE(children) << children.error().what;
  // A query addressed to the parent finds it gone: the router reloads the
  // map (and forgets the parent's breaker entries) and says so.
  data_request q;
  q.op = data_op::query;
  q.collection_link = "dbs/d/colls/c";
  q.body = R"({"query":"SELECT * FROM c"})";
  q.range_id = range_a;
  auto r = route(q);
  ASSERT_FALSE(r);
  EXPECT_EQ(code_of(r.error()), errc::partition_range_gone)
      << describe(r.error());
  EXPECT_EQ(stats().breaker_tracked, 0u);
  // The fault named the parent and matches nothing now; the point read
  // lands in a child, whose breaker is closed: West again.
  auto read = route(read_a());
  ASSERT_TRUE(read) << sys->render(read.error());
  EXPECT_NE(read->diag.range_id, range_a);
  EXPECT_EQ(regions_of(read->diag), strings{"West US 200"});
}

TEST_F(Breaker, Disabled_EveryReadTriesTheRegion) {
  TearDown();
  settings.circuit_breaker_enabled = false;
  start();
  create_docs();
  emulator::fault_rule rule;
  rule.region = "West US";
  rule.collection = "dbs/d/colls/c";
  rule.range_id = range_a;
  rule.operation = "read";
  rule.status = 503;
  emu->control().add_fault(rule);
  for (int i = 0; i < 12; ++i) {
    auto r = route(read_a());
    ASSERT_TRUE(r) << sys->render(r.error());
    EXPECT_EQ(regions_of(r->diag), (strings{"West US 503", "East US 200"}));
  }
  EXPECT_EQ(stats().breaker_opened, 0u);
  EXPECT_EQ(reached("West US", range_a), base + 12);
}

// Hedged reads: West answers range A slowly (300 ms) and East answers it
// 503, North serves. Each read's hedge to East fails at once, the next
// hedge to North wins while West's primary is still out: a hedge win
// against West, a failure of East. Five wins open West; East opens at its
// tenth failure, half of which its hedge arms reported.
TEST_F(Breaker, HedgeWinsOpenTheLoser_HedgeArmsReportTheirOutcomes) {
  TearDown();
  hedging = true;
  start();
  create_docs();
  emulator::fault_rule slow;
  slow.region = "West US";
  slow.collection = "dbs/d/colls/c";
  slow.range_id = range_a;
  slow.operation = "read";
  slow.action = emulator::fault_action::delay;
  slow.delay = 300ms;
  emu->control().add_fault(slow);
  emulator::fault_rule failing = slow;
  failing.region = "East US";
  failing.action = emulator::fault_action::status;
  failing.delay = 0ms;
  failing.status = 503;
  emu->control().add_fault(failing);

  for (int i = 1; i <= 5; ++i) {
    auto r = route(read_a());
    ASSERT_TRUE(r) << "read " << i << ": " << sys->render(r.error());
    EXPECT_EQ(regions_of(r->diag),
              (strings{"West US ", "East US 503", "North Europe 200 winner"}))
        << "read " << i;
    EXPECT_EQ(stats().breaker_opened, i < 5 ? 0u : 1u) << "read " << i;
  }
  // West is open for range A: reads start in East (503, retried in North).
  for (int i = 6; i <= 10; ++i) {
    auto r = route(read_a());
    ASSERT_TRUE(r) << "read " << i << ": " << sys->render(r.error());
    ASSERT_FALSE(r->diag.attempts.empty());
    EXPECT_EQ(r->diag.attempts[0].region, "East US") << "read " << i;
    EXPECT_EQ(r->diag.attempts[0].breaker_skipped, strings{"West US"});
    EXPECT_EQ(stats().breaker_opened, i < 10 ? 1u : 2u) << "read " << i;
  }
  // Both open: North serves range A alone.
  auto r = route(read_a());
  ASSERT_TRUE(r) << sys->render(r.error());
  EXPECT_EQ(regions_of(r->diag), strings{"North Europe 200"});
  EXPECT_EQ(r->diag.attempts[0].breaker_skipped,
            (strings{"West US", "East US"}));
  EXPECT_EQ(stats().failed, 0u);
}

} // namespace
