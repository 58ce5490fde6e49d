// FedGCN (Yao & Joe-Wong 2022) as FedEgo's baselines run it (seeds_fedego.md §9.6; "fedgcn_yao"
// so that it is not taken for the FedMpa paper's "FedGCN", a FedAvg of a GCN).
//   Once, before round 1: each client uploads Â_i X_i (Â = D^-1 (A + I) on its subgraph) with
//   its nodes' dataset ids; the server averages the rows per id over every client holding the
//   node and sends each client its rows, which replace the client's features.
//   Each round: FedAvg of a 2-layer GCN (the table's model "gcn:norm=row,out_act=relu"), each
//   local epoch one full-batch step on a random share of the training nodes.
// The global test graph is scored on its own Â_test X_test, as the code does.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <memory>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fl/local_model.h"
#include "fl/model_average_server.h"
#include "fl/registry.h"
#include "fl/tensor_codec.h"
#include "fl/typed_state.h"
#include "glog/logging.h"
#include "graph/csr_graph.h"
#include "graph/random.h"
#include "methods/fedgcn_yao/code_as_run.h"
#include "methods/fedgcn_yao/fedgcn_yao.pb.h"
#include "nn/conv/gcn_conv.h"
#include "nn/ops/dropout.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::methods::fedgcn_yao {
namespace {

constexpr char kType[] = "fedgcn_yao.weights";
constexpr char kNeighbourMeans[] = "fedgcn_yao.neighbour_means";
constexpr char kFeaturesPrefix[] = "averaged/";  // "averaged/features" beside the weights

std::string Shape(const torch::Tensor& t) { return c10::str(t.sizes()); }

// D^-1 (A + I) X on the graph's own topology.
torch::Tensor NeighbourMeans(const fl::ClientData& graph) {
  torch::NoGradGuard no_grad;
  return nn::RowPropagate(graph.features->dense(), *graph.view);
}

}  // namespace

graph::CsrGraph CodeAdjacency(const graph::CsrGraph& g) {
  const int64_t n = g.num_nodes();
  const int64_t* ptr = g.row_ptr_data();
  const torch::Tensor col = g.col().to(torch::kCPU).contiguous();
  const int64_t* c = col.data_ptr<int64_t>();
  for (int64_t u = 0; u < n; ++u) {
    int64_t v = n;
    for (int64_t e = ptr[u]; e < ptr[u + 1]; ++e) {
      if (c[e] != u) v = std::min(v, c[e]);
    }
    if (v == n) continue;
    auto one = graph::CsrFromEdges(n, {u, v}, {v, u});
    CHECK(one.ok()) << one.status();  // two valid entries
    return *std::move(one);
  }
  return graph::CsrGraph::Empty(n);
}

torch::Tensor CodeLoss(const torch::Tensor& output, const torch::Tensor& labels, const torch::Tensor& nodes,
                       int64_t num_nodes) {
  const torch::Tensor p = torch::softmax(torch::softmax(output, 1), 1).index_select(0, nodes);
  const torch::Tensor p_y = p.gather(1, labels.index_select(0, nodes).unsqueeze(1)).squeeze(1);
  return -torch::log(p_y + 1e-7).sum() / static_cast<double>(num_nodes);
}

