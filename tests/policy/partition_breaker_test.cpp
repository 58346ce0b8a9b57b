// The per-partition circuit breaker: which outcomes count, the consecutive
// and hedge-win thresholds, probe-gated failback (no blind timer), the
// doubling open period, lost probes, half-open, the LRU bound, the
// transition log and option validation. Ports what applies of the SDK tests
// IncrementRequestFailureCounterAndCheckIfPartitionCanFailover_* (.NET; our
// comparison opens on the 10th, not the 11th), the PPCB override tests
// (other ranges unaffected), record_hedge_win_increments_ppcb_counter and
// primary_win_resets_hedge_win_counter (Rust driver) and Java's
// PartitionLevelCircuitBreakerTests (transitions per outcome).

#include "georoute/actors/policy/partition_breaker.hpp"

#include <gtest/gtest.h>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

using namespace georoute;
using namespace std::chrono_literals;
using std::chrono::milliseconds;

// Named after the file as well: the unity build (tests/CMakeLists.txt)
// compiles it in one translation unit with other tests.
namespace partition_breaker_test {
namespace {

const policy_time t0 = policy_time{} + std::chrono::hours{1};

breaker_key key(std::string region = "West US", std::string range = "0",
                std::string collection = "aaaaAAAAAAA=") {
  return {std::move(collection), std::move(range), std::move(region)};
}

using bs = breaker_state;
using sig = breaker_signal;

/// Records `n` failures of `op`; returns the state after the last.
breaker_state fail(partition_breaker& b, const breaker_key& k, op_kind op,
                   int n, policy_time at) {
  auto s = bs::closed;
  for (int i = 0; i < n; ++i)
    s = b.record(k, op, sig::failure, {}, at);
  return s;
}

/// Opens `k` at `at` with read failures.
/// The last transition drained, failing the test (not crashing the binary)
/// when there is none.
std::optional<breaker_transition> last_transition(partition_breaker& b) {
  auto all = b.drain_transitions();
  EXPECT_FALSE(all.empty()) << "no transition recorded";
  if (all.empty()) return std::nullopt;
  return all.back();
}

void trip(partition_breaker& b, const breaker_key& k, policy_time at) {
  ASSERT_EQ(fail(b, k, op_kind::read, 10, at), bs::open);
}

/// Trips `k` at t0 and starts its probe at t0 + 5 s.
breaker_admission trip_and_probe(partition_breaker& b, const breaker_key& k) {
  trip(b, k, t0);
  auto a = b.admit(k, t0 + 5s);
  EXPECT_EQ(a.kind, admission_kind::probe);
  return a;
}

/// Admits requests for `k` at `at` until one is a half-open trial.
breaker_admission next_trial(partition_breaker& b, const breaker_key& k,
                             policy_time at) {
  breaker_admission a{admission_kind::blocked, {}};
  for (int i = 0; i < 1 << 16 && !a.allowed(); ++i)
    a = b.admit(k, at);
  EXPECT_EQ(a.kind, admission_kind::trial);
  return a;
}

// -- which outcomes count ----------------------------------------------------

TEST(BreakerCounts, Table_MatchesDocumentedRows) {
  using k = transport_failure_kind;
  struct row {
    const char* name;
    int status;
    int substatus;
    k kind;
    bool sent;
    breaker_signal signal;
  };
  const std::vector<row> rows = {
      {"503", 503, 0, k::none, true, sig::failure},
      {"503/20003 gateway read timeout", 503, 20003, k::none, true,
       sig::failure},
      {"500", 500, 0, k::none, true, sig::failure},
      {"502", 502, 0, k::none, true, sig::failure},
      {"504", 504, 0, k::none, true, sig::failure},
      {"408", 408, 0, k::none, true, sig::failure},
      {"408/21013 write barrier", 408, 21013, k::none, true, sig::answered},
      {"timeout, may have sent", 0, 0, k::timeout, true, sig::failure},
      {"timeout in connect, not sent", 0, 0, k::timeout, false, sig::no_signal},
      {"reset after sending", 0, 0, k::connection, true, sig::failure},
      {"refused / DNS, not sent", 0, 0, k::connection, false, sig::no_signal},
      {"404/1002 session", 404, 1002, k::none, true, sig::answered},
      {"404/0", 404, 0, k::none, true, sig::answered},
      {"409", 409, 0, k::none, true, sig::answered},
      {"412", 412, 0, k::none, true, sig::answered},
      {"429", 429, 0, k::none, true, sig::answered},
      {"429/3092", 429, 3092, k::none, true, sig::answered},
      {"449", 449, 0, k::none, true, sig::answered},
      {"403/3", 403, 3, k::none, true, sig::answered},
      {"410/1022", 410, 1022, k::none, true, sig::answered},
      {"501", 501, 0, k::none, true, sig::answered},
      {"505", 505, 0, k::none, true, sig::answered},
      {"200", 200, 0, k::none, true, sig::answered},
      {"304", 304, 0, k::none, true, sig::answered},
      {"HTTP response ignores the sent flag", 503, 0, k::none, false,
       sig::failure},
      {"no status at all", 0, 0, k::none, true, sig::no_signal},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(breaker_signal_of(r.status, r.substatus, r.kind, r.sent),
              r.signal);
    EXPECT_EQ(breaker_counts(r.status, r.substatus, r.kind, r.sent),
              r.signal == sig::failure);
  }
}

// -- opening -----------------------------------------------------------------

TEST(PartitionBreaker, ConsecutiveFailures_OpenOnThreshold) {
  struct row {
    op_kind op;
    int threshold;
    breaker_reason reason;
  };
  for (const auto& r :
       {row{op_kind::read, 10, breaker_reason::read_failures},
        row{op_kind::write, 5, breaker_reason::write_failures}}) {
    SCOPED_TRACE(r.threshold);
    partition_breaker b;
    auto k = key();
    for (int i = 1; i < r.threshold; ++i) {
      ASSERT_EQ(b.record(k, r.op, sig::failure, {}, t0), bs::closed) << i;
      ASSERT_FALSE(b.blocked(k, t0)) << i;
      ASSERT_EQ(b.admit(k, t0).kind, admission_kind::pass) << i;
    }
    EXPECT_EQ(b.record(k, r.op, sig::failure, {}, t0), bs::open);
    EXPECT_TRUE(b.blocked(k, t0));
    EXPECT_EQ(b.admit(k, t0).kind, admission_kind::blocked);
    auto log = b.drain_transitions();
    ASSERT_EQ(log.size(), 1u);
    EXPECT_EQ(log[0].from, bs::closed);
    EXPECT_EQ(log[0].to, bs::open);
    EXPECT_EQ(log[0].reason, r.reason);
    EXPECT_EQ(b.counters().opened, 1u);
  }
}

TEST(PartitionBreaker, AnswerBetweenFailures_ResetsCount) {
  struct row {
    op_kind op;
    int threshold;
  };
  for (const auto& r : {row{op_kind::read, 10}, row{op_kind::write, 5}}) {
    SCOPED_TRACE(r.threshold);
    partition_breaker b;
    auto k = key();
    EXPECT_EQ(fail(b, k, r.op, r.threshold - 1, t0), bs::closed);
    EXPECT_EQ(b.record(k, r.op, sig::answered, {}, t0), bs::closed);
    EXPECT_EQ(b.view(k, t0).read_failures + b.view(k, t0).write_failures, 0u);
    EXPECT_EQ(fail(b, k, r.op, r.threshold - 1, t0), bs::closed);
    EXPECT_EQ(fail(b, k, r.op, 1, t0), bs::open);
  }
}

TEST(PartitionBreaker, ReadsAndWrites_CountApart) {
  partition_breaker b;
  auto k = key();
  EXPECT_EQ(fail(b, k, op_kind::read, 9, t0), bs::closed);
  EXPECT_EQ(fail(b, k, op_kind::write, 4, t0), bs::closed);
  // A read answer resets reads only; the 5th write failure still opens.
  EXPECT_EQ(b.record(k, op_kind::read, sig::answered, {}, t0), bs::closed);
  EXPECT_EQ(b.view(k, t0).read_failures, 0u);
  EXPECT_EQ(b.view(k, t0).write_failures, 4u);
  EXPECT_EQ(fail(b, k, op_kind::write, 1, t0), bs::open);
}

TEST(PartitionBreaker, NotSentFailures_NeitherCountNorReset) {
  partition_breaker b;
  auto k = key();
  for (int i = 0; i < 50; ++i)
    b.record(k, op_kind::read, sig::no_signal, {}, t0);
  EXPECT_EQ(b.size(), 0u);
  EXPECT_EQ(fail(b, k, op_kind::read, 9, t0), bs::closed);
  auto refused =
      breaker_signal_of(0, 0, transport_failure_kind::connection, false);
  for (int i = 0; i < 50; ++i)
    b.record(k, op_kind::read, refused, {}, t0);
  EXPECT_EQ(b.view(k, t0).read_failures, 9u);
  EXPECT_EQ(fail(b, k, op_kind::read, 1, t0), bs::open);
}

TEST(PartitionBreaker, HedgeWins_OpenOnFifth) {
  partition_breaker b;
  auto k = key();
  for (int i = 1; i < 5; ++i)
    ASSERT_EQ(b.record_hedge_win(k, {}, t0), bs::closed) << i;
  EXPECT_EQ(b.record_hedge_win(k, {}, t0), bs::open);
  auto log = b.drain_transitions();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].reason, breaker_reason::hedge_wins);
}

