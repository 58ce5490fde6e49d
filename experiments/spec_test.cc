#include "experiments/spec.h"

#include <google/protobuf/text_format.h>

#include <fstream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "methods/fedprox/fedprox.pb.h"
#include "methods/fedpub/fedpub.pb.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::experiments {
namespace {

using ::fgl::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

std::string Write(const std::string& name, const std::string& text) {
  const std::string path = std::string(::testing::TempDir()) + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(SpecTest, LoadsResolvesAndConverts) {
  const std::string path = Write("ok.textproto", R"(
    name: "fedprox cora 5"
    dataset: "cora"
    clients: 5
    method: "fedprox"
    fedprox { mu: 0.01 }
    eval { dropout_at_eval: true }
  )");
  ASSERT_OK_AND_ASSIGN(proto::Experiment e, LoadExperiment(path));
  ASSERT_OK_AND_ASSIGN(proto::Experiment r, Resolve(e, path));
  EXPECT_EQ(r.rounds(), 100);
  EXPECT_EQ(r.partition_seed(), 2024u);
  EXPECT_EQ(r.seeds_size(), 3);
  const fl::FederationOptions o = ToFederationOptions(r, 7);
  ASSERT_EQ(o.spec.method_params_size(), 1);
  methods::fedprox::FedProxParams mu;
  ASSERT_TRUE(o.spec.method_params(0).UnpackTo(&mu));
  EXPECT_EQ(mu.mu(), 0.01);
  EXPECT_TRUE(o.eval().dropout_at_eval());
  EXPECT_EQ(o.seed, 7u);
  EXPECT_EQ(o.spec.clients(), 5);
}

TEST(SpecTest, RejectsUnknownFieldsAndMethodsWithFileAndLine) {
  const std::string typo = Write("typo.textproto", "dataset: \"cora\"\nmethod: \"fedavg\"\nclinets: 5\n");
  EXPECT_THAT(LoadExperiment(typo), StatusIs(absl::StatusCode::kInvalidArgument,
                                             HasSubstr("typo.textproto:3:")));
  EXPECT_THAT(LoadExperiment(typo), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("clinets")));
  // A spec written before the evaluation settings were enums says how to write them now.
  const std::string quoted = Write("quoted.textproto", "dataset: \"cora\"\nmethod: \"fedavg\"\neval { round: \"last\" }\n");
  EXPECT_THAT(LoadExperiment(quoted), StatusIs(absl::StatusCode::kInvalidArgument,
                                               AllOf(HasSubstr("quoted.textproto:3:"), HasSubstr("round: BEST_VAL"))));
  proto::Experiment e;
  e.set_dataset("cora");
  e.set_method("fedavgg");
  EXPECT_THAT(Resolve(e, "x.textproto"), StatusIs(absl::StatusCode::kInvalidArgument,
                                                  HasSubstr("x.textproto: unknown method 'fedavgg'")));
  EXPECT_EQ(GetMethodStatus("fedavgg"), MethodStatus::kUnknown);
  EXPECT_EQ(GetMethodStatus("centralized"), MethodStatus::kUnknown);  // a spec field, not a method
  // A plug-in composes with built methods; an unknown method or plug-in is unknown.
  EXPECT_EQ(GetMethodStatus("fedprox+fedtad"), MethodStatus::kImplemented);
  EXPECT_EQ(GetMethodStatus("fedgh+fedtad"), MethodStatus::kUnknown);
  EXPECT_EQ(GetMethodStatus("fedprox+nosuchplugin"), MethodStatus::kUnknown);
  e.set_method("fedavg");
  e.mutable_fedtad()->set_iterations(2);  // plug-in options only with the plug-in
  EXPECT_THAT(Resolve(e, "x"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("fedtad params")));
  e.set_method("fedprox+fedtad");
  EXPECT_OK(Resolve(e, "x").status());
  e.clear_fedtad();
  e.mutable_fedpub()->set_l1(0);  // typed method params only with their method
  EXPECT_THAT(Resolve(e, "x"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("fedpub params")));
  e.set_method("fedpub");
  ASSERT_OK_AND_ASSIGN(proto::Experiment pub, Resolve(e, "x"));
  const fl::FederationOptions pub_options = ToFederationOptions(pub, 2024);
  methods::fedpub::FedPubParams pub_params;
  ASSERT_EQ(pub_options.spec.method_params_size(), 1);
  ASSERT_TRUE(pub_options.spec.method_params(0).UnpackTo(&pub_params));
  EXPECT_EQ(pub_params.l1(), 0);
  EXPECT_FALSE(pub_params.has_loc_l2());  // unset: the declared default
  EXPECT_EQ(pub_params.loc_l2(), 1e-3);
  e.mutable_fedpub()->set_loc_l2(-1);
  EXPECT_THAT(Resolve(e, "x"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("loc_l2")));
  e.clear_fedpub();
  EXPECT_EQ(GetMethodStatus("fedavg"), MethodStatus::kImplemented);
  e.set_method("fedavg");
  e.set_client_fraction(1.5);
  EXPECT_THAT(Resolve(e, "x"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("client_fraction")));
  e.set_client_fraction(1);
  e.set_momentum(0.9);  // Adam has no momentum to set
  EXPECT_THAT(Resolve(e, "x"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("momentum")));
  e.set_optimizer(fl::proto::FederationSpec::SGD);
  e.set_momentum(1);
  EXPECT_THAT(Resolve(e, "x"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("momentum")));
  e.set_momentum(0);  // SGD's default, spelled: the same run as unspelled
  ASSERT_OK_AND_ASSIGN(proto::Experiment sgd, Resolve(e, "x"));
  EXPECT_FALSE(sgd.has_momentum());
  EXPECT_THAT(LoadExperiment("/nonexistent.textproto"), StatusIs(absl::StatusCode::kNotFound, HasSubstr("nonexistent")));
}

TEST(SpecTest, ARowCanTurnDropoutAtEvalOffOverTheBase) {
  proto::Table t;
  t.mutable_base()->set_dataset("cora");
  t.mutable_base()->set_method("fedavg");
  t.mutable_base()->mutable_eval()->set_dropout_at_eval(true);
  auto* row = t.add_rows();
  row->set_key("off");
  row->mutable_overrides()->mutable_eval()->set_dropout_at_eval(false);
  t.add_rows()->set_key("on");
  t.add_columns()->set_key("c");
  for (const char* r : {"off", "on"}) {
    auto* cell = t.add_cells();
    cell->set_row(r);
    cell->set_column("c");
  }
  ASSERT_OK_AND_ASSIGN(proto::Experiment off, CellExperiment(t, t.cells(0)));
  ASSERT_OK_AND_ASSIGN(proto::Experiment on, CellExperiment(t, t.cells(1)));
  ASSERT_OK_AND_ASSIGN(off, Resolve(off, "x"));
  ASSERT_OK_AND_ASSIGN(on, Resolve(on, "x"));
  EXPECT_FALSE(off.eval().dropout_at_eval());
  EXPECT_TRUE(on.eval().dropout_at_eval());
  // An explicit false is the same experiment as an absent one.
  proto::Experiment absent = off;
  absent.mutable_eval()->clear_dropout_at_eval();
  EXPECT_EQ(CanonicalText(off), CanonicalText(absent));
}

// Record keys hash CanonicalText, which prints EvalProtocol's enum settings as the strings they
// were before issue #67 (lowercase, quoted, in the strings' place), so every key stays the same;
// any other text of the spec uses the enum names and parses back.
TEST(SpecTest, CanonicalTextPrintsEvalSettingsAsTheStringsTheyWere) {
  proto::Experiment e;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(R"pb(
    dataset: "cora" method: "fedego" rounds: 3
    eval {
      model: PERSONALIZED weighting: UNWEIGHTED round: BEST_TEST dropout_at_eval: true
      global_test: WHOLE_GRAPH early_stop { after_round: 100 loss_ratio: 1.3 }
    }
  )pb", &e));
  ASSERT_OK_AND_ASSIGN(const proto::Experiment resolved, Resolve(e, "t"));
  const std::string text = CanonicalText(resolved);
  EXPECT_THAT(text, HasSubstr(R"(eval { model: "personalized" weighting: "unweighted" round: "best_test" )"
                              R"(dropout_at_eval: true global_test: "whole_graph" )"
                              R"(early_stop { after_round: 100 loss_ratio: 1.3 } })"));
  // The defaults resolved, and SERVER_NODES (zero) not printed, as "" was not.
  proto::Experiment plain;
  plain.set_dataset("cora");
  plain.set_method("fedavg");
  ASSERT_OK_AND_ASSIGN(const proto::Experiment defaults, Resolve(plain, "t"));
  EXPECT_THAT(CanonicalText(defaults), HasSubstr(R"( eval { model: "global" weighting: "node" round: "best_val" } )"));
  std::string parsable;
  google::protobuf::TextFormat::PrintToString(resolved, &parsable);
  proto::Experiment back;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(parsable, &back)) << parsable;
  EXPECT_EQ(CanonicalText(back), text);
}