namespace {

// A copy of `graph` whose topology is CodeAdjacency's one edge.
absl::StatusOr<std::shared_ptr<fl::ClientData>> WithCodeAdjacency(const fl::ClientData& graph) {
  auto copy = std::make_shared<fl::ClientData>(graph);
  copy->data.graph = CodeAdjacency(graph.data.graph);
  FGL_ASSIGN_OR_RETURN(nn::GraphView view, nn::GraphView::Create(copy->data.graph, graph.view->device()));
  copy->view = std::make_shared<nn::GraphView>(std::move(view));
  return copy;
}

class FedGcnYaoClient final : public fl::ModelClient, public fl::PreparingClient {
 public:
  static absl::StatusOr<std::unique_ptr<fl::ClientAlgorithm>> Make(std::shared_ptr<const fl::ClientData> data,
                                                                   const fl::MethodConfig& config) {
    FGL_ASSIGN_OR_RETURN(const FedGcnYaoParams p, fl::MethodParams<FedGcnYaoParams>(config));
    if (static_cast<int64_t>(data->node_ids.size()) != data->data.num_nodes()) {
      return absl::FailedPreconditionError(absl::StrCat("fedgcn_yao: client ", data->id, " has ", data->node_ids.size(),
                                                        " node ids for ", data->data.num_nodes(), " nodes"));
    }
    std::shared_ptr<fl::ClientData> own;  // its features are replaced in round 1
    if (p.code_adjacency()) {
      FGL_ASSIGN_OR_RETURN(own, WithCodeAdjacency(*data));
    } else {
      own = std::make_shared<fl::ClientData>(*data);
    }
    // Without averaging each client keeps its own initialisation, as the code's separate models.
    const uint64_t init_seed = p.load_average() ? config.seed
                                                : graph::Rng::Derive(config.seed, absl::StrCat("fedgcn_yao/client/", data->id));
    FGL_ASSIGN_OR_RETURN(auto model, fl::LocalModel::Create(own, config, init_seed));
    return std::unique_ptr<fl::ClientAlgorithm>(new FedGcnYaoClient(own, config, std::move(model), p));
  }

  fl::PreparingClient* preparing() override { return this; }
  absl::StatusOr<fl::proto::Message> Prepare() override {
    fl::proto::Message m;
    m.mutable_header()->set_sender(own_->id);
    m.mutable_header()->set_type(kNeighbourMeans);
    fl::AddTensors({{"means", NeighbourMeans(*own_).cpu()}, {"ids", torch::tensor(own_->node_ids, torch::kInt64)}}, &m);
    return m;
  }

  absl::StatusOr<fl::proto::Message> Train(const fl::proto::Message& from_server, const fl::RoundInfo& round) override {
    fl::proto::Message weights;
    FGL_ASSIGN_OR_RETURN(auto averaged, fl::SplitTensors(kFeaturesPrefix, from_server, &weights));
    if (auto it = averaged.find("features"); it != averaged.end()) FGL_RETURN_IF_ERROR(UseFeatures(it->second));
    if (!averaged_) {
      return absl::FailedPreconditionError(absl::StrCat("fedgcn_yao: client ", own_->id, " never received its averaged features"));
    }
    if (p_.load_average()) FGL_RETURN_IF_ERROR(fl::LoadTensors(weights, model_->SharedParameters()));
    // Each epoch: one step on a random floor(n_i * fraction) of the training nodes.
    std::vector<int64_t> pool = fl::MaskedNodes(own_->split.train);
    const int64_t per_epoch = std::min<int64_t>(
        static_cast<int64_t>(p_.epoch_fraction() * static_cast<double>(own_->data.num_nodes())), pool.size());
    if (per_epoch <= 0) {
      return absl::FailedPreconditionError(absl::StrCat("fedgcn_yao: client ", own_->id, " has no training node to learn from"));
    }
    graph::Rng rng(round.seed, "fedgcn_yao/mask");
    nn::DropoutSeedScope dropout(graph::Rng::Derive(round.seed, "fedgcn_yao/dropout"));
    for (int e = 0; e < config_.spec.local_epochs(); ++e) {
      rng.ShuffleFront(pool, per_epoch);
      const torch::Tensor nodes =
          torch::tensor(std::vector<int64_t>(pool.begin(), pool.begin() + per_epoch), torch::kInt64).to(own_->labels.device());
      FGL_RETURN_IF_ERROR(model_->Step([&](nn::GnnModel& m) {
        const nn::ModelOutput out = m.forward(*own_->features, *own_->view);
        if (p_.code_loss()) return CodeLoss(out.logits, own_->labels, nodes, own_->data.num_nodes());
        return torch::nn::functional::cross_entropy(out.logits.index_select(0, nodes), own_->labels.index_select(0, nodes));
      }));
    }
    fl::proto::Message reply =
        fl::ModelReply(model_->SharedParameters(), own_->data.num_nodes(), own_->id, round, kType);
    fl::AddTrainLoss(model_->last_loss(), &reply);
    fl::AddWeight(p_.weighting(), &reply);
    return reply;
  }

