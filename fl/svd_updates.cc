#include "fl/svd_updates.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::fl {
namespace {

constexpr char kU[] = "#u";
constexpr char kSv[] = "#sv";
constexpr char kDelta[] = "#delta";
constexpr char kHeld[] = "svd_held/";
// The round whose model an update is against (the client checks it holds that one).
constexpr char kBaseRound[] = "svd_base_round";
constexpr char kHeldRound[] = "svd_held_round";

bool IsUpdate(const proto::Message& m) {
  for (const proto::Tensor& t : m.tensors()) {
    if (absl::StrContains(t.name(), '#')) return true;
  }
  return false;
}

// A message's tensors sorted by name: the order both sides keep, whatever order a message uses.
absl::StatusOr<NamedTensors> Sorted(const proto::Message& m) {
  FGL_ASSIGN_OR_RETURN(auto tensors, DecodeTensors(m));
  return NamedTensors(tensors.begin(), tensors.end());
}

// `like`'s header and scalars with `tensors`.
proto::Message WithTensors(const proto::Message& like, const NamedTensors& tensors) {
  proto::Message out;
  *out.mutable_header() = like.header();
  *out.mutable_scalars() = like.scalars();
  AddTensors(tensors, &out);
  return out;
}

// Both sides' state: the inner algorithm's, plus the model the clients hold and its round.
template <typename Inner>
absl::StatusOr<proto::Message> SaveWithHeld(const Inner& inner, const NamedTensors& held, int held_round) {
  FGL_ASSIGN_OR_RETURN(proto::Message state, inner.SaveState());
  AddTensors(WithPrefix(kHeld, held), &state);
  (*state.mutable_scalars())[kHeldRound] = held_round;
  return state;
}
template <typename Inner>
absl::Status RestoreWithHeld(const proto::Message& state, Inner& inner, NamedTensors& held, int& held_round) {
  proto::Message rest;
  FGL_ASSIGN_OR_RETURN(auto saved, SplitTensors(kHeld, state, &rest));
  rest.mutable_scalars()->erase(kHeldRound);
  FGL_RETURN_IF_ERROR(inner.RestoreState(rest));
  held.assign(saved.begin(), saved.end());
  auto it = state.scalars().find(kHeldRound);
  held_round = it == state.scalars().end() ? 0 : static_cast<int>(it->second);
  return absl::OkStatus();
}

class SvdClient final : public ClientAlgorithm, public GraphScoringClient {
 public:
  SvdClient(std::unique_ptr<ClientAlgorithm> inner, SvdSchedule schedule)
      : inner_(std::move(inner)), schedule_(schedule) {}

  absl::StatusOr<proto::Message> Train(const proto::Message& global, const RoundInfo& round) override {
    FGL_ASSIGN_OR_RETURN(held_, Received(global));
    held_round_ = round.round;
    FGL_ASSIGN_OR_RETURN(const proto::Message reply, inner_->Train(WithTensors(global, held_), round));
    FGL_ASSIGN_OR_RETURN(auto tensors, DecodeTensors(reply));
    if (tensors.size() != held_.size()) {
      return absl::InternalError(absl::StrCat("svd updates: the reply carries ", tensors.size(), " tensors, the model ",
                                              held_.size()));
    }
    FGL_ASSIGN_OR_RETURN(const NamedTensors now, MatchTensors(tensors, held_, "svd updates: the reply"));
    proto::Message out;
    *out.mutable_header() = reply.header();
    *out.mutable_scalars() = reply.scalars();
    AddSvdUpdate(now, held_, schedule_.Energy(round.round), &out);
    return out;
  }

  absl::StatusOr<torch::Tensor> Predict(const proto::Message* global) override {
    if (global == nullptr || !IsUpdate(*global)) return inner_->Predict(global);
    FGL_ASSIGN_OR_RETURN(const NamedTensors model, Received(*global));
    const proto::Message whole = WithTensors(*global, model);
    return inner_->Predict(&whole);
  }
  // Reached only through graph_scoring(), which is null when the inner client scores no other graph.
  absl::StatusOr<torch::Tensor> PredictGraph(const ClientData& graph, const proto::Message* global) override {
    GraphScoringClient* const inner = inner_->graph_scoring();
    CHECK(inner != nullptr) << "SvdClient::PredictGraph called past graph_scoring()";
    if (global == nullptr || !IsUpdate(*global)) return inner->PredictGraph(graph, global);
    FGL_ASSIGN_OR_RETURN(const NamedTensors model, Received(*global));
    const proto::Message whole = WithTensors(*global, model);
    return inner->PredictGraph(graph, &whole);
  }

