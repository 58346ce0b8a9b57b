// Patch, the pure part: what the engine refuses before any trip, which
// patches survive being sent twice, and the tracked body that makes a
// second copy fail harmlessly.

#include "georoute/actors/policy/patch.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace georoute;

namespace {

using json = nlohmann::json;

std::string problem_of(const std::string& body) {
  auto r = parse_patch(body);
  return r ? std::string{"(accepted)"} : r.error().what;
}

TEST(Patch, BothForms_Accepted_OperationsInOrder) {
  auto a = parse_patch(R"([{"op":"set","path":"/n","value":1},
                           {"op":"incr","path":"/c","value":-2.5}])");
  ASSERT_TRUE(a) << a.error().what;
  ASSERT_EQ(a->operations.size(), 2u);
  EXPECT_EQ(a->operations[1].kind, patch_kind::incr);
  EXPECT_EQ(a->condition, "");
  auto b = parse_patch(R"({"condition":"from doc where doc.n > 1",
    "operations":[{"op":"move","from":"/a","path":"/b/a"},
                  {"op":"remove","path":"/x/0"},
                  {"op":"remove","path":"/y","value":null}]})");
  ASSERT_TRUE(b) << b.error().what;
  EXPECT_EQ(b->operations[0].from, "/a");
  EXPECT_EQ(b->condition, "from doc where doc.n > 1");
}

// Each refusal names what is wrong; nothing is sent.
struct bad_case {
  const char* body;
  const char* names;
};

class PatchRefused : public ::testing::TestWithParam<bad_case> {};

TEST_P(PatchRefused, NamesWhatIsWrong) {
  auto what = problem_of(GetParam().body);
  EXPECT_NE(what.find(GetParam().names), std::string::npos)
      << GetParam().body << " -> " << what;
}

INSTANTIATE_TEST_SUITE_P(
    Patch, PatchRefused,
    ::testing::Values(
        bad_case{"{", "not valid JSON"}, bad_case{"42", "array of operations"},
        bad_case{"[]", "no operations"},
        bad_case{R"({"operations":[]})", "no operations"},
        bad_case{R"({"ops":[]})", "unknown member \"ops\""},
        bad_case{R"({"condition":"FROM c WHERE true"})",
                 "needs \"operations\""},
        bad_case{R"([{"op":"copy","path":"/a","from":"/b"}])",
                 "\"copy\" is not a patch operation"},
        bad_case{R"([{"path":"/a","value":1}])", "has no \"op\""},
        bad_case{R"([{"op":"set","value":1}])", "has no \"path\""},
        bad_case{R"([{"op":"set","path":"a","value":1}])",
                 "not a JSON Pointer"},
        bad_case{R"([{"op":"set","path":"/","value":1}])",
                 "not a JSON Pointer"},
        bad_case{R"([{"op":"set","path":"/a~2","value":1}])",
                 "not a JSON Pointer"},
        bad_case{R"([{"op":"set","path":"/a"}])", "needs a \"value\""},
        bad_case{R"([{"op":"add","path":"/a"}])", "needs a \"value\""},
        bad_case{R"([{"op":"incr","path":"/n","value":"1"}])",
                 "needs a number as its \"value\" (it has string)"},
        bad_case{R"([{"op":"incr","path":"/n"}])", "needs a number"},
        bad_case{R"([{"op":"set","path":"/id","value":"x"}])",
                 "\"/id\" cannot be patched"},
        bad_case{R"([{"op":"remove","path":"/_etag"}])", "cannot be patched"},
        bad_case{R"([{"op":"set","path":"/_ts/x","value":1}])",
                 "cannot be patched"},
        bad_case{R"([{"op":"move","path":"/b"}])", "needs \"from\""},
        bad_case{R"([{"op":"move","from":"/a","path":"/a/b"}])",
                 "lies inside \"/a\""},
        bad_case{R"([{"op":"move","from":"/a","path":"/a"}])", "lies inside"},
        bad_case{
            R"({"condition":"WHERE c.n = 1","operations":[{"op":"remove","path":"/a"}]})",
            "is not \"FROM <alias> WHERE <predicate>\""},
        bad_case{
            R"({"condition":"FROM c WHERE ","operations":[{"op":"remove","path":"/a"}]})",
            "is not \"FROM"},
        bad_case{
            R"({"condition":7,"operations":[{"op":"remove","path":"/a"}]})",
            "condition must be a string"}));

TEST(Patch, ElevenOperations_Refused_TenAccepted) {
  json ops = json::array();
  for (int i = 0; i < 10; ++i)
    ops.push_back(
        {{"op", "set"}, {"path", "/f" + std::to_string(i)}, {"value", i}});
  EXPECT_TRUE(parse_patch(ops.dump()));
  ops.push_back({{"op", "set"}, {"path", "/f10"}, {"value", 10}});
  EXPECT_NE(problem_of(ops.dump())
                .find("11 operations; the service takes at "
                      "most 10"),
            std::string::npos);
}

TEST(Patch, PathsWithEscapes_AreMembersNotReserved) {
  // "/i~1d" is the member "i/d", not the id.
  EXPECT_TRUE(parse_patch(R"([{"op":"set","path":"/i~1d","value":1}])"));
  EXPECT_TRUE(parse_patch(R"([{"op":"set","path":"/idx","value":1}])"));
  EXPECT_TRUE(parse_patch(R"([{"op":"set","path":"/a~0b/c","value":1}])"));
}

bool safe(const std::string& body) {
  auto spec = parse_patch(body);
  EXPECT_TRUE(spec) << spec.error().what;
  return patch_resend_safe(*spec);
}

