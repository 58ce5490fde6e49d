#include "graph/io/wikics.h"

#include <sys/stat.h>

#include <cstdint>
#include <exception>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "graph/io/npz_writer.h"
#include "graph/testing/tensor_values.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::graph::io {
namespace {

using ::fgl::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

using ::fgl::graph::testing::Vec;

// The top-level members of a data.json as raw JSON text, in file order.
using Members = std::vector<std::pair<std::string, std::string>>;

void Set(Members* m, const std::string& key, const std::string& text) {
  for (auto& [k, v] : *m) {
    if (k == key) v = text;
  }
}

void Erase(Members* m, const std::string& key) {
  for (auto it = m->begin(); it != m->end(); ++it) {
    if (it->first == key) {
      m->erase(it);
      return;
    }
  }
}

// As Python's json.dump writes it: {"key": value, ...} with ", " and ": " separators.
std::string ToJson(const Members& m) {
  return absl::StrCat(
      "{",
      absl::StrJoin(m, ", ",
                    [](std::string* out, const std::pair<std::string, std::string>& kv) {
                      absl::StrAppend(out, "\"", kv.first, "\": ", kv.second);
                    }),
      "}");
}

std::string FeatureRow(int64_t v, int width = 300) {
  std::vector<std::string> row;
  for (int j = 0; j < width; ++j) row.push_back(absl::StrCat(v - j * 0.25));
  return absl::StrCat("[", absl::StrJoin(row, ", "), "]");
}

// A mask over 5 nodes that holds only `node`.
std::string OneNodeMask(int node) {
  std::vector<std::string> m(5, "false");
  m[node] = "true";
  return absl::StrCat("[", absl::StrJoin(m, ", "), "]");
}

// 20 masks; mask k holds node (k + shift) % 3.
std::string Masks(int shift, int count = 20) {
  std::vector<std::string> masks;
  for (int k = 0; k < count; ++k) masks.push_back(OneNodeMask((k + shift) % 3));
  return absl::StrCat("[", absl::StrJoin(masks, ", "), "]");
}

// 5 nodes, features[v][j] = v - j / 4 (exact in binary), labels [0, 3, 9, 3, 1] -> 10 classes.
// links: 0 -> 1, 2; 1 -> 0 (reverse duplicate); 2 -> 2 (self-loop); 3 -> 4, 4 (repeat); 4 -> none
//   -> undirected 0-1, 0-2, 3-4: row_ptr [0, 2, 3, 4, 5, 6], col [1, 2, 0, 0, 4, 3].
// 20 splits: train {k % 3}, val {(k + 1) % 3}, stopping {(k + 2) % 3}; test {3, 4} written 0/1.
// features come last, so mutations aimed at the first part of the text hit the other members.
Members TinyMembers() {
  std::vector<std::string> rows;
  for (int v = 0; v < 5; ++v) rows.push_back(FeatureRow(v));
  return {
      {"labels", "[0, 3, 9, 3, 1]"},
      {"links", "[[1, 2], [0], [2], [4, 4], []]"},
      {"train_masks", Masks(0)},
      {"stopping_masks", Masks(2)},
      {"val_masks", Masks(1)},
      {"test_mask", "[0, 0, 0, 1, 1]"},
      {"features", absl::StrCat("[", absl::StrJoin(rows, ", "), "]")},
  };
}

// Writes `text` as TempDir()/`folder`/data.json and returns the folder.
std::string WriteDataJson(const std::string& folder, const std::string& text) {
  const std::string dir = std::string(::testing::TempDir()) + "/" + folder;
  ::mkdir(dir.c_str(), 0755);
  EXPECT_OK(testing::WriteBytes(dir + "/data.json", text));
  return dir;
}

TEST(LoadWikiCsTest, BuildsGraphFeaturesLabelsAndTwentySplits) {
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadWikiCs(WriteDataJson("tiny", ToJson(TinyMembers())), "tiny"));
  EXPECT_EQ(d.name, "tiny");
  EXPECT_THAT(Vec<int64_t>(d.graph.row_ptr()), ElementsAre(0, 2, 3, 4, 5, 6));
  EXPECT_THAT(Vec<int64_t>(d.graph.col()), ElementsAre(1, 2, 0, 0, 4, 3));
  ASSERT_THAT(d.features.sizes().vec(), ElementsAre(5, 300));
  EXPECT_EQ(d.features[0][0].item<float>(), 0.0f);
  EXPECT_EQ(d.features[2][4].item<float>(), 1.0f);
  EXPECT_EQ(d.features[4][299].item<float>(), -70.75f);
  EXPECT_EQ(d.features.scalar_type(), torch::kFloat32);
  EXPECT_THAT(Vec<int64_t>(d.labels), ElementsAre(0, 3, 9, 3, 1));
  EXPECT_EQ(d.num_classes, 10);
  ASSERT_EQ(d.provided_splits.size(), 20u);
  // Split 0: train {0}, val {1}; node 2 is the stopping set and in no mask of ours.
  EXPECT_THAT(Vec<bool>(d.provided_splits[0].train), ElementsAre(1, 0, 0, 0, 0));
  EXPECT_THAT(Vec<bool>(d.provided_splits[0].val), ElementsAre(0, 1, 0, 0, 0));
  EXPECT_THAT(Vec<bool>(d.provided_splits[0].test), ElementsAre(0, 0, 0, 1, 1));
  // Split 4: train {1}, val {2}.
  EXPECT_THAT(Vec<bool>(d.provided_splits[4].train), ElementsAre(0, 1, 0, 0, 0));
  EXPECT_THAT(Vec<bool>(d.provided_splits[4].val), ElementsAre(0, 0, 1, 0, 0));
  EXPECT_THAT(Vec<bool>(d.provided_splits[19].test), ElementsAre(0, 0, 0, 1, 1));
}

