// FedEgo (Zhang et al. 2022; seeds_fedego.md §4). Each round:
//   client i: mixes the server's Φ_g into its Φ_i with λ_i = (EMD(P_i, P_g) / 2)^γ (Eqs. 13–15)
//             and takes the averaged reduction layers Θ_g (Eqs. 11–12); trains Θ_i and Φ_i on
//             mini-batches of its ego-trees (Eq. 2); uploads Θ_i and its mashed ego-graphs
//             (Eq. 8): per chunk of `batch` training nodes, the position-wise mean of their
//             reduction embeddings and one-hot labels.
//   server:   Θ_g = (1/N) Σ_i Θ_i; trains its own Φ_g on this round's mashed ego-graphs with
//             soft-label cross-entropy at the centre; P_g = their mean label (Eq. 3).
// Clients are scored with their own Θ_i and Φ_i mixed with the latest Φ_g (eval.model
// "personalized"), as the official code evaluates after the mixing. Round 1 starts from the mean
// of the clients' independent initial Θ_i, uploaded once before it.
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "fl/aggregate/weighted_mean.h"
#include "fl/local_model.h"
#include "fl/model_average_server.h"
#include "fl/optimizer_state.h"
#include "fl/registry.h"
#include "graph/ego_graph.h"
#include "graph/random.h"
#include "methods/fedego/fedego.pb.h"
#include "methods/fedego/loss.h"
#include "methods/fedego/mixup.h"
#include "nn/adam.h"
#include "nn/losses/losses.h"
#include "nn/models/ego_sage.h"
#include "nn/ops/dropout.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::methods::fedego {
namespace {

constexpr char kInit[] = "fedego.init";
constexpr char kUpload[] = "fedego.upload";
constexpr char kBroadcast[] = "fedego.broadcast";
constexpr char kPhi[] = "phi.";  // Φ_g's tensors in a broadcast
constexpr char kEmbeddings[] = "mashed.embeddings";
constexpr char kLabels[] = "mashed.labels";
constexpr char kGlobalLabels[] = "p_global";

// FedEgoParams with the note's defaults filled in.
struct Options {
  double gamma = 0.25;
  bool fixed = false;
  double fixed_lambda = 0;
  bool mixup = true, reduction_averaging = true, reshuffle_chunks = false;
  int server_epochs = 5;
  double server_epoch_fraction = 0.2;
  FedEgoParams::ServerTree server_tree = FedEgoParams::RESAMPLE;
  FedEgoParams::GlobalDistribution global_distribution = FedEgoParams::ALL_POSITIONS;
  FedEgoParams::Loss loss = FedEgoParams::CROSS_ENTROPY;
  // λ ≡ 0 ("w/o PL"): no mashed ego-graphs and no server training at all.
  bool personalise() const { return !(fixed && fixed_lambda == 0); }
};

Options Resolve(const FedEgoParams& p) {
  Options o;
  o.gamma = p.gamma();
  o.fixed = p.has_fixed_lambda();
  o.fixed_lambda = p.fixed_lambda();
  o.mixup = p.mixup();
  o.reduction_averaging = p.reduction_averaging();
  o.reshuffle_chunks = p.reshuffle_chunks();
  o.server_epochs = p.server_epochs();
  o.server_epoch_fraction = p.server_epoch_fraction();
  o.server_tree = p.server_tree();
  o.global_distribution = p.global_distribution();
  o.loss = p.loss();
  return o;
}

absl::StatusOr<nn::EgoSageOptions> EgoModel(const fl::MethodConfig& config) {
  absl::StatusOr<nn::EgoSageOptions> o = nn::ParseEgoSageSpec(config.model_spec);
  if (!o.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("fedego needs an ego_sage model, not '", config.model_spec, "': ", o.status().message()));
  }
  return o;
}

// Φ: the SAGE layers and the classifier.
fl::NamedTensors Personal(const nn::GnnModel& model) {
  fl::NamedTensors out = model.named_group_parameters("body");
  for (auto& item : model.named_group_parameters("head")) out.push_back(std::move(item));
  return out;
}

