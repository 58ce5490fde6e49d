#include "nn/models/gnn_model.h"

#include "nn/conv/init.h"

#include <fstream>
#include <functional>
#include <sstream>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "graph/option_string.h"
#include "nn/conv/gat_conv.h"
#include "nn/conv/gcn_conv.h"
#include "nn/conv/gin_conv.h"
#include "nn/conv/linear_layer.h"
#include "nn/conv/sage_conv.h"
#include "nn/models/ego_sage.h"
#include "nn/models/sampled_sage.h"
#include "nn/ops/dropout.h"
#include "third_party/absl_ext/status_macros.h"

// Every binary that builds models takes it.
ABSL_FLAG(double, max_model_memory_gb, 0,
          "Refuse a model whose parameters with their gradients and Adam state, or whose activations on a graph, "
          "would exceed this many GB; 0: 80% of the machine's memory.");

namespace fgl::nn {

double ModelMemoryLimitBytes() {
  const double flag_gb = absl::GetFlag(FLAGS_max_model_memory_gb);
  if (flag_gb > 0) return flag_gb * 1e9;
  static const double machine = [] {
    std::ifstream meminfo("/proc/meminfo");
    std::string key;
    double kb = 0;
    while (meminfo >> key) {
      if (key == "MemTotal:" && meminfo >> kb) return kb * 1024;
      meminfo.ignore(1 << 10, '\n');
    }
    return 64e9;  // unknown: a large machine's memory
  }();
  return 0.8 * machine;
}

std::vector<std::pair<std::string, torch::Tensor>> GnnModel::named_group_parameters(
    const std::string& group) const {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& item : named_parameters(/*recurse=*/true)) {
    const std::string& name = item.key();
    if (name.rfind(group + ".", 0) == 0) out.emplace_back(name, item.value());
  }
  return out;
}

ModelOutput GnnModel::forward_centres(const NodeFeatures& x, const GraphView& graph,
                                      const torch::Tensor& centres) {
  ModelOutput out = forward(x, graph);
  return {out.embedding.index_select(0, centres), out.logits.index_select(0, centres)};
}

std::vector<torch::Tensor> GnnModel::group_parameters(const std::string& group) const {
  std::vector<torch::Tensor> out;
  for (auto& [name, t] : named_group_parameters(group)) out.push_back(t);
  return out;
}

namespace {

enum class ConvKind { kGcn, kGat, kSage, kGin };
enum class Jk { kNone, kMax, kCat, kLast };

using ConvFn = std::function<torch::Tensor(const NodeFeatures&, const GraphView&)>;

struct StackOptions {
  ConvKind kind = ConvKind::kGcn;
  int64_t layers = 2, hidden = 64, heads = 8, out_heads = 1;
  double dropout = 0.5, input_dropout = 0.0, attn_dropout = 0.0;
  bool train_eps = false;
  bool elu = false;  // ELU instead of ReLU after hidden layers (the GAT paper's choice)
  bool masked = false;  // GCN layers and the linear head with learnable weight masks (FED-PUB)
  bool row_norm = false;  // GCN layers propagate with D^-1 (A + I) (FedGCN)
  bool out_relu = false;  // ReLU on the logits (FedEgo's FedGCN baseline code)
  Jk jk = Jk::kNone;
};

// L message-passing layers (or L-1 plus a JK readout and a linear head). The hidden layers are
// registered under "body", the final layer under "head".
class StackedGnn final : public GnnModel {
 public:
  StackedGnn(const StackOptions& o, int64_t in, int64_t classes, std::string spec)
      : o_(o), in_(in), classes_(classes), spec_(std::move(spec)) {
    body_ = register_module("body", torch::nn::ModuleList());
    const int64_t hidden_layers = o.layers - 1;
    int64_t width = in;
    for (int64_t l = 0; l < hidden_layers; ++l) width = AddConv(body_, width, /*last=*/false);
    hidden_width_ = width;
    if (o.jk == Jk::kNone) {
      auto head_list = register_module("head", torch::nn::ModuleList());
      AddConv(head_list, width, /*last=*/true);
      head_fn_ = fns_.back();
      fns_.pop_back();
      embedding_dim_ = hidden_layers == 0 ? in : width;
    } else {
      embedding_dim_ = o.jk == Jk::kCat ? width * hidden_layers : width;
      head_linear_ = register_module(
          "head", LinearLayer(LinearLayerOptions(embedding_dim_, classes).masked(o.masked)));
    }
  }

