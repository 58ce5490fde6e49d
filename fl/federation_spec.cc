#include "fl/federation_spec.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "fl/method_params.h"

namespace fgl::fl {

absl::StatusOr<proto::FederationSpec> ResolveFederationSpec(proto::FederationSpec s, const std::string& where) {
  auto bad = [&](const std::string& field, const auto& value, const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", field, " = ", value, ": ", why));
  };
  if (s.dataset().empty()) return absl::InvalidArgumentError(absl::StrCat(where, ": dataset is required"));
  if (s.method().empty()) return absl::InvalidArgumentError(absl::StrCat(where, ": method is required"));
  if (s.partitioner().empty()) s.set_partitioner("louvain");
  if (!s.has_clients()) s.set_clients(10);
  if (!s.has_partition_seed()) s.set_partition_seed(2024);
  if (s.split().empty()) s.set_split("stratified:train=0.2,val=0.4");
  if (s.model().empty()) s.set_model("gcn:layers=2,hidden=64,dropout=0.5");
  if (!s.has_rounds()) s.set_rounds(100);
  if (!s.has_local_epochs()) s.set_local_epochs(3);
  if (!s.has_lr()) s.set_lr(0.01);
  if (!s.has_weight_decay()) s.set_weight_decay(5e-4);
  if (!s.has_client_fraction()) s.set_client_fraction(1.0);
  proto::EvalProtocol& e = *s.mutable_eval();
  if (e.model() == proto::EvalProtocol::MODEL_UNSPECIFIED) e.set_model(proto::EvalProtocol::GLOBAL);
  if (e.weighting() == proto::EvalProtocol::WEIGHTING_UNSPECIFIED) e.set_weighting(proto::EvalProtocol::NODE);
  if (e.round() == proto::EvalProtocol::ROUND_UNSPECIFIED) e.set_round(proto::EvalProtocol::BEST_VAL);
  // false is the default: spelled or not, the same run.
  if (e.has_dropout_at_eval() && !e.dropout_at_eval()) e.clear_dropout_at_eval();
  if (s.has_centralized() && !s.centralized()) s.clear_centralized();

  if (s.clients() < 1) return bad("clients", s.clients(), "must be >= 1");
  if (s.rounds() < 1) return bad("rounds", s.rounds(), "must be >= 1");
  if (s.local_epochs() < 0) return bad("local_epochs", s.local_epochs(), "must be >= 0");
  if (!std::isfinite(s.lr()) || s.lr() <= 0) return bad("lr", s.lr(), "must be a finite number > 0");
  if (!std::isfinite(s.weight_decay()) || s.weight_decay() < 0) {
    return bad("weight_decay", s.weight_decay(), "must be a finite number >= 0");
  }
  if (s.has_momentum() && s.optimizer() != proto::FederationSpec::SGD) {
    return bad("momentum", s.momentum(), "applies only with optimizer: SGD");
  }
  if (!(s.momentum() >= 0 && s.momentum() < 1)) return bad("momentum", s.momentum(), "must be in [0, 1)");
  // 0 is SGD's default: spelled or not, the same run.
  if (s.has_momentum() && s.momentum() == 0) s.clear_momentum();
  if (!(s.client_fraction() > 0 && s.client_fraction() <= 1)) {
    return bad("client_fraction", s.client_fraction(), "must be in (0, 1]");
  }
  if (s.shared_group() != "" && s.shared_group() != "head" && s.shared_group() != "body") {
    return bad("shared_group", s.shared_group(), "must be empty (the whole model), head or body");
  }
  // A textproto may give an enum a number that names no value (`round: 7`).
  if (!proto::EvalProtocol::Model_IsValid(e.model())) return bad("eval.model", e.model(), "names no EvalProtocol.Model");
  if (!proto::EvalProtocol::Weighting_IsValid(e.weighting())) {
    return bad("eval.weighting", e.weighting(), "names no EvalProtocol.Weighting");
  }
  if (!proto::EvalProtocol::Round_IsValid(e.round())) return bad("eval.round", e.round(), "names no EvalProtocol.Round");
  if (!proto::EvalProtocol::GlobalTest_IsValid(e.global_test())) {
    return bad("eval.global_test", e.global_test(), "names no EvalProtocol.GlobalTest");
  }
  if (e.has_early_stop()) {
    if (e.early_stop().after_round() < 0) {
      return bad("eval.early_stop.after_round", e.early_stop().after_round(), "must be >= 0");
    }
    if (!std::isfinite(e.early_stop().loss_ratio()) || e.early_stop().loss_ratio() <= 1) {
      return bad("eval.early_stop.loss_ratio", e.early_stop().loss_ratio(), "must be a finite number > 1");
    }
  }
  return s;
}

std::vector<google::protobuf::Any> MethodParamsOf(const proto::FederationSpec& spec) {
  return {spec.method_params().begin(), spec.method_params().end()};
}

absl::StatusOr<MethodFactories> CheckMethod(const proto::FederationSpec& spec) {
  if (spec.centralized() && spec.method() != "fedavg") {
    // Every other method reads the partition's client count or clients' data it no longer has.
    return absl::InvalidArgumentError(absl::StrCat("centralized: true pools the clients into one, which only fedavg (plain "
                                                   "training on the pooled graph) runs, not '", spec.method(), "'"));
  }
  absl::StatusOr<MethodFactories> m = FindMethod(spec.method());
  if (!m.ok()) return m.status();
  if (absl::Status s = CheckMethodParams(spec.method(), m->params, MethodParamsOf(spec)); !s.ok()) return s;
  return m;
}

}  // namespace fgl::fl