class FedEgoClient final : public fl::ClientAlgorithm,
                           public fl::PreparingClient,
                           public fl::GraphScoringClient,
                           public fl::ReportingClient {
 public:
  static absl::StatusOr<std::unique_ptr<fl::ClientAlgorithm>> Make(std::shared_ptr<const fl::ClientData> data,
                                                                   const fl::MethodConfig& config) {
    FGL_ASSIGN_OR_RETURN(FedEgoParams params, fl::MethodParams<FedEgoParams>(config));
    FGL_RETURN_IF_ERROR(EgoModel(config).status());
    // Clients are initialised independently (§4); round 1 averages their Θ_i.
    FGL_ASSIGN_OR_RETURN(auto model, fl::LocalModel::Create(
                                         data, config, graph::Rng::Derive(config.seed, absl::StrCat("fedego/client/", data->id))));
    return std::unique_ptr<fl::ClientAlgorithm>(new FedEgoClient(std::move(data), config, Resolve(params), std::move(model)));
  }

  // Θ_i's initialisation, for the server's average, only when Θ is averaged.
  fl::PreparingClient* preparing() override { return options_.reduction_averaging ? this : nullptr; }
  fl::GraphScoringClient* graph_scoring() override { return this; }
  const fl::ReportingClient* reporting() const override { return this; }

  absl::StatusOr<fl::proto::Message> Prepare() override {
    fl::proto::Message m = fl::ServerMessage(model_->Parameters("reduction"), {}, kInit);
    m.mutable_header()->set_sender(data_->id);
    return m;
  }

  absl::StatusOr<fl::proto::Message> Train(const fl::proto::Message& global, const fl::RoundInfo& round) override {
    FGL_ASSIGN_OR_RETURN(auto tensors, fl::DecodeTensors(global));
    mixed_.reset();
    FGL_RETURN_IF_ERROR(Mix(tensors, Personal(model_->model())));
    if (options_.reduction_averaging) {
      FGL_ASSIGN_OR_RETURN(fl::NamedTensors theta,
                           fl::MatchTensors(tensors, model_->Parameters("reduction"), "fedego broadcast"));
      torch::NoGradGuard no_grad;
      const fl::NamedTensors mine = model_->Parameters("reduction");
      for (size_t i = 0; i < mine.size(); ++i) mine[i].second.copy_(theta[i].second);
    }
    FGL_RETURN_IF_ERROR(TrainLocally(round.seed));

    fl::proto::Message reply;
    reply.mutable_header()->set_round(round.round);
    reply.mutable_header()->set_sender(data_->id);
    reply.mutable_header()->set_type(kUpload);
    if (options_.reduction_averaging) fl::AddTensors(model_->Parameters("reduction"), &reply);
    if (options_.personalise()) {
      const MashedEgoGraphs mashed = Mash(round);
      fl::AddTensors({{kEmbeddings, mashed.embeddings}, {kLabels, mashed.labels}}, &reply);
    }
    fl::AddTrainLoss(model_->last_loss(), &reply);
    return reply;
  }

  std::map<std::string, double> Reports() const override {
    std::map<std::string, double> out = label_shares_;
    if (mixed_) {
      out["lambda"] = mixed_->lambda;
      out["weight_divergence"] = mixed_->weight_divergence;
    }
    return out;
  }

  // Θ_i with Φ_i mixed with the broadcast's Φ_g (when it carries one), without keeping the mix:
  // the next round's Train applies it.
  absl::StatusOr<torch::Tensor> Predict(const fl::proto::Message* global) override {
    return PredictMixed(global, *data_);
  }
  absl::StatusOr<torch::Tensor> PredictGraph(const fl::ClientData& graph, const fl::proto::Message* global) override {
    FGL_ASSIGN_OR_RETURN(torch::Tensor logits, PredictMixed(global, graph));
    LabelShares(graph, logits);
    return logits;
  }
  absl::StatusOr<fl::proto::Message> SaveState() const override { return model_->SaveState(); }
  absl::Status RestoreState(const fl::proto::Message& state) override { return model_->RestoreState(state); }

 private:
  FedEgoClient(std::shared_ptr<const fl::ClientData> data, const fl::MethodConfig& config, Options options,
               std::unique_ptr<fl::LocalModel> model)
      : data_(std::move(data)), config_(config), options_(options), model_(std::move(model)),
        ego_(dynamic_cast<nn::EgoSage*>(&model_->model())),
        p_local_(LabelDistribution(data_->labels, config.num_classes)) {
    CHECK(ego_ != nullptr) << "fedego: the model is not an EgoSage";
  }

  // Step 2: local training, with the authors' loss in place of the cross-entropy when asked.
  absl::Status TrainLocally(uint64_t seed) {
    fl::LocalModel::Hooks hooks;
    if (options_.loss == FedEgoParams::AUTHORS_CODE) {
      hooks.task_loss = [this](const torch::Tensor& logits, const torch::Tensor& labels) {
        return AuthorsCodeLoss(logits, torch::one_hot(labels, config_.num_classes).to(logits.dtype()));
      };
    }
    return model_->Train(config_.spec.local_epochs(), seed, hooks);
  }

  // Eqs. 13–15 on `phi` (the model's Φ tensors or copies of them); nothing when the broadcast
  // carries no Φ_g yet (round 1) or λ ≡ 0.
  absl::Status Mix(const std::map<std::string, torch::Tensor>& tensors, const fl::NamedTensors& phi) {
    if (!options_.personalise() || !tensors.count(kGlobalLabels)) return absl::OkStatus();
    const torch::Tensor& p_global = tensors.at(kGlobalLabels);
    if (p_global.sizes() != p_local_.sizes() || !fl::AllFinite(p_global)) {
      return absl::InvalidArgumentError(absl::StrCat("fedego broadcast: p_global must be [", p_local_.size(0), "], finite"));
    }
    const double lambda = options_.fixed ? options_.fixed_lambda
                                         : MixingCoefficient(LabelEmd(p_local_, p_global), options_.gamma);
    FGL_ASSIGN_OR_RETURN(fl::NamedTensors phi_global, fl::MatchTensors(tensors, fl::WithPrefix(kPhi, phi), "fedego broadcast"));
    torch::NoGradGuard no_grad;
    double diff2 = 0, global2 = 0;
    for (size_t i = 0; i < phi.size(); ++i) {
      const torch::Tensor g = phi_global[i].second.to(phi[i].second.device());
      phi[i].second.mul_(1.0 - lambda).add_(g, lambda);
      diff2 += (phi[i].second - g).to(torch::kDouble).pow(2).sum().item<double>();
      global2 += g.to(torch::kDouble).pow(2).sum().item<double>();
    }
    // Def. 4.2 (Fig. 5), of the mixed Φ_i: at training, the Φ_i the round trains from; at
    // evaluation, the Φ_i it scores (after the last round, against that round's Φ_g).
    mixed_ = Mixed{lambda, global2 > 0 ? std::sqrt(diff2 / global2) : std::numeric_limits<double>::quiet_NaN()};
    return absl::OkStatus();
  }

  absl::StatusOr<torch::Tensor> PredictMixed(const fl::proto::Message* global, const fl::ClientData& graph) {
    if (global == nullptr) return model_->PredictOn(graph);
    FGL_ASSIGN_OR_RETURN(auto tensors, fl::DecodeTensors(*global));
    const fl::NamedTensors phi = Personal(model_->model());
    std::vector<torch::Tensor> saved;
    for (const auto& [name, t] : phi) saved.push_back(t.detach().clone());
    absl::Status mixed = Mix(tensors, phi);
    torch::Tensor logits;
    if (mixed.ok()) logits = model_->PredictOn(graph);
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < phi.size(); ++i) phi[i].second.copy_(saved[i]);
    FGL_RETURN_IF_ERROR(mixed);
    return logits;
  }

  // Fig. 7: the label shares of the client's own labels (P_i), of the scored graph's truth (the
  // global test) and of the client's predictions on it, from the evaluation's logits (the mixed
  // model it scores), and each one's total variation distance to the truth.
  void LabelShares(const fl::ClientData& graph, const torch::Tensor& logits) {
    const torch::Tensor nodes = graph.split.test.nonzero().flatten().to(logits.device());
    if (nodes.numel() == 0) return;
    const int64_t c = config_.num_classes;
    const torch::Tensor truth = LabelDistribution(graph.labels.to(logits.device()).index_select(0, nodes).cpu(), c);
    const torch::Tensor predicted = LabelDistribution(logits.index_select(0, nodes).argmax(1).cpu(), c);
    const torch::Tensor local = p_local_.cpu();
    auto tv = [&](const torch::Tensor& p) { return 0.5 * (p - truth).abs().sum().item<double>(); };
    label_shares_ = {{"label_tv_local", tv(local)}, {"label_tv_predicted", tv(predicted)}};
    for (int64_t k = 0; k < c; ++k) {
      label_shares_[absl::StrCat("local_share.", k)] = local[k].item<double>();
      label_shares_[absl::StrCat("global_share.", k)] = truth[k].item<double>();
      label_shares_[absl::StrCat("predicted_share.", k)] = predicted[k].item<double>();
    }
  }

  // Step 3: the training pool's ego-trees under the post-training Θ_i, mashed per chunk.
  MashedEgoGraphs Mash(const fl::RoundInfo& round) {
    torch::NoGradGuard no_grad;
    ego_->eval();
    const torch::Tensor r = ego_->Reduce(*data_->features, *data_->view);
    ego_->train();
    std::vector<int64_t> pool = fl::MaskedNodes(data_->split.train);
    if (options_.reshuffle_chunks) {
      graph::Rng order(round.seed, "fedego/chunks");
      order.Shuffle(pool);
    }
    graph::Rng rng(round.seed, "fedego/mash");
    const nn::EgoSageOptions& e = ego_->options();
    const torch::Tensor trees = graph::SampleEgoTrees(data_->data.graph, pool, e.layers, e.fanout, rng);
    return MashEgoGraphs(trees, r.to(torch::kCPU), data_->labels.to(torch::kCPU), config_.num_classes, e.batch,
                         /*first_only=*/!options_.mixup);
  }

  std::shared_ptr<const fl::ClientData> data_;
  fl::MethodConfig config_;
  Options options_;
  std::unique_ptr<fl::LocalModel> model_;
  nn::EgoSage* ego_;
  torch::Tensor p_local_;  // Eq. 3 over all local labels, test included [A7]
  // The last mixing (Step 6): λ_i and the weight divergence it leaves (reported beside the reply).
  struct Mixed {
    double lambda = 0, weight_divergence = 0;
  };
  std::optional<Mixed> mixed_;
  std::map<std::string, double> label_shares_;  // Fig. 7, of the last scoring of the global test
};