  ModelOutput forward(const NodeFeatures& x, const GraphView& graph) override {
    // Every layer keeps its pre-activation, activation and dropout output per node for backward: a
    // model too deep or wide for this graph is refused before it allocates (a run killed by the
    // kernel says nothing).
    const double activation_bytes = static_cast<double>(x.num_nodes()) * ActivationFloatsPerNode() * 4;
    TORCH_CHECK(activation_bytes <= ModelMemoryLimitBytes(), "model '", spec_, "' would hold about ",
                activation_bytes / 1e9, " GB of activations on ", x.num_nodes(), " nodes, over the limit of ",
                ModelMemoryLimitBytes() / 1e9, " GB (--max_model_memory_gb)");
    NodeFeatures h = x.Dropout(o_.input_dropout, is_training());
    torch::Tensor t, embedding, z;
    std::vector<torch::Tensor> hiddens;
    for (size_t l = 0; l < fns_.size(); ++l) {
      z = fns_[l](l == 0 ? h : NodeFeatures(t), graph);
      embedding = o_.elu ? torch::elu(z) : torch::relu(z);
      t = Dropout(embedding, o_.dropout, is_training());
      hiddens.push_back(t);  // JK reads the layer outputs after dropout, as PyG's BasicGNN
    }
    if (o_.jk == Jk::kNone) {
      if (fns_.empty()) embedding = h.dense();
      torch::Tensor logits = head_fn_(fns_.empty() ? h : NodeFeatures(t), graph);
      return {embedding, o_.out_relu ? torch::relu(logits) : logits, z};
    }
    embedding = o_.jk == Jk::kMax    ? std::get<0>(torch::stack(hiddens, 0).max(0))
                : o_.jk == Jk::kLast ? hiddens.back()
                                     : torch::cat(hiddens, 1);
    return {embedding, head_linear_->forward(embedding), z};
  }

  int64_t in_features() const override { return in_; }
  int64_t num_classes() const override { return classes_; }
  int64_t embedding_dim() const override { return embedding_dim_; }
  std::string spec() const override { return spec_; }

 private:
  // Appends one conv to `list`; returns its output width.
  int64_t AddConv(torch::nn::ModuleList list, int64_t in, bool last) {
    const int64_t out = last ? classes_ : o_.hidden;
    switch (o_.kind) {
      case ConvKind::kGcn: {
        GCNConv c(GCNConvOptions(in, out).masked(o_.masked).row_norm(o_.row_norm));
        list->push_back(c);
        fns_.push_back([c](const NodeFeatures& x, const GraphView& g) mutable { return c->forward(x, g); });
        return out;
      }
      case ConvKind::kSage: {
        SAGEConv c(SAGEConvOptions(in, out));
        list->push_back(c);
        fns_.push_back([c](const NodeFeatures& x, const GraphView& g) mutable { return c->forward(x, g); });
        return out;
      }
      case ConvKind::kGin: {
        GINConv c(GINConvOptions(in, o_.hidden, out).train_eps(o_.train_eps));
        list->push_back(c);
        fns_.push_back([c](const NodeFeatures& x, const GraphView& g) mutable { return c->forward(x, g); });
        return out;
      }
      case ConvKind::kGat: {
        // Hidden layers: `heads` heads of `hidden` channels, concatenated; the output layer:
        // `out_heads` heads of C channels, averaged (Velickovic et al.; PyG's GAT example).
        GATConv c(GATConvOptions(in, out)
                      .heads(last ? o_.out_heads : o_.heads)
                      .concat(!last)
                      .dropout(o_.attn_dropout));
        list->push_back(c);
        fns_.push_back([c](const NodeFeatures& x, const GraphView& g) mutable { return c->forward(x, g); });
        return c->output_width();
      }
    }
    return out;
  }

  double ActivationFloatsPerNode() const {
    const double width = static_cast<double>(o_.hidden) * (o_.kind == ConvKind::kGat ? o_.heads : 1);
    return 3.0 * width * static_cast<double>(o_.layers) + static_cast<double>(classes_);
  }

