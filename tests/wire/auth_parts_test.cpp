#include "tests/wire/auth_fixtures.hpp"
#include "georoute/transport/auth.hpp"

#include <gtest/gtest.h>
#include <ostream>
#include <string>
#include <vector>

using namespace georoute;
using namespace georoute::test;
using namespace georoute::transport;
using namespace std::chrono_literals;

namespace {

// -- keys and base64 ---------------------------------------------------------

TEST(Auth, Base64_Rfc4648Vectors_RoundTrip) {
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"", ""},
      {"f", "Zg=="},
      {"fo", "Zm8="},
      {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="},
      {"fooba", "Zm9vYmE="},
      {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : rows) {
    SCOPED_TRACE(plain);
    EXPECT_EQ(
        base64_encode(reinterpret_cast<const unsigned char*>(plain.data()),
                      plain.size()),
        encoded);
    auto back = base64_decode(encoded);
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(std::string(back->begin(), back->end()), plain);
  }
}

TEST(Auth, Base64Decode_Invalid_Nullopt) {
  for (const char* bad :
       {"Zg=", "Z", "Zm9v!", "Zm 9v", "Zh==", "Zm9=v", "====", "Zg==="}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(base64_decode(bad).has_value());
  }
  // Unpadded input is accepted.
  auto unpadded = base64_decode("Zg");
  ASSERT_TRUE(unpadded.has_value());
  EXPECT_EQ(unpadded->size(), 1u);
}

TEST(Auth, ParseMasterKey_EmulatorKey_64Bytes) {
  auto k = parse_master_key(emulator_key);
  ASSERT_TRUE(k.ok()) << k.error().what;
  EXPECT_EQ(k->bytes().size(), 64u);
  EXPECT_EQ(k->bytes()[0], 0x0b);
  EXPECT_EQ(k->bytes()[63], 0x27);
}

TEST(Auth, ParseMasterKey_SurroundingNewline_Trimmed) {
  auto k = parse_master_key(std::string(" ") + other_key + "\n");
  ASSERT_TRUE(k.ok()) << k.error().what;
  EXPECT_EQ(std::string(k->bytes().begin(), k->bytes().end()), "secret-key-1");
}

TEST(Auth, ParseMasterKey_Empty_Problem) {
  auto k = parse_master_key("  ");
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.error().what.find("empty"), std::string::npos);
}

TEST(Auth, ParseMasterKey_InvalidBase64_ProblemWithoutKeyText) {
  const std::string bad = "c2VjcmV0LWtleS0x$SECRETPART";
  auto k = parse_master_key(bad);
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.error().what.find("base64"), std::string::npos);
  EXPECT_EQ(k.error().what.find("SECRETPART"), std::string::npos);
  EXPECT_EQ(k.error().what.find("c2VjcmV0"), std::string::npos);
}

// -- resource type / link ----------------------------------------------------

struct path_row {
  std::string name;
  std::string path;
  bool rid_based;
  std::string type;
  std::string link;
};

// ctest shows the row by this name (gtest_discover_tests pretty values).
void PrintTo(const path_row& row, std::ostream* os) {
  *os << row.name;
}

class ResourceForPath : public testing::TestWithParam<path_row> {};

TEST_P(ResourceForPath, Derives) {
  const auto& row = GetParam();
  auto r = resource_for_path(row.path, row.rid_based);
  EXPECT_EQ(r.type, row.type);
  EXPECT_EQ(r.link, row.link);
}

