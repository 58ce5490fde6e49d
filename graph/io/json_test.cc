#include "graph/io/json.h"

#include <cstdint>
#include <cstdio>
#include <exception>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::graph::io {
namespace {

using ::fgl::testing::StatusIs;
using ::testing::HasSubstr;

absl::StatusOr<JsonDocument> Parse(const std::string& text, const JsonLimits& limits = {}) {
  return JsonDocument::Parse(text, "t.json", limits);
}

TEST(JsonTest, ParsesEveryKindOfValue) {
  // \u00e9 is e-acute (2 UTF-8 bytes); \ud83d\ude00 a surrogate pair for U+1F600 (4 bytes).
  ASSERT_OK_AND_ASSIGN(
      JsonDocument doc,
      Parse(" {\"a\": [1, -2.5e3, true, false, null, \"x\\u00e9\\ud83d\\ude00\\n\\\"\"],\n"
            "  \"b\": {}, \"c\": [], \"\\u0000k\": \"caf\xc3\xa9\"} "));
  const JsonValue root = doc.root();
  ASSERT_TRUE(root.is_object());
  EXPECT_EQ(root.size(), 4u);
  // Records: root, then key/value pairs; a's six elements; b, c; the last key and value.
  EXPECT_EQ(doc.num_values(), 1u + 2 + 6 + 4 + 2);
  const std::optional<JsonValue> a = root.Find("a");
  ASSERT_TRUE(a.has_value());
  const std::vector<JsonValue> e = a->elements();
  ASSERT_EQ(e.size(), 6u);
  EXPECT_TRUE(e[0].is_integer());
  EXPECT_EQ(e[0].int_value(), 1);
  EXPECT_TRUE(e[1].is_number());
  EXPECT_FALSE(e[1].is_integer());
  EXPECT_EQ(e[1].number_value(), -2500.0);
  EXPECT_TRUE(e[2].is_bool() && e[2].bool_value());
  EXPECT_TRUE(e[3].is_bool() && !e[3].bool_value());
  EXPECT_TRUE(e[4].is_null());
  EXPECT_EQ(e[5].string_value(), "x\xc3\xa9\xf0\x9f\x98\x80\n\"");
  EXPECT_EQ(root.Find("b")->size(), 0u);
  EXPECT_TRUE(root.Find("c")->is_array());
  EXPECT_EQ(root.Find(absl::string_view("\0k", 2))->string_value(), "caf\xc3\xa9");
  EXPECT_FALSE(root.Find("d").has_value());
  const auto members = root.members();
  ASSERT_EQ(members.size(), 4u);
  EXPECT_EQ(members[0].first, "a");
  EXPECT_EQ(members[1].first, "b");
  EXPECT_EQ(members[3].second.string_value(), "caf\xc3\xa9");
  EXPECT_EQ(a->offset(), 7u);
}

TEST(JsonTest, WrongTypeAccessorsReturnNeutralValues) {
  ASSERT_OK_AND_ASSIGN(JsonDocument doc, Parse("[\"s\", 1.5, {\"k\": 1}]"));
  const std::vector<JsonValue> e = doc.root().elements();
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0].int_value(), 0);
  EXPECT_EQ(e[0].number_value(), 0);
  EXPECT_FALSE(e[0].bool_value());
  EXPECT_TRUE(e[0].elements().empty());
  EXPECT_FALSE(e[0].Find("k").has_value());
  EXPECT_EQ(e[1].int_value(), 0);  // a real, not an integer
  EXPECT_EQ(e[1].string_value(), "");
  EXPECT_EQ(e[1].size(), 0u);
  EXPECT_TRUE(e[2].elements().empty());
  EXPECT_TRUE(doc.root().members().empty());
  EXPECT_FALSE(doc.root().Find("k").has_value());
}

