#include "fl/evaluation.h"

#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "graph/random.h"
#include "nn/ops/dropout.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::fl {
namespace {

// The unweighted mean over the clients with test nodes of their mean local-test loss; NaN: none.
double MeanTestLoss(const std::vector<proto::EvalCounts>& counts) {
  double sum = 0;
  int clients = 0;
  for (const proto::EvalCounts& c : counts) {
    if (c.test_n() == 0) continue;
    sum += c.test_loss_sum() / static_cast<double>(c.test_n());
    ++clients;
  }
  return clients == 0 ? std::numeric_limits<double>::quiet_NaN() : sum / clients;
}

}  // namespace

absl::StatusOr<proto::EvalCounts> EvaluateClient(ClientAlgorithm& algorithm, const ClientData& client,
                                                 const proto::Message* global, const RoundInfo& round) {
  nn::DropoutSeedScope eval_stream(graph::Rng::Derive(round.seed, absl::StrCat("eval/", client.id)));
  FGL_ASSIGN_OR_RETURN(torch::Tensor logits, algorithm.Predict(global));
  if (logits.dim() != 2 || logits.size(0) != client.labels.size(0)) {
    return absl::InternalError(absl::StrCat("client ", client.id, ": Predict returned shape ",
                                            logits.dim() == 2 ? absl::StrCat(logits.size(0), "x", logits.size(1)) : "not 2-d"));
  }
  torch::Tensor correct = logits.argmax(1) == client.labels;
  proto::EvalCounts c;
  c.set_num_nodes(client.data.num_nodes());
  c.set_val_n(client.split.val.sum().item<int64_t>());
  c.set_val_correct(correct.logical_and(client.split.val).sum().item<int64_t>());
  c.set_test_n(client.split.test.sum().item<int64_t>());
  c.set_test_correct(correct.logical_and(client.split.test).sum().item<int64_t>());
  if (c.test_n() > 0) {
    torch::NoGradGuard no_grad;
    const torch::Tensor test = client.split.test.nonzero().flatten();
    const torch::Tensor p = torch::softmax(logits.index_select(0, test).to(torch::kFloat), 1);
    const torch::Tensor p_true = p.gather(1, client.labels.index_select(0, test).unsqueeze(1));
    c.set_test_loss_sum(-(p_true + 1e-7).log().sum().item<double>());
  }
  if (client.global_test) {
    const ClientData& g = *client.global_test;
    GraphScoringClient* const scoring = algorithm.graph_scoring();
    if (scoring == nullptr) {
      // The caller names the client and the round.
      return absl::UnimplementedError("this method cannot score a graph other than its own");
    }
    FGL_ASSIGN_OR_RETURN(torch::Tensor global_logits, scoring->PredictGraph(g, global));
    if (global_logits.dim() != 2 || global_logits.size(0) != g.labels.size(0)) {
      return absl::InternalError(absl::StrCat("client ", client.id, ": PredictGraph returned the wrong shape"));
    }
    // Its test nodes only: all of a server-node graph, the clients' test nodes of the whole graph.
    c.set_global_n(g.split.test.sum().item<int64_t>());
    c.set_global_correct((global_logits.argmax(1) == g.labels).logical_and(g.split.test).sum().item<int64_t>());
  }
  return c;
}

absl::Status CheckEvalCounts(const proto::EvalCounts& c) {
  const double test_n = static_cast<double>(c.test_n());
  if (c.val_correct() < 0 || c.val_n() < c.val_correct() || c.test_correct() < 0 || c.test_n() < c.test_correct() ||
      c.global_correct() < 0 || c.global_n() < c.global_correct() || c.num_nodes() <= 0 ||
      // Floored at 1e-7, a node's loss is at most 16.12; rounding can make it a hair below 0.
      !std::isfinite(c.test_loss_sum()) || c.test_loss_sum() < -1e-4 * test_n || c.test_loss_sum() > 17.0 * test_n) {
    return absl::InvalidArgumentError("evaluation counts inconsistent");
  }
  return absl::OkStatus();
}

RoundAccuracy WeightedAccuracy(proto::EvalProtocol::Weighting weighting, const std::vector<proto::EvalCounts>& counts,
                               const std::vector<int64_t>& sizes) {
  // A client without val (test) nodes has no val (test) accuracy: it is left out of that average
  // instead of counting as 0 (node-level FL: most one-node users hold no test node).
  double val = 0, test = 0, val_weight = 0, test_weight = 0, global = 0, global_weight = 0;
  for (size_t k = 0; k < counts.size(); ++k) {
    const double w = weighting == proto::EvalProtocol::NODE ? static_cast<double>(sizes[k]) : 1.0;
    if (counts[k].global_n() > 0) {
      global += w * (static_cast<double>(counts[k].global_correct()) / static_cast<double>(counts[k].global_n()));
      global_weight += w;
    }
    if (counts[k].val_n() > 0) {
      val += w * (static_cast<double>(counts[k].val_correct()) / static_cast<double>(counts[k].val_n()));
      val_weight += w;
    }
    if (counts[k].test_n() > 0) {
      test += w * (static_cast<double>(counts[k].test_correct()) / static_cast<double>(counts[k].test_n()));
      test_weight += w;
    }
  }
  return {val_weight == 0 ? 0.0 : 100.0 * val / val_weight, test_weight == 0 ? 0.0 : 100.0 * test / test_weight,
          global_weight == 0 ? std::numeric_limits<double>::quiet_NaN() : 100.0 * global / global_weight};
}

void ScoreRound(proto::EvalProtocol::Weighting weighting, const std::vector<proto::EvalCounts>& counts,
                const std::vector<int64_t>& sizes, proto::RoundRecord& rec) {
  const RoundAccuracy acc = WeightedAccuracy(weighting, counts, sizes);
  rec.set_val_acc(acc.val);
  rec.set_test_acc(acc.test);
  if (std::isfinite(acc.global)) rec.set_global_test_acc(acc.global);
  rec.set_client_mean_test_acc(WeightedAccuracy(proto::EvalProtocol::UNWEIGHTED, counts, sizes).test);
  if (const double loss = MeanTestLoss(counts); std::isfinite(loss)) rec.set_test_loss(loss);
}

void SelectReportedRound(proto::EvalProtocol::Round round, proto::FederationResult& result) {
  const proto::RoundRecord* pick = &result.rounds(result.rounds_size() - 1);
  if (round != proto::EvalProtocol::LAST) {
    const bool by_val = round == proto::EvalProtocol::BEST_VAL;
    pick = &result.rounds(0);
    for (const proto::RoundRecord& rec : result.rounds()) {
      if ((by_val ? rec.val_acc() : rec.test_acc()) > (by_val ? pick->val_acc() : pick->test_acc())) pick = &rec;
    }
  }
  proto::RunResult& r = *result.mutable_result();
  r.set_best_round(pick->round());
  r.set_test_acc(pick->test_acc());
  r.set_client_mean_test_acc(pick->client_mean_test_acc());
  r.set_val_acc(pick->val_acc());
  r.clear_global_test_acc();
  if (!pick->has_global_test_acc()) return;
  // FedEgo maximises the two tests independently: the global test's best round, not the local's.
  double global = pick->global_test_acc();
  if (round == proto::EvalProtocol::BEST_TEST) {
    for (const proto::RoundRecord& rec : result.rounds()) {
      if (rec.has_global_test_acc() && rec.global_test_acc() > global) global = rec.global_test_acc();
    }
  }
  r.set_global_test_acc(global);
}

}  // namespace fgl::fl
