// The options and results of one federation run, shared by the simulator and the gRPC transport.
#ifndef FGL_FL_FEDERATION_H_
#define FGL_FL_FEDERATION_H_

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "fl/proto/federation.pb.h"

namespace fgl::fl {

// How a result is scored; recorded with every result.
struct EvalProtocol {
  // global: the server's model; local: each client's own; personalized: each client's own model
  // once it has taken the server's latest message (FedEgo's mixing of Φ_g into Φ_i): the client's
  // Predict receives that message, as for global, and applies it its own way. A server that
  // sends each client its own message (D-FedGNN's ring average) has each client score its own.
  enum class Model { kGlobal, kLocal, kPersonalized };
  enum class Round { kBestVal, kLast, kBestTest };
  Model model = Model::kGlobal;  // global: clients score the server's model; local: their own
  bool node_weighted = true;     // client accuracies weighted by node count (FedTAD, OpenFGL)
  Round round = Round::kBestVal;  // best_test exists only because FedEgo reports it (optimistic)
  bool dropout_at_eval = false;  // FedTAD's official code leaves dropout on when evaluating
  bool whole_graph_test = false;  // eval.global_test "whole_graph" (named in the card only when set)
  // eval.early_stop (FedEgo's code): after round t > early_stop_after, stop when the clients' mean
  // local-test loss exceeds early_stop_ratio × its minimum so far. early_stop_ratio 0: never.
  int early_stop_after = 0;
  double early_stop_ratio = 0;

  std::string Card() const;  // e.g. "model=global weighting=node round=best_val dropout_at_eval=0"
};

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

  // The spec's evaluation protocol ("local" methods are always scored on their own models).
  EvalProtocol eval() const;
  // Every option that affects results except `rounds` (a resumed run may run longer).
  std::string Fingerprint() const;
};

// One client's view of one round.
struct ClientRecord {
  int id = 0;
  bool participated = false;
  double train_loss = std::numeric_limits<double>::quiet_NaN();  // as the client reported it
  double val_acc = 0, test_acc = 0;  // percent, of the protocol's model on this client
  int64_t bytes_up = 0, bytes_down = 0;
  double seconds = 0;  // local training
  // What the client reported about itself after training (ClientAlgorithm::Reports).
  std::map<std::string, double> reports;
};

struct RoundRecord {
  int round = 0;
  double val_acc = 0, test_acc = 0;  // percent, weighted per the protocol
  // The plain mean of the clients' test accuracies (clients with test nodes), logged beside a
  // node-weighted protocol's number (FedGKC §A.3).
  double client_mean_test_acc = 0;
  // On the shared global test graph (ClientData::global_test), weighted like test_acc; NaN when
  // the partition has none.
  double global_test_acc = std::numeric_limits<double>::quiet_NaN();
  int participants = 0, failed_clients = 0;
  int64_t bytes_up = 0, bytes_down = 0;  // this round
  // The uploaded tensors' raw bytes by group (fl::AddTensorBytesByGroup), this round.
  std::map<std::string, int64_t> tensor_bytes_up;
  double seconds = 0;
  // The server's training loss, for methods that compute it centrally (nFedGNN); NaN otherwise.
  double train_loss = std::numeric_limits<double>::quiet_NaN();
  // The unweighted mean over clients of their mean local-test loss (EvalCounts::test_loss_sum);
  // NaN when no client has test nodes.
  double test_loss = std::numeric_limits<double>::quiet_NaN();
  std::vector<ClientRecord> clients;  // every client, in id order (not kept in checkpoints)
};

struct FederationResult {
  std::vector<RoundRecord> rounds;  // 1..rounds, or 1..stopped_round
  int stopped_round = 0;  // the last round when EvalProtocol's early stop ended the run; 0: it did not
  int reported_round = 0;
  double test_acc = 0, val_acc = 0;  // at the reported round
  double client_mean_test_acc = 0;   // at the reported round (RoundRecord's)
  // The global test's accuracy (NaN without one): the maximum over rounds when the protocol
  // picks the best test round (FedEgo maximises the two tests independently), else at the
  // reported round.
  double global_test_acc = std::numeric_limits<double>::quiet_NaN();
  int64_t bytes_up = 0, bytes_down = 0;
  int64_t preparation_bytes_up = 0;  // the one-off uploads before round 1
  std::map<std::string, int64_t> tensor_bytes_up;  // over the rounds, by group (not preparation)
  // The last round's client reports (ClientRecord::reports): per name, one value per client in
  // id order, NaN for a client that did not report it.
  std::map<std::string, std::vector<double>> final_client_reports;
  double wall_s = 0, train_s = 0;  // whole run; rounds only (no loading/partitioning)
  // A resumed run: the rounds seconds of its earlier processes, included in train_s (the runners
  // add them to wall_s; those processes' loading is not counted).
  double resumed_s = 0;
  std::string protocol;            // EvalProtocol::Card() plus split and partition description
  std::vector<int64_t> client_sizes;
  // The server's model after the last round as it broadcasts it, serialised (global evaluation
  // only): what a transport run must reproduce bit for bit.
  std::string final_global;
};

}  // namespace fgl::fl

#endif  // FGL_FL_FEDERATION_H_
