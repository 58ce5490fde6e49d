// Seeded random mutations of small .npz/.npy inputs: every parse and load must return OK or an
// error status, never crash, throw or CHECK-fail. Three levels: whole-archive bytes (mostly
// caught by zip CRCs), one member re-zipped with a valid CRC (reaches the .npy parser and the
// loaders' validation), and bare .npy bytes. Real files join the corpus when $FGL_DATA_DIR is set.
#include <sys/stat.h>

#include <cstdint>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "graph/io/file.h"
#include "graph/io/geom_gcn.h"
#include "graph/io/gnn_benchmark.h"
#include "graph/io/heterophilous.h"
#include "graph/io/npy.h"
#include "graph/io/npz_writer.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_macros.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::graph::io {
namespace {

using testing::NpyBytes;
using testing::NpyFromValues;
using testing::NpzMember;

enum class Kind { kGnnBenchmark, kHeterophilous, kGeomGcnSplit };

struct Seed {
  std::string name;
  Kind kind;
  std::vector<NpzMember> members;  // as stored, so a member can be mutated and re-zipped
  bool deflate;
  int64_t num_nodes;  // for the split loader
  int iterations;     // per level; texas.npz inflates to 1.2 MB per run, so it gets fewer
};

std::vector<Seed> GeneratedSeeds() {
  std::vector<Seed> seeds;
  seeds.push_back({"gnn_benchmark",
                   Kind::kGnnBenchmark,
                   {{"adj_data.npy", NpyFromValues<float>({4}, {1, 1, 1, 1})},
                    {"adj_indices.npy", NpyFromValues<int32_t>({4}, {1, 2, 2, 2})},
                    {"adj_indptr.npy", NpyFromValues<int32_t>({5}, {0, 1, 3, 4, 4})},
                    {"adj_shape.npy", NpyFromValues<int64_t>({2}, {4, 4})},
                    {"attr_data.npy", NpyFromValues<float>({4}, {1, 1, 2, 5})},
                    {"attr_indices.npy", NpyFromValues<int32_t>({4}, {2, 0, 0, 1})},
                    {"attr_indptr.npy", NpyFromValues<int32_t>({5}, {0, 1, 3, 3, 4})},
                    {"attr_shape.npy", NpyFromValues<int64_t>({2}, {4, 3})},
                    {"labels.npy", NpyFromValues<int64_t>({4}, {0, 2, 1, 2})},
                    {"class_names.npy", NpyBytes("|O", {3}, "\x80\x02pickle")}},
                   /*deflate=*/false,
                   4,
                   400});
  seeds.push_back(
      {"heterophilous",
       Kind::kHeterophilous,
       {{"node_features.npy", NpyFromValues<float>({4, 2}, {0, 1, 2, 3, 4, 5, 6, 7})},
        {"node_labels.npy", NpyFromValues<int64_t>({4}, {1, 0, 1, 0})},
        {"edges.npy", NpyFromValues<int64_t>({3, 2}, {0, 1, 2, 2, 1, 3})},
        {"train_masks.npy", NpyBytes("|b1", {2, 4}, std::string("\1\0\1\0\0\1\0\1", 8), true)},
        {"val_masks.npy", NpyFromValues<bool>({2, 4}, {0, 0, 1, 0, 1, 0, 0, 0})},
        {"test_masks.npy", NpyFromValues<uint8_t>({2, 4}, {0, 0, 0, 1, 0, 1, 0, 0})}},
       /*deflate=*/true,
       4,
       400});
  seeds.push_back({"split",
                   Kind::kGeomGcnSplit,
                   {{"train_mask.npy", NpyFromValues<uint8_t>({5}, {1, 1, 0, 0, 0})},
                    {"val_mask.npy", NpyFromValues<uint8_t>({5}, {0, 0, 1, 0, 0})},
                    {"test_mask.npy", NpyFromValues<bool>({5}, {0, 0, 0, 1, 1})}},
                   /*deflate=*/true,
                   5,
                   400});
  return seeds;
}

// The members of a real archive, read back so they can be re-zipped after a mutation.
bool AddRealSeed(const std::string& path, const std::string& name, Kind kind, int64_t n,
                 int iterations, std::vector<Seed>* seeds) {
  auto npz = NpzArchive::Open(path);
  if (!npz.ok()) return false;
  Seed s{name, kind, {}, true, n, iterations};
  for (const std::string& key : npz->keys()) {
    auto bytes = npz->ReadMemberBytes(key);
    if (!bytes.ok()) return false;
    s.members.push_back({key + ".npy", *bytes});
  }
  seeds->push_back(std::move(s));
  return true;
}

// Values that tend to break size arithmetic when written over a length or shape field.
constexpr uint64_t kInteresting[] = {0,
                                     1,
                                     2,
                                     0x7f,
                                     0x80,
                                     0xff,
                                     0xffff,
                                     0x7fffffff,
                                     0x80000000,
                                     0xffffffff,
                                     0x100000000ULL,
                                     0x7fffffffffffffffULL,
                                     0xffffffffffffffffULL};

std::string Mutate(std::string s, std::mt19937_64& rng) {
  auto pick = [&rng](uint64_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<uint64_t>(0, n - 1)(rng);
  };
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
      case 3: {  // insert 1..8 random bytes
        std::string ins(1 + pick(8), '\0');
        for (char& c : ins) c = static_cast<char>(pick(256));
        s.insert(pick(s.size() + 1), ins);
        break;
      }
      case 4:  // delete a short range
        if (!s.empty()) {
          const size_t at = pick(s.size());
          s.erase(at, 1 + pick(16));
        }
        break;
      case 5: {  // overwrite 2, 4 or 8 bytes with an interesting little-endian integer
        const size_t width = size_t{2} << pick(3);
        if (s.size() < width) break;
        const size_t at = pick(s.size() - width + 1);
        const uint64_t v = kInteresting[pick(std::size(kInteresting))];
        for (size_t b = 0; b < width; ++b) s[at + b] = static_cast<char>((v >> (8 * b)) & 0xff);
        break;
      }
    }
  }
  return s;
}

