// A hostile local process against a federation server, as issue #68's outside probe was: the
// transport tests (experiments/transport_test.sh, cases takeover and silent) run it.
//
//   --mode=join:   Join as each of --client_ids with made-up shard sizes (--features, --classes)
//                  and --token (or the client's line of --tokens_file; default: none). When the
//                  refusal names the server's run fingerprint, try again with it, as an intruder
//                  would. One line per attempt: "join client K: OK (session S)" or
//                  "join client K: CODE: message".
//   --mode=silent: open --streams Session streams, each on a connection of its own, and send
//                  nothing; write --opened_file once all are open, then wait up to --wait_s for
//                  the server to close them; --repeat times (a flood that lasts). Prints
//                  "silent streams: N opened, R refused at once, C closed by the server, O still
//                  open after W s, U found no server".
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "fl/proto/transport.grpc.pb.h"
#include "fl/transport/credentials.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "Server host:port.");
ABSL_FLAG(std::string, mode, "join", "join or silent.");
ABSL_FLAG(std::string, client_ids, "0", "join: comma-separated client ids.");
ABSL_FLAG(std::string, token, "", "join: the token to present.");
ABSL_FLAG(std::string, tokens_file, "", "join: \"client_id token\" lines to take each id's token from.");
ABSL_FLAG(std::string, fingerprint, "probe", "join: the run fingerprint to claim first.");
ABSL_FLAG(int, num_clients, 3, "join: the partition size to claim.");
ABSL_FLAG(int64_t, features, 7, "join: the feature count to claim.");
ABSL_FLAG(int64_t, classes, 3, "join: the class count to claim.");
ABSL_FLAG(int, streams, 200, "silent: streams to open.");
ABSL_FLAG(std::string, opened_file, "", "silent: written once every stream is open.");
ABSL_FLAG(double, wait_s, 30, "silent: how long to wait for the server to close them.");
ABSL_FLAG(int, repeat, 1, "silent: open and wait out this many batches, one after the other.");

namespace fgl::fl::transport {
namespace {

using SystemClock = std::chrono::system_clock;

std::string Describe(const grpc::Status& s) {
  return absl::StrCat(s.error_code(), ": ", s.error_message());
}

int ProbeJoins() {
  auto stub = proto::Federation::NewStub(
      grpc::CreateChannel(absl::GetFlag(FLAGS_server), grpc::InsecureChannelCredentials()));
  std::map<int, std::string> tokens;
  if (const std::string f = absl::GetFlag(FLAGS_tokens_file); !f.empty()) {
    absl::StatusOr<std::map<int, std::string>> loaded = LoadTokens(f);
    if (!loaded.ok()) {
      std::cerr << loaded.status() << "\n";
      return 2;
    }
    tokens = *loaded;
  }
  for (absl::string_view part : absl::StrSplit(absl::GetFlag(FLAGS_client_ids), ',', absl::SkipEmpty())) {
    int id = 0;
    if (!absl::SimpleAtoi(part, &id)) {
      std::cerr << "bad client id '" << part << "'\n";
      return 2;
    }
    proto::JoinRequest req;
    req.set_client_id(id);
    req.set_token(tokens.count(id) ? tokens[id] : absl::GetFlag(FLAGS_token));
    req.set_run_fingerprint(absl::GetFlag(FLAGS_fingerprint));
    req.set_num_clients(absl::GetFlag(FLAGS_num_clients));
    req.set_num_nodes(100);
    req.set_num_features(absl::GetFlag(FLAGS_features));
    req.set_num_classes(absl::GetFlag(FLAGS_classes));
    for (int attempt = 0; attempt < 2; ++attempt) {
      grpc::ClientContext ctx;
      ctx.set_deadline(SystemClock::now() + std::chrono::seconds(10));
      proto::JoinReply reply;
      const grpc::Status s = stub->Join(&ctx, req, &reply);
      std::cout << "join client " << id << ": " << (s.ok() ? absl::StrCat("OK (session ", reply.session(), ")") : Describe(s))
                << std::endl;
      // The server's fingerprint, when a refusal gives it away: "... (server: FINGERPRINT)".
      const std::string& m = s.error_message();
      const size_t at = m.find("(server: ");
      if (s.ok() || at == std::string::npos || m.back() != ')') break;
      req.set_run_fingerprint(m.substr(at + 9, m.size() - at - 10));
    }
  }
  return 0;
}

struct SilentCounts {
  int refused = 0, closed = 0, open = 0, unreachable = 0;
};

// One batch: n streams opened, then each waited out until the server closes it or wait_s passes.
void SilentBatch(int n, double wait_s, bool announce, SilentCounts& counts) {
  struct Stream {
    std::unique_ptr<proto::Federation::Stub> stub;
    std::unique_ptr<grpc::ClientContext> ctx;
    std::unique_ptr<grpc::ClientReaderWriter<proto::Chunk, proto::Chunk>> rw;
  };
  std::vector<Stream> streams(n);
  const auto deadline = SystemClock::now() + std::chrono::milliseconds(static_cast<int64_t>(wait_s * 1000));
  for (Stream& s : streams) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection of its own
    s.stub = proto::Federation::NewStub(
        grpc::CreateCustomChannel(absl::GetFlag(FLAGS_server), grpc::InsecureChannelCredentials(), args));
    s.ctx = std::make_unique<grpc::ClientContext>();
    s.ctx->set_deadline(deadline);
    s.rw = s.stub->Session(s.ctx.get());  // sends the call's headers, never a message
  }
  if (const std::string f = absl::GetFlag(FLAGS_opened_file); announce && !f.empty()) std::ofstream(f) << n << "\n";
  for (Stream& s : streams) {
    const grpc::Status st = s.rw->Finish();
    if (st.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
      ++counts.refused;
    } else if (st.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED && st.error_message() == "Deadline Exceeded") {
      ++counts.open;  // our own deadline, not the server's
    } else if (st.error_code() == grpc::StatusCode::UNAVAILABLE) {
      ++counts.unreachable;  // the server is gone (its run is over)
    } else {
      ++counts.closed;
    }
  }
}

int ProbeSilentStreams() {
  const int n = absl::GetFlag(FLAGS_streams), repeat = absl::GetFlag(FLAGS_repeat);
  const double wait_s = absl::GetFlag(FLAGS_wait_s);
  SilentCounts counts;
  for (int batch = 0; batch < repeat; ++batch) SilentBatch(n, wait_s, batch == 0, counts);
  std::cout << "silent streams: " << n * repeat << " opened, " << counts.refused << " refused at once, "
            << counts.closed << " closed by the server, " << counts.open << " still open after " << wait_s
            << " s, " << counts.unreachable << " found no server" << std::endl;
  return 0;
}

}  // namespace
}  // namespace fgl::fl::transport

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const std::string mode = absl::GetFlag(FLAGS_mode);
  if (mode == "join") return fgl::fl::transport::ProbeJoins();
  if (mode == "silent") return fgl::fl::transport::ProbeSilentStreams();
  std::cerr << "--mode must be join or silent\n";
  return 2;
}
