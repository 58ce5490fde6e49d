#include "graph/datasets.h"

#include <cstdlib>
#include <functional>
#include <map>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/csbm.h"
#include "graph/io/dataset_checksums.h"
#include "graph/io/file.h"
#include "graph/io/geom_gcn.h"
#include "graph/io/gnn_benchmark.h"
#include "graph/io/heterophilous.h"
#include "graph/io/ogb.h"
#include "graph/io/planetoid.h"
#include "graph/io/wikics.h"
#include "graph/option_string.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::graph {
namespace {

enum class Format { kPlanetoid, kGnnBenchmark, kHeterophilous, kGeomGcn, kOgb, kWikiCs, kCsbm };

struct Entry {
  Format format;
  std::string folder;  // under the data root
  std::string file;    // npz file name, or the dataset's name inside its format
};

const std::map<std::string, Entry>& Registry() {
  static const auto* registry = new std::map<std::string, Entry>{
      {"cora", {Format::kPlanetoid, "cora", "cora"}},
      {"citeseer", {Format::kPlanetoid, "citeseer", "citeseer"}},
      {"pubmed", {Format::kPlanetoid, "pubmed", "pubmed"}},
      {"amazon_computers",
       {Format::kGnnBenchmark, "amazon_computers", "amazon_electronics_computers.npz"}},
      {"amazon_photo", {Format::kGnnBenchmark, "amazon_photo", "amazon_electronics_photo.npz"}},
      {"coauthor_cs", {Format::kGnnBenchmark, "coauthor_cs", "ms_academic_cs.npz"}},
      {"coauthor_physics", {Format::kGnnBenchmark, "coauthor_physics", "ms_academic_phy.npz"}},
      {"corafull", {Format::kGnnBenchmark, "corafull", "cora_full.npz"}},
      {"chameleon", {Format::kHeterophilous, "chameleon", "chameleon.npz"}},
      {"chameleon_filtered", {Format::kHeterophilous, "chameleon", "chameleon_filtered.npz"}},
      {"squirrel", {Format::kHeterophilous, "squirrel", "squirrel.npz"}},
      {"squirrel_filtered", {Format::kHeterophilous, "squirrel", "squirrel_filtered.npz"}},
      {"actor", {Format::kHeterophilous, "actor", "actor.npz"}},
      {"texas", {Format::kHeterophilous, "texas", "texas.npz"}},
      {"cornell", {Format::kHeterophilous, "cornell", "cornell.npz"}},
      {"wisconsin", {Format::kHeterophilous, "wisconsin", "wisconsin.npz"}},
      {"minesweeper", {Format::kHeterophilous, "minesweeper", "minesweeper.npz"}},
      {"tolokers", {Format::kHeterophilous, "tolokers", "tolokers.npz"}},
      {"texas_geom", {Format::kGeomGcn, "texas", "texas"}},
      {"cornell_geom", {Format::kGeomGcn, "cornell", "cornell"}},
      {"wisconsin_geom", {Format::kGeomGcn, "wisconsin", "wisconsin"}},
      {"actor_geom", {Format::kGeomGcn, "actor", "film"}},
      {"ogbn_arxiv", {Format::kOgb, "ogbn_arxiv", "ogbn-arxiv"}},
      {"wikics", {Format::kWikiCs, "wikics", "data.json"}},
      {"csbm", {Format::kCsbm, "", ""}},
  };
  return *registry;
}

absl::StatusOr<const Entry*> Find(const std::string& name) {
  auto it = Registry().find(name);
  if (it == Registry().end()) {
    return absl::NotFoundError(absl::StrCat("unknown dataset '", name, "'; known: ",
                                            absl::StrJoin(DatasetNames(), ", ")));
  }
  return &it->second;
}

absl::StatusOr<Dataset> LoadRaw(const std::string& name, const Entry& e, const std::string& root,
                                OptionString& options, uint64_t seed) {
  const std::string dir = absl::StrCat(root, "/", e.folder);
  switch (e.format) {
    case Format::kPlanetoid:
      return io::LoadPlanetoid(dir, e.file);
    case Format::kGnnBenchmark:
      return io::LoadGnnBenchmarkNpz(absl::StrCat(dir, "/", e.file), name);
    case Format::kHeterophilous:
      return io::LoadHeterophilousNpz(absl::StrCat(dir, "/", e.file), name);
    case Format::kGeomGcn:
      return io::LoadGeomGcn(dir, e.file);
    case Format::kOgb:
      return io::LoadOgbNodeProp(dir, name);
    case Format::kWikiCs:
      return io::LoadWikiCs(dir, name);
    case Format::kCsbm: {
      CsbmOptions o;
      FGL_ASSIGN_OR_RETURN(o.num_nodes, options.Int("num_nodes", o.num_nodes));
      FGL_ASSIGN_OR_RETURN(o.num_classes, options.Int("num_classes", o.num_classes));
      FGL_ASSIGN_OR_RETURN(o.num_features, options.Int("num_features", o.num_features));
      FGL_ASSIGN_OR_RETURN(o.average_degree, options.Double("average_degree", o.average_degree));
      FGL_ASSIGN_OR_RETURN(o.homophily, options.Double("homophily", o.homophily));
      FGL_ASSIGN_OR_RETURN(o.feature_signal, options.Double("feature_signal", o.feature_signal));
      FGL_ASSIGN_OR_RETURN(int64_t csbm_seed, options.Int("seed", static_cast<int64_t>(seed)));
      return MakeCsbm(o, static_cast<uint64_t>(csbm_seed));
    }
  }
  return absl::InternalError("unreachable");
}

}  // namespace

