// Writes that survive a hang, the pure part: the tracking property and what
// a final answer means when an earlier copy of the write may have been
// applied (the rows of Java's CosmosItemWriteRetriesTest that decide a
// status; the emulator runs them end to end in tests/integration).

#include "georoute/actors/policy/write_tracking.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace georoute;

namespace {

TEST(WriteTracking, Id_32HexDigits_FromBothHalves) {
  EXPECT_EQ(make_tracking_id(0, 0), std::string(32, '0'));
  EXPECT_EQ(make_tracking_id(0x0123456789abcdefULL, 0xfedcba9876543210ULL),
            "0123456789abcdeffedcba9876543210");
}

TEST(WriteTracking, Body_PropertyAdded_OthersKept) {
  auto b = with_tracking_id(R"({"id":"a","pk":"p","n":1})", "t1");
  ASSERT_TRUE(b) << b.error().what;
  auto j = nlohmann::json::parse(*b);
  EXPECT_EQ(j["_trackingId"], "t1");
  EXPECT_EQ(j["id"], "a");
  EXPECT_EQ(j["n"], 1);
  // The caller's own value is replaced (one operation, one id).
  auto again = with_tracking_id(*b, "t2");
  ASSERT_TRUE(again);
  EXPECT_EQ(nlohmann::json::parse(*again)["_trackingId"], "t2");
  EXPECT_TRUE(carries_tracking_id(*again, "t2"));
  EXPECT_FALSE(carries_tracking_id(*again, "t1"));
}

TEST(WriteTracking, Body_NotAnObject_Problem) {
  for (const char* bad : {"[1,2]", "\"x\"", "{not json", ""}) {
    auto b = with_tracking_id(bad, "t");
    ASSERT_FALSE(b) << bad;
    EXPECT_NE(b.error().what.find("JSON object"), std::string::npos) << bad;
  }
}

TEST(WriteTracking, Carries_MalformedOrMissing_False) {
  EXPECT_FALSE(carries_tracking_id("{", "t"));
  EXPECT_FALSE(carries_tracking_id(R"({"id":"a"})", "t"));
  EXPECT_FALSE(carries_tracking_id(R"({"_trackingId":7})", "7"));
  EXPECT_TRUE(carries_tracking_id(R"({"_trackingId":"t"})", "t"));
}

TEST(WriteTracking, Echo_Table) {
  using we = write_echo;
  struct row {
    const char* name;
    data_op op;
    bool conditional, maybe_applied;
    int status;
    write_echo expected;
  };
  const row rows[] = {
      {"Create409_Applied_Check", data_op::create, false, true, 409,
       we::check_tracking},
      {"Create409_NotApplied_AsIs", data_op::create, false, false, 409,
       we::none},
      {"Create201_AsIs", data_op::create, false, true, 201, we::none},
      {"ReplaceIfMatch412_Check", data_op::replace, true, true, 412,
       we::check_tracking},
      {"Replace412_NoPrecondition_AsIs", data_op::replace, false, true, 412,
       we::none},
      {"Replace200_AsIs", data_op::replace, false, true, 200, we::none},
      {"Upsert_AsIs", data_op::upsert, false, true, 409, we::none},
      {"Remove404_Applied_Deleted", data_op::remove, false, true, 404,
       we::deleted_maybe_by_self},
      {"Remove404_NotApplied_AsIs", data_op::remove, false, false, 404,
       we::none},
      {"Remove204_AsIs", data_op::remove, false, true, 204, we::none},
  };
  for (const auto& r : rows)
    EXPECT_EQ(
        classify_write_echo(r.op, r.conditional, r.maybe_applied, r.status),
        r.expected)
        << r.name;
}

TEST(WriteTracking, Tracks_CreateReplaceUpsert_NotRemove) {
  EXPECT_TRUE(tracks(data_op::create));
  EXPECT_TRUE(tracks(data_op::replace));
  EXPECT_TRUE(tracks(data_op::upsert));
  EXPECT_FALSE(tracks(data_op::remove));
}

TEST(WriteTracking, Plan_Table) {
  struct row {
    const char* name;
    data_op op;
    int requested;
    bool engine;
    bool retries, tracked;
  };
  const row rows[] = {
      {"Read_Never", data_op::read, 1, true, false, false},
      {"Query_Never", data_op::query, 1, true, false, false},
      {"Create_EngineOn", data_op::create, -1, true, true, true},
      {"Create_EngineOff", data_op::create, -1, false, false, false},
      {"Create_RequestOn", data_op::create, 1, false, true, true},
      {"Create_RequestOff", data_op::create, 0, true, false, false},
      {"Upsert_Tracked", data_op::upsert, 1, false, true, true},
      {"Replace_Tracked", data_op::replace, 1, false, true, true},
      {"Remove_RetriedUntracked", data_op::remove, 1, false, true, false},
  };
  for (const auto& r : rows) {
    auto p = plan_write_tracking(r.op, r.requested, r.engine);
    EXPECT_EQ(p.retries, r.retries) << r.name;
    EXPECT_EQ(p.tracked, r.tracked) << r.name;
  }
}

TEST(WriteTracking, ReadBack_Table) {
  auto created = judge_read_back(data_op::create, true, true, 200);
  EXPECT_TRUE(created.applied);
  EXPECT_EQ(created.status, 201);
  auto replaced = judge_read_back(data_op::replace, true, true, 200);
  EXPECT_TRUE(replaced.applied);
  EXPECT_EQ(replaced.status, 200);
  auto other = judge_read_back(data_op::create, true, false, 200);
  EXPECT_FALSE(other.applied);
  EXPECT_NE(other.why.find("somebody else's"), std::string::npos) << other.why;
  auto failed = judge_read_back(data_op::replace, false, false, 503);
  EXPECT_FALSE(failed.applied);
  EXPECT_NE(failed.why.find("failed (503)"), std::string::npos) << failed.why;
}

// The read-back waits as long as the first attempt of any read of the
// document: the per-partition-failover read ladder's first step.
TEST(WriteTracking, ReadBackTimeout_TheReadLaddersFirstStep) {
  timeout_ladders l;
  EXPECT_EQ(read_back_timeout(l), std::chrono::seconds{6});
  l.partition_failover = {{std::chrono::seconds{2}, {}}};
  EXPECT_EQ(read_back_timeout(l), std::chrono::seconds{2});
}

} // namespace
