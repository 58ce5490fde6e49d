#include "methods/fedtad/distillation.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "fl/optimizer_state.h"
#include "graph/random.h"
#include "glog/logging.h"
#include "nn/adam.h"
#include "nn/graph_view.h"
#include "nn/losses/losses.h"
#include "nn/ops/dropout.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::methods::fedtad {

DistillationOptions FromParams(const FedTadParams& p, bool dropout_at_eval) {
  DistillationOptions o;
  o.iterations = p.iterations();
  o.generator_steps = p.generator_steps();
  o.distill_steps = p.distill_steps();
  o.num_pseudo = p.num_pseudo();
  o.noise_dim = p.noise_dim();
  o.knn = p.knn();
  o.self_loop_weight = static_cast<float>(p.self_loop_weight());
  o.generator_lr = p.generator_lr();
  o.generator_weight_decay = p.generator_weight_decay();
  o.distill_lr = p.distill_lr();
  o.distill_weight_decay = p.distill_weight_decay();
  o.lambda_sem = p.lambda_sem();
  o.lambda_div = p.lambda_div();
  o.use_sem = p.use_sem();
  o.use_div = p.use_div();
  o.use_diverg = p.use_diverg();
  o.loss_form = p.loss_form() == FedTadParams::PAPER ? LossForm::kPaper : LossForm::kCode;
  o.dropout_at_eval = dropout_at_eval;
  o.official_dropout_draws = p.official_dropout_draws();
  return o;
}

namespace {

void SetRequiresGrad(torch::nn::Module& module, bool on) {
  for (auto& p : module.parameters()) p.set_requires_grad(on);
}

fl::NamedTensors NamedParameters(const torch::nn::Module& module) {
  fl::NamedTensors out;
  for (const auto& item : module.named_parameters(true)) out.emplace_back(item.key(), item.value());
  return out;
}

absl::Status CopyInto(const fl::NamedTensors& from, const fl::NamedTensors& to, const std::string& what) {
  if (from.size() != to.size()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", from.size(), " tensors, expected ", to.size()));
  }
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i].first != to[i].first || from[i].second.sizes() != to[i].second.sizes()) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": tensor '", from[i].first,
                                                     "' does not match '", to[i].first, "'"));
    }
    to[i].second.copy_(from[i].second);
  }
  return absl::OkStatus();
}

}  // namespace

ConditionalGenerator InitialGenerator(int64_t noise_dim, int64_t num_classes, int64_t num_features, uint64_t seed) {
  torch::manual_seed(graph::Rng::Derive(seed, "fedtad/generator"));
  return ConditionalGenerator(noise_dim, num_classes, num_features);
}

uint64_t DistillSeed(uint64_t round_seed, int aggregate) {
  return graph::Rng::Derive(round_seed, absl::StrCat("fedtad/", aggregate));
}

graph::Rng NoiseStream(uint64_t distill_seed) { return graph::Rng(distill_seed, "fedtad/noise"); }

torch::Tensor DrawNoise(graph::Rng& stream, int64_t rows, int64_t cols) {
  std::vector<float> values(rows * cols);
  for (float& v : values) v = static_cast<float>(stream.Normal());
  return torch::tensor(values).view({rows, cols});
}

torch::Tensor NormalizeAcrossClients(const torch::Tensor& phi) {
  const torch::Tensor total = phi.sum(0, true);
  return torch::where(total > 0, phi / total.clamp_min(1e-30), torch::zeros_like(phi));
}

DataFreeDistiller::DataFreeDistiller(std::string model_spec, int64_t num_features, int64_t num_classes,
                                     DistillationOptions options, torch::Device device)
    : model_spec_(std::move(model_spec)), num_features_(num_features), num_classes_(num_classes),
      options_(options), device_(device) {}

absl::StatusOr<std::unique_ptr<DataFreeDistiller>> DataFreeDistiller::Create(
    const std::string& model_spec, int64_t num_features, int64_t num_classes,
    const DistillationOptions& o, uint64_t seed, torch::Device device) {
  if (o.iterations < 0 || o.generator_steps < 0 || o.distill_steps < 0 || o.noise_dim < 1 ||
      o.knn < 1 || o.num_pseudo < num_classes || num_classes < 1 || num_features < 1 ||
      !(o.self_loop_weight > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "fedtad: need iterations, generator_steps, distill_steps >= 0, noise_dim, knn >= 1, "
        "num_pseudo >= classes (", num_classes, "), self_loop_weight > 0; got iterations ", o.iterations,
        ", num_pseudo ", o.num_pseudo, ", knn ", o.knn, ", noise_dim ", o.noise_dim));
  }
  FGL_RETURN_IF_ERROR(nn::MakeModel(model_spec, num_features, num_classes).status());
  std::unique_ptr<DataFreeDistiller> d(new DataFreeDistiller(model_spec, num_features, num_classes, o, device));
  d->generator_ = InitialGenerator(o.noise_dim, num_classes, num_features, seed);
  d->generator_->to(device);
  d->generator_optimizer_ = std::make_unique<nn::Adam>(
      d->generator_->parameters(),
      torch::optim::AdamOptions(o.generator_lr).weight_decay(o.generator_weight_decay));
  d->labels_ = PseudoLabels(o.num_pseudo, num_classes).to(device);
  return d;
}