TEST(JsonTest, IntegersAndReals) {
  ASSERT_OK_AND_ASSIGN(JsonDocument doc,
                       Parse("[12, 12.0, 1e2, -0, 9223372036854775807, -9223372036854775808, "
                             "9223372036854775808, 1e-400, -1E+2, 0.000123]"));
  const std::vector<JsonValue> e = doc.root().elements();
  ASSERT_EQ(e.size(), 10u);
  EXPECT_TRUE(e[0].is_integer());
  EXPECT_FALSE(e[1].is_integer());
  EXPECT_EQ(e[1].number_value(), 12.0);
  EXPECT_FALSE(e[2].is_integer());
  EXPECT_EQ(e[2].number_value(), 100.0);
  EXPECT_TRUE(e[3].is_integer());
  EXPECT_EQ(e[4].int_value(), INT64_MAX);
  EXPECT_EQ(e[5].int_value(), INT64_MIN);
  EXPECT_FALSE(e[6].is_integer());  // beyond int64: kept as a double
  EXPECT_EQ(e[6].number_value(), 9223372036854775808.0);
  EXPECT_EQ(e[7].number_value(), 0.0);  // underflow rounds to zero
  EXPECT_EQ(e[8].number_value(), -100.0);
  EXPECT_DOUBLE_EQ(e[9].number_value(), 0.000123);
}

TEST(JsonTest, RefusesWhatStrictJsonRefuses) {
  struct Case {
    std::string text;
    absl::StatusCode code;
    std::string message;
  };
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  const auto kDataLoss = absl::StatusCode::kDataLoss;
  const std::vector<Case> cases = {
      {"", kDataLoss, "t.json:1:1 (byte 0): the text ends early (expected a value)"},
      {"  \n ", kDataLoss, "t.json:2:2 (byte 4): the text ends early"},
      {"[1,]", kInvalid, "t.json:1:4 (byte 3): expected a value, got ']'"},
      {"[1 2]", kInvalid, "t.json:1:4 (byte 3): expected ',' or ']', got '2'"},
      {"{\"a\" 1}", kInvalid, "expected ':' after a key, got '1'"},
      {"{\"a\": 1,}", kInvalid, "expected a string key, got '}'"},
      {"{'a': 1}", kInvalid, "expected a string key, got '''"},
      {"{\"a\": 1 \"b\": 2}", kInvalid, "expected ',' or '}', got '\"'"},
      {"01", kInvalid, "leading zero"},
      {"-01", kInvalid, "leading zero"},
      {"+1", kInvalid, "expected a value, got '+'"},
      {"-", kDataLoss, "inside a number"},
      {"-a", kInvalid, "expected a digit, got 'a'"},
      {"1.", kDataLoss, "inside a number"},
      {"1.e5", kInvalid, "expected a digit after '.'"},
      {".5", kInvalid, "expected a value, got '.'"},
      {"1e", kDataLoss, "inside a number"},
      {"1e+", kDataLoss, "inside a number"},
      {"1ex", kInvalid, "expected a digit in the exponent"},
      {"1e400", kInvalid, "number 1e400 is beyond the range of a double"},
      {"-1234567890e300", kInvalid, "beyond the range"},
      {"NaN", kInvalid, "expected a value, got 'N'"},
      {"[Infinity]", kInvalid, "expected a value, got 'I'"},
      {"[-Infinity]", kInvalid, "expected a digit, got 'I'"},
      {"tru", kDataLoss, "inside 'true'"},
      {"trux", kInvalid, "invalid literal: expected 'true'"},
      {"nul", kDataLoss, "inside 'null'"},
      {"False", kInvalid, "expected a value, got 'F'"},
      {"\"a\tb\"", kInvalid, "control character byte 0x09 in a string"},
      {"\"a\nb\"", kInvalid, "control character byte 0x0a"},
      {"\"\\x\"", kInvalid, "invalid escape \\'x'"},
      {"\"\\u12g4\"", kInvalid, "expected a hex digit in a \\u escape, got 'g'"},
      {"\"\\u12", kDataLoss, "inside a \\u escape"},
      {"\"\\ud800\"", kInvalid, "high surrogate not followed by a \\u low surrogate"},
      {"\"\\ud800\\u0041\"", kInvalid, "high surrogate not followed by a low surrogate"},
      {"\"\\udc00\"", kInvalid, "lone low surrogate"},
      {"\"\xff\"", kInvalid, "invalid UTF-8 starting with byte 0xff"},
      {"\"\xc0\xaf\"", kInvalid, "invalid UTF-8 starting with byte 0xc0"},          // overlong '/'
      {"\"\xed\xa0\x80\"", kInvalid, "invalid UTF-8 starting with byte 0xed"},      // surrogate
      {"\"\xf4\x90\x80\x80\"", kInvalid, "invalid UTF-8 starting with byte 0xf4"},  // > U+10FFFF
      {"\"\xe2\x82", kDataLoss, "inside a string"},
      {"\"abc", kDataLoss, "inside a string"},
      {"\"abc\\", kDataLoss, "inside a string escape"},
      {"{\"a\": 1, \"b\": 2, \"a\": 3}", kInvalid,
       "t.json:1:18 (byte 17): duplicate key \"a\" in one object"},
      {"[1] [2]", kInvalid, "t.json:1:5 (byte 4): unexpected '[' after the document"},
      {"1 x", kInvalid, "unexpected 'x' after the document"},
      {"\xef\xbb\xbf[]", kInvalid, "expected a value, got byte 0xef"},  // no BOM
      {"/* c */ 1", kInvalid, "expected a value, got '/'"},
      {"[1, 2", kDataLoss, "t.json:1:6 (byte 5): the text ends early (expected ',' or ']')"},
      {"[", kDataLoss, "expected a value or ']'"},
      {"{", kDataLoss, "expected a key or '}'"},
      {"{\"a\"", kDataLoss, "expected ':'"},
      {"{\"a\":", kDataLoss, "expected a value"},
      {"{\"a\": 1,", kDataLoss, "expected a key"},
      {std::string("[1,\0 2]", 7), kInvalid, "expected a value, got byte 0x00"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(Parse(c.text), StatusIs(c.code, HasSubstr(c.message))) << "input: " << c.text;
  }
}

TEST(JsonTest, ErrorsNameLineColumnAndByte) {
  //                     line 1: "{\n"           (bytes 0-1)
  //                     line 2: "  \"a\": [1,\n" (bytes 2-12)
  //                     line 3: "       x]\n"    x at byte 20, column 8
  EXPECT_THAT(Parse("{\n  \"a\": [1,\n       x]\n}"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("t.json:3:8 (byte 20): expected a value, got 'x'")));
  ASSERT_OK_AND_ASSIGN(JsonDocument doc, Parse("{\n  \"a\": [1,\n       2]\n}"));
  const JsonValue two = doc.root().Find("a")->elements()[1];
  EXPECT_EQ(two.Where(), "t.json:3:8 (byte 20)");
  EXPECT_THAT(two.Error("too big"), StatusIs(absl::StatusCode::kInvalidArgument,
                                             HasSubstr("t.json:3:8 (byte 20): too big")));
}

TEST(JsonTest, DepthLimit) {
  JsonLimits limits;
  limits.max_depth = 3;
  EXPECT_OK(Parse("[[[1]], {\"a\": [2]}]", limits));
  EXPECT_THAT(Parse("[[[[1]]]]", limits),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("t.json:1:4 (byte 3): arrays and objects nested deeper than 3")));
  EXPECT_THAT(Parse("{\"a\": {\"b\": {\"c\": {}}}}", limits),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("deeper than 3")));
  // A million brackets: refused at the default limit, with no recursion to overflow the stack.
  const std::string deep(1000000, '[');
  EXPECT_THAT(Parse(deep),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("(byte 64): arrays and objects nested deeper than 64")));
  std::string exactly_64 = std::string(64, '[') + std::string(64, ']');
  EXPECT_OK(Parse(exactly_64));
}

