// Seeded mutation fuzzing of the torch.save reader: corrupt generated (and, with $FGL_DATA_DIR,
// real) archives and check that every input ends in OK or one of the documented error codes,
// never a crash, a C++ exception or a read past a buffer. Two levels: whole-archive bytes
// (mostly stopped by zip CRCs), and one member (the pickle or a storage) mutated and re-zipped
// with a valid CRC, which reaches the unpickler and the storage/view checks.
// Build it with -fsanitize=address,undefined to also catch out-of-bounds reads.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "graph/io/file.h"
#include "graph/io/npy.h"
#include "graph/io/npz_writer.h"
#include "graph/io/pickle_test_util.h"
#include "graph/io/torch_pt.h"
#include "gtest/gtest.h"

namespace fgl::graph::io {
namespace {

using ::fgl::graph::io::testing::NpzMember;
using ::fgl::graph::io::testing::PickleWriter;
namespace op = ::fgl::graph::io::testing::op;

template <typename T>
std::string Bytes(const std::vector<T>& values) {
  std::string out(values.size() * sizeof(T), '\0');
  if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

struct Seed {
  std::string name;
  std::vector<NpzMember> members;  // as stored, so one member can be mutated and re-zipped
  int iterations;
};

// A PyG Data like OpenFGL's client files (x, transposed edge_index, y, global_map) and a bare
// bool tensor like node_cls/train_<i>.pt.
std::vector<Seed> GeneratedSeeds() {
  const std::string data_pkl =
      PickleWriter()
          .PygData([](PickleWriter& w) {
            w.Unicode("x").TorchTensor("FloatStorage", "0", 6, 0, {3, 2}, {2, 1});
            w.Unicode("edge_index").TorchTensor("LongStorage", "1", 8, 0, {2, 4}, {1, 2});
            w.Unicode("y").TorchTensor("LongStorage", "2", 3, 0, {3}, {1});
            w.Unicode("global_map").Op(op::kEmptyDict).Op(op::kMark);
            w.Int(0).Int(5).Int(1).Int(9).Int(2).Int(300).Op(op::kSetItems);
            w.Unicode("num_global_classes").Int(2);
          })
          .Stop();
  std::vector<Seed> seeds;
  seeds.push_back({"data",
                   {{"data_0/data.pkl", data_pkl},
                    {"data_0/byteorder", "little"},
                    {"data_0/data/0", Bytes(std::vector<float>{1, 0, 0, 1, 1, 1})},
                    {"data_0/data/1", Bytes(std::vector<int64_t>{0, 1, 1, 0, 1, 2, 2, 1})},
                    {"data_0/data/2", Bytes(std::vector<int64_t>{0, 0, 1})},
                    {"data_0/version", "3\n"}},
                   1500});
  seeds.push_back({"mask",
                   {{"train_0/data.pkl",
                     PickleWriter().TorchTensor("BoolStorage", "0", 5, 1, {2, 2}, {1, 2}).Stop()},
                    {"train_0/data/0", std::string("\x01\x00\x01\x01\x00", 5)},
                    {"train_0/version", "3\n"}},
                   1500});
  return seeds;
}

std::vector<Seed> RealSeeds() {
  std::vector<Seed> seeds;
  const char* root = std::getenv("FGL_DATA_DIR");
  if (root == nullptr || *root == '\0') return seeds;
  const std::string dir = std::string(root) + "/reference_partitions/";
  // The real client files carry 1.4 MB storages, so they get fewer tries.
  for (const auto& [rel, iterations] : std::vector<std::pair<std::string, int>>{
           {"openfgl/subgraph_fl_louvain_1_Cora_client_10/data_0.pt", 150},
           {"openfgl/subgraph_fl_louvain_1_Cora_client_10/node_cls/test_0.pt", 600},
           {"fedtad_cora_louvain_10/ckr_Cora_Louvain_10.pt", 600}}) {
    absl::StatusOr<std::string> bytes = ReadFileBytes(dir + rel);
    EXPECT_TRUE(bytes.ok()) << bytes.status();
    if (!bytes.ok()) continue;
    // Unzip through the reader's own archive class to get the members back.
    absl::StatusOr<NpzArchive> zip = NpzArchive::FromBytes(*bytes, rel);
    EXPECT_TRUE(zip.ok()) << zip.status();
    if (!zip.ok()) continue;
    Seed seed{rel, {}, iterations};
    for (const std::string& key : zip->keys()) {
      absl::StatusOr<std::string> member = zip->ReadMemberBytes(key);
      EXPECT_TRUE(member.ok()) << member.status();
      if (member.ok()) seed.members.push_back({key, *member});
    }
    seeds.push_back(std::move(seed));
  }
  return seeds;
}

// One random corruption: flip bytes, truncate, insert random bytes or an opcode, duplicate or
// delete a chunk, or overwrite a byte with an interesting value.
std::string Mutate(std::string s, std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  static constexpr char kInteresting[] = {'\0', '\x01', '\x02', '\x7f', '\x80', '\xff', '(', '.',
                                          't',  'R',    'Q',    'b',    '\x81', 'h',    'q', 'u'};
  const int rounds = 1 + static_cast<int>(rng() % 4);
  for (int round = 0; round < rounds; ++round) {
    switch (rng() % 6) {
      case 0:
        if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1 + rng() % 255);
        break;
      case 1:
        s.resize(pick(s.size() + 1));
        break;
      case 2: {
        std::string ins(1 + rng() % 8, '\0');
        for (char& c : ins) c = static_cast<char>(rng());
        s.insert(pick(s.size() + 1), ins);
        break;
      }
      case 3: {
        if (s.empty()) break;
        const size_t at = pick(s.size()), len = 1 + pick(std::min<size_t>(64, s.size() - at));
        s.insert(at, s.substr(at, len));
        break;
      }
      case 4: {
        if (s.empty()) break;
        const size_t at = pick(s.size());
        s.erase(at, 1 + pick(std::min<size_t>(16, s.size() - at)));
        break;
      }
      default:
        if (!s.empty()) s[pick(s.size())] = kInteresting[pick(sizeof(kInteresting))];
        break;
    }
  }
  return s;
}

struct Outcomes {
  int ok = 0, errors = 0;
};

void Check(const std::string& input, const std::string& name, Outcomes& out) {
  try {
    absl::StatusOr<PickleValue> v = ParseTorchSave(input, name);
    if (v.ok()) {
      ++out.ok;
      return;
    }
    ++out.errors;
    const absl::StatusCode code = v.status().code();
    EXPECT_TRUE(code == absl::StatusCode::kInvalidArgument || code == absl::StatusCode::kDataLoss ||
                code == absl::StatusCode::kResourceExhausted)
        << v.status();
    EXPECT_FALSE(v.status().message().empty());
  } catch (const std::exception& e) {
    ADD_FAILURE() << name << ": exception " << e.what();
  }
}

void Fuzz(const Seed& seed, std::mt19937_64& rng, Outcomes& out) {
  absl::StatusOr<std::string> whole = testing::NpzBytes(seed.members, /*deflate=*/false);
  ASSERT_TRUE(whole.ok()) << whole.status();
  Check(*whole, seed.name, out);
  for (int i = 0; i < seed.iterations; ++i) {
    if (i % 3 == 0) {
      Check(Mutate(*whole, rng), seed.name, out);
      continue;
    }
    // One member mutated, the archive rebuilt around it (valid CRC); the pickle most often.
    std::vector<NpzMember> members = seed.members;
    size_t target = 0;
    if (rng() % 2 == 1) target = rng() % members.size();
    members[target].bytes = Mutate(members[target].bytes, rng);
    absl::StatusOr<std::string> zip = testing::NpzBytes(members, /*deflate=*/rng() % 4 == 0);
    ASSERT_TRUE(zip.ok()) << zip.status();
    Check(*zip, seed.name + ":" + members[target].name, out);
  }
}

TEST(TorchSaveFuzzTest, MutatedArchivesNeverCrash) {
  std::mt19937_64 rng(20241123);
  Outcomes out;
  for (const Seed& seed : GeneratedSeeds()) Fuzz(seed, rng, out);
  for (const Seed& seed : RealSeeds()) Fuzz(seed, rng, out);
  // Both outcomes occur: the mutations neither always break nor never touch the input.
  EXPECT_GT(out.ok, 0);
  EXPECT_GT(out.errors, 0);
  std::cout << out.ok << " OK, " << out.errors << " errors\n";
}

TEST(TorchSaveFuzzTest, RandomBytesNeverCrash) {
  std::mt19937_64 rng(11);
  Outcomes out;
  for (int t = 0; t < 2000; ++t) {
    std::string input(rng() % 200, '\0');
    for (char& c : input) c = static_cast<char>(rng());
    if (t % 2 == 0) input = "PK\x03\x04" + input;
    Check(input, "random", out);
  }
  EXPECT_EQ(out.ok, 0);
}

}  // namespace
}  // namespace fgl::graph::io
