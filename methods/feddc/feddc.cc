// FedDC (Gao et al. 2022), as OpenFGL runs it (correction OPENFGL; FEDDC_CODE: FedDC's own code,
// feddc.proto). Client k keeps a drift h_k and its last update
// d_k (both start at 0). Each round it loads w (and the mean update u), and from round 2 on
// trains with
//   CE + (alpha / 2) ||h_k + theta - w||^2 + 1 / (lr E) * sum(theta * d_k - u)
// (u is a constant: only theta * d_k has a gradient). Then d_k_old = d_k, d_k = theta - w,
// h_k += d_k_old (OpenFGL adds the previous update: a one-round lag we keep), and it uploads
// theta, h_k and d_k. The server sets w = node-weighted mean of (theta_k + h_k) and u = plain mean
// of the d_k. alpha: feddc.proto.
#include <algorithm>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "fl/local_model.h"
#include "fl/model_average_server.h"
#include "fl/registry.h"
#include "methods/feddc/feddc.pb.h"
#include "glog/logging.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::methods::feddc {
namespace {

constexpr char kType[] = "feddc.weights";
constexpr char kDrift[] = "drift.";
constexpr char kUpdate[] = "update.";

class FedDcClient final : public fl::ModelClient {
 public:
  absl::StatusOr<fl::proto::Message> Train(const fl::proto::Message& from_server,
                                           const fl::RoundInfo& round) override {
    const FedDcParams& p = params_;
    const double alpha = p.alpha();
    fl::proto::Message global = from_server;
    FGL_ASSIGN_OR_RETURN(auto mean_update, fl::TakeTensors(kUpdate, &global));
    const fl::NamedTensors params = model_->SharedParameters();
    FGL_RETURN_IF_ERROR(fl::LoadTensors(global, params));
    std::map<std::string, torch::Tensor> start;
    for (const auto& [name, p] : params) {
      start[name] = p.detach().clone();
      if (!drift_.count(name)) {
        drift_[name] = torch::zeros_like(p);
        last_update_[name] = torch::zeros_like(p);
      }
      auto u = mean_update.find(name);
      if (u == mean_update.end() || u->second.sizes() != p.sizes()) {
        return absl::InvalidArgumentError(absl::StrCat("feddc: broadcast lacks '", kUpdate, name, "'"));
      }
      mean_update[name] = u->second.to(p.device());
    }
    fl::LocalModel::Hooks hooks;
    const bool code = p.correction() == FedDcParams::FEDDC_CODE;
    const double grad_scale = 1.0 / (config_.spec.lr() * std::max(1, config_.spec.local_epochs()));
    // FedDC's code: sum(theta * (u - c_k)) from round 1 (0 there); OpenFGL's from round 2.
    if (code || round.round > 1) {
      const double scale = code ? 1.0 : grad_scale;
      hooks.extra_loss = [&, scale](const nn::ModelOutput&) {
        torch::Tensor drift = torch::zeros({}, params.front().second.options());
        torch::Tensor correction = torch::zeros({}, params.front().second.options());
        for (const auto& [name, p] : params) {
          drift = drift + (drift_[name] + p - start[name]).pow(2).sum();
          correction = correction + (code ? (p * (mean_update[name] - last_update_[name])).sum()
                                          : (p * last_update_[name] - mean_update[name]).sum());
        }
        return 0.5 * alpha * drift + scale * correction;
      };
    }
    if (!code && round.round > 1) {
      // How much of the first step is data and how much drift and correction (README, "Adam"): at
      // theta = w the extra terms' gradient is alpha * h + grad_scale * d_k, the rest is the CE's.
      bool first_step = true;
      hooks.after_backward = [&] {
        if (!first_step || !VLOG_IS_ON(2)) return;
        first_step = false;
        torch::NoGradGuard no_grad;
        for (const auto& [name, p] : params) {
          if (!p.grad().defined()) continue;
          const torch::Tensor extra = alpha * drift_[name] + grad_scale * last_update_[name];
          VLOG(2) << "feddc client " << data_->id << " round " << round.round << " " << name << ": |CE grad| "
                  << (p.grad() - extra).norm().item<double>() << " |alpha h| " << (alpha * drift_[name]).norm().item<double>()
                  << " |d_k / (lr E)| " << (grad_scale * last_update_[name]).norm().item<double>();
        }
      };
    }
    FGL_RETURN_IF_ERROR(model_->Train(config_.spec.local_epochs(), round.seed, hooks));
    fl::NamedTensors drift, update;
    for (const auto& [name, p] : params) {
      const torch::Tensor delta = p.detach() - start[name];
      if (code) {  // "update." carries the control state c_k; grad_scale is 1 / (lr K)
        last_update_[name] = last_update_[name] - mean_update[name] - grad_scale * delta;
        drift_[name] = drift_[name] + delta;
      } else {  // OpenFGL's one-round lag
        drift_[name] = drift_[name] + last_update_[name];
        last_update_[name] = delta;
      }
      drift.emplace_back(name, drift_[name]);
      update.emplace_back(name, last_update_[name]);
    }
    fl::proto::Message reply = fl::ModelReply(params, data_->data.num_nodes(), data_->id, round, kType);
    fl::AddTensors(fl::WithPrefix(kDrift, drift), &reply);
    fl::AddTensors(fl::WithPrefix(kUpdate, update), &reply);
    fl::AddTrainLoss(model_->last_loss(), &reply);
    return reply;
  }

