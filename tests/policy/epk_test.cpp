// EPK hash V2, the length-aware EPK order and the partition-key header
// parser. The expected EPKs are the SDKs' effective-partition-key vectors (hash
// V2): the first group is asserted by the .NET SDK
// (PartitionKeyInternalTest.cs), the second was computed by an independent
// reimplementation.

#include "georoute/actors/policy/epk.hpp"

#include <cmath>
#include <gtest/gtest.h>
#include <string>
#include <vector>

using namespace georoute;

namespace {

pk_component str(std::string s) {
  return pk_component{std::move(s)};
}
pk_component num(double d) {
  return pk_component{d};
}

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i)
    out += s;
  return out;
}

/// "abc…z" repeated `times`, cut to `chars` characters.
std::string latin_prefix(int times, std::size_t chars) {
  std::string alphabet;
  for (char c = 'a'; c <= 'z'; ++c)
    alphabet.push_back(c);
  return repeat(alphabet, times).substr(0, chars);
}

/// The Russian alphabet "абвгдеёжзийклмнопрстуфхцчшщъыьэюя": 33 letters,
/// U+0430..U+044F with ё (U+0451) after е (U+0435), 2 UTF-8 bytes each — the
/// `nonLatin` string of the SDK tests (PartitionKeyInternalTest; the Java
/// MurmurHash3 test spells it out). Without ё no SDK vector matches.
std::string cyrillic_alphabet() {
  std::string alphabet;
  auto append = [&alphabet](unsigned cp) {
    alphabet.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    alphabet.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  };
  for (unsigned cp = 0x430; cp <= 0x44F; ++cp) {
    append(cp);
    if (cp == 0x435) append(0x451);
  }
  return alphabet;
}

/// cyrillic_alphabet() repeated `times`, cut to `code_points` code points.
std::string cyrillic_prefix(int times, std::size_t code_points) {
  return repeat(cyrillic_alphabet(), times).substr(0, 2 * code_points);
}

std::string hex_bytes(const std::string& bytes) {
  static const char digits[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char b : bytes) {
    out.push_back(digits[b >> 4]);
    out.push_back(digits[b & 0xF]);
  }
  return out;
}

std::vector<pk_component> parse_ok(std::string_view text) {
  auto r = parse_partition_key_json(text);
  EXPECT_TRUE(r.ok()) << text << ": " << (r.ok() ? "" : r.error().what);
  return r.ok() ? *r : std::vector<pk_component>{};
}

std::string parse_error(std::string_view text) {
  auto r = parse_partition_key_json(text);
  EXPECT_FALSE(r.ok()) << text << " parsed, expected a problem";
  return r.ok() ? std::string{} : r.error().what;
}

} // namespace

// -- MurmurHash3 x64 128 ------------------------------------------------------

TEST(Murmur3, EmptyInput_SeedZero_IsZero) {
  auto h = murmur3_x64_128("");
  EXPECT_EQ(h[0], 0u);
  EXPECT_EQ(h[1], 0u);
}

TEST(Murmur3, Hello_MatchesReference) {
  auto h = murmur3_x64_128("hello");
  EXPECT_EQ(h[0], 0xcbd8a7b341bd9b02ULL);
  EXPECT_EQ(h[1], 0x5b1e906a48ae1d19ULL);
}

TEST(Murmur3, QuickBrownFox_MatchesReference) {
  auto h = murmur3_x64_128("The quick brown fox jumps over the lazy dog");
  EXPECT_EQ(h[0], 0xe34bbc7bbc071b6cULL);
  EXPECT_EQ(h[1], 0x7a433ca9c49a9347ULL);
}

TEST(Murmur3, SeedChangesHash) {
  EXPECT_NE(murmur3_x64_128("hello", 0), murmur3_x64_128("hello", 1));
}

// -- Byte encoding ------------------------------------------------------------

TEST(EpkEncoding, String_MarkerUtf8Terminator) {
  EXPECT_EQ(hex_bytes(encode_for_hashing_v2(str("ab"))), "086162FF");
  EXPECT_EQ(hex_bytes(encode_for_hashing_v2(str(""))), "08FF");
  EXPECT_EQ(hex_bytes(encode_for_hashing_v2(str("\xD0\xB0"))), "08D0B0FF");
}

TEST(EpkEncoding, Number_DoubleLittleEndian) {
  EXPECT_EQ(hex_bytes(encode_for_hashing_v2(num(5.0))), "050000000000001440");
  EXPECT_EQ(hex_bytes(encode_for_hashing_v2(num(-1.0))), "05000000000000F0BF");
}

