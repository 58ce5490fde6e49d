// Seeded mutation fuzzing of the restricted unpickler: corrupt real and hand-built pickles and
// check that every input ends in OK or one of the documented error codes, never a crash or hang.
// Build it with -fsanitize=address,undefined to also catch out-of-bounds reads.
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "graph/io/file.h"
#include "graph/io/pickle.h"
#include "graph/io/pickle_test_util.h"
#include "gtest/gtest.h"

namespace fgl::graph::io {
namespace {

using ::fgl::graph::io::testing::AdjacencyPickle;
using ::fgl::graph::io::testing::CsrPickle;
using ::fgl::graph::io::testing::Int32Bytes;
using ::fgl::graph::io::testing::NdArrayPickle;
using ::fgl::graph::io::testing::OneHotPickle;
using ::fgl::graph::io::testing::PickleWriter;
namespace op = ::fgl::graph::io::testing::op;

std::vector<std::string> Seeds() {
  std::vector<std::string> seeds = {
      NdArrayPickle("i4", '<', {2, 3}, Int32Bytes({1, 2, 3, 4, 5, 6})),
      NdArrayPickle("i4", '<', {3, 2}, Int32Bytes({1, 2, 3, 4, 5, 6}), /*fortran=*/true),
      CsrPickle(3, 4, {0, 1, 0, 2, 0, 0, 0, 0, 3, 0, 0, 4}),
      OneHotPickle({0, 2, 1, -1}, 3),
      AdjacencyPickle({{0, {1, 2, 3}}, {1, {0}}, {2, {0, 0}}, {300, {70000}}}),
      PickleWriter()
          .Op(op::kEmptyList)
          .Put(0)
          .Get(0)
          .Op(op::kMark)
          .Str("a")
          .Unicode("b")
          .Op(op::kNone)
          .Op(op::kNewTrue)
          .Op(op::kAppends)
          .Put(300)
          .Get(300)
          .Op(op::kTuple2)
          .Stop(),
      PickleWriter()
          .Op(op::kEmptyDict)
          .Op(op::kMark)
          .Str("k")
          .Int(-5)
          .Int(7)
          .Str(std::string(300, 'v'))
          .Op(op::kSetItems)
          .Stop(),
  };
  if (const char* dir = std::getenv("FGL_DATA_DIR"); dir != nullptr && *dir != '\0') {
    for (const char* rel :
         {"/cora/ind.cora.y", "/cora/ind.cora.graph", "/citeseer/ind.citeseer.x"}) {
      absl::StatusOr<std::string> bytes = ReadFileBytes(std::string(dir) + rel);
      EXPECT_TRUE(bytes.ok()) << bytes.status();
      if (bytes.ok()) seeds.push_back(*bytes);
    }
  }
  return seeds;
}

// One random corruption: flip bytes, truncate, insert random bytes or an opcode, duplicate or
// delete a chunk, or overwrite a byte with an interesting value.
std::string Mutate(std::string s, std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  static constexpr char kInteresting[] = {'\0', '\x01', '\x7f', '\x80', '\xff', '(', '.', 't', 'a',
                                          'e',  'u',    's',    'b',    'R',    'h', 'q', 'j', 'r'};
  const int rounds = 1 + static_cast<int>(rng() % 4);
  for (int round = 0; round < rounds; ++round) {
    switch (rng() % 6) {
      case 0:  // flip bits
        if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1 + rng() % 255);
        break;
      case 1:  // truncate
        s.resize(pick(s.size() + 1));
        break;
      case 2: {  // insert random bytes
        std::string ins(1 + rng() % 8, '\0');
        for (char& c : ins) c = static_cast<char>(rng());
        s.insert(pick(s.size() + 1), ins);
        break;
      }
      case 3: {  // duplicate a chunk in place
        if (s.empty()) break;
        const size_t at = pick(s.size()), len = 1 + pick(std::min<size_t>(64, s.size() - at));
        s.insert(at, s.substr(at, len));
        break;
      }
      case 4: {  // delete a chunk
        if (s.empty()) break;
        const size_t at = pick(s.size());
        s.erase(at, 1 + pick(std::min<size_t>(16, s.size() - at)));
        break;
      }
      default:  // an interesting byte
        if (!s.empty()) s[pick(s.size())] = kInteresting[pick(sizeof(kInteresting))];
        break;
    }
  }
  return s;
}

TEST(PickleFuzzTest, MutatedInputsNeverCrash) {
  const std::vector<std::string> seeds = Seeds();
  std::mt19937_64 rng(20240601);
  int ok = 0, errors = 0;
  // Big real files are slower per try, so they get fewer tries.
  for (const std::string& seed : seeds) {
    const int tries = seed.size() > 20000 ? 600 : 3000;
    for (int t = 0; t < tries; ++t) {
      const std::string input = Mutate(seed, rng);
      absl::StatusOr<PickleValue> v = Unpickle(input, "fuzz");
      if (v.ok()) {
        ++ok;
        continue;
      }
      ++errors;
      const absl::StatusCode code = v.status().code();
      EXPECT_TRUE(code == absl::StatusCode::kInvalidArgument ||
                  code == absl::StatusCode::kDataLoss ||
                  code == absl::StatusCode::kResourceExhausted)
          << v.status();
      EXPECT_FALSE(v.status().message().empty());
    }
  }
  // Both outcomes occur, so the mutations neither always break nor never touch the stream.
  EXPECT_GT(ok, 0);
  EXPECT_GT(errors, 0);
}

TEST(PickleFuzzTest, RandomBytesNeverCrash) {
  std::mt19937_64 rng(7);
  for (int t = 0; t < 3000; ++t) {
    std::string input(rng() % 64, '\0');
    for (char& c : input) c = static_cast<char>(rng());
    if (t % 2 == 0) input = "\x80\x02" + input;
    absl::StatusOr<PickleValue> v = Unpickle(input, "random");
    EXPECT_TRUE(v.ok() || !v.status().message().empty());
  }
}

}  // namespace
}  // namespace fgl::graph::io
