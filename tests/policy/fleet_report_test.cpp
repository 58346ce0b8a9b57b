// The sender's rules for a fleet's region-health reports
// (actors/policy/fleet_report.hpp): when a region is claimed down, how
// often, when "up" goes, the rate limits, the local health score, and that
// nothing is queued while the transport is down.

#include "georoute/actors/policy/fleet_report.hpp"

#include <gtest/gtest.h>
#include <string>
#include <vector>

namespace georoute::fleet_report_test {
// A named namespace: the unity build puts this beside other tests' t0.
namespace {

using namespace std::chrono_literals;

const fleet_reporter::clock::time_point t0{std::chrono::hours{1}};
constexpr int64_t wall0 = 1'767'225'600'000;
const std::string epoch = "9f2c41d07a55e3b1";

// East US makes reads wait twice while West US answers: East qualifies.
void east_sick(fleet_reporter& r, fleet_reporter::clock::time_point at) {
  r.observe("West US", fleet_event::success, at);
  r.observe("East US", fleet_event::threshold_wait, at);
  r.observe("East US", fleet_event::threshold_wait, at);
}

std::vector<std::string> regions_of(const std::vector<fleet_outgoing>& out) {
  std::vector<std::string> r;
  for (const auto& o : out)
    r.push_back(o.region +
                (o.claim.state == fleet_claim_state::down ? " down" : " up"));
  return r;
}

TEST(FleetPayload, RoundTripsThroughTheReceiversParser) {
  fleet_claim c;
  c.epoch = epoch;
  c.seq = 17;
  c.ts_ms = wall0 + 123;
  c.state = fleet_claim_state::down;
  c.op_class = fleet_claim_class::write;
  c.partition = "coll==/12";
  c.evidence = {3, 1, 2, 41, 10000};
  c.local_health = 1;
  c.ttl = 15s;
  auto text = fleet_payload(c);
  EXPECT_LE(text.size(), 256u) << text;
  auto back = parse_fleet_claim(text);
  ASSERT_TRUE(back) << back.error().what << " in " << text;
  EXPECT_EQ(back->epoch, c.epoch);
  EXPECT_EQ(back->seq, c.seq);
  EXPECT_EQ(back->ts_ms, c.ts_ms);
  EXPECT_EQ(back->state, c.state);
  EXPECT_EQ(back->op_class, c.op_class);
  EXPECT_EQ(back->partition, c.partition);
  EXPECT_EQ(back->evidence.threshold_waits, 3u);
  EXPECT_EQ(back->evidence.errors, 1u);
  EXPECT_EQ(back->evidence.successes, 2u);
  EXPECT_EQ(back->evidence.successes_other, 41u);
  EXPECT_EQ(back->evidence.window_ms, 10000u);
  EXPECT_EQ(back->local_health, 1);
  EXPECT_EQ(back->ttl, 15s);
}

TEST(FleetReporter, BadOptionsAndEpochsAreRefused) {
  EXPECT_THROW(fleet_reporter("not-hex"), std::invalid_argument);
  fleet_report_options o;
  o.refresh = 15s; // not below the ttl
  EXPECT_THROW(fleet_reporter(epoch, o), std::invalid_argument);
  o = {};
  o.max_per_second = 0;
  EXPECT_THROW(fleet_reporter(epoch, o), std::invalid_argument);
  EXPECT_NO_THROW(fleet_reporter{epoch});
}

TEST(FleetReporter, DownNeedsTwoThresholdWaitsAndSuccessElsewhere) {
  {
    fleet_reporter r{epoch};
    r.observe("West US", fleet_event::success, t0);
    r.observe("East US", fleet_event::threshold_wait, t0);
    EXPECT_TRUE(r.due(t0, wall0, true).empty()) << "one wait is not enough";
    r.observe("East US", fleet_event::threshold_wait, t0 + 1s);
    auto out = r.due(t0 + 1s, wall0 + 1000, true);
    ASSERT_EQ(regions_of(out), std::vector<std::string>{"East US down"});
    const auto& c = out.front().claim;
    EXPECT_EQ(c.epoch, epoch);
    EXPECT_EQ(c.seq, 1u);
    EXPECT_EQ(c.ts_ms, wall0 + 1000);
    EXPECT_EQ(c.evidence.threshold_waits, 2u);
    EXPECT_EQ(c.evidence.successes_other, 1u);
    EXPECT_EQ(c.evidence.window_ms, 10000u);
    EXPECT_EQ(c.ttl, 15s);
    EXPECT_EQ(c.local_health, 0);
  }
  {
    // No success elsewhere: it may be the reporter, not East.
    fleet_reporter r{epoch};
    r.observe("East US", fleet_event::threshold_wait, t0);
    r.observe("East US", fleet_event::threshold_wait, t0);
    EXPECT_TRUE(r.due(t0, wall0, true).empty());
  }
  {
    // Waits older than the window do not add up.
    fleet_reporter r{epoch};
    r.observe("East US", fleet_event::threshold_wait, t0);
    r.observe("West US", fleet_event::success, t0 + 11s);
    r.observe("East US", fleet_event::threshold_wait, t0 + 11s);
    EXPECT_TRUE(r.due(t0 + 11s, wall0, true).empty());
  }
  // A breaker that opened, or a refused connection, is enough alone.
  for (auto e : {fleet_event::breaker_opened, fleet_event::refused}) {
    fleet_reporter r{epoch};
    r.observe("West US", fleet_event::success, t0);
    r.observe("East US", e, t0);
    EXPECT_EQ(regions_of(r.due(t0, wall0, true)),
              std::vector<std::string>{"East US down"})
        << static_cast<int>(e);
  }
  {
    // Errors alone (a 503 here and there) are the retry policy's business.
    fleet_reporter r{epoch};
    r.observe("West US", fleet_event::success, t0);
    for (int i = 0; i < 5; ++i)
      r.observe("East US", fleet_event::error, t0);
    EXPECT_TRUE(r.due(t0, wall0, true).empty());
  }
}

TEST(FleetReporter, TwoRegionsQualifying_NothingIsClaimed_TheScoreRises) {
  fleet_reporter r{epoch};
  r.observe("West US", fleet_event::success, t0);
  r.observe("East US", fleet_event::refused, t0);
  r.observe("North Europe", fleet_event::breaker_opened, t0);
  EXPECT_TRUE(r.due(t0, wall0, true).empty());
  EXPECT_EQ(r.counters().withheld_many, 1u);
  EXPECT_EQ(r.local_health(), 1);
  // Once per window.
  r.due(t0 + 1s, wall0, true);
  EXPECT_EQ(r.local_health(), 1);
}

TEST(FleetReporter, LateTimersRaiseTheScore_AboveOneNothingIsClaimed) {
  fleet_reporter r{epoch};
  r.timer_fired(t0, t0 + 50ms); // on time (50 ms is allowed)
  EXPECT_EQ(r.local_health(), 0);
  r.timer_fired(t0, t0 + 51ms);
  EXPECT_EQ(r.local_health(), 1);
  east_sick(r, t0);
  auto out = r.due(t0, wall0, true);
  ASSERT_EQ(out.size(), 1u) << "a score of 1 still reports";
  EXPECT_EQ(out.front().claim.local_health, 1);
  r.timer_fired(t0 + 1s, t0 + 1200ms);
  EXPECT_EQ(r.local_health(), 2);
  east_sick(r, t0 + 6s);
  EXPECT_TRUE(r.due(t0 + 6s, wall0, true).empty()) << "starved: says nothing";
  EXPECT_GE(r.counters().withheld_unhealthy, 1u);
  // One step down per clean window after the last late timer.
  r.due(t0 + 11s, wall0, true);
  EXPECT_EQ(r.local_health(), 2);
  east_sick(r, t0 + 12s);
  auto again = r.due(t0 + 12s, wall0, true);
  EXPECT_EQ(r.local_health(), 1);
  EXPECT_EQ(regions_of(again), std::vector<std::string>{"East US down"});
  r.due(t0 + 22s, wall0, true);
  EXPECT_EQ(r.local_health(), 0);
  for (int i = 0; i < 20; ++i)
    r.timer_fired(t0 + 30s, t0 + 40s);
  EXPECT_EQ(r.local_health(), 7) << "saturates";
}

TEST(FleetReporter, RefreshedEveryFiveSecondsWhileItHolds_UpOnceAfterTheProbe) {
  fleet_reporter r{epoch};
  east_sick(r, t0);
  EXPECT_EQ(r.due(t0, wall0, true).size(), 1u);
  east_sick(r, t0 + 4s);
  EXPECT_TRUE(r.due(t0 + 4s, wall0, true).empty()) << "not before 5 s";
  auto refreshed = r.due(t0 + 5s, wall0, true);
  ASSERT_EQ(refreshed.size(), 1u);
  EXPECT_EQ(refreshed.front().claim.seq, 2u);
  // The evidence ages out (the last at +4 s, the window 10 s): no more
  // reports, and no "up" either: the claim lapses at the receivers.
  EXPECT_TRUE(r.due(t0 + 15s, wall0, true).empty());
  EXPECT_TRUE(r.due(t0 + 30s, wall0, true).empty());
  // Its own probe answers: "up", once.
  r.probe_succeeded("east us", t0 + 31s);
  EXPECT_EQ(regions_of(r.due(t0 + 31s, wall0, true)),
            std::vector<std::string>{"East US up"});
  EXPECT_TRUE(r.due(t0 + 40s, wall0, true).empty());
  // A probe of a region never claimed: nothing.
  r.probe_succeeded("North Europe", t0 + 41s);
  EXPECT_TRUE(r.due(t0 + 41s, wall0, true).empty());
}

// A newcomer asks for the claims: the held one goes again at once, not at
// its refresh and not held by the region's one a second (a newcomer that
// subscribed just after the last report would wait a second, and its first
// reads would go to the region meanwhile); what is not claimed is not
// sent. `claimed` lists what the owner should probe.
TEST(FleetReporter, ResendClaims_AtOnceEvenWithinTheSpacing_ClaimedListed) {
  fleet_reporter r{epoch};
  EXPECT_TRUE(r.claimed().empty());
  east_sick(r, t0);
  ASSERT_EQ(r.due(t0, wall0, true).size(), 1u);
  EXPECT_EQ(r.claimed(), std::vector<std::string>{"East US"});
  EXPECT_TRUE(r.due(t0 + 100ms, wall0, true).empty()) << "nobody asked";
  r.resend_claims();
  auto again = r.due(t0 + 100ms, wall0, true);
  ASSERT_EQ(regions_of(again), std::vector<std::string>{"East US down"});
  EXPECT_EQ(again.front().claim.seq, 2u);
  // A second newcomer asks 50 ms later: answered too.
  r.resend_claims();
  EXPECT_EQ(r.due(t0 + 150ms, wall0, true).size(), 1u);
  // Without an ask the spacing holds, and the next goes at the refresh
  // again (t0 + 150 ms + 5 s).
  EXPECT_TRUE(r.due(t0 + 600ms, wall0, true).empty());
  EXPECT_TRUE(r.due(t0 + 5s, wall0, true).empty());
  EXPECT_EQ(r.due(t0 + 5150ms, wall0, true).size(), 1u);
  // After the probe answered and "up" went, nothing is claimed.
  r.probe_succeeded("East US", t0 + 7s);
  EXPECT_EQ(regions_of(r.due(t0 + 7s, wall0, true)),
            std::vector<std::string>{"East US up"});
  EXPECT_TRUE(r.claimed().empty());
  r.resend_claims();
  EXPECT_TRUE(r.due(t0 + 9s, wall0, true).empty());
}

// Answers to asks still count against the process's ten a second: a flood
// of asks (from many askers, each within its own bucket) cannot make a
// process publish more than that.
TEST(FleetReporter, AnswersToAsks_WithinTenASecond) {
  fleet_reporter r{epoch};
  east_sick(r, t0);
  ASSERT_EQ(r.due(t0, wall0, true).size(), 1u);
  size_t sent = 1;
  for (int i = 1; i <= 30; ++i) {
    r.resend_claims();
    sent += r.due(t0 + i * 10ms, wall0, true).size();
  }
  EXPECT_EQ(sent, 10u) << "more than ten reports in one second";
  EXPECT_GE(r.counters().held_by_rate, 20u);
}

TEST(FleetReporter, OneReportASecondPerRegion_TenPerProcess) {
  fleet_reporter r{epoch};
  east_sick(r, t0);
  ASSERT_EQ(r.due(t0, wall0, true).size(), 1u);
  // The probe answers at once, but the region spoke less than 1 s ago.
  r.probe_succeeded("East US", t0 + 500ms);
  EXPECT_TRUE(r.due(t0 + 500ms, wall0, true).empty());
  EXPECT_EQ(r.counters().held_by_rate, 1u);
  EXPECT_EQ(r.due(t0 + 1s, wall0, true).size(), 1u);
  // Twelve regions claimed one after the other (each alone in its window),
  // then every probe answers at once: ten "up"s this second, two the next.
  fleet_reporter many{epoch};
  std::vector<std::string> names;
  for (int i = 0; i < 12; ++i)
    names.push_back("Region " + std::to_string(i));
  auto at = t0;
  for (const auto& n : names) {
    many.observe("Home", fleet_event::success, at);
    many.observe(n, fleet_event::refused, at);
    ASSERT_EQ(many.due(at, wall0, true).size(), 1u) << n;
    at += 11s;
  }
  for (const auto& n : names)
    many.probe_succeeded(n, at);
  EXPECT_EQ(many.due(at, wall0, true).size(), 10u);
  EXPECT_EQ(many.due(at + 999ms, wall0, true).size(), 0u);
  EXPECT_EQ(many.due(at + 1s, wall0, true).size(), 2u);
}

TEST(FleetReporter, NotConnected_NothingSentNothingKept_ThenAtOnce) {
  fleet_reporter r{epoch};
  east_sick(r, t0);
  EXPECT_TRUE(r.due(t0, wall0, false).empty());
  EXPECT_TRUE(r.due(t0 + 1s, wall0, false).empty());
  EXPECT_EQ(r.counters().dropped_disconnected, 2u);
  // Back: what is due now goes now, once, with the first sequence number.
  auto out = r.due(t0 + 2s, wall0, true);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out.front().claim.seq, 1u);
  EXPECT_TRUE(r.due(t0 + 3s, wall0, true).empty());
}

} // namespace
} // namespace georoute::fleet_report_test
