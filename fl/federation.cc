#include "fl/federation.h"

#include <google/protobuf/text_format.h>

#include "absl/strings/str_cat.h"

namespace fgl::fl {

EvalProtocol FederationOptions::eval() const {
  const proto::EvalProtocol& e = spec.eval();
  EvalProtocol p;
  p.model = e.model() == "local"          ? EvalProtocol::Model::kLocal
            : e.model() == "personalized" ? EvalProtocol::Model::kPersonalized
                                          : EvalProtocol::Model::kGlobal;
  if (spec.method() == "local") p.model = EvalProtocol::Model::kLocal;
  p.node_weighted = e.weighting() != "unweighted";
  p.round = e.round() == "last"        ? EvalProtocol::Round::kLast
            : e.round() == "best_test" ? EvalProtocol::Round::kBestTest
                                       : EvalProtocol::Round::kBestVal;
  p.dropout_at_eval = e.dropout_at_eval();
  p.whole_graph_test = e.global_test() == "whole_graph";
  if (e.has_early_stop()) {
    p.early_stop_after = e.early_stop().after_round();
    p.early_stop_ratio = e.early_stop().loss_ratio();
  }
  return p;
}

std::string FederationOptions::Fingerprint() const {
  proto::FederationSpec keyed = spec;
  keyed.clear_data_dir();
  keyed.clear_rounds();
  std::string text;
  google::protobuf::TextFormat::Printer printer;
  printer.SetSingleLineMode(true);
  printer.PrintToString(keyed, &text);
  return absl::StrCat(text, "|seed=", seed, "|device=", device);
}

std::string EvalProtocol::Card() const {
  return absl::StrCat("model=",
                      model == Model::kGlobal ? "global" : model == Model::kLocal ? "local" : "personalized",
                      " weighting=", node_weighted ? "node" : "unweighted", " round=",
                      round == Round::kBestVal ? "best_val" : round == Round::kLast ? "last" : "best_test(optimistic)",
                      " dropout_at_eval=", dropout_at_eval ? "on" : "off",
                      whole_graph_test ? " global_test=whole_graph" : "",
                      early_stop_ratio > 0 ? absl::StrCat(" early_stop=after_", early_stop_after, "_loss_x", early_stop_ratio)
                                           : "");
}

}  // namespace fgl::fl