TEST(JsonTest, SizeAndValueLimits) {
  JsonLimits limits;
  limits.max_values = 3;
  EXPECT_OK(Parse("[1, 2]", limits));
  EXPECT_THAT(Parse("[1, 2, 3]", limits), StatusIs(absl::StatusCode::kResourceExhausted,
                                                   HasSubstr("(byte 7): more than 3 values")));
  EXPECT_THAT(Parse("{\"a\": 1, \"b\": 2}", limits),  // keys count
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("more than 3 values")));
  limits = JsonLimits();
  limits.max_bytes = 5;
  EXPECT_OK(Parse("[1,2]", limits));
  EXPECT_THAT(Parse("[1, 2]", limits),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("t.json: 6 bytes exceeds the limit of 5")));
}

TEST(JsonTest, ReadJsonFile) {
  const std::string path = std::string(::testing::TempDir()) + "/read.json";
  {
    FILE* f = fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    fputs("{\"k\": [true]}\n", f);
    fclose(f);
  }
  ASSERT_OK_AND_ASSIGN(JsonDocument doc, ReadJsonFile(path));
  EXPECT_EQ(doc.source(), path);
  EXPECT_TRUE(doc.root().Find("k")->elements()[0].bool_value());
  JsonLimits limits;
  limits.max_bytes = 4;
  EXPECT_THAT(ReadJsonFile(path, "", limits),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("read.json")));
  EXPECT_THAT(ReadJsonFile("/nonexistent/wikics/data.json", "wikics"),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("/nonexistent/wikics/data.json: no such file. Dataset 'wikics'")));
}

