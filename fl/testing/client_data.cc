#include "fl/testing/client_data.h"

#include "glog/logging.h"
#include "graph/csbm.h"
#include "graph/split.h"

namespace fgl::fl::testing {

std::shared_ptr<ClientData> CsbmClient(int64_t num_nodes, int64_t num_features, int64_t num_classes,
                                       uint64_t seed, int id) {
  graph::CsbmOptions co;
  co.num_nodes = num_nodes;
  co.num_features = num_features;
  co.num_classes = num_classes;
  co.homophily = 0.85;
  auto d = graph::MakeCsbm(co, seed);
  CHECK(d.ok()) << d.status();
  auto split = graph::ClassStratifiedSplit(d->labels, num_classes, 0.2, 0.4, seed);
  CHECK(split.ok()) << split.status();
  auto data = std::make_shared<ClientData>();
  data->id = id;
  data->data = *d;
  data->split = *split;
  data->view = std::make_shared<nn::GraphView>(*nn::GraphView::Create(d->graph));
  data->features = std::make_shared<nn::NodeFeatures>(d->features);
  data->labels = d->labels;
  return data;
}

FederationOptions SmallFederation(const std::string& method) {
  FederationOptions o;
  o.spec.set_dataset("csbm:num_nodes=600,num_classes=4,num_features=16,homophily=0.85");
  o.spec.set_clients(4);
  o.spec.set_method(method);
  o.spec.set_rounds(6);
  o.spec.set_local_epochs(2);
  o.cache_dir = "none";
  o.seed = 7;
  return o;
}

MethodConfig TestMethodConfig() {
  MethodConfig config;
  config.model_spec = "gcn";
  config.spec.set_local_epochs(3);
  config.spec.set_lr(0.01);
  config.spec.set_weight_decay(5e-4);
  config.spec.set_client_fraction(1);
  return config;
}

}  // namespace fgl::fl::testing