class FedEgoServer final : public fl::ServerAlgorithm, public fl::PreparedServer {
 public:
  static absl::StatusOr<std::unique_ptr<fl::ServerAlgorithm>> Make(const fl::MethodConfig& config) {
    FGL_ASSIGN_OR_RETURN(FedEgoParams params, fl::MethodParams<FedEgoParams>(config));
    FGL_ASSIGN_OR_RETURN(nn::EgoSageOptions e, EgoModel(config));
    torch::manual_seed(graph::Rng::Derive(config.seed, "fedego/server"));
    auto phi = std::make_shared<nn::EgoSage>(e, /*in_features=*/0, config.num_classes);
    return std::unique_ptr<fl::ServerAlgorithm>(new FedEgoServer(config, Resolve(params), std::move(phi)));
  }

  absl::Status AcceptPreparation(const fl::proto::Message& m) override {
    if (m.header().type() != kInit) return absl::InvalidArgumentError(absl::StrCat("expected a '", kInit, "' message"));
    return AddTheta(m);
  }
  absl::Status FinishPreparation() override { return AverageTheta(); }
  // Θ averaged from the preparations (a no-op when the clients send none).
  fl::PreparedServer* prepared() override { return this; }

  absl::StatusOr<fl::proto::Message> Broadcast(const fl::RoundInfo& round) override {
    fl::NamedTensors out = theta_;
    if (trained_) {
      for (auto& item : fl::WithPrefix(kPhi, Personal(*phi_))) out.push_back(std::move(item));
      out.emplace_back(kGlobalLabels, p_global_);
    }
    return fl::ServerMessage(out, round, kBroadcast);
  }

