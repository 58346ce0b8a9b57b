// The hot path's JSON object check against nlohmann's accept: it may say
// "an object" only where nlohmann accepts the text and it starts with '{'
// (after whitespace, no byte-order mark), and should say so for every such
// text within its nesting limit. Hand-picked cases, then a differential run
// over random mutations of real bodies.

#include "georoute/actors/policy/json_check.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

namespace {

using georoute::append_json_string;
using georoute::is_json_array_text;
using georoute::is_json_object_text;
using georoute::json_each_element;
using georoute::json_each_member;
using georoute::json_string_value;

// What the check must answer: nlohmann accepts, and the first non-blank
// byte is '{' (a BOM makes it not an object for the router).
bool expected(const std::string& s) {
  if (!nlohmann::json::accept(s)) return false;
  auto first = s.find_first_not_of(" \t\r\n");
  return first != std::string::npos && s[first] == '{';
}

const std::vector<std::string> objects = {
    R"({"id":"doc-1","pk":"p0","n":1,"_rid":"AAAAAAAAAAAAAAAAAAAAAA==","_etag":"\"0\"","_ts":1700000000})",
    "{}",
    " \t\r\n{ } \n",
    R"({"a":[],"b":{},"c":[{}],"d":[[[]]]})",
    R"({"n":[0,-0,1.5,-2e10,3E+2,4e-3,0.0e0,123456789012345678901234567890]})",
    R"({"n":[1e308,-1.7976931348623157e308,1e-400,2.5E-3]})",
    R"({"s":"\"\\\/\b\f\n\r\t\u00e9\uD83D\uDE00"})",
    "{\"u\":\"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \xED\x9F\xBF "
    "\xEE\x80\x80\"}",
    R"({"t":true,"f":false,"z":null})",
    R"({"a" : 1 , "b" : [ 1 , 2 ] })",
};

const std::vector<std::string> not_objects = {
    "",
    " ",
    "[]",
    "1",
    "\"s\"",
    "null",
    "{",
    "}",
    "{}}",
    "{} {}",
    "{,}",
    R"({"a"})",
    R"({"a":})",
    R"({"a":1,})",
    R"({"a":[1})",
    R"({"a":{"b":1]})",
    R"({"a":[1,]})",
    R"({a:1})",
    R"({'a':1})",
    R"({"a":01})",
    R"({"a":1.})",
    R"({"a":.5})",
    R"({"a":1e})",
    R"({"a":-})",
    R"({"a":+1})",
    R"({"a":tru})",
    R"({"a":True})",
    R"({"a":"\x"})",
    R"({"a":"\u12"})",
    R"({"a":"\uDE00"})",
    R"({"a":"\uD83D"})",
    R"({"a":"\uD83Dx"})",
    R"({"a":"\uD83D\u0041"})",
    "{\"a\":\"\x01\"}",
    "{\"a\":\"\xC0\x80\"}",
    "{\"a\":\"\xED\xA0\x80\"}",
    "{\"a\":\"\xF4\x90\x80\x80\"}",
    "{\"a\":\"\xE2\x82\"}",
    "{\"a\":\"\xFF\"}",
    "\xEF\xBB\xBF{}",
    "{\"a\":1} x",
    "{\"a\":1}/**/",
    R"({"a":1e400})",
    R"({"a":-1E+309})",
};

TEST(JsonCheck, Objects_Yes) {
  for (const auto& s : objects) {
    ASSERT_TRUE(expected(s)) << "bad fixture: " << s;
    EXPECT_TRUE(is_json_object_text(s)) << s;
  }
}

TEST(JsonCheck, NotObjects_No) {
  for (const auto& s : not_objects) {
    ASSERT_FALSE(expected(s)) << "bad fixture: " << s;
    EXPECT_FALSE(is_json_object_text(s)) << s;
  }
}

// nlohmann's lexer ends the input at a NUL byte, so it accepts what follows
// one; the scanner does not, and the caller's fallback to nlohmann gives
// nlohmann's answer. The one place where the two differ.
TEST(JsonCheck, NulByte_StricterThanNlohmann) {
  std::string s("{\"a\":1}\0 junk", 13);
  EXPECT_TRUE(nlohmann::json::accept(s));
  EXPECT_FALSE(is_json_object_text(s));
}

TEST(JsonCheck, DeepNesting_FallsBackBeyondTheLimit) {
  auto nested = [](size_t depth) {
    std::string s = "{\"a\":";
    for (size_t i = 1; i < depth; ++i)
      s += "[";
    s += "1";
    for (size_t i = 1; i < depth; ++i)
      s += "]";
    return s + "}";
  };
  EXPECT_TRUE(is_json_object_text(nested(georoute::json_check_max_depth)));
  // Valid, but deeper than the scanner follows: "not known", so the caller
  // asks nlohmann.
  auto deep = nested(georoute::json_check_max_depth + 1);
  EXPECT_TRUE(expected(deep));
  EXPECT_FALSE(is_json_object_text(deep));
}

