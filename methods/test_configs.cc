#include "methods/test_configs.h"

#include <google/protobuf/text_format.h>

#include <memory>

#include "fl/registry.h"
#include "fl/testing/client_data.h"
#include "glog/logging.h"
#include "methods/adafgl/adafgl.pb.h"
#include "methods/fedgkc/fedgkc.pb.h"
#include "methods/fedkd/fedkd.pb.h"
#include "methods/fedmpa/fedmpa.pb.h"

namespace fgl::methods::testing {

std::string TestConfig::Name() const {
  std::string name = method + (params.empty() ? "" : "_" + params);
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

std::vector<TestConfig> EveryConfig() {
  std::vector<TestConfig> configs;
  for (const std::string& m : fl::MethodNames()) configs.push_back({m, ""});
  for (const std::string& plugin : fl::PluginNames()) configs.push_back({"fedavg+" + plugin, ""});
  // Branches the defaults do not reach in a few rounds.
  configs.push_back({"gcfl_plus", "eps1: 1e9 eps2: 0 seq_length: 1 min_round: 0"});
  configs.push_back({"fedsage_plus", "gen_rounds: 1"});
  configs.push_back({"fedtad", "loss_form: PAPER"});
  configs.push_back({"fedproto", "aggregation: OPENFGL_CLIENT_SIZE"});
  configs.push_back({"fedtad", "reliability: EQUAL"});
  configs.push_back({"fedgkc", "smkd: false kama: false"});
  configs.push_back({"fedego", "mixup: false reduction_averaging: false"});
  configs.push_back({"fedavg", "weighting: UNIFORM"});
  configs.push_back({"fedprox", "mu: 1 proximal: NORM_PER_ELEMENT adaptive_mu: true weighting: UNIFORM"});
  configs.push_back({"fedprox", "proximal_gradient: false"});
  configs.push_back({"fedtad", "reliability: NODE_COUNT reliability_noise: 0.1"});
  for (const char* base : {"fedprox", "gcfl_plus", "fedpub", "fedgta", "fedsage_plus"}) {
    configs.push_back({std::string(base) + "+fedtad", ""});
  }
  return configs;
}

fl::FederationOptions SmallRun(const TestConfig& config, int rounds) {
  fl::FederationOptions o = fl::testing::SmallFederation(config.method);
  o.spec.set_model("gcn:layers=3,hidden=16,jk=last,masked=true");  // FED-PUB needs masks
  o.spec.set_rounds(rounds);
  // Each client's own model is scored: it reflects what every method (and a plug-in on a
  // personalised base) sent it, where the server's broadcast may not.
  o.spec.mutable_eval()->set_model(fl::proto::EvalProtocol::LOCAL);
  if (!config.params.empty()) {
    absl::StatusOr<fl::MethodFactories> m = fl::FindMethod(config.method);
    CHECK(m.ok() && !m->params.empty()) << config.method << " takes no parameters";
    std::unique_ptr<google::protobuf::Message> p(
        google::protobuf::MessageFactory::generated_factory()->GetPrototype(m->params.front().type)->New());
    CHECK(google::protobuf::TextFormat::ParseFromString(config.params, p.get())) << config.params;
    o.spec.add_method_params()->PackFrom(*p);
  }
  // FedMpa's family runs APPNP; FedMpa/FedMpae's local stage follows one FedMLP round.
  if (config.method == "fedmpa" || config.method == "fedmpae" || config.method == "fedmlp" ||
      config.method == "locmpa") {
    o.spec.set_model("appnp:layers=2,hidden=16,k=3,alpha=0.1,prop_dropout=0.5");
    fedmpa::FedMpaParams p;
    if (o.spec.method_params_size() > 0) CHECK(o.spec.method_params(0).UnpackTo(&p));
    p.set_federated_rounds(1);  // the local stage in round 2, idle rounds after it
    if (!p.has_max_epochs()) p.set_max_epochs(8);
    if (!p.has_patience()) p.set_patience(4);
    o.spec.clear_method_params();
    o.spec.add_method_params()->PackFrom(p);
  }
  // LG-FedAvg shares a linear head.
  if (config.method == "lg_fedavg") {
    o.spec.set_model("gcn:layers=3,hidden=16,jk=last");
    o.spec.set_shared_group("head");
  }
  // FedKD distils the mentor's embedding into the mentee's: their widths match the model's 16.
  if (config.method == "fedkd") {
    fedkd::FedKdParams p;
    p.set_mentee_model("gcn:layers=2,hidden=16,dropout=0.5");
    o.spec.clear_method_params();
    o.spec.add_method_params()->PackFrom(p);
  }
  // AdaFGL: one FedAvg round, then step 2 (both steps within any test's rounds).
  if (config.method == "adafgl") {
    adafgl::AdaFglParams p;
    p.set_vanilla_rounds(1);
    o.spec.clear_method_params();
    o.spec.add_method_params()->PackFrom(p);
  }
  // FedGKC's copilot distils to and from the private model's 16-d embedding.
  if (config.method == "fedgkc") {
    fedgkc::FedGkcParams p;
    if (o.spec.method_params_size() > 0) CHECK(o.spec.method_params(0).UnpackTo(&p));
    p.set_copilot_model("gcn:layers=2,hidden=16,dropout=0.5");
    o.spec.clear_method_params();
    o.spec.add_method_params()->PackFrom(p);
  }
  // FedEgo: ego-trees on its own label-skewed sampler with a global test graph, scored after the
  // mixing.
  if (config.method == "fedego") {
    o.spec.set_partitioner("fedego:local_fraction=0.4,local_test_nodes=40,major_classes=2");
    o.spec.set_split("fedego_tail:test=40");
    o.spec.set_model("ego_sage:hidden=16,fanout=3,dropout=0.5,batch=16");
    o.spec.mutable_eval()->set_model(fl::proto::EvalProtocol::PERSONALIZED);
  }
  // D-FedGNN has no global model: each client is scored on its ring average.
  if (config.method == "d_fedgnn") o.spec.mutable_eval()->set_model(fl::proto::EvalProtocol::PERSONALIZED);
  // Node-level methods: one user per node, all of them every round, one step per round.
  absl::StatusOr<fl::MethodFactories> factories = fl::FindMethod(config.method);
  if (factories.ok() && factories->federation) {
    o.spec.set_partitioner("node_level");
    o.spec.set_clients(600);  // SmallFederation's csbm graph
    o.spec.set_model("gat:layers=2,heads=2,hidden=8,out_heads=1");
    o.spec.set_local_epochs(1);
    o.spec.mutable_eval()->set_model(fl::proto::EvalProtocol::GLOBAL);
  }
  return o;
}

}  // namespace fgl::methods::testing
