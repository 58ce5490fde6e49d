// Methods looked up by name. A name registered twice is a bug (CHECK); an unknown name is the
// user's error (NotFound). Registration objects live in `alwayslink = 1` libraries.
#ifndef FGL_FL_REGISTRY_H_
#define FGL_FL_REGISTRY_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "fl/algorithm.h"
#include "fl/federation.h"

namespace fgl::fl {

using ClientFactory = std::function<absl::StatusOr<std::unique_ptr<ClientAlgorithm>>(
    std::shared_ptr<const ClientData> data, const MethodConfig& config)>;
using ServerFactory =
    std::function<absl::StatusOr<std::unique_ptr<ServerAlgorithm>>(const MethodConfig& config)>;

// A method whose users are rows of batched tensors rather than ClientAlgorithm objects (nFedGNN:
// thousands of one-node users) runs its whole federation itself; see fl/node_level.
using FederationRunner = std::function<absl::StatusOr<proto::FederationResult>(
    const ResolvedOptions& resolved, const std::function<void(const proto::RoundRecord&)>& on_round)>;

struct MethodFactories {
  ClientFactory client;
  ServerFactory server;
  // The parameter types it takes (its own, then its plug-ins'); empty: none.
  std::vector<ParamsSpec> params;
  // Bumped when the method's numbers change (methods/result_fingerprints.txt is checked against
  // it by //methods:result_fingerprint_test); recorded runs of an older version are stale.
  int result_version = 1;
  // "name@version", and "+plugin@version" for each plug-in: set by the registry.
  std::string version;
  // Set only for batched node-level methods (then `client` and `server` return Unimplemented).
  FederationRunner federation;
};

// A server-side plug-in wraps any method's client and server: "fedprox+fedtad" is FedProx with
// FedTAD's distillation after each aggregation. The wrappers get the base method's algorithms.
using ClientWrapper = std::function<absl::StatusOr<std::unique_ptr<ClientAlgorithm>>(
    std::unique_ptr<ClientAlgorithm> base, std::shared_ptr<const ClientData> data,
    const MethodConfig& config)>;
using ServerWrapper = std::function<absl::StatusOr<std::unique_ptr<ServerAlgorithm>>(
    std::unique_ptr<ServerAlgorithm> base, const MethodConfig& config)>;

struct PluginFactories {
  ClientWrapper client;
  ServerWrapper server;
  std::vector<ParamsSpec> params;
  int result_version = 1;
  std::string version;  // "name@version", set by the registry
};

void RegisterMethod(const std::string& name, MethodFactories factories);
void RegisterPlugin(const std::string& name, PluginFactories factories);
// "method" or "method+plugin[+plugin...]"; NotFound names the unknown part.
absl::StatusOr<MethodFactories> FindMethod(const std::string& name);
std::vector<std::string> MethodNames();
std::vector<std::string> PluginNames();
// The method `base` with `plugin` wrapped around its client and server.
MethodFactories Compose(MethodFactories base, PluginFactories plugin);

struct MethodRegistrar {
  MethodRegistrar(const std::string& name, MethodFactories factories) {
    RegisterMethod(name, std::move(factories));
  }
};

struct PluginRegistrar {
  PluginRegistrar(const std::string& name, PluginFactories factories) {
    RegisterPlugin(name, std::move(factories));
  }
};

}  // namespace fgl::fl

// FGL_REGISTER_METHOD("fedavg", ClientFactory, ServerFactory[, {fl::TypedParams(&Validate)}[, version]]).
#define FGL_REGISTRY_CONCAT_INNER_(a, b) a##b
#define FGL_REGISTRY_CONCAT_(a, b) FGL_REGISTRY_CONCAT_INNER_(a, b)
#define FGL_REGISTER_METHOD(name, client, server, ...)                                \
  static ::fgl::fl::MethodRegistrar FGL_REGISTRY_CONCAT_(fgl_method_registrar_, __LINE__)( \
      name, ::fgl::fl::MethodFactories{client, server, __VA_ARGS__})

// FGL_REGISTER_PLUGIN("fedtad", ClientWrapper, ServerWrapper[, {fl::TypedParams(&Validate)}]).
#define FGL_REGISTER_PLUGIN(name, client, server, ...)                                \
  static ::fgl::fl::PluginRegistrar FGL_REGISTRY_CONCAT_(fgl_plugin_registrar_, __LINE__)( \
      name, ::fgl::fl::PluginFactories{client, server, __VA_ARGS__})

#endif  // FGL_FL_REGISTRY_H_
