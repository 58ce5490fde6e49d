// The federation server of a run across processes or hosts (fl/transport/README.md; the binary lives in experiments: it reads experiment specs).
//
//   bazel run //experiments:serve -- --spec=SPEC.textproto --listen=127.0.0.1:50051 --clients=3
//
// Prints one JSON line at the end (accuracy, bytes at the transport); --out=DIR also writes
// result.json, rounds.jsonl and final_model.pb (the last global model as broadcast).
#include <csignal>
#include <fstream>
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "experiments/rounds_log.h"
#include "experiments/spec_options.h"
#include "experiments/transport_flags.h"
#include "fl/catch_exceptions.h"
#include "fl/proto_json.h"
#include "fl/run_setup.h"
#include "fl/transport/server.h"
#include "glog/logging.h"
#include "graph/io/file.h"
#include "nn/cpu_kernels.h"
#include "nn/memory.h"
#include "third_party/absl_ext/status_macros.h"

ABSL_FLAG(std::string, spec, "", "Experiment textproto (experiments/proto/experiment.proto).");
ABSL_FLAG(std::string, set, "", "';'-separated overrides of the spec, e.g. \"rounds=5\".");
ABSL_FLAG(uint64_t, seed, 0, "Training seed; 0: the spec's first seed.");
ABSL_FLAG(std::string, listen, "127.0.0.1:50051", "host:port to serve on (port 0: any free port).");
ABSL_FLAG(std::string, port_file, "", "Write the port actually bound to this file.");
ABSL_FLAG(int, clients, 0, "Clients of the run; must equal the spec's (0: take the spec's).");
ABSL_FLAG(int, min_clients, 0, "Clients that must join before round 1; 0: all.");
ABSL_FLAG(int, min_clients_per_round, 1,
          "Connected clients each later round waits for (a dropped client may rejoin meanwhile).");
ABSL_FLAG(double, join_timeout_s, 600, "Give up when min_clients have not joined by then.");
ABSL_FLAG(double, round_deadline_s, 600, "Per exchange; a client that misses it is dropped.");
ABSL_FLAG(std::string, tokens_file, "",
          "Lines \"client_id token\"; clients must present theirs. Without it the server listens only "
          "on loopback and makes per-run tokens, written to --run_tokens_file for join to read.");
ABSL_FLAG(std::string, run_tokens_file, "",
          "Where the per-run tokens go (mode 0600); default $XDG_RUNTIME_DIR/fgl/transport-PORT.tokens, "
          "else ~/.cache/fgl/run_tokens/transport-PORT.tokens, where join looks by default.");
ABSL_FLAG(double, first_message_timeout_s, 10,
          "A session stream that sends nothing this long is closed (it holds a server thread).");
ABSL_FLAG(int, max_unauthenticated_streams, 64,
          "Session streams that may wait for their first message at once; more are refused.");
ABSL_FLAG(std::string, tls_cert, "", "PEM server certificate (enables TLS).");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert.");
ABSL_FLAG(std::string, tls_ca, "", "PEM CA; when set, clients must present certificates it signed.");
ABSL_FLAG(bool, allow_insecure_remote, false, "Allow plaintext on a non-loopback address.");
ABSL_FLAG(int64_t, chunk_bytes, 4 << 20, "Payload bytes per gRPC message.");
ABSL_FLAG(std::string, checkpoint_dir, "", "Write DIR/checkpoint.pb after every round.");
ABSL_FLAG(bool, resume, false, "Continue from --checkpoint_dir when it holds this run's checkpoint.");
ABSL_FLAG(int, testonly_kill_after_checkpoint, 0,
          "Tests only: SIGKILL the server after writing this round's checkpoint.");
ABSL_FLAG(std::string, out, "", "Directory for result.json, rounds.jsonl and final_model.pb.");