TEST(EpkEncoding, BoolNullUndefined_SingleByte) {
  EXPECT_EQ(hex_bytes(encode_for_hashing_v2(pk_component{true})), "03");
  EXPECT_EQ(hex_bytes(encode_for_hashing_v2(pk_component{false})), "02");
  EXPECT_EQ(hex_bytes(encode_for_hashing_v2(pk_component{pk_null{}})), "01");
  EXPECT_EQ(hex_bytes(encode_for_hashing_v2(pk_component{pk_undefined{}})),
            "00");
}

TEST(EpkEncoding, LongString_NotTruncated) {
  EXPECT_EQ(encode_for_hashing_v2(str(std::string(145, 'a'))).size(), 147u);
}

// -- Vectors asserted by the SDK ----------------------------------------------

TEST(Epk, Number_Five_MatchesSdkVector) {
  EXPECT_EQ(epk_v2({num(5.0)}), "19C08621B135968252FB34B4CF66F811");
}

TEST(Epk, Number_LongFraction_MatchesSdkVector) {
  EXPECT_EQ(epk_v2({num(5.12312419050912359123)}),
            "0EF2E2D82460884AF0F6440BE4F726A8");
}

TEST(Epk, String_Redmond_MatchesSdkVector) {
  EXPECT_EQ(epk_v2({str("redmond")}), "22E342F38A486A088463DFF7838A5963");
}

TEST(Epk, Bool_True_MatchesSdkVector) {
  EXPECT_EQ(epk_v2({pk_component{true}}), "0E711127C5B5A8E4726AC6DD306A3E59");
}

TEST(Epk, Bool_False_MatchesSdkVector) {
  EXPECT_EQ(epk_v2({pk_component{false}}), "2FE1BE91E90A3439635E0E9E37361EF2");
}

TEST(Epk, Null_MatchesSdkVector) {
  EXPECT_EQ(epk_v2({pk_component{pk_null{}}}),
            "378867E4430E67857ACE5C908374FE16");
}

TEST(Epk, Undefined_MatchesSdkVector) {
  EXPECT_EQ(epk_v2({pk_component{pk_undefined{}}}),
            "11622DAA78F835834610ABE56EFF5CB5");
}

TEST(Epk, Mixed_FourComponentsHashedOnce_MatchesSdkVector) {
  EXPECT_EQ(epk_v2({num(5.0), str("redmond"), pk_component{true},
                    pk_component{pk_null{}}}),
            "3032DECBE2AB1768D8E0AEDEA35881DF");
}

TEST(Epk, String_145a_NoTruncation_MatchesSdkVector) {
  EXPECT_EQ(epk_v2({str(std::string(145, 'a'))}),
            "36375D21568760E891C9CB7002D5E059");
}

TEST(Epk, String_Latin99_MatchesSdkVector) {
  EXPECT_EQ(epk_v2({str(latin_prefix(5, 99))}),
            "072D8FA3228DD2A6C0A7129C845700E6");
}

TEST(Epk, String_Latin100_MatchesSdkVector) {
  EXPECT_EQ(epk_v2({str(latin_prefix(5, 100))}),
            "023D5F0B62EBEF22A43564F267193B4D");
}

TEST(Epk, String_Latin101_MatchesSdkVector) {
  EXPECT_EQ(epk_v2({str(latin_prefix(5, 101))}),
            "357D83181DB32D35F58CDA3C9F2E0742");
}

TEST(Epk, String_Cyrillic49_MatchesSdkVector) {
  EXPECT_EQ(epk_v2({str(cyrillic_prefix(4, 49))}),
            "3742C1AF65AFA809282539F4BCDF2F6F");
}

TEST(Epk, String_Cyrillic50_MatchesSdkVector) {
  EXPECT_EQ(epk_v2({str(cyrillic_prefix(4, 50))}),
            "399CF1F141E066E09CC7557EA7F0977A");
}

TEST(Epk, String_Cyrillic101_MatchesSdkVector) {
  EXPECT_EQ(epk_v2({str(cyrillic_prefix(4, 101))}),
            "0B6D25D07748AB9CA0F523D4BAD146C8");
}

// -- More SDK vectors (PartitionKeyInternalTest.cs, not in the reference) ---