// Counts outcomes; an unexpected status code (Internal, Unknown, ...) fails the test.
struct Outcomes {
  int64_t ok = 0, errors = 0;
  std::map<absl::StatusCode, int64_t> by_code;
  void Add(const absl::Status& s, const std::string& what) {
    if (s.ok()) {
      ++ok;
      return;
    }
    ++errors;
    ++by_code[s.code()];
    const absl::StatusCode c = s.code();
    EXPECT_TRUE(c == absl::StatusCode::kInvalidArgument || c == absl::StatusCode::kDataLoss ||
                c == absl::StatusCode::kNotFound || c == absl::StatusCode::kResourceExhausted)
        << what << ": " << s;
  }
};

class Fuzzer {
 public:
  explicit Fuzzer(const std::string& dir) : dir_(dir) { ::mkdir(dir.c_str(), 0755); }

  // Parses every member and runs the loader for `kind` on `zip`.
  void RunArchive(const Seed& seed, const std::string& zip, const std::string& what) {
    try {
      auto npz = NpzArchive::FromBytes(zip, "fuzz.npz", {.max_member_bytes = 64 << 20});
      outcomes.Add(npz.status(), what);
      if (npz.ok()) {
        for (const std::string& key : npz->keys()) {
          auto a = npz->ReadArray(key);
          outcomes.Add(a.status(), what);
          if (a.ok()) RunTensors(*a, what);
        }
      }
      outcomes.Add(LoaderStatus(seed, zip), what);
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << " threw: " << e.what();
    }
  }

  void RunNpy(const std::string& bytes, const std::string& what) {
    try {
      auto a = ParseNpy(bytes, "fuzz.npy");
      outcomes.Add(a.status(), what);
      if (a.ok()) RunTensors(*a, what);
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << " threw: " << e.what();
    }
  }

  Outcomes outcomes;