  // The global test graph on its own neighbour means (computed once).
  absl::StatusOr<torch::Tensor> PredictGraph(const fl::ClientData& graph, const fl::proto::Message* global) override {
    if (global != nullptr && p_.load_average()) FGL_RETURN_IF_ERROR(fl::LoadTensors(*global, model_->SharedParameters()));
    if (!test_graph_ || test_graph_source_ != &graph) {
      std::shared_ptr<fl::ClientData> g;
      if (p_.code_adjacency()) {
        FGL_ASSIGN_OR_RETURN(g, WithCodeAdjacency(graph));
      } else {
        g = std::make_shared<fl::ClientData>(graph);
      }
      g->features = std::make_shared<nn::NodeFeatures>(NeighbourMeans(*g));
      test_graph_ = std::move(g);
      test_graph_source_ = &graph;
    }
    return model_->PredictOn(*test_graph_);
  }

  absl::StatusOr<fl::proto::Message> SaveState() const override {
    fl::proto::Message state = model_->SaveState();
    if (averaged_) fl::AddTensors({{absl::StrCat(kFeaturesPrefix, "features"), own_->features->dense().cpu()}}, &state);
    return state;
  }
  absl::Status RestoreState(const fl::proto::Message& state) override {
    fl::proto::Message model_state;
    FGL_ASSIGN_OR_RETURN(auto averaged, fl::SplitTensors(kFeaturesPrefix, state, &model_state));
    FGL_RETURN_IF_ERROR(model_->RestoreState(model_state));
    if (auto it = averaged.find("features"); it != averaged.end()) FGL_RETURN_IF_ERROR(UseFeatures(it->second));
    return absl::OkStatus();
  }

 private:
  FedGcnYaoClient(std::shared_ptr<fl::ClientData> own, const fl::MethodConfig& config,
                  std::unique_ptr<fl::LocalModel> model, FedGcnYaoParams p)
      : ModelClient(own, config, std::move(model)), own_(std::move(own)), p_(std::move(p)) {}

  absl::Status UseFeatures(const torch::Tensor& x) {
    const std::vector<int64_t> want = {own_->data.num_nodes(), own_->data.num_features()};
    if (x.sizes() != want || x.scalar_type() != torch::kFloat32 || !torch::isfinite(x).all().item<bool>()) {
      return absl::InvalidArgumentError(absl::StrCat("fedgcn_yao: client ", own_->id, ": averaged features ", Shape(x),
                                                     " are not finite float32 [", want[0], ", ", want[1], "]"));
    }
    own_->features = std::make_shared<nn::NodeFeatures>(x.to(own_->labels.device()));
    averaged_ = true;
    return absl::OkStatus();
  }

  std::shared_ptr<fl::ClientData> own_;
  FedGcnYaoParams p_;
  bool averaged_ = false;
  std::shared_ptr<const fl::ClientData> test_graph_;
  const fl::ClientData* test_graph_source_ = nullptr;
};

class FedGcnYaoServer final : public fl::ServerAlgorithm, public fl::PreparedServer, public fl::PersonalisedServer {
 public:
  static absl::StatusOr<std::unique_ptr<fl::ServerAlgorithm>> Make(const fl::MethodConfig& config) {
    FGL_ASSIGN_OR_RETURN(const FedGcnYaoParams p, fl::MethodParams<FedGcnYaoParams>(config));
    FGL_ASSIGN_OR_RETURN(auto average, fl::ModelAverageServer::Create(config, kType, {fl::WeightScalar(p.weighting())}));
    return std::unique_ptr<fl::ServerAlgorithm>(
        new FedGcnYaoServer(std::move(average), config.spec.clients(), config.num_features));
  }

