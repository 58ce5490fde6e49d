#include "graph/partition/reference_partitioner.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "glog/logging.h"
#include "graph/io/torch_pt.h"
#include "graph/random.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::graph {
namespace {

enum class Layout { kFedTad, kOpenFgl };

// One client as stored, before its nodes are tied to the dataset's.
struct StoredClient {
  std::string file;  // for errors
  int index = 0;
  torch::Tensor x, edge_index, y;  // float32 [n, F], int64 [2, m], int64 [n]
  NodeSplit split;                 // local bool masks [n]
  std::vector<int64_t> global_ids;
  int64_t num_nodes() const { return y.size(0); }
};

std::string Shape(const torch::Tensor& t) {
  return absl::StrCat("[", absl::StrJoin(t.sizes(), ", "), "]");
}

std::string Where(const StoredClient& c) { return absl::StrCat(c.file, " (client ", c.index, ")"); }

// The client files' indices in `dir` by layout: data<k>.pt (FedTAD) or data_<k>.pt (OpenFGL).
absl::StatusOr<std::pair<Layout, int>> ScanDir(const std::string& dir) {
  std::error_code ec;
  std::set<int64_t> fedtad, openfgl;
  // increment(ec), not ++: a directory that fails mid-listing is an error, not an exception.
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() < 8 || name.compare(0, 4, "data") != 0 ||
        name.compare(name.size() - 3, 3, ".pt") != 0) {
      continue;
    }
    const bool underscore = name[4] == '_';
    const size_t begin = underscore ? 5 : 4;
    const std::string digits = name.substr(begin, name.size() - 3 - begin);
    int64_t k = 0;
    // Canonical numbers only ("data01.pt" is not the file "data1.pt" that client 1 reads).
    if (digits.empty() || (digits.size() > 1 && digits[0] == '0') ||
        !std::all_of(digits.begin(), digits.end(), absl::ascii_isdigit) ||
        !absl::SimpleAtoi(digits, &k)) {
      continue;
    }
    (underscore ? openfgl : fedtad).insert(k);
  }
  if (ec) {
    return absl::NotFoundError(
        absl::StrCat("reference partition: cannot list ", dir, ": ", ec.message()));
  }
  if (fedtad.empty() == openfgl.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "reference partition: ", dir, " must hold either FedTAD's data<k>.pt or OpenFGL's ",
        "data_<k>.pt client files; found ", fedtad.size(), " and ", openfgl.size()));
  }
  const Layout layout = fedtad.empty() ? Layout::kOpenFgl : Layout::kFedTad;
  const std::set<int64_t>& ks = fedtad.empty() ? openfgl : fedtad;
  const int64_t count = static_cast<int64_t>(ks.size());
  if (*ks.begin() != 0 || *ks.rbegin() != count - 1) {
    return absl::InvalidArgumentError(absl::StrCat("reference partition: ", dir,
                                                   ": client files must be numbered 0 to ",
                                                   count - 1, ", found ", absl::StrJoin(ks, ",")));
  }
  return std::make_pair(layout, static_cast<int>(count));
}

// A tensor field with the dtype and dims we expect; errors name the file and field.
absl::StatusOr<torch::Tensor> Field(const io::PickleDict& attrs, const std::string& key,
                                    const std::string& where, torch::ScalarType dtype, int dims) {
  FGL_ASSIGN_OR_RETURN(torch::Tensor t, io::TensorField(attrs, key, where));
  if (t.scalar_type() != dtype || t.dim() != dims) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": field '", key, "' is ", c10::toString(t.scalar_type()), " with ",
                     t.dim(), " dims; expected ", c10::toString(dtype), " with ", dims));
  }
  return t;
}

absl::Status CheckMask(const torch::Tensor& mask, int64_t n, const std::string& where,
                       const std::string& key) {
  if (mask.scalar_type() != torch::kBool || mask.dim() != 1 || mask.size(0) != n) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": '", key, "' must be a bool mask of ", n, " nodes, is ",
                     c10::toString(mask.scalar_type()), " ", Shape(mask)));
  }
  return absl::OkStatus();
}