  absl::Status Accumulate(const fl::proto::Message& reply) override {
    if (reply.header().type() != kUpload) {
      return absl::InvalidArgumentError(absl::StrCat("expected a '", kUpload, "' reply, got '", reply.header().type(), "'"));
    }
    if (options_.reduction_averaging) FGL_RETURN_IF_ERROR(AddTheta(reply));
    if (!options_.personalise()) return absl::OkStatus();
    FGL_ASSIGN_OR_RETURN(auto tensors, fl::DecodeTensors(reply));
    const std::string who = absl::StrCat("client ", reply.header().sender());
    if (!tensors.count(kEmbeddings) || !tensors.count(kLabels)) {
      return absl::InvalidArgumentError(absl::StrCat(who, ": no mashed ego-graphs in the reply"));
    }
    const torch::Tensor& x = tensors.at(kEmbeddings);
    const torch::Tensor& y = tensors.at(kLabels);
    const int64_t s = phi_->tree_size();
    if (x.dim() != 3 || x.size(1) != s || x.size(2) != phi_->options().hidden || y.dim() != 3 ||
        y.size(0) != x.size(0) || y.size(1) != s || y.size(2) != config_.num_classes ||
        x.scalar_type() != torch::kFloat32 || y.scalar_type() != torch::kFloat32) {
      return absl::InvalidArgumentError(absl::StrCat(who, ": mashed ego-graphs must be float [M, ", s, ", ",
                                                     phi_->options().hidden, "] and [M, ", s, ", ", config_.num_classes, "]"));
    }
    if (!fl::AllFinite(x) || !fl::AllFinite(y) || y.min().item<float>() < 0 || y.max().item<float>() > 1) {
      return absl::InvalidArgumentError(absl::StrCat(who, ": mashed ego-graphs not finite or labels outside [0, 1]"));
    }
    embeddings_.push_back(x);
    labels_.push_back(y);
    return absl::OkStatus();
  }

