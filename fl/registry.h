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

namespace fgl::fl {

using ClientFactory = std::function<absl::StatusOr<std::unique_ptr<ClientAlgorithm>>(
    std::shared_ptr<const ClientData> data, const MethodConfig& config)>;
using ServerFactory =
    std::function<absl::StatusOr<std::unique_ptr<ServerAlgorithm>>(const MethodConfig& config)>;

struct MethodFactories {
  ClientFactory client;
  ServerFactory server;
};

void RegisterMethod(const std::string& name, MethodFactories factories);
absl::StatusOr<MethodFactories> FindMethod(const std::string& name);
std::vector<std::string> MethodNames();

struct MethodRegistrar {
  MethodRegistrar(const std::string& name, MethodFactories factories) {
    RegisterMethod(name, std::move(factories));
  }
};

}  // namespace fgl::fl

// FGL_REGISTER_METHOD("fedavg", ClientFactory, ServerFactory) in a method's *_register.cc.
#define FGL_REGISTRY_CONCAT_INNER_(a, b) a##b
#define FGL_REGISTRY_CONCAT_(a, b) FGL_REGISTRY_CONCAT_INNER_(a, b)
#define FGL_REGISTER_METHOD(name, client, server)                                     \
  static ::fgl::fl::MethodRegistrar FGL_REGISTRY_CONCAT_(fgl_method_registrar_, __LINE__)( \
      name, ::fgl::fl::MethodFactories{client, server})

#endif  // FGL_FL_REGISTRY_H_