// x, edge_index, y of a PyG Data, with shapes checked against each other and the dataset.
absl::StatusOr<StoredClient> ReadData(const std::string& file, int k, const Dataset& dataset,
                                      const io::PickleDict** attrs_out, io::PickleValue* holder) {
  StoredClient c;
  c.file = file;
  c.index = k;
  FGL_ASSIGN_OR_RETURN(*holder, io::ReadTorchSave(file));
  FGL_ASSIGN_OR_RETURN(const io::PickleDict* attrs, io::PygDataAttributes(*holder, file));
  *attrs_out = attrs;
  const std::string where = Where(c);
  FGL_ASSIGN_OR_RETURN(c.x, Field(*attrs, "x", where, torch::kFloat32, 2));
  FGL_ASSIGN_OR_RETURN(c.edge_index, Field(*attrs, "edge_index", where, torch::kInt64, 2));
  FGL_ASSIGN_OR_RETURN(c.y, Field(*attrs, "y", where, torch::kInt64, 1));
  const int64_t n = c.y.size(0);
  if (c.x.size(0) != n || c.x.size(1) != dataset.num_features()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": x is ", Shape(c.x), "; expected [", n,
                                                   ", ", dataset.num_features(), "] (",
                                                   dataset.name, "'s features)"));
  }
  if (n > dataset.num_nodes()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", n, " nodes, more than the ",
                                                   dataset.num_nodes(), " of ", dataset.name));
  }
  if (c.edge_index.size(0) != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": edge_index is ", Shape(c.edge_index), ", not [2, m]"));
  }
  if (c.edge_index.numel() > 0 &&
      (c.edge_index.min().item<int64_t>() < 0 || c.edge_index.max().item<int64_t>() >= n)) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": edge_index holds local ids outside [0, ", n, ")"));
  }
  return c;
}

// OpenFGL: global_map gives the ids; node_cls/ gives the split, checked against glb_*.pkl.
absl::StatusOr<StoredClient> ReadOpenFgl(const std::string& dir, int k, const Dataset& dataset) {
  const io::PickleDict* attrs = nullptr;
  io::PickleValue holder;
  FGL_ASSIGN_OR_RETURN(
      StoredClient c, ReadData(absl::StrCat(dir, "/data_", k, ".pt"), k, dataset, &attrs, &holder));
  const std::string where = Where(c);
  const int64_t n = c.num_nodes();
  const io::PickleValue* map_value = attrs->Find(std::string("global_map"));
  const io::PickleDict* map = map_value == nullptr ? nullptr : map_value->as_dict();
  if (map == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": no dict 'global_map'"));
  }
  c.global_ids.assign(n, -1);
  for (const auto& [key, value] : map->entries) {
    const int64_t* local = std::get_if<int64_t>(&key);
    const int64_t* global = value.as_int();
    if (local == nullptr || global == nullptr || *local < 0 || *local >= n ||
        c.global_ids[*local] != -1) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": global_map must map each local id in [0, ", n, ") once to an int"));
    }
    c.global_ids[*local] = *global;
  }
  if (static_cast<int64_t>(map->entries.size()) != n) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": global_map has ", map->entries.size(),
                                                   " entries for ", n, " nodes"));
  }
  for (int64_t g : c.global_ids) {
    if (g < 0 || g >= dataset.num_nodes()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": global_map holds node ", g,
                                                     " outside [0, ", dataset.num_nodes(), ")"));
    }
  }
  torch::Tensor* masks[] = {&c.split.train, &c.split.val, &c.split.test};
  const char* names[] = {"train", "val", "test"};
  for (int s = 0; s < 3; ++s) {
    const std::string file = absl::StrCat(dir, "/node_cls/", names[s], "_", k, ".pt");
    FGL_ASSIGN_OR_RETURN(*masks[s], io::ReadTorchSaveTensor(file));
    FGL_RETURN_IF_ERROR(CheckMask(*masks[s], n, file, "the tensor"));
    const std::string glb_file = absl::StrCat(dir, "/node_cls/glb_", names[s], "_", k, ".pkl");
    FGL_ASSIGN_OR_RETURN(std::vector<int64_t> glb, io::ReadPickledIntList(glb_file));
    std::vector<int64_t> want;
    const bool* m = masks[s]->data_ptr<bool>();
    for (int64_t i = 0; i < n; ++i) {
      if (m[i]) want.push_back(c.global_ids[i]);
    }
    std::sort(glb.begin(), glb.end());
    std::sort(want.begin(), want.end());
    if (glb != want) {
      return absl::InvalidArgumentError(
          absl::StrCat(glb_file, ": ", glb.size(), " global ids that differ from the ", want.size(),
                       " nodes of ", names[s], "_", k, ".pt mapped through global_map"));
    }
  }
  return c;
}