TEST(Patch, ResendSafe_OnlyWhatASecondCopyCannotChange) {
  EXPECT_TRUE(safe(R"([{"op":"set","path":"/a","value":1},
                       {"op":"replace","path":"/b","value":2},
                       {"op":"add","path":"/c/d","value":3}])"));
  EXPECT_FALSE(safe(R"([{"op":"incr","path":"/n","value":1}])"));
  EXPECT_FALSE(safe(R"([{"op":"remove","path":"/a"}])"));
  EXPECT_FALSE(safe(R"([{"op":"move","from":"/a","path":"/b"}])"));
  // Into an array: the element is inserted again.
  EXPECT_FALSE(safe(R"([{"op":"add","path":"/tags/-","value":"x"}])"));
  EXPECT_FALSE(safe(R"([{"op":"add","path":"/tags/0","value":"x"}])"));
  // One unsafe operation makes the patch unsafe.
  EXPECT_FALSE(safe(R"([{"op":"set","path":"/a","value":1},
                        {"op":"incr","path":"/n","value":1}])"));
}

TEST(Patch, Tracked_SetAppended_GuardJoinsTheCallersCondition) {
  const std::string body = R"({"condition":"FROM doc WHERE doc.n > 1",
    "operations":[{"op":"incr","path":"/n","value":1}]})";
  auto spec = parse_patch(body);
  ASSERT_TRUE(spec);
  auto tracked = with_patch_tracking(body, *spec, "abc123");
  ASSERT_TRUE(tracked) << tracked.error().what;
  auto j = json::parse(*tracked);
  ASSERT_EQ(j["operations"].size(), 2u);
  EXPECT_EQ(j["operations"][0]["op"], "incr");
  EXPECT_EQ(
      j["operations"][1],
      (json{{"op", "set"}, {"path", "/_trackingId"}, {"value", "abc123"}}));
  EXPECT_EQ(j["condition"],
            "FROM doc WHERE (doc.n > 1) AND (NOT IS_DEFINED(doc._trackingId) "
            "OR doc._trackingId != \"abc123\")");
  // The tracked body is itself a valid patch.
  EXPECT_TRUE(parse_patch(*tracked));
}

TEST(Patch, Tracked_ArrayForm_GetsAConditionOfItsOwn) {
  const std::string body = R"([{"op":"remove","path":"/a"}])";
  auto spec = parse_patch(body);
  ASSERT_TRUE(spec);
  auto tracked = with_patch_tracking(body, *spec, "t");
  ASSERT_TRUE(tracked);
  auto j = json::parse(*tracked);
  EXPECT_EQ(j["condition"], "FROM c WHERE (NOT IS_DEFINED(c._trackingId) OR "
                            "c._trackingId != \"t\")");
  EXPECT_EQ(j["operations"].size(), 2u);
}

TEST(Patch, Tracked_NoRoomOrTheCallersOwnTrackingPath_Refused) {
  json ops = json::array();
  for (int i = 0; i < 10; ++i)
    ops.push_back(
        {{"op", "incr"}, {"path", "/f" + std::to_string(i)}, {"value", 1}});
  auto spec = parse_patch(ops.dump());
  ASSERT_TRUE(spec);
  EXPECT_FALSE(patch_trackable(*spec));
  EXPECT_FALSE(with_patch_tracking(ops.dump(), *spec, "t"));
  const std::string own = R"([{"op":"set","path":"/_trackingId","value":"x"}])";
  auto s2 = parse_patch(own);
  ASSERT_TRUE(s2);
  auto t2 = with_patch_tracking(own, *s2, "t");
  ASSERT_FALSE(t2);
  EXPECT_NE(t2.error().what.find("/_trackingId"), std::string::npos);
}

} // namespace

namespace {

write_tracking_plan plan(const std::string& body, bool on) {
  auto spec = parse_patch(body);
  EXPECT_TRUE(spec) << spec.error().what;
  return plan_patch_tracking(*spec, on);
}

TEST(Patch, Plan_TrackedWhenThereIsRoom_ElseResentOnlyWhenSafe) {
  const std::string incr = R"([{"op":"incr","path":"/n","value":1}])";
  EXPECT_FALSE(plan(incr, false).retries);
  EXPECT_FALSE(plan(incr, false).tracked);
  EXPECT_TRUE(plan(incr, true).tracked);
  EXPECT_TRUE(plan(incr, true).retries);
  json incrs = json::array(), sets = json::array();
  for (int i = 0; i < 10; ++i) {
    incrs.push_back(
        {{"op", "incr"}, {"path", "/f" + std::to_string(i)}, {"value", 1}});
    sets.push_back(
        {{"op", "set"}, {"path", "/f" + std::to_string(i)}, {"value", 1}});
  }
  EXPECT_FALSE(plan(incrs.dump(), true).tracked);
  EXPECT_FALSE(plan(incrs.dump(), true).retries) << "ten increments resent";
  EXPECT_FALSE(plan(sets.dump(), true).tracked);
  EXPECT_TRUE(plan(sets.dump(), true).retries);
  // The caller's own /_trackingId: not tracked, and resent only if safe.
  auto own = plan(R"([{"op":"remove","path":"/_trackingId"}])", true);
  EXPECT_FALSE(own.tracked);
  EXPECT_FALSE(own.retries);
}

// A tracked patch's 412 after a copy that may have been applied is read
// back; a batch is never planned for a resend.
TEST(Patch, EchoAndBatchPlan) {
  EXPECT_EQ(classify_write_echo(data_op::patch, false, true, 412),
            write_echo::check_tracking);
  EXPECT_EQ(classify_write_echo(data_op::patch, false, false, 412),
            write_echo::none);
  EXPECT_FALSE(plan_write_tracking(data_op::batch, 1, true).retries);
  EXPECT_TRUE(plan_write_tracking(data_op::upsert, 1, false).retries);
}

} // namespace