absl::StatusOr<DataFreeDistiller::Student*> DataFreeDistiller::GetStudent(int slot) {
  if (slot < 0) return absl::InvalidArgumentError(absl::StrCat("fedtad: slot ", slot));
  while (static_cast<int>(students_.size()) <= slot) {
    Student s;
    FGL_ASSIGN_OR_RETURN(s.model, nn::MakeModel(model_spec_, num_features_, num_classes_));
    s.model->to(device_);
    s.optimizer = std::make_unique<nn::Adam>(
        s.model->parameters(),
        torch::optim::AdamOptions(options_.distill_lr).weight_decay(options_.distill_weight_decay));
    students_.push_back(std::move(s));
  }
  return &students_[slot];
}

absl::Status DataFreeDistiller::LoadTeachers(const std::vector<Teacher>& teachers) {
  while (teacher_models_.size() < teachers.size()) {
    FGL_ASSIGN_OR_RETURN(std::shared_ptr<nn::GnnModel> m, nn::MakeModel(model_spec_, num_features_, num_classes_));
    m->to(device_);
    SetRequiresGrad(*m, false);  // frozen teachers: gradients reach the generator through x only
    teacher_models_.push_back(std::move(m));
  }
  for (size_t k = 0; k < teachers.size(); ++k) {
    if (teachers[k].weight.numel() != num_classes_) {
      return absl::InvalidArgumentError(absl::StrCat("fedtad: teacher ", k, " has ",
                                                     teachers[k].weight.numel(), " class weights"));
    }
    FGL_RETURN_IF_ERROR(CopyInto(teachers[k].parameters, NamedParameters(*teacher_models_[k]),
                                 absl::StrCat("fedtad teacher ", k)));
  }
  return absl::OkStatus();
}

torch::Tensor DataFreeDistiller::TeacherLoss(const torch::Tensor& student_logits,
                                             const torch::Tensor& teacher_logits,
                                             const torch::Tensor& node_weight) const {
  if (options_.loss_form == LossForm::kCode) {
    return (node_weight * (student_logits - teacher_logits).abs().mean(1)).sum();
  }
  const torch::Tensor log_g = torch::log_softmax(student_logits, 1);
  const torch::Tensor kl = (log_g.exp() * (log_g - torch::log_softmax(teacher_logits, 1))).sum(1);
  return (node_weight * kl).sum();
}

void DataFreeDistiller::UseRealGraph(std::shared_ptr<const nn::NodeFeatures> features,
                                     std::shared_ptr<const nn::GraphView> view) {
  real_features_ = std::move(features);
  real_view_ = std::move(view);
}

std::vector<torch::Tensor> DataFreeDistiller::NodeWeights(const std::vector<Teacher>& teachers,
                                                          const torch::Tensor& labels) const {
  const torch::Tensor class_size = torch::bincount(labels.cpu(), {}, num_classes_).to(device_, torch::kFloat);
  std::vector<torch::Tensor> out;
  for (const Teacher& t : teachers) {
    torch::Tensor w = t.weight.to(device_, torch::kFloat);
    if (options_.loss_form == LossForm::kCode) w = w / class_size.clamp_min(1);
    out.push_back(w.index_select(0, labels));
  }
  return out;
}

absl::Status DataFreeDistiller::DistillOnRealGraph(Student& student, const std::vector<Teacher>& teachers,
                                                   uint64_t seed) {
  nn::DropoutSeedScope dropout_stream(graph::Rng::Derive(seed, "fedtad/dropout"));
  const int64_t num_teachers = static_cast<int64_t>(teachers.size());
  for (int it = 0; it < options_.iterations; ++it) {
    // The same schedule as on pseudo graphs: teacher logits once per iteration, then I_d steps.
    std::vector<torch::Tensor> local(num_teachers);
    torch::Tensor ensemble;
    {
      torch::NoGradGuard no_grad;
      for (int64_t k = 0; k < num_teachers; ++k) {
        teacher_models_[k]->train(options_.dropout_at_eval);
        local[k] = teacher_models_[k]->forward(*real_features_, *real_view_).logits;
        const torch::Tensor p = torch::softmax(local[k], 1);
        ensemble = ensemble.defined() ? ensemble + p : p;
      }
    }
    const std::vector<torch::Tensor> node_weight = NodeWeights(teachers, ensemble.argmax(1));
    FGL_RETURN_IF_ERROR(DistillSteps(student, *real_features_, *real_view_, local, node_weight));
  }
  return absl::OkStatus();
}