  StackOptions o_;
  int64_t in_, classes_, hidden_width_ = 0, embedding_dim_ = 0;
  std::string spec_;
  torch::nn::ModuleList body_{nullptr};
  std::vector<ConvFn> fns_;
  ConvFn head_fn_;
  LinearLayer head_linear_{nullptr};
};

// MLP: (layers - 1) x [Linear, ReLU, dropout] then Linear to classes (and a ReLU on the logits with
// out_act=relu, the stellargraph demo's act_out that FedMpa's note asks for as a switch).
class Mlp final : public GnnModel {
 public:
  Mlp(int64_t layers, int64_t hidden, double dropout, double input_dropout, bool glorot, bool out_relu, int64_t in,
      int64_t classes, std::string spec)
      : dropout_(dropout), input_dropout_(input_dropout), out_relu_(out_relu), in_(in), classes_(classes),
        spec_(std::move(spec)) {
    body_ = register_module("body", torch::nn::ModuleList());
    int64_t width = in;
    for (int64_t l = 0; l + 1 < layers; ++l) {
      body_->push_back(LinearLayer(LinearLayerOptions(width, hidden)));
      width = hidden;
    }
    embedding_dim_ = width;
    head_ = register_module("head", LinearLayer(LinearLayerOptions(width, classes)));
    if (glorot) {  // Keras's Dense: Glorot-uniform kernels, zero biases (stellargraph, FedMpa)
      torch::NoGradGuard no_grad;
      for (size_t l = 0; l <= body_->size(); ++l) {
        LinearLayerImpl* layer = l < body_->size() ? body_->ptr<LinearLayerImpl>(l).get() : head_.get();
        GlorotUniform(layer->weight);
        layer->bias.zero_();
      }
    }
  }

  ModelOutput forward(const NodeFeatures& x, const GraphView& graph) override {
    NodeFeatures h = x.Dropout(input_dropout_, is_training());
    torch::Tensor t;
    torch::Tensor embedding;
    for (size_t l = 0; l < body_->size(); ++l) {
      embedding = torch::relu(body_->ptr<LinearLayerImpl>(l)->forward(l == 0 ? h : NodeFeatures(t)));
      t = Dropout(embedding, dropout_, is_training());
    }
    if (body_->size() == 0) return {h.dense(), Out(head_->forward(h))};
    return {embedding, Out(head_->forward(t))};
  }
  int64_t in_features() const override { return in_; }
  int64_t num_classes() const override { return classes_; }
  int64_t embedding_dim() const override { return embedding_dim_; }
  std::string spec() const override { return spec_; }

 protected:
  torch::Tensor Out(torch::Tensor logits) const { return out_relu_ ? torch::relu(logits) : logits; }
  // APPNP reuses the MLP and propagates its logits.
  double dropout_, input_dropout_;
  bool out_relu_;
  int64_t in_, classes_, embedding_dim_ = 0;
  std::string spec_;
  torch::nn::ModuleList body_{nullptr};
  LinearLayer head_{nullptr};
};

// APPNP (Gasteiger et al.): z = MLP(x); h_0 = z; h_{k+1} = (1 - alpha) Â h_k + alpha z.
class Appnp final : public GnnModel {
 public:
  Appnp(int64_t k, double alpha, double prop_dropout, std::shared_ptr<Mlp> mlp, std::string spec)
      : k_(k), alpha_(alpha), prop_dropout_(prop_dropout), spec_(std::move(spec)) {
    // Register the MLP's groups directly so "body"/"head" keep their meaning.
    mlp_ = mlp;
    for (auto& child : mlp->named_children()) register_module(child.key(), child.value());
  }
  ModelOutput forward(const NodeFeatures& x, const GraphView& graph) override {
    mlp_->train(is_training());
    ModelOutput z = mlp_->forward(x, graph);
    torch::Tensor h = z.logits;
    for (int64_t i = 0; i < k_; ++i) {
      // prop_dropout: stellargraph's APPNP drops the propagated term at every step (FedMpa).
      h = (1 - alpha_) * GcnPropagate(prop_dropout_ > 0 ? Dropout(h, prop_dropout_, is_training()) : h, graph) +
          alpha_ * z.logits;
    }
    return {z.embedding, h};
  }
  int64_t in_features() const override { return mlp_->in_features(); }
  int64_t num_classes() const override { return mlp_->num_classes(); }
  int64_t embedding_dim() const override { return mlp_->embedding_dim(); }
  std::string spec() const override { return spec_; }

