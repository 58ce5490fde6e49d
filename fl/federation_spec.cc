#include "fl/federation_spec.h"

#include <cmath>
#include <set>

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
  if (e.model().empty()) e.set_model("global");
  if (e.weighting().empty()) e.set_weighting("node");
  if (e.round().empty()) e.set_round("best_val");
  // false is the default: spelled or not, the same run.
  if (e.has_dropout_at_eval() && !e.dropout_at_eval()) e.clear_dropout_at_eval();

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
  static const auto* models = new std::set<std::string>{"global", "local", "personalized"};
  static const auto* weightings = new std::set<std::string>{"node", "unweighted"};
  static const auto* rounds = new std::set<std::string>{"best_val", "last", "best_test"};
  if (!models->count(e.model())) return bad("eval.model", e.model(), "must be global, local or personalized");
  if (!weightings->count(e.weighting())) return bad("eval.weighting", e.weighting(), "must be node or unweighted");
  if (!rounds->count(e.round())) return bad("eval.round", e.round(), "must be best_val, last or best_test");
  if (e.global_test() != "" && e.global_test() != "whole_graph") {
    return bad("eval.global_test", e.global_test(), "must be empty (the partition's server nodes) or whole_graph");
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
  if (spec.method() == "centralized") {
    if (spec.method_params_size() > 0) {
      return absl::InvalidArgumentError("method_params: method 'centralized' takes none");
    }
    return MethodFactories{};
  }
  absl::StatusOr<MethodFactories> m = FindMethod(spec.method());
  if (!m.ok()) return m.status();
  if (absl::Status s = CheckMethodParams(spec.method(), m->params, MethodParamsOf(spec)); !s.ok()) return s;
  return m;
}

}  // namespace fgl::fl