TEST(LoadWikiCsTest, AcceptsPrettyPrintingAndExtraKeys) {
  Members m = TinyMembers();
  m.insert(m.begin(), {"label_names", "{\"0\": \"Computational linguistics\"}"});
  std::string pretty = ToJson(m);
  for (const char* key : {"\"links\"", "\"train_masks\"", "\"features\""}) {
    pretty.insert(pretty.find(key), "\n  ");
  }
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadWikiCs(WriteDataJson("pretty", pretty), "pretty"));
  EXPECT_EQ(d.num_nodes(), 5);
  EXPECT_EQ(d.graph.num_undirected_edges(), 3);
  // Errors in a multi-line file name the line: "links" starts line 2, its third list is [2].
  Set(&m, "links", "[[1, 2], [0], [2, 7], [4, 4], []]");
  pretty = ToJson(m);
  for (const char* key : {"\"links\"", "\"train_masks\"", "\"features\""}) {
    pretty.insert(pretty.find(key), "\n  ");
  }
  //   line 2: '  "links": [[1, 2], [0], [2, 7], ...': the 7 is at column 30.
  EXPECT_THAT(
      LoadWikiCs(WriteDataJson("pretty", pretty), "pretty"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("pretty/data.json:2:30 (byte ")));
}

TEST(LoadWikiCsTest, RefusesBadInputsNamingFileAndPosition) {
  struct Case {
    std::string key, text;  // key "" replaces the whole file with `text`
    absl::StatusCode code;
    std::string message;
  };
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  const std::string truncated = ToJson(TinyMembers()).substr(0, 400);
  std::vector<std::string> rows;
  for (int v = 0; v < 5; ++v) rows.push_back(FeatureRow(v, v == 2 ? 299 : 300));
  const std::string short_row = absl::StrCat("[", absl::StrJoin(rows, ", "), "]");
  std::vector<std::string> masks;
  for (int k = 0; k < 20; ++k) {
    masks.push_back(k == 3 ? "[true, false, false, false]" : OneNodeMask(0));
  }
  const std::string short_mask = absl::StrCat("[", absl::StrJoin(masks, ", "), "]");
  const std::vector<Case> cases = {
      {"", truncated, absl::StatusCode::kDataLoss,
       "bad/data.json:1:401 (byte 400): the text ends early"},
      {"", "[1, 2]", kInvalid,
       "bad/data.json:1:1 (byte 0): expected a top-level object, got an array"},
      {"", absl::StrCat("{\"labels\": [0], ", ToJson(TinyMembers()).substr(1)), kInvalid,
       "bad/data.json:1:17 (byte 16): duplicate key \"labels\" in one object"},
      {"features", short_row, kInvalid,
       "features[2]: expected an array of 300 numbers, got an array of 299"},
      {"features", "[[1], 2, 3, 4, 5]", kInvalid, "features[0]: expected an array of 300 numbers"},
      {"features", "[]", kInvalid, "features: 0 entries, but labels has 5"},
      {"features", absl::StrCat("[", FeatureRow(0), ", \"x\", 1, 2, 3]"), kInvalid,
       "features[1]: expected an array of 300 numbers, got a string"},
      {"features",
       absl::StrCat("[", FeatureRow(0), ", ", FeatureRow(1), ", [1e39", FeatureRow(2).substr(2),
                    ", ", FeatureRow(3), ", ", FeatureRow(4), "]"),
       kInvalid, "features[2][0]: expected a finite float32, got 1e+39"},
      {"features",
       absl::StrCat("[", FeatureRow(0), ", [null", FeatureRow(1).substr(2), ", ", FeatureRow(2),
                    ", ", FeatureRow(3), ", ", FeatureRow(4), "]"),
       kInvalid, "features[1][0]: expected a finite float32, got null"},
      {"labels", "[0, 3, -1, 3, 1]", kInvalid, "labels[2]: label -1 outside [0, 65536)"},
      {"labels", "[0, 3, 70000, 3, 1]", kInvalid, "labels[2]: label 70000 outside [0, 65536)"},
      {"labels", "[0, 3.0, 9, 3, 1]", kInvalid, "labels[1]: expected an integer, got a number"},
      {"labels", "[0, true, 9, 3, 1]", kInvalid, "labels[1]: expected an integer, got a bool"},
      {"labels", "[0, 1e2, 9, 3, 1]", kInvalid, "labels[1]: expected an integer, got a number"},
      {"labels", "[0, 9223372036854775808, 9, 3, 1]", kInvalid,
       "bad/data.json:1:16 (byte 15): labels[1]: label 9223372036854775808 outside [0, 65536)"},
      // Beyond uint64 nlohmann/json reads a double, so this is not an integer.
      {"labels", "[0, 18446744073709551616, 9, 3, 1]", kInvalid,
       "labels[1]: expected an integer, got a number"},
      {"labels", "[0, \"3\", 9, 3, 1]", kInvalid, "labels[1]: expected an integer, got a string"},
      {"labels", "{}", kInvalid,
       "bad/data.json:1:12 (byte 11): labels: expected an array, got an object"},
      {"links", "[[1, 5], [0], [2], [4, 4], []]", kInvalid,
       "bad/data.json:1:43 (byte 42): links[0][1]: node 5 outside [0, 5)"},
      {"links", "[[1, 2], [-1], [2], [4, 4], []]", kInvalid, "links[1][0]: node -1 outside [0, 5)"},
      {"links", "[[1, 2], [0], [2], [4, 4]]", kInvalid, "links: 4 entries, but labels has 5"},
      {"links", "[[1, 2], [0], 2, [4, 4], []]", kInvalid,
       "links[2]: expected an array of node ids, got a number"},
      {"links", "[[1, 2], [0.5], [2], [4, 4], []]", kInvalid,
       "links[1][0]: expected a node id, got a number"},
      {"links", "[[1, 2], [0], [2], [4, 18446744073709551615], []]", kInvalid,
       "bad/data.json:1:61 (byte 60): links[3][1]: node 18446744073709551615 outside [0, 5)"},
      {"links", "[[1, 2], [0], [2], [4, 4], [null]]", kInvalid,
       "links[4][0]: expected a node id, got null"},
      {"train_masks", short_mask, kInvalid, "train_masks[3]: 4 entries, but labels has 5"},
      {"stopping_masks", "[[0, 0, 0, 0, 0], 7]", kInvalid,
       "stopping_masks[1]: expected an array, got a number"},
      {"test_mask", "[0, 0, 0, 1, 1, 0]", kInvalid, "test_mask: 6 entries, but labels has 5"},
      {"test_mask", "[0, 2, 0, 1, 1]", kInvalid,
       "test_mask[1]: expected true, false, 0 or 1, got 2"},
      {"test_mask", "[0, null, 0, 1, 1]", kInvalid,
       "test_mask[1]: expected true, false, 0 or 1, got null"},
      {"test_mask", "[0, 1.0, 0, 1, 1]", kInvalid,
       "test_mask[1]: expected true, false, 0 or 1, got 1.0"},
      {"test_mask", "[0, \"1\", 0, 1, 1]", kInvalid,
       "test_mask[1]: expected true, false, 0 or 1, got a string"},
      {"train_masks", "{\"0\": [1, 0, 0, 0, 0]}", kInvalid,
       "train_masks: expected an array, got an object"},
      {"val_masks", Masks(1, 19), kInvalid,
       "20 train_masks, 19 val_masks and 20 stopping_masks; expected equal counts"},
      {"features", std::string(100, '[') + std::string(100, ']'),
       absl::StatusCode::kResourceExhausted, "arrays and objects nested deeper than 16"},
      {"features",
       absl::StrCat("[", FeatureRow(0), ", [\"x\"", FeatureRow(1).substr(2), ", ", FeatureRow(2),
                    ", ", FeatureRow(3), ", ", FeatureRow(4), "]"),
       kInvalid, "features[1][0]: expected a finite float32, got a string"},
  };
  for (const Case& c : cases) {
    Members m = TinyMembers();
    std::string text;
    if (c.key.empty()) {
      text = c.text;
    } else {
      Set(&m, c.key, c.text);
      text = ToJson(m);
    }
    EXPECT_THAT(LoadWikiCs(WriteDataJson("bad", text), "bad"),
                StatusIs(c.code, HasSubstr(c.message)))
        << c.key << " = " << c.text.substr(0, 80);
  }
  for (const char* key :
       {"labels", "features", "links", "train_masks", "val_masks", "stopping_masks", "test_mask"}) {
    Members m = TinyMembers();
    Erase(&m, key);
    EXPECT_THAT(LoadWikiCs(WriteDataJson("bad", ToJson(m)), "bad"),
                StatusIs(kInvalid, HasSubstr(absl::StrCat("bad/data.json:1:1 (byte 0): the "
                                                          "top-level object has no \"",
                                                          key, "\""))));
  }
}

