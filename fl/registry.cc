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
};

Registry& Get() {
  static auto* registry = new Registry;
  return *registry;
}

}  // namespace

double MethodConfig::Param(const std::string& key, double fallback) const {
  auto it = params.find(key);
  return it == params.end() ? fallback : it->second;
}

void RegisterMethod(const std::string& name, MethodFactories factories) {
  Registry& r = Get();
  std::lock_guard<std::mutex> lock(r.mu);
  CHECK(r.methods.emplace(name, std::move(factories)).second) << "method '" << name << "' registered twice";
}

absl::StatusOr<MethodFactories> FindMethod(const std::string& name) {
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

std::vector<std::string> MethodNames() {
  Registry& r = Get();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> names;
  for (const auto& [n, f] : r.methods) names.push_back(n);
  return names;
}

}  // namespace fgl::fl