 private:
  int64_t k_;
  double alpha_, prop_dropout_;
  std::string spec_;
  std::shared_ptr<Mlp> mlp_;
};

// SGC (Wu et al.): logits = Â^K X W (+ b). With hidden > 0 (FedGKC's "SGC-2"):
// embedding = Â^K X W1, logits = embedding W2, no nonlinearity.
class Sgc final : public GnnModel {
 public:
  Sgc(int64_t k, int64_t hidden, int64_t in, int64_t classes, std::string spec)
      : k_(k), in_(in), classes_(classes), spec_(std::move(spec)) {
    if (hidden > 0) {
      body_ = register_module("body", LinearLayer(LinearLayerOptions(in, hidden)));
      head_ = register_module("head", LinearLayer(LinearLayerOptions(hidden, classes)));
      embedding_dim_ = hidden;
    } else {
      head_ = register_module("head", LinearLayer(LinearLayerOptions(in, classes)));
      embedding_dim_ = classes;
    }
  }
  ModelOutput forward(const NodeFeatures& x, const GraphView& graph) override {
    // Â^K (X W) = (Â^K X) W: transform first, then K cheap propagations of a narrow matrix.
    auto propagate = [&](torch::Tensor h) {
      for (int64_t i = 0; i < k_; ++i) h = GcnPropagate(h, graph);
      return h;
    };
    if (body_) {
      torch::Tensor e = propagate(x.MatMul(body_->weight)) + body_->bias;
      return {e, head_->forward(e)};
    }
    torch::Tensor logits = propagate(x.MatMul(head_->weight)) + head_->bias;
    return {logits, logits};
  }
  int64_t in_features() const override { return in_; }
  int64_t num_classes() const override { return classes_; }
  int64_t embedding_dim() const override { return embedding_dim_; }
  std::string spec() const override { return spec_; }

 private:
  int64_t k_, in_, classes_, embedding_dim_ = 0;
  std::string spec_;
  LinearLayer body_{nullptr}, head_{nullptr};
};

absl::Status CheckRange(bool ok, const std::string& spec, const std::string& what) {
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("model '", spec, "': ", what));
}

}  // namespace

namespace {

// A model's parameters live four times over while it trains (weights, gradients, Adam's two moments).
absl::Status CheckParameterMemory(const std::string& spec, double parameters) {
  const double bytes = parameters * 4 * 4;
  if (bytes <= ModelMemoryLimitBytes()) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "model '", spec, "' has about ", parameters, " parameters: ", bytes / 1e9,
      " GB with gradients and Adam state, over the limit of ", ModelMemoryLimitBytes() / 1e9,
      " GB (--max_model_memory_gb)"));
}

}  // namespace

