#include "nn/parameter_residency.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace fgl::nn {
namespace {

const char* Name(ParameterResidency::Phase phase) {
  switch (phase) {
    case ParameterResidency::Phase::kResident: return "resident";
    case ParameterResidency::Phase::kReleased: return "released";
    case ParameterResidency::Phase::kParked: return "parked";
    case ParameterResidency::Phase::kUnparked: return "unparked";
  }
  return "?";
}

}  // namespace

ParameterResidency::ParameterResidency(std::vector<torch::Tensor> parameters, ParameterResidencyOptions options)
    : parameters_(std::move(parameters)), options_(std::move(options)) {
  for (const torch::Tensor& p : parameters_) shapes_.push_back(p.sizes().vec());
}

absl::Status ParameterResidency::Release() {
  TORCH_CHECK(phase_ == Phase::kResident, "fgl::nn::ParameterResidency::Release while ", Name(phase_));
  Free();
  phase_ = Phase::kReleased;
  if (options_.spill_moments() && optimizer_ != nullptr && !optimizer_->spilled()) return SpillMoments();
  return absl::OkStatus();
}

absl::Status ParameterResidency::Reallocate() {
  TORCH_CHECK(!parked(), "fgl::nn::ParameterResidency::Reallocate while ", Name(phase_), ": Drop instead");
  if (absl::Status s = UnspillMoments(); !s.ok()) return s;
  if (phase_ == Phase::kReleased) {
    Allocate();
    phase_ = Phase::kResident;
  }
  return absl::OkStatus();
}

absl::Status ParameterResidency::SpillMoments() const {
  if (optimizer_ == nullptr) return absl::OkStatus();
  return optimizer_->Spill(options_.dir(), options_.spill_min_bytes());
}

absl::Status ParameterResidency::UnspillMoments() const {
  if (optimizer_ == nullptr) return absl::OkStatus();
  return optimizer_->Unspill();
}

absl::Status ParameterResidency::Park() {
  TORCH_CHECK(phase_ != Phase::kReleased, "fgl::nn::ParameterResidency::Park while released");
  if (phase_ == Phase::kUnparked) Free();  // the file still holds them
  if (phase_ != Phase::kResident) {
    phase_ = Phase::kParked;
    return absl::OkStatus();
  }
  absl::StatusOr<SpillFile> file = SpillFile::Write(options_.dir(), parameters_);
  if (!file.ok()) return file.status();
  Free();
  parked_ = std::make_unique<SpillFile>(*std::move(file));
  phase_ = Phase::kParked;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<torch::Tensor>> ParameterResidency::ReadParked() const {
  TORCH_CHECK(parked(), "fgl::nn::ParameterResidency::ReadParked while ", Name(phase_));
  absl::StatusOr<std::vector<torch::Tensor>> values = parked_->Read();
  if (values.ok() && values->size() != parameters_.size()) {
    return absl::DataLossError(
        absl::StrCat("parked parameters: the file holds ", values->size(), " tensors, not ", parameters_.size()));
  }
  return values;
}

absl::Status ParameterResidency::Unpark() {
  TORCH_CHECK(phase_ == Phase::kParked, "fgl::nn::ParameterResidency::Unpark while ", Name(phase_));
  absl::StatusOr<std::vector<torch::Tensor>> values = ReadParked();
  if (!values.ok()) return values.status();
  for (size_t i = 0; i < parameters_.size(); ++i) parameters_[i].set_data((*values)[i]);
  phase_ = Phase::kUnparked;
  return absl::OkStatus();
}

void ParameterResidency::Drop() {
  TORCH_CHECK(parked(), "fgl::nn::ParameterResidency::Drop while ", Name(phase_));
  Allocate();
  parked_.reset();
  phase_ = Phase::kResident;
}

void ParameterResidency::Free() {
  for (torch::Tensor& p : parameters_) p.set_data(torch::empty({0}, p.options()));
}

void ParameterResidency::Allocate() {
  for (size_t i = 0; i < parameters_.size(); ++i) {
    parameters_[i].set_data(torch::empty(shapes_[i], parameters_[i].options()));
  }
}

}  // namespace fgl::nn