  fl::PreparedServer* prepared() override { return this; }
  absl::Status AcceptPreparation(const fl::proto::Message& m) override {
    const int k = m.header().sender();
    const std::string who = absl::StrCat("fedgcn_yao preparation from client ", k);
    if (m.header().type() != kNeighbourMeans) return absl::InvalidArgumentError(absl::StrCat(who, ": type '", m.header().type(), "'"));
    if (k < 0 || k >= n_ || uploads_.count(k)) return absl::InvalidArgumentError(absl::StrCat(who, ": unknown or repeated sender"));
    FGL_ASSIGN_OR_RETURN(auto t, fl::DecodeTensors(m));
    auto means = t.find("means"), ids = t.find("ids");
    if (t.size() != 2 || means == t.end() || ids == t.end()) return absl::InvalidArgumentError(absl::StrCat(who, ": needs exactly 'means' and 'ids'"));
    const torch::Tensor& x = means->second;
    const torch::Tensor& id = ids->second;
    if (id.scalar_type() != torch::kInt64 || id.dim() != 1 || x.scalar_type() != torch::kFloat32 || x.dim() != 2 ||
        x.size(0) != id.size(0) || x.size(1) != width_) {
      return absl::InvalidArgumentError(absl::StrCat(who, ": means ", Shape(x), " and ids ", Shape(id),
                                                     " are not float32 [n, ", width_, "] and int64 [n]"));
    }
    if (!torch::isfinite(x).all().item<bool>()) return absl::InvalidArgumentError(absl::StrCat(who, ": means not finite"));
    if (id.numel() > 0 && (id.min().item<int64_t>() < 0 || std::get<0>(torch::_unique(id)).numel() != id.numel())) {
      return absl::InvalidArgumentError(absl::StrCat(who, ": ids must be distinct and >= 0"));
    }
    uploads_[k] = {x, id};
    return absl::OkStatus();
  }

  // Per dataset id, the mean of the uploaded rows; each client's rows in its own order.
  absl::Status FinishPreparation() override {
    std::unordered_map<int64_t, int64_t> row;
    for (const auto& [k, u] : uploads_) {
      const int64_t* id = u.ids.data_ptr<int64_t>();
      for (int64_t i = 0; i < u.ids.numel(); ++i) row.emplace(id[i], static_cast<int64_t>(row.size()));
    }
    torch::Tensor sums = torch::zeros({static_cast<int64_t>(row.size()), width_}, torch::kFloat64);
    torch::Tensor counts = torch::zeros({static_cast<int64_t>(row.size())}, torch::kFloat64);
    std::map<int, torch::Tensor> rows;
    for (const auto& [k, u] : uploads_) {
      std::vector<int64_t> r(u.ids.numel());
      for (int64_t i = 0; i < u.ids.numel(); ++i) r[i] = row.at(u.ids.data_ptr<int64_t>()[i]);
      rows[k] = torch::tensor(r, torch::kInt64);
      sums.index_add_(0, rows[k], u.means.to(torch::kFloat64));
      counts.index_add_(0, rows[k], torch::ones({u.ids.numel()}, torch::kFloat64));
    }
    for (const auto& [k, r] : rows) {
      pending_[k] = (sums.index_select(0, r) / counts.index_select(0, r).unsqueeze(1)).to(torch::kFloat32);
    }
    uploads_.clear();
    return absl::OkStatus();
  }

