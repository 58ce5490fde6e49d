#include "fl/node_level/split_server.h"

#include "absl/strings/str_cat.h"
#include "graph/option_string.h"
#include "nn/conv/init.h"
#include "nn/ops/dropout.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::fl::node_level {

absl::StatusOr<SplitModelSpec> ParseSplitModel(const std::string& model_spec) {
  FGL_ASSIGN_OR_RETURN(graph::OptionString o, graph::OptionString::Parse(model_spec));
  SplitModelSpec s;
  auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("model '", model_spec, "': ", why));
  };
  if (o.name() != "gcn" && o.name() != "gat") return bad("nFedGNN splits a 2-layer gcn or gat");
  s.gat = o.name() == "gat";
  FGL_ASSIGN_OR_RETURN(int64_t layers, o.Int("layers", 2));
  if (layers != 2) return bad("the split models have 2 layers (§B.2)");
  FGL_ASSIGN_OR_RETURN(s.hidden, o.Int("hidden", 16));
  FGL_ASSIGN_OR_RETURN(s.dropout, o.Double("dropout", s.gat ? 0.6 : 0.5));
  if (s.hidden < 1) return bad("hidden must be >= 1");
  if (s.gat) {
    FGL_ASSIGN_OR_RETURN(s.heads, o.Int("heads", 8));
    FGL_ASSIGN_OR_RETURN(int64_t out_heads, o.Int("out_heads", 1));
    FGL_ASSIGN_OR_RETURN(s.input_dropout, o.Double("input_dropout", 0.6));
    FGL_ASSIGN_OR_RETURN(s.attn_dropout, o.Double("attn_dropout", 0.6));
    const std::string act = o.String("act", "elu");
    if (s.heads < 1) return bad("heads must be >= 1");
    if (out_heads != 1) return bad("the output layer has 1 head (Cora's GAT, §B.2.2)");
    if (act != "elu") return bad("layer 1's activation is ELU (§B.2.2)");
  }
  for (double p : {s.dropout, s.input_dropout, s.attn_dropout}) {
    if (!(p >= 0 && p < 1)) return bad("dropout rates must be in [0, 1)");
  }
  FGL_RETURN_IF_ERROR(o.CheckAllUsed());
  return s;
}

SplitServerImpl::SplitServerImpl(const SplitModelSpec& spec, int64_t num_classes) : spec_(spec) {
  if (spec.gat) {
    att_src_ = register_parameter("att_src", torch::empty({spec.heads, spec.hidden}));
    att_dst_ = register_parameter("att_dst", torch::empty({spec.heads, spec.hidden}));
    bias_ = register_parameter("bias", torch::zeros({spec.latent_width()}));
    nn::GlorotUniform(att_src_);
    nn::GlorotUniform(att_dst_);
    gat_out_ = register_module(
        "gat_out", nn::GATConv(nn::GATConvOptions(spec.latent_width(), num_classes).heads(1).dropout(spec.attn_dropout)));
  } else {
    gcn_out_ = register_module("gcn_out", nn::GCNConv(nn::GCNConvOptions(spec.hidden, num_classes)));
  }
}

torch::Tensor SplitServerImpl::forward(const torch::Tensor& latents, const nn::GraphView& graph) {
  const int64_t n = latents.size(0);
  if (!spec_.gat) {
    // Eq. 5 with the users' x̄_i = x_i W_i + b_i: Â·Dropout(ReLU(Â X̄))·W¹ + b¹.
    torch::Tensor h = torch::relu(nn::GcnPropagate(latents, graph));
    h = nn::Dropout(h, spec_.dropout, is_training());
    return gcn_out_->forward(h, graph);
  }
  // Eq. 9: the users sent x'_{i,l} = W_i^l x_i; attention, aggregation, bias and ELU are here.
  std::vector<torch::Tensor> heads =
      nn::GatAttend(latents.view({n, spec_.heads, spec_.hidden}), att_src_, att_dst_, graph, 0.2,
                    spec_.attn_dropout, is_training());
  torch::Tensor h = torch::elu(torch::cat(heads, 1) + bias_);
  h = nn::Dropout(h, spec_.dropout, is_training());
  return gat_out_->forward(h, graph);
}

torch::Tensor LaplacianRegularizer(const torch::Tensor& latents, const nn::GraphView& graph) {
  const nn::CsrPattern& p = graph.adjacency_with_self_loops();
  torch::Tensor diff = latents.index_select(0, p.row_index()) - latents.index_select(0, p.col());
  return diff.pow(2).sum() / static_cast<double>(p.nnz());
}

}  // namespace fgl::fl::node_level
