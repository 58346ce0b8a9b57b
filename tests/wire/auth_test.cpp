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

// -- signature vectors -------------------------------------------------------
//
// Every expected signature below was computed with the openssl CLI, never with
// the code under test:
//   KEY='C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=='
//   HK=$(echo -n "$KEY" | base64 -d | xxd -p -c 256)
// and then the command in each row's comment.

struct vector_row {
  std::string name;
  const char* key;
  std::string verb;
  std::string path;
  bool rid_based;
  std::string type;
  std::string link;
  std::string x_ms_date;
  std::string sig;
};

// ctest shows the row by this name (gtest_discover_tests pretty values).
void PrintTo(const vector_row& row, std::ostream* os) {
  *os << row.name;
}

class SignatureVector : public testing::TestWithParam<vector_row> {};

TEST_P(SignatureVector, MatchesOpensslCli) {
  const auto& row = GetParam();
  auto res = resource_for_path(row.path, row.rid_based);
  EXPECT_EQ(res.type, row.type);
  EXPECT_EQ(res.link, row.link);
  auto sts = string_to_sign(row.verb, res.type, res.link, row.x_ms_date);
  EXPECT_EQ(signature(key(row.key), sts), row.sig);
  // The server side accepts what the vector says the client sends.
  auto header = uri_component_encode("type=master&ver=1.0&sig=" + row.sig);
  auto now = parse_rfc1123(row.x_ms_date);
  ASSERT_TRUE(now.has_value());
  auto check = verify_authorization(key(row.key), row.verb, row.path, header,
                                    row.x_ms_date, *now, row.rid_based);
  EXPECT_EQ(check.verdict, auth_verdict::ok) << check.reason;
}

INSTANTIATE_TEST_SUITE_P(
    Table, SignatureVector,
    testing::Values(
        // printf 'get\n\n\nsun, 29 nov 2026 18:59:20 gmt\n\n' | openssl dgst
        // -sha256 -mac HMAC -macopt hexkey:$HK -binary | base64
        vector_row{"Sign_AccountRead_MatchesCli", emulator_key, "GET", "/",
                   false, "", "", date,
                   "NVq8CYRGxt9yHs2boPDsLPse+CndfW7GZSe9ISEDEes="},
        // printf 'get\ncolls\ndbs/d/colls/c\nsun, 29 nov 2026 18:59:20 gmt\n\n'
        // | openssl dgst -sha256 -mac HMAC -macopt hexkey:$HK -binary | base64
        vector_row{"Sign_NamedCollectionRead_MatchesCli", emulator_key, "GET",
                   "/dbs/d/colls/c", false, "colls", "dbs/d/colls/c", date,
                   "rvu5ejIpA5ODALPqJfPaU5nc8ZNuf8GrCsd1Xr/Ki6o="},
        // printf 'post\ndocs\ndbs/d/colls/c\nsun, 29 nov 2026 18:59:20 gmt\n\n'
        // | openssl dgst -sha256 -mac HMAC -macopt hexkey:$HK -binary | base64
        vector_row{"Sign_DocumentCreate_SignsParentLink", emulator_key, "POST",
                   "/dbs/d/colls/c/docs", false, "docs", "dbs/d/colls/c", date,
                   "1ICeqx6WyOx2w9Ucgts4PjlL0m9c63GpsyDp4z3J+Rs="},
        // printf 'get\ndocs\ndbs/d/colls/c/docs/MixedCase\nsun, 29 nov 2026
        // 18:59:20 gmt\n\n' | openssl dgst -sha256 -mac HMAC -macopt hexkey:$HK
        // -binary | base64
        vector_row{"Sign_MixedCaseDocumentRead_KeepsCase", emulator_key, "GET",
                   "/dbs/d/colls/c/docs/MixedCase", false, "docs",
                   "dbs/d/colls/c/docs/MixedCase", date,
                   "IFjSdOMTi6m6aW7U2n+NAbARbvbAEgNXfRZ4lfbU9SA="},
        // printf 'get\npkranges\nxp0maj3h-aa=\nsun, 29 nov 2026 18:59:20
        // gmt\n\n' | openssl dgst -sha256 -mac HMAC -macopt hexkey:$HK -binary
        // | base64
        vector_row{"Sign_RidBasedPkranges_LowercasedCollectionRid",
                   emulator_key, "GET",
                   "/dbs/XP0mAA==/colls/XP0mAJ3H-AA=/pkranges", true,
                   "pkranges", "xp0maj3h-aa=", date,
                   "fXEfCLJ/qTDcJIiemwvT4J2wSZ6eeLFCUAY8CzEZHJ4="},
        // printf 'put\ndocs\ndbs/My DB/colls/c/docs/a b\nmon, 02 mar 2026
        // 07:05:09 gmt\n\n' | openssl dgst -sha256 -mac HMAC -macopt hexkey:$HK
        // -binary | base64
        vector_row{"Sign_EscapedNamesWithQuery_SignsDecodedIds", emulator_key,
                   "put", "/dbs/My%20DB/colls/c/docs/a%20b?x=1", false, "docs",
                   "dbs/My DB/colls/c/docs/a b",
                   "Mon, 02 Mar 2026 07:05:09 GMT",
                   "p4nOEpd++ZtkLdBugkuGbdjTRpUhEu/N2/NDZNj2gmI="},
        // printf 'get\ncolls\ndbs/d/colls/c\nsun, 29 nov 2026 18:59:20 gmt\n\n'
        // | openssl dgst -sha256 -mac HMAC -macopt hexkey:$(echo -n
        // c2VjcmV0LWtleS0x | base64 -d | xxd -p -c 256) -binary | base64
        vector_row{"Sign_OtherKey_DifferentSignature", other_key, "GET",
                   "/dbs/d/colls/c", false, "colls", "dbs/d/colls/c", date,
                   "LR3KeRFbysqln8hKKBwF04hAns34lXLmv7//nkMN/9o="}));