TEST(PartitionBreaker, PrimaryFinal_ResetsHedgeWinsButAnswerDoesNot) {
  partition_breaker b;
  auto k = key();
  for (int i = 0; i < 4; ++i)
    b.record_hedge_win(k, {}, t0);
  b.record_primary_final(k, t0);
  EXPECT_EQ(b.size(), 0u) << "nothing left to track";
  for (int i = 0; i < 4; ++i)
    b.record_hedge_win(k, {}, t0);
  EXPECT_EQ(b.record(k, op_kind::read, sig::answered, {}, t0), bs::closed);
  EXPECT_EQ(b.view(k, t0).hedge_wins, 4u);
  EXPECT_EQ(b.record_hedge_win(k, {}, t0), bs::open);
}

TEST(PartitionBreaker, OpenKey_OtherRangesRegionsCollectionsUnaffected) {
  partition_breaker b;
  trip(b, key("West US", "0"), t0);
  EXPECT_TRUE(b.blocked(key("West US", "0"), t0));
  EXPECT_TRUE(b.blocked(key("west us", "0"), t0)) << "region ignores case";
  EXPECT_FALSE(b.blocked(key("East US", "0"), t0));
  EXPECT_FALSE(b.blocked(key("West US", "1"), t0));
  EXPECT_FALSE(b.blocked(key("West US", "0", "bbbbBBBBBBB="), t0));
  EXPECT_EQ(b.admit(key("East US", "0"), t0).kind, admission_kind::pass);
  EXPECT_EQ(b.admit(key("West US", "1"), t0).kind, admission_kind::pass);
}