absl::Status DataFreeDistiller::DistillSteps(Student& student, const nn::NodeFeatures& features,
                                             const nn::GraphView& view, std::vector<torch::Tensor> local,
                                             const std::vector<torch::Tensor>& node_weight, bool redraw_teachers) {
  student.model->train();
  const bool per_teacher = options_.official_dropout_draws;
  for (int d = 0; d < options_.distill_steps; ++d) {
    if (redraw_teachers && d > 0) {  // the official code's fresh teacher masks in every step
      torch::NoGradGuard no_grad;
      for (size_t k = 0; k < local.size(); ++k) local[k] = teacher_models_[k]->forward(features, view).logits;
    }
    // The official code forwards the global model once per teacher (a fresh mask each).
    torch::Tensor global_logits = student.model->forward(features, view).logits;
    torch::Tensor loss = torch::zeros({}, global_logits.options());
    for (size_t k = 0; k < local.size(); ++k) {
      if (per_teacher && k > 0) global_logits = student.model->forward(features, view).logits;
      loss = loss + TeacherLoss(global_logits, local[k], node_weight[k]);
    }
    if (!std::isfinite(loss.item<double>())) {
      return absl::InternalError(absl::StrCat("fedtad: distillation loss is ", loss.item<double>()));
    }
    student.optimizer->zero_grad();
    loss.backward();
    student.optimizer->step();
    VLOG(2) << "fedtad distillation step " << d << ": loss " << loss.item<double>();
  }
  return absl::OkStatus();
}