TEST(Auth, StringToSign_LowercasesAllButLink_TrailingEmptyLine) {
  EXPECT_EQ(string_to_sign("GET", "Colls", "dbs/D/colls/C", date),
            "get\ncolls\ndbs/D/colls/C\nsun, 29 nov 2026 18:59:20 gmt\n\n");
}

// -- header encoding ---------------------------------------------------------

TEST(Auth, AuthorizationHeader_Encoding_MatchesJsEncodeUriComponent) {
  // node -e
  // 'console.log(encodeURIComponent("type=master&ver=1.0&sig=rvu5ejIpA5ODALPqJfPaU5nc8ZNuf8GrCsd1Xr/Ki6o="))'
  EXPECT_EQ(authorization_header(key(emulator_key), "GET", "colls",
                                 "dbs/d/colls/c", date),
            "type%3Dmaster%26ver%3D1.0%26sig%3Drvu5ejIpA5ODALPqJfPaU5nc8ZNuf8Gr"
            "Csd1Xr%2FKi6o%3D");
  // node -e
  // 'console.log(encodeURIComponent("type=master&ver=1.0&sig=1ICeqx6WyOx2w9Ucgts4PjlL0m9c63GpsyDp4z3J+Rs="))'
  EXPECT_EQ(authorization_header(key(emulator_key), "POST", "docs",
                                 "dbs/d/colls/c", date),
            "type%3Dmaster%26ver%3D1.0%26sig%3D1ICeqx6WyOx2w9Ucgts4PjlL0m9c63Gp"
            "syDp4z3J%2BRs%3D");
}

TEST(Auth, UriComponentEncode_Unreserved_KeptOthersUppercaseHex) {
  EXPECT_EQ(uri_component_encode("AZaz09-_.!~*'()"), "AZaz09-_.!~*'()");
  EXPECT_EQ(uri_component_encode(" /+=&?#%"), "%20%2F%2B%3D%26%3F%23%25");
  EXPECT_EQ(uri_component_encode(std::string("\xc3\xa9\x00", 3)), "%C3%A9%00");
}

// -- verify_authorization (emulator side) ------------------------------------

// The JS form of the header for GET /dbs/d/colls/c at `date` (vector above).
constexpr const char* upper_hex_header =
    "type%3Dmaster%26ver%3D1.0%26sig%3Drvu5ejIpA5ODALPqJfPaU5nc8ZNuf8GrCsd1Xr%"
    "2FKi6o%3D";
// The .NET (HttpUtility.UrlEncode) form of the same header.
constexpr const char* lower_hex_header =
    "type%3dmaster%26ver%3d1.0%26sig%3drvu5ejIpA5ODALPqJfPaU5nc8ZNuf8GrCsd1Xr%"
    "2fKi6o%3d";

auth_check check(const char* key_text, const std::string& header,
                 const std::string& x_ms_date,
                 std::chrono::system_clock::time_point now = date_tp) {
  return verify_authorization(key(key_text), "GET", "/dbs/d/colls/c", header,
                              x_ms_date, now);
}