  absl::StatusOr<proto::Message> SaveState() const override { return SaveWithHeld(*inner_, held_, held_round_); }
  absl::Status RestoreState(const proto::Message& state) override {
    return RestoreWithHeld(state, *inner_, held_, held_round_);
  }

  // The inner client's capabilities; its global model is rewritten before it scores another graph.
  PreparingClient* preparing() override { return inner_->preparing(); }
  GraphScoringClient* graph_scoring() override { return inner_->graph_scoring() != nullptr ? this : nullptr; }
  const ReportingClient* reporting() const override { return inner_->reporting(); }

 private:
  // The server's model: whole, or this update applied to the model of the round it names.
  absl::StatusOr<NamedTensors> Received(const proto::Message& m) const {
    if (!IsUpdate(m)) return Sorted(m);
    auto base = m.scalars().find(kBaseRound);
    if (held_.empty() || base == m.scalars().end() || static_cast<int>(base->second) != held_round_) {
      return absl::FailedPreconditionError(absl::StrCat(
          "svd updates: an update against round ", base == m.scalars().end() ? -1 : base->second,
          " reached a client holding round ", held_round_, "'s model (every client must take every round)"));
    }
    return ApplySvdUpdate(m, held_, "svd updates: the server's update");
  }

  std::unique_ptr<ClientAlgorithm> inner_;
  SvdSchedule schedule_;
  NamedTensors held_;  // the server's model as received, sorted by name
  int held_round_ = 0;
};

class SvdServer final : public ServerAlgorithm {
 public:
  SvdServer(std::unique_ptr<ServerAlgorithm> inner, SvdSchedule schedule)
      : inner_(std::move(inner)), schedule_(schedule) {}

  // A function of the committed state, so a second call in the same round sends the same.
  absl::StatusOr<proto::Message> Broadcast(const RoundInfo& round) override {
    FGL_ASSIGN_OR_RETURN(const proto::Message m, inner_->Broadcast(round));
    FGL_ASSIGN_OR_RETURN(const NamedTensors now, Sorted(m));
    if (held_.empty()) {
      next_held_ = now;
      return m;
    }
    FGL_ASSIGN_OR_RETURN(auto by_name, DecodeTensors(m));
    FGL_ASSIGN_OR_RETURN(const NamedTensors matched, MatchTensors(by_name, held_, "svd updates: the broadcast"));
    proto::Message out;
    *out.mutable_header() = m.header();
    *out.mutable_scalars() = m.scalars();
    (*out.mutable_scalars())[kBaseRound] = held_round_;
    AddSvdUpdate(matched, held_, schedule_.Energy(round.round), &out);
    FGL_ASSIGN_OR_RETURN(next_held_, ApplySvdUpdate(out, held_, "svd updates: the broadcast"));
    return out;
  }

  absl::Status Accumulate(const proto::Message& reply) override {
    FGL_ASSIGN_OR_RETURN(const NamedTensors model,
                         ApplySvdUpdate(reply, next_held_, absl::StrCat("svd updates: client ", reply.header().sender())));
    return inner_->Accumulate(WithTensors(reply, model));
  }
  absl::Status FinishRound(const RoundInfo& round) override {
    FGL_RETURN_IF_ERROR(inner_->FinishRound(round));
    held_ = next_held_;
    held_round_ = round.round;
    return absl::OkStatus();
  }

  absl::StatusOr<proto::Message> SaveState() const override { return SaveWithHeld(*inner_, held_, held_round_); }
  absl::Status RestoreState(const proto::Message& state) override {
    return RestoreWithHeld(state, *inner_, held_, held_round_);
  }
  // The inner server's capabilities, but not a personalised broadcast: the update is against
  // the one model every client holds.
  PreparedServer* prepared() override { return inner_->prepared(); }
  const MultiExchangeServer* multi_exchange() const override { return inner_->multi_exchange(); }
  AggregateSource* aggregate_source() override { return inner_->aggregate_source(); }