absl::Status DataFreeDistiller::Distill(const fl::NamedTensors& student_params,
                                        const std::vector<Teacher>& teachers, int slot, uint64_t seed) {
  if (teachers.empty() || options_.iterations == 0) return absl::OkStatus();
  FGL_ASSIGN_OR_RETURN(Student * student, GetStudent(slot));
  FGL_RETURN_IF_ERROR(CopyInto(student_params, NamedParameters(*student->model), "fedtad student"));
  FGL_RETURN_IF_ERROR(LoadTeachers(teachers));
  if (real_view_) {
    FGL_RETURN_IF_ERROR(DistillOnRealGraph(*student, teachers, seed));
    student->model->eval();
    return CopyInto(NamedParameters(*student->model), student_params, "fedtad student -> aggregate");
  }
  nn::DropoutSeedScope dropout_stream(graph::Rng::Derive(seed, "fedtad/dropout"));
  graph::Rng noise_rng = NoiseStream(seed);
  const int64_t num_teachers = static_cast<int64_t>(teachers.size());
  const bool code = options_.loss_form == LossForm::kCode;
  const std::vector<torch::Tensor> node_weight = NodeWeights(teachers, labels_);
  auto set_frozen_mode = [&] {
    for (int64_t k = 0; k < num_teachers; ++k) teacher_models_[k]->train(options_.dropout_at_eval);
  };
  auto graph_of = [&](const torch::Tensor& x) -> absl::StatusOr<nn::GraphView> {
    FGL_ASSIGN_OR_RETURN(graph::CsrGraph g, KnnPseudoGraph(x, options_.knn, options_.self_loop_weight));
    return nn::GraphView::Create(g, device_);
  };

  for (int it = 0; it < options_.iterations; ++it) {
    const torch::Tensor z = DrawNoise(noise_rng, options_.num_pseudo, options_.noise_dim).to(device_);

    // Generator: pseudo nodes the ensemble labels confidently (L_sem), on which the global model
    // still disagrees with the teachers (-L_diverg), and that differ from each other (L_div).
    generator_->train();
    set_frozen_mode();
    student->model->train(options_.dropout_at_eval);
    SetRequiresGrad(*student->model, false);
    for (int g = 0; g < options_.generator_steps; ++g) {
      const torch::Tensor x = generator_->forward(z, labels_);
      FGL_ASSIGN_OR_RETURN(nn::GraphView view, graph_of(x));
      const nn::NodeFeatures features(x);
      torch::Tensor global_logits = student->model->forward(features, view).logits;
      torch::Tensor sem = torch::zeros({}, x.options()), diverg = torch::zeros({}, x.options());
      for (int64_t k = 0; k < num_teachers; ++k) {
        // The official code forwards the global model once per teacher (a fresh mask each).
        if (options_.official_dropout_draws && k > 0) global_logits = student->model->forward(features, view).logits;
        const torch::Tensor local = teacher_models_[k]->forward(features, view).logits;
        const torch::Tensor ce = torch::nn::functional::cross_entropy(
            local, labels_, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
        sem = sem + (node_weight[k] * ce).sum();
        // As the official code: the discrepancy's gradient reaches x through the global model only.
        diverg = diverg + TeacherLoss(global_logits, local.detach(), node_weight[k]);
      }
      torch::Tensor div;
      if (code) {
        div = nn::GeneratorDiversity(z, x) * static_cast<double>(num_teachers);
      } else {
        const torch::Tensor u = x / x.norm(2, 1, true).clamp_min(1e-12);
        div = u.matmul(u.t()).mean();
      }
      torch::Tensor loss = torch::zeros({}, x.options());
      if (options_.use_sem) loss = loss + options_.lambda_sem * sem;
      if (options_.use_diverg) loss = loss - diverg;
      if (options_.use_div) loss = loss + options_.lambda_div * div;
      if (!std::isfinite(loss.item<double>())) {
        return absl::InternalError(absl::StrCat("fedtad: generator loss is ", loss.item<double>()));
      }
      generator_optimizer_->zero_grad();
      if (loss.requires_grad()) loss.backward();
      generator_optimizer_->step();
    }
    SetRequiresGrad(*student->model, true);

    // Distillation: the global model matches the reliability-weighted teachers on the pseudo graph.
    torch::Tensor x;
    {
      torch::NoGradGuard no_grad;
      generator_->eval();
      x = generator_->forward(z, labels_);
    }
    FGL_ASSIGN_OR_RETURN(nn::GraphView view, graph_of(x));
    const nn::NodeFeatures features(x);
    // Teacher logits once per iteration. With dropout on (the official code's always-on dropout)
    // the code draws new teacher masks at each of the I_d steps; one draw per iteration has the
    // same expectation and costs a fifth (see README, "Deviations").
    std::vector<torch::Tensor> local(num_teachers);
    {
      torch::NoGradGuard no_grad;
      for (int64_t k = 0; k < num_teachers; ++k) local[k] = teacher_models_[k]->forward(features, view).logits;
    }
    VLOG(1) << "fedtad iteration " << it << ": mean |x| " << x.abs().mean().item<double>();
    FGL_RETURN_IF_ERROR(
        DistillSteps(*student, features, view, std::move(local), node_weight, options_.official_dropout_draws));
  }
  student->model->eval();
  return CopyInto(NamedParameters(*student->model), student_params, "fedtad student -> aggregate");
}

void DataFreeDistiller::SaveState(fl::proto::Message* message) const {
  fl::NamedTensors generator;
  for (const auto& [name, t] : NamedParameters(*generator_)) generator.emplace_back("fedtad.generator." + name, t);
  fl::AddTensors(generator, message);
  fl::SaveAdamState(*generator_optimizer_, NamedParameters(*generator_), "fedtad.generator_adam.", message);
  (*message->mutable_scalars())["fedtad.students"] = static_cast<double>(students_.size());
  for (size_t s = 0; s < students_.size(); ++s) {
    fl::SaveAdamState(*students_[s].optimizer, NamedParameters(*students_[s].model),
                      absl::StrCat("fedtad.student", s, "_adam."), message);
  }
}

absl::Status DataFreeDistiller::RestoreState(const fl::proto::Message& message) {
  FGL_ASSIGN_OR_RETURN(auto tensors, fl::DecodeTensors(message));
  fl::NamedTensors generator;
  for (const auto& [name, t] : NamedParameters(*generator_)) {
    auto it = tensors.find("fedtad.generator." + name);
    if (it == tensors.end()) return absl::InvalidArgumentError("fedtad state lacks generator." + name);
    generator.emplace_back(name, it->second);
  }
  FGL_RETURN_IF_ERROR(CopyInto(generator, NamedParameters(*generator_), "fedtad generator state"));
  FGL_RETURN_IF_ERROR(fl::RestoreAdamState(message, tensors, NamedParameters(*generator_),
                                           "fedtad.generator_adam.", "fedtad", generator_optimizer_.get()));
  auto count = message.scalars().find("fedtad.students");
  if (count == message.scalars().end() || !(count->second >= 0) || count->second > 1e6) {
    return absl::InvalidArgumentError("fedtad state: bad or missing 'fedtad.students'");
  }
  for (int s = 0; s < static_cast<int>(count->second); ++s) {
    FGL_ASSIGN_OR_RETURN(Student * student, GetStudent(s));
    FGL_RETURN_IF_ERROR(fl::RestoreAdamState(message, tensors, NamedParameters(*student->model),
                                             absl::StrCat("fedtad.student", s, "_adam."), "fedtad",
                                             student->optimizer.get()));
  }
  return absl::OkStatus();
}

}  // namespace fgl::methods::fedtad
