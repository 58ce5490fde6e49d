// Checkpoint files: client states round-trip one message each, older layouts are still read, and
// damaged files (any flipped bit, a cut) are refused with the path named, or set aside on resume.
#include "fl/checkpoint_file.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_macros.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::fl {
namespace {

using ::fgl::testing::StatusIs;
using ::testing::HasSubstr;

std::string TempPath(const std::string& name) { return std::string(::testing::TempDir()) + "/" + name; }

proto::Checkpoint Header(int round) {
  proto::Checkpoint h;
  h.set_version(2);
  h.set_run_fingerprint("fingerprint of the run");
  h.set_round(round);
  return h;
}

proto::Message State(int k) {
  proto::Message m;
  (*m.mutable_scalars())["client"] = k;
  return m;
}

absl::StatusOr<bool> WriteThree(const std::string& path, int round) {
  return WriteCheckpointBestEffort(path, Header(round), round, [](CheckpointWriter& w) {
    for (int k = 0; k < 3; ++k) FGL_RETURN_IF_ERROR(w.AddClientState(State(k)));
    return absl::OkStatus();
  });
}

TEST(CheckpointFileTest, HeaderAndEachClientStateRoundTrip) {
  const std::string path = TempPath("three.pb");
  ASSERT_OK_AND_ASSIGN(bool written, WriteThree(path, 4));
  EXPECT_TRUE(written);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CheckpointReader> r, CheckpointReader::Open(path));
  EXPECT_EQ(r->header().round(), 4);
  EXPECT_EQ(r->header().run_fingerprint(), "fingerprint of the run");
  for (int k = 0; k < 3; ++k) {
    EXPECT_FALSE(r->AtEnd());
    ASSERT_OK_AND_ASSIGN(proto::Message m, r->NextClientState());
    EXPECT_EQ(m.scalars().at("client"), k);
  }
  EXPECT_TRUE(r->AtEnd());
  EXPECT_THAT(r->NextClientState(), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("holds 3 client states")));
}

TEST(CheckpointFileTest, ReadsTheSingleMessageLayout) {
  const std::string path = TempPath("legacy.pb");
  proto::Checkpoint legacy = Header(7);
  *legacy.add_clients() = State(0);
  *legacy.add_clients() = State(1);
  std::ofstream(path, std::ios::binary) << legacy.SerializeAsString();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CheckpointReader> r, CheckpointReader::Open(path));
  EXPECT_EQ(r->header().round(), 7);
  EXPECT_EQ(r->header().clients_size(), 0);
  ASSERT_OK_AND_ASSIGN(proto::Message first, r->NextClientState());
  ASSERT_OK_AND_ASSIGN(proto::Message second, r->NextClientState());
  EXPECT_EQ(second.scalars().at("client"), 1);
  EXPECT_TRUE(r->AtEnd());
}

TEST(CheckpointFileTest, DamagedFilesAreRefusedNamingThePath) {
  const std::string path = TempPath("damaged.pb");
  std::ofstream(path, std::ios::binary) << "not a checkpoint";
  EXPECT_THAT(CheckpointReader::Open(path), StatusIs(absl::StatusCode::kDataLoss, HasSubstr(path)));

  ASSERT_OK(WriteThree(path, 2).status());
  const auto size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, size - 3);  // cut short
  EXPECT_THAT(CheckpointReader::Open(path), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("truncated or damaged")));

  EXPECT_THAT(CheckpointReader::Open(TempPath("absent.pb")), StatusIs(absl::StatusCode::kNotFound, HasSubstr("absent.pb")));
}

// Every single-bit flip anywhere in the file is caught when it is opened, before anything is
// restored (a flipped tensor byte parses fine and would resume a different model).
TEST(CheckpointFileTest, EveryBitFlipIsCaughtByTheChecksum) {
  const std::string path = TempPath("flipped.pb");
  ASSERT_OK(WriteThree(path, 2).status());
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  ASSERT_GT(bytes.size(), 40u);
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (int bit = 0; bit < 8; bit += 3) {
      std::string flipped = bytes;
      flipped[i] = static_cast<char>(flipped[i] ^ (1 << bit));
      std::ofstream(path, std::ios::binary | std::ios::trunc) << flipped;
      EXPECT_FALSE(CheckpointReader::Open(path).ok()) << "byte " << i << " bit " << bit;
    }
  }
}

// A damaged checkpoint does not block resuming: it is set aside and the run starts afresh.
TEST(CheckpointFileTest, ADamagedCheckpointIsSetAsideWhenResuming) {
  const std::string path = TempPath("resume.pb");
  const std::string run = Header(0).run_fingerprint();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CheckpointReader> none, OpenCheckpointToResume(path, 2, run));
  EXPECT_EQ(none, nullptr);
  ASSERT_OK(WriteThree(path, 5).status());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CheckpointReader> whole, OpenCheckpointToResume(path, 2, run));
  ASSERT_NE(whole, nullptr);
  EXPECT_EQ(whole->header().round(), 5);
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 1);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CheckpointReader> damaged, OpenCheckpointToResume(path, 2, run));
  EXPECT_EQ(damaged, nullptr);
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_TRUE(std::filesystem::exists(path + ".damaged"));
  // Another run's checkpoint is returned (the caller refuses it); this run's of another version
  // is set aside like a damaged one.
  ASSERT_OK(WriteThree(path, 5).status());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CheckpointReader> other_run, OpenCheckpointToResume(path, 3, "another run"));
  EXPECT_NE(other_run, nullptr);
  other_run.reset();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CheckpointReader> older, OpenCheckpointToResume(path, 3, run));
  EXPECT_EQ(older, nullptr);
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_TRUE(std::filesystem::exists(path + ".version2"));
}

// Files of layout 3 (no trailer) still open.
TEST(CheckpointFileTest, ReadsLayoutThree) {
  const std::string path = TempPath("v3.pb");
  ASSERT_OK(WriteThree(path, 6).status());
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::string v3 = "FGLCKPT3" + bytes.substr(8, bytes.size() - 8 - 20);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << v3;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CheckpointReader> r, CheckpointReader::Open(path));
  EXPECT_EQ(r->header().round(), 6);
  for (int k = 0; k < 3; ++k) ASSERT_OK(r->NextClientState().status());
  EXPECT_TRUE(r->AtEnd());
}

TEST(CheckpointFileTest, AFailedWriteKeepsThePreviousCheckpoint) {
  const std::string path = TempPath("kept.pb");
  ASSERT_OK(WriteThree(path, 1).status());
  // A method error while saving is returned, and the earlier file stays whole.
  EXPECT_THAT(WriteCheckpointBestEffort(path, Header(2), 2,
                                        [](CheckpointWriter& w) {
                                          EXPECT_OK(w.AddClientState(State(0)));
                                          return absl::InternalError("client 1 cannot save");
                                        }),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("client 1 cannot save")));
  // An I/O failure only skips this checkpoint.
  ASSERT_OK_AND_ASSIGN(bool written, WriteCheckpointBestEffort(path, Header(3), 3, [](CheckpointWriter&) {
                         return absl::UnavailableError("disk full");
                       }));
  EXPECT_FALSE(written);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CheckpointReader> r, CheckpointReader::Open(path));
  EXPECT_EQ(r->header().round(), 1);
  // An unwritable directory is not an error either.
  ASSERT_OK_AND_ASSIGN(written, WriteThree(TempPath("no/such/dir/x.pb"), 4));
  EXPECT_FALSE(written);
}

}  // namespace
}  // namespace fgl::fl
