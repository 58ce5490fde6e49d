// The server's part of nFedGNN's split models (§B.2): everything after the users' first-layer
// map, over the whole topology that only the server knows. GCN: Â·ReLU(Â X̄) after dropout,
// then GCNConv to the classes. GAT: per-head attention over the users' projections, ELU, then a
// one-head GATConv to the classes.
#ifndef FGL_FL_NODE_LEVEL_SPLIT_SERVER_H_
#define FGL_FL_NODE_LEVEL_SPLIT_SERVER_H_

#include <torch/torch.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "nn/conv/gat_conv.h"
#include "nn/conv/gcn_conv.h"
#include "nn/graph_view.h"

namespace fgl::fl::node_level {

// What the model spec says about the split: the users' side and the server's.
struct SplitModelSpec {
  bool gat = false;
  int64_t heads = 1, hidden = 16;  // the latent is heads × hidden floats per user
  double dropout = 0.5;            // GCN: on the hidden layer; GAT: on layer 2's input
  double input_dropout = 0;        // GAT: on the user's x_i (GATConv feat_drop), on the device
  double attn_dropout = 0;         // GAT: on both layers' attention coefficients
  int64_t latent_width() const { return heads * hidden; }
};

// "gcn:layers=2,hidden=16,dropout=0.5" or
// "gat:layers=2,heads=8,hidden=16,out_heads=1,dropout=0.6,input_dropout=0.6,attn_dropout=0.6,act=elu";
// anything else (another depth, more output heads) is an error naming the spec.
absl::StatusOr<SplitModelSpec> ParseSplitModel(const std::string& model_spec);

class SplitServerImpl : public torch::nn::Module {
 public:
  SplitServerImpl(const SplitModelSpec& spec, int64_t num_classes);
  // Logits [n, C] from every user's latent [n, H].
  torch::Tensor forward(const torch::Tensor& latents, const nn::GraphView& graph);

 private:
  SplitModelSpec spec_;
  nn::GCNConv gcn_out_{nullptr};
  torch::Tensor att_src_, att_dst_, bias_;  // GAT layer 1 (the users hold its projection)
  nn::GATConv gat_out_{nullptr};
};
TORCH_MODULE(SplitServer);

// L_reg of Eq. 6: the mean over the server's directed edges and self-loops (S = 2|E| + n entries)
// of ||x̄_i − x̄_j||².
torch::Tensor LaplacianRegularizer(const torch::Tensor& latents, const nn::GraphView& graph);

}  // namespace fgl::fl::node_level

#endif  // FGL_FL_NODE_LEVEL_SPLIT_SERVER_H_