// The dataset's nodes by (feature row, label), for FedTAD's files, which hold no ids.
class RowIndex {
 public:
  explicit RowIndex(const Dataset& d)
      : x_(d.features.contiguous()), y_(d.labels.contiguous()), f_(d.num_features()) {
    for (int64_t v = 0; v < d.num_nodes(); ++v) {
      buckets_[Hash(x_.data_ptr<float>() + v * f_, y_.data_ptr<int64_t>()[v])].push_back(v);
    }
  }
  // Nodes whose row and label equal `row` and `label` exactly (not just their hash).
  std::vector<int64_t> Find(const float* row, int64_t label) const {
    std::vector<int64_t> out;
    auto it = buckets_.find(Hash(row, label));
    if (it == buckets_.end()) return out;
    for (int64_t v : it->second) {
      if (y_.data_ptr<int64_t>()[v] == label &&
          std::memcmp(x_.data_ptr<float>() + v * f_, row, sizeof(float) * f_) == 0) {
        out.push_back(v);
      }
    }
    return out;
  }

 private:
  uint64_t Hash(const float* row, int64_t label) const {
    return Fnv1a64(&label, sizeof(label), Fnv1a64(row, sizeof(float) * f_));
  }
  torch::Tensor x_, y_;
  int64_t f_;
  absl::flat_hash_map<uint64_t, std::vector<int64_t>> buckets_;
};

