// A federation client of a run across processes or hosts (fl/transport/README.md; the binary lives in experiments: it reads experiment specs).
//
//   bazel run //experiments:join -- --spec=SPEC.textproto --server=127.0.0.1:50051 --client_id=0
//
// Loads and partitions the dataset under --data_dir (or $FGL_DATA_DIR), keeps only its own
// subgraph, and trains when the server asks. Exit status 0 when the run finished.
#include <algorithm>
#include <chrono>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "experiments/spec_options.h"
#include "experiments/transport_flags.h"
#include "fl/catch_exceptions.h"
#include "fl/run_setup.h"
#include "fl/transport/client.h"
#include "glog/logging.h"
#include "graph/io/file.h"
#include "nn/cpu_kernels.h"
#include "nn/memory.h"
#include "third_party/absl_ext/status_macros.h"

ABSL_FLAG(std::string, spec, "", "Experiment textproto: the same file the server runs.");
ABSL_FLAG(std::string, set, "", "';'-separated overrides of the spec (as on the server).");
ABSL_FLAG(uint64_t, seed, 0, "Training seed; 0: the spec's first seed.");
ABSL_FLAG(std::string, server, "127.0.0.1:50051", "Server host:port.");
ABSL_FLAG(int, client_id, 0, "This client's id in [0, clients).");
ABSL_FLAG(std::string, client_ids, "",
          "Several clients in this process instead, e.g. \"0-9\" or \"0,2,5\" (one thread and "
          "connection each; tokens from --tokens_file).");
ABSL_FLAG(int, parallel, 0, "With --client_ids: clients computing at a time (0: all).");
ABSL_FLAG(std::string, tokens_file, "",
          "\"client_id token\" lines, this process's clients' among them. Default, with no token "
          "given and a loopback --server: the per-run tokens its server wrote on this host.");
ABSL_FLAG(std::string, token, "", "This client's token.");
ABSL_FLAG(std::string, token_file, "", "File holding this client's token (keeps it out of ps).");
ABSL_FLAG(std::string, tls_ca, "", "PEM CA that signed the server's certificate (enables TLS).");
ABSL_FLAG(std::string, tls_cert, "", "PEM client certificate, when the server requires one.");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert.");
ABSL_FLAG(bool, allow_insecure_remote, false, "Allow plaintext to a non-loopback server.");
ABSL_FLAG(std::string, data_dir, "", "Dataset root; else $FGL_DATA_DIR, else ./data.");
ABSL_FLAG(std::string, cache_dir, "", "Partition cache; default ~/.cache/fgl/partitions.");
ABSL_FLAG(int, threads, 1, "Intra-op threads (1 reproduces the simulator bit for bit).");
ABSL_FLAG(double, reconnect_s, 60, "Keep retrying an unreachable server this long.");
ABSL_FLAG(int64_t, chunk_bytes, 4 << 20, "Payload bytes per gRPC message.");
ABSL_FLAG(int, testonly_bad_shape_round, 0, "Tests only: send a malformed reply in this round.");
ABSL_FLAG(int, testonly_kill_after_round, 0, "Tests only: SIGKILL itself after this round.");

