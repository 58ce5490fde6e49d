#include "fl/registry.h"

#include <map>
#include <mutex>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "glog/logging.h"

namespace fgl::fl {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, MethodFactories> methods;
  std::map<std::string, PluginFactories> plugins;
};

Registry& Get() {
  static auto* registry = new Registry;
  return *registry;
}

}  // namespace

void RegisterMethod(const std::string& name, MethodFactories factories) {
  factories.version = absl::StrCat(name, "@", factories.result_version);
  Registry& r = Get();
  std::lock_guard<std::mutex> lock(r.mu);
  CHECK(r.methods.emplace(name, std::move(factories)).second) << "method '" << name << "' registered twice";
}

void RegisterPlugin(const std::string& name, PluginFactories factories) {
  factories.version = absl::StrCat(name, "@", factories.result_version);
  Registry& r = Get();
  std::lock_guard<std::mutex> lock(r.mu);
  CHECK(r.plugins.emplace(name, std::move(factories)).second) << "plug-in '" << name << "' registered twice";
}

MethodFactories Compose(MethodFactories base, PluginFactories plugin) {
  MethodFactories out;
  out.client = [base, plugin](std::shared_ptr<const ClientData> data, const MethodConfig& config)
      -> absl::StatusOr<std::unique_ptr<ClientAlgorithm>> {
    auto inner = base.client(data, config);
    if (!inner.ok()) return inner.status();
    return plugin.client(*std::move(inner), std::move(data), config);
  };
  out.server = [base, plugin](const MethodConfig& config) -> absl::StatusOr<std::unique_ptr<ServerAlgorithm>> {
    auto inner = base.server(config);
    if (!inner.ok()) return inner.status();
    return plugin.server(*std::move(inner), config);
  };
  out.version = absl::StrCat(base.version, "+", plugin.version);
  out.params = base.params;
  out.params.insert(out.params.end(), plugin.params.begin(), plugin.params.end());
  return out;
}

namespace {

// The registered factories, composed with plug-ins by name, without the parameter check.
absl::StatusOr<MethodFactories> FindUnchecked(const std::string& name) {
  if (const size_t plus = name.rfind('+'); plus != std::string::npos) {
    absl::StatusOr<MethodFactories> base = FindUnchecked(name.substr(0, plus));
    if (!base.ok()) return base.status();
    const std::string plugin = name.substr(plus + 1);
    Registry& r = Get();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.plugins.find(plugin);
    if (it == r.plugins.end()) {
      std::vector<std::string> names;
      for (const auto& [n, f] : r.plugins) names.push_back(n);
      return absl::NotFoundError(absl::StrCat("unknown plug-in '", plugin, "' in method '", name,
                                              "'; registered plug-ins: ", absl::StrJoin(names, ", ")));
    }
    if (base->federation) {
      return absl::InvalidArgumentError(absl::StrCat("method '", name.substr(0, plus),
                                                     "' runs its own batched federation: plug-ins cannot wrap it"));
    }
    return Compose(*std::move(base), it->second);
  }
  Registry& r = Get();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.methods.find(name);
  if (it == r.methods.end()) {
    std::vector<std::string> names;
    for (const auto& [n, f] : r.methods) names.push_back(n);
    return absl::NotFoundError(absl::StrCat("unknown method '", name, "'; registered: ",
                                            absl::StrJoin(names, ", ")));
  }
  return it->second;
}

}  // namespace

absl::StatusOr<MethodFactories> FindMethod(const std::string& name) {
  absl::StatusOr<MethodFactories> found = FindUnchecked(name);
  if (!found.ok()) return found.status();
  // Every factory validates the run's parameters of its own types first, however it was reached
  // (whether other types belong to the run is CheckMethod's question, asked once per run).
  MethodFactories m = *std::move(found);
  MethodFactories checked = m;
  checked.client = [m, name](std::shared_ptr<const ClientData> data,
                             const MethodConfig& config) -> absl::StatusOr<std::unique_ptr<ClientAlgorithm>> {
    if (absl::Status s = CheckMethodParams(name, m.params, {config.spec.method_params().begin(), config.spec.method_params().end()},
                                           /*own_only=*/true); !s.ok()) return s;
    return m.client(std::move(data), config);
  };
  checked.server = [m, name](const MethodConfig& config) -> absl::StatusOr<std::unique_ptr<ServerAlgorithm>> {
    if (absl::Status s = CheckMethodParams(name, m.params, {config.spec.method_params().begin(), config.spec.method_params().end()},
                                           /*own_only=*/true); !s.ok()) return s;
    return m.server(config);
  };
  return checked;
}

std::vector<std::string> MethodNames() {
  Registry& r = Get();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> names;
  for (const auto& [n, f] : r.methods) names.push_back(n);
  return names;
}

std::vector<std::string> PluginNames() {
  Registry& r = Get();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> names;
  for (const auto& [n, f] : r.plugins) names.push_back(n);
  return names;
}

}  // namespace fgl::fl