absl::StatusOr<std::shared_ptr<GnnModel>> MakeModel(const std::string& spec, int64_t in_features,
                                                     int64_t num_classes) {
  FGL_ASSIGN_OR_RETURN(graph::OptionString o, graph::OptionString::Parse(spec));
  FGL_RETURN_IF_ERROR(CheckRange(in_features > 0 && num_classes > 1, spec,
                                 absl::StrCat("needs in_features > 0 and num_classes > 1, got ",
                                              in_features, " and ", num_classes)));
  const std::string& name = o.name();
  std::shared_ptr<GnnModel> model;
  if (name == "gcn" || name == "gat" || name == "sage" || name == "graphsage" || name == "gin") {
    StackOptions s;
    s.kind = name == "gcn" ? ConvKind::kGcn
             : name == "gat" ? ConvKind::kGat
             : name == "gin" ? ConvKind::kGin
                             : ConvKind::kSage;
    if (s.kind == ConvKind::kGat) {
      s.hidden = 8;
      s.dropout = 0.6;
      s.input_dropout = 0.6;
      s.attn_dropout = 0.6;
    }
    FGL_ASSIGN_OR_RETURN(s.layers, o.Int("layers", s.layers));
    FGL_ASSIGN_OR_RETURN(s.hidden, o.Int("hidden", s.hidden));
    FGL_ASSIGN_OR_RETURN(s.dropout, o.Double("dropout", s.dropout));
    FGL_ASSIGN_OR_RETURN(s.input_dropout, o.Double("input_dropout", s.input_dropout));
    if (s.kind == ConvKind::kGat) {
      FGL_ASSIGN_OR_RETURN(s.heads, o.Int("heads", s.heads));
      FGL_ASSIGN_OR_RETURN(s.out_heads, o.Int("out_heads", s.out_heads));
      FGL_ASSIGN_OR_RETURN(s.attn_dropout, o.Double("attn_dropout", s.attn_dropout));
    }
    if (s.kind == ConvKind::kGin) {
      FGL_ASSIGN_OR_RETURN(s.train_eps, o.Bool("train_eps", false));
    }
    const std::string act = o.String("act", "relu");
    if (act != "relu" && act != "elu") {
      return absl::InvalidArgumentError(absl::StrCat("model '", spec, "': act=", act, " (relu|elu)"));
    }
    s.elu = act == "elu";
    const std::string jk = o.String("jk", "none");
    if (jk != "none" && jk != "max" && jk != "cat" && jk != "last") {
      return absl::InvalidArgumentError(absl::StrCat("model '", spec, "': jk=", jk, " (none|max|cat|last)"));
    }
    s.jk = jk == "max" ? Jk::kMax : jk == "cat" ? Jk::kCat : jk == "last" ? Jk::kLast : Jk::kNone;
    FGL_ASSIGN_OR_RETURN(s.masked, o.Bool("masked", false));
    if (s.masked && s.kind != ConvKind::kGcn) {
      return absl::InvalidArgumentError(absl::StrCat("model '", spec, "': masked=true needs gcn"));
    }
    const std::string norm = s.kind == ConvKind::kGcn ? o.String("norm", "sym") : "sym";
    if (norm != "sym" && norm != "row") {
      return absl::InvalidArgumentError(absl::StrCat("model '", spec, "': norm=", norm, " (sym|row)"));
    }
    s.row_norm = norm == "row";
    const std::string out_act = o.String("out_act", "none");
    if (out_act != "none" && out_act != "relu") {
      return absl::InvalidArgumentError(absl::StrCat("model '", spec, "': out_act=", out_act, " (none|relu)"));
    }
    if (out_act == "relu" && s.jk != Jk::kNone) {
      return absl::InvalidArgumentError(absl::StrCat("model '", spec, "': out_act=relu needs jk=none"));
    }
    s.out_relu = out_act == "relu";
    FGL_RETURN_IF_ERROR(CheckRange(s.layers >= (s.jk == Jk::kNone ? 1 : 2), spec, "layers too small"));
    FGL_RETURN_IF_ERROR(CheckRange(s.hidden > 0 && s.heads > 0 && s.out_heads > 0, spec,
                                   "hidden and heads must be > 0"));
    FGL_RETURN_IF_ERROR(CheckRange(s.dropout >= 0 && s.dropout < 1 && s.input_dropout >= 0 &&
                                       s.input_dropout < 1 && s.attn_dropout >= 0 && s.attn_dropout < 1,
                                   spec, "dropout must be in [0, 1)"));
    std::string normal = absl::StrCat(name == "graphsage" ? "sage" : name, ":layers=", s.layers,
                                      ",hidden=", s.hidden, ",dropout=", s.dropout,
                                      ",input_dropout=", s.input_dropout, ",jk=", jk, ",act=", act);
    if (s.kind == ConvKind::kGat)
      absl::StrAppend(&normal, ",heads=", s.heads, ",out_heads=", s.out_heads, ",attn_dropout=", s.attn_dropout);
    if (s.kind == ConvKind::kGin) absl::StrAppend(&normal, ",train_eps=", s.train_eps);
    if (s.masked) absl::StrAppend(&normal, ",masked=1");
    // Spelled out only when not the default, so existing specs (and their records) keep their keys.
    if (s.row_norm) absl::StrAppend(&normal, ",norm=row");
    if (s.out_relu) absl::StrAppend(&normal, ",out_act=relu");
    const double width = static_cast<double>(s.hidden) * (s.kind == ConvKind::kGat ? s.heads : 1);
    FGL_RETURN_IF_ERROR(CheckParameterMemory(
        spec, static_cast<double>(in_features) * width + static_cast<double>(s.layers - 1) * width * width +
                  width * static_cast<double>(num_classes) * s.out_heads));
    model = std::make_shared<StackedGnn>(s, in_features, num_classes, normal);
  } else if (name == "mlp" || name == "appnp") {
    FGL_ASSIGN_OR_RETURN(int64_t layers, o.Int("layers", 2));
    FGL_ASSIGN_OR_RETURN(int64_t hidden, o.Int("hidden", 64));
    FGL_ASSIGN_OR_RETURN(double dropout, o.Double("dropout", 0.5));
    FGL_ASSIGN_OR_RETURN(double input_dropout, o.Double("input_dropout", name == "appnp" ? 0.5 : 0.0));
    FGL_RETURN_IF_ERROR(CheckRange(layers >= 1 && hidden > 0 && dropout >= 0 && dropout < 1 &&
                                       input_dropout >= 0 && input_dropout < 1,
                                   spec, "needs layers >= 1, hidden > 0, dropouts in [0, 1)"));
    const std::string init = o.String("init", "torch");
    FGL_RETURN_IF_ERROR(CheckRange(init == "torch" || init == "glorot", spec, "init must be torch or glorot"));
    const std::string out_act = o.String("out_act", "none");
    FGL_RETURN_IF_ERROR(CheckRange(out_act == "none" || out_act == "relu", spec, "out_act must be none or relu"));
    // init and out_act are spelled out only when not the default, so that existing specs keep their text.
    std::string normal = absl::StrCat(name, ":layers=", layers, ",hidden=", hidden,
                                      ",dropout=", dropout, ",input_dropout=", input_dropout,
                                      init == "glorot" ? ",init=glorot" : "", out_act == "relu" ? ",out_act=relu" : "");
    FGL_RETURN_IF_ERROR(CheckParameterMemory(
        spec, static_cast<double>(in_features) * hidden + static_cast<double>(layers - 1) * hidden * hidden +
                  static_cast<double>(hidden) * num_classes));
    auto mlp = std::make_shared<Mlp>(layers, hidden, dropout, input_dropout, init == "glorot", out_act == "relu",
                                     in_features, num_classes, normal);
    if (name == "mlp") {
      model = mlp;
    } else {
      FGL_ASSIGN_OR_RETURN(int64_t k, o.Int("k", 10));
      FGL_ASSIGN_OR_RETURN(double alpha, o.Double("alpha", 0.1));
      FGL_ASSIGN_OR_RETURN(double prop_dropout, o.Double("prop_dropout", 0.0));
      FGL_RETURN_IF_ERROR(CheckRange(k >= 0 && alpha >= 0 && alpha <= 1 && prop_dropout >= 0 && prop_dropout < 1, spec,
                                     "needs k >= 0, alpha in [0, 1], prop_dropout in [0, 1)"));
      // prop_dropout is spelled out only when set, so that existing specs keep their text.
      model = std::make_shared<Appnp>(k, alpha, prop_dropout, mlp,
                                      absl::StrCat(normal, ",k=", k, ",alpha=", alpha,
                                                   prop_dropout > 0 ? absl::StrCat(",prop_dropout=", prop_dropout) : ""));
    }
  } else if (name == "sgc") {
    FGL_ASSIGN_OR_RETURN(int64_t k, o.Int("k", 2));
    FGL_ASSIGN_OR_RETURN(int64_t hidden, o.Int("hidden", 0));
    FGL_RETURN_IF_ERROR(CheckRange(k >= 0 && hidden >= 0, spec, "needs k >= 0, hidden >= 0"));
    model = std::make_shared<Sgc>(k, hidden, in_features, num_classes,
                                  absl::StrCat("sgc:k=", k, ",hidden=", hidden));
  } else if (name == "ego_sage") {
    FGL_ASSIGN_OR_RETURN(EgoSageOptions e, ParseEgoSageSpec(spec));
    return std::shared_ptr<GnnModel>(std::make_shared<EgoSage>(e, in_features, num_classes));
  } else if (name == "sampled_sage") {
    FGL_ASSIGN_OR_RETURN(SampledSageOptions s, ParseSampledSageSpec(spec));
    return std::shared_ptr<GnnModel>(std::make_shared<SampledSage>(s, in_features, num_classes));
  } else {
    return absl::NotFoundError(absl::StrCat("unknown model '", name,
                                            "'; known: gcn, gat, sage, gin, sgc, appnp, mlp, ego_sage, sampled_sage"));
  }
  FGL_RETURN_IF_ERROR(o.CheckAllUsed());
  return model;
}

absl::Status CheckModelInput(const GnnModel& model, const NodeFeatures& x, const GraphView& graph) {
  if (x.width() != model.in_features()) {
    return absl::InvalidArgumentError(absl::StrCat("features have width ", x.width(), " but model ",
                                                   model.spec(), " expects ", model.in_features()));
  }
  if (x.num_nodes() != graph.num_nodes()) {
    return absl::InvalidArgumentError(absl::StrCat("features have ", x.num_nodes(),
                                                   " rows but the graph has ", graph.num_nodes(),
                                                   " nodes"));
  }
  if (x.dense().defined()) FGL_RETURN_IF_ERROR(CheckFinite(x.dense(), "node features"));
  return absl::OkStatus();
}

}  // namespace fgl::nn
