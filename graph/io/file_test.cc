#include "graph/io/file.h"

#include <sys/resource.h>
#include <zlib.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/match.h"
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

// Lowers this process's file size limit (RLIMIT_FSIZE) for one scope: a write past it fails with
// EFBIG, as a write to a full disk fails with ENOSPC, without needing root to mount a small file
// system. SIGXFSZ, which would otherwise kill the process, is ignored meanwhile.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &saved_);
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit lowered = saved_;
    lowered.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &lowered);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, old_handler_);
  }

 private:
  rlimit saved_{};
  void (*old_handler_)(int) = nullptr;
};

TEST(WriteFileAtomicallyTest, ReplacesTheFileOrLeavesItAsItWas) {
  const std::string path = TempPath("atomic.txt");
  ASSERT_OK(WriteFileAtomically(path, "old contents\n"));
  ASSERT_OK_AND_ASSIGN(std::string got, ReadFileBytes(path));
  EXPECT_EQ(got, "old contents\n");
  {
    FileSizeLimit limit(64);  // a "full disk" after 64 bytes
    EXPECT_THAT(WriteFileAtomically(path, std::string(1000, 'x')),
                StatusIs(absl::StatusCode::kUnavailable, HasSubstr("cannot write " + path)));
  }
  ASSERT_OK_AND_ASSIGN(got, ReadFileBytes(path));
  EXPECT_EQ(got, "old contents\n");  // the failed write left the old file whole
  for (const auto& entry : std::filesystem::directory_iterator(::testing::TempDir())) {
    EXPECT_FALSE(absl::StrContains(entry.path().string(), "atomic.txt.")) << entry.path() << " left behind";
  }
  ASSERT_OK(WriteFileAtomically(path, ""));  // an empty file is a file
  ASSERT_OK_AND_ASSIGN(got, ReadFileBytes(path));
  EXPECT_EQ(got, "");
  // A directory that is not there (or a file where it should be) names the path.
  EXPECT_THAT(WriteFileAtomically(TempPath("no_such_dir/x.json"), "{}"),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("no_such_dir/x.json")));
  EXPECT_THAT(WriteFileAtomically(path + "/x.json", "{}"),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("atomic.txt/x.json")));
}

TEST(AppendOnlyFileTest, EveryWriteAndTheCloseAreChecked) {
  const std::string path = TempPath("log.jsonl");
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<AppendOnlyFile> f, AppendOnlyFile::Open(path, /*truncate=*/true));
    ASSERT_OK(f->Append("line 1\n"));
    ASSERT_OK(f->Close());
  }
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<AppendOnlyFile> f, AppendOnlyFile::Open(path, /*truncate=*/false));
    ASSERT_OK(f->Append("line 2\n"));
    FileSizeLimit limit(20);
    EXPECT_THAT(f->Append(std::string(100, 'x')),
                StatusIs(absl::StatusCode::kUnavailable, HasSubstr("cannot write " + path)));
    EXPECT_OK(f->Close());
  }
  ASSERT_OK_AND_ASSIGN(std::string got, ReadFileBytes(path));
  EXPECT_EQ(got.substr(0, 14), "line 1\nline 2\n");
  EXPECT_THAT(AppendOnlyFile::Open(TempPath("no_such_dir/rounds.jsonl"), true),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("no_such_dir/rounds.jsonl")));
  // /dev/full takes the open and refuses the write, as a full disk does.
  if (std::filesystem::exists("/dev/full")) {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<AppendOnlyFile> full, AppendOnlyFile::Open("/dev/full", false));
    EXPECT_THAT(full->Append("x"), StatusIs(absl::StatusCode::kUnavailable, HasSubstr("/dev/full")));
  }
}

}  // namespace
}  // namespace fgl::graph::io
