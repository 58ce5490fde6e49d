// The options of one federation run, shared by the simulator and the gRPC transport; what a run
// returns is the proto fl.proto.FederationResult (fl/proto/federation.proto).
#ifndef FGL_FL_FEDERATION_H_
#define FGL_FL_FEDERATION_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include <google/protobuf/text_format.h>

#include "absl/status/statusor.h"

#include "fl/proto/federation.pb.h"

namespace fgl::fl {

// A protocol's card, for the result record: e.g. "model=global weighting=node round=best_val
// dropout_at_eval=off". `eval` is resolved (fl/federation_spec.h): no setting UNSPECIFIED.
std::string EvalCard(const proto::EvalProtocol& eval);

// Has `printer` print proto::EvalProtocol as it was printed while its four settings were strings
// (before issue #67): each setting as its value's lowercase name in quotes (`round: "best_test"`),
// the fields in declaration order (which is the strings' field-number order). Record keys
// (experiments/spec.cc CanonicalText) and run fingerprints hash that text, so they stay as they
// were. Not for text that is parsed back: a parser wants `round: BEST_TEST`.
void UseCanonicalEvalText(google::protobuf::TextFormat::Printer* printer);

// One run: a resolved FederationSpec (fl/federation_spec.h), its training seed, and how the run
// executes (none of which changes its numbers, except `device`).
struct FederationOptions {
  proto::FederationSpec spec;
  uint64_t seed = 2024;  // training: initialisation, dropout, client sampling
  std::string cache_dir;  // partition cache; empty: graph::DefaultPartitionCacheDir()
  std::string device = "cpu";
  int threads = 1;  // clients trained and evaluated in parallel, one intra-op thread each
  bool strict = false;  // a failing client aborts the run instead of being left out
  // Checkpoints: after every `checkpoint_every` rounds, and after any round that ends at least
  // `checkpoint_minutes` after the last checkpoint (or the start), DIR/checkpoint.pb holds the
  // server's and every client's state; by time, because one method's rounds can differ 100-fold
  // (FedSage+'s generator rounds). With `resume`, a run continues from that file when it matches.
  std::string checkpoint_dir;
  int checkpoint_every = 0;
  double checkpoint_minutes = 0;
  // Whether to checkpoint after `round`, `seconds` after the last checkpoint (or the start).
  bool CheckpointDue(int round, double seconds) const {
    return (checkpoint_every > 0 && round % checkpoint_every == 0) ||
           (checkpoint_minutes > 0 && seconds >= checkpoint_minutes * 60);
  }
  bool resume = false;

  // The spec's evaluation protocol, as scored: "local" methods always on their own models.
  proto::EvalProtocol eval() const;
  // Every option that affects results except `rounds` (a resumed run may run longer).
  std::string Fingerprint() const;
};

// Options that fl::ResolveOptions (fl/run_setup.h) returned, and only those: a function that takes
// one knows every default is present and every value checked.
class ResolvedOptions {
 public:
  const FederationOptions& operator*() const { return options_; }
  const FederationOptions* operator->() const { return &options_; }
  // The same run checkpointed to `dir` after every `every` rounds (0: never) and resumed from it
  // when `resume`: where a run checkpoints is the serving process's choice (fl/transport/server.cc),
  // and these fields are all ResolveOptions checks of it.
  ResolvedOptions WithCheckpoints(std::string dir, int every, bool resume) const {
    FederationOptions o = options_;
    o.checkpoint_dir = std::move(dir);
    o.checkpoint_every = std::max(every, 0);
    o.resume = resume;
    return ResolvedOptions(std::move(o));
  }

 private:
  friend absl::StatusOr<ResolvedOptions> ResolveOptions(FederationOptions o);
  explicit ResolvedOptions(FederationOptions o) : options_(std::move(o)) {}
  FederationOptions options_;
};

}  // namespace fgl::fl

#endif  // FGL_FL_FEDERATION_H_