  // The weights, plus the averaged features until the client has replied once.
  fl::PersonalisedServer* personalised() override { return this; }
  absl::StatusOr<fl::proto::Message> BroadcastTo(int client, const fl::RoundInfo& round) override {
    FGL_ASSIGN_OR_RETURN(fl::proto::Message m, average_->Broadcast(round));
    if (auto it = pending_.find(client); it != pending_.end()) {
      fl::AddTensors({{absl::StrCat(kFeaturesPrefix, "features"), it->second}}, &m);
    }
    return m;
  }
  absl::StatusOr<fl::proto::Message> Broadcast(const fl::RoundInfo& round) override { return average_->Broadcast(round); }

  absl::Status Accumulate(const fl::proto::Message& reply) override {
    FGL_RETURN_IF_ERROR(average_->Accumulate(reply));
    pending_.erase(reply.header().sender());  // its features arrived
    return absl::OkStatus();
  }
  absl::Status FinishRound(const fl::RoundInfo& round) override { return average_->FinishRound(round); }
  fl::AggregateSource* aggregate_source() override { return average_->aggregate_source(); }

  // The global model plus FedGcnYaoServerState: the features not yet delivered.
  absl::StatusOr<fl::proto::Message> SaveState() const override {
    FGL_ASSIGN_OR_RETURN(fl::proto::Message state, average_->SaveState());
    FedGcnYaoServerState typed;
    for (const auto& [k, x] : pending_) {  // a std::map: ascending clients
      FedGcnYaoServerState::PendingFeatures* p = typed.add_pending();
      p->set_client(k);
      *p->mutable_features() = fl::EncodeTensor("features", x);
    }
    fl::PackState(typed, &state);
    return state;
  }
  absl::Status RestoreState(const fl::proto::Message& state) override {
    FGL_ASSIGN_OR_RETURN(const FedGcnYaoServerState typed,
                         fl::UnpackState<FedGcnYaoServerState>(state, "fedgcn_yao state"));
    std::map<int, torch::Tensor> restored;
    for (const FedGcnYaoServerState::PendingFeatures& p : typed.pending()) {
      const std::string what = absl::StrCat("fedgcn_yao state: pending features of client ", p.client());
      if (!p.has_client() || p.client() < 0 || p.client() >= n_ || restored.count(p.client())) {
        return absl::InvalidArgumentError(absl::StrCat(what, ": no such client, or listed twice"));
      }
      absl::StatusOr<torch::Tensor> x = fl::DecodeTensor(p.features());
      if (!x.ok()) return absl::InvalidArgumentError(absl::StrCat(what, ": ", x.status().message()));
      if (x->dim() != 2 || x->size(1) != width_ || x->scalar_type() != torch::kFloat32 ||
          !torch::isfinite(*x).all().item<bool>()) {
        return absl::InvalidArgumentError(absl::StrCat(what, ": not a finite float32 [nodes, ", width_, "] matrix"));
      }
      restored[p.client()] = *x;
    }
    fl::proto::Message model = state;
    fl::EraseState<FedGcnYaoServerState>(&model);
    FGL_RETURN_IF_ERROR(average_->RestoreState(model));
    pending_ = std::move(restored);
    return absl::OkStatus();
  }

 private:
  struct Upload {
    torch::Tensor means, ids;
  };
  FedGcnYaoServer(std::unique_ptr<fl::ModelAverageServer> average, int n, int64_t width)
      : average_(std::move(average)), n_(n), width_(width) {}

  std::unique_ptr<fl::ModelAverageServer> average_;
  int n_;
  int64_t width_;
  std::map<int, Upload> uploads_;         // preparation only
  std::map<int, torch::Tensor> pending_;  // averaged features not yet delivered, per client
};

}  // namespace

FGL_REGISTER_METHOD("fedgcn_yao", FedGcnYaoClient::Make, FedGcnYaoServer::Make, {fl::TypedParams<FedGcnYaoParams>()});

}  // namespace fgl::methods::fedgcn_yao