  absl::Status FinishRound(const fl::RoundInfo& round) override {
    FGL_RETURN_IF_ERROR(AverageTheta());
    if (!embeddings_.empty()) {
      const torch::Tensor x = torch::cat(embeddings_).to(config_.device);
      const torch::Tensor y = torch::cat(labels_).to(config_.device);
      embeddings_.clear();  // this round's only [A4]
      labels_.clear();
      TrainPhi(x, y, round);
      p_global_ = (options_.global_distribution == FedEgoParams::CENTRES ? y.select(1, 0).mean(0)
                                                                          : y.reshape({-1, y.size(2)}).mean(0))
                      .to(torch::kFloat64)
                      .cpu();
      trained_ = true;
    }
    return absl::OkStatus();
  }

  absl::StatusOr<fl::proto::Message> SaveState() const override {
    fl::proto::Message m;
    m.mutable_header()->set_type("fedego.server_state");
    fl::AddTensors(theta_, &m);
    fl::AddTensors(fl::WithPrefix(kPhi, Personal(*phi_)), &m);
    if (trained_) fl::AddTensors({{kGlobalLabels, p_global_}}, &m);
    fl::SaveAdamState(*adam_, fl::WithPrefix(kPhi, Personal(*phi_)), "adam.", &m);
    return m;
  }