 private:
  std::unique_ptr<ServerAlgorithm> inner_;
  SvdSchedule schedule_;
  NamedTensors held_, next_held_;  // what the clients hold before / after this round's broadcast
  int held_round_ = 0;
};

}  // namespace

double SvdSchedule::Energy(int round) const {
  const double t = std::clamp(static_cast<double>(round) / std::max(1, rounds), 0.0, 1.0);
  return start + (end - start) * t;
}

void AddSvdUpdate(const NamedTensors& now, const NamedTensors& held, double energy, proto::Message* out) {
  CHECK_EQ(now.size(), held.size());
  for (size_t i = 0; i < now.size(); ++i) {
    const std::string& name = now[i].first;
    CHECK_EQ(name, held[i].first);
    CHECK(now[i].second.sizes() == held[i].second.sizes()) << name;
    const torch::Tensor delta = (now[i].second - held[i].second.to(now[i].second.device())).to(torch::kCPU).contiguous();
    if (delta.dim() == 2) {
      const int64_t m = delta.size(0), n = delta.size(1);
      auto [u, s, vh] = torch::linalg_svd(delta, /*full_matrices=*/false);
      // The fewest leading singular values whose squares reach `energy` of the total.
      const torch::Tensor e = s.to(torch::kFloat64).pow(2).contiguous();
      const double* v = e.data_ptr<double>();
      const double total = e.sum().item<double>();
      int64_t k = 1;
      for (double kept = v[0]; k < e.numel() && kept < energy * total; ++k) kept += v[k];
      if (k * (m + n) < m * n) {
        AddTensors({{name + kU, u.narrow(1, 0, k).contiguous()},
                    {name + kSv, (s.narrow(0, 0, k).unsqueeze(1) * vh.narrow(0, 0, k)).contiguous()}},
                   out);
        continue;
      }
    }
    AddTensors({{name + kDelta, delta}}, out);
  }
}

absl::StatusOr<NamedTensors> ApplySvdUpdate(const proto::Message& message, const NamedTensors& held,
                                            const std::string& who) {
  FGL_ASSIGN_OR_RETURN(auto tensors, DecodeTensors(message));
  NamedTensors out;
  size_t used = 0;
  for (const auto& [name, h] : held) {
    auto bad = [&, name = name](const std::string& what) {
      return absl::InvalidArgumentError(absl::StrCat(who, ": tensor '", name, "': ", what));
    };
    torch::Tensor delta;
    if (auto d = tensors.find(name + kDelta); d != tensors.end()) {
      if (d->second.sizes() != h.sizes()) return bad("the whole update's shape is not the model's");
      delta = d->second;
      ++used;
    } else if (auto u = tensors.find(name + kU), sv = tensors.find(name + kSv);
               u != tensors.end() && sv != tensors.end()) {
      const torch::Tensor& a = u->second;
      const torch::Tensor& b = sv->second;
      if (h.dim() != 2 || a.dim() != 2 || b.dim() != 2 || a.size(0) != h.size(0) || b.size(1) != h.size(1) ||
          a.size(1) != b.size(0) || a.size(1) < 1 || a.size(1) > std::min(h.size(0), h.size(1))) {
        return bad("SVD factors that do not fit the model's matrix");
      }
      delta = a.matmul(b);
      used += 2;
    } else {
      return bad("no update");
    }
    if (!delta.is_floating_point() || !AllFinite(delta)) return bad("not finite float values");
    out.emplace_back(name, h + delta.to(h.options()));
  }
  if (used != tensors.size()) {
    return absl::InvalidArgumentError(absl::StrCat(who, ": ", tensors.size() - used, " tensors that name no model tensor"));
  }
  return out;
}

std::unique_ptr<ClientAlgorithm> SvdCompressedClient(std::unique_ptr<ClientAlgorithm> inner, SvdSchedule schedule) {
  return std::make_unique<SvdClient>(std::move(inner), schedule);
}

std::unique_ptr<ServerAlgorithm> SvdCompressedServer(std::unique_ptr<ServerAlgorithm> inner, SvdSchedule schedule) {
  return std::make_unique<SvdServer>(std::move(inner), schedule);
}

}  // namespace fgl::fl
