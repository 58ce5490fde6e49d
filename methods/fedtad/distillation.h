// FedTAD's server loop (Alg. 1, B.1.3 d of the note): data-free distillation of the local models'
// reliable class-wise knowledge into an aggregated model, on generated pseudo graphs.
#ifndef FGL_METHODS_FEDTAD_DISTILLATION_H_
#define FGL_METHODS_FEDTAD_DISTILLATION_H_

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "fl/proto/message.pb.h"
#include "fl/tensor_codec.h"
#include "graph/random.h"
#include "methods/fedtad/fedtad.pb.h"
#include "methods/fedtad/generator.h"
#include "nn/models/gnn_model.h"

namespace fgl::methods::fedtad {

// Which form of L_sem, L_div and L_diverg (B.1.5). kCode: the official code (class-mean CE,
// FedGen diversity per teacher, L1 on logits); kPaper: Eqs. 8-10 (sums over nodes, mean pairwise
// cosine, KL(global || local)).
enum class LossForm { kCode = 0, kPaper = 1 };

// The distiller's settings; every value comes from FedTadParams (fedtad.proto states the
// defaults): use FromParams.
struct DistillationOptions {
  int iterations = 0;       // I
  int generator_steps = 0;  // I_g
  int distill_steps = 0;    // I_d
  int64_t num_pseudo = 0;   // B
  int64_t noise_dim = 0;
  int64_t knn = 0;
  float self_loop_weight = 0;
  double generator_lr = 0, generator_weight_decay = 0;
  double distill_lr = 0, distill_weight_decay = 0;
  double lambda_sem = 0, lambda_div = 0;
  // Fig. 4(b): each term of the generator's objective can be removed.
  bool use_sem = false, use_div = false, use_diverg = false;
  LossForm loss_form = LossForm::kCode;
  // Frozen models (teachers, and the global model in the generator step) keep dropout on, as the
  // official code's always-on dropout does.
  bool dropout_at_eval = false;
  // FedTadParams.official_dropout_draws: the global model forwarded per teacher, teacher logits
  // redrawn per distillation step, as the official code draws its dropout masks.
  bool official_dropout_draws = false;
};

// The distiller's settings from the method's parameters.
DistillationOptions FromParams(const FedTadParams& p, bool dropout_at_eval);

// One local model and its per-class weight [C] (reliability normalised across the teachers).
struct Teacher {
  fl::NamedTensors parameters;
  torch::Tensor weight;
};

// The randomness of the server loop, named so a differential test can hand the same draws to a
// port of the authors' code (methods/fedtad/reference/): the generator's initial weights (PyTorch's
// default initialisation under a seed derived from the run's), the seed of aggregate `aggregate`'s
// distillation in a round, and the noise z [rows, cols] of each iteration, drawn in turn from one
// stream per Distill call.
ConditionalGenerator InitialGenerator(int64_t noise_dim, int64_t num_classes, int64_t num_features, uint64_t seed);
uint64_t DistillSeed(uint64_t round_seed, int aggregate);
graph::Rng NoiseStream(uint64_t distill_seed);
torch::Tensor DrawNoise(graph::Rng& stream, int64_t rows, int64_t cols);

// phi [K, C] -> phi[k, c] / sum_k phi[k, c] (0 where a class has no reliability anywhere): the
// paper's normalisation across clients.
torch::Tensor NormalizeAcrossClients(const torch::Tensor& phi);

class DataFreeDistiller {
 public:
  // Models are `model_spec` (the clients' architecture); the generator is initialised from `seed`.
  static absl::StatusOr<std::unique_ptr<DataFreeDistiller>> Create(
      const std::string& model_spec, int64_t num_features, int64_t num_classes,
      const DistillationOptions& options, uint64_t seed, torch::Device device);

  // Refines `student` (live tensors, e.g. the server's global model) in place. `slot` selects
  // the persistent optimiser of this aggregate (one per cluster for personalised bases). The
  // generator and both optimisers persist across calls, as in the official code.
  absl::Status Distill(const fl::NamedTensors& student, const std::vector<Teacher>& teachers,
                       int slot, uint64_t seed);

  // Fig. 4(a) "r-eq", an oracle ablation: distil on this real graph instead of generated pseudo
  // graphs (the generator is not trained). Each node counts for the class the teachers' ensemble
  // gives it, since a data-free server has no labels. Features and view live on the device.
  void UseRealGraph(std::shared_ptr<const nn::NodeFeatures> features, std::shared_ptr<const nn::GraphView> view);

  // Generator and optimiser states under "fedtad." names, for checkpoints.
  void SaveState(fl::proto::Message* message) const;
  absl::Status RestoreState(const fl::proto::Message& message);

  const DistillationOptions& options() const { return options_; }

 private:
  struct Student {
    std::shared_ptr<nn::GnnModel> model;
    std::unique_ptr<torch::optim::Adam> optimizer;
  };
  DataFreeDistiller(std::string model_spec, int64_t num_features, int64_t num_classes,
                    DistillationOptions options, torch::Device device);
  absl::StatusOr<Student*> GetStudent(int slot);
  absl::Status LoadTeachers(const std::vector<Teacher>& teachers);
  torch::Tensor TeacherLoss(const torch::Tensor& student_logits, const torch::Tensor& teacher_logits,
                            const torch::Tensor& node_weight) const;
  // Per-node weights of each teacher for nodes labelled `labels`: phi[k, y_i], divided by the
  // class's node count in the code form (a mean within each class).
  std::vector<torch::Tensor> NodeWeights(const std::vector<Teacher>& teachers, const torch::Tensor& labels) const;
  absl::Status DistillOnRealGraph(Student& student, const std::vector<Teacher>& teachers, uint64_t seed);
  // I_d steps of the student towards the teachers' logits `local` on (features, view); with
  // official_dropout_draws the teachers' logits are redrawn in each step (pseudo graphs).
  absl::Status DistillSteps(Student& student, const nn::NodeFeatures& features, const nn::GraphView& view,
                            std::vector<torch::Tensor> local, const std::vector<torch::Tensor>& node_weight,
                            bool redraw_teachers = false);

  std::string model_spec_;
  int64_t num_features_, num_classes_;
  DistillationOptions options_;
  torch::Device device_;
  ConditionalGenerator generator_{nullptr};
  std::unique_ptr<torch::optim::Adam> generator_optimizer_;
  torch::Tensor labels_;       // pseudo labels [B]
  std::vector<std::shared_ptr<nn::GnnModel>> teacher_models_;
  std::vector<Student> students_;
  std::shared_ptr<const nn::NodeFeatures> real_features_;  // set: r-eq
  std::shared_ptr<const nn::GraphView> real_view_;
};

}  // namespace fgl::methods::fedtad

#endif  // FGL_METHODS_FEDTAD_DISTILLATION_H_