TEST(Auth, Verify_UppercaseHex_Ok) {
  auto r = check(emulator_key, upper_hex_header, date);
  EXPECT_EQ(r.verdict, auth_verdict::ok) << r.reason;
}

TEST(Auth, Verify_LowercaseHex_Ok) {
  auto r = check(emulator_key, lower_hex_header, date);
  EXPECT_EQ(r.verdict, auth_verdict::ok) << r.reason;
}

TEST(Auth, Verify_WrongKey_Unauthorized) {
  auto r = check(other_key, upper_hex_header, date);
  EXPECT_EQ(r.verdict, auth_verdict::unauthorized);
  EXPECT_NE(r.reason.find("signature mismatch"), std::string::npos);
}

TEST(Auth, Verify_TamperedSignature_Unauthorized) {
  std::string tampered = upper_hex_header;
  auto pos = tampered.find("rvu5");
  tampered[pos] = 'R';
  auto r = check(emulator_key, tampered, date);
  EXPECT_EQ(r.verdict, auth_verdict::unauthorized);
}

TEST(Auth, Verify_OtherPath_Unauthorized) {
  auto r = verify_authorization(key(emulator_key), "GET", "/dbs/d/colls/x",
                                upper_hex_header, date, date_tp);
  EXPECT_EQ(r.verdict, auth_verdict::unauthorized);
}

TEST(Auth, Verify_OtherVerb_Unauthorized) {
  auto r = verify_authorization(key(emulator_key), "DELETE", "/dbs/d/colls/c",
                                upper_hex_header, date, date_tp);
  EXPECT_EQ(r.verdict, auth_verdict::unauthorized);
}

TEST(Auth, Verify_DateSixteenMinutesOld_Forbidden) {
  auto r = check(emulator_key, upper_hex_header, date, date_tp + 16min);
  EXPECT_EQ(r.verdict, auth_verdict::forbidden);
  EXPECT_NE(r.reason.find("960 s"), std::string::npos) << r.reason;
}

TEST(Auth, Verify_DateSixteenMinutesAhead_Forbidden) {
  auto r = check(emulator_key, upper_hex_header, date, date_tp - 16min);
  EXPECT_EQ(r.verdict, auth_verdict::forbidden);
}

TEST(Auth, Verify_DateFourteenMinutesOld_Ok) {
  auto r = check(emulator_key, upper_hex_header, date, date_tp + 14min);
  EXPECT_EQ(r.verdict, auth_verdict::ok) << r.reason;
}

TEST(Auth, Verify_OldDateWrongKey_UnauthorizedFirst) {
  auto r = check(other_key, upper_hex_header, date, date_tp + 60min);
  EXPECT_EQ(r.verdict, auth_verdict::unauthorized);
}

TEST(Auth, Verify_MissingDate_Unauthorized) {
  auto r = check(emulator_key, upper_hex_header, "");
  EXPECT_EQ(r.verdict, auth_verdict::unauthorized);
  EXPECT_NE(r.reason.find("x-ms-date"), std::string::npos);
}

TEST(Auth, Verify_UnparseableDate_Unauthorized) {
  auto r = check(emulator_key, upper_hex_header, "2026-11-29T18:59:20Z");
  EXPECT_EQ(r.verdict, auth_verdict::unauthorized);
  EXPECT_NE(r.reason.find("x-ms-date"), std::string::npos);
}

struct header_row {
  std::string name;
  std::string header;
};

// ctest shows the row by this name (gtest_discover_tests pretty values).
void PrintTo(const header_row& row, std::ostream* os) {
  *os << row.name;
}

class MalformedAuthorization : public testing::TestWithParam<header_row> {};

TEST_P(MalformedAuthorization, Unauthorized) {
  auto r = check(emulator_key, GetParam().header, date);
  EXPECT_EQ(r.verdict, auth_verdict::unauthorized);
  EXPECT_FALSE(r.reason.empty());
}