std::string ResolveDataDir(const std::string& flag_value) {
  if (!flag_value.empty()) return flag_value;
  if (const char* env = std::getenv("FGL_DATA_DIR"); env && *env) return env;
  return "./data";
}

std::vector<std::string> DatasetNames() {
  std::vector<std::string> names;
  for (const auto& [name, e] : Registry()) names.push_back(name);
  return names;
}

absl::StatusOr<std::vector<std::string>> DatasetFiles(const std::string& spec,
                                                      const std::string& data_dir) {
  FGL_ASSIGN_OR_RETURN(OptionString o, OptionString::Parse(spec));
  FGL_ASSIGN_OR_RETURN(const Entry* e, Find(o.name()));
  const std::string dir = absl::StrCat(data_dir, "/", e->folder, "/");
  switch (e->format) {
    case Format::kPlanetoid: {
      std::vector<std::string> files;
      for (const char* part : {"x", "y", "tx", "ty", "allx", "ally", "graph", "test.index"})
        files.push_back(absl::StrCat(dir, "ind.", e->file, ".", part));
      return files;
    }
    case Format::kGnnBenchmark:
    case Format::kHeterophilous:
    case Format::kWikiCs:
      return std::vector<std::string>{dir + e->file};
    case Format::kGeomGcn:
      return std::vector<std::string>{dir + "out1_node_feature_label.txt",
                                      dir + "out1_graph_edges.txt"};
    case Format::kOgb: {
      std::vector<std::string> files;
      for (const char* f : {"edge.csv.gz", "node-feat.csv.gz", "node-label.csv.gz"})
        files.push_back(absl::StrCat(dir, "raw/", f));
      return files;
    }
    case Format::kCsbm:
      return std::vector<std::string>{};
  }
  return absl::InternalError("unreachable");
}

bool DatasetPresent(const std::string& spec, const std::string& data_dir) {
  auto files = DatasetFiles(spec, data_dir);
  if (!files.ok()) return false;
  for (const std::string& f : *files) {
    if (io::FileExists(f)) continue;
    // OGB ships plain .csv as well as .csv.gz.
    if (f.size() > 3 && f.substr(f.size() - 3) == ".gz" && io::FileExists(f.substr(0, f.size() - 3)))
      continue;
    return false;
  }
  return true;
}

absl::StatusOr<Dataset> LoadDataset(const std::string& spec, const std::string& data_dir,
                                    uint64_t seed) {
  FGL_ASSIGN_OR_RETURN(OptionString o, OptionString::Parse(spec));
  FGL_ASSIGN_OR_RETURN(const Entry* e, Find(o.name()));
  FGL_ASSIGN_OR_RETURN(bool lcc, o.Bool("lcc", false));
  FGL_ASSIGN_OR_RETURN(bool row_normalize, o.Bool("row_normalize", false));
  // Every listed file the loader reads under the data root is checked against its sum.
  std::optional<io::DatasetChecksumScope> verify;
  if (!data_dir.empty()) verify.emplace(data_dir);
  FGL_ASSIGN_OR_RETURN(Dataset d, LoadRaw(o.name(), *e, data_dir, o, seed));
  verify.reset();
  FGL_RETURN_IF_ERROR(o.CheckAllUsed());
  d.name = o.name();
  if (lcc) {
    std::vector<int64_t> keep = LargestComponentNodes(d.graph);
    FGL_ASSIGN_OR_RETURN(Dataset sub, SubDataset(d, keep));
    sub.name = d.name;
    d = std::move(sub);
  }
  if (row_normalize) {
    // x / sum(x) per row (PyG NormalizeFeatures, DGL's Planetoid); all-zero rows stay zero.
    torch::Tensor sums = d.features.sum(1, /*keepdim=*/true);
    d.features = d.features / sums.masked_fill(sums == 0, 1.0f);
  }
  FGL_RETURN_IF_ERROR(ValidateDataset(d));
  return d;
}

}  // namespace fgl::graph