  absl::Status RestoreState(const fl::proto::Message& m) override {
    FGL_ASSIGN_OR_RETURN(auto tensors, fl::DecodeTensors(m));
    theta_.clear();
    for (const auto& [name, unused] : ThetaLike()) {
      if (tensors.count(name)) theta_.emplace_back(name, tensors.at(name));
    }
    const fl::NamedTensors phi = fl::WithPrefix(kPhi, Personal(*phi_));
    FGL_ASSIGN_OR_RETURN(fl::NamedTensors saved, fl::MatchTensors(tensors, phi, "fedego server state"));
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < phi.size(); ++i) phi[i].second.copy_(saved[i].second);
    trained_ = tensors.count(kGlobalLabels) > 0;
    if (trained_) p_global_ = tensors.at(kGlobalLabels);
    return fl::RestoreAdamState(m, tensors, phi, "adam.", "fedego server", adam_.get());
  }

 private:
  FedEgoServer(const fl::MethodConfig& config, Options options, std::shared_ptr<nn::EgoSage> phi)
      : config_(config), options_(options), phi_(std::move(phi)) {
    phi_->to(config.device);
    adam_ = std::make_unique<nn::Adam>(
        phi_->parameters(), torch::optim::AdamOptions(config.spec.lr()).weight_decay(config.spec.weight_decay()));
  }

  // One client's Θ_i into the round's mean (Eq. 11, uniform weights).
  // Θ's tensors as the clients' models name and shape them (nn::EgoSage's "reduction" group).
  fl::NamedTensors ThetaLike() const {
    const int64_t d = config_.num_features, h = phi_->options().hidden;
    if (!phi_->options().sage_reduction) {
      return {{"reduction.weight", torch::zeros({d, h})}, {"reduction.bias", torch::zeros({h})}};
    }
    fl::NamedTensors like;
    for (const auto& [layer, in] : {std::pair<int, int64_t>{0, d}, {1, h}}) {
      const std::string prefix = absl::StrCat("reduction.", layer, ".");
      like.emplace_back(prefix + "lin_l.weight", torch::zeros({in, h}));
      like.emplace_back(prefix + "lin_l.bias", torch::zeros({h}));
      like.emplace_back(prefix + "lin_r.weight", torch::zeros({in, h}));
    }
    return like;
  }

  absl::Status AddTheta(const fl::proto::Message& m) {
    FGL_ASSIGN_OR_RETURN(auto tensors, fl::DecodeTensors(m));
    const fl::NamedTensors like = ThetaLike();
    FGL_ASSIGN_OR_RETURN(fl::NamedTensors theta,
                         fl::MatchTensors(tensors, like, absl::StrCat("client ", m.header().sender())));
    return theta_mean_->Accumulate(std::map<std::string, torch::Tensor>(theta.begin(), theta.end()), 1.0);
  }
  absl::Status AverageTheta() {
    if (!theta_mean_->CanReport()) return absl::OkStatus();
    FGL_ASSIGN_OR_RETURN(auto mean, std::move(*theta_mean_).Report());
    theta_mean_ = std::make_unique<fl::WeightedMean>();
    theta_.clear();
    for (const auto& [name, unused] : ThetaLike()) theta_.emplace_back(name, mean.at(name));
    return absl::OkStatus();
  }

  // Step 4: E_s epochs, each on a random fraction of the mashed ego-graphs in batches, the
  // soft-label loss (cross-entropy, or the authors' form) at the centre.
  void TrainPhi(const torch::Tensor& x, const torch::Tensor& y, const fl::RoundInfo& round) {
    nn::DropoutSeedScope dropout_stream(graph::Rng::Derive(round.seed, "fedego/server/dropout"));
    graph::Rng rng(round.seed, "fedego/server");
    const nn::EgoSageOptions& e = phi_->options();
    const int64_t m = x.size(0), s = x.size(1), h = x.size(2);
    const int64_t per_epoch = static_cast<int64_t>(options_.server_epoch_fraction * static_cast<double>(m));
    std::vector<int64_t> order(m);
    for (int64_t i = 0; i < m; ++i) order[i] = i;
    const torch::Tensor valid = torch::ones({std::min<int64_t>(e.batch, m), s}, torch::kBool).to(x.device());
    phi_->train();
    for (int epoch = 0; epoch < options_.server_epochs; ++epoch) {
      for (int64_t i = 0; i < per_epoch; ++i) std::swap(order[i], order[i + rng.UniformInt(m - i)]);
      for (int64_t begin = 0; begin < per_epoch; begin += e.batch) {
        const int64_t b = std::min<int64_t>(e.batch, per_epoch - begin);
        const torch::Tensor idx = torch::from_blob(order.data() + begin, {b}, torch::kInt64).clone().to(x.device());
        torch::Tensor trees = x.index_select(0, idx);
        if (options_.server_tree == FedEgoParams::RESAMPLE) {
          const torch::Tensor pos = graph::ResampleEgoTreePositions(e.layers, e.fanout, b, rng).to(x.device());
          trees = trees.gather(1, pos.unsqueeze(-1).expand({b, s, h}));
        }
        const torch::Tensor target = y.index_select(0, idx).select(1, 0);
        adam_->zero_grad();
        const nn::ModelOutput out = phi_->Personalise(trees, valid.narrow(0, 0, b));
        const torch::Tensor loss = options_.loss == FedEgoParams::AUTHORS_CODE ? AuthorsCodeLoss(out.logits, target)
                                                                               : nn::SoftCrossEntropy(out.logits, target);
        loss.backward();
        adam_->step();
      }
    }
  }

  fl::MethodConfig config_;
  Options options_;
  std::shared_ptr<nn::EgoSage> phi_;
  std::unique_ptr<torch::optim::Adam> adam_;
  fl::NamedTensors theta_;  // Θ_g
  std::unique_ptr<fl::WeightedMean> theta_mean_ = std::make_unique<fl::WeightedMean>();
  std::vector<torch::Tensor> embeddings_, labels_;  // this round's mashed ego-graphs
  torch::Tensor p_global_;
  bool trained_ = false;  // Φ_g has been trained at least once (then it is broadcast)
};

}  // namespace

FGL_REGISTER_METHOD("fedego", FedEgoClient::Make, FedEgoServer::Make, {fl::TypedParams<FedEgoParams>()}, 3);  // ranges on the fields

}  // namespace fgl::methods::fedego
