#include "fl/tensor_codec.h"

#include <cstring>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "glog/logging.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::fl {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the wire format is little-endian");

}  // namespace

proto::Tensor EncodeTensor(const std::string& name, const torch::Tensor& tensor) {
  torch::Tensor t = tensor.detach().to(torch::kCPU).contiguous();
  proto::Tensor out;
  out.set_name(name);
  switch (t.scalar_type()) {
    case torch::kFloat32: out.set_dtype(proto::FLOAT32); break;
    case torch::kFloat64: out.set_dtype(proto::FLOAT64); break;
    case torch::kInt64: out.set_dtype(proto::INT64); break;
    default: LOG(FATAL) << "EncodeTensor: unsupported dtype " << t.scalar_type() << " for " << name;
  }
  for (int64_t d : t.sizes()) out.add_shape(d);
  out.set_data(t.data_ptr(), t.numel() * t.element_size());
  return out;
}

absl::StatusOr<torch::Tensor> DecodeTensor(const proto::Tensor& tensor) {
  torch::ScalarType type;
  int64_t item = 0;
  switch (tensor.dtype()) {
    case proto::FLOAT32: type = torch::kFloat32; item = 4; break;
    case proto::FLOAT64: type = torch::kFloat64; item = 8; break;
    case proto::INT64: type = torch::kInt64; item = 8; break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("tensor '", tensor.name(), "': unknown dtype ", tensor.dtype()));
  }
  std::vector<int64_t> shape(tensor.shape().begin(), tensor.shape().end());
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && count > std::numeric_limits<int64_t>::max() / item / d)) {
      return absl::InvalidArgumentError(absl::StrCat("tensor '", tensor.name(), "': bad shape [",
                                                     absl::StrJoin(shape, ","), "]"));
    }
    count *= d;
  }
  if (static_cast<int64_t>(tensor.data().size()) != count * item) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor '", tensor.name(), "': ", tensor.data().size(), " bytes for shape [",
        absl::StrJoin(shape, ","), "] of ", item, "-byte items"));
  }
  torch::Tensor out = torch::empty(shape, type);
  if (count > 0) std::memcpy(out.data_ptr(), tensor.data().data(), tensor.data().size());
  return out;
}

void AddTensors(const NamedTensors& tensors, proto::Message* message) {
  for (const auto& [name, t] : tensors) *message->add_tensors() = EncodeTensor(name, t);
}

absl::StatusOr<std::map<std::string, torch::Tensor>> DecodeTensors(const proto::Message& message) {
  std::map<std::string, torch::Tensor> out;
  for (const proto::Tensor& t : message.tensors()) {
    FGL_ASSIGN_OR_RETURN(torch::Tensor decoded, DecodeTensor(t));
    if (!out.emplace(t.name(), std::move(decoded)).second) {
      return absl::InvalidArgumentError(absl::StrCat("message has tensor '", t.name(), "' twice"));
    }
  }
  return out;
}

absl::Status LoadTensors(const proto::Message& message, const NamedTensors& targets) {
  FGL_ASSIGN_OR_RETURN(auto received, DecodeTensors(message));
  torch::NoGradGuard no_grad;
  for (const auto& [name, target] : targets) {
    auto it = received.find(name);
    if (it == received.end()) {
      return absl::InvalidArgumentError(absl::StrCat("message lacks tensor '", name, "'"));
    }
    if (it->second.sizes() != target.sizes() || it->second.scalar_type() != target.scalar_type()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor '", name, "': received shape [", absl::StrJoin(it->second.sizes(), ","),
          "], expected [", absl::StrJoin(target.sizes(), ","), "]"));
    }
    if (!torch::isfinite(it->second).all().item<bool>()) {
      return absl::InvalidArgumentError(absl::StrCat("tensor '", name, "' has NaN/Inf entries"));
    }
    const_cast<torch::Tensor&>(target).copy_(it->second);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::map<std::string, torch::Tensor>> TakeTensors(const std::string& prefix,
                                                                  proto::Message* message) {
  proto::Message taken;
  auto* tensors = message->mutable_tensors();
  for (int i = 0; i < tensors->size();) {
    if (tensors->Get(i).name().rfind(prefix, 0) == 0) {
      *taken.add_tensors() = tensors->Get(i);
      tensors->DeleteSubrange(i, 1);
    } else {
      ++i;
    }
  }
  FGL_ASSIGN_OR_RETURN(auto decoded, DecodeTensors(taken));
  std::map<std::string, torch::Tensor> out;
  for (auto& [name, t] : decoded) out.emplace(name.substr(prefix.size()), std::move(t));
  return out;
}

absl::StatusOr<NamedTensors> MatchTensors(const std::map<std::string, torch::Tensor>& tensors,
                                          const NamedTensors& like, const std::string& who,
                                          bool require_finite) {
  NamedTensors out;
  for (const auto& [name, t] : like) {
    auto it = tensors.find(name);
    if (it == tensors.end() || it->second.sizes() != t.sizes() ||
        (require_finite && !torch::isfinite(it->second).all().item<bool>())) {
      return absl::InvalidArgumentError(absl::StrCat(who, ": missing, misshapen or non-finite '", name, "'"));
    }
    out.emplace_back(name, it->second);
  }
  return out;
}

NamedTensors WeightedSum(const std::vector<const NamedTensors*>& sets, const std::vector<double>& weights) {
  CHECK(!sets.empty() && sets.size() == weights.size());
  NamedTensors out;
  for (size_t p = 0; p < sets[0]->size(); ++p) {
    const torch::Tensor& first = (*sets[0])[p].second;
    torch::Tensor sum = torch::zeros(first.sizes(), first.options().dtype(torch::kDouble));
    for (size_t k = 0; k < sets.size(); ++k) sum += weights[k] * (*sets[k])[p].second.to(torch::kDouble);
    out.emplace_back((*sets[0])[p].first, sum.to(first.scalar_type()));
  }
  return out;
}

NamedTensors WithPrefix(const std::string& prefix, const NamedTensors& tensors) {
  NamedTensors out;
  for (const auto& [name, t] : tensors) out.emplace_back(prefix + name, t);
  return out;
}

}  // namespace fgl::fl
