// The metadata path's pure decisions: the clearing-session decorator (.NET
// ClearingSessionContainerClientRetryPolicy), the failed attempt to retry
// signal mapping, and the lookup gates of the collection cache and the
// partition-range cache.

#include "georoute/actors/policy/metadata_rules.hpp"
#include "georoute/actors/policy/range_lookup.hpp"

#include <gtest/gtest.h>
#include <ostream>

namespace georoute {

// Readable names in failure messages (found by ADL).
void PrintTo(collection_lookup x, std::ostream* os) {
  static const char* names[] = {"join", "hit", "refetch_skipped", "refresh",
                                "miss"};
  *os << names[static_cast<int>(x)];
}

void PrintTo(pkrange_lookup x, std::ostream* os) {
  static const char* names[] = {"hit", "refresh_skipped", "load"};
  *os << names[static_cast<int>(x)];
}

void PrintTo(range_verdict x, std::ostream* os) {
  static const char* names[] = {"found", "refresh_map", "gone",
                                "no_range_for_epk"};
  *os << names[static_cast<int>(x)];
}

} // namespace georoute

// Named after the file as well: the unity build (tests/CMakeLists.txt)
// compiles it in one translation unit with other tests.
namespace metadata_rules_test {
namespace {

using namespace georoute;
using sig = failure_signal::kind;

// -- clearing-session decorator ---------------------------------------------

TEST(ClearingSession, Table) {
  struct row {
    const char* name;
    bool retries, name_based;
    int status, substatus;
    bool clears;
  };
  const row rows[] = {
      // The one case that clears: given up, by name, 404/1002.
      {"NoRetry_Name_404_1002_Clears", false, true, 404, 1002, true},
      {"NoRetry_Name_404_0_Keeps", false, true, 404, 0, false},
      {"NoRetry_Name_503_Keeps", false, true, 503, 0, false},
      {"NoRetry_Name_410_1002_Keeps", false, true, 410, 1002, false},
      {"NoRetry_Rid_404_1002_Keeps", false, false, 404, 1002, false},
      {"NoRetry_Rid_404_0_Keeps", false, false, 404, 0, false},
      {"NoRetry_Rid_503_Keeps", false, false, 503, 0, false},
      {"NoRetry_Rid_410_1002_Keeps", false, false, 410, 1002, false},
      // A retry is never touched: the decorator only acts on giving up.
      {"Retry_Name_404_1002_Keeps", true, true, 404, 1002, false},
      {"Retry_Name_404_0_Keeps", true, true, 404, 0, false},
      {"Retry_Name_503_Keeps", true, true, 503, 0, false},
      {"Retry_Name_410_1002_Keeps", true, true, 410, 1002, false},
      {"Retry_Rid_404_1002_Keeps", true, false, 404, 1002, false},
      {"Retry_Rid_404_0_Keeps", true, false, 404, 0, false},
      {"Retry_Rid_503_Keeps", true, false, 503, 0, false},
      {"Retry_Rid_410_1002_Keeps", true, false, 410, 1002, false},
  };
  for (const auto& r : rows)
    EXPECT_EQ(
        clearing_session_clears(r.retries, r.name_based, r.status, r.substatus),
        r.clears)
        << r.name;
}

// -- failed attempt to retry signal -----------------------------------------

struct signal_row {
  const char* name;
  attempt_failure failure;
  ladder_decision ladder;
  failure_signal expected;
};

ladder_decision silent() {
  ladder_decision d;
  d.region_silent = true;
  return d;
}

void expect_signal(const failure_signal& got, const failure_signal& want,
                   const char* name) {
  EXPECT_EQ(got.what, want.what) << name;
  EXPECT_EQ(got.status, want.status) << name;
  EXPECT_EQ(got.substatus, want.substatus) << name;
  EXPECT_EQ(got.retry_after_ms, want.retry_after_ms) << name;
  EXPECT_EQ(got.refused, want.refused) << name;
}

TEST(SignalFor, Table) {
  // Of the transport's failure kinds only a refusal reaches
  // attempt_failure (`refused`); reset, dns, tls, protocol and
  // body_too_large are `transport_failure` without `timed_out`, so one row
  // covers them, and one more with `request_sent`.
  const signal_row rows[] = {
      {"Timeout_RegionSilent_Connection",
       {true, true},
       silent(),
       failure_signal::connection()},
      {"Timeout_LadderNoTimeoutRetry_TimedOut",
       {true, true},
       {},
       failure_signal::timed_out()},
      {"TimeoutWithoutTransportFlag_RegionSilent_Connection",
       {false, true},
       silent(),
       failure_signal::connection()},
      {"TimeoutWithoutTransportFlag_NotSilent_TimedOut",
       {false, true},
       {},
       failure_signal::timed_out()},
      {"TransportFailure_NotSilent_Connection",
       {true, false},
       {},
       failure_signal::connection()},
      {"Refused_NotSilent_ConnectionRefused",
       {true, false, 0, 0, -1, false, true},
       {},
       failure_signal::connection(true)},
      {"Refused_Timeout_TimedOutWins",
       {true, true, 0, 0, -1, false, true},
       {},
       failure_signal::timed_out()},
      {"TransportFailure_RequestSent_LostAfterSend",
       {true, false, 0, 0, -1, true},
       {},
       failure_signal::lost_after_send()},
      {"Timeout_RequestSent_StillTimedOut",
       {true, true, 0, 0, -1, true},
       {},
       failure_signal::timed_out()},
      {"Timeout_RequestSentRegionSilent_Connection",
       {true, true, 0, 0, -1, true},
       silent(),
       failure_signal::connection()},
      {"TransportFailure_SilentFlag_Connection",
       {true, false},
       silent(),
       failure_signal::connection()},
      {"TransportFailureWithStatus_Any_ConnectionDropsStatus",
       {true, false, 503, 3, 700},
       {},
       failure_signal::connection()},
      {"Http404_1002_NotSilent_HttpWithSubstatus",
       {false, false, 404, 1002},
       {},
       failure_signal::http(404, 1002)},
      {"Http429_RetryAfter_HttpWithRetryAfter",
       {false, false, 429, 3200, 1500},
       {},
       failure_signal::http(429, 3200, 1500)},
      {"Http408_LadderGaveUp_Http408",
       {false, false, 408},
       {},
       failure_signal::http(408)},
      {"Http503_SilentFlag_HttpNotConnection",
       {false, false, 503},
       silent(),
       failure_signal::http(503)},
  };
  for (const auto& r : rows)
    expect_signal(signal_for(r.failure, r.ladder), r.expected, r.name);
}

// The mapping as the retry actor chains it: decide_ladder's answer on the
// attempt that made the ladder give up, then signal_for.
TEST(SignalFor, AfterDecideLadder_Table) {
  const timeout_ladders l;
  struct row {
    const char* name;
    request_kind kind;
    size_t step;
    attempt_failure failure;
    sig expected;
  };
  const row rows[] = {
      {"MetadataRead_TimeoutLastStep_Connection",
       request_kind::metadata_read,
       2,
       {true, true},
       sig::connection_failure},
      {"AccountRead_TimeoutLastStep_Connection",
       request_kind::account_read,
       2,
       {true, true},
       sig::connection_failure},
      {"DocumentRead_TimeoutLastStep_Connection",
       request_kind::document_read,
       2,
       {true, true},
       sig::connection_failure},
      {"Write_TimeoutStep0_TimedOut",
       request_kind::write,
       0,
       {true, true},
       sig::timeout},
      {"Probe_TimeoutStep0_TimedOut",
       request_kind::probe,
       0,
       {true, true},
       sig::timeout},
      {"MetadataRead_408LastStep_Http",
       request_kind::metadata_read,
       2,
       {false, false, 408},
       sig::http_status},
      {"Write_Refused_Connection",
       request_kind::write,
       0,
       {true, false},
       sig::connection_failure},
  };
  for (const auto& r : rows) {
    auto ladder = decide_ladder(choose_ladder(l, r.kind), r.step,
                                r.failure.timed_out, r.failure.status);
    ASSERT_FALSE(ladder.climb) << r.name << ": the ladder must give up";
    EXPECT_EQ(signal_for(r.failure, ladder).what, r.expected) << r.name;
  }
}

// -- collection cache -------------------------------------------------------

TEST(CollectionLookup, Table) {
  using cl = collection_lookup;
  struct row {
    const char* name;
    bool in_flight, cached, force;
    const char* cached_rid;
    const char* obsolete_rid;
    cl expected;
  };
  const row rows[] = {
      {"InFlight_NotCached_Join", true, false, false, "", "", cl::join},
      {"InFlight_Cached_Join", true, true, false, "A", "", cl::join},
      {"InFlight_ForcedSameRid_Join", true, true, true, "A", "A", cl::join},
      {"InFlight_ForcedNoCache_Join", true, false, true, "", "A", cl::join},
      {"Cached_NotForced_Hit", false, true, false, "A", "", cl::hit},
      {"Cached_NotForcedOtherObsoleteRid_Hit", false, true, false, "A", "B",
       cl::hit},
      {"Cached_ForcedNoObsoleteRid_Refresh", false, true, true, "A", "",
       cl::refresh},
      {"Cached_ForcedObsoleteRidIsCached_Refresh", false, true, true, "A", "A",
       cl::refresh},
      {"Cached_ForcedObsoleteRidGone_RefetchSkipped", false, true, true, "A",
       "B", cl::refetch_skipped},
      {"NotCached_NotForced_Miss", false, false, false, "", "", cl::miss},
      {"NotCached_Forced_Miss", false, false, true, "", "", cl::miss},
      {"NotCached_ForcedObsoleteRid_Miss", false, false, true, "", "B",
       cl::miss},
  };
  for (const auto& r : rows)
    EXPECT_EQ(decide_collection_lookup(r.in_flight, r.cached, r.force,
                                       r.cached_rid, r.obsolete_rid),
              r.expected)
        << r.name;
}

TEST(RidMismatch, Table) {
  struct row {
    const char* name;
    const char* asked;
    const char* answered;
    bool mismatch;
  };
  const row rows[] = {
      {"SameRid_Answered_Matches", "q5Q3AKO7ZVo=", "q5Q3AKO7ZVo=", false},
      {"OtherRid_Answered_Mismatch", "q5Q3AKO7ZVo=", "q5Q3AJ9EpCs=", true},
      {"EmptyRid_Answered_Mismatch", "q5Q3AKO7ZVo=", "", true},
      // Rids are base64: case matters.
      {"RidOtherCase_Answered_Mismatch", "q5Q3AKO7ZVo=", "Q5Q3AKO7ZVO=", true},
  };
  for (const auto& r : rows)
    EXPECT_EQ(rid_mismatch(r.asked, r.answered), r.mismatch) << r.name;
}

// -- partition-range cache --------------------------------------------------

TEST(PkrangeLookup, Table) {
  using pl = pkrange_lookup;
  struct row {
    const char* name;
    bool has_map;
    const char* map_etag;
    const char* known_etag;
    pl expected;
  };
  const row rows[] = {
      {"NoMap_NoKnownEtag_Load", false, "", "", pl::load},
      {"NoMap_KnownEtag_Load", false, "", "\"7\"", pl::load},
      {"Map_NoKnownEtag_Hit", true, "\"7\"", "", pl::hit},
      {"Map_KnownEtagIsCurrent_Load", true, "\"7\"", "\"7\"", pl::load},
      {"Map_KnownEtagOlder_RefreshSkipped", true, "\"9\"", "\"7\"",
       pl::refresh_skipped},
      {"MapWithoutEtag_KnownEtag_RefreshSkipped", true, "", "\"7\"",
       pl::refresh_skipped},
  };
  for (const auto& r : rows)
    EXPECT_EQ(decide_pkrange_lookup(r.has_map, r.map_etag, r.known_etag),
              r.expected)
        << r.name;
}

TEST(OverlapLookup, Table) {
  using pl = pkrange_lookup;
  struct row {
    const char* name;
    bool has_map, force;
    pl expected;
  };
  const row rows[] = {
      {"Map_NotForced_Hit", true, false, pl::hit},
      {"Map_Forced_Load", true, true, pl::load},
      {"NoMap_NotForced_Load", false, false, pl::load},
      {"NoMap_Forced_Load", false, true, pl::load},
  };
  for (const auto& r : rows)
    EXPECT_EQ(decide_overlap_lookup(r.has_map, r.force), r.expected) << r.name;
}

partition_key_range range_of(std::string id, std::string min, std::string max,
                             std::vector<std::string> parents = {}) {
  partition_key_range r;
  r.id = std::move(id);
  r.min_inclusive = std::move(min);
  r.max_exclusive = std::move(max);
  r.parents = std::move(parents);
  return r;
}

// Range 0 split into 1 and 2: a query on range 1 goes there; one on range 0
// (gone) or range 9 (never known) refreshes the map once, then is told the
// range is gone; a point operation goes by its EPK.
TEST(LocateRange, Table) {
  auto before = routing_map::create_complete({range_of("0", "", "FF")}, "e1");
  ASSERT_TRUE(before);
  auto map = before.value().try_combine(
      {range_of("1", "", "7F", {"0"}), range_of("2", "7F", "FF", {"0"})}, "e2");
  ASSERT_TRUE(map);
  const auto& m = map.value();
  struct row {
    const char* name;
    const char* range_id;
    const char* epk;
    bool refreshed;
    range_verdict verdict;
    const char* found; // the id found, "" for none
  };
  const row rows[] = {
      {"ById_Live", "1", "", false, range_verdict::found, "1"},
      {"ById_Gone_RefreshOnce", "0", "", false, range_verdict::refresh_map, ""},
      {"ById_Gone_AfterRefresh", "0", "", true, range_verdict::gone, ""},
      {"ById_Unknown_RefreshOnce", "9", "", false, range_verdict::refresh_map,
       ""},
      {"ById_Unknown_AfterRefresh", "9", "", true, range_verdict::gone, ""},
      {"ByEpk_Low", "", "05C1", false, range_verdict::found, "1"},
      {"ByEpk_High", "", "A0", false, range_verdict::found, "2"},
      {"ByEpk_PastTheEnd", "", "FF", false, range_verdict::no_range_for_epk,
       ""},
  };
  for (const auto& r : rows) {
    auto l = locate_range(m, r.range_id, r.epk, r.refreshed);
    EXPECT_EQ(l.verdict, r.verdict) << r.name;
    EXPECT_EQ(l.range ? l.range->id : std::string{}, r.found) << r.name;
  }
}

} // namespace
} // namespace metadata_rules_test