TEST(Epk, String_Cyrillic51_MatchesSdkVector) {
  EXPECT_EQ(epk_v2({str(cyrillic_prefix(4, 51))}),
            "2D63C2F5FDAC6EFE5660CD509A723A90");
}

TEST(Epk, String_Cyrillic99_MatchesSdkVector) {
  EXPECT_EQ(epk_v2({str(cyrillic_prefix(4, 99))}),
            "1E9836D9BCB67FDB2B5C984BD40AFAF9");
}

TEST(Epk, String_Cyrillic100_MatchesSdkVector) {
  EXPECT_EQ(epk_v2({str(cyrillic_prefix(4, 100))}),
            "16102F19448867537E51BB4377962AF9");
}

// -- Vectors computed independently (the SDKs' hash V2, a second set)
// -----------

TEST(Epk, String_Empty_MatchesComputedVector) {
  EXPECT_EQ(epk_v2({str("")}), "32E9366E637A71B4E710384B2F4970A0");
}

TEST(Epk, String_Abc_MatchesComputedVector) {
  EXPECT_EQ(epk_v2({str("abc")}), "2424691CC38A7EEF2A65ADE404E1F528");
}

TEST(Epk, Number_Zero_MatchesComputedVector) {
  EXPECT_EQ(epk_v2({num(0)}), "155B95BEDAC4B1E9EC1CDC9BB0DDDE58");
}

TEST(Epk, Number_One_MatchesComputedVector) {
  EXPECT_EQ(epk_v2({num(1)}), "20CD98B339BA78A5D0CF6953B87070B0");
}

TEST(Epk, Number_MinusOne_MatchesComputedVector) {
  EXPECT_EQ(epk_v2({num(-1)}), "19938E7A936C1C5B9E3AE842BBC16839");
}

TEST(Epk, Number_OnePointFive_MatchesComputedVector) {
  EXPECT_EQ(epk_v2({num(1.5)}), "35C5DDEB6C795D16A9963C73C54E97BC");
}

TEST(Epk, MultiHash_AB_MatchesComputedVector) {
  EXPECT_EQ(epk_v2_multihash({str("a"), str("b")}),
            "3A5381E1114EB8D3FCC90795045B49B7"
            "195644569A78B1E22D200348AF9416CE");
}

// -- Shape
// ----------------------------------------------------------------------

TEST(Epk, EmptyKey_IsMin) {
  EXPECT_EQ(epk_v2({}), "");
  EXPECT_EQ(epk_v2({}), epk_min);
  EXPECT_EQ(epk_v2_multihash({}), "");
  EXPECT_EQ(epk_max, "FF");
}

TEST(Epk, AnyKey_32UppercaseHexBelowFF) {
  for (const auto& key : std::vector<std::vector<pk_component>>{
           {str("redmond")}, {num(5.0)}, {pk_component{pk_undefined{}}}}) {
    const std::string e = epk_v2(key);
    ASSERT_EQ(e.size(), 32u);
    EXPECT_EQ(e.find_first_not_of("0123456789ABCDEF"), std::string::npos);
    EXPECT_LE(e[0], '3') << "byte[0] &= 0x3F keeps every EPK below 40";
    EXPECT_LT(epk_compare(e, epk_max), 0);
  }
}

TEST(Epk, MultiHash_SingleLevel_EqualsHash) {
  EXPECT_EQ(epk_v2_multihash({str("redmond")}), epk_v2({str("redmond")}));
}

TEST(Epk, MultiHash_PrefixKey_IsPrefixOfFullKey) {
  const std::string full =
      epk_v2_multihash({str("a"), str("b"), pk_component{true}});
  ASSERT_EQ(full.size(), 96u);
  EXPECT_EQ(full.substr(0, 64), epk_v2_multihash({str("a"), str("b")}));
  EXPECT_EQ(full.substr(64), epk_v2({pk_component{true}}));
}

TEST(Epk, Hash_TwoComponents_DiffersFromMultiHash) {
  EXPECT_NE(epk_v2({str("a"), str("b")}),
            epk_v2_multihash({str("a"), str("b")}).substr(0, 32));
}

// -- Length-aware order -------------------------------------------------------

TEST(EpkCompare, PartialEqualsZeroPadded) {
  EXPECT_EQ(epk_compare("05C1", "05C100"), 0);
  EXPECT_EQ(epk_compare("05C100", "05C1"), 0);
  EXPECT_EQ(epk_compare("", "00"), 0);
  EXPECT_EQ(epk_compare("", ""), 0);
  EXPECT_FALSE(epk_less("05C1", "05C100"));
  EXPECT_FALSE(epk_less("05C100", "05C1"));
}