INSTANTIATE_TEST_SUITE_P(
    Table, ResourceForPath,
    testing::Values(
        path_row{"Path_Root_Empty", "/", false, "", ""},
        path_row{"Path_EmptyString_Empty", "", false, "", ""},
        path_row{"Path_RootWithQuery_Empty", "/?a=b", false, "", ""},
        path_row{"Path_DatabaseFeed_OddCount", "/dbs", false, "dbs", ""},
        path_row{"Path_Database_EvenCount", "/dbs/d", false, "dbs", "dbs/d"},
        path_row{"Path_Collection_EvenCount", "/dbs/d/colls/c", false, "colls",
                 "dbs/d/colls/c"},
        path_row{"Path_TrailingSlash_Stripped", "/dbs/d/colls/c/", false,
                 "colls", "dbs/d/colls/c"},
        path_row{"Path_NoLeadingSlash_Same", "dbs/d/colls/c", false, "colls",
                 "dbs/d/colls/c"},
        path_row{"Path_DocsFeed_ParentLink", "/dbs/d/colls/c/docs", false,
                 "docs", "dbs/d/colls/c"},
        path_row{"Path_Document_FullLinkCaseKept", "/dbs/D/colls/C/docs/X",
                 false, "docs", "dbs/D/colls/C/docs/X"},
        path_row{"Path_Pkranges_ParentLink", "/dbs/d/colls/c/pkranges", false,
                 "pkranges", "dbs/d/colls/c"},
        path_row{"Path_QueryString_Ignored", "/dbs/d/colls/c/docs?x=%2F", false,
                 "docs", "dbs/d/colls/c"},
        path_row{"Path_EncodedSlashInId_OneSegment",
                 "/dbs/d/colls/c/docs/a%2Fb", false, "docs",
                 "dbs/d/colls/c/docs/a/b"},
        path_row{"Path_InvalidEscape_KeptLiterally", "/dbs/d/colls/c/docs/100%",
                 false, "docs", "dbs/d/colls/c/docs/100%"},
        path_row{"Path_RidPkranges_CollRidLowercased",
                 "/dbs/XP0mAA==/colls/XP0mAJ3H-AA=/pkranges", true, "pkranges",
                 "xp0maj3h-aa="},
        path_row{"Path_RidCollection_OwnRidLowercased",
                 "/dbs/XP0mAA==/colls/XP0mAJ3H-AA=", true, "colls",
                 "xp0maj3h-aa="},
        path_row{"Path_RidDocsFeed_CollRid",
                 "/dbs/XP0mAA==/colls/XP0mAJ3H-AA=/docs", true, "docs",
                 "xp0maj3h-aa="},
        path_row{"Path_RidDatabase_DbRid", "/dbs/XP0mAA==", true, "dbs",
                 "xp0maa=="},
        path_row{"Path_RidRoot_Empty", "/", true, "", ""}));

// -- dates -------------------------------------------------------------------

TEST(Auth, Rfc1123_KnownInstants_FormattedLikeJsToUtcString) {
  using std::chrono::seconds;
  using tp = std::chrono::system_clock::time_point;
  // node -e 'console.log(new
  // Date(Date.UTC(2026,10,29,18,59,20)).toUTCString())'
  EXPECT_EQ(rfc1123_date(date_tp), date);
  EXPECT_EQ(rfc1123_date(date_tp + 999ms), date);
  // node -e 'console.log(new Date(0).toUTCString())'
  EXPECT_EQ(rfc1123_date(tp{}), "Thu, 01 Jan 1970 00:00:00 GMT");
  // node -e 'console.log(new Date(Date.UTC(2024,1,29)).toUTCString())'
  // (1709164800)
  EXPECT_EQ(rfc1123_date(tp{seconds{1709164800}}),
            "Thu, 29 Feb 2024 00:00:00 GMT");
}

TEST(Auth, Rfc1123_ParseFormat_RoundTrip) {
  for (int64_t s : {int64_t{0}, int64_t{1709164800}, int64_t{1795978760},
                    int64_t{951782400} /* 2000-02-29 */,
                    int64_t{4102444799} /* 2099-12-31 23:59:59 */}) {
    auto t = std::chrono::system_clock::time_point{std::chrono::seconds{s}};
    auto text = rfc1123_date(t);
    SCOPED_TRACE(text);
    auto back = parse_rfc1123(text);
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(*back, t);
  }
}

TEST(Auth, ParseRfc1123_LowercaseAndOneDigitDay_Accepted) {
  EXPECT_EQ(parse_rfc1123("sun, 29 nov 2026 18:59:20 gmt"), date_tp);
  // 1 Nov 2026 is a Sunday (date -u -d 2026-11-01 +%a).
  EXPECT_EQ(parse_rfc1123("Sun, 1 Nov 2026 18:59:20 GMT"),
            date_tp - std::chrono::hours{24 * 28});
}

TEST(Auth, ParseRfc1123_Malformed_Nullopt) {
  for (const char* bad :
       {"", "Sun", "Mon, 29 Nov 2026 18:59:20 GMT" /* wrong weekday */,
        "Sun, 29 Nov 2026 18:59:20", "Sun, 29 Nov 2026 18:59:20 UTC",
        "Sun, 29 Xyz 2026 18:59:20 GMT", "Sun, 30 Feb 2026 18:59:20 GMT",
        "Sun, 29 Nov 2026 24:00:00 GMT", "Sun, 29 Nov 2026 18:60:20 GMT",
        "Sun, 29 Nov 26 18:59:20 GMT", "Sun,29 Nov 2026 18:59:20 GMT",
        "Sun, 29 Nov 2026 18:59:20 GMT ", "2026-11-29T18:59:20Z",
        "Sun, 00 Nov 2026 18:59:20 GMT", "Sun, 2x Nov 2026 18:59:20 GMT",
        // Beyond what system_clock's 64-bit nanoseconds can hold (an
        // overflow UBSan reports): 29 Nov 8026 is a Sunday too.
        "Sun, 29 Nov 8026 18:59:20 GMT"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(parse_rfc1123(bad).has_value());
  }
}

} // namespace