// ---- seeded mutations: every input parses or fails with a documented code ----

// Visits every value reachable from `v` (recursion is bounded by the depth limit) and returns
// how many records it saw, keys included.
size_t Walk(const JsonValue& v) {
  size_t seen = 1;
  (void)v.Where();
  (void)v.number_value();
  (void)v.int_value();
  (void)v.bool_value();
  (void)v.string_value();
  for (const JsonValue& e : v.elements()) seen += Walk(e);
  for (const auto& [key, value] : v.members()) {
    EXPECT_TRUE(v.Find(key).has_value());
    seen += 1 + Walk(value);
  }
  return seen;
}

std::string Mutate(std::string s, std::mt19937_64& rng) {
  auto pick = [&rng](uint64_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<uint64_t>(0, n - 1)(rng);
  };
  // Bytes that steer the parser into its other branches.
  static const std::string kTokens[] = {
      "[", "]",  "{",  "}",   "\"", ",",     ":",    "\\",   "\\u",  "\\ud800",      "-",
      "0", "9",  ".",  "e",   "E+", "1e999", "true", "null", "\xc3", "\xed\xa0\x80", "\xff",
      " ", "\n", "\t", "\x01"};
  const int ops = 1 + static_cast<int>(pick(3));
  for (int i = 0; i < ops; ++i) {
    switch (pick(6)) {
      case 0:  // flip one bit
        if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1 << pick(8));
        break;
      case 1:  // random byte
        if (!s.empty()) s[pick(s.size())] = static_cast<char>(pick(256));
        break;
      case 2:  // truncate
        s.resize(pick(s.size() + 1));
        break;
      case 3:  // insert a token
        s.insert(pick(s.size() + 1), kTokens[pick(std::size(kTokens))]);
        break;
      case 4:  // delete a short range
        if (!s.empty()) s.erase(pick(s.size()), 1 + pick(8));
        break;
      case 5: {  // duplicate a range somewhere else
        if (s.empty()) break;
        const size_t at = pick(s.size());
        const std::string piece = s.substr(at, 1 + pick(16));
        s.insert(pick(s.size() + 1), piece);
        break;
      }
    }
  }
  return s;
}

TEST(JsonFuzzTest, MutatedInputsNeverCrash) {
  const std::vector<std::string> seeds = {
      "{\"features\": [[0.5, -1.25e-3], [2, 3]], \"labels\": [0, 1], \"links\": [[1], []], "
      "\"test_mask\": [true, false]}",
      "[1, -0, 0.1, 1E5, \"a\\\"b\\\\c\\/\\u00e9\\ud83d\\ude00\", {\"x\": null}, [], {}]",
      "{\"a\": {\"b\": {\"c\": [[[\"deep\"]]]}}, \"caf\xc3\xa9\": \"\xe2\x82\xac\"}",
  };
  JsonLimits limits;
  limits.max_depth = 8;
  limits.max_values = 64;
  std::mt19937_64 rng(20240601);
  int64_t ok = 0, errors = 0;
  for (const std::string& seed : seeds) {
    ASSERT_OK_AND_ASSIGN(JsonDocument doc, Parse(seed, limits));
    EXPECT_EQ(Walk(doc.root()), doc.num_values());
    for (int i = 0; i < 1500; ++i) {
      const std::string text = Mutate(seed, rng);
      try {
        absl::StatusOr<JsonDocument> d = Parse(text, limits);
        if (d.ok()) {
          ++ok;
          EXPECT_EQ(Walk(d->root()), d->num_values()) << text;
        } else {
          ++errors;
          const absl::StatusCode c = d.status().code();
          EXPECT_TRUE(c == absl::StatusCode::kInvalidArgument || c == absl::StatusCode::kDataLoss ||
                      c == absl::StatusCode::kResourceExhausted)
              << text << ": " << d.status();
          EXPECT_THAT(std::string(d.status().message()), HasSubstr("t.json")) << text;
        }
      } catch (const std::exception& e) {
        ADD_FAILURE() << text << " threw: " << e.what();
      }
    }
  }
  std::cout << ok << " mutated inputs parsed, " << errors << " refused\n";
  EXPECT_GT(ok, 0);
  EXPECT_GT(errors, 0);
}

}  // namespace
}  // namespace fgl::graph::io