// -- failback ----------------------------------------------------------------

TEST(PartitionBreaker, FullCycle_ClosedOpenProbeHalfOpenClosed_ExactTimes) {
  partition_breaker b;
  auto k = key();
  // Ten read failures 100 ms apart: the 10th, at 900 ms, opens for 5 s.
  for (int i = 0; i < 10; ++i)
    b.record(k, op_kind::read, sig::failure, {}, t0 + i * 100ms);
  EXPECT_EQ(b.view(k, t0).open_until, t0 + 5900ms);
  EXPECT_TRUE(b.blocked(k, t0 + 5899ms));
  EXPECT_EQ(b.admit(k, t0 + 5899ms).kind, admission_kind::blocked);
  EXPECT_FALSE(b.blocked(k, t0 + 5900ms)) << "the probe may go";
  auto probe = b.admit(k, t0 + 5900ms);
  ASSERT_EQ(probe.kind, admission_kind::probe);
  EXPECT_EQ(b.view(k, t0 + 5900ms).probe_deadline, t0 + 15900ms);
  EXPECT_EQ(b.admit(k, t0 + 5901ms).kind, admission_kind::blocked)
      << "one probe only";
  EXPECT_EQ(b.record(k, op_kind::read, sig::answered, probe.ticket, t0 + 6s),
            bs::half_open);
  // Half-open: one in 8, then 4, then 2; the third answer closes.
  policy_time at = t0 + 7s;
  for (uint32_t one_in : {8u, 4u, 2u}) {
    SCOPED_TRACE(one_in);
    EXPECT_EQ(b.view(k, at).one_in, one_in);
    for (uint32_t i = 1; i < one_in; ++i) {
      EXPECT_TRUE(b.blocked(k, at));
      ASSERT_EQ(b.admit(k, at).kind, admission_kind::blocked) << i;
    }
    EXPECT_FALSE(b.blocked(k, at));
    auto trial = b.admit(k, at);
    ASSERT_EQ(trial.kind, admission_kind::trial);
    at += 1s;
    b.record(k, op_kind::read, sig::answered, trial.ticket, at);
  }
  EXPECT_EQ(b.view(k, at).state, bs::closed);
  EXPECT_EQ(b.size(), 0u);
  EXPECT_EQ(b.admit(k, at).kind, admission_kind::pass);

  auto log = b.drain_transitions();
  using r = breaker_reason;
  struct want {
    breaker_state from, to;
    breaker_reason reason;
    policy_time at;
  };
  const std::vector<want> expected = {
      {bs::closed, bs::open, r::read_failures, t0 + 900ms},
      {bs::open, bs::probing, r::probe_started, t0 + 5900ms},
      {bs::probing, bs::half_open, r::probe_answered, t0 + 6s},
      {bs::half_open, bs::closed, r::recovered, t0 + 10s},
  };
  ASSERT_EQ(log.size(), expected.size());
  for (size_t i = 0; i < log.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(log[i].key, k);
    EXPECT_EQ(log[i].from, expected[i].from);
    EXPECT_EQ(log[i].to, expected[i].to);
    EXPECT_EQ(log[i].reason, expected[i].reason);
    EXPECT_EQ(log[i].at, expected[i].at);
  }
  EXPECT_TRUE(b.drain_transitions().empty());
  const auto& c = b.counters();
  EXPECT_EQ(c.opened, 1u);
  EXPECT_EQ(c.probes_started, 1u);
  EXPECT_EQ(c.probe_successes, 1u);
  EXPECT_EQ(c.closed, 1u);
  EXPECT_EQ(c.reopened, 0u);
  // 1 before the probe, 1 beside it, then 7 + 3 + 1 in half-open.
  EXPECT_EQ(c.blocked, 13u);
}