namespace fgl::experiments {
namespace {

using fl::FederationOptions;
using fl::transport::ClientOptions;
using fl::transport::DefaultRunTokensPath;
using fl::transport::IsLoopback;
using fl::transport::LoadTokens;
using fl::transport::PortOf;
using fl::transport::RunClient;
using fl::transport::RunClients;
namespace proto = ::fgl::fl::proto;

absl::Status Main() {
  FGL_ASSIGN_OR_RETURN(FederationOptions run, OptionsFromSpec(absl::GetFlag(FLAGS_spec),
                                                              absl::GetFlag(FLAGS_set),
                                                              absl::GetFlag(FLAGS_seed)));
  if (!absl::GetFlag(FLAGS_data_dir).empty()) run.spec.set_data_dir(absl::GetFlag(FLAGS_data_dir));
  run.cache_dir = absl::GetFlag(FLAGS_cache_dir);
  FGL_ASSIGN_OR_RETURN(const fl::ResolvedOptions resolved, fl::ResolveOptions(std::move(run)));
  ClientOptions opt;
  opt.server = absl::GetFlag(FLAGS_server);
  opt.client_id = absl::GetFlag(FLAGS_client_id);
  opt.token = absl::GetFlag(FLAGS_token);
  if (const std::string f = absl::GetFlag(FLAGS_token_file); !f.empty()) {
    FGL_ASSIGN_OR_RETURN(std::string token, graph::io::ReadFileBytes(f));
    opt.token = std::string(absl::StripAsciiWhitespace(token));
  }
  opt.tls = {absl::GetFlag(FLAGS_tls_cert), absl::GetFlag(FLAGS_tls_key), absl::GetFlag(FLAGS_tls_ca)};
  opt.threads = absl::GetFlag(FLAGS_threads);
  opt.reconnect_s = absl::GetFlag(FLAGS_reconnect_s);
  if (opt.reconnect_s != 0) FGL_RETURN_IF_ERROR(CheckSeconds("reconnect_s", opt.reconnect_s));  // 0: no retry
  opt.chunk_bytes = absl::GetFlag(FLAGS_chunk_bytes);
  opt.testonly_bad_shape_round = absl::GetFlag(FLAGS_testonly_bad_shape_round);
  opt.testonly_kill_after_round = absl::GetFlag(FLAGS_testonly_kill_after_round);
  if (!opt.tls.enabled() && !IsLoopback(opt.server) && !absl::GetFlag(FLAGS_allow_insecure_remote)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--server=", opt.server, " is not a loopback address: use TLS (--tls_ca) or "
        "--allow_insecure_remote on a trusted network"));
  }
  // Tokens: given (--token, --token_file, --tokens_file), else those a loopback server without a
  // tokens file made for this run and left, readable by this user only, where we look here.
  const bool token_given = !absl::GetFlag(FLAGS_token).empty() || !absl::GetFlag(FLAGS_token_file).empty();
  std::string tokens_file = absl::GetFlag(FLAGS_tokens_file);
  if (tokens_file.empty() && !token_given && IsLoopback(opt.server)) {
    FGL_ASSIGN_OR_RETURN(const int port, PortOf(opt.server));
    FGL_ASSIGN_OR_RETURN(tokens_file, DefaultRunTokensPath(port));
    // The server may still be starting (clients may be launched first); wait as for a server.
    const double wait_s = opt.reconnect_s > 0 ? std::min(opt.reconnect_s, 86400.0) : 0;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(wait_s * 1000));
    while (!graph::io::FileExists(tokens_file) && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    if (!graph::io::FileExists(tokens_file)) {
      return absl::NotFoundError(absl::StrCat(
          "no token given, and no per-run tokens at ", tokens_file, " after ", opt.reconnect_s,
          " s: start the server (without --tokens_file) on this host as this user, or give --token_file"));
    }
  }
  std::map<int, std::string> tokens;
  if (!tokens_file.empty()) {
    FGL_ASSIGN_OR_RETURN(tokens, LoadTokens(tokens_file));
  }
  if (const std::string ids = absl::GetFlag(FLAGS_client_ids); !ids.empty()) {
    std::vector<int> list;
    for (absl::string_view part : absl::StrSplit(ids, ',', absl::SkipEmpty())) {
      std::vector<absl::string_view> range = absl::StrSplit(part, '-');
      int lo = 0, hi = 0;
      if (range.size() > 2 || !absl::SimpleAtoi(range[0], &lo) ||
          !absl::SimpleAtoi(range.back(), &hi) || lo < 0 || hi < lo) {
        return absl::InvalidArgumentError(absl::StrCat("--client_ids: bad item '", part, "'"));
      }
      for (int k = lo; k <= hi; ++k) list.push_back(k);
    }
    const int parallel = absl::GetFlag(FLAGS_parallel);
    return RunClients(resolved, opt, list, parallel > 0 ? parallel : static_cast<int>(list.size()), tokens);
  }
  if (auto it = tokens.find(opt.client_id); !token_given && it != tokens.end()) opt.token = it->second;
  return RunClient(resolved, opt);
}

}  // namespace
}  // namespace fgl::experiments

int main(int argc, char** argv) {
  fgl::nn::PinCpuKernels(argv);
  fgl::nn::ReuseFreedTensorMemory();
  absl::ParseCommandLine(argc, argv);
  google::InitGoogleLogging(argv[0]);
  FLAGS_logtostderr = true;
  if (absl::Status s = fgl::fl::CatchExceptions("client", fgl::experiments::Main); !s.ok()) {
    LOG(ERROR) << "client " << absl::GetFlag(FLAGS_client_id) << ": " << s;
    return 1;
  }
  return 0;
}