// The tiny file with `value` under an extra first key, "extra", which starts at byte 10.
std::string WithExtra(const std::string& value) {
  return absl::StrCat("{\"extra\": ", value, ", ", ToJson(TinyMembers()).substr(1));
}

// Malformed JSON is refused by the parser (nlohmann/json), with the file, line, column and byte of
// the byte it failed on and the parser's own words; text that ends early is DataLoss.
TEST(LoadWikiCsTest, RefusesMalformedJsonNamingFileAndByte) {
  struct Case {
    std::string text;
    std::string message;
  };
  const std::string valid = ToJson(TinyMembers());
  const std::vector<Case> invalid = {
      // Bad escapes, surrogates, UTF-8 and control characters in strings.
      {WithExtra("\"a\\x\""),
       "bad/data.json:1:14 (byte 13): syntax error while parsing value - invalid string: "
       "forbidden character after backslash"},
      {WithExtra("\"\\u12g4\""),
       "(byte 15): syntax error while parsing value - invalid string: "
       "'\\u' must be followed by 4 hex digits"},
      {WithExtra("\"\\ud800\""),
       "(byte 17): syntax error while parsing value - invalid string: "
       "surrogate U+D800..U+DBFF must be followed by U+DC00..U+DFFF"},
      {WithExtra("\"\\udc00\""),
       "(byte 16): syntax error while parsing value - invalid string: "
       "surrogate U+DC00..U+DFFF must follow U+D800..U+DBFF"},
      // A raw byte 0xff, shown escaped in the message.
      {WithExtra("\"\xff\""),
       "(byte 11): syntax error while parsing value - invalid string: "
       "ill-formed UTF-8 byte; last read: '\"\\xff'"},
      {WithExtra("\"\xed\xa0\x80\""),  // an encoded surrogate
       "(byte 12): syntax error while parsing value - invalid string: ill-formed UTF-8 byte"},
      {WithExtra("\"a\tb\""),
       "(byte 12): syntax error while parsing value - invalid string: "
       "control character U+0009 (HT) must be escaped"},
      // What Python's json (or JavaScript) would take but JSON does not.
      {WithExtra("'a'"), "(byte 10): syntax error while parsing value - invalid literal"},
      {WithExtra("[1, 2,]"),
       "(byte 16): syntax error while parsing value - unexpected ']'; expected '[', '{', or a "
       "literal"},
      {WithExtra("NaN"), "(byte 10): syntax error while parsing value - invalid literal"},
      {WithExtra("-Infinity"),
       "(byte 11): syntax error while parsing value - invalid number; expected digit after '-'"},
      {WithExtra("+1"), "(byte 10): syntax error while parsing value - invalid literal"},
      {WithExtra("01"), "(byte 11): syntax error while parsing object - unexpected number literal"},
      {WithExtra("/* c */ 1"), "(byte 10): syntax error while parsing value - invalid literal"},
      {absl::StrCat("{\"labels\" [0]", valid.substr(valid.find(','))),
       "bad/data.json:1:11 (byte 10): syntax error while parsing object separator - unexpected "
       "'['; expected ':'"},
      {"{'labels': [0]}", "(byte 1): syntax error while parsing object key - invalid literal"},
      {absl::StrCat(valid, " [2]"),
       absl::StrCat("(byte ", valid.size() + 1,
                    "): syntax error while parsing value - unexpected '['; expected end of input")},
      // Beyond the double range: refused, never read as infinity.
      {absl::StrCat("{\"labels\": [0, 1e400", valid.substr(valid.find(", 3"))),
       "bad/data.json:1:20 (byte 19): number overflow parsing '1e400'"},
  };
  for (const Case& c : invalid) {
    EXPECT_THAT(LoadWikiCs(WriteDataJson("bad", c.text), "bad"),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)))
        << c.text.substr(0, 60);
  }
  // Truncated files: the error names the end of the text.
  const std::vector<std::string> truncated = {
      "",
      "  \n ",
      "{\"lab",                  // in a key
      "{\"labels\"",             // before ':'
      "{\"labels\": [0, 3",      // in a number
      "{\"labels\": [0,",        // after ','
      "{\"labels\": tru",        // in a literal
      "{\"extra\": \"\\u12",     // in a \u escape
      "{\"extra\": \"\xe2\x82",  // in a UTF-8 sequence
      "{\"extra\": \"abc\\",     // after a backslash
      valid.substr(0, valid.size() - 1),
  };
  for (const std::string& text : truncated) {
    EXPECT_THAT(
        LoadWikiCs(WriteDataJson("bad", text), "bad"),
        StatusIs(absl::StatusCode::kDataLoss,
                 HasSubstr(absl::StrCat("(byte ", text.size(), "): the text ends early ("))))
        << text;
  }
  EXPECT_THAT(LoadWikiCs(WriteDataJson("bad", "  \n "), "bad"),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("bad/data.json:2:2 (byte 4): the text ends early (syntax error "
                                 "while parsing value - unexpected end of input")));
}