TEST(PartitionBreaker, TimeAlone_NeverCloses) {
  partition_breaker b;
  auto k = key();
  trip(b, k, t0);
  // Nobody asks for a day: still open, not closed.
  EXPECT_EQ(b.view(k, t0 + 24h).state, bs::open);
  // Asking every hour for a day only ever yields probes, and the
  // unanswered probes fail; no request passes as in a closed state.
  for (int h = 1; h <= 24; ++h) {
    auto at = t0 + h * 1h;
    for (int i = 0; i < 3; ++i) {
      auto a = b.admit(k, at + i * 1s);
      EXPECT_NE(a.kind, admission_kind::pass);
      EXPECT_NE(a.kind, admission_kind::trial);
    }
    EXPECT_NE(b.view(k, at).state, bs::closed);
    EXPECT_NE(b.view(k, at).state, bs::half_open);
  }
  EXPECT_EQ(b.counters().probe_successes, 0u);
  EXPECT_EQ(b.counters().closed, 0u);
}

TEST(PartitionBreaker, StaleAnswers_DoNotClose) {
  partition_breaker b;
  auto k = key();
  auto before = b.admit(k, t0).ticket; // sent while closed
  trip(b, k, t0);
  // An answer from a request let through before the opening, while open
  // and while the probe is out, is no probe.
  EXPECT_EQ(b.record(k, op_kind::read, sig::answered, before, t0 + 1s),
            bs::open);
  auto probe = b.admit(k, t0 + 5s);
  EXPECT_EQ(b.record(k, op_kind::read, sig::answered, before, t0 + 6s),
            bs::probing);
  EXPECT_EQ(b.record(k, op_kind::read, sig::answered, {}, t0 + 6s),
            bs::probing);
  EXPECT_EQ(b.record(k, op_kind::read, sig::failure, before, t0 + 6s),
            bs::probing)
      << "an old timeout does not fail the probe either";
  EXPECT_EQ(b.counters().stale_outcomes, 4u);
  EXPECT_EQ(b.record(k, op_kind::read, sig::answered, probe.ticket, t0 + 7s),
            bs::half_open);
}

TEST(PartitionBreaker, ProbeFailure_DoublesOpenPeriodUpToCap) {
  partition_breaker b;
  auto k = key();
  trip(b, k, t0);
  policy_time at = t0;
  milliseconds period = 5s;
  const std::vector<milliseconds> next = {10s,  20s,  40s,  80s,
                                          160s, 300s, 300s, 300s};
  for (auto want : next) {
    SCOPED_TRACE(want.count());
    at += period;
    EXPECT_TRUE(b.blocked(k, at - 1ms));
    auto probe = b.admit(k, at);
    ASSERT_EQ(probe.kind, admission_kind::probe);
    at += 1s;
    EXPECT_EQ(b.record(k, op_kind::read, sig::failure, probe.ticket, at),
              bs::open);
    auto v = b.view(k, at);
    EXPECT_EQ(v.open_period, want);
    EXPECT_EQ(v.open_until, at + want);
    period = want;
  }
  EXPECT_EQ(b.counters().probe_failures, next.size());
  EXPECT_EQ(b.counters().reopened, next.size());
}