TEST(SpecTest, SetOverridesAndCanonicalTextKeysTheCache) {
  proto::Experiment e;
  e.set_dataset("cora");
  e.set_method("fedavg");
  ASSERT_OK(ApplySet("clients=5", &e));
  ASSERT_OK(ApplySet("eval.round=LAST", &e));
  ASSERT_OK(ApplySet("split=stratified:train=0.6,val=0.2", &e));
  EXPECT_EQ(e.clients(), 5);
  EXPECT_EQ(e.eval().round(), fl::proto::EvalProtocol::LAST);
  EXPECT_EQ(e.split(), "stratified:train=0.6,val=0.2");
  ASSERT_OK(ApplySet("seeds=7", &e));
  ASSERT_OK(ApplySet("seeds=8", &e));  // replaces, never appends
  ASSERT_EQ(e.seeds_size(), 1);
  EXPECT_EQ(e.seeds(0), 8u);
  e.clear_seeds();
  EXPECT_THAT(ApplySet("clinets=5", &e), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("clinets")));
  EXPECT_THAT(ApplySet("clients=five", &e), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("clients")));
  ASSERT_OK_AND_ASSIGN(proto::Experiment a, Resolve(e, "a"));
  proto::Experiment changed = e;
  changed.set_lr(0.02);
  ASSERT_OK_AND_ASSIGN(proto::Experiment b, Resolve(changed, "b"));
  EXPECT_NE(CanonicalText(a), CanonicalText(b));
  ASSERT_OK_AND_ASSIGN(proto::Experiment a2, Resolve(e, "a"));
  EXPECT_EQ(CanonicalText(a), CanonicalText(a2));
  // The cache key: stable, and different for another hyperparameter, seed or result version;
  // the name and seed list do not matter (each run is one seed).
  EXPECT_EQ(ResultCacheKey(a, 1, "v1"), ResultCacheKey(a2, 1, "v1"));
  EXPECT_NE(ResultCacheKey(a, 1, "v1"), ResultCacheKey(b, 1, "v1"));
  EXPECT_NE(ResultCacheKey(a, 1, "v1"), ResultCacheKey(a, 2, "v1"));
  EXPECT_NE(ResultCacheKey(a, 1, "v1"), ResultCacheKey(a, 1, "v2"));
  a2.set_name("renamed");
  a2.add_seeds(99);
  EXPECT_EQ(ResultCacheKey(a, 1, "v1"), ResultCacheKey(a2, 1, "v1"));
}