TEST(LoadWikiCsTest, DepthLimitRefusesDeepNestingWithoutRecursion) {
  // The top-level object counts: 15 more levels are accepted, 16 are not.
  ASSERT_OK_AND_ASSIGN(
      Dataset d,
      LoadWikiCs(WriteDataJson("deep", WithExtra(std::string(15, '[') + std::string(15, ']'))),
                 "deep"));
  EXPECT_EQ(d.num_nodes(), 5);
  EXPECT_THAT(
      LoadWikiCs(WriteDataJson("deep", WithExtra(std::string(16, '[') + std::string(16, ']'))),
                 "deep"),
      StatusIs(absl::StatusCode::kResourceExhausted,
               HasSubstr("deep/data.json:1:26 (byte 25): arrays and objects nested deeper "
                         "than 16")));
  std::string objects;
  for (int i = 0; i < 20; ++i) objects += "{\"a\": ";
  objects += "1" + std::string(20, '}');
  EXPECT_THAT(LoadWikiCs(WriteDataJson("deep", WithExtra(objects)), "deep"),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("deep/data.json:1:101 (byte 100): arrays and objects nested "
                                 "deeper than 16")));
  // A million brackets: refused at the limit, with no recursion to overflow the stack.
  EXPECT_THAT(LoadWikiCs(WriteDataJson("deep", std::string(1000000, '[')), "deep"),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("deep/data.json:1:17 (byte 16): arrays and objects nested deeper "
                                 "than 16")));
}