INSTANTIATE_TEST_SUITE_P(
    Table, MalformedAuthorization,
    testing::Values(
        header_row{"Header_Missing_Unauthorized", ""},
        header_row{"Header_Garbage_Unauthorized", "garbage"},
        header_row{"Header_BadEscape_Unauthorized", "type%3Dmaster%2"},
        header_row{"Header_NonHexEscape_Unauthorized", "type%ZZmaster"},
        header_row{"Header_NoSignature_Unauthorized",
                   "type%3Dmaster%26ver%3D1.0"},
        header_row{"Header_EmptySignature_Unauthorized",
                   "type%3Dmaster%26ver%3D1.0%26sig%3D"},
        header_row{
            "Header_ResourceTokenType_Unauthorized",
            "type%3Dresource%26ver%3D1.0%26sig%3Drvu5ejIpA5ODALPqJfPaU5nc8ZN"
            "uf8GrCsd1Xr%2FKi6o%3D"},
        header_row{
            "Header_WrongVersion_Unauthorized",
            "type%3Dmaster%26ver%3D2.0%26sig%3Drvu5ejIpA5ODALPqJfPaU5nc8ZNuf"
            "8GrCsd1Xr%2FKi6o%3D"},
        header_row{"Header_SignatureNotBase64_Unauthorized",
                   "type%3Dmaster%26ver%3D1.0%26sig%3D%21%21%21"},
        header_row{"Header_SignatureTooShort_Unauthorized",
                   "type%3Dmaster%26ver%3D1.0%26sig%3DZm9v"},
        header_row{
            "Header_RepeatedSig_Unauthorized",
            "type%3Dmaster%26ver%3D1.0%26sig%3DZm9v%26sig%3Drvu5ejIpA5ODALPq"
            "JfPaU5nc8ZNuf8GrCsd1Xr%2FKi6o%3D"},
        header_row{
            "Header_NotEncodedPlusAsSpace_Unauthorized",
            "type=master&ver=1.0&sig=1ICeqx6WyOx2w9Ucgts4PjlL0m9c63GpsyDp4z3"
            "J Rs="}));

TEST(Auth, Verify_UnencodedHeader_Ok) {
  // A header that was never URL-encoded still decodes to itself.
  auto r = check(emulator_key,
                 "type=master&ver=1.0&sig=rvu5ejIpA5ODALPqJfPaU5nc8ZNuf8GrCsd1"
                 "Xr/Ki6o=",
                 date);
  EXPECT_EQ(r.verdict, auth_verdict::ok) << r.reason;
}

TEST(Auth, Verify_ReasonNeverContainsKey) {
  auto r = check(other_key, upper_hex_header, date);
  EXPECT_EQ(r.reason.find(other_key), std::string::npos);
  EXPECT_EQ(r.reason.find("secret-key-1"), std::string::npos);
}

// -- sign_request ------------------------------------------------------------

TEST(Auth, SignRequest_Fresh_AddsDateVersionAuthorization) {
  request req;
  req.method = "GET";
  req.target = "/dbs/d/colls/c";
  req.headers = {{"X-MS-DATE", "stale"},
                 {"accept", "application/json"},
                 {"Authorization", "stale"},
                 {"x-ms-version", "2015-12-16"}};
  sign_request(req, key(emulator_key), date_tp);
  std::vector<std::pair<std::string, std::string>> expected = {
      {"accept", "application/json"},
      {"x-ms-date", date},
      {"x-ms-version", "2020-07-15"},
      {"authorization", upper_hex_header}};
  EXPECT_EQ(req.headers, expected);
}

TEST(Auth, SignRequest_PostDocsWithQuery_VerifiesOnServer) {
  request req;
  req.method = "POST";
  req.target = "/dbs/d/colls/c/docs?x=1";
  auto now = date_tp + 123ms;
  sign_request(req, key(emulator_key), now);
  std::string auth;
  std::string x_ms_date;
  for (const auto& [k, v] : req.headers) {
    if (k == "authorization") auth = v;
    if (k == "x-ms-date") x_ms_date = v;
  }
  // node -e
  // 'console.log(encodeURIComponent("type=master&ver=1.0&sig=1ICeqx6WyOx2w9Ucgts4PjlL0m9c63GpsyDp4z3J+Rs="))'
  EXPECT_EQ(auth, "type%3Dmaster%26ver%3D1.0%26sig%3D1ICeqx6WyOx2w9Ucgts4PjlL0m"
                  "9c63GpsyDp4z3J%2BRs%3D");
  auto r = verify_authorization(key(emulator_key), "POST", req.target, auth,
                                x_ms_date, now);
  EXPECT_EQ(r.verdict, auth_verdict::ok) << r.reason;
}

TEST(Auth, SignRequest_RidBased_VerifiesAsRidBasedOnly) {
  request req;
  req.target = "/dbs/XP0mAA==/colls/XP0mAJ3H-AA=/pkranges";
  sign_request(req, key(emulator_key), date_tp, true);
  std::string auth = req.headers.back().second;
  EXPECT_EQ(verify_authorization(key(emulator_key), "GET", req.target, auth,
                                 date, date_tp, true)
                .verdict,
            auth_verdict::ok);
  EXPECT_EQ(verify_authorization(key(emulator_key), "GET", req.target, auth,
                                 date, date_tp, false)
                .verdict,
            auth_verdict::unauthorized);
}