TEST(PartitionBreaker, RecoveryAfterProbeFailure_PeriodStartsOver) {
  partition_breaker b;
  auto k = key();
  auto probe = trip_and_probe(b, k);
  b.record(k, op_kind::read, sig::failure, probe.ticket, t0 + 6s); // 10 s
  probe = b.admit(k, t0 + 16s);
  ASSERT_EQ(probe.kind, admission_kind::probe);
  b.record(k, op_kind::read, sig::answered, probe.ticket, t0 + 17s);
  for (int i = 0; i < 3; ++i) {
    auto trial = next_trial(b, k, t0 + 18s);
    b.record(k, op_kind::read, sig::answered, trial.ticket, t0 + 18s);
  }
  EXPECT_EQ(b.view(k, t0 + 18s).state, bs::closed);
  trip(b, k, t0 + 20s);
  EXPECT_EQ(b.view(k, t0 + 20s).open_period, 5s) << "not 20 s";
  EXPECT_EQ(b.view(k, t0 + 20s).open_until, t0 + 25s);
}

TEST(PartitionBreaker, NoHalfOpenSteps_ProbeAnswerCloses) {
  partition_breaker_options o;
  o.half_open_steps = 0;
  partition_breaker b(o);
  auto k = key();
  auto probe = trip_and_probe(b, k);
  EXPECT_EQ(b.record(k, op_kind::read, sig::answered, probe.ticket, t0 + 6s),
            bs::closed);
  EXPECT_EQ(b.size(), 0u);
  EXPECT_EQ(b.counters().closed, 1u);
  EXPECT_EQ(last_transition(b).value_or(breaker_transition{}).to, bs::closed);
}

TEST(PartitionBreaker, LostProbe_TimesOutAtDeadline) {
  partition_breaker b;
  auto k = key();
  auto probe = trip_and_probe(b, k); // at t0 + 5 s, deadline t0 + 15 s
  EXPECT_EQ(b.view(k, t0 + 14999ms).state, bs::probing);
  EXPECT_TRUE(b.blocked(k, t0 + 14999ms));
  // First touched 5 s after the deadline: failed as of the deadline.
  auto v = b.view(k, t0 + 20s);
  EXPECT_EQ(v.state, bs::open);
  EXPECT_EQ(v.open_until, t0 + 25s);
  EXPECT_EQ(b.admit(k, t0 + 20s).kind, admission_kind::blocked);
  // The answer arriving after the deadline no longer counts.
  EXPECT_EQ(b.record(k, op_kind::read, sig::answered, probe.ticket, t0 + 21s),
            bs::open);
  auto log = b.drain_transitions();
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[2].reason, breaker_reason::probe_timed_out);
  EXPECT_EQ(log[2].at, t0 + 15s);
  EXPECT_EQ(b.counters().probe_timeouts, 1u);
  EXPECT_EQ(b.counters().probe_failures, 1u);
  // The next probe goes at t0 + 25 s.
  EXPECT_EQ(b.admit(k, t0 + 25s).kind, admission_kind::probe);
}

TEST(PartitionBreaker, LostProbe_AnswerAtDeadline_TooLate) {
  partition_breaker b;
  auto k = key();
  auto probe = trip_and_probe(b, k);
  EXPECT_EQ(b.record(k, op_kind::read, sig::answered, probe.ticket, t0 + 15s),
            bs::open);
  probe = b.admit(k, t0 + 25s);
  EXPECT_EQ(
      b.record(k, op_kind::read, sig::answered, probe.ticket, t0 + 34999ms),
      bs::half_open);
}

TEST(PartitionBreaker, ProbeOutcomes_Table) {
  using r = breaker_reason;
  struct row {
    const char* name;
    breaker_signal signal; // unused when hedge is true
    bool hedge;
    breaker_state after;
    breaker_reason reason;
    milliseconds period;
  };
  const std::vector<row> rows = {
      {"answered", sig::answered, false, bs::half_open, r::probe_answered, 5s},
      {"failed", sig::failure, false, bs::open, r::probe_failed, 10s},
      {"not sent", sig::no_signal, false, bs::open, r::probe_not_sent, 5s},
      {"lost to a hedge", sig::failure, true, bs::open, r::probe_lost_to_hedge,
       10s},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    partition_breaker b;
    auto k = key();
    auto probe = trip_and_probe(b, k);
    auto at = t0 + 6s;
    auto after = row.hedge
                     ? b.record_hedge_win(k, probe.ticket, at)
                     : b.record(k, op_kind::read, row.signal, probe.ticket, at);
    EXPECT_EQ(after, row.after);
    EXPECT_EQ(last_transition(b).value_or(breaker_transition{}).reason,
              row.reason);
    auto v = b.view(k, at);
    EXPECT_EQ(v.open_period, row.period);
    if (after == bs::open) {
      EXPECT_EQ(v.open_until, at + row.period);
    }
  }
}

