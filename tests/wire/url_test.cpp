#include "georoute/transport/url.hpp"

#include <gtest/gtest.h>
#include <ostream>
#include <string>

using namespace georoute::transport;

namespace {

struct valid_row {
  std::string name;
  std::string input;
  std::string scheme;
  std::string host;
  uint16_t port;
  std::string path;
  std::string origin;
  std::string host_header;
};

// ctest shows the row by this name (gtest_discover_tests pretty values).
void PrintTo(const valid_row& row, std::ostream* os) {
  *os << row.name;
}

class ParseUrlValid : public testing::TestWithParam<valid_row> {};

TEST_P(ParseUrlValid, Parses) {
  const auto& row = GetParam();
  auto r = parse_url(row.input);
  auto* u = std::get_if<url>(&r);
  ASSERT_NE(u, nullptr) << std::get<std::string>(r);
  EXPECT_EQ(u->scheme, row.scheme);
  EXPECT_EQ(u->host, row.host);
  EXPECT_EQ(u->port, row.port);
  EXPECT_EQ(u->path, row.path);
  EXPECT_EQ(u->origin(), row.origin);
  EXPECT_EQ(u->host_header(), row.host_header);
  EXPECT_EQ(endpoint_key(*u), row.origin + "/");
  EXPECT_EQ(u->tls(), row.scheme == "https");
}

INSTANTIATE_TEST_SUITE_P(
    Table, ParseUrlValid,
    testing::Values(
        valid_row{"Url_LoopbackWithPort_Parsed", "http://127.0.0.1:4301/",
                  "http", "127.0.0.1", 4301, "/", "http://127.0.0.1:4301",
                  "127.0.0.1:4301"},
        valid_row{"Url_NoPath_SlashPath", "http://127.0.0.1:4301", "http",
                  "127.0.0.1", 4301, "/", "http://127.0.0.1:4301",
                  "127.0.0.1:4301"},
        valid_row{
            "Url_HttpsDefaultPort_443", "https://acct.documents.azure.com/",
            "https", "acct.documents.azure.com", 443, "/",
            "https://acct.documents.azure.com:443", "acct.documents.azure.com"},
        valid_row{"Url_HttpDefaultPort_80", "http://h/", "http", "h", 80, "/",
                  "http://h:80", "h"},
        valid_row{"Url_UpperCaseSchemeAndHost_Lowered",
                  "HTTPS://Acct-WestUS.Documents.Azure.com:443/", "https",
                  "acct-westus.documents.azure.com", 443, "/",
                  "https://acct-westus.documents.azure.com:443",
                  "acct-westus.documents.azure.com"},
        valid_row{"Url_Ipv6Loopback_Unbracketed", "http://[::1]:8081/x", "http",
                  "::1", 8081, "/x", "http://[::1]:8081", "[::1]:8081"},
        valid_row{"Url_Ipv6NoPort_DefaultPort", "https://[::1]/", "https",
                  "::1", 443, "/", "https://[::1]:443", "[::1]"},
        valid_row{"Url_PathAndQuery_Kept", "http://h:1/a/b?c=d", "http", "h", 1,
                  "/a/b?c=d", "http://h:1", "h:1"},
        valid_row{"Url_MaxPort_Parsed", "http://h:65535/", "http", "h", 65535,
                  "/", "http://h:65535", "h:65535"}));

struct invalid_row {
  std::string name;
  std::string input;
  std::string mentions;
};

// ctest shows the row by this name (gtest_discover_tests pretty values).
void PrintTo(const invalid_row& row, std::ostream* os) {
  *os << row.name;
}

class ParseUrlInvalid : public testing::TestWithParam<invalid_row> {};

TEST_P(ParseUrlInvalid, ExplainsWhy) {
  const auto& row = GetParam();
  auto r = parse_url(row.input);
  auto* why = std::get_if<std::string>(&r);
  ASSERT_NE(why, nullptr) << "accepted";
  EXPECT_NE(why->find(row.mentions), std::string::npos) << *why;
}

INSTANTIATE_TEST_SUITE_P(
    Table, ParseUrlInvalid,
    testing::Values(
        invalid_row{"Url_Empty_Error", "", "missing scheme"},
        invalid_row{"Url_NoScheme_Error", "127.0.0.1:4301", "missing scheme"},
        invalid_row{"Url_Relative_Error", "/dbs/d", "missing scheme"},
        invalid_row{"Url_FtpScheme_Error", "ftp://h/",
                    "unsupported scheme 'ftp'"},
        invalid_row{"Url_EmptyHost_Error", "http:///x", "missing host"},
        invalid_row{"Url_PortOnly_Error", "http://:80/", "missing host"},
        invalid_row{"Url_UserInfo_Error", "http://u:p@h/", "user info"},
        invalid_row{"Url_Fragment_Error", "http://h/#f", "fragment"},
        invalid_row{"Url_SpaceInHost_Error", "http://a b/",
                    "invalid character"},
        invalid_row{"Url_EmptyPort_Error", "http://h:/", "empty port"},
        invalid_row{"Url_NonNumericPort_Error", "http://h:8o/", "invalid port"},
        invalid_row{"Url_PortZero_Error", "http://h:0/", "outside 1..65535"},
        invalid_row{"Url_PortTooLarge_Error", "http://h:65536/",
                    "outside 1..65535"},
        invalid_row{"Url_PortSixDigits_Error", "http://h:100000/",
                    "invalid port"},
        invalid_row{"Url_NegativePort_Error", "http://h:-1/", "invalid port"},
        invalid_row{"Url_UnterminatedIpv6_Error", "http://[::1/",
                    "unterminated"},
        invalid_row{"Url_GarbageAfterIpv6_Error", "http://[::1]x/",
                    "after IPv6"},
        invalid_row{"Url_EmptyIpv6_Error", "http://[]/", "invalid IPv6"},
        invalid_row{"Url_Ipv6EmptyPort_Error", "http://[::1]:/",
                    "empty port"}));

struct loopback_row {
  std::string name;
  std::string host;
  bool loopback;
};

// ctest shows the row by this name (gtest_discover_tests pretty values).
void PrintTo(const loopback_row& row, std::ostream* os) {
  *os << row.name;
}

class IsLoopbackHost : public testing::TestWithParam<loopback_row> {};

TEST_P(IsLoopbackHost, Decides) {
  EXPECT_EQ(is_loopback_host(GetParam().host), GetParam().loopback);
}

INSTANTIATE_TEST_SUITE_P(
    Table, IsLoopbackHost,
    testing::Values(
        loopback_row{"Loopback_127001_True", "127.0.0.1", true},
        loopback_row{"Loopback_Top127_True", "127.255.255.254", true},
        loopback_row{"Loopback_Localhost_True", "localhost", true},
        loopback_row{"Loopback_Ipv6_True", "::1", true},
        loopback_row{"Loopback_128Net_False", "128.0.0.1", false},
        loopback_row{"Loopback_ThreeParts_False", "127.0.0", false},
        loopback_row{"Loopback_FiveParts_False", "127.0.0.1.5", false},
        loopback_row{"Loopback_OctetOver255_False", "127.0.0.256", false},
        loopback_row{"Loopback_EmptyOctet_False", "127..0.1", false},
        loopback_row{"Loopback_TrailingDot_False", "127.0.0.1.", false},
        loopback_row{"Loopback_NamedHost_False", "127.example.com", false},
        loopback_row{"Loopback_PublicName_False", "acct.documents.azure.com",
                     false},
        loopback_row{"Loopback_Empty_False", "", false},
        loopback_row{"Loopback_LongOctet_False", "127.0.0.0001", false}));

TEST(EncodedPath, EscapesWhatAPathCannotCarry_AndDecodesBack) {
  auto enc = [](std::string_view text, bool keep_slash) {
    std::string out = "/";
    append_encoded_path(out, text, keep_slash);
    return out;
  };
  EXPECT_EQ(enc("dbs/d/colls/c", true), "/dbs/d/colls/c");
  EXPECT_EQ(enc("a b", false), "/a%20b");
  EXPECT_EQ(enc("50%", false), "/50%25");
  EXPECT_EQ(enc("a/b", false), "/a%2Fb");
  EXPECT_EQ(enc("a/b", true), "/a/b");
  EXPECT_EQ(enc("q\"<>\\^`{|}", false), "/q%22%3C%3E%5C%5E%60%7B%7C%7D");
  EXPECT_EQ(enc("caf\xc3\xa9", false), "/caf%C3%A9");
  EXPECT_EQ(enc(std::string_view{"n\0l", 3}, false), "/n%00l");
  EXPECT_EQ(enc("\r\n\t", false), "/%0D%0A%09");
  // Base64 rids and the characters ids commonly hold stay as they are.
  EXPECT_EQ(enc("dbs/Xy+=/colls/a-b_c.d~e!$&'()*,;:@", true),
            "/dbs/Xy+=/colls/a-b_c.d~e!$&'()*,;:@");
  // Every byte survives the round trip through percent_decode.
  std::string all;
  for (int c = 0; c < 256; ++c)
    all += static_cast<char>(c);
  std::string out;
  append_encoded_path(out, all, false);
  for (char c : out)
    EXPECT_TRUE(c > 0x20 && c < 0x7f) << "unescaped byte " << int(c);
  auto back = percent_decode(out);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, all);
}

} // namespace
