// FedTGP (Zhang et al., "FedTGP: Trainable Global Prototypes with Adaptive-Margin-Enhanced
// Contrastive Learning", AAAI 2024) for FGL (note §A.4). Clients are FedProto's
// (fl::PrototypeClient). Each round the server:
//   1. gathers every (client, class) local prototype P of a class the client holds,
//   2. sets the margin m = min(max_c gap_c, τ), gap_c the distance from class c's averaged
//      prototype to the nearest other class's,
//   3. trains its global prototypes G = fc(ReLU(middle(Embedding(c)))) for E epochs of Adam on
//      CE(−(‖P − G‖ + m·onehot(y)), y): each local prototype near its class, m farther from the rest,
//   4. broadcasts G for the classes seen this round.
// With `server: OPENFGL` it computes what OpenFGL's server.py does instead, bugs included
// (fedtgp.proto): every (client, class) prototype, the margin from the mis-averaged prototypes, the
// unclamped expanded distance, every class broadcast.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "fl/optimizer_state.h"
#include "fl/prototype_client.h"
#include "fl/registry.h"
#include "graph/random.h"
#include "methods/fedtgp/fedtgp.pb.h"
#include "nn/adam.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::methods::fedtgp {
namespace {

constexpr char kType[] = "fedtgp.prototypes";

// The trainable global prototypes (the paper's generator; OpenFGL's Trainable_prototypes).
struct PrototypeGeneratorImpl : torch::nn::Module {
  PrototypeGeneratorImpl(int64_t classes, int64_t dim)
      : embedding(register_module("embedding", torch::nn::Embedding(classes, dim))),
        middle(register_module("middle", torch::nn::Linear(dim, dim))),
        fc(register_module("fc", torch::nn::Linear(dim, dim))) {}
  torch::Tensor forward() { return fc(torch::relu(middle(embedding->weight))); }  // [C, D]
  torch::nn::Embedding embedding;
  torch::nn::Linear middle, fc;
};
TORCH_MODULE(PrototypeGenerator);

class FedTgpServer final : public fl::ServerAlgorithm {
 public:
  FedTgpServer(const fl::MethodConfig& config, FedTgpParams params) : config_(config), params_(std::move(params)) {}

  absl::StatusOr<fl::proto::Message> Broadcast(const fl::RoundInfo& round) override {
    return fl::PrototypeMessage(global_, round.round, kType);
  }

  absl::Status Accumulate(const fl::proto::Message& reply) override {
    FGL_ASSIGN_OR_RETURN(nn::ClassPrototypes local, fl::ReadLocalPrototypes(reply, config_.num_classes, dim_, "fedtgp"));
    dim_ = local.prototypes.size(1);
    if (openfgl()) {  // every class, zero rows of classes it does not hold included (server.py:89-96)
      locals_.push_back(local.prototypes);
      labels_.push_back(torch::arange(config_.num_classes));
      return absl::OkStatus();
    }
    const torch::Tensor held = local.counts.gt(0).nonzero().squeeze(1);  // only the classes it holds
    locals_.push_back(local.prototypes.index_select(0, held));
    labels_.push_back(held);
    return absl::OkStatus();
  }

  absl::Status FinishRound(const fl::RoundInfo&) override {
    if (locals_.empty()) return absl::OkStatus();
    const torch::Tensor local = torch::cat(locals_), y = torch::cat(labels_);
    locals_.clear();
    labels_.clear();
    if (y.numel() == 0) return absl::OkStatus();
    if (!generator_) {
      torch::manual_seed(graph::Rng::Derive(config_.seed, "fedtgp/generator"));
      generator_ = PrototypeGenerator(config_.num_classes, dim_);
      optimizer_ = std::make_unique<nn::Adam>(
          generator_->parameters(), torch::optim::AdamOptions(params_.server_lr()).weight_decay(config_.spec.weight_decay()));
    }
    const double margin = std::min(openfgl() ? OpenFglGap(local, y) : Gap(local, y), params_.margin_cap());
    const torch::Tensor onehot = torch::one_hot(y, config_.num_classes).to(torch::kFloat);
    for (int e = 0; e < params_.server_epochs(); ++e) {
      optimizer_->zero_grad();
      const torch::Tensor g = generator_->forward();
      // ‖P − G_c‖ for every local prototype and class, [M, C]; clamped so the root has a gradient.
      // OpenFGL expands the square and takes the root unclamped (server.py:131-135).
      const torch::Tensor dist =
          openfgl() ? (local.pow(2).sum(1, true) - 2 * local.matmul(g.t()) + g.pow(2).sum(1, true).t()).sqrt()
                    : (local.unsqueeze(1) - g.unsqueeze(0)).pow(2).sum(-1).clamp_min(1e-12).sqrt();
      torch::nn::functional::cross_entropy(-(dist + margin * onehot), y).backward();
      optimizer_->step();
    }
    torch::NoGradGuard no_grad;
    // OpenFGL sends every class's prototype (server.py:144-145), ours only the classes seen.
    global_ = {generator_->forward().detach(),
               openfgl() ? torch::ones({config_.num_classes}, torch::kBool)
                         : torch::zeros({config_.num_classes}, torch::kBool).index_fill_(0, y, true)};
    return absl::OkStatus();
  }