TEST(PartitionBreaker, HalfOpen_FailureReopensDoubled_StaleIgnored) {
  partition_breaker b;
  auto k = key();
  auto probe = trip_and_probe(b, k);
  b.record(k, op_kind::read, sig::answered, probe.ticket, t0 + 6s);
  // The probe's own ticket again (a duplicate report) is stale now.
  EXPECT_EQ(b.record(k, op_kind::read, sig::failure, probe.ticket, t0 + 6s),
            bs::half_open);
  EXPECT_EQ(b.counters().stale_outcomes, 1u);
  // A current failure (ticket 0 = unknown counts as current) reopens,
  // whatever the operation kind.
  EXPECT_EQ(b.record(k, op_kind::write, sig::failure, {}, t0 + 7s), bs::open);
  auto v = b.view(k, t0 + 7s);
  EXPECT_EQ(v.open_period, 10s);
  EXPECT_EQ(v.open_until, t0 + 17s);
  EXPECT_EQ(last_transition(b).value_or(breaker_transition{}).reason,
            breaker_reason::half_open_failure);
  EXPECT_EQ(b.counters().reopened, 1u);
}

TEST(PartitionBreaker, HalfOpen_TrialFailureReopens) {
  partition_breaker b;
  auto k = key();
  b.record(k, op_kind::read, sig::answered, trip_and_probe(b, k).ticket,
           t0 + 6s);
  auto trial = next_trial(b, k, t0 + 7s);
  EXPECT_EQ(b.record(k, op_kind::read, sig::failure, trial.ticket, t0 + 8s),
            bs::open);
  EXPECT_EQ(b.view(k, t0 + 8s).open_until, t0 + 18s);
}

TEST(PartitionBreaker, HalfOpen_HedgeWinsReopen) {
  partition_breaker b;
  auto k = key();
  b.record(k, op_kind::read, sig::answered, trip_and_probe(b, k).ticket,
           t0 + 6s);
  for (int i = 1; i < 5; ++i)
    ASSERT_EQ(b.record_hedge_win(k, {}, t0 + 7s), bs::half_open);
  EXPECT_EQ(b.record_hedge_win(k, {}, t0 + 7s), bs::open);
  EXPECT_EQ(b.view(k, t0 + 7s).open_period, 10s);
  EXPECT_EQ(last_transition(b).value_or(breaker_transition{}).reason,
            breaker_reason::hedge_wins);
}

// -- choosing among regions --------------------------------------------------

TEST(PartitionBreaker, Choose_SkipsBlocked_FallsBackToFirst) {
  partition_breaker b;
  const std::vector<std::string> regions = {"West US", "East US", "North"};
  trip(b, key("West US"), t0);
  auto c = b.choose("aaaaAAAAAAA=", "0", regions, t0 + 1s);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->index, 1u);
  EXPECT_EQ(c->skipped, 1u);
  EXPECT_EQ(c->admission.kind, admission_kind::pass);
  trip(b, key("East US"), t0);
  trip(b, key("North"), t0);
  c = b.choose("aaaaAAAAAAA=", "0", regions, t0 + 1s);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->index, 0u);
  EXPECT_EQ(c->skipped, 3u);
  EXPECT_EQ(c->admission.kind, admission_kind::fallback);
  EXPECT_EQ(b.counters().fallbacks, 1u);
  // Once West's period is over, the request is its probe.
  c = b.choose("aaaaAAAAAAA=", "0", regions, t0 + 5s);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->index, 0u);
  EXPECT_EQ(c->admission.kind, admission_kind::probe);
  // Another range is untouched.
  c = b.choose("aaaaAAAAAAA=", "1", regions, t0 + 1s);
  EXPECT_EQ(c->index, 0u);
  EXPECT_EQ(c->admission.kind, admission_kind::pass);
  EXPECT_FALSE(b.choose("aaaaAAAAAAA=", "0", {}, t0));
}

// -- memory ------------------------------------------------------------------

