#include "nn/models/gnn_model.h"

#include <set>

#include "gmock/gmock.h"
#include "graph/csbm.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::nn {
namespace {

using ::fgl::testing::StatusIs;
using ::testing::HasSubstr;

class GnnModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    graph::CsbmOptions o;
    o.num_nodes = 200;
    o.num_features = 12;
    o.num_classes = 4;
    data_ = *graph::MakeCsbm(o, 1);
    view_ = std::make_unique<GraphView>(*GraphView::Create(data_.graph));
  }
  graph::Dataset data_;
  std::unique_ptr<GraphView> view_;
};

TEST_F(GnnModelTest, EverySpecGivesEmbeddingAndLogits) {
  struct Case {
    std::string spec;
    int64_t embedding_dim;
  };
  for (const Case& c : std::vector<Case>{{"gcn", 64}, {"gcn:layers=4,hidden=16", 16},
                                         {"gcn:layers=8,jk=max", 64}, {"gcn:layers=3,jk=cat", 128},
                                         {"gat:heads=8,hidden=8", 64}, {"gat:heads=1,hidden=64", 64},
                                         {"sage", 64}, {"graphsage", 64}, {"gin", 64},
                                         {"sgc:k=2", 4}, {"sgc:k=2,hidden=64", 64},
                                         {"appnp:k=10,alpha=0.1", 64}, {"mlp", 64},
                                         {"mlp:layers=1", 12}}) {
    ASSERT_OK_AND_ASSIGN(std::shared_ptr<GnnModel> m, MakeModel(c.spec, 12, 4));
    for (bool training : {true, false}) {
      m->train(training);
      ModelOutput out = m->forward(data_.features, *view_);
      EXPECT_EQ(out.logits.sizes(), (std::vector<int64_t>{200, 4})) << c.spec;
      EXPECT_EQ(out.embedding.sizes(), (std::vector<int64_t>{200, c.embedding_dim})) << c.spec;
      EXPECT_EQ(m->embedding_dim(), c.embedding_dim) << c.spec;
      EXPECT_TRUE(torch::isfinite(out.logits).all().item<bool>()) << c.spec;
    }
    // body ∪ head is every parameter, and the head is non-empty.
    std::set<void*> grouped;
    for (const std::string& g : m->parameter_groups())
      for (const torch::Tensor& t : m->group_parameters(g)) grouped.insert(t.data_ptr());
    EXPECT_EQ(grouped.size(), m->parameters().size()) << c.spec;
    EXPECT_FALSE(m->group_parameters("head").empty()) << c.spec;
  }
}

TEST_F(GnnModelTest, EvalIsDeterministicAndDropoutIsNot) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<GnnModel> m, MakeModel("gcn", 12, 4));
  m->eval();
  EXPECT_TRUE(torch::equal(m->forward(data_.features, *view_).logits,
                           m->forward(data_.features, *view_).logits));
  m->train();
  EXPECT_FALSE(torch::equal(m->forward(data_.features, *view_).logits,
                            m->forward(data_.features, *view_).logits));
}

TEST_F(GnnModelTest, BadSpecsAndInputsAreErrors) {
  EXPECT_THAT(MakeModel("gnc", 12, 4), StatusIs(absl::StatusCode::kNotFound, HasSubstr("gnc")));
  EXPECT_THAT(MakeModel("gcn:hiden=3", 12, 4),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("hiden")));
  EXPECT_THAT(MakeModel("gcn:dropout=1.5", 12, 4),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("dropout")));
  EXPECT_THAT(MakeModel("gcn:jk=sum", 12, 4), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("jk=sum")));
  EXPECT_THAT(MakeModel("gcn", 12, 1), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("num_classes")));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<GnnModel> m, MakeModel("gcn", 12, 4));
  EXPECT_THAT(CheckModelInput(*m, torch::zeros({200, 13}), *view_),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("width 13")));
  EXPECT_THAT(CheckModelInput(*m, torch::zeros({199, 12}), *view_),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("199 rows")));
  torch::Tensor nan = data_.features.clone();
  nan[3][4] = std::nanf("");
  EXPECT_THAT(CheckModelInput(*m, nan, *view_),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("1 NaN/Inf")));
}

}  // namespace
}  // namespace fgl::nn
