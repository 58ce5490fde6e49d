// Dataset files are checked against the embedded sums when read under a checksum scope: a listed
// file with other bytes is refused naming it; unlisted files, files outside the root, and reads
// with verification off pass; a verified file is remembered by path, size and mtime.
#include "graph/io/dataset_checksums.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "graph/io/file.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::graph::io {
namespace {

using ::fgl::testing::StatusIs;
using ::testing::HasSubstr;

std::string Write(const std::string& root, const std::string& relative, const std::string& bytes) {
  const std::string path = root + "/" + relative;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  return path;
}

class DatasetChecksumsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::string(::testing::TempDir()) + "/checksum_root";
    std::filesystem::remove_all(root_);
    setenv("FGL_CACHE_HOME", (std::string(::testing::TempDir()) + "/checksum_cache").c_str(), 1);
    std::filesystem::remove_all(std::string(::testing::TempDir()) + "/checksum_cache");
  }
  void TearDown() override { SetVerifyDatasetFiles(true); }
  std::string root_;
};

TEST_F(DatasetChecksumsTest, Sha256OfKnownInputs) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_F(DatasetChecksumsTest, TheSumsFileIsEmbedded) {
  EXPECT_EQ(ListedSha256("pubmed/ind.pubmed.allx"),
            "508e538e2abdccdd54c4d3e9f49d638b4af7107d85845f66ddea5a5152658b7e");
  EXPECT_EQ(ListedSha256("cora/no_such_file"), std::nullopt);
}

TEST_F(DatasetChecksumsTest, AListedFileWithOtherBytesIsRefusedNamingIt) {
  const std::string listed = Write(root_, "cora/ind.cora.x", "not the real file");
  const std::string unlisted = Write(root_, "cora/my_notes.txt", "anything");
  // No scope: nothing is checked (a reader's unit test on its own files).
  EXPECT_OK(ReadFileBytes(listed, "cora").status());
  {
    DatasetChecksumScope scope(root_ + "/");
    EXPECT_THAT(ReadFileBytes(listed, "cora"),
                StatusIs(absl::StatusCode::kDataLoss, HasSubstr(listed + ": damaged or altered dataset file")));
    EXPECT_OK(ReadFileBytes(unlisted, "cora").status());
    SetVerifyDatasetFiles(false);
    EXPECT_OK(ReadFileBytes(listed, "cora").status());
    SetVerifyDatasetFiles(true);
    {
      DatasetChecksumScope elsewhere(root_ + "/other");
      EXPECT_OK(ReadFileBytes(listed, "cora").status());  // not under the innermost root
    }
    EXPECT_FALSE(ReadFileBytes(listed, "cora").ok());
  }
  EXPECT_OK(ReadFileBytes(listed, "cora").status());
}

// The real file passes, is remembered, and a later change of its bytes (new mtime) is caught.
TEST_F(DatasetChecksumsTest, TheRealFilePassesAndAChangeIsCaught) {
  const char* data = std::getenv("FGL_DATA_DIR");
  if (data == nullptr || !FileExists(std::string(data) + "/cora/ind.cora.y")) GTEST_SKIP() << "no Cora under $FGL_DATA_DIR";
  std::ifstream in(std::string(data) + "/cora/ind.cora.y", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string path = Write(root_, "cora/ind.cora.y", bytes);
  DatasetChecksumScope scope(root_);
  ASSERT_OK(ReadFileBytes(path, "cora").status());
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(std::string(::testing::TempDir()) + "/checksum_cache/verified_files"),
                          std::filesystem::directory_iterator()),
            1);
  ASSERT_OK(ReadFileBytes(path, "cora").status());  // remembered
  bytes[bytes.size() / 2] ^= 0x10;                   // one flipped bit
  Write(root_, "cora/ind.cora.y", bytes);
  std::filesystem::last_write_time(path, std::filesystem::last_write_time(path) + std::chrono::seconds(5));
  EXPECT_THAT(ReadFileBytes(path, "cora"), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("ind.cora.y")));
}

}  // namespace
}  // namespace fgl::graph::io
