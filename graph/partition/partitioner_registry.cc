#include "graph/partition/partitioner_registry.h"

#include <limits>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/option_string.h"
#include "graph/partition/fedego_sampler.h"
#include "graph/partition/label_dirichlet_partitioner.h"
#include "graph/partition/louvain_partitioner.h"
#include "graph/partition/metis_partitioner.h"
#include "graph/partition/random_partitioner.h"
#include "graph/partition/reference_partitioner.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::graph {
namespace {

absl::StatusOr<std::unique_ptr<Partitioner>> Build(OptionString& o) {
  const std::string& name = o.name();
  if (name == "louvain") {
    LouvainOptions opt;
    FGL_ASSIGN_OR_RETURN(opt.resolution, o.Double("resolution", opt.resolution));
    FGL_ASSIGN_OR_RETURN(int64_t delta, o.Int("delta", opt.delta));
    opt.delta = static_cast<int>(delta);
    FGL_ASSIGN_OR_RETURN(opt.rebalance, o.Bool("rebalance", opt.rebalance));
    FGL_ASSIGN_OR_RETURN(opt.class_coverage_fix, o.Bool("class_coverage_fix", false));
    const std::string algorithm = o.String("algorithm", "multilevel");
    if (algorithm == "leiden") {
      opt.algorithm = CommunityAlgorithm::kLeiden;
    } else if (algorithm != "multilevel") {
      return absl::InvalidArgumentError(absl::StrCat(
          "louvain: algorithm '", algorithm, "' in '", o.text(), "'; known: multilevel, leiden"));
    }
    // Leiden's own options are refused with multilevel rather than silently ignored.
    constexpr double kUnsetBeta = -std::numeric_limits<double>::infinity();
    constexpr int64_t kUnsetIterations = std::numeric_limits<int64_t>::min();
    FGL_ASSIGN_OR_RETURN(double beta, o.Double("beta", kUnsetBeta));
    FGL_ASSIGN_OR_RETURN(int64_t iterations, o.Int("iterations", kUnsetIterations));
    const bool beta_set = beta != kUnsetBeta, iterations_set = iterations != kUnsetIterations;
    if (opt.algorithm != CommunityAlgorithm::kLeiden && (beta_set || iterations_set)) {
      return absl::InvalidArgumentError(
          absl::StrCat("louvain: beta and iterations need algorithm=leiden in '", o.text(), "'"));
    }
    if (beta_set) opt.leiden_beta = beta;
    if (iterations_set) {
      if (iterations < 1 || iterations > std::numeric_limits<int>::max()) {
        return absl::InvalidArgumentError(
            absl::StrCat("louvain: iterations must be >= 1 in '", o.text(), "'"));
      }
      opt.leiden_iterations = static_cast<int>(iterations);
    }
    return std::make_unique<LouvainPartitioner>(opt);
  }
  if (name == "metis") {
    MetisOptions opt;
    FGL_ASSIGN_OR_RETURN(opt.recursive_bisection, o.Bool("recursive_bisection", false));
    return std::make_unique<MetisPartitioner>(opt);
  }
  if (name == "label_dirichlet") {
    LabelDirichletOptions opt;
    FGL_ASSIGN_OR_RETURN(opt.alpha, o.Double("alpha", opt.alpha));
    FGL_ASSIGN_OR_RETURN(opt.min_client_nodes, o.Int("min_client_nodes", opt.min_client_nodes));
    return std::make_unique<LabelDirichletPartitioner>(opt);
  }
  if (name == "random") return std::make_unique<RandomPartitioner>();
  if (name == "node_level") return std::make_unique<NodeLevelPartitioner>();
  if (name == "fedego") {
    FedEgoSamplerOptions opt;
    FGL_ASSIGN_OR_RETURN(opt.global_test_fraction,
                         o.Double("global_test_fraction", opt.global_test_fraction));
    FGL_ASSIGN_OR_RETURN(opt.local_fraction, o.Double("local_fraction", opt.local_fraction));
    FGL_ASSIGN_OR_RETURN(int64_t major, o.Int("major_classes", opt.major_classes));
    opt.major_classes = static_cast<int>(major);
    FGL_ASSIGN_OR_RETURN(opt.major_rate, o.Double("major_rate", opt.major_rate));
    FGL_ASSIGN_OR_RETURN(opt.local_test_nodes, o.Int("local_test_nodes", opt.local_test_nodes));
    FGL_ASSIGN_OR_RETURN(opt.reuse_local_test_nodes, o.Bool("reuse_local_test_nodes", false));
    return std::make_unique<FedEgoSampler>(opt);
  }
  return absl::NotFoundError(absl::StrCat("unknown partitioner '", name, "'; known: ",
                                          absl::StrJoin(PartitionerNames(), ", ")));
}

}  // namespace

std::vector<std::string> PartitionerNames() {
  return {"louvain", "metis", "label_dirichlet", "random", "node_level", "fedego", "reference:<dir>"};
}

absl::StatusOr<std::unique_ptr<Partitioner>> MakePartitioner(const std::string& spec) {
  // The rest of "reference:<dir>" is a path, taken verbatim (it may hold ',' or '=').
  constexpr absl::string_view kReference = "reference";
  if (absl::StartsWith(spec, kReference) &&
      (spec.size() == kReference.size() || spec[kReference.size()] == ':')) {
    if (spec.size() <= kReference.size() + 1) {
      return absl::InvalidArgumentError(
          "partitioner 'reference' needs a directory: reference:<dir> (see "
          "graph/partition/reference_partitioner.h)");
    }
    return std::make_unique<ReferencePartitioner>(spec.substr(kReference.size() + 1));
  }
  FGL_ASSIGN_OR_RETURN(OptionString o, OptionString::Parse(spec));
  FGL_ASSIGN_OR_RETURN(std::unique_ptr<Partitioner> p, Build(o));
  FGL_RETURN_IF_ERROR(o.CheckAllUsed());
  return p;
}

}  // namespace fgl::graph