TEST(Auth, ToString_Verdicts_StableNames) {
  EXPECT_STREQ(to_string(auth_verdict::ok), "ok");
  EXPECT_STREQ(to_string(auth_verdict::unauthorized), "unauthorized");
  EXPECT_STREQ(to_string(auth_verdict::forbidden), "forbidden");
}

} // namespace

// -- hmac_signer -------------------------------------------------------------

// The signer keeps a keyed context, the date of the current second and its
// buffers between requests; every request must still be signed exactly as
// the one-shot sign_request signs it.
TEST(Auth, Signer_SignsEveryPathAsSignRequest) {
  auto k = key(emulator_key);
  hmac_signer signer{k};
  ASSERT_EQ(signer.error(), "");
  const std::vector<std::string> targets = {
      "/",
      "",
      "/dbs",
      "/dbs/d",
      "/dbs/d/colls/c",
      "/dbs/d/colls/c/",
      "//dbs/d/colls/c/docs?x=1",
      "/dbs/d/colls/c/docs/a%20b",
      "/dbs/d%2Fe/colls/c/docs",
      "/dbs/d/colls/c/docs/Doc-1?q=%41",
      "/dbs/XP0mAA==/colls/XP0mAJ3H-AA=/pkranges",
      "/dbs/d//colls",
      "/offers"};
  const std::vector<std::string> methods = {"GET", "post", "Delete"};
  int checked = 0;
  for (bool rid : {false, true})
    for (const auto& m : methods)
      for (const auto& t : targets)
        for (auto at :
             {date_tp, date_tp + 999ms, date_tp + 1s, date_tp + 61s}) {
          request a;
          a.method = m;
          a.target = t;
          a.headers = {{"Authorization", "stale"}, {"accept", "x"}};
          request b = a;
          sign_request(a, k, at, rid);
          signer.sign(b, at, rid);
          EXPECT_EQ(a.headers, b.headers)
              << m << " " << t << " rid " << rid << " +"
              << std::chrono::duration_cast<std::chrono::milliseconds>(at -
                                                                       date_tp)
                     .count()
              << " ms";
          ++checked;
        }
  EXPECT_EQ(checked, 2 * 3 * 13 * 4);
}

TEST(Auth, Signer_SignatureMatchesOneShot_AcrossKeysAndRepeats) {
  for (const auto& text : {emulator_key, other_key}) {
    auto k = key(text);
    hmac_signer signer{k};
    for (int i = 0; i < 3; ++i)
      for (std::string_view msg : {"", "get\ncolls\ndbs/d/colls/c\nx\n\n",
                                   "a much longer message than one block of "
                                   "sha-256, to cross the 64-byte boundary"})
        EXPECT_EQ(signer.signature(msg), signature(k, msg));
  }
}

// HMAC's key rule at every edge: shorter than a SHA-256 block (zero-padded),
// exactly one, and longer (hashed first), through the signer's kept context
// and through the one-shot `signature`.
TEST(Auth, Signer_KeysOfEveryLength_MatchOneShot) {
  for (size_t length : {0u, 1u, 32u, 63u, 64u, 65u, 128u, 200u}) {
    std::vector<unsigned char> bytes(length);
    for (size_t i = 0; i < length; ++i)
      bytes[i] = static_cast<unsigned char>(i * 37 + 11);
    master_key k{bytes};
    hmac_signer signer{k};
    ASSERT_EQ(signer.error(), "") << "key of " << length << " bytes";
    for (std::string_view msg :
         {"", "get\ndocs\ndbs/d/colls/c/docs/x\nthu, 03 dec 2026\n\n"})
      EXPECT_EQ(signer.signature(msg), signature(k, msg))
          << "key of " << length << " bytes";
  }
}

TEST(Auth, Signer_SignedRequestVerifiesOnServer) {
  auto k = key(emulator_key);
  hmac_signer signer{k};
  request req;
  req.method = "PUT";
  req.target = "/dbs/d/colls/c/docs/x";
  signer.sign(req, date_tp, false);
  ASSERT_EQ(req.headers.size(), 3u);
  EXPECT_EQ(verify_authorization(k, "PUT", req.target, req.headers[2].second,
                                 req.headers[0].second, date_tp)
                .verdict,
            auth_verdict::ok);
}