TEST(PartitionBreaker, Lru_BoundedAndIdleEntriesNotHeld) {
  partition_breaker_options o;
  o.capacity = 3;
  partition_breaker b(o);
  // Answers and not-sent failures on unknown keys hold nothing.
  b.record(key("A"), op_kind::read, sig::answered, {}, t0);
  b.record(key("A"), op_kind::read, sig::no_signal, {}, t0);
  b.record_primary_final(key("A"), t0);
  EXPECT_EQ(b.size(), 0u);
  for (auto r : {"A", "B", "C"})
    b.record(key(r), op_kind::read, sig::failure, {}, t0);
  b.record(key("A"), op_kind::read, sig::failure, {},
           t0); // A is now the most recent
  b.record(key("D"), op_kind::read, sig::failure, {}, t0);
  EXPECT_EQ(b.size(), 3u);
  EXPECT_FALSE(b.view(key("B"), t0).tracked) << "least recently used";
  EXPECT_EQ(b.view(key("A"), t0).read_failures, 2u);
  EXPECT_EQ(b.counters().evictions, 1u);
  // An answer drops a closed entry with nothing left to count.
  b.record(key("A"), op_kind::read, sig::answered, {}, t0);
  EXPECT_EQ(b.size(), 2u);
}

TEST(PartitionBreaker, Lru_EvictsClosedFirst_OpenOnlyWhenNothingElse) {
  partition_breaker_options o;
  o.capacity = 2;
  o.read_failure_threshold = 1;
  partition_breaker b(o);
  b.record(key("A"), op_kind::read, sig::failure, {}, t0); // open
  b.record_hedge_win(key("B"), {}, t0); // closed, 1 hedge win
  b.record_hedge_win(key("C"), {}, t0); // evicts B, not the older A
  EXPECT_TRUE(b.blocked(key("A"), t0));
  EXPECT_FALSE(b.view(key("B"), t0).tracked);
  b.drain_transitions();
  b.record_hedge_win(key("D"), {}, t0 + 1s); // evicts C (closed)
  b.record(key("E"), op_kind::read, sig::failure, {}, t0 + 2s);
  // E's insertion evicted D (closed) before E opened; E and A are open.
  EXPECT_FALSE(b.view(key("D"), t0).tracked);
  b.record(key("F"), op_kind::read, sig::failure, {}, t0 + 3s);
  // Only open entries were left: the least recently used (A) goes.
  EXPECT_FALSE(b.view(key("A"), t0 + 3s).tracked);
  EXPECT_FALSE(b.blocked(key("A"), t0 + 3s));
  EXPECT_TRUE(b.blocked(key("E"), t0 + 3s));
  EXPECT_EQ(b.counters().evictions, 4u);
  EXPECT_EQ(b.counters().evicted_tripped, 1u);
  auto log = b.drain_transitions();
  ASSERT_FALSE(log.empty());
  bool seen = false;
  for (const auto& t : log)
    if (t.reason == breaker_reason::evicted) {
      seen = true;
      EXPECT_EQ(t.key, key("A"));
      EXPECT_EQ(t.from, bs::open);
      EXPECT_EQ(t.to, bs::closed);
      EXPECT_EQ(t.at, t0 + 3s);
    }
  EXPECT_TRUE(seen);
}

TEST(PartitionBreaker, ForgetRange_DropsAllRegionsOfThatRangeOnly) {
  partition_breaker b;
  trip(b, key("West US", "0"), t0);
  fail(b, key("East US", "0"), op_kind::read, 3, t0);
  trip(b, key("West US", "1"), t0);
  b.drain_transitions();
  EXPECT_EQ(b.forget_range("aaaaAAAAAAA=", "0", t0 + 1s), 2u);
  EXPECT_FALSE(b.blocked(key("West US", "0"), t0 + 1s));
  EXPECT_FALSE(b.view(key("East US", "0"), t0 + 1s).tracked);
  EXPECT_TRUE(b.blocked(key("West US", "1"), t0 + 1s));
  auto log = b.drain_transitions();
  ASSERT_EQ(log.size(), 1u) << "only the open entry is a transition";
  EXPECT_EQ(log[0].reason, breaker_reason::forgotten);
  EXPECT_EQ(log[0].key, key("West US", "0"));
  EXPECT_EQ(b.counters().forgotten, 2u);
  EXPECT_EQ(b.forget_range("aaaaAAAAAAA=", "0", t0 + 1s), 0u);
}