// FedTAD: each node is matched to the dataset by row and label, within the global mask of its
// split, among nodes no client has taken yet (`taken`, updated).
absl::StatusOr<StoredClient> ReadFedTad(const std::string& dir, int k, const Dataset& dataset,
                                        const RowIndex& rows, std::vector<char>& taken) {
  const io::PickleDict* attrs = nullptr;
  io::PickleValue holder;
  FGL_ASSIGN_OR_RETURN(StoredClient c,
                       ReadData(absl::StrCat(dir, "/data", k, ".pt"), k, dataset, &attrs, &holder));
  const std::string where = Where(c);
  const int64_t n = c.num_nodes(), num_nodes = dataset.num_nodes();
  torch::Tensor* masks[] = {&c.split.train, &c.split.val, &c.split.test};
  torch::Tensor global[3];
  const char* names[] = {"train", "val", "test"};
  for (int s = 0; s < 3; ++s) {
    const std::string key = absl::StrCat(names[s], "_idx");
    FGL_ASSIGN_OR_RETURN(*masks[s], io::TensorField(*attrs, key, where));
    FGL_RETURN_IF_ERROR(CheckMask(*masks[s], n, where, key));
    FGL_ASSIGN_OR_RETURN(global[s], io::TensorField(*attrs, "global_" + key, where));
    FGL_RETURN_IF_ERROR(CheckMask(global[s], num_nodes, where, "global_" + key));
  }
  // Which split each local node is in (3: none), and each global node of this client (-1: none).
  std::vector<int> local_role(n, 3), global_role(num_nodes, -1);
  for (int s = 0; s < 3; ++s) {
    const bool* m = masks[s]->data_ptr<bool>();
    const bool* g = global[s].data_ptr<bool>();
    for (int64_t i = 0; i < n; ++i) {
      if (!m[i]) continue;
      if (local_role[i] != 3) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": local node ", i, " is in two of train/val/test"));
      }
      local_role[i] = s;
    }
    for (int64_t v = 0; v < num_nodes; ++v) {
      if (g[v]) global_role[v] = s;
    }
  }
  const torch::Tensor x = c.x.contiguous();
  const int64_t* y = c.y.data_ptr<int64_t>();
  c.global_ids.assign(n, -1);
  std::vector<std::vector<int64_t>> candidates(n);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t v : rows.Find(x.data_ptr<float>() + i * x.size(1), y[i])) {
      const bool role_ok =
          local_role[i] == 3 ? global_role[v] == -1 : global_role[v] == local_role[i];
      if (role_ok && !taken[v]) candidates[i].push_back(v);
    }
    if (candidates[i].empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": local node ", i, " (label ", y[i],
          (local_role[i] < 3 ? absl::StrCat(", ", names[local_role[i]]) : std::string()),
          ") matches no free node of ", dataset.name,
          " with the same feature row, label and global split mask (are the features "
          "row-normalised? the files hold raw rows)"));
    }
  }
  // Unique candidates first; a node some other node of this client took drops out of the rest.
  // What is still ambiguous (a row repeated within one split) is settled by the stored edges:
  // the candidate adjacent, in the dataset, to the most already-placed stored neighbours.
  // Last, twins: Cora has nodes with equal rows, labels and neighbour lists (1033 and 1586, both
  // in FedTAD client 0's val set; 18 such placements over FedTAD's 10 clients). Nothing stored
  // tells them apart and every placement gives the same client data, so a group of local nodes
  // sharing a candidate set of twins takes the twins in ascending id order.
  std::vector<std::vector<int64_t>> stored_adj(n);
  const torch::Tensor ei = c.edge_index.contiguous();
  const int64_t m = ei.size(1);
  for (int64_t e = 0; e < m; ++e) {
    stored_adj[ei.data_ptr<int64_t>()[e]].push_back(ei.data_ptr<int64_t>()[m + e]);
  }
  auto place = [&](int64_t i, int64_t v) {
    c.global_ids[i] = v;
    taken[v] = 1;
  };
  int64_t by_edges = 0, twins = 0;
  for (;;) {
    for (bool progress = true; progress;) {
      progress = false;
      for (int64_t i = 0; i < n; ++i) {
        if (c.global_ids[i] != -1) continue;
        auto& cand = candidates[i];
        cand.erase(std::remove_if(cand.begin(), cand.end(), [&](int64_t v) { return taken[v]; }),
                   cand.end());
        if (cand.empty()) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, ": local node ", i, " has no free matching node left"));
        }
        if (cand.size() == 1) {
          place(i, cand[0]);
          progress = true;
          continue;
        }
        int64_t best = -1, best_score = -1;
        bool tie = false;
        for (int64_t v : cand) {
          const auto nb = dataset.graph.neighbors(v);
          int64_t score = 0;
          for (int64_t j : stored_adj[i]) {
            const int64_t g = c.global_ids[j];
            score += g >= 0 && std::find(nb.begin(), nb.end(), g) != nb.end();
          }
          if (score > best_score) {
            best = v, best_score = score, tie = false;
          } else if (score == best_score) {
            tie = true;
          }
        }
        if (!tie && best_score > 0) {
          place(i, best);
          ++by_edges;
          progress = true;
        }
      }
    }
    std::map<std::vector<int64_t>, std::vector<int64_t>> groups;  // candidate set -> local nodes
    for (int64_t i = 0; i < n; ++i) {
      if (c.global_ids[i] == -1) groups[candidates[i]].push_back(i);
    }
    if (groups.empty()) break;
    bool placed = false;
    for (const auto& [cand, locals] : groups) {
      const auto first = dataset.graph.neighbors(cand[0]);
      const bool all_twins =
          cand.size() == locals.size() && std::all_of(cand.begin(), cand.end(), [&](int64_t v) {
            const auto nb = dataset.graph.neighbors(v);
            return std::equal(nb.begin(), nb.end(), first.begin(), first.end());
          });
      if (!all_twins) continue;
      std::vector<int64_t> sorted = cand;
      std::sort(sorted.begin(), sorted.end());
      for (size_t t = 0; t < locals.size(); ++t) place(locals[t], sorted[t]);
      twins += static_cast<int64_t>(locals.size());
      placed = true;
    }
    if (!placed) {
      const auto& [cand, locals] = *groups.begin();
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": local nodes ", absl::StrJoin(locals, ", "), " match nodes ",
          absl::StrJoin(cand, ", "),
          " equally well (same row, label and split; stored edges do not tell them apart)"));
    }
  }
  VLOG(1) << where << ": " << n << " nodes matched by row, label and split mask; " << by_edges
          << " of them placed by their stored edges, " << twins << " twins by id order";
  // The global masks must be exactly this client's split nodes.
  for (int s = 0; s < 3; ++s) {
    const int64_t in_mask = global[s].sum().item<int64_t>();
    const int64_t local = masks[s]->sum().item<int64_t>();
    if (in_mask != local) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": global_", names[s], "_idx holds ",
                                                     in_mask, " nodes, ", names[s], "_idx ",
                                                     local));
    }
  }
  return c;
}