  absl::StatusOr<fl::proto::Message> SaveState() const override {
    if (!generator_) return fl::proto::Message();
    fl::proto::Message m = fl::PrototypeMessage(global_, 0, kType);
    const fl::NamedTensors params = Params();
    fl::AddTensors(params, &m);
    fl::SaveAdamState(*optimizer_, params, "adam.", &m);
    (*m.mutable_scalars())["dim"] = static_cast<double>(dim_);
    return m;
  }

  absl::Status RestoreState(const fl::proto::Message& state) override {
    auto dim = state.scalars().find("dim");
    if (dim == state.scalars().end()) return absl::OkStatus();  // saved before any round
    dim_ = static_cast<int64_t>(dim->second);
    generator_ = PrototypeGenerator(config_.num_classes, dim_);
    optimizer_ = std::make_unique<nn::Adam>(
        generator_->parameters(), torch::optim::AdamOptions(params_.server_lr()).weight_decay(config_.spec.weight_decay()));
    FGL_RETURN_IF_ERROR(fl::LoadTensors(state, Params()));
    FGL_ASSIGN_OR_RETURN(auto tensors, fl::DecodeTensors(state));
    FGL_RETURN_IF_ERROR(fl::RestoreAdamState(state, tensors, Params(), "adam.", "fedtgp server", optimizer_.get()));
    FGL_ASSIGN_OR_RETURN(global_, fl::ReadGlobalPrototypes(state));
    return absl::OkStatus();
  }

 private:
  bool openfgl() const { return params_.server() == FedTgpParams::OPENFGL; }

  fl::NamedTensors Params() const {
    fl::NamedTensors out;
    for (const auto& p : generator_->named_parameters()) out.emplace_back(p.key(), p.value());
    return out;
  }

  // The largest over classes of the distance from a class's averaged local prototype to the
  // nearest other class's (classes held by no client left out; 0 with fewer than two classes).
  double Gap(const torch::Tensor& local, const torch::Tensor& y) const {
    const torch::Tensor counts = torch::zeros({config_.num_classes}).index_add_(0, y, torch::ones({y.size(0)}));
    const torch::Tensor held = counts.gt(0).nonzero().squeeze(1);
    if (held.numel() < 2) return 0;
    const torch::Tensor mean = (torch::zeros({config_.num_classes, local.size(1)}).index_add_(0, y, local) /
                                counts.clamp_min(1).unsqueeze(1))
                                   .index_select(0, held);
    torch::Tensor d = torch::cdist(mean, mean);
    d.fill_diagonal_(std::numeric_limits<float>::infinity());
    return std::get<0>(d.min(1)).max().item<double>();
  }

  // OpenFGL's margin gap (server.py:99-118), its bug kept: the per-class sums are divided by
  // every class's count in turn, i.e. by (clients)^(classes). A class's gap starts at 1e9; one
  // still above 1e8 (a single class) becomes the smallest gap.
  double OpenFglGap(const torch::Tensor& local, const torch::Tensor& y) const {
    const int64_t c = config_.num_classes;
    torch::Tensor avg = torch::zeros({c, local.size(1)}).index_add_(0, y, local);
    const torch::Tensor counts = torch::bincount(y, /*weights=*/{}, c);
    for (int64_t k = 0; k < c; ++k) avg.div_(counts[k].item<int64_t>());
    torch::Tensor gap = torch::full({c}, 1e9);
    if (c > 1) {
      torch::Tensor d = (avg.unsqueeze(1) - avg.unsqueeze(0)).norm(2, -1);
      d.fill_diagonal_(1e9);
      gap = torch::minimum(gap, std::get<0>(d.min(1)));
    }
    gap = torch::where(gap > 1e8, gap.min(), gap);
    return gap.max().item<double>();
  }

  fl::MethodConfig config_;
  FedTgpParams params_;
  int64_t dim_ = 0;
  PrototypeGenerator generator_{nullptr};
  std::unique_ptr<torch::optim::Adam> optimizer_;
  fl::GlobalPrototypes global_;
  std::vector<torch::Tensor> locals_, labels_;
};

absl::StatusOr<std::unique_ptr<fl::ClientAlgorithm>> MakeClient(std::shared_ptr<const fl::ClientData> data,
                                                                 const fl::MethodConfig& config) {
  FGL_ASSIGN_OR_RETURN(FedTgpParams params, fl::MethodParams<FedTgpParams>(config));
  return fl::PrototypeClient::Make(std::move(data), config, params.proto_weight(), kType, params.embedding_dropout());
}

absl::StatusOr<std::unique_ptr<fl::ServerAlgorithm>> MakeServer(const fl::MethodConfig& config) {
  FGL_ASSIGN_OR_RETURN(FedTgpParams params, fl::MethodParams<FedTgpParams>(config));
  return std::unique_ptr<fl::ServerAlgorithm>(new FedTgpServer(config, std::move(params)));
}

}  // namespace

// Version 2: each client's model initialised from its own seed (version 1: one seed for all).
FGL_REGISTER_METHOD("fedtgp", MakeClient, MakeServer, {fl::TypedParams<FedTgpParams>()}, 2);

}  // namespace fgl::methods::fedtgp