TEST(LoadWikiCsTest, LongBadTokensGiveShortMessages) {
  // The parser quotes the token it failed in; a 100 kB string is cut to its ends.
  const absl::StatusOr<Dataset> d = LoadWikiCs(
      WriteDataJson("long", WithExtra("\"" + std::string(100000, 'a') + "\\x\"")), "long");
  EXPECT_THAT(d, StatusIs(absl::StatusCode::kInvalidArgument,
                          HasSubstr("long/data.json:1:100013 (byte 100012): syntax error")));
  EXPECT_LT(d.status().message().size(), 320 + ::testing::TempDir().size());
  EXPECT_THAT(std::string(d.status().message()), HasSubstr(" ... "));
}

TEST(LoadWikiCsTest, SkipsAUtf8ByteOrderMark) {
  ASSERT_OK_AND_ASSIGN(
      Dataset d, LoadWikiCs(WriteDataJson("bom", "\xef\xbb\xbf" + ToJson(TinyMembers())), "bom"));
  EXPECT_EQ(d.num_nodes(), 5);
}

TEST(LoadWikiCsTest, MissingFileSaysHowToGetIt) {
  EXPECT_THAT(LoadWikiCs("/nonexistent/wikics", "wikics"),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("/nonexistent/wikics/data.json: no such file. Dataset 'wikics' "
                                 "is not under the data root: run "
                                 "`third_party/download_datasets.sh wikics")));
}