TEST(EpkCompare, Table_OrdersHexStrings) {
  struct row {
    const char* a;
    const char* b;
    int sign;
  };
  const row rows[] = {
      {"05C1", "05C2", -1},     {"05C1", "05C10001", -1}, {"05C1", "05C0FF", 1},
      {"", "01", -1},           {"FF", "FEFFFFFF", 1},    {"FF", "FF0000", 0},
      {"7F", "7EFFFFFF", 1},    {"0A", "09", 1},          {"A0", "9F", 1},
      {"3F", "3F00000001", -1},
  };
  for (const auto& r : rows) {
    const int c = epk_compare(r.a, r.b);
    EXPECT_EQ((c > 0) - (c < 0), r.sign) << r.a << " vs " << r.b;
    const int back = epk_compare(r.b, r.a);
    EXPECT_EQ((back > 0) - (back < 0), -r.sign) << r.b << " vs " << r.a;
  }
}

TEST(EpkCompare, OrdinalLessImpliesNotGreater) {
  const char* keys[] = {"",         "0",  "00",   "05", "05C1", "05C100",
                        "05C10001", "7F", "7EFF", "FF", "FE",   "FEFF"};
  for (const char* a : keys)
    for (const char* b : keys)
      if (std::string_view{a} < std::string_view{b}) {
        EXPECT_LE(epk_compare(a, b), 0) << a << " vs " << b;
      }
}

// -- Partition-key header parser ----------------------------------------------

TEST(PkJson, String_Parses) {
  auto v = parse_ok(R"(["p0"])");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0], str("p0"));
}

TEST(PkJson, Numbers_ParseAsDoubles) {
  EXPECT_EQ(parse_ok("[5]"), std::vector<pk_component>{num(5.0)});
  EXPECT_EQ(parse_ok("[-1.5e2]"), std::vector<pk_component>{num(-150.0)});
  EXPECT_EQ(parse_ok("[0]"), std::vector<pk_component>{num(0.0)});
  EXPECT_EQ(parse_ok("[1E+2]"), std::vector<pk_component>{num(100.0)});
  EXPECT_EQ(parse_ok("[2.5e-1]"), std::vector<pk_component>{num(0.25)});
  EXPECT_EQ(parse_ok("[5.12312419050912359123]"),
            std::vector<pk_component>{num(5.12312419050912359123)});
}

TEST(PkJson, TinyNumbers_RoundToSignedZero) {
  const auto pos = parse_ok("[1e-400]");
  ASSERT_EQ(pos.size(), 1u);
  ASSERT_TRUE(std::holds_alternative<double>(pos[0]));
  EXPECT_EQ(std::get<double>(pos[0]), 0.0);
  EXPECT_FALSE(std::signbit(std::get<double>(pos[0])));
  const auto neg = parse_ok("[-0.00000000000000000001e-390]");
  ASSERT_EQ(neg.size(), 1u);
  ASSERT_TRUE(std::holds_alternative<double>(neg[0]));
  EXPECT_EQ(std::get<double>(neg[0]), 0.0);
  EXPECT_TRUE(std::signbit(std::get<double>(neg[0])));
  EXPECT_EQ(parse_ok("[4.9e-324]"), std::vector<pk_component>{num(4.9e-324)});
}

TEST(PkJson, Literals_Parse) {
  EXPECT_EQ(parse_ok("[true]"), std::vector<pk_component>{pk_component{true}});
  EXPECT_EQ(parse_ok("[false]"),
            std::vector<pk_component>{pk_component{false}});
  EXPECT_EQ(parse_ok("[null]"),
            std::vector<pk_component>{pk_component{pk_null{}}});
}

TEST(PkJson, EmptyObject_IsUndefined) {
  EXPECT_EQ(parse_ok("[{}]"),
            std::vector<pk_component>{pk_component{pk_undefined{}}});
  EXPECT_EQ(parse_ok("[ { } ]"),
            std::vector<pk_component>{pk_component{pk_undefined{}}});
}

TEST(PkJson, EmptyArray_IsEmptyKey) {
  EXPECT_TRUE(parse_ok("[]").empty());
  EXPECT_TRUE(parse_ok(" [ ] ").empty());
}