// Stored rows, labels and edges against the dataset at the client's global ids.
absl::Status CheckAgainstDataset(const StoredClient& c, const Dataset& dataset) {
  const std::string where = Where(c);
  const int64_t n = c.num_nodes();
  const torch::Tensor ids = torch::tensor(c.global_ids, torch::kInt64);
  const torch::Tensor row_differs = c.x.ne(dataset.features.index_select(0, ids)).any(1);
  if (const int64_t bad = row_differs.sum().item<int64_t>(); bad > 0) {
    const int64_t i = row_differs.nonzero()[0][0].item<int64_t>();
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": ", bad, " of ", n, " x rows differ from ", dataset.name,
                     "'s; first: local ", i, " = node ", c.global_ids[i],
                     " (are the features row-normalised? the files hold raw rows)"));
  }
  const torch::Tensor label_differs = c.y.ne(dataset.labels.index_select(0, ids));
  if (const int64_t bad = label_differs.sum().item<int64_t>(); bad > 0) {
    const int64_t i = label_differs.nonzero()[0][0].item<int64_t>();
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", bad, " labels differ from ",
                                                   dataset.name, "'s; first: local ", i, " = node ",
                                                   c.global_ids[i]));
  }
  // Directed local pairs, stored vs the dataset's edges among the client's nodes.
  absl::flat_hash_map<int64_t, int64_t> local_of;
  for (int64_t i = 0; i < n; ++i) local_of[c.global_ids[i]] = i;
  std::vector<std::pair<int64_t, int64_t>> induced, stored;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t g : dataset.graph.neighbors(c.global_ids[i])) {
      if (auto it = local_of.find(g); it != local_of.end()) induced.emplace_back(i, it->second);
    }
  }
  const torch::Tensor ei = c.edge_index.contiguous();
  const int64_t* src = ei.data_ptr<int64_t>();
  const int64_t* dst = src + ei.size(1);
  for (int64_t e = 0; e < ei.size(1); ++e) stored.emplace_back(src[e], dst[e]);
  std::sort(induced.begin(), induced.end());
  std::sort(stored.begin(), stored.end());
  std::vector<std::pair<int64_t, int64_t>> missing, extra;
  std::set_difference(induced.begin(), induced.end(), stored.begin(), stored.end(),
                      std::back_inserter(missing));
  std::set_difference(stored.begin(), stored.end(), induced.begin(), induced.end(),
                      std::back_inserter(extra));
  if (!missing.empty() || !extra.empty()) {
    const auto& first = missing.empty() ? extra[0] : missing[0];
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": stored edges differ from ", dataset.name,
        "'s among the client's nodes: ", missing.size(), " of ", induced.size(),
        " directed edges missing, ", extra.size(), " extra (or repeated); first ",
        missing.empty() ? "extra" : "missing", ": local (", first.first, ", ", first.second,
        ") = nodes (", c.global_ids[first.first], ", ", c.global_ids[first.second], ")"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Partition> ReferencePartitioner::Run(const Dataset& dataset, int num_clients,
                                                    uint64_t /*seed*/) const {
  FGL_ASSIGN_OR_RETURN(const auto scanned, ScanDir(dir_));
  const auto [layout, count] = scanned;
  if (num_clients != count) {
    return absl::InvalidArgumentError(absl::StrCat(
        "reference partition: ", dir_, " holds ", count, " clients (",
        layout == Layout::kFedTad ? "data0.pt ..." : "data_0.pt ...", "), not ", num_clients));
  }
  Partition p;
  std::vector<char> taken(dataset.num_nodes(), 0);
  std::unique_ptr<RowIndex> rows;
  if (layout == Layout::kFedTad) rows = std::make_unique<RowIndex>(dataset);
  for (int k = 0; k < count; ++k) {
    StoredClient c;
    if (layout == Layout::kFedTad) {
      FGL_ASSIGN_OR_RETURN(c, ReadFedTad(dir_, k, dataset, *rows, taken));
    } else {
      FGL_ASSIGN_OR_RETURN(c, ReadOpenFgl(dir_, k, dataset));
      for (int64_t g : c.global_ids) {
        if (taken[g]) {
          return absl::InvalidArgumentError(
              absl::StrCat(Where(c), ": node ", g, " is also held by an earlier client"));
        }
        taken[g] = 1;
      }
    }
    FGL_RETURN_IF_ERROR(CheckAgainstDataset(c, dataset));
    p.clients.push_back(std::move(c.global_ids));
    p.client_splits.push_back(std::move(c.split));
  }
  FGL_RETURN_IF_ERROR(ValidatePartition(p, dataset.num_nodes(), /*disjoint=*/true));
  return p;
}

}  // namespace fgl::graph