// ---- seeded mutations of the tiny file: OK or a documented error, never a crash ----

// Mutates `s`; three in four edits land in the first `hot` bytes (the members before features).
std::string Mutate(std::string s, size_t hot, std::mt19937_64& rng) {
  auto pick = [&rng](uint64_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<uint64_t>(0, n - 1)(rng);
  };
  auto where = [&](size_t size) {
    return pick(4) < 3 ? pick(std::min(hot, size + 1)) : pick(size + 1);
  };
  static const std::string kTokens[] = {
      "[",    "]",  "{",       "}",    "\"",    ",",    ":",
      "-",    "0",  "1",       "7",    "99999", "-1",   "0.5",
      "1E+2", "-0", "1e400",   "true", "null",  "[]",   "\"x\"",
      "\\u",  "\\", "\\ud800", "\xff", "\xc3",  "\x01", "\xed\xa0\x80",
      " ",    "\n", "\t"};
  const int ops = 1 + static_cast<int>(pick(3));
  for (int i = 0; i < ops; ++i) {
    switch (pick(5)) {
      case 0:  // flip one bit
        if (!s.empty()) {
          s[std::min(where(s.size()), s.size() - 1)] ^= static_cast<char>(1 << pick(8));
        }
        break;
      case 1:  // truncate
        s.resize(where(s.size()));
        break;
      case 2:  // insert a token
        s.insert(std::min(where(s.size()), s.size()), kTokens[pick(std::size(kTokens))]);
        break;
      case 3:  // delete a short range
        if (!s.empty()) s.erase(std::min(where(s.size()), s.size() - 1), 1 + pick(6));
        break;
      case 4: {  // copy a short range elsewhere
        if (s.empty()) break;
        const std::string piece = s.substr(std::min(where(s.size()), s.size() - 1), 1 + pick(12));
        s.insert(std::min(where(s.size()), s.size()), piece);
        break;
      }
    }
  }
  return s;
}

TEST(LoadWikiCsFuzzTest, MutatedFilesNeverCrash) {
  const std::string valid = ToJson(TinyMembers());
  const size_t hot = valid.find("\"features\"");
  ASSERT_NE(hot, std::string::npos);
  std::mt19937_64 rng(20240607);
  std::map<absl::StatusCode, int> by_code;
  for (int i = 0; i < 400; ++i) {
    const std::string text = Mutate(valid, hot, rng);
    try {
      absl::StatusOr<Dataset> d = LoadWikiCs(WriteDataJson("fuzz", text), "fuzz");
      ++by_code[d.status().code()];
      if (d.ok()) {
        EXPECT_TRUE(d->graph.IsSymmetric());
        EXPECT_EQ(d->graph.CountSelfLoops(), 0);
        continue;
      }
      const absl::StatusCode c = d.status().code();
      EXPECT_TRUE(c == absl::StatusCode::kInvalidArgument || c == absl::StatusCode::kDataLoss ||
                  c == absl::StatusCode::kResourceExhausted)
          << d.status();
      EXPECT_THAT(std::string(d.status().message()), HasSubstr("fuzz/data.json")) << d.status();
      EXPECT_LT(d.status().message().size(), 400 + ::testing::TempDir().size()) << d.status();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "mutation " << i << " threw: " << e.what();
    }
  }
  for (const auto& [code, count] : by_code) {
    std::cout << absl::StatusCodeToString(code) << ": " << count << "\n";
  }
  EXPECT_GT(by_code[absl::StatusCode::kOk], 0);
  EXPECT_GT(by_code[absl::StatusCode::kInvalidArgument], 0);
}

}  // namespace
}  // namespace fgl::graph::io