TEST(PartitionBreaker, TransitionLog_BoundedOldestDropped) {
  partition_breaker_options o;
  o.transition_log_capacity = 2;
  partition_breaker b(o);
  auto probe = trip_and_probe(b, key()); // 2 transitions
  b.record(key(), op_kind::read, sig::failure, probe.ticket, t0 + 6s); // 3rd
  auto log = b.drain_transitions();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0].reason, breaker_reason::probe_started);
  EXPECT_EQ(log[1].reason, breaker_reason::probe_failed);
  EXPECT_EQ(b.counters().transitions_dropped, 1u);
}

TEST(PartitionBreaker, ToString_EveryValueNamed) {
  using r = breaker_reason;
  const std::vector<std::pair<breaker_reason, std::string>> reasons = {
      {r::read_failures, "read_failures"},
      {r::write_failures, "write_failures"},
      {r::hedge_wins, "hedge_wins"},
      {r::probe_started, "probe_started"},
      {r::probe_answered, "probe_answered"},
      {r::probe_failed, "probe_failed"},
      {r::probe_timed_out, "probe_timed_out"},
      {r::probe_lost_to_hedge, "probe_lost_to_hedge"},
      {r::probe_not_sent, "probe_not_sent"},
      {r::half_open_failure, "half_open_failure"},
      {r::recovered, "recovered"},
      {r::evicted, "evicted"},
      {r::forgotten, "forgotten"},
  };
  for (const auto& [reason, name] : reasons)
    EXPECT_EQ(to_string(reason), name);
  EXPECT_EQ(std::string{to_string(bs::closed)}, "closed");
  EXPECT_EQ(std::string{to_string(bs::open)}, "open");
  EXPECT_EQ(std::string{to_string(bs::probing)}, "probing");
  EXPECT_EQ(std::string{to_string(bs::half_open)}, "half_open");
}

// -- options -----------------------------------------------------------------

TEST(PartitionBreakerOptions, Validate_Table_NamesTheField) {
  using o_t = partition_breaker_options;
  struct row {
    const char* field;
    void (*edit)(o_t&);
  };
  const std::vector<row> rows = {
      {"read_failure_threshold", [](o_t& o) { o.read_failure_threshold = 0; }},
      {"write_failure_threshold",
       [](o_t& o) { o.write_failure_threshold = 0; }},
      {"hedge_win_threshold", [](o_t& o) { o.hedge_win_threshold = 0; }},
      {"open_period", [](o_t& o) { o.open_period = 0ms; }},
      {"open_period", [](o_t& o) { o.open_period = -5ms; }},
      {"max_open_period", [](o_t& o) { o.max_open_period = 4999ms; }},
      {"max_open_period", [](o_t& o) { o.max_open_period = 25h; }},
      {"probe_timeout", [](o_t& o) { o.probe_timeout = 0ms; }},
      {"probe_timeout", [](o_t& o) { o.probe_timeout = 2h; }},
      {"half_open_steps", [](o_t& o) { o.half_open_steps = 17; }},
      {"capacity", [](o_t& o) { o.capacity = 0; }},
      {"transition_log_capacity",
       [](o_t& o) { o.transition_log_capacity = 0; }},
  };
  EXPECT_FALSE(o_t{}.validate());
  for (const auto& r : rows) {
    SCOPED_TRACE(r.field);
    o_t o;
    r.edit(o);
    auto p = o.validate();
    ASSERT_TRUE(p);
    EXPECT_EQ(p->what.rfind(std::string{r.field} + ":", 0), 0u) << p->what;
    EXPECT_THROW(partition_breaker{o}, std::invalid_argument);
  }
  // The edges that are fine.
  o_t edge;
  edge.read_failure_threshold = 1;
  edge.max_open_period = edge.open_period;
  edge.half_open_steps = 16;
  edge.capacity = 1;
  EXPECT_FALSE(edge.validate());
}

TEST(PartitionBreakerOptions, Defaults_MatchDocumentedValues) {
  partition_breaker_options o;
  EXPECT_EQ(o.read_failure_threshold, 10u);
  EXPECT_EQ(o.write_failure_threshold, 5u);
  EXPECT_EQ(o.hedge_win_threshold, 5u);
  EXPECT_EQ(o.open_period, 5s);
  EXPECT_EQ(o.max_open_period, 300s);
  EXPECT_EQ(o.probe_timeout, 10s);
  EXPECT_EQ(o.half_open_steps, 3u);
  EXPECT_EQ(o.capacity, 10000u);
}

} // namespace
} // namespace partition_breaker_test