// Issue #68 (10): --set takes one field and one value; its value is never pasted into a textproto.
TEST(SpecTest, SetTakesOneFieldAndOneValue) {
  proto::Experiment e;
  e.set_dataset("cora");
  e.set_method("fedavg");
  e.set_rounds(7);
  // Text after the value was parsed as further fields: "rounds: 1" also set rounds.
  EXPECT_THAT(ApplySet("clients=3 rounds: 1", &e), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("clients")));
  EXPECT_THAT(ApplySet("clients=3 rounds=1", &e), StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  EXPECT_THAT(ApplySet("fedprox.mu=0.1 } rounds: 1 fedprox {", &e), StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  EXPECT_THAT(ApplySet("dataset=\"cora\" rounds: 1", &e), StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  EXPECT_THAT(ApplySet("seeds=[1, 2] rounds: 1", &e), StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  EXPECT_EQ(e.rounds(), 7);
  EXPECT_FALSE(e.has_clients());
  EXPECT_TRUE(e.seeds().empty());  // a refused list leaves the list as it was
  // An empty value ran the default (method "" merged as nothing): it is an error now.
  EXPECT_THAT(ApplySet("method=", &e), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty value")));
  EXPECT_THAT(ApplySet("dataset=", &e), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty value")));
  EXPECT_THAT(ApplySet("dataset=\"\"", &e), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty value")));
  EXPECT_THAT(ApplySet("clients=", &e), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty value")));
  EXPECT_THAT(ApplySet("seeds=[]", &e), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty value")));
  EXPECT_EQ(e.method(), "fedavg");
  EXPECT_EQ(e.dataset(), "cora");
  // A group of options is set one field at a time.
  EXPECT_THAT(ApplySet("eval={round: LAST}", &e),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("set one at a time (eval.NAME=VALUE)")));
  EXPECT_THAT(ApplySet("=5", &e), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("name=value")));
  EXPECT_THAT(ApplySet("clients", &e), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("name=value")));

  // Every valid form still works: nested and doubly nested fields, enums, bools, quoted and bare
  // strings (with '=' and ',' in them), lists, and values equal to the default.
  ASSERT_OK(ApplySet("method=nfedgnn", &e));
  ASSERT_OK(ApplySet("nfedgnn.laplacian_weight=10", &e));
  EXPECT_EQ(e.nfedgnn().laplacian_weight(), 10);
  ASSERT_OK(ApplySet("eval.early_stop.after_round=5", &e));
  EXPECT_EQ(e.eval().early_stop().after_round(), 5);
  ASSERT_OK(ApplySet("eval.dropout_at_eval=true", &e));
  EXPECT_TRUE(e.eval().dropout_at_eval());
  ASSERT_OK(ApplySet("model=\"gcn:layers=2,hidden=16\"", &e));
  EXPECT_EQ(e.model(), "gcn:layers=2,hidden=16");
  ASSERT_OK(ApplySet("partitioner=louvain", &e));
  EXPECT_EQ(e.partitioner(), "louvain");
  ASSERT_OK(ApplySet("seeds=[1, 2,3]", &e));
  EXPECT_THAT(std::vector<uint64_t>(e.seeds().begin(), e.seeds().end()), ::testing::ElementsAre(1, 2, 3));
  ASSERT_OK(ApplySet("seeds=9", &e));
  EXPECT_THAT(std::vector<uint64_t>(e.seeds().begin(), e.seeds().end()), ::testing::ElementsAre(9));
  ASSERT_OK(ApplySet("lr=1e-2", &e));
  EXPECT_EQ(e.lr(), 0.01);
  ASSERT_OK(ApplySet("optimizer=SGD", &e));
  EXPECT_EQ(e.optimizer(), fl::proto::FederationSpec::SGD);
  // Back to the enum's zero (ADAM): a merge would have skipped it, a --set replaces.
  ASSERT_OK(ApplySet("optimizer=ADAM", &e));
  EXPECT_EQ(e.optimizer(), fl::proto::FederationSpec::ADAM);
  EXPECT_THAT(ApplySet("optimizer=ADAMW_TYPO", &e), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("optimizer")));
  // A method's params select it in the oneof, as a textproto's `fedprox { mu: 0.1 }` does.
  ASSERT_OK(ApplySet("fedprox.mu=0.1", &e));
  EXPECT_TRUE(e.has_fedprox());
  EXPECT_FALSE(e.has_nfedgnn());
}

// Zero is a value, not "unset"; non-finite numbers never reach a run. Each error names the option.
TEST(SpecTest, RejectsZeroNonFiniteAndOutOfRangeValuesNamingTheField) {
  auto resolve_with = [](const std::string& set) {
    proto::Experiment e;
    e.set_dataset("cora");
    e.set_method("fedtad");
    if (absl::Status s = ApplySet(set, &e); !s.ok()) return s;
    return Resolve(e, "flags").status();
  };
  EXPECT_THAT(resolve_with("clients=0"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("clients = 0")));
  EXPECT_THAT(resolve_with("rounds=0"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("rounds = 0")));
  EXPECT_THAT(resolve_with("client_fraction=0"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("client_fraction = 0")));
  EXPECT_THAT(resolve_with("lr=nan"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("lr = nan")));
  EXPECT_THAT(resolve_with("lr=0"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("lr = 0")));
  EXPECT_THAT(resolve_with("weight_decay=inf"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("weight_decay = inf")));
  EXPECT_THAT(resolve_with("fedtad.generator_lr=nan"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("fedtad.generator_lr = nan")));
  EXPECT_THAT(resolve_with("fedtad.knn=0"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("fedtad.knn = 0")));
  EXPECT_THAT(resolve_with("fedtad.kNN=3"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no field 'kNN'")));
  {
    proto::Experiment prox;  // another method's params are refused, not swallowed by FedProx's defaults
    prox.set_dataset("cora");
    prox.set_method("fedprox");
    ASSERT_OK(ApplySet("moon.mu=1", &prox));
    EXPECT_THAT(Resolve(prox, "x"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("moon params")));
  }
  // An enum setting takes its value's name; a bad one is refused naming the field, the value and
  // what it could be (the lowercase strings of before issue #67 included).
  for (const std::string bad : {"glob", "local"}) {
    EXPECT_THAT(resolve_with("eval.model=" + bad),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr("--set eval.model=" + bad), HasSubstr("\"" + bad + "\" for field \"model\""),
                               HasSubstr("eval.model is one of GLOBAL, LOCAL, PERSONALIZED"))));
  }
  EXPECT_OK(resolve_with("eval.model=LOCAL"));
  // Where zero is a real setting it is listed; an enum's "unset" is not.
  EXPECT_THAT(resolve_with("eval.global_test=x"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is one of SERVER_NODES, WHOLE_GRAPH)")));
  // A real zero where zero means something: weight decay 0 and partition seed 0 are kept.
  proto::Experiment e;
  e.set_dataset("cora");
  e.set_method("fedavg");
  ASSERT_OK(ApplySet("weight_decay=0", &e));
  ASSERT_OK(ApplySet("partition_seed=0", &e));
  ASSERT_OK_AND_ASSIGN(proto::Experiment r, Resolve(e, "x"));
  EXPECT_EQ(r.weight_decay(), 0);
  EXPECT_EQ(r.partition_seed(), 0u);
}

// Every documented option is reachable: each field of a method's params proto can be set from a
// textproto and from --set, and arrives in the run's FederationSpec.
TEST(SpecTest, EveryMethodParameterIsSettableAndTravelsToTheRun) {
  const google::protobuf::Descriptor* d = proto::Experiment::descriptor();
  int fields = 0;
  for (int i = 0; i < d->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* params = d->field(i);
    if (params->message_type() == nullptr || params->name() == "eval") continue;
    // The method that takes these params (the field is named after it).
    const std::string method = params->name();
    for (int j = 0; j < params->message_type()->field_count(); ++j) {
      const google::protobuf::FieldDescriptor* f = params->message_type()->field(j);
      proto::Experiment e;
      e.set_dataset("cora");
      e.set_method(method);
      // The field's own default, set explicitly, is always valid.
      std::string value;
      const google::protobuf::Message& defaults =
          *google::protobuf::MessageFactory::generated_factory()->GetPrototype(params->message_type());
      google::protobuf::TextFormat::PrintFieldValueToString(defaults, f, -1, &value);
      if (f->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_BOOL) value = f->default_value_bool() ? "true" : "false";
      if (method == "fedsage_plus" && f->name() == "cross_client") value = "true";
      const absl::Status set = ApplySet(absl::StrCat(method, ".", f->name(), "=", value), &e);
      ASSERT_TRUE(set.ok()) << f->full_name() << ": " << set;
      absl::StatusOr<proto::Experiment> r = Resolve(e, "x");
      ASSERT_TRUE(r.ok()) << f->full_name() << "=" << value << ": " << r.status();
      const fl::proto::FederationSpec spec = ToFederationSpec(*r);
      ASSERT_EQ(spec.method_params_size(), 1) << f->full_name();
      std::unique_ptr<google::protobuf::Message> got(defaults.New());
      ASSERT_TRUE(spec.method_params(0).UnpackTo(got.get()));
      EXPECT_TRUE(got->GetReflection()->HasField(*got, f)) << f->full_name();
      ++fields;
    }
  }
  EXPECT_GE(fields, 40);
}

// Experiment carries FederationSpec's fields flat: same names, numbers and types, so a
// serialised Experiment is a FederationSpec.
TEST(SpecTest, ExperimentCarriesEveryFederationSpecField) {
  const google::protobuf::Descriptor* spec = fl::proto::FederationSpec::descriptor();
  const google::protobuf::Descriptor* experiment = proto::Experiment::descriptor();
  for (int i = 0; i < spec->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = spec->field(i);
    if (f->name() == "method_params") continue;  // built from Experiment's typed fields
    const google::protobuf::FieldDescriptor* g = experiment->FindFieldByNumber(f->number());
    ASSERT_NE(g, nullptr) << f->name();
    EXPECT_EQ(g->name(), f->name());
    EXPECT_EQ(g->type(), f->type()) << f->name();
    EXPECT_EQ(g->has_presence(), f->has_presence()) << f->name();
    EXPECT_EQ(g->message_type(), f->message_type()) << f->name();
  }
  EXPECT_EQ(experiment->FindFieldByNumber(spec->FindFieldByName("method_params")->number()), nullptr);
}

// Every FederationSpec field an Experiment sets reaches the run's spec field by field, presence
// kept (an unset optional stays unset, so resolution fills its default), and a resolved
// Experiment keeps every resolved value.
TEST(SpecTest, SpecFieldsTravelFieldByFieldWithPresence) {
  proto::Experiment e;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(R"pb(
    name: "t" dataset: "cora" partitioner: "metis" clients: 7 partition_seed: 3 split: "stratified"
    model: "gcn:hidden=16" shared_group: "head" method: "fedprox" rounds: 4 local_epochs: 2
    lr: 0.05 weight_decay: 0 client_fraction: 0.5 optimizer: SGD momentum: 0.9
    eval { model: LOCAL weighting: UNWEIGHTED round: LAST dropout_at_eval: true }
    seeds: [5, 6] fedprox { mu: 0.25 }
  )pb", &e));
  const fl::proto::FederationSpec spec = ToFederationSpec(e);
  EXPECT_EQ(spec.dataset(), "cora");
  EXPECT_EQ(spec.partitioner(), "metis");
  EXPECT_EQ(spec.clients(), 7);
  EXPECT_EQ(spec.partition_seed(), 3u);
  EXPECT_EQ(spec.shared_group(), "head");
  EXPECT_EQ(spec.rounds(), 4);
  EXPECT_TRUE(spec.has_weight_decay());  // set to 0: present, not defaulted
  EXPECT_EQ(spec.weight_decay(), 0);
  EXPECT_EQ(spec.optimizer(), fl::proto::FederationSpec::SGD);
  EXPECT_EQ(spec.momentum(), 0.9);
  EXPECT_EQ(spec.eval().round(), fl::proto::EvalProtocol::LAST);
  EXPECT_TRUE(spec.eval().dropout_at_eval());
  ASSERT_EQ(spec.method_params_size(), 1);  // fedprox's, packed

  proto::Experiment sparse;
  sparse.set_dataset("cora");
  sparse.set_method("fedavg");
  const fl::proto::FederationSpec bare = ToFederationSpec(sparse);
  EXPECT_FALSE(bare.has_lr());
  EXPECT_FALSE(bare.has_clients());
  EXPECT_FALSE(bare.has_eval());

  ASSERT_OK_AND_ASSIGN(const proto::Experiment resolved, Resolve(e, "t"));
  EXPECT_EQ(resolved.name(), "t");  // Experiment's own fields kept
  EXPECT_EQ(resolved.seeds_size(), 2);
  EXPECT_EQ(resolved.fedprox().mu(), 0.25);
  EXPECT_EQ(resolved.momentum(), 0.9);
  EXPECT_EQ(resolved.eval().weighting(), fl::proto::EvalProtocol::UNWEIGHTED);
  EXPECT_TRUE(resolved.has_weight_decay());
}

TEST(TableTest, CellsMergeBaseRowColumnAndRejectBadKeys) {
  const std::string path = Write("t.textproto", R"(
    id: "t" title: "T" metric: "acc"
    base { partitioner: "louvain" rounds: 50 seeds: 1 seeds: 2 }
    rows { key: "fedavg" label: "FedAvg" overrides { method: "fedavg" } }
    rows { key: "fedprox" label: "FedProx" overrides { method: "fedprox" } }
    columns { key: "cora_5" label: "Cora 5" overrides { dataset: "cora" clients: 5 } }
    cells { row: "fedavg" column: "cora_5" paper { mean: 80.6 std: 0.3 present: true } }
    cells { row: "fedprox" column: "cora_5" paper { mean: 80.9 std: 0.2 present: true }
            overrides { seeds: 9 } }
  )");
  ASSERT_OK_AND_ASSIGN(proto::Table t, LoadTable(path));
  ASSERT_OK_AND_ASSIGN(proto::Experiment a, CellExperiment(t, t.cells(0)));
  EXPECT_EQ(a.method(), "fedavg");
  EXPECT_EQ(a.clients(), 5);
  EXPECT_EQ(a.rounds(), 50);
  EXPECT_EQ(a.seeds_size(), 2);
  ASSERT_OK_AND_ASSIGN(proto::Experiment b, CellExperiment(t, t.cells(1)));
  ASSERT_EQ(b.seeds_size(), 1);  // the cell's list replaces, never appends
  EXPECT_EQ(b.seeds(0), 9u);
  const std::string bad = Write("bad.textproto", R"(
    id: "t" rows { key: "a" } columns { key: "c" } cells { row: "b" column: "c" })");
  EXPECT_THAT(LoadTable(bad), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown row 'b'")));
  const std::string twice = Write("twice.textproto", R"(
    id: "t" rows { key: "a" } columns { key: "c" } cells { row: "a" column: "c" }
    cells { row: "a" column: "c" })");
  EXPECT_THAT(LoadTable(twice), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("twice")));
  const std::string claim = Write("claim.textproto", R"(
    id: "t" rows { key: "a" } columns { key: "c" } claims { text: "x" row: "a" others: "b" })");
  EXPECT_THAT(LoadTable(claim), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown row 'b'")));
  // A region's keys are rows and columns of the table, and only a region claim has one.
  const std::string region = Write("region.textproto", R"(
    id: "t" rows { key: "a" } columns { key: "c" }
    claims { text: "x" kind: BEST_IN_REGION region_rows: "a" region_columns: "d" })");
  // The error names the file, the claim, the key and the field that holds it.
  EXPECT_THAT(LoadTable(region), StatusIs(absl::StatusCode::kInvalidArgument,
                                          AllOf(HasSubstr(region), HasSubstr("claim 'x'"),
                                                HasSubstr("unknown column 'd' in region_columns"))));
  const std::string region_row = Write("region_row.textproto", R"(
    id: "t" rows { key: "a" } columns { key: "c" }
    claims { text: "best of a and b" kind: BEST_IN_REGION region_rows: "a" region_rows: "b" region_columns: "c" })");
  EXPECT_THAT(LoadTable(region_row), StatusIs(absl::StatusCode::kInvalidArgument,
                                              AllOf(HasSubstr(region_row), HasSubstr("claim 'best of a and b'"),
                                                    HasSubstr("unknown row 'b' in region_rows"))));
  const std::string good_region = Write("good_region.textproto", R"(
    id: "t" rows { key: "a" } rows { key: "b" } columns { key: "c" }
    claims { text: "x" kind: BEST_IN_REGION region_rows: "a" region_rows: "b" region_columns: "c" })");
  EXPECT_OK(LoadTable(good_region));
  const std::string half_region = Write("half_region.textproto", R"(
    id: "t" rows { key: "a" } columns { key: "c" } claims { text: "x" kind: BEST_IN_REGION region_rows: "a" })");
  EXPECT_THAT(LoadTable(half_region),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("needs region_rows and region_columns")));
  const std::string stray_region = Write("stray_region.textproto", R"(
    id: "t" rows { key: "a" } columns { key: "c" } claims { text: "x" row: "a" region_rows: "a" })");
  EXPECT_THAT(LoadTable(stray_region),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("belong to BEST_IN_REGION")));
  // A column claim's `others` are columns.
  const std::string column_claim = Write("column_claim.textproto", R"(
    id: "t" rows { key: "a" } columns { key: "c" } columns { key: "d" }
    claims { text: "x" kind: COLUMN_AT_LEAST_OTHERS column: "c" others: "a" })");
  EXPECT_THAT(LoadTable(column_claim), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown column 'a'")));
  const std::string no_column = Write("no_column.textproto", R"(
    id: "t" rows { key: "a" } columns { key: "c" } claims { text: "x" kind: COLUMN_AT_LEAST_OTHERS })");
  EXPECT_THAT(LoadTable(no_column), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("names no column")));
  const std::string good = Write("good_column_claim.textproto", R"(
    id: "t" rows { key: "a" } columns { key: "c" } columns { key: "d" }
    claims { text: "x" kind: COLUMN_AT_LEAST_OTHERS column: "c" others: "d" })");
  EXPECT_TRUE(LoadTable(good).ok());
}

}  // namespace
}  // namespace fgl::experiments
