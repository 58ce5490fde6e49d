#include "graph/io/file.h"

#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::graph::io {
namespace {

using ::fgl::testing::StatusIs;
using ::testing::HasSubstr;

std::string TempPath(const std::string& name) {
  return std::string(::testing::TempDir()) + "/" + name;
}

TEST(ReadFileBytesTest, MissingDatasetFileSaysHowToGetIt) {
  EXPECT_THAT(ReadFileBytes("/nonexistent/ind.cora.x", "cora"),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("/nonexistent/ind.cora.x: no such file. Dataset 'cora'")));
  EXPECT_THAT(ReadFileBytes("/nonexistent/ind.cora.x", "cora"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("download_datasets.sh cora")));
}

TEST(ReadMaybeGzipTest, RoundTripsAndDetectsTruncation) {
  const std::string text = "node_id,feat\n0,1.5\n1,2.5\n";
  const std::string path = TempPath("t.csv.gz");
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, text.data(), text.size());
  gzclose(f);
  ASSERT_OK_AND_ASSIGN(std::string got, ReadMaybeGzip(path));
  EXPECT_EQ(got, text);
  // Truncate the compressed file.
  ASSERT_OK_AND_ASSIGN(std::string packed, ReadFileBytes(path));
  const std::string cut = TempPath("cut.csv.gz");
  std::ofstream(cut, std::ios::binary) << packed.substr(0, packed.size() / 2);
  EXPECT_THAT(ReadMaybeGzip(cut), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("cut.csv.gz")));
}

}  // namespace
}  // namespace fgl::graph::io