  absl::StatusOr<fl::proto::Message> SaveState() const override {
    fl::proto::Message m = model_->SaveState();
    fl::AddTensors(fl::WithPrefix(kDrift, fl::NamedTensors(drift_.begin(), drift_.end())), &m);
    fl::AddTensors(fl::WithPrefix(kUpdate, fl::NamedTensors(last_update_.begin(), last_update_.end())), &m);
    return m;
  }
  absl::Status RestoreState(const fl::proto::Message& state) override {
    fl::proto::Message model_state = state;
    FGL_ASSIGN_OR_RETURN(drift_, fl::TakeTensors(kDrift, &model_state));
    FGL_ASSIGN_OR_RETURN(last_update_, fl::TakeTensors(kUpdate, &model_state));
    for (auto* m : {&drift_, &last_update_}) {
      for (auto& [name, t] : *m) t = t.to(config_.device);
    }
    return model_->RestoreState(model_state);
  }

 private:
  friend class fl::ModelClient;  // MakeWithParams: the params unpacked once, at creation
  FedDcClient(std::shared_ptr<const fl::ClientData> data, const fl::MethodConfig& config,
              std::unique_ptr<fl::LocalModel> model, FedDcParams params)
      : ModelClient(std::move(data), config, std::move(model)), params_(std::move(params)) {}

  const FedDcParams params_;
  std::map<std::string, torch::Tensor> drift_, last_update_;
};

// The server averages theta_k + h_k (the reply's model with its drift added) and the updates.
class FedDcServer final : public fl::ServerAlgorithm {
 public:
  explicit FedDcServer(std::unique_ptr<fl::ModelAndMeanServer> inner) : inner_(std::move(inner)) {}
  absl::StatusOr<fl::proto::Message> Broadcast(const fl::RoundInfo& round) override { return inner_->Broadcast(round); }
  absl::Status Accumulate(const fl::proto::Message& reply) override {
    fl::proto::Message corrected = reply;
    FGL_ASSIGN_OR_RETURN(auto drift, fl::TakeTensors(kDrift, &corrected));
    FGL_ASSIGN_OR_RETURN(auto tensors, fl::DecodeTensors(corrected));
    corrected.mutable_tensors()->Clear();
    fl::NamedTensors out;
    for (const auto& [name, t] : tensors) {
      if (name.rfind(kUpdate, 0) == 0) {
        out.emplace_back(name, t);
        continue;
      }
      auto h = drift.find(name);
      if (h == drift.end() || h->second.sizes() != t.sizes()) {
        return absl::InvalidArgumentError(absl::StrCat("feddc: reply from client ", reply.header().sender(),
                                                       " lacks '", kDrift, name, "'"));
      }
      out.emplace_back(name, t + h->second);
    }
    const size_t parameters = tensors.size() - static_cast<size_t>(std::count_if(
        tensors.begin(), tensors.end(), [](const auto& t) { return t.first.rfind(kUpdate, 0) == 0; }));
    if (drift.size() != parameters) {
      return absl::InvalidArgumentError(absl::StrCat("feddc: reply from client ", reply.header().sender(),
                                                     " has ", drift.size(), " drift tensors for ",
                                                     parameters, " parameters"));
    }
    fl::AddTensors(out, &corrected);
    return inner_->Accumulate(corrected);
  }
  absl::Status FinishRound(const fl::RoundInfo& round) override { return inner_->FinishRound(round); }
  absl::StatusOr<fl::proto::Message> SaveState() const override { return inner_->SaveState(); }
  absl::Status RestoreState(const fl::proto::Message& state) override { return inner_->RestoreState(state); }
  fl::AggregateSource* aggregate_source() override { return inner_->aggregate_source(); }

 private:
  std::unique_ptr<fl::ModelAndMeanServer> inner_;
};

}  // namespace

FGL_REGISTER_METHOD("feddc", fl::ModelClient::MakeWithParams<FedDcClient, FedDcParams>,
                    [](const fl::MethodConfig& config) -> absl::StatusOr<std::unique_ptr<fl::ServerAlgorithm>> {
                      FGL_ASSIGN_OR_RETURN(auto inner, fl::ModelAndMeanServer::Create(config, kType, kUpdate));
                      return std::unique_ptr<fl::ServerAlgorithm>(new FedDcServer(std::move(inner)));
                    },
                    {fl::TypedParams<FedDcParams>()});

}  // namespace fgl::methods::feddc