TEST(PkJson, SeveralComponentsWithWhitespace_Parse) {
  auto v = parse_ok(" [ \"a\" ,\n\t\"b\" , 5 , true , null , {} ]\r\n");
  EXPECT_EQ(v, (std::vector<pk_component>{
                   str("a"), str("b"), num(5.0), pk_component{true},
                   pk_component{pk_null{}}, pk_component{pk_undefined{}}}));
}

TEST(PkJson, SimpleEscapes_Decode) {
  auto v = parse_ok(R"(["\"\\\/\b\f\n\r\t"])");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0], str("\"\\/\b\f\n\r\t"));
}

TEST(PkJson, UnicodeEscapes_DecodeToUtf8) {
  EXPECT_EQ(parse_ok(R"(["\u0041"])"), std::vector<pk_component>{str("A")});
  EXPECT_EQ(parse_ok(R"(["\u00e9"])"),
            std::vector<pk_component>{str("\xC3\xA9")});
  EXPECT_EQ(parse_ok(R"(["\u0430\u044F"])"),
            std::vector<pk_component>{str("\xD0\xB0\xD1\x8F")});
  EXPECT_EQ(parse_ok(R"(["\u20AC"])"),
            std::vector<pk_component>{str("\xE2\x82\xAC")});
  EXPECT_EQ(parse_ok(R"(["\u0000"])"),
            std::vector<pk_component>{str(std::string(1, '\0'))});
}

TEST(PkJson, SurrogatePair_DecodesToFourByteUtf8) {
  EXPECT_EQ(parse_ok(R"(["\uD83D\uDE00"])"),
            std::vector<pk_component>{str("\xF0\x9F\x98\x80")});
  EXPECT_EQ(parse_ok(R"(["\udbff\udfff"])"),
            std::vector<pk_component>{str("\xF4\x8F\xBF\xBF")});
}

TEST(PkJson, RawUtf8_PassesThrough) {
  EXPECT_EQ(parse_ok("[\"\xD0\xB0\xD0\xB1\xD0\xB2\"]"),
            std::vector<pk_component>{str("\xD0\xB0\xD0\xB1\xD0\xB2")});
  EXPECT_EQ(parse_ok("[\"\xF0\x9F\x98\x80\"]"),
            std::vector<pk_component>{str("\xF0\x9F\x98\x80")});
}

TEST(PkJson, EightComponents_Accepted) {
  EXPECT_EQ(parse_ok("[1,2,3,4,5,6,7,8]").size(), 8u);
}

TEST(PkJson, HeaderToEpk_MixedKey_MatchesSdkVector) {
  EXPECT_EQ(epk_v2(parse_ok(R"([5.0,"redmond",true,null])")),
            "3032DECBE2AB1768D8E0AEDEA35881DF");
  EXPECT_EQ(epk_v2(parse_ok("[{}]")), "11622DAA78F835834610ABE56EFF5CB5");
  EXPECT_EQ(epk_v2(parse_ok("[5]")), "19C08621B135968252FB34B4CF66F811");
}

TEST(PkJson, HeaderToEpk_EscapedCyrillic49_MatchesSdkVector) {
  // The same 49 letters as String_Cyrillic49, written as \uXXXX escapes
  // (lower-case hex), decoded from the 2-byte UTF-8 of the alphabet.
  const std::string raw = cyrillic_prefix(4, 49);
  std::string escaped = "[\"";
  for (std::size_t i = 0; i < raw.size(); i += 2) {
    static const char digits[] = "0123456789abcdef";
    const unsigned cp = ((static_cast<unsigned char>(raw[i]) & 0x1Fu) << 6) |
                        (static_cast<unsigned char>(raw[i + 1]) & 0x3Fu);
    escaped += "\\u0";
    escaped.push_back(digits[(cp >> 8) & 0xF]);
    escaped.push_back(digits[(cp >> 4) & 0xF]);
    escaped.push_back(digits[cp & 0xF]);
  }
  escaped += "\"]";
  const auto key = parse_ok(escaped);
  EXPECT_EQ(key, std::vector<pk_component>{str(raw)});
  EXPECT_EQ(epk_v2(key), "3742C1AF65AFA809282539F4BCDF2F6F");
}

