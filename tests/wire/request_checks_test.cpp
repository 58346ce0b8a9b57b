// The checks a request passes before the HTTP client sends anything
// (transport/request_checks.hpp). The client refuses a request with a
// problem as `protocol`, "request not sent: <problem>"; the transport
// tests (HttpClient.Request_CrLfInHeaderOrTarget_RefusedBeforeSending)
// show that nothing reaches the server then.

#include "georoute/transport/request_checks.hpp"

#include <cstdint>
#include <gtest/gtest.h>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

using namespace georoute::transport;
using namespace georoute::transport::request_checks;

namespace {

using header_list = std::vector<std::pair<std::string, std::string>>;

struct problem_row {
  std::string name;
  std::string method;
  std::string target;
  header_list headers;
  std::string problem; ///< "" for a request that can be sent
};

// ctest shows the row by this name (gtest_discover_tests pretty values).
void PrintTo(const problem_row& row, std::ostream* os) {
  *os << row.name;
}

class RequestProblem : public testing::TestWithParam<problem_row> {};

TEST_P(RequestProblem, NamesWhatCannotBeWritten) {
  const auto& row = GetParam();
  request r;
  r.method = row.method;
  r.endpoint = "http://127.0.0.1:4301/";
  r.target = row.target;
  r.headers = row.headers;
  EXPECT_EQ(request_problem(r), row.problem);
}

const header_list signed_headers = {
    {"x-ms-date", "Thu, 27 Apr 2026 00:00:00 GMT"},
    {"x-ms-version", "2020-07-15"},
    {"authorization", "type%3Dmaster%26ver%3D1.0%26sig%3Dabc%2B%2F%3D"},
    {"x-ms-session-token", "0:1#12#3=4"}};

INSTANTIATE_TEST_SUITE_P(
    Table, RequestProblem,
    testing::Values(
        problem_row{"Request_SignedGet_Sendable", "GET", "/dbs/d/colls/c",
                    signed_headers, ""},
        problem_row{"Request_QueryPostWithContinuation_Sendable",
                    "POST",
                    "/dbs/d/colls/c/docs",
                    {{"Content-Type", "application/query+json"},
                     {"x-ms-documentdb-isquery", "True"},
                     {"x-ms-continuation", R"({"token":"+RID:1#RT:1"})"}},
                    ""},
        problem_row{"Request_EveryTokenCharacterInNames_Sendable",
                    "M-SEARCH",
                    "/",
                    {{"!#$%&'*+-.^_`|~09azAZ", "v"}},
                    ""},
        problem_row{"Request_TabAndSpacesInValue_Sendable",
                    "GET",
                    "/",
                    {{"x-note", " a\tb "}},
                    ""},
        problem_row{
            "Request_EmptyValue_Sendable", "GET", "/", {{"x-empty", ""}}, ""},
        problem_row{"Request_EmptyTarget_Sendable", "GET", "", {}, ""},
        problem_row{"Request_NonAsciiByteInTarget_Sendable",
                    "GET",
                    "/dbs/d/colls/c/docs/\xc3\xa9",
                    {},
                    ""},
        problem_row{"Request_ClientOwnedHeaders_NotRefused",
                    "GET",
                    "/",
                    {{"Host", "evil.example"}, {"Content-Length", "99"}},
                    ""},
        problem_row{"Method_SpaceInside_Refused",
                    "GET /evil",
                    "/",
                    {},
                    "the method 'GET /evil' is not an HTTP token"},
        problem_row{"Method_Empty_Refused",
                    "",
                    "/",
                    {},
                    "the method '' is not an HTTP token"},
        problem_row{"Method_CrLf_Refused",
                    "GET\r\n",
                    "/",
                    {},
                    "the method 'GET\r\n' is not an HTTP token"},
        problem_row{"Method_Separator_Refused",
                    "GE(T)",
                    "/",
                    {},
                    "the method 'GE(T)' is not an HTTP token"},
        problem_row{"Target_Space_Refused",
                    "GET",
                    "/dbs/d/colls/c/docs/a b",
                    {},
                    "the target contains a space or a control character"},
        problem_row{"Target_Tab_Refused",
                    "GET",
                    "/a\tb",
                    {},
                    "the target contains a space or a control character"},
        problem_row{"Target_CrLf_Refused",
                    "GET",
                    "/a\r\nHost: x",
                    {},
                    "the target contains a space or a control character"},
        problem_row{"Target_Nul_Refused",
                    "GET",
                    std::string("/a\0b", 4),
                    {},
                    "the target contains a space or a control character"},
        problem_row{"Target_Del_Refused",
                    "GET",
                    "/a\x7f",
                    {},
                    "the target contains a space or a control character"},
        problem_row{"HeaderName_Space_Refused",
                    "GET",
                    "/",
                    {{"x-ms bad", "v"}},
                    "the header name 'x-ms bad' is not an HTTP token"},
        problem_row{"HeaderName_Empty_Refused",
                    "GET",
                    "/",
                    {{"", "v"}},
                    "the header name '' is not an HTTP token"},
        problem_row{"HeaderName_Colon_Refused",
                    "GET",
                    "/",
                    {{"x-a:b", "v"}},
                    "the header name 'x-a:b' is not an HTTP token"},
        problem_row{"HeaderName_CrLf_Refused",
                    "GET",
                    "/",
                    {{"x-a\r\nx-b", "v"}},
                    "the header name 'x-a\r\nx-b' is not an HTTP token"},
        problem_row{"HeaderValue_SmuggledRequest_Refused",
                    "GET",
                    "/dbs/d",
                    {{"x-ms-session-token",
                      "0:1#1\r\nContent-Length: 40\r\n\r\nGET /x"}},
                    "the value of header 'x-ms-session-token' contains a CR, "
                    "LF or NUL character"},
        problem_row{"HeaderValue_LoneLf_Refused",
                    "GET",
                    "/",
                    {{"x-a", "1\n2"}},
                    "the value of header 'x-a' contains a CR, LF or NUL "
                    "character"},
        problem_row{"HeaderValue_LoneCr_Refused",
                    "GET",
                    "/",
                    {{"x-a", "1\r2"}},
                    "the value of header 'x-a' contains a CR, LF or NUL "
                    "character"},
        problem_row{"HeaderValue_Nul_Refused",
                    "GET",
                    "/",
                    {{"x-a", std::string("1\0002", 3)}},
                    "the value of header 'x-a' contains a CR, LF or NUL "
                    "character"},
        problem_row{"HeaderValue_SecondHeaderBad_NamesIt",
                    "GET",
                    "/",
                    {{"x-a", "fine"}, {"x-b", "bad\r\n"}},
                    "the value of header 'x-b' contains a CR, LF or NUL "
                    "character"},
        problem_row{"Order_MethodBeforeTarget",
                    "GET /evil",
                    "/a b",
                    {},
                    "the method 'GET /evil' is not an HTTP token"},
        problem_row{"Order_TargetBeforeHeaders",
                    "GET",
                    "/a b",
                    {{"x bad", "v"}},
                    "the target contains a space or a control character"},
        problem_row{"Order_HeadersInTheirOrder",
                    "GET",
                    "/",
                    {{"x-a", "bad\n"}, {"x bad", "v"}},
                    "the value of header 'x-a' contains a CR, LF or NUL "
                    "character"}));

struct owned_row {
  std::string name;
  std::string header;
  bool owned;
};

void PrintTo(const owned_row& row, std::ostream* os) {
  *os << row.name;
}

class ClientOwned : public testing::TestWithParam<owned_row> {};

TEST_P(ClientOwned, Decides) {
  EXPECT_EQ(client_owned(GetParam().header), GetParam().owned);
}

INSTANTIATE_TEST_SUITE_P(
    Table, ClientOwned,
    testing::Values(owned_row{"Host_Owned", "Host", true},
                    owned_row{"HostUpperCase_Owned", "HOST", true},
                    owned_row{"UserAgent_Owned", "user-Agent", true},
                    owned_row{"ContentLength_Owned", "content-length", true},
                    owned_row{"Connection_Owned", "Connection", true},
                    owned_row{"TransferEncoding_Owned", "TRANSFER-ENCODING",
                              true},
                    owned_row{"MsVersion_Callers", "x-ms-version", false},
                    owned_row{"ContentType_Callers", "Content-Type", false},
                    owned_row{"HostPrefix_Callers", "Hostname", false},
                    owned_row{"Empty_Callers", "", false}));

TEST(RequestChecks, Iequals_IgnoresAsciiCaseOnly) {
  EXPECT_TRUE(iequals("X-Ms-Date", "x-ms-date"));
  EXPECT_TRUE(iequals("", ""));
  EXPECT_FALSE(iequals("host", "hos"));
  EXPECT_FALSE(iequals("host", "hosT "));
  EXPECT_FALSE(iequals("a-b", "a_b"));
}

TEST(RequestChecks, IsToken_RfcTokenCharactersOnly) {
  EXPECT_TRUE(is_token("GET"));
  EXPECT_TRUE(is_token("x-ms-documentdb-partitionkey"));
  EXPECT_TRUE(is_token("!#$%&'*+-.^_`|~"));
  EXPECT_FALSE(is_token(""));
  for (const char* bad : {"a b", "a:b", "a\"b", "a(b", "a,b", "a/b", "a;b",
                          "a=b", "a@b", "a[b", "a{b", "a\tb", "a\x7f"})
    EXPECT_FALSE(is_token(bad)) << bad;
  EXPECT_FALSE(is_token(std::string("a\0b", 3)));
  EXPECT_FALSE(is_token("\xc3\xa9"));
}

TEST(RequestChecks, AuthorityOf_HostAndPort_Ipv6Bracketed) {
  url u;
  u.scheme = "https";
  u.host = "acct-westus.documents.azure.com";
  u.port = 443;
  EXPECT_EQ(authority_of(u), "acct-westus.documents.azure.com:443");
  u.host = "127.0.0.1";
  u.port = 4301;
  EXPECT_EQ(authority_of(u), "127.0.0.1:4301");
  u.host = "::1";
  u.port = 8081;
  EXPECT_EQ(authority_of(u), "[::1]:8081");
}

TEST(RequestChecks, ParseNumber_WholeNumberOrFallback) {
  EXPECT_EQ(parse_number<int>("3200", 0), 3200);
  EXPECT_EQ(parse_number<int64_t>("1500", -1), 1500);
  EXPECT_EQ(parse_number<int64_t>("-5", -1), -5);
  EXPECT_DOUBLE_EQ(parse_number<double>("2.75", 0.0), 2.75);
  // What the response mapping gets from an absent or garbage header.
  EXPECT_EQ(parse_number<int>("", 0), 0);
  EXPECT_EQ(parse_number<int>("12ab", 0), 0);
  EXPECT_EQ(parse_number<int64_t>("soon", -1), -1);
  EXPECT_DOUBLE_EQ(parse_number<double>("lots", 0.0), 0.0);
  EXPECT_EQ(parse_number<int>(" 1", 7), 7);
  EXPECT_EQ(parse_number<int>("+1", 7), 7);
  EXPECT_EQ(parse_number<int>("99999999999", 7), 7); // out of range
}

} // namespace