  // Writes `zip` where the loader for `seed.kind` looks, and runs it. A failed write is
  // Internal (WriteBytes), which Outcomes counts as a test failure.
  absl::Status LoaderStatus(const Seed& seed, const std::string& zip) {
    switch (seed.kind) {
      case Kind::kGnnBenchmark: {
        const std::string path = dir_ + "/gnn.npz";
        FGL_RETURN_IF_ERROR(testing::WriteBytes(path, zip));
        return LoadGnnBenchmarkNpz(path, "fuzz", /*max_feature_bytes=*/1 << 20).status();
      }
      case Kind::kHeterophilous: {
        const std::string path = dir_ + "/hg.npz";
        FGL_RETURN_IF_ERROR(testing::WriteBytes(path, zip));
        return LoadHeterophilousNpz(path, "fuzz").status();
      }
      case Kind::kGeomGcnSplit:
        // All ten split files are the mutated one: the loader reads every one.
        for (int k = 0; k < 10; ++k) {
          FGL_RETURN_IF_ERROR(
              testing::WriteBytes(absl::StrCat(dir_, "/fuzz_split_0.6_0.2_", k, ".npz"), zip));
        }
        return LoadGeomGcnSplits(dir_, "fuzz", seed.num_nodes).status();
    }
    return absl::InternalError("unknown kind");
  }

 private:
  void RunTensors(const NpyArray& a, const std::string& what) {
    outcomes.Add(NpyToFloat32Tensor(a, "t").status(), what);
    outcomes.Add(NpyToInt64Tensor(a, "t").status(), what);
    outcomes.Add(NpyToBoolTensor(a, "t").status(), what);
  }

  std::string dir_;
};

TEST(NpzFuzzTest, MutatedInputsNeverCrash) {
  std::vector<Seed> seeds = GeneratedSeeds();
  const char* root = std::getenv("FGL_DATA_DIR");
  if (root != nullptr && *root != '\0') {
    const std::string r(root);
    EXPECT_TRUE(
        AddRealSeed(r + "/texas/texas.npz", "texas", Kind::kHeterophilous, 183, 60, &seeds));
    EXPECT_TRUE(AddRealSeed(r + "/texas/splits/texas_split_0.6_0.2_0.npz", "texas_split",
                            Kind::kGeomGcnSplit, 183, 300, &seeds));
    EXPECT_TRUE(AddRealSeed(r + "/wisconsin/splits/wisconsin_split_0.6_0.2_0.npz",
                            "wisconsin_split", Kind::kGeomGcnSplit, 251, 300, &seeds));
  }
  Fuzzer fuzzer(std::string(::testing::TempDir()) + "/fuzz");
  std::mt19937_64 rng(20240601);
  int64_t runs = 0;
  for (const Seed& seed : seeds) {
    ASSERT_OK_AND_ASSIGN(const std::string zip, testing::NpzBytes(seed.members, seed.deflate));
    EXPECT_OK(fuzzer.LoaderStatus(seed, zip)) << seed.name << " unmutated";

    for (int i = 0; i < seed.iterations; ++i, ++runs) {
      fuzzer.RunArchive(seed, Mutate(zip, rng), absl::StrCat(seed.name, " archive #", i));
    }
    for (int i = 0; i < seed.iterations; ++i, ++runs) {
      std::vector<NpzMember> members = seed.members;
      NpzMember& m = members[std::uniform_int_distribution<size_t>(0, members.size() - 1)(rng)];
      m.bytes = Mutate(m.bytes, rng);
      ASSERT_OK_AND_ASSIGN(const std::string mutated, testing::NpzBytes(members, seed.deflate));
      fuzzer.RunArchive(seed, mutated, absl::StrCat(seed.name, " member ", m.name, " #", i));
    }
    for (int i = 0; i < seed.iterations; ++i, ++runs) {
      const NpzMember& m =
          seed.members[std::uniform_int_distribution<size_t>(0, seed.members.size() - 1)(rng)];
      fuzzer.RunNpy(Mutate(m.bytes, rng), absl::StrCat(seed.name, " npy ", m.name, " #", i));
    }
  }
  std::cout << runs << " mutated inputs over " << seeds.size() << " seeds: " << fuzzer.outcomes.ok
            << " OK results, " << fuzzer.outcomes.errors << " errors (";
  for (const auto& [code, count] : fuzzer.outcomes.by_code) {
    std::cout << absl::StatusCodeToString(code) << " " << count << "; ";
  }
  std::cout << ")\n";
  // Mutations must reach past the zip layer: some loads fail in validation, some still pass.
  EXPECT_GT(fuzzer.outcomes.by_code[absl::StatusCode::kInvalidArgument], 0);
  EXPECT_GT(fuzzer.outcomes.ok, 0);
}

}  // namespace
}  // namespace fgl::graph::io