TEST(PkJson, Errors_NamePositionAndExpectation) {
  struct row {
    std::string text;
    std::string needle;
  };
  const std::vector<row> rows = {
      {"", "offset 0: expected '['"},
      {"\"a\"", "offset 0: expected '['"},
      {"[", "offset 1: expected a component"},
      {"[\"a\"", "offset 4: expected ',' or ']'"},
      {"[\"a\" \"b\"]", "offset 5: expected ',' or ']'"},
      {"[\"a\"]x", "offset 5: expected the end"},
      {"[1] [2]", "offset 4: expected the end"},
      {"[1,]", "offset 3: expected a component"},
      {"[,1]", "offset 1: expected a component"},
      {"[[1]]", "offset 1: expected a component, not a nested array"},
      {"[{\"a\":1}]", "offset 2: expected '}'"},
      {"[01]", "offset 2: expected ',' or ']'"},
      {"[1.]", "offset 3: expected a digit after '.'"},
      {"[1e]", "offset 3: expected a digit in the exponent"},
      {"[-]", "offset 2: expected a digit"},
      {"[+1]", "offset 1: expected a component"},
      {"[.5]", "offset 1: expected a component"},
      {"[NaN]", "offset 1: expected a component"},
      {"[Infinity]", "offset 1: expected a component"},
      {"[1e400]", "offset 1: expected a number within double range"},
      {"[-1e400]", "offset 1: expected a number within double range"},
      {"[1234e306]", "offset 1: expected a number within double range"},
      {"[0.1e310]", "offset 1: expected a number within double range"},
      {"[tru]", "offset 1: expected 'true'"},
      {"[nul]", "offset 1: expected 'null'"},
      {"[True]", "offset 1: expected a component"},
      {"[\"abc", "offset 5: expected '\"' to close the string"},
      {"[\"a\\x\"]", "offset 3: expected one of"},
      {"[\"a\\", "offset 4: expected an escape character"},
      {"[\"\\u12G4\"]", "offset 4: expected 4 hex digits after \\u"},
      {"[\"\\u12\"]", "offset 4: expected 4 hex digits after \\u"},
      {"[\"\\uD83D\"]", "offset 8: expected a low surrogate"},
      {"[\"\\uD83Dx\"]", "offset 8: expected a low surrogate"},
      {"[\"\\uD83D\\u0041\"]", "offset 8: expected a low surrogate"},
      {"[\"\\uDE00\"]", "offset 2: expected a high surrogate"},
      {"[\"a\nb\"]", "offset 3: expected a printable character"},
      {"[\"\xC3\"]", "offset 2: expected well-formed UTF-8"},
      {"[\"\xC0\xAF\"]", "offset 2: expected well-formed UTF-8"},
      {"[\"\xED\xA0\x80\"]", "offset 2: expected well-formed UTF-8"},
      {"[\"\xF4\x90\x80\x80\"]", "offset 2: expected well-formed UTF-8"},
      {"[\"\xFF\"]", "offset 2: expected well-formed UTF-8"},
      {"[1,2,3,4,5,6,7,8,9]", "offset 17: expected ']': a partition key has "
                              "at most 8 components"},
      {"{}", "offset 0: expected '['"},
  };
  for (const auto& r : rows) {
    const std::string what = parse_error(r.text);
    EXPECT_NE(what.find(r.needle), std::string::npos)
        << "input: " << r.text << "\nproblem: " << what
        << "\nexpected to contain: " << r.needle;
    EXPECT_EQ(what.rfind("partition key JSON at offset ", 0), 0u) << what;
  }
}

namespace {

// epk_for: the one place that picks the hash for a collection's definition.
TEST(EpkFor, HashV2_MultiHash_Version1_BadKey) {
  using georoute::epk_for;
  georoute::partition_key_definition hash;
  auto single = epk_for(hash, R"(["p0"])");
  ASSERT_TRUE(single) << single.error().what;
  EXPECT_EQ(*single,
            georoute::epk_v2({georoute::pk_component{std::string{"p0"}}}));
  georoute::partition_key_definition multi;
  multi.kind = "MultiHash";
  auto m = epk_for(multi, R"(["a","b"])");
  ASSERT_TRUE(m) << m.error().what;
  EXPECT_EQ(*m, georoute::epk_v2_multihash(
                    {georoute::pk_component{std::string{"a"}},
                     georoute::pk_component{std::string{"b"}}}));
  EXPECT_NE(*m, *single);
  georoute::partition_key_definition v1;
  v1.version = 1;
  auto old = epk_for(v1, R"(["p0"])");
  ASSERT_FALSE(old);
  EXPECT_EQ(old.error().what,
            "the collection uses hash version 1; georoute supports version 2");
  auto bad = epk_for(hash, R"(["p0")");
  EXPECT_FALSE(bad);
}

} // namespace