namespace fgl::experiments {
namespace {

using fl::FederationOptions;
using fl::proto::FederationResult;
using fl::proto::RoundRecord;
using fl::ToJsonLine;
using fl::transport::FederationServer;
using fl::transport::IsLoopback;
using fl::transport::ServerOptions;
using fl::transport::TransportStats;
namespace proto = ::fgl::fl::proto;

absl::Status Main() {
  FGL_ASSIGN_OR_RETURN(FederationOptions run, OptionsFromSpec(absl::GetFlag(FLAGS_spec),
                                                              absl::GetFlag(FLAGS_set),
                                                              absl::GetFlag(FLAGS_seed)));
  if (const int n = absl::GetFlag(FLAGS_clients); n != 0 && n != run.spec.clients()) {
    return absl::InvalidArgumentError(absl::StrCat("--clients=", n, " but the spec has ", run.spec.clients()));
  }
  FGL_ASSIGN_OR_RETURN(const fl::ResolvedOptions resolved, fl::ResolveOptions(run));
  ServerOptions opt;
  opt.listen = absl::GetFlag(FLAGS_listen);
  opt.min_clients = absl::GetFlag(FLAGS_min_clients);
  opt.min_clients_per_round = absl::GetFlag(FLAGS_min_clients_per_round);
  opt.join_timeout_s = absl::GetFlag(FLAGS_join_timeout_s);
  opt.round_deadline_s = absl::GetFlag(FLAGS_round_deadline_s);
  opt.tokens_file = absl::GetFlag(FLAGS_tokens_file);
  opt.run_tokens_file = absl::GetFlag(FLAGS_run_tokens_file);
  opt.first_message_timeout_s = absl::GetFlag(FLAGS_first_message_timeout_s);
  opt.max_unauthenticated_streams = absl::GetFlag(FLAGS_max_unauthenticated_streams);
  opt.tls = {absl::GetFlag(FLAGS_tls_cert), absl::GetFlag(FLAGS_tls_key), absl::GetFlag(FLAGS_tls_ca)};
  opt.chunk_bytes = absl::GetFlag(FLAGS_chunk_bytes);
  opt.checkpoint_dir = absl::GetFlag(FLAGS_checkpoint_dir);
  opt.resume = absl::GetFlag(FLAGS_resume);
  opt.testonly_kill_after_checkpoint = absl::GetFlag(FLAGS_testonly_kill_after_checkpoint);
  FGL_RETURN_IF_ERROR(CheckSeconds("join_timeout_s", opt.join_timeout_s));
  FGL_RETURN_IF_ERROR(CheckSeconds("round_deadline_s", opt.round_deadline_s));
  FGL_RETURN_IF_ERROR(CheckSeconds("first_message_timeout_s", opt.first_message_timeout_s));
  if (opt.max_unauthenticated_streams < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--max_unauthenticated_streams=", opt.max_unauthenticated_streams,
                                                   ": must be >= 1"));
  }
  FGL_RETURN_IF_ERROR(CheckClientCount("min_clients", opt.min_clients, run.spec.clients()));
  FGL_RETURN_IF_ERROR(CheckClientCount("min_clients_per_round", opt.min_clients_per_round, run.spec.clients()));
  if (!opt.tls.enabled() && !IsLoopback(opt.listen) && !absl::GetFlag(FLAGS_allow_insecure_remote)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--listen=", opt.listen, " is not a loopback address: use TLS (--tls_cert/--tls_key) or "
        "--allow_insecure_remote on a trusted network"));
  }
  FGL_ASSIGN_OR_RETURN(std::unique_ptr<FederationServer> server, FederationServer::Start(resolved, opt));
  if (const std::string f = absl::GetFlag(FLAGS_port_file); !f.empty()) {
    FGL_RETURN_IF_ERROR(graph::io::WriteFileAtomically(f, absl::StrCat(server->port(), "\n")));
  }
  const std::string out = absl::GetFlag(FLAGS_out);
  if (!out.empty()) FGL_RETURN_IF_ERROR(graph::io::MakeDirs(out));
  // Resumed into the same --out, rounds.jsonl keeps the rounds before the checkpoint, as the
  // simulator's does (rounds_log.h); every write is checked.
  const bool resuming = opt.resume && !opt.checkpoint_dir.empty() && graph::io::FileExists(opt.checkpoint_dir + "/checkpoint.pb");
  FGL_ASSIGN_OR_RETURN(std::unique_ptr<RoundsLog> rounds,
                       RoundsLog::Open(out.empty() ? "" : out + "/rounds.jsonl", resuming));
  FGL_ASSIGN_OR_RETURN(proto::FederationResult r, server->Run([&](const proto::RoundRecord& rec) { rounds->Add(rec); }));
  FGL_RETURN_IF_ERROR(rounds->Finish(r.rounds()));
  const TransportStats t = server->stats();
  proto::RunResult& result = *r.mutable_result();
  proto::TransportStats& w = *result.mutable_transport();
  w.set_payload_up(t.payload_up);
  w.set_payload_down(t.payload_down);
  w.set_wire_up(t.wire_up);
  w.set_wire_down(t.wire_down);
  w.set_eval_up(t.eval_up);
  w.set_eval_down(t.eval_down);
  w.set_refused_joins(t.refused_joins);
  w.set_rejected_answers(t.rejected_answers);
  w.set_dropped(t.dropped);
  const std::string json = ToJsonLine(result);
  if (!out.empty()) {
    FGL_RETURN_IF_ERROR(graph::io::WriteFileAtomically(out + "/result.json", json + "\n"));
    if (!r.final_global().empty()) {
      FGL_RETURN_IF_ERROR(graph::io::WriteFileAtomically(out + "/final_model.pb", r.final_global()));
    }
  }
  std::cout << json << std::endl;
  return absl::OkStatus();
}

}  // namespace
}  // namespace fgl::experiments

int main(int argc, char** argv) {
  fgl::nn::PinCpuKernels(argv);
  fgl::nn::ReuseFreedTensorMemory();
  absl::ParseCommandLine(argc, argv);
  google::InitGoogleLogging(argv[0]);
  FLAGS_logtostderr = true;
  if (absl::Status s = fgl::fl::CatchExceptions("server", fgl::experiments::Main); !s.ok()) {
    LOG(ERROR) << s;
    return 1;
  }
  return 0;
}
