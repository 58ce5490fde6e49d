#include "fl/transport/chunked_stream.h"

#include <sys/stat.h>

#include <cstdlib>
#include <deque>
#include <fstream>

#include "fl/transport/credentials.h"
#include "gtest/gtest.h"

namespace fgl::fl::transport {
namespace {

std::deque<proto::Chunk> Write(const std::string& payload, int64_t chunk_bytes) {
  std::deque<proto::Chunk> chunks;
  proto::ChunkHeader h;
  h.set_kind(proto::TRAIN);
  h.set_task_id(7);
  absl::StatusOr<StreamBytes> b = WriteChunked(h, payload, chunk_bytes, [&](const proto::Chunk& c) {
    chunks.push_back(c);
    return true;
  });
  EXPECT_TRUE(b.ok());
  EXPECT_EQ(b->payload, static_cast<int64_t>(payload.size()));
  return chunks;
}

absl::StatusOr<Received> Read(std::deque<proto::Chunk> chunks, int64_t max = 1 << 20) {
  return ReadChunked(
      [&](proto::Chunk* c) {
        if (chunks.empty()) return false;
        *c = chunks.front();
        chunks.pop_front();
        return true;
      },
      max, "test stream");
}

TEST(ChunkedStream, RoundTripsAcrossChunkSizes) {
  std::string payload;
  for (int i = 0; i < 10000; ++i) payload.push_back(static_cast<char>(i * 31));
  for (int64_t chunk : {1, 999, 1000, 10000, 1 << 20}) {
    std::deque<proto::Chunk> chunks = Write(payload, chunk);
    EXPECT_EQ(chunks.size(), static_cast<size_t>((payload.size() + chunk - 1) / chunk));
    absl::StatusOr<Received> r = Read(chunks);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->payload, payload);
    EXPECT_EQ(r->header.task_id(), 7u);
    EXPECT_GT(r->bytes.wire, r->bytes.payload);
  }
}

TEST(ChunkedStream, OwnedPayloadIsMovedWhenItFitsOneChunk) {
  for (int64_t chunk : {100, 1000}) {
    std::string payload(500, 'y');
    std::deque<proto::Chunk> chunks;
    absl::StatusOr<StreamBytes> b = WriteChunked(proto::ChunkHeader(), std::move(payload), chunk,
                                                 [&](const proto::Chunk& c) {
                                                   chunks.push_back(c);
                                                   return true;
                                                 });
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(chunks.size(), chunk >= 500 ? 1u : 5u);
    absl::StatusOr<Received> r = Read(chunks);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->payload, std::string(500, 'y'));
  }
}

TEST(ChunkedStream, EmptyPayloadIsOneChunk) {
  std::deque<proto::Chunk> chunks = Write("", 100);
  ASSERT_EQ(chunks.size(), 1u);
  absl::StatusOr<Received> r = Read(chunks);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->payload.empty());
}

TEST(ChunkedStream, RejectsMalformedStreams) {
  std::deque<proto::Chunk> chunks = Write(std::string(300, 'x'), 100);
  // Truncated: the header promises more than arrives.
  std::deque<proto::Chunk> truncated(chunks.begin(), chunks.end() - 1);
  EXPECT_TRUE(absl::IsUnavailable(Read(truncated).status()));
  // Over the limit.
  EXPECT_TRUE(absl::IsResourceExhausted(Read(chunks, 299).status()));
  // A lying header: fewer bytes promised than sent.
  std::deque<proto::Chunk> lying = chunks;
  lying.front().mutable_header()->set_payload_bytes(150);
  EXPECT_TRUE(absl::IsInvalidArgument(Read(lying).status()));
  // No header first.
  std::deque<proto::Chunk> headless(chunks.begin() + 1, chunks.end());
  EXPECT_TRUE(absl::IsInvalidArgument(Read(headless).status()));
  // Negative size.
  std::deque<proto::Chunk> negative = chunks;
  negative.front().mutable_header()->set_payload_bytes(-1);
  EXPECT_FALSE(Read(negative).ok());
}

TEST(Credentials, LoopbackAddresses) {
  EXPECT_TRUE(IsLoopback("127.0.0.1:50051"));
  EXPECT_TRUE(IsLoopback("localhost:1"));
  EXPECT_TRUE(IsLoopback("[::1]:80"));
  EXPECT_FALSE(IsLoopback("10.0.0.1:50051"));
  EXPECT_FALSE(IsLoopback("0.0.0.0:50051"));
}

TEST(Credentials, TokensFileErrorsNameTheLine) {
  const std::string path = ::testing::TempDir() + "/tokens.txt";
  std::ofstream(path) << "# id token\n0 alpha\n1 beta\n";
  absl::StatusOr<std::map<int, std::string>> t = LoadTokens(path);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->at(1), "beta");
  std::ofstream(path) << "0 alpha\n0 again\n";
  EXPECT_NE(LoadTokens(path).status().message().find(":2:"), std::string::npos);
  std::ofstream(path) << "zero alpha\n";
  EXPECT_FALSE(LoadTokens(path).ok());
  EXPECT_FALSE(LoadTokens(path + ".missing").ok());
}

TEST(Credentials, PortOfAddresses) {
  EXPECT_EQ(PortOf("127.0.0.1:50051").value_or(-1), 50051);
  EXPECT_EQ(PortOf("[::1]:7").value_or(-1), 7);
  EXPECT_FALSE(PortOf("[::1]").ok());
  EXPECT_FALSE(PortOf("localhost").ok());
  EXPECT_FALSE(PortOf("localhost:99999").ok());
}

// Per-run tokens (issue #68): random, one per client, in a file only the owner can read, at the
// path both serve and join derive from the port.
TEST(Credentials, PerRunTokensFileIsPrivateAndRoundTrips) {
  absl::StatusOr<std::map<int, std::string>> tokens = GenerateTokens(3);
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  ASSERT_EQ(tokens->size(), 3u);
  EXPECT_EQ(tokens->at(0).size(), 64u);
  EXPECT_NE(tokens->at(0), tokens->at(1));
  const std::string runtime = ::testing::TempDir() + "/xdg";
  setenv("XDG_RUNTIME_DIR", runtime.c_str(), 1);
  absl::StatusOr<std::string> path = DefaultRunTokensPath(50051);
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(*path, runtime + "/fgl/transport-50051.tokens");
  ASSERT_TRUE(WriteTokensFile(*path, *tokens).ok());
  struct stat st;
  ASSERT_EQ(stat(path->c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(stat((runtime + "/fgl").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0077, 0u);
  absl::StatusOr<std::map<int, std::string>> read = LoadTokens(*path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, *tokens);
  EXPECT_FALSE(WriteTokensFile("/proc/no/such/dir/t.tokens", *tokens).ok());
}

TEST(Credentials, TlsNeedsCertAndKey) {
  EXPECT_FALSE(MakeServerCredentials({"cert.pem", "", ""}).ok());
  EXPECT_FALSE(MakeChannelCredentials({"", "", ""}).ok() == false);  // plaintext
  EXPECT_FALSE(MakeChannelCredentials({"c.pem", "", "ca.pem"}).ok());
}

}  // namespace
}  // namespace fgl::fl::transport
