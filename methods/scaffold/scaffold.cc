// SCAFFOLD (Karimireddy et al. 2020), as OpenFGL runs it (the FedTAD paper's baseline setting):
//   client k, each round:  load w and the server control c; train E full-batch Adam steps with
//                          every gradient corrected by (c - c_k); then
//                          c_k <- c_k - c + (w - w_k) / (E * lr)
//                          and upload w_k and c_k;
//   server:                w <- node-weighted mean of the w_k (global lr 1),
//                          c <- plain mean of the uploaded c_k (fl::ModelAndMeanServer).
#include <algorithm>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "fl/local_model.h"
#include "fl/model_average_server.h"
#include "fl/registry.h"
#include "glog/logging.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::methods::scaffold {
namespace {

constexpr char kType[] = "scaffold.weights";
constexpr char kControl[] = "control.";

class ScaffoldClient final : public fl::ModelClient {
 public:
  using ModelClient::ModelClient;

  absl::StatusOr<fl::proto::Message> Train(const fl::proto::Message& from_server,
                                           const fl::RoundInfo& round) override {
    fl::proto::Message global = from_server;
    FGL_ASSIGN_OR_RETURN(auto server_control, fl::TakeTensors(kControl, &global));
    const fl::NamedTensors params = model_->SharedParameters();
    FGL_RETURN_IF_ERROR(fl::LoadTensors(global, params));
    if (control_.empty()) {
      for (const auto& [name, p] : params) control_[name] = torch::zeros_like(p);
    }
    std::map<std::string, torch::Tensor> correction, start;
    for (const auto& [name, p] : params) {
      auto c = server_control.find(name);
      if (c == server_control.end() || c->second.sizes() != p.sizes()) {
        return absl::InvalidArgumentError(absl::StrCat("scaffold: broadcast lacks '", kControl, name, "'"));
      }
      correction[name] = c->second.to(p.device()) - control_[name];
      start[name] = p.detach().clone();
    }
    fl::LocalModel::Hooks hooks;
    bool first_step = true;
    hooks.after_backward = [&] {
      torch::NoGradGuard no_grad;
      for (const auto& [name, p] : params) {
        if (!p.grad().defined()) continue;
        // How much of the step is data and how much control: with Adam the control variates come
        // out on another scale than the gradients (README, "Adam").
        if (first_step && VLOG_IS_ON(2)) {
          VLOG(2) << "scaffold client " << data_->id << " round " << round.round << " " << name << ": |grad| "
                  << p.grad().norm().item<double>() << " |c - c_k| " << correction[name].norm().item<double>();
        }
        p.mutable_grad().add_(correction[name]);
      }
      first_step = false;
    };
    const int64_t steps_before = model_->steps();
    FGL_RETURN_IF_ERROR(model_->Train(config_.spec.local_epochs(), round.seed, hooks));
    // The control update uses the number of local steps K and the learning rate, as OpenFGL does
    // (under Adam this is a heuristic scale; under `optimizer: SGD` it is SCAFFOLD's option II).
    // K is the epochs for a full-batch model, epochs × batches for a mini-batching one.
    const double scale = 1.0 / (std::max<int64_t>(1, model_->steps() - steps_before) * config_.spec.lr());
    fl::NamedTensors uploaded;
    for (const auto& [name, p] : params) {
      control_[name] = control_[name] - server_control[name].to(p.device()) + (start[name] - p.detach()) * scale;
      uploaded.emplace_back(name, control_[name]);
    }
    fl::proto::Message reply = fl::ModelReply(params, data_->data.num_nodes(), data_->id, round, kType);
    fl::AddTensors(fl::WithPrefix(kControl, uploaded), &reply);
    fl::AddTrainLoss(model_->last_loss(), &reply);
    return reply;
  }

  absl::StatusOr<fl::proto::Message> SaveState() const override {
    fl::proto::Message m = model_->SaveState();
    fl::NamedTensors control(control_.begin(), control_.end());
    fl::AddTensors(fl::WithPrefix(kControl, control), &m);
    return m;
  }
  absl::Status RestoreState(const fl::proto::Message& state) override {
    fl::proto::Message model_state = state;
    FGL_ASSIGN_OR_RETURN(auto control, fl::TakeTensors(kControl, &model_state));
    FGL_RETURN_IF_ERROR(model_->RestoreState(model_state));
    // None before the first round; else one per shared parameter, on its device.
    control_.clear();
    if (control.empty()) return absl::OkStatus();
    const fl::NamedTensors params = model_->SharedParameters();
    FGL_ASSIGN_OR_RETURN(const fl::NamedTensors matched,
                         fl::MatchTensors(control, params, absl::StrCat("scaffold client ", data_->id, ": state's ",
                                                                        kControl, "tensors")));
    for (size_t i = 0; i < params.size(); ++i) control_[matched[i].first] = matched[i].second.to(params[i].second.device());
    return absl::OkStatus();
  }

 private:
  std::map<std::string, torch::Tensor> control_;  // c_k; empty until the first round
};

}  // namespace

FGL_REGISTER_METHOD("scaffold", fl::ModelClient::Make<ScaffoldClient>,
                    [](const fl::MethodConfig& config) -> absl::StatusOr<std::unique_ptr<fl::ServerAlgorithm>> {
                      FGL_ASSIGN_OR_RETURN(auto server, fl::ModelAndMeanServer::Create(config, kType, kControl));
                      return std::unique_ptr<fl::ServerAlgorithm>(std::move(server));
                    });

}  // namespace fgl::methods::scaffold
