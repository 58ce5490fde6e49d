#include "fl/testing/majority_method.h"

#include "fl/registry.h"
#include "fl/tensor_codec.h"
#include "graph/random.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::fl::testing {
namespace {

constexpr char kType[] = "testing_majority.prior";

// The "prior" tensor of a message, checked against the number of classes.
absl::StatusOr<torch::Tensor> PriorOf(const proto::Message& m, int64_t num_classes) {
  FGL_ASSIGN_OR_RETURN(auto tensors, DecodeTensors(m));
  auto it = tensors.find("prior");
  if (it == tensors.end() || it->second.dim() != 1 || it->second.size(0) != num_classes ||
      it->second.scalar_type() != torch::kFloat) {
    return absl::InvalidArgumentError("testing_majority: no float prior of the class count");
  }
  if (!AllFinite(it->second)) return absl::InvalidArgumentError("testing_majority: prior not finite");
  return it->second;
}

class MajorityClient final : public ClientAlgorithm {
 public:
  MajorityClient(std::shared_ptr<const ClientData> data, const MethodConfig& config)
      : data_(std::move(data)), prior_(torch::full({config.num_classes}, 1.0f / config.num_classes)) {}

  absl::StatusOr<proto::Message> Train(const proto::Message&, const RoundInfo& round) override {
    const torch::Tensor labels = data_->labels.masked_select(data_->split.train);
    torch::Tensor counts = torch::bincount(labels, {}, prior_.size(0)).to(torch::kFloat) + 1.0f;
    graph::Rng rng(round.seed, "testing_majority");
    counts[0].mul_(1.0f + 0.01f * static_cast<float>(rng.Uniform()));  // class 0 only: survives normalising
    prior_ = counts / counts.sum();
    proto::Message reply;
    reply.mutable_header()->set_type(kType);
    reply.mutable_header()->set_sender(data_->id);
    AddTensors({{"prior", prior_}}, &reply);
    (*reply.mutable_scalars())["num_nodes"] = static_cast<double>(data_->data.num_nodes());
    (*reply.mutable_scalars())["train_loss"] = 1.0 - prior_.max().item<double>();
    return reply;
  }
  absl::StatusOr<torch::Tensor> Predict(const proto::Message* global) override {
    torch::Tensor prior = prior_;
    if (global != nullptr) {
      FGL_ASSIGN_OR_RETURN(prior, PriorOf(*global, prior_.size(0)));
    }
    return prior.unsqueeze(0).expand({data_->data.num_nodes(), prior.size(0)}).contiguous();
  }
  absl::StatusOr<proto::Message> SaveState() const override {
    proto::Message m;
    AddTensors({{"prior", prior_}}, &m);
    return m;
  }
  absl::Status RestoreState(const proto::Message& state) override {
    FGL_ASSIGN_OR_RETURN(prior_, PriorOf(state, prior_.size(0)));
    return absl::OkStatus();
  }

 private:
  std::shared_ptr<const ClientData> data_;
  torch::Tensor prior_;
};

class MajorityServer final : public ServerAlgorithm {
 public:
  explicit MajorityServer(const MethodConfig& config)
      : prior_(torch::full({config.num_classes}, 1.0f / config.num_classes)) {}

  absl::StatusOr<proto::Message> Broadcast(const RoundInfo& round) override {
    proto::Message m;
    m.mutable_header()->set_type(kType);
    m.mutable_header()->set_round(round.round);
    AddTensors({{"prior", prior_}}, &m);
    return m;
  }
  absl::Status Accumulate(const proto::Message& reply) override {
    FGL_ASSIGN_OR_RETURN(torch::Tensor p, PriorOf(reply, prior_.size(0)));
    auto n = reply.scalars().find("num_nodes");
    if (n == reply.scalars().end() || !(n->second > 0)) return absl::InvalidArgumentError("testing_majority: no node count");
    sum_ = sum_.defined() ? sum_ + n->second * p : n->second * p;
    weight_ += n->second;
    return absl::OkStatus();
  }
  absl::Status FinishRound(const RoundInfo&) override {
    if (weight_ > 0) prior_ = (sum_ / weight_).to(torch::kFloat);
    sum_ = torch::Tensor();
    weight_ = 0;
    return absl::OkStatus();
  }
  absl::StatusOr<proto::Message> SaveState() const override {
    proto::Message m;
    AddTensors({{"prior", prior_}}, &m);
    return m;
  }
  absl::Status RestoreState(const proto::Message& state) override {
    FGL_ASSIGN_OR_RETURN(prior_, PriorOf(state, prior_.size(0)));
    return absl::OkStatus();
  }

 private:
  torch::Tensor prior_, sum_;
  double weight_ = 0;
};

}  // namespace

FGL_REGISTER_METHOD(
    kMajorityMethod,
    [](std::shared_ptr<const ClientData> data, const MethodConfig& config)
        -> absl::StatusOr<std::unique_ptr<ClientAlgorithm>> {
      return std::unique_ptr<ClientAlgorithm>(new MajorityClient(std::move(data), config));
    },
    [](const MethodConfig& config) -> absl::StatusOr<std::unique_ptr<ServerAlgorithm>> {
      return std::unique_ptr<ServerAlgorithm>(new MajorityServer(config));
    });

}  // namespace fgl::fl::testing
