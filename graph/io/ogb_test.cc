#include "graph/io/ogb.h"

#include <sys/stat.h>
#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "graph/testing/tensor_values.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::graph::io {
namespace {

using ::fgl::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

using ::fgl::graph::testing::Vec;

void WriteGzip(const std::string& path, const std::string& text) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  ASSERT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())),
            static_cast<int>(text.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

void MakeDirs(const std::string& path) {
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') ::mkdir(path.substr(0, i).c_str(), 0755);
  }
}

// Files of a tiny ogbn-arxiv look-alike, by name under raw/ (".gz" names are gzipped).
// 4 nodes, 3 features; directed edges 0->1, 1->0 (reverse duplicate), 2->2 (self-loop), 3->1
// -> undirected 0-1, 1-3: row_ptr [0, 1, 3, 3, 4], col [1, 0, 3, 1]. Node 2 is isolated.
std::map<std::string, std::string> TinyFiles() {
  return {
      {"num-node-list.csv.gz", "4\n"},
      {"node-feat.csv.gz", "0.5,-1,2e-1\n0,0,0\n1.25,3,4\n-0.057943,0.052608,-0.0726\n"},
      {"node-label.csv.gz", "3\n0\n1\n3\n"},
      {"edge.csv", "0,1\n1,0\n2,2\n3,1\n"},  // uncompressed works too
  };
}

std::string WriteDataset(const std::string& name, const std::map<std::string, std::string>& files) {
  const std::string dir = std::string(::testing::TempDir()) + "/" + name;
  MakeDirs(dir + "/raw");
  for (const auto& [file, text] : files) {
    const std::string path = dir + "/raw/" + file;
    if (file.size() > 3 && file.substr(file.size() - 3) == ".gz") {
      WriteGzip(path, text);
    } else {
      std::ofstream(path, std::ios::binary) << text;
    }
  }
  return dir;
}

TEST(LoadOgbNodePropTest, LoadsTinyDataset) {
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadOgbNodeProp(WriteDataset("tiny", TinyFiles()), "tiny"));
  EXPECT_EQ(d.name, "tiny");
  EXPECT_THAT(d.features.sizes().vec(), ElementsAre(4, 3));
  EXPECT_THAT(Vec<float>(d.features),
              ElementsAre(0.5f, -1, 0.2f, 0, 0, 0, 1.25f, 3, 4, -0.057943f, 0.052608f, -0.0726f));
  EXPECT_THAT(Vec<int64_t>(d.labels), ElementsAre(3, 0, 1, 3));
  EXPECT_EQ(d.num_classes, 4);
  EXPECT_THAT(Vec<int64_t>(d.graph.row_ptr()), ElementsAre(0, 1, 3, 3, 4));
  EXPECT_THAT(Vec<int64_t>(d.graph.col()), ElementsAre(1, 0, 3, 1));
  EXPECT_TRUE(d.provided_splits.empty());
}

TEST(LoadOgbNodePropTest, ReadsSplitDirectory) {
  const std::string dir = WriteDataset("with_split", TinyFiles());
  MakeDirs(dir + "/split/time");
  WriteGzip(dir + "/split/time/train.csv.gz", "0\n3\n");
  WriteGzip(dir + "/split/time/valid.csv.gz", "1\n");
  std::ofstream(dir + "/split/time/test.csv") << "2\n";
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadOgbNodeProp(dir, "with_split"));
  ASSERT_EQ(d.provided_splits.size(), 1u);
  EXPECT_THAT(Vec<bool>(d.provided_splits[0].train), ElementsAre(1, 0, 0, 1));
  EXPECT_THAT(Vec<bool>(d.provided_splits[0].val), ElementsAre(0, 1, 0, 0));
  EXPECT_THAT(Vec<bool>(d.provided_splits[0].test), ElementsAre(0, 0, 1, 0));

  WriteGzip(dir + "/split/time/valid.csv.gz", "1\n7\n");
  EXPECT_THAT(LoadOgbNodeProp(dir, "with_split"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("split/time/valid.csv.gz:2: node 7 outside [0, 4)")));
}

TEST(LoadOgbNodePropTest, BadInputsNameFileAndLine) {
  struct Case {
    std::string file, text, message;
  };
  const std::vector<Case> cases = {
      {"edge.csv", "0,1\n1,x\n", "raw/edge.csv:2: node id 'x' is not an integer"},
      {"edge.csv", "0,1\n1,4\n", "raw/edge.csv:2: node 4 outside [0, 4)"},
      {"edge.csv", "0,1\n-1,2\n", "raw/edge.csv:2: node -1 outside [0, 4)"},
      {"edge.csv", "0,1\n1,2,3\n", "raw/edge.csv:2: expected src,dst; got 3 fields"},
      {"edge.csv", "0,1\n\n", "raw/edge.csv:2: node id '' is not an integer"},
      {"node-feat.csv.gz", "1,2,3\n1,2\n1,2,3\n1,2,3\n",
       "raw/node-feat.csv.gz:2: 2 features, but row 1 has 3"},
      {"node-feat.csv.gz", "1,2,3\n1,2,3,4\n1,2,3\n1,2,3\n",
       "raw/node-feat.csv.gz:2: 4 features, but row 1 has 3"},
      {"node-feat.csv.gz", "1,2,3\n1,2,3\n1,abc,3\n1,2,3\n",
       "raw/node-feat.csv.gz:3: feature 'abc' is not a finite number"},
      {"node-feat.csv.gz", "1,2,3\n1,2,3\n1,2,3\n",
       "raw/node-feat.csv.gz: 3 rows but num-node-list says 4 nodes"},
      {"node-label.csv.gz", "3\n0\n1\n",
       "raw/node-label.csv.gz: 3 labels but num-node-list says 4"},
      {"node-label.csv.gz", "3\n0\n1\n2,1\n",
       "raw/node-label.csv.gz:4: label (one integer per line) '2,1'"},
      {"node-label.csv.gz", "3\n0\n-1\n2\n", "raw/node-label.csv.gz:3: label -1 outside"},
      {"num-node-list.csv.gz", "4\n5\n", "raw/num-node-list.csv.gz:1: expected one node count"},
      {"num-node-list.csv.gz", "four\n", "raw/num-node-list.csv.gz:1: node count 'four'"},
      {"num-node-list.csv.gz", "1000000000000\n",
       "node-feat.csv.gz: 4 rows but num-node-list says 1000000000000"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    auto files = TinyFiles();
    files[cases[i].file] = cases[i].text;
    const std::string name = "bad" + std::to_string(i);
    EXPECT_THAT(LoadOgbNodeProp(WriteDataset(name, files), name),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(cases[i].message)))
        << "case " << i;
  }
}

TEST(LoadOgbNodePropTest, MissingOrCorruptFiles) {
  EXPECT_THAT(LoadOgbNodeProp("/nonexistent/ogbn_arxiv", "ogbn-arxiv"),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("/nonexistent/ogbn_arxiv/raw/num-node-list.csv.gz: no such "
                                 "file. Dataset 'ogbn-arxiv'")));
  auto files = TinyFiles();
  files.erase("edge.csv");
  EXPECT_THAT(LoadOgbNodeProp(WriteDataset("no_edges", files), "no_edges"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no_edges/raw/edge.csv.gz")));
  const std::string dir = WriteDataset("corrupt", TinyFiles());
  std::ofstream(dir + "/raw/node-label.csv.gz", std::ios::binary) << "\x1f\x8b\x08garbage";
  EXPECT_THAT(LoadOgbNodeProp(dir, "corrupt"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("raw/node-label.csv.gz")));
}

}  // namespace
}  // namespace fgl::graph::io
