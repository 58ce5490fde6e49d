#include "nn/trainer.h"

#include <ATen/Parallel.h>

#include "gmock/gmock.h"
#include "graph/csbm.h"
#include "graph/split.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::nn {
namespace {

using ::fgl::testing::StatusIs;
using ::testing::HasSubstr;

struct Fixture {
  graph::Dataset data;
  graph::NodeSplit split;
};

Fixture Csbm() {
  graph::CsbmOptions o;
  o.num_nodes = 600;
  o.num_features = 32;
  o.num_classes = 4;
  o.homophily = 0.85;
  Fixture f{*graph::MakeCsbm(o, 5), {}};
  f.split = *graph::ClassStratifiedSplit(f.data.labels, 4, 0.2, 0.4, 5);
  return f;
}

TrainResult Train(const Fixture& f, const std::string& spec, uint64_t seed) {
  torch::manual_seed(seed);
  auto model = MakeModel(spec, 32, 4);
  CHECK(model.ok());
  GraphView view = *GraphView::Create(f.data.graph);
  TrainOptions o;
  o.epochs = 60;
  auto r = TrainNodeClassifier(**model, f.data.features, view, f.data.labels, f.split, o);
  CHECK(r.ok()) << r.status();
  return *r;
}

TEST(TrainerTest, GraphModelsBeatTheMlpOnAHomophilousGraph) {
  const Fixture f = Csbm();
  const double mlp = Train(f, "mlp", 1).test_acc;
  const double gcn = Train(f, "gcn", 1).test_acc;
  EXPECT_GT(gcn, 0.85);
  EXPECT_GT(gcn, mlp + 0.05);
  EXPECT_GT(Train(f, "sage", 1).test_acc, 0.8);
  EXPECT_GT(Train(f, "appnp", 1).test_acc, 0.85);
}

TEST(TrainerTest, SameSeedSameResultOnAnyThreadCount) {
  const Fixture f = Csbm();
  at::set_num_threads(1);
  const TrainResult a = Train(f, "gat:heads=2,hidden=8", 3);
  at::set_num_threads(2);
  const TrainResult b = Train(f, "gat:heads=2,hidden=8", 3);
  EXPECT_EQ(a.test_acc, b.test_acc);
  EXPECT_EQ(a.best_epoch, b.best_epoch);
}

TEST(TrainerTest, RejectsBadInput) {
  Fixture f = Csbm();
  auto model = *MakeModel("gcn", 32, 4);
  GraphView view = *GraphView::Create(f.data.graph);
  graph::NodeSplit empty = f.split;
  empty.train = torch::zeros_like(f.split.train);
  EXPECT_THAT(TrainNodeClassifier(*model, f.data.features, view, f.data.labels, empty, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("training mask")));
  torch::Tensor labels = f.data.labels.clone();
  labels[0] = 9;
  EXPECT_THAT(TrainNodeClassifier(*model, f.data.features, view, labels, f.split, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("labels span [0, 9]")));
}

}  // namespace
}  // namespace fgl::nn
