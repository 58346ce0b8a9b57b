// The receiver's rules for the fleet's region-health reports
// (actors/policy/fleet_health.hpp): parsing, drops, votes, the veto, never
// the last region, the hold and fail-back only by the receiver's own probe.

#include "georoute/actors/policy/fleet_health.hpp"

#include <gtest/gtest.h>
#include <string>
#include <vector>

namespace georoute::fleet_test {
// A named namespace: the unity build puts this beside other tests' t0.
namespace {

using namespace std::chrono_literals;
const fleet_health::clock::time_point t0{std::chrono::hours{1}};
constexpr int64_t wall0 = 1'767'225'600'000; // 2026-01-01, ms

const std::vector<std::string> three = {"West US", "East US", "North Europe"};

// A "down" claim that counts: healthy reporter, progress elsewhere.
fleet_claim down(uint64_t seq, std::string epoch = "00000000000000a1") {
  fleet_claim c;
  c.epoch = std::move(epoch);
  c.seq = seq;
  c.ts_ms = wall0;
  c.state = fleet_claim_state::down;
  c.evidence = {3, 0, 0, 41, 10000};
  c.local_health = 0;
  c.ttl = 15s;
  return c;
}

fleet_claim up(uint64_t seq, std::string epoch = "00000000000000a1") {
  auto c = down(seq, std::move(epoch));
  c.state = fleet_claim_state::up;
  return c;
}

// -- parsing ------------------------------------------------------------------

TEST(FleetClaimParse, TheReferenceExample) {
  auto c = parse_fleet_claim(
      R"({"v":1,"ep":"9f2c41d07a55e3b1","sq":17,"ts":1767225600123,)"
      R"("st":"down","sc":"read","ev":{"to":3,"er":0,"ok":0,"oko":41,)"
      R"("win":10000},"lh":0,"ttl":15000,"later":"ignored"})");
  ASSERT_TRUE(c) << c.error().what;
  EXPECT_EQ(c->epoch, "9f2c41d07a55e3b1");
  EXPECT_EQ(c->seq, 17u);
  EXPECT_EQ(c->ts_ms, 1767225600123);
  EXPECT_EQ(c->state, fleet_claim_state::down);
  EXPECT_EQ(c->op_class, fleet_claim_class::read);
  EXPECT_EQ(c->evidence.threshold_waits, 3u);
  EXPECT_EQ(c->evidence.successes_other, 41u);
  EXPECT_EQ(c->evidence.window_ms, 10000u);
  EXPECT_EQ(c->local_health, 0);
  EXPECT_EQ(c->ttl, 15s);
  EXPECT_TRUE(c->partition.empty());
}

TEST(FleetClaimParse, EveryBadFieldIsNamed) {
  const std::string good_tail = R"("sc":"write","lh":1,"ttl":5000})";
  auto with = [&](const std::string& head) { return "{" + head + good_tail; };
  const std::string base =
      R"("v":1,"ep":"00000000000000a1","sq":1,"ts":5,"st":"up",)";
  struct row {
    std::string payload;
    std::string names;
  };
  const std::vector<row> rows = {
      {"[1,2]", "payload: not a JSON object"},
      {"{\"v\":1", "payload: not JSON"},
      {std::string(1025, ' '), "payload: 1025 bytes"},
      {with(R"("ep":"00000000000000a1","sq":1,"ts":5,"st":"up",)"),
       "v: missing"},
      {with(R"("v":2,"ep":"00000000000000a1","sq":1,"ts":5,"st":"up",)"),
       "v: unknown version 2"},
      {with(R"("v":1,"ep":"xyz","sq":1,"ts":5,"st":"up",)"), "ep:"},
      {with(R"("v":1,"ep":"00000000000000a1","sq":-1,"ts":5,"st":"up",)"),
       "sq: expected an unsigned integer"},
      {with(R"("v":1,"ep":"00000000000000a1","sq":1,"ts":"5","st":"up",)"),
       "ts:"},
      {with(R"("v":1,"ep":"00000000000000a1","sq":1,"ts":5,"st":"sick",)"),
       "st:"},
      {"{" + base + R"("sc":"scan","lh":1,"ttl":5000})", "sc:"},
      {"{" + base + R"("sc":"read","pk":"norange","lh":1,"ttl":5000})", "pk:"},
      {"{" + base + R"("sc":"read","ev":{"to":-3},"lh":1,"ttl":5000})",
       "ev.to: expected an unsigned integer"},
      {"{" + base + R"("sc":"read","ev":{"oko":4294967296},"lh":1,"ttl":5000})",
       "ev.oko: 4294967296 is above"},
      {"{" + base + R"("sc":"read","ev":[],"lh":1,"ttl":5000})",
       "ev: expected"},
      {"{" + base + R"("sc":"read","lh":8,"ttl":5000})", "lh: 8 is above 7"},
      {"{" + base + R"("sc":"read","lh":1,"ttl":0})", "ttl: must be positive"},
      {"{" + base + R"("sc":"read","lh":1})", "ttl: missing"},
  };
  for (const auto& r : rows) {
    auto c = parse_fleet_claim(r.payload);
    ASSERT_FALSE(c) << r.payload;
    EXPECT_NE(c.error().what.find(r.names), std::string::npos)
        << r.payload << " -> " << c.error().what;
  }
  // The good one of the same family, to show the rows fail for their field.
  auto ok = parse_fleet_claim(
      "{" + base + R"("sc":"read","pk":"dbsColl==/12","lh":1,"ttl":5000})");
  ASSERT_TRUE(ok) << ok.error().what;
  EXPECT_EQ(ok->partition, "dbsColl==/12");
}

TEST(FleetHealthOptions, BadOnesAreRefusedByName) {
  auto bad = [](auto edit) {
    fleet_health_options o;
    edit(o);
    auto p = o.validate();
    return p ? p->what : std::string{};
  };
  EXPECT_EQ(bad([](auto&) {}), "");
  EXPECT_NE(bad([](auto& o) { o.min_reporters = 0; }).find("min_reporters"),
            std::string::npos);
  EXPECT_NE(bad([](auto& o) { o.max_claim_ttl = 0ms; }).find("max_claim_ttl"),
            std::string::npos);
  EXPECT_NE(
      bad([](auto& o) { o.reports_per_second = 0; }).find("reports_per_second"),
      std::string::npos);
  EXPECT_NE(bad([](auto& o) { o.unhealthy_score = 0; }).find("unhealthy_score"),
            std::string::npos);
  EXPECT_NE(bad([](auto& o) { o.max_reporters = 0; }).find("max_reporters"),
            std::string::npos);
  fleet_health_options o;
  o.report_burst = 0;
  EXPECT_THROW(fleet_health{o}, std::invalid_argument);
}

// -- rule 1: drops ------------------------------------------------------------

TEST(FleetHealth, Rule1_SkewedReplayedAndOlderEpochReportsAreDropped) {
  fleet_health h;
  EXPECT_EQ(h.receive("a", "East US", down(5), t0, wall0),
            fleet_drop::accepted);
  // The same epoch, not a newer sequence number.
  EXPECT_EQ(h.receive("a", "East US", down(5), t0 + 1s, wall0),
            fleet_drop::replayed);
  EXPECT_EQ(h.receive("a", "East US", down(4), t0 + 1s, wall0),
            fleet_drop::replayed);
  EXPECT_EQ(h.receive("a", "East US", down(6), t0 + 1s, wall0),
            fleet_drop::accepted);
  // A restarted reporter: a new epoch, a later clock.
  auto restarted = down(1, "00000000000000b2");
  restarted.ts_ms = wall0 + 2000;
  EXPECT_EQ(h.receive("a", "East US", restarted, t0 + 2s, wall0 + 2000),
            fleet_drop::accepted);
  // Its previous life's report, replayed: an older epoch by its clock.
  auto old = down(7);
  old.ts_ms = wall0 + 500;
  EXPECT_EQ(h.receive("a", "East US", old, t0 + 3s, wall0 + 3000),
            fleet_drop::replayed);
  // More than 30 s from the receiver's clock, either way.
  auto early = down(1, "00000000000000c3");
  early.ts_ms = wall0 - 30'001;
  EXPECT_EQ(h.receive("b", "East US", early, t0, wall0),
            fleet_drop::clock_skew);
  auto late = down(1, "00000000000000c3");
  late.ts_ms = wall0 + 30'001;
  EXPECT_EQ(h.receive("b", "East US", late, t0, wall0), fleet_drop::clock_skew);
  late.ts_ms = wall0 + 30'000;
  EXPECT_EQ(h.receive("b", "East US", late, t0, wall0), fleet_drop::accepted);
  const auto& n = h.counters();
  EXPECT_EQ(n.accepted, 4u);
  EXPECT_EQ(n.dropped_replayed, 3u);
  EXPECT_EQ(n.dropped_clock_skew, 2u);
}

TEST(FleetHealth, Rule1_AFloodingReporterIsIgnoredForAMinuteAndLosesItsVote) {
  fleet_health h;
  auto now = t0;
  uint64_t seq = 0;
  // Twenty at once pass (the bucket's depth), the 21st does not.
  for (int i = 0; i < 20; ++i)
    ASSERT_EQ(h.receive("noisy", "East US", down(++seq), now, wall0),
              fleet_drop::accepted)
        << i;
  h.receive("calm", "East US", down(1, "00000000000000c1"), now, wall0);
  EXPECT_EQ(h.votes("East US", now), 2u);
  EXPECT_EQ(h.receive("noisy", "East US", down(++seq), now, wall0),
            fleet_drop::flooded);
  EXPECT_EQ(h.votes("East US", now), 1u) << "its claims are withdrawn";
  // Ignored for 60 s, however slowly it reports meanwhile.
  EXPECT_EQ(h.receive("noisy", "East US", down(++seq), now + 59s, wall0),
            fleet_drop::flooded);
  EXPECT_EQ(h.receive("noisy", "East US", down(++seq), now + 61s, wall0),
            fleet_drop::accepted);
  // Garbage counts against the bucket as well.
  fleet_health g;
  for (int i = 0; i < 20; ++i)
    g.malformed("junk", now);
  EXPECT_EQ(g.receive("junk", "East US", down(1), now, wall0),
            fleet_drop::flooded);
  EXPECT_EQ(g.counters().dropped_malformed, 20u);
  // Five a second refill it.
  fleet_health r;
  seq = 0;
  for (int i = 0; i < 20; ++i)
    r.receive("steady", "East US", down(++seq), now, wall0);
  EXPECT_EQ(r.receive("steady", "East US", down(++seq), now + 200ms, wall0),
            fleet_drop::accepted);
}

// A newcomer's ask for the claims spends its bucket like a report: a flood
// of asks is ignored, and is not counted as malformed.
TEST(FleetHealth, Rule1_AsksForTheClaimsSpendTheBucket) {
  fleet_health h;
  for (int i = 0; i < 20; ++i)
    ASSERT_TRUE(h.asked("newcomer", t0)) << i;
  EXPECT_FALSE(h.asked("newcomer", t0));
  EXPECT_EQ(h.receive("newcomer", "East US", down(1), t0 + 1s, wall0),
            fleet_drop::flooded)
      << "inside its penalty";
  EXPECT_EQ(h.counters().asks, 20u);
  EXPECT_EQ(h.counters().dropped_malformed, 0u);
  EXPECT_EQ(h.counters().dropped_flooded, 2u);
}

TEST(FleetHealth, Rule1_NewReportersBeyondTheCapAreDropped_IdleOnesMakeRoom) {
  fleet_health_options o;
  o.max_reporters = 2;
  fleet_health h{o};
  EXPECT_EQ(h.receive("a", "East US", down(1), t0, wall0),
            fleet_drop::accepted);
  EXPECT_EQ(h.receive("b", "East US", down(1), t0, wall0),
            fleet_drop::accepted);
  EXPECT_EQ(h.receive("c", "East US", down(1), t0, wall0),
            fleet_drop::too_many_reporters);
  // Once their claims lapsed and they fell silent past any replay window.
  EXPECT_EQ(h.receive("c", "East US", down(1), t0 + 61s, wall0),
            fleet_drop::accepted);
  EXPECT_EQ(h.counters().dropped_too_many_reporters, 1u);
}

// -- rules 2 to 4: claims and votes -------------------------------------------

TEST(FleetHealth, Rule4_TwoDistinctReportersMakeAVerdict_OneNeverDoes) {
  fleet_health h;
  uint64_t seq = 0;
  // One reporter, however often.
  for (int i = 0; i < 10; ++i)
    h.receive("a", "East US", down(++seq), t0 + i * 300ms, wall0);
  auto v = h.evaluate(three, false, t0 + 3s);
  EXPECT_TRUE(v.demoted_for_reads.empty());
  EXPECT_EQ(h.votes("east us", t0 + 3s), 1u);
  // A second one.
  h.receive("b", "East US", down(1, "00000000000000b1"), t0 + 3s, wall0);
  v = h.evaluate(three, false, t0 + 3s);
  ASSERT_EQ(v.demoted_for_reads, std::vector<std::string>{"East US"});
  EXPECT_TRUE(v.demoted_for_writes.empty()) << "single-write: never writes";
  EXPECT_EQ(h.counters().verdicts_applied, 1u);
}

TEST(FleetHealth, Rule4_MultiWriteAccountsDemoteWritesToo) {
  fleet_health h;
  h.receive("a", "East US", down(1), t0, wall0);
  h.receive("b", "East US", down(1, "00000000000000b1"), t0, wall0);
  auto v = h.evaluate(three, true, t0);
  EXPECT_EQ(v.demoted_for_reads, std::vector<std::string>{"East US"});
  EXPECT_EQ(v.demoted_for_writes, std::vector<std::string>{"East US"});
}

TEST(FleetHealth,
     Rule2_ClaimsLapseAtTheirTtlCappedAt15s_AnUpWithdrawsOnlyItsVote) {
  fleet_health h;
  auto long_lived = down(1);
  long_lived.ttl = 60s;
  h.receive("a", "East US", long_lived, t0, wall0);
  auto short_lived = down(1, "00000000000000b1");
  short_lived.ttl = 4s;
  h.receive("b", "East US", short_lived, t0, wall0);
  EXPECT_EQ(h.votes("East US", t0 + 3999ms), 2u);
  EXPECT_EQ(h.votes("East US", t0 + 4s), 1u);
  EXPECT_EQ(h.votes("East US", t0 + 14999ms), 1u);
  EXPECT_EQ(h.votes("East US", t0 + 15s), 0u) << "capped at 15 s";
  // An up takes back the reporter's own vote.
  h.receive("c", "East US", down(1, "00000000000000c1"), t0 + 20s, wall0);
  h.receive("d", "East US", down(1, "00000000000000d1"), t0 + 20s, wall0);
  EXPECT_EQ(h.votes("East US", t0 + 20s), 2u);
  h.receive("c", "East US", up(2, "00000000000000c1"), t0 + 21s, wall0);
  EXPECT_EQ(h.votes("East US", t0 + 21s), 1u);
  // Partition-scoped claims never vote for the region.
  auto scoped = down(1, "00000000000000e1");
  scoped.partition = "coll==/3";
  EXPECT_EQ(h.receive("e", "East US", scoped, t0 + 21s, wall0),
            fleet_drop::accepted);
  EXPECT_EQ(h.votes("East US", t0 + 21s), 1u);
}

TEST(FleetHealth, Rule3_UnhealthyReportersCountForNothing) {
  struct row {
    const char* what;
    void (*edit)(fleet_claim&);
  };
  const row rows[] = {
      {"local health 3 (its timers run late)",
       [](fleet_claim& c) { c.local_health = 3; }},
      {"no success elsewhere (oko = 0)",
       [](fleet_claim& c) { c.evidence.successes_other = 0; }},
  };
  for (const auto& r : rows) {
    fleet_health h;
    h.receive("good", "East US", down(1), t0, wall0);
    auto c = down(1, "00000000000000b1");
    r.edit(c);
    h.receive("sick", "East US", c, t0, wall0);
    EXPECT_EQ(h.votes("East US", t0), 1u) << r.what;
    EXPECT_TRUE(h.evaluate(three, false, t0).demoted_for_reads.empty())
        << r.what;
  }
  // Local health 2 still counts.
  fleet_health h;
  h.receive("good", "East US", down(1), t0, wall0);
  auto c = down(1, "00000000000000b1");
  c.local_health = 2;
  h.receive("fine", "East US", c, t0, wall0);
  EXPECT_EQ(h.votes("East US", t0), 2u);
  // A reporter claiming two regions down at once: none of its claims count.
  h.receive("fine", "West US", down(2, "00000000000000b1"), t0, wall0);
  EXPECT_EQ(h.votes("East US", t0), 1u);
  EXPECT_EQ(h.votes("West US", t0), 0u);
  // Once one of them lapses or is withdrawn, the other counts again.
  h.receive("fine", "West US", up(3, "00000000000000b1"), t0 + 1s, wall0);
  EXPECT_EQ(h.votes("East US", t0 + 1s), 2u);
}

// -- rule 5: the receiver's own success ---------------------------------------

TEST(FleetHealth, Rule5_ARecentLocalSuccessVetoesAndLiftsAVerdict) {
  fleet_health h;
  h.local_success("east us", t0);
  h.receive("a", "East US", down(1), t0, wall0);
  h.receive("b", "East US", down(1, "00000000000000b1"), t0, wall0);
  // Within 2 s of its own success: refused.
  EXPECT_TRUE(h.evaluate(three, false, t0 + 2s).demoted_for_reads.empty());
  EXPECT_EQ(h.counters().verdicts_vetoed, 1u);
  EXPECT_TRUE(h.evaluate(three, false, t0 + 2s).demoted_for_reads.empty());
  EXPECT_EQ(h.counters().verdicts_vetoed, 1u) << "one episode, counted once";
  // After 2 s the fleet's verdict applies.
  EXPECT_EQ(h.evaluate(three, false, t0 + 2001ms).demoted_for_reads.size(), 1u);
  // A new success of its own lifts it at once, within the hold too.
  h.local_success("East US", t0 + 3s);
  EXPECT_TRUE(h.evaluate(three, false, t0 + 3s).demoted_for_reads.empty());
  EXPECT_EQ(h.counters().verdicts_vetoed, 2u);
}

// The veto holds only while the success is the receiver's latest word on
// the region: a failure it saw since ends it; a success after the failure
// brings it back.
TEST(FleetHealth, Rule5_AFailureSinceTheSuccessEndsTheVeto) {
  fleet_health h;
  h.local_success("East US", t0);
  h.local_failure("East US", t0 + 500ms);
  h.receive("a", "East US", down(1), t0 + 1s, wall0);
  h.receive("b", "East US", down(1, "00000000000000b1"), t0 + 1s, wall0);
  EXPECT_EQ(h.evaluate(three, false, t0 + 1s).demoted_for_reads.size(), 1u)
      << "its success came before its own failure";
  EXPECT_EQ(h.counters().verdicts_vetoed, 0u);
  // A success after the failure: the veto again, and the verdict lifts.
  h.local_success("East US", t0 + 1500ms);
  EXPECT_TRUE(h.evaluate(three, false, t0 + 1500ms).demoted_for_reads.empty());
  EXPECT_EQ(h.counters().verdicts_vetoed, 1u);
  // A failure at the very time of the success does not end it (not newer).
  fleet_health g;
  g.local_success("East US", t0);
  g.local_failure("East US", t0);
  g.receive("a", "East US", down(1), t0, wall0);
  g.receive("b", "East US", down(1, "00000000000000b1"), t0, wall0);
  EXPECT_TRUE(g.evaluate(three, false, t0).demoted_for_reads.empty());
}

// -- rule 6: never the last region --------------------------------------------

TEST(FleetHealth, Rule6_NeverTheLastRegion_MostVotesGoFirst) {
  fleet_health_options o;
  o.min_reporters = 2;
  fleet_health h{o};
  // Every region has votes from distinct healthy reporters (each reporter
  // claims one region only): West US 2, East US 3, North Europe 2.
  const struct {
    const char* rid;
    const char* region;
  } claims[] = {{"a", "West US"},     {"b", "West US"}, {"c", "East US"},
                {"d", "East US"},     {"e", "East US"}, {"f", "North Europe"},
                {"g", "North Europe"}};
  for (const auto& c : claims)
    h.receive(c.rid, c.region, down(1), t0, wall0);
  auto v = h.evaluate(three, false, t0);
  // Two of three at most: East US (3 votes), then of the tied two the
  // later in the preference order (North Europe).
  EXPECT_EQ(v.demoted_for_reads,
            (std::vector<std::string>{"East US", "North Europe"}));
  EXPECT_EQ(h.counters().verdicts_refused_last_region, 1u);
  h.evaluate(three, false, t0 + 1s);
  EXPECT_EQ(h.counters().verdicts_refused_last_region, 1u) << "counted once";
  // A two-region account: one at most.
  fleet_health two;
  two.receive("a", "West US", down(1), t0, wall0);
  two.receive("b", "West US", down(1), t0, wall0);
  two.receive("c", "East US", down(1), t0, wall0);
  two.receive("d", "East US", down(1), t0, wall0);
  EXPECT_EQ(
      two.evaluate({"West US", "East US"}, true, t0).demoted_for_reads.size(),
      1u);
  // A one-region account: never.
  fleet_health one;
  one.receive("a", "West US", down(1), t0, wall0);
  one.receive("b", "West US", down(1), t0, wall0);
  EXPECT_TRUE(one.evaluate({"West US"}, false, t0).demoted_for_reads.empty());
}

TEST(FleetHealth, Rule6_AnAccountThatShrankUnderItsVerdictsGetsOneBack) {
  fleet_health h;
  for (const char* rid : {"a", "b"})
    h.receive(rid, "West US", down(1), t0, wall0);
  for (const char* rid : {"c", "d"})
    h.receive(rid, "East US", down(1), t0, wall0);
  auto v = h.evaluate(three, false, t0);
  ASSERT_EQ(v.demoted_for_reads.size(), 2u);
  // North Europe leaves the account: the two verdicts would cover it all.
  v = h.evaluate({"West US", "East US"}, false, t0 + 1s);
  EXPECT_EQ(v.demoted_for_reads, std::vector<std::string>{"East US"});
}

// East US down, by two reporters whose claims live 1 s.
void two_votes_for_a_second(fleet_health& h) {
  auto a = down(1);
  a.ttl = 1s;
  auto b = down(1, "00000000000000b1");
  b.ttl = 1s;
  h.receive("a", "East US", a, t0, wall0);
  h.receive("b", "East US", b, t0, wall0);
}

// -- rule 7: the hold, and fail-back by the receiver's own probe --------------

TEST(FleetHealth, Rule7_HeldFiveSeconds_ThenRestoredOnlyByTheReceiversProbe) {
  fleet_health h;
  two_votes_for_a_second(h);
  ASSERT_EQ(h.evaluate(three, false, t0).demoted_for_reads.size(), 1u);
  // The votes lapse at 1 s; the verdict holds until 5 s.
  auto v = h.evaluate(three, false, t0 + 4999ms);
  EXPECT_EQ(v.demoted_for_reads.size(), 1u);
  EXPECT_TRUE(v.regions_to_probe.empty());
  v = h.evaluate(three, false, t0 + 5s);
  EXPECT_EQ(v.demoted_for_reads, std::vector<std::string>{"East US"})
      << "a lapsed verdict does not restore the region by itself";
  EXPECT_EQ(v.regions_to_probe, std::vector<std::string>{"East US"});
  // Peers saying "up" change nothing.
  h.receive("a", "East US", up(2), t0 + 6s, wall0);
  h.receive("b", "East US", up(2, "00000000000000b1"), t0 + 6s, wall0);
  EXPECT_EQ(h.evaluate(three, false, t0 + 6s).demoted_for_reads.size(), 1u);
  // Hours later, still waiting for the probe.
  EXPECT_EQ(h.evaluate(three, false, t0 + 3h).regions_to_probe.size(), 1u);
  // The receiver's own probe answers: back.
  h.probe_succeeded("East US", t0 + 3h);
  v = h.evaluate(three, false, t0 + 3h);
  EXPECT_TRUE(v.demoted_for_reads.empty());
  EXPECT_TRUE(v.regions_to_probe.empty());
  EXPECT_EQ(h.counters().restored_by_probe, 1u);
}

TEST(FleetHealth, Rule7_VotesComingBackWhileAwaitingTheProbeReapplyIt) {
  fleet_health h;
  two_votes_for_a_second(h);
  h.evaluate(three, false, t0);
  ASSERT_EQ(h.evaluate(three, false, t0 + 6s).regions_to_probe.size(), 1u);
  h.receive("a", "East US", down(2), t0 + 7s, wall0);
  h.receive("b", "East US", down(2, "00000000000000b1"), t0 + 7s, wall0);
  auto v = h.evaluate(three, false, t0 + 7s);
  EXPECT_EQ(v.demoted_for_reads.size(), 1u);
  EXPECT_TRUE(v.regions_to_probe.empty()) << "the fleet says down again";
  EXPECT_EQ(h.counters().verdicts_applied, 1u) << "the same verdict";
}

// -- influence bounds ---------------------------------------------------------

TEST(FleetHealth, OneForgedOrStarvedReporterDemotesNothing) {
  fleet_health h;
  uint64_t seq = 0;
  // A forged reporter with valid credentials, at its full rate, claiming
  // every region in turn with perfect-looking evidence.
  for (int s = 0; s < 60; ++s) {
    auto now = t0 + std::chrono::seconds{s};
    for (const auto& region : three)
      h.receive("forged", region, down(++seq), now, wall0);
    // A starved one: its timers run late.
    auto starved = down(static_cast<uint64_t>(s + 1), "00000000000000d1");
    starved.local_health = 5;
    h.receive("starved", three[s % 3], starved, now, wall0);
    auto v = h.evaluate(three, false, now);
    ASSERT_TRUE(v.demoted_for_reads.empty()) << "at +" << s << " s";
  }
  EXPECT_EQ(h.counters().verdicts_applied, 0u);
}

} // namespace
} // namespace georoute::fleet_test