// Random edits of valid bodies (a byte replaced, inserted or removed, with
// bytes drawn from JSON's own alphabet and a few UTF-8 and control bytes):
// the check and nlohmann must agree on every one.
TEST(JsonCheck, Differential_RandomEditsAgreeWithNlohmann) {
  const std::string alphabet =
      "{}[]:,\"\\/ \t\n\r0123456789+-.eEtrufalsnbuUdDABCF\x01\x7F\x80\xBF\xC2"
      "\xDF\xE0\xED\xEF\xF0\xF4\xF5\xFF";
  std::mt19937 rng{20261202};
  size_t yes = 0;
  size_t checked = 0;
  for (int round = 0; round < 60000; ++round) {
    auto s = objects[rng() % objects.size()];
    int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      auto pos = s.empty() ? 0 : rng() % (s.size() + 1);
      char c = alphabet[rng() % alphabet.size()];
      switch (rng() % 3) {
      case 0:
        if (pos < s.size()) s[pos] = c;
        break;
      case 1:
        s.insert(s.begin() + static_cast<long>(pos), c);
        break;
      default:
        if (pos < s.size()) s.erase(pos, 1);
      }
    }
    bool want = expected(s);
    ASSERT_EQ(is_json_object_text(s), want) << "text: " << s;
    yes += want;
    ++checked;
  }
  // Both sides were exercised.
  EXPECT_GT(yes, checked / 20);
  EXPECT_LT(yes, checked - checked / 20);
}

// -- arrays, and walking checked text -----------------------------------------

TEST(JsonCheck, Arrays_YesAndNo) {
  EXPECT_TRUE(is_json_array_text("[]"));
  EXPECT_TRUE(is_json_array_text(R"( [1, "a", {"b": [true]}] )"));
  EXPECT_FALSE(is_json_array_text("{}"));
  EXPECT_FALSE(is_json_array_text("[1,]"));
  EXPECT_FALSE(is_json_array_text("[1] x"));
}

// The members a walk finds in every accepted object are nlohmann's: the
// same names, in order, each value text parsing to nlohmann's value.
TEST(JsonCheck, EachMember_AsNlohmannReadsThem) {
  size_t walked = 0;
  for (const auto& text : objects) {
    if (!is_json_object_text(text)) continue;
    auto doc = nlohmann::ordered_json::parse(text);
    std::vector<std::pair<std::string, nlohmann::ordered_json>> seen;
    json_each_member(text, [&](std::string_view name, std::string_view value) {
      std::string n;
      ASSERT_TRUE(json_string_value(name, n)) << name;
      seen.emplace_back(n, nlohmann::ordered_json::parse(value));
    });
    ASSERT_EQ(seen.size(), doc.size()) << text;
    size_t k = 0;
    for (auto it = doc.begin(); it != doc.end(); ++it, ++k) {
      EXPECT_EQ(seen[k].first, it.key()) << text;
      EXPECT_EQ(seen[k].second, it.value()) << text;
    }
    ++walked;
  }
  EXPECT_GE(walked, 5u);
}

TEST(JsonCheck, EachElement_ValuesWithBracketsInStrings) {
  std::string text =
      R"([ {"a":"}]\"{["} , "x\\" ,12.5e3,[[]],null , {"b":{"c":[1,{}]}} ])";
  ASSERT_TRUE(is_json_array_text(text));
  std::vector<std::string> items;
  json_each_element(text, [&](std::string_view v) { items.emplace_back(v); });
  ASSERT_EQ(items.size(), 6u);
  EXPECT_EQ(items[0], R"({"a":"}]\"{["})");
  EXPECT_EQ(items[1], R"("x\\")");
  EXPECT_EQ(items[2], "12.5e3");
  EXPECT_EQ(items[3], "[[]]");
  EXPECT_EQ(items[4], "null");
  EXPECT_EQ(items[5], R"({"b":{"c":[1,{}]}})");
}

TEST(JsonCheck, StringValue_EscapesDecodedAsNlohmann) {
  for (std::string token :
       {R"("plain")", R"("")", R"("a\"b\\c\/d")", R"("\b\f\n\r\t")",
        R"("caf\u00e9 \u20ac")", R"("\ud83d\ude00 smile")", "\"\xc3\xa9\""}) {
    std::string got;
    ASSERT_TRUE(json_string_value(token, got)) << token;
    EXPECT_EQ(got, nlohmann::json::parse(token).get<std::string>()) << token;
  }
  std::string out = "kept";
  EXPECT_FALSE(json_string_value("12", out));
  EXPECT_FALSE(json_string_value(R"("\ude00")", out));   // a lone low surrogate
  EXPECT_FALSE(json_string_value(R"("\ud83d x")", out)); // no low surrogate
  EXPECT_FALSE(json_string_value(R"("\q")", out));
}

// Whatever the bytes, the written string parses back to them; bytes that
// are not UTF-8 are refused and leave the output as it was.
TEST(JsonCheck, AppendString_RoundTripsOrRefusesInvalidUtf8) {
  std::mt19937 rng{20261206};
  const std::string alphabet = "ab\"\\/\b\f\n\r\t\x01\x1f\x7f "
                               "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";
  size_t refused = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string s;
    auto len = rng() % 12;
    for (size_t k = 0; k < len; ++k)
      s.push_back(alphabet[rng() % alphabet.size()]);
    std::string out = "[";
    bool ok = append_json_string(out, s);
    bool valid = true;
    try {
      (void)nlohmann::json(s).dump(); // throws on invalid UTF-8
    } catch (const nlohmann::json::type_error&) {
      valid = false;
    }
    ASSERT_EQ(ok, valid) << s;
    if (!ok) {
      EXPECT_EQ(out, "[");
      ++refused;
      continue;
    }
    out += ']';
    EXPECT_EQ(nlohmann::json::parse(out)[0].get<std::string>(), s);
  }
  EXPECT_GT(refused, 100u);
}

} // namespace
